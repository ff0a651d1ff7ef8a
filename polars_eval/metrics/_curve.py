"""The sorted state behind every threshold-free binary metric, curve and table.

State: the rows sorted by score, descending (``p = weight * label``, ``n = weight *
(1 - label)``; null rows and rows of zero weight dropped), reduced to one row per distinct
score with the cumulative weighted counts: ``List[Struct{t, tp, fp}]`` per group. Every
sort-based metric is a *finalize* step over this state, run inside ``list.eval`` so that
the sort and the accumulation are materialised once. ``df.eval.binary`` computes the
state once and finalizes every metric from it. Two states of disjoint partitions merge
by summing counts per distinct score (SPEC §10).

Ties (SPEC §2): a threshold is a distinct score. Within a tie block only the cumulative
counts at the block's end are used, so the result never depends on the order of tied rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from polars_eval._core.spec import MetricSpec, State
from polars_eval._core.table import Batch
from polars_eval._exprs import (
    F64,
    NAN,
    binary_label,
    drop_null_rows,
    to_expr,
    to_float,
    weight_expr,
)
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics import _sorted_keys as kernels


def score_bin(score: pl.Expr, bins: int, *, probability: bool = True) -> pl.Expr:
    """The bin (0 … ``bins``−1) of a score, chosen without a pass for the min and max.

    Probabilities (``probability=True``) fall in ``bins`` equal bins of [0, 1]: bin
    ``floor(p·bins)``, a score of 1 in the last bin (scores outside [0, 1] in the end
    bins). Any other score is first mapped into (0, 1) by the logistic function
    1/(1+e^−s), a monotone map, so the bins are equal in probability for a score on the
    logit scale and never depend on the data. A binned AUC treats the scores of one bin
    as tied, so it differs from the exact AUC by at most half the weighted share of
    (positive, negative) pairs that share a bin: |AUC_binned − AUC| ≤ Σ_b P_b·N_b / (2·P·N).
    NaN has no bin (null).
    """
    unit = score if probability else 1.0 / (1.0 + (-score).exp())
    binned = (unit * bins).floor().clip(0, bins - 1)
    return pl.when(unit.is_nan()).then(None).otherwise(binned).cast(pl.Int32)


def binned_score(score: pl.Expr, bins: int | None) -> pl.Expr:
    """``score`` itself, or with ``bins`` the centre of its probability bin, (b + ½)/bins."""
    if bins is None:
        return score
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
        raise InvalidParameterError(f"bins must be an integer >= 2 or None; got {bins!r}")
    centre = (score_bin(score, bins).cast(pl.Float64) + 0.5) / bins
    return pl.when(score.is_nan()).then(score).otherwise(centre)


def _sorted_rows(
    label: IntoExpr, score: IntoExpr, weight: IntoExpr | None, pos_label: Any, bins: int | None
) -> pl.Expr:
    """The rows sorted by score descending, as ``{s, sw}`` structs (not yet a list).

    ``sw`` is the signed weight, ``+w`` for a positive and ``-w`` for a negative: zero
    weights are dropped, so its sign is the label, and sorting two columns instead of
    three saves a gather.
    """
    y, s, w = drop_null_rows(
        binary_label(label, pos_label),
        binned_score(to_float(score), bins),
        weight=weight_expr(weight),
        drop_zero_weight=True,
    )
    return pl.struct(s.alias("s"), (w * (2.0 * y - 1.0)).alias("sw")).sort_by(s, descending=True)


def threshold_state(
    label: IntoExpr,
    score: IntoExpr,
    weight: IntoExpr | None,
    pos_label: Any = None,
    bins: int | None = None,
) -> pl.Expr:
    """The state every sort-based metric finalizes: one ``{t, tp, fp}`` per distinct score.

    ``t`` runs over the distinct scores in descending order; ``tp``/``fp`` are the weighted
    counts with ``score >= t``. Built once per group (cumulative counts at the end of each
    tie block), so the finalize steps read small, materialised columns and never sort or
    accumulate again.

    Without weights (:func:`_counted_state`) each row is one integer (its score's bits and
    its label), sorted by numpy and counted per tie block (:mod:`._sorted_keys`). With
    weights the rows are sorted by score carrying their signed weight
    (:func:`_sorted_rows`): the cumulative sums run in ``struct.eval`` over a struct computed once (Polars shares
    no repeated subexpression in an eager query, and ``list.eval`` copies its input for
    anything but an elementwise expression); the one filter, to the last row of each tie
    block, runs in ``list.eval`` (``list.filter`` names a root column ``""``, which the
    bootstrap reads as a missing column).
    """
    if all(isinstance(c, str) for c in (label, score)) and not isinstance(weight, pl.Expr):
        try:
            return _named_threshold_state(label, score, weight, pos_label, type(pos_label), bins)
        except TypeError:  # an unhashable pos_label
            pass
    return _threshold_state(label, score, weight, pos_label, bins)


@functools.lru_cache(maxsize=256)
def _named_threshold_state(
    label: str, score: str, weight: str | None, pos_label: Any, kind: type, bins: int | None
) -> pl.Expr:
    """The state over named columns, one expression object per call arguments: so metrics
    share it even where Polars cannot serialize its Python function (the planner's key
    is then the object itself, :func:`polars_eval._core.spec.plan_key`). ``kind``: the
    type of ``pos_label`` (True, 1 and 1.0 are equal keys, not equal arguments)."""
    return _threshold_state(label, score, weight, pos_label, bins)


def _threshold_state(
    label: IntoExpr, score: IntoExpr, weight: IntoExpr | None, pos_label: Any, bins: int | None
) -> pl.Expr:
    if weight is None:
        return _counted_state(label, score, pos_label, bins)
    s, sw = pl.field("s"), pl.field("sw")
    return _tie_block_ends(
        _sorted_rows(label, score, weight, pos_label, bins).struct.eval(
            t=s,
            tp=sw.clip(lower_bound=0.0).cum_sum(),
            fp=(-sw).clip(lower_bound=0.0).cum_sum(),
            end=(s != s.shift(-1)).fill_null(True),
        )
    )


def _tie_block_ends(rows: pl.Expr, **fields: pl.Expr) -> pl.Expr:
    """The state from ``rows`` (a struct with ``end``, true at the last row of each tie
    block): those rows, as ``{t, tp, fp}`` (or ``fields``, elementwise over the row's
    fields) in one list per group."""
    e = pl.element()
    if not fields:
        t = e.struct.field("t")  # -0.0 and 0.0 tie: the threshold is 0.0 whichever row ends
        fields = {
            "t": pl.when(t == 0.0).then(0.0).otherwise(t),
            "tp": e.struct.field("tp"),
            "fp": e.struct.field("fp"),
        }
    ends = e.filter(e.struct.field("end"))
    return rows.implode().list.eval(ends).list.eval(pl.struct(**fields))


def _counted_state(
    label: IntoExpr, score: IntoExpr, pos_label: Any = None, bins: int | None = None
) -> pl.Expr:
    """:func:`threshold_state` without weights: one numpy sort of a key per row and the
    counts at the end of each tie block (:func:`~polars_eval.metrics._sorted_keys.state_points`;
    1e7 distinct scores: ~0.45 s of CPU against ~1.35 s over the runs of a Polars sort
    of a key per row)."""
    rows = unweighted_rows(label, score, pos_label, bins)
    return rows.map_batches(
        kernels.state_points, return_dtype=kernels.STATE_DTYPE, is_elementwise=True
    )


def unweighted_rows(label: IntoExpr, score: IntoExpr, pos_label: Any, bins: int | None) -> pl.Expr:
    """The rows as ``{y, s}`` for the kernels of :mod:`~polars_eval.metrics._sorted_keys`:
    ``y`` whether the row is positive (a boolean: a per-group gather of one bit, not of a
    float), ``s`` the score, each a list of the group's rows, so that one call of the
    kernel gets every group (:func:`~polars_eval.metrics._sorted_keys.per_group`; two
    lists in a struct gather as fast as the score alone, a list of structs ~1.5x). Rows
    with a null label or score are left out by the kernels (a filter here, evaluated per
    group, cost a third of a per-group sort of the scores)."""
    y = to_expr(label) == (1 if pos_label is None else pos_label)  # no cast to a float
    s = binned_score(to_float(score), bins)
    return pl.struct(y.implode().alias("y"), s.implode().alias("s"))


def sorted_keys_metric(
    label: IntoExpr,
    score: IntoExpr,
    weight: IntoExpr | None,
    pos_label: Any,
    bins: int | None,
    kernel: Callable[[kernels.Blocks], float | None] | None,
) -> pl.Expr | None:
    """A sort-based metric of the unweighted rows of each group in one ``map_batches``
    (``kernel`` over the tie blocks of the sorted keys; ``None``: the ROC curve's points),
    without the threshold state (``MetricSpec.alone``); None with weights."""
    if weight is not None:
        return None
    rows = unweighted_rows(label, score, pos_label, bins)
    if kernel is None:
        return rows.map_batches(
            kernels.roc_points, return_dtype=kernels.ROC_DTYPE, is_elementwise=True
        )
    return rows.map_batches(kernels.metric(kernel), return_dtype=F64, is_elementwise=True)


def sorted_keys_batch(
    label: IntoExpr,
    score: IntoExpr,
    weight: IntoExpr | None,
    pos_label: Any,
    bins: int | None,
    part: Callable[[kernels.Blocks], kernels.Accumulator],
) -> Batch | None:
    """A sort-based metric of unweighted rows as its share of one numpy pass over the
    sorted keys with the other metrics of the same rows (``part``: its accumulator,
    :func:`~polars_eval.metrics._sorted_keys.together`): a task table computes them all
    from one sort, without the threshold state and a finalizer each (a :class:`Batch`);
    None with weights."""
    if weight is not None:
        return None
    return Batch(unweighted_rows(label, score, pos_label, bins), part, _together)


def _together(parts: Mapping[str, Any]) -> tuple[Callable[[pl.Series], pl.Series], pl.Struct]:
    return kernels.metrics(parts), pl.Struct(dict.fromkeys(parts, F64))


def _accumulate(s: pl.Expr, p: pl.Expr, n: pl.Expr) -> pl.Expr:
    """``{t, tp, fp}`` at the end of each tie block of rows sorted by score descending:
    the cumulative positive and negative weights ``p``/``n`` at each distinct score ``s``."""
    block_end = (s != s.shift(-1)).fill_null(True)
    return pl.struct(
        t=s.filter(block_end),
        tp=p.cum_sum().filter(block_end),
        fp=n.cum_sum().filter(block_end),
    )


def merge_threshold_states(column: pl.Expr) -> pl.Expr:
    """The threshold state of the union of parts, from their states (an aggregation).

    Each part's cumulative counts go back to counts per distinct score (differences of
    consecutive points), the parts' points are stacked and sorted by score, and the
    counts accumulated again at the end of each tie block (equal scores of two parts
    form one block).
    """
    e = pl.element()
    tp, fp = e.struct.field("tp"), e.struct.field("fp")
    points = (
        column.list.eval(
            pl.struct(
                e.struct.field("t").alias("s"),
                (tp - tp.shift(1).fill_null(0.0)).alias("p"),
                (fp - fp.shift(1).fill_null(0.0)).alias("n"),
            )
        )
        .explode()
        .drop_nulls()
    )  # an empty part explodes to one null
    rows = points.sort_by(points.struct.field("s"), descending=True)
    s, p, n = (rows.struct.field(f) for f in ("s", "p", "n"))
    return _accumulate(s, p, n).implode()


def thresholds(
    label: IntoExpr,
    score: IntoExpr,
    weight: IntoExpr | None,
    pos_label: Any = None,
    bins: int | None = None,
) -> State:
    """:func:`threshold_state` as a mergeable state of the metric model."""
    return State(
        threshold_state(label, score, weight, pos_label, bins),
        "list",
        merge_threshold_states,
        cumulative=("t", ("tp", "fp")),
    )


def sorted_spec(
    state: State,
    body: Callable[[Curve], pl.Expr],
    form: str = "scalar",
    alone: pl.Expr | None = None,
    batch: Batch | None = None,
) -> MetricSpec:
    """A sort-based metric: ``body`` over the :class:`Curve` of one threshold state, read as
    a scalar, a struct (one row) or a list of points (a curve or table). ``alone``: the
    same metric as one expression that builds no state (``MetricSpec.alone``); ``batch``:
    its share of the numpy pass that a task table runs for all its sort-based metrics
    (:func:`sorted_keys_batch`)."""
    run = {"scalar": finalize, "struct": finalize_struct, "list": finalize_list}[form]
    one = {"scalar": finalize_one, "struct": finalize_struct_one}.get(form)
    return MetricSpec(
        {"c": state},
        lambda s: run(s["c"], body),
        extra={} if batch is None else {"batch": batch},
        one_group=None if one is None else lambda s: one(s["c"], body),
        alone=alone,
    )


class Curve:
    """Expressions over one threshold state, evaluated inside ``list.eval``.

    ``tp``/``fp`` are the weighted counts predicted positive at each distinct threshold
    (score >= threshold), in descending threshold order; ``P``/``N`` the class totals
    (the counts at the lowest threshold). ``points`` (default: the list's elements) is
    the state's points as a column of structs (:func:`finalize_one`).
    """

    def __init__(self, points: pl.Expr | None = None) -> None:
        e = pl.element() if points is None else points
        self.threshold = e.struct.field("t")
        self.tp = e.struct.field("tp")
        self.fp = e.struct.field("fp")
        self.P = self.tp.last()  # noqa: N815 - the textbook name
        self.N = self.fp.last()  # noqa: N815 - the textbook name

    @property
    def has_nan(self) -> pl.Expr:
        return self.threshold.is_nan().any()

    @property
    def both_classes(self) -> pl.Expr:
        return (self.P > 0.0) & (self.N > 0.0)

    def nan_struct(self, **fields: pl.Expr) -> pl.Expr:
        """The points of a curve or table; every float field is NaN if any score is NaN."""
        return pl.struct(
            **{
                name: pl.when(self.has_nan).then(pl.lit(NAN, dtype=F64)).otherwise(value)
                if name != "bin"
                else value
                for name, value in fields.items()
            }
        )

    def guard(self, value: pl.Expr, defined: pl.Expr | None = None) -> pl.Expr:
        """NaN if any score is NaN; null where ``defined`` (default: both classes present) fails."""
        defined = self.both_classes if defined is None else defined
        return (
            pl.when(self.has_nan)
            .then(pl.lit(NAN, dtype=F64))
            .when(defined)
            .then(value)
            .otherwise(pl.lit(None, dtype=F64))
        )


def finalize(state: pl.Expr, body: Callable[[Curve], pl.Expr]) -> pl.Expr:
    """A scalar from the state: ``body`` builds one value from a :class:`Curve`."""
    return state.list.eval(body(Curve())).list.first().cast(F64)


def finalize_struct(state: pl.Expr, body: Callable[[Curve], pl.Expr]) -> pl.Expr:
    """A struct value from the state (``body`` returns a one-row struct expression)."""
    return state.list.eval(body(Curve())).list.first()


def finalize_list(state: pl.Expr, body: Callable[[Curve], pl.Expr]) -> pl.Expr:
    """A curve or table from the state: ``body`` returns a struct expression, one row a point."""
    return state.list.eval(body(Curve()))


def finalize_one(points: pl.Expr, body: Callable[[Curve], pl.Expr]) -> pl.Expr:
    """:func:`finalize` over the points of one state as a column (``MetricSpec.one_group``:
    the state exploded into a frame of its own).

    ``body`` runs as plain column expressions: many metrics finalized in one ``select``
    share their common parts (the previous point, the class totals), which separate
    ``list.eval`` calls never do, and each is several times cheaper than its ``list.eval``
    (1e7 points: the eight sort-based summary metrics 0.19 s of CPU against 0.99 s).
    """
    return body(Curve(points)).cast(F64)


def finalize_struct_one(points: pl.Expr, body: Callable[[Curve], pl.Expr]) -> pl.Expr:
    """:func:`finalize_struct` over the points of one state (see :func:`finalize_one`)."""
    return body(Curve(points))


def prev(expr: pl.Expr, first: float = 0.0) -> pl.Expr:
    """The previous point's value, ``first`` before the first point."""
    return expr.shift(1, fill_value=first)
