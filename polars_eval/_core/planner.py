"""The planner: a set of metric specs laid out for one query, and the undefined values.

:func:`plan_specs` turns any set of metric specs into one list of state aggregations,
each state computed once however many metrics read it, and one finalizer per metric;
the table layer (:mod:`polars_eval._core.table`) runs them in one validated query.
:func:`report_undefined` and :func:`no_rows_reason` say why a value is null.
:func:`state_frame` and :func:`merge_states` are the states of specs kept per partition
and merged (SPEC §10).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from polars_eval._core.registry import Role
from polars_eval._core.spec import F64, MetricSpec, State
from polars_eval._exprs import column_name, count_true, to_expr
from polars_eval.exceptions import UndefinedMetricError, UndefinedMetricWarning

Frame = pl.DataFrame | pl.LazyFrame


def normalize_by(by: str | Sequence[str] | None) -> list[str]:
    """``by`` as a list of column names."""
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    return list(by)


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
    # each metric's value over the state columns, by name (not aliased)
    values: dict[str, pl.Expr] = field(default_factory=dict)

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
    values: dict[str, pl.Expr] = {}
    for name, spec in specs.items():
        if spec.has_rows:
            aggs[("metric", name)] = spec.expr().alias(name)
            finals.append(pl.col(name))
            values[name] = pl.col(name)
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
            values[name] = pl.col(name)
            continue
        values[name] = spec.finalize({k: pl.col(c) for k, c in columns.items()})
        finals.append(values[name].alias(name))
    return Planned(list(aggs.values()), finals, dict(specs), layout, rows, points, values)


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
