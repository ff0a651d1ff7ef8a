"""The ``polars-eval`` command line: numbers equal to the Python API, one-line errors.

Subprocess tests (``python -m polars_eval``) check what a user sees: exit codes, a single
``polars-eval: error:`` line and no traceback. The other tests call ``cli.main`` in process
(an interpreter start costs about a second each).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_eval as pe
from polars_eval import _demo, cli

ERROR_PREFIX = "polars-eval: error: "


def _run(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONWARNINGS": "", "POLARS_EVAL_DEBUG": ""}
    return subprocess.Popen(
        [sys.executable, "-m", "polars_eval", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
    )


def _data(n: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "y": y,
            "p": np.round(np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1), 2),
            "w": rng.integers(0, 4, n).astype(np.float64),
            "g": rng.choice(["a", "b", "c"], n),
        }
    )


@pytest.fixture
def scores(tmp_path: Path) -> tuple[pl.DataFrame, Path]:
    df = _data()
    path = tmp_path / "scores.parquet"
    df.write_parquet(path)
    return df, path


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _assert_one_line_error(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(ERROR_PREFIX), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def _same_numbers(records: list[dict[str, object]], expected: pl.DataFrame) -> None:
    assert len(records) == expected.height
    for record, row in zip(records, expected.iter_rows(named=True), strict=True):
        assert set(record) == set(row)
        for key, value in row.items():
            got = record[key]
            if isinstance(value, float) and not math.isfinite(value):
                assert got is None  # NaN/inf are not JSON: written as null
            elif not isinstance(value, float):
                assert got == value, (key, got, value)
            else:
                # JSON floats round-trip exactly; the engines may sum in another order
                assert got == pytest.approx(value, rel=1e-12, abs=1e-15), (key, got, value)


# ---------------------------------------------------------------------------------------
# Through a subprocess: what a user sees
# ---------------------------------------------------------------------------------------


def test_json_output_equals_python_api(tmp_path: Path) -> None:
    df = _data(600, seed=1)
    path = tmp_path / "scores.parquet"
    df.write_parquet(path)
    grouped = _run("binary", str(path), "--label", "y", "--score", "p", "--weight", "w",
                   "--by", "g", "--format", "json")  # fmt: skip
    whole = _run("binary", str(path), "--label", "y", "--score", "p", "--format", "json")
    out, err = grouped.communicate(timeout=60)
    assert grouped.returncode == 0, err
    _same_numbers(json.loads(out), df.eval.binary("y", "p", weight="w", by="g"))
    out, err = whole.communicate(timeout=60)
    assert whole.returncode == 0, err
    _same_numbers(json.loads(out), df.eval.binary("y", "p"))


def test_bad_inputs_give_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "ragged.csv").write_text("y,p\n1,0.5\n0,0.3,7,8\n1,0.2\n")
    (tmp_path / "text_score.csv").write_text("y,p\n1,0.5\n0,high\n1,0.2\n")
    (tmp_path / "ok.csv").write_text("y,p\n1,0.5\n0,0.3\n")
    cases = {
        "missing file": (["missing.parquet", "--label", "y", "--score", "p"], ["missing.parquet"]),
        "malformed csv": (["ragged.csv", "--label", "y", "--score", "p"], ["ragged.csv"]),
        "unknown column": (["ok.csv", "--label", "y", "--score", "nope"], ['"nope"']),
        "non-numeric score": (["text_score.csv", "--label", "y", "--score", "p"], ['"p"']),
    }
    running = {name: _run("binary", *args, cwd=tmp_path) for name, (args, _) in cases.items()}
    for name, proc in running.items():
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, (name, err)
        assert out == "", name
        _assert_one_line_error(err, *cases[name][1])


def test_demo_runs_without_input(tmp_path: Path) -> None:
    proc = _run("demo", "--data-dir", "data", cwd=tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "failed" not in err
    for title in ("Overall", "Per segment", "Per channel", "Gain table"):
        assert title in out
    data = pl.read_parquet(tmp_path / "data" / "credit_scoring.parquet")
    assert data.equals(_demo.credit_scoring())
    for task in ("binary", "regression", "multiclass", "forecast", "ranking"):
        name = "" if task == "binary" else f"_{task}"
        report = tmp_path / f"polars_eval_demo_report{name}.html"
        assert report.exists() and "<html" in report.read_text()[:500].lower()
        assert str(report.resolve()) in err


# ---------------------------------------------------------------------------------------
# In process
# ---------------------------------------------------------------------------------------


def test_help_of_every_command_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"binary", "demo"} <= set(commands)
    for argv in [[], *([name] for name in commands)]:
        with pytest.raises(SystemExit) as exit_info:
            cli.main([*argv, "--help"])
        assert exit_info.value.code == 0
        out = capsys.readouterr().out
        assert "examples:" in out and "polars-eval" in out


def test_no_command_prints_usage_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys)
    assert code == 2 and "usage:" in err and out == ""


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_output_file_formats_equal_python_api(
    scores: tuple[pl.DataFrame, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    df, path = scores
    target = tmp_path / f"out.{fmt}"
    # the format comes from the output's extension
    code, out, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--by", "g",
                          "--weight", "w", "-o", target)  # fmt: skip
    assert code == 0 and out == "" and err == ""
    expected = df.eval.binary("y", "p", weight="w", by="g")
    if fmt == "csv":
        assert_frame_equal(pl.read_csv(target), expected, check_dtypes=False)
    elif fmt == "parquet":
        assert_frame_equal(pl.read_parquet(target), expected)
    else:
        _same_numbers(json.loads(target.read_text()), expected)


def test_table_output(
    scores: tuple[pl.DataFrame, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    df, path = scores
    code, out, _ = _cli(capsys, "binary", path, "--label", "y", "--score", "p")
    assert code == 0
    auc = df.eval.auc("y", "p")
    # one row, one column per metric (cut into tables that fit the width)
    ((header, rows),) = [(h, r) for h, r in _parts(out) if "auc" in h]
    assert len(rows) == 1 and rows[0][header.index("auc")] == f"{auc:.4g}"
    code, out, _ = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--by", "g",
                        "--metrics", "auc,logloss")  # fmt: skip
    assert code == 0
    header = out.splitlines()[1]
    assert [h.strip() for h in header.strip("│").split("┆")] == ["g", "auc", "logloss"]


def test_globs_directories_hive_and_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _data(300, seed=3)
    for key, part in df.group_by("g"):
        folder = tmp_path / "lake" / f"segment={key[0]}"
        folder.mkdir(parents=True)
        part.drop("g").write_parquet(folder / "part-0.parquet")
    expected = df.rename({"g": "segment"}).eval.binary("y", "p", by="segment")
    for source in ([str(tmp_path / "lake" / "**" / "*.parquet")], [str(tmp_path / "lake")]):
        code, out, err = _cli(capsys, "binary", *source, "--label", "y", "--score", "p",
                              "--by", "segment", "--format", "json")  # fmt: skip
        assert code == 0, err
        _same_numbers(json.loads(out), expected)
    # CSV + NDJSON halves of one data set, in one command
    df.head(150).write_csv(tmp_path / "a.csv")
    df.tail(150).write_ndjson(tmp_path / "b.ndjson")
    code, out, err = _cli(capsys, "binary", tmp_path / "a.csv", tmp_path / "b.ndjson",
                          "--label", "y", "--score", "p", "--format", "json")  # fmt: skip
    assert code == 0, err
    _same_numbers(json.loads(out), df.eval.binary("y", "p"))
    # a file of unknown extension, unless the format is given
    df.write_csv(tmp_path / "scores.txt")
    code, _, err = _cli(capsys, "binary", tmp_path / "scores.txt", "--label", "y", "--score", "p")
    assert code == 2
    _assert_one_line_error(err, "scores.txt", "--input-format")
    code, out, err = _cli(capsys, "binary", tmp_path / "scores.txt", "--input-format", "csv",
                          "--label", "y", "--score", "p", "--format", "json")  # fmt: skip
    assert code == 0, err
    _same_numbers(json.loads(out), df.eval.binary("y", "p"))


def test_options_reach_the_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    df = _data(300, seed=4).with_columns(
        outcome=pl.when(pl.col("y") == 1).then(pl.lit("churned")).otherwise(pl.lit("stayed")),
        margin=(pl.col("p") - 0.5) * 10,
    )
    path = tmp_path / "s.parquet"
    df.write_parquet(path)
    code, out, err = _cli(capsys, "binary", path, "--label", "outcome", "--score", "p",
                          "--pos-label", "churned", "--threshold", "0.3", "--format", "json")  # fmt: skip
    assert code == 0, err
    _same_numbers(
        json.loads(out), df.eval.binary("outcome", "p", pos_label="churned", threshold=0.3)
    )
    code, out, err = _cli(capsys, "binary", path, "--label", "y", "--score", "margin",
                          "--no-proba", "--format", "json")  # fmt: skip
    assert code == 0, err
    _same_numbers(json.loads(out), df.eval.binary("y", "margin", probability=False))
    code, out, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p",
                          "--pos-label", "yes")  # fmt: skip
    assert code == 2
    _assert_one_line_error(err, "--pos-label", "'y'")


def test_more_bad_inputs(
    scores: tuple[pl.DataFrame, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = scores
    (path.parent / "broken.parquet").write_bytes(b"not a parquet file")
    drift = path.parent / "drift"
    drift.mkdir()
    pl.DataFrame({"y": [1, 0], "p": [0.2, 0.4]}).write_parquet(drift / "a.parquet")
    pl.DataFrame({"y": [1, 0], "p": ["0.2", "0.4"]}).write_parquet(drift / "b.parquet")
    base = ["binary", str(path), "--label", "y", "--score", "p"]
    cases = [
        (
            ["binary", str(path.parent / "broken.parquet"), "--label", "y", "--score", "p"],
            ["broken.parquet"],
        ),
        ([*base, "--format", "xml"], ["--format"]),
        (["binary", str(drift), "--label", "y", "--score", "p"], ["drift", "p"]),  # schema drift
        ([*base, "--by", "region"], ['"region"']),
        ([*base, "--metrics", "auc,nope"], ["'nope'"]),
        ([*base, "--format", "parquet"], ["--output"]),
        ([*base, "--threshold", "high"], ["--threshold"]),
        ([*base, "--weight", "g"], ['"g"']),
        (["binary", str(path.parent / "*.csv"), "--label", "y", "--score", "p"], ["no file"]),
        ([*base, "-o", str(path.parent / "no" / "such" / "dir.json")], ["cannot write"]),
        (["binary", "--label", "y", "--score", "p"], ["PATH"]),
        (["nope"], ["nope"]),
    ]
    for argv, needles in cases:
        code, out, err = _cli(capsys, *argv)
        assert code == 2, (argv, err)
        assert out == ""
        _assert_one_line_error(err, *needles)


def test_undefined_groups_warn_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 1], "p": [0.9, 0.2, 0.8, 0.7], "g": ["a", "a", "b", "b"]})
    path = tmp_path / "one_class.parquet"
    df.write_parquet(path)
    code, out, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--by", "g",
                          "--format", "json")  # fmt: skip
    assert code == 0
    records = json.loads(out)
    assert records[0]["auc"] == 1.0 and records[1]["auc"] is None
    warnings_ = [line for line in err.splitlines() if line]
    assert warnings_ and all(line.startswith("polars-eval: warning: ") for line in warnings_)
    assert "auc" in err


def _parts(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """The tables of a printed table: (header, rows of cells) for each part."""
    parts = []
    for block in text.strip().split("\n\n"):
        rows = [
            [cell.strip() for cell in line.strip("│").split("┆")]
            for line in block.splitlines()
            if line.startswith("│")
        ]
        parts.append((rows[0], rows[1:]))
    return parts


@pytest.mark.parametrize("groups", [1, 3, 8, 9, 100])
@pytest.mark.parametrize("width", [60, 100, 400])
def test_table_keeps_groups_as_rows_and_folds_to_the_width(groups: int, width: int) -> None:
    # one orientation at any number of groups (it used to turn at 8); wide results are
    # cut into tables that each repeat the group columns and fit the width
    rng = np.random.default_rng(groups)
    metrics = {f"metric_{i}": rng.random(groups) for i in range(20)}
    metrics["auc_lower"] = metrics["metric_3"] - 0.1
    table = pl.DataFrame({"segment": [f"s{i:03d}" for i in range(groups)], **metrics})
    table = table.select("segment", *[f"metric_{i}" for i in range(4)], "auc_lower", pl.exclude(
        "segment", "auc_lower", *[f"metric_{i}" for i in range(4)]
    )).rename({"metric_3": "auc"})  # fmt: skip
    text = cli.render_table(table, ["segment"], width=width)
    assert max(map(len, text.splitlines())) <= width
    parts = _parts(text)
    assert (len(parts) > 1) == (width < 400)
    seen: list[str] = []
    for header, rows in parts:
        assert header[0] == "segment"
        assert [row[0] for row in rows] == table["segment"].to_list()
        seen += header[1:]
    assert seen == table.columns[1:]  # every metric once, in order
    for header, rows in parts:  # an interval stays next to its metric
        if "auc_lower" in header:
            assert header[header.index("auc_lower") - 1] == "auc"
        for row in rows:  # 4 significant digits
            for name, cell in zip(header[1:], row[1:], strict=True):
                value = table.filter(pl.col("segment") == row[0])[name].item()
                assert float(cell) == pytest.approx(value, rel=5e-4)


def test_table_folds_a_metric_with_its_interval() -> None:
    row = {"g": ["a"], "aaaa": [0.5], "bbbb": [0.5], "bbbb_lower": [0.5], "bbbb_upper": [0.5]}
    table = pl.DataFrame(row)
    # "│ g ┆ aaaa ┆ bbbb │" is 19 wide: bbbb alone would fit next to aaaa, not with its bounds
    headers = [h for h, _ in _parts(cli.render_table(table, ["g"], width=30))]
    assert headers == [["g", "aaaa"], ["g", "bbbb", "bbbb_lower", "bbbb_upper"]]


def test_table_width_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    table = pl.DataFrame({f"metric_{i}": [0.123456] for i in range(20)})
    monkeypatch.setenv("COLUMNS", "70")
    assert max(map(len, cli.render_table(table, []).splitlines())) <= 70
    monkeypatch.setenv("COLUMNS", "500")
    assert len(_parts(cli.render_table(table, []))) == 1


def test_table_counts_print_as_integers() -> None:
    gain = _data(2_000).eval.gain_table("y", "p", bins=4)
    text = cli.render_table(gain, [])
    ((header, rows),) = _parts(cli.render_table(gain, [], width=1000))
    counts = [row[header.index("count")] for row in rows]
    assert counts == [str(int(c)) for c in gain["count"]] and "500.0" not in text
    assert sum(map(int, counts)) == 2_000
    # weighted counts with fractions stay floats; metrics stay floats even when whole
    table = pl.DataFrame({"g": ["a", "b"], "count": [2.5, 3.0], "auc": [1.0, 1.0]})
    ((header, rows),) = _parts(cli.render_table(table, ["g"]))
    assert [row[1:] for row in rows] == [["2.5", "1.0"], ["3.0", "1.0"]]
    table = pl.DataFrame({"g": ["a", "b"], "tp": [2.0, None], "n_rows": [7.0, 8.0]})
    ((header, rows),) = _parts(cli.render_table(table, ["g"]))
    assert [row[1:] for row in rows] == [["2", "7"], ["null", "8"]]


def test_ci_adds_bounds_from_the_api(
    scores: tuple[pl.DataFrame, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    df, path = scores
    base = ["binary", path, "--label", "y", "--score", "p", "--weight", "w", "--format", "json"]
    code, out, err = _cli(capsys, *base, "--by", "g", "--ci", "hanley", "--level", "0.9")
    assert code == 0, err
    records = json.loads(out)
    expected = (
        df.group_by("g")
        .agg(pe.interval("auc", "y", "p", weight="w", method="hanley", level=0.9))
        .sort("g")
        .unnest("auc")
    )
    for record, row in zip(records, expected.iter_rows(named=True), strict=True):
        assert list(record)[:4] == ["g", "auc", "auc_lower", "auc_upper"]
        assert record["auc"] == pytest.approx(row["value"], rel=1e-12)
        assert record["auc_lower"] == pytest.approx(row["lower"], rel=1e-12)
        assert record["auc_upper"] == pytest.approx(row["upper"], rel=1e-12)
    assert "precision_lower" not in records[0]  # Wilson metrics are not Hanley's
    code, out, err = _cli(capsys, *base, "--ci", "bootstrap", "--resamples", "40", "--seed",
                          "7", "--metrics", "auc,logloss")  # fmt: skip
    assert code == 0, err
    record = json.loads(out)[0]
    boot = df.eval.bootstrap(
        [pe.auc("y", "p", weight="w"), pe.logloss("y", "p", weight="w")], n_resamples=40, seed=7
    )
    for row in boot.iter_rows(named=True):
        assert record[f"{row['metric']}_lower"] == pytest.approx(row["lower"], rel=1e-12)
        assert record[f"{row['metric']}_upper"] == pytest.approx(row["upper"], rel=1e-12)


def test_report_is_written(
    scores: tuple[pl.DataFrame, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = scores
    target = tmp_path / "r.html"
    code, _, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--by", "g",
                        "--report", target)  # fmt: skip
    assert code == 0, err
    assert target.exists() and "<html" in target.read_text().lower()


def test_demo_data_is_deterministic_and_realistic() -> None:
    df = _demo.credit_scoring(2_000)
    assert df.equals(_demo.credit_scoring(2_000))
    assert not df.equals(_demo.credit_scoring(2_000, seed=1))
    assert set(df["segment"].unique()) == {"credit_card", "personal_loan", "auto_loan", "mortgage"}
    assert 0.03 < df["defaulted"].mean() < 0.15  # type: ignore[operator]
    assert df["pd_score"].is_between(0, 1).all()
    per_channel = df.eval.auc("defaulted", "pd_score", by="channel").sort("auc")
    assert per_channel["channel"][0] == "broker"  # the built-in weak spot shows


def test_progress_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(cli._common, "PROGRESS_AFTER_S", 0.01)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with cli.progress("crunching"):
        deadline = time.monotonic() + 5  # wait for the ticker thread, even on a busy machine
        while "crunching" not in terminal.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "crunching" in terminal.getvalue() and "done in" in terminal.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    with cli.progress("crunching"):
        time.sleep(0.05)
    assert piped.getvalue() == ""


def test_regression_command_equals_python_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _demo.property_valuations(300).with_columns(w=pl.col("floor_area_m2") / 100)
    path = tmp_path / "prices.parquet"
    df.write_parquet(path)
    code, out, err = _cli(capsys, "regression", path, "--actual", "sale_price", "--pred",
                          "predicted_price", "--weight", "w", "--by", "region",
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    expected = df.eval.regression("sale_price", "predicted_price", weight="w", by="region")
    _same_numbers(json.loads(out), expected)
    code, _, err = _cli(capsys, "regression", path, "--actual", "sale_price", "--pred",
                        "predicted_price", "--metrics", "rmse", "--report",
                        tmp_path / "r.html")  # fmt: skip
    assert code == 0, err
    assert (tmp_path / "r.html").exists() and "report written" in err
    code, _, err = _cli(capsys, "regression", path, "--actual", "region", "--pred",
                        "predicted_price")  # fmt: skip
    assert code == 2
    _assert_one_line_error(err, '"region"')


def test_ranking_command_equals_python_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _demo.search_log(40, 8)
    path = tmp_path / "log.csv"
    df.write_csv(path)
    code, out, err = _cli(capsys, "ranking", path, "--query", "query_id", "--relevance",
                          "relevance", "--score", "score", "-k", "3,all", "--by", "market",
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    expected = df.eval.ranking("relevance", "score", query="query_id", k=[3, None], by="market")
    _same_numbers(json.loads(out), expected)
    code, _, err = _cli(capsys, "ranking", path, "--query", "query_id", "--relevance",
                        "relevance", "--score", "score", "-k", "ten")  # fmt: skip
    assert code == 2
    _assert_one_line_error(err, "'ten'")


def test_trec_command_equals_python_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text(
        "1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 c 3 1.0 r\n2 Q0 a 1 1.0 r\n2 Q0 d 2 0.5 r\n"
    )
    qrels.write_text("1 0 b 1\n1 0 c 0\n1 0 z 1\n2 0 d 2\n")
    for extra, per_query in (([], False), (["-q"], True)):
        code, out, err = _cli(capsys, "trec", run, qrels, "-m", "ndcg_cut.10", "-m", "map",
                              *extra, "--format", "json")  # fmt: skip
        assert code == 0, err
        expected = pe.trec_eval(str(run), str(qrels), ["ndcg_cut.10", "map"], per_query=per_query)
        _same_numbers(json.loads(out), expected)
    (tmp_path / "bad.txt").write_text("1 Q0 a 1 high r\n")
    for argv, needles in (
        ([tmp_path / "bad.txt", qrels], ["bad.txt", "line 1"]),
        ([tmp_path / "none.txt", qrels], ["none.txt"]),
        ([run, qrels, "-m", "bogus"], ["bogus"]),
    ):
        code, out, err = _cli(capsys, "trec", *argv)
        assert code == 2 and out == ""
        _assert_one_line_error(err, *needles)


def test_multiclass_command_equals_python_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _demo.rating_grades(300)
    path = tmp_path / "grades.parquet"
    df.write_parquet(path)
    proba = [f"p_{g}" for g in _demo.GRADES]
    code, out, err = _cli(capsys, "multiclass", path, "--label", "grade", "--pred",
                          "predicted_grade", "--proba", ",".join(proba), "--classes",
                          "A,B,C,D,E", "--by", "sector", "--format", "json")  # fmt: skip
    assert code == 0, err
    expected = df.eval.multiclass(
        "grade", pred="predicted_grade", proba=proba, classes=list("ABCDE"), by="sector"
    )
    _same_numbers(json.loads(out), expected)
    # integer class ids given on the command line take the label column's dtype
    codes = df.with_columns(pl.col("grade").rank("dense").cast(pl.Int64) - 1)
    codes.write_parquet(path)
    code, out, err = _cli(capsys, "multiclass", path, "--label", "grade", "--proba",
                          ",".join(proba), "--classes", "0,1,2,3,4", "--format", "json")  # fmt: skip
    assert code == 0, err
    _same_numbers(
        json.loads(out), codes.eval.multiclass("grade", proba=proba, classes=[0, 1, 2, 3, 4])
    )
    code, _, err = _cli(capsys, "multiclass", path, "--label", "grade")
    assert code == 2
    _assert_one_line_error(err, "--pred", "--proba")


def test_forecast_command_equals_python_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history, forecasts = _demo.branch_demand(3)
    history.write_parquet(tmp_path / "history.parquet")
    forecasts.write_parquet(tmp_path / "forecasts.parquet")
    code, out, err = _cli(capsys, "forecast", tmp_path / "forecasts.parquet", "--actual",
                          "applications", "--forecast", "forecast", "--series", "branch",
                          "--time", "month", "--cutoff", "cutoff", "--train",
                          tmp_path / "history.parquet", "--season-length", "12", "--by",
                          "lead", "--interval", "lo80,hi80", "--quantile", "0.5=forecast",
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    expected = forecasts.eval.forecast(
        "applications",
        "forecast",
        series="branch",
        time="month",
        cutoff="cutoff",
        train=history,
        season_length=12,
        by="lead",
        interval=("lo80", "hi80"),
        quantiles={0.5: "forecast"},
    )
    _same_numbers(json.loads(out), expected)
    code, _, err = _cli(capsys, "forecast", tmp_path / "forecasts.parquet", "--actual",
                        "applications", "--forecast", "forecast", "--series", "branch",
                        "--time", "month", "--quantile", "high=q90")  # fmt: skip
    assert code == 2
    _assert_one_line_error(err, "--quantile")


def test_baseline_and_metric_selection(
    scores: tuple[pl.DataFrame, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    df, path = scores
    code, out, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--by", "g",
                          "--baseline", "--metrics", "auc,logloss", "--format", "json")  # fmt: skip
    assert code == 0, err
    expected = df.eval.binary("y", "p", by="g", baseline=True).select(
        "g", "auc", "auc_baseline", "logloss", "logloss_baseline"
    )
    records = json.loads(out)
    assert list(records[0]) == expected.columns
    _same_numbers(records, expected)


def test_console_script_is_declared() -> None:
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts.get("polars-eval") == "polars_eval.cli:main"


def test_long_undefined_warnings_are_shortened() -> None:
    names = [f"m{i}" for i in range(8)]
    text = "; ".join(f"{n} is null for 2 of 9 groups (no relevant item (rel >= 1))" for n in names)
    text += "; f1 is null for 1 of 9 groups (0/0)"
    assert cli._shorten(text) == (
        "m0, m1, m2, m3, m4, m5 and 2 more are null for 2 of 9 groups (no relevant item "
        "(rel >= 1)); f1 is null for 1 of 9 groups (0/0)"
    )
    assert cli._shorten("something else") == "something else"


def test_forecast_report_with_by_lead(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `--by lead` groups by a column the evaluation derives from --cutoff: the report
    # (which has its own table by lead) must not look for it in the file
    history, forecasts = _demo.branch_demand(3)
    history.write_parquet(tmp_path / "history.parquet")
    forecasts.write_parquet(tmp_path / "forecasts.parquet")
    base = ["forecast", tmp_path / "forecasts.parquet", "--actual", "applications",
            "--forecast", "forecast", "--series", "branch", "--time", "month", "--cutoff",
            "cutoff", "--train", tmp_path / "history.parquet", "--season-length", "12"]  # fmt: skip
    for by in ("lead", "region,lead"):
        target = tmp_path / f"fc_{by}.html"
        code, out, err = _cli(capsys, *base, "--by", by, "--report", target)
        assert code == 0, err
        assert out and target.stat().st_size > 0
        assert f"report written to {target.resolve()}" in err


def test_demo_trec_files_are_the_search_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pytrec_eval

    log = _demo.search_log(40, 8)
    run_text, qrels_text = _demo.trec_files(log)
    (tmp_path / "run.txt").write_text(run_text)
    (tmp_path / "qrels.txt").write_text(qrels_text)
    run: dict[str, dict[str, float]] = {}
    for line in run_text.splitlines():
        query, q0, doc, _, score, _ = line.split()
        assert q0 == "Q0"
        run.setdefault(query, {})[doc] = float(score)
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_text.splitlines():
        query, _, doc, relevance = line.split()
        qrels.setdefault(query, {})[doc] = int(relevance)
    # every (query, document) of the log, with its score and relevance
    assert sum(map(len, run.values())) == sum(map(len, qrels.values())) == log.height
    for row in log.iter_rows(named=True):
        assert run[str(row["query_id"])][f"d{row['doc_id']}"] == row["score"]
        assert qrels[str(row["query_id"])][f"d{row['doc_id']}"] == row["relevance"]
    # ranks follow the score, ties by document id descending (trec_eval's order)
    for query in run:
        lines = [line.split() for line in run_text.splitlines() if line.split()[0] == query]
        order = sorted(lines, key=lambda f: (-float(f[4]), -int(f[2][1:])))
        assert [int(f[3]) for f in order] == list(range(1, len(order) + 1))
    measures = ["ndcg_cut.10", "map", "P.5"]
    code, out, err = _cli(capsys, "trec", tmp_path / "run.txt", tmp_path / "qrels.txt", "-q",
                          *[a for m in measures for a in ("-m", m)], "--format", "json")  # fmt: skip
    assert code == 0, err
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut", "map", "P"}).evaluate(run)
    records = json.loads(out)
    assert records
    for record in records:
        expected = oracle[str(record["query"])]
        assert record["ndcg_cut_10"] == pytest.approx(expected["ndcg_cut_10"], abs=1e-12)
        assert record["map"] == pytest.approx(expected["map"], abs=1e-12)
        assert record["P_5"] == pytest.approx(expected["P_5"], abs=1e-12)


def test_demo_data_dir_holds_the_readme_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        code, _, err = _cli(capsys, "demo", "--data-dir", "data", "--no-report")
    assert code == 0, err
    names = {p.name for p in (tmp_path / "data").iterdir()}
    assert {"credit_scoring.parquet", "search_log.parquet", "run.txt", "qrels.txt"} <= names
    assert not [p for p in tmp_path.iterdir() if p.name != "data"]  # --no-report: nothing else


def test_progress_line_shows_stage_share_and_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    meter = cli.Progress("reading", total=200, unit="rows")
    meter.add(50)
    monkeypatch.setattr(meter, "elapsed", lambda: 10.0)  # 50 rows in 10 s: 30 s for 150
    line = meter.line(100, ascii_only=True)
    assert (
        line == "polars-eval: reading [" + "#" * 7 + "-" * 23 + "]  25% · 50/200 rows · 0:30 left"
    )
    assert len(meter.line(60, ascii_only=True)) <= 60 and "25%" in meter.line(60)
    meter.add(150)
    assert "100% · 200/200 rows · all read, computing... 10 s" in meter.line(100)
    meter.add(200)  # read a second time: no share any more, the rows read
    assert meter.line(100).endswith("reading, 400 rows read... 10 s")
    unknown = cli.Progress("writing the report")
    monkeypatch.setattr(unknown, "elapsed", lambda: 75.0)
    assert unknown.line(100) == "polars-eval: writing the report... 75 s"
    big = cli.Progress("evaluating", total=20_000_000)
    big.add(12_400_000)
    assert "62% · 12.4M/20.0M rows" in big.line(100)
    assert [cli._clock(s) for s in (0, 59.6, 61, 3725)] == ["0:00", "1:00", "1:01", "1:02:05"]


class _Terminal(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def test_terminal_progress_counts_rows_and_keeps_the_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # on a terminal the input rows pass through a counter: same numbers, every row counted
    df = _data(500, seed=5).with_columns(pl.col("p").alias("q"), pl.lit(1).alias("unused"))
    for key, part in df.group_by("g"):
        (tmp_path / f"g={key[0]}").mkdir()
        part.drop("g").write_parquet(tmp_path / f"g={key[0]}" / "part.parquet")
    history, forecasts = _demo.branch_demand(3)
    history.write_parquet(tmp_path / "history.parquet")
    forecasts.write_parquet(tmp_path / "forecasts.parquet")
    log = _demo.search_log(30, 6)
    log.write_parquet(tmp_path / "log.parquet")
    lake = str(tmp_path / "g=*" / "*.parquet")
    df.write_csv(tmp_path / "scores.csv")
    commands = [
        (["binary", tmp_path / "scores.csv", "--label", "y", "--score", "p"], None),
        (["binary", lake, "--label", "y", "--score", "p", "--by", "g", "--weight", "w"], 500),
        (["binary", lake, "--label", "y", "--score", "p", "--ci", "wilson"], 500),
        (["regression", lake, "--actual", "p", "--pred", "q", "--by", "g"], 500),
        (["ranking", tmp_path / "log.parquet", "--query", "query_id", "--relevance",
          "relevance", "--score", "score", "-k", "3", "--by", "market"], 180),
        (["forecast", tmp_path / "forecasts.parquet", "--actual", "applications",
          "--forecast", "forecast", "--series", "branch", "--time", "month", "--cutoff",
          "cutoff", "--by", "lead"], 54),
    ]  # fmt: skip
    meters: list[cli.Progress] = []
    real = cli.progress

    @contextlib.contextmanager
    def recorded(*args: Any, **kwargs: Any) -> Iterator[cli.Progress]:
        with real(*args, **kwargs) as meter:
            meters.append(meter)
            yield meter

    for argv, rows in commands:
        code, out, err = _cli(capsys, *argv, "--format", "json")
        assert code == 0, err
        plain = json.loads(out)
        meters.clear()
        terminal = _Terminal()
        with monkeypatch.context() as m:
            m.setattr(sys, "stderr", terminal)
            m.setattr(cli._common, "PROGRESS_AFTER_S", 0.0)
            m.setattr(cli._common, "progress", recorded)
            code = cli.main([str(a) for a in [*argv, "--format", "json"]])
        out, _ = capsys.readouterr()
        assert code == 0, terminal.getvalue()
        assert "Traceback" not in terminal.getvalue()
        evaluating = next(m for m in meters if m.what == "evaluating")
        assert evaluating.total == rows  # from the parquet metadata (no total for a CSV)
        # every row passed the counter (some tasks read their input more than once)
        assert evaluating.done >= (rows or df.height)
        assert "evaluating: done in" in terminal.getvalue()
        records = json.loads(out)
        assert len(records) == len(plain)
        for got, want in zip(records, plain, strict=True):
            assert got.keys() == want.keys()
            for key, value in want.items():
                assert got[key] == (
                    pytest.approx(value, rel=1e-12, abs=1e-15)
                    if isinstance(value, float)
                    else value
                ), (argv[0], key)


def test_binary_bins_is_the_binned_evaluation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--bins (SPEC §10) gives df.eval.binary(bins=); the binned AUC is within its bound of
    the exact one, and the exact metrics (logloss) are the exact ones."""
    rng = np.random.default_rng(3)
    n = 4000
    df = pl.DataFrame({"y": rng.integers(0, 2, n), "p": rng.random(n), "g": rng.integers(0, 3, n)})
    path = tmp_path / "s.parquet"
    df.write_parquet(path)
    code, out, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--by", "g",
                          "--bins", "50", "--metrics", "auc,logloss", "--format", "json")  # fmt: skip
    assert code == 0, err
    got = pl.DataFrame(json.loads(out))
    want = df.eval.binary("y", "p", by="g", bins=50).select("g", "auc", "logloss")
    assert_frame_equal(got, want, check_dtypes=False, rel_tol=1e-12)
    exact = df.eval.binary("y", "p", by="g").select("g", "auc", "logloss")
    assert_frame_equal(got.select("g", "logloss"), exact.select("g", "logloss"), rel_tol=1e-12)
    assert (got["auc"] - exact["auc"]).abs().max() < 0.01
    assert (got["auc"] != exact["auc"]).any()  # the bins do change the sort-based metrics
    code, _, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--bins", "1")
    assert code == 2
    _assert_one_line_error(err, "bins must be an integer >= 2")
    code, _, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--bins", "9",
                        "--ci", "wilson")  # fmt: skip
    assert code == 2
    _assert_one_line_error(err, "--bins works without --ci and --report")


