"""Shared type aliases."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import polars as pl

IntoExpr = str | pl.Expr
"""A column argument: a column name or any Polars expression."""

Proba = IntoExpr | Sequence[IntoExpr]
"""Class probabilities: one List/Array column, or one column per class."""

ZeroActuals = Literal["skip", "inf"]
