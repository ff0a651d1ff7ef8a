"""The AUC of many small groups at once (``metrics/_group_auc.py``).

``group_by().agg(pe.auc)``, ``pe.gini`` and ``df.eval.auc(by=)`` over many groups of few
rows count every group's Mann–Whitney pairs in a few passes over one buffer of keys
(``_sorted_keys.per_group``'s ``many``). Held against scikit-learn's ``roc_auc_score``
per group, against the groups one at a time (the same integers, so ``==``, not approx),
per group against per frame and lazily against eagerly, on ties, both signs, ±0.0, ±inf,
scores past 1.5, NaN, nulls, one-class, one-row and empty groups; batches shrunk to a few
rows so that groups straddle them and outgrow them.
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
from polars_eval.metrics import _group_auc, _sorted_keys

POOL = [-math.inf, -2.5, -1.0, -5e-324, -0.0, 0.0, 5e-324, 0.25, 0.5, 1.0, 1.5, 7.0, math.inf]


@contextmanager
def path(many: bool | None = None, batch: int | None = None) -> Iterator[list[int]]:
    """Every call with groups through ``many`` (or none; None: the default threshold),
    batches of ``batch`` rows; yields the number of groups of each call of ``many``."""
    before = _sorted_keys.MANY_GROUPS, _group_auc.BATCH, _sorted_keys.group_auc
    calls: list[int] = []

    def counted(positive: np.ndarray, s: np.ndarray, offsets: np.ndarray) -> tuple:
        calls.append(len(offsets) - 1)
        return before[2](positive, s, offsets)

    if many is not None:
        _sorted_keys.MANY_GROUPS = 1 if many else 10**9
    _group_auc.BATCH = batch or before[1]
    _sorted_keys.group_auc = counted
    try:
        yield calls
    finally:
        _sorted_keys.MANY_GROUPS, _group_auc.BATCH, _sorted_keys.group_auc = before


def same(a: float | None, b: float | None) -> bool:
    """Equal bit for bit (both null, or both NaN)."""
    if a is None or b is None:
        return a is None and b is None
    return a == b or (math.isnan(a) and math.isnan(b))


def reference(positive: np.ndarray, s: np.ndarray) -> float | None:
    """One group's AUC by the kernel of one group at a time."""
    b = _sorted_keys.Blocks(_sorted_keys.sorted_parts(positive, s))
    return math.nan if b.has_nan else _sorted_keys.auc(b)


