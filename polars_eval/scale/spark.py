"""``pe.spark.evaluate``: a task's metrics over a Spark DataFrame, the rows staying in Spark.

The same state model as :class:`polars_eval.Evaluation` (SPEC §10), run by Spark in two
Python stages and one shuffle of a few binary rows:

1. **States per partition.** Spark's JVM converts each partition's rows (only the
   columns the task reads) to Arrow record batches (``toArrowBatchRdd``, what
   ``toPandas`` collects) and the batches reach the Python workers as bytes through an
   RDD: a third of the CPU of ``mapInArrow``'s input path, which stays the way in for a
   DataFrame without a JVM Dataset (Spark Connect). The batches are gathered into chunks
   of about a million rows; each chunk becomes the state rows of
   :class:`~polars_eval.Evaluation` (one row per distinct group and input values with
   the summed weight; the bins in binned mode; the metrics' own states where they are
   bounded; the rows as they are for keyed tasks), validated as ``Evaluation.update``
   validates them. Where the distinct rows do not pay (by an estimate of their number in
   a partition's first chunk, more than half its rows: continuous scores), the rows are
   the state as they are, each with its weight: an unmerged state, which the finalize
   sums as it sums equal keys of different partitions. The state rows are hashed by the
   ``by`` columns (in Polars) to one of ``partitions`` targets, and each target's rows
   leave Python as **one zstd-compressed Arrow IPC blob** (integers narrowed): Spark
   shuffles one binary row per (chunk, target), not the state rows.
2. **Merge.** The blobs are partitioned by their target (``RDD.partitionBy``; on the
   ``mapInArrow`` path, a repartition by a target number chosen on the driver so that
   Spark's hash partitioning sends target ``i`` to partition ``i``), so ``partitions``
   tasks share the groups evenly.
3. **Finalize on the executors.** Each partition decodes its blobs and runs the task
   method on the partial states of its groups (the summed weight as the weight: equal
   keys of different partitions add up there, as their merge rule says), asking it for
   only the ``metrics=`` requested, one row per group, and sends back that small table
   (as Arrow IPC bytes, so that its columns and types are those of the one-machine
   result). Without ``by`` every state goes to one partition.

Spark's own ``groupBy(by + keys).agg(sum(...))`` is not used for the merge: with
continuous scores the partial states are as many as the rows and that aggregation
(a shuffle by every key) cost more than it saved; see ``benchmarks/RESULTS.md``.

Only the final per-group results reach the driver; no input row or state row does. The
result equals ``pe.Evaluation(task, ...)`` on the same rows (exact mode: to rounding,
1e-12), with the same columns, group order and warnings.

The Spark schema is checked on the driver before anything runs, so a column of the wrong
type, missing, or named twice (after a join) is our
:class:`~polars_eval.DataValidationError`; an error of ours raised inside an
executor (a negative weight, a label outside {0, 1}) is raised again on the driver as
the same type with the same message, not as a JVM stack trace.

pyspark is imported only when :func:`evaluate` runs (the optional extra ``spark``).
Executors need ``polars_eval`` installed, as any Python code that Spark runs, with the
driver's Polars version (the groups are hashed to their partition by Polars on each
executor; the driver refuses a result where two executors disagreed).
"""

from __future__ import annotations

import base64
import io
import json
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial, wraps
from typing import Any

import polars as pl
import pyarrow as pa

from polars_eval import exceptions
from polars_eval._validate import check_aggs, raise_for_checks
from polars_eval.exceptions import (
    DataValidationError,
    ExecutorImportError,
    InvalidParameterError,
    PolarsEvalError,
)
from polars_eval.scale.evaluation import Evaluation
from polars_eval.scale.kept import W

__all__ = ["evaluate"]

_CHUNK_ROWS = 1 << 20
"""Arrow batches are gathered up to about this many rows before their state is taken."""
_KEEP_ROWS = 0.5
"""The distinct rows are kept where the first chunk's state has at most this share of its
rows; above it, a partition sends its rows as they are (with their weights)."""

_FILTER_TARGETS = 16
"""Up to this many target partitions, a chunk's state rows are split by a filter each."""

