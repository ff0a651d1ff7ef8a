"""Shared type aliases."""

from __future__ import annotations

from typing import Literal

import polars as pl

IntoExpr = str | pl.Expr
"""A column argument: a column name or any Polars expression."""

Ties = Literal["average", "first"]
ZeroActuals = Literal["skip", "inf"]
Average = Literal["micro", "macro", "weighted"]
