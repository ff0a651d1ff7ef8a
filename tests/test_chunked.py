"""Lakes whose files mix the groups (issue 27, SPEC §10): a LazyFrame's distinct-rows state
taken in bounded chunks (``polars_eval/scale/chunked.py``) equals the state of one query
over the same rows, and the namespace's binary table on a LazyFrame (exact or
``bins=``, which keeps that state instead of the rows) equals the eager table, with the
same errors and warnings. No memory is asserted here (``benchmarks/bench_scale.py
--layout mixed`` measures it)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_evaluation import assert_same

import polars_eval as pe
from polars_eval import cli
from polars_eval.scale import chunked
from polars_eval.scale.evaluation import PART, Evaluation


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Chunks of ~100 rows, merged every 3 chunks: many chunks and merges on a small
    lake. Returns the list the number of rows of each merge is appended to."""
    monkeypatch.setattr(chunked, "CHUNK_ROWS", 97)
    monkeypatch.setattr(chunked, "MERGE_ROWS", 400)
    monkeypatch.setattr(chunked, "MERGE_EVERY", 3)
    monkeypatch.setattr(chunked, "HOT_GROUPS", 10)  # "q": 60 groups, many
    merges: list[int] = []
    reduction = chunked._reduction

    def counted(ev: Evaluation, schema: pl.Schema) -> chunked.Reduction:
        rows, merge, finish, every = reduction(ev, schema)

        def merge_counted(parts: list[pl.DataFrame]) -> pl.DataFrame:
            merges.append(sum(p.height for p in parts))
            return merge(parts)

        return rows, merge_counted, finish, every

    monkeypatch.setattr(chunked, "_reduction", counted)
    return merges


def frame(seed: int, n: int = 2400) -> pl.DataFrame:
    """Segments (Int16 and strings), 0/1 labels, scores at 2 decimals (ties) and
    continuous, weights that are binary fractions (their sums are exact in any order,
    so chunked and whole states compare exactly), zeros among them."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "seg": rng.integers(0, 7, n).astype(np.int16),
            "region": rng.choice(["north", "south", "east"], n),
            "y": y,
            "p": np.round(np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1), 2),
            "s": rng.normal(size=n) + y,
            "w": rng.choice([0.0, 0.25, 0.5, 1.0, 2.5], n),
            "q": rng.integers(0, 60, n),
            "rel": rng.integers(0, 3, n),
            "k": rng.integers(0, 3, n),
        }
    )


def mixed_lake(tmp_path: Path, df: pl.DataFrame, files: int = 6) -> pl.LazyFrame:
    """``df`` written as ``files`` parquet files of consecutive rows: every file holds
    every segment (a lake partitioned by load, not by segment)."""
    size = -(-df.height // files)
    for i in range(files):
        df.slice(i * size, size).write_parquet(tmp_path / f"part-{i}.parquet")
    return pl.scan_parquet(tmp_path / "*.parquet")


def state_rows(ev: Evaluation) -> pl.DataFrame:
    rows = ev.state.filter(pl.col(PART) != "def").drop(PART, "__pe_def", strict=False)
    keys = [c for c in rows.columns if not c.startswith("__pe_") or c in ("__pe_y", "__pe_bin")]
    return rows.sort(keys, nulls_last=True)


DEFINITIONS = {
    "binary exact": dict(task="binary", label="y", score="p", weight="w", by="seg"),
    "binary exact, no by": dict(task="binary", label="y", score="p"),
    "binary continuous": dict(task="binary", label="y", score="s", by="region", probability=False),
    "binary bins": dict(task="binary", label="y", score="p", weight="w", by="seg", bins=20),
    "binary bins, by strings": dict(
        task="binary", label="y", score="s", by="region", bins=8, probability=False
    ),
    "binary baseline": dict(task="binary", label="y", score="p", by="seg", baseline=True),
    "regression order statistics": dict(
        task="regression", actual="p", pred="s", weight="w", by="seg", metrics=["medae", "mae"]
    ),
    "multiclass without classes": dict(task="multiclass", label="k", pred="rel", by="region"),
    "ranking": dict(task="ranking", relevance="rel", score="p", query="q", metrics=["ndcg@5"]),
    # the states of a bounded size per group, with many groups in the first rows
    "regression states, many groups": dict(
        task="regression", actual="p", pred="s", weight="w", by="q", metrics=["mse", "r2"]
    ),
    "binary one-pass states, many groups": dict(
        task="binary", label="y", score="p", by=["q", "region"], metrics=["logloss", "f1"]
    ),
    "multiclass states, many groups": dict(
        task="multiclass", label="k", pred="rel", classes=[0, 1, 2], by="q"
    ),
}


@pytest.mark.parametrize("name", list(DEFINITIONS))
def test_chunked_state_equals_one_query(tmp_path: Path, small_chunks: list[int], name: str):
    df = frame(1)
    kwargs = dict(DEFINITIONS[name])
    task = kwargs.pop("task")
    whole = pe.Evaluation(task, **kwargs).update(df)  # a DataFrame: one query
    chunks = pe.Evaluation(task, **kwargs).update(mixed_lake(tmp_path, df))
    assert small_chunks, "the lake was not taken in chunks"
    got, want = state_rows(chunks), state_rows(whole)
    if chunks._table is not None:  # sums, co-moments ...: one row per group, to rounding
        assert got.height == want.height == df.select(kwargs["by"]).n_unique()
    else:  # counts and summed weights (binary fractions): exact
        for column in ("__pe_ll", "__pe_sq"):  # float sums: to rounding
            if column in want.columns:
                assert_same(got.select(column), want.select(column))
                got, want = got.drop(column), want.drop(column)
        assert got.equals(want)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(chunks.compute(), whole.compute())


def test_chunked_merges_keep_the_state_bounded(tmp_path: Path, small_chunks: list[int]):
    """Every merge reads at most the buffered states and the merged state: about
    ``MERGE_ROWS`` + one chunk's states + the merged state, never the rows seen."""
    df = pl.concat([frame(seed) for seed in range(4)])  # 9,600 rows
    ev = pe.Evaluation("binary", label="y", score="p", by="seg", bins=10)
    ev.update(mixed_lake(tmp_path, df, files=8))
    state = 7 * 2 * 10 * 2 + 7  # segments × labels × bins × sides + a sums row per segment
    assert len(small_chunks) > 10
    assert max(small_chunks) <= 400 + 2 * state
    assert ev.state.height <= 1 + state