def test_metrics_outside_the_default_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--metrics reaches every registered metric of the task (SPEC §12), not only the
    default table's columns."""
    rng = np.random.default_rng(8)
    n = 500
    df = pl.DataFrame({"y": rng.integers(0, 2, n), "p": rng.random(n), "g": rng.integers(0, 2, n)})
    path = tmp_path / "s.parquet"
    df.write_parquet(path)
    code, out, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p", "--by", "g",
                          "--metrics", "jaccard,auc", "--format", "json")  # fmt: skip
    assert code == 0, err
    got = pl.DataFrame(json.loads(out))
    assert got.columns == ["g", "jaccard", "auc"]
    want = df.eval.binary("y", "p", by="g", metrics=["jaccard", "auc"])
    assert_frame_equal(got, want, check_dtypes=False, rel_tol=1e-12)
    code, _, err = _cli(capsys, "binary", path, "--label", "y", "--score", "p",
                        "--metrics", "partial_auc")  # fmt: skip
    assert code == 2
    _assert_one_line_error(err, "partial_auc needs max_fpr=")


@pytest.mark.parametrize(
    "task,name,needles",
    [
        ("binary", "nope", ["unknown metric 'nope'", "binary metrics:", "hinge_loss"]),
        ("binary", "n", ["unknown metric 'n'"]),
        ("binary", "roc_curve", ["'roc_curve' is a curve or table", "--metrics"]),
        ("binary", "auc_lower", ["'auc_lower' is a column", "--ci"]),
        ("ranking", "ndcg@10", ["'ndcg@10' is a column", "ndcg", "-k 10"]),
        ("ranking", "n_queries", ["unknown metric 'n_queries'", "ranking metrics:"]),
        ("ranking", "precision", ["'precision' is a column", "precision_at_k"]),
        ("multiclass", "multiclass_f1_macro", ["is a column", "multiclass_f1"]),
        ("regression", "zero_actuals", ["unknown metric 'zero_actuals'"]),
        ("forecast", "mae_pooled", ["'mae_pooled' is a column", "mae"]),
    ],
)
def test_metrics_takes_metric_names_only(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    task: str,
    name: str,
    needles: list[str],
) -> None:
    """--metrics takes the task's metric names, as the registry lists them (SPEC §1.3):
    a column name (a count, an average, a cutoff, an interval bound) or an unknown name is
    a one-line error that says what to pass instead, before any data is read."""
    data = {
        "binary": ["--label", "y", "--score", "p"],
        "ranking": ["--query", "q", "--relevance", "y", "--score", "p"],
        "multiclass": ["--label", "y", "--pred", "y"],
        "regression": ["--actual", "p", "--pred", "p"],
        "forecast": ["--actual", "p", "--forecast", "p", "--series", "q", "--time", "t"],
    }
    missing = tmp_path / "not_read.parquet"  # never opened: the names are checked first
    code, out, err = _cli(capsys, task, missing, *data[task], "--metrics", name)
    assert code == 2 and out == ""
    _assert_one_line_error(err, *needles)


