"""The threshold states of a binary report: every table and curve from them.

The threshold state of the whole data (``{t, tp, fp}`` per distinct score,
:mod:`polars_eval.metrics._curve`) and that of every segment are computed once, each
sorting its own rows (the state's one sort). The summary and segment metrics are the
metric layer's own finalizers over these states (``df.eval.binary`` runs the same ones);
the long curves are finalized from the kept states only when asked for
(``report.tables["roc_curve_by"]``), and the charts get them thinned inside Polars.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping, Sequence

import polars as pl

from polars_eval._exprs import to_expr
from polars_eval._typing import IntoExpr

STATE = "__pe_state"
"""The column of a threshold state (the name ``df.eval.binary`` gives it)."""

SEGMENT = "segment"


class Tables(MutableMapping[str, pl.DataFrame]):
    """The tables of a report by name; some are computed on first access, then kept.

    A ``dict`` to read (``tables["roc_curve"]``, ``in``, ``items()``): a deferred table
    (a long curve finalized from a kept threshold state) is computed when it is first
    read, so a report that is only written to HTML never materialises its full curves.
    """

    def __init__(self, tables: dict[str, pl.DataFrame] | None = None) -> None:
        self._items: dict[str, pl.DataFrame | Callable[[], pl.DataFrame]] = dict(tables or {})

    def defer(self, name: str, compute: Callable[[], pl.DataFrame]) -> None:
        """Add ``name``, computed by ``compute()`` when first read."""
        self._items[name] = compute

    def __getitem__(self, name: str) -> pl.DataFrame:
        value = self._items[name]
        if not isinstance(value, pl.DataFrame):
            value = self._items[name] = value()
        return value

    def __setitem__(self, name: str, table: pl.DataFrame) -> None:
        self._items[name] = table

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __contains__(self, name: object) -> bool:
        # (Mapping's own ``in`` reads the value: it would compute a deferred table)
        return name in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Tables({list(self._items)})"


def input_rows(
    lf: pl.LazyFrame, label: IntoExpr, score: IntoExpr, weight: IntoExpr | None, by: Sequence[str]
) -> pl.LazyFrame:
    """The columns that the inputs and ``by`` read (to read a lazy source once)."""
    inputs = [to_expr(x) for x in (label, score, weight) if x is not None]
    needed = dict.fromkeys([*by, *(name for e in inputs for name in e.meta.root_names())])
    return lf.select(list(needed))


def thin(curve: pl.Expr, points: int, keep: pl.Expr | None = None) -> pl.Expr:
    """At most ``points`` points of each curve (a list), evenly spaced by rank.

    Point i of n is kept when ``floor(i·(points−1)/n)`` starts a new value, and the last
    point always: the first and last points survive, every kept point is a point of the
    curve with its exact values, in the curve's order, and a curve of fewer than
    ``points`` points is kept whole. ``keep`` (an expression over the list's elements)
    marks more points to keep (the KS point of a ROC curve).
    """
    i, n = pl.int_range(pl.len()), pl.len()
    step = (i * (points - 1) // n) != ((i - 1) * (points - 1) // n)
    mask = step | (i == n - 1)
    if keep is not None:
        mask = mask | keep
    return curve.list.eval(pl.element().filter(mask))


def ks_point() -> pl.Expr:
    """Inside a ROC list: true at the first finite point of largest ``|tpr − fpr|``."""
    e = pl.element()
    finite = e.struct.field("threshold").is_finite()
    gap = pl.when(finite).then((e.struct.field("tpr") - e.struct.field("fpr")).abs())
    return (pl.int_range(pl.len()) == (gap == gap.max()).arg_max()).fill_null(False)


def thin_state(
    state: pl.Expr, points: int, offset: int, ks: bool = False, exploded: bool = False
) -> pl.Expr:
    """The points of a threshold state that :func:`thin` keeps of its curve.

    For a curve with one point per state point, after ``offset`` points of its own (the
    ROC and Lorenz curves start at a point (0, 0) that no state point gives): state point
    j is curve point i = j + offset of m = n + offset, kept when :func:`thin` keeps it,
    so the curve of the thinned state is the thinned curve, without finalizing the whole
    curve first. The last point (the class totals) is always kept, and a NaN score (the
    first point: the curve is then NaN everywhere) too; ``ks`` keeps the ROC curve's KS
    point (:func:`ks_point`). ``exploded``: ``state`` is the column of one state's points
    (the state exploded into a frame of its own, several times cheaper than
    ``list.eval``); the kept points come back as a column (to implode in a next
    ``select``: imploded in the same one, they cost six times more).
    """
    e = state if exploded else pl.element()
    t, tp, fp = (e.struct.field(f) for f in ("t", "tp", "fp"))
    n = t.len().cast(pl.Int64)
    # thin keeps curve point i where floor(i·(points−1)/m) steps up: the first i of each
    # step k, ceil(k·m/(points−1)); these points−1 indices are computed, not found by a
    # test of every point
    k = pl.int_range(points - 1, dtype=pl.Int64)
    steps = (k * (n + offset) + (points - 2)) // (points - 1) - offset
    index = [
        steps.filter((steps >= 0) & (steps < n)),
        (n - 1).filter(n > 0),
        pl.when(t.first().is_nan()).then(pl.lit(0, dtype=pl.Int64)),
    ]
    if ks:  # the first finite point of largest |tpr − fpr| (none when a class is absent)
        P, N = tp.last(), fp.last()  # noqa: N806 - the textbook names
        defined = t.is_finite() & (P != 0.0) & (N != 0.0)
        # tp·(1/P): how Polars divides a column by one value inside an aggregation, so the
        # rates (and their ties) are those of the ROC curve's points, finalized in list.eval
        gap = pl.when(defined).then((tp * (1.0 / P) - fp * (1.0 / N)).abs())
        index.append((gap == gap.max()).arg_max().cast(pl.Int64))
    # (each index once in the expression: Polars evaluates a repeated subexpression of
    # an aggregation again)
    kept = e.gather(pl.concat(index).drop_nulls().unique().sort())
    return kept if exploded else state.list.eval(kept)


def segment_label(by: Sequence[str]) -> pl.Expr:
    """One string naming a segment: its ``by`` values joined by " / " (null shown as "null")."""
    parts = [pl.col(c).cast(pl.String).fill_null("null") for c in by]
    return pl.concat_str(parts, separator=" / ").alias(SEGMENT)


class StateCurves:
    """The long curves of a binary report, finalized from the kept states on demand.

    ``whole``: one row with the whole data's state; ``segments``: ``by`` and each
    segment's state (None without ``by``); ``finalize``: each curve's finalizer (its
    spec's) as a function of a state column.
    """

    names = ("roc_curve", "pr_curve", "lorenz_curve", "roc_curve_by", "pr_curve_by")
    # points each curve has before its first state point (one point per state point after)
    offsets = {"roc_curve": 1, "pr_curve": 0, "lorenz_curve": 1}

    def __init__(
        self,
        whole: pl.DataFrame,
        segments: pl.DataFrame | None,
        by: list[str],
        finalize: dict[str, Callable[[pl.Expr], pl.Expr]],
    ) -> None:
        self.whole = whole.select(STATE)
        self.finalize = finalize
        self.segments = None if segments is None else segments.select(*by, STATE)
        self.by = by
        self._thinned: dict[tuple[str, int, tuple[str, ...] | None], pl.DataFrame] = {}
        self._lengths: dict[str, int] = {}

    def _source(self, name: str) -> tuple[pl.DataFrame, list[str], Callable[..., pl.Expr]]:
        base = name.removesuffix("_by")
        if name.endswith("_by"):
            assert self.segments is not None
            return self.segments, self.by, self.finalize[base]
        return self.whole, [], self.finalize[base]

    def full(self, name: str) -> pl.DataFrame:
        """The curve as the namespace returns it (``df.eval.roc_curve(..., by=by)``)."""
        frame, by, finalize = self._source(name)
        if by:
            frame = frame.sort(by, nulls_last=True)
        curve = frame.lazy().select(*by, finalize(pl.col(STATE)).alias(name))
        return curve.explode(name).unnest(name).collect()

    def length(self, name: str) -> int:
        """The number of points of the whole data's curve ``name``."""
        name = name.removesuffix("_by")
        if name not in self._lengths:
            points = self.whole.select(pl.col(STATE).list.len()).item()
            self._lengths[name] = int(points) + self.offsets[name]
        return self._lengths[name]

    def thinned(self, name: str, points: int, labels: list[str] | None = None) -> pl.DataFrame:
        """The curve with at most ``points`` points per curve (:func:`thin`).

        With ``labels`` (a per-segment curve), only those segments, named by a ``segment``
        column; the ROC curve of the whole data also keeps its KS point.
        """
        key = (name, points, None if labels is None else tuple(labels))
        if key in self._thinned:
            return self._thinned[key]
        frame, by, finalize = self._source(name)
        if labels is not None:
            frame = frame.with_columns(segment_label(by)).filter(pl.col(SEGMENT).is_in(labels))
            frame = frame.sort(SEGMENT)  # the segments' states come in no fixed order
            by = [SEGMENT]
        offset = self.offsets[name.removesuffix("_by")]
        ks = name == "roc_curve"
        if by:
            kept = frame.lazy().select(*by, thin_state(pl.col(STATE), points, offset, ks))
        else:  # the whole data's one state: thinned as a column of its points
            kept = frame.lazy().select(pl.col(STATE).explode())
            kept = kept.select(thin_state(pl.col(STATE), points, offset, ks, exploded=True))
            kept = kept.select(pl.col(STATE).implode())
        curve = finalize(pl.col(STATE)).alias(name)
        table = kept.select(*by, curve).explode(name).unnest(name).collect()
        self._thinned[key] = table
        return table
