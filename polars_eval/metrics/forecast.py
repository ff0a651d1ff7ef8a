"""Forecasting metrics (SPEC §6), on long data: series id, time, actual, forecast.

The plain regression errors (``mae``, ``rmse``, ``mape``, ``smape``, ``wape``, ``bias`` ...)
of :mod:`polars_eval.metrics.regression` apply per series with
``group_by(series).agg(...)``. This module adds what needs more than two columns:

* :func:`mase` and :func:`rmsse`: errors scaled by the in-sample error of the seasonal
  naive forecast on the training data; :func:`seasonal_scale` computes that scale per
  series from a ``train`` frame, to be joined on the series id;
* :func:`pinball_loss` for quantile forecasts and :func:`coverage` for intervals;
* :func:`with_lead`: the lead time of each row (steps between the forecast's cutoff and its
  target time);
* the rest of ``utilsforecast.losses`` (SPEC §12): :func:`msse`, :func:`rmae`, :func:`cfe`,
  :func:`pis`, :func:`spis`, :func:`linex`, :func:`tweedie_deviance`,
  :func:`scaled_quantile_loss`, :func:`mqloss`, :func:`scaled_mqloss`, :func:`calibration`,
  :func:`winkler` and :func:`scaled_crps`, each as utilsforecast defines it per series.

utilsforecast has no weights; here ``weight=`` always gives the weighted version of the
same formula (each sum over rows weighted, so integer weights equal repeated rows, and a
row of weight 0 is left out). Every metric of this module is a weighted sum or a ratio of
weighted sums: its states merge by addition, so a series split across partitions merges
exactly and the pooled value over several series is the same formula over all their rows.

``df.eval.forecast(...)`` does all of it in one call: per-series metrics, their mean across
series and the pooled value, by lead if asked.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import polars as pl

from polars_eval._core.registry import register
from polars_eval._core.spec import MetricSpec, State, nan_or, weighted_mean
from polars_eval._exprs import (
    F64,
    column_name,
    count_true,
    not_null,
    safe_div,
    to_float,
    weight_expr,
)
from polars_eval._params import (
    check_alpha,
    check_fraction,
    check_number,
    check_positive_int,
    check_tweedie_power,
)
from polars_eval._typing import IntoExpr
from polars_eval._validate import Check
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics.regression import _deviance_checks, deviance_terms

__all__ = [
    "calibration",
    "cfe",
    "coverage",
    "linex",
    "mase",
    "mqloss",
    "msse",
    "pinball_loss",
    "pis",
    "rmae",
    "rmsse",
    "scaled_crps",
    "scaled_mqloss",
    "scaled_quantile_loss",
    "seasonal_scale",
    "spis",
    "tweedie_deviance",
    "winkler",
    "with_lead",
]

SCALED_INPUTS = {"actual": "numeric", "forecast": "numeric", "scale": "numeric", "weight": "weight"}
NO_SCALE = "no row with a positive in-sample scale (constant or too short training series)"
EMPTY = "empty group"
SCALES = ("mase_scale", "rmsse_scale", "spis_scale")
"""The per-series scale columns of :func:`seasonal_scale`."""

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


def valid_scale(scale: IntoExpr) -> pl.Expr:
    """The scale, null where it is 0 (or negative): such rows are left out (SPEC §6)."""
    s = to_float(scale)
    return pl.when(s > 0.0).then(s).otherwise(None)


def _masked(
    actual: IntoExpr, forecast: IntoExpr, scale: IntoExpr, weight: IntoExpr | None
) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """Inputs without filtering (cheaper inside ``group_by``): the weight is 0 on rows with a
    null input or a scale that is not positive, null where the weight is null, so weighted
    sums skip those rows (the scaled error of such a row is null, never x / 0)."""
    y, f, s = to_float(actual), to_float(forecast), valid_scale(scale)
    return y, f, s, _row_weight(weight, y, f, s)


def _row_weight(weight: IntoExpr | None, *inputs: pl.Expr) -> pl.Expr:
    """The weight of each row, 0 where an input is null (null where the weight is null)."""
    if weight is None:  # the same as a weight of 1, with fewer passes
        return not_null(*inputs).cast(F64)
    w = weight_expr(weight)
    return w * not_null(*inputs, w).cast(F64)


def _mean_nan_guarded(term: pl.Expr, weight: IntoExpr | None, *inputs: pl.Expr) -> MetricSpec:
    """The weighted mean of ``term`` over the rows where no input (nor the weight) is null;
    NaN when such a row holds a NaN (``max`` and comparisons would hide it)."""
    w = weight_expr(weight)
    kept = not_null(*inputs, w)
    mean = weighted_mean(term, pl.when(kept).then(w).otherwise(0.0))
    nan = State(pl.when(kept).then(pl.any_horizontal([x.is_nan() for x in inputs])), "max")
    return MetricSpec({**mean.states, "nan": nan}, lambda s: nan_or(s["nan"], mean.finalize(s)))


SCALED: dict[str, Any] = dict(
    task="forecast", inputs=SCALED_INPUTS, higher_is_better=False, lower=0.0, undefined=NO_SCALE
)
"""The registration of the scaled errors. Each also declares ``train_scale=``, the column of
:func:`seasonal_scale` that ``train=`` computes for its ``scale``; ``late_of=``, the unscaled
metric whose per-series states, divided by the series' scale, are its states (so a table
joins one scale per series, not per row). MASE and RMSSE are in the default table of
``df.eval.forecast`` with ``train=`` (``summary=``, their places after the point errors);
every other forecast metric is computed when ``metrics=`` names it (``summary=False``)."""


@register(
    **SCALED,
    train_scale="mase_scale",
    late_of="mae",
    summary={"forecast": {"place": 8, "train": True}},
)
def mase(
    actual: IntoExpr, forecast: IntoExpr, scale: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    """Mean absolute scaled error, Σ w |y − ŷ| / scale / Σ w.

    ``scale`` is the series' in-sample mean absolute error of the seasonal naive forecast,
    ``mean_t |y_t − y_{t−m}|`` over its training data (column ``mase_scale`` of
    :func:`seasonal_scale`, joined on the series id). Per series (``group_by(series)``)
    this is MAE / scale; over several series it is the pooled MASE, the mean of every
    row's scaled error. Rows whose scale is null or 0 (a constant training series, or one
    not longer than the season) are left out; a series with only such rows is null.

    References
    ----------
    Hyndman, R. J. & Koehler, A. B. (2006). Another look at measures of forecast accuracy.
    International Journal of Forecasting 22(4).

    Examples
    --------
    Training series 1, 3, 2, 4: naive in-sample errors 2, 1, 2, scale 5/3. Forecast errors
    1 and 2: MAE 1.5, MASE 0.9.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> train = pl.DataFrame({"id": ["a"] * 4, "t": [1, 2, 3, 4], "y": [1.0, 3.0, 2.0, 4.0]})
    >>> test = pl.DataFrame({"id": ["a", "a"], "t": [5, 6], "y": [5.0, 3.0], "f": [4.0, 5.0]})
    >>> scale = pe.seasonal_scale(train, series="id", time="t", actual="y")
    >>> test.join(scale, on="id").group_by("id").agg(pe.mase("y", "f", "mase_scale").round(6))
    shape: (1, 2)
    ┌─────┬──────┐
    │ id  ┆ mase │
    │ --- ┆ ---  │
    │ str ┆ f64  │
    ╞═════╪══════╡
    │ a   ┆ 0.9  │
    └─────┴──────┘
    """
    y, f, s, w = _masked(actual, forecast, scale, weight)
    return weighted_mean((y - f).abs() / s, w)


@register(
    **SCALED,
    train_scale="rmsse_scale",
    late_of="mse",
    summary={"forecast": {"place": 9, "train": True}},
)
def rmsse(
    actual: IntoExpr, forecast: IntoExpr, scale: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    """Root mean squared scaled error, √(Σ w (y − ŷ)² / scale / Σ w).

    ``scale`` is the series' in-sample mean *squared* error of the seasonal naive forecast,
    ``mean_t (y_t − y_{t−m})²`` (column ``rmsse_scale`` of :func:`seasonal_scale`). Per
    series this is √(MSE / scale), as in the M5 competition and utilsforecast's ``rmsse``.
    Zero or null scales as in :func:`mase`.

    References
    ----------
    Makridakis, S., Spiliotis, E. & Assimakopoulos, V. (2022). M5 accuracy competition:
    results, findings, and conclusions. International Journal of Forecasting 38(4).

    Examples
    --------
    Training 1, 3, 2, 4: squared naive errors 4, 1, 4, scale 3. Errors 1, 2: MSE 2.5.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [5.0, 3.0], "f": [4.0, 5.0], "scale": [3.0, 3.0]})
    >>> round(df.select(pe.rmsse("y", "f", "scale")).item() ** 2, 12)  # 2.5 / 3
    0.833333333333
    """
    y, f, s, w = _masked(actual, forecast, scale, weight)
    return weighted_mean((y - f) ** 2 / s, w, then=pl.Expr.sqrt)


@register(
    task="forecast",
    inputs={"actual": "numeric", "quantile_pred": "numeric", "weight": "weight"},
    higher_is_better=False,
    lower=0.0,
    undefined=EMPTY,
    summary=False,
)
def pinball_loss(
    actual: IntoExpr,
    quantile_pred: IntoExpr,
    *,
    quantile: float,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Pinball (quantile) loss of a forecast of the ``quantile`` (in (0, 1)).

    L = Σ w · max(q (y − ŷ), (q − 1)(y − ŷ)) / Σ w: under-forecasts cost q per unit,
    over-forecasts 1 − q. At q = 0.5 it is half the MAE. As utilsforecast's
    ``quantile_loss``.

    References
    ----------
    Koenker, R. & Bassett, G. (1978). Regression quantiles. Econometrica 46(1).

    Examples
    --------
    q = 0.9: an under-forecast by 10 costs 9, an over-forecast by 10 costs 1.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [20.0, 10.0], "q90": [10.0, 20.0]})
    >>> round(df.select(pe.pinball_loss("y", "q90", quantile=0.9)).item(), 12)
    5.0
    """
    check_fraction("quantile", quantile, low_open=True, high_open=True)
    y, f = to_float(actual), to_float(quantile_pred)
    d = y - f
    loss = pl.max_horizontal(quantile * d, (quantile - 1.0) * d)
    return _mean_nan_guarded(loss, weight, y, f)


