"""Input files and output paths of the command line (BAD_INPUTS rows 7, 46, 47, 48).

CSV/TSV structure (a repeated column name, lines with too few or too many fields),
lakes whose files disagree, empty inputs, output paths checked before any work, and
exactly one line on stderr for every bad input, never a Rust panic report.
The CSV checker is compared with Python's ``csv`` module; numbers with scikit-learn.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import polars_eval as pe
from polars_eval import cli
from polars_eval.io import files

ERROR_PREFIX = "polars-eval: error: "


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(ERROR_PREFIX), err
    assert "Traceback" not in err and "panicked" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _bad(capsys: pytest.CaptureFixture[str], *args: object) -> str:
    code, out, err = _cli(capsys, *args)
    assert code == 2, err
    assert out == ""
    return _one_line(err)


def _popen(*args: object, cwd: Path | None = None) -> subprocess.Popen[str]:
    """``python -m polars_eval`` of the polars_eval under test (not an installed one)."""
    root = str(Path(pe.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONWARNINGS": "", "POLARS_EVAL_DEBUG": "", "PYTHONPATH": path}
    return subprocess.Popen(
        [sys.executable, "-m", "polars_eval", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
    )


def _finish(procs: list[tuple[str, subprocess.Popen[str]]]) -> dict[str, tuple[str, str, int]]:
    """Wait for every process: name -> (stdout, stderr, exit status)."""
    done = {}
    for name, proc in procs:
        out, err = proc.communicate(timeout=120)
        done[name] = (out, err, proc.returncode)
    return done


def _auc_json(capsys: pytest.CaptureFixture[str], *args: object) -> float:
    code, out, err = _cli(capsys, "binary", *args, "--label", "y", "--score", "p",
                          "--metrics", "auc", "--format", "json")  # fmt: skip
    assert code == 0, err
    return float(pl.read_json(io.StringIO(out))["auc"].item())


Y = [1, 0, 1, 0, 1, 0]
P = [0.9, 0.2, 0.7, 0.4, 0.3, 0.6]


# ---------------------------------------------------------------------------------------
# CSV structure (row 48): repeated column names, short and long lines
# ---------------------------------------------------------------------------------------


def test_repeated_csv_column_is_an_error_naming_file_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Polars would rename the second ``p`` to ``p_duplicated_0`` and evaluate the first."""
    path = tmp_path / "dup.csv"
    path.write_text("y,p,p\n1,0.9,0.1\n0,0.2,0.8\n1,0.7,0.3\n0,0.4,0.6\n")
    line = _bad(capsys, "binary", path, "--label", "y", "--score", "p")
    assert "dup.csv" in line and 'column "p"' in line
    with pytest.raises(pe.DataValidationError, match='dup.csv.*column "p" appears 2 times'):
        files.scan(path)


@pytest.mark.parametrize(
    "lines,bad_line",
    [
        (['{"y": 1, "p": 0.9}', '{"y": 0, "p": 0.2, "p": 0.8}', '{"y": 1, "p": 0.7}'], 2),
        (['{"y":1,"p":0.9}', "", '{"y":0,"p":0.2}', '{"p":0.1,"y":1 , "p" :0.6}'], 4),
    ],
    ids=["spaced", "compact-after-a-blank-line"],
)
def test_repeated_ndjson_key_is_an_error_naming_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], bad_line: int
) -> None:
    """Polars keeps one of the two values of a repeated key and drops the other silently."""
    path = tmp_path / "dup.ndjson"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(pe.DataValidationError) as error:
        files.scan(path)
    text = str(error.value)
    assert "dup.ndjson" in text and f"line {bad_line}" in text and 'key "p"' in text, text
    line = _bad(capsys, "binary", path, "--label", "y", "--score", "p")
    assert "dup.ndjson" in line and f"line {bad_line}" in line and 'key "p"' in line


def test_malformed_ndjson_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.ndjson"
    path.write_text('{"y": 1, "p": 0.9}\n\n{"y": 0, "p":\n{"y": 1, "p": 0.3}\n')
    with pytest.raises(pe.DataValidationError, match=r"broken.ndjson.*line 3"):
        files.scan(path)
    line = _bad(capsys, "binary", path, "--label", "y", "--score", "p")
    assert "broken.ndjson" in line and "line 3" in line


