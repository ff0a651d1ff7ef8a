"""The bins of the calibration metrics (SPEC §15), shared by :mod:`.binary` and
:mod:`.calibration`.

Bins are scikit-learn's ``calibration_curve``'s: edges ``numpy.linspace(0, 1, bins + 1)``
(``strategy="uniform"``) or ``numpy.percentile(scores, numpy.linspace(0, 1, bins + 1) *
100)`` (``strategy="quantile"``), and a score's bin is ``numpy.searchsorted(edges[1:-1],
score)``: the number of inner edges strictly below it, so a score on an edge belongs to
the bin below (bins right-closed, the first one closed on both ends). Quantile edges that
coincide leave the bins between them empty: empty bins are never reported.

Two states:

* **uniform bins**: per non-empty bin the weighted sums ``{b, w, y, p}`` (bin, Σw, Σw·y,
  Σw·p; with ``second=True`` also Σw·p² and Σw·y·p), a ``list`` state of at most
  ``bins`` entries per group, merged by adding the sums of equal bins
  (:func:`bin_state`);
* **quantile bins**: the edges need the scores' distribution, so the state is the
  threshold state of :mod:`._curve` (one point per distinct score, merged exactly per
  score); :func:`quantile_bins` turns it into the same per-bin sums (:func:`state_bins`
  does either strategy from it: the report reads both from the one state it computes).

The errors of :data:`NORMS` and the reliability table are finalizers over per-bin sums.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import polars as pl

from polars_eval._core.spec import State
from polars_eval._exprs import F64, NAN, safe_div
from polars_eval.metrics._curve import Curve, prev

I32 = pl.Int32
SUMS = ("w", "y", "p")
SECOND = ("pp", "yp")  # Σw·p², Σw·y·p: the within-bin terms of the Brier decomposition


def _edge_sums(p: pl.Expr, w: pl.Expr | None, bins: int, second: bool) -> pl.Expr:
    """Inside ``list.eval``, over the rows of one class sorted by score ``p`` (weights
    ``w``; None: 1), the cumulative ``{w, p}`` (and ``pp``: Σw·p²) at the end of each
    uniform bin: bin k ends after the rows with a score <= its upper edge
    (``search_sorted(edge, side="right")``), the last bin after every row (NaN sorts
    last). ``bins`` rows."""
    inner = pl.lit(pl.Series(np.linspace(0.0, 1.0, bins + 1)[1:-1].tolist(), dtype=F64))
    end = pl.concat([p.search_sorted(inner, side="right"), p.len()]).cast(pl.Int64)
    zero = pl.lit(0.0, dtype=F64)

    def at_end(values: pl.Expr) -> pl.Expr:  # Σ values over the rows before each end
        return pl.concat([zero, values.cum_sum()]).gather(end)

    fields = {
        "w": at_end(w) if w is not None else end.cast(F64),
        "p": at_end(p if w is None else w * p),
    }
    if second:
        fields["pp"] = at_end(p * p if w is None else w * p * p)
    return pl.struct(**fields)


def _cumulative_at_edges(sorted_rows: pl.Expr, bins: int, weighted: bool, second: bool) -> pl.Expr:
    """:func:`_edge_sums` over the rows of one class sorted by score (a list per group:
    the scores, or ``{p, w}`` with weights)."""
    e = pl.element()
    p, w = (e.struct.field("p"), e.struct.field("w")) if weighted else (e, None)
    return sorted_rows.list.eval(_edge_sums(p, w, bins, second))


def _bins_of_classes(bins: int, sums: tuple[str, ...]) -> pl.Expr:
    """Over the positives' cumulative sums at the bin ends followed by the negatives'
    (``2 · bins`` rows), the non-empty bins' sums ``{b, <sums>}``."""
    e = pl.element()
    pos, neg = e.slice(0, bins), e.slice(bins, bins)
    cumulative = {
        "w": pos.struct.field("w") + neg.struct.field("w"),
        "y": pos.struct.field("w"),
        "p": pos.struct.field("p") + neg.struct.field("p"),
        "pp": pos.struct.field("pp") + neg.struct.field("pp") if "pp" in sums else None,
        "yp": pos.struct.field("p"),
    }
    return pl.struct(
        b=pl.int_range(bins, dtype=I32), **{f: cumulative[f] - prev(cumulative[f]) for f in sums}
    )