_TARGET = "__pe_target"  # the Spark partition that merges a blob's state rows
_BLOB = "__pe_blob"  # state rows of one chunk and target, as zstd Arrow IPC bytes
_RESULT = "__pe_result"  # the per-partition result, a Polars frame as Arrow IPC bytes
_WARNINGS = "__pe_warnings"  # the warnings of that partition, as JSON
_ERROR = re.compile(r"__PE_ERROR__([A-Za-z0-9_=-]+)__PE_END__")  # base64 of a JSON object
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
_RUNTIME = ("polars_eval", "polars", "pyarrow", "numpy", "scipy")
"""polars_eval and its runtime dependencies: what the executors' Python must import."""
_GROUPED = re.compile(r"^(\S+) is null for (\d+) of (\d+) groups \((.*)\)$")


def evaluate(
    spark_df: Any,
    task: str,
    *,
    by: str | Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    bins: int | None = None,
    weight: str | None = None,
    partitions: int | None = None,
    ci: str | None = None,
    level: float = 0.95,
    n_resamples: int | None = None,
    seed: int | None = None,
    **columns: Any,
) -> pl.DataFrame:
    """A task's metrics over a Spark DataFrame, computed inside Spark; one row per group.

    The arguments are those of :class:`polars_eval.Evaluation`: ``task`` is one of
    ``"binary"``, ``"multiclass"``, ``"regression"``, ``"forecast"``, ``"ranking"``;
    ``columns`` are the task method's column arguments and options by name (``label=,
    score=`` for binary …); ``metrics=None`` keeps every metric of the task; ``bins=N``
    is the binned mode of the binary task. For forecasting, ``train=`` is a Polars frame
    (the training rows, sent to the executors with the task). ``partitions=`` is the
    number of Spark tasks that finalize the groups of ``by`` (default: the Spark
    context's default parallelism); without ``by`` one task finalizes.

    ``ci="t"`` (ranking and forecasting, SPEC §14) adds each mean's interval over
    queries or series (``<metric>_lower``, ``<metric>_upper``), as
    ``pe.Evaluation(...).compute(ci="t")``; ``ci="bootstrap"`` resamples them
    (``n_resamples=``, ``seed=``). Each group is finalized whole on one executor, so both
    equal the one-machine result.

    States are computed per partition from Arrow batches, merged by Spark and finalized
    per group on the executors; only the result (one row per group) is collected. The
    executors' Python must import polars_eval (and polars, pyarrow): where it cannot (a
    worker Python other than the driver's, an executor without the package), the error
    is :class:`~polars_eval.exceptions.ExecutorImportError`, saying how to fix it. The
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
    if partitions is not None and (
        isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1
    ):
        raise InvalidParameterError(f"partitions must be a positive integer; got {partitions!r}")
    train = columns.get("train")
    if train is not None and not isinstance(train, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            "train= must be a polars DataFrame or LazyFrame (the training rows, sent to the "
            f"executors with the task); got {type(train).__name__}"
        )
    # the interval is the default of compute() (the definition's), sent to the executors
    interval = {} if ci is None else {"ci": ci, "level": level}
    interval |= {} if ci is None else {"n_resamples": n_resamples, "seed": seed}
    ev = Evaluation(task, by=by, metrics=metrics, bins=bins, weight=weight, **interval, **columns)

    # the Spark schema, checked on the driver: missing, repeated, mistyped columns are ours
    names = ev.model.inputs
    timezone = spark_df.sparkSession.conf.get("spark.sql.session.timeZone")
    empty = _empty_frame(spark_df.schema, names, timezone)
    ev.check(empty.lazy())

    d = ev.definition
    n = (partitions or _default_parallelism(spark_df)) if d.by else 1
    selected = spark_df.select(*[F.col(_quote(name)) for name in names])
    schema = dict(ev.batch_rows(empty.lazy()).collect_schema())  # the state's types
    try:
        collected = _run(selected, ev, n, schema)
    except Exception as err:
        ours = _our_error(err) or _missing_on_executors(err)
        if ours is None:
            raise
        raise ours from None

    frames = [pl.read_ipc(io.BytesIO(result)) for result, _ in collected]
    if not frames:
        # no rows at all: what pe.Evaluation says about an evaluation that saw none
        return ev.compute()
    out = pl.concat(frames, how="vertical_relaxed") if len(frames) > 1 else frames[0]
    if d.by:
        if out.select(pl.struct(list(d.by)).is_duplicated().any()).item():
            raise PolarsEvalError(
                "the executors sent a group's state rows to different partitions: they "
                "hash groups differently (executors need the driver's Polars version, "
                f"{pl.__version__})"
            )
        out = out.sort(list(d.by), nulls_last=True)
    _warn_again([json.loads(caught) for _, caught in collected], out.height)
    return out


# -- driver helpers ----------------------------------------------------------------------


def _run(
    selected: Any, ev: Evaluation, n: int, schema: Mapping[str, pl.DataType]
) -> list[tuple[bytes, str]]:
    """Every partition's (result as Arrow IPC bytes, warnings as JSON), computed by Spark."""
    arrow = _arrow_rdd(selected)
    if arrow is not None:
        batches, arrow_schema = arrow
        pairs = batches.mapPartitions(partial(_rdd_blobs, ev, n, arrow_schema))
        routed = pairs.partitionBy(n, _identity)
        return routed.mapPartitions(partial(_rdd_results, ev, schema)).collect()
    # a DataFrame without a JVM Dataset (Spark Connect): Spark's Arrow UDFs, a shuffle of
    # the blobs by their target number, placed so that target i lands in partition i
    from pyspark.sql import functions as F

    keys = partition_keys(n)
    blobs = selected.mapInArrow(
        partial(_partition_blobs, ev, keys), f"{_TARGET} int, {_BLOB} binary"
    )
    results = blobs.repartition(n, F.col(_TARGET)).mapInArrow(
        partial(_partition_results, ev, schema), f"{_RESULT} binary, {_WARNINGS} string"
    )
    return [(bytes(row[_RESULT]), row[_WARNINGS]) for row in results.collect()]