def test_ndjson_key_text_inside_a_value_or_a_nested_object_is_not_a_repeat(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ok.ndjson"
    lines = [
        '{"y": 1, "p": 0.9, "note": "\\"p\\": 2"}',  # the text "p": inside a string
        '{"y": 0, "p": 0.2, "note": "p"}',
        '{"y": 1, "p": 0.7, "note": "\\"y\\":\\"p\\":"}',
    ]
    path.write_text("\n".join(lines) + "\n")
    out = files.scan(path).collect()
    assert out.get_column("p").to_list() == [0.9, 0.2, 0.7]
    nested = tmp_path / "nested.ndjson"
    nested.write_text('{"y": 1, "p": 0.9, "m": {"p": 1}}\n{"y": 0, "p": 0.1, "m": {"p": 2}}\n')
    assert files.scan(nested).collect().get_column("p").to_list() == [0.9, 0.1]


@pytest.mark.parametrize("sep", [",", "\t"], ids=["csv", "tsv"])
@pytest.mark.parametrize(
    "lines,bad_line,found",
    [
        (["1,0.9", "0,0.2", "1", "0,0.4", "1,0.8"], 4, 1),  # too few: was a silent null
        (["1,0.9", "0,0.2,5", "1,0.7", "0,0.4"], 3, 3),  # too many
        (["1,0.9", "0,0.2", "1,0.7", "0"], 5, 1),  # the last line, without a line end
    ],
    ids=["short", "long", "short-last"],
)
def test_csv_line_with_wrong_field_count_names_file_and_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sep: str,
    lines: list[str],
    bad_line: int,
    found: int,
) -> None:
    name = "scores.tsv" if sep == "\t" else "scores.csv"
    path = tmp_path / name
    text = "\n".join(["y,p", *lines]).replace(",", sep)
    path.write_text(text + ("" if bad_line == len(lines) + 1 else "\n"))
    line = _bad(capsys, "binary", path, "--label", "y", "--score", "p")
    assert name in line and f"line {bad_line}" in line and f"found {found}" in line
    assert "expected 2 fields" in line
    with pytest.raises(pe.DataValidationError, match=f"line {bad_line}"):
        files.scan(path)


def test_many_ragged_lines_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text("y,p\n1,0.9\n1\n0,0.2\n0\n1,2,3\n0\n1,0.5\n")
    with pytest.raises(pe.DataValidationError) as info:
        files.scan(path)
    message = str(info.value)
    assert "line 3" in message and "4 lines have the wrong number of fields" in message
    assert "lines 3, 5, 6, ..." in message


