"""``pe.spark.evaluate``: a task's metrics over a Spark DataFrame, the rows staying in Spark.

The same state model as :class:`polars_eval.Evaluation` (SPEC §10), run by Spark:

1. **States per partition.** ``mapInArrow`` hands each partition's rows to Python as
   Arrow batches; each batch becomes a Polars frame, then the state rows of
   :class:`~polars_eval.Evaluation` (one row per distinct group and input values with the
   summed weight; the bins in binned mode; the rows as they are for keyed tasks), merged
   within the partition and returned as Arrow. Rows are validated here, as
   ``Evaluation.update`` validates them.
2. **Merge.** Spark shuffles the state rows by the ``by`` columns (one partition when
   there is no ``by``), so that the partial states of a group, from every input
   partition, land in one partition.
3. **Finalize on the executors.** Each partition runs the task method on the partial
   states of its groups (the summed weight as the weight: equal keys of different
   partitions add up there, as their merge rule says), one row per group, and sends back
   that small table (as Arrow IPC bytes, so that its columns and types are those of the
   one-machine result).

Spark's own ``groupBy(by + keys).agg(sum(...))`` is not used for the merge: with
continuous scores the partial states are as many as the rows and that aggregation
(a shuffle by every key) cost more than it saved; see ``benchmarks/RESULTS.md``.

Only the final per-group results reach the driver; no input row or state row does. The
result equals ``pe.Evaluation(task, ...)`` on the same rows (exact mode: to rounding,
1e-12), with the same columns, group order and warnings.

The Spark schema is checked on the driver before anything runs, so a column of the wrong
type is our :class:`~polars_eval.DataValidationError`; an error of ours raised inside an
executor (a negative weight, a label outside {0, 1}) is raised again on the driver as
the same type with the same message, not as a JVM stack trace.

pyspark is imported only when :func:`evaluate` runs (the optional extra ``spark``).
Executors need ``polars_eval`` installed, as any Python code that Spark runs.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial, wraps
from typing import Any

import polars as pl
import pyarrow as pa

from polars_eval import exceptions
from polars_eval.exceptions import DataValidationError, InvalidParameterError, PolarsEvalError
from polars_eval.scale.evaluation import Evaluation

__all__ = ["evaluate"]

_CHUNK_ROWS = 1 << 20
"""Arrow batches are gathered up to about this many rows before their state is taken."""

_RESULT = "__pe_result"  # the per-partition result, a Polars frame as Arrow IPC bytes
_WARNINGS = "__pe_warnings"  # the warnings of that partition, as JSON
_ERROR = re.compile(r"__PE_ERROR__([A-Za-z0-9_=-]+)__PE_END__")  # base64 of a JSON object
_GROUPED = re.compile(r"^(\S+) is null for (\d+) of (\d+) groups \((.*)\)$")


def evaluate(
    spark_df: Any,
    task: str,
    *,
    by: str | Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    bins: int | None = None,
    weight: str | None = None,
    **columns: Any,
) -> pl.DataFrame:
    """A task's metrics over a Spark DataFrame, computed inside Spark; one row per group.

    The arguments are those of :class:`polars_eval.Evaluation`: ``task`` is one of
    ``"binary"``, ``"multiclass"``, ``"regression"``, ``"forecast"``, ``"ranking"``;
    ``columns`` are the task method's column arguments and options by name (``label=,
    score=`` for binary …); ``metrics=None`` keeps every metric of the task; ``bins=N``
    is the binned mode of the binary task. For forecasting, ``train=`` is a Polars frame
    (the training rows, sent to the executors with the task).

    States are computed per partition from Arrow batches, merged by Spark and finalized
    per group on the executors; only the result (one row per group) is collected. The
    result is the Polars DataFrame that ``pe.Evaluation(task, ...)`` computes on the
    same rows (exact mode: equal to rounding, 1e-12).

    Examples
    --------
    >>> import polars_eval as pe
    >>> out = pe.spark.evaluate(  # doctest: +SKIP
    ...     spark.table("scores"), "binary", label="y", score="p", by="segment",
    ...     metrics=["auc", "logloss", "ks"],
    ... )
    """
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import functions as F
    except ImportError as err:  # pragma: no cover - the extra is installed in the tests
        raise ImportError(
            "pe.spark needs pyspark: install the extra with pip install 'polars-eval[spark]'"
        ) from err
    if not (hasattr(spark_df, "mapInArrow") and hasattr(spark_df, "schema")):
        raise InvalidParameterError(
            f"pe.spark.evaluate takes a pyspark DataFrame; got {type(spark_df).__name__}"
        )
    train = columns.get("train")
    if train is not None and not isinstance(train, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            "train= must be a polars DataFrame or LazyFrame (the training rows, sent to the "
            f"executors with the task); got {type(train).__name__}"
        )
    ev = Evaluation(task, by=by, metrics=metrics, bins=bins, weight=weight, **columns)

    # the Spark schema, checked on the driver: missing columns and wrong types are ours
    names = ev._inputs()
    empty = _empty_frame(spark_df.schema, names)
    ev._check(empty.lazy())
    state_schema = ev._batch_rows(empty.lazy()).collect_schema()
    spark_state_schema, arrow_state_schema = _spark_schema(state_schema)

    selected = spark_df.select(*[F.col(_quote(name)) for name in names])
    states = selected.mapInArrow(
        partial(_partition_states, ev, arrow_state_schema), spark_state_schema
    )
    d = ev._def
    routed = states.repartition(*[F.col(_quote(b)) for b in d.by]) if d.by else None
    routed = routed if routed is not None else states.repartition(1)
    results = routed.mapInArrow(
        partial(_partition_results, ev), f"{_RESULT} binary, {_WARNINGS} string"
    )
    try:
        collected = results.collect()
    except Exception as err:
        ours = _our_error(err)
        if ours is None:
            raise
        raise ours from None

    frames = [pl.read_ipc(io.BytesIO(bytes(row[_RESULT]))) for row in collected]
    if not frames:
        # no rows at all: what pe.Evaluation says about an evaluation that saw none
        return ev.compute()
    out = pl.concat(frames, how="vertical_relaxed") if len(frames) > 1 else frames[0]
    if d.by:
        out = out.sort(list(d.by), nulls_last=True)
    _warn_again([json.loads(row[_WARNINGS]) for row in collected], out.height)
    return out


# -- driver helpers ----------------------------------------------------------------------


def _quote(name: str) -> str:
    """A column name as Spark reads it literally (dots and spaces included)."""
    return "`" + name.replace("`", "``") + "`"


def _empty_frame(spark_schema: Any, names: Sequence[str]) -> pl.DataFrame:
    """An empty Polars frame with the types the executors will see for ``names``."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for field in spark_schema.fields:
        if field.name not in names:
            continue
        try:
            arrow_type = to_arrow_type(field.dataType)
        except Exception as err:
            raise DataValidationError(
                f'column "{field.name}" has the Spark type {field.dataType.simpleString()}, '
                "which has no Arrow form; expected a number, string, boolean, date or "
                "timestamp column"
            ) from err
        fields.append(pa.field(field.name, arrow_type))
    frame = pl.from_arrow(pa.schema(fields).empty_table())
    assert isinstance(frame, pl.DataFrame)
    return frame


