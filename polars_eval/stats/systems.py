"""Comparing systems on the same units (SPEC §14): paired tests, corrections, the table.

The numbers of ``df.eval.compare``, from the per-unit values of every system (one value
per query, series, row or ``unit=`` group and metric; :mod:`polars_eval.stats.compare_tasks`
computes them with each task's own table). For each (``by`` group, metric, system other
than the baseline) the paired differences d = value − baseline value over the units where
both are defined give:

* ``"t"``: Student's paired t-test, two-sided, as ``scipy.stats.ttest_rel``; the interval
  is mean(d) ± t_{n−1, (1+level)/2} · s / √n (Student 1908).
* ``"randomization"``: Fisher's paired randomization test: the signs of the differences
  flipped at random ``n_resamples`` times; p = (1 + b) / (1 + n_resamples), b the flips
  whose |mean| ≥ the observed |mean| (Fisher 1935; Smucker, Allan & Carterette 2007).
* ``"bootstrap"``: the paired bootstrap of mean(d) (units resampled with replacement);
  percentile interval, p = twice the smaller share of resampled means on either side of
  0, at most 1 (Efron & Tibshirani 1993, §16.4; Sakai 2006).
* ``"wilcoxon"``: the signed-rank test, ``scipy.stats.wilcoxon(d)`` with its defaults.
* ``"sign"``: the exact binomial test of wins against losses (ties left out), two-sided.

The interval of ``"randomization"``, ``"wilcoxon"`` and ``"sign"`` is the paired
bootstrap's percentile interval of mean(d) (the same resamples as ``test="bootstrap"``):
those tests assume no normal distribution, nor does that interval. Identical systems
(every d = 0) get p = 1 and the interval [0, 0] from every test.

The randomness is numpy's ``default_rng(seed)``, drawn afresh for each comparison in
blocks of a fixed size, and the means are numpy sums (no BLAS): the same numbers for the
same seed whatever the thread count. The p-values are then adjusted over the systems
compared on one metric within one ``by`` group (Holm 1979, Bonferroni, Benjamini &
Hochberg 1995), as ``statsmodels.stats.multitest.multipletests``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_eval._exprs import count_true
from polars_eval._params import check_choice, check_level, check_positive_int
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.stats.intervals import scipy_stats

TESTS = ("t", "randomization", "bootstrap", "wilcoxon", "sign")
"""The tests of per-unit values."""
CORRECTIONS = ("holm", "bonferroni", "bh", None)
MISSING = (None, "zero", "drop")

F64 = pl.Float64
I64 = pl.Int64
SCHEMA: dict[str, Any] = {
    "metric": pl.String,
    "system": pl.String,
    "baseline": pl.String,
    "value": F64,
    "baseline_value": F64,
    "difference": F64,
    "lower": F64,
    "upper": F64,
    "p_value": F64,
    "p_adjusted": F64,
    "wins": I64,
    "ties": I64,
    "losses": I64,
    "n_units": I64,
}
"""The columns of the compare table (after the ``by`` columns), SPEC §14."""

TIE_TOLERANCE = 1e-12
"""Two per-unit values within this share of the larger are a tie (difference 0): a metric
computed twice by different sums (NDCG of two rankings that put the relevant items at the
same ranks) may differ in its last bit, which must not decide a win, the sign test or
Wilcoxon's zeros."""
BLOCK_CELLS = 2_000_000
"""Resamples are drawn in blocks of about this many (resample, unit) cells."""
TOLERANCE = 1e-12
"""A resampled |Σ d| counts as at least the observed one down to this share of Σ |d|: the
flips equal to the observed one in exact arithmetic (the identity, the all-negative flip,
flips of zero or repeated differences) must count whatever the rounding of their sums."""


def check_options(
    test: Any, correction: Any, level: Any, n_resamples: Any, seed: Any, missing: Any
) -> None:
    """Raise InvalidParameterError for a bad option of ``compare`` (before anything runs)."""
    check_choice("test", test, (*TESTS, "delong"))
    check_choice("correction", correction, CORRECTIONS)
    check_level(level)
    check_positive_int("n_resamples", n_resamples)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidParameterError(f"seed must be a non-negative integer; got {seed!r}")
    check_choice("missing", missing, MISSING)