@register(
    task="forecast",
    inputs={"actual": "numeric", "lower": "numeric", "upper": "numeric", "weight": "weight"},
    higher_is_better=None,
    lower=0.0,
    upper=1.0,
    undefined=EMPTY,
    summary=False,
)
def coverage(
    actual: IntoExpr, lower: IntoExpr, upper: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    """Share of actuals inside their prediction interval, lower ≤ y ≤ upper (weighted).

    Compare with the nominal level of the interval (0.8 for an 80 % interval). As
    utilsforecast's ``coverage``. NaN in gives NaN.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1.0, 5.0, 3.0, 3.0], "lo": [0.0, 0.0, 3.0, 4.0], "hi": [2.0, 4.0, 3.0, 6.0]})
    >>> df.select(pe.coverage("y", "lo", "hi")).item()
    0.5
    """
    y, lo, hi = to_float(actual), to_float(lower), to_float(upper)
    inside = ((y >= lo) & (y <= hi)).cast(F64)
    return _mean_nan_guarded(inside, weight, y, lo, hi)


# ---------------------------------------------------------------------------------------
# The rest of utilsforecast.losses (SPEC §12)
# ---------------------------------------------------------------------------------------

POINT_INPUTS = {"actual": "numeric", "forecast": "numeric", "weight": "weight"}
POINT_LOSS: dict[str, Any] = dict(
    task="forecast",
    inputs=POINT_INPUTS,
    higher_is_better=False,
    lower=0.0,
    undefined=EMPTY,
    summary=False,
)
"""The registration of a loss outside the default table (>= 0, lower is better, undefined
on an empty series)."""
QUANTILE_INPUTS = {"actual": "numeric", "quantile_preds": "numeric", "weight": "weight"}
UTILSFORECAST = "Nixtla, utilsforecast, ``utilsforecast.losses.{name}``."


def _weighted_sum(term: pl.Expr, w: pl.Expr) -> MetricSpec:
    """Σ w·term, null when Σ w = 0 (an empty series is undefined, not 0)."""

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        return pl.when(s["w"] != 0.0).then(s["sum"])

    return MetricSpec({"w": State(w), "sum": State(term * w)}, finalize)


def _pinball(d: pl.Expr, q: float) -> pl.Expr:
    """The pinball loss of an error d = y − ŷ at quantile q: q·d if d ≥ 0, (q − 1)·d if
    not (max(q d, (q − 1) d) without ``max_horizontal``, which would drop a NaN)."""
    return pl.when(d < 0.0).then((q - 1.0) * d).otherwise(q * d)


def _quantile_columns(
    quantile_preds: Sequence[IntoExpr], quantiles: Sequence[float]
) -> tuple[list[pl.Expr], list[float]]:
    """The quantile forecast columns and their quantiles, checked: as many of each, every
    quantile in (0, 1)."""
    if isinstance(quantile_preds, (str, pl.Expr)) or not isinstance(quantile_preds, Sequence):
        raise InvalidParameterError(
            f"quantile_preds must be a list of columns, one per quantile; got {quantile_preds!r}"
        )
    if isinstance(quantiles, (str, bytes)):
        raise InvalidParameterError(f"quantiles must be a list of numbers; got {quantiles!r}")
    try:
        qs = list(quantiles)
    except TypeError:
        raise InvalidParameterError(
            f"quantiles must be a list of numbers; got {quantiles!r}"
        ) from None
    if not quantile_preds:
        raise InvalidParameterError("quantile_preds must name at least one column; got []")
    if len(qs) != len(quantile_preds):
        raise InvalidParameterError(
            "quantiles must give one quantile per column of quantile_preds; got "
            f"{len(quantile_preds)} columns and {len(qs)} quantiles"
        )
    out = []
    for q in qs:
        value = float(q) if isinstance(q, numbers.Real) and not isinstance(q, bool) else q
        check_fraction("each quantile", value, low_open=True, high_open=True)
        out.append(value)
    return [to_float(c) for c in quantile_preds], out


def _mean_pinball(y: pl.Expr, preds: list[pl.Expr], quantiles: list[float]) -> pl.Expr:
    """Per row: the mean over the quantiles of the pinball losses."""
    losses = [_pinball(y - f, q) for f, q in zip(preds, quantiles, strict=True)]
    return pl.sum_horizontal(losses) / float(len(losses))


def _multi_quantile_loss(
    actual: IntoExpr,
    quantile_preds: Sequence[IntoExpr],
    quantiles: Sequence[float],
    weight: IntoExpr | None,
    *also: pl.Expr,
) -> tuple[pl.Expr, pl.Expr]:
    """Per row: the mean pinball loss over the quantile columns (checked with their
    quantiles), and the row's weight, 0 where the actual, a quantile column or one of
    ``also`` is null."""
    preds, qs = _quantile_columns(quantile_preds, quantiles)
    y = to_float(actual)
    return _mean_pinball(y, preds, qs), _row_weight(weight, y, *also, *preds)


@register(**SCALED, train_scale="rmsse_scale", late_of="mse", summary=False)
def msse(
    actual: IntoExpr, forecast: IntoExpr, scale: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    """Mean squared scaled error, Σ w (y − ŷ)² / scale / Σ w (:func:`rmsse` squared).

    ``scale`` is the series' in-sample mean squared error of the seasonal naive forecast
    (column ``rmsse_scale`` of :func:`seasonal_scale`). Per series: MSE / scale, as
    utilsforecast's ``msse``; over several series the mean of every row's scaled squared
    error. Zero or null scales as in :func:`mase`.

    References
    ----------
    Hyndman, R. J. & Athanasopoulos, G. (2021). Forecasting: principles and practice, 3rd
    ed., §5.8 (scaled errors).
    {uf}

    Examples
    --------
    Errors 1 and 2 (MSE 2.5) against an in-sample MSE of 2:

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"id": ["a", "a"], "y": [5.0, 3.0], "f": [4.0, 5.0], "scale": [2.0, 2.0]}})
    >>> df.group_by("id").agg(pe.msse("y", "f", "scale")).item(0, "msse")
    1.25
    """
    y, f, s, w = _masked(actual, forecast, scale, weight)
    return weighted_mean((y - f) ** 2 / s, w)


@register(
    task="forecast",
    inputs={**POINT_INPUTS, "baseline": "numeric"},
    higher_is_better=False,
    lower=0.0,
    undefined="the baseline has no error (its mean absolute error is 0) or the series is empty",
    summary=False,
)
def rmae(
    actual: IntoExpr,
    forecast: IntoExpr,
    baseline: IntoExpr,
    *,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Relative mean absolute error: the MAE of ``forecast`` over the MAE of ``baseline``.

    RMAE = Σ w |y − ŷ| / Σ w |y − b|, with b the baseline model's forecast of the same row
    (e.g. the seasonal naive): below 1 the forecast beats the baseline. Per series, as
    utilsforecast's ``rmae``; over several series the ratio of the pooled MAEs. A row with
    a null in any of the three columns is left out (utilsforecast raises on a null
    baseline). Null when the baseline's MAE is 0 (utilsforecast: NaN).

    References
    ----------
    Davydenko, A. & Fildes, R. (2013). Measuring forecasting accuracy: the case of
    judgmental adjustments to SKU-level demand forecasts. International Journal of
    Forecasting 29(3).
    {uf}

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [5.0, 3.0], "f": [4.0, 4.0], "naive": [3.0, 5.0]}})
    >>> df.eval.rmae("y", "f", baseline="naive")
    0.5
    """
    y, f, b = to_float(actual), to_float(forecast), to_float(baseline)
    w = _row_weight(weight, y, f, b)
    states = {"ae": State(w * (y - f).abs()), "be": State(w * (y - b).abs())}
    return MetricSpec(states, lambda s: safe_div(s["ae"], s["be"]))


@register(
    task="forecast", inputs=POINT_INPUTS, higher_is_better=None, undefined=EMPTY, summary=False
)
def cfe(actual: IntoExpr, forecast: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Cumulative forecast error, Σ w (ŷ − y): the total signed error of a series.

    Positive when the forecast is above the actuals in total (over-forecasting), as
    :func:`bias`, which is this sum divided by Σ w. utilsforecast's ``cfe`` computes the
    same sum, ŷ − y, per series (its docstring reads the sign the other way round). A sum,
    not a mean: over several series it adds up their totals. Null on an empty series.

    References
    ----------
    {uf}

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"id": ["a", "a", "b"], "y": [5.0, 3.0, 2.0], "f": [4.0, 5.0, 2.5]}})
    >>> df.group_by("id").agg(pe.cfe("y", "f")).sort("id")
    shape: (2, 2)
    ┌─────┬─────┐
    │ id  ┆ cfe │
    │ --- ┆ --- │
    │ str ┆ f64 │
    ╞═════╪═════╡
    │ a   ┆ 1.0 │
    │ b   ┆ 0.5 │
    └─────┴─────┘
    """
    y, f = to_float(actual), to_float(forecast)
    return _weighted_sum(f - y, _row_weight(weight, y, f))


