"""Regression metrics (SPEC §5; the model diagnostics: :mod:`polars_eval.metrics.diagnostics`).

Every metric takes ``(actual, pred, *, weight=None)`` and returns one Polars aggregation
expression aliased to its name, usable in ``select``, ``group_by().agg()`` and ``over()``.
Inputs are cast to Float64 first; a row with a null in any input is ignored; the weighted
formula is the only formula (no weight = every row weighs 1).

State + finalize: the additive metrics (MSE, MAE, bias, WAPE, MAPE ...) are weighted sums
finalized by a ratio; R², explained variance and Pearson read centred co-moments (Polars'
streaming ``cov`` about the unweighted means, shifted to the weighted ones: no raw sums
of squares, so a large offset costs digits linearly, not quadratically; see
``polars_eval/_core/spec.py``). Both stream: over a lake, Polars' streaming engine
aggregates them without holding the rows. The order-based ones (medians, Spearman,
Kendall) sort once per group.

Undefined values are null: an empty group (or all weights 0), R² / explained variance of a
constant target, correlations with a constant side or fewer than two rows. A NaN input
gives NaN.

Percentage errors (MAPE, RMSPE, MER) skip the rows whose actual is 0
(``zero_actuals="skip"``, the default; ``df.eval.regression`` reports how many rows in its
``zero_actuals`` column); ``zero_actuals="inf"`` keeps them: a zero actual with a
non-zero error makes the value +inf (a row where actual = prediction = 0 counts as 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from polars_eval._core.registry import register
from polars_eval._core.spec import (
    Finalize,
    MetricSpec,
    State,
    bind,
    moments,
    nan_or,
    weighted_mean,
)
from polars_eval._exprs import (
    F64,
    NAN,
    column_name,
    count_true,
    drop_null_rows,
    indicator,
    masked_weight,
    nan_guard,
    not_null,
    safe_div,
    to_float,
    weight_expr,
)
from polars_eval._params import (
    check_alpha,
    check_choice,
    check_positive_int,
    check_tweedie_power,
)
from polars_eval._typing import IntoExpr, ZeroActuals
from polars_eval._validate import Check
from polars_eval.metrics._rank_kernels import _rank_correlations

__all__ = [
    "bias",
    "conditional_table",
    "d2_absolute_error",
    "d2_pinball",
    "d2_tweedie",
    "explained_variance",
    "kendall_tau",
    "mae",
    "mape",
    "max_error",
    "mean_gamma_deviance",
    "mean_poisson_deviance",
    "mean_tweedie_deviance",
    "medae",
    "mer",
    "mse",
    "msle",
    "pearson",
    "r2",
    "r2_pearson",
    "residual_qq",
    "rmse",
    "rmsle",
    "rmspe",
    "smape",
    "spearman",
    "wape",
]

INPUTS = {"actual": "numeric", "pred": "numeric", "weight": "weight"}
LOG_INPUTS = {"actual": "positive", "pred": "positive", "weight": "weight"}
EMPTY = "empty group (no rows with a non-null actual, prediction and positive weight)"
CONSTANT = "needs a non-constant actual (and at least two rows)"
CORR = "needs at least two rows and a non-constant actual and prediction"
NO_NONZERO = "no row with a non-zero actual"
ZERO_ACTUAL_OPTIONS = ("skip", "inf")


# ---------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------


def _inputs(
    actual: IntoExpr, pred: IntoExpr, weight: IntoExpr | None, *, drop_zero_weight: bool = False
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    y, p, w = drop_null_rows(
        to_float(actual),
        to_float(pred),
        weight=weight_expr(weight),
        drop_zero_weight=drop_zero_weight,
    )
    return y, p, w


def _masked(
    actual: IntoExpr, pred: IntoExpr, weight: IntoExpr | None
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Inputs for the additive metrics, without filtering: the weight is 0 on rows with a
    null input (:func:`~polars_eval._exprs.masked_weight`)."""
    y, p = to_float(actual), to_float(pred)
    return y, p, masked_weight(y, p, weight=weight)


def _only_kept(values: pl.Expr, w: pl.Expr) -> pl.Expr:
    """``values`` where the row counts (weight > 0), null elsewhere."""
    return pl.when(w > 0.0).then(values)


def _kept(
    actual: IntoExpr, pred: IntoExpr, weight: IntoExpr | None
) -> tuple[pl.Expr, pl.Expr, pl.Expr | None]:
    """The actual and the prediction where the row counts (no null input, weight > 0),
    null elsewhere (on the same rows), and the weight (None: 1). One test a side: the
    other side not null (and the weight positive), no masked weight inside."""
    y, p = to_float(actual), to_float(pred)
    if weight is None:
        return pl.when(p.is_not_null()).then(y), pl.when(y.is_not_null()).then(p), None
    w = to_float(weight)
    return (
        pl.when(p.is_not_null() & (w > 0.0)).then(y),
        pl.when(y.is_not_null() & (w > 0.0)).then(p),
        w,
    )


def _wmean(values: pl.Expr, w: pl.Expr) -> pl.Expr:
    """Weighted mean; null on an empty group (total weight 0)."""
    return safe_div((values * w).sum(), w.sum())


def _wmedian(values: pl.Expr, w: pl.Expr) -> pl.Expr:
    """Weighted median (rows of zero weight already dropped), NaN if a value is NaN.

    The mean of the lower and upper weighted medians: the first sorted value whose
    cumulative weight reaches W/2, and the first that exceeds it. With integer weights this
    is the ordinary median of the rows repeated (the average of the two middle values).
    The rows are sorted once and every later step reads them (:func:`bind`).
    """

    def median(r: Mapping[str, pl.Expr]) -> pl.Expr:
        v, w, cw = r["v"], r["w"], r["cw"]
        half = w.sum() / 2.0
        lo = v.filter(cw >= half).first()
        hi = v.filter(cw > half).first()
        value = pl.when(w.sum() > 0.0).then((lo + hi.fill_null(lo)) / 2.0)
        return nan_or(v.is_nan().any(), value)

    return bind({"v": values, "w": w}, _cumulated, median, rows=True, sort_by="v")


