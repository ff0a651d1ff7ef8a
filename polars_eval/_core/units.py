"""Intervals over units: the mean of per-query or per-series values (SPEC §14 "Units").

A ranking metric's unit is the query, a forecast metric's the series: the task's first
stage gives one value per unit, its second stage their mean per ``by`` group. That second
stage is written once here, for both tasks (and ``pe.trec_eval``):

* :func:`unit_sums` — per group and metric, the (weighted) number of units where the
  value is defined, Σx and, for ``ci="t"``, Σx². Sums of disjoint sets of units add up
  to the sums of their union, so partitions, the spilled ranking evaluation and Spark
  merge them exactly.
* :func:`unit_means` — the mean Σx / n and, for ``ci="t"``, Student's interval
  mean ± t_{n−1, (1+level)/2} · s / √n, s² = (Σx² − n·mean²) / (n − 1) the sample
  variance of the per-unit values (null below two units).
* :func:`unit_bootstrap` — ``ci="bootstrap"``: the units of each group resampled with
  replacement, the percentile interval of the resampled means.

A unit whose value is undefined (a query with no relevant item) is left out of the mean,
of n and of the interval, as it is left out of the mean without ``ci``. With query
weights (``weight=`` on the ranking methods) the weights are frequency weights: n = Σw,
Σwx and Σwx² (an integer weight equals repeating the query), so t has Σw − 1 degrees of
freedom.

Σx² is a raw sum of squares: the variance loses about ``eps · mean² / s²`` of its value
to rounding (1e-14 relative for values near 1 with a spread of 0.01), ample for metric
values; this is the price of a state that merges by plain sums.

References
----------
Student (1908), "The probable error of a mean"; Efron & Tibshirani (1993), *An
Introduction to the Bootstrap*, ch. 13 (percentile intervals); Sakai (2014),
"Statistical reform in information retrieval?" (per-topic intervals in IR evaluation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_eval._exprs import F64, count_true, safe_div
from polars_eval._params import check_choice, check_level, check_positive_int
from polars_eval.exceptions import InvalidParameterError

METHODS = ("t", "bootstrap")
"""The ``ci=`` methods over units."""
OPTIONS = ("ci", "level", "n_resamples", "seed")
"""The arguments of an interval over units, in :func:`unit_ci`'s order."""
NUM, DEN, SQ = "__pe_num_", "__pe_den_", "__pe_sq_"
"""Prefixes of the per-group sums: Σ(w·)x, the (weight of the) defined units, Σ(w·)x²."""
BOOTSTRAP_CELLS = 1 << 20
"""About how many resampled unit values one block of the bootstrap gathers per metric."""


@dataclass(frozen=True)
class UnitCI:
    """A ``ci=`` request over units: the method, the level and the bootstrap's options."""

    method: str
    level: float = 0.95
    n_resamples: int = 1000
    seed: int = 0

    @property
    def t(self) -> bool:
        return self.method == "t"

    @property
    def bootstrap(self) -> bool:
        return self.method == "bootstrap"


def unit_ci(ci: Any, level: Any = 0.95, n_resamples: Any = None, seed: Any = None) -> UnitCI | None:
    """The checked ``ci=`` options of a method over units (None without ``ci``).

    ``n_resamples`` and ``seed`` belong to ``ci="bootstrap"`` (default 1000 and 0).
    """
    extra = [name for name, v in (("n_resamples", n_resamples), ("seed", seed)) if v is not None]
    if ci is None:
        if extra:
            raise InvalidParameterError(
                f"{', '.join(f'{e}=' for e in extra)} need ci='bootstrap'; got ci=None"
            )
        return None
    check_choice("ci", ci, METHODS)
    check_level(level)
    if ci != "bootstrap" and extra:
        raise InvalidParameterError(
            f"{', '.join(f'{e}=' for e in extra)} need ci='bootstrap'; got ci={ci!r}"
        )
    resamples = 1000 if n_resamples is None else n_resamples
    check_positive_int("n_resamples", resamples)
    chosen_seed = 0 if seed is None else seed
    if isinstance(chosen_seed, bool) or not isinstance(chosen_seed, int) or chosen_seed < 0:
        raise InvalidParameterError(f"seed must be a non-negative integer; got {seed!r}")
    return UnitCI(ci, float(level), resamples, chosen_seed)


def interval_names(name: str) -> list[str]:
    """``name``, ``name_lower``, ``name_upper``."""
    return [name, f"{name}_lower", f"{name}_upper"]


