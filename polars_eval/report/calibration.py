"""The calibration section of the binary report (SPEC §15): reliability tables over
uniform and quantile bins, and the calibration errors and logistic recalibration of the
whole data, all finalized from the threshold state the report computes once (no pass over
the rows of its own)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from polars_eval.metrics._calibration import (
    SUMS,
    _percentile_points,
    error_of_list,
    table_of_bins,
)
from polars_eval.metrics.calibration import _fit
from polars_eval.report import _states

if TYPE_CHECKING:
    from polars_eval.report._kit import ReportView as Report

QUANTILE_TABLE = "calibration_table_quantile"
SUMMARY = "calibration"
ERRORS = (("ece", "l1"), ("rmsce", "l2"), ("mce", "max"))
"""The calibration errors of the section: expected, root-mean-square, maximum."""


CHUNK = 1 << 20
"""Points per step of the sums over a state's points: arrays of 8 MiB, none as long as
the state (the kernel would fault in and zero every page of each: at 2e7 points that
cost several times the arithmetic)."""


class _Ascending:
    """The points of one threshold state in ascending score order (``_ascending``'s
    fields ``w``, ``y``, ``p``: the same operations over the state's descending columns
    ``t``, ``tp``, ``fp``, then reversed), read in chunks, and their cumulative sums:
    sequential sums, as Polars' ``cum_sum``, carried from chunk to chunk."""

    def __init__(self, t: np.ndarray, tp: np.ndarray, fp: np.ndarray) -> None:
        self.t, self.tp, self.fp = t, tp, fp
        self.n = len(t)
        self.scores = t[::-1]  # ascending, NaN last (a view)

    def _chunk(self, field: str, start: int, stop: int) -> np.ndarray:
        """Points ``start:stop`` (ascending) of ``field``: x − prev(x) over the
        descending points ``n − stop : n − start`` (prev 0 before the first), reversed."""
        a, b = self.n - stop, self.n - start
        lo = max(a - 1, 0)  # with the point before, if any

        def step(x: np.ndarray) -> np.ndarray:
            return x[1:] - x[:-1] if a > 0 else x - np.concatenate([[0.0], x[:-1]])

        if field == "y":
            return step(self.tp[lo:b])[::-1]
        count = step(self.tp[lo:b] + self.fp[lo:b])
        return (count if field == "w" else self.t[a:b] * count)[::-1]

    def cumulative(self, field: str) -> Iterator[tuple[int, np.ndarray]]:
        """(start, the cumulative sums of ``field`` at points start, start + 1 ...)."""
        carry = 0.0
        for start in range(0, self.n, CHUNK):
            chunk = np.ascontiguousarray(self._chunk(field, start, min(start + CHUNK, self.n)))
            if start > 0:
                chunk[0] = carry + chunk[0]
            np.cumsum(chunk, out=chunk)
            carry = chunk[-1]
            yield start, chunk

    def before(self, field: str, ends: np.ndarray) -> np.ndarray:
        """The sums of ``field`` over the first ``ends`` points (0 for none): its
        cumulative sum at point end − 1."""
        out = np.zeros(len(ends))
        for start, cum in self.cumulative(field):
            here = (ends > start) & (ends <= start + len(cum))
            out[here] = cum[ends[here] - 1 - start]
        return out

    def rank(self, field: str, values: np.ndarray) -> np.ndarray:
        """``searchsorted(cumsum(field), values, side="right")`` (the cumulative sums of
        weights never decrease)."""
        out = np.zeros(len(values), dtype=np.int64)
        for _, cum in self.cumulative(field):
            out += np.searchsorted(cum, values, side="right")
        return out