@register(**POINT_LOSS)
def pis(actual: IntoExpr, forecast: IntoExpr, *, weight: IntoExpr | None = None) -> MetricSpec:
    """Absolute periods in stock, Σ w |ŷ − y|: the total absolute error of a series.

    As utilsforecast's ``pis``: a sum, scale-dependent (see :func:`spis` for the scaled
    form). Null on an empty series.

    References
    ----------
    Wallström, P. & Segerstedt, A. (2010). Evaluation of forecasting error measurements
    and techniques for intermittent demand. International Journal of Production Economics
    128(2).
    {uf}

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [5.0, 3.0, 2.0], "f": [4.0, 5.0, 2.5]}})
    >>> df.eval.pis("y", "f")
    3.5
    """
    y, f = to_float(actual), to_float(forecast)
    return _weighted_sum((f - y).abs(), _row_weight(weight, y, f))


@register(**SCALED, train_scale="spis_scale", summary=False)
def spis(
    actual: IntoExpr, forecast: IntoExpr, scale: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    """Scaled absolute periods in stock, Σ w |ŷ − y| / scale (the mean in-sample actual).

    :func:`pis` divided by ``scale``, the mean of the series' training actuals (column
    ``spis_scale`` of :func:`seasonal_scale`; ``train=`` on the namespace), as
    utilsforecast's ``spis``. Rows whose scale is null or not positive (a demand series
    with no positive mean) are left out; a series with only such rows is null. Over
    several series: the sum of the series' values.

    References
    ----------
    {uf}

    Examples
    --------
    Absolute errors 1, 2, 0.5 over a mean training demand of 5:

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [5.0, 3.0, 2.0], "f": [4.0, 5.0, 2.5], "scale": [5.0] * 3}})
    >>> round(df.eval.spis("y", "f", "scale"), 12)
    0.7
    """
    y, f, s, w = _masked(actual, forecast, scale, weight)
    return _weighted_sum((f - y).abs() / s, w)


def _check_a(a: Any) -> float:
    check_number("a", a)
    if a == 0:
        raise InvalidParameterError("a must be non-zero (the linex loss of a = 0 is 0); got 0")
    return float(a)


@register(**POINT_LOSS)
def linex(
    actual: IntoExpr, forecast: IntoExpr, *, a: float = 1.0, weight: IntoExpr | None = None
) -> MetricSpec:
    """Linear-exponential (linex) loss, Σ w (exp(a e) − a e − 1) / Σ w with e = y − ŷ.

    Asymmetric: with ``a`` > 0 an under-forecast (y > ŷ) costs exponentially and an
    over-forecast about linearly; ``a`` < 0 the other way round. ``a`` must be non-zero
    (default 1, as utilsforecast's ``linex``). Null on an empty series.

    References
    ----------
    Varian, H. R. (1975). A Bayesian approach to real estate assessment. In Studies in
    Bayesian Econometrics and Statistics.
    {uf}

    Examples
    --------
    Errors ln 2 and 0 at a = 1: (2 − ln 2 − 1 + 0) / 2.

    >>> import math
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [math.log(2.0), 1.0], "f": [0.0, 1.0]}})
    >>> round(df.eval.linex("y", "f", a=1.0), 12) == round((1.0 - math.log(2.0)) / 2, 12)
    True
    """
    a = _check_a(a)
    y, f = to_float(actual), to_float(forecast)
    e = y - f
    return weighted_mean((a * e).exp() - a * e - 1.0, _row_weight(weight, y, f))


def _tweedie_checks(args: Mapping[str, Any]) -> list[Any]:
    """The deviance's domain (:func:`mean_tweedie_deviance`'s), on the forecast column."""
    power = check_tweedie_power(args["power"], negative=False, metric="tweedie_deviance")
    check = _deviance_checks(power, "tweedie_deviance")
    return check({"actual": args["actual"], "pred": args["forecast"]})  # type: ignore[no-any-return]


@register(**POINT_LOSS, check=_tweedie_checks)
def tweedie_deviance(
    actual: IntoExpr,
    forecast: IntoExpr,
    *,
    power: float = 1.5,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Mean Tweedie deviance of power ``power`` (default 1.5, as utilsforecast's).

    The weighted mean of the unit deviance d(y, ŷ) of
    :func:`polars_eval.metrics.regression.deviance_terms`: 0 squared error, 1 Poisson,
    (1, 2) compound Poisson-Gamma, 2 Gamma, > 2 e.g. inverse Gaussian — per series as
    utilsforecast's ``tweedie_deviance``, the same value as :func:`mean_tweedie_deviance`
    with the forecast as prediction. ``power`` must be 0 or >= 1: negative powers are
    refused as by utilsforecast, and 0 < power < 1 (no Tweedie distribution; utilsforecast
    evaluates its formula there) as by scikit-learn. The namespace checks the domain: for
    1 <= power < 2 actuals >= 0 and forecasts > 0, for power >= 2 both > 0.

    References
    ----------
    Jørgensen, B. (1997). The Theory of Dispersion Models. Chapman & Hall.
    {uf}

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [2.0, 0.5, 1.0, 4.0], "f": [0.5, 0.5, 2.0, 2.0]}})
    >>> round(df.eval.tweedie_deviance("y", "f", power=1.5), 4)
    1.0711
    """
    power = check_tweedie_power(power, negative=False, metric="tweedie_deviance")
    y, f = to_float(actual), to_float(forecast)
    return weighted_mean(deviance_terms(y, f, power), _row_weight(weight, y, f))


@register(
    task="forecast",
    inputs={
        "actual": "numeric",
        "quantile_pred": "numeric",
        "scale": "numeric",
        "weight": "weight",
    },
    higher_is_better=False,
    lower=0.0,
    undefined=NO_SCALE,
    train_scale="mase_scale",
    summary=False,
)
def scaled_quantile_loss(
    actual: IntoExpr,
    quantile_pred: IntoExpr,
    scale: IntoExpr,
    *,
    quantile: float,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Scaled quantile loss: the pinball loss of a ``quantile`` forecast over the scale.

    Σ w ρ_q(y − ŷ_q) / scale / Σ w, with ``scale`` the series' in-sample mean absolute
    error of the seasonal naive forecast (column ``mase_scale`` of
    :func:`seasonal_scale`; ``train=`` on the namespace), as utilsforecast's
    ``scaled_quantile_loss`` (the M5 uncertainty competition's measure with season 1).
    Zero or null scales as in :func:`mase`.

    References
    ----------
    Makridakis, S. et al. (2022). The M5 uncertainty competition: results, findings and
    conclusions. International Journal of Forecasting 38(4).
    {uf}

    Examples
    --------
    q = 0.9: an under-forecast by 10 costs 9, an over-forecast by 10 costs 1; scale 2.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [20.0, 10.0], "q90": [10.0, 20.0], "scale": [2.0, 2.0]}})
    >>> round(df.eval.scaled_quantile_loss("y", "q90", "scale", quantile=0.9), 12)
    2.5
    """
    check_fraction("quantile", quantile, low_open=True, high_open=True)
    y, f, s, w = _masked(actual, quantile_pred, scale, weight)
    return weighted_mean(_pinball(y - f, quantile) / s, w)


