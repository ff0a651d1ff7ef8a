"""The Diebold–Mariano test of two forecasts of one series (SPEC §14), as R's
``forecast::dm.test``.

The loss differential dₜ = |e₁ₜ|^power − |e₂ₜ|^power of the forecast errors, in time
order, has the autocovariances γₖ = (1/n) Σₜ (dₜ − d̄)(dₜ₊ₖ − d̄), k = 0 … h − 1 (the
denominator n, as R's ``acf(type="covariance")``); the long-run variance of d̄ is
V = (γ₀ + 2 Σₖ₌₁^{h−1} γₖ) / n. The DM statistic d̄ / √V is multiplied by the
Harvey–Leybourne–Newbold correction √((n + 1 − 2h + h(h − 1)/n) / n) and referred to
Student's t with n − 1 degrees of freedom. As ``dm.test``: when V ≤ 0 with h > 1, the
test is that of h = 1 (R warns so); V = 0 with h = 1 (a constant d) leaves the statistic
undefined (null here, where R stops).

The per-group sums are Polars aggregations (the differential sorted by time within each
group, its lags by ``shift``); only the p-values come from scipy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_eval._core.planner import normalize_by
from polars_eval._core.table import Checks, Output, Query, Stage, Table, build
from polars_eval._exprs import F64, to_float
from polars_eval._params import check_choice, check_positive_int
from polars_eval._validate import Check
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.stats.intervals import scipy_stats

ALTERNATIVES = ("two-sided", "less", "greater")
INPUTS = {"actual": "numeric", "forecast_1": "numeric", "forecast_2": "numeric"}
UNDEFINED = "the loss differential is constant (zero variance)"
N, MEAN, GAMMA = "__pe_dm_n", "__pe_dm_mean", "__pe_dm_g"


def check_options(time: Any, h: Any, power: Any, alternative: Any) -> None:
    """Raise InvalidParameterError for a bad option (before anything runs)."""
    if not isinstance(time, str):
        raise InvalidParameterError(f"time must be a column name; got {time!r}")
    check_positive_int("h", h)
    if isinstance(power, bool) or not isinstance(power, (int, float)) or not power > 0:
        raise InvalidParameterError(f"power must be a positive number; got {power!r}")
    check_choice("alternative", alternative, ALTERNATIVES)


def _checks(actual: str, forecast_1: str, forecast_2: str, time: str, by: list[str]) -> Any:
    """The data checks of the test (BAD_INPUTS row 59): both forecasts at the same time
    points, one row per time point (and ``by`` group)."""

    def checks(schema: Any) -> list[Check]:
        if time not in schema:
            raise DataValidationError(f'column "{time}" (argument time=) not found')
        y = pl.col(actual)
        one = (pl.col(forecast_1).is_null() != pl.col(forecast_2).is_null()) & y.is_not_null()
        keyed = pl.struct([*(pl.col(b) for b in by), pl.col(time)])
        stamp = pl.concat_str([pl.lit("time "), pl.col(time).cast(pl.String).fill_null("null")])
        return [
            Check(
                time,
                one & pl.col(time).is_not_null(),
                stamp,
                f'must hold the same time points for "{forecast_1}" and "{forecast_2}"; '
                "found {n} rows where one forecast is missing",
            ),
            Check(
                time,
                keyed.is_duplicated() & pl.col(time).is_not_null(),
                stamp,
                "must not repeat a time point (within a by group); found {n} duplicated rows",
            ),
        ]

    return checks


def _states(
    actual: str, forecast_1: str, forecast_2: str, time: str, h: int, power: float
) -> list[pl.Expr]:
    """Per group: n, d̄ and n·γₖ (k < h) of the loss differential in time order."""
    y = to_float(actual)
    used = (
        y.is_not_null()
        & pl.col(forecast_1).is_not_null()
        & pl.col(forecast_2).is_not_null()
        & pl.col(time).is_not_null()
    )
    loss_1 = (y - to_float(forecast_1)).abs().pow(power)
    loss_2 = (y - to_float(forecast_2)).abs().pow(power)
    d = (loss_1 - loss_2).filter(used).sort_by(pl.col(time).filter(used))
    centred = d - d.mean()
    return [
        d.len().cast(pl.Int64).alias(N),
        d.mean().cast(F64).alias(MEAN),
        *[(centred * centred.shift(-k)).cast(F64).sum().alias(f"{GAMMA}{k}") for k in range(h)],
    ]


def statistic(
    n: np.ndarray, mean: np.ndarray, sums: np.ndarray, h: int, alternative: str
) -> tuple[np.ndarray, np.ndarray]:
    """The corrected DM statistic and its p-value from n, d̄ and the lagged sums
    n·γₖ (columns of ``sums``), vectorised over groups; NaN where undefined."""
    n = n.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = sums / n[:, None]
        var_h = (gamma[:, 0] + 2.0 * gamma[:, 1:].sum(axis=1)) / n
        var_1 = gamma[:, 0] / n
        fallback = ~(var_h > 0.0)  # dm.test: h = 1 when the variance is not positive
        horizon = np.where(fallback, 1.0, float(h))
        var = np.where(fallback, var_1, var_h)
        correction = np.sqrt((n + 1.0 - 2.0 * horizon + horizon * (horizon - 1.0) / n) / n)
        stat = np.where(var > 0.0, mean / np.sqrt(var) * correction, np.nan)
    t = scipy_stats().t
    dof = np.maximum(n - 1.0, 1.0)
    if alternative == "two-sided":
        p = 2.0 * t.sf(np.abs(stat), dof)
    elif alternative == "less":
        p = t.cdf(stat, dof)
    else:
        p = t.sf(stat, dof)
    return stat, np.where(np.isnan(stat), np.nan, np.minimum(p, 1.0))


def dm_test(
    frame: pl.DataFrame | pl.LazyFrame,
    actual: str,
    forecast_1: str,
    forecast_2: str,
    *,
    time: str,
    h: int = 1,
    power: float = 2,
    alternative: str = "two-sided",
    by: str | Sequence[str] | None = None,
    validate: bool = True,
) -> dict[str, Any] | pl.DataFrame | pl.LazyFrame:
    """Diebold–Mariano test of two forecasts of the same series, as R's
    ``forecast::dm.test`` (Harvey–Leybourne–Newbold corrected).

    d = |actual − forecast_1|^power − |actual − forecast_2|^power in the order of
    ``time``; its autocovariances up to lag h − 1 (denominator n) give the variance
    of its mean, V = (γ₀ + 2 Σ γₖ) / n; the statistic d̄ / √V times
    √((n + 1 − 2h + h(h − 1)/n) / n), and its p-value from Student's t with n − 1
    degrees of freedom. ``alternative``: ``"two-sided"``, ``"less"`` (forecast 1 is
    more accurate: d̄ < 0) or ``"greater"``. As ``dm.test``, a variance V ≤ 0 with
    h > 1 falls back to the test of h = 1. ``h`` is the forecast horizon.

    Rows with a null actual, time or both forecasts null are left out; a row with one
    forecast only is an error (the forecasts must cover the same time points), as is
    a repeated time point (per ``by`` group) and fewer than h + 2 time points
    (BAD_INPUTS row 59). A constant d (zero variance) leaves the statistic and
    p-value null, reported in one warning.

    Returns ``{"statistic", "p_value", "n"}`` without ``by``; with ``by`` (e.g. the
    series column) a DataFrame with one row per group and those columns; a LazyFrame
    on a LazyFrame.

    References
    ----------
    Diebold, F. X., Mariano, R. S. (1995). Comparing predictive accuracy. Journal of
    Business and Economic Statistics 13(3). Harvey, D., Leybourne, S., Newbold, P.
    (1997). Testing the equality of prediction mean squared errors. International
    Journal of Forecasting 13(2). Hyndman, R. J. et al., R package ``forecast``,
    ``dm.test``.

    Examples
    --------
    Squared errors (1, 1, 1, 4, 9) against (9, 36, 36, 0, 81): d̄ = −29.2, γ₀ =
    690.16, so DM = −29.2 / √(690.16 / 5) · √0.8 = −2.2230:

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"t": [1, 2, 3, 4, 5], "y": [10, 20, 30, 40, 50],
    ...                    "f": [11, 21, 29, 42, 53], "g": [13, 26, 24, 40, 59]})
    >>> out = df.eval.dm_test("y", "f", "g", time="t", alternative="less")
    >>> round(out["statistic"], 6), round(out["p_value"], 6), out["n"]
    (-2.222992, 0.045156, 5)
    """
    check_options(time, h, power, alternative)
    for name, value in (("actual", actual), ("forecast_1", forecast_1), ("forecast_2", forecast_2)):
        if not isinstance(value, str):
            raise InvalidParameterError(f"{name} must be a column name; got {value!r}")
    by_cols = normalize_by(by)

    def finalize(lf: pl.LazyFrame) -> pl.LazyFrame:
        def compute(df: pl.DataFrame) -> pl.DataFrame:
            short = df.filter(pl.col(N) < h + 2)
            if short.height:
                where = ", ".join(f"{b}={short[b][0]!r}" for b in by_cols)
                raise DataValidationError(
                    f"dm_test needs at least h + 2 = {h + 2} time points with both forecasts"
                    f"{' per group' if by_cols else ''}; found {short[N][0]}"
                    + (f" in the group ({where})" if by_cols else "")
                )
            sums = df.select(f"{GAMMA}{k}" for k in range(h)).to_numpy().reshape(df.height, h)
            stat, p = statistic(
                df[N].to_numpy(), df[MEAN].fill_null(np.nan).to_numpy(), sums, h, alternative
            )
            return df.select(
                *by_cols,
                pl.Series("statistic", stat, F64).fill_nan(None),
                pl.Series("p_value", p, F64).fill_nan(None),
                pl.col(N).alias("n"),
            )

        schema = {**{b: lf.collect_schema()[b] for b in by_cols}}
        schema |= {"statistic": F64, "p_value": F64, "n": pl.Int64}
        return lf.map_batches(compute, schema=pl.Schema(schema))

    table = Table(
        Query(_states(actual, forecast_1, forecast_2, time, h, float(power))),
        Checks(
            INPUTS,
            {"actual": actual, "forecast_1": forecast_1, "forecast_2": forecast_2},
            validate,
            [_checks(actual, forecast_1, forecast_2, time, by_cols)],
        ),
        Output({"statistic": UNDEFINED}, strict=False),
        by=by_cols,
        stage=Stage(finalize),
    )
    query = build(table, frame)
    if isinstance(frame, pl.LazyFrame):
        return query
    out = query.collect()
    return out if by_cols else out.row(0, named=True)
