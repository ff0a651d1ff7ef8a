"""The bootstrap: percentile intervals of any metric expression (SPEC §8).

Design
------
* **Resample weights, not resampled frames.** Resample ``r`` gives every resampling unit
  (a row, or a whole ``group=`` such as a query or a series) a count: multinomial counts
  (n draws with replacement within each ``by`` stratum, the classical bootstrap) or
  Poisson(1) counts (``method="poisson"``). The counts of resample ``r`` come from a
  numpy ``Generator`` seeded with ``[seed, r]``: they depend on nothing else, so the
  result is the same for any number of threads and any chunking of the resamples, and
  every metric of one call (and both models of ``paired_bootstrap``) sees the same
  resamples. Units are the rows in frame order, or the distinct ``group`` keys in sorted
  order (independent of row order).
* **Any expression** (``pe.auc("y", "p")``, ``pe.logloss(...)``, your own
  ``pl.col("x").mean()``): rows are repeated by their count for a chunk of resamples and
  the expressions are evaluated unchanged in one ``group_by(resample, *by).agg(...)``
  query per chunk — Polars runs the resamples of a chunk in parallel.
* **Kernels for registered metrics.** An expression recognised as built by a registered
  metric (``pe.auc(label, score[, weight=])``, ``pe.logloss(...)`` ..., renamed or not:
  every registered metric function records the expressions it builds with their
  arguments, :mod:`polars_eval._core.origin`) is evaluated by a numpy kernel over state built
  once; a resample is then only its counts, vectorised over a block of resamples (a
  (resamples, units) count array of about ``BLOCK_CELLS`` cells): O(n) per resample,
  never a sort and never a repeated row.

  - ROC AUC and Gini (:class:`AucKernel`): the rows are sorted by (stratum, score) once;
    a resample costs one gather of its counts into that order (or one bincount into tie
    bins when scores are heavily tied), one cumulative sum and one weighted sum. Its
    values equal scikit-learn's weighted AUC with the counts as sample weights.
  - The other metrics of the sorted threshold state — average precision, PR-AUC, KS,
    max_f1, max_mcc, max_accuracy, ECE (:class:`CurveKernel`): the same sort once; a
    resample's points (distinct scores drawn, with their cumulative counts) come from
    two cumulative sums, and the metric's own finalize runs on them in Polars.
  - Metrics whose states are sums, minima and maxima of row values — log loss, Brier,
    the confusion-count metrics, MSE, MAE ... (:class:`StateKernel`): every row's share
    of every state is computed once; a resample's summed states are one sparse product
    of its counts, and the metric's own finalize runs once on the table of states.

  Kernel values equal the expression path's to rounding (tested per resample, and
  against scikit-learn with the counts as sample weights). Other expressions (the rank
  correlations, ROC AUC with ``pos_label=``, a metric given expressions rather than column
  names, your own) take the expression path.
* **The counts** (:func:`poisson_counts`, :func:`to_multinomial`): Poisson(1) counts by
  inversion of the CDF through a 16-bit table (exact to a double's resolution, about
  1 ns a count); the multinomial counts are those Poisson counts, given their total T,
  cut or topped up to n draws per stratum by removing a uniform random subset of the
  draws or adding uniform draws — exactly multinomial, without drawing and counting n
  row indices (a scattered ``bincount``, the bulk of the cost before). The counts of a
  given seed changed with this generator (2026-11); the tests check their distribution
  against scipy's multinomial, binomial, hypergeometric and Poisson laws, and the
  metric of each resample against scikit-learn on the same counts.
* The estimate is the expression on the original data. Resamples where a metric is
  undefined (null or NaN) are dropped from the percentiles and counted in
  ``n_undefined``.

The rows a bootstrap needs (the metrics' input columns, ``by`` and ``group``) are
collected once; on a LazyFrame that happens at ``collect()`` time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_eval._core.origin import origin
from polars_eval._core.planner import normalize_by
from polars_eval._core.registry import REGISTRY, MetricInfo
from polars_eval._core.spec import MetricSpec
from polars_eval._exprs import F64, count_true
from polars_eval._params import check_choice, check_level, check_positive_int
from polars_eval._validate import (
    check_aggs,
    column_problems,
    raise_for_checks,
    resolve_checks,
    row_checks,
)
from polars_eval.exceptions import DataValidationError, InvalidParameterError

METHODS = ("multinomial", "poisson")
R_COL = "__pe_resample"
ROW_COL = "__pe_row"
CHUNK_ROWS = 4_000_000
"""About how many repeated rows one chunk of the expression path materialises."""
BLOCK_CELLS = 1 << 17
"""About how many unit counts (resamples × units) one block of the kernels holds: 1 MiB for
the int64 cumulative sums of a block, so that its arrays stay in a core's cache (at 1e5
rows and more a block is one resample; at 1e3 rows, 131). Measured with int64 counts (CPU s
per 1000 resamples, 1e4 rows): 0.11 with one resample per block, 0.065 with 13, 0.15 with
104."""

"""The registered metrics evaluated by :class:`AucKernel` instead of their expression."""

SUMMARY_SCHEMA = {
    "metric": pl.String,
    "estimate": F64,
    "lower": F64,
    "upper": F64,
    "std": F64,
    "n_undefined": pl.Int64,
}


# ---------------------------------------------------------------------------------------
# Recognising registered metrics inside expressions
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recognized:
    """An expression proven equal to ``info.fn(**args)``."""

    info: MetricInfo
    args: dict[str, Any]


def recognize(expr: pl.Expr) -> Recognized | None:
    """The registered metric and the arguments an expression was built with, if any.

    Read from the record every registered metric function keeps of the expressions it
    builds (:mod:`polars_eval._core.origin`): a renamed expression such as
    ``pe.auc(...).alias("model_a")`` is still ``auc``; an expression no registered call
    built (your own, or a hand-written look-alike of a metric) is None.
    """
    found = origin(expr)
    if found is None or found[0] not in REGISTRY:
        return None
    name, args = found
    return Recognized(REGISTRY[name], args)


def validate_recognized(df: pl.DataFrame | pl.LazyFrame, found: Sequence[Recognized]) -> None:
    """The namespace's data checks for the recognised metrics (raises DataValidationError)."""
    lf = df.lazy()
    schema = lf.collect_schema()
    checks = []
    for item in found:
        problems = column_problems(schema, item.args, item.info.inputs)
        if problems:
            raise DataValidationError(problems[0])
        checks += row_checks(schema, item.args, item.info.inputs)
        if item.info.check is not None:  # the metric's own data checks (check= hook)
            checks += resolve_checks(item.info.check(item.args), schema)
    if checks:
        raise_for_checks(lf.select(check_aggs(checks)).collect(), checks)


# ---------------------------------------------------------------------------------------
# Resampling design: units, strata and the counts of one resample
# ---------------------------------------------------------------------------------------


