"""A ranking evaluation whose state lives on disk: whole queries in hash buckets (SPEC §10).

``pe.Evaluation("ranking", ..., spill=directory)`` keeps its rows in a directory instead
of memory, so a query log larger than memory (1e9 rows) is evaluated exactly in bounded
memory:

* :meth:`~polars_eval.Evaluation.update` streams the batch to parquet files, one per
  bucket, the bucket being a hash of the query key(s) modulo ``K``
  (``directory/bucket=00007/<batch id>-0.parquet``): every row of a query lands in the same
  bucket, whichever batch, file or partition it came from. The batch is written with
  Polars' streaming partitioned sink (never collected) and validated in the same pass.
* :meth:`~polars_eval.Evaluation.compute` reads one bucket at a time (a bucket larger
  than :data:`BUCKET_ROWS` rows is read in slices of whole queries), evaluates it per query
  with the ranking engine, validated as ``df.eval.ranking`` validates, and keeps only sums
  per ``by`` group (:func:`polars_eval.tasks.ranking.combine_partials`): the means over
  queries, ``n_queries`` and ``n_excluded`` equal ``df.eval.ranking`` on all the rows to
  rounding. Peak memory is one bucket's evaluation, not the rows.
* ``K`` is ``spill_buckets=`` or, when not given, chosen at the first update from its row
  count (cheap on parquet: the files' metadata) so that a bucket holds about
  :data:`BUCKET_ROWS` rows; it is then fixed, and recorded in the directory. A bucket
  that later updates made larger is split at compute (one more streaming pass over it),
  so memory stays bounded whatever K; ``spill_buckets=`` saves that pass when the first
  batch is small and many follow.
* :meth:`~polars_eval.Evaluation.merge` of two spilled evaluations links the other's
  files into this directory (rewritten into this one's buckets when their ``K`` differ);
  a spilled and an in-memory evaluation merge too.
* :attr:`~polars_eval.Evaluation.state` reads every row back into memory (as large as the
  rows: use it on small evaluations); :meth:`~polars_eval.Evaluation.from_spill` reopens a
  directory, e.g. in another process before a merge.

The directory holds the evaluation's definition (``_polars_eval_spill.json``); it must be
new or empty when an evaluation is created in it, and one evaluation writes to it at a
time. Delete it when done: nothing is removed automatically.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_eval._validate import check_aggs, raise_for_checks
from polars_eval.exceptions import InvalidParameterError
from polars_eval.scale.definition import Definition
from polars_eval.scale.kept import N
from polars_eval.stats import units
from polars_eval.tasks.ranking import (
    combine_partials,
    evaluation_request,
    run_ranking,
    table_arguments,
)

if TYPE_CHECKING:
    from polars_eval.scale.evaluation import Evaluation

TASK = "ranking"
"""The task whose evaluations spill (whole queries in buckets: its mean over queries)."""

SPILL_VERSION = 1
"""The format version of a spill directory; a newer one is refused."""

MANIFEST = "_polars_eval_spill.json"
BUCKET_ROWS = 20_000_000
"""Rows per bucket aimed at (K from the first update's rows), and the most rows evaluated
at once (a larger bucket is read in slices of whole queries)."""

SEED = 1
"""The seed of the bucket hash: other than the planner's (seed 0, its slices of a large
frame), so that the rows of one bucket still spread over every slice."""

_BUCKET = "__pe_bucket"


def _hash_key(name: str, dtype: pl.DataType) -> pl.Expr:
    """A query key column as it is hashed: equal values of different dtypes (1 as Int32,
    Int64 or 1.0, a string or a categorical) hash alike, as a vertical_relaxed concat of
    the batches would group them together."""
    col = pl.col(name)
    if dtype.is_numeric() or dtype == pl.Boolean:
        return col.cast(pl.Float64)
    if isinstance(dtype, (pl.Categorical, pl.Enum)):
        return col.cast(pl.String)
    return col


def key_hash(schema: Mapping[str, pl.DataType], query: Sequence[str]) -> pl.Expr:
    """The hash of a row's query key(s) (UInt64): its bucket is this modulo K."""
    return pl.struct([_hash_key(q, schema[q]).alias(q) for q in query]).hash(seed=SEED)