def test_chunked_bad_rows_counted_over_every_chunk(tmp_path: Path, small_chunks: list[int]):
    df = frame(2).with_columns(
        w=pl.when(pl.int_range(pl.len()) % 500 == 7).then(-1.0).otherwise(pl.col("w"))
    )
    kw = {"weight": "w", "by": "seg"}
    with pytest.raises(pe.DataValidationError) as want:
        df.eval.binary("y", "p", **kw)
    ev = pe.Evaluation("binary", label="y", score="p", **kw)
    with pytest.raises(pe.DataValidationError) as got:
        ev.update(mixed_lake(tmp_path, df))
    assert str(got.value) == str(want.value)
    assert "found 5 negative rows" in str(got.value)
    assert ev.state.height == 1  # the definition row only: the state is unchanged


def test_chunked_empty_lake(tmp_path: Path) -> None:
    df = frame(3).head(0)
    ev = pe.Evaluation("binary", label="y", score="p", by="seg").update(mixed_lake(tmp_path, df))
    assert ev.compute().height == 0


# -- the namespace on a LazyFrame -----------------------------------------------------------

CALLS = [
    {"by": "seg", "weight": "w"},
    {"by": ["region", "seg"], "metrics": ["auc", "ks", "logloss"]},
    {"metrics": ["auc", "jaccard", "hinge_loss"]},  # outside the default table too
    {"metrics": "pr_auc", "weight": "w"},
    {"by": "seg", "baseline": True},
    {"by": "region", "threshold": 0.3},
    {"by": "seg", "weight": "w", "bins": 20},
    {"bins": 50, "metrics": ["auc", "logloss", "f1"]},
]


@pytest.mark.parametrize("kwargs", CALLS, ids=str)
def test_lazy_namespace_equals_eager(tmp_path: Path, small_chunks: list[int], kwargs: dict):
    df = frame(4)
    want = df.eval.binary("y", "p", **kwargs)
    lazy = mixed_lake(tmp_path, df).eval.binary("y", "p", **kwargs)
    assert isinstance(lazy, pl.LazyFrame)
    assert not small_chunks  # nothing read before collect
    assert lazy.collect_schema() == want.schema
    assert_same(lazy.collect(engine="streaming"), want)
    assert small_chunks  # the state, taken in chunks
    assert_same(lazy.collect(), want)  # collected again: the same


def test_lazy_namespace_string_labels_and_order_scores(tmp_path: Path, small_chunks: list[int]):
    df = frame(5).with_columns(
        lab=pl.when(pl.col("y") == 1).then(pl.lit("bad")).otherwise(pl.lit("good"))
    )
    kw = {"pos_label": "bad", "probability": False, "by": "seg"}
    want = df.eval.binary("lab", "s", **kw)
    got = mixed_lake(tmp_path, df).eval.binary("lab", "s", **kw).collect()
    assert_same(got, want)


