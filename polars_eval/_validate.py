"""Data validation for the namespace layer (SPEC §2 "Validation").

Schema problems (missing column, wrong dtype, string labels without ``pos_label``) are
found from the schema alone. Row problems (labels outside {0, 1}, NaN/inf, probabilities
outside [0, 1], negative weights) become :class:`Check` objects: an aggregation counting
the bad rows and a few example values, computed in the same query as the metric and
turned into an error before the result is returned (at collect time on a LazyFrame).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_eval._exprs import column_name, count_true, to_expr
from polars_eval._typing import Role
from polars_eval.exceptions import DataValidationError

N_EXAMPLES = 3


@dataclass(frozen=True)
class Check:
    """A row-level check: rows where ``bad`` is true are an error described by ``problem``."""

    column: str
    bad: pl.Expr
    values: pl.Expr
    problem: str  # e.g. "must hold 0/1 or booleans for a binary metric; found {n} rows with other values"

    def message(self, n: int, examples: Sequence[Any]) -> str:
        shown = ", ".join(_show(v) for v in examples)
        return f'column "{self.column}" {self.problem.format(n=n)}, e.g. [{shown}]'


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.Boolean


def is_textual(dtype: pl.DataType) -> bool:
    return dtype in (pl.String, pl.Categorical) or isinstance(dtype, (pl.Categorical, pl.Enum))


def _float_bad(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr | None:
    """Rows holding NaN or +-inf (only floats can)."""
    if dtype.is_float():
        return ~expr.is_finite() & expr.is_not_null()
    return None


def column_problems(
    schema: Mapping[str, pl.DataType], args: Mapping[str, Any], inputs: Mapping[str, Role]
) -> list[str]:
    """Schema-level problems of the column arguments, as messages."""
    problems: list[str] = []
    for arg, role, value in _given(args, inputs):
        for item in _columns(value):
            roots = [item] if isinstance(item, str) else item.meta.root_names()
            missing = [r for r in roots if r not in schema]
            if missing:
                available = ", ".join(list(schema)[:12])
                problems.append(
                    f'column "{missing[0]}" (argument {arg}=) not found; available columns: {available}'
                )
                continue
            if not isinstance(item, str):
                continue
            dtype = schema[item]
            per_class = role in ("class_proba", "class_score")
            if role in ("key", "row_id") or (per_class and not isinstance(value, (list, tuple))):
                continue  # (one List/Array column of class probabilities: the check= hook)
            pos_label = args.get("pos_label")
            if role == "binary_label" and pos_label is not None:
                if is_textual(dtype) != isinstance(pos_label, str):
                    problems.append(
                        f'pos_label={pos_label!r} cannot be a label of column "{item}", which '
                        f"holds {dtype} labels; pass one of its values"
                    )
                    continue
            if role == "binary_label" and is_textual(dtype):
                if pos_label is None:
                    problems.append(
                        f'column "{item}" holds {dtype} labels; pass pos_label= to say which value is the positive class'
                    )
                continue
            if not _is_numeric(dtype):
                problems.append(
                    f'column "{item}" (argument {arg}=) must be numeric or boolean; got {dtype}'
                )
    return problems


def row_checks(
    schema: Mapping[str, pl.DataType], args: Mapping[str, Any], inputs: Mapping[str, Role]
) -> list[Check]:
    """Row-level checks of the column arguments, by role."""
    return [
        check
        for arg, role, value in _given(args, inputs)
        for check in _argument_checks(arg, role, value, schema, args)
    ]


def _argument_checks(
    arg: str, role: Role, value: Any, schema: Mapping[str, pl.DataType], args: Mapping[str, Any]
) -> list[Check]:
    """The row checks of one column argument (its value not None)."""
    if role in ("key", "row_id"):
        return _class_id_checks(value, schema) if role == "key" and arg in CLASS_ARGS else []
    if role in ("class_proba", "class_score"):  # a List/Array column: the check= hook
        if not isinstance(value, (list, tuple)):
            return []
        role = "proba" if role == "class_proba" else "score"
    return [c for item in _columns(value) for c in _checks_for(item, role, schema, args)]


def _given(args: Mapping[str, Any], inputs: Mapping[str, Role]) -> list[tuple[str, Role, Any]]:
    """(argument, role, value) of each input given a value (not None)."""
    return [(arg, role, args[arg]) for arg, role in inputs.items() if args.get(arg) is not None]


def _columns(value: Any) -> list[str | pl.Expr]:
    """The columns an argument names: a name or an expression, or a list of them (a value
    of another kind, such as None, names none)."""
    values = value if isinstance(value, (list, tuple)) else [value]
    return [item for item in values if isinstance(item, (str, pl.Expr))]


CLASS_ARGS = ("label", "pred")
"""Arguments that hold class ids where their role is ``key`` (multiclass labels and
predictions): float class ids must be finite (NaN is a prediction, never a class)."""


def dtype_of(item: Any, schema: Mapping[str, pl.DataType]) -> pl.DataType | None:
    """The dtype of a column argument (a name or an expression); None when it cannot be
    resolved (a missing column: the query reports it)."""
    if isinstance(item, str):
        return schema.get(item)
    try:
        return pl.LazyFrame(schema=schema).select(to_expr(item)).collect_schema().dtypes()[0]
    except Exception:  # noqa: BLE001 - leave it to the query to fail
        return None


def _class_id_checks(item: Any, schema: Mapping[str, pl.DataType]) -> list[Check]:
    """NaN or ±inf class ids (a float label or prediction column) are an error (SPEC §2,
    BAD_INPUTS 2): a NaN prediction would count as a wrong class, a silent number."""
    if not isinstance(item, (str, pl.Expr)):
        return []
    expr = to_expr(item)
    dtype = dtype_of(item, schema)
    if dtype is None:
        return []
    bad = _float_bad(expr, dtype)
    if bad is None:
        return []
    problem = "must hold finite class ids; found {n} rows with NaN or ±inf"
    return [Check(column_name(item), bad, expr, problem)]


def _checks_for(
    item: Any, role: Role, schema: Mapping[str, pl.DataType], args: Mapping[str, Any]
) -> list[Check]:
    name = column_name(item)
    expr = to_expr(item)
    dtype = dtype_of(item, schema)
    if dtype is None:
        return []
    out: list[Check] = []
    if role == "binary_label" and args.get("pos_label") is not None:
        return [_pos_label_check(name, expr, args["pos_label"])]
    if role in ("binary_label", "binary_pred"):
        if is_textual(dtype):
            return []
        if dtype == pl.Boolean:
            return []
        bad = expr.is_not_null() & ~expr.cast(pl.Float64).is_in([0.0, 1.0])
        what = "labels" if role == "binary_label" else "predictions"
        out.append(
            Check(
                name,
                bad,
                expr,
                f"must hold 0/1 or booleans as binary {what}; found {{n}} rows with other values",
            )
        )
        return out
    if not _is_numeric(dtype):
        return []
    f = expr.cast(pl.Float64)
    nonfinite = _float_bad(f, dtype)
    if nonfinite is not None:
        out.append(
            Check(
                name, nonfinite, expr, "must hold finite numbers; found {n} rows with NaN or ±inf"
            )
        )
    if role in RANGES:
        outside, problem = RANGES[role]
        finite = f.is_finite() & f.is_not_null()
        out.append(Check(name, finite & outside(f), expr, problem))
    return out


RANGES: dict[str, tuple[Callable[[pl.Expr], pl.Expr], str]] = {
    "proba": (
        lambda f: (f < 0.0) | (f > 1.0),
        "must hold probabilities in [0, 1]; found {n} rows outside",
    ),
    "weight": (lambda f: f < 0.0, "must hold non-negative weights; found {n} negative rows"),
    "relevance": (lambda f: f < 0.0, "must hold relevance grades >= 0; found {n} negative rows"),
    "positive": (
        lambda f: f <= -1.0,
        "must hold values > -1 for a logarithmic error; found {n} rows <= -1",
    ),
}
"""The range of the numeric roles that have one: (the finite values outside it, the problem)."""


def resolve_checks(items: Sequence[Any], schema: Mapping[str, pl.DataType]) -> list[Check]:
    """Extra data checks (a metric's ``check=`` hook) as Check objects: an item is a Check,
    or a function of the frame's schema giving Checks (it may raise DataValidationError)."""
    return [c for item in items for c in (item(schema) if callable(item) else [item])]


def _pos_label_check(name: str, label: pl.Expr, pos_label: Any) -> Check:
    """``pos_label`` absent from labels that take two or more values (as scikit-learn).

    Labels of one value only may lack the positive class (a group with no positive row);
    two values or more, none of them ``pos_label``, mean a wrong ``pos_label``.
    """
    absent = ~(label == pos_label).fill_null(False).any()
    several = label.drop_nulls().n_unique() >= 2
    return Check(
        name,
        label.is_not_null() & absent & several,
        label,
        f"does not hold pos_label={pos_label!r} among its labels; "
        "found {n} rows, all with other labels",
    )


def check_aggs(checks: Sequence[Check], *, examples: bool = True) -> list[pl.Expr]:
    """Aggregations counting the bad rows of each check (and keeping a few examples).

    Without ``examples`` only the counts are aggregated (cheap in a ``group_by``); the
    examples are then fetched from the source by :func:`raise_for_checks` on failure only.
    """
    aggs: list[pl.Expr] = []
    for i, check in enumerate(checks):
        aggs.append(count_true(check.bad).alias(f"__pe_bad_{i}"))
        if examples:
            aggs.append(_examples(check).implode().alias(f"__pe_ex_{i}"))
    return aggs


def _examples(check: Check) -> pl.Expr:
    bad = check.bad.fill_null(False)
    return check.values.filter(bad).unique(maintain_order=True).head(N_EXAMPLES).cast(pl.String)


def raise_for_checks(
    result: pl.DataFrame,
    checks: Sequence[Check],
    *,
    per_row: bool = False,
    source: pl.LazyFrame | None = None,
) -> None:
    """Raise the first failed check found in a collected result.

    ``per_row``: each result row (group) holds its own counts, to be added up; otherwise
    the one-row check frame was cross-joined onto every row: read the first. ``source``:
    the data, to fetch example values from when the result holds counts only.
    """
    for i, check in enumerate(checks):
        counts = result.get_column(f"__pe_bad_{i}")
        if not per_row:
            counts = counts.head(1)
        n = int(counts.sum() or 0)
        if not n:
            continue
        if source is not None:
            shown = source.select(_examples(check)).collect().to_series().to_list()
        else:
            examples = result.get_column(f"__pe_ex_{i}")
            examples = examples if per_row else examples.head(1)
            shown = examples.explode().drop_nulls().unique(maintain_order=True).to_list()
        raise DataValidationError(check.message(n, shown[:N_EXAMPLES]))