def ordered(columns: Sequence[str], names: Sequence[str], ci: UnitCI | None) -> list[str]:
    """``columns`` with ``<name>_lower``, ``<name>_upper`` right after each of ``names``."""
    if ci is None:
        return list(columns)
    chosen = set(names)
    return [c for col in columns for c in (interval_names(col) if col in chosen else [col])]


def unit_sums(
    names: Sequence[str], *, weight: pl.Expr | None = None, ci: UnitCI | None = None
) -> list[pl.Expr]:
    """Per group: for each metric the (weighted) sum of its per-unit values, the (weight
    of the) units where it is defined and, for ``ci="t"``, the (weighted) sum of squares.
    Aggregations over a frame of one row per unit."""
    aggs: list[pl.Expr] = []
    for name in names:
        x = pl.col(name).cast(F64)
        if weight is not None:
            aggs += [
                (x * weight).sum().alias(NUM + name),
                weight.filter(x.is_not_null()).cast(F64).sum().alias(DEN + name),
            ]
            square = (x * x * weight).sum()
        else:
            aggs += [
                x.sum().alias(NUM + name),
                count_true(x.is_not_null()).cast(F64).alias(DEN + name),
            ]
            square = (x * x).sum()
        if ci is not None and ci.t:
            aggs.append(square.alias(SQ + name))
    return aggs


def _t_quantile(level: float) -> Any:
    """The function of a column of unit counts n giving t_{n−1, (1 + level)/2} (null for
    n < 2): scipy for the quantile, the one use the package makes of it here."""
    q = 0.5 + level / 2.0

    def quantiles(n: pl.Series) -> pl.Series:
        from scipy import stats  # on first use, not with the package (as stats.intervals)

        dof = n.cast(F64).to_numpy() - 1.0
        ok = dof > 0.0  # NaN (a null n) compares False
        out = np.full(len(dof), np.nan)
        if ok.any():
            out[ok] = stats.t.ppf(q, dof[ok])
        return pl.Series(n.name, out, dtype=F64).fill_nan(None)

    return quantiles


def unit_means(names: Sequence[str], ci: UnitCI | None = None) -> list[pl.Expr]:
    """Each metric's mean over units from the sums of :func:`unit_sums` (null where no
    unit has a value) and, for ``ci="t"``, its ``_lower`` and ``_upper`` bounds."""
    out: list[pl.Expr] = []
    for name in names:
        num, den = pl.col(NUM + name), pl.col(DEN + name)
        mean = safe_div(num, den).cast(F64)
        out.append(mean.alias(name))
        if ci is None or not ci.t:
            continue
        t = den.map_batches(_t_quantile(ci.level), return_dtype=F64)
        variance = ((pl.col(SQ + name) - num * mean) / (den - 1.0)).clip(lower_bound=0.0)
        half = t * (variance / den).sqrt()
        out += [(mean - half).alias(f"{name}_lower"), (mean + half).alias(f"{name}_upper")]
    return out