def test_metrics_gives_every_column_of_a_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metric name gives each of its columns: a ranking metric its whole-list value and
    its cutoffs, whether it is in the default table or not."""
    log = _demo.search_log(30, 6)
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    base = ["ranking", path, "--query", "query_id", "--relevance", "relevance", "--score", "score"]
    code, out, err = _cli(capsys, *base, "-k", "5,10", "--metrics", "ndcg,precision_at_k",
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    want = log.eval.ranking("relevance", "score", query="query_id", k=[5, 10])
    want = want.select("ndcg", "ndcg@5", "ndcg@10", "precision@5", "precision@10")
    assert list(json.loads(out)[0]) == want.columns
    _same_numbers(json.loads(out), want)


def test_trec_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """trec's -M/-l/-c/-J reach pe.trec_eval's flags (SPEC §7)."""
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text(
        "1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 c 3 1.0 r\n2 Q0 a 1 1.0 r\n2 Q0 d 2 0.5 r\n"
    )
    qrels.write_text("1 0 b 1\n1 0 c 0\n1 0 z 2\n2 0 d 2\n3 0 q 1\n")
    flags = {"max_docs": 1, "min_relevance": 2, "complete_queries": True, "judged_only": True}
    argv = ["-M", "1", "-l", "2", "-c", "-J"]
    code, out, err = _cli(capsys, "trec", run, qrels, "-m", "map", "-m", "P.5", *argv,
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    _same_numbers(json.loads(out), pe.trec_eval(str(run), str(qrels), ["map", "P.5"], **flags))
    plain = pe.trec_eval(str(run), str(qrels), ["map", "P.5"])
    assert plain.row(0) != pe.trec_eval(str(run), str(qrels), ["map", "P.5"], **flags).row(0)


def test_forecast_metrics_outside_the_default_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(9)
    n = 200
    df = pl.DataFrame({"id": rng.integers(0, 4, n), "t": np.arange(n),
                       "y": rng.random(n) + 1.0, "f": rng.random(n) + 1.0})  # fmt: skip
    path = tmp_path / "fc.parquet"
    df.write_parquet(path)
    code, out, err = _cli(capsys, "forecast", path, "--actual", "y", "--forecast", "f",
                          "--series", "id", "--time", "t", "--metrics", "linex,mae",
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    want = df.eval.forecast("y", "f", series="id", time="t", metrics=["linex", "mae"])
    # each metric with its pooled value beside it (the mean over series first)
    assert list(json.loads(out)[0]) == ["linex", "linex_pooled", "mae", "mae_pooled"]
    _same_numbers(json.loads(out), want.select("linex", "linex_pooled", "mae", "mae_pooled"))


def test_ranking_metrics_outside_the_default_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--metrics reaches ranking's SPEC §12 metrics: without -k the whole list, with -k the
    cutoffs; a registered name finds its column under the table's short name."""
    log = _demo.search_log(30, 6)
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    base = ["ranking", path, "--query", "query_id", "--relevance", "relevance", "--score", "score"]
    code, out, err = _cli(capsys, *base, "--metrics", "bpref,map,f1_at_k", "--format", "json")
    assert code == 0, err
    want = log.eval.ranking("relevance", "score", query="query_id", k=None,
                            metrics=["bpref", "map", "f1_at_k"])  # fmt: skip
    assert list(json.loads(out)[0]) == ["bpref", "map", "f1"]
    _same_numbers(json.loads(out), want.select("bpref", "map", "f1"))
    code, out, err = _cli(capsys, *base, "-k", "5", "--metrics", "bpref,map", "--format", "json")
    assert code == 0, err
    want = log.eval.ranking("relevance", "score", query="query_id", k=5, metrics=["bpref", "map"])
    assert list(json.loads(out)[0]) == ["bpref", "map@5"]
    _same_numbers(json.loads(out), want.select("bpref", "map@5"))


