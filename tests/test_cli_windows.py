"""The window, slice and PSI options of the command line (SPEC §13): the numbers of the
Python API, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import polars_eval  # noqa: F401
from polars_eval import cli
from tests.test_windows import assert_close, frame, search_log


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _written(capsys: pytest.CaptureFixture[str], path: Path, *args: object) -> pl.DataFrame:
    """The command's table, written as parquet (the dtypes kept)."""
    code, _, err = _cli(capsys, *args, "--format", "parquet", "-o", path)
    assert code == 0, err
    return pl.read_parquet(path)


@pytest.fixture
def scores(tmp_path: Path) -> tuple[pl.DataFrame, Path]:
    df = frame(600, seed=31, days=10)
    path = tmp_path / "scores.parquet"
    df.write_parquet(path)
    return df, path


@pytest.mark.filterwarnings("ignore::polars_eval.exceptions.UndefinedMetricWarning")
def test_binary_windows_and_rollup_equal_the_python_api(capsys, scores, tmp_path):
    df, path = scores
    got = _written(
        capsys, tmp_path / "out.parquet", "binary", path, "--label", "y", "--score", "p",
        "--time", "ts", "--every", "1d", "--period", "3d", "--rollup", "seg", "--metrics", "auc,logloss",
    )  # fmt: skip
    expected = df.eval.binary(
        "y", "p", metrics=["auc", "logloss"], time="ts", every="1d", period="3d", rollup=["seg"]
    )
    assert_close(got, expected)


@pytest.mark.filterwarnings("ignore::polars_eval.exceptions.UndefinedMetricWarning")
def test_regression_windows_on_an_integer_time(capsys, tmp_path):
    df = frame(300, seed=32, kind="int")
    path = tmp_path / "r.parquet"
    df.write_parquet(path)
    got = _written(
        capsys, tmp_path / "out.parquet", "regression", path, "--actual", "a", "--pred", "f",
        "--time", "ts", "--every", "24", "--offset", "6", "--by", "seg",
    )  # fmt: skip
    expected = df.eval.regression("a", "f", time="ts", every=24, offset=6, by="seg")
    assert_close(got, expected)


@pytest.mark.filterwarnings("ignore::polars_eval.exceptions.UndefinedMetricWarning")
def test_ranking_rollup_and_table_output(capsys, tmp_path):
    log = search_log(40, seed=33)
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    code, out, err = _cli(
        capsys, "ranking", path, "--relevance", "rel", "--score", "s", "--query", "q",
        "--time", "ts", "--every", "2d", "--rollup", "market",
    )  # fmt: skip
    assert code == 0, err
    assert "window_end" in out and "grouping" in out


def test_psi_command(capsys, tmp_path):
    df = frame(500, seed=34, days=6)
    current, reference = tmp_path / "cur.parquet", tmp_path / "ref.parquet"
    df.write_parquet(current)
    df.head(200).write_parquet(reference)
    got = _written(
        capsys, tmp_path / "out.parquet", "psi", current, "--reference", reference, "--score", "p",
        "--by", "seg", "--time", "ts", "--every", "2d",
    )  # fmt: skip
    expected = df.eval.psi("p", reference=df.head(200), by="seg", time="ts", every="2d")
    assert_close(got, expected)
    code, out, err = _cli(
        capsys, "psi", current, "--reference", reference, "--score", "p", "--format", "json"
    )
    assert code == 0
    assert json.loads(out)[0]["psi"] == pytest.approx(
        df.eval.psi("p", reference=df.head(200)), abs=1e-12
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--every", "1d"], "every= needs time="),
        (["--time", "ts", "--every", "often"], "every='often' is not a duration"),
        (["--time", "ts", "--every", "1d", "--period", "36h"], "whole multiple"),
        (["--by", "seg", "--rollup", "seg"], "by= and rollup= both given"),
        (["--rollup", "nope"], 'column "nope"'),
    ],
)
def test_bad_options_are_one_line_errors(capsys, scores, args, needle):
    _, path = scores
    code, out, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("polars-eval: error: ") and needle in lines[0], (
        err
    )


def test_psi_of_a_constant_reference_is_a_one_line_error(capsys, tmp_path):
    df = frame(50, seed=35)
    current, reference = tmp_path / "cur.parquet", tmp_path / "ref.parquet"
    df.write_parquet(current)
    df.with_columns(pl.lit(0.3).alias("p")).write_parquet(reference)
    code, _, err = _cli(capsys, "psi", current, "--reference", reference, "--score", "p")
    assert code == 2 and "constant score: no bins" in err
