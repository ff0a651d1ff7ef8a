"""Shared type aliases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import polars as pl

IntoExpr = str | pl.Expr
"""A column argument: a column name or any Polars expression."""

Proba = IntoExpr | Sequence[IntoExpr]
"""Class probabilities: one List/Array column, or one column per class."""

ZeroActuals = Literal["skip", "inf"]

Role = Literal[
    "binary_label",  # 0/1, bool, or str/categorical with pos_label=
    "binary_pred",  # hard 0/1 predictions
    "score",  # any finite real score (order-only metrics)
    "proba",  # a probability in [0, 1]
    "class_proba",  # class probabilities: one List/Array column (checked by the metric's
    # check= hook) or one column per class (each checked as "proba")
    "class_score",  # decision scores per class, in the same forms (each column as "score")
    "numeric",  # any finite real value (regression targets and predictions)
    "weight",  # finite, >= 0
    "key",  # an identifier column of any dtype (query, series, item, class label)
    "row_id",  # names rows only (an item id for the duplicate check): a null drops no row
    "relevance",  # a finite relevance grade >= 0
    "positive",  # a finite value > -1 (logarithmic errors)
]
"""The role of an input column: what its values must be (checked by ``_validate``)."""


class Interval(NamedTuple):
    """A metric value with its confidence interval (``df.eval.<metric>(..., ci=...)``)."""

    value: float | None
    lower: float | None
    upper: float | None
