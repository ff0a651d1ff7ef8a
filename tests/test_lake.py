"""Parquet lakes: hive-partitioned scans collected with the streaming engine == eager.

BAD_INPUTS row 7: a lake whose files disagree on a column's dtype must give a clear
error naming the column, the file and both dtypes, never a wrong number
(``polars_eval.io.files.scan``, which the CLI reads its inputs with).
"""

from __future__ import annotations

import math
from pathlib import Path

import oracles as O
import polars as pl
import pytest
from conftest import binary_data

import polars_eval as pe
from polars_eval.io import files

SEGMENTS = ["north", "south", "west"]


def write_lake(root: Path, files_per_segment: int = 2, n: int = 90) -> pl.DataFrame:
    """A hive-partitioned lake ``root/segment=<s>/part-<i>.parquet``; returns the same rows."""
    parts = []
    for k, seg in enumerate(SEGMENTS):
        for i in range(files_per_segment):
            part = binary_data(n, seed=10 * k + i, tied=bool(i % 2), groups=2)
            folder = root / f"segment={seg}"
            folder.mkdir(parents=True, exist_ok=True)
            part.write_parquet(folder / f"part-{i}.parquet")
            parts.append(part.with_columns(segment=pl.lit(seg)))
    return pl.concat(parts)


def scan(root: Path) -> pl.LazyFrame:
    return pl.scan_parquet(root / "**" / "*.parquet", hive_partitioning=True)


def exprs() -> list[pl.Expr]:
    return [
        pe.auc("y", "score", weight="w"),
        pe.pr_auc("y", "score", weight="w"),
        pe.average_precision("y", "score"),
        pe.logloss("y", "score", weight="w"),
        pe.ks("y", "score"),
        pe.f1("y", "score", weight="w"),
        pe.max_mcc("y", "score"),
        pe.recall_at_fpr("y", "score", fpr=0.1),
    ]


def frames_close(a: pl.DataFrame, b: pl.DataFrame, tol: float = 1e-12) -> None:
    assert a.columns == b.columns
    assert a.height == b.height
    for ra, rb in zip(a.iter_rows(), b.iter_rows(), strict=True):
        for x, y in zip(ra, rb, strict=True):
            if isinstance(x, float) and isinstance(y, float):
                assert math.isclose(x, y, rel_tol=tol, abs_tol=tol), (ra, rb)
            else:
                assert x == y, (ra, rb)


@pytest.mark.parametrize("by", [["segment"], ["segment", "g"], ["g"]])
def test_lake_group_by_streaming_equals_eager(tmp_path: Path, by: list[str]) -> None:
    eager = write_lake(tmp_path)
    lazy = scan(tmp_path).group_by(by).agg(exprs()).sort(by).collect(engine="streaming")
    want = eager.group_by(by).agg(exprs()).sort(by)
    frames_close(lazy.select(want.columns), want)
    for row in lazy.iter_rows(named=True):
        mask = pl.all_horizontal([pl.col(c) == row[c] for c in by])
        part = eager.filter(mask)
        y, s, w = part["y"].to_numpy(), part["score"].to_numpy(), part["w"].to_numpy()
        assert math.isclose(row["auc"], O.sk_auc(y, s, w), rel_tol=1e-9)
        assert math.isclose(row["average_precision"], O.sk_average_precision(y, s), rel_tol=1e-9)


def test_lake_whole_scan_streaming_equals_eager(tmp_path: Path) -> None:
    eager = write_lake(tmp_path)
    lazy = scan(tmp_path).select(exprs()).collect(engine="streaming")
    frames_close(lazy, eager.select(exprs()))


def test_lake_namespace_by_streaming_equals_eager(tmp_path: Path) -> None:
    eager = write_lake(tmp_path)
    out = scan(tmp_path).eval.auc("y", "score", weight="w", by="segment")
    assert isinstance(out, pl.LazyFrame)
    got = out.collect(engine="streaming")
    assert got["segment"].to_list() == SEGMENTS
    frames_close(got, eager.eval.auc("y", "score", weight="w", by="segment"))
    table = scan(tmp_path).eval.binary("y", "score", weight="w", by="segment")
    frames_close(
        table.collect(engine="streaming"),
        eager.eval.binary("y", "score", weight="w", by="segment"),
    )