def _arrow_rdd(df: Any) -> tuple[Any, pa.Schema] | None:
    """The rows of ``df`` as an RDD of Arrow record batches (IPC messages without their
    schema) and that schema, or None where ``df`` has no JVM Dataset (Spark Connect) or
    this pyspark lacks the parts used.

    Spark's JVM converts the rows to Arrow itself (``toArrowBatchRdd``, what ``toPandas``
    collects), and the batches reach the Python workers as bytes: a third of the CPU that
    ``mapInArrow`` spends handing the same rows to Python (``benchmarks/RESULTS.md``). The
    schema is the one Spark writes for those batches (its session time zone for
    timestamps, its large-types setting for strings).
    """
    try:
        from pyspark import RDD
        from pyspark.serializers import NoOpSerializer
        from pyspark.sql.pandas.types import to_arrow_schema

        session = df.sparkSession
        conf = session.conf
        schema = to_arrow_schema(
            df.schema,
            timezone=conf.get("spark.sql.session.timeZone"),
            prefers_large_types=conf.get("spark.sql.execution.arrow.useLargeVarTypes", "false")
            == "true",
        )
        jrdd = df._jdf.toArrowBatchRdd().toJavaRDD()
        return RDD(jrdd, session.sparkContext, NoOpSerializer()), schema
    except Exception:  # no _jdf (Spark Connect), another pyspark: the mapInArrow path
        return None


def _identity(target: int) -> int:
    """The partition of a blob: its target (``RDD.partitionBy`` takes it modulo n)."""
    return target


def _quote(name: str) -> str:
    """A column name as Spark reads it literally (dots and spaces included)."""
    return "`" + name.replace("`", "``") + "`"


def _default_parallelism(spark_df: Any) -> int:
    """The Spark context's default parallelism (the shuffle partitions where there is no
    context, as with Spark Connect)."""
    session = spark_df.sparkSession
    try:
        return max(1, int(session.sparkContext.defaultParallelism))
    except Exception:
        return max(1, int(session.conf.get("spark.sql.shuffle.partitions")))