def test_lazy_namespace_expressions_keep_the_planner(tmp_path: Path) -> None:
    """An expression argument (not a column name) cannot be a pe.Evaluation column: the
    planner's own query, with the same result."""
    df = frame(6)
    half = pl.col("p") * 0.5 + 0.25
    lazy = mixed_lake(tmp_path, df).eval.binary(pl.col("y"), half, by="seg")
    assert "PYTHON SCAN" not in lazy.explain()
    assert_same(lazy.collect(), df.eval.binary(pl.col("y"), half, by="seg"))


def test_lazy_namespace_without_validation_keeps_the_planner(tmp_path: Path) -> None:
    df = frame(7).with_columns(p=pl.when(pl.col("q") == 3).then(float("nan")).otherwise("p"))
    lazy = mixed_lake(tmp_path, df).eval.binary("y", "p", by="seg", validate=False)
    assert "PYTHON SCAN" not in lazy.explain()
    assert_same(lazy.collect(), df.eval.binary("y", "p", by="seg", validate=False))


def _bad(df: pl.DataFrame, kind: str) -> pl.DataFrame:
    every = pl.int_range(pl.len()) % 400 == 3
    if kind == "nan score":
        return df.with_columns(p=pl.when(every).then(float("nan")).otherwise("p"))
    if kind == "label 2":
        return df.with_columns(y=pl.when(every).then(2).otherwise("y"))
    if kind == "score above 1":
        return df.with_columns(p=pl.when(every).then(1.5).otherwise("p"))
    if kind == "negative weight":
        return df.with_columns(w=pl.when(every).then(-2.0).otherwise("w"))
    if kind == "inf weight":
        return df.with_columns(w=pl.when(every).then(float("inf")).otherwise("w"))
    if kind == "all null":
        return df.with_columns(p=pl.lit(None, pl.Float64))
    if kind == "all weight 0":
        return df.with_columns(w=pl.lit(0.0))
    assert kind == "empty"
    return df.head(0)


@pytest.mark.parametrize("bins", [None, 10])
@pytest.mark.parametrize(
    "kind",
    [
        "nan score",
        "label 2",
        "score above 1",
        "negative weight",
        "inf weight",
        "all null",
        "all weight 0",
        "empty",
    ],
)
def test_lazy_namespace_errors_as_eager(tmp_path: Path, kind: str, bins: int | None) -> None:
    """BAD_INPUTS 1, 2, 5 and the label, probability and weight checks: the same error
    type and message at collect as the eager call (the row counts of the input's rows)."""
    df = _bad(frame(8), kind)
    kw = {"weight": "w", "bins": bins}
    with pytest.raises(Exception) as want:
        df.eval.binary("y", "p", **kw)
    lazy = mixed_lake(tmp_path, df).eval.binary("y", "p", **kw)  # nothing raised yet
    with pytest.raises(type(want.value)) as got:
        lazy.collect()
    assert isinstance(want.value, (pe.DataValidationError, pe.UndefinedMetricError))
    assert str(got.value) == str(want.value)


def test_lazy_namespace_missing_column_at_collect(tmp_path: Path) -> None:
    lazy = mixed_lake(tmp_path, frame(9)).eval.binary("y", "nope", by="seg")
    with pytest.raises(pe.DataValidationError, match='column "nope"'):
        lazy.collect()


def test_lazy_namespace_warns_as_eager(tmp_path: Path, small_chunks: list[int]) -> None:
    """BAD_INPUTS 5: a group of one class (AUC undefined) is null with the one warning."""
    df = frame(10).with_columns(y=pl.when(pl.col("seg") == 3).then(1).otherwise("y"))
    with pytest.warns(pe.UndefinedMetricWarning) as want:
        eager = df.eval.binary("y", "p", by="seg")
    with pytest.warns(pe.UndefinedMetricWarning) as got:
        lazy = mixed_lake(tmp_path, df).eval.binary("y", "p", by="seg").collect()
    assert [str(w.message) for w in got] == [str(w.message) for w in want]
    assert_same(lazy, eager)


# -- the binned state's packed key ----------------------------------------------------------

KEY_TYPES = [pl.Boolean, pl.Int8, pl.UInt8, pl.Int16, pl.UInt16, pl.Int32, pl.UInt32, pl.Int64]


def _extremes(dtype: pl.DataType, n: int, rng: np.random.Generator) -> pl.Series:
    """``n`` values of ``dtype`` among its minimum, maximum, 0, 1 and null."""
    if dtype == pl.Boolean:
        values: list = [True, False, None]
    else:
        info = np.iinfo(str(dtype).lower())  # "int16" ...
        values = [int(info.min), int(info.max), 0, 1, None]
    return pl.Series([values[i] for i in rng.integers(0, len(values), n)], dtype=dtype)