@dataclass
class Design:
    """How rows map to resampling units and units to ``by`` strata.

    The count generator: :meth:`unit_counts` gives the counts of one resample, a function
    of ``(seed, r)`` only, :meth:`counts` the same as row counts in frame order and
    :meth:`unit_counts_block` stacks several resamples.
    """

    n_rows: int
    unit_of_row: np.ndarray | None  # None: every row is a unit
    n_units: int
    perm: np.ndarray  # units sorted by stratum (stable)
    stratum_starts: np.ndarray  # the first position of every stratum in ``perm`` order
    stratum_sizes: np.ndarray  # the number of units of every stratum
    n_strata: int
    method: str
    seed: int

    def unit_counts(self, r: int) -> np.ndarray:
        """The count of every resampling unit in resample ``r`` (uint8, or int64 in the
        rare resample where a count exceeds 255)."""
        rng = np.random.default_rng([self.seed, r])
        counts = poisson_counts(rng, self.n_units)
        if self.method == "poisson":
            return counts
        if self.n_strata <= 1:
            sizes = np.array([self.n_units], dtype=np.int64)
            return to_multinomial(rng, counts, np.zeros(1, dtype=np.int64), sizes)
        # the Poisson counts are i.i.d., so they may as well be the units in stratum order
        counts = to_multinomial(rng, counts, self.stratum_starts, self.stratum_sizes)
        units = np.empty_like(counts)
        units[self.perm] = counts
        return units

    def counts(self, r: int) -> np.ndarray:
        """The count of every row in resample ``r`` (its unit's count), in frame order."""
        units = self.unit_counts(r)
        return units if self.unit_of_row is None else units[self.unit_of_row]

    def unit_counts_block(self, resamples: range) -> np.ndarray:
        """The unit counts of several resamples: an array (resample, unit)."""
        if len(resamples) == 1:
            return self.unit_counts(resamples[0])[None, :]
        rows = [self.unit_counts(r) for r in resamples]
        dtype = np.result_type(*rows)
        out = np.empty((len(resamples), self.n_units), dtype=dtype)
        for i, row in enumerate(rows):
            out[i] = row
        return out

    def row_counts(self, unit_counts: np.ndarray) -> np.ndarray:
        """Unit counts (resample, unit) as row counts (resample, row) in frame order."""
        return unit_counts if self.unit_of_row is None else unit_counts[:, self.unit_of_row]


POISSON_CDF = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(40)])
"""P(X <= k) for X ~ Poisson(1), k = 0..39 (the rest has probability < 1e-47)."""

TABLE_BITS = 16


def _poisson_table() -> np.ndarray:
    """The Poisson(1) count of every 16-bit bucket [b, b + 1) / 2^16 of a uniform U, where
    the count #{k : U >= P(X <= k)} is the same over the whole bucket; 255 where a CDF
    value falls inside the bucket (about 10 of the 65,536: those draw more bits)."""
    size = 1 << TABLE_BITS
    edges = np.arange(size + 1, dtype=np.float64) / size
    low = np.searchsorted(POISSON_CDF, edges[:-1], side="right")  # k with CDF_k <= b/2^16
    high = np.searchsorted(POISSON_CDF, edges[1:], side="left")  # k with CDF_k < (b+1)/2^16
    return np.where(low == high, low, 255).astype(np.uint8)


POISSON_TABLE = _poisson_table()


