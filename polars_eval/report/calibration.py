"""The calibration section of the binary report (SPEC §15): reliability tables over
uniform and quantile bins, and the calibration errors and logistic recalibration of the
whole data, all finalized from the threshold state the report computes once (no pass over
the rows of its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from polars_eval.metrics._calibration import (
    SUMS,
    _percentile_points,
    error_of_list,
    table_of_bins,
)
from polars_eval.metrics.calibration import recalibration
from polars_eval.report import _states

if TYPE_CHECKING:
    from polars_eval.report._kit import ReportView as Report

QUANTILE_TABLE = "calibration_table_quantile"
SUMMARY = "calibration"
ERRORS = (("ece", "l1"), ("rmsce", "l2"), ("mce", "max"))
"""The calibration errors of the section: expected, root-mean-square, maximum."""


def _quantile_edges(t: np.ndarray, cum: np.ndarray, bins: int) -> np.ndarray:
    """The inner quantile edges of ``_edge_ends`` and ``_lerp`` (numpy's percentiles of
    the rows' scores, a weight counted as that many rows): the same operations over the
    ascending scores ``t`` and their cumulative weights ``cum``."""
    last = len(t) - 1
    total = cum[-1]
    h = (total - 1.0) * _percentile_points(bins)[1:-1]
    lo = np.floor(h)
    top, below = h >= total - 1.0, h < 0.0

    def at(position: np.ndarray) -> np.ndarray:  # the score at a 0-based row rank
        index = np.minimum(np.searchsorted(cum, position, side="right"), last)
        return t[np.where(top, last, np.where(below, 0, index))]

    a, b, g = at(lo), at(lo + 1.0), h - lo
    diff = b - a
    return np.where(g >= 0.5, b - diff * (1.0 - g), a + diff * g)


def _bins_of_points(points: pl.DataFrame, bins: int) -> dict[str, pl.DataFrame]:
    """``state_bins(state, bins, strategy)`` of one threshold state for both strategies,
    from its points as columns (``t``, ``tp``, ``fp``, descending): per strategy one
    row, the list of per-bin structs ``{b, lower, upper, w, y, p}``, equal to it bit for
    bit.

    ``state_bins`` sorts the points with the inner edges (rows of no weight, after the
    points of an equal score) and reads each bin's sums off the cumulative sums at the
    edge rows. The points are already in order (the state's, reversed), so here each
    edge finds its place by a binary search (``side="right"``: after the points of an
    equal score; NaN sorts last in both) and the cumulative sums of the points alone are
    read there: the same sums in the same order (an edge row adds 0.0; a cumulative sum
    is a plain sequential sum in numpy as in Polars), without sorting the state's
    points. In numpy rather than Polars: the ascending points are reversed views of the
    state's columns, not copies, each cumulative sum is computed once for both
    strategies and read at a few indices only, and the quantile edges are a dozen
    scalars (2e7 points: 0.4 s of CPU against 5.4 in Polars, ``list.eval`` and copies).
    """
    with np.errstate(invalid="ignore"):  # a NaN score: NaN sums and edges, as in Polars
        return _bins_of_arrays(
            *(points.get_column(c).to_numpy() for c in ("t", "tp", "fp")), bins=bins
        )


def _bins_of_arrays(
    t: np.ndarray, tp: np.ndarray, fp: np.ndarray, *, bins: int
) -> dict[str, pl.DataFrame]:
    n = len(t)
    # the ascending points of ``_ascending``: the same operations, then reversed (views)
    c = tp + fp
    count = c - np.concatenate([[0.0], c[:-1]])
    del c
    y = tp - np.concatenate([[0.0], tp[:-1]])
    ascending = {"w": count[::-1], "y": y[::-1], "p": (t * count)[::-1]}
    t = t[::-1]
    cums = {"w": np.cumsum(ascending["w"])}
    outer = np.linspace(0.0, 1.0, bins + 1)
    inner = {"uniform": outer[1:-1], "quantile": np.empty(0)}
    if bins > 1 and n > 0:
        inner["quantile"] = np.sort(_quantile_edges(t, cums["w"], bins))
    ends = {k: np.searchsorted(t, v, side="right") for k, v in inner.items()}
    for f in ("y", "p"):
        cums[f] = np.cumsum(ascending[f])
    found = {}
    for strategy, edge in inner.items():
        # per bin its sums: the cumulative sums at its end (0 before every point), the
        # last bin's at the last point, less those at the previous end
        sums = {}
        for f in SUMS:
            at = cums[f][np.maximum(ends[strategy] - 1, 0)] if n else np.zeros(len(edge))
            stops = np.append(np.where(ends[strategy] > 0, at, 0.0), cums[f][-1] if n else 0.0)
            sums[f] = stops - np.concatenate([[0.0], stops[:-1]])
        # the outer edges: the smallest and largest of the points and inner edges (NaN last)
        first = np.sort(np.concatenate([t[:1], edge[:1]]))[:1]
        last = np.sort(np.concatenate([t[-1:], edge[-1:]]))[-1:]
        edges = np.concatenate([first, edge, last])
        b = np.arange(bins, dtype=np.int32)
        lower, upper = (outer[:-1], outer[1:]) if strategy == "uniform" else (edges[:-1], edges[1:])
        if n == 0:  # no point: no bin (``state_bins``' bins are all empty)
            b = b[:0]
        table = pl.DataFrame(
            {
                "b": b,
                "lower": lower[: len(b)],
                "upper": upper[: len(b)],
                **{f: v[: len(b)] for f, v in sums.items()},
            }
        )
        found[strategy] = table.filter(pl.col("w") > 0.0).select(
            pl.struct(pl.all()).implode().alias(strategy)
        )
    return found


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
            *_bins_of_points(points, bins).values(),
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
    from polars_eval.report._kit import _e as escape
    from polars_eval.report._kit import table_html

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