_MQ_DOC = """
    ``quantile_preds`` is the list of quantile forecast columns and ``quantiles`` their
    quantiles, in the same order (utilsforecast's ``models={"model": [...]}`` and
    ``quantiles=``), e.g. ``["q10", "q50", "q90"]`` with ``[0.1, 0.5, 0.9]``; every
    quantile in (0, 1). A row with a null in the actual or in any quantile column is
    left out."""


@register(**{**POINT_LOSS, "inputs": QUANTILE_INPUTS})
def mqloss(
    actual: IntoExpr,
    quantile_preds: Sequence[IntoExpr],
    *,
    quantiles: Sequence[float],
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Multi-quantile loss: the :func:`pinball_loss` averaged over several quantiles.

    MQL = Σ_i w_i (1/Q) Σ_q ρ_q(y_i − ŷ_{{i,q}}) / Σ_i w_i, as utilsforecast's ``mqloss``
    (the mean over the quantiles of each quantile's loss). Over evenly spaced quantiles it
    approximates the CRPS of the forecast distribution.{mq}

    References
    ----------
    Gneiting, T. & Raftery, A. E. (2007). Strictly proper scoring rules, prediction, and
    estimation. Journal of the American Statistical Association 102(477).
    {uf}

    Examples
    --------
    Each quantile misses by 1 on the side it should: every loss is 0.1.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [2.0, 3.0], "q10": [1.0, 2.0], "q90": [3.0, 4.0]}})
    >>> round(df.eval.mqloss("y", ["q10", "q90"], quantiles=[0.1, 0.9]), 12)
    0.1
    """
    return weighted_mean(*_multi_quantile_loss(actual, quantile_preds, quantiles, weight))


@register(
    task="forecast",
    inputs={**QUANTILE_INPUTS, "scale": "numeric"},
    higher_is_better=False,
    lower=0.0,
    undefined=NO_SCALE,
    train_scale="mase_scale",
    summary=False,
)
def scaled_mqloss(
    actual: IntoExpr,
    quantile_preds: Sequence[IntoExpr],
    scale: IntoExpr,
    *,
    quantiles: Sequence[float],
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Scaled multi-quantile loss: :func:`mqloss` over the in-sample scale.

    Σ w (1/Q) Σ_q ρ_q(y − ŷ_q) / scale / Σ w, with ``scale`` as in
    :func:`scaled_quantile_loss` (column ``mase_scale`` of :func:`seasonal_scale`;
    ``train=`` on the namespace), as utilsforecast's ``scaled_mqloss``. Zero or null
    scales as in :func:`mase`.{mq}

    References
    ----------
    Makridakis, S. et al. (2022). The M5 uncertainty competition: results, findings and
    conclusions. International Journal of Forecasting 38(4).
    {uf}

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [2.0, 3.0], "q10": [1.0, 2.0], "q90": [3.0, 4.0], "s": [0.5, 0.5]}})
    >>> round(df.eval.scaled_mqloss("y", ["q10", "q90"], "s", quantiles=[0.1, 0.9]), 12)
    0.2
    """
    s = valid_scale(scale)
    loss, w = _multi_quantile_loss(actual, quantile_preds, quantiles, weight, s)
    return weighted_mean(loss / s, w)


