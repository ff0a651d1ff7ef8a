"""The binary task method on a LazyFrame whose table keeps sorted scores or bins, run as
a bounded ``pe.Evaluation`` (SPEC §10: the state, not the rows).

``lf.eval.binary(...)`` (and ``df.eval.binary(..., bins=N)``) reach :func:`run_binary`
through the task's hook (``Task.bounded``, :class:`~polars_eval._core.tasks.Task`): the
task method builds its table; here a LazyFrame's collect runs an evaluation that takes
the lake in bounded chunks (:mod:`polars_eval.scale.chunked`) and finalizes its state
through the same table (the bins table of ``bins=``, the task table per window, the task
method on the distinct rows).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from polars_eval._core.spec import MetricSpec
from polars_eval._core.table import Specs, Table, run
from polars_eval._core.windows import Grouping
from polars_eval.exceptions import DataValidationError, UndefinedMetricError
from polars_eval.scale.evaluation import Evaluation
from polars_eval.scale.kept import W


def run_binary(frame: pl.DataFrame | pl.LazyFrame, table: Table, a: Mapping[str, Any]) -> Any:
    """``df.eval.binary`` with the arguments ``a`` (by name) and its ``table``: binned
    (``bins=``) as a binned evaluation; on a LazyFrame whose table keeps sorted scores,
    a LazyFrame whose collect runs a bounded evaluation; otherwise the table's query."""
    g, bins = a["grouping"], a["bins"]
    common = {k: a[k] for k in ("label", "score", "weight", "pos_label", "threshold")}
    common |= {"probability": a["probability"], "metrics": a["metrics"]}
    if bins is not None and g is None:
        planned = run(table, frame.lazy())
        return _binned(frame, planned, **common, baseline=a["baseline"], bins=bins, by=a["by"])
    result = run(table, frame)
    if not isinstance(frame, pl.LazyFrame) or not a["validate"]:
        return result
    assert isinstance(table.query, Specs)
    specs = dict(table.query.specs)
    if g is not None and g.windows is not None:
        return _windows_lazy(frame, result, specs, g, bins=bins, **common)
    if g is None:
        return _distinct_lazy(frame, result, specs, baseline=a["baseline"], by=table.by, **common)
    return result


def _distinct_lazy(
    frame: pl.LazyFrame, planned: pl.LazyFrame, specs: dict[str, MetricSpec], **kwargs: Any
) -> pl.LazyFrame:
    """``lf.eval.binary(...)`` on a LazyFrame whose table keeps the sorted scores (AUC,
    KS ...): a LazyFrame whose collect evaluates the distinct (group, label, score) rows
    with their summed weight (SPEC §10: the state, not the rows), as ``pe.Evaluation``
    takes a lake, in bounded chunks (:mod:`polars_eval.scale.chunked`). The same table
    (to rounding, 1e-12: the weights are summed per key first), warnings and errors.

    ``planned`` is the plain query (the planner's, over the rows): its schema is the
    result's; it is returned as it is where the table is all sums (a streaming
    aggregation per group already), where an argument is an expression rather than a
    column name, or where the schema is an error to raise at collect; and it runs where
    no row can be evaluated, to say so with the input's own row counts.
    """
    by, weight, metrics = kwargs["by"], kwargs["weight"], kwargs["metrics"]
    names = [kwargs["label"], kwargs["score"], *by, *([] if weight is None else [weight])]
    schema = _deferrable(planned, specs, names)
    if schema is None:
        return planned
    options = {k: kwargs[k] for k in ("pos_label", "threshold", "probability", "baseline")}
    if metrics is not None:
        options["metrics"] = [metrics] if isinstance(metrics, str) else list(metrics)
    label, score = kwargs["label"], kwargs["score"]

    def run() -> pl.DataFrame:
        ev = Evaluation("binary", label=label, score=score, by=by, weight=weight, **options)
        ev.update(frame)
        rows = ev.rows if ev.rows is not None else ev.model.empty()
        try:
            return rows.eval.binary(label, score, weight=W, by=by or None, **options)
        except UndefinedMetricError:
            planned.collect()  # no row to evaluate: the error with the input's row counts
            raise

    return _deferred(run, schema)