def hash_probe() -> int:
    """The bucket hash of a fixed key: a directory written by a Polars version (or machine)
    that hashes otherwise cannot take more rows with this one's buckets."""
    frame = pl.DataFrame({"q": ["query 1"], "r": [2.0]})
    return int(frame.select(key_hash(frame.schema, ["q", "r"])).item())


def _bucket_dir(root: Path, bucket: int) -> Path:
    return root / f"bucket={bucket:05d}"


def _scan(files: Sequence[Path]) -> pl.LazyFrame:
    """The rows of ``files`` (batches may differ in dtypes: as a vertical_relaxed concat)."""
    scans = [pl.scan_parquet(f) for f in files]
    return scans[0] if len(scans) == 1 else pl.concat(scans, how="vertical_relaxed")


class Spill:
    """The bucket files of one spilled evaluation (see the module docstring)."""

    def __init__(self, root: Path, definition: str, buckets: int | None) -> None:
        self.root = root
        self.definition = definition
        self.buckets = buckets

    # -- the directory -----------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike[str], definition: str, buckets: int | None) -> Spill:
        """A new spill in ``path`` (created; it must be empty if it exists)."""
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidParameterError(f"spill= takes a directory path; got {path!r}")
        if buckets is not None and (
            isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1
        ):
            raise InvalidParameterError(f"spill_buckets must be an integer >= 1; got {buckets!r}")
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise InvalidParameterError(f'spill= must name a directory; "{root}" is a file')
        if root.exists() and any(root.iterdir()):
            hint = (
                "reopen it with pe.Evaluation.from_spill(path)"
                if (root / MANIFEST).exists()
                else "give a new or empty directory"
            )
            raise InvalidParameterError(
                f'spill directory "{root}" is not empty: a new evaluation writes its buckets '
                f"into a new or empty directory ({hint})"
            )
        root.mkdir(parents=True, exist_ok=True)
        spill = cls(root, definition, buckets)
        spill._save()
        return spill

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Spill:
        """The spill written in ``path`` (by :meth:`create` and updates)."""
        root = Path(path)
        try:
            raw = json.loads((root / MANIFEST).read_text())
        except (OSError, ValueError) as error:
            raise InvalidParameterError(
                f'"{root}" is not the directory of a spilled evaluation (no readable '
                f"{MANIFEST}: {error})"
            ) from None
        version = raw.get("version")
        if not isinstance(version, int) or version > SPILL_VERSION:
            raise InvalidParameterError(
                f"this spill directory was written by a newer polars_eval (spill format "
                f"version {version!r}; this version reads up to {SPILL_VERSION}): upgrade "
                "polars_eval"
            )
        if raw["hash_probe"] != hash_probe() and raw["buckets"] is not None:
            raise InvalidParameterError(
                f'the spill directory "{root}" was bucketed by a hash that this Polars '
                f"(version {pl.__version__}) computes otherwise (written with Polars "
                f"{raw['polars']}): new rows would land in other buckets than their queries; "
                "merge it into a new spilled evaluation instead (pe.Evaluation.merge rewrites "
                "its rows into the new buckets)"
            )
        return cls(root, raw["definition"], raw["buckets"])

    def _save(self) -> None:
        manifest = {
            "version": SPILL_VERSION,
            "definition": self.definition,
            "buckets": self.buckets,
            "hash_probe": hash_probe(),
            "polars": pl.__version__,
        }
        temporary = self.root / f".{MANIFEST}.{uuid.uuid4().hex}"
        temporary.write_text(json.dumps(manifest, sort_keys=True))
        os.replace(temporary, self.root / MANIFEST)

    def files(self) -> dict[int, list[Path]]:
        """The parquet files of each bucket that has any."""
        out: dict[int, list[Path]] = {}
        for folder in sorted(self.root.glob("bucket=*")):
            files = sorted(folder.glob("*.parquet"))
            if files:
                out[int(folder.name.partition("=")[2])] = files
        return out

    def scan(self) -> pl.LazyFrame | None:
        """Every row (lazy), or None when there is none."""
        files = [f for group in self.files().values() for f in group]
        return _scan(files) if files else None

    # -- writing -----------------------------------------------------------------------

    def write(
        self,
        rows: pl.LazyFrame,
        query: Sequence[str],
        checks: pl.LazyFrame | None = None,
        accept: Callable[[pl.DataFrame], None] | None = None,
    ) -> None:
        """Stream ``rows`` into the buckets. ``checks`` (a query over the same source) is
        collected in the same pass and handed to ``accept``, which raises to refuse the
        batch: the files are written aside and moved into the buckets only once accepted,
        so a refused (or failed) batch leaves the spill as it was."""
        if self.buckets is None:
            n = rows.select(pl.len()).collect(engine="streaming").item()
            if n == 0:  # K waits for a batch with rows
                if checks is not None and accept is not None:
                    accept(checks.collect(engine="streaming"))
                return
            self.buckets = max(1, math.ceil(n / BUCKET_ROWS))
            self._save()
        staging = self.root / f"_staging-{uuid.uuid4().hex}"
        try:
            hashed = key_hash(rows.collect_schema(), query) % self.buckets
            done = _sink(rows, hashed, staging, checks)
            if accept is not None and done is not None:
                accept(done)
            for file in staging.glob("*/*.parquet"):
                target = _bucket_dir(self.root, int(file.parent.name))
                target.mkdir(exist_ok=True)
                os.replace(file, target / file.name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def link_from(self, other: Spill, query: Sequence[str]) -> None:
        """Add the rows of ``other``: its files linked (copied where links fail) when both
        bucket alike, else rewritten into this spill's buckets."""
        files = other.files()
        if not files:
            return
        if self.buckets is None and other.buckets is not None:
            self.buckets = other.buckets
            self._save()
        if self.buckets != other.buckets:
            source = other.scan()
            assert source is not None
            self.write(source, query)
            return
        batch = uuid.uuid4().hex
        for bucket, group in files.items():
            target = _bucket_dir(self.root, bucket)
            target.mkdir(exist_ok=True)
            for file in group:
                destination = target / f"{batch}-{file.name}"
                try:
                    os.link(file, destination)
                except OSError:
                    shutil.copyfile(file, destination)

    # -- reading -----------------------------------------------------------------------

    def frames(self, query: Sequence[str]) -> Iterator[pl.DataFrame]:
        """The rows, bucket by bucket. A bucket of more than :data:`BUCKET_ROWS` rows (later
        updates outgrew K) is first split by more bits of the same hash into slices of whole
        queries, written aside in one streaming pass, and comes slice by slice."""
        for files in self.files().values():
            scan = _scan(files)
            n = scan.select(pl.len()).collect().item()
            slices = math.ceil(n / BUCKET_ROWS)
            if slices <= 1:
                yield scan.collect(engine="streaming")
                continue
            assert self.buckets is not None
            aside = self.root / f"_slices-{uuid.uuid4().hex}"
            try:
                _sink(scan, key_hash(scan.collect_schema(), query) // self.buckets % slices, aside)
                for folder in sorted(aside.iterdir()):
                    yield _scan(sorted(folder.glob("*.parquet"))).collect(engine="streaming")
            finally:
                shutil.rmtree(aside, ignore_errors=True)


def _sink(
    rows: pl.LazyFrame, part: pl.Expr, directory: Path, checks: pl.LazyFrame | None = None
) -> pl.DataFrame | None:
    """Stream ``rows`` into ``directory/<part>/<id>-<i>.parquet`` (never collected); the
    result of ``checks`` (a query over the same source), collected in the same pass."""
    batch = uuid.uuid4().hex

    def file_path(args: Any) -> Path:
        part = int(args.partition_keys.item())
        return directory / str(part) / f"{batch}-{args.index_in_partition}.parquet"

    sink = rows.with_columns(part.alias(_BUCKET)).sink_parquet(
        pl.PartitionBy(directory, key=_BUCKET, include_key=False, file_path_provider=file_path),
        mkdir=True,
        lazy=True,
    )
    done = pl.collect_all([sink] if checks is None else [sink, checks], engine="streaming")
    return None if checks is None else done[1]


# ---------------------------------------------------------------------------------------
# The hooks of pe.Evaluation
# ---------------------------------------------------------------------------------------


def table_request(d: Definition) -> dict[str, Any]:
    """The ``df.eval.ranking`` arguments of a ranking evaluation. With ``metrics=``, only
    the columns kept are computed (the task's hook:
    :func:`~polars_eval.tasks.ranking.evaluation_request`)."""
    cols = d.columns
    request: dict[str, Any] = {
        "relevance": cols["relevance"],
        "score": cols["score"],
        "query": cols["query"],
        "item": cols.get("item"),
        "weight": d.weight,
        "by": list(d.by) or None,
        **{k: v for k, v in d.options.items() if k not in units.OPTIONS},
    }
    table_arguments(**request)  # the options checked as the task method checks them
    return {**request, **evaluation_request(d)[0]}


def _query(ev: Evaluation) -> list[str]:
    query = ev.definition.columns["query"]
    return [query] if isinstance(query, str) else list(query)


def _store(ev: Evaluation) -> Spill:
    assert ev.spill is not None
    return ev.spill


def update(ev: Evaluation, lf: pl.LazyFrame) -> None:
    """Validate the batch as :meth:`Evaluation.update` does and stream it to the buckets."""
    checks = ev.check(lf)

    def accept(bad: pl.DataFrame) -> None:
        raise_for_checks(bad, checks, per_row=False, source=lf)

    counts = lf.select(check_aggs(checks, examples=False)) if checks else None
    _store(ev).write(lf.select(ev.model.inputs), _query(ev), counts, accept)


def rows(ev: Evaluation) -> pl.DataFrame | None:
    """The state rows of a spilled evaluation, read into memory (as large as the rows)."""
    source = _store(ev).scan()
    return None if source is None else ev.batch_rows(source).collect(engine="streaming")


def merge(ev: Evaluation, other: Evaluation) -> None:
    """Add ``other``'s rows (same definition, checked), one of the two or both spilled."""
    if ev.spill is None:
        spilled = rows(other)
        if spilled is not None:
            ev.add_rows(spilled)
    elif other.spill is not None:
        ev.spill.link_from(other.spill, _query(ev))
    elif other.rows is not None:
        kept = other.rows
        if N in kept.columns:  # rows counted per distinct key: one row each again
            values = [c for c in kept.columns if c != N]
            kept = kept.with_columns(pl.col(values).repeat_by(N)).explode(values).drop(N)
        ev.spill.write(kept.lazy(), _query(ev))


def compute(ev: Evaluation, ci: Any = None) -> pl.DataFrame:
    """``df.eval.ranking`` on every row, bucket by bucket: sums per ``by`` group combined
    (with ``ci="t"`` the sums of squares too; with ``ci="bootstrap"`` one row per query of
    each bucket, resampled once all are in)."""
    store = _store(ev)
    arguments = {**table_arguments(**table_request(ev.definition)), "ci": ci}
    parts = [run_ranking(frame, **arguments, partial=True) for frame in store.frames(_query(ev))]
    source = store.scan()
    assert source is not None
    return combine_partials(parts, arguments, source)  # type: ignore[arg-type]