@register(
    task="forecast",
    inputs=QUANTILE_INPUTS,
    higher_is_better=False,
    lower=0.0,
    undefined="all actuals are 0 (or the series is empty)",
    summary=False,
)
def scaled_crps(
    actual: IntoExpr,
    quantile_preds: Sequence[IntoExpr],
    *,
    quantiles: Sequence[float],
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Scaled CRPS: 2 Σ w (1/Q) Σ_q ρ_q(y − ŷ_q) / Σ w |y|.

    The multi-quantile loss summed over the rows and divided by the sum of the absolute
    actuals (Rangapuram et al. 2021), as utilsforecast's ``scaled_crps``, which adds
    machine epsilon to the denominator (a relative difference below 1e-15); here a series
    whose actuals are all 0 is null instead.{mq}

    References
    ----------
    Rangapuram, S. S. et al. (2021). End-to-end learning of coherent probabilistic
    forecasts for hierarchical time series. ICML.
    {uf}

    Examples
    --------
    Losses 0.1 on both rows, actuals 2 and 3: 2 · 0.2 / 5.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [2.0, 3.0], "q10": [1.0, 2.0], "q90": [3.0, 4.0]}})
    >>> round(df.eval.scaled_crps("y", ["q10", "q90"], quantiles=[0.1, 0.9]), 12)
    0.08
    """
    loss, w = _multi_quantile_loss(actual, quantile_preds, quantiles, weight)
    states = {"loss": State(w * loss), "norm": State(w * to_float(actual).abs())}
    return MetricSpec(states, lambda s: safe_div(2.0 * s["loss"], s["norm"]))


@register(
    task="forecast",
    inputs={"actual": "numeric", "quantile_pred": "numeric", "weight": "weight"},
    higher_is_better=None,
    lower=0.0,
    upper=1.0,
    undefined=EMPTY,
    summary=False,
)
def calibration(
    actual: IntoExpr, quantile_pred: IntoExpr, *, weight: IntoExpr | None = None
) -> MetricSpec:
    """Share of actuals at or below their quantile forecast, y ≤ ŷ_q (weighted).

    Compare with the forecast's nominal quantile: a calibrated 0.9 quantile has 0.9. As
    utilsforecast's ``calibration``, one quantile column per call (utilsforecast's
    ``models={{"model": "q90"}}``); call it once per quantile. NaN in gives NaN.

    References
    ----------
    Gneiting, T., Balabdaoui, F. & Raftery, A. E. (2007). Probabilistic forecasts,
    calibration and sharpness. Journal of the Royal Statistical Society B 69(2).
    {uf}

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [1.0, 5.0, 3.0, 4.0], "q90": [2.0, 4.0, 3.0, 6.0]}})
    >>> df.eval.calibration("y", "q90")
    0.75
    """
    y, f = to_float(actual), to_float(quantile_pred)
    return _mean_nan_guarded((y <= f).cast(F64), weight, y, f)


def _interval_order(args: Mapping[str, Any]) -> list[Any]:
    """The interval's ends in order: ``upper`` >= ``lower`` on every row."""
    lo, hi = to_float(args["lower"]), to_float(args["upper"])
    return [
        Check(
            column=column_name(args["upper"]),
            bad=(hi < lo).fill_null(False),
            values=to_float(args["upper"]),
            problem=f'must not be below "{column_name(args["lower"])}" (the lower end of the '
            "interval); found {n} rows with upper < lower",
        )
    ]