def _cumulated(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
    """A :func:`bind` stage: the rows and their cumulative weight ``cw``."""
    return {**r, "cw": r["w"].cum_sum()}


def _median_alone(values: pl.Expr) -> pl.Expr:
    """The median of ``values`` (nulls left out), NaN if one is NaN: the weighted median
    of :func:`_wmedian` under unit weights (the mean of the two middle values), by
    Polars' own selection, without a sort (the nulls dropped first: with a null in the
    column, Polars 2.1 sorts it instead, 10x slower)."""
    return nan_or(values.is_nan().any(), values.drop_nulls().median())


def _not_constant(values: pl.Expr) -> pl.Expr:
    """True when the (non-NaN) values are not all equal; false on 0 or 1 row."""
    return values.max() > values.min()


def _check_zero_actuals(zero_actuals: str) -> None:
    check_choice("zero_actuals", zero_actuals, ZERO_ACTUAL_OPTIONS)


def _percentage_terms(
    y: pl.Expr, p: pl.Expr, w: pl.Expr, zero_actuals: str
) -> tuple[pl.Expr, pl.Expr]:
    """Per-row |y - p| / |y| and the weights of the rows kept.

    ``skip``: rows with y = 0 get weight 0 (left out). ``inf``: their term is +inf, or 0
    when the prediction is 0 as well.
    """
    err = (y - p).abs()
    if zero_actuals == "skip":
        keep = y != 0.0
        term = pl.when(keep).then(err / y.abs()).otherwise(0.0)
        return term, pl.when(keep).then(w).otherwise(0.0)
    term = (
        pl.when(y != 0.0)
        .then(err / y.abs())
        .when(err.is_nan())
        .then(NAN)
        .when(err == 0.0)
        .then(0.0)
        .when(err > 0.0)
        .then(float("inf"))
    )  # null where a value is null
    return pl.when(w > 0.0).then(term), w  # a row of weight 0 is left out, never inf · 0


def zero_actual_count(
    actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None
) -> pl.Expr:
    """Number of rows (non-null, positive weight) whose actual is 0: the rows that the
    percentage errors skip under ``zero_actuals="skip"``. Int64, aliased ``zero_actuals``."""
    y, p, w = to_float(actual), to_float(pred), weight_expr(weight)
    used = not_null(y, p, w) & (w != 0.0)  # a mask, not a filter: a streaming aggregation
    return count_true((y == 0.0) & used).alias("zero_actuals")


def _rows_spec(finalize: Finalize, **columns: pl.Expr) -> MetricSpec:
    """A metric of order statistics: its state is the rows themselves (already filtered
    to the rows that count), merged by concatenation."""
    return MetricSpec({name: State(expr, "rows") for name, expr in columns.items()}, finalize)


def _shape(yk: pl.Expr, pk: pl.Expr, w: pl.Expr | None) -> dict[str, State]:
    """The states of the correlation-type metrics over the rows kept (:func:`_kept`): the
    centred co-moments of (y, ŷ), the range of each side, and whether a NaN was seen."""
    return {
        "m": moments(w, yk, pk),
        "ymin": State(yk, "min"),
        "ymax": State(yk, "max"),
        "pmin": State(pk, "min"),
        "pmax": State(pk, "max"),
        "nan": State(yk.is_nan() | pk.is_nan(), "max"),
    }


def _pearson(s: Mapping[str, pl.Expr]) -> pl.Expr:
    """Weighted Pearson correlation from :func:`_shape`; null if a side is constant."""
    m = s["m"]
    cov, sxx, syy = (m.struct.field(f) for f in ("sxy", "sxx", "syy"))
    defined = (s["ymax"] > s["ymin"]) & (s["pmax"] > s["pmin"])
    return nan_or(s["nan"], pl.when(defined).then((cov / (sxx * syy).sqrt()).clip(-1.0, 1.0)))


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------

ERROR: dict[str, Any] = dict(
    task="regression", inputs=INPUTS, higher_is_better=False, lower=0.0, undefined=EMPTY
)
"""The registration of the mean errors (≥ 0, lower is better, undefined on an empty group).
The errors of ``df.eval.forecast``'s default table declare ``summary={"regression": True,
"forecast": n}``: in both default tables, n-th in the forecast one."""


@register(**ERROR, summary={"regression": True, "forecast": 2})
def mse(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Mean squared error, Σ w (y − ŷ)² / Σ w.

    References
    ----------
    scikit-learn, ``sklearn.metrics.mean_squared_error``.

    Examples
    --------
    Two predictions of the actuals (2, 3, 4) (a textbook example): (1, 4, 3) has MSE 1,
    (2, 3, 6) has MSE 4/3.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [2, 3, 4] * 2, "p": [1, 4, 3, 2, 3, 6], "m": ["a"] * 3 + ["b"] * 3})
    >>> df.group_by("m", maintain_order=True).agg(pe.mse("y", "p").round(4))
    shape: (2, 2)
    ┌─────┬────────┐
    │ m   ┆ mse    │
    │ --- ┆ ---    │
    │ str ┆ f64    │
    ╞═════╪════════╡
    │ a   ┆ 1.0    │
    │ b   ┆ 1.3333 │
    └─────┴────────┘
    """
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean((y - p) ** 2, w, unweighted=weight is None)


@register(
    task="regression",
    inputs=INPUTS,
    higher_is_better=False,
    lower=0.0,
    undefined=EMPTY,
    intervals=("chi2",),
    summary={"regression": True, "forecast": 3},
    lead_chart=2,
)
def rmse(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Root mean squared error, √MSE.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> round(pl.DataFrame({"y": [0.0, 0.0], "p": [3.0, 4.0]}).eval.rmse("y", "p") ** 2, 12)
    12.5
    """
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean((y - p) ** 2, w, then=pl.Expr.sqrt, unweighted=weight is None)


@register(**ERROR, summary={"regression": True, "forecast": 1}, lead_chart=1)
def mae(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Mean absolute error, Σ w |y − ŷ| / Σ w.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [2, 3, 4], "p": [1, 4, 3]}).select(pe.mae("y", "p")).item()
    1.0
    """
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean((y - p).abs(), w, unweighted=weight is None)


@register(task="regression", inputs=INPUTS, higher_is_better=False, lower=0.0, undefined=EMPTY)
def medae(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Median absolute error: the (weighted) median of |y − ŷ|.

    With weights, the mean of the lower and upper weighted medians (the median of the rows
    repeated, for integer weights). Rows of zero weight are left out.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1, 2, 3, 4], "p": [1, 3, 6, 8]}).select(pe.medae("y", "p")).item()
    2.0
    """
    y, p, w = _inputs(actual, pred, weight, drop_zero_weight=True)
    spec = _rows_spec(lambda r: _wmedian(r["e"], r["w"]), e=(y - p).abs(), w=w)
    if weight is not None:
        return spec
    return replace(spec, alone=_median_alone((to_float(actual) - to_float(pred)).abs()))


@register(task="regression", inputs=INPUTS, higher_is_better=False, lower=0.0, undefined=EMPTY)
def max_error(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Maximum absolute error, max |y − ŷ| over the rows of positive weight.

    Weights only select rows (a zero weight removes the row); NaN in gives NaN.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [3, 2, 7, 1], "p": [4, 2, 7, 1]}).select(pe.max_error("y", "p")).item()
    1.0
    """
    y, p, w = _masked(actual, pred, weight)
    kept = w > 0.0
    states = {
        "max": State(pl.when(kept).then((y - p).abs()), "max"),
        "nan": State(pl.when(kept).then(y.is_nan() | p.is_nan()), "max"),
    }
    return MetricSpec(states, lambda s: nan_or(s["nan"], s["max"].cast(F64)))


@register(
    task="regression",
    inputs=INPUTS,
    higher_is_better=None,
    undefined=EMPTY,
    summary={"regression": True, "forecast": 4},
    lead_chart=3,
)
def bias(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Mean error of the prediction, Σ w (ŷ − y) / Σ w: positive when over-predicting.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [2, 3, 4], "p": [2, 3, 6]}).select(pe.bias("y", "p")).item()
    0.6666666666666666
    """
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean(p - y, w, unweighted=weight is None)


@register(
    task="regression",
    inputs=INPUTS,
    higher_is_better=True,
    upper=1.0,
    undefined=CONSTANT,
)
def r2(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Coefficient of determination, R² = 1 − SSE / SST.

    SSE = Σ w (y − ŷ)², SST = Σ w (y − ȳ)² with ȳ the weighted mean (centred first).
    Null for a constant actual (scikit-learn returns 1.0 or 0.0 there by default) or
    fewer than two rows.

    References
    ----------
    scikit-learn, ``sklearn.metrics.r2_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1, 2, 3], "p": [1, 2, 4]}).select(pe.r2("y", "p")).item()
    0.5
    """
    yk, pk, w = _kept(actual, pred, weight)
    sse = (yk - pk) ** 2
    states = {"sse": State(sse if w is None else w * sse), **_shape(yk, pk, w)}

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        sst = s["m"].struct.field("sxx")
        defined = (s["ymax"] > s["ymin"]) & (sst > 0.0)
        return nan_or(s["nan"], pl.when(defined).then(1.0 - s["sse"] / sst))

    return MetricSpec(states, finalize)


CORRELATION: dict[str, Any] = dict(
    task="regression",
    inputs=INPUTS,
    higher_is_better=True,
    lower=-1.0,
    upper=1.0,
    undefined=CORR,
    baseline=False,  # undefined for the constant prediction of the baseline
)
"""The registration of the correlations (Pearson, Spearman, Kendall)."""


@register(
    task="regression",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=CORR,
    baseline=False,  # undefined for the constant prediction of the baseline
)
def r2_pearson(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Squared Pearson correlation of actual and prediction (H2O's R² of a fit line).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1, 2, 3], "p": [2, 4, 6]}).select(pe.r2_pearson("y", "p")).item()
    1.0
    """
    return MetricSpec(_shape(*_kept(actual, pred, weight)), lambda s: _pearson(s) ** 2)