def per_bin(rows: pl.Expr, sums: tuple[str, ...]) -> pl.Expr:
    """Per-bin sums from rows ``{b, <sums>}`` in any order (an aggregation over the stacked
    per-bin states of parts): the rows sorted by bin, the cumulative sums at the last row
    of each bin, their differences; one ``{b, <sums>}`` per bin, in bin order, as a list."""
    b = pl.field("b")
    cumulated = rows.sort_by(rows.struct.field("b")).struct.eval(
        b=b, **{f: pl.field(f).cum_sum() for f in sums}, end=(b != b.shift(-1)).fill_null(True)
    )
    e = pl.element()
    ends = cumulated.implode().list.eval(e.filter(e.struct.field("end")))
    fields = {f: e.struct.field(f) - prev(e.struct.field(f)) for f in sums}
    return ends.list.eval(pl.struct(b=e.struct.field("b"), **fields))


def bin_state(
    y: pl.Expr,
    p: pl.Expr,
    bins: int,
    *,
    weight: pl.Expr | None,
    keep: pl.Expr | None = None,
    second: bool = False,
) -> State:
    """The uniform-bin state of rows with label ``y`` (0/1), probability ``p`` and
    ``weight`` (None: 1), restricted to ``keep`` (a row with a null or of weight 0 is left
    out anyway): per non-empty bin ``{b, w, y, p}`` (and ``pp``, ``yp`` with ``second``),
    merged by bin.

    Each class's scores are sorted apart (unweighted: a plain sort of the scores; weighted:
    ``{p, w}`` sorted by score) and the sums read at the ``bins`` bin ends (a binary search
    of the edges, cumulative sums gathered there): no bin is computed row by row and no
    row-wide struct is filtered, so the state costs two sorts of half the rows (1e7 rows
    in 1,000 groups: about a plain ``group_by(group, bin)`` pass).
    """
    sums = SUMS + (SECOND if second else ())
    used = y.is_not_null() & p.is_not_null()
    if weight is not None:
        used = used & weight.is_not_null() & (weight != 0.0)
    if keep is not None:
        used = used & keep
    parts = []
    for label in (1.0, 0.0):
        rows = used & (y == label)
        if weight is None:
            ordered = p.filter(rows).sort().implode()
        else:
            pair = pl.struct(p.alias("p"), weight.alias("w")).filter(rows)
            ordered = pair.sort_by(pair.struct.field("p")).implode()
        parts.append(_cumulative_at_edges(ordered, bins, weight is not None, second))
    return _state_of_edges(pl.concat_list(parts), bins, sums)


def _state_of_edges(edges: pl.Expr, bins: int, sums: tuple[str, ...]) -> State:
    """The bin state from the positives' cumulative sums at the bin ends followed by the
    negatives' (a list of ``2 · bins`` per group)."""
    e = pl.element()
    state = edges.list.eval(_bins_of_classes(bins, sums))
    state = state.list.eval(e.filter(e.struct.field("w") > 0.0))

    def merge(column: pl.Expr) -> pl.Expr:
        return per_bin(column.explode().drop_nulls(), sums)

    return State(state, "list", merge)


# ---------------------------------------------------------------------------------------
# Quantile bins from the threshold state
# ---------------------------------------------------------------------------------------


def _percentile_points(bins: int) -> np.ndarray:
    """The quantiles numpy uses for ``percentile(x, linspace(0, 1, bins + 1) * 100)``:
    the percentages divided by 100 again (as ``numpy.percentile`` does), not always the
    ``linspace`` values themselves."""
    return np.true_divide(np.linspace(0.0, 1.0, bins + 1) * 100.0, 100.0)


def _ascending(c: Curve) -> pl.Expr:
    """The points of a threshold state in ascending score order: ``{t, w, y, p, edge}``
    (score, weight, positives' weight, score·weight; ``edge`` false)."""
    count = c.tp + c.fp - prev(c.tp + c.fp)
    return pl.struct(
        t=c.threshold,
        w=count,
        y=c.tp - prev(c.tp),
        p=c.threshold * count,
        edge=pl.lit(False),
    ).reverse()