def test_multiclass_metrics_outside_the_default_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--metrics reaches multiclass's SPEC §12 metrics (a metric with averages gives each
    one), with --multi-class, --kappa-weights and --adjusted; the numbers are
    scikit-learn's."""
    from sklearn import metrics as skm

    df = _demo.rating_grades(400)
    path = tmp_path / "grades.parquet"
    df.write_parquet(path)
    proba = [f"p_{g}" for g in _demo.GRADES]
    names = ["multiclass_balanced_accuracy", "multiclass_jaccard", "multiclass_brier",
             "multiclass_hinge_loss", "multiclass_cohen_kappa", "multiclass_auc"]  # fmt: skip
    base = ["multiclass", path, "--label", "grade", "--pred", "predicted_grade", "--proba",
            ",".join(proba), "--classes", "A,B,C,D,E"]  # fmt: skip
    options = ["--multi-class", "ovo", "--kappa-weights", "quadratic", "--adjusted"]
    code, out, err = _cli(capsys, *base, *options, "--metrics", ",".join(names),
                          "--by", "sector", "--format", "json")  # fmt: skip
    assert code == 0, err
    want = df.eval.multiclass("grade", pred="predicted_grade", proba=proba,
                              classes=list("ABCDE"), by="sector", metrics=names,
                              multi_class="ovo", weights="quadratic", adjusted=True)  # fmt: skip
    assert list(json.loads(out)[0]) == want.columns
    _same_numbers(json.loads(out), want)
    code, out, err = _cli(capsys, *base, *options, "--metrics", ",".join(names),
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    got = json.loads(out)[0]
    y, yhat, p = df["grade"].to_numpy(), df["predicted_grade"].to_numpy(), df.select(proba)
    classes = list("ABCDE")
    want_sk = {
        "multiclass_balanced_accuracy": skm.balanced_accuracy_score(y, yhat, adjusted=True),
        "multiclass_jaccard_macro": skm.jaccard_score(y, yhat, average="macro"),
        "multiclass_brier": skm.brier_score_loss(y, p.to_numpy(), labels=classes),
        "multiclass_hinge_loss": skm.hinge_loss(y, p.to_numpy(), labels=classes),
        "multiclass_cohen_kappa": skm.cohen_kappa_score(y, yhat, weights="quadratic"),
        "multiclass_auc_weighted": skm.roc_auc_score(
            y, p.to_numpy(), multi_class="ovo", average="weighted", labels=classes
        ),
    }
    for name, value in want_sk.items():
        assert got[name] == pytest.approx(value, rel=1e-9), name
    assert "multiclass_auc_micro" not in got  # one-vs-one has no micro average
    # a default metric named with its averages, beside a default column
    code, out, err = _cli(capsys, *base, "--metrics", "multiclass_precision,multiclass_mcc",
                          "--format", "json")  # fmt: skip
    assert code == 0, err
    assert list(json.loads(out)[0]) == ["multiclass_precision_micro", "multiclass_precision_macro",
                                        "multiclass_precision_weighted", "multiclass_mcc"]  # fmt: skip
    pred_only = ["multiclass", path, "--label", "grade", "--pred", "predicted_grade"]
    for argv, needles in (
        ([*pred_only, "--metrics", "multiclass_brier"], ["multiclass_brier needs proba="]),
        ([*pred_only, "--metrics", "multiclass_f_beta"], ["multiclass_f_beta needs beta="]),
        ([*pred_only, "--metrics", "multiclass_nope"], ["'multiclass_nope'"]),
    ):
        code, out, err = _cli(capsys, *argv)
        assert code == 2 and out == ""
        _assert_one_line_error(err, *needles)
    # --ci with --pred and --proba: the prediction metrics read --pred, the hinge loss
    # --proba (as the table binds them)
    code, out, err = _cli(capsys, *base, "--metrics", "multiclass_hinge_loss,multiclass_accuracy",
                          "--ci", "bootstrap", "--resamples", "20", "--format", "json")  # fmt: skip
    assert code == 0, err
    got = json.loads(out)[0]
    boot = df.eval.bootstrap(
        [pe.multiclass_hinge_loss("grade", proba, classes=classes),
         pe.multiclass_accuracy("grade", "predicted_grade")],
        n_resamples=20, seed=0,
    )  # fmt: skip
    for row in boot.iter_rows(named=True):
        assert got[f"{row['metric']}_lower"] == pytest.approx(row["lower"], rel=1e-12)
        assert got[f"{row['metric']}_upper"] == pytest.approx(row["upper"], rel=1e-12)
