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
* **Fast path for ROC AUC and Gini.** An expression recognised as exactly
  ``pe.auc(label, score[, weight=])`` (or ``pe.gini``) — checked structurally with
  ``Expr.meta.eq`` — is evaluated by a numpy kernel instead: the rows are sorted by
  (stratum, score) once; each resample then costs one gather (its draws mapped to sorted
  positions), one bincount, one cumulative sum and one weighted sum (O(n), no sort).
  Its values equal those of the expression path to rounding (tested).
* Poisson(1) counts are drawn by inverting the CDF (exact, several times faster than
  ``Generator.poisson``).
* The estimate is the expression on the original data. Resamples where a metric is
  undefined (null or NaN) are dropped from the percentiles and counted in
  ``n_undefined``.

The rows a bootstrap needs (the metrics' input columns, ``by`` and ``group``) are
collected once; on a LazyFrame that happens at ``collect()`` time.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_eval._core.planner import normalize_by
from polars_eval._core.registry import REGISTRY, MetricInfo
from polars_eval._exprs import F64, check_choice, check_positive_int
from polars_eval._validate import (
    check_aggs,
    column_problems,
    raise_for_checks,
    resolve_checks,
    row_checks,
)
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.stats.intervals import check_level

METHODS = ("multinomial", "poisson")
R_COL = "__pe_resample"
ROW_COL = "__pe_row"
CHUNK_ROWS = 4_000_000
"""About how many repeated rows one chunk of the expression path materialises."""

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
    """The registered metric and column arguments an expression was built with, if any.

    Only the metric whose name is the expression's output name is tried, with the
    expression's root columns assigned to the metric's column inputs in every order; a
    candidate counts only when it is structurally equal (``meta.eq``).
    """
    try:
        name = expr.meta.output_name()
        base = expr.meta.undo_aliases()
        roots = list(dict.fromkeys(expr.meta.root_names()))
    except Exception:  # noqa: BLE001 - an expression without a single output name
        return None
    info = REGISTRY.get(name)
    if info is None or not roots or len(roots) > len(info.inputs):
        return None
    for slots in itertools.permutations(list(info.inputs), len(roots)):
        args = dict(zip(slots, roots, strict=True))
        try:
            candidate = info.fn(**args)
        except Exception:  # noqa: BLE001 - the arguments do not fit this metric
            continue
        if candidate.meta.undo_aliases().meta.eq(base):
            return Recognized(info, args)
    return None


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
    """How rows map to resampling units and units to ``by`` strata."""

    n_rows: int
    unit_of_row: np.ndarray | None  # None: every row is a unit
    n_units: int
    perm: np.ndarray  # units sorted by stratum (stable)
    start: np.ndarray  # for each sorted unit: the first sorted position of its stratum
    size: np.ndarray  # for each sorted unit: the number of units in its stratum
    n_strata: int
    method: str
    seed: int

    def resample(self, r: int) -> Resample:
        """Resample ``r``: a function of (seed, r) only."""
        rng = np.random.default_rng([self.seed, r])
        if self.method == "poisson":
            return Resample(self, counts=poisson_one(rng, self.n_units))
        if self.n_strata <= 1:
            dtype = np.int32 if self.n_units < 2**31 else np.int64
            draws = rng.integers(0, self.n_units, self.n_units, dtype=dtype)
            if self.unit_of_row is None:
                return Resample(self, draws=draws)
            return Resample(self, counts=np.bincount(draws, minlength=self.n_units))
        u = rng.random(self.n_units)
        target = self.start + np.floor(u * self.size).astype(np.int64)
        sorted_counts = np.bincount(target, minlength=self.n_units)
        units = np.empty(self.n_units, dtype=np.int64)
        units[self.perm] = sorted_counts
        return Resample(self, counts=units)

    def counts(self, r: int) -> np.ndarray:
        """The integer count of every row in resample ``r``."""
        return self.resample(r).counts


class Resample:
    """One resample: the drawn row indices (plain multinomial) and/or the count per row."""

    def __init__(
        self, design: Design, *, draws: np.ndarray | None = None, counts: np.ndarray | None = None
    ) -> None:
        self.design = design
        self.draws = draws  # rows drawn with replacement (when rows are drawn directly)
        self._units = counts  # count per unit

    @property
    def counts(self) -> np.ndarray:
        if self._units is None:
            assert self.draws is not None
            self._units = np.bincount(self.draws, minlength=self.design.n_units)
        if self.design.unit_of_row is not None:
            return self._units[self.design.unit_of_row]
        return self._units


POISSON_CDF = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(40)])
"""P(X <= k) for X ~ Poisson(1), k = 0..39 (the rest has probability < 1e-47)."""


