"""Closed-form confidence intervals as Polars expressions (SPEC §8).

Every function here returns one expression whose value is a struct
``{value, lower, upper}`` (Float64 fields), aliased to the metric's name, usable in
``select``, ``group_by().agg()`` and ``over()`` like any metric. Normal quantiles depend
only on ``level`` and are computed once at build time; the chi-square quantiles of
:func:`rmse_chi2` depend on the data and are computed by scipy inside the query (the only
use of scipy: quantiles).

Weights are frequency weights: the sample size of an interval is the summed weight of the
rows used (Σw), so integer weights equal repeating the rows. An undefined metric (0/0,
one class present, empty group) gives a null value and null bounds.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np
import polars as pl

from polars_eval._core.registry import REGISTRY, declared
from polars_eval._core.spec import nan_or
from polars_eval._exprs import (
    F64,
    binary_label,
    drop_null_rows,
    nan_guard,
    safe_div,
    to_float,
    weight_expr,
)
from polars_eval._params import check_level
from polars_eval._typing import Interval, IntoExpr
from polars_eval.exceptions import InvalidParameterError, UndefinedMetricError
from polars_eval.metrics import binary as _binary

PROPORTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = declared("proportion")
"""The proportions among the binary metrics (declared ``proportion=`` at ``@register``):
metric -> (confusion counts in the numerator, confusion counts in the denominator)."""
"""The binary metrics that are a proportion of confusion counts (they get a Wilson interval)."""


def scipy_stats():  # noqa: ANN201 - scipy is imported on first use, not with the package
    """scipy.stats, imported lazily (it costs about half a second, the CLI's whole start-up)."""
    from scipy import stats

    return stats


def z_quantile(level: float) -> float:
    """The two-sided standard normal quantile Φ⁻¹(1 − (1 − level)/2)."""
    check_level(level)
    # scipy.special.ndtri is what norm.ppf computes (the same value, bit for bit), without
    # importing scipy.stats (about 0.4 s of CPU, most of what a report's intervals cost)
    from scipy.special import ndtri

    return float(ndtri(0.5 + level / 2.0))


def _bounded(value: pl.Expr, half: pl.Expr, lo: float, hi: float) -> tuple[pl.Expr, pl.Expr]:
    """``value ± half`` clipped to [lo, hi] (null stays null)."""
    return (value - half).clip(lo, hi), (value + half).clip(lo, hi)


def finish(
    parts: Sequence[pl.Expr],
    body: Callable[..., tuple[pl.Expr, pl.Expr, pl.Expr]],
    name: str,
) -> pl.Expr:
    """Evaluate each part once, then the interval formula ``body`` over the parts.

    The parts (the metric, its counts) go into one small list per row or group and
    ``body`` reads them as ``pl.element().get(i)`` inside ``list.eval``: written directly,
    Polars would recompute a part (e.g. the AUC's sort) every time the formula uses it.
    """
    e = pl.element()
    value, lower, upper = body(*(e.get(i) for i in range(len(parts))))
    formula = pl.struct(
        value.cast(F64).alias("value"),
        lower.cast(F64).alias("lower"),
        upper.cast(F64).alias("upper"),
    )
    return pl.concat_list([p.cast(F64) for p in parts]).list.eval(formula).list.first().alias(name)


def _wilson_parts(successes: pl.Expr, total: pl.Expr, z: float) -> tuple[pl.Expr, ...]:
    p = safe_div(successes, total)
    z2 = z * z
    denom = 1.0 + z2 / total
    centre = (p + z2 / (2.0 * total)) / denom
    half = z / denom * (p * (1.0 - p) / total + z2 / (4.0 * total * total)).sqrt()
    defined = total > 0.0
    # the interval always contains p̂; min/max only absorb rounding at k = 0 and k = n
    lower = pl.when(defined).then(pl.min_horizontal(centre - half, p).clip(0.0, 1.0))
    upper = pl.when(defined).then(pl.max_horizontal(centre + half, p).clip(0.0, 1.0))
    return p, lower, upper


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _wilson_counts(successes: Any, total: Any, level: float) -> Interval:
    """:func:`wilson` of two numbers: checked, then the same formula on one row."""
    k, n = float(successes), float(total)
    if not (math.isfinite(k) and math.isfinite(n)):
        raise InvalidParameterError(
            f"wilson needs finite counts; got successes={successes!r}, n={total!r}"
        )
    if k < 0 or n < 0 or k > n:
        raise InvalidParameterError(
            f"wilson needs counts with 0 <= successes <= n; got successes={successes!r}, "
            f"n={total!r}"
        )
    if n == 0:
        raise UndefinedMetricError("the wilson interval is undefined for n = 0 trials")
    z = z_quantile(level)
    parts = [pl.lit(k, dtype=F64), pl.lit(n, dtype=F64)]
    row = pl.select(finish(parts, lambda a, b: _wilson_parts(a, b, z), "wilson")).item()
    return Interval(row["value"], row["lower"], row["upper"])


def _wilson_hits(hits: IntoExpr, weight: IntoExpr | None, z: float) -> pl.Expr:
    """The Wilson interval of the share of 1s (or ``True``) in a column, weighted."""
    h = to_float(hits)
    h, w = drop_null_rows(h, weight=weight_expr(weight))
    k = (w * h).sum()
    # a value other than 0/1 has no share to estimate: NaN, never a number (SPEC §2)
    other = (h.is_not_null() & (h != 0.0) & (h != 1.0)).any()
    k = pl.when(other).then(float("nan")).otherwise(k)
    return finish([k, w.sum()], lambda a, b: _wilson_parts(a, b, z), "wilson")


@overload
def wilson(
    successes: int | float,
    n: int | float,
    *,
    level: float = 0.95,
    weight: None = None,
    total: None = None,
) -> Interval: ...


@overload
def wilson(
    successes: IntoExpr,
    n: IntoExpr | int | float | None = None,
    *,
    level: float = 0.95,
    weight: IntoExpr | None = None,
    total: IntoExpr | int | float | None = None,
) -> pl.Expr: ...


def wilson(
    successes: Any,
    n: Any = None,
    *,
    level: float = 0.95,
    weight: IntoExpr | None = None,
    total: Any = None,
) -> Any:
    """Wilson score interval of a proportion ``successes / n``.

    With p̂ = k/n and z = Φ⁻¹(1 − α/2):
    centre = (p̂ + z²/2n) / (1 + z²/n),
    half-width = z / (1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/4n²).
    Unlike the Wald interval it stays inside [0, 1] and is not degenerate at k = 0 or
    k = n. Three forms:

    * ``pe.wilson(37, 120)``: two numbers (k successes in n trials) give a
      :class:`Interval` ``(value, lower, upper)`` at once; ``n`` may be a non-integer
      weight total. An error for counts outside 0 ≤ k ≤ n; n = 0 is undefined (an error).
    * ``pe.wilson("hit")``: one column of 0/1 or booleans gives an aggregation, the share
      of 1s with its interval (``weight=`` weighs the rows; nulls are ignored; a value
      other than 0/1 gives NaN).
    * ``pe.wilson("k", "n")``: two count columns or expressions (e.g.
      ``pl.col("y").sum()``, ``pl.len()``), row-wise or inside an aggregation. Null where
      ``n`` is 0.

    ``total=`` is the deprecated name of ``n`` (SPEC §8 names it ``n``).

    The expressions return a struct ``{value, lower, upper}`` named ``"wilson"``.

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. JASA 22(158), 209-212. Newcombe, R. G. (1998). Two-sided confidence
    intervals for the single proportion: comparison of seven methods. Statistics in
    Medicine 17(8), 857-872. Brown, Cai, DasGupta (2001), Interval estimation for a
    binomial proportion. Statistical Science 16(2).

    Examples
    --------
    Newcombe's (1998) first example, 81 successes in 263 trials: 0.2553 to 0.3662.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> ci = pe.wilson(81, 263)
    >>> round(ci.lower, 4), round(ci.upper, 4)
    (0.2553, 0.3662)

    8 successes in 10 trials, 95 %: centre 0.7102, half-width 0.2267 (Brown, Cai and
    DasGupta's formula by hand; scipy's ``binomtest(8, 10).proportion_ci("wilson")``
    agrees), from count columns and from a column of hits:

    >>> df = pl.DataFrame({"k": [8], "n": [10]})
    >>> df.select(pe.wilson("k", "n").struct.unnest().round(4))
    shape: (1, 3)
    ┌───────┬────────┬────────┐
    │ value ┆ lower  ┆ upper  │
    │ ---   ┆ ---    ┆ ---    │
    │ f64   ┆ f64    ┆ f64    │
    ╞═══════╪════════╪════════╡
    │ 0.8   ┆ 0.4902 ┆ 0.9433 │
    └───────┴────────┴────────┘
    >>> hits = pl.DataFrame({"hit": [True] * 8 + [False] * 2})
    >>> hits.select(pe.wilson("hit").struct.unnest().round(4)).row(0)
    (0.8, 0.4902, 0.9433)
    """
    if total is not None:
        if n is not None:
            raise InvalidParameterError("wilson: give n= and total= not both (total= is n)")
        warnings.warn(
            "wilson(total=...) is deprecated: the trials are n= (SPEC §8)",
            DeprecationWarning,
            stacklevel=2,
        )
        n = total
    if _is_number(successes) and _is_number(n):
        if weight is not None:
            raise InvalidParameterError("weight= applies to a column of hits, not to counts")
        return _wilson_counts(successes, n, level)
    if _is_number(successes) or isinstance(successes, bool):
        raise InvalidParameterError(
            "wilson takes two counts (successes, n), a column of 0/1 hits, or two count "
            f"columns; got successes={successes!r}, n={n!r}"
        )
    z = z_quantile(level)
    if n is None:
        return _wilson_hits(successes, weight, z)
    if weight is not None:
        raise InvalidParameterError("weight= applies to a column of hits, not to count columns")
    trials = pl.lit(float(n), dtype=F64) if _is_number(n) else to_float(n)
    return finish([to_float(successes), trials], lambda k, t: _wilson_parts(k, t, z), "wilson")


def _confusion_counts(
    label: IntoExpr,
    score: IntoExpr | None,
    pred: IntoExpr | None,
    threshold: float,
    weight: IntoExpr | None,
    pos_label: Any,
) -> dict[str, pl.Expr]:
    """Weighted tp, fp, tn, fn: the states of the binary threshold metrics (NaN → NaN)."""
    states = _binary.confusion_states(
        label, score, pred=pred, threshold=threshold, weight=weight, pos_label=pos_label
    )
    nan = states["nan"].aggregate()
    return {k: nan_or(nan, states[k].aggregate()) for k in ("tp", "fp", "tn", "fn")}


def proportion_ci(
    metric: str,
    label: IntoExpr,
    score: IntoExpr | None = None,
    *,
    pred: IntoExpr | None = None,
    threshold: float = 0.5,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    level: float = 0.95,
) -> pl.Expr:
    """Wilson interval of a binary proportion metric at a threshold.

    ``metric`` is one of ``accuracy``, ``precision``, ``recall``, ``specificity``,
    ``fpr``, ``fnr``, ``fdr``, ``npv``: each is k/n for weighted confusion counts (e.g.
    precision = TP / (TP + FP)), and :func:`wilson` is applied to that k and n (n = the
    summed weight of the rows in the denominator). Arguments as the metric's own.

    Returns a struct ``{value, lower, upper}`` named after the metric.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1], "p": [0.9, 0.3, 0.6, 0.2, 0.5]})
    >>> ci = df.select(pe.proportion_ci("accuracy", "y", "p").struct.unnest().round(4))
    >>> ci.columns, ci.row(0)
    (['value', 'lower', 'upper'], (0.6, 0.2307, 0.8824))
    """
    if metric not in PROPORTIONS:
        raise InvalidParameterError(
            f"metric must be one of {sorted(PROPORTIONS)} for a Wilson interval; got {metric!r}"
        )
    z = z_quantile(level)
    counts = _confusion_counts(label, score, pred, threshold, weight, pos_label)
    num_keys, den_keys = PROPORTIONS[metric]
    num = pl.sum_horizontal([counts[k] for k in num_keys])
    den = pl.sum_horizontal([counts[k] for k in den_keys])
    return finish([num, den], lambda k, n: _wilson_parts(k, n, z), metric)


def _auc_counts(
    label: IntoExpr, score: IntoExpr, weight: IntoExpr | None, pos_label: Any
) -> tuple[pl.Expr, pl.Expr]:
    """Weighted number of positives and negatives among the rows the AUC uses."""
    y, _s, w = drop_null_rows(
        binary_label(label, pos_label),
        to_float(score),
        weight=weight_expr(weight),
        drop_zero_weight=True,
    )
    return (w * y).sum(), (w * (1.0 - y)).sum()


def hanley_mcneil(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    level: float = 0.95,
) -> pl.Expr:
    """ROC AUC with the Hanley–McNeil (1982) normal interval.

    With A the AUC, n₁ positives and n₂ negatives (weighted counts),
    Q₁ = A/(2 − A), Q₂ = 2A²/(1 + A) and
    SE² = [A(1 − A) + (n₁ − 1)(Q₁ − A²) + (n₂ − 1)(Q₂ − A²)] / (n₁ n₂);
    the interval is A ± z·SE clipped to [0, 1]. Q₁ and Q₂ assume exponential score
    distributions (the paper's approximation); the interval is symmetric and can be too
    narrow for AUC near 1 on small samples — use ``ci="bootstrap"`` there.

    Returns a struct ``{value, lower, upper}`` named ``"auc"``; null with one class.

    References
    ----------
    Hanley, J. A., McNeil, B. J. (1982). The meaning and use of the area under a receiver
    operating characteristic (ROC) curve. Radiology 143(1), 29-36.

    Examples
    --------
    A = 0.8 with 5 positives and 5 negatives: Q₁ = 0.6667, Q₂ = 0.7111,
    SE² = (0.16 + 4·0.0267 + 4·0.0711)/25 = 0.02204, SE = 0.1485:

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
    ...                    "p": [9, 8, 7, 6, -1, 5, 4, 3, 1, 0]})
    >>> df.select(pe.hanley_mcneil("y", "p").struct.unnest().round(4))
    shape: (1, 3)
    ┌───────┬───────┬───────┐
    │ value ┆ lower ┆ upper │
    │ ---   ┆ ---   ┆ ---   │
    │ f64   ┆ f64   ┆ f64   │
    ╞═══════╪═══════╪═══════╡
    │ 0.8   ┆ 0.509 ┆ 1.0   │
    └───────┴───────┴───────┘
    """
    a = _binary.auc(label, score, weight=weight, pos_label=pos_label)
    n1, n2 = _auc_counts(label, score, weight, pos_label)
    return finish([a, n1, n2], hanley_formula(z_quantile(level)), "auc")


def hanley_formula(z: float) -> Callable[..., tuple[pl.Expr, pl.Expr, pl.Expr]]:
    """The Hanley–McNeil bounds of (AUC, positives, negatives), a ``body`` of :func:`finish`."""

    def body(a: pl.Expr, n1: pl.Expr, n2: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
        q1 = a / (2.0 - a)
        q2 = 2.0 * a * a / (1.0 + a)
        var = (a * (1.0 - a) + (n1 - 1.0) * (q1 - a * a) + (n2 - 1.0) * (q2 - a * a)) / (n1 * n2)
        return a, *_bounded(a, z * var.clip(0.0).sqrt(), 0.0, 1.0)

    return body


def pr_auc_logistic(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    level: float = 0.95,
) -> pl.Expr:
    """PR AUC (:func:`polars_eval.pr_auc`) with the logistic (logit) interval of Boyd et al.

    With θ̂ the PR AUC and n the (weighted) number of positives, η̂ = logit(θ̂) and
    τ̂ = (n θ̂ (1 − θ̂))^(−1/2); the interval is logistic(η̂ ± z τ̂). It stays inside
    (0, 1) and is asymmetric; at θ̂ = 1 (or 0) both bounds equal θ̂ (the logit is infinite:
    use the bootstrap there).

    Returns a struct ``{value, lower, upper}`` named ``"pr_auc"``; null with one class.

    References
    ----------
    Boyd, K., Eng, K. H., Page, C. D. (2013). Area under the precision-recall curve: point
    estimates and confidence intervals. ECML PKDD, LNCS 8190, 451-466 (§4.2, "logit").

    Examples
    --------
    PR AUC 23/24 with n = 3 positives: η̂ = ln(23) = 3.1355, τ̂ = 1/sqrt(3·(23/24)·(1/24))
    = 2.8893, bounds logistic(3.1355 ∓ 1.96·2.8893):

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0, 1], "p": [0.1, 0.8, 0.4, 0.4, 0.9]})
    >>> df.select(pe.pr_auc_logistic("y", "p").struct.unnest().round(4))
    shape: (1, 3)
    ┌────────┬───────┬────────┐
    │ value  ┆ lower ┆ upper  │
    │ ---    ┆ ---   ┆ ---    │
    │ f64    ┆ f64   ┆ f64    │
    ╞════════╪═══════╪════════╡
    │ 0.9583 ┆ 0.074 ┆ 0.9998 │
    └────────┴───────┴────────┘
    """
    theta = _binary.pr_auc(label, score, weight=weight, pos_label=pos_label)
    n, _ = _auc_counts(label, score, weight, pos_label)
    return finish([theta, n], logistic_formula(z_quantile(level)), "pr_auc")


def logistic_formula(z: float) -> Callable[..., tuple[pl.Expr, pl.Expr, pl.Expr]]:
    """The logit bounds of (PR AUC, positives) (Boyd et al.), a ``body`` of :func:`finish`."""

    def logistic(x: pl.Expr) -> pl.Expr:
        return 1.0 / (1.0 + (-x).exp())

    def body(theta: pl.Expr, n: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
        interior = (theta > 0.0) & (theta < 1.0)
        eta = (theta / (1.0 - theta)).log()
        tau = 1.0 / (n * theta * (1.0 - theta)).sqrt()
        lower = pl.when(interior).then(logistic(eta - z * tau)).otherwise(theta)
        upper = pl.when(interior).then(logistic(eta + z * tau)).otherwise(theta)
        return theta, lower, upper

    return body


def wilson_formula(z: float) -> Callable[..., tuple[pl.Expr, pl.Expr, pl.Expr]]:
    """The Wilson bounds of (successes, total), a ``body`` of :func:`finish`."""
    return lambda k, n: _wilson_parts(k, n, z)


def chi2_interval(rmse: pl.Expr, n: pl.Expr, level: float, name: str) -> pl.Expr:
    """A root mean square with its chi-square interval (``n`` degrees of freedom)."""
    check_level(level)
    alpha = 1.0 - level
    out_dtype = pl.Struct({"value": F64, "lower": F64, "upper": F64})

    def bounds(parts: pl.Series) -> pl.Series:
        # scipy: chi-square quantiles with a data-dependent df (no Polars equivalent)
        value = parts.list.get(0).cast(F64)
        v = value.to_numpy()
        dof = parts.list.get(1).cast(F64).fill_null(0.0).to_numpy()
        ok = (dof > 0.0) & value.is_not_null().to_numpy()
        lower, upper = np.zeros(len(v)), np.zeros(len(v))
        lower[ok] = v[ok] * np.sqrt(dof[ok] / scipy_stats().chi2.ppf(1.0 - alpha / 2.0, dof[ok]))
        upper[ok] = v[ok] * np.sqrt(dof[ok] / scipy_stats().chi2.ppf(alpha / 2.0, dof[ok]))
        defined = pl.Series(ok)
        return pl.DataFrame(
            {
                "value": value,
                "lower": pl.select(pl.when(defined).then(pl.Series(lower))).to_series(),
                "upper": pl.select(pl.when(defined).then(pl.Series(upper))).to_series(),
            }
        ).to_struct(parts.name)

    return (
        pl.concat_list([rmse.cast(F64), n.cast(F64)])
        .map_batches(bounds, return_dtype=out_dtype, returns_scalar=True)
        .alias(name)
    )


def rmse_chi2(
    actual: IntoExpr,
    predicted: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    level: float = 0.95,
) -> pl.Expr:
    """RMSE with the chi-square interval for a standard deviation (NIST handbook).

    RMSE = sqrt(Σw e² / Σw) for e = predicted − actual. **Assumption**: the residuals are
    independent, normal and centred (mean 0, known, not estimated), so n·RMSE²/σ² follows
    χ² with n = Σw degrees of freedom and the interval for σ (the true RMSE) is
    [RMSE·sqrt(n/χ²_{1−α/2,n}), RMSE·sqrt(n/χ²_{α/2,n})]. A biased model (residual
    mean ≠ 0) or heavy-tailed residuals break it: use ``ci="bootstrap"`` then.

    Returns a struct ``{value, lower, upper}`` named ``"rmse"``; null on an empty group.

    References
    ----------
    NIST/SEMATECH e-Handbook of Statistical Methods, §7.2.3.1 "Confidence interval for
    the standard deviation" (with n instead of n − 1 degrees of freedom, the mean being
    known).

    Examples
    --------
    Residuals (1, −1, 2, −2): RMSE = sqrt(10/4) = 1.5811, χ²₄ quantiles 0.4844 and
    11.1433, so the bounds are 1.5811·sqrt(4/11.1433) and 1.5811·sqrt(4/0.4844):

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0.0, 0.0, 0.0, 0.0], "f": [1.0, -1.0, 2.0, -2.0]})
    >>> df.select(pe.rmse_chi2("y", "f").struct.unnest().round(4))
    shape: (1, 3)
    ┌────────┬────────┬────────┐
    │ value  ┆ lower  ┆ upper  │
    │ ---    ┆ ---    ┆ ---    │
    │ f64    ┆ f64    ┆ f64    │
    ╞════════╪════════╪════════╡
    │ 1.5811 ┆ 0.9473 ┆ 4.5435 │
    └────────┴────────┴────────┘
    """
    check_level(level)
    a, p, w = drop_null_rows(to_float(actual), to_float(predicted), weight=weight_expr(weight))
    n = w.sum()
    rmse = nan_guard(safe_div((w * (p - a) ** 2).sum(), n).sqrt(), a, p)
    return chi2_interval(rmse, n, level, "rmse")


def registry_rmse_chi2(args: dict[str, Any], level: float) -> pl.Expr:
    """The chi-square interval around the registered ``rmse`` metric (whatever its inputs)."""
    info = REGISTRY["rmse"]
    value = info.fn(**args)
    data = [
        to_float(args[a])
        for a, role in info.inputs.items()
        if role in ("numeric", "positive") and args.get(a) is not None
    ]
    w = weight_expr(args.get("weight"))
    *_, w = drop_null_rows(*data, weight=w)
    return chi2_interval(value, w.sum(), level, "rmse")


CLOSED_FORM = ("wilson", "hanley", "logistic", "chi2")


def interval(
    metric: str | Callable[..., pl.Expr],
    *args: Any,
    method: str | None = None,
    level: float = 0.95,
    **kwargs: Any,
) -> pl.Expr:
    """Any registered metric with its closed-form interval, as a struct expression.

    ``metric`` is a metric name or function (``"auc"``, ``pe.recall`` ...); the other
    arguments are the metric's own. ``method`` is one of the metric's closed-form
    intervals (``pe.metrics()`` lists them in the ``intervals`` column); by default the
    first. The bootstrap is a frame-level operation (``df.eval.bootstrap``), not an
    expression.

    Returns a struct ``{value, lower, upper}`` named after the metric.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"seg": ["a"] * 5 + ["b"] * 5, "y": [1, 1, 0, 0, 1] * 2,
    ...                    "p": [0.9, 0.3, 0.6, 0.2, 0.5] * 2})
    >>> out = df.group_by("seg", maintain_order=True).agg(pe.interval("recall", "y", "p"))
    >>> out.unnest("recall").with_columns(pl.col("value", "lower", "upper").round(4))
    shape: (2, 4)
    ┌─────┬────────┬────────┬────────┐
    │ seg ┆ value  ┆ lower  ┆ upper  │
    │ --- ┆ ---    ┆ ---    ┆ ---    │
    │ str ┆ f64    ┆ f64    ┆ f64    │
    ╞═════╪════════╪════════╪════════╡
    │ a   ┆ 0.6667 ┆ 0.2077 ┆ 0.9385 │
    │ b   ┆ 0.6667 ┆ 0.2077 ┆ 0.9385 │
    └─────┴────────┴────────┴────────┘
    """
    import inspect

    name = metric if isinstance(metric, str) else getattr(metric, "__name__", "")
    if name not in REGISTRY:
        raise InvalidParameterError(f"unknown metric {name!r}")
    info = REGISTRY[name]
    closed = [m for m in info.intervals if m in CLOSED_FORM]
    if method is None:
        if not closed:
            raise InvalidParameterError(
                f"{name} has no closed-form interval; use df.eval.bootstrap(...)"
            )
        method = closed[0]
    if method not in closed:
        raise InvalidParameterError(f"method must be one of {closed!r} for {name}; got {method!r}")
    bound = inspect.signature(info.fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return closed_form(name, dict(bound.arguments), method, level)


def closed_form(name: str, args: dict[str, Any], method: str, level: float) -> pl.Expr:
    """The struct expression of a registered metric's closed-form interval."""
    if method == "wilson":
        return proportion_ci(name, level=level, **args)
    if method in ("hanley", "logistic"):  # an AUC's: the same arguments
        interval = hanley_mcneil if method == "hanley" else pr_auc_logistic
        return interval(
            args["label"],
            args["score"],
            weight=args.get("weight"),
            pos_label=args.get("pos_label"),
            level=level,
        )
    if method == "chi2":
        return registry_rmse_chi2(args, level)
    raise InvalidParameterError(f"unknown interval method {method!r}")
