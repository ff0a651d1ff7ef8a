"""Intervals, the bootstrap and model comparisons (SPEC §8).

Each metric declares the interval methods it offers at ``@register``
(``MetricInfo.intervals``; the namespace then gives those metrics ``ci=`` and ``level=``):

* ``"wilson"``: the binary proportions (accuracy, precision, recall, specificity, fpr,
  fnr, fdr, npv);
* ``"hanley"``: ``auc`` (Hanley & McNeil 1982);
* ``"logistic"``: ``pr_auc`` (Boyd et al. 2013);
* ``"chi2"``: ``rmse`` (NIST; assumes centred normal residuals);
* ``"bootstrap"``: every scalar binary, multiclass, regression and forecast metric (by default
  1000 multinomial resamples, seed 0; the namespace takes ``n_resamples=``, ``seed=``
  and ``method=`` beside ``ci="bootstrap"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from polars_eval._core.planner import normalize_by
from polars_eval._core.registry import MetricInfo
from polars_eval._core.table import Checks, Output, Query, Stage, Table, finish, run
from polars_eval.exceptions import InvalidParameterError
from polars_eval.stats import bootstrap as _boot
from polars_eval.stats.compare import delong, mcnemar
from polars_eval.stats.intervals import (
    CLOSED_FORM,
    Interval,
    check_level,
    closed_form,
    hanley_mcneil,
    interval,
    pr_auc_logistic,
    proportion_ci,
    rmse_chi2,
    wilson,
)

__all__ = [
    "Interval",
    "delong",
    "hanley_mcneil",
    "interval",
    "mcnemar",
    "pr_auc_logistic",
    "proportion_ci",
    "rmse_chi2",
    "wilson",
]

CI_RESAMPLES = 1000
CI_SEED = 0


def _column_names(name: str) -> list[str]:
    return [name, f"{name}_lower", f"{name}_upper"]


def run_interval(
    frame: pl.DataFrame | pl.LazyFrame,
    info: MetricInfo,
    args: Mapping[str, Any],
    *,
    by: Any,
    validate: bool,
    method: str,
    level: float,
    n_resamples: int = CI_RESAMPLES,
    seed: int = CI_SEED,
    resampling: str = "multinomial",
) -> Any:
    """A registered metric with its interval, for the namespace's ``ci=`` (SPEC §8).

    Without ``by``: an :class:`Interval`; with ``by``: a DataFrame with the group columns
    and ``<name>``, ``<name>_lower``, ``<name>_upper``; on a LazyFrame: a LazyFrame.
    ``n_resamples``, ``seed`` and ``resampling`` (the namespace's ``method=``:
    ``"multinomial"`` or ``"poisson"``) apply to ``method="bootstrap"``.
    """
    if method not in info.intervals:
        offered = list(info.intervals) or "none"
        raise InvalidParameterError(f"ci must be one of {offered} for {info.name}; got {method!r}")
    check_level(level)
    if method == "bootstrap":
        _boot.check_options(n_resamples, level, seed, resampling)
    by_cols = normalize_by(by)
    names = _column_names(info.name)
    undefined = {info.name: info.undefined or "no defined value"}
    if method in CLOSED_FORM:
        expr = closed_form(info.name, dict(args), method, level)

        def unnest(lf: pl.LazyFrame) -> pl.LazyFrame:
            return lf.with_columns(pl.col(info.name).struct.rename_fields(names)).unnest(info.name)

        table = Table(
            Query([expr]),
            Checks(info.inputs, args, validate),
            Output(undefined),
            by=by_cols,
            stage=Stage(unnest),
        )
        result = run(table, frame)
    else:
        options = {"n_resamples": n_resamples, "seed": seed, "method": resampling}
        result = _bootstrap_interval(
            frame, info, args, by_cols, validate, level, undefined, options
        )
    if isinstance(result, pl.LazyFrame) or by_cols:
        return result
    return Interval(*result.row(0))


def _bootstrap_interval(
    frame: pl.DataFrame | pl.LazyFrame,
    info: MetricInfo,
    args: Mapping[str, Any],
    by: list[str],
    validate: bool,
    level: float,
    undefined: Mapping[str, str],
    options: Mapping[str, Any],
) -> pl.DataFrame | pl.LazyFrame:
    expr = info.fn(**args)
    names = _column_names(info.name)

    def compute() -> pl.DataFrame:
        if validate:
            _boot.validate_recognized(frame, [_boot.Recognized(info, dict(args))])
        table = _boot.bootstrap(
            frame,
            [expr],
            level=level,
            by=by,
            validate=False,
            **options,
        )
        if isinstance(table, pl.LazyFrame):
            table = table.collect()
        out = table.select(
            *by,
            pl.col("estimate").alias(names[0]),
            pl.col("lower").alias(names[1]),
            pl.col("upper").alias(names[2]),
        )
        return finish(out, Output(undefined), grouped=bool(by))

    if isinstance(frame, pl.LazyFrame):
        schema = frame.collect_schema()
        out_schema = {b: schema[b] for b in by if b in schema} | dict.fromkeys(names, pl.Float64)
        return pl.defer(compute, schema=out_schema)
    return compute()