def _edge_ends(bins: int) -> pl.Expr:
    """Over ascending points: per inner quantile, the scores at ranks floor(h) and
    floor(h) + 1 and the fraction ``g`` (see :func:`quantile_bins`)."""
    e = pl.element()
    t, cum = e.struct.field("t"), e.struct.field("w").cum_sum()
    n = t.len().cast(pl.Int64)
    last = n - 1
    total = cum.last()
    h = (total - 1.0) * pl.lit(pl.Series(_percentile_points(bins)[1:-1].tolist(), dtype=F64))
    lo = h.floor()
    top, below = h >= total - 1.0, h < 0.0

    def at(position: pl.Expr) -> pl.Expr:  # the score at a 0-based row rank
        index = cum.search_sorted(position, side="right").cast(pl.Int64).clip(upper_bound=last)
        index = pl.when(top).then(last).when(below).then(0).otherwise(index)
        return t.gather(pl.when(n > 0).then(index))

    return pl.struct(a=at(lo), b=at(lo + 1.0), g=h - lo)


def _lerp() -> pl.Expr:
    """numpy's interpolation ``_lerp(a, b, g)``, as a point of the edge rows."""
    e = pl.element()
    a, b, g = (e.struct.field(f) for f in ("a", "b", "g"))
    diff = b - a
    return _edge_rows(pl.when(g >= 0.5).then(b - diff * (1.0 - g)).otherwise(a + diff * g))


def _edge_rows(t: pl.Expr) -> pl.Expr:
    """Edge rows of scores ``t``: no weight, ``edge`` true."""
    zero = pl.lit(0.0, dtype=F64)
    return pl.struct(t=t, w=zero, y=zero, p=zero, edge=pl.lit(True))


def _sums_between_edges(bins: int) -> pl.Expr:
    """Over the points and the edge rows sorted by score (an edge after the points of its
    score): per bin its edges and sums, the cumulative sums at each edge row (an edge row
    adds nothing) less those at the previous one; the last bin ends at the last row."""
    e = pl.element()
    t, edge = e.struct.field("t"), e.struct.field("edge")
    sums = {}
    for f in SUMS:
        cum = e.struct.field(f).cum_sum()
        at_stops = pl.concat([cum.filter(edge), cum.last()])
        sums[f] = at_stops - prev(at_stops)
    edges = pl.concat([t.first(), t.filter(edge), t.last()])
    return pl.struct(
        b=pl.int_range(bins, dtype=I32),
        lower=edges.slice(0, bins),
        upper=edges.slice(1, bins),
        **sums,
    )


def quantile_bins(state: pl.Expr, bins: int) -> pl.Expr:
    """The non-empty quantile bins of a threshold state (a list per group), as a list of
    ``{b, lower, upper, w, y, p}`` (bin, its edges, Σw, Σw·y, Σw·score), in bin order.

    The edges are ``numpy.percentile``'s (method ``"linear"``) of the rows' scores, each
    weight counted as that many rows (integer weights give the edges of the repeated rows;
    other weights the same formula): the virtual index ``h = (W − 1)·q`` over the W rows in
    ascending order, the scores at ranks ``floor(h)`` and ``floor(h) + 1`` (a rank read off
    the cumulative weights) and numpy's interpolation between them (``a + (b − a)·g``, or
    ``b − (b − a)·(1 − g)`` for ``g ≥ 0.5``), so the edges equal numpy's bit for bit. The
    inner edges join the points as rows of no weight, sorted after the points of an equal
    score (a score on an edge is in the bin below); each bin's sums are then differences
    of cumulative sums at the edge rows. In stages of ``list.eval``, each small (inside
    one, Polars computes a repeated sub-expression again at every reference).
    """
    return state_bins(state, bins, "quantile")