@register(**CORRELATION)
def pearson(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Pearson correlation, Σ w (y − ȳ)(ŷ − ŷ̄) / √(Σ w (y − ȳ)² · Σ w (ŷ − ŷ̄)²).

    From centred co-moments (no raw sums of squares). Null with a constant side or
    fewer than two rows.

    References
    ----------
    scipy, ``scipy.stats.pearsonr``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1, 2, 3, 4], "p": [4, 3, 2, 1]}).select(pe.pearson("y", "p")).item()
    -1.0
    """
    return MetricSpec(_shape(*_kept(actual, pred, weight)), _pearson)


@register(**CORRELATION)
def spearman(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Spearman rank correlation: Pearson correlation of the average ranks.

    Ties get their average rank; with weights a row's rank is the weight below it plus
    half the weight of its tie block (integer weights = repeated rows) and the
    correlation of the ranks is weighted. Rows of zero weight are left out. Null with a
    constant side or fewer than two rows. Computed in numpy, once per group
    (:func:`_rank_correlations`; in ``df.eval.regression`` from the same sorts as
    Kendall's tau, :func:`shared_ranks`).

    References
    ----------
    scipy, ``scipy.stats.spearmanr``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1, 2, 3, 4], "p": [1, 10, 100, 1000]}).select(pe.spearman("y", "p")).item()
    1.0
    """
    return _rank_spec("spearman", actual, pred, weight)


RANKS = "ranks"
"""The key of ``MetricSpec.extra`` naming the rank correlation a spec computes
(:func:`shared_ranks` computes those of the same rows in one call)."""


def _rank_spec(name: str, actual: IntoExpr, pred: IntoExpr, weight: IntoExpr | None) -> MetricSpec:
    """The spec of the rank correlation ``name``: the rows that count (actual, prediction
    and, with weights, the weight) finalized by one numpy call per group."""
    y, p, w = _inputs(actual, pred, weight, drop_zero_weight=True)
    rows = {"y": y, "p": p} if weight is None else {"y": y, "p": p, "w": w}
    spec = _rows_spec(lambda r: _rank_expr(r, (name,)), **rows)
    return replace(spec, extra={RANKS: name})


def _rank_expr(r: Mapping[str, pl.Expr], names: tuple[str, ...]) -> pl.Expr:
    """The rank correlations ``names`` of the rows ``r`` (``y``, ``p``, optionally ``w``),
    one numpy call per group: Float64 for one name, a struct of them for several."""
    weighted = "w" in r
    dtype = F64 if len(names) == 1 else pl.Struct({name: F64 for name in names})
    return pl.struct(*(e.alias(k) for k, e in r.items())).map_batches(
        lambda s: _rank_batch(s, names, weighted), return_dtype=dtype, returns_scalar=True
    )


def _rank_batch(s: pl.Series, names: tuple[str, ...], weighted: bool) -> pl.Series:
    frame = s.struct.unnest()
    x = frame.get_column("y").to_numpy().astype(np.float64, copy=False)
    y = frame.get_column("p").to_numpy().astype(np.float64, copy=False)
    w = frame.get_column("w").to_numpy().astype(np.float64, copy=False) if weighted else None
    values = _rank_correlations(x, y, w, names)
    if len(names) == 1:
        return pl.Series(names[0], [values[names[0]]], dtype=F64)
    return pl.Series(RANKS, [values], dtype=pl.Struct({name: F64 for name in names}))


def shared_ranks(
    specs: Mapping[str, MetricSpec],
) -> tuple[dict[str, MetricSpec], dict[str, tuple[str, str]]]:
    """The rank correlations of ``specs`` over the same rows as one spec: one numpy call
    that sorts each side once for all of them (1e6 rows: Spearman and Kendall together
    cost about Kendall alone).

    Returns the specs with each such group replaced by one spec ``__pe_ranks<i>``, whose
    value is a struct of the correlations, and for each metric replaced, its joint spec
    and field. A rank correlation alone in its rows is left as it is.
    """
    groups: dict[tuple[Any, ...], list[str]] = {}
    for name, spec in specs.items():
        if RANKS in spec.extra:
            rows = tuple(sorted((k, state.key) for k, state in spec.states.items()))
            groups.setdefault(rows, []).append(name)
    joints: dict[str, MetricSpec] = {}
    fields: dict[str, tuple[str, str]] = {}
    for i, names in enumerate(n for n in groups.values() if len(n) > 1):
        joint = f"__pe_ranks{i}"
        stats = tuple(dict.fromkeys(str(specs[n].extra[RANKS]) for n in names))
        joints[joint] = MetricSpec(specs[names[0]].states, lambda r, s=stats: _rank_expr(r, s))
        fields |= {name: (joint, str(specs[name].extra[RANKS])) for name in names}
    # first: Polars starts the aggregations in order on its threads, the longest first
    return {**joints, **{k: v for k, v in specs.items() if k not in fields}}, fields


@register(**CORRELATION)
def kendall_tau(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Kendall's tau-b rank correlation, in O(n log n).

    tau-b = (n_c − n_d) / √((n_0 − n_1)(n_0 − n_2)), with n_0 the pairs, n_1 / n_2 the pairs
    tied on actual / prediction, n_c / n_d the concordant / discordant pairs. Discordant
    pairs are counted as the inversions of the prediction once rows are sorted by actual
    (Knight 1966), by a vectorised merge sort (no sort inside its levels:
    :func:`~polars_eval.metrics._rank_kernels._inversions`), run per group through ``map_batches``; with few distinct values
    on both sides (at most n cells in their table), from the table of counts of the
    (actual, prediction) pairs instead, in O(n). With weights, a pair counts w_i·w_j
    (integer weights = repeated rows). Null with a constant side or fewer than two rows.
    In ``df.eval.regression`` computed with Spearman's rho from the same sorts
    (:func:`shared_ranks`).

    References
    ----------
    Knight, W. R. (1966). A computer method for calculating Kendall's tau with ungrouped
    data. JASA 61(314). scipy, ``scipy.stats.kendalltau`` (variant "b").

    Examples
    --------
    Pairs: 5 concordant, 1 discordant of 6, no ties: tau = 4/6.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 2, 3, 4], "p": [1, 3, 2, 4]})
    >>> round(df.select(pe.kendall_tau("y", "p")).item(), 6)
    0.666667
    """
    return _rank_spec("kendall_tau", actual, pred, weight)


@register(task="regression", inputs=INPUTS, higher_is_better=True, upper=1.0, undefined=CONSTANT)
def explained_variance(
    actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    """Explained variance, 1 − Var(y − ŷ) / Var(y) (weighted, centred variances).

    Differs from R² by the mean error: a constant bias is not penalised. Null for a
    constant actual (scikit-learn returns 1.0 or 0.0 by default).

    References
    ----------
    scikit-learn, ``sklearn.metrics.explained_variance_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1, 2, 3], "p": [2, 3, 4]}).select(pe.explained_variance("y", "p")).item()
    1.0
    """
    # Var(y − ŷ) from the co-moments of (y, ŷ) that R² and Pearson share: W·Var(y − ŷ) =
    # Σ w ((y − ȳ) − (ŷ − ŷ̄))² = sxx + syy − 2 sxy, exact; its rounding error is about
    # 1e-16 (sxx + syy), so the value's is about 1e-16 (1 + Var(ŷ) / Var(y)), absolute
    states = _shape(*_kept(actual, pred, weight))

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        sxx, syy, sxy = (s["m"].struct.field(f) for f in ("sxx", "syy", "sxy"))
        var_r = (sxx + syy - 2.0 * sxy).clip(lower_bound=0.0)
        defined = (s["ymax"] > s["ymin"]) & (sxx > 0.0)
        return nan_or(s["nan"], pl.when(defined).then(1.0 - var_r / sxx))

    return MetricSpec(states, finalize)


@register(task="regression", inputs=LOG_INPUTS, higher_is_better=False, lower=0.0, undefined=EMPTY)
def rmsle(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Root mean squared logarithmic error, √MSLE.

    Examples
    --------
    >>> import math
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> v = pl.DataFrame({"y": [0.0], "p": [math.e ** 2 - 1]}).select(pe.rmsle("y", "p")).item()
    >>> round(v, 12)
    2.0
    """
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean(
        (p.log1p() - y.log1p()) ** 2, w, then=pl.Expr.sqrt, unweighted=weight is None
    )


