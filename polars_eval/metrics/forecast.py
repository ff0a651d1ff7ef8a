"""Forecasting metrics (SPEC §6), on long data: series id, time, actual, forecast.

The plain regression errors (``mae``, ``rmse``, ``mape``, ``smape``, ``wape``, ``bias`` ...)
of :mod:`polars_eval.metrics.regression` apply per series with
``group_by(series).agg(...)``. This module adds what needs more than two columns:

* :func:`mase` and :func:`rmsse`: errors scaled by the in-sample error of the seasonal
  naive forecast on the training data; :func:`seasonal_scale` computes that scale per
  series from a ``train`` frame, to be joined on the series id;
* :func:`pinball_loss` for quantile forecasts and :func:`coverage` for intervals;
* :func:`with_lead`: the lead time of each row (steps between the forecast's cutoff and its
  target time).

``df.eval.forecast(...)`` does all of it in one call: per-series metrics, their mean across
series and the pooled value, by lead if asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import polars as pl

from polars_eval._core.registry import register
from polars_eval._core.spec import MetricSpec, State, nan_or, weighted_mean
from polars_eval._exprs import (
    F64,
    check_fraction,
    check_positive_int,
    not_null,
    to_float,
    weight_expr,
)
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError

__all__ = [
    "coverage",
    "mase",
    "pinball_loss",
    "rmsse",
    "seasonal_scale",
    "with_lead",
]

SCALED_INPUTS = {"actual": "numeric", "forecast": "numeric", "scale": "numeric", "weight": "weight"}
NO_SCALE = "no row with a positive in-sample scale (constant or too short training series)"
EMPTY = "empty group"

FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


def _valid_scale(scale: IntoExpr) -> pl.Expr:
    """The scale, null where it is 0 (or negative): such rows are left out (SPEC §6)."""
    s = to_float(scale)
    return pl.when(s > 0.0).then(s).otherwise(None)


def _masked(
    actual: IntoExpr, forecast: IntoExpr, scale: IntoExpr, weight: IntoExpr | None
) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """Inputs without filtering (cheaper inside ``group_by``): the weight is 0 on rows with a
    null input or a scale that is not positive, null where the weight is null, so weighted
    sums skip those rows (the scaled error of such a row is null, never x / 0)."""
    y, f, s = to_float(actual), to_float(forecast), _valid_scale(scale)
    if weight is None:  # the same as a weight of 1, with fewer passes
        return y, f, s, not_null(y, f, s).cast(F64)
    w = weight_expr(weight)
    return y, f, s, w * not_null(y, f, s, w).cast(F64)


def _mean_nan_guarded(term: pl.Expr, weight: IntoExpr | None, *inputs: pl.Expr) -> MetricSpec:
    """The weighted mean of ``term`` over the rows where no input (nor the weight) is null;
    NaN when such a row holds a NaN (``max`` and comparisons would hide it)."""
    w = weight_expr(weight)
    kept = not_null(*inputs, w)
    mean = weighted_mean(term, pl.when(kept).then(w).otherwise(0.0))
    nan = State(pl.when(kept).then(pl.any_horizontal([x.is_nan() for x in inputs])), "max")
    return MetricSpec({**mean.states, "nan": nan}, lambda s: nan_or(s["nan"], mean.finalize(s)))


@register(
    task="forecast", inputs=SCALED_INPUTS, higher_is_better=False, lower=0.0, undefined=NO_SCALE
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
    task="forecast", inputs=SCALED_INPUTS, higher_is_better=False, lower=0.0, undefined=NO_SCALE
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
    ``season_length``), ``mase_scale`` = mean |d_t| and ``rmsse_scale`` = mean d_t². Null
    (not 0) when the series has no more than m rows or is constant at lag m, so that MASE
    and RMSSE of that series are null (SPEC §6). Rows with a null actual are dropped first.
    Also ``n_train``, the number of training rows.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> train = pl.DataFrame({"id": ["a"] * 4 + ["b"], "t": [1, 2, 3, 4, 1], "y": [1.0, 3.0, 2.0, 4.0, 7.0]})
    >>> pe.seasonal_scale(train, series="id", time="t", actual="y").sort("id")
    shape: (2, 4)
    ┌─────┬────────────┬─────────────┬─────────┐
    │ id  ┆ mase_scale ┆ rmsse_scale ┆ n_train │
    │ --- ┆ ---        ┆ ---         ┆ ---     │
    │ str ┆ f64        ┆ f64         ┆ i64     │
    ╞═════╪════════════╪═════════════╪═════════╡
    │ a   ┆ 1.666667   ┆ 3.0         ┆ 4       │
    │ b   ┆ null       ┆ null        ┆ 1       │
    └─────┴────────────┴─────────────┴─────────┘
    """
    check_positive_int("season_length", season_length)
    keys = [series] if isinstance(series, str) else list(series)
    if not isinstance(train, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            f"train must be a polars DataFrame or LazyFrame; got {type(train).__name__}"
        )
    out = scale_query(train.lazy(), keys, time, actual, season_length)
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
) -> pl.LazyFrame:
    """The lazy query of :func:`seasonal_scale`; ``duplicates=`` names an extra column
    counting the rows that repeat a (series, time) key."""
    y = to_float(actual)
    # one global sort by time: group_by keeps the order of rows within each group
    lf = lf.filter(y.is_not_null()).sort(time)
    d = y - y.shift(season_length)
    aggs = [
        d.abs().mean().alias("mase_scale"),
        (d * d).mean().alias("rmsse_scale"),
        pl.len().cast(pl.Int64).alias("n_train"),
    ]
    if duplicates is not None:
        aggs.append((pl.len() - pl.col(time).n_unique()).cast(pl.Int64).alias(duplicates))
    positive = [
        pl.when(pl.col(c) > 0.0).then(pl.col(c)).otherwise(None).alias(c)
        for c in ("mase_scale", "rmsse_scale")
    ]
    return lf.group_by(keys).agg(aggs).with_columns(positive)


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
