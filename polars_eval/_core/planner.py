"""The one planner: validate, compute states, finalize, report undefined values.

Every namespace method ends here. :func:`plan_specs` turns any set of metric specs into
one list of state aggregations, each state computed once however many metrics read it,
and one finalizer per metric. One lazy query computes the states (per group with
``by``), and in the same aggregation the row-level validation counts; the finalizers
run over the group rows; a small function at the end of the plan raises the validation
error or the undefined-value error, or warns about undefined groups. On a DataFrame the
plan is collected at once; on a LazyFrame it is returned, so every error of SPEC §2
surfaces at collect time. :func:`state_frame` and :func:`merge_states` are the same
states kept per partition and merged (SPEC §10).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from polars_eval._core.registry import MetricInfo, Role
from polars_eval._core.spec import F64, MetricSpec, State
from polars_eval._exprs import column_name, count_true, to_expr
from polars_eval._validate import (
    check_aggs,
    column_problems,
    raise_for_checks,
    resolve_checks,
    row_checks,
)
from polars_eval.exceptions import DataValidationError, UndefinedMetricError, UndefinedMetricWarning

Frame = pl.DataFrame | pl.LazyFrame


def normalize_by(by: str | Sequence[str] | None) -> list[str]:
    """``by`` as a list of column names."""
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    return list(by)


@dataclass
class Plan:
    """What to evaluate and how to present it."""

    exprs: list[pl.Expr]
    inputs: Mapping[str, Role]
    args: Mapping[str, Any]
    by: list[str]
    validate: bool = True
    # metric name -> why it may be undefined; null values of these are reported
    undefined: Mapping[str, str] = field(default_factory=dict)
    # without ``by``: raise on an undefined value (single metrics) or only warn (task tables)
    strict: bool = True
    # names of List[Struct] result columns to explode into long tables
    curves: Sequence[str] = ()
    # names of Struct result columns to unnest into their fields
    structs: Sequence[str] = ()
    # curve, table and struct columns that, without ``by``, raise UndefinedMetricError when
    # no row can be evaluated, as an undefined scalar (BAD_INPUTS row 5)
    no_rows_error: Sequence[str] = ()
    # finalizers over the aggregated columns (row-wise: the validation counts ride along)
    finalize: Sequence[pl.Expr] = ()
    # extra lazy steps on the result (after validation), e.g. a second aggregation stage
    then: Callable[[pl.LazyFrame], pl.LazyFrame] | None = None
    # data checks beyond the roles (with ``validate``): Check objects, or functions of the
    # frame's schema giving Check objects (a check whose form depends on the dtypes); such a
    # function may raise DataValidationError for a problem the schema shows, with or
    # without ``validate``
    extra_checks: list[Any] = field(default_factory=list)
    # row-level columns added before the aggregation, once the inputs are checked: parts
    # that many aggregations read, computed once (e.g. the ``row_columns`` of
    # ``plan_specs(..., columns_first=True)``); in stages, each reading the earlier ones
    columns: Sequence[Sequence[pl.Expr]] = ()
    # a second stage over keys (the query columns of ranking): the states are computed per
    # ``by`` + ``keys`` group, ``then`` reduces the keys away (a mean over queries) or keeps
    # them; ``out_by`` names the key columns of the result (default: ``by``)
    keys: Sequence[str] = ()
    out_by: Sequence[str] | None = None
    # a DataFrame longer than this is aggregated in slices of whole groups (see _sliced)
    slice_rows: int | None = None
    # without groups: finalizers over the points of a ``list`` state, by its column
    # (``Planned.point_finals``), each run in a frame of that column exploded
    point_finalize: Mapping[str, Sequence[pl.Expr]] = field(default_factory=dict)
    # the engine that collects the query of a DataFrame (a LazyFrame is returned: its
    # caller chooses); "in-memory" where the default's streaming plan costs more
    engine: Literal["auto", "in-memory", "streaming"] = "auto"
    # windows, grouping sets, min_rows (SPEC §13: ``_core/windows.Grouping``): the states
    # ``exprs`` of the finest grouping and steps are merged by ``merges`` (upward) and
    # ``last`` (the merge the ``finalize`` reads; ``windows.plan_merged``)
    grouping: Any = None
    merges: Sequence[pl.Expr] = ()
    last: Sequence[pl.Expr] = ()
    # with ``grouping``: a second stage over unit keys before the merges (``windows.Units``)
    units: Any = None
    # with ``grouping``: the ``list`` states of running sums, by column (merged as one long
    # frame per window: ``windows.Windows.merge``)
    cumulative: Mapping[str, Any] = field(default_factory=dict)


def _deferred(error: Exception) -> pl.LazyFrame:
    """A LazyFrame that raises ``error`` when collected (lazy inputs report at collect)."""

    def fail(_: pl.DataFrame) -> pl.DataFrame:
        raise error

    return pl.LazyFrame({"__pe_error": [0]}).map_batches(fail)


def build(frame: Frame, plan: Plan) -> pl.LazyFrame:
    """The lazy query of a plan, with validation and undefined-value handling attached."""
    lf = frame.lazy()
    schema = lf.collect_schema()
    problems = column_problems(schema, plan.args, plan.inputs)
    problems += [f'column "{b}" (argument by=) not found' for b in plan.by if b not in schema]
    if problems:
        raise DataValidationError(problems[0])
    # a function of the schema runs even without ``validate`` (what it finds in the schema
    # is an error, as a missing column); the row checks count only with it
    extra = resolve_checks(plan.extra_checks, schema)
    checks = (row_checks(schema, plan.args, plan.inputs) + extra) if plan.validate else []

    # The row checks ride in the metric query itself (one pass over the data) unless a
    # second stage reshapes its result; then they are aggregated apart and cross-joined.
    inline = bool(checks) and plan.then is None
    exprs = plan.exprs + (check_aggs(checks, examples=False) if inline else [])
    rows = lf
    for stage in plan.columns:
        rows = rows.with_columns(stage)
    group = [*plan.by, *plan.keys]
    # grouped: the check counts ride on every result row (with units: counted apart)
    carried = plan.grouping is not None and plan.units is None
    if plan.grouping is not None:
        query, group = _grouped(rows, plan, schema, checks if carried else [])
        inline = False
    elif not group:
        query = rows.select(exprs)
    elif plan.slice_rows and isinstance(frame, pl.DataFrame) and frame.height > plan.slice_rows:
        query = _sliced(rows, group, exprs, -(-frame.height // plan.slice_rows))
    else:
        query = rows.group_by(group).agg(exprs)
    for column, finals in plan.point_finalize.items():
        points = query.select(pl.col(column).explode()).select(finals)
        query = query.join(points, how="cross")
    if plan.finalize:
        names = [e.meta.output_name() for e in plan.finalize]
        kept = [pl.col("^__pe_bad_.*$")] if inline or (carried and checks) else []
        if plan.grouping is not None:
            kept.append(pl.col(f"^({_ROWS}|{_SPLIT})$"))
        query = query.with_columns(plan.finalize).select(*group, *names, *kept)
    if plan.then is not None:
        query = plan.then(query)
    out_schema = {k: v for k, v in query.collect_schema().items() if not k.startswith("__pe_bad_")}
    if checks and not inline and not carried:
        counts = lf.select(check_aggs(checks, examples=False))
        query = query.join(counts, how="cross", maintain_order="left")
    by = list(plan.by if plan.out_by is None else plan.out_by)
    if by and plan.grouping is None:
        query = query.sort(by, nulls_last=True)
    grouped = bool(by) or plan.grouping is not None
    undefined = {k: v for k, v in plan.undefined.items() if k in out_schema}
    strict = plan.strict
    no_rows_error = [] if grouped else [n for n in plan.no_rows_error if n in out_schema]

    def no_rows() -> str | None:
        return no_rows_reason(lf, plan.args, plan.inputs)

    def finish(df: pl.DataFrame) -> pl.DataFrame:
        if checks and (inline or df.height):  # no row after a second stage: nothing to check
            raise_for_checks(df, checks, per_row=inline, source=lf)
        if checks:
            df = df.select(list(out_schema))
        if plan.grouping is not None:
            return _finish_grouped(df, plan.grouping, undefined)
        report_undefined(df, undefined, grouped=grouped, strict=strict, no_rows=no_rows)
        for name in no_rows_error:  # the rows are counted only for a value that may be empty
            if df.height == 0 or _may_be_empty(df.get_column(name).head(1)):
                empty = no_rows()
                if empty is not None:
                    raise UndefinedMetricError(f"no rows to evaluate for {name}: {empty}")
        return df

    hidden = (_ROWS, _SPLIT) if plan.grouping is not None else ()
    result = {k: v for k, v in out_schema.items() if k not in hidden}
    query = query.map_batches(finish, schema=result)
    for name in plan.curves:
        query = query.explode(name).unnest(name)
    for name in plan.structs:
        query = query.unnest(name)
    return query


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


_ROWS = "__pe_rows"  # the used rows of a slice (windows.ROWS)
_SPLIT = "__pe_split"  # units split across every-steps (windows.SPLIT)


def _grouped(
    rows: pl.LazyFrame, plan: Plan, schema: Any, checks: list[Any]
) -> tuple[pl.LazyFrame, list[str]]:
    """The merged states of a grouped plan (windows, grouping sets, min_rows: SPEC §13),
    with the validation counts over every row on each row, and the key columns of the
    result."""
    from polars_eval._core import windows

    g = plan.grouping
    aggs, merges, last = list(plan.exprs), list(plan.merges), list(plan.last)
    if g.min_rows is not None:
        counts = row_counts(plan.args, plan.inputs)
        used = counts[2] if counts is not None else pl.len().cast(pl.Int64)
        aggs.append(used.alias(_ROWS))
        merges.append(pl.col(_ROWS).sum())
        last.append(pl.col(_ROWS).sum())
    side = check_aggs(checks, examples=False) if checks else []
    out = windows.query(rows, g, schema, aggs, merges, last, side, plan.units, plan.cumulative)
    return out, g.out


def _finish_grouped(df: pl.DataFrame, g: Any, undefined: Mapping[str, str]) -> pl.DataFrame:
    """Null metrics of the slices under ``min_rows`` (one warning), then the undefined
    values of the others (one warning)."""
    from polars_eval._core import windows

    if _SPLIT in df.columns and df.height and df.get_column(_SPLIT).item(0):
        n = df.get_column(_SPLIT).item(0)
        raise DataValidationError(
            f"{n} units (queries) have rows in more than one every-step of time= (e.g. two "
            "days): each query's rows must fall in one step, so that a window holds whole "
            "queries; give the rows of a query one time (e.g. the query's time)"
        )
    names = [c for c in df.columns if c in undefined]  # the metrics (not counts, keys)
    df, small = windows.apply_min_rows(df, g, names)
    counted = df if small is None else df.filter(~small)
    report_undefined(counted, undefined, grouped=True, strict=False)
    return df.drop(_ROWS, _SPLIT, strict=False)


def _sliced(rows: pl.LazyFrame, group: list[str], exprs: list[pl.Expr], n: int) -> pl.LazyFrame:
    """The aggregation in ``n`` slices of whole groups (a hash of the group keys), run one
    after the other: a state that holds a dozen columns as long as its input (the ranking
    engine) then peaks near the input's size (4 slices of 1e7 rows: 1.6x the input columns
    instead of 4.4x), and is no slower. A LazyFrame stays one plan: its length is unknown
    before it runs, and the streaming engine bounds its memory itself."""
    part = pl.struct(group).hash(seed=0) % n
    slices = [rows.filter(part == i).group_by(group).agg(exprs) for i in range(n)]
    return pl.concat(slices, parallel=False)


def _column_items(value: Any) -> list[Any]:
    values = value if isinstance(value, (list, tuple)) else [value]
    return [v for v in values if isinstance(v, (str, pl.Expr))]


def no_rows_reason(
    source: pl.LazyFrame, args: Mapping[str, Any], inputs: Mapping[str, Role]
) -> str | None:
    """Why no row can be evaluated (an empty input, every row null or of weight 0), or None.

    A row is used when every column argument is non-null and its weight (if any) is not
    0. Runs one small query over ``source`` (:func:`row_counts`); called only once a
    metric came out null.
    """
    counts = row_counts(args, inputs)
    if counts is None:
        return None
    n, n_complete, n_used = source.select(counts).collect().row(0)
    return no_rows_text(n, n_complete, n_used, args, inputs)


def row_counts(args: Mapping[str, Any], inputs: Mapping[str, Role]) -> list[pl.Expr] | None:
    """The rows, the complete rows (no null input) and the used rows (complete, weight
    not 0) as three Int64 aggregations (sums: the counts of disjoint parts add up), or
    None when there is no column argument."""
    present: list[pl.Expr] = []
    weights: list[pl.Expr] = []
    for arg, role in inputs.items():
        if role == "row_id":
            continue
        for item in _column_items(args.get(arg)):
            expr = to_expr(item)
            present.append(expr.is_not_null())
            if role == "weight":
                weights.append(expr.cast(pl.Float64) != 0.0)
    if not present:
        return None
    complete = pl.all_horizontal(present)
    used = complete & pl.all_horizontal(weights) if weights else complete
    return [
        pl.len().cast(pl.Int64).alias("n"),
        count_true(complete).alias("complete"),
        count_true(used).alias("used"),
    ]


def no_rows_text(
    n: int, n_complete: int, n_used: int, args: Mapping[str, Any], inputs: Mapping[str, Role]
) -> str | None:
    """Why no row can be evaluated, from the counts of :func:`row_counts`; None when some
    row is used."""
    if n_used:
        return None
    if n == 0:
        return "the input has no rows"
    names = [
        column_name(item)
        for arg, role in inputs.items()
        if role != "row_id"
        for item in _column_items(args.get(arg))
    ]
    # internal columns (a scale joined from train=) are no column of the caller's
    columns = _either([f'"{c}"' for c in dict.fromkeys(names) if not c.startswith("__pe_")])
    if n_complete == 0:
        return f"all {n} rows have a null in {columns}"
    weight_names = _either(
        [
            f'"{column_name(item)}"'
            for arg, role in inputs.items()
            if role == "weight"
            for item in _column_items(args.get(arg))
        ]
    )
    if n_complete == n:
        return f"all {n} rows have weight 0 in {weight_names}"
    nulls = n - n_complete
    return (
        f"of {n} rows, {nulls} {'has' if nulls == 1 else 'have'} a null in {columns} "
        f"and {n_complete} {'has' if n_complete == 1 else 'have'} weight 0 in {weight_names}"
    )


def _either(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def report_undefined(
    df: pl.DataFrame,
    undefined: Mapping[str, str],
    *,
    grouped: bool,
    strict: bool,
    no_rows: Callable[[], str | None] | None = None,
) -> None:
    """Raise (no groups, strict) or warn once (groups) about null metric values.

    Without groups, ``no_rows`` (see :func:`no_rows_reason`) is asked why the values are
    null; when no row could be evaluated at all, that is raised even when not ``strict``
    (a task table of an empty input is an error, as a single metric: BAD_INPUTS row 49).
    """
    if not undefined:
        return
    if not grouped:
        nulls = [
            name
            for name in undefined
            if df.height == 0 or df.get_column(name).null_count() == df.height
        ]
        if not nulls:
            return
        empty = no_rows() if no_rows is not None else None
        if empty is not None:
            if len(undefined) == 1:
                raise UndefinedMetricError(f"no rows to evaluate for {nulls[0]}: {empty}")
            raise UndefinedMetricError(f"no rows to evaluate: {empty}; every metric is undefined")
        reasons = "; ".join(
            f"{name} is undefined on this data: {undefined[name]}" for name in nulls
        )
        if strict:
            raise UndefinedMetricError(reasons)
        warnings.warn(f"{reasons} (reported as null)", UndefinedMetricWarning, stacklevel=2)
        return
    parts = []
    for name, why in undefined.items():
        n = df.get_column(name).null_count()
        if n:
            parts.append(f"{name} is null for {n} of {df.height} groups ({why})")
    if parts:
        warnings.warn("; ".join(parts), UndefinedMetricWarning, stacklevel=2)


def execute(frame: Frame, plan: Plan) -> pl.DataFrame | pl.LazyFrame:
    """Build the plan; collect it on a DataFrame, return it lazily on a LazyFrame."""
    if isinstance(frame, pl.LazyFrame):
        try:
            return build(frame, plan)
        except DataValidationError as error:
            return _deferred(error)
    return build(frame, plan).collect(engine=plan.engine)


@dataclass
class Planned:
    """A set of specs laid out for one query: the state aggregations (each distinct state
    once, column ``__pe_s<i>``), the finalizer of each metric over those columns, and which
    column holds which state of which metric (for merging the states of several groups)."""

    aggs: list[pl.Expr]
    finals: list[pl.Expr]
    specs: Mapping[str, MetricSpec]
    columns: Mapping[str, Mapping[str, str]]
    # with ``columns_first``: the row values of the summed states, to add as columns
    row_columns: list[pl.Expr] = field(default_factory=list)
    # with ``one_group``: the finalizers over the points of a ``list`` state, by its column
    # (run in a frame of that column exploded, their values joined to the state row;
    # ``finals`` then only names them)
    point_finals: dict[str, list[pl.Expr]] = field(default_factory=dict)

    def merged(self, suffix: str = "") -> list[pl.Expr]:
        """Each metric over the merged states of the rows of an aggregation (aliased
        name + ``suffix``): the pooled value of groups, e.g. of every series in a group."""
        out = []
        for name, spec in self.specs.items():
            if spec.has_rows:
                raise ValueError(f"{name}: a metric over the rows has no states to merge here")
            columns = self.columns[name]
            merged = {k: state.merged(pl.col(columns[k])) for k, state in spec.states.items()}
            out.append(spec.finalize(merged).alias(name + suffix))
        return out


def plan_specs(
    specs: Mapping[str, MetricSpec], *, columns_first: bool = False, one_group: bool = False
) -> Planned:
    """The state aggregations of ``specs`` (each distinct state once) and their finalizers.

    A spec whose state is the rows themselves has nothing to share: it is computed whole
    in the aggregation (its finalizer then only names the column). ``columns_first``
    computes the row values of the ``sum``/``min``/``max`` states as columns of the frame
    first (``Planned.row_columns``, for the caller's ``with_columns``), so the group_by
    runs plain column sums: faster when the groups are many and small (series).
    ``one_group`` (the query has no groups: one row of states) finalizes a spec of one
    ``list`` state with its ``one_group`` form where it has one (:class:`MetricSpec`),
    over the state's points (``Planned.point_finals``, ``Plan.point_finalize``).
    """
    aggs: dict[Any, pl.Expr] = {}
    finals: list[pl.Expr] = []
    layout: dict[str, dict[str, str]] = {}
    rows: list[pl.Expr] = []
    points: dict[str, list[pl.Expr]] = {}
    for name, spec in specs.items():
        if spec.has_rows:
            aggs[("metric", name)] = spec.expr().alias(name)
            finals.append(pl.col(name))
            layout[name] = {}
            continue
        columns: dict[str, str] = {}
        for state_name, state in spec.states.items():
            alias = f"__pe_s{len(aggs)}"
            if state.key not in aggs:
                if columns_first and state.kind in ("sum", "min", "max"):
                    value = state.value.cast(F64) if state.kind == "sum" else state.value
                    rows.append(value.alias(alias))
                    aggs[state.key] = State(pl.col(alias), state.kind).aggregate().alias(alias)
                else:
                    aggs[state.key] = state.aggregate().alias(alias)
            columns[state_name] = aggs[state.key].meta.output_name()
        layout[name] = columns
        kinds = [state.kind for state in spec.states.values()]
        if one_group and spec.one_group is not None and kinds == ["list"]:
            ((key, column),) = columns.items()
            final = spec.one_group({key: pl.col(column)}).alias(name)
            points.setdefault(column, []).append(final)
            finals.append(pl.col(name))
            continue
        finals.append(spec.finalize({k: pl.col(c) for k, c in columns.items()}).alias(name))
    return Planned(list(aggs.values()), finals, dict(specs), layout, rows, points)


def _state_columns(specs: Mapping[str, MetricSpec]) -> dict[str, dict[str, str]]:
    """metric -> state name -> its column in a state frame (``__pe_<metric>__<state>``)."""
    return {
        name: {state: f"__pe_{name}__{state}" for state in spec.states}
        for name, spec in specs.items()
    }


def state_frame(frame: Frame, specs: Mapping[str, MetricSpec], by: Sequence[str]) -> pl.LazyFrame:
    """The states of ``specs`` over ``frame``, one row per group (SPEC §10): the rows of
    two such frames of disjoint data stack and merge with :func:`merge_states`."""
    columns = _state_columns(specs)
    aggs = [
        state.aggregate().alias(columns[name][state_name])
        for name, spec in specs.items()
        for state_name, state in spec.states.items()
    ]
    lf = frame.lazy()
    return lf.group_by(list(by)).agg(aggs) if by else lf.select(aggs)


def merge_states(
    states: pl.LazyFrame, specs: Mapping[str, MetricSpec], by: Sequence[str]
) -> pl.LazyFrame:
    """Merge stacked state frames by group and finalize every metric, in one aggregation."""
    columns = _state_columns(specs)
    finals = [
        spec.finalize(
            {
                state_name: state.merged(pl.col(columns[name][state_name]))
                for state_name, state in spec.states.items()
            }
        ).alias(name)
        for name, spec in specs.items()
    ]
    if by:
        return states.group_by(list(by)).agg(finals).sort(list(by), nulls_last=True)
    return states.select(finals)


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
        return _run_grouped(frame, info, args, grouping, validate, shaped is not None)
    expr = info.fn(**args) if shaped is None else shaped[0].alias(info.name)
    kind = info.kind if shaped is None else "curve"
    plan = Plan(
        exprs=[expr],
        inputs=info.inputs,
        args=args,
        by=by_cols,
        validate=validate,
        undefined={info.name: info.undefined or "no defined value"} if kind == "scalar" else {},
        curves=[info.name] if kind == "curve" else [],
        structs=[info.name] if kind == "struct" and by_cols else [],
        no_rows_error=[info.name] if kind != "scalar" else [],
        extra_checks=info.check(args) if info.check is not None else [],
    )
    result = execute(frame, plan)
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


def _run_grouped(
    frame: Frame,
    info: MetricInfo,
    args: Mapping[str, Any],
    grouping: Any,
    validate: bool,
    shaped: bool,
) -> pl.DataFrame | pl.LazyFrame:
    """One metric per window (SPEC §13): its spec's states per step, merged per window."""
    from polars_eval._core.windows import plan_merged
    from polars_eval.exceptions import InvalidParameterError

    if shaped:
        raise InvalidParameterError(
            f"df.eval.{info.name} gives a table per group, not available with time=/every=: "
            f"use df.eval.{info.task}(..., metrics=[...], time=..., every=...)"
        )
    assert info.spec is not None
    merged = plan_merged({info.name: info.spec(**args)})
    plan = Plan(
        **merged.fields(grouping),
        finalize=merged.finals(),
        inputs=info.inputs,
        args=args,
        by=[],
        validate=validate,
        undefined={info.name: info.undefined or "no defined value"}
        if info.kind == "scalar"
        else {},
        curves=[info.name] if info.kind == "curve" else [],
        structs=[info.name] if info.kind == "struct" else [],
        extra_checks=info.check(args) if info.check is not None else [],
    )
    return execute(frame, plan)