@st.composite
def groups(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of a few groups (some empty, some of one row) as ``group_auc`` takes them."""
    lengths = draw(st.lists(st.integers(0, 12), min_size=1, max_size=8))
    n = sum(lengths)
    score = st.one_of(st.sampled_from(POOL), st.floats(-3.0, 3.0), st.sampled_from([math.nan]))
    s = np.array(draw(st.lists(score, min_size=n, max_size=n)), dtype=np.float64)
    positive = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    return positive, s, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


@settings(max_examples=300, deadline=None)
@given(rows=groups(), batch=st.integers(1, 20))
def test_each_group_is_the_one_group_kernel_bit_for_bit(
    rows: tuple[np.ndarray, np.ndarray, np.ndarray], batch: int
) -> None:
    positive, s, offsets = rows
    with path(batch=batch):
        values, defined = _group_auc.group_auc(positive, s, offsets)
    for g, (a, z) in enumerate(zip(offsets[:-1], offsets[1:], strict=True)):
        want = reference(positive[a:z], s[a:z])
        got = float(values[g]) if defined[g] else None
        assert same(got, want), (g, s[a:z], positive[a:z])


def frame(n: int, segments: int, seed: int, *, signed: bool = False) -> pl.DataFrame:
    """Segments of a few rows: tied and continuous scores, nulls, one-class segments."""
    rng = np.random.default_rng(seed)
    seg = rng.integers(0, segments, n)
    y = rng.integers(0, 2, n)
    y[seg % 7 == 0] = 1  # one class
    score = np.where(rng.random(n) < 0.5, np.round(rng.random(n), 1), rng.random(n))
    if signed:
        score = (score - 0.5) * 10.0
    label = pl.Series("y", y).scatter(rng.choice(n, n // 20, replace=False), None)
    s = pl.Series("s", score).scatter(rng.choice(n, n // 20, replace=False), None)
    return pl.DataFrame({"seg": seg, "y": label, "s": s})


@pytest.mark.parametrize("signed", [False, True])
def test_per_group_vs_sklearn(signed: bool) -> None:
    df = frame(3000, 60, seed=1, signed=signed)
    with path() as calls:
        got = df.group_by("seg").agg(pe.auc("y", "s"), pe.gini("y", "s"))
    assert calls == [60, 60]  # the default threshold: many groups of few rows
    assert got.height == 60
    undefined = 0
    for seg, auc, gini in got.iter_rows():
        y, s = df.filter(pl.col("seg") == seg).select("y", "s").drop_nulls()
        if len(np.unique(y)) < 2:
            assert auc is None and gini is None
            undefined += 1
            continue
        assert math.isclose(auc, O.sk_auc(y, s), rel_tol=1e-12)
        assert gini == (auc - 0.5) / 0.5
    assert 0 < undefined < 60


def test_nan_empty_and_one_row_groups() -> None:
    """A NaN score: NaN (whatever the classes); no row left after nulls, one row, one
    class: null; the others: scikit-learn's."""
    parts = {
        0: ([1, 0, 1], [0.2, math.nan, 0.3]),
        1: ([1, 1], [math.nan, 0.1]),
        2: ([None, 1, 0], [0.3, None, None]),
        3: ([1], [0.4]),
        4: ([0, 0, 0], [0.1, 0.2, 0.3]),
        5: ([0, 1, 0, 1], [-0.0, 0.0, -1.0, math.inf]),
    }
    rows = [(g, y, s) for g, (ys, ss) in parts.items() for y, s in zip(ys, ss, strict=True)]
    filler = [(g, y, 0.1 * y + 0.01 * g) for g in range(6, 40) for y in (0, 1, 0)]
    df = pl.DataFrame(rows + filler, schema=["g", "y", "s"], orient="row")
    got = dict(df.group_by("g").agg(pe.auc("y", "s")).iter_rows())
    assert math.isnan(got[0]) and math.isnan(got[1])
    assert got[2] is None and got[3] is None and got[4] is None
    # ±0.0 tie (a pair ½); +inf is above every score, as 9.0 is here
    assert got[5] == O.sk_auc([0, 1, 0, 1], [-0.0, 0.0, -1.0, 9.0]) == 0.875
    assert all(got[g] == 1.0 for g in range(6, 40))


@pytest.mark.filterwarnings("ignore::polars_eval.exceptions.UndefinedMetricWarning")
@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("batch", [None, 7])
def test_many_groups_equal_the_groups_one_at_a_time(signed: bool, batch: int | None) -> None:
    df = frame(4000, 300, seed=2, signed=signed)
    exprs = [pe.auc("y", "s"), pe.gini("y", "s"), pe.auc("y", "s", bins=8).alias("binned")]
    if signed:
        exprs.pop()  # bins= and the binary table take probabilities
    results = {}
    for many in (True, False):
        with path(many, batch) as calls:
            results[many] = [
                df.group_by("seg").agg(exprs).sort("seg"),
                df.eval.auc("y", "s", by="seg").sort("seg"),
            ]
            if not signed:
                table = df.eval.binary("y", "s", by="seg", metrics=["auc", "gini"])
                results[many].append(table.sort("seg"))
        tables = len(results[many]) - 1  # df.eval.auc, df.eval.binary: one call each
        assert calls == ([300] * (len(exprs) + tables) if many else [])
    for new, old in zip(results[True], results[False], strict=True):
        assert new.columns == old.columns
        for name in new.columns:
            assert all(map(same, new[name].to_list(), old[name].to_list())), name


@pytest.mark.filterwarnings("ignore::polars_eval.exceptions.UndefinedMetricWarning")
def test_group_by_is_per_frame_and_lazy_is_eager() -> None:
    df = frame(1500, 40, seed=3)
    with path() as calls:
        grouped = df.group_by("seg").agg(pe.auc("y", "s"), pe.gini("y", "s")).sort("seg")
        lazy = df.lazy().group_by("seg").agg(pe.auc("y", "s"), pe.gini("y", "s")).sort("seg")
        assert lazy.collect().equals(grouped)
    assert calls and set(calls) == {40}
    for seg, auc, gini in grouped.iter_rows():
        part = df.filter(pl.col("seg") == seg)
        assert part.select(pe.auc("y", "s"), pe.gini("y", "s")).row(0) == (auc, gini)
    table = df.eval.auc("y", "s", by="seg").sort("seg")
    assert table["auc"].equals(grouped["auc"])


def test_groups_larger_than_a_batch_and_scores_past_one_and_a_half() -> None:
    """Keys that do not read as Float64 in order (a score >= 1.5) sort as UInt64."""
    rng = np.random.default_rng(4)
    n = 3000
    seg = np.repeat(np.arange(20), n // 20)
    y = rng.integers(0, 2, n)
    s = rng.random(n) * np.where(seg % 2 == 0, 1.0, 4.0)
    positive = y == 1
    offsets = np.arange(0, n + 1, n // 20)
    for batch in (16, 100, 1 << 16):
        with path(batch=batch):
            values, defined = _group_auc.group_auc(positive, s, offsets)
        assert defined.all()
        for g, (a, z) in enumerate(zip(offsets[:-1], offsets[1:], strict=True)):
            assert values[g] == reference(positive[a:z], s[a:z])
            assert math.isclose(values[g], O.sk_auc(y[a:z], s[a:z]), rel_tol=1e-12)