def _windows_lazy(
    frame: pl.LazyFrame,
    planned: pl.LazyFrame,
    specs: dict[str, MetricSpec],
    g: Grouping,
    **kwargs: Any,
) -> pl.LazyFrame:
    """``lf.eval.binary(..., time=, every=)`` on a LazyFrame whose table keeps sorted
    scores or bins (AUC, KS ...): a LazyFrame whose collect runs ``pe.Evaluation(...,
    time=, every=)`` over ``frame`` and computes the windows (SPEC §13 "Lakes": memory
    bounded by groups x steps x state). Polars' streaming ``group_by`` keeps the rows of
    the keys it does not find hot until the input ends, and a list state per (group,
    step) is never pre-aggregated: the plain query's memory grew with the rows (2.2 GB
    at 2e7 rows against 0.8 GB at 2e6); the evaluation takes the lake in bounded chunks
    (:mod:`polars_eval.scale.chunked`). ``planned`` (the plain query) gives the schema,
    and runs as it is where the table is all sums or an argument is an expression."""
    weight, metrics = kwargs["weight"], kwargs["metrics"]
    names = [kwargs["label"], kwargs["score"], *g.finest, g.windows.time, weight or ""]
    # min_rows counts rows, pe.Evaluation's exact state distinct (label, score) rows: with
    # min_rows= the plain query
    schema = None if g.min_rows is not None else _deferrable(planned, specs, names)
    if schema is None:
        return planned
    win = g.windows
    options = dict(kwargs)
    if metrics is not None:
        options["metrics"] = [metrics] if isinstance(metrics, str) else list(metrics)
    definition = dict(by=g.finest or None, time=win.time, every=win.every.text)
    definition["offset"] = win.offset.text

    def run() -> pl.DataFrame:
        ev = Evaluation("binary", **options, **definition).update(frame)
        sets = [list(keys) for keys in g.sets] if g.stacked else None
        return ev.compute(period=win.period.text, grouping_sets=sets, min_rows=g.min_rows)

    return _deferred(run, schema)


def _deferrable(
    planned: pl.LazyFrame, specs: dict[str, MetricSpec], names: list[Any]
) -> Mapping[str, Any] | None:
    """The schema of ``planned`` (the plain query) where a LazyFrame's table can run as a
    bounded evaluation instead: its specs keep sorted scores (a ``rows`` or ``list``
    state) and every argument in ``names`` is a column name. None where the plain query
    runs as it is: a table of sums, an expression argument, or a schema error to raise
    at collect."""
    states = [state for spec in specs.values() for state in spec.states.values()]
    if all(st.kind not in ("rows", "list") for st in states) or not all(
        isinstance(n, str) for n in names
    ):
        return None
    try:
        return planned.collect_schema()
    except DataValidationError:
        return None


def _binned(frame: pl.DataFrame | pl.LazyFrame, planned: pl.LazyFrame, **kwargs: Any) -> Any:
    """``df.eval.binary(..., bins=N)``: a binned ``pe.Evaluation`` of the frame. Where no
    row can be evaluated, ``planned`` (the exact table's query) runs to say so with the
    input's row counts (the state has none)."""

    def run() -> pl.DataFrame:
        try:
            return Evaluation("binary", **kwargs).update(frame).compute()
        except UndefinedMetricError:
            planned.collect()
            raise

    if isinstance(frame, pl.DataFrame):
        return run()
    # the result's schema: the same evaluation over no rows, grouped (a stand-in key
    # without ``by``, since an ungrouped evaluation of no rows raises "no rows")
    by = kwargs["by"] or ["__pe_all"]
    empty = pl.DataFrame(schema=frame.collect_schema()).with_columns(pl.lit(0).alias("__pe_all"))
    probe = Evaluation("binary", **{**kwargs, "by": by}).update(empty).compute()
    return _deferred(run, probe.drop("__pe_all", strict=False).schema)


def _deferred(run: Callable[[], pl.DataFrame], schema: Mapping[str, Any]) -> pl.LazyFrame:
    """A LazyFrame of ``schema`` whose collect runs ``run`` (a bounded evaluation of a
    LazyFrame: nothing is read before; its errors and warnings come at collect)."""
    return pl.defer(lambda: run().cast(dict(schema)), schema=dict(schema))  # type: ignore[arg-type]
