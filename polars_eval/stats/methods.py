"""The ``.eval`` methods of SPEC §8: bootstrap, paired bootstrap, McNemar and DeLong."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from polars_eval._core.planner import normalize_by
from polars_eval._core.table import Checks, Output, Query, Stage, Table, run
from polars_eval._typing import IntoExpr
from polars_eval.stats import bootstrap as _boot
from polars_eval.stats import compare as _compare

COMPARE_INPUTS = {"label": "binary_label", "score_1": "score", "score_2": "score"}


def _comparison(
    frame: pl.DataFrame | pl.LazyFrame,
    expr: pl.Expr,
    args: dict[str, Any],
    by: Any,
    validate: bool,
    undefined: dict[str, str],
) -> Any:
    name = expr.meta.output_name()
    by_cols = normalize_by(by)

    def unnest(lf: pl.LazyFrame) -> pl.LazyFrame:
        return lf.unnest(name)

    table = Table(
        Query([expr]),
        Checks(COMPARE_INPUTS, args, validate),
        Output(undefined),
        by=by_cols,
        stage=Stage(unnest),
    )
    result = run(table, frame)
    if isinstance(result, pl.LazyFrame) or by_cols:
        return result
    return result.row(0, named=True)


class StatsMethods:
    """Bootstrap intervals and model comparisons on the ``.eval`` namespace."""

    _frame: pl.DataFrame | pl.LazyFrame

    def bootstrap(
        self,
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
        return _boot.bootstrap(
            self._frame,
            exprs,
            n_resamples=n_resamples,
            level=level,
            seed=seed,
            by=by,
            group=group,
            method=method,
            validate=validate,
        )

    def paired_bootstrap(
        self,
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
        return _compare.paired_bootstrap(
            self._frame,
            metric_1,
            metric_2,
            score_2,
            label=label,
            n_resamples=n_resamples,
            level=level,
            seed=seed,
            by=by,
            group=group,
            method=method,
            validate=validate,
            **metric_kwargs,
        )

    def mcnemar(
        self,
        label: IntoExpr,
        score_1: IntoExpr,
        score_2: IntoExpr,
        *,
        threshold_1: float = 0.5,
        threshold_2: float = 0.5,
        pos_label: Any = None,
        by: str | Sequence[str] | None = None,
        validate: bool = True,
    ) -> dict[str, Any] | pl.DataFrame | pl.LazyFrame:
        """One-sided exact McNemar test of model 1 against model 2 (see ``pe.mcnemar``).

        Returns a dict ``{wins_1, wins_2, p_value}`` without ``by``; a DataFrame with those
        columns per group with ``by`` (a LazyFrame on a LazyFrame).

        Examples
        --------
        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1, 0], "m1": [0.9, 0.8, 0.1, 0.2, 0.7, 0.1],
        ...                    "m2": [0.1, 0.8, 0.9, 0.3, 0.2, 0.1]})
        >>> df.eval.mcnemar("y", "m1", "m2")
        {'wins_1': 3, 'wins_2': 0, 'p_value': 0.125}
        """
        expr = _compare.mcnemar(
            label,
            score_1,
            score_2,
            threshold_1=threshold_1,
            threshold_2=threshold_2,
            pos_label=pos_label,
        )
        args = {"label": label, "score_1": score_1, "score_2": score_2, "pos_label": pos_label}
        return _comparison(self._frame, expr, args, by, validate, {})

    def delong(
        self,
        label: IntoExpr,
        score_1: IntoExpr,
        score_2: IntoExpr,
        *,
        pos_label: Any = None,
        level: float = 0.95,
        by: str | Sequence[str] | None = None,
        validate: bool = True,
    ) -> dict[str, Any] | pl.DataFrame | pl.LazyFrame:
        """DeLong's test of AUC(score_1) − AUC(score_2) on the same rows (see ``pe.delong``).

        Returns a dict ``{auc_1, auc_2, difference, lower, upper, z, p_value}`` without
        ``by``; a DataFrame with those columns per group with ``by`` (a LazyFrame on a
        LazyFrame). Raises without ``by`` when undefined (fewer than 2 rows of a class).

        Examples
        --------
        Model 1 ranks perfectly (AUC 1), model 2 gets 3 of 4 pairs; the variance of the
        difference from the components is 0.125 (worked out in ``pe.delong``):

        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [1, 1, 0, 0], "m1": [0.9, 0.8, 0.3, 0.1],
        ...                    "m2": [0.9, 0.2, 0.3, 0.1]})
        >>> out = df.eval.delong("y", "m1", "m2")
        >>> out["auc_1"], out["auc_2"], round(out["z"], 4)
        (1.0, 0.75, 0.7071)
        """
        expr = _compare.delong(label, score_1, score_2, pos_label=pos_label, level=level)
        args = {"label": label, "score_1": score_1, "score_2": score_2, "pos_label": pos_label}
        undefined = {"difference": "needs at least 2 rows of each class"}
        return _comparison(self._frame, expr, args, by, validate, undefined)