def _spark_schema(schema: pl.Schema) -> tuple[Any, pa.Schema]:
    """The Spark schema of the state rows, and the Arrow schema that Spark expects."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    arrow = pl.DataFrame(schema=schema).to_arrow(compat_level=pl.CompatLevel.oldest()).schema
    spark_schema = from_arrow_schema(arrow)
    return spark_schema, to_arrow_schema(spark_schema)


def _our_error(err: BaseException) -> PolarsEvalError | None:
    """Our error, when the text of a Spark/Py4J error carries one raised on an executor."""
    match = _ERROR.search(str(err))
    if match is None:
        return None
    raw = json.loads(base64.urlsafe_b64decode(match.group(1)))
    cls = getattr(exceptions, raw["type"], None)
    if not (isinstance(cls, type) and issubclass(cls, PolarsEvalError)):
        cls = PolarsEvalError
    return cls(raw["message"])


def _warn_again(per_partition: list[list[list[str]]], n_groups: int) -> None:
    """The executors' warnings once, the per-group counts summed as one machine counts."""
    counts: dict[str, list[Any]] = {}  # metric -> [nulls, reason]
    others: dict[tuple[str, str], None] = {}
    for caught in per_partition:
        for category, message in caught:
            parts = [_GROUPED.match(p) for p in message.split("; ")]
            if category == "UndefinedMetricWarning" and all(parts):
                for m in parts:
                    assert m is not None
                    entry = counts.setdefault(m.group(1), [0, m.group(4)])
                    entry[0] += int(m.group(2))
            else:
                others[(category, message)] = None
    if counts:
        text = "; ".join(
            f"{name} is null for {n} of {n_groups} groups ({why})"
            for name, (n, why) in counts.items()
        )
        warnings.warn(text, exceptions.UndefinedMetricWarning, stacklevel=3)
    for category, message in others:
        cls = getattr(exceptions, category, None)
        if not (isinstance(cls, type) and issubclass(cls, Warning)):
            cls = UserWarning
        warnings.warn(message, cls, stacklevel=3)


