"""The calibration section of the binary report (SPEC §15): reliability tables over
uniform and quantile bins, and the calibration errors and logistic recalibration of the
whole data, all finalized from the threshold state the report computes once (no pass over
the rows of its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from polars_eval.metrics._calibration import error_of_list, state_bins, table_of_bins
from polars_eval.metrics.calibration import recalibration
from polars_eval.report import _states

if TYPE_CHECKING:
    from polars_eval.report._report import Report

QUANTILE_TABLE = "calibration_table_quantile"
SUMMARY = "calibration"
ERRORS = (("ece", "l1"), ("rmsce", "l2"), ("mce", "max"))
"""The calibration errors of the section: expected, root-mean-square, maximum."""


def calibration_tables(
    whole_state: pl.DataFrame, args: dict[str, Any], bins: int
) -> dict[str, pl.DataFrame]:
    """The quantile reliability table (``df.eval.calibration_table(..., strategy=
    "quantile")``) and the section's summary: one row per metric and bin strategy
    (``calibration_error`` with ``norm="l1"``, ``"l2"``, ``"max"``; the recalibration
    slope and intercept have none), from the whole data's threshold state."""
    state = pl.col(_states.STATE)
    # each strategy's bins once (a sort of the state's points with the edges), then the
    # table and the three errors from them: Polars evaluates a repeated subexpression of
    # ``list.eval`` again at every reference, and the bins are most of the cost (2e6
    # points: 0.6 s each, seven times before)
    strategies = ("uniform", "quantile")
    binned = (
        whole_state.lazy()
        .select(
            *[state_bins(state, bins, s).alias(s) for s in strategies],
            recalibration(state, slope=True).alias("calibration_slope|"),
            recalibration(state, slope=False).alias("calibration_intercept|"),
        )
        .collect()
        .lazy()
    )
    table = (
        binned.select(
            pl.col("quantile").list.eval(table_of_bins(pl.element())).alias(QUANTILE_TABLE)
        )
        .explode(QUANTILE_TABLE)
        .unnest(QUANTILE_TABLE)
    )
    values = [
        error_of_list(pl.col(strategy), norm).alias(f"{name}|{strategy}")
        for strategy in strategies
        for name, norm in ERRORS
    ]
    row = binned.select(*values, "calibration_slope|", "calibration_intercept|")
    found, wide = pl.collect_all([table, row])
    records = []
    for key, value in wide.row(0, named=True).items():
        metric, _, strategy = key.partition("|")
        records.append({"metric": metric, "bins": strategy or None, "value": value})
    schema = {"metric": pl.String, "bins": pl.String, "value": pl.Float64}
    return {QUANTILE_TABLE: found, SUMMARY: pl.DataFrame(records, schema=schema)}


def calibration_html(report: Report) -> str:
    """The section: the errors over both bin strategies, slope and intercept."""
    from polars_eval.report.html import _e as escape
    from polars_eval.report.html import table_html

    summary = report.tables.get(SUMMARY)
    if summary is None:
        return ""
    bins = report.options.get("bins", 10)
    return (
        '<section id="pe-calibration"><h2>Calibration</h2><p class="pe-meta">'
        f"Over {escape(bins)} bins of equal width on [0, 1] (uniform) and of equal counts "
        "(quantile, at the scores' quantiles), as scikit-learn's "
        "<code>calibration_curve</code>: ece = Σ (n_b / n)·|positive rate − mean score|, "
        "rmsce its root-mean-square form, mce the largest gap of a bin. "
        "calibration_slope is b of logit P(y = 1) = a + b·logit(p) (1 when calibrated, "
        "below 1 when the scores are too extreme), calibration_intercept a of "
        "logit P(y = 1) = a + logit(p) (0 when right on average), both by maximum "
        "likelihood. The reliability chart shows both bin strategies.</p>"
        f"{table_html(summary)}</section>"
    )