def _murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3Hash`` of a 32-bit integer (``hash(col)``, the hash by which
    ``repartition(n, col)`` places a row: ``pmod(hash, n)``), as a signed integer."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k1 = rotl((value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
    h1 = (rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def partition_keys(n: int) -> list[int]:
    """For each of ``n`` partitions, an integer that ``repartition(n, col)`` sends there:
    target ``i``'s blobs then land in partition ``i``, one target per Spark task (a plain
    ``0 … n-1`` would share partitions by chance and leave others empty). Placement only:
    any assignment gives the same result."""
    keys: dict[int, int] = {}
    value = 0
    while len(keys) < n and value < 64 * n + 1024:
        keys.setdefault(_murmur3_int(value) % n, value)
        value += 1
    return [keys.get(i, i) for i in range(n)]


def _empty_frame(spark_schema: Any, names: Sequence[str], timezone: str) -> pl.DataFrame:
    """An empty Polars frame with the types the executors will see for ``names``
    (timestamps in the session's time zone, as Spark writes them to Arrow)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    seen: set[str] = set()
    for field in spark_schema.fields:
        if field.name not in names:
            continue
        if field.name in seen:  # a join's two columns of one name: Spark cannot tell them
            raise DataValidationError(
                f'column "{field.name}" appears more than once in the Spark DataFrame; '
                "rename or drop all but one"
            )
        seen.add(field.name)
        try:
            arrow_type = to_arrow_type(field.dataType, timezone=timezone)
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


def _missing_on_executors(err: BaseException) -> ExecutorImportError | None:
    """One clear error, when the executors' Python could not import polars_eval (or one of
    its dependencies) to run the task: a worker Python other than the driver's, an
    executor without the package. Spark's own error is a worker traceback."""
    match = _NO_MODULE.search(str(err))
    if match is None or match.group(1).split(".")[0] not in _RUNTIME:
        return None
    module = match.group(1)
    return ExecutorImportError(
        f"the Spark executors' Python cannot import {module} (ModuleNotFoundError on a "
        "worker), and pe.spark.evaluate runs polars_eval there: install polars-eval (with "
        "polars and pyarrow) in the executors' Python, or run the executors with a Python "
        "that has it, set with PYSPARK_PYTHON=/path/to/python before the session starts "
        f"or with the Spark setting spark.pyspark.python (the driver runs {sys.executable})"
    )


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


def _chunks(batches: Iterable[pa.RecordBatch]) -> Iterator[pl.DataFrame]:
    """Arrow batches gathered into frames of about ``_CHUNK_ROWS`` rows, each in one piece
    (the batches are small: contiguous columns filter, hash and compress several times
    faster, and each blob then holds one Arrow batch)."""
    buffer: list[pa.RecordBatch] = []
    n = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        buffer.append(batch)
        n += batch.num_rows
        if n >= _CHUNK_ROWS:
            yield _frame(buffer)
            buffer, n = [], 0
    if buffer:
        yield _frame(buffer)


def _frame(batches: list[pa.RecordBatch]) -> pl.DataFrame:
    frame = pl.from_arrow(pa.Table.from_batches(batches))
    assert isinstance(frame, pl.DataFrame)
    return frame.rechunk()


def _weighted_rows(ev: Evaluation, frame: pl.DataFrame) -> pl.DataFrame:
    """The validated rows of a chunk as an unmerged state: the state's columns, each row
    with its weight (a null weight as 0, as the distinct rows sum it)."""
    checks = ev.check(frame.lazy())
    if checks:
        bad = frame.select(check_aggs(checks, examples=False))
        raise_for_checks(bad, checks, per_row=False, source=frame.lazy())
    weight = ev.definition.weight
    w = pl.col(weight).cast(pl.Float64).fill_null(0.0) if weight is not None else pl.lit(1.0)
    values = [c for c in ev.model.columns if c != W]
    return frame.select(*values, w.alias(W))