def test_lake_curves_streaming_equal_eager(tmp_path: Path) -> None:
    eager = write_lake(tmp_path)
    got = scan(tmp_path).eval.roc_curve("y", "score", weight="w", by="segment")
    frames_close(
        got.collect(engine="streaming"),
        eager.eval.roc_curve("y", "score", weight="w", by="segment"),
    )


def test_lake_validation_error_at_collect(tmp_path: Path) -> None:
    eager = write_lake(tmp_path)
    bad = eager.filter(pl.col("segment") == "west").drop("segment").head(5)
    bad = bad.with_columns(y=pl.Series([0, 3, 1, 0, 1]))
    bad.write_parquet(tmp_path / "segment=west" / "part-9.parquet")
    out = scan(tmp_path).eval.auc("y", "score", by="segment")  # builds without reading
    with pytest.raises(pe.DataValidationError, match='column "y"'):
        out.collect(engine="streaming")


# schema drift --------------------------------------------------------------------------

DRIFT = [
    ("y", pl.Int64, pl.String),
    ("y", pl.Int64, pl.Float64),
    ("score", pl.Float64, pl.String),
    ("score", pl.Float32, pl.Float64),
    ("w", pl.Float64, pl.Int64),
]
DRIFT_IDS = [f"{c}-{a}-{b}" for c, a, b in DRIFT]


def write_drifted(root: Path, column: str, first: pl.DataType, second: pl.DataType) -> None:
    for seg, dtype in (("a", first), ("b", second)):
        folder = root / f"segment={seg}"
        folder.mkdir(parents=True, exist_ok=True)
        part = binary_data(40, seed=ord(seg))
        part = part.with_columns(pl.col(column).cast(dtype))
        part.write_parquet(folder / "part-0.parquet")


@pytest.mark.parametrize("column,first,second", DRIFT, ids=DRIFT_IDS)
def test_schema_drift_never_gives_a_number(
    tmp_path: Path, column: str, first: pl.DataType, second: pl.DataType
) -> None:
    """Polars 2.1 itself refuses the scan at collect (its SchemaError names the column).

    The schema of a scan is the first file's; the second file's dtype is checked when it is
    read: ``polars.exceptions.SchemaError: data type mismatch for column y: incoming: String
    != target: Int64``, on both engines, from the expression layer and the namespace alike.
    """
    write_drifted(tmp_path, column, first, second)
    lf = scan(tmp_path)
    assert lf.collect_schema()[column] == first  # the first file decides the schema
    query = lf.group_by("segment").agg(pe.auc("y", "score", weight="w"))
    for engine in ("in-memory", "streaming"):
        with pytest.raises(pl.exceptions.SchemaError) as info:
            query.collect(engine=engine)  # type: ignore[call-overload]
        assert f"column {column}" in str(info.value)


TYPE_CHANGES = [
    ("y", pl.Int64, pl.String),
    ("score", pl.Float64, pl.String),
    ("y", pl.Int64, pl.Boolean),
    ("w", pl.Float64, pl.String),
]
NUMERIC_CHANGES = [
    ("y", pl.Int64, pl.Float64),
    ("score", pl.Float32, pl.Float64),
    ("score", pl.Int32, pl.Float32),
    ("w", pl.Float64, pl.Int64),
    ("w", pl.Int32, pl.Int64),
]


@pytest.mark.parametrize(
    "column,first,second", TYPE_CHANGES, ids=[f"{c}-{a}-{b}" for c, a, b in TYPE_CHANGES]
)
def test_schema_drift_is_a_clear_validation_error(
    tmp_path: Path, column: str, first: pl.DataType, second: pl.DataType
) -> None:
    """``polars_eval.io.files.scan`` (what the CLI reads lakes with) checks the files'
    schemas (parquet metadata) before any query is built: our error, naming the column,
    a file of each kind and both types, instead of Polars' SchemaError at collect."""
    write_drifted(tmp_path, column, first, second)
    with pytest.raises(pe.DataValidationError) as info:
        files.scan(tmp_path / "**" / "*.parquet")
    message = str(info.value)
    for needle in (f'column "{column}"', "segment=a", "segment=b", str(first), str(second)):
        assert needle in message, (needle, message)


