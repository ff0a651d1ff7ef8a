"""``polars-eval binary --sensitive COL[,COL]`` (SPEC §15): the fairness and disparity
tables, equal to ``df.eval.fairness`` / ``df.eval.disparity``; one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_eval as pe
from polars_eval import cli
from polars_eval.fairness import disparity_long


def data(n: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "y": y,
            "p": np.round(np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1), 2),
            "w": rng.integers(1, 4, n).astype(np.float64),
            "sex": rng.choice(["f", "m"], n),
            "age": rng.choice(["young", "old"], n),
            "seg": rng.choice(["a", "b"], n),
        }
    )


@pytest.fixture
def scores(tmp_path: Path) -> tuple[pl.DataFrame, Path]:
    df = data()
    path = tmp_path / "scores.parquet"
    df.write_parquet(path)
    return df, path


def test_tables_are_written_beside_the_output(scores: tuple[pl.DataFrame, Path]) -> None:
    df, path = scores
    out = path.parent / "out.csv"
    argv = ["binary", str(path), "--label", "y", "--score", "p", "--weight", "w"]
    argv += ["--sensitive", "sex,age", "--by", "seg", "--threshold", "0.4", "-o", str(out)]
    assert cli.main(argv) == 0
    kwargs = {"sensitive": ["sex", "age"], "weight": "w", "by": "seg", "threshold": 0.4}
    groups = pl.read_csv(path.parent / "out.fairness.csv")
    assert_frame_equal(groups, df.eval.fairness("y", "p", **kwargs), check_dtypes=False)
    disparity = pl.read_csv(path.parent / "out.disparity.csv")
    assert_frame_equal(disparity, df.eval.disparity("y", "p", **kwargs), check_dtypes=False)
    assert out.exists()


def test_tables_are_printed(
    scores: tuple[pl.DataFrame, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    df, path = scores
    argv = ["binary", str(path), "--label", "y", "--score", "p", "--sensitive", "sex"]
    argv += ["--ci", "bootstrap", "--resamples", "50", "--metrics", "auc"]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "per group of sex" in text and "disparity between the groups" in text
    groups = df.eval.fairness("y", "p", sensitive="sex", ci="bootstrap", n_resamples=50)
    assert f"{groups['true_positive_rate_upper'][0]:.4g}"[:5] in text
    long = disparity_long(
        df.eval.disparity("y", "p", sensitive="sex", ci="bootstrap", n_resamples=50), []
    )
    assert long["metric"].to_list() == list(pe.metrics.fairness.DEFAULT_METRICS)
    for metric in long["metric"]:
        assert metric in text


def test_report_gets_the_fairness_section(scores: tuple[pl.DataFrame, Path]) -> None:
    _, path = scores
    report = path.parent / "r.html"
    argv = ["binary", str(path), "--label", "y", "--score", "p", "--sensitive", "age"]
    argv += ["--report", str(report), "-o", str(path.parent / "o.json")]
    assert cli.main(argv) == 0
    assert 'id="pe-fairness"' in report.read_text()
    assert (path.parent / "o.fairness.json").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sensitive", "gender"], 'column "gender"'),
        (["--sensitive", "sex", "--format", "json"], "give -o FILE"),
        (["--sensitive", "sex", "--bins", "100"], "--sensitive works without --bins"),
    ],
)
def test_errors_are_one_line(
    scores: tuple[pl.DataFrame, Path],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    _, path = scores
    argv = ["binary", str(path), "--label", "y", "--score", "p", *extra]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("polars-eval: error:")
    assert message in err[0]