@register(task="regression", inputs=LOG_INPUTS, higher_is_better=False, lower=0.0, undefined=EMPTY)
def msle(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Mean squared logarithmic error, Σ w (ln(1 + ŷ) − ln(1 + y))² / Σ w.

    Values must be > −1 (the namespace raises on values ≤ −1; the bare expression gives
    NaN or inf there).

    Examples
    --------
    >>> import math
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> v = pl.DataFrame({"y": [0.0, math.e - 1], "p": [math.e - 1, 0.0]}).select(pe.msle("y", "p")).item()
    >>> round(v, 12)
    1.0
    """
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean((p.log1p() - y.log1p()) ** 2, w, unweighted=weight is None)


@register(task="regression", inputs=INPUTS, higher_is_better=False, lower=0.0, undefined=NO_NONZERO)
def rmspe(
    actual: IntoExpr,
    pred: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    zero_actuals: ZeroActuals = "skip",
) -> MetricSpec:
    """Root mean squared percentage error, √(Σ w ((y − ŷ) / y)² / Σ w), as a fraction.

    Zero actuals as in :func:`mape`.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1.0, 2.0, 0.0], "p": [2.0, 2.0, 5.0]})
    >>> round(df.select(pe.rmspe("y", "p")).item() ** 2, 12)
    0.5
    """
    _check_zero_actuals(zero_actuals)
    y, p, w = _masked(actual, pred, weight)
    term, wk = _percentage_terms(y, p, w, zero_actuals)
    return weighted_mean(term * term, wk, then=pl.Expr.sqrt)  # NaN propagates by arithmetic


@register(
    task="regression",
    inputs=INPUTS,
    higher_is_better=False,
    lower=0.0,
    undefined=NO_NONZERO,
    summary={"regression": True, "forecast": 5},
)
def mape(
    actual: IntoExpr,
    pred: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    zero_actuals: ZeroActuals = "skip",
) -> MetricSpec:
    """Mean absolute percentage error, Σ w |y − ŷ| / |y| / Σ w, as a fraction (0.05 = 5 %).

    Rows with y = 0 are skipped (``zero_actuals="skip"``; ``df.eval.regression`` counts
    them) or, with ``zero_actuals="inf"``, make the value +inf (0 where ŷ = 0 too).
    scikit-learn divides by max(|y|, eps) instead, which gives a huge finite value.

    References
    ----------
    Hyndman, R. J. & Koehler, A. B. (2006). Another look at measures of forecast accuracy.
    International Journal of Forecasting 22(4). scikit-learn,
    ``sklearn.metrics.mean_absolute_percentage_error``.

    Examples
    --------
    Actuals (0.01, 0.03) predicted as (0.05, 0.04): errors 400 % and 33.3 %, MAPE 216.67 %.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0.01, 0.03], "p": [0.05, 0.04]})
    >>> round(df.eval.mape("y", "p"), 4)
    2.1667
    """
    _check_zero_actuals(zero_actuals)
    y, p, w = _masked(actual, pred, weight)
    term, wk = _percentage_terms(y, p, w, zero_actuals)
    return weighted_mean(term, wk)  # NaN propagates by arithmetic


@register(
    task="regression",
    inputs=INPUTS,
    higher_is_better=False,
    lower=0.0,
    upper=2.0,
    undefined=EMPTY,
    summary={"regression": True, "forecast": 6},
)
def smape(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Symmetric mean absolute percentage error, Σ w · 2|y − ŷ| / (|y| + |ŷ|) / Σ w, in [0, 2].

    A row where actual and prediction are both 0 has term 0. (utilsforecast's ``smape``
    omits the factor 2 and lies in [0, 1].)

    References
    ----------
    Makridakis, S. (1993). Accuracy measures: theoretical and practical concerns.
    International Journal of Forecasting 9(4).

    Examples
    --------
    Actuals (0.01, 0.03) predicted as (0.05, 0.04): terms 4/3 and 2/7, SMAPE 80.95 %.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0.01, 0.03], "p": [0.05, 0.04]})
    >>> round(df.eval.smape("y", "p"), 4)
    0.8095
    """
    y, p, w = _masked(actual, pred, weight)
    den = y.abs() + p.abs()
    term = pl.when(den > 0.0).then(2.0 * (y - p).abs() / den).otherwise(0.0)
    return weighted_mean(term, w)  # NaN propagates by arithmetic


@register(task="regression", inputs=INPUTS, higher_is_better=False, lower=0.0, undefined=NO_NONZERO)
def mer(
    actual: IntoExpr,
    pred: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    zero_actuals: ZeroActuals = "skip",
) -> MetricSpec:
    """Median absolute percentage error (MER): the weighted median of |y − ŷ| / |y|.

    Zero actuals as in :func:`mape`; weighted median as in :func:`medae`.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1.0, 2.0, 4.0], "p": [2.0, 2.0, 5.0]}).select(pe.mer("y", "p")).item()
    0.25
    """
    _check_zero_actuals(zero_actuals)
    y, p, w = _inputs(actual, pred, weight, drop_zero_weight=True)
    term, wk = _percentage_terms(y, p, w, zero_actuals)
    keep = wk > 0.0
    states = {
        "t": State(term.filter(keep), "rows"),
        "w": State(wk.filter(keep), "rows"),
        "nan": State(y.is_nan() | p.is_nan(), "max"),  # a NaN on a skipped row too
    }
    spec = MetricSpec(states, lambda s: nan_or(s["nan"], _wmedian(s["t"], s["w"])))
    if weight is not None:
        return spec
    y, p = to_float(actual), to_float(pred)  # null where either is: no filter needed
    term, wk = _percentage_terms(y, p, pl.lit(1.0), zero_actuals)
    nan = pl.when((y - p).is_not_null()).then(y.is_nan() | p.is_nan()).any()
    return replace(spec, alone=nan_or(nan, pl.when(wk > 0.0).then(term).drop_nulls().median()))


