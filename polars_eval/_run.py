"""The machinery behind the namespace layer: validate, evaluate, report undefined values.

Every namespace method ends here. One lazy query computes the metrics (per group with
``by``) and, in the same plan, the row-level validation counts; a small function at the
end of the plan raises the validation error or the undefined-value error, or warns about
undefined groups. On a DataFrame the plan is collected at once; on a LazyFrame it is
returned, so every error of SPEC §2 surfaces at collect time.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from polars_eval._registry import MetricInfo, Role
from polars_eval._validate import check_aggs, column_problems, raise_for_checks, row_checks
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
    # extra lazy steps on the result (after validation), e.g. a second aggregation stage
    then: Callable[[pl.LazyFrame], pl.LazyFrame] | None = None
    extra_checks: list[Any] = field(default_factory=list)


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
    checks = (
        row_checks(schema, plan.args, plan.inputs) if plan.validate else []
    ) + plan.extra_checks

    # The row checks ride in the metric query itself (one pass over the data) unless a
    # second stage reshapes its result; then they are aggregated apart and cross-joined.
    inline = bool(checks) and plan.then is None
    exprs = plan.exprs + (check_aggs(checks, examples=False) if inline else [])
    query = lf.group_by(plan.by).agg(exprs) if plan.by else lf.select(exprs)
    if plan.then is not None:
        query = plan.then(query)
    out_schema = {k: v for k, v in query.collect_schema().items() if not k.startswith("__pe_bad_")}
    if checks and not inline:
        query = query.join(lf.select(check_aggs(checks, examples=False)), how="cross")
    if plan.by:
        query = query.sort(plan.by, nulls_last=True)

    by = plan.by
    undefined = {k: v for k, v in plan.undefined.items() if k in out_schema}
    strict = plan.strict

    def finish(df: pl.DataFrame) -> pl.DataFrame:
        if checks:
            raise_for_checks(df, checks, per_row=inline, source=lf)
            df = df.select(list(out_schema))
        report_undefined(df, undefined, grouped=bool(by), strict=strict)
        return df

    query = query.map_batches(finish, schema=out_schema)
    for name in plan.curves:
        query = query.explode(name).unnest(name)
    for name in plan.structs:
        query = query.unnest(name)
    return query


def report_undefined(
    df: pl.DataFrame, undefined: Mapping[str, str], *, grouped: bool, strict: bool
) -> None:
    """Raise (no groups, strict) or warn once (groups) about null metric values."""
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
    return build(frame, plan).collect()


def run_metric(
    frame: Frame, info: MetricInfo, args: Mapping[str, Any], *, by: Any, validate: bool
) -> Any:
    """Evaluate one registered metric for the namespace layer."""
    by_cols = normalize_by(by)
    expr = info.fn(**args)
    plan = Plan(
        exprs=[expr],
        inputs=info.inputs,
        args=args,
        by=by_cols,
        validate=validate,
        undefined={info.name: info.undefined or "no defined value"}
        if info.kind == "scalar"
        else {},
        curves=[info.name] if info.kind == "curve" else [],
        structs=[info.name] if info.kind == "struct" and by_cols else [],
    )
    result = execute(frame, plan)
    if isinstance(result, pl.LazyFrame) or by_cols:
        return result
    if info.kind == "scalar":
        return result.item()
    if info.kind == "struct":
        to_python = info.extra.get("to_python")
        value = result.item()
        return to_python(value) if to_python is not None else value
    return result
