"""The numpy kernels of the unweighted sort-based binary metrics (``metrics/_sorted_keys.py``).

``pe.auc``, ``pe.gini``, ``pe.average_precision``, ``pe.pr_auc`` and ``pe.roc_curve``
without weights sort one UInt64 key per row and read the tie blocks chunk by chunk. These
tests shrink the chunks to a few keys, so that a tie block crosses a chunk's nominal end,
run the groups of a ``group_by`` in threads however small, and draw scores that stress the keys: both signs, ±0.0, the smallest subnormals, ±inf,
huge magnitudes, many ties, nulls. Oracles: scikit-learn (finite scores) and the brute
force of ``tests/oracles.py`` (recounting the rows at every distinct threshold).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import oracles as O
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polars_eval as pe
from polars_eval.metrics import _sorted_keys

FINITE = [-1e300, -3.5, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1e-300, 0.25, 0.5, 1.0, 7.0, 1e300]
INFINITE = [-math.inf, math.inf]


@contextmanager
def small_chunks(size: int) -> Iterator[None]:
    """Chunks of ``size`` keys (the kernels' default holds thousands), and the groups of
    a call in two threads however few their rows."""
    before = _sorted_keys._CHUNK, _sorted_keys.PARALLEL_ROWS
    _sorted_keys._CHUNK, _sorted_keys.PARALLEL_ROWS = size, 0
    try:
        yield
    finally:
        _sorted_keys._CHUNK, _sorted_keys.PARALLEL_ROWS = before


def rows(draw: st.DrawFn, pool: list[float]) -> pl.DataFrame:
    n = draw(st.integers(0, 40))
    y = draw(st.lists(st.sampled_from([0, 1, None]), min_size=n, max_size=n))
    values = st.one_of(st.sampled_from(pool), st.floats(-5.0, 5.0), st.none())
    s = draw(st.lists(values, min_size=n, max_size=n))
    return pl.DataFrame({"y": y, "s": s}, schema={"y": pl.Int64, "s": pl.Float64})


@st.composite
def finite_rows(draw: st.DrawFn) -> pl.DataFrame:
    return rows(draw, FINITE)


@st.composite
def any_rows(draw: st.DrawFn) -> pl.DataFrame:
    return rows(draw, FINITE + INFINITE)


def used(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    kept = df.drop_nulls()
    return kept["y"].to_numpy(), kept["s"].to_numpy()


def both_classes(y: np.ndarray) -> bool:
    return bool((y == 1).any() and (y == 0).any())


def close(got: float | None, want: float) -> bool:
    return got is not None and math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)


def brute_average_precision(y: np.ndarray, s: np.ndarray) -> float:
    """Σ (R_i − R_{i−1}) P_i over the distinct thresholds, from the brute-force counts."""
    pt = O.points(y, s)
    tp, fp = pt["tp"], pt["fp"]
    return float((np.diff(tp, prepend=0.0) * tp / (tp + fp)).sum() / pt["P"])


@settings(max_examples=150, deadline=None)
@given(df=finite_rows(), chunk=st.integers(1, 6))
def test_scalars_vs_sklearn(df: pl.DataFrame, chunk: int) -> None:
    y, s = used(df)
    with small_chunks(chunk):
        got = df.select(
            pe.auc("y", "s"), pe.gini("y", "s"), pe.average_precision("y", "s"), pe.pr_auc("y", "s")
        ).row(0, named=True)
    if not both_classes(y):
        assert set(got.values()) == {None}
        return
    assert close(got["auc"], O.sk_auc(y, s))
    assert close(got["gini"], 2.0 * O.sk_auc(y, s) - 1.0)
    assert close(got["average_precision"], O.sk_average_precision(y, s))
    assert close(got["pr_auc"], O.brute_pr_auc(y, s))


@settings(max_examples=150, deadline=None)
@given(df=any_rows(), chunk=st.integers(1, 6))
def test_scalars_with_infinite_scores_vs_brute_force(df: pl.DataFrame, chunk: int) -> None:
    y, s = used(df)
    with small_chunks(chunk):
        got = df.select(pe.auc("y", "s"), pe.average_precision("y", "s"), pe.pr_auc("y", "s"))
    auc, ap, pr = got.row(0)
    if not both_classes(y):
        assert (auc, ap, pr) == (None, None, None)
        return
    assert close(auc, O.brute_auc_pairs(y, s))
    assert close(ap, brute_average_precision(y, s))
    assert close(pr, O.brute_pr_auc(y, s))


@settings(max_examples=100, deadline=None)
@given(df=finite_rows(), chunk=st.integers(1, 6))
def test_roc_curve_vs_sklearn(df: pl.DataFrame, chunk: int) -> None:
    y, s = used(df)
    with small_chunks(chunk):
        got = df.select(pe.roc_curve("y", "s")).explode("roc_curve").unnest("roc_curve")
    if not both_classes(y):  # scikit-learn warns and gives NaN rates; ours are null
        assert got["threshold"].to_list()[0] == math.inf
        assert len(got) == 1 + len(np.unique(s))
        missing = [name for name, c in (("fpr", 0), ("tpr", 1)) if not (y == c).any()]
        assert all(got[name].null_count() == len(got) for name in missing)
        return
    want = O.sk_roc_curve(y, s)
    assert len(got) == len(want["threshold"])
    for name, values in want.items():
        assert np.array_equal(got[name].to_numpy(), values), name


@settings(max_examples=60, deadline=None)
@given(df=any_rows(), chunk=st.integers(1, 6))
def test_per_group_is_per_frame(df: pl.DataFrame, chunk: int) -> None:
    df = df.with_columns(g=pl.int_range(pl.len()) % 3)
    exprs = [pe.auc("y", "s"), pe.average_precision("y", "s"), pe.roc_curve("y", "s")]
    with small_chunks(chunk):
        grouped = df.group_by("g").agg(exprs)
        for g in range(3):
            part = df.filter(pl.col("g") == g)
            if part.is_empty():
                continue
            want = part.select(exprs).to_dicts()
            assert grouped.filter(pl.col("g") == g).drop("g").to_dicts() == want


@pytest.mark.parametrize("nan", [math.nan, -math.nan])
def test_a_nan_score_gives_nan_everywhere(nan: float) -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 0, 1], "s": [0.5, nan, -2.0, 0.5, math.nan]})
    got = df.select(pe.auc("y", "s"), pe.average_precision("y", "s"), pe.pr_auc("y", "s"))
    assert all(math.isnan(v) for v in got.row(0))
    roc = df.select(pe.roc_curve("y", "s")).explode("roc_curve").unnest("roc_curve")
    # the head, one point for every NaN, then 0.5 and -2.0: each field NaN
    assert roc.height == 4
    assert all(math.isnan(v) for row in roc.iter_rows() for v in row)


def test_empty_and_all_null_groups() -> None:
    df = pl.DataFrame(
        {"g": [1, 1, 2], "y": [None, 1, 0], "s": [0.3, None, 0.4]},
        schema={"g": pl.Int64, "y": pl.Int64, "s": pl.Float64},
    )
    got = df.group_by("g").agg(pe.auc("y", "s"), pe.roc_curve("y", "s")).sort("g")
    assert got["auc"].to_list() == [None, None]
    first = got["roc_curve"].to_list()[0]
    assert first == [{"threshold": math.inf, "fpr": None, "tpr": None}]
    assert df.head(0).select(pe.average_precision("y", "s")).item() is None


@settings(max_examples=200, deadline=None)
@given(df=finite_rows(), chunk=st.integers(1, 7))
def test_auc_from_the_chunks_is_the_keys_auc_exactly(df: pl.DataFrame, chunk: int) -> None:
    """With another accumulator reading the chunks, AUC and Gini ride on them
    (``Chunk.twice_area``): the same exact integer as :func:`_sorted_keys.auc`, so the
    same float, bit for bit; and scikit-learn's AUC."""
    y, s = used(df)
    parts = {"auc": _sorted_keys.Auc, "gini": _sorted_keys.Gini, "ks": _sorted_keys.Ks}
    positive = y == 1
    with small_chunks(chunk):
        keys = _sorted_keys.sorted_parts(positive, s)
        got = _sorted_keys.together(parts)(_sorted_keys.Blocks(keys))
        want = _sorted_keys.auc(_sorted_keys.Blocks(keys))
    assert got["auc"] == want
    if want is None:
        assert got["gini"] is None
        return
    assert got["gini"] == (want - 0.5) / 0.5
    assert close(got["auc"], O.sk_auc(y, s))