@pytest.mark.parametrize(
    "column,first,second", NUMERIC_CHANGES, ids=[f"{c}-{a}-{b}" for c, a, b in NUMERIC_CHANGES]
)
def test_numeric_drift_is_read_as_the_common_type(
    tmp_path: Path, column: str, first: pl.DataType, second: pl.DataType
) -> None:
    """The documented choice: numeric types may differ between files; the column is read
    as their common type (Int64 for integers, else Float64) and the numbers are those of
    the rows themselves."""
    write_drifted(tmp_path, column, first, second)
    lf = files.scan(tmp_path)
    want = pl.Int64 if first.is_integer() and second.is_integer() else pl.Float64
    assert lf.collect_schema()[column] == want
    got = lf.eval.auc("y", "score", weight="w", by="segment").collect(engine="streaming")
    for seg in ("a", "b"):
        part = pl.read_parquet(tmp_path / f"segment={seg}" / "part-0.parquet")
        y, s, w = (part[c].cast(pl.Float64).to_numpy() for c in ("y", "score", "w"))
        value = got.filter(pl.col("segment") == seg)["auc"].item()
        assert math.isclose(value, O.sk_auc(y, s, w), rel_tol=1e-12)


def test_missing_column_in_one_file_is_an_error(tmp_path: Path) -> None:
    for seg, cols in (("a", ["y", "score", "w"]), ("b", ["y", "score"])):
        folder = tmp_path / f"segment={seg}"
        folder.mkdir(parents=True)
        binary_data(20, seed=1).select(cols).write_parquet(folder / "part-0.parquet")
    out = scan(tmp_path).eval.auc("y", "score", weight="w", by="segment")
    with pytest.raises(pl.exceptions.ColumnNotFoundError, match="w"):  # Polars' own scan
        out.collect(engine="streaming")
    with pytest.raises(pe.DataValidationError, match='column "w" is missing .*segment=b'):
        files.scan(tmp_path)
    # a column the evaluation does not need is left out when the needed ones are named
    lf = files.scan(tmp_path, columns=["y", "score"])
    assert lf.collect_schema().names() == ["y", "score", "segment"]
    assert lf.collect(engine="streaming").height == 40


def test_many_row_groups_streaming_equals_eager(tmp_path: Path) -> None:
    """Morsels and row groups split every group: the sorted state must still be whole."""
    df = binary_data(60_000, seed=3, tied=True, groups=3)
    df.write_parquet(tmp_path / "one.parquet", row_group_size=4_000)
    lazy = pl.scan_parquet(tmp_path / "one.parquet")
    for by in (None, "g"):
        if by is None:
            got = lazy.select(exprs()).collect(engine="streaming")
            want = df.select(exprs())
        else:
            got = lazy.group_by(by).agg(exprs()).sort(by).collect(engine="streaming")
            want = df.group_by(by).agg(exprs()).sort(by)
        frames_close(got, want, 1e-9)
    y, s, w = df["y"].to_numpy(), df["score"].to_numpy(), df["w"].to_numpy()
    assert math.isclose(
        got.filter(pl.col("g") == 0)["auc"].item(),
        O.sk_auc(
            y[df["g"].to_numpy() == 0], s[df["g"].to_numpy() == 0], w[df["g"].to_numpy() == 0]
        ),
        rel_tol=1e-9,
    )


# ---------------------------------------------------------------------------------------
# pe.scan (SPEC §10): the CLI's reader as a public function
# ---------------------------------------------------------------------------------------


def test_pe_scan_is_the_cli_reader() -> None:
    assert pe.scan is files.scan
    assert "scan" in pe.__all__


