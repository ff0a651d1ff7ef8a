"""The table layer: one table object and one runner for every task method (issue 21).

A :class:`Table` is what one evaluation computes and how it is presented, in a few
parts:

- ``query``: the metrics, either as specs not yet laid out (:class:`Specs`: the runner
  plans them for the query it builds, each distinct state once) or as aggregations
  already written (:class:`Query`: the ranking engine, the forecast's states per
  series, an interval's struct);
- ``checks``: the validation (:class:`Checks`: the input roles, the column arguments,
  whether the row checks run, the checks beyond the roles);
- ``output``: how the result is shaped and its undefined values reported
  (:class:`Output`);
- ``by``, ``grouping`` (windows, grouping sets, ``min_rows``: SPEC §13,
  :class:`~polars_eval._core.windows.Grouping`) and ``stage``, an optional second stage
  over unit keys (:class:`Stage`: ranking's mean over queries; forecast's per series,
  then pooled);
- ``engine``: the engine that collects a DataFrame's query.

:func:`run` is the one runner: it lays the specs out, builds the validated query
(:func:`build`), runs the second stage and the finish step (:func:`finish`: the
``min_rows`` nulls, undefined values, the "no rows" errors, the checks' counts), and
collects it on a DataFrame or returns it on a LazyFrame, where every error of SPEC §2
surfaces at collect time (:func:`deferred`). The same object gives a table's states for
a partition (:meth:`Table.partition`), merges stacked states (:meth:`Table.merge`) and
finalizes them (:meth:`Table.finalize`), per window and grouping too: ``pe.Evaluation``
keeps them (SPEC §10).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from polars_eval._core import windows
from polars_eval._core.planner import (
    no_rows_reason,
    normalize_by,
    plan_specs,
    report_undefined,
    row_counts,
)
from polars_eval._core.registry import REGISTRY, MetricInfo, Role
from polars_eval._core.spec import MetricSpec, State, plan_key
from polars_eval._validate import (
    check_aggs,
    column_problems,
    raise_for_checks,
    resolve_checks,
    row_checks,
)
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
)

Frame = pl.DataFrame | pl.LazyFrame
Columns = Callable[[Mapping[str, pl.Expr]], list[pl.Expr]]
"""The columns of a table (aliased) from the value of each of its specs, by name."""

ROWS = windows.ROWS  # the used rows of a slice (min_rows=)
SPLIT = windows.SPLIT  # units split across every-steps


@dataclass(frozen=True)
class Checks:
    """The validation of a table: the roles of its inputs (``inputs``: argument ->
    role), the arguments (``args``: argument -> column or expression), whether the row
    checks run (``validate``), and the data checks beyond the roles (``extra``: Check
    objects, or functions of the frame's schema giving Check objects, for a check whose
    form depends on the dtypes; such a function may raise DataValidationError for a
    problem the schema shows, with or without ``validate``)."""

    inputs: Mapping[str, Role]
    args: Mapping[str, Any]
    validate: bool = True
    extra: Sequence[Any] = ()

    def resolve(self, schema: Mapping[str, pl.DataType], by: Sequence[str] = ()) -> list[Any]:
        """The checks of rows of ``schema``: a column problem (a missing column, a wrong
        dtype, a ``by`` column not found) raised as a DataValidationError; the row checks
        of the roles (with ``validate``) and the extra checks. A function of the schema
        among the extra checks runs even without ``validate`` (what it finds in the
        schema is an error, as a missing column)."""
        problems = column_problems(schema, self.args, self.inputs)
        problems += [f'column "{b}" (argument by=) not found' for b in by if b not in schema]
        if problems:
            raise DataValidationError(problems[0])
        extra = resolve_checks(self.extra, schema)
        return (row_checks(schema, self.args, self.inputs) + extra) if self.validate else []

    def no_rows(self, source: pl.LazyFrame) -> str | None:
        """Why no row of ``source`` can be evaluated, or None (one small query)."""
        return no_rows_reason(source, self.args, self.inputs)


@dataclass(frozen=True)
class Output:
    """How a table's result is presented: the metric columns that may be undefined (and
    why: their null values are reported), whether an undefined value without ``by``
    raises (``strict``: single metrics) or warns (task tables), the ``List[Struct]``
    columns exploded into long tables (``curves``) and the struct columns unnested
    (``structs``), and the curve, table and struct columns that, without ``by``, raise
    ``UndefinedMetricError`` when no row can be evaluated (``no_rows_error``, as an
    undefined scalar: BAD_INPUTS row 5)."""

    undefined: Mapping[str, str] = field(default_factory=dict)
    strict: bool = True
    curves: Sequence[str] = ()
    structs: Sequence[str] = ()
    no_rows_error: Sequence[str] = ()


@dataclass
class Query:
    """A table's aggregations laid out for one query.

    ``aggs`` run once per group (with ``grouping``: per finest group and every-step);
    ``finals`` are the table's columns over them (row-wise: the validation counts ride
    along); ``points`` (without groups) the finalizers over the points of a ``list``
    state, by its column, each run in a frame of that column exploded; ``rows`` the
    row-level columns added before the aggregation once the inputs are checked (parts
    that many aggregations read, in stages, each reading the earlier ones). With a
    grouping, ``merges`` merge the states upward and ``last`` is the merge the
    ``finals`` read (``cumulative``: the ``list`` states of running sums, merged per
    window as one long frame). ``states`` names the state of each aggregated column
    (for partitions: :meth:`Table.partition`). ``beside`` are aggregations that run
    Python (numpy kernels, :class:`Batch`): Polars evaluates the expressions of a query
    holding a Python function one after another, so on a DataFrame they are collected
    in a thread beside the other aggregations (:func:`_beside`); on a LazyFrame they
    are among them."""

    aggs: list[pl.Expr]
    finals: Sequence[pl.Expr] = ()
    points: Mapping[str, Sequence[pl.Expr]] = field(default_factory=dict)
    rows: Sequence[Sequence[pl.Expr]] = ()
    merges: Sequence[pl.Expr] = ()
    last: Sequence[pl.Expr] = ()
    cumulative: Mapping[str, Any] = field(default_factory=dict)
    states: Mapping[str, State] = field(default_factory=dict)
    beside: Sequence[Call] = ()


@dataclass(frozen=True)
class Batch:
    """A spec's value as one part of a call shared with other specs of the same rows
    (``MetricSpec.extra["batch"]``): ``rows`` the aggregation the call reads (one value
    per group), ``part`` this spec's share of it, ``together(parts)`` the function of
    every part (by name) over the rows and its dtype, a struct with a field per name.
    Without a grouping, the specs of equal ``rows`` and ``together`` are computed by that
    one call instead of their states and finalizers (the sort-based binary metrics: one
    numpy pass over the sorted keys for all of them, instead of a threshold state and a
    finalizer each); their states still partition and merge as declared."""

    rows: pl.Expr
    part: Any
    together: Callable[[Mapping[str, Any]], tuple[Callable[[pl.Series], pl.Series], Any]]


@dataclass(frozen=True)
class Call:
    """An aggregation that runs Python: ``function`` over ``rows`` (an aggregation, one
    value per group), one value per group of ``dtype``, in the column ``alias``."""

    rows: pl.Expr
    function: Callable[[pl.Series], pl.Series]
    dtype: Any
    alias: str

    @property
    def expr(self) -> pl.Expr:
        """The call as one aggregation of a Polars query."""
        return self.rows.map_batches(
            self.function, return_dtype=self.dtype, is_elementwise=True
        ).alias(self.alias)

    def apply(self, inputs: pl.DataFrame) -> pl.Series:
        """The call over its collected ``rows`` (the column ``alias`` of ``inputs``)."""
        if not inputs.height:
            return pl.Series(self.alias, [], dtype=self.dtype)
        return self.function(inputs.get_column(self.alias)).alias(self.alias)


def _batches(
    specs: Mapping[str, MetricSpec], keep: Mapping[str, State]
) -> tuple[list[Call], dict[str, pl.Expr]]:
    """The calls of the specs that declare a :class:`Batch`, one per batch, and each
    such spec's value (a field of its batch's struct). A spec of a kept state is not
    batched: the state is computed anyway, and the spec finalized from it."""
    kept = {state.key for state in keep.values()}
    groups: dict[Any, dict[str, Batch]] = {}
    for name, spec in specs.items():
        batch = spec.extra.get("batch")
        if isinstance(batch, Batch) and not (
            kept and any(s.key in kept for s in spec.states.values())
        ):
            key = (plan_key(batch.rows), batch.together)
            groups.setdefault(key, {})[name] = batch
    calls, values = [], {}
    for i, members in enumerate(groups.values()):
        first = next(iter(members.values()))
        alias = f"__pe_k{i}"
        function, dtype = first.together({n: b.part for n, b in members.items()})
        calls.append(Call(first.rows, function, dtype, alias))
        values |= {name: pl.col(alias).struct.field(name) for name in members}
    return calls, values


def _kept_value(state: Mapping[str, pl.Expr]) -> pl.Expr:
    return state["c"]


def _kept_specs(keep: Mapping[str, State]) -> dict[str, MetricSpec]:
    """A spec per kept state, the state itself its value."""
    return {n: MetricSpec({"c": s}, _kept_value) for n, s in keep.items()}


def _summed(agg: pl.Expr) -> State:
    """An aggregation (a count) as a state merged by summing."""
    return State(agg, "list", merge=pl.Expr.sum)


@dataclass(frozen=True)
class Specs:
    """The metrics of a table as specs, laid out by the runner for its query.

    ``columns`` gives the table's columns from each spec's value (default: each spec
    under its name, then each kept state); ``sums`` are extra aggregations merged by
    summing (counts, e.g. ``zero_actuals``, the used rows of ``pe.Evaluation``), whose
    values ``columns`` reads by their names; ``stages`` row columns the states read
    (parts shared by many states); ``columns_first`` computes the row values of the
    summed states as columns first (plain column sums: faster for many small groups);
    ``one_group`` finalizes the sort-based specs of one ``list`` state over its points
    when the query has no groups (``plan_specs(one_group=)``); ``keep`` names states
    given as columns of the result, computed once with the specs' equal states (the
    report's threshold state and confusion counts: its curves and intervals read them).
    """

    specs: Mapping[str, MetricSpec]
    columns: Columns | None = None
    sums: Sequence[pl.Expr] = ()
    stages: Sequence[Sequence[pl.Expr]] = ()
    columns_first: bool = False
    one_group: bool = False
    keep: Mapping[str, State] = field(default_factory=dict)

    def _finals(self, values: Mapping[str, pl.Expr]) -> list[pl.Expr]:
        """The table's columns from each spec's value (and each sum's, by its name)."""
        if self.columns is None:
            return [values[name].alias(name) for name in [*self.specs, *self.keep]]
        sums = {s.meta.output_name(): pl.col(s.meta.output_name()) for s in self.sums}
        return self.columns({**values, **sums})

    @property
    def _all(self) -> dict[str, MetricSpec]:
        """The specs and a spec per kept state (the state itself its value)."""
        return {**self.specs, **_kept_specs(self.keep)}

    def layout(self, grouping: windows.Grouping | None, by: Sequence[str]) -> Query:
        """The query of the specs: each distinct state once and each column over them
        (:func:`plan_specs`), the specs of one :class:`Batch` by its one aggregation; with
        a grouping, every state its own column with its merge (:func:`windows.plan_merged`)."""
        if grouping is not None:
            merged = windows.plan_merged(self._all, columns_first=self.columns_first)
            for agg in self.sums:
                merged.add_sum(agg)
            return Query(
                merged.aggs,
                self._finals(merged.values),
                rows=_stages(self.stages, merged.row_columns),
                merges=merged.merges,
                last=merged.last,
                cumulative=merged.cumulative,
            )
        one_group = self.one_group and not by
        batched, values = _batches(self.specs, self.keep)
        rest = {name: spec for name, spec in self._all.items() if name not in values}
        planned = plan_specs(rest, columns_first=self.columns_first, one_group=one_group)
        return Query(
            [*planned.aggs, *self.sums],
            self._finals({**planned.values, **values}),
            points=planned.point_finals,
            rows=_stages(self.stages, planned.row_columns),
            beside=batched,
        )

    @functools.cached_property
    def partitioned(self) -> Query:
        """The query of the specs as states that merge (SPEC §10): each distinct state
        once, by its column, and the columns over the merged states."""
        rows = [name for name, spec in self.specs.items() if spec.has_rows]
        if rows:
            raise InvalidParameterError(f"{rows[0]}: a metric over the rows has no states to merge")
        specs = self._all
        planned = plan_specs(specs)
        states = {
            planned.columns[name][key]: state
            for name, spec in specs.items()
            for key, state in spec.states.items()
        }
        states |= {s.meta.output_name(): _summed(s) for s in self.sums}
        return Query([], self._finals(planned.values), rows=self.stages, states=states)


def _stages(stages: Sequence[Sequence[pl.Expr]], last: list[pl.Expr]) -> list[Sequence[pl.Expr]]:
    return [*stages, last] if last else list(stages)


@dataclass(frozen=True)
class Stage:
    """A second stage over the result of the aggregation.

    ``then`` runs on the aggregated (and finalized) result: with ``keys`` (the query
    columns of ranking) the states are computed per ``by`` + ``keys`` group and ``then``
    reduces the keys away (a mean over queries) or keeps them; ``out_by`` names the key
    columns of the result (default: ``by``); a DataFrame longer than ``slice_rows`` is
    aggregated in slices of whole groups (:func:`_sliced`). With a grouping, ``units``
    is the second stage over unit keys before the merges (:class:`windows.Units`).
    """

    then: Callable[[pl.LazyFrame], pl.LazyFrame] | None = None
    keys: Sequence[str] = ()
    out_by: Sequence[str] | None = None
    slice_rows: int | None = None
    units: windows.Units | None = None


@dataclass
class Table:
    """What to evaluate and how to present it (see the module's docstring)."""

    query: Specs | Query
    checks: Checks
    output: Output = field(default_factory=Output)
    by: Sequence[str] = ()
    stage: Stage | None = None
    grouping: windows.Grouping | None = None
    engine: Literal["auto", "in-memory", "streaming"] = "auto"
    _laid_out: Query | None = field(default=None, init=False, repr=False, compare=False)

    def laid_out(self) -> Query:
        """The table's query, its specs planned for its grouping and ``by`` (once per
        table: a table kept and run again, :func:`kept`, plans nothing again)."""
        if not isinstance(self.query, Specs):
            return self.query
        if self._laid_out is None:
            self._laid_out = self.query.layout(self.grouping, self.by)
        return self._laid_out

    # -- states of partitions (SPEC §10) --------------------------------------------------

    @property
    def states(self) -> Mapping[str, State]:
        """Each state column of :meth:`partition` and its state (whose rule merges it)."""
        assert isinstance(self.query, Specs), "a table of specs has states"
        return self.query.partitioned.states

    @property
    def names(self) -> list[str]:
        """The table's columns, in order."""
        assert isinstance(self.query, Specs)
        return [e.meta.output_name() for e in self.query.partitioned.finals]

    @property
    def bounded(self) -> bool:
        """Every state of the table's specs is of a bounded size (no ``rows``, no per-score
        ``list``): ``pe.Evaluation`` keeps its states (SPEC §10)."""
        assert isinstance(self.query, Specs)
        specs = self.query.specs.values()
        return all(s.kind not in ("rows", "list") for spec in specs for s in spec.states.values())

    def partition(self, frame: Frame) -> pl.LazyFrame:
        """The states of the rows of ``frame``, one row per ``by`` group: stacked with
        those of disjoint rows, :meth:`merge` merges them and :meth:`finalize` gives the
        table of all the rows."""
        assert isinstance(self.query, Specs)
        lf = frame.lazy()
        for stage in self.query.partitioned.rows:
            lf = lf.with_columns(stage) if stage else lf
        aggs = [state.aggregate().alias(c) for c, state in self.states.items()]
        return lf.group_by(list(self.by)).agg(aggs) if self.by else lf.select(aggs)

    def merge(self, states: pl.DataFrame) -> pl.DataFrame:
        """Stacked states merged per ``by`` group, each column by its state's rule."""
        aggs = [state.merged(pl.col(c)).alias(c) for c, state in self.states.items()]
        if self.by:
            return states.group_by(list(self.by), maintain_order=True).agg(aggs)
        return states.select(aggs)

    def finalize(
        self,
        states: pl.DataFrame,
        *,
        no_rows: Callable[[], str | None] | None = None,
        grouping: windows.Grouping | None = None,
        used: str | None = None,
    ) -> pl.DataFrame:
        """The table from merged states (one row per ``by`` group), its undefined values
        reported (``no_rows``: why nothing could be evaluated, asked when a value is
        null without ``by``). With ``grouping`` (SPEC §13), the states per (``by``,
        step) are merged upward and per window first; ``used`` names the column of the
        used rows (a summed state) that ``min_rows`` reads."""
        assert isinstance(self.query, Specs)
        names = self.names
        finals = self.query.partitioned.finals
        if grouping is not None:
            return self._finalize_grouped(states, grouping, used)
        by = list(self.by)
        out = states.lazy().with_columns(finals).select(*by, *names)
        if by:
            out = out.sort(by, nulls_last=True)
        return finish(out.collect(), self.output, grouped=bool(by), no_rows=no_rows)

    def _finalize_grouped(
        self, states: pl.DataFrame, g: windows.Grouping, used: str | None
    ) -> pl.DataFrame:
        """The states per (``by`` keys, step) merged upward and per window, finalized."""
        assert isinstance(self.query, Specs)
        merges = [state.merged(pl.col(c)).alias(c) for c, state in self.states.items()]
        schema = states.schema
        win = g.windows
        lf = states.lazy()
        dtype = None
        if win is not None:
            dtype = schema[win.time]
            lf = lf.filter(pl.col(win.time).is_not_null()).with_columns(
                pl.col(win.time).alias(windows.STEP), pl.col(win.time).alias(windows.FIRST)
            )
            first = lf.group_by([*g.finest, windows.STEP]).agg(*merges, pl.col(windows.FIRST).min())
        else:
            first = lf.group_by(g.finest).agg(merges) if g.finest else lf.select(merges)
        if g.min_rows is not None and used not in self.states:
            raise InvalidParameterError(
                "min_rows= needs the used rows of each state: pe.Evaluation(..., time=, every=)"
            )
        kept = [used] if g.min_rows is not None and used is not None else []
        cumulative = {c: s.cumulative for c, s in self.states.items() if s.cumulative is not None}
        out = windows.merge_up(first, g, schema, dtype, merges, merges, cumulative)
        out = out.with_columns(self.query.partitioned.finals)
        df = out.select(*g.out, *self.names, *kept).collect()
        df = finish(df, self.output, grouped=True, grouping=g, rows=used or ROWS)
        return df.drop(kept)


Builder = Callable[[Mapping[str, Any]], "Table"]


def kept(builder: Builder) -> Builder:
    """``builder`` (a task's table builder, of the method's arguments by name) keeping its
    last tables by their arguments, when every argument is a plain value (a column name,
    a number, None, a list of names; no expression, no grouping): the same call again
    neither binds the specs nor plans them (:meth:`Table.laid_out` once per table; about
    10 ms of Python for the binary table's 23 metrics). The registry's size is part of
    the key (a metric registered later is seen)."""

    tables: dict[tuple[Any, ...], Table] = {}

    @functools.wraps(builder)
    def build(a: Mapping[str, Any]) -> Table:
        key = (len(REGISTRY), *((k, _plain(v)) for k, v in a.items()))
        if any(v is _NOT_PLAIN for _, v in key[1:]):
            return builder(a)
        table = tables.pop(key, None) or builder(a)
        tables[key] = table  # the latest last
        while len(tables) > 16:
            del tables[next(iter(tables))]
        return table

    return build


_NOT_PLAIN = object()


def _plain(value: Any) -> Any:
    """``value`` as a hashable plain value (a list as a tuple), or ``_NOT_PLAIN``."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return type(value), value  # True and 1 are equal keys, not equal arguments
    if isinstance(value, (list, tuple)):
        items = tuple(_plain(v) for v in value)
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in items) else items
    return _NOT_PLAIN


def arguments(method: Callable[..., Any], **given: Any) -> dict[str, Any]:
    """The arguments of a task method by name, its defaults filled in: what its table
    builder reads (``tasks/<task>.py``). The method's signature declares the options and
    their defaults once; ``pe.Evaluation`` builds the same table from them."""
    bound = inspect.signature(method).bind_partial(None, **given)
    bound.apply_defaults()
    out = dict(bound.arguments)
    out.pop("self", None)
    return out


# -- the finish step ------------------------------------------------------------------------


def finish(
    df: pl.DataFrame,
    output: Output,
    *,
    grouped: bool,
    no_rows: Callable[[], str | None] | None = None,
    grouping: windows.Grouping | None = None,
    rows: str = ROWS,
) -> pl.DataFrame:
    """The finish step of every table: with a ``grouping``, the metrics of the slices of
    fewer than ``min_rows`` used rows (column ``rows``) nulled (one warning); then the
    undefined values reported (one warning; without ``by``, raised where ``strict`` or
    where no row could be evaluated: ``no_rows``); then, without ``by``, the "no rows"
    error of a curve, table or struct column (``output.no_rows_error``)."""
    undefined = {k: v for k, v in output.undefined.items() if k in df.columns}
    if grouping is not None:
        names = [c for c in df.columns if c in undefined]  # the metrics (not counts, keys)
        df, small = windows.apply_min_rows(df, grouping, names, rows=rows)
        counted = df if small is None else df.filter(~small)
        report_undefined(counted, undefined, grouped=True, strict=False)
        return df
    report_undefined(df, undefined, grouped=grouped, strict=output.strict, no_rows=no_rows)
    if grouped:
        return df
    for name in output.no_rows_error:  # the rows are counted only for a value that may be empty
        if name not in df.columns:
            continue
        if df.height == 0 or _may_be_empty(df.get_column(name).head(1)):
            empty = no_rows() if no_rows is not None else None
            if empty is not None:
                raise UndefinedMetricError(f"no rows to evaluate for {name}: {empty}")
    return df


def deferred(error: Exception) -> pl.LazyFrame:
    """A LazyFrame that raises ``error`` when collected (lazy inputs report at collect)."""

    def fail(_: pl.DataFrame) -> pl.DataFrame:
        raise error

    return pl.LazyFrame({"__pe_error": [0]}).map_batches(fail)


def _may_be_empty(value: pl.Series) -> bool:
    """Whether a value (a series of one row) may come from no row: null, a curve (a list of
    points) with no point or a point with a null field or of zeros, a struct with a null
    field or of zeros (counts). In Polars, not over Python objects: a curve holds a point
    per distinct score (1e6 points: 4 s as Python dicts)."""
    if value.null_count():
        return True
    if isinstance(value.dtype, pl.List):
        if value.list.len().item() == 0:
            return True
        value = value.explode()
    if not isinstance(value.dtype, pl.Struct):
        return False
    fields = value.struct.unnest()
    if any(fields.null_count().row(0)):
        return True
    if not all(t.is_numeric() or t == pl.Boolean for t in fields.dtypes):
        return False  # a field that is not a number is no count of zero
    return bool(fields.select(pl.all_horizontal(pl.all() == 0).any()).item())


# -- the runner -----------------------------------------------------------------------------


def run(table: Table, frame: Frame, *, lazy: bool | None = None) -> pl.DataFrame | pl.LazyFrame:
    """The one runner: the table's query over ``frame``, collected on a DataFrame,
    returned lazily on a LazyFrame (a validation error then raised at collect).
    ``lazy`` overrides the choice (rows prepared lazily from a caller's DataFrame)."""
    if isinstance(frame, pl.LazyFrame) if lazy is None else lazy:
        try:
            return build(table, frame)
        except DataValidationError as error:
            return deferred(error)
    return build(table, frame, eager=True).collect(engine=table.engine)


def build(table: Table, frame: Frame, *, eager: bool = False) -> pl.LazyFrame:
    """The lazy query of a table, with validation, its second stage and the finish step
    attached (raises a DataValidationError the schema shows). ``eager`` (a DataFrame
    collected at once: :func:`run`): the aggregations that run Python (``Query.beside``)
    are collected now, in a thread beside the others (:func:`_beside`)."""
    q = table.laid_out()
    c = table.checks
    stage = table.stage or Stage()
    g = table.grouping
    lf = frame.lazy()
    schema = lf.collect_schema()
    checks = c.resolve(schema, table.by)

    # The row checks ride in the metric query itself (one pass over the data) unless a
    # second stage reshapes its result; then they are aggregated apart and cross-joined.
    # A DataFrame grouped by keys is checked apart too: its counts are wanted for the
    # whole frame only, and counting them per group gathers every checked column by
    # group (1e6 rows, 1,000 groups: 37 ms on a 70 ms AUC by group; apart: ~3 ms)
    group = [*table.by, *stage.keys]
    inline = bool(checks) and stage.then is None
    inline = inline and not (group and isinstance(frame, pl.DataFrame))
    exprs = list(q.aggs) + (check_aggs(checks, examples=False) if inline else [])
    rows = lf
    for columns in q.rows:
        rows = rows.with_columns(columns)
    # grouped: the check counts ride on every result row (with units: counted apart)
    carried = g is not None and stage.units is None
    beside = list(q.beside)
    if beside and not (eager and isinstance(frame, pl.DataFrame) and stage.slice_rows is None):
        exprs, beside = exprs + [call.expr for call in beside], []
    # the check counts when counted apart (below): collected early where a call runs Python
    counts = lf.select(check_aggs(checks, examples=False)) if checks else None
    if g is not None:
        query = _grouped(rows, table, q, schema, checks if carried else [])
        group = g.out
        inline = False
    elif beside:
        apart = counts if not inline and not carried else None
        query, counts = _beside(rows, group, exprs, beside, table.engine, apart)
    elif not group:
        query = rows.select(exprs)
    elif stage.slice_rows and isinstance(frame, pl.DataFrame) and frame.height > stage.slice_rows:
        query = _sliced(rows, group, exprs, -(-frame.height // stage.slice_rows))
    else:
        query = rows.group_by(group).agg(exprs)
        if eager and counts is not None and not inline and not carried:
            # the counts first, on their own: as the other side of the cross join below,
            # Polars runs them beside an aggregation that calls Python, whose tasks then
            # wait (1e6 rows, 1,000 groups: AUC by group 49.6 ms, +14 ms so, +5 ms this way)
            counts = counts.collect(engine=table.engine).lazy()
    for column, finals in q.points.items():
        points = query.select(pl.col(column).explode()).select(finals)
        query = query.join(points, how="cross")
    if q.finals:
        names = [e.meta.output_name() for e in q.finals]
        kept = [pl.col("^__pe_bad_.*$")] if inline or (carried and checks) else []
        if g is not None:
            kept.append(pl.col(f"^({ROWS}|{SPLIT})$"))
        query = query.with_columns(q.finals).select(*group, *names, *kept)
    if stage.then is not None:
        query = stage.then(query)
    out_schema = {k: v for k, v in query.collect_schema().items() if not k.startswith("__pe_bad_")}
    if counts is not None and not inline and not carried:
        query = query.join(counts, how="cross", maintain_order="left")
    by = list(table.by if stage.out_by is None else stage.out_by)
    if by and g is None:
        query = query.sort(by, nulls_last=True)
    grouped = bool(by) or g is not None
    output = table.output

    def no_rows() -> str | None:
        return c.no_rows(lf)

    def finish_query(df: pl.DataFrame) -> pl.DataFrame:
        if checks and (inline or df.height):  # no row after a second stage: nothing to check
            raise_for_checks(df, checks, per_row=inline, source=lf)
        if checks:
            df = df.select(list(out_schema))
        if g is not None:
            if SPLIT in df.columns and df.height and df.get_column(SPLIT).item(0):
                raise DataValidationError(_split_message(df.get_column(SPLIT).item(0)))
            df = finish(df, output, grouped=True, grouping=g)
            return df.drop(ROWS, SPLIT, strict=False)
        return finish(df, output, grouped=grouped, no_rows=no_rows)

    hidden = (ROWS, SPLIT) if g is not None else ()
    result = {k: v for k, v in out_schema.items() if k not in hidden}
    query = query.map_batches(finish_query, schema=result)
    for name in output.curves:
        query = query.explode(name).unnest(name)
    for name in output.structs:
        query = query.unnest(name)
    return query


def _split_message(n: int) -> str:
    return (
        f"{n} units (queries) have rows in more than one every-step of time= (e.g. two "
        "days): each query's rows must fall in one step, so that a window holds whole "
        "queries; give the rows of a query one time (e.g. the query's time)"
    )


def _grouped(
    rows: pl.LazyFrame, table: Table, q: Query, schema: Any, checks: list[Any]
) -> pl.LazyFrame:
    """The merged states of a grouped table (windows, grouping sets, min_rows: SPEC §13),
    with the validation counts over every row on each row."""
    g = table.grouping
    assert g is not None
    aggs, merges, last = list(q.aggs), list(q.merges), list(q.last)
    if g.min_rows is not None:
        counts = row_counts(table.checks.args, table.checks.inputs)
        used = counts[2] if counts is not None else pl.len().cast(pl.Int64)
        aggs.append(used.alias(ROWS))
        merges.append(pl.col(ROWS).sum())
        last.append(pl.col(ROWS).sum())
    side = check_aggs(checks, examples=False) if checks else []
    units = table.stage.units if table.stage is not None else None
    return windows.query(rows, g, schema, aggs, merges, last, side, units, q.cumulative)


def _beside(
    rows: pl.LazyFrame,
    group: list[str],
    exprs: list[pl.Expr],
    beside: list[Call],
    engine: Literal["auto", "in-memory", "streaming"],
    counts: pl.LazyFrame | None = None,
) -> tuple[pl.LazyFrame, pl.LazyFrame | None]:
    """The aggregations ``exprs`` and the calls ``beside`` (which run Python) per
    ``group``, put side by side, and the check ``counts`` (counted apart) collected: the
    calls' inputs are collected first, then the calls run in a thread of their own while
    ``exprs`` and ``counts`` are collected (numpy's sort and passes release the GIL: the
    binary table's sort-based metrics beside its sums and checks). Not as one query:
    Polars evaluates every expression of a query one after another once one of them
    calls Python; nor as two queries at once: a query's Python function runs on one of
    Polars' threads, and the other query's tasks wait for it (1e6 rows: the binary table
    80 ms so, 67 ms this way)."""

    def aggregate(aggs: list[pl.Expr]) -> pl.DataFrame:
        lf = rows.group_by(group).agg(aggs) if group else rows.select(aggs)
        return lf.collect(engine=engine)

    inputs = aggregate([call.rows.alias(call.alias) for call in beside])

    def side() -> pl.DataFrame:
        keys = [inputs.get_column(name) for name in group]
        return pl.DataFrame([*keys, *(call.apply(inputs) for call in beside)])

    with ThreadPoolExecutor(1) as pool:
        other = pool.submit(side)
        main = aggregate(exprs) if exprs else None
        counted = None if counts is None else counts.collect(engine=engine).lazy()
        result = other.result()
    if main is None:
        return result.lazy(), counted
    if group:
        return main.join(result, on=group, how="left", nulls_equal=True).lazy(), counted
    return pl.concat([main, result], how="horizontal").lazy(), counted


def _sliced(rows: pl.LazyFrame, group: list[str], exprs: list[pl.Expr], n: int) -> pl.LazyFrame:
    """The aggregation in ``n`` slices of whole groups (a hash of the group keys), run one
    after the other: a state that holds a dozen columns as long as its input (the ranking
    engine) then peaks near the input's size (4 slices of 1e7 rows: 1.6x the input columns
    instead of 4.4x), and is no slower. A LazyFrame stays one plan: its length is unknown
    before it runs, and the streaming engine bounds its memory itself."""
    part = pl.struct(group).hash(seed=0) % n
    slices = [rows.filter(part == i).group_by(group).agg(exprs) for i in range(n)]
    return pl.concat(slices, parallel=False)


# -- one registered metric --------------------------------------------------------------------


def metric_table(
    info: MetricInfo,
    args: Mapping[str, Any],
    *,
    by: Sequence[str],
    validate: bool,
    grouping: windows.Grouping | None = None,
    expr: pl.Expr | None = None,
    kind: str | None = None,
) -> Table:
    """The table of one registered metric (``expr``: its expression, default the
    metric's; ``kind``: how its value is shown, default the metric's). With a
    ``grouping`` its spec is planned per window and grouping."""
    kind = kind or info.kind
    query: Specs | Query = (
        Specs({info.name: info.spec(**args)})  # type: ignore[misc]
        if grouping is not None
        else Query([info.fn(**args) if expr is None else expr])
    )
    return Table(
        query,
        Checks(
            info.inputs,
            args,
            validate,
            info.check(args) if info.check is not None else [],
        ),
        Output(
            undefined={info.name: info.undefined or "no defined value"} if kind == "scalar" else {},
            curves=[info.name] if kind == "curve" else [],
            structs=[info.name] if kind == "struct" and (by or grouping is not None) else [],
            no_rows_error=[info.name] if kind != "scalar" and grouping is None else [],
        ),
        by=by,
        grouping=grouping,
    )


def run_metric(
    frame: Frame,
    info: MetricInfo,
    args: Mapping[str, Any],
    *,
    by: Any,
    validate: bool,
    grouping: Any = None,
) -> Any:
    """Evaluate one registered metric for the namespace layer.

    A metric whose namespace value is a table rather than the expression's value (a table
    per class, a square confusion table) declares ``namespace=`` at ``@register``: a
    function of the arguments giving ``(expression, present)`` (or None for the plain
    form); the expression, a ``List[Struct]`` per group, is evaluated as a long table and
    ``present(table, by)`` shapes it. ``grouping`` (windows: ``_core/windows.Grouping``)
    evaluates the metric's spec per window, always as a table.
    """
    by_cols = normalize_by(by)
    form = info.extra.get("namespace")
    shaped = form(args) if form is not None else None
    if grouping is not None:
        if shaped is not None:
            raise InvalidParameterError(
                f"df.eval.{info.name} gives a table per group, not available with time=/"
                f"every=: use df.eval.{info.task}(..., metrics=[...], time=..., every=...)"
            )
        return run(metric_table(info, args, by=[], validate=validate, grouping=grouping), frame)
    expr = None if shaped is None else shaped[0].alias(info.name)
    kind = info.kind if shaped is None else "curve"
    table = metric_table(info, args, by=by_cols, validate=validate, expr=expr, kind=kind)
    result = run(table, frame)
    if shaped is not None:
        return shaped[1](result, by_cols)
    if isinstance(result, pl.LazyFrame) or by_cols:
        return result
    if info.kind == "scalar":
        return result.item()
    if info.kind == "struct":
        to_python = info.extra.get("to_python")
        value = result.item()
        return to_python(value) if to_python is not None else value
    return result