def poisson_counts(rng: np.random.Generator, n: int) -> np.ndarray:
    """n Poisson(1) draws (uint8) by inversion of the CDF, X = #{k : U >= P(X <= k)}.

    The leading 16 bits of U index a table that holds X for all but about 10 of the
    65,536 buckets; a draw in one of those (1.5e-4 of them) takes 53 bits: U = (bucket +
    V) / 2^16 with V a fresh uniform double, and X by a binary search of the CDF. Exact to
    the resolution of a double (as inverting a ``Generator.random`` draw), and 16 random
    bits per draw instead of 53: about 1 ns per count.
    """
    raw = rng.bit_generator.random_raw((n + 3) // 4)
    buckets = raw.view(np.uint16)[:n]
    counts = np.take(POISSON_TABLE, buckets)
    fine = np.flatnonzero(counts == 255)
    if len(fine):
        u = (buckets[fine] + rng.random(len(fine))) / float(1 << TABLE_BITS)
        counts[fine] = np.searchsorted(POISSON_CDF, u, side="right")
    return counts


def to_multinomial(
    rng: np.random.Generator, counts: np.ndarray, starts: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """Poisson(1) counts made multinomial: n_g draws with replacement over the n_g units of
    every stratum g (the units of stratum g are ``counts[starts[g]:starts[g] + sizes[g]]``).

    Given their total T_g, i.i.d. Poisson counts are multinomial(T_g) over the units of the
    stratum; removing T_g − n_g of those T_g draws chosen uniformly at random without
    replacement (when T_g > n_g), or adding n_g − T_g draws uniformly over the units
    (when T_g < n_g), leaves n_g i.i.d. uniform draws: multinomial(n_g), exactly. The
    difference is about √n_g, so the adjustment costs little beside the counts.
    """
    totals = np.add.reduceat(counts, starts, dtype=np.int64) if len(counts) else sizes * 0
    excess = totals - sizes
    if np.any(excess > 0):
        _remove_draws(rng, counts, starts, sizes, excess)
    if np.any(excess < 0):
        missing = np.maximum(-excess, 0)
        stratum = np.repeat(np.arange(len(sizes)), missing)
        units = starts[stratum] + rng.integers(0, sizes[stratum])
        counts = _add_at(counts, units)
    return counts


def _remove_draws(
    rng: np.random.Generator,
    counts: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    excess: np.ndarray,
) -> None:
    """Remove ``excess[g]`` draws of stratum g, a uniform random subset of its draws.

    A draw is a (unit, slot) pair with slot < the unit's count. Candidates (a uniform unit
    of the stratum, a uniform slot below the largest count) are accepted when the slot
    holds a draw: the accepted ones are i.i.d. uniform over the stratum's draws, and the
    first ``excess[g]`` distinct ones a uniform subset of that size (sampling without
    replacement). Vectorised over the strata; rounds repeat for the strata still short.
    """
    cap = int(counts.max())
    units: list[np.ndarray] = []
    slots: list[np.ndarray] = []
    have = np.zeros(len(sizes), dtype=np.int64)
    need = np.maximum(excess, 0)
    while np.any(have < need):
        short = need - have
        tries = np.where(short > 0, short * cap * 5 // 4 + 8, 0)
        stratum = np.repeat(np.arange(len(sizes)), tries)
        unit = starts[stratum] + rng.integers(0, sizes[stratum])
        slot = rng.integers(0, cap, len(unit))
        hit = slot < counts[unit]
        units.append(unit[hit])
        slots.append(slot[hit])
        unit, slot = np.concatenate(units), np.concatenate(slots)
        _, first = np.unique(unit * cap + slot, return_index=True)
        first.sort()  # the distinct draws, in the order they were first drawn
        units, slots = [unit[first]], [slot[first]]
        stratum_of = np.searchsorted(starts, units[0], side="right") - 1
        have = np.bincount(stratum_of, minlength=len(sizes))
    unit = units[0]
    stratum_of = np.searchsorted(starts, unit, side="right") - 1
    order = np.argsort(stratum_of, kind="stable")
    rank = np.arange(len(unit)) - np.searchsorted(stratum_of[order], stratum_of[order])
    removed = unit[order][rank < need[stratum_of[order]]]
    at, times = np.unique(removed, return_counts=True)
    counts[at] -= times.astype(counts.dtype)


def _add_at(counts: np.ndarray, units: np.ndarray) -> np.ndarray:
    """counts with one more draw at every entry of ``units`` (int64 if uint8 overflows)."""
    at, times = np.unique(units, return_counts=True)
    new = counts[at].astype(np.int64) + times
    if counts.dtype == np.uint8 and new.max(initial=0) > 255:
        counts = counts.astype(np.int64)
    counts[at] = new
    return counts


def _codes(df: pl.DataFrame, cols: list[str], name: str) -> tuple[np.ndarray, pl.DataFrame]:
    """Dense codes of the key tuples (in sorted key order) and the key table."""
    if not cols:
        return np.zeros(df.height, dtype=np.int64), pl.DataFrame()
    keys = df.select(cols).unique().sort(cols, nulls_last=True).with_row_index(name)
    codes = (
        df.select(cols)
        .join(keys, on=cols, how="left", nulls_equal=True, maintain_order="left")
        .get_column(name)
        .cast(pl.Int64)
        .to_numpy()
    )
    return codes, keys.drop(name)


def make_design(
    df: pl.DataFrame,
    by: list[str],
    group: list[str],
    method: str,
    seed: int,
    *,
    strata: tuple[np.ndarray, pl.DataFrame] | None = None,
) -> tuple[Design, np.ndarray, pl.DataFrame]:
    """The design, the stratum code of every row and the table of ``by`` keys (code order).

    ``strata``: the stratum codes and key table when already computed.
    """
    stratum_of_row, by_keys = _codes(df, by, "__pe_s") if strata is None else strata
    n_strata = max(by_keys.height, 1)
    unit_of_row: np.ndarray | None
    if group:
        unit_of_row, unit_keys = _codes(df, [*by, *group], "__pe_u")
        n_units = unit_keys.height
        unit_stratum = np.zeros(n_units, dtype=np.int64)
        unit_stratum[unit_of_row] = stratum_of_row
    else:
        unit_of_row = None
        n_units = df.height
        unit_stratum = stratum_of_row
    if n_strata > 1:
        perm = np.argsort(unit_stratum, kind="stable")
        sizes = np.bincount(unit_stratum, minlength=n_strata)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    else:  # one stratum: draws over all units, no permutation
        perm = starts = sizes = np.zeros(0, dtype=np.int64)
    design = Design(
        n_rows=df.height,
        unit_of_row=unit_of_row,
        n_units=n_units,
        perm=perm,
        stratum_starts=starts,
        stratum_sizes=sizes,
        n_strata=n_strata,
        method=method,
        seed=seed,
    )
    return design, stratum_of_row, by_keys


# ---------------------------------------------------------------------------------------
# The AUC kernel (numpy: O(n) per resample after one sort)
# ---------------------------------------------------------------------------------------


class AucKernel:
    """Weighted ROC AUC per stratum for a block of resamples, the rows sorted once.

    The shared state, built once: the kept rows sorted by (stratum, score), negatives and
    positives apart. Without weights and with many ties (at most half as many distinct
    (stratum, score, class) *bins* as rows) the rows are pooled into those bins; otherwise
    every row is its own bin. A resample is nothing but a count per row, so a block of B
    resamples (a (B, rows) count array) costs one gather of the counts into that fixed
    order (or one bincount per resample into the bins), one cumulative sum and one
    weighted sum: O(rows) per resample, no sort.

    With F the cumulative mass of the negatives in bin order (F[:, 0] = 0), a positive bin
    of mass c in the tie block of stratum g that starts at negative bin a and ends before
    negative bin e is credited c (F[a] + F[e]) / 2 − c F[first negative bin of g];
    AUC_g = Σ credits / (P_g N_g). Without weights the masses are int64 and the arithmetic
    is exact up to the last division (and an integer cumulative sum is several times
    faster than a float one); weights make it float64. Labels must be 0/1 (else the
    expression path is used).

    numpy rather than Polars: a resample's cumulative sums run over an order fixed once
    for all resamples, with per-resample masses; a Polars expression would re-sort, or
    re-join the counts, for every one of the thousand weighted evaluations.
    """

    def __init__(
        self,
        label: np.ndarray,
        score: np.ndarray,
        weight: np.ndarray,
        stratum: np.ndarray,
        n_strata: int,
        *,
        gini: bool = False,
    ) -> None:
        self.gini = gini
        keep = ~(np.isnan(label) | np.isnan(weight)) & (weight != 0.0)
        rows = np.flatnonzero(keep)
        if len(rows) < len(keep):
            score, stratum = score[rows], stratum[rows]
        order = _sort_order(stratum, score, n_strata)
        rows, s = rows[order], score[order]
        g = stratum[order] if n_strata > 1 else np.zeros(len(rows), dtype=np.int64)
        m = len(rows)
        new = np.ones(m, dtype=bool)  # new[k]: a tie block starts at sorted row k
        new[1:] = s[1:] != s[:-1]
        if n_strata > 1:
            new[1:] |= g[1:] != g[:-1]
        block = np.cumsum(new) - 1  # tie block of every sorted row
        is_pos = label[rows] == 1.0
        # the kernel's positions: the rows of its negatives, then of its positives
        self.order = np.concatenate([rows[~is_pos], rows[is_pos]])
        self.index: np.ndarray | None = self.order  # the unit of every position; None: 0..m-1
        self.unit_bin: np.ndarray | None = None  # the bin of every unit, when units are rows
        n_neg = m - int(is_pos.sum())
        w = weight[self.order]
        weighted = not np.all(w == 1.0)
        self.w_neg = w[:n_neg] if weighted else None
        self.w_pos = w[n_neg:] if weighted else None
        neg_block, pos_block = block[~is_pos], block[is_pos]
        neg_g, pos_g = g[~is_pos], g[is_pos]
        self.bin_of: np.ndarray | None = None
        if not weighted:
            first_neg, first_pos = _run_starts(neg_block), _run_starts(pos_block)
            n_bins = len(first_neg) + len(first_pos)
            if n_bins <= m // 2:
                # many ties: sum the counts per bin (the bin of every position); with few
                # ties that bincount costs more than it saves
                starts = np.zeros(m, dtype=bool)
                starts[first_neg] = True
                starts[n_neg + first_pos] = True
                self.bin_of = np.cumsum(starts) - 1
                self.n_bins = n_bins
                neg_block, neg_g = neg_block[first_neg], neg_g[first_neg]
                pos_block, pos_g = pos_block[first_pos], pos_g[first_pos]
        self.n_neg_bins = len(neg_block)
        self.ia = np.searchsorted(neg_block, pos_block, side="left")
        self.ie = np.searchsorted(neg_block, pos_block, side="right")
        self.tie_at = np.flatnonzero(self.ia != self.ie)  # positives tied with negatives
        self.ties = len(self.tie_at) > 0
        self.n_strata = n_strata
        strata = np.arange(n_strata)
        self.f_start = np.searchsorted(neg_g, strata, side="left")
        self.f_end = np.searchsorted(neg_g, strata, side="right")
        p_start = np.searchsorted(pos_g, strata, side="left")
        p_end = np.searchsorted(pos_g, strata, side="right")
        self.segments = np.flatnonzero(p_end > p_start)  # strata with positive bins
        self.segment_starts = p_start[self.segments]
        tie_g = pos_g[self.tie_at]
        t_start = np.searchsorted(tie_g, strata, side="left")
        self.tie_segments = np.flatnonzero(np.searchsorted(tie_g, strata, side="right") > t_start)
        self.tie_starts = t_start[self.tie_segments]
        nan_strata = np.zeros(n_strata, dtype=bool)
        nan_strata[np.unique(g[np.isnan(s)])] = True
        self.nan_strata = nan_strata

    def bind(self, unit_of_row: np.ndarray | None, n_units: int) -> None:
        """Read the counts of ``Design`` units (``unit_of_row``: see :class:`Design`)."""
        index = self.order if unit_of_row is None else unit_of_row[self.order]
        self.index = None if np.array_equal(index, np.arange(len(index))) else index
        self.unit_bin = None
        if self.bin_of is not None and unit_of_row is None:
            # units are rows: one bincount of the counts in unit order into the (few) bins,
            # a sequential pass with no gather (rows the kernel ignores: the last bin)
            self.unit_bin = np.full(n_units, self.n_bins, dtype=np.intp)
            self.unit_bin[self.order] = self.bin_of

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        """The AUC (or Gini) of every (resample, stratum) for a (resamples, units) count array."""
        b = counts.shape[0]
        if self.unit_bin is not None:
            mass = np.stack(
                [np.bincount(self.unit_bin, weights=c, minlength=self.n_bins + 1) for c in counts]
            )[:, : self.n_bins].astype(np.int64)  # integral floats: exact
        else:
            if self.index is None:  # the positions are the first units: no gather
                mass = counts[:, : len(self.order)]
            else:
                mass = np.take(counts, self.index, axis=1)
            if self.bin_of is not None:
                mass = np.stack(
                    [np.bincount(self.bin_of, weights=c, minlength=self.n_bins) for c in mass]
                ).astype(np.int64)
        neg, pos = mass[:, : self.n_neg_bins], mass[:, self.n_neg_bins :]
        if self.w_neg is not None:
            neg, pos = neg * self.w_neg, pos * self.w_pos
        exact = neg.dtype.kind in "iu"  # counts (uint8 or int64), no weights: int64 sums
        f = np.empty((b, self.n_neg_bins + 1), dtype=np.int64 if exact else np.float64)
        f[:, 0] = 0
        np.cumsum(neg, axis=1, out=f[:, 1:], dtype=f.dtype)
        below = np.take(f, self.ia, axis=1)
        below *= pos
        num = self._per_stratum(below, self.segments, self.segment_starts)
        p = self._per_stratum(pos, self.segments, self.segment_starts)
        half = 1
        if self.ties:
            # credits counted twice: 2 F[a] for every positive, plus F[e] - F[a] for the
            # (few) positives tied with negatives
            half = 2
            gap = np.take(f, self.ie[self.tie_at], axis=1)
            gap -= np.take(f, self.ia[self.tie_at], axis=1)
            gap *= pos[:, self.tie_at]
            num = 2 * num + self._per_stratum(gap, self.tie_segments, self.tie_starts)
        if self.n_strata > 1:
            num -= half * p * f[:, self.f_start]
        n = f[:, self.f_end] - f[:, self.f_start]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where((p > 0) & (n > 0), num / (half * p * n), np.nan)
        out[:, self.nan_strata] = np.nan
        return 2.0 * out - 1.0 if self.gini else out

    def finish(self, values: np.ndarray) -> np.ndarray:
        """The values of every (resample, stratum): the kernel's output already."""
        return values

    def _per_stratum(self, x: np.ndarray, segments: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """Row sums of ``x`` (resample, position) per stratum; positions sorted by stratum,
        ``segments`` the strata that have some and ``starts`` where they start."""
        dtype = np.int64 if x.dtype.kind in "iu" else np.float64  # uint8 counts: no wrap
        if self.n_strata == 1:
            return x.sum(axis=1, keepdims=True, dtype=dtype)
        out = np.zeros((x.shape[0], self.n_strata), dtype=dtype)
        if len(segments):
            out[:, segments] = np.add.reduceat(x, starts, axis=1, dtype=dtype)
        return out


def _sort_order(stratum: np.ndarray, score: np.ndarray, n_strata: int) -> np.ndarray:
    """An order of rows by (stratum, score); ties in any order (they form one block).

    numpy's default argsort of floats (a SIMD quicksort) is several times faster than a
    stable sort or ``lexsort``; strata then take a stable radix sort of small codes.
    """
    order = np.argsort(score)
    if n_strata > 1:
        codes = stratum[order].astype(np.min_scalar_type(n_strata))
        order = order[np.argsort(codes, kind="stable")]
    return order


def _run_starts(x: np.ndarray) -> np.ndarray:
    """The positions where a run of equal values starts in ``x``."""
    if not len(x):
        return np.zeros(0, dtype=np.intp)
    return np.flatnonzero(np.concatenate([[True], x[1:] != x[:-1]]))


# ---------------------------------------------------------------------------------------
# The state kernel (a metric whose states are sums, minima and maxima of row values)
# ---------------------------------------------------------------------------------------

STATE_KINDS = ("sum", "min", "max")


class StateKernel:
    """A registered metric whose states are sums (and minima or maxima) of row values —
    log loss, Brier, the confusion-count metrics, MSE, MAE ... — for a block of resamples.

    The shared state, built once: every row's contribution to every state (the metric's
    own state aggregations, run with each row as its own group, so its null handling and
    filters apply as they do to the whole frame). A resample is then only its counts: a
    summed state is Σ count × contribution per stratum — one sparse product of the
    (resamples, units) count block with a (units, strata × states) matrix, the rows of a
    ``group=`` unit summed into one column at bind time — and a minimum or maximum runs
    over the rows drawn at least once (a constant one, such as the NaN flag of data
    without NaN, needs only to know whether any row was drawn). The metric's finalize
    then runs once, in Polars, on the (resample, stratum) table of states. The values
    equal the expression path on the repeated rows to rounding (the sums are added in a
    different order). Rows whose contribution is NaN or infinite leave the metric to the
    expression path (a count of 0 times a NaN is NaN, not 0).
    """

    def __init__(
        self,
        spec: MetricSpec,
        states: pl.DataFrame,
        stratum: np.ndarray,
        n_strata: int,
    ) -> None:
        from scipy import sparse

        self.spec = spec
        self.n_strata = n_strata
        self.dtypes = dict(states.schema)
        n = states.height
        sums: list[np.ndarray] = []  # one column of row values per summed quantity
        self.sum_of: dict[str, int] = {}  # summed state -> its column
        self.const: dict[str, tuple[Any, int]] = {}  # min/max state -> (value, presence col)
        self.general: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}  # values, valid, col
        self.kinds = {name: state.kind for name, state in spec.states.items()}
        for name, kind in self.kinds.items():
            col = states.get_column(name)
            if kind == "sum":
                self.sum_of[name] = len(sums)
                sums.append(col.cast(F64).fill_null(0.0).to_numpy())
                continue
            valid = col.is_not_null().to_numpy()
            distinct = col.drop_nulls().unique()
            presence = len(sums)
            sums.append(valid.astype(np.float64))
            if distinct.len() <= 1:
                self.const[name] = (distinct.to_list()[0] if distinct.len() else None, presence)
            else:
                values = col.cast(F64).fill_null(0.0).to_numpy()
                self.general[name] = (values, valid, presence)
        self.any_row = len(sums)  # the rows drawn, whatever their values (the group exists)
        sums.append(np.ones(n))
        k = len(sums)
        values = np.stack(sums, axis=1) if n else np.zeros((0, k))
        rows = np.repeat(np.arange(n), k)
        cols = (stratum[:, None] * k + np.arange(k)[None, :]).ravel() if n else rows
        self.row_matrix = sparse.csr_matrix((values.ravel(), (rows, cols)), shape=(n, n_strata * k))
        self.k = k
        self.stratum = stratum
        # the rows by stratum, where every stratum starts (every stratum has rows)
        order = np.argsort(stratum, kind="stable")
        self.by_stratum = order, np.searchsorted(stratum[order], np.arange(n_strata))
        self.matrix_t = self.row_matrix.T.tocsr()
        self.unit_of_row: np.ndarray | None = None

    @staticmethod
    def build(
        spec: MetricSpec, df: pl.DataFrame, stratum: np.ndarray, n_strata: int
    ) -> StateKernel | None:
        """The kernel of ``spec``, or None when its states or its data do not allow one."""
        if not spec.states or any(st.kind not in STATE_KINDS for st in spec.states.values()):
            return None
        aggs = [st.aggregate().alias(name) for name, st in spec.states.items()]
        try:
            states = (
                df.with_row_index(ROW_COL).group_by(ROW_COL).agg(aggs).sort(ROW_COL).drop(ROW_COL)
            )
        except Exception:  # noqa: BLE001 - let the expression path report it
            return None
        for col in states.iter_columns():
            if not (col.dtype.is_numeric() or col.dtype == pl.Boolean):
                return None
            if col.dtype.is_float() and not col.drop_nulls().is_finite().all():
                return None
        return StateKernel(spec, states, stratum, n_strata)

    def bind(self, unit_of_row: np.ndarray | None, n_units: int) -> None:
        """Read the counts of ``Design`` units: the rows of a unit summed into one column."""
        from scipy import sparse

        self.unit_of_row = unit_of_row
        if unit_of_row is None:
            return
        n = len(unit_of_row)
        onehot = sparse.csr_matrix((np.ones(n), (unit_of_row, np.arange(n))), shape=(n_units, n))
        self.matrix_t = (onehot @ self.row_matrix).T.tocsr()

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        """The states of every (resample, stratum): an array (resample, stratum, quantity)."""
        b = counts.shape[0]
        dense = np.ascontiguousarray(counts.T, dtype=np.float64)
        out = (self.matrix_t @ dense).T.reshape(b, self.n_strata, self.k)
        if self.general:
            out = np.concatenate([out, self._extrema(counts)], axis=2)
        return out

    def _extrema(self, counts: np.ndarray) -> np.ndarray:
        """The minima and maxima with several distinct values over the drawn rows."""
        rows = counts if self.unit_of_row is None else counts[:, self.unit_of_row]
        out = np.empty((rows.shape[0], self.n_strata, len(self.general)))
        order, starts = self.by_stratum
        if self.n_strata > 1:
            rows = rows[:, order]
        for j, (name, (values, valid, _)) in enumerate(self.general.items()):
            is_max = self.kinds[name] == "max"
            reduce = np.maximum if is_max else np.minimum
            if self.n_strata > 1:
                values, valid = values[order], valid[order]
            v = np.where(valid & (rows > 0), values, -np.inf if is_max else np.inf)
            if self.n_strata > 1:
                out[:, :, j] = reduce.reduceat(v, starts, axis=1)
            else:
                out[:, 0, j] = reduce.reduce(v, axis=1)
        return out

    def finish(self, states: np.ndarray) -> np.ndarray:
        """The metric of every (resample, stratum) from their states (NaN: undefined or
        no row drawn)."""
        r = states.shape[0]
        flat = states.reshape(r * self.n_strata, -1)
        present = flat[:, self.any_row] > 0
        columns: dict[str, pl.Series] = {}
        for name, kind in self.kinds.items():
            if kind == "sum":
                columns[name] = pl.Series(name, flat[:, self.sum_of[name]], dtype=F64)
                continue
            if name in self.const:
                value, presence = self.const[name]
                drawn = flat[:, presence] > 0
                columns[name] = pl.select(
                    pl.when(pl.Series(drawn))
                    .then(pl.lit(value, dtype=self.dtypes[name]))
                    .alias(name)
                ).to_series()
                continue
            presence = self.general[name][2]
            j = self.k + list(self.general).index(name)
            drawn = flat[:, presence] > 0
            col = pl.Series(name, np.where(drawn, flat[:, j], np.nan)).fill_nan(None)
            columns[name] = col.cast(self.dtypes[name])
        frame = pl.DataFrame(list(columns.values()))
        final = self.spec.finalize({name: pl.col(name) for name in self.kinds})
        value = frame.select(final.cast(F64).fill_null(float("nan"))).to_series().to_numpy()
        value = np.where(present, value, np.nan)
        return value.reshape(r, self.n_strata)


# ---------------------------------------------------------------------------------------
# The curve kernel (a metric of the sorted threshold state: AP, PR-AUC, KS ...)
# ---------------------------------------------------------------------------------------


class CurveKernel:
    """A registered metric finalized from the threshold state of :mod:`polars_eval.metrics.
    _curve` — one ``{t, tp, fp}`` point per distinct score, descending, with the weighted
    counts at or above it — for a block of resamples: average precision, PR-AUC, KS,
    max_f1, max_mcc, max_accuracy, ECE.

    The shared state, built once: the kept rows (no null, non-zero weight) sorted by
    (stratum, score descending), every row's positive and negative weight (``w·y`` and
    ``w·(1 − y)``, as the state's signed weight) and the tie blocks. A resample's state
    is then its counts gathered into that order, two cumulative sums read at the block
    ends, and the blocks where a row was drawn (a distinct score no drawn row has is no
    point, as on the repeated rows): no sort. The metric's own finalize then runs on
    those points in Polars, one list per (resample, stratum), so every such metric is
    exact to the definition it has in the package (to the rounding of the sums). Scores
    with a NaN leave the metric to the expression path.
    """

    def __init__(
        self,
        spec: MetricSpec,
        label: np.ndarray,
        score: np.ndarray,
        weight: np.ndarray,
        stratum: np.ndarray,
        n_strata: int,
    ) -> None:
        self.spec = spec
        self.n_strata = n_strata
        keep = ~(np.isnan(label) | np.isnan(score) | np.isnan(weight)) & (weight != 0.0)
        rows = np.flatnonzero(keep)
        order = _sort_order(stratum[rows], -score[rows], n_strata)
        rows = rows[order]
        self.order = rows
        self.index: np.ndarray | None = rows
        signed = weight[rows] * (2.0 * label[rows] - 1.0)
        self.w_pos = np.clip(signed, 0.0, None)
        self.w_neg = np.clip(-signed, 0.0, None)
        # no weights: integer sums (exact), the negatives as all rows minus the positives
        self.is_pos = (label[rows] == 1.0).astype(np.uint8) if np.all(weight == 1.0) else None
        s = score[rows]
        g = stratum[rows] if n_strata > 1 else np.zeros(len(rows), dtype=np.int64)
        m = len(rows)
        new = np.ones(m, dtype=bool)
        new[1:] = (s[1:] != s[:-1]) | (g[1:] != g[:-1])
        self.block_start = np.flatnonzero(new)
        self.block_end = np.append(self.block_start[1:], m) - 1
        self.singletons = len(self.block_start) == m
        self.t = s[self.block_start]
        self.block_stratum = g[self.block_start]
        # the cumulative sums run over all strata: subtract those before the stratum
        first = np.searchsorted(g, np.arange(n_strata), side="left")
        self.before = first[self.block_stratum] - 1  # -1: the first stratum, nothing before

    @staticmethod
    def build(
        item: Recognized, spec: MetricSpec, df: pl.DataFrame, stratum: np.ndarray, n_strata: int
    ) -> CurveKernel | None:
        """The kernel of a recognised metric whose one state is the threshold state of its
        own column arguments (no ``bins=``, no ``pos_label``), or None."""
        from polars_eval.metrics._curve import threshold_state

        if len(spec.states) != 1 or "pos_label" in item.args:
            return None
        (state,) = spec.states.values()
        label, score, weight = (item.args.get(k) for k in ("label", "score", "weight"))
        if state.kind != "list" or not all(
            isinstance(c, str) for c in (label, score, weight) if c is not None
        ):
            return None
        # compared serialized, as the planner shares states: the unweighted state is a
        # Python function of the rows, and ``meta.eq`` holds two calls' functions unequal
        try:
            same = (
                state.value.meta.serialize()
                == threshold_state(label, score, weight).meta.serialize()
            )
        except Exception:  # a state holding a function that does not serialize: not this one
            return None
        if not same:
            return None
        columns = _numeric_columns(df, label, score, weight)
        if columns is None or np.isnan(columns[1][~np.isnan(columns[2])]).any():
            return None
        return CurveKernel(spec, *columns, stratum, n_strata)

    def bind(self, unit_of_row: np.ndarray | None, n_units: int) -> None:
        """Read the counts of ``Design`` units (``unit_of_row``: see :class:`Design`)."""
        self.index = self.order if unit_of_row is None else unit_of_row[self.order]

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        """The metric of every (resample, stratum) for a (resamples, units) count array."""
        import pyarrow as pa

        b, k = counts.shape[0], len(self.t)
        mass = np.take(counts, self.index, axis=1)
        rows = np.zeros((b, mass.shape[1] + 1), dtype=np.int64)  # cumulative counts
        np.cumsum(mass, axis=1, out=rows[:, 1:])
        ends = rows[:, 1:] if self.singletons else np.take(rows, self.block_end + 1, axis=1)
        # a point where a row of its tie block was drawn (no ties: every row is a point)
        drawn = mass > 0 if self.singletons else ends > np.take(rows, self.block_start, axis=1)
        if self.is_pos is not None:
            masses = [mass * self.is_pos]
        else:
            masses = [mass * self.w_pos, mass * self.w_neg]
        cum = []
        for x in masses:
            c = np.zeros((b, mass.shape[1] + 1), dtype=x.dtype if x.dtype.kind == "f" else np.int64)
            np.cumsum(x, axis=1, out=c[:, 1:])
            cum.append(c)
        if self.is_pos is not None:
            cum.append(rows - cum[0])
        for i, c in enumerate(cum):
            at_end = c[:, 1:] if self.singletons else np.take(c, self.block_end + 1, axis=1)
            if self.n_strata > 1:  # the sums of the strata before
                at_end = at_end - np.take(c, self.before + 1, axis=1)
            cum[i] = at_end
        tp, fp = cum
        at = np.flatnonzero(drawn)  # the drawn points, (resample, point) flattened
        cells = b * self.n_strata
        offsets = np.zeros(cells + 1, dtype=np.int64)
        if cells == 1:
            offsets[1] = len(at)
        else:  # the lists of (resample, stratum) in order: points sorted by stratum
            key = (at // k) * self.n_strata + np.take(self.block_stratum, at % k)
            np.cumsum(np.bincount(key, minlength=cells), out=offsets[1:])
        t = np.take(self.t, at % k) if b > 1 else np.take(self.t, at)
        columns = [t, np.take(tp, at).astype(np.float64), np.take(fp, at).astype(np.float64)]
        points = pa.StructArray.from_arrays(columns, ["t", "tp", "fp"])
        lists = pa.LargeListArray.from_arrays(pa.array(offsets), points)
        frame = pl.from_arrow(pa.table({"c": lists}))
        final = self.spec.finalize({"c": pl.col("c")}).cast(F64).fill_null(float("nan"))
        value = frame.select(final).to_series().to_numpy()
        value = np.where(np.diff(offsets) > 0, value, np.nan)
        return value.reshape(b, self.n_strata)

    def finish(self, values: np.ndarray) -> np.ndarray:
        """The values of every (resample, stratum): the kernel's output already."""
        return values


def _numeric_columns(
    df: pl.DataFrame, label: str, score: str, weight: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Label, score and weight as float64 arrays (NaN: null), or None when the columns are
    not numeric or the labels not 0/1 (the expression path then reports or handles it)."""
    try:
        y = df.get_column(label).cast(F64).fill_null(float("nan")).to_numpy()
        s_col = df.get_column(score).cast(F64)
        w = (
            np.ones(df.height)
            if weight is None
            else df.get_column(weight).cast(F64).fill_null(float("nan")).to_numpy()
        )
    except Exception:  # noqa: BLE001 - let the expression path report it
        return None
    if not np.all(np.isin(y[~np.isnan(y)], (0.0, 1.0))):
        return None
    if s_col.null_count():
        w = np.where(s_col.is_null().to_numpy(), np.nan, w)
    return y, s_col.fill_null(0.0).to_numpy(), w


Kernel = AucKernel | StateKernel | CurveKernel
"""A kernel: called on a (resamples, units) count block, then ``finish`` on the stacked
outputs gives the (resample, stratum) values."""


def _kernel_for(
    item: Recognized, df: pl.DataFrame, stratum: np.ndarray, n_strata: int
) -> Kernel | None:
    """A kernel for a recognised metric: :class:`AucKernel` for ``auc``/``gini`` on plain
    numeric columns, :class:`CurveKernel` for the other metrics of the threshold state,
    :class:`StateKernel` for a spec of sums, minima and maxima; None: the expression path."""
    if item.info.extra.get("auc_kernel"):
        label, score, weight = (item.args.get(k) for k in ("label", "score", "weight"))
        if "pos_label" in item.args or not all(
            isinstance(c, str) for c in (label, score, weight) if c is not None
        ):
            return None
        columns = _numeric_columns(df, label, score, weight)
        if columns is None:
            return None
        return AucKernel(*columns, stratum, n_strata, gini=item.info.name == "gini")
    if item.info.spec is None:
        return None
    try:
        spec = item.info.spec(**item.args)
    except Exception:  # noqa: BLE001 - let the expression path report it
        return None
    if any(state.kind == "list" for state in spec.states.values()):
        return CurveKernel.build(item, spec, df, stratum, n_strata)
    return StateKernel.build(spec, df, stratum, n_strata)


# ---------------------------------------------------------------------------------------
# Replicates
# ---------------------------------------------------------------------------------------


def _threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def resampling(
    df: pl.DataFrame,
    items: Sequence[tuple[str, pl.Expr]],
    *,
    by: list[str],
    group: list[str],
    method: str,
    seed: int,
) -> tuple[Design, dict[str, Kernel], np.ndarray, pl.DataFrame]:
    """The count generator of a call, its kernels (bound to it), the stratum code of every
    row and the ``by`` key table."""
    stratum, by_keys = _codes(df, by, "__pe_s")
    n_strata = max(by_keys.height, 1)
    kernels: dict[str, Kernel] = {}
    for name, expr in items:
        found = recognize(expr)
        kernel = _kernel_for(found, df, stratum, n_strata) if found else None
        if kernel is not None:
            kernels[name] = kernel
    design, _, _ = make_design(df, by, group, method, seed, strata=(stratum, by_keys))
    for kernel in kernels.values():
        kernel.bind(design.unit_of_row, design.n_units)
    return design, kernels, stratum, by_keys


def replicates(
    df: pl.DataFrame,
    items: Sequence[tuple[str, pl.Expr]],
    *,
    by: list[str],
    group: list[str],
    n_resamples: int,
    method: str,
    seed: int,
    fast: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Metric values of every resample: (replicates [resample, *by, names], by keys).

    ``items`` are (output name, expression) pairs. ``fast=False`` forces the expression
    path for every metric (used by the tests to check the kernels).
    """
    design, kernels, _, by_keys = resampling(
        df, items, by=by, group=group, method=method, seed=seed
    )
    if not fast:
        kernels = {}
    generic = [expr.alias(name) for name, expr in items if name not in kernels]

    base = df.select(list(dict.fromkeys([*by, *_roots(generic)]))) if generic else None
    if base is not None and not base.width:  # e.g. pl.len(): keep the row count
        base = pl.DataFrame({ROW_COL: np.zeros(df.height, dtype=np.int8)})
    per_row = max(design.n_rows, 1)
    # the expression path materialises about CHUNK_ROWS repeated rows per chunk; the
    # kernels alone need no chunks, only blocks of about BLOCK_CELLS counts
    chunk = n_resamples if base is None else max(1, min(n_resamples, CHUNK_ROWS // per_row))
    block = max(1, min(chunk, BLOCK_CELLS // per_row))
    frames: list[pl.DataFrame] = []
    fast_values: dict[str, list[np.ndarray]] = {name: [] for name in kernels}
    rows = np.arange(design.n_rows, dtype=np.int64)

    def one(ids: range) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        counts = design.unit_counts_block(ids)
        values = {name: k(counts) for name, k in kernels.items()}
        return (design.row_counts(counts) if base is not None else None), values

    with ThreadPoolExecutor(max_workers=_threads()) as pool:
        for lo in range(0, n_resamples, chunk):
            hi = min(n_resamples, lo + chunk)
            blocks = [range(b, min(hi, b + block)) for b in range(lo, hi, block)]
            results = list(pool.map(one, blocks))
            for name in kernels:
                fast_values[name].extend(res[1][name] for res in results)
            if base is None:
                continue
            reps = [np.repeat(rows, c) for res in results for c in res[0]]  # type: ignore[union-attr]
            lengths = [len(x) for x in reps]
            long = base[pl.Series(np.concatenate(reps) if reps else [], dtype=pl.Int64)]
            long = long.with_columns(
                pl.Series(R_COL, np.repeat(np.arange(lo, hi, dtype=np.int64), lengths))
            )
            frames.append(long.group_by([R_COL, *by]).agg(generic))

    grid = pl.DataFrame({R_COL: np.arange(n_resamples, dtype=np.int64)})
    if by:
        grid = grid.join(by_keys, how="cross")
    if kernels:
        # kernel output for resample r is ordered by stratum code = by_keys row order
        width = by_keys.height if by else 1
        grid = grid.with_columns(
            pl.Series(
                name, kernels[name].finish(np.concatenate(vals))[:, :width].ravel(), dtype=F64
            )
            for name, vals in fast_values.items()
        )
    if frames:
        generic_df = pl.concat(frames)
        grid = grid.join(generic_df, on=[R_COL, *by], how="left", nulls_equal=True)
    names = [name for name, _ in items]
    return grid.select([R_COL, *by, *names]), by_keys


def _roots(exprs: Sequence[pl.Expr]) -> list[str]:
    out: list[str] = []
    for e in exprs:
        out += e.meta.root_names()
    return out


def estimates(
    df: pl.DataFrame, items: Sequence[tuple[str, pl.Expr]], by: list[str]
) -> pl.DataFrame:
    """The metrics on the original data, one row per ``by`` group."""
    exprs = [e.alias(n) for n, e in items]
    if by:
        return df.group_by(by).agg(exprs).sort(by, nulls_last=True)
    return df.select(exprs)


def percentile_summary(
    reps: pl.DataFrame, est: pl.DataFrame, names: Sequence[str], by: list[str], level: float
) -> pl.DataFrame:
    """Per (group, metric): estimate, percentile bounds, std and the undefined count."""
    alpha = 1.0 - level
    v = pl.col("__pe_v")
    defined = v.is_not_null() & ~v.is_nan()
    ok = v.filter(defined)
    n_total = reps.get_column(R_COL).n_unique() if reps.height else 0
    long = reps.unpivot(
        index=[R_COL, *by], on=list(names), variable_name="metric", value_name="__pe_v"
    )
    summary = long.group_by([*by, "metric"]).agg(
        ok.quantile(alpha / 2.0, interpolation="linear").alias("lower"),
        ok.quantile(1.0 - alpha / 2.0, interpolation="linear").alias("upper"),
        ok.std().alias("std"),
        (pl.lit(n_total, dtype=pl.Int64) - count_true(defined)).alias("n_undefined"),
    )
    est_long = (
        est.select([*by, *names])
        .unpivot(index=by, on=list(names), variable_name="metric", value_name="estimate")
        .with_columns(pl.col("estimate").cast(F64))
    )
    order = pl.DataFrame({"metric": list(names), "__pe_o": list(range(len(names)))})
    out = (
        est_long.join(summary, on=[*by, "metric"], how="left", nulls_equal=True)
        .join(order, on="metric")
        .sort([*by, "__pe_o"], nulls_last=True)
    )
    return out.select([*by, *SUMMARY_SCHEMA]).with_columns(pl.col("n_undefined").fill_null(n_total))


# ---------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------


def check_options(n_resamples: Any, level: Any, seed: Any, method: Any) -> None:
    """Raise InvalidParameterError for a bad bootstrap option (before anything runs)."""
    check_positive_int("n_resamples", n_resamples)
    check_level(level)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidParameterError(f"seed must be a non-negative integer; got {seed!r}")
    check_choice("method", method, METHODS)


def named_items(exprs: pl.Expr | Sequence[pl.Expr]) -> list[tuple[str, pl.Expr]]:
    """(output name, expression) pairs; the names must be distinct."""
    seq = [exprs] if isinstance(exprs, pl.Expr) else list(exprs)
    if not seq:
        raise InvalidParameterError("give at least one metric expression")
    items: list[tuple[str, pl.Expr]] = []
    for e in seq:
        if not isinstance(e, pl.Expr):
            raise InvalidParameterError(
                f"bootstrap takes polars expressions such as pe.auc('y', 'p'); got {type(e).__name__}"
            )
        items.append((e.meta.output_name(), e))
    names = [n for n, _ in items]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidParameterError(
            f"metric names must be distinct; {dupes} appear twice (use .alias() to rename)"
        )
    return items


def needed_columns(
    items: Sequence[tuple[str, pl.Expr]], by: list[str], group: list[str]
) -> list[str]:
    """The columns a bootstrap reads."""
    return list(dict.fromkeys([*by, *group, *_roots([e for _, e in items])]))


def prepare(
    frame: pl.DataFrame | pl.LazyFrame,
    items: Sequence[tuple[str, pl.Expr]],
    by: list[str],
    group: list[str],
    validate: bool,
) -> pl.DataFrame:
    """Validate (recognised metrics) and collect the needed columns."""
    lf = frame.lazy()
    schema = lf.collect_schema()
    for col in [*by, *group]:
        if col not in schema:
            raise DataValidationError(f'column "{col}" (argument by=/group=) not found')
    found = [f for f in (recognize(e) for _, e in items) if f is not None]
    if validate and found:
        validate_recognized(lf, found)
    cols = needed_columns(items, by, group)
    missing = [c for c in cols if c not in schema]
    if missing:
        available = ", ".join(list(schema)[:12])
        raise DataValidationError(
            f'column "{missing[0]}" not found; available columns: {available}'
        )
    if isinstance(frame, pl.DataFrame):
        return frame.select(cols)
    return lf.select(cols).collect()


def bootstrap(
    frame: pl.DataFrame | pl.LazyFrame,
    exprs: pl.Expr | Sequence[pl.Expr],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    by: str | Sequence[str] | None = None,
    group: str | Sequence[str] | None = None,
    method: str = "multinomial",
    validate: bool = True,
) -> pl.DataFrame | pl.LazyFrame:
    """Percentile bootstrap intervals of any metric expressions.

    ``exprs`` are ordinary aggregation expressions — ``pe.auc("y", "p")``,
    ``pe.logloss("y", "p", weight="w")``, ``pl.col("x").mean()`` — each with a distinct
    output name. Resample ``r`` gives every row (or every ``group=`` unit: a query, a
    series) a count: multinomial (n draws with replacement within each ``by`` group,
    the classical bootstrap; default) or Poisson(1) (``method="poisson"``). The counts
    of resample r come from ``numpy.random.default_rng([seed, r])`` alone, so the
    result is identical for the same seed on any number of threads, and all metrics
    share the same resamples. Expressions are evaluated unchanged on the repeated rows,
    a chunk of resamples per Polars query; registered metrics recognised structurally
    — ``pe.auc``, ``pe.average_precision``, ``pe.ks`` ... over rows sorted once, and
    the metrics made of sums (``pe.logloss``, ``pe.brier``, ``pe.accuracy``,
    ``pe.mse`` ...) — use O(n)-per-resample kernels of the counts instead. The counts of a seed are Poisson(1) draws made
    exactly multinomial (see ``polars_eval.stats.bootstrap``).

    Result, one row per metric (and ``by`` group): ``metric``, ``estimate`` (on the
    original data), ``lower`` and ``upper`` (the (1 − level)/2 and (1 + level)/2
    percentiles, linear interpolation), ``std`` (standard deviation of the replicates)
    and ``n_undefined`` (resamples where the metric was null or NaN, e.g. one class
    drawn: dropped from the percentiles). Recognised registry metrics are validated as
    in their own methods; other expressions are not. The columns the expressions read
    are collected once (at ``collect()`` on a LazyFrame, which returns a LazyFrame).

    References
    ----------
    Efron, B., Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13
    (percentile interval). Hanley, J. A., MacGibbon, B. (2006). Creating non-parametric
    bootstrap samples using Poisson frequencies. Computer Methods and Programs in
    Biomedicine 83(1).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0, 1, 0, 1, 0] * 25,
    ...                    "p": [0.1, 0.8, 0.4, 0.5, 0.9, 0.3, 0.6, 0.7] * 25})
    >>> out = df.eval.bootstrap([pe.auc("y", "p"), pe.brier("y", "p")], n_resamples=200)
    >>> out.columns
    ['metric', 'estimate', 'lower', 'upper', 'std', 'n_undefined']
    >>> out.select("metric", pl.col("estimate").round(3)).rows()
    [('auc', 0.812), ('brier', 0.176)]
    >>> out.select((pl.col("lower") < pl.col("estimate")) & (pl.col("estimate") < pl.col("upper"))).to_series().all()
    True
    """
    check_options(n_resamples, level, seed, method)
    items = named_items(exprs)
    by_cols = normalize_by(by)
    names = [n for n, _ in items]
    resampling = {"n_resamples": n_resamples, "method": method, "seed": seed}
    return run(
        frame,
        items,
        lambda reps, est: percentile_summary(reps, est, names, by_cols, level),
        SUMMARY_SCHEMA,
        (by_cols, normalize_by(group), validate, resampling),
    )


def run(
    frame: pl.DataFrame | pl.LazyFrame,
    items: Sequence[tuple[str, pl.Expr]],
    summarize: Callable[[pl.DataFrame, pl.DataFrame], pl.DataFrame],
    schema: dict[str, Any],
    options: tuple[list[str], list[str], bool, dict[str, Any]],
) -> pl.DataFrame | pl.LazyFrame:
    """Validate and collect the rows :func:`bootstrap` and ``paired_bootstrap`` read, then
    ``summarize(replicates, estimates)`` of ``items``; on a LazyFrame all of it at
    ``collect()``, the result's ``schema`` after the ``by`` columns. ``options``: the
    ``by`` and ``group`` columns, ``validate`` and the :func:`replicates` keywords
    (``n_resamples``, ``method``, ``seed``)."""
    by, group, validate, resampling = options

    def compute() -> pl.DataFrame:
        data = prepare(frame, items, by, group, validate)
        reps, _ = replicates(data, items, by=by, group=group, **resampling)
        return summarize(reps, estimates(data, items, by))

    if isinstance(frame, pl.LazyFrame):
        in_schema = frame.collect_schema()
        return pl.defer(compute, schema={b: in_schema[b] for b in by if b in in_schema} | schema)
    return compute()
