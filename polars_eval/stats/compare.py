"""Comparing two models on the same rows (SPEC §8): McNemar, DeLong, paired bootstrap.

:func:`mcnemar` and :func:`delong` are aggregation expressions returning a struct, usable
per group like any metric; ``df.eval.mcnemar`` / ``df.eval.delong`` add validation and
``by=``. ``df.eval.paired_bootstrap`` is frame-level (it resamples rows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl

from polars_eval._core.planner import normalize_by
from polars_eval._core.registry import REGISTRY
from polars_eval._exprs import F64, NAN, binary_label, count_true, drop_null_rows, to_float
from polars_eval._params import check_number
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.stats import bootstrap as _boot
from polars_eval.stats.intervals import scipy_stats, z_quantile

DELONG_FIELDS = ("auc_1", "auc_2", "difference", "lower", "upper", "z", "p_value")
PAIRED_SCHEMA = {
    "estimate_1": F64,
    "estimate_2": F64,
    "difference": F64,
    "lower": F64,
    "upper": F64,
    "std": F64,
    "p_value": F64,
    "n_undefined": pl.Int64,
}


def _binom_sf(s: pl.Series) -> pl.Series:
    # scipy for the p-value: P(X >= b) for X ~ Binomial(b + c, 1/2)
    b = s.struct.field("b").cast(F64).to_numpy()
    c = s.struct.field("c").cast(F64).to_numpy()
    with np.errstate(invalid="ignore"):
        p = scipy_stats().binom.sf(b - 1.0, b + c, 0.5)
    p = np.where(np.isnan(b) | np.isnan(c), np.nan, np.where(b + c == 0.0, 1.0, p))
    return pl.Series(s.name, p, dtype=F64)


DELONG_DTYPE = pl.Struct(dict.fromkeys(DELONG_FIELDS, F64))


def _with_p_value(s: pl.Series) -> pl.Series:
    # scipy for the p-value: 2 P(Z >= |z|); NaN z (NaN scores) stays NaN, null stays null
    frame = s.struct.unnest()
    z = frame.get_column("z")
    p = pl.Series("p_value", 2.0 * scipy_stats().norm.sf(np.abs(z.to_numpy())), dtype=F64)
    p = pl.select(pl.when(z.is_null()).then(None).otherwise(p)).to_series()
    return frame.with_columns(p.alias("p_value")).to_struct(s.name)


def mcnemar(
    label: IntoExpr,
    score_1: IntoExpr,
    score_2: IntoExpr,
    *,
    threshold_1: float = 0.5,
    threshold_2: float = 0.5,
    pos_label: Any = None,
) -> pl.Expr:
    """One-sided exact McNemar test: is model 1 more accurate than model 2?

    Model k predicts positive when ``score_k >= threshold_k`` (hard 0/1 predictions work
    with the default 0.5). On the rows where exactly one model is right, b = rows won by
    model 1 and c = rows won by model 2. Under H0 (model 1 is not more accurate than
    model 2) b ~ Binomial(b + c, 1/2), and the p-value is P(X ≥ b) — the exact one-sided
    test as defined by YDF's model comparison. p = 1 when no row is discordant. Rows are
    counted unweighted (an exact binomial test needs counts); null rows are ignored.

    Returns a struct ``{wins_1, wins_2, p_value}`` named ``"mcnemar"``.

    References
    ----------
    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. Psychometrika 12(2). Edwards (1948). YDF
    ``utils/model_analysis`` / ``metric.cc`` (McNemar test for model comparison).

    Examples
    --------
    Model 1 is right and model 2 wrong on 4 rows, never the reverse: the p-value is
    P(X ≥ 4) for X ~ Binomial(4, 1/2), 1/16 = 0.0625:

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1, 0],
    ...                    "m1": [0.9, 0.8, 0.1, 0.2, 0.7, 0.1],
    ...                    "m2": [0.1, 0.2, 0.9, 0.3, 0.8, 0.6]})
    >>> df.select(pe.mcnemar("y", "m1", "m2").struct.unnest())
    shape: (1, 3)
    ┌────────┬────────┬─────────┐
    │ wins_1 ┆ wins_2 ┆ p_value │
    │ ---    ┆ ---    ┆ ---     │
    │ i64    ┆ i64    ┆ f64     │
    ╞════════╪════════╪═════════╡
    │ 4      ┆ 0      ┆ 0.0625  │
    └────────┴────────┴─────────┘
    """
    check_number("threshold_1", threshold_1)
    check_number("threshold_2", threshold_2)
    y, s1, s2, _w = drop_null_rows(
        binary_label(label, pos_label), to_float(score_1), to_float(score_2), weight=pl.lit(1.0)
    )
    truth = y == 1.0
    right_1 = (s1 >= threshold_1) == truth
    right_2 = (s2 >= threshold_2) == truth
    b = count_true(right_1 & ~right_2)
    c = count_true(~right_1 & right_2)
    p = pl.struct(b.alias("b"), c.alias("c")).map_batches(
        _binom_sf, return_dtype=F64, returns_scalar=True
    )
    has_nan = s1.is_nan().any() | s2.is_nan().any()
    p = pl.when(has_nan).then(pl.lit(NAN, dtype=F64)).otherwise(p)
    return pl.struct(b.alias("wins_1"), c.alias("wins_2"), p.alias("p_value")).alias("mcnemar")


def delong(
    label: IntoExpr,
    score_1: IntoExpr,
    score_2: IntoExpr,
    *,
    pos_label: Any = None,
    level: float = 0.95,
) -> pl.Expr:
    """DeLong's test for the difference of two correlated ROC AUCs (same rows).

    With V10 (per positive) and V01 (per negative) the structural components of each
    score computed from midranks, AUC_k = mean(V10_k); S10, S01 the 2×2 sample
    covariance matrices (ddof 1) of the components, and
    Var(AUC₁ − AUC₂) = (S10₁₁ + S10₂₂ − 2 S10₁₂)/m + (S01₁₁ + S01₂₂ − 2 S01₁₂)/n
    for m positives and n negatives. z = (AUC₁ − AUC₂)/sqrt(Var), two-sided p-value
    2(1 − Φ(|z|)), interval difference ± z_{level}·sqrt(Var). Midranks make it
    O(n log n) (Sun & Xu 2014) instead of the O(m·n) pair comparisons of the original.
    Ties count ½. Unweighted; null rows ignored. z and p are null when the variance is 0
    (e.g. identical scores); everything is null with fewer than 2 rows of a class.

    Returns a struct ``{auc_1, auc_2, difference, lower, upper, z, p_value}`` named
    ``"delong"``.

    References
    ----------
    DeLong, E. R., DeLong, D. M., Clarke-Pearson, D. L. (1988). Comparing the areas under
    two or more correlated receiver operating characteristic curves: a nonparametric
    approach. Biometrics 44(3), 837-845. Sun, X., Xu, W. (2014). Fast implementation of
    DeLong's algorithm for comparing the areas under correlated receiver operating
    characteristic curves. IEEE Signal Processing Letters 21(11), 1389-1393.

    Examples
    --------
    Two positives, two negatives; model 1 ranks perfectly (AUC 1), model 2 gets 3 of 4
    pairs (AUC 0.75). Components: V10₁ = (1, 1), V10₂ = (1, 0.5), V01₁ = (1, 1),
    V01₂ = (1, 0.5), so Var = 0.125/2 + 0.125/2 = 0.125 and z = 0.25/0.3536 = 0.7071:

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0], "m1": [0.9, 0.8, 0.3, 0.1],
    ...                    "m2": [0.9, 0.2, 0.3, 0.1]})
    >>> out = df.select(pe.delong("y", "m1", "m2").struct.unnest())
    >>> out.select(pl.col("difference", "z", "p_value").round(4))
    shape: (1, 3)
    ┌────────────┬────────┬─────────┐
    │ difference ┆ z      ┆ p_value │
    │ ---        ┆ ---    ┆ ---     │
    │ f64        ┆ f64    ┆ f64     │
    ╞════════════╪════════╪═════════╡
    │ 0.25       ┆ 0.7071 ┆ 0.4795  │
    └────────────┴────────┴─────────┘
    """
    zq = z_quantile(level)
    y, s1, s2, _w = drop_null_rows(
        binary_label(label, pos_label), to_float(score_1), to_float(score_2), weight=pl.lit(1.0)
    )
    e = pl.element()
    field = e.struct.field
    # stage 1: the two full midranks, each computed once, kept per row
    rows = pl.struct(y.alias("y"), s1.alias("s1"), s2.alias("s2")).implode()
    ranked = rows.list.eval(
        pl.struct(
            field("y"),
            field("s1"),
            field("s2"),
            field("s1").rank("average").alias("r1"),
            field("s2").rank("average").alias("r2"),
        )
    )
    # stage 2: sums and variances of the components (within-class midranks once each)
    pos = field("y") == 1.0
    m = pos.cast(F64).sum()
    n = (~pos).cast(F64).sum()
    a = field("r1") - field("r2")
    d10 = (
        a.filter(pos)
        - (field("s1").filter(pos).rank("average") - field("s2").filter(pos).rank("average"))
    ) / n
    d01 = (
        a.filter(~pos)
        - (field("s1").filter(~pos).rank("average") - field("s2").filter(~pos).rank("average"))
    ) / m
    sums = ranked.list.eval(
        pl.concat_list(
            [
                field("r1").filter(pos).sum(),  # average ranks: Float64
                field("r2").filter(pos).sum(),
                d10.var(ddof=1),
                d01.var(ddof=1),
                m,
                n,
                (field("s1").is_nan().any() | field("s2").is_nan().any()).cast(F64),
            ]
        )
    ).list.first()

    # stage 3: the test from the seven numbers
    def get(i: int) -> pl.Expr:
        return e.get(i)

    rs1, rs2, var10, var01, m_, n_, nan = (get(i) for i in range(7))
    base = m_ * (m_ + 1.0) / 2.0
    auc_1 = (rs1 - base) / (m_ * n_)
    auc_2 = (rs2 - base) / (m_ * n_)
    var = var10 / m_ + var01 / n_
    se = var.clip(0.0).sqrt()
    diff = auc_1 - auc_2
    defined = (m_ >= 2.0) & (n_ >= 2.0)

    def out(expr: pl.Expr, name: str) -> pl.Expr:
        return (
            pl.when(nan > 0.0)
            .then(pl.lit(NAN, dtype=F64))
            .when(defined)
            .then(expr.cast(F64))
            .otherwise(pl.lit(None, dtype=F64))
            .alias(name)
        )

    test = sums.list.eval(
        pl.struct(
            out(auc_1, "auc_1"),
            out(auc_2, "auc_2"),
            out(diff, "difference"),
            out(diff - zq * se, "lower"),
            out(diff + zq * se, "upper"),
            out(pl.when(se > 0.0).then(diff / se), "z"),
        )
    ).list.first()
    return test.map_batches(_with_p_value, return_dtype=DELONG_DTYPE, returns_scalar=True).alias(
        "delong"
    )


def _metric_builder(
    metric: str | Callable[..., pl.Expr], label: IntoExpr | None, kwargs: dict[str, Any]
) -> Callable[[IntoExpr], pl.Expr]:
    if isinstance(metric, str):
        if metric not in REGISTRY:
            raise InvalidParameterError(f"unknown metric {metric!r}")
        fn = REGISTRY[metric].fn
    elif callable(metric):
        fn = metric
    else:
        raise InvalidParameterError(
            f"metric must be a metric name or function (e.g. pe.auc); got {type(metric).__name__}"
        )
    if label is None:
        return lambda score: fn(score, **kwargs)
    return lambda score: fn(label, score, **kwargs)


def paired_summary(
    reps: pl.DataFrame, est: pl.DataFrame, by: list[str], level: float, n_resamples: int
) -> pl.DataFrame:
    """Difference of the two metrics per resample → estimate, interval, std, p-value."""
    alpha = 1.0 - level
    d = pl.col("__pe_1") - pl.col("__pe_2")
    defined = d.is_not_null() & ~d.is_nan()
    ok = d.filter(defined)
    frac_le = (ok <= 0.0).mean()
    frac_ge = (ok >= 0.0).mean()
    summary = reps.group_by(by or pl.lit(0).alias("__pe_all")).agg(
        ok.quantile(alpha / 2.0, interpolation="linear").alias("lower"),
        ok.quantile(1.0 - alpha / 2.0, interpolation="linear").alias("upper"),
        ok.std().alias("std"),
        pl.when(defined.any())
        .then(pl.min_horizontal(pl.lit(1.0), 2.0 * pl.min_horizontal(frac_le, frac_ge)))
        .alias("p_value"),
        (pl.lit(n_resamples, dtype=pl.Int64) - count_true(defined)).alias("n_undefined"),
    )
    est = est.with_columns(
        pl.col("__pe_1").cast(F64).alias("estimate_1"),
        pl.col("__pe_2").cast(F64).alias("estimate_2"),
        (pl.col("__pe_1") - pl.col("__pe_2")).cast(F64).alias("difference"),
    )
    if by:
        out = est.join(summary, on=by, how="left", nulls_equal=True).sort(by, nulls_last=True)
    else:
        out = pl.concat([est, summary.drop("__pe_all")], how="horizontal")
    return out.select([*by, *PAIRED_SCHEMA]).with_columns(
        pl.col("n_undefined").fill_null(n_resamples)
    )


def _paired_items(
    metric_1: pl.Expr | str | Callable[..., pl.Expr],
    metric_2: pl.Expr | IntoExpr,
    score_2: IntoExpr | None,
    label: IntoExpr | None,
    metric_kwargs: dict[str, Any],
) -> list[tuple[str, pl.Expr]]:
    """The two models' metric expressions: given as two expressions (SPEC §8), or built
    from a metric name or function and two score columns."""
    if isinstance(metric_1, pl.Expr):
        if not isinstance(metric_2, pl.Expr):
            raise InvalidParameterError(
                "paired_bootstrap takes two metric expressions, e.g. pe.auc('y', 's1'), "
                f"pe.auc('y', 's2'); got {type(metric_2).__name__} as the second"
            )
        extra = [n for n, v in (("score_2", score_2), ("label", label)) if v is not None] + list(
            metric_kwargs
        )
        if extra:
            raise InvalidParameterError(
                f"{', '.join(extra)} apply when the metric is a name or function; with two "
                "metric expressions, put the columns and options in the expressions"
            )
        return [("__pe_1", metric_1), ("__pe_2", metric_2)]
    if score_2 is None:
        raise InvalidParameterError(
            "paired_bootstrap takes two metric expressions (pe.auc('y', 's1'), "
            "pe.auc('y', 's2')), or a metric name with two score columns and label="
        )
    build = _metric_builder(metric_1, label, metric_kwargs)
    return [("__pe_1", build(metric_2)), ("__pe_2", build(score_2))]


def paired_bootstrap(
    frame: pl.DataFrame | pl.LazyFrame,
    metric_1: pl.Expr | str | Callable[..., pl.Expr],
    metric_2: pl.Expr | IntoExpr,
    score_2: IntoExpr | None = None,
    *,
    label: IntoExpr | None = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    by: str | Sequence[str] | None = None,
    group: str | Sequence[str] | None = None,
    method: str = "multinomial",
    validate: bool = True,
    **metric_kwargs: Any,
) -> pl.DataFrame | pl.LazyFrame:
    """Difference of a metric between two models on the same bootstrap resamples.

    ``metric_1`` and ``metric_2`` are the two models' metric expressions, e.g.
    ``pe.auc("y", "s1")`` and ``pe.auc("y", "s2")`` (any aggregation expressions; they
    may share a name). Also accepted: a metric name or function with two score
    columns, ``paired_bootstrap("auc", "s1", "s2", label="y")``, where model k's
    metric is ``metric(label, score_k, **metric_kwargs)`` (or ``metric(score_k, ...)``
    without ``label``). Both models are evaluated on every resample (see
    :meth:`bootstrap` for the resampling), so the interval of the difference accounts
    for their correlation.

    Result (one row, or one per ``by`` group): ``estimate_1``, ``estimate_2``,
    ``difference`` (1 − 2 on the original data), ``lower``/``upper`` (percentiles of the
    replicated differences), ``std``, ``p_value`` (two-sided, 2·min(P*(d ≤ 0),
    P*(d ≥ 0)) over the replicates, at most 1) and ``n_undefined``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0, 1, 0, 1, 0] * 25,
    ...                    "a": [0.1, 0.8, 0.4, 0.5, 0.9, 0.3, 0.6, 0.7] * 25,
    ...                    "b": [0.1, 0.8, 0.9, 0.5, 0.9, 0.3, 0.6, 0.2] * 25})
    >>> out = df.eval.paired_bootstrap(pe.auc("y", "a"), pe.auc("y", "b"), n_resamples=200)
    >>> out.select("estimate_1", "estimate_2", "difference").rows()
    [(0.8125, 1.0, -0.1875)]
    """
    _boot.check_options(n_resamples, level, seed, method)
    items = _paired_items(metric_1, metric_2, score_2, label, metric_kwargs)
    by_cols = normalize_by(by)
    resampling = {"n_resamples": n_resamples, "method": method, "seed": seed}
    return _boot.run(
        frame,
        items,
        lambda reps, est: paired_summary(reps, est, by_cols, level, n_resamples),
        PAIRED_SCHEMA,
        (by_cols, normalize_by(group), validate, resampling),
    )