@register(
    task="forecast",
    inputs={"actual": "numeric", "lower": "numeric", "upper": "numeric", "weight": "weight"},
    higher_is_better=False,
    lower=0.0,
    undefined=EMPTY,
    check=_interval_order,
    summary=False,
)
def winkler(
    actual: IntoExpr,
    lower: IntoExpr,
    upper: IntoExpr,
    *,
    alpha: float,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Winkler (interval) score of a central prediction interval of level 1 − ``alpha``.

    Per row: the width u − l, plus (2/α)(l − y) when y < l or (2/α)(y − u) when y > u;
    the weighted mean over rows. Lower is better: narrow intervals that hold the actual.
    ``alpha`` is the interval's nominal miss rate, in (0, 1): 0.2 for an 80 % interval,
    which utilsforecast's ``winkler_score`` calls ``level=80`` (the name ``level`` is the
    confidence level of ``ci=`` on the namespace). The namespace checks that no upper end
    is below its lower end. NaN in gives NaN.

    References
    ----------
    Winkler, R. L. (1972). A decision-theoretic approach to interval estimation. Journal
    of the American Statistical Association 67(337).
    Gneiting, T. & Raftery, A. E. (2007), §6.2 (the interval score).
    {uf}

    Examples
    --------
    An 80 % interval (2/α = 10): widths 2 and 2, the second actual 0.5 above its upper end.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [1.0, 4.5], "lo": [0.0, 2.0], "hi": [2.0, 4.0]}})
    >>> round(df.eval.winkler("y", "lo", "hi", alpha=0.2), 12)
    4.5
    """
    alpha = check_alpha(alpha)
    y, lo, hi = to_float(actual), to_float(lower), to_float(upper)
    penalty = (
        pl.when(y < lo)
        .then((2.0 / alpha) * (lo - y))
        .when(y > hi)
        .then((2.0 / alpha) * (y - hi))
        .otherwise(0.0)
    )
    return _mean_nan_guarded(hi - lo + penalty, weight, y, lo, hi)


for _fn, _name in (
    (msse, "msse"),
    (rmae, "rmae"),
    (cfe, "cfe"),
    (pis, "pis"),
    (spis, "spis"),
    (linex, "linex"),
    (tweedie_deviance, "tweedie_deviance"),
    (scaled_quantile_loss, "scaled_quantile_loss"),
    (mqloss, "mqloss"),
    (scaled_mqloss, "scaled_mqloss"),
    (scaled_crps, "scaled_crps"),
    (calibration, "calibration"),
    (winkler, "winkler_score"),
):
    _fn.__doc__ = (_fn.__doc__ or "").format(uf=UTILSFORECAST.format(name=_name), mq=_MQ_DOC)


def seasonal_scale(
    train: FrameT,
    *,
    series: str | Sequence[str],
    time: str,
    actual: str,
    season_length: int = 1,
) -> FrameT:
    """Per series: the in-sample errors of the seasonal naive forecast on ``train``.

    For each series sorted by ``time``: the differences d_t = y_t − y_{t−m} (m =
    ``season_length``), ``mase_scale`` = mean |d_t| (the scale of :func:`mase`,
    :func:`scaled_quantile_loss` and :func:`scaled_mqloss`) and ``rmsse_scale`` = mean d_t²
    (of :func:`rmsse` and :func:`msse`). Null (not 0) when the series has no more than m
    rows or is constant at lag m, so that those metrics are null for that series (SPEC §6).
    Also ``spis_scale``, the mean training actual (the scale of :func:`spis`; null when
    not positive), and ``n_train``, the number of training rows. Rows with a null actual
    are dropped first.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> train = pl.DataFrame({"id": ["a"] * 4 + ["b"], "t": [1, 2, 3, 4, 1], "y": [1.0, 3.0, 2.0, 4.0, 7.0]})
    >>> pe.seasonal_scale(train, series="id", time="t", actual="y").sort("id")
    shape: (2, 5)
    ┌─────┬────────────┬─────────────┬────────────┬─────────┐
    │ id  ┆ mase_scale ┆ rmsse_scale ┆ spis_scale ┆ n_train │
    │ --- ┆ ---        ┆ ---         ┆ ---        ┆ ---     │
    │ str ┆ f64        ┆ f64         ┆ f64        ┆ i64     │
    ╞═════╪════════════╪═════════════╪════════════╪═════════╡
    │ a   ┆ 1.666667   ┆ 3.0         ┆ 2.5        ┆ 4       │
    │ b   ┆ null       ┆ null        ┆ 7.0        ┆ 1       │
    └─────┴────────────┴─────────────┴────────────┴─────────┘
    """
    check_positive_int("season_length", season_length)
    keys = [series] if isinstance(series, str) else list(series)
    if not isinstance(train, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            f"train must be a polars DataFrame or LazyFrame; got {type(train).__name__}"
        )
    presorted = isinstance(train, pl.DataFrame) and sorted_by(train, keys, time)
    out = scale_query(train.lazy(), keys, time, actual, season_length, presorted=presorted)
    if isinstance(train, pl.DataFrame):
        return out.collect()  # type: ignore[return-value]
    return out  # type: ignore[return-value]


def scale_query(
    lf: pl.LazyFrame,
    keys: list[str],
    time: str,
    actual: str,
    season_length: int,
    *,
    duplicates: str | None = None,
    presorted: bool = False,
) -> pl.LazyFrame:
    """The lazy query of :func:`seasonal_scale`; ``duplicates=`` names an extra column
    counting the rows that repeat a (series, time) key.

    ``presorted``: the caller found the rows sorted by (``keys``, ``time``) with no null
    there (:func:`sorted_by`); then the lagged differences are plain row-wise shifts (valid
    where the row ``season_length`` back is of the same series), the duplicates are
    neighbours, and the aggregation is of plain columns: no sort, no per-group shift.
    """
    y = to_float(actual)
    lf = lf.filter(y.is_not_null())
    if presorted:
        scale = _sorted_scale(lf, keys, time, y, season_length, duplicates)
    else:
        # one global sort by time: group_by keeps the order of rows within each group
        lf = lf.sort(time)
        d = y - y.shift(season_length)
        aggs = [
            d.abs().mean().alias("mase_scale"),
            (d * d).mean().alias("rmsse_scale"),
            y.mean().alias("spis_scale"),
            pl.len().cast(pl.Int64).alias("n_train"),
        ]
        if duplicates is not None:
            aggs.append((pl.len() - pl.col(time).n_unique()).cast(pl.Int64).alias(duplicates))
        scale = lf.group_by(keys).agg(aggs)
    positive = [pl.when(pl.col(c) > 0.0).then(pl.col(c)).otherwise(None).alias(c) for c in SCALES]
    return scale.with_columns(positive)


def _sorted_scale(
    lf: pl.LazyFrame,
    keys: list[str],
    time: str,
    y: pl.Expr,
    season_length: int,
    duplicates: str | None,
) -> pl.LazyFrame:
    """:func:`scale_query` on rows sorted by (keys, time), without null keys or times."""

    def same_series(lag: int) -> pl.Expr:  # the row ``lag`` back is of the same series
        if not keys:
            return pl.int_range(pl.len()) >= lag
        return pl.all_horizontal([pl.col(k) == pl.col(k).shift(lag) for k in keys])

    d = pl.when(same_series(season_length)).then(y - y.shift(season_length))
    columns = [y.alias("__pe_y"), d.abs().alias("__pe_ad"), (d * d).alias("__pe_d2")]
    aggs = [
        pl.col("__pe_ad").mean().alias("mase_scale"),
        pl.col("__pe_d2").mean().alias("rmsse_scale"),
        pl.col("__pe_y").mean().alias("spis_scale"),
        pl.len().cast(pl.Int64).alias("n_train"),
    ]
    if duplicates is not None:
        repeat = same_series(1) & (pl.col(time) == pl.col(time).shift(1))
        columns.append(repeat.alias("__pe_rep"))
        aggs.append(count_true(pl.col("__pe_rep")).alias(duplicates))
    if len(keys) == 1:  # a sorted key: the group_by takes its slices instead of hashing
        lf = lf.with_columns(pl.col(keys[0]).set_sorted())
    return lf.with_columns(columns).group_by(keys).agg(aggs)


def sorted_by(frame: pl.DataFrame, keys: Sequence[str], time: str, *, strict: bool = False) -> bool:
    """Whether the rows of ``frame`` are sorted by (``keys``, ``time``), ascending, with no
    null (nor float: NaN and signed zeros compare apart from how they group) in them;
    ``strict``: and no (``keys``, ``time``) repeats.

    One cheap row-wise pass; what lets :func:`scale_query` skip its sort (``presorted``).
    """
    columns = [*keys, time]
    if any(frame.schema[c].is_float() or frame.get_column(c).null_count() > 0 for c in columns):
        return False
    if frame.height < 2:
        return True
    last = pl.col(time).shift(1)
    after = pl.col(time) > last if strict else pl.col(time) >= last
    for k in reversed(keys):
        prev = pl.col(k).shift(1)
        after = (pl.col(k) > prev) | ((pl.col(k) == prev) & after)
    return bool(frame.select(after.slice(1).all()).item())


def with_lead(
    frame: FrameT, *, series: str | Sequence[str], time: str, cutoff: str, name: str = "lead"
) -> FrameT:
    """Add the lead time: the rank (1, 2, ...) of ``time`` among the rows of the same series
    and cutoff, so that ``lead == 1`` selects the one-step-ahead forecasts.

    The lead counts the steps present in the data: if a forecast origin skips a target
    time, the later rows move up one lead.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"id": ["a"] * 4, "cutoff": [0, 0, 1, 1], "t": [1, 2, 2, 3]})
    >>> pe.with_lead(df, series="id", time="t", cutoff="cutoff").get_column("lead").to_list()
    [1, 2, 1, 2]
    """
    keys = [series] if isinstance(series, str) else list(series)
    lead = pl.col(time).rank("dense").over([*keys, cutoff]).cast(pl.Int64).alias(name)
    return frame.with_columns(lead)