def _quantile_edges(points: _Ascending, bins: int) -> np.ndarray:
    """The inner quantile edges of ``_edge_ends`` and ``_lerp`` (numpy's percentiles of
    the rows' scores, a weight counted as that many rows): the same operations over the
    ascending scores and their cumulative weights."""
    t, last = points.scores, points.n - 1
    total = points.before("w", np.array([points.n]))[0]
    h = (total - 1.0) * _percentile_points(bins)[1:-1]
    lo = np.floor(h)
    top, below = h >= total - 1.0, h < 0.0

    # the scores at the 0-based row ranks lo and lo + 1 (one pass for both)
    index = np.minimum(points.rank("w", np.concatenate([lo, lo + 1.0])), last)
    index = np.where(np.tile(top, 2), last, np.where(np.tile(below, 2), 0, index))
    a, b = np.split(t[index], 2)
    g = h - lo
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
    points. In numpy rather than Polars: the cumulative sums are computed in chunks and
    read at a few indices only, for both strategies at once, and the quantile edges are
    a dozen scalars (2e7 points: about 0.3 s of CPU against 5.4 in Polars, ``list.eval``
    and copies of every point).
    """
    with np.errstate(invalid="ignore"):  # a NaN score: NaN sums and edges, as in Polars
        ascending = _Ascending(*(points.get_column(c).to_numpy() for c in ("t", "tp", "fp")))
        return _bins_of_arrays(ascending, bins)


def _bins_of_arrays(points: _Ascending, bins: int) -> dict[str, pl.DataFrame]:
    n, t = points.n, points.scores
    outer = np.linspace(0.0, 1.0, bins + 1)
    inner = {"uniform": outer[1:-1], "quantile": np.empty(0)}
    if bins > 1 and n > 0:
        inner["quantile"] = np.sort(_quantile_edges(points, bins))
    # per bin its sums: the cumulative sums at its end (0 before every point), the last
    # bin's at the last point, less those at the previous end
    ends = {k: np.append(np.searchsorted(t, v, side="right"), n) for k, v in inner.items()}
    every = np.concatenate(list(ends.values()))
    at = {f: points.before(f, every) for f in SUMS}
    found, offset = {}, 0
    for strategy, edge in inner.items():
        stops = {f: v[offset : offset + len(ends[strategy])] for f, v in at.items()}
        offset += len(ends[strategy])
        sums = {f: v - np.concatenate([[0.0], v[:-1]]) for f, v in stops.items()}
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


def _recalibration(points: pl.DataFrame) -> dict[str, pl.Series]:
    """The calibration slope and intercept of one threshold state (``recalibration``'s
    fit, over its points as columns): the fit's inputs (score, positive and negative
    weight per point; one group) made once for both, from the state's columns as they
    are, not through a list and its Arrow form (at 2e7 points that read cost more than
    the intercept's fit, most of it in faulting in fresh arrays)."""
    t, tp, fp = (points.get_column(c).to_numpy() for c in ("t", "tp", "fp"))

    def step(x: np.ndarray) -> np.ndarray:  # x − prev(x), as ``_points`` computes it
        out = np.empty_like(x)
        out[:1] = x[:1] - 0.0
        np.subtract(x[1:], x[:-1], out=out[1:])
        return out

    inputs = (1, np.broadcast_to(np.int64(0), t.shape), t, step(tp), step(fp))
    return {
        "calibration_slope|": _fit(*inputs, slope=True),
        "calibration_intercept|": _fit(*inputs, slope=False),
    }


def calibration_tables(whole_state: pl.DataFrame, bins: int) -> dict[str, pl.DataFrame]:
    """The quantile reliability table (``df.eval.calibration_table(..., strategy=
    "quantile")``) and the section's summary: one row per metric and bin strategy
    (``calibration_error`` with ``norm="l1"``, ``"l2"``, ``"max"``; the recalibration
    slope and intercept have none), from the whole data's threshold state."""
    state = pl.col(_states.STATE)
    strategies = ("uniform", "quantile")
    points = whole_state.select(state.explode()).unnest(_states.STATE)
    fits = _recalibration(points)
    binned = pl.concat(
        [*_bins_of_points(points, bins).values(), pl.DataFrame(fits)], how="horizontal"
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


def calibration_tables_soon(
    whole_state: pl.DataFrame, bins: int
) -> dict[str, Callable[[], pl.DataFrame]]:
    """:func:`calibration_tables` started in a thread of its own: per table, a function
    that waits for it (and raises what the thread raised).

    The section's work is numpy over the whole state's points on one core (the fits of
    the slope and the intercept, most of it faulting in fresh arrays), where the rest of
    the report runs Polars queries on every core: side by side, they take the time of the
    longer (2e7 rows, 100 segments, an idle machine: 10 s of the report's 33 s of wall
    time were the fits, with one core idle). The same tables, computed once either way.
    """
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="polars_eval-calibration")
    future = pool.submit(calibration_tables, whole_state, bins)
    pool.shutdown(wait=False)
    return {name: lambda name=name: future.result()[name] for name in (QUANTILE_TABLE, SUMMARY)}


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