def unit_bootstrap(
    per_unit: pl.DataFrame,
    names: Sequence[str],
    by: Sequence[str],
    keys: Sequence[str],
    ci: UnitCI,
    weight: str | None = None,
) -> pl.DataFrame:
    """``ci="bootstrap"``: per ``by`` group, its units resampled with replacement
    ``ci.n_resamples`` times; the percentile interval (linear interpolation) of each
    metric's mean over the units drawn. ``per_unit`` has one row per unit (``by`` +
    ``keys`` columns, the metric columns, the query weight ``weight``).

    The units of a group are taken in the order of their keys and resample r of every
    group is drawn from one numpy generator seeded with ``ci.seed``: a group's interval
    depends on its own units only (the same with ``by`` as on that group's rows alone),
    not on row order, partitions or threads. Every metric sees the same resamples. A
    resample that draws no unit where a metric is defined is left out of that metric's
    percentiles (BAD_INPUTS row 43); none left: null bounds.

    Vectorised numpy (the draws are integer indices, a block of resamples at a time);
    the loop is over ``by`` groups, not rows.
    """
    frame = per_unit.sort([*by, *keys], nulls_last=True) if [*by, *keys] else per_unit
    values = frame.select(pl.col(list(names)).cast(F64)).to_numpy()
    values = np.asarray(values, dtype=np.float64).reshape(frame.height, len(names))
    defined = ~np.isnan(values)
    w = (
        frame.get_column(weight).cast(F64).fill_null(0.0).to_numpy()
        if weight is not None
        else np.ones(frame.height)
    )
    wx = np.where(defined, values * w[:, None], 0.0)
    wd = np.where(defined, w[:, None], 0.0)
    if by:
        groups = (
            frame.with_row_index("__pe_i")
            .group_by(list(by), maintain_order=True)
            .agg(pl.col("__pe_i").first().alias("__pe_lo"), pl.len().alias("__pe_n"))
        )
        keys_frame = groups.select(by)
        bounds = list(zip(groups["__pe_lo"].to_list(), groups["__pe_n"].to_list(), strict=True))
    else:
        keys_frame = pl.DataFrame()
        bounds = [(0, frame.height)]
    alpha = 1.0 - ci.level
    lower = np.full((len(bounds), len(names)), np.nan)
    upper = np.full((len(bounds), len(names)), np.nan)
    for g, (lo, n) in enumerate(bounds):
        if n == 0:
            continue
        rng = np.random.default_rng(ci.seed)
        block = max(1, min(ci.n_resamples, BOOTSTRAP_CELLS // n))
        means = np.empty((ci.n_resamples, len(names)))
        gx, gd = wx[lo : lo + n], wd[lo : lo + n]
        for start in range(0, ci.n_resamples, block):
            size = min(block, ci.n_resamples - start)
            draws = rng.integers(0, n, size=(size, n))
            for j in range(len(names)):
                num = gx[draws, j].sum(axis=1)
                den = gd[draws, j].sum(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    means[start : start + size, j] = np.where(den > 0, num / den, np.nan)
        for j in range(len(names)):
            kept = means[:, j][~np.isnan(means[:, j])]
            if kept.size:
                lower[g, j], upper[g, j] = np.quantile(kept, [alpha / 2.0, 1.0 - alpha / 2.0])
    columns = {}
    for j, name in enumerate(names):
        columns[f"{name}_lower"] = pl.Series(lower[:, j], dtype=F64).fill_nan(None)
        columns[f"{name}_upper"] = pl.Series(upper[:, j], dtype=F64).fill_nan(None)
    out = pl.DataFrame(columns)
    return pl.concat([keys_frame, out], how="horizontal") if by else out


def bootstrap_bounds(
    per_unit: pl.LazyFrame,
    names: Sequence[str],
    by: Sequence[str],
    keys: Sequence[str],
    ci: UnitCI,
    weight: str | None = None,
) -> pl.LazyFrame:
    """:func:`unit_bootstrap` as a lazy step over a LazyFrame of one row per unit."""
    schema = per_unit.collect_schema()
    out_schema = pl.Schema(
        {b: schema[b] for b in by} | {c: F64 for name in names for c in interval_names(name)[1:]}
    )
    columns = [*by, *keys, *names, *([weight] if weight is not None else [])]

    def run(df: pl.DataFrame) -> pl.DataFrame:
        return unit_bootstrap(df, names, by, keys, ci, weight)

    return per_unit.select(list(dict.fromkeys(columns))).map_batches(
        run, schema=out_schema, streamable=False
    )


def with_bootstrap(
    table: pl.LazyFrame,
    per_unit: pl.LazyFrame,
    names: Sequence[str],
    by: Sequence[str],
    keys: Sequence[str],
    ci: UnitCI | None,
    weight: str | None = None,
) -> pl.LazyFrame:
    """The table of means (one row per ``by`` group) with, for ``ci="bootstrap"``, the
    bounds of :func:`unit_bootstrap` over ``per_unit`` joined on ``by``, each right after
    its metric; unchanged otherwise."""
    if ci is None or not ci.bootstrap:
        return table
    bounds = bootstrap_bounds(per_unit, names, by, keys, ci, weight)
    columns = ordered(table.collect_schema().names(), names, ci)
    if by:
        joined = table.join(bounds, on=list(by), how="left", nulls_equal=True)
    else:
        joined = table.join(bounds, how="cross")
    return joined.select(columns)


def check_no_per_unit(ci: UnitCI | None, per_unit: bool, what: str) -> None:
    """``ci=`` is an interval of the mean over units: not with one row per unit."""
    if ci is not None and per_unit:
        raise InvalidParameterError(
            f"ci= gives an interval of the mean over units; {what}=True gives one row per "
            "unit (choose one)"
        )