def poisson_one(rng: np.random.Generator, n: int) -> np.ndarray:
    """n Poisson(1) draws by inversion of the CDF: X = #{k : u >= P(X <= k)}.

    Exact, and several times faster than ``Generator.poisson`` for λ = 1: three vectorised
    comparisons decide 98 % of the draws, a binary search the rest.
    """
    u = rng.random(n)
    k = (u >= POISSON_CDF[0]).astype(np.int64)
    k += u >= POISSON_CDF[1]
    k += u >= POISSON_CDF[2]
    tail = np.flatnonzero(u >= POISSON_CDF[3])
    k[tail] = np.searchsorted(POISSON_CDF, u[tail], side="right")
    return k


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
    df: pl.DataFrame, by: list[str], group: list[str], method: str, seed: int
) -> tuple[Design, np.ndarray, pl.DataFrame]:
    """The design, the stratum code of every row and the table of ``by`` keys (code order)."""
    stratum_of_row, by_keys = _codes(df, by, "__pe_s")
    n_strata = max(by_keys.height, 1)
    if group:
        unit_of_row, unit_keys = _codes(df, [*by, *group], "__pe_u")
        n_units = unit_keys.height
        unit_stratum = np.zeros(n_units, dtype=np.int64)
        unit_stratum[unit_of_row] = stratum_of_row
    else:
        unit_of_row = None
        n_units = df.height
        unit_stratum = stratum_of_row
    perm = np.argsort(unit_stratum, kind="stable")
    sizes = np.bincount(unit_stratum, minlength=n_strata)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    sorted_stratum = unit_stratum[perm]
    design = Design(
        n_rows=df.height,
        unit_of_row=unit_of_row,
        n_units=n_units,
        perm=perm,
        start=starts[sorted_stratum],
        size=sizes[sorted_stratum],
        n_strata=n_strata,
        method=method,
        seed=seed,
    )
    return design, stratum_of_row, by_keys


# ---------------------------------------------------------------------------------------
# The AUC kernel (numpy: O(n) per resample after one sort)
# ---------------------------------------------------------------------------------------