@pytest.mark.parametrize(
    "column,first,second", TYPE_CHANGES, ids=[f"{c}-{a}-{b}" for c, a, b in TYPE_CHANGES]
)
def test_pe_scan_drifting_lake_is_our_error(
    tmp_path: Path, column: str, first: pl.DataType, second: pl.DataType
) -> None:
    """A Python user reading a drifting lake gets DataValidationError naming the column, a
    file of each dtype and both dtypes, where Polars' own scan raises SchemaError."""
    write_drifted(tmp_path, column, first, second)
    with pytest.raises(pl.exceptions.SchemaError):
        scan(tmp_path).collect()
    with pytest.raises(pe.DataValidationError) as info:
        pe.scan(tmp_path / "**" / "*.parquet")
    message = str(info.value)
    for needle in (f'column "{column}"', "segment=a", "segment=b", str(first), str(second)):
        assert needle in message, (needle, message)


WIDENED = [
    (pl.Int32, pl.Int64, pl.Int64),
    (pl.Float32, pl.Float64, pl.Float64),
    (pl.Int64, pl.Float64, pl.Float64),
    (pl.Int16, pl.Float32, pl.Float64),
]


@pytest.mark.parametrize("first,second,read", WIDENED, ids=[f"{a}-{b}" for a, b, _ in WIDENED])
def test_pe_scan_widens_where_no_value_changes(
    tmp_path: Path, first: pl.DataType, second: pl.DataType, read: pl.DataType
) -> None:
    """SPEC §10's widening: Int32 with Int64 -> Int64, Float32 with Float64 -> Float64,
    integers with floats -> Float64; every value as written (hive columns kept)."""
    values = {"a": [3, -7, 2**12], "b": [0.5, -1.25, 4.0]}
    for seg, dtype in (("a", first), ("b", second)):
        folder = tmp_path / f"segment={seg}"
        folder.mkdir()
        pl.DataFrame({"x": pl.Series(values[seg]).cast(dtype)}).write_parquet(folder / "p.parquet")
    for source in (tmp_path, tmp_path / "**" / "*.parquet", [tmp_path / "segment=a", tmp_path / "segment=b"]):  # fmt: skip
        lf = pe.scan(source)
        assert lf.collect_schema() == pl.Schema({"x": read, "segment": pl.String})
        got = lf.sort("segment").collect(engine="streaming")
        written = [float(v) for v in (*values["a"], *values["b"])]
        if read.is_integer():
            assert got["x"].to_list() == [3, -7, 2**12, 0, -1, 4]  # the integers written
        else:
            assert got["x"].to_list() == written


def test_pe_scan_missing_columns(tmp_path: Path) -> None:
    """A column missing from some files: an error naming it and a file without it, or
    with missing_columns="null" null in those files; for parquet, CSV (other headers) and
    NDJSON alike."""
    a = pl.DataFrame({"y": [1, 0], "p": [0.75, 0.25], "w": [2.0, 1.0]})
    b = pl.DataFrame({"y": [0, 1], "p": [0.5, 0.875]})
    for ext, write in (
        ("parquet", pl.DataFrame.write_parquet),
        ("csv", pl.DataFrame.write_csv),
        ("ndjson", pl.DataFrame.write_ndjson),
    ):
        folder = tmp_path / ext
        folder.mkdir()
        write(a, folder / f"a.{ext}")
        write(b, folder / f"b.{ext}")
        with pytest.raises(pe.DataValidationError) as info:
            pe.scan(folder)
        message = str(info.value)
        assert 'column "w" is missing' in message and f"b.{ext}" in message, message
        assert 'missing_columns="null"' in message
        got = pe.scan(folder, missing_columns="null").collect(engine="streaming")
        expected = pl.concat([a, b], how="diagonal")
        assert got.sort("p").equals(expected.sort("p")), (ext, got)
        weighted = pe.scan(folder, missing_columns="null").eval.auc("y", "p", weight="w")
        assert weighted.collect().item() == 1.0  # the rows of b: weight null, ignored
    with pytest.raises(pe.InvalidParameterError, match="missing_columns"):
        pe.scan(tmp_path / "parquet", missing_columns="drop")