# -- executor functions (run by Spark on the workers) -------------------------------------


def _ours(fn: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    """Our errors raised with their type and message in a form the driver finds again."""

    @wraps(fn)  # the same name: Spark pickles the function by reference
    def run(*args: Any) -> Iterator[Any]:
        try:
            yield from fn(*args)
        except PolarsEvalError as err:
            raw = json.dumps({"type": type(err).__name__, "message": str(err)})
            payload = base64.urlsafe_b64encode(raw.encode()).decode()
            text = f"{type(err).__name__}: {err} __PE_ERROR__{payload}__PE_END__"
            raise RuntimeError(text) from None

    return run


@_ours
def _partition_states(
    ev: Evaluation, schema: pa.Schema, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow: the merged state rows of one partition's rows."""
    parts: list[pl.DataFrame] = []
    buffer: list[pa.RecordBatch] = []
    n = 0
    for batch in batches:
        buffer.append(batch)
        n += batch.num_rows
        if n >= _CHUNK_ROWS:
            parts.append(ev._state_rows(pa.Table.from_batches(buffer)))
            buffer, n = [], 0
    if buffer:
        parts.append(ev._state_rows(pa.Table.from_batches(buffer)))
    if not parts:
        return
    rows = ev._merge_rows(parts) if len(parts) > 1 else parts[0]
    table = rows.to_arrow(compat_level=pl.CompatLevel.oldest()).cast(schema)
    yield from table.to_batches(max_chunksize=1 << 16)


@_ours
def _partition_results(
    ev: Evaluation, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow: the task's table for the groups of one partition (whole groups)."""
    received = [b for b in batches if b.num_rows]
    if not received:
        return
    frame = pl.from_arrow(pa.Table.from_batches(received))
    assert isinstance(frame, pl.DataFrame)
    local = copy.copy(ev)
    # the partial states of every input partition that holds these groups: the task method
    # sums equal keys itself (as merging first would), so they are not re-aggregated here
    local._rows = frame
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = local.compute()
    buffer = io.BytesIO()
    out.write_ipc(buffer)
    seen = [[w.category.__name__, str(w.message)] for w in caught]
    yield pa.RecordBatch.from_pydict(
        {_RESULT: [buffer.getvalue()], _WARNINGS: [json.dumps(seen)]},
        schema=pa.schema([(_RESULT, pa.binary()), (_WARNINGS, pa.string())]),
    )