class AucKernel:
    """Weighted ROC AUC per stratum for many count vectors, the rows sorted once.

    numpy rather than Polars: a resample is two gathers, one cumulative sum and one dot
    product over index arrays prepared once, which Polars cannot share between the
    thousand weighted evaluations of one expression.

    With the rows sorted ascending by (stratum, score) and F the cumulative mass of the
    negatives in that order (F[0] = 0), a positive row in the tie block [a, e) of stratum
    g beats the negatives below its block and ties half of its block: its credit is
    c (F[neg before a] + F[neg before e]) / 2 − c F[neg before stratum g];
    AUC_g = Σ credits / (P_g N_g). Labels must be 0/1 (else the expression path is used).
    """

    def __init__(
        self,
        label: np.ndarray,
        score: np.ndarray,
        weight: np.ndarray,
        stratum: np.ndarray,
        n_strata: int,
    ) -> None:
        keep = ~(np.isnan(label) | np.isnan(weight)) & (weight != 0.0)
        self.n_rows = len(keep)
        rows = np.flatnonzero(keep)
        s, g = score[rows], stratum[rows]
        order = np.lexsort((s, g))
        rows = rows[order]
        s, g = s[order], g[order]
        is_pos = label[rows] == 1.0
        m = len(rows)
        new = np.ones(m + 1, dtype=bool)  # new[k]: a tie block starts at k (and at m)
        if m > 1:
            new[1:m] = (s[1:] != s[:-1]) | (g[1:] != g[:-1])
        starts = np.flatnonzero(new)
        block = np.cumsum(new[:m]) - 1  # block id of every sorted row
        neg_before = np.concatenate([[0], np.cumsum(~is_pos)])  # negatives in [0, k)
        pos = np.flatnonzero(is_pos)
        self.ia = neg_before[starts[block[pos]]]
        self.ie = neg_before[starts[block[pos] + 1]]
        self.ties = not np.array_equal(self.ia, self.ie)
        self.neg_rows, self.pos_rows = rows[~is_pos], rows[pos]
        # slot[row]: the row's place in [negatives sorted, positives sorted, unused]
        n_neg = len(self.neg_rows)
        self.slot = np.full(self.n_rows, m, dtype=np.int64 if m >= 2**31 else np.int32)
        self.slot[self.neg_rows] = np.arange(n_neg)
        self.slot[self.pos_rows] = np.arange(n_neg, m)
        weighted = not np.all(weight[rows] == 1.0)
        self.w_neg = weight[self.neg_rows] if weighted else None
        self.w_pos = weight[self.pos_rows] if weighted else None
        self.n_strata = n_strata
        self.g_pos = g[pos]
        sizes = np.bincount(g, minlength=n_strata)
        gstart = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.f_start = neg_before[gstart]
        self.f_end = neg_before[gstart + sizes]
        nan_strata = np.zeros(n_strata, dtype=bool)
        if m:
            nan_strata[np.unique(g[np.isnan(s)])] = True
        self.nan_strata = nan_strata

    def __call__(self, sample: Resample) -> np.ndarray:
        if sample.draws is not None:
            # the draws land directly in sorted order: one gather and one bincount, no
            # gather of counts (rows the metric ignores go to the last, unused bin)
            n_neg = len(self.neg_rows)
            counts = np.bincount(self.slot[sample.draws], minlength=n_neg + len(self.pos_rows) + 1)
            return self._auc(counts[:n_neg], counts[n_neg : n_neg + len(self.pos_rows)])
        counts = sample.counts
        return self._auc(counts[self.neg_rows], counts[self.pos_rows])

    def _auc(self, cn: np.ndarray, cp: np.ndarray) -> np.ndarray:
        if self.w_neg is not None:
            cn = cn * self.w_neg
        f = np.empty(len(cn) + 1)
        f[0] = 0.0
        np.cumsum(cn, out=f[1:], dtype=np.float64)
        cp = cp.astype(np.float64)
        if self.w_pos is not None:
            cp *= self.w_pos
        below = f[self.ia]
        if self.ties:
            below += f[self.ie]
            below *= 0.5
        if self.n_strata == 1:
            p = np.array([cp.sum()])
            # not ``cp @ below``: BLAS ddot with its threads is far slower on this size
            num = np.array([(cp * below).sum()])
        else:
            p = np.bincount(self.g_pos, weights=cp, minlength=self.n_strata)
            num = np.bincount(self.g_pos, weights=cp * below, minlength=self.n_strata)
        num -= p * f[self.f_start]
        n = f[self.f_end] - f[self.f_start]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where((p > 0.0) & (n > 0.0), num / (p * n), np.nan)
        out[self.nan_strata] = np.nan
        return out


def _kernel_for(
    item: Recognized, df: pl.DataFrame, stratum: np.ndarray, n_strata: int
) -> Callable[[Resample], np.ndarray] | None:
    """A numpy kernel for a recognised ``auc``/``gini`` on plain numeric columns."""
    if item.info.name not in ("auc", "gini") or item.args.get("pos_label") is not None:
        return None
    label, score = item.args.get("label"), item.args.get("score")
    weight = item.args.get("weight")
    cols = [c for c in (label, score, weight) if c is not None]
    if not all(isinstance(c, str) for c in cols):
        return None
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
    s = s_col.fill_null(0.0).to_numpy()
    kernel = AucKernel(y, s, w, stratum, n_strata)
    if item.info.name == "gini":
        return lambda sample: 2.0 * kernel(sample) - 1.0
    return kernel


# ---------------------------------------------------------------------------------------
# Replicates
# ---------------------------------------------------------------------------------------


