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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import polars as pl

Kind = Literal["sum", "min", "max", "rows", "moments", "list"]
F64 = pl.Float64


class _Itself:
    """A key equal only to the very object it holds (held, so its ``id`` is never reused)."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Itself) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def plan_key(expr: pl.Expr) -> bytes | _Itself:
    """Equal keys: the same computation (the planner computes it once).

    The expression's serialized plan. Polars serializes an expression over a Python
    function with ``cloudpickle`` (its ``cloudpickle`` extra, a dependency of ours); should
    that fail (cloudpickle missing, or a user's function it cannot pickle) the key is the
    expression object itself: equal to no other, so never shared, never confused.
    """
    try:
        return expr.meta.serialize()
    except Exception:  # noqa: BLE001 - Polars raises ComputeError, pickling anything
        return _Itself(expr)


@dataclass(frozen=True, eq=False)
class State:
    """One mergeable summary of the rows of a group.

    ``value`` is a row-level expression (for ``moments``: a struct of the row-level weight,
    ``x`` and ``y``, built by :func:`moments`, which keeps them apart in ``args``).
    ``kind`` says how it aggregates and how two aggregates merge:

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
        weighted ones: see :func:`_moment_parts`); merged with the pairwise formulas of
        Chan, Golub & LeVeque (1979), "Updating formulae and a pairwise algorithm for
        computing sample variances".

    A state is aggregated from its :meth:`parts` (plain aggregations of row-level
    expressions, each written once), then put together by :meth:`assemble` (arithmetic
    on the aggregated values): a ``moments`` state is nine aggregations and a few scalar
    formulas, every other kind one aggregation.
    """

    value: pl.Expr
    kind: Kind = "sum"
    merge: Callable[[pl.Expr], pl.Expr] | None = None
    # moments: the row-level (weight or None, x, y) that ``value`` packs
    args: tuple[pl.Expr | None, ...] = ()
    # a ``list`` of points sorted by a key field, descending, holding running sums of
    # other fields (``("t", ("tp", "fp"))``: counts per distinct key, accumulated): then
    # many parts also merge as one long frame (windows: ``_core/windows.py``)
    cumulative: tuple[str, tuple[str, ...]] | None = None

    @property
    def key(self) -> tuple[str, bytes | _Itself]:
        """Two states with equal keys are the same state (the planner computes it once)."""
        return self.kind, plan_key(self.value)

    def parts(self) -> dict[str, pl.Expr]:
        """The aggregations the state is assembled from, by name (one, but for moments)."""
        v = self.value
        if self.kind == "moments":
            return _moment_parts(*self.args)
        if self.kind == "sum":
            return {"": v.sum()}
        if self.kind == "min":
            return {"": v.min()}
        if self.kind == "max":
            return {"": v.max()}
        if self.kind == "rows":
            return {"": v.implode()}
        return {"": v}

    def assemble(self, parts: Mapping[str, pl.Expr]) -> pl.Expr:
        """The state from its aggregated :meth:`parts` (each read as often as needed: pass
        references, e.g. the fields of a struct, not the aggregations themselves)."""
        if self.kind == "moments":
            return _assemble_moments(parts, weighted=self.args[0] is not None)
        return parts[""]

    def aggregate(self) -> pl.Expr:
        """The state of a group: one aggregation expression (each part written once)."""
        parts = self.parts()
        if len(parts) == 1:
            return parts[""]
        return bind(parts, self.assemble)

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


Stage = Callable[[Mapping[str, pl.Expr]], "pl.Expr | Mapping[str, pl.Expr]"]


def bind(
    values: Mapping[str, pl.Expr],
    *stages: Stage,
    rows: bool = False,
    sort_by: str | Sequence[str] | None = None,
) -> pl.Expr:
    """``stages`` run over ``values``, each value computed once however often they read it.

    Polars evaluates every copy of a repeated subexpression inside one aggregation (no
    common-subexpression elimination there): a finalize that reads an aggregated state
    three times aggregates it three times, and a state read inside another's formula
    multiplies the copies. Here the values are packed into one struct, each computed
    once, and every stage reads the fields of that struct (column references, free)
    inside ``list.eval``: a stage returns a mapping of named expressions (packed again
    for the next stage) or, last, the result. ``rows=False``: the values are
    aggregations (one value per group; the stages are arithmetic on them);
    ``rows=True``: the values are row-level columns of equal length (the group's rows
    are imploded into one list, sorted by the field(s) ``sort_by`` if given, in one sort
    for every field; a stage may cumulate or filter them or add a scalar field, and the
    last aggregates them to one value, or implodes them into one list). The result is
    one value per group.

    The struct is a one-element list (``concat_list``) for aggregations: Polars'
    streaming engine runs ``list.eval`` on the aggregated struct (``implode`` would make
    it hold the rows; a top-level ``struct.with_fields`` falls back to the in-memory
    engine in a streaming ``group_by``).
    """
    packed = pl.struct([v.alias(k) for k, v in values.items()])
    out = packed.implode() if rows else pl.concat_list([packed])
    e = pl.element()
    if sort_by is not None:
        keys = [sort_by] if isinstance(sort_by, str) else list(sort_by)
        out = out.list.eval(e.sort_by([e.struct.field(k) for k in keys]))
    names = list(values)
    for i, stage in enumerate(stages):
        body = stage({k: e.struct.field(k) for k in names})
        if isinstance(body, pl.Expr):
            assert i == len(stages) - 1, "only the last stage returns one expression"
            return out.list.eval(body).list.first()
        names = list(body)
        out = out.list.eval(pl.struct([v.alias(k) for k, v in body.items()]))
    raise AssertionError("the last stage returns one expression")


def _moment_parts(w: pl.Expr | None, x: pl.Expr, y: pl.Expr) -> dict[str, pl.Expr]:
    """The co-moments' aggregations in one pass of streaming aggregations (no row is held).

    Centring on the weighted mean needs that mean first: a second pass over the group,
    which Polars' streaming engine cannot run (it would hold every row of the lake). Its
    own ``mean`` and ``cov`` stream, and each centres on the unweighted mean of its
    inputs (in blocks merged by Chan et al.'s formulas): so the weighted moments are
    taken about the unweighted means x̄, ȳ of the kept rows (those where ``x`` and ``y``
    are not null), shifted exactly to the weighted means (:func:`_assemble_moments`).
    With d = x − x̄, e = y − ȳ, n kept rows:

    Σ w d = cov(w, x) · n, Σ w d e = cov(w x, y) · n − x̄ Σ w e (as Σ w x e = x̄ Σ w e +
    Σ w d e), then mx = x̄ + Σ w d / W and sxy = Σ w d e − Σ w d · Σ w e / W.

    Without weights (``w`` None: 1 on every kept row) Σ w d = 0 and this is Polars'
    centred ``cov``, six aggregations. With weights, no product grows with the offset of
    x: the rounding error is about 1e-16 · |x̄| / sd(x) relative (linear in the offset,
    where the raw sums Σ w x² − (Σ w x)² / W lose (|x̄| / sd(x))²).

    ``x`` and ``y`` are null on the same rows (those left out) and ``w`` is not null on
    the others: every ``cov`` (which leaves out a row with a null on either side), mean
    and count then runs over the same kept rows.
    """
    parts = {"n": x.count(), "ux": x.mean(), "uy": y.mean()}
    if w is None:
        return parts | {
            "cxx": pl.cov(x, x, ddof=0),
            "cyy": pl.cov(y, y, ddof=0),
            "cxy": pl.cov(x, y, ddof=0),
        }
    wx, wy = w * x, w * y
    return parts | {
        "w": pl.when(x.is_not_null()).then(w).sum(),
        "ax": pl.cov(w, x, ddof=0),
        "ay": pl.cov(w, y, ddof=0),
        "cxx": pl.cov(wx, x, ddof=0),
        "cyy": pl.cov(wy, y, ddof=0),
        "cxy": pl.cov(wx, y, ddof=0),
    }


def _assemble_moments(p: Mapping[str, pl.Expr], *, weighted: bool) -> pl.Expr:
    """The moments struct ``{w, mx, my, sxx, syy, sxy}`` from :func:`_moment_parts`."""
    n = p["n"].cast(F64)

    def sums(c: pl.Expr) -> pl.Expr:  # Σ (a − ā)(b − b̄) over kept rows from cov(a, b)
        return (c * n).fill_null(0.0)

    if weighted:
        total = p["w"]
        ax, ay = sums(p["ax"]), sums(p["ay"])
        mx, my = p["ux"] + ax / total, p["uy"] + ay / total
        sxx = sums(p["cxx"]) - p["ux"] * ax - ax * ax / total
        syy = sums(p["cyy"]) - p["uy"] * ay - ay * ay / total
        sxy = sums(p["cxy"]) - p["ux"] * ay - ax * ay / total
    else:
        total = n
        mx, my = p["ux"], p["uy"]
        sxx, syy, sxy = sums(p["cxx"]), sums(p["cyy"]), sums(p["cxy"])
    some = total > 0.0
    return pl.struct(
        total.alias("w"),
        pl.when(some).then(mx).alias("mx"),
        pl.when(some).then(my).alias("my"),
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


def moments(w: pl.Expr | None, x: pl.Expr, y: pl.Expr) -> State:
    """The centred co-moments of ``x`` and ``y`` under weights ``w`` (None: every kept row
    weighs 1). The rows left out have a null ``x`` and a null ``y`` (both: they are null
    on the same rows), ``w`` is not null on the others; a row of weight 0 adds nothing."""
    fields = [x.alias("x"), y.alias("y")]
    value = pl.struct(fields if w is None else [w.alias("w"), *fields])
    return State(value, "moments", args=(w, x, y))


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

        Polars does not share a repeated aggregation within one expression, so when a
        state is assembled from several aggregations (moments) or the finalize reads a
        state more than once (MCC reads each confusion count three times, a weighted
        mean its total twice), every distinct part of every state is aggregated once,
        into one struct, and the states are assembled and finalized from its fields
        (:func:`bind`): each aggregation is written, and computed, once. With ``alone``,
        that expression.
        """
        if self.alone is not None:
            return self.alone
        inline = {name: s.inline() for name, s in self.states.items()}
        if self.has_rows:
            return self.finalize(inline)
        parts = {name: s.parts() for name, s in self.states.items()}
        if all(len(p) == 1 for p in parts.values()):
            roots = self.finalize({name: pl.col(name) for name in inline}).meta.root_names()
            if len(roots) == len(set(roots)):  # each state read once: nothing to share
                return self.finalize(inline)
        fields: dict[str, pl.Expr] = {}  # one field per distinct aggregation
        field_of: dict[tuple[str, str], str] = {}
        by_key: dict[bytes | _Itself, str] = {}
        for name, p in parts.items():
            for k, agg in p.items():
                key = plan_key(agg)
                if key not in by_key:
                    by_key[key] = f"{name}.{k}"
                    fields[by_key[key]] = agg
                field_of[name, k] = by_key[key]

        def states(f: Mapping[str, pl.Expr]) -> dict[str, pl.Expr]:
            return {
                name: s.assemble({k: f[field_of[name, k]] for k in parts[name]})
                for name, s in self.states.items()
            }

        return bind(fields, states, self.finalize)

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
    term: pl.Expr,
    w: pl.Expr,
    then: Callable[[pl.Expr], pl.Expr] | None = None,
    *,
    unweighted: bool = False,
) -> MetricSpec:
    """The weighted mean Σ w·term / Σ w (null when Σ w = 0) as two summed states,
    optionally transformed (``then=pl.Expr.sqrt`` for the root errors). Rows to leave out
    carry weight 0 (and a null term where the term is undefined there). Untransformed, it
    is a mean over rows: ``extra["row_mean"]`` (see :func:`is_row_mean`).

    ``unweighted``: no weight was given, ``w`` is the 0/1 null mask of the inputs and
    ``term`` is null wherever an input is (arithmetic of them): the bare expression is
    then Polars' own ``term.mean()``, one aggregation (the planner still shares the two
    sums between metrics)."""

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        total = s["w"]
        mean = pl.when(total != 0.0).then(s["sum"] / total)
        return mean if then is None else then(mean)

    alone = None
    if unweighted:
        mean = term.mean()
        alone = mean if then is None else then(mean)
    row_mean = {"row_mean": True} if then is None else {}
    # unweighted, term · w is term itself where it is not null (w is 1 there): its sum
    # skips the nulls without the product's pass
    total = State(term if unweighted else term * w)
    return MetricSpec({"w": State(w), "sum": total}, finalize, extra=row_mean, alone=alone)


def is_row_mean(spec: MetricSpec) -> bool:
    """Whether the metric is the mean of a per-row value (declared by its spec builder with
    ``extra={"row_mean": True}``: accuracy, log loss, MSE ..., not AUC or RMSE) whose states
    are sums, minima or maxima: then its finalize over one row's state values (the states'
    row-level expressions) is that row's value, and the metric over unit weights is the
    mean of those values. ``df.eval.compare`` tests such metrics with rows as units."""
    return bool(spec.extra.get("row_mean")) and all(
        s.kind in ("sum", "min", "max") for s in spec.states.values()
    )


def nan_or(nan: pl.Expr, value: pl.Expr) -> pl.Expr:
    """NaN where the state ``nan`` (a ``max`` of is-NaN flags) is true, else ``value``
    (SPEC §2: a NaN input gives NaN, never a number)."""
    return pl.when(nan).then(pl.lit(float("nan"), dtype=F64)).otherwise(value)
