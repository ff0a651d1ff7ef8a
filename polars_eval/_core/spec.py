"""The metric model (STYLE.md "Layout"): a metric is named mergeable states + a finalize.

A :class:`State` summarises the rows of one group in a way that two groups of disjoint rows
can be merged: a weighted sum, a minimum, a maximum, centred co-moments (Chan et al.'s
pairwise update), or the rows themselves (order statistics, which no smaller summary
reproduces exactly). A :class:`MetricSpec` names its states and finalizes them into one
value. The same spec runs three ways:

* as one aggregation expression (:meth:`MetricSpec.expr`: the states inline, so
  ``df.group_by(g).agg(pe.mse("y", "p"))`` is one plain Polars aggregation);
* in the planner, which computes the states of many metrics once, de-duplicated by key,
  in one ``group_by`` and finalizes each metric from them;
* over stacked states of partitions (SPEC §10), merged by each state's rule and finalized
  in one aggregation (:meth:`State.merged`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

from polars_eval._exprs import count_true

Kind = Literal["sum", "min", "max", "rows", "moments", "list"]
F64 = pl.Float64


@dataclass(frozen=True, eq=False)
class State:
    """One mergeable summary of the rows of a group.

    ``value`` is a row-level expression (for ``moments``: a struct of the row-level weight,
    ``x`` and ``y``). ``kind`` says how it aggregates and how two aggregates merge:

    ``sum``, ``min``, ``max``
        the aggregate and its merge are the same operation;
    ``rows``
        the values themselves (a list per group); merging concatenates;
    ``list``
        ``value`` is itself the aggregation (one list per group, e.g. the rows reduced to
        one entry per distinct score) and ``merge`` maps a column of such lists, stacked
        from several parts, to the list of their union (an aggregation);
    ``moments``
        the weighted count, the two means and the centred second moments of ``x`` and
        ``y`` (``w, mx, my, sxx, syy, sxy``), in one pass of streaming aggregations
        (Polars' centred ``cov``, about the unweighted means, shifted exactly to the
        weighted ones: see :func:`_moments`); merged with the pairwise formulas of Chan,
        Golub & LeVeque (1979), "Updating formulae and a pairwise algorithm for computing
        sample variances".
    """

    value: pl.Expr
    kind: Kind = "sum"
    merge: Callable[[pl.Expr], pl.Expr] | None = None
    # a ``list`` of points sorted by a key field, descending, holding running sums of
    # other fields (``("t", ("tp", "fp"))``: counts per distinct key, accumulated): then
    # many parts also merge as one long frame (windows: ``_core/windows.py``)
    cumulative: tuple[str, tuple[str, ...]] | None = None

    @property
    def key(self) -> tuple[str, bytes]:
        """Two states with equal keys are the same state (the planner computes it once)."""
        return self.kind, self.value.meta.serialize()

    def aggregate(self) -> pl.Expr:
        """The state of a group: one aggregation expression."""
        v = self.value
        if self.kind == "sum":
            return v.sum()
        if self.kind == "min":
            return v.min()
        if self.kind == "max":
            return v.max()
        if self.kind == "rows":
            return v.implode()
        if self.kind == "list":
            return v
        return _moments(v)

    def inline(self) -> pl.Expr:
        """What a finalize reads in the one-expression form (rows: the column itself)."""
        return self.value if self.kind == "rows" else self.aggregate()

    def merged(self, column: pl.Expr) -> pl.Expr:
        """The state of the union of groups, from their stacked states (an aggregation)."""
        if self.kind == "sum":
            return column.sum()
        if self.kind == "min":
            return column.min()
        if self.kind == "max":
            return column.max()
        if self.kind == "rows":
            return column.explode()
        if self.kind == "list":
            assert self.merge is not None, "a list state needs its merge rule"
            return self.merge(column)
        return _merge_moments(column)


def _moments(v: pl.Expr) -> pl.Expr:
    """The co-moments in one pass of streaming aggregations (no row is held).

    Centring on the weighted mean needs that mean first: a second pass over the group,
    which Polars' streaming engine cannot run (it would hold every row of the lake). Its
    own ``mean`` and ``cov`` stream, and each centres on the unweighted mean of its
    inputs (in blocks merged by Chan et al.'s formulas): so the weighted moments are
    taken about the unweighted means x̄, ȳ of the kept rows, shifted exactly to the
    weighted means. With d = x − x̄, e = y − ȳ:

    Σ w d = cov(w, x) · n, Σ w d e = cov(w x, y) · n − x̄ Σ w e (as Σ w x e = x̄ Σ w e +
    Σ w d e), then mx = x̄ + Σ w d / W and sxy = Σ w d e − Σ w d · Σ w e / W.

    Without weights (w = 1 on every kept row) cov(w, ·) is exactly 0 and this is
    Polars' centred ``cov``. With weights, no product grows with the offset of x: the
    rounding error is about 1e-16 · |x̄| / sd(x) relative (linear in the offset, where the
    raw sums Σ w x² − (Σ w x)² / W lose (|x̄| / sd(x))²).
    """
    w, x, y = (v.struct.field(f) for f in ("w", "x", "y"))
    kept = (w > 0.0) & x.is_not_null() & y.is_not_null()
    wk, xk, yk = (pl.when(kept).then(e) for e in (w, x, y))
    n = count_true(kept).cast(F64)
    total = wk.sum()
    mx_u, my_u = xk.mean(), yk.mean()

    def comoment(a: pl.Expr, b: pl.Expr) -> pl.Expr:  # Σ (a − ā)(b − b̄) over kept rows
        return pl.when(n > 0.0).then(pl.cov(a, b, ddof=0) * n).otherwise(0.0)

    ax, ay = comoment(wk, xk), comoment(wk, yk)  # Σ w d, Σ w e
    wx, wy = wk * xk, wk * yk
    sxx = comoment(wx, xk) - mx_u * ax - ax * ax / total
    syy = comoment(wy, yk) - my_u * ay - ay * ay / total
    sxy = comoment(wx, yk) - mx_u * ay - ax * ay / total
    some = total > 0.0
    return pl.struct(
        total.alias("w"),
        pl.when(some).then(mx_u + ax / total).alias("mx"),
        pl.when(some).then(my_u + ay / total).alias("my"),
        pl.when(some).then(sxx).otherwise(0.0).alias("sxx"),
        pl.when(some).then(syy).otherwise(0.0).alias("syy"),
        pl.when(some).then(sxy).otherwise(0.0).alias("sxy"),
    )


def _merge_moments(column: pl.Expr) -> pl.Expr:
    """Chan et al.'s merge of (w, mean, centred moments) over any number of parts."""
    w, mx, my = (column.struct.field(f) for f in ("w", "mx", "my"))
    part = w > 0.0  # an empty part has null means and adds nothing
    total = w.sum()
    gx = pl.when(total > 0.0).then((w * mx).filter(part).sum() / total)
    gy = pl.when(total > 0.0).then((w * my).filter(part).sum() / total)
    dx, dy = (mx - gx).filter(part), (my - gy).filter(part)
    wp = w.filter(part)
    return pl.struct(
        total.alias("w"),
        gx.alias("mx"),
        gy.alias("my"),
        (column.struct.field("sxx").sum() + (wp * dx * dx).sum()).alias("sxx"),
        (column.struct.field("syy").sum() + (wp * dy * dy).sum()).alias("syy"),
        (column.struct.field("sxy").sum() + (wp * dx * dy).sum()).alias("sxy"),
    )


def moments(w: pl.Expr, x: pl.Expr, y: pl.Expr) -> State:
    """The centred co-moments of ``x`` and ``y`` under weights ``w`` (rows of weight 0 or
    with a null are left out)."""
    return State(pl.struct(w.alias("w"), x.alias("x"), y.alias("y")), "moments")


Finalize = Callable[[Mapping[str, pl.Expr]], pl.Expr]


@dataclass(frozen=True, eq=False)
class MetricSpec:
    """A metric: named states and the finalize that turns them into the value.

    ``finalize`` receives one expression per state name: the inline aggregation, a column
    of the planner's state frame, or the merged state of stacked partitions; it must treat
    ``rows`` states as a column of the group's values and every other state as a scalar.

    ``alone`` (optional) is the metric as one expression when nothing shares its states
    (:meth:`expr`: the public function's expression), e.g. a sort-based metric of
    unweighted rows computed straight from the sorted rows without building the state
    the planner shares between metrics; it must give the finalize's value.

    ``one_group`` (optional, for a spec of one ``list`` state) is the same finalize over
    the points of one group's state as a column: the state exploded into a frame of its
    own, where the value is an aggregation of plain column expressions. Polars shares
    the common parts of many such finalizers in one ``select`` (never those of separate
    ``list.eval`` calls), and each is cheaper than its ``list.eval``; the planner uses it
    for a query without groups (``plan_specs(..., one_group=True)``).
    """

    states: Mapping[str, State]
    finalize: Finalize
    undefined: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)
    one_group: Finalize | None = None
    alone: pl.Expr | None = None

    def expr(self) -> pl.Expr:
        """The metric as one aggregation expression (the states inline).

        Polars does not share a repeated aggregation within one expression, so when the
        finalize reads its states more than once more (MCC reads each confusion count three
        times; a weighted mean's one repeat of its total is cheaper than this) the states
        are aggregated once, into one struct, and the finalize runs on it inside
        ``list.eval`` (a one-element list from ``concat_list``, which the streaming engine
        runs on the aggregated struct; ``implode`` would make it hold the rows).
        With ``alone``, that expression.
        """
        if self.alone is not None:
            return self.alone
        inline = {name: s.inline() for name, s in self.states.items()}
        if self.has_rows or len(inline) == 1:
            return self.finalize(inline)
        roots = self.finalize({name: pl.col(name) for name in inline}).meta.root_names()
        if len(roots) - len(set(roots)) < 2:  # one repeat (a mean's total) costs less
            return self.finalize(inline)
        packed = pl.struct(*[e.alias(name) for name, e in inline.items()])
        e = pl.element()
        body = self.finalize({name: e.struct.field(name) for name in inline})
        return pl.concat_list([packed]).list.eval(body).list.first()

    def null_when(self, condition: State) -> MetricSpec:
        """The same metric, null where the state ``condition`` (a ``max`` of booleans)
        is true."""
        states = {**self.states, "__null_when": condition}

        def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
            return pl.when(s["__null_when"]).then(None).otherwise(self.finalize(s))

        return MetricSpec(states, finalize, self.undefined, self.extra)

    @property
    def has_rows(self) -> bool:
        """True when a state is the rows themselves (nothing to share or bound)."""
        return any(s.kind == "rows" for s in self.states.values())


def weighted_mean(
    term: pl.Expr, w: pl.Expr, then: Callable[[pl.Expr], pl.Expr] | None = None
) -> MetricSpec:
    """The weighted mean Σ w·term / Σ w (null when Σ w = 0) as two summed states,
    optionally transformed (``then=pl.Expr.sqrt`` for the root errors). Rows to leave out
    carry weight 0 (and a null term where the term is undefined there)."""

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        total = s["w"]
        mean = pl.when(total != 0.0).then(s["sum"] / total)
        return mean if then is None else then(mean)

    return MetricSpec({"w": State(w), "sum": State(term * w)}, finalize)


def nan_or(nan: pl.Expr, value: pl.Expr) -> pl.Expr:
    """NaN where the state ``nan`` (a ``max`` of is-NaN flags) is true, else ``value``
    (SPEC §2: a NaN input gives NaN, never a number)."""
    return pl.when(nan).then(pl.lit(float("nan"), dtype=F64)).otherwise(value)
