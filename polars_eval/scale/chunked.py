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
2. each chunk becomes its state rows (``Evaluation._batch_rows``: a ``group_by`` of at
   most one chunk's rows) and its validation counts, in one query;
3. the chunks' states are buffered and merged into one (``Evaluation._merge_rows``:
   summed per key, or the forecast state's merge) once the buffered rows are at least
   the merged state's rows and either ``MERGE_ROWS`` rows or ``MERGE_EVERY`` chunks.

Memory held: one chunk, at most ``MERGE_EVERY`` chunks' states (or ``MERGE_ROWS``
rows), and the merged state: groups × 2 × bins × 2 rows in binned mode, the distinct
(group, label, score) in exact mode, whatever the rows and however the files mix the
groups. Merging only once the buffer is as large as the merged state reads each state
row a bounded number of times (at most twice the rows buffered, summed over the
merges), even where the state grows with the rows (continuous scores in exact mode).

The states of a bounded size (sums, extrema and co-moments per group: regression,
multiclass with ``classes=``, the binary one-pass metrics) stay one streaming query: its
keys are the groups (``group_by(segment)`` stays small whatever the files hold).

The namespace's binary table on a LazyFrame (``bins=``, or sort-based metrics) is a
LazyFrame whose collect runs such an evaluation (``polars_eval.tasks.binary``), so
``lf.eval.binary(...)`` and the CLI keep the state, not the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from polars_eval._validate import raise_for_checks

if TYPE_CHECKING:
    from polars_eval.scale.evaluation import Evaluation

CHUNK_ROWS = 1 << 21
"""Rows of a LazyFrame turned into states at a time (the forecast state: 2^20)."""
MERGE_ROWS = 1 << 22
"""Buffered state rows that make a merge (once they are as many as the merged state's)."""
MERGE_EVERY = 8
"""Buffered chunk states that make a merge (idem)."""


def streamed_states(
    ev: Evaluation,
    lf: pl.LazyFrame,
    checks: list[pl.Expr],
    chunk_rows: int | None = None,
    merge_every: int | None = None,
) -> pl.DataFrame:
    """The validated state rows of ``lf``, from its rows ``chunk_rows`` at a time (the
    streaming engine reads them), merged as they come; the bad rows of every chunk are
    counted and raised once the whole input is read, as one query would count them.
    ``chunk_rows`` and ``merge_every`` default to :data:`CHUNK_ROWS` and
    :data:`MERGE_EVERY`."""
    chunk_rows = chunk_rows or CHUNK_ROWS
    merge_every = merge_every or MERGE_EVERY
    parts: list[pl.DataFrame] = []
    bad: list[pl.DataFrame] = []
    held = merged = 0  # state rows buffered since the last merge; rows of the merged state
    chunks = lf.select(ev._inputs()).collect_batches(
        chunk_size=chunk_rows, maintain_order=False, engine="streaming"
    )
    for chunk in chunks:
        rows = chunk.lazy()
        if checks:
            states, counts = pl.collect_all([ev._batch_rows(rows), rows.select(checks)])
            bad.append(counts)
        else:
            states = ev._batch_rows(rows).collect()
        parts.append(states)
        held += states.height
        if held >= merged and (held >= MERGE_ROWS or len(parts) >= merge_every):
            parts = [_merge(ev, parts)]
            held, merged = 0, parts[0].height
    if bad:
        raise_for_checks(pl.concat(bad).sum(), ev._checks, per_row=False, source=lf)
    if not parts:
        return ev._batch_rows(lf.select(ev._inputs()).limit(0)).collect()
    return _merge(ev, parts) if len(parts) > 1 else parts[0]


def _merge(ev: Evaluation, parts: list[pl.DataFrame]) -> pl.DataFrame:
    """The states of disjoint rows merged into one: the distinct rows' value columns
    summed per key by a streaming ``group_by`` (in no particular order: half the time
    of ``Evaluation._merge_rows``' in-memory one, which keeps the order of the keys),
    any other state by its own merge."""
    values = ev._value_columns()
    if not values:
        return ev._merge_rows(parts)
    keys = [c for c in parts[0].columns if c not in values]
    stacked = pl.concat(parts, how="vertical_relaxed").lazy()
    return stacked.group_by(keys).agg(pl.col(values).sum()).collect(engine="streaming")
