"""The calibration section of the binary report (SPEC §15): reliability tables over
uniform and quantile bins, and the calibration errors and logistic recalibration of the
whole data, all finalized from the threshold state the report computes once (no pass over
the rows of its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from polars_eval._exprs import F64
from polars_eval.metrics._calibration import SUMS, _edge_ends, _lerp, error_of_list, table_of_bins
from polars_eval.metrics._curve import prev
from polars_eval.metrics.calibration import recalibration
from polars_eval.report import _states

if TYPE_CHECKING:
    from polars_eval.report._report import Report

QUANTILE_TABLE = "calibration_table_quantile"
SUMMARY = "calibration"
ERRORS = (("ece", "l1"), ("rmsce", "l2"), ("mce", "max"))
"""The calibration errors of the section: expected, root-mean-square, maximum."""


def _bins_of_points(points: pl.DataFrame, bins: int, strategy: str) -> pl.DataFrame:
    """``state_bins(state, bins, strategy)`` of one threshold state, from its points as
    columns (``t``, ``tp``, ``fp``, descending): one row, the list of per-bin structs
    ``{b, lower, upper, w, y, p}``, equal to it bit for bit.

    ``state_bins`` sorts the points with the inner edges (rows of no weight, after the
    points of an equal score) and reads each bin's sums off the cumulative sums at the
    edge rows. The points are already in order (the state's, reversed), so here each
    edge finds its place by a binary search (``side="right"``: after the points of an
    equal score; NaN sorts last in both) and the cumulative sums of the points alone are
    read there: the same sums in the same order (an edge row adds 0.0), without sorting
    the state's points. In steps, each collected (Polars evaluates a repeated
    subexpression again at every reference).
    """
    t, tp, fp = pl.col("t"), pl.col("tp"), pl.col("fp")
    count = tp + fp - prev(tp + fp)
    # the ascending points of ``_ascending``: the same operations, then reversed
    ascending = points.select(
        t.reverse(),
        count.reverse().alias("w"),
        (tp - prev(tp)).reverse().alias("y"),
        (t * count).reverse().alias("p"),
    )
    if bins == 1:
        inner = pl.Series("t", [], dtype=F64)
    elif strategy == "quantile":  # numpy's percentiles of the rows' scores (the state's)
        rows = pl.struct("t", "w").implode().list.eval(_edge_ends(bins)).list.eval(_lerp())
        found = ascending.select(rows.list.eval(pl.element().struct.field("t")))
        inner = found.to_series().explode().sort().alias("t")
    else:
        inner = pl.Series("t", np.linspace(0.0, 1.0, bins + 1)[1:-1].tolist(), dtype=F64)
    # per bin its sums: the cumulative sums at its end (0 before every point), the last
    # bin's at the last point, less those at the previous end
    ends = ascending.get_column("t").search_sorted(inner, side="right").cast(pl.Int64)
    zero = pl.lit(0.0, dtype=F64)
    cums = ascending.select(pl.concat([zero, pl.col(f).cum_sum()]).alias(f) for f in SUMS)
    stops = pl.concat([cums[ends], cums.tail(1)])
    sums = stops.select(pl.col(f) - prev(pl.col(f)) for f in SUMS)
    # the outer edges: the smallest and largest of the points and inner edges (NaN last)
    scores = pl.concat([ascending.get_column("t").head(1), inner.head(1)]).sort()
    first = scores.drop_nulls().head(1)
    scores = pl.concat([ascending.get_column("t").tail(1), inner.tail(1)]).sort()
    last = scores.drop_nulls().tail(1)
    edges = pl.concat([first, inner, last])
    b = pl.int_range(bins, dtype=pl.Int32, eager=True)
    lower, upper = edges.slice(0, bins), edges.slice(1, bins)
    if strategy == "uniform":  # the outer edges are 0 and 1, not the extreme scores
        outer = np.linspace(0.0, 1.0, bins + 1)
        lower = pl.Series(outer[:-1].tolist(), dtype=F64).gather(b)
        upper = pl.Series(outer[1:].tolist(), dtype=F64).gather(b)
    table = sums.select(
        pl.struct(b=b, lower=lower, upper=upper, **{f: pl.col(f) for f in SUMS}).alias(strategy)
    )
    return table.filter(pl.col(strategy).struct.field("w") > 0.0).select(pl.col(strategy).implode())


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
    points = whole_state.select(state.explode()).unnest(_states.STATE)
    binned = pl.concat(
        [
            *[_bins_of_points(points, bins, s) for s in strategies],
            whole_state.select(
                recalibration(state, slope=True).alias("calibration_slope|"),
                recalibration(state, slope=False).alias("calibration_intercept|"),
            ),
        ],
        how="horizontal",
    ).lazy()
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