# ---------------------------------------------------------------------------------------
# The tests of one comparison (numpy over the n paired differences)
# ---------------------------------------------------------------------------------------


def _blocks(n_resamples: int, n: int) -> list[int]:
    size = max(1, min(n_resamples, BLOCK_CELLS // max(n, 1)))
    return [min(size, n_resamples - lo) for lo in range(0, n_resamples, size)]


def bootstrap_means(d: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """The means of ``n_resamples`` resamples of ``d`` drawn with replacement.

    Vectorised numpy: one block of resamples at a time as a (resamples × n) index matrix
    (a Python loop over resamples would cost a call each)."""
    rng = np.random.default_rng(seed)
    n = d.size
    out = [d[rng.integers(0, n, size=(size, n))].mean(axis=1) for size in _blocks(n_resamples, n)]
    return np.concatenate(out)


def randomization_p(d: np.ndarray, n_resamples: int, seed: int) -> float:
    """Fisher's paired randomization test: p = (1 + b) / (1 + n_resamples).

    Each resample flips the sign of every difference with probability 1/2 (random bits,
    eight a byte); b counts those whose |Σ ±dᵢ| reaches the observed |Σ dᵢ| (the means
    share the denominator n), down to :data:`TOLERANCE`."""
    rng = np.random.default_rng(seed)
    n = d.size
    observed = abs(d.sum())
    slack = TOLERANCE * float(np.abs(d).sum())
    b = 0
    for size in _blocks(n_resamples, n):
        bits = np.unpackbits(
            rng.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8), axis=1, count=n
        )
        flipped = np.where(bits.astype(bool), d, -d).sum(axis=1)
        b += int(np.count_nonzero(np.abs(flipped) >= observed - slack))
    return (1.0 + b) / (1.0 + n_resamples)


def percentile_interval(means: np.ndarray, level: float) -> tuple[float, float]:
    """The (1 − level)/2 and (1 + level)/2 percentiles (linear interpolation)."""
    lo, hi = np.quantile(means, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)


def bootstrap_p(means: np.ndarray) -> float:
    """Twice the smaller share of resampled means on either side of 0, at most 1."""
    below = float(np.mean(means <= 0.0))
    above = float(np.mean(means >= 0.0))
    return min(1.0, 2.0 * min(below, above))


def wilcoxon_p(d: np.ndarray) -> float:
    """``scipy.stats.wilcoxon(d)`` with its defaults (zeros dropped, "wilcox"); 1 when
    every difference is 0 (scipy warns and divides 0 by 0 on the way there)."""
    if not np.any(d != 0.0):
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(scipy_stats().wilcoxon(d).pvalue)


def sign_p(d: np.ndarray) -> float:
    """Exact two-sided binomial test of the positive against the negative differences
    (zeros left out); 1 without a nonzero difference."""
    wins = int(np.count_nonzero(d > 0.0))
    decided = wins + int(np.count_nonzero(d < 0.0))
    if decided == 0:
        return 1.0
    return float(scipy_stats().binomtest(wins, decided, 0.5).pvalue)


def t_test(
    n: np.ndarray, mean: np.ndarray, sd: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paired t-test from the count, mean and sample standard deviation of the
    differences, vectorised over comparisons: (lower, upper, p), NaN where n < 2.

    t = mean / (sd / √n), p = 2 P(T_{n−1} ≥ |t|), as ``scipy.stats.ttest_rel``; with
    sd = 0: p = 1 when the mean is 0 too (identical systems, where scipy gives NaN) and 0
    otherwise (scipy's t = ±inf), the interval [mean, mean]."""
    n = np.asarray(n, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    stats = scipy_stats()
    ok = n >= 2.0
    dof = np.where(ok, n - 1.0, 1.0)
    se = np.where(ok, sd, 0.0) / np.sqrt(np.where(ok, n, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0.0, mean / np.where(se > 0.0, se, 1.0), np.inf * np.sign(mean))
    p = np.where(np.isnan(t), 1.0, 2.0 * stats.t.sf(np.abs(np.nan_to_num(t, nan=0.0)), dof))
    p = np.minimum(p, 1.0)
    half = stats.t.ppf((1.0 + level) / 2.0, dof) * se
    nan = np.full_like(mean, np.nan)
    return (
        np.where(ok, mean - half, nan),
        np.where(ok, mean + half, nan),
        np.where(ok, p, nan),
    )


def resampled_test(
    d: np.ndarray, test: str, level: float, n_resamples: int, seed: int
) -> tuple[float, float, float]:
    """(lower, upper, p) of a test other than ``"t"`` on the differences ``d`` (n ≥ 1)."""
    means = bootstrap_means(d, n_resamples, seed)
    lower, upper = percentile_interval(means, level)
    if test == "bootstrap":
        p = bootstrap_p(means)
    elif test == "randomization":
        p = randomization_p(d, n_resamples, seed)
    elif test == "wilcoxon":
        p = wilcoxon_p(d)
    else:
        p = sign_p(d)
    return lower, upper, p


# ---------------------------------------------------------------------------------------
# Corrections for multiple comparisons
# ---------------------------------------------------------------------------------------


def adjust(p: np.ndarray, method: str | None) -> np.ndarray:
    """Adjusted p-values of one family (NaN entries left out of it and kept NaN).

    ``"bonferroni"``: min(1, m p); ``"holm"``: the step-down maxima of min(1, (m − i + 1)
    p₍ᵢ₎) (Holm 1979); ``"bh"``: the step-up minima of min(1, m p₍ᵢ₎ / i) (Benjamini &
    Hochberg 1995); None: p. Equal to ``statsmodels.stats.multitest.multipletests``
    (methods ``"bonferroni"``, ``"holm"``, ``"fdr_bh"``)."""
    p = np.asarray(p, dtype=np.float64)
    out = p.copy()
    keep = ~np.isnan(p)
    q = p[keep]
    m = q.size
    if method is None or m == 0:
        return out
    if method == "bonferroni":
        out[keep] = np.minimum(1.0, q * m)
        return out
    order = np.argsort(q, kind="stable")
    ranked = q[order]
    i = np.arange(1, m + 1, dtype=np.float64)
    if method == "holm":
        steps = np.maximum.accumulate(np.minimum(1.0, (m - i + 1.0) * ranked))
    else:  # bh
        steps = np.minimum.accumulate(np.minimum(1.0, ranked * m / i)[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = steps
    out[keep] = adjusted
    return out


# ---------------------------------------------------------------------------------------
# The table from per-unit values
# ---------------------------------------------------------------------------------------

PRESENT = "__pe_present"
VALUE, BASE, DIFF = "__pe_v", "__pe_b", "__pe_d"
ORDER = "__pe_order"
POSITION = "__pe_position"
ROW_COLUMNS = ("value", "baseline_value", "difference", "lower", "upper", "p_value", "wins",
               "ties", "losses", "n_units")  # fmt: skip


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def align_units(
    per_unit: pl.DataFrame,
    *,
    by: list[str],
    system: str,
    units: list[str],
    systems: Sequence[Any],
    metrics: Sequence[str],
    missing: str | None,
    unit_name: str,
) -> pl.DataFrame:
    """The per-unit values with the same units for every system of a ``by`` group.

    A unit that some system has and another lacks (a query missing from one run) is an
    error naming the system and the count (BAD_INPUTS row 57), unless ``missing="zero"``
    (the lacking system scores 0 there on every metric, as trec_eval's ``-c``) or
    ``missing="drop"`` (only the units every system has)."""
    keys = [*by, *units]
    have = per_unit.group_by(keys).agg(pl.len().alias("__pe_k"))
    complete = have.height == 0 or bool((have.get_column("__pe_k") == len(systems)).all())
    if complete:
        return per_unit
    if missing == "drop":
        full = have.filter(pl.col("__pe_k") == len(systems)).select(keys)
        return per_unit.join(full, on=keys, how="semi", nulls_equal=True)
    grid = have.select(keys).join(
        pl.DataFrame({system: list(systems)}, schema={system: per_unit.schema[system]}),
        how="cross",
    )
    if missing is None:
        lacking = (
            grid.join(per_unit.select([*keys, system]), on=[*keys, system], how="anti",
                      nulls_equal=True)
            .group_by(system).agg(pl.len().alias("n"))
        )  # fmt: skip
        counts = dict(lacking.select(system, "n").iter_rows())
        first = next(s for s in systems if s in counts)
        total = have.height
        raise DataValidationError(
            f"system {_show(first)} lacks {counts[first]} of the {total} {unit_name} that "
            f"the other systems have ({len(counts)} of {len(systems)} systems lack some); "
            'pass missing="zero" (a missing unit scores 0, as trec_eval -c) or '
            'missing="drop" (only the units every system has)'
        )
    flagged = per_unit.with_columns(pl.lit(True).alias(PRESENT))
    out = grid.join(flagged, on=[*keys, system], how="left", nulls_equal=True)
    return out.with_columns(
        pl.when(pl.col(PRESENT).is_null()).then(0.0).otherwise(pl.col(m)).alias(m) for m in metrics
    ).drop(PRESENT)


def _direction_counts(hib: bool | None) -> list[pl.Expr]:
    d = pl.col(DIFF)
    tie = count_true(d == 0.0).cast(I64).alias("ties")
    if hib is None:  # no better direction: wins and losses are undefined
        return [pl.lit(None, I64).alias("wins"), tie, pl.lit(None, I64).alias("losses")]
    better, worse = (d > 0.0, d < 0.0) if hib else (d < 0.0, d > 0.0)
    return [
        count_true(better).cast(I64).alias("wins"),
        tie,
        count_true(worse).cast(I64).alias("losses"),
    ]


def paired_differences(
    per_unit: pl.DataFrame,
    *,
    by: list[str],
    system: str,
    units: list[str],
    baseline: Any,
    metric: str,
) -> pl.DataFrame:
    """The paired per-unit values of one metric: each system but the baseline against the
    baseline, unit by unit (``by``, ``system``, ``units``, the value, the baseline's value
    and their difference d, 0 within :data:`TIE_TOLERANCE`); units where either value is
    undefined (null or NaN) are left out. What every test and count of :func:`unit_table`
    reads, and what a report draws."""
    keys = [*by, *units]
    base = per_unit.filter(pl.col(system) == baseline).select(*keys, pl.col(metric).alias(BASE))
    rows = per_unit.filter(pl.col(system) != baseline).select(
        *by, system, *units, pl.col(metric).alias(VALUE)
    )
    pairs = rows.join(base, on=keys, how="inner", nulls_equal=True).filter(
        pl.col(VALUE).is_not_null()
        & pl.col(BASE).is_not_null()
        & pl.col(VALUE).is_not_nan()
        & pl.col(BASE).is_not_nan()
    )
    raw = pl.col(VALUE) - pl.col(BASE)
    scale = pl.max_horizontal(pl.col(VALUE).abs(), pl.col(BASE).abs())
    tie = raw.abs() <= TIE_TOLERANCE * scale
    return pairs.with_columns(pl.when(tie).then(0.0).otherwise(raw).alias(DIFF))


UNIT_COLUMNS = ("metric", "system", "value", "baseline_value", "difference")
"""The columns of :func:`unit_differences` besides the ``by`` and unit keys."""


def unit_differences(
    per_unit: pl.DataFrame,
    *,
    by: list[str],
    system: str,
    units: list[str],
    systems: Sequence[Any],
    baseline: Any,
    metrics: Sequence[str],
    unit_names: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """The per-unit differences the compare table was computed from, one row per (``by``
    group, metric, system other than the baseline, unit): ``by``, ``metric``, ``system``
    (a string), the unit keys (renamed by ``unit_names``), ``value``, ``baseline_value``
    and ``difference`` (as :func:`paired_differences`), sorted by metric (in ``metrics``'
    order), system (in ``systems``' order) and difference."""
    names = dict(unit_names or {})
    parts = []
    for position, metric in enumerate(metrics):
        pairs = paired_differences(
            per_unit, by=by, system=system, units=units, baseline=baseline, metric=metric
        )
        parts.append(
            pairs.select(
                *by,
                pl.lit(metric, pl.String).alias("metric"),
                pl.lit(position, I64).alias(POSITION),
                pl.col(system).cast(pl.String).alias("__pe_system"),
                *[pl.col(u).alias(names.get(u, u)) for u in units],
                pl.col(VALUE).cast(F64).alias("value"),
                pl.col(BASE).cast(F64).alias("baseline_value"),
                pl.col(DIFF).cast(F64).alias("difference"),
            )
        )
    order = pl.DataFrame(
        {"__pe_system": [str(s) for s in systems], ORDER: list(range(len(systems)))},
        schema={"__pe_system": pl.String, ORDER: I64},
    )
    out = pl.concat(parts, how="vertical_relaxed").join(order, on="__pe_system", how="left")
    return (
        out.sort([*by, POSITION, ORDER, "difference"], nulls_last=True)
        .rename({"__pe_system": "system"})
        .select(*by, "metric", "system", *[names.get(u, u) for u in units],
                "value", "baseline_value", "difference")
    )  # fmt: skip


def unit_table(
    per_unit: pl.DataFrame,
    *,
    by: list[str],
    system: str,
    units: list[str],
    baseline: Any,
    metrics: Sequence[tuple[int, str]],
    directions: Mapping[str, bool | None],
    test: str,
    level: float,
    n_resamples: int,
    seed: int,
) -> pl.DataFrame:
    """The compare rows (before :func:`finish`) of metrics that are means over units.

    ``per_unit`` holds ``by``, ``system``, ``units`` and one column per metric (``metrics``:
    (position in the table, column) pairs), the units aligned (:func:`align_units`).
    Undefined (null or NaN) values leave their unit out of that pair's test; ``n_units``
    counts the units that remain, and ``value`` / ``baseline_value`` are the means over
    them (so ``difference`` is mean(d)). Every system but the baseline gets a row per
    metric and ``by`` group, null where no unit remains."""
    others = per_unit.filter(pl.col(system) != baseline).select([*by, system]).unique()
    frames = []
    for position, metric in metrics:
        pairs = paired_differences(
            per_unit, by=by, system=system, units=units, baseline=baseline, metric=metric
        )
        aggs = [
            pl.len().cast(I64).alias("n_units"),
            pl.col(VALUE).mean().alias("value"),
            pl.col(BASE).mean().alias("baseline_value"),
            pl.col(DIFF).mean().alias("difference"),
            pl.col(DIFF).std().alias("__pe_sd"),
            *_direction_counts(directions.get(metric)),
        ]
        if test != "t":
            aggs.append(pl.col(DIFF).alias("__pe_ds"))
        stats = pairs.group_by([*by, system]).agg(aggs)
        table = others.join(stats, on=[*by, system], how="left", nulls_equal=True).with_columns(
            pl.col("n_units").fill_null(0),
            pl.lit(metric).alias("metric"),
            pl.lit(position, I64).alias(POSITION),
        )
        frames.append(_tested(table, test, level, n_resamples, seed))
    return pl.concat(frames, how="vertical_relaxed")


def finish(
    parts: Sequence[pl.DataFrame],
    *,
    by: list[str],
    by_schema: Mapping[str, Any],
    system: str,
    systems: Sequence[Any],
    baseline: Any,
    correction: str | None,
) -> pl.DataFrame:
    """The compare table from its rows: sorted by the ``by`` groups, then the metrics in
    the table's order, then the systems in their order; the systems and the baseline as
    strings; ``p_adjusted`` per (``by`` group, metric)."""
    parts = [p for p in parts if p.height]
    if not parts:
        return empty_table(by_schema)
    order = pl.DataFrame(
        {system: list(systems), ORDER: list(range(len(systems)))},
        schema={system: parts[0].schema[system], ORDER: I64},
    )
    columns = [*by, system, "metric", POSITION, *(c for c in SCHEMA if c in ROW_COLUMNS)]
    rows = pl.concat([p.select(columns) for p in parts], how="vertical_relaxed")
    rows = rows.join(order, on=system, how="left")
    rows = rows.sort([*by, POSITION, ORDER], nulls_last=True)
    table = rows.select(
        *by,
        "metric",
        pl.col(system).cast(pl.String).alias("system"),
        pl.lit(str(baseline), pl.String).alias("baseline"),
        *[pl.col(c).cast(SCHEMA[c]) for c in ("value", "baseline_value", "difference")],
        *[pl.col(c).cast(SCHEMA[c]) for c in ("lower", "upper", "p_value")],
        pl.lit(None, F64).alias("p_adjusted"),
        *[pl.col(c).cast(I64) for c in ("wins", "ties", "losses", "n_units")],
    )
    return corrected(table, by, correction)


def _tested(
    table: pl.DataFrame, test: str, level: float, n_resamples: int, seed: int
) -> pl.DataFrame:
    """``lower``, ``upper`` and ``p_value`` of each row of ``table`` (one comparison)."""
    n = table.get_column("n_units").to_numpy().astype(np.float64)
    mean = table.get_column("difference").fill_null(np.nan).to_numpy()
    if test == "t":
        sd = table.get_column("__pe_sd").fill_null(np.nan).to_numpy()
        lower, upper, p = t_test(n, mean, sd, level)
    else:
        lower, upper, p = (np.full(table.height, np.nan) for _ in range(3))
        for i, ds in enumerate(table.get_column("__pe_ds").to_list()):
            if ds:  # the comparison's differences (a Python loop over comparisons only)
                d = np.asarray(ds, dtype=np.float64)
                lower[i], upper[i], p[i] = resampled_test(d, test, level, n_resamples, seed)
        table = table.drop("__pe_ds")
    return table.drop("__pe_sd").with_columns(
        pl.Series("lower", lower, F64).fill_nan(None),
        pl.Series("upper", upper, F64).fill_nan(None),
        pl.Series("p_value", p, F64).fill_nan(None),
    )


def corrected(table: pl.DataFrame, by: list[str], correction: str | None) -> pl.DataFrame:
    """``p_adjusted``: the p-values adjusted over the systems of each (``by`` group,
    metric) family (null p-values left out of the family)."""
    if table.height == 0:
        return table
    keys = [*by, "metric"]
    family = table.select(pl.struct(keys).rank("dense").alias("__pe_f")).to_series().to_numpy()
    p = table.get_column("p_value").fill_null(np.nan).to_numpy().astype(np.float64)
    adjusted = np.full(p.size, np.nan)
    for f in np.unique(family):
        at = np.flatnonzero(family == f)
        adjusted[at] = adjust(p[at], correction)
    return table.with_columns(pl.Series("p_adjusted", adjusted, F64).fill_nan(None))


def empty_table(by_schema: Mapping[str, Any]) -> pl.DataFrame:
    """A compare table without rows (the schema of every result)."""
    return pl.DataFrame(schema={**by_schema, **SCHEMA})


def gate_failures(
    table: pl.DataFrame, level: float, directions: Mapping[str, bool | None]
) -> pl.DataFrame:
    """The rows of a compare table where the system is significantly worse than the
    baseline: ``p_adjusted < 1 − level`` and the difference in the metric's worse
    direction (metrics without a direction never fail)."""
    alpha = 1.0 - level
    worse = [
        (pl.col("metric") == m)
        & ((pl.col("difference") < 0.0) if hib else (pl.col("difference") > 0.0))
        for m, hib in directions.items()
        if hib is not None
    ]
    if not worse:
        return table.clear()
    return table.filter((pl.col("p_adjusted") < alpha) & pl.any_horizontal(worse))