@settings(max_examples=25, deadline=None)
@given(
    types=st.lists(st.sampled_from(KEY_TYPES), min_size=1, max_size=3),
    bins=st.sampled_from([2, 10, 1000, 100_000]),
    seed=st.integers(0, 1000),
    weighted=st.booleans(),
)
def test_binned_packed_key_equals_unpacked(types, bins, seed, weighted) -> None:
    """The label, bin, side and integer ``by`` columns packed into one key: the same
    state and metrics as the same ``by`` columns as strings (never packed), extreme
    values and nulls included, nulls in labels and scores too."""
    rng = np.random.default_rng(seed)
    n = 300
    df = frame(seed, n).with_columns(
        y=pl.when(pl.col("q") == 5).then(None).otherwise("y"),
        s=pl.when(pl.col("q") == 6).then(None).otherwise("s"),
    )
    by = [f"b{i}" for i in range(len(types))]
    df = df.with_columns(_extremes(t, n, rng).alias(b) for b, t in zip(by, types, strict=True))
    text = df.with_columns(pl.col(by).cast(pl.String))
    kw = {"label": "y", "score": "s", "bins": bins, "probability": False, "by": by}
    kw["weight"] = "w" if weighted else None
    packed = pe.Evaluation("binary", **kw).update(df)
    plain = pe.Evaluation("binary", **kw).update(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = packed.compute(), plain.compute()
    got = got.with_columns(pl.col(by).cast(pl.String)).sort(by, nulls_last=True)
    assert_same(got, want.sort(by, nulls_last=True))
    keys = [*by, "__pe_y", "__pe_bin", "__pe_above"]
    rows = state_rows(packed).with_columns(pl.col(by).cast(pl.String)).sort(keys, nulls_last=True)
    assert_same(rows, state_rows(plain).sort(keys, nulls_last=True))


# -- the CLI ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bins", [None, 25])
def test_cli_on_a_mixed_lake_equals_the_api(
    tmp_path: Path, small_chunks: list[int], capsys: pytest.CaptureFixture[str], bins
) -> None:
    df = frame(11)
    mixed_lake(tmp_path, df)
    args = ["binary", str(tmp_path / "*.parquet"), "--label", "y", "--score", "p"]
    args += ["--weight", "w", "--by", "seg", "--format", "json"]
    args += [] if bins is None else ["--bins", str(bins)]
    assert cli.main(args) == 0
    out, _ = capsys.readouterr()
    want = df.eval.binary("y", "p", weight="w", by="seg", bins=bins)
    assert_same(pl.DataFrame(json.loads(out)).select(want.columns).cast(want.schema), want)
    assert small_chunks


@pytest.mark.parametrize("bins", [None, 20])
def test_chunked_windows_equal_one_query(tmp_path: Path, small_chunks: list[int], bins) -> None:
    # binned windows on a lake taken in chunks: the chunks' states are the table's per
    # step (not the binned distinct rows of a state without time=), merged into windows
    df = frame(2).with_columns(
        ts=pl.date(2025, 1, 1) + pl.duration(days=pl.int_range(pl.len()) % 11)
    )
    kwargs = dict(label="y", score="p", weight="w", by="q", time="ts", every="1d", bins=bins)
    kwargs["metrics"] = ["auc", "logloss", "ks"]
    whole = pe.Evaluation("binary", **kwargs).update(df)
    chunks = pe.Evaluation("binary", **kwargs).update(mixed_lake(tmp_path, df))
    assert small_chunks, "the lake was not taken in chunks"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = chunks.compute(period="3d"), whole.compute(period="3d")
        assert got.height == want.height > 60
        assert_same(got, want)
        # and each window equals the task method on the same rows
        assert_same(got, df.eval.binary(**{k: v for k, v in kwargs.items()}, period="3d"))


@pytest.mark.parametrize("bins", [None, 20])
def test_lazy_namespace_windows_on_a_lake_in_chunks(tmp_path: Path, small_chunks, bins) -> None:
    # lf.eval.binary(..., time=, every=) keeps the step states of pe.Evaluation taken in
    # chunks (bounded by groups x steps x state), not the plain query's rows per key
    df = frame(3).with_columns(
        ts=pl.date(2025, 1, 1) + pl.duration(days=pl.int_range(pl.len()) % 9)
    )
    opts = dict(by="q", time="ts", every="1d", period="2d", bins=bins)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = df.eval.binary("y", "p", weight="w", **opts)
        lazy = mixed_lake(tmp_path, df).eval.binary("y", "p", weight="w", **opts)
        assert isinstance(lazy, pl.LazyFrame)
        got = lazy.collect(engine="streaming")
    assert small_chunks, "the lake was not taken in chunks"
    assert got.schema == eager.schema
    assert_same(got, eager)