def test_blank_lines_crlf_quotes_and_bom_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Blank lines are null rows (ignored); quoted separators and line ends are one field."""
    path = tmp_path / "ok.csv"
    body = ['"y","p","note"']
    for y, p in zip(Y, P, strict=True):
        body += [f'{y},{p},"a, b ""quoted""\nsecond line"', ""]
    path.write_bytes(("\ufeff" + "\r\n".join(body)).encode())
    assert _auc_json(capsys, path) == pytest.approx(roc_auc_score(Y, P), abs=1e-12)
    # the line numbers count physical lines, quoted line ends included
    bad = tmp_path / "bad.csv"
    bad.write_text('y,p,note\n1,0.9,"x\ny"\n0,0.2\n')
    with pytest.raises(pe.DataValidationError, match="line 4: expected 3 fields.*found 2"):
        files.scan(bad)


def test_irregular_quotes_are_checked_line_by_line(tmp_path: Path) -> None:
    """A quote inside a field (5" screen) is not RFC 4180: the slow path still checks."""
    path = tmp_path / "inches.csv"
    path.write_text('y,p,size\n1,0.9,5" screen\n0,0.2\n1,0.3,7" screen\n')
    with pytest.raises(pe.DataValidationError, match="line 3: expected 3 fields.*found 2"):
        files.scan(path)
    path.write_text('y,p,size\n1,0.9,5" screen\n0,0.2,x\n')
    assert files.csv_structure(str(path)) == (["y", "p", "size"], 2)


@st.composite
def csv_texts(draw: st.DrawFn) -> tuple[bytes, str]:
    """CSV/TSV text written by Python's csv module: quoted fields with separators, quotes
    and line ends; rows of any width (most of them the header's); blank lines."""
    width = draw(st.integers(1, 4))
    field = st.text(alphabet='ab1 ,"\n\t', max_size=5)
    widths = st.one_of(st.just(width), st.integers(1, 6))
    rows = draw(st.lists(widths.flatmap(lambda n: st.lists(field, min_size=n, max_size=n)),
                         max_size=12))  # fmt: skip
    records = [[f"c{i}" for i in range(width)], *rows]
    sep = draw(st.sampled_from([",", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=sep, lineterminator=newline)
    for record in records:
        writer.writerow(record)  # [""] is written as "" (quoted): a field, not a blank line
        if draw(st.booleans()) and draw(st.booleans()):
            buffer.write(newline)  # a blank line
    text = buffer.getvalue()
    if draw(st.booleans()):
        text = text.removesuffix(newline)
    return text.encode(), sep


def _oracle(data: bytes, sep: str) -> tuple[list[str], int, list[int]]:
    """Header, data rows and lines with a wrong field count, by Python's csv module."""
    reader = csv.reader(io.StringIO(data.decode(), newline=""), delimiter=sep)
    header: list[str] | None = None
    rows, bad, line = 0, [], 1
    for record in reader:
        if header is None:
            header = record
        elif record:
            rows += 1
            if len(record) != len(header):
                bad.append(line)
        line = reader.line_num + 1
    return header or [], rows, bad


@given(case=csv_texts(), window=st.sampled_from([3, 7, 64, 1 << 24]))
def test_csv_check_agrees_with_python_csv(
    tmp_path_factory: pytest.TempPathFactory, case: tuple[bytes, str], window: int
) -> None:
    data, sep = case
    header, rows, bad = _oracle(data, sep)
    path = tmp_path_factory.mktemp("csv") / "x.csv"
    path.write_bytes(data)
    saved = files._WINDOW
    files._WINDOW = window  # small windows: records cross window edges
    try:
        if bad:
            with pytest.raises(pe.DataValidationError) as info:
                files.csv_structure(str(path), sep)
            message = str(info.value)
            assert f"line {bad[0]}:" in message
            if len(bad) > 1:
                assert f"{len(bad)} lines have the wrong number of fields" in message
        else:
            assert files.csv_structure(str(path), sep) == (header, rows)
    finally:
        files._WINDOW = saved


# ---------------------------------------------------------------------------------------
# One line, always: no Rust panic report (row 46)
# ---------------------------------------------------------------------------------------


def test_streaming_errors_give_exactly_one_line_in_many_runs(tmp_path: Path) -> None:
    """Polars' streaming engine now and then (about 2 runs in 150) printed a panic report
    with a backtrace ("joined on cancelled task") before the error line, for a CSV line
    with an extra field. That line is now caught before the engine runs; an error the
    engine finds itself (a value that does not parse, past the rows the column type was
    inferred from) goes through the same engine path, and must still be one line."""
    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 2, 30_000), rng.random(30_000)
    lines = [f"{a},{b:.4f}" for a, b in zip(y, s, strict=True)]
    late = lines.copy()
    late[20_000] = "1,high"  # after the 10,000 rows the column type is inferred from
    (tmp_path / "extra_field.csv").write_text("y,p\n" + "\n".join(lines[:50] + ["0,0.3,7"]))
    (tmp_path / "late_text.csv").write_text("y,p\n" + "\n".join(late) + "\n")
    needles = {"extra_field.csv": "line 52", "late_text.csv": "high"}
    deadline = time.monotonic() + 5
    runs = 0
    while runs < 2 or (time.monotonic() < deadline and runs < 40):
        procs = [
            (name, _popen("binary", name, "--label", "y", "--score", "p", cwd=tmp_path))
            for name in needles
        ]
        for name, (out, err, code) in _finish(procs).items():
            assert code == 2, err
            assert out == ""
            _one_line(err, name, needles[name])
        runs += 1


def test_native_panic_reports_are_kept_off_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """What Rust writes to file descriptor 2 is filtered: panic reports go, the rest stays."""
    report = (
        "\nthread 'async-executor-0' (20269) panicked at crates/polars-async/src/executor/"
        "task.rs:239:40:\njoined on cancelled task\nstack backtrace:\n   0: __rustc::begin\n"
        "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose "
        "backtrace.\n"
    )
    with cli.native_stderr_filtered():
        os.write(2, report.encode())
        os.write(2, b"a native message\n")
        print("polars-eval: error: the one line", file=sys.stderr)
        os.write(2, b"thread 'x' panicked at src/lib.rs:1:1:\nboom\n")  # no closing note
    out, err = capfd.readouterr()
    assert out == ""
    assert err.splitlines() == ["polars-eval: error: the one line", "a native message"]


# ---------------------------------------------------------------------------------------
# Empty inputs
# ---------------------------------------------------------------------------------------


def test_header_only_csv_is_no_rows_to_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was "holds String labels; pass pos_label": a header alone gives String columns."""
    empty = tmp_path / "empty.csv"
    empty.write_text("y,p\n")
    line = _bad(capsys, "binary", empty, "--label", "y", "--score", "p")
    assert "no rows to evaluate" in line and "empty.csv" in line
    (tmp_path / "blank.csv").write_text("y,p\n\n\n")
    assert "no rows to evaluate" in _bad(capsys, "binary", tmp_path / "blank.csv", "--label",
                                         "y", "--score", "p")  # fmt: skip
    (tmp_path / "nothing.csv").write_text("")
    assert "nothing.csv" in _bad(capsys, "binary", tmp_path / "nothing.csv", "--label", "y",
                                 "--score", "p")  # fmt: skip


def test_header_only_csv_next_to_others_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its String columns must not turn the other files' numbers into text."""
    (tmp_path / "a.csv").write_text("y,p\n")
    pl.DataFrame({"y": Y, "p": P}).write_csv(tmp_path / "b.csv")
    assert _auc_json(capsys, tmp_path / "a.csv", tmp_path / "b.csv") == pytest.approx(
        roc_auc_score(Y, P), abs=1e-12
    )
    (tmp_path / "c.csv").write_text("p,y\n")  # still checked: the header differs
    line = _bad(capsys, "binary", tmp_path, "--label", "y", "--score", "p")
    assert "c.csv" in line and "header" in line


def test_empty_ndjson_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.ndjson").write_text("")
    assert "no rows to evaluate" in _bad(capsys, "binary", tmp_path / "a.ndjson", "--label",
                                         "y", "--score", "p")  # fmt: skip
    pl.DataFrame({"y": Y, "p": P}).write_ndjson(tmp_path / "b.ndjson")
    assert _auc_json(capsys, tmp_path) == pytest.approx(roc_auc_score(Y, P), abs=1e-12)


# ---------------------------------------------------------------------------------------
# Output paths and formats, checked before any work
# ---------------------------------------------------------------------------------------


def test_output_paths_are_checked_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The input does not even exist: the output error must come first, naming the path."""
    base = ["binary", tmp_path / "missing.csv", "--label", "y", "--score", "p"]
    for option, path in (("-o", "nodir/out.json"), ("--report", "nodir/r.html")):
        line = _bad(capsys, *base, option, tmp_path / path)
        assert path in line and "does not exist" in line and "missing.csv" not in line
    line = _bad(capsys, *base, "-o", tmp_path)
    assert "is a directory" in line


def test_report_failure_does_not_come_after_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: the table printed, then an error naming the input file."""
    pl.DataFrame({"y": Y, "p": P}).write_parquet(tmp_path / "s.parquet")
    line = _bad(capsys, "binary", tmp_path / "s.parquet", "--label", "y", "--score", "p",
                "--report", tmp_path / "nodir" / "r.html")  # fmt: skip
    assert "nodir" in line and "--report" in line and "s.parquet" not in line
    line = _bad(capsys, "binary", tmp_path / "s.parquet", "--label", "y", "--score", "p",
                "--report", tmp_path / "r.pdf")  # fmt: skip
    assert "r.pdf" in line and ".html" in line


def test_unknown_output_extension_lists_the_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was: exit 0 and a text table written to out.xlsx."""
    pl.DataFrame({"y": Y, "p": P}).write_parquet(tmp_path / "s.parquet")
    base = ["binary", tmp_path / "s.parquet", "--label", "y", "--score", "p"]
    line = _bad(capsys, *base, "-o", tmp_path / "out.xlsx")
    assert "out.xlsx" in line and all(f in line for f in ("json", "csv", "parquet", "table"))
    assert not (tmp_path / "out.xlsx").exists()
    code, _, err = _cli(capsys, *base, "-o", tmp_path / "out.xlsx", "--format", "csv")
    assert code == 0, err
    assert pl.read_csv(tmp_path / "out.xlsx")["auc"].item() == pytest.approx(
        roc_auc_score(Y, P), abs=1e-12
    )
    code, _, err = _cli(capsys, *base, "-o", tmp_path / "out.txt")
    assert code == 0, err
    assert "auc" in (tmp_path / "out.txt").read_text()


def test_output_over_an_input_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.csv"
    pl.DataFrame({"y": Y, "p": P}).write_csv(path)
    before = path.read_bytes()
    line = _bad(capsys, "binary", path, "--label", "y", "--score", "p", "-o", path)
    assert "input file" in line
    assert path.read_bytes() == before


# ---------------------------------------------------------------------------------------
# Lakes whose files disagree (row 7)
# ---------------------------------------------------------------------------------------


def _lake(root: Path, first: dict[str, pl.Series], second: dict[str, pl.Series]) -> None:
    for part, columns in (("a", first), ("b", second)):
        folder = root / f"part={part}"
        folder.mkdir(parents=True)
        pl.DataFrame(columns).write_parquet(folder / "0.parquet")


@pytest.mark.parametrize(
    "column,first,second",
    [("p", pl.Float64, pl.String), ("y", pl.Int64, pl.String), ("y", pl.Int64, pl.Boolean)],
)
def test_lake_type_change_names_column_files_and_types(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    column: str,
    first: pl.DataType,
    second: pl.DataType,
) -> None:
    a = {"y": pl.Series(Y[:3]), "p": pl.Series(P[:3])}
    b = {"y": pl.Series(Y[3:]), "p": pl.Series(P[3:])}
    a[column] = a[column].cast(first)
    b[column] = b[column].cast(second)
    _lake(tmp_path, a, b)
    with pytest.raises(pe.DataValidationError) as info:
        files.scan(tmp_path / "**" / "*.parquet")
    message = str(info.value)
    for needle in (f'column "{column}"', "part=a", "part=b", str(first), str(second)):
        assert needle in message, (needle, message)
    line = _bad(capsys, "binary", tmp_path, "--label", "y", "--score", "p")
    assert f'column "{column}"' in line and str(second) in line and "part=b" in line


@pytest.mark.parametrize(
    "first,second",
    [(pl.Int32, pl.Float32), (pl.Float32, pl.Float64), (pl.Int32, pl.Int64), (pl.UInt8, pl.Int16)],
)
def test_lake_numeric_types_are_read_as_their_common_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], first: pl.DataType, second: pl.DataType
) -> None:
    """Documented choice: numeric types may differ between files (scores 1..6 here)."""
    scores = [6, 1, 5, 2, 3, 4]
    _lake(
        tmp_path,
        {"y": pl.Series(Y[:3]), "p": pl.Series(scores[:3], dtype=first)},
        {"y": pl.Series(Y[3:]), "p": pl.Series(scores[3:], dtype=second)},
    )
    lf = files.scan(tmp_path)
    want = pl.Int64 if first.is_integer() and second.is_integer() else pl.Float64
    assert lf.collect_schema()["p"] == want
    got = lf.collect(engine="streaming")
    assert sorted(got["p"].to_list()) == sorted(scores)
    auc = _auc_json(capsys, tmp_path, "--no-proba")  # scores 1..6 are not probabilities
    assert auc == pytest.approx(roc_auc_score(Y, scores), abs=1e-12)


def test_lake_column_only_in_some_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _lake(
        tmp_path,
        {"y": pl.Series(Y[:3]), "p": pl.Series(P[:3]), "w": pl.Series([1.0, 2.0, 1.0])},
        {"y": pl.Series(Y[3:]), "p": pl.Series(P[3:])},
    )
    with pytest.raises(pe.DataValidationError, match='column "w" is missing from 1 file.*part=b'):
        files.scan(tmp_path)
    line = _bad(capsys, "binary", tmp_path, "--label", "y", "--score", "p", "--weight", "w")
    assert 'column "w"' in line and "part=b" in line
    # a column the evaluation does not use may drift: it is left out
    assert _auc_json(capsys, tmp_path) == pytest.approx(roc_auc_score(Y, P), abs=1e-12)
    assert files.scan(tmp_path, columns=["y", "p"]).collect_schema().names() == ["y", "p", "part"]


def test_csv_and_ndjson_files_that_disagree(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("y,p\n1,0.5\n0,0.25\n")
    (tmp_path / "b.csv").write_text("p,y\n0.75,1\n0.125,0\n")  # read by position: refused
    with pytest.raises(pe.DataValidationError, match="header of .*b.csv.*differs"):
        files.scan([tmp_path / "a.csv", tmp_path / "b.csv"])
    (tmp_path / "c.csv").write_text("y,p\n1,1\n0,0\n")  # integers here, floats there
    got = files.scan([tmp_path / "c.csv", tmp_path / "a.csv"]).collect(engine="streaming")
    assert got["p"].to_list() == [1.0, 0.0, 0.5, 0.25]
    (tmp_path / "d.csv").write_text("y,p\n1,high\n0,low\n")
    with pytest.raises(pe.DataValidationError, match='column "p".*Float64.*String.*d.csv'):
        files.scan([tmp_path / "a.csv", tmp_path / "d.csv"])
    # NDJSON: Polars silently drops a key the first file lacks; here an error
    (tmp_path / "a.ndjson").write_text('{"y":1,"p":0.5}\n{"y":0,"p":0.25}\n')
    (tmp_path / "b.ndjson").write_text('{"y":1,"p":0.5,"w":2}\n{"p":0.25,"y":0,"w":1}\n')
    with pytest.raises(pe.DataValidationError, match='column "w" is missing.*a.ndjson'):
        files.scan([tmp_path / "a.ndjson", tmp_path / "b.ndjson"])


# ---------------------------------------------------------------------------------------
# Row 46 (CLI) and row 47 (TREC files), through a subprocess: what a user sees
# ---------------------------------------------------------------------------------------


def test_row_46_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "ok.csv").write_text("y,p\n1,0.5\n0,0.3\n")
    (tmp_path / "short.csv").write_text("y,p\n1,0.5\n0\n1,0.2\n")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really a parquet file")
    (tmp_path / "latin1.csv").write_bytes("y,p,note\n1,0.5,caf\xe9\n".encode("latin-1"))
    binary = ["binary", "--label", "y", "--score", "p"]
    cases = {
        "missing file": ([*binary, "missing.csv"], ["missing.csv"]),
        "unreadable file": ([*binary, "broken.parquet"], ["broken.parquet"]),
        "not utf-8": ([*binary, "latin1.csv"], ["latin1.csv"]),
        "malformed csv": ([*binary, "short.csv"], ["short.csv", "line 3"]),
        "unknown column": (["binary", "ok.csv", "--label", "y", "--score", "nope"], ['"nope"']),
    }
    running = [(name, _popen(*argv, cwd=tmp_path)) for name, (argv, _) in cases.items()]
    for name, (out, err, code) in _finish(running).items():
        assert code == 2, (name, err)
        assert out == "", name
        _one_line(err, *cases[name][1])


def test_row_47_trec_files_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "run.txt").write_text("1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n")
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n1 0 b 0\n")
    (tmp_path / "run_short.txt").write_text("1 Q0 a 1 3.0 r\n1 Q0 b\n")
    (tmp_path / "run_text.txt").write_text("1 Q0 a 1 3.0 r\n1 Q0 b 2 high r\n")
    (tmp_path / "run_nan.txt").write_text("1 Q0 a 1 3.0 r\n1 Q0 b 2 nan r\n")
    (tmp_path / "qrels_short.txt").write_text("1 0 a 1\n1 0 b\n")
    (tmp_path / "qrels_text.txt").write_text("1 0 a 1\n1 0 b high\n")
    for run, qrels, bad in (
        ("run_short.txt", "qrels.txt", "run_short.txt"),  # too few fields
        ("run_text.txt", "qrels.txt", "run_text.txt"),  # non-numeric score
        ("run_nan.txt", "qrels.txt", "run_nan.txt"),  # a NaN score
        ("run.txt", "qrels_short.txt", "qrels_short.txt"),  # too few fields
        ("run.txt", "qrels_text.txt", "qrels_text.txt"),  # non-numeric relevance
    ):
        line = _bad(capsys, "trec", tmp_path / run, tmp_path / qrels)
        assert bad in line and "line 2" in line, line
    assert "none.txt" in _bad(capsys, "trec", tmp_path / "none.txt", tmp_path / "qrels.txt")


def test_odd_file_names_and_unclosed_quotes(tmp_path: Path) -> None:
    """A file named data[1].csv found in a directory is that file, not a glob."""
    folder = tmp_path / "in"
    folder.mkdir()
    pl.DataFrame({"y": Y, "p": P}).write_csv(folder / "data[1].csv")
    assert files.scan(folder).collect()["p"].to_list() == P
    pl.DataFrame({"y": Y[:2], "p": P[:2]}).write_parquet(folder / "part[2].parquet")
    assert files.scan(folder).collect()["p"].to_list() == P + P[:2]
    (tmp_path / "open.csv").write_text('y,p\n1,0.5\n0,"0.25\n1,0.5\n')
    with pytest.raises(pe.DataValidationError, match="line 3: a quoted field is not closed"):
        files.scan(tmp_path / "open.csv")
