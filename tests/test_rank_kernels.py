"""The numpy kernels of the rank correlations at the sizes where they change path: the
inversion count's levels by Polars' filter and packed-bit index sums (from
``FILTER_ROWS`` places), its halves and the two sorts in two threads (from
``PARALLEL_ROWS`` rows), and Spearman and Kendall computed in one call (``df.eval.regression``),
against scipy on the same rows (integer weights: the rows repeated)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import scipy.stats as ss

import polars_eval as pe
from polars_eval.metrics import _rank_kernels as rm

N = rm.PARALLEL_ROWS + 1_003  # above every size threshold, not a power of two


@pytest.mark.parametrize("size", [rm.FILTER_ROWS - 5, rm.FILTER_ROWS, rm.FILTER_ROWS + 77])
def test_index_sum_from_packed_bits(size: int) -> None:
    mask = np.random.default_rng(size).random(size) < 0.4
    assert rm._index_sum(mask) == int(np.arange(size)[mask].sum())


def test_large_inversion_count_against_scipy() -> None:
    # a permutation without ties: tau = 1 - 4 I / (n (n - 1)), I the inversions
    rng = np.random.default_rng(1)
    values = rng.permutation(N)
    got = rm._inversions(values, None)
    tau = ss.kendalltau(np.arange(N), values).statistic
    assert isinstance(got, int)
    assert got == round((1.0 - tau) * N * (N - 1) / 4.0)


def test_large_weighted_inversions_equal_the_sequential_path(monkeypatch) -> None:
    rng = np.random.default_rng(2)
    order = rng.permutation(N)
    w = rng.random(N)
    threaded = rm._inversions(order, w)
    monkeypatch.setattr(rm, "PARALLEL_ROWS", 10 * N)
    monkeypatch.setattr(rm, "FILTER_ROWS", 10 * N)
    assert threaded == pytest.approx(rm._inversions(order, w), rel=1e-12)


def _data(kind: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.gamma(2.0, 3.0, N)
    y = x + rng.normal(0.0, 3.0, N)
    if kind == "tied":  # ties on both sides, too many cells for the table of counts
        x, y = np.round(x, 1), np.round(y, 1)
    elif kind == "one side tied":
        y = np.round(y)
    return x, y


@pytest.mark.parametrize("kind", ["continuous", "tied", "one side tied"])
def test_large_rank_correlations_against_scipy(kind: str) -> None:
    x, y = _data(kind, 3)
    got = rm._rank_correlations(x, y, None, ("spearman", "kendall_tau"))
    assert got["spearman"] == pytest.approx(ss.spearmanr(x, y).statistic, rel=1e-12)
    assert got["kendall_tau"] == pytest.approx(ss.kendalltau(x, y).statistic, rel=1e-12)
    # each alone: the same values
    assert rm._rank_correlations(x, y, None, ("spearman",)) == {"spearman": got["spearman"]}
    assert rm._kendall_tau_b(x, y, None) == got["kendall_tau"]


@pytest.mark.parametrize("kind", ["continuous", "tied"])
def test_large_weighted_rank_correlations_are_repetition(kind: str) -> None:
    x, y = _data(kind, 4)
    x, y = x[: N // 2], y[: N // 2]
    reps = np.random.default_rng(5).integers(1, 4, x.size)
    xr, yr = np.repeat(x, reps), np.repeat(y, reps)
    got = rm._rank_correlations(x, y, reps.astype(float), ("spearman", "kendall_tau"))
    assert got["spearman"] == pytest.approx(ss.spearmanr(xr, yr).statistic, rel=1e-10)
    assert got["kendall_tau"] == pytest.approx(ss.kendalltau(xr, yr).statistic, rel=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_table_shares_one_rank_call_with_the_bare_values(weighted: bool) -> None:
    rng = np.random.default_rng(6)
    n = 5_000
    df = pl.DataFrame(
        {
            "y": np.round(rng.gamma(2.0, 3.0, n), 1),
            "p": rng.gamma(2.0, 3.0, n),
            "w": rng.integers(1, 4, n).astype(float),
            "g": rng.integers(0, 3, n),
        }
    )
    weight = "w" if weighted else None
    table = df.eval.regression("y", "p", weight=weight, by="g")
    bare = df.group_by("g").agg(
        pe.spearman("y", "p", weight=weight), pe.kendall_tau("y", "p", weight=weight)
    )
    both = table.join(bare, on="g", suffix="_bare")
    for name in ("spearman", "kendall_tau"):
        np.testing.assert_allclose(both[name], both[name + "_bare"], rtol=1e-12)
    # one joint column in the plan, no per-metric rank call
    plan = df.lazy().eval.regression("y", "p", weight=weight).explain()
    assert plan.count("python_udf") == 1