def _few_distinct(ev: Evaluation, frame: pl.DataFrame) -> bool:
    """Whether the distinct rows of ``chunk`` are at most ``_KEEP_ROWS`` of its rows (an
    estimate: a HyperLogLog count of the keys' hashes, a twentieth of a group_by's time)."""
    keys = [c for c in ev.model.columns if c != W]
    try:
        estimate = frame.select(pl.struct(keys).hash(seed=0).approx_n_unique()).item()
    except pl.exceptions.PolarsError:  # a key type without a hash: take the distinct rows
        return True
    return bool(estimate <= _KEEP_ROWS * frame.height)


def _narrowed(rows: pl.DataFrame) -> pl.DataFrame:
    """Integer columns in the narrowest integer type of their sign that holds their values
    (a label, a segment id: a byte or two instead of eight), for the blob; the finalize
    casts them back to the state's types, exactly."""
    ints = [c for c, t in rows.schema.items() if t.is_integer() and t not in (pl.Int8, pl.UInt8)]
    if not ints or not rows.height:
        return rows
    bounds = rows.select(
        *[pl.col(c).min().alias(f"lo{i}") for i, c in enumerate(ints)],
        *[pl.col(c).max().alias(f"hi{i}") for i, c in enumerate(ints)],
    ).row(0)
    casts: dict[str, pl.DataType] = {}
    for i, c in enumerate(ints):
        lo, hi = bounds[i], bounds[len(ints) + i]
        if lo is None:
            continue
        signed = rows.schema[c].is_signed_integer()
        for dtype, bits in ((pl.Int8, 8), (pl.Int16, 16), (pl.Int32, 32)):
            low, high = (
                (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            )
            if low <= lo and hi <= high:
                casts[c] = dtype if signed else _UNSIGNED[dtype]
                break
    casts = {c: t for c, t in casts.items() if t != rows.schema[c]}
    return rows.cast(casts) if casts else rows


_UNSIGNED: dict[Any, pl.DataType] = {pl.Int8: pl.UInt8, pl.Int16: pl.UInt16, pl.Int32: pl.UInt32}


def _blobs(rows: pl.DataFrame, by: Sequence[str], n: int) -> Iterator[tuple[int, bytes]]:
    """State rows as one zstd Arrow IPC blob per target partition (a hash of ``by``)."""
    rows = _narrowed(rows)
    if n == 1:
        split = [(0, rows)]
    else:
        group = pl.col(by[0]) if len(by) == 1 else pl.struct(list(by))
        target = rows.select((group.hash(seed=0) % n).cast(pl.Int32)).to_series()
        if n <= _FILTER_TARGETS:  # a filter per target: a third of partition_by's time
            split = [(i, rows.filter(target == i)) for i in range(n)]
        else:
            parts = rows.with_columns(target.alias(_TARGET)).partition_by(
                _TARGET, as_dict=True, include_key=False
            )
            split = [(int(k[0]), part) for k, part in parts.items()]  # type: ignore[call-overload]
    # zstd at level 1: a third of Polars' default level's time, and as small on such rows
    options = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", compression_level=1))
    for i, part in split:
        if not part.height:
            continue
        table = part.to_arrow()
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
            writer.write_table(table)
        yield i, sink.getvalue().to_pybytes()


def _state_blobs(
    ev: Evaluation, n: int, batches: Iterable[pa.RecordBatch]
) -> Iterator[tuple[int, bytes]]:
    """The state rows of a partition's rows, chunk by chunk, as (target, blob) pairs."""
    by = ev.definition.by
    # the rows themselves are a state (each with its weight) where the distinct rows are
    distinct: bool | None = None if ev.model.values == [W] else True
    for chunk in _chunks(batches):
        if distinct is None:  # the first chunk tells whether the distinct rows pay
            distinct = _few_distinct(ev, chunk)
        rows = ev.state_rows(chunk) if distinct else _weighted_rows(ev, chunk)
        if rows.height:
            yield from _blobs(rows, by, n)


@_ours
def _rdd_blobs(
    ev: Evaluation, n: int, schema: pa.Schema, messages: Iterable[bytes]
) -> Iterator[tuple[int, bytes]]:
    """RDD.mapPartitions: the (target, blob) pairs of a partition's Arrow batches."""

    def read(message: bytes) -> pa.RecordBatch:
        batch = pa.ipc.read_record_batch(pa.py_buffer(message), schema)
        batch.validate()  # buffers of the sizes the schema says (a schema unlike Spark's)
        return batch

    yield from _state_blobs(ev, n, (read(m) for m in messages))


@_ours
def _partition_blobs(
    ev: Evaluation, keys: Sequence[int], batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow: the blobs of a partition's rows, with the Spark key of their target."""
    for i, blob in _state_blobs(ev, len(keys), batches):
        yield pa.RecordBatch.from_pydict(
            {_TARGET: [keys[i]], _BLOB: [blob]},
            schema=pa.schema([(_TARGET, pa.int32()), (_BLOB, pa.binary())]),
        )


def _finalize(ev: Evaluation) -> pl.DataFrame:
    """The task's table on the state rows of ``ev``: ``compute()``; for the exact binary
    task, the task method asked for the ``metrics=`` requested only (the other columns of
    the table are not built) and, where every row check it would run is a check of the
    input roles, without running them again (the states were made of validated rows)."""
    d = ev.definition
    if d.task != "binary" or d.bins is not None or ev.model.table is not None:
        return ev.compute()
    from polars_eval._core.registry import data_checks
    from polars_eval.tasks.binary import summary_infos

    assert ev.rows is not None
    o = d.options
    label, score = d.columns["label"], d.columns["score"]
    infos = summary_infos(o["probability"], d.metrics)
    rows = ev.rows
    # rows sent as they are without a weight (continuous scores) each weigh 1: the method
    # then takes its unweighted path (the rows' runs sorted as integer keys, no weight
    # carried: a third less CPU), equal to the weighted one to rounding
    ones = rows.select((pl.col(W) == 1.0).all()).item() if rows.height else False
    return rows.eval.binary(
        label,
        score,
        weight=None if ones else W,
        by=list(d.by) or None,
        metrics=None if d.metrics is None else list(d.metrics),
        validate=bool(data_checks(infos, {"label": label, "score": score})),
        **o,
    )


def _table(
    ev: Evaluation, schema: Mapping[str, pl.DataType], blobs: Iterable[Any]
) -> tuple[bytes, str] | None:
    """The task's table for the groups of one partition (whole groups) from their blobs,
    as Arrow IPC bytes, with the warnings it gave as JSON; None without blobs."""
    frames = []
    for blob in blobs:
        frame = pl.from_arrow(pa.ipc.open_stream(blob).read_all())
        assert isinstance(frame, pl.DataFrame)
        frames.append(frame)
    if not frames:
        return None
    # the partial states of every input partition that holds these groups: the task method
    # sums equal keys itself (as merging first would), so they are not re-aggregated here
    rows = pl.concat(frames, how="vertical_relaxed", rechunk=False)
    narrowed = {c: t for c, t in schema.items() if t.is_integer() and rows.schema.get(c) != t}
    local = ev.with_rows(rows.cast(narrowed) if narrowed else rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _finalize(local)
    buffer = io.BytesIO()
    out.write_ipc(buffer)
    seen = [[w.category.__name__, str(w.message)] for w in caught]
    return buffer.getvalue(), json.dumps(seen)


@_ours
def _rdd_results(
    ev: Evaluation, schema: Mapping[str, pl.DataType], pairs: Iterable[tuple[int, bytes]]
) -> Iterator[tuple[bytes, str]]:
    """RDD.mapPartitions: the table of the groups whose blobs this partition received."""
    table = _table(ev, schema, (pa.py_buffer(blob) for _, blob in pairs))
    if table is not None:
        yield table


@_ours
def _partition_results(
    ev: Evaluation, schema: Mapping[str, pl.DataType], batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow: the same, the blobs as a binary column, the table as one row."""
    blobs = (b.column(_BLOB)[i].as_buffer() for b in batches for i in range(b.num_rows))
    table = _table(ev, schema, blobs)
    if table is not None:
        yield pa.RecordBatch.from_pydict(
            {_RESULT: [table[0]], _WARNINGS: [table[1]]},
            schema=pa.schema([(_RESULT, pa.binary()), (_WARNINGS, pa.string())]),
        )