def _threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


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
    path for every metric (used by the tests to check the AUC kernel).
    """
    design, stratum, by_keys = make_design(df, by, group, method, seed)
    kernels: dict[str, Callable[[Resample], np.ndarray]] = {}
    generic: list[pl.Expr] = []
    for name, expr in items:
        found = recognize(expr) if fast else None
        kernel = _kernel_for(found, df, stratum, design.n_strata) if found else None
        if kernel is not None:
            kernels[name] = kernel
        else:
            generic.append(expr.alias(name))

    base = df.select(list(dict.fromkeys([*by, *_roots(generic)]))) if generic else None
    if base is not None and not base.width:  # e.g. pl.len(): keep the row count
        base = pl.DataFrame({ROW_COL: np.zeros(df.height, dtype=np.int8)})
    per_row = max(design.n_rows, 1)
    chunk = max(1, min(n_resamples, CHUNK_ROWS // per_row))
    frames: list[pl.DataFrame] = []
    fast_values: dict[str, list[np.ndarray]] = {name: [] for name in kernels}
    rows = np.arange(design.n_rows, dtype=np.int64)

    def one(r: int) -> tuple[np.ndarray | None, dict[str, np.ndarray]]:
        sample = design.resample(r)
        values = {name: k(sample) for name, k in kernels.items()}
        return (sample.counts if base is not None else None), values

    with ThreadPoolExecutor(max_workers=_threads()) as pool:
        for lo in range(0, n_resamples, chunk):
            ids = range(lo, min(n_resamples, lo + chunk))
            results = list(pool.map(one, ids))
            for name in kernels:
                fast_values[name].extend(res[1][name] for res in results)
            if base is None:
                continue
            reps = [np.repeat(rows, res[0]) for res in results]
            lengths = [len(x) for x in reps]
            long = base[pl.Series(np.concatenate(reps) if reps else [], dtype=pl.Int64)]
            long = long.with_columns(
                pl.Series(R_COL, np.repeat(np.asarray(ids, dtype=np.int64), lengths))
            )
            frames.append(long.group_by([R_COL, *by]).agg(generic))

    grid = pl.DataFrame({R_COL: np.arange(n_resamples, dtype=np.int64)})
    if by:
        grid = grid.join(by_keys, how="cross")
    if kernels:
        # kernel output for resample r is ordered by stratum code = by_keys row order
        width = by_keys.height if by else 1
        grid = grid.with_columns(
            pl.Series(name, np.stack(vals).reshape(n_resamples, -1)[:, :width].ravel(), dtype=F64)
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
    ok = v.filter(v.is_not_null() & ~v.is_nan())
    n_total = reps.get_column(R_COL).n_unique() if reps.height else 0
    long = reps.unpivot(
        index=[R_COL, *by], on=list(names), variable_name="metric", value_name="__pe_v"
    )
    summary = long.group_by([*by, "metric"]).agg(
        ok.quantile(alpha / 2.0, interpolation="linear").alias("lower"),
        ok.quantile(1.0 - alpha / 2.0, interpolation="linear").alias("upper"),
        ok.std().alias("std"),
        (pl.lit(n_total, dtype=pl.Int64) - ok.count().cast(pl.Int64)).alias("n_undefined"),
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
    """Percentile bootstrap of metric expressions; see ``df.eval.bootstrap``."""
    check_options(n_resamples, level, seed, method)
    items = named_items(exprs)
    by_cols, group_cols = normalize_by(by), normalize_by(group)

    def compute(data: pl.DataFrame) -> pl.DataFrame:
        reps, _ = replicates(
            data,
            items,
            by=by_cols,
            group=group_cols,
            n_resamples=n_resamples,
            method=method,
            seed=seed,
        )
        est = estimates(data, items, by_cols)
        return percentile_summary(reps, est, [n for n, _ in items], by_cols, level)

    if isinstance(frame, pl.LazyFrame):
        schema = frame.collect_schema()
        out_schema = {b: schema[b] for b in by_cols if b in schema} | SUMMARY_SCHEMA
        return pl.defer(
            lambda: compute(prepare(frame, items, by_cols, group_cols, validate)),
            schema=out_schema,
        )
    return compute(prepare(frame, items, by_cols, group_cols, validate))
