"""A LazyFrame's state in bounded chunks: memory bounded by the state, not the rows.

Issue 27: on a lake whose files each hold every segment (partitioned by date or by load,
not by segment), one streaming ``group_by`` of the distinct keys (``(segment, label,
bin)`` in binned mode, ``(segment, label, score)`` in exact mode) is not bounded in
Polars 2.1: its streaming ``group_by`` pre-aggregates only the keys it finds hot and
keeps the other rows, partitioned, until every input row is read, then builds its hash
tables (pola-rs/polars PR 22285; an out-of-core ``group_by`` is an open item of the
streaming engine's tracking issue 20947). On 1e9 rows with 100 segments in every file
that held 7 to 18 GB. A lake written one segment per file hid it: each file's keys are
few, hence hot.

So :meth:`Evaluation.update <polars_eval.scale.evaluation.Evaluation.update>` takes a
LazyFrame in chunks wherever its state is a hash aggregation of many keys (the distinct
rows: binned and exact binary, the distinct rows of the other tasks) or not a streaming
aggregation at all (the forecast state's stretches of times):

1. the streaming engine reads the input columns and hands them over
   ``CHUNK_ROWS`` rows at a time (``collect_batches``: it reads ahead a few morsels,
   not the lake);
2. each chunk becomes its state rows (``Evaluation.batch_rows``: a ``group_by`` of at
   most one chunk's rows) and its validation counts, in one query;
3. the chunks' states are buffered and merged into one (``Evaluation.merge_rows``:
   summed per key, or the forecast state's merge) once the buffered rows are at least
   the merged state's rows and either ``MERGE_ROWS`` rows or ``MERGE_EVERY`` chunks.

Memory held: one chunk, at most ``MERGE_EVERY`` chunks' states (or ``MERGE_ROWS``
rows), and the merged state: groups × 2 × bins × 2 rows in binned mode, the distinct
(group, label, score) in exact mode, whatever the rows and however the files mix the
groups. Merging only once the buffer is as large as the merged state reads each state
row a bounded number of times (at most twice the rows buffered, summed over the
merges), even where the state grows with the rows (continuous scores in exact mode).

The states of a bounded size per group (sums, extrema and co-moments: regression,
multiclass with ``classes=``, the binary one-pass metrics) are one streaming query,
whose keys are the groups (``group_by(segment)`` stays small whatever the files hold),
unless the first rows hold many groups (:func:`few_groups`): then chunks too.

The namespace's binary table on a LazyFrame (``bins=``, or sort-based metrics) is a
LazyFrame whose collect runs such an evaluation (``polars_eval.tasks.binary``), so
``lf.eval.binary(...)`` and the CLI keep the state, not the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_eval._validate import check_aggs, raise_for_checks
from polars_eval.scale.kept import BinsKept

if TYPE_CHECKING:
    from polars_eval.scale.evaluation import Evaluation

CHUNK_ROWS = 1 << 20
"""Rows of a LazyFrame turned into states at a time."""
MERGE_ROWS = 1 << 21
"""Buffered state rows that make a merge (once they are as many as the merged state's)."""
MERGE_EVERY = 8
"""Buffered chunk states that make a merge (idem)."""
HOT_GROUPS = 1024
"""Groups in a LazyFrame's first chunk up to which a state of a bounded size per group is
one streaming query (see :func:`few_groups`)."""


def few_groups(ev: Evaluation, lf: pl.LazyFrame) -> bool:
    """Whether the ``by`` groups of the first :data:`CHUNK_ROWS` rows of ``lf`` are at
    most :data:`HOT_GROUPS` (always without ``by``).

    A state of a bounded size per group (sums, extrema, co-moments) is one streaming
    ``group_by`` of the groups, bounded while Polars finds its keys hot: a few groups, or
    files that each hold a few (a lake partitioned by segment, whose first rows then hold
    a few too). Many groups in the first rows (1e5 groups in every file: 2.1 GB at 1e8
    rows, against 0.67 GB in chunks) take the chunks instead. Reads the ``by`` columns
    of the first rows only.
    """
    by = list(ev.definition.by)
    if not by:
        return True
    first = lf.select(by).head(CHUNK_ROWS).select(pl.struct(by).n_unique())
    return first.collect(engine="streaming").item() <= HOT_GROUPS


def streamed_states(
    ev: Evaluation,
    lf: pl.LazyFrame,
    checks: list[Any],
    chunk_rows: int | None = None,
    merge_every: int | None = None,
) -> pl.DataFrame:
    """The validated state rows of ``lf``, from its rows ``chunk_rows`` at a time (the
    streaming engine reads them), merged as they come; the bad rows of every chunk are
    counted (``checks``: those of :meth:`Evaluation.check`) and raised once the whole
    input is read, as one query would count them.
    ``chunk_rows`` and ``merge_every`` default to :data:`CHUNK_ROWS` and
    :data:`MERGE_EVERY`."""
    chunk_rows = chunk_rows or CHUNK_ROWS
    merge_every = merge_every or MERGE_EVERY
    parts: list[pl.DataFrame] = []
    bad: list[pl.DataFrame] = []
    held = merged = 0  # state rows buffered since the last merge; rows of the merged state
    inputs = lf.select(ev.model.inputs)
    chunks = inputs.collect_batches(chunk_size=chunk_rows, maintain_order=False, engine="streaming")
    rows_of, merge, finish, every = _reduction(ev, inputs.collect_schema())
    merge_every = min(merge_every, every)
    aggs = check_aggs(checks, examples=False) if checks else []
    for chunk in chunks:
        if aggs:
            bad.append(chunk.lazy().select(aggs).collect(engine="streaming"))
        parts.append(rows_of(chunk))
        held += parts[-1].height
        if held >= merged and (held >= MERGE_ROWS or len(parts) >= merge_every):
            parts = [merge(parts)]
            held, merged = 0, parts[0].height
    if bad:
        raise_for_checks(pl.concat(bad).sum(), checks, per_row=False, source=lf)
    if not parts:
        return ev.batch_rows(inputs.limit(0)).collect()
    return finish(merge(parts) if len(parts) > 1 else parts[0])


Reduction = tuple[
    Callable[[pl.DataFrame], pl.DataFrame],
    Callable[[list[pl.DataFrame]], pl.DataFrame],
    Callable[[pl.DataFrame], pl.DataFrame],
    int,
]


def _reduction(ev: Evaluation, schema: pl.Schema) -> Reduction:
    """How chunks of ``schema`` become states: the reduced rows of a chunk, the merge of
    reduced frames, the state rows of the merged frame, and the most chunks to buffer
    before a merge. The binned state is reduced and merged on its packed key
    (:class:`polars_eval.scale.binned.Binned`), unpacked once, each chunk merged as it
    comes (a merge of two dense states is a ``bincount``: nothing is saved by waiting);
    any other state is the chunk's state rows, merged by its rule (binned with ``time=``
    and ``every=`` too: its states are then the table's, per step)."""
    if isinstance(ev.model, BinsKept):
        binned = ev.model.binned(schema)

        def reduced(chunk: pl.DataFrame) -> pl.DataFrame:
            return binned.reduce([binned.rows(chunk.lazy()).collect()])

        return reduced, binned.reduce, binned.unpack, 2  # type: ignore[return-value]

    def rows(chunk: pl.DataFrame) -> pl.DataFrame:
        return ev.batch_rows(chunk.lazy()).collect()

    return rows, lambda parts: _merge(ev, parts), lambda frame: frame, MERGE_EVERY


def _merge(ev: Evaluation, parts: list[pl.DataFrame]) -> pl.DataFrame:
    """The states of disjoint rows merged into one: the distinct rows' value columns
    summed per key by a streaming ``group_by`` (in no particular order: half the time
    of ``Evaluation.merge_rows``' in-memory one, which keeps the order of the keys),
    any other state by its own merge."""
    values = ev.model.values
    if not values:
        return ev.merge_rows(parts)
    keys = [c for c in parts[0].columns if c not in values]
    stacked = pl.concat(parts, how="vertical_relaxed").lazy()
    return stacked.group_by(keys).agg(pl.col(values).sum()).collect(engine="streaming")
