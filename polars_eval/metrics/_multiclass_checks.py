"""The data checks of the multiclass metrics (SPEC §2, §4): ``classes=``, and the rows.

:func:`check_classes` checks the ``classes=`` option when an expression is built;
:func:`data_checks` is the ``check=`` hook of every multiclass metric (``@register``): in
the namespace, labels and predictions among the classes and of their kind, probability
rows of K values in [0, 1] summing to 1 (decision scores: K finite values).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from polars_eval._exprs import F64, column_name, to_expr, to_float
from polars_eval._typing import IntoExpr, Proba
from polars_eval._validate import Check, dtype_of, is_textual
from polars_eval.exceptions import DataValidationError, InvalidParameterError

SUM_TOLERANCE = 1e-6
"""Probability rows must sum to 1 within this tolerance (SPEC §2); nothing is renormalised."""


def check_classes(classes: Any, *, required: str | None = None) -> list[Any] | None:
    """``classes`` as a list of distinct ints, strings or floats (``required`` says why)."""
    if classes is None:
        if required is not None:
            raise InvalidParameterError(f"classes= is required {required}")
        return None
    if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence | pl.Series):
        raise InvalidParameterError(
            f"classes must be a list of class ids; got {type(classes).__name__}"
        )
    values = list(classes)
    if len(values) < 2:
        raise InvalidParameterError(f"classes must hold at least 2 classes; got {values!r}")
    if any(v is None or isinstance(v, bool) for v in values) or not all(
        isinstance(v, (int, str, float)) for v in values
    ):
        raise InvalidParameterError(
            f"classes must hold ints or strings (no None, no bools); got {values!r}"
        )
    if len(set(values)) != len(values):
        raise InvalidParameterError(f"classes must be distinct; got {values!r}")
    kinds = {str if isinstance(v, str) else float if isinstance(v, float) else int for v in values}
    if len(kinds) > 1:
        raise InvalidParameterError(f"classes must all be of one type; got {values!r}")
    return values


def proba_list(proba: IntoExpr) -> pl.Expr:
    """A ``List`` or ``Array`` probability column as ``List(Float64)``.

    The cast is not strict: Polars (2.1) rejects a strict ``Array`` to ``List`` cast
    evaluated inside ``when/then`` (the rows masked out count as failed conversions), and
    ``.arr.to_list()`` would need the dtype, which an expression does not know. Numeric
    inner values convert the same either way; the namespace rejects a non-numeric inner
    dtype before anything runs.
    """
    return to_expr(proba).cast(pl.List(F64), strict=False)


def _class_checks(
    arg: str, item: IntoExpr, classes: list[Any], schema: Mapping[str, pl.DataType]
) -> list[Check]:
    """Class ids of ``item`` must be in ``classes`` (and of the same kind)."""
    dtype = dtype_of(item, schema)
    if dtype is None:
        return []
    name = column_name(item)
    textual = isinstance(classes[0], str)
    if is_textual(dtype) != textual or not (is_textual(dtype) or dtype.is_numeric()):
        raise DataValidationError(
            f'column "{name}" (argument {arg}=) holds {dtype} values but classes= holds '
            f"{type(classes[0]).__name__}s: {classes!r}"
        )
    expr = to_expr(item)
    return [
        Check(
            name,
            expr.is_not_null() & ~expr.is_in(classes),
            expr,
            f"holds classes that are not in classes={classes!r}; found {{n}} rows",
        )
    ]


def _proba_checks(
    proba: Proba, k: int, schema: Mapping[str, pl.DataType], *, scores: bool = False
) -> list[Check]:
    """Length, finiteness and range of a List/Array column, and row sums = 1 for any form
    (one column per class: finiteness and range are checked by the ``class_proba`` role).
    ``scores``: decision scores (argument ``score=``), only the length and finiteness."""
    what, arg = ("scores", "score") if scores else ("probabilities", "proba")
    if isinstance(proba, (str, pl.Expr)):
        name = column_name(proba)
        dtype = dtype_of(proba, schema)
        if dtype is None:
            return []
        if not isinstance(dtype, (pl.List, pl.Array)) or not dtype.inner.is_numeric():
            raise DataValidationError(
                f'column "{name}" (argument {arg}=) must be a List or Array of {what} '
                f"(one per class of classes=); got {dtype}"
            )
        values = proba_list(proba)
        e = pl.element()
        length = values.list.len()
        complete = values.is_not_null() & (length == k) & ~values.list.eval(e.is_null()).list.any()
        finite = complete & values.list.eval(e.is_finite()).list.all()
        shape = [
            Check(
                name,
                values.is_not_null() & (length != k),
                length,
                f"must hold {k} {what} per row (one per class of classes=); "
                "found {n} rows of another length",
            ),
            Check(
                name,
                complete & ~finite,
                values.list.sum(),
                "must hold finite numbers; found {n} rows with NaN or ±inf (row sums shown)",
            ),
        ]
        if scores:
            return shape
        return [
            *shape,
            Check(
                name,
                finite & values.list.eval((e < 0.0) | (e > 1.0)).list.any(),
                values.list.min(),
                "must hold probabilities in [0, 1]; found {n} rows with values outside "
                "(row minima shown)",
            ),
            Check(
                name,
                finite & ((values.list.sum() - 1.0).abs() > SUM_TOLERANCE),
                values.list.sum(),
                f"must hold probability rows summing to 1 (tolerance {SUM_TOLERANCE:g}); "
                "found {n} rows that do not (row sums shown)",
            ),
        ]
    if scores:
        return []
    cols = [to_float(c) for c in proba]
    names = ", ".join(column_name(c) for c in proba)
    total = pl.sum_horizontal(cols)
    finite = pl.all_horizontal([c.is_finite() for c in cols]).fill_null(False)
    return [
        Check(
            names,
            finite & ((total - 1.0).abs() > SUM_TOLERANCE),
            total,
            f"(argument proba=) must hold probability rows summing to 1 (tolerance "
            f"{SUM_TOLERANCE:g}); found {{n}} rows that do not (row sums shown)",
        )
    ]


def _schema_checks(args: Mapping[str, Any], schema: Mapping[str, pl.DataType]) -> list[Check]:
    classes = check_classes(args.get("classes"))
    if classes is None:
        return []
    checks = _class_checks("label", args["label"], classes, schema)
    if args.get("pred") is not None:
        checks += _class_checks("pred", args["pred"], classes, schema)
    if args.get("proba") is not None:
        checks += _proba_checks(args["proba"], len(classes), schema)
    if args.get("score") is not None:
        checks += _proba_checks(args["score"], len(classes), schema, scores=True)
    return checks


def data_checks(args: Mapping[str, Any]) -> list[Any]:
    """The data checks of a multiclass metric (the ``check=`` hook), given ``classes=``:
    labels and predictions among the classes, of the same kind (a ``DataValidationError``
    from the schema otherwise), and probability rows of K values in [0, 1] summing to 1
    (tolerance :data:`SUM_TOLERANCE`). Their form depends on the dtypes, so the hook
    gives one function of the frame's schema."""
    return [functools.partial(_schema_checks, dict(args))]
