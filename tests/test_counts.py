"""Counts of flags are exact at any size (BAD_INPUTS 40, SPEC §2 "Dtypes").

Polars sums a boolean to its index type: UInt32 in the 32-bit runtime this package runs
on, which wraps past 2^32 rows when a streaming or partitioned aggregation adds the
morsels up (a cast *after* the sum only widens the wrapped value). Every count of flags
(validation counts, row counts, zero actuals, duplicate keys, McNemar's discordant pairs,
the TREC counts) must cast to a 64-bit type before it sums. The data to show a wrap would
need 2^32 rows, so these tests read the expression trees: no ``sum`` takes a boolean or
32-bit integer input.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import polars as pl
import pytest

import polars_eval as pe
from polars_eval import _validate
from polars_eval._core import planner
from polars_eval._core.registry import REGISTRY
from polars_eval.io import trec
from polars_eval.metrics.regression import zero_actual_count
from polars_eval.report import tables

NARROW = (pl.Boolean, pl.UInt8, pl.UInt16, pl.UInt32, pl.Int8, pl.Int16, pl.Int32)
PACKAGE = Path(pe.__file__).resolve().parent

SCHEMA = {
    "y": pl.Int64,
    "b": pl.Boolean,
    "s": pl.Float64,
    "s2": pl.Float64,
    "w": pl.Float64,
    "rel": pl.Int64,
    "relevance": pl.Int64,
    "score": pl.Float64,
    "doc": pl.String,
    "query": pl.String,
}


def _nodes(expr: pl.Expr) -> Iterator[pl.Expr]:
    yield expr
    for child in expr.meta.pop():
        yield from _nodes(child)


def narrow_sums(expr: pl.Expr, schema: Mapping[str, pl.DataType] = SCHEMA) -> list[str]:
    """The ``sum`` nodes of ``expr`` whose input is a boolean or a 32-bit-or-less integer."""
    frame = pl.LazyFrame(schema=schema)
    found = []
    for node in _nodes(expr):
        inputs = node.meta.pop()
        if not str(node).endswith(".sum()") or len(inputs) != 1:
            continue
        dtype = frame.select(inputs[0].alias("__in")).collect_schema()["__in"]
        if dtype in NARROW:
            found.append(f"{dtype}: {str(node)[:200]}")
    return found


def test_the_detector_sees_a_boolean_sum() -> None:  # the test's own tool can fail
    flag = pl.col("s") > 0.5
    assert narrow_sums(flag.sum().cast(pl.Int64))
    assert narrow_sums(pl.col("b").sum())
    assert not narrow_sums(flag.cast(pl.Int64).sum())


def test_validation_counts_cast_before_summing() -> None:
    inputs = {"label": "binary_label", "score": "score", "weight": "weight"}
    args = {"label": "y", "score": "s", "weight": "w"}
    checks = _validate.row_checks(SCHEMA, args, inputs)
    assert checks
    for expr in _validate.check_aggs(checks):
        assert not narrow_sums(expr), narrow_sums(expr)


def test_row_counts_cast_before_summing() -> None:
    counts = planner.row_counts({"label": "y", "score": "s", "weight": "w"}, REGISTRY["auc"].inputs)
    assert counts
    for expr in counts:
        assert not narrow_sums(expr), narrow_sums(expr)


def test_zero_actuals_and_report_counts_cast_before_summing() -> None:
    assert not narrow_sums(zero_actual_count("s", "s2", weight="w"))
    assert not narrow_sums(zero_actual_count("s", "s2"))
    for expr in tables._row_count_aggs(["y", "s"], "w", positives=pl.col("y").cast(pl.Float64)):
        assert not narrow_sums(expr), narrow_sums(expr)


def test_mcnemar_counts_cast_before_summing() -> None:
    expr = pe.mcnemar("y", "s", "s2")
    assert not narrow_sums(expr), narrow_sums(expr)


def test_trec_counts_cast_before_summing() -> None:
    for expr in trec._count_aggs(level=1):
        assert not narrow_sums(expr), narrow_sums(expr)


@pytest.mark.parametrize("weighted", [False, True])
def test_mean_over_queries_counts_cast_before_summing(weighted: bool) -> None:
    from polars_eval.metrics.ranking import engine as rk
    from polars_eval.tasks import ranking

    names = ["ndcg"]
    schema = {"ndcg": pl.Float64, rk.NREL: pl.Float64, ranking.WEIGHT: pl.Float64}
    for expr in ranking._partial_sums(names, weighted=weighted, counts=True, zero_counts=False):
        assert not narrow_sums(expr, schema), narrow_sums(expr, schema)


def test_no_sum_of_flags_is_cast_after_summing() -> None:
    """Source check: ``<flags>.sum().cast(...)`` is the wrapping form; counts go through
    ``_exprs.count_true`` (or cast first). Float state columns summed and cast are fine,
    but none is written that way today, so the pattern stays out of the package."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "cast":
                continue
            inner = node.func.value
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr in ("sum", "count")
                and not inner.args
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, found