@register(
    task="regression",
    inputs=INPUTS,
    higher_is_better=False,
    lower=0.0,
    undefined=NO_NONZERO,
    summary={"regression": True, "forecast": 7},
)
def wape(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Weighted absolute percentage error, Σ w |y − ŷ| / Σ w |y| (null when Σ w |y| = 0).

    References
    ----------
    Kolassa, S. & Schütz, W. (2007). Advantages of the MAD/MEAN ratio over the MAPE.
    Foresight 6.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1, 3], "p": [2, 2]}).select(pe.wape("y", "p")).item()
    0.5
    """
    y, p, w = _masked(actual, pred, weight)
    # "ae" is the state of mae too (the same expression: computed once with both)
    states = {"ae": State((y - p).abs() * w), "ay": State(w * _only_kept(y, w).abs())}
    return MetricSpec(states, lambda s: safe_div(s["ae"], s["ay"]))


# Tweedie deviances -----------------------------------------------------------------------

_DEVIANCE: dict[str, Any] = {
    "task": "regression",
    "inputs": INPUTS,
    "higher_is_better": False,
    "lower": 0.0,
    "summary": False,  # their domain is narrower than the table's (positive targets)
    "undefined": EMPTY,
}


def _deviance_domain(power: float) -> tuple[str | None, str]:
    """What the actual and the prediction must hold for a Tweedie deviance of ``power``."""
    if power == 0:
        return None, "any"
    if power < 0:
        return None, "positive"
    return ("nonnegative" if power < 2 else "positive"), "positive"


def _deviance_checks(power: float, metric: str) -> Any:
    """The data check of a deviance: its domain depends on the power (scikit-learn's)."""

    def check(args: Mapping[str, Any]) -> list[Check]:
        checks = []
        actual_rule, pred_rule = _deviance_domain(power)
        for arg, rule in (("actual", actual_rule), ("pred", pred_rule)):
            if rule in (None, "any"):
                continue
            x = to_float(args[arg])
            bad = x < 0.0 if rule == "nonnegative" else x <= 0.0
            need = ">= 0" if rule == "nonnegative" else "> 0"
            checks.append(
                Check(
                    column=column_name(args[arg]),
                    bad=bad.fill_null(False),
                    values=x,
                    problem=f"must hold values {need} for {metric} (power={power:g}); "
                    "found {n} rows with other values",
                )
            )
        return checks

    return check


def deviance_terms(y: pl.Expr, mu: pl.Expr, power: float) -> pl.Expr:
    """The unit deviance d(y, μ) of a Tweedie distribution with ``power`` (per row).

    0: (y − μ)²; 1 (Poisson): 2(y ln(y/μ) − y + μ), with 0·ln 0 = 0; 2 (Gamma):
    2(ln(μ/y) + y/μ − 1); otherwise 2(max(y, 0)^(2−p)/((1−p)(2−p)) − y μ^(1−p)/(1−p) +
    μ^(2−p)/(2−p)) (Jørgensen 1997, as scikit-learn's ``mean_tweedie_deviance``).
    """
    if power == 0:
        return (y - mu) ** 2
    if power == 1:
        ylogy = pl.when(y == 0.0).then(0.0).otherwise(y * (y / mu).log())
        return 2.0 * (ylogy - y + mu)
    if power == 2:
        return 2.0 * ((mu / y).log() + y / mu - 1.0)
    p = power
    y_part = (y.clip(lower_bound=0.0) if p < 0 else y) ** (2.0 - p) / ((1.0 - p) * (2.0 - p))
    return 2.0 * (y_part - y * mu ** (1.0 - p) / (1.0 - p) + mu ** (2.0 - p) / (2.0 - p))


_DEVIANCE_DOC = """{summary}

    The weighted mean of the unit deviance, Σ w d(y, ŷ) / Σ w, with {unit}
    {domain} (the namespace raises on other values; the bare expression gives NaN or inf
    there). Null on an empty group.

    References
    ----------
    Jørgensen, B. (1997). The Theory of Dispersion Models. Chapman & Hall.
    scikit-learn, ``sklearn.metrics.{sklearn}``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [2.0, 0.5, 1.0, 4.0], "p": [0.5, 0.5, 2.0, 2.0]}})
    >>> df.select({call}.round(4)).item()
    {value}
    """


@register(
    **_DEVIANCE,
    check=lambda args: _deviance_checks(
        check_tweedie_power(args["power"]), "mean_tweedie_deviance"
    )(args),
)
def mean_tweedie_deviance(
    actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None, power: float = 0.0
) -> MetricSpec:
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean(
        deviance_terms(y, p, check_tweedie_power(power)), w, unweighted=weight is None
    )


@register(
    **_DEVIANCE,
    check=_deviance_checks(1.0, "mean_poisson_deviance"),
)
def mean_poisson_deviance(
    actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean(deviance_terms(y, p, 1.0), w, unweighted=weight is None)


@register(
    **_DEVIANCE,
    check=_deviance_checks(2.0, "mean_gamma_deviance"),
)
def mean_gamma_deviance(
    actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    y, p, w = _masked(actual, pred, weight)
    return weighted_mean(deviance_terms(y, p, 2.0), w, unweighted=weight is None)


mean_tweedie_deviance.__doc__ = _DEVIANCE_DOC.format(
    summary="Mean Tweedie deviance of power ``power`` (0 normal, 1 Poisson, 2 Gamma, ...).",
    unit="d the unit deviance of :func:`deviance_terms`. ``power`` must be <= 0 or >= 1;",
    domain="for power < 0 the prediction must be > 0, for 1 <= power < 2 the actual >= 0\n"
    "    and the prediction > 0, for power >= 2 both > 0",
    sklearn="mean_tweedie_deviance",
    call='pe.mean_tweedie_deviance("y", "p", power=1.5)',
    value="1.0711",
)
mean_poisson_deviance.__doc__ = _DEVIANCE_DOC.format(
    summary="Mean Poisson deviance, the Tweedie deviance of power 1.",
    unit="d(y, ŷ) = 2(y ln(y/ŷ) − y + ŷ) (0·ln 0 = 0); the actual must be >= 0 and the",
    domain="prediction > 0",
    sklearn="mean_poisson_deviance",
    call='pe.mean_poisson_deviance("y", "p")',
    value="1.176",
)
mean_gamma_deviance.__doc__ = _DEVIANCE_DOC.format(
    summary="Mean Gamma deviance, the Tweedie deviance of power 2.",
    unit="d(y, ŷ) = 2(ln(ŷ/y) + y/ŷ − 1); the actual and the prediction must",
    domain="be > 0",
    sklearn="mean_gamma_deviance",
    call='pe.mean_gamma_deviance("y", "p")',
    value="1.0569",
)


# D² scores: the share of a deviance explained, against the best constant ---------------

_D2: dict[str, Any] = {
    "task": "regression",
    "inputs": INPUTS,
    "higher_is_better": True,
    "upper": 1.0,
    "summary": False,
    "undefined": CONSTANT,
}

_EPS = float(np.finfo(np.float64).eps)


def _pinball_terms(d: pl.Expr, alpha: float) -> pl.Expr:
    """The pinball loss of each residual d = y − ŷ: α d where d ≥ 0, (α − 1) d below.

    Written α d − min(d, 0), without a row-level ``when``: over the filtered rows of a
    "rows" state, Polars 2.1's common-subexpression elimination breaks a row-level
    ``when`` (a length assertion fails)."""
    return alpha * d - d.clip(upper_bound=0.0)


def _wquantile(r: Mapping[str, pl.Expr], alpha: float) -> pl.Expr:
    """The weighted α-quantile of ``y`` (rows of zero weight already dropped), as
    scikit-learn's ``_weighted_percentile(average=True)`` ("averaged inverted CDF"), from
    the rows sorted by ``y`` and their cumulative weights ``cw`` (:func:`bind` fields).

    With the values sorted and C the cumulative weights: the first value whose C reaches
    α·W; when C there equals α·W (within float64 eps) the mean of it and the next value.
    With unit weights this is numpy's ``averaged_inverted_cdf`` (the median at α = ½).
    The level is computed as scikit-learn does, (100 α) / 100 · W, so the ties with a
    cumulative weight fall the same way.
    """
    vs, cw = r["y"], r["cw"]
    target = (alpha * 100.0) / 100.0 * cw.last()
    reached = cw >= target
    lo = vs.filter(reached).first().fill_null(vs.last())
    c_lo = cw.filter(reached).first().fill_null(cw.last())
    hi = vs.filter(cw > c_lo).first().fill_null(lo)
    return pl.when(c_lo - target > _EPS).then(lo).otherwise((lo + hi) / 2.0)


def _d2_value(r: Mapping[str, pl.Expr], alpha: float, weighted: bool) -> pl.Expr:
    """D² pinball from the rows ``y``, ``p``, ``w`` and the quantile ``q`` (bound fields)."""
    y, p, q = r["y"], r["p"], r["q"]
    model, baseline = _pinball_terms(y - p, alpha), _pinball_terms(y - q, alpha)
    if weighted:
        model, baseline = r["w"] * model, r["w"] * baseline
    value = pl.when(_not_constant(y)).then(1.0 - model.sum() / baseline.sum())
    return nan_guard(value, y, p)


def _d2_pinball_spec(
    actual: IntoExpr, pred: IntoExpr, weight: IntoExpr | None, alpha: float
) -> MetricSpec:
    y, p, w = _inputs(actual, pred, weight, drop_zero_weight=True)

    def quantile(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
        return {**r, "q": _wquantile(r, alpha)}

    def finalize(r: Mapping[str, pl.Expr]) -> pl.Expr:
        final = lambda s: _d2_value(s, alpha, True)  # noqa: E731
        return bind(r, _cumulated, quantile, final, rows=True, sort_by="y")

    spec = _rows_spec(finalize, y=y, p=p, w=w)
    if weight is not None:
        return spec

    alone = pl.struct(y.alias("y"), p.alias("p")).map_batches(
        lambda s: _d2_batch(s, alpha), return_dtype=F64, returns_scalar=True
    )
    return replace(spec, alone=alone)


def _pinball_terms_np(d: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`_pinball_terms` in numpy."""
    return alpha * d - np.minimum(d, 0.0)


def _d2_batch(s: pl.Series, alpha: float) -> pl.Series:
    """:func:`_d2_value` of the rows of a group (no null), unweighted. The quantile is
    :func:`_wquantile` under unit weights: the cumulative weight of the i-th sorted value
    is i + 1, so the first to reach the level α·n is number ⌈α·n⌉ (the same float level,
    compared with the same integers: the same value).

    Why numpy: the quantile is one order statistic of the actual (or the mean of two),
    which ``np.partition`` selects in O(n); Polars selects without a sort only at a
    literal level with its own rounding rules (its ``"equiprobable"`` is not
    scikit-learn's averaged inverted CDF), so the expression sorted the column (1e6 rows:
    D² about 3x one sort in Polars, 1x here)."""
    frame = s.struct.unnest()
    y = frame.get_column("y").to_numpy().astype(np.float64, copy=False)
    p = frame.get_column("p").to_numpy().astype(np.float64, copy=False)
    n = y.size
    value: float | None = None
    if np.isnan(y).any() or np.isnan(p).any():
        value = NAN
    elif n >= 2 and y.max() > y.min():
        target = (alpha * 100.0) / 100.0 * n
        i = int(min(max(math.ceil(target) - 1.0, 0.0), n - 1.0))
        j = min(i + 1, n - 1)
        ys = np.partition(y, [i, j] if j > i else i)
        q = ys[i] if (i + 1) - target > _EPS else (ys[i] + ys[j]) / 2.0
        model = _pinball_terms_np(y - p, alpha).sum()
        value = 1.0 - model / _pinball_terms_np(y - q, alpha).sum()
    return pl.Series("d2", [value], dtype=F64)


@register(**_D2)
def d2_pinball(
    actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None, alpha: float = 0.5
) -> MetricSpec:
    """D² pinball score: the share of the pinball loss of the α-quantile explained.

    D² = 1 − Σ w L_α(y − ŷ) / Σ w L_α(y − q_α), with L_α(d) = α d for d ≥ 0 and (α − 1) d
    below, and q_α the weighted α-quantile of the actual (scikit-learn's
    ``_weighted_percentile(average=True)``: with unit weights numpy's
    ``averaged_inverted_cdf``). ``alpha`` in (0, 1). The quantile needs every row, so
    the states are the rows themselves (merged by concatenation, not summed). Null for
    a constant actual or fewer than two rows (scikit-learn returns 1.0 or 0.0, or NaN
    below two rows); rows of zero weight are left out.

    References
    ----------
    Koenker, R. & Machado, J. A. F. (1999). Goodness of fit and related inference
    processes for quantile regression. JASA 94(448). scikit-learn ``d2_pinball_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 2, 3], "p": [1, 3, 3]})
    >>> round(df.eval.d2_pinball("y", "p", alpha=0.9), 6)
    0.666667
    >>> df.select(pe.d2_pinball("y", "p", alpha=0.1).round(6)).item()
    -2.0
    """
    return _d2_pinball_spec(actual, pred, weight, check_alpha(alpha))


@register(**_D2)
def d2_absolute_error(
    actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    """D² absolute error score: the share of the absolute error of the median explained.

    D² = 1 − Σ w |y − ŷ| / Σ w |y − median(y)|, the weighted median as scikit-learn's
    ``_weighted_percentile(average=True)`` (the ordinary median with unit weights): the
    :func:`d2_pinball` score at α = ½. The median needs every row, so the states are
    the rows themselves (merged by concatenation, not summed). Null for a constant actual
    or fewer than two rows (scikit-learn returns 1.0 or 0.0, or NaN below two rows).

    References
    ----------
    Koenker, R. & Machado, J. A. F. (1999). Goodness of fit and related inference
    processes for quantile regression. JASA 94(448) (the pinball loss at α = ½).
    scikit-learn ``d2_absolute_error_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [3.0, -0.5, 2.0, 7.0], "p": [2.5, 0.0, 2.0, 8.0]})
    >>> round(df.eval.d2_absolute_error("y", "p"), 6)
    0.764706
    """
    return _d2_pinball_spec(actual, pred, weight, 0.5)


def _tweedie_split(power: float) -> tuple[Any, Any, Any]:
    """The unit deviance as d(y, μ) = a(y) + y · b(μ) + c(μ) (for power ≠ 0), so that the
    deviance of a constant μ over a group is Σ w a(y) + b(μ) Σ w y + c(μ) Σ w: three sums."""
    if power == 1:
        return (
            lambda y: 2.0 * (pl.when(y == 0.0).then(0.0).otherwise(y * y.log()) - y),
            lambda mu: -2.0 * mu.log(),
            lambda mu: 2.0 * mu,
        )
    if power == 2:
        return (
            lambda y: -2.0 * (y.log() + 1.0),
            lambda mu: 2.0 / mu,
            lambda mu: 2.0 * mu.log(),
        )
    p = power
    return (
        lambda y: (
            2.0 * (y.clip(lower_bound=0.0) if p < 0 else y) ** (2.0 - p) / ((1.0 - p) * (2.0 - p))
        ),
        lambda mu: -2.0 * mu ** (1.0 - p) / (1.0 - p),
        lambda mu: 2.0 * mu ** (2.0 - p) / (2.0 - p),
    )


@register(
    **_D2,
    check=lambda args: _deviance_checks(check_tweedie_power(args["power"]), "d2_tweedie")(args),
)
def d2_tweedie(
    actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None, power: float = 0.0
) -> MetricSpec:
    """D² Tweedie score: the share of the Tweedie deviance of power ``power`` explained.

    D² = 1 − Σ w d(y, ŷ) / Σ w d(y, ȳ), d the unit deviance of
    :func:`mean_tweedie_deviance` and ȳ the weighted mean of the actual; power 0 is R².
    Domains as :func:`mean_tweedie_deviance`. Mergeable sums: the baseline deviance is
    Σ w a(y) + b(ȳ) Σ w y + c(ȳ) Σ w with d(y, μ) = a(y) + y b(μ) + c(μ) (centred moments
    at power 0), exact to a relative error of about 1e-16 times the ratio of those terms
    to their sum (large only for a nearly constant actual far from 0). Null for a constant
    actual, fewer than two rows, or (power < 0) a mean of the actual ≤ 0, outside the
    prediction's domain (scikit-learn returns NaN, −inf or a value there).

    References
    ----------
    Hastie, T., Tibshirani, R. & Wainwright, M. (2015). Statistical Learning with Sparsity,
    eq. (3.11). scikit-learn ``d2_tweedie_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0.5, 1.0, 2.5, 7.0], "p": [1.0, 1.0, 5.0, 3.5]})
    >>> round(df.eval.d2_tweedie("y", "p", power=1), 6)
    0.487915
    """
    power = check_tweedie_power(power)
    yk, pk, w = _kept(actual, pred, weight)

    def weighted(v: pl.Expr) -> pl.Expr:
        return v if w is None else w * v

    states = {
        "num": State(weighted(deviance_terms(yk, pk, power))),
        "ymin": State(yk, "min"),
        "ymax": State(yk, "max"),
        "nan": State(yk.is_nan() | pk.is_nan(), "max"),
    }
    if power == 0:
        states["m"] = moments(w, yk, yk)
    else:
        a, b, c = _tweedie_split(power)
        kept = yk.is_not_null()
        total = indicator(kept) if w is None else pl.when(kept).then(w)
        states |= {"w": State(total), "wy": State(weighted(yk)), "wa": State(weighted(a(yk)))}

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        defined = s["ymax"] > s["ymin"]
        if power == 0:
            baseline = s["m"].struct.field("sxx")
        else:
            mu = s["wy"] / s["w"]
            baseline = s["wa"] + b(mu) * s["wy"] + c(mu) * s["w"]
            defined = defined & (mu > 0.0)
        return nan_or(s["nan"], pl.when(defined).then(1.0 - s["num"] / baseline))

    return MetricSpec(states, finalize)


# ---------------------------------------------------------------------------------------
# Residual views
# ---------------------------------------------------------------------------------------

# Acklam's rational approximation of the standard normal quantile (relative error
# < 1.15e-9 on (0, 1)): pure expressions, so the QQ view stays lazy and streamable.
_A = (
    -3.969683028665376e01,
    2.209460984245205e02,
    -2.759285104469687e02,
    1.383577518672690e02,
    -3.066479806614716e01,
    2.506628277459239e00,
)
_B = (
    -5.447609879822406e01,
    1.615858368580409e02,
    -1.556989798598866e02,
    6.680131188771972e01,
    -1.328068155288572e01,
)
_C = (
    -7.784894002430293e-03,
    -3.223964580411365e-01,
    -2.400758276161838e00,
    -2.549732539343734e00,
    4.374664141464968e00,
    2.938163982698783e00,
)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
_P_LOW = 0.02425


def _poly(coefs: Sequence[float], x: pl.Expr) -> pl.Expr:
    out: pl.Expr = pl.lit(coefs[0], dtype=F64)
    for c in coefs[1:]:
        out = out * x + c
    return out


def normal_quantile(p: pl.Expr) -> pl.Expr:
    """Standard normal quantile Φ⁻¹(p) for p in (0, 1) (Acklam's approximation)."""
    return _acklam(_acklam_terms(p))


def _acklam_terms(p: pl.Expr) -> dict[str, pl.Expr]:
    """The terms of :func:`normal_quantile` of ``p``, each read several times (a
    :func:`bind` stage binds them once)."""
    q = p - 0.5
    return {
        "p": p,
        "q": q,
        "r": q * q,
        "ql": (-2.0 * p.log()).sqrt(),
        "qu": (-2.0 * (1.0 - p).log()).sqrt(),
    }


def _acklam(t: Mapping[str, pl.Expr]) -> pl.Expr:
    p, q, r, ql, qu = t["p"], t["q"], t["r"], t["ql"], t["qu"]
    central = _poly(_A, r) * q / (_poly(_B, r) * r + 1.0)
    low = _poly(_C, ql) / (_poly(_D, ql) * ql + 1.0)
    high = -_poly(_C, qu) / (_poly(_D, qu) * qu + 1.0)
    return pl.when(p < _P_LOW).then(low).when(p > 1.0 - _P_LOW).then(high).otherwise(central)


@register(
    task="regression",
    inputs=INPUTS,
    kind="curve",
    summary=False,
    fields=("theoretical", "sample", "residual"),
    per_row=True,  # one point per row (weights move the plotting positions)
)
def residual_qq(actual: IntoExpr, pred: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Normal QQ view of the residuals: theoretical vs sample quantiles.

    The residual r = y − ŷ is variance-normalised, z = (r − r̄) / s with the weighted mean
    and (population) standard deviation, and sorted. Each sorted row gets the normal
    quantile of its plotting position (C_i − w_i / 2) / W (Hazen's (i − ½) / n without
    weights). One point per row of positive weight: ``{theoretical, sample, residual}``.
    Normal quantiles by Acklam's rational approximation (relative error < 1.2e-9).

    References
    ----------
    Wilk, M. B. & Gnanadesikan, R. (1968). Probability plotting methods for the analysis of
    data. Biometrika 55(1).

    Examples
    --------
    Residuals (−1, 0, 1): z = ±√1.5 and 0; positions 1/6, 1/2, 5/6.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1.0, 2.0, 3.0], "p": [2.0, 2.0, 2.0]})
    >>> df.eval.residual_qq("y", "p").select(pl.all().round(4))
    shape: (3, 3)
    ┌─────────────┬─────────┬──────────┐
    │ theoretical ┆ sample  ┆ residual │
    │ ---         ┆ ---     ┆ ---      │
    │ f64         ┆ f64     ┆ f64      │
    ╞═════════════╪═════════╪══════════╡
    │ -0.9674     ┆ -1.2247 ┆ -1.0     │
    │ 0.0         ┆ 0.0     ┆ 0.0      │
    │ 0.9674      ┆ 1.2247  ┆ 1.0      │
    └─────────────┴─────────┴──────────┘
    """
    y, p, w = _inputs(actual, pred, weight, drop_zero_weight=True)

    def moments(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
        w = r["w"].cast(F64, strict=False)
        return {"r": r["r"], "w": w, "mean": _wmean(r["r"], w)}

    def spread(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
        return {**r, "sd": _wmean((r["r"] - r["mean"]) ** 2, r["w"]).sqrt()}

    def positions(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
        rs, ws, mean, sd = r["r"], r["w"], r["mean"], r["sd"]
        # (each residual tested, not the scalar sd alone: a scalar condition makes a Null
        # column when a group_by has no group, Polars 2.1)
        z = pl.when((sd > 0.0) & rs.is_not_null()).then((rs - mean) / sd).otherwise(0.0)
        return {"res": rs, "z": z, "at": (ws.cum_sum() - ws / 2.0) / ws.sum()}

    def terms(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
        return {"res": r["res"], "z": r["z"], **_acklam_terms(r["at"])}

    def points(r: Mapping[str, pl.Expr]) -> pl.Expr:
        quantile = _acklam(r)
        return pl.struct(theoretical=quantile, sample=r["z"], residual=r["res"]).implode()

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        # sorted by residual, tied residuals by weight: the points do not depend on row order
        stages = (moments, spread, positions, terms, points)
        return bind(s, *stages, rows=True, sort_by=("r", "w"))

    return _rows_spec(finalize, r=y - p, w=w)


CONDITIONAL_OF = ("ground_truth", "prediction", "recall", "actual", "pred")
CONDITIONAL_ALIASES = {"actual": "ground_truth", "pred": "prediction"}


@register(
    task="regression",
    inputs=INPUTS,
    kind="curve",
    summary=False,
    fields=("bin", "lower", "upper", "count", "mean_actual", "mean_pred", "bias", "mae", "rmse"),
)
def conditional_table(
    actual: IntoExpr,
    pred: IntoExpr,
    *,
    of: str = "ground_truth",
    bins: int = 10,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Errors conditional on the ground truth, on the prediction, or the conditional recall.

    The conditional views of YDF's regression report, as a table: rows sorted by the
    conditioning value are cut into ``bins`` bins of equal weight (quantile bins; a block
    of tied values is never split and goes to the bin where it starts, so bins can be
    uneven or missing on tied data). Per bin: its ``lower``/``upper`` conditioning values,
    weighted ``count``, ``mean_actual``, ``mean_pred``, ``bias`` (mean ŷ − y), ``mae`` and
    ``rmse``. Plot mean_pred against mean_actual for a calibration-like view.

    ``of`` chooses the view:

    * ``"ground_truth"`` (default; alias ``"actual"``): bins of the actual value;
    * ``"prediction"`` (alias ``"pred"``): bins of the prediction;
    * ``"recall"``: bins of the actual value, with a ``recall`` column (after ``count``):
      the weighted share of the bin's rows whose prediction falls in the same bin, the
      bins read as intervals of the real line (bin b runs from its ``lower`` value to the
      next bin's ``lower``; the first bin is open below, the last open above). It is the
      recall of each bin when the regression is read as an ordinal classification into
      the bins of the actual: 1 when every prediction lands in the bin of its actual.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1.0, 2.0, 3.0, 4.0], "p": [1.5, 1.5, 4.0, 4.0]})
    >>> df.eval.conditional_table("y", "p", bins=2).select("bin", "count", "mean_actual", "mean_pred", "mae")
    shape: (2, 5)
    ┌─────┬───────┬─────────────┬───────────┬─────┐
    │ bin ┆ count ┆ mean_actual ┆ mean_pred ┆ mae │
    │ --- ┆ ---   ┆ ---         ┆ ---       ┆ --- │
    │ i64 ┆ f64   ┆ f64         ┆ f64       ┆ f64 │
    ╞═════╪═══════╪═════════════╪═══════════╪═════╡
    │ 1   ┆ 2.0   ┆ 1.5         ┆ 1.5       ┆ 0.5 │
    │ 2   ┆ 2.0   ┆ 3.5         ┆ 4.0       ┆ 0.5 │
    └─────┴───────┴─────────────┴───────────┴─────┘

    The recall view: bin 1 holds the actuals 1 and 2 (values below 3), bin 2 the actuals
    3 and 4. Predictions 1.5 and 1.5 stay in bin 1; 4.0 is in bin 2 but 2.5 is not.

    >>> df2 = pl.DataFrame({"y": [1.0, 2.0, 3.0, 4.0], "p": [1.5, 1.5, 2.5, 4.0]})
    >>> df2.eval.conditional_table("y", "p", of="recall", bins=2).select("bin", "lower", "count", "recall")
    shape: (2, 4)
    ┌─────┬───────┬───────┬────────┐
    │ bin ┆ lower ┆ count ┆ recall │
    │ --- ┆ ---   ┆ ---   ┆ ---    │
    │ i64 ┆ f64   ┆ f64   ┆ f64    │
    ╞═════╪═══════╪═══════╪════════╡
    │ 1   ┆ 1.0   ┆ 2.0   ┆ 1.0    │
    │ 2   ┆ 3.0   ┆ 2.0   ┆ 0.5    │
    └─────┴───────┴───────┴────────┘
    """
    check_choice("of", of, CONDITIONAL_OF)
    check_positive_int("bins", bins)
    view = CONDITIONAL_ALIASES.get(of, of)
    y, p, w = _inputs(actual, pred, weight, drop_zero_weight=True)
    sums = ("w", "wy", "wp", "wa", "ws") + (("wh",) if view == "recall" else ())
    rows = {
        "v": p if view == "prediction" else y,
        "w": w,
        "wy": w * y,
        "wp": w * p,
        "wa": w * (y - p).abs(),
        "ws": w * (y - p) ** 2,
    }
    if view == "recall":
        rows["p"] = p

    def bins_of_rows(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
        # the bin of each row: that of the cumulative weight before its block of ties
        # (the weight through the row before the block's first), of W / bins each
        v, cw = r["v"], r["w"].cum_sum()
        start = (v != v.shift(1)).fill_null(True)
        before = pl.when(start).then(cw.shift(1).fill_null(0.0)).forward_fill()
        bin_id = (before / r["w"].sum() * bins).floor().clip(0, bins - 1).cast(pl.Int64)
        return {**r, "bin": bin_id}

    def bounds(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
        # each row's bin bounds: its first value, and the next bin's first (null: last)
        first = pl.when((r["bin"] != r["bin"].shift(1)).fill_null(True)).then(r["v"])
        out = {**r, "lower": first.forward_fill(), "next": first.shift(-1).backward_fill()}
        if view == "recall":  # the bins as intervals of the real line, open at both ends
            pr, lower, nxt = r["p"], out["lower"], out["next"]
            low = (r["bin"] == r["bin"].first()) | (pr >= lower)
            same = low & (nxt.is_null() | (pr < nxt))
            hit = pl.when(pr.is_nan()).then(float("nan")).when(same).then(1.0).otherwise(0.0)
            out["wh"] = r["w"] * hit
        return out

    def bin_ends(r: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
        last = (r["bin"] != r["bin"].shift(-1)).fill_null(True)
        ends = {k: r[k].filter(last) for k in ("bin", "lower", "v")}
        return ends | {k: r[k].cum_sum().filter(last) for k in sums}

    def table(r: Mapping[str, pl.Expr]) -> pl.Expr:
        per_bin = {k: r[k] - r[k].shift(1).fill_null(0.0) for k in sums}
        count = per_bin["w"]
        columns = {"bin": r["bin"] + 1, "lower": r["lower"], "upper": r["v"], "count": count}
        if view == "recall":
            columns["recall"] = per_bin["wh"] / count
        columns |= {
            "mean_actual": per_bin["wy"] / count,
            "mean_pred": per_bin["wp"] / count,
            "bias": (per_bin["wp"] - per_bin["wy"]) / count,
            "mae": per_bin["wa"] / count,
            "rmse": (per_bin["ws"] / count).sqrt(),
        }
        return pl.struct(**columns).implode()

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        stages = (bins_of_rows, bounds, bin_ends, table)
        return bind(s, *stages, rows=True, sort_by="v")

    return _rows_spec(finalize, **rows)