def state_bins(state: pl.Expr, bins: int, strategy: str) -> pl.Expr:
    """The non-empty bins of a threshold state, uniform or quantile (see
    :func:`quantile_bins`): ``{b, lower, upper, w, y, p}`` per bin, a list per group."""
    points = state.list.eval(_ascending(Curve()))
    if bins > 1:
        if strategy == "quantile":
            edges = points.list.eval(_edge_ends(bins)).list.eval(_lerp())
        else:  # the constant edges, as rows of each group's list
            inner = np.linspace(0.0, 1.0, bins + 1)[1:-1].tolist()
            edges = points.list.eval(_edge_rows(pl.lit(pl.Series(inner, dtype=F64))))
        points = pl.concat_list([points, edges])
    e = pl.element()
    ordered = points.list.eval(e.sort_by(e.struct.field("t"), e.struct.field("edge")))
    per_bin = ordered.list.eval(_sums_between_edges(bins))
    if strategy == "uniform":  # the outer edges are 0 and 1, not the extreme scores
        outer = np.linspace(0.0, 1.0, bins + 1)
        lower = pl.lit(pl.Series(outer[:-1].tolist(), dtype=F64))
        upper = pl.lit(pl.Series(outer[1:].tolist(), dtype=F64))
        per_bin = per_bin.list.eval(
            e.struct.with_fields(
                lower=lower.gather(e.struct.field("b")), upper=upper.gather(e.struct.field("b"))
            )
        )
    return per_bin.list.eval(e.filter(e.struct.field("w") > 0.0))


# ---------------------------------------------------------------------------------------
# Finalizers over per-bin sums ({w, y, p} per bin: a column of structs)
# ---------------------------------------------------------------------------------------


def _l1(w: pl.Expr, y: pl.Expr, p: pl.Expr) -> pl.Expr:
    return safe_div((y - p).abs().sum(), w.sum())


def _l2(w: pl.Expr, y: pl.Expr, p: pl.Expr) -> pl.Expr:
    return safe_div(((y - p) ** 2 / w).sum(), w.sum()).sqrt()


def _max(w: pl.Expr, y: pl.Expr, p: pl.Expr) -> pl.Expr:
    return ((y - p).abs() / w).max()


NORMS: Mapping[str, Callable[[pl.Expr, pl.Expr, pl.Expr], pl.Expr]] = {
    "l1": _l1,
    "l2": _l2,
    "max": _max,
}
"""The calibration errors over the non-empty bins b with n_b = Σw, ȳ_b = Σw·y / n_b and
p̄_b = Σw·p / n_b: l1 = Σ_b (n_b / n)·|ȳ_b − p̄_b| = Σ_b |Σw·y − Σw·p|_b / n, l2 =
(Σ_b (n_b / n)(ȳ_b − p̄_b)²)^½, max = max_b |ȳ_b − p̄_b|."""


def error_of_bins(bins_column: pl.Expr, norm: str) -> pl.Expr:
    """The calibration error ``norm`` of a column of per-bin structs (an aggregation):
    null without a bin, NaN when a score is NaN."""
    w, y, p = (bins_column.struct.field(f) for f in SUMS)
    value = NORMS[norm](w, y, p)
    return pl.when(p.is_nan().any()).then(pl.lit(NAN, dtype=F64)).otherwise(value).cast(F64)


def error_of_list(state: pl.Expr, norm: str) -> pl.Expr:
    """:func:`error_of_bins` over a list of per-bin structs per group."""
    return state.list.eval(error_of_bins(pl.element(), norm)).list.first()


def table_of_bins(bins_column: pl.Expr) -> pl.Expr:
    """The reliability table (``calibration_table``'s fields) of a column of per-bin
    structs that carry their edges: every float NaN when a score is NaN."""
    field = bins_column.struct.field
    w = field("w")
    values = {
        "lower": field("lower"),
        "upper": field("upper"),
        "mean_score": field("p") / w,
        "positive_rate": field("y") / w,
        "count": w,
    }
    nan = field("p").is_nan().any()
    return pl.struct(
        bin=(field("b") + 1).cast(pl.Int64),
        **{k: pl.when(nan).then(pl.lit(NAN, dtype=F64)).otherwise(v) for k, v in values.items()},
    )


def quantile_finalizers(
    bins: int,
) -> tuple[Callable[[pl.Expr], pl.Expr], Callable[[pl.Expr], pl.Expr]]:
    """The per-bin list of a threshold state (a list per group) and of one state's points
    (a column): the two forms a spec over the threshold state finalizes from."""

    def of_state(state: pl.Expr) -> pl.Expr:
        return quantile_bins(state, bins)

    def of_points(points: pl.Expr) -> pl.Expr:
        return quantile_bins(points.implode(), bins)

    return of_state, of_points
