"""``pe.Evaluation``: a task's mergeable state, updated batch by batch (SPEC §10).

What the state is, the task says (its hook ``Task.evaluation``; see
:mod:`polars_eval.scale.kept`): the specs' states of its table where every metric keeps
states of a bounded size (sums, minima, maxima, co-moments: ``Table.partition``, merged
by each state's rule, finalized as the task method finalizes its ``group_by``; memory
bounded by the groups); the bins and sums of ``bins=`` (binary:
:mod:`polars_eval.tasks._binary_bins`); the forecast states per series
(:mod:`polars_eval.scale.forecast_state`); otherwise the distinct rows, one row per
distinct (group, input values) with the summed weight (or the rows of a task with keys),
which :meth:`Evaluation.compute` runs the task method on. A metric is a function of the
*weighted empirical distribution* of its inputs within a group, so two such states merge
by concatenating them and summing the weights per key. Memory then grows with the
distinct rows: a score column stored at 4 decimals has at most 10,001 distinct values
per (group, label); the sort-based binary metrics' distinct (group, label, score) rows
are the same "counts per distinct key" of SPEC §10, counted by a streaming hash
aggregation (``benchmarks/RESULTS.md``, "Lakes": 2.3× faster and 40 % smaller than
sorting chunks and merging their lists). Ranked items with ids keep their rows as they
are: a query split across partitions still merges exactly, and a key seen twice is the
task's duplicate-key error at ``compute()`` (as a forecast key is).

Either way the numbers are those of the task method on all the rows seen (to rounding,
1e-12). The state is a ``pl.DataFrame`` that carries its own definition (task, columns,
options, format version: :mod:`polars_eval.scale.definition`) in a first row, so
``ev.state.write_parquet(path)`` and ``Evaluation.from_state(pl.read_parquet(path))``
round-trip (the co-moments' struct columns included).

The scale layer (:mod:`~polars_eval.scale.chunked`, :mod:`~polars_eval.scale.spill`,
:mod:`~polars_eval.scale.spark`) runs an evaluation through its public members:
:attr:`Evaluation.definition`, :attr:`Evaluation.model` (what it keeps),
:meth:`Evaluation.check`, :meth:`Evaluation.batch_rows`, :meth:`Evaluation.state_rows`,
:meth:`Evaluation.merge_rows`, :meth:`Evaluation.add_rows`, :attr:`Evaluation.rows`,
:meth:`Evaluation.with_rows` and :attr:`Evaluation.spill`.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import warnings
from collections.abc import Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from polars_eval._core import windows as _windows
from polars_eval._core.tasks import TASKS
from polars_eval._validate import check_aggs, raise_for_checks
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)
from polars_eval.metrics._curve import score_bin  # noqa: F401 - re-exported (pe.scale.score_bin)
from polars_eval.scale import chunked as _chunked
from polars_eval.scale import spill as _spill
from polars_eval.scale.definition import Definition, names
from polars_eval.scale.kept import Kept, N, W, kept
from polars_eval.stats import units

PART = "__pe_part"  # "def": the definition row; "states" / "rows" / "train": data rows
DEF = "__pe_def"  # the JSON definition, on the definition row only
_CHUNK_ROWS = 1 << 20
"""A forecast LazyFrame's rows are turned into states about this many at a time (the
distinct rows: :data:`polars_eval.scale.chunked.CHUNK_ROWS`)."""
_MERGE_EVERY = 8
"""The states of this many chunks are merged into one as they come."""


def _takes(task: str, option: str) -> bool:
    """The task method takes ``option``."""
    return option in inspect.signature(TASKS[task].method).parameters


def _taking(option: str) -> str:
    """The tasks whose method takes ``option``, named."""
    return " and ".join(name for name in TASKS if _takes(name, option))


def _no_units(task: str) -> None:
    """``ci=`` is an interval over units: the queries or series of a task with keys."""
    if not TASKS[task].keys:
        with_units = " and ".join(n for n, t in TASKS.items() if t.keys)
        raise InvalidParameterError(
            f"ci= is an interval over queries or series (the {with_units} tasks); the "
            f"{task} task has no units"
        )


class Evaluation:
    """A task's evaluation over many batches or partitions, with a mergeable state.

    ``Evaluation(task, by=None, metrics=None, weight=None, bins=None, **columns)``:
    ``task`` is one of ``"binary"``, ``"multiclass"``, ``"regression"``, ``"forecast"``,
    ``"ranking"``; ``columns`` are the task method's column arguments and options, by
    name (``label="y", score="p"`` for binary; ``actual=, pred=`` for regression;
    ``label=, pred=, proba=, classes=`` for multiclass; ``actual=, forecast=, series=,
    time=`` (+ ``train=``, ``season_length=``) for forecasting; ``relevance=, score=,
    query=`` (+ ``item=``, ``k=`` …) for ranking). ``metrics=None`` keeps every metric of
    the task method; for binary and regression, ``metrics=`` takes any registered metric
    of the task, as the task method's ``metrics=`` does; for forecasting too when every
    name is a registered regression or forecasting metric (else the names select columns
    of the default table, e.g. ``mae_pooled``); for multiclass, when every name is
    a registered multiclass metric, they are the task method's ``metrics=`` (its columns,
    e.g. ``multiclass_jaccard_micro`` ..., the metrics outside its default table included),
    otherwise the names select its columns.

    :meth:`update` adds rows (a DataFrame, a LazyFrame collected with the streaming
    engine, or an Arrow table); :meth:`merge` adds another evaluation of the same definition over disjoint
    rows; :attr:`state` is the merged state as a small ``pl.DataFrame``; :meth:`compute`
    gives the task method's table on every row seen.

    Memory: where every metric keeps states of sums, extrema or co-moments, the state is
    a few numbers per group, whatever the rows: the regression task without ``medae``,
    ``spearman``, ``kendall_tau`` and ``mer``, the multiclass task with ``classes=``
    (without the AUCs), the binary task with one-pass metrics only (``logloss``,
    ``brier``, ``accuracy``, ``f1`` …), none of them with ``baseline=True``; the
    forecast task keeps as much per series, with the runs of times seen (one per series
    when each batch or partition holds stretches of a series' times; up to one per time
    when they interleave them). Every other definition keeps the distinct rows (group,
    inputs, summed weight), and its memory grows with them (exact sort-based binary
    metrics: with the distinct scores).

    Windows (SPEC §13): ``time=`` (a Date, Datetime or integer column; the forecast's own
    ``time=``) with ``every=`` (and ``offset=``) keeps one state per (group, ``every``
    step), the time column holding the step; rows of a step seen again merge into its
    state, so appending a day costs that day's rows. ``compute(period="30d")`` merges the
    steps of each window of ``group_by_dynamic`` (``compute()``: one window per step);
    ``compute(grouping_sets=, rollup=, min_rows=)`` stacks groupings of the ``by`` keys.
    An evaluation of another ``every=`` does not merge (another definition).

    Not supported (refused when asked): ``cutoff=``/``lead=`` for forecasting (a lead is
    a rank within a cutoff, not a sum) and ``ties="first"`` for ranking (input order does
    not survive a merge).

    ``spill=<directory>`` (ranking): the state lives on disk, not in memory, for query logs
    larger than memory: :meth:`update` streams the rows into parquet buckets of whole
    queries (a hash of the query keys), :meth:`compute` evaluates one bucket at a time, so
    peak memory is one bucket's, not the rows'. ``spill_buckets=`` fixes the number of
    buckets (default: from the first update's row count, about 2e7 rows a bucket; give it
    when many small batches follow: a bucket that outgrew it is split again at compute,
    one more pass over its rows). The directory must be new or empty; :meth:`from_spill` reopens it; :attr:`state` reads
    every row back (as large as the rows). See :mod:`polars_eval.scale.spill`.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> a = pl.DataFrame({"y": [0, 1, 1], "p": [0.1, 0.8, 0.4]})
    >>> b = pl.DataFrame({"y": [0, 1, 0], "p": [0.5, 0.5, 0.2]})
    >>> ev = pe.Evaluation("binary", label="y", score="p", metrics=["auc", "logloss"])
    >>> round(ev.update(a).update(b).compute()["auc"].item(), 6)  # 7.5 of 9 pairs
    0.833333
    >>> round(pl.concat([a, b]).eval.auc("y", "p"), 6)
    0.833333
    >>> other = pe.Evaluation.from_state(ev.state)  # e.g. after a parquet round trip
    >>> round(other.merge(ev).compute()["auc"].item(), 6)  # the same rows twice: same AUC
    0.833333
    """

    def __init__(
        self,
        task: str,
        *,
        by: str | Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        weight: str | None = None,
        bins: int | None = None,
        train: pl.DataFrame | pl.LazyFrame | None = None,
        spill: str | os.PathLike[str] | None = None,
        spill_buckets: int | None = None,
        every: str | int | None = None,
        offset: str | int | None = None,
        **columns: Any,
    ) -> None:
        if task not in TASKS:
            raise InvalidParameterError(f"task must be one of {list(TASKS)}; got {task!r}")
        t = TASKS[task]  # its columns and options (their defaults: the task method's)
        time = columns.get("time") if "time" in t.columns else columns.pop("time", None)
        windows = _windows.evaluation_windows(task, time, every, offset, names(by))
        if bins is not None:
            if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
                raise InvalidParameterError(f"bins must be an integer >= 2; got {bins!r}")
            if not _takes(task, "bins"):
                raise InvalidParameterError(
                    f"bins= is available for the {_taking('bins')} task; the {task} task "
                    "keeps exact states (distinct values)"
                )
        # the default interval of compute() (tasks with units): kept in the definition only
        # when given, so that other definitions read (and merge) as before
        interval = {k: columns.pop(k) for k in units.OPTIONS if k in columns}
        if interval:
            units.unit_ci(**{"level": 0.95, **interval})
            _no_units(task)
        defaults = t.defaults()
        unknown = [k for k in columns if k not in t.columns and k not in defaults]
        if "cutoff" in columns or "lead" in columns:
            raise InvalidParameterError(
                "pe.Evaluation does not take cutoff=/lead= (a lead is a rank within a "
                "cutoff, which does not merge): evaluate by lead with df.eval.forecast"
            )
        if unknown:
            known = ", ".join([*t.columns, *defaults])
            raise InvalidParameterError(
                f"unknown argument(s) {unknown} for the {task} task; known: {known}"
            )
        missing = [k for k in t.required if columns.get(k) is None]
        if missing:
            raise InvalidParameterError(f"the {task} task needs the column argument(s) {missing}")
        for key in t.columns:
            names(columns.get(key))
        if columns.get("ties", "average") != "average":
            raise InvalidParameterError(
                "pe.Evaluation ranks with ties='average' only: 'first' depends on the input "
                "order, which does not survive a merge"
            )
        if metrics is not None and (
            isinstance(metrics, str) or not all(isinstance(m, str) for m in metrics)
        ):
            raise InvalidParameterError(f"metrics must be a list of metric names; got {metrics!r}")
        if weight is not None and not isinstance(weight, str):
            raise InvalidParameterError(f"weight must be a column name; got {weight!r}")
        if train is not None and not t.train:
            trained = " and ".join(n for n, x in TASKS.items() if x.train)
            raise InvalidParameterError(f"train= is for the {trained} task, not {task}")
        options = {key: columns.get(key, default) for key, default in defaults.items()}
        options.update(interval)
        self._def = Definition(
            task=task,
            columns={key: columns.get(key) for key in t.columns},
            options=options,
            by=tuple(_windows.state_keys(task, names(by), windows)),
            metrics=None if metrics is None else tuple(metrics),
            weight=weight,
            bins=bins,
            windows=windows,
        )
        self._train = None if train is None else train.lazy().collect()
        self._rows: pl.DataFrame | None = None
        self._spill: _spill.Spill | None = None
        self.model  # noqa: B018 - option and metric errors now, not at compute
        if spill is not None and task != _spill.TASK:
            raise InvalidParameterError(
                f"spill= is available for the {_spill.TASK} task; the {task} task keeps its "
                "state in memory"
            )
        if spill is not None:
            self._spill = _spill.Spill.create(spill, self._def.to_json(), spill_buckets)
        elif spill_buckets is not None:
            raise InvalidParameterError("spill_buckets= needs spill= (a directory)")

    def __getstate__(self) -> dict[str, Any]:
        # sent to Spark's executors: the model (expressions and closures) is built again there
        return {k: v for k, v in self.__dict__.items() if k != "_model"}

    # -- what is kept (the scale layer's API) ------------------------------------------

    @property
    def definition(self) -> Definition:
        """The definition: task, columns, options, ``by``, ``metrics=``, weight, bins."""
        return self._def

    @property
    def model(self) -> Kept:
        """What the evaluation keeps (:mod:`polars_eval.scale.kept`): its state rows'
        columns, checks, batch, merge and finalize."""
        if "_model" not in self.__dict__:
            self._model = kept(self._def, self._train)
        return self._model

    @property
    def _table(self) -> Any:
        """The task table whose specs' states are kept; None where it keeps other rows."""
        return self.model.table

    @property
    def spill(self) -> _spill.Spill | None:
        """The spill directory's buckets (``spill=``), or None."""
        return self._spill

    @property
    def rows(self) -> pl.DataFrame | None:
        """The state rows held in memory (None before any)."""
        return self._rows

    def with_rows(self, rows: pl.DataFrame) -> Evaluation:
        """A copy of this evaluation holding ``rows`` as its state rows (stacked states of
        several parts, e.g. from Spark's executors: ``compute()`` merges them)."""
        other = copy.copy(self)
        other._rows = rows
        return other

    def _inputs(self) -> list[str]:
        """The input columns a batch must have (columns, weight, by)."""
        return self.model.inputs

    def check(self, lf: pl.LazyFrame) -> list[Any]:
        """The checks of the rows of ``lf`` (a column problem raised now): the task's, as
        its method validates the rows it keeps."""
        return self.model.checks.resolve(lf.collect_schema(), self._def.by)

    def batch_rows(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        """The state rows of one batch, as a lazy query (not validated)."""
        return self._batch_rows(lf)

    def _batch_rows(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        d = self._def
        return self.model.batch(_windows.steps_of(lf, d.task, d.windows))  # time: its step

    def update(self, data: pl.DataFrame | pl.LazyFrame | pa.Table) -> Evaluation:
        """Add the rows of ``data`` (a LazyFrame is collected with the streaming engine).

        Rows are validated as the task method validates them (the weight here; the
        task's own checks, such as labels in {0, 1}, at :meth:`compute` in exact mode and
        here in binned mode); a bad batch raises and leaves the state unchanged.
        Returns ``self``.
        """
        if self._spill is not None:
            _spill.update(self, _lazy(data))
        else:
            self.add_rows(self.state_rows(data))
        return self

    def state_rows(self, data: pl.DataFrame | pl.LazyFrame | pa.Table) -> pl.DataFrame:
        """The validated state rows of one batch (what :meth:`update` adds).

        The states of a bounded size per group (sums, extrema, Polars' own co-moments)
        are one streaming query, with the row checks counted beside it, so a LazyFrame
        over a lake is read once and never held (``tests/test_streaming.py`` checks the
        plans), unless its first rows hold many groups. A LazyFrame whose state is a
        hash aggregation of many keys (the distinct rows: bins or scores), or many
        groups, or not a streaming aggregation (the forecast state) is taken in bounded
        chunks whose states are merged as they come
        (:func:`polars_eval.scale.chunked.streamed_states`): Polars' streaming
        ``group_by`` keeps the rows of keys it does not find hot until the end of the
        input, which a lake whose files mix the groups makes most of them.
        """
        lf = _lazy(data)
        checks = self.check(lf)
        stream = self.model.stream if isinstance(data, pl.LazyFrame) else "query"
        if stream == "series":  # the forecast states: chunks of their own size
            return _chunked.streamed_states(self, lf, checks, _CHUNK_ROWS, _MERGE_EVERY)
        if stream == "chunks" or (stream == "groups" and not _chunked.few_groups(self, lf)):
            return _chunked.streamed_states(self, lf, checks)
        rows_q = self._batch_rows(lf)
        if not checks:
            return rows_q.collect(engine="streaming")
        aggs = check_aggs(checks, examples=False)
        rows, bad = pl.collect_all([rows_q, lf.select(aggs)], engine="streaming")
        raise_for_checks(bad, checks, per_row=False, source=lf)
        return rows

    def add_rows(self, rows: pl.DataFrame) -> None:
        """Merge state rows of disjoint rows into the state held in memory."""
        if self._rows is None or self._rows.height == 0:
            self._rows = rows
        else:
            self._rows = self.merge_rows([self._rows, rows])

    def merge_rows(self, parts: Sequence[pl.DataFrame]) -> pl.DataFrame:
        """State rows of disjoint rows merged: each state column by its merge rule per group
        (the specs' states), or the value columns summed per key (or kept)."""
        return self.model.merge(pl.concat(parts, how="vertical_relaxed"))

    def merge(self, other: Evaluation) -> Evaluation:
        """Add the state of ``other`` (the same definition, disjoint rows). Returns ``self``."""
        if not isinstance(other, Evaluation):
            raise InvalidParameterError(f"merge() takes an Evaluation; got {type(other).__name__}")
        diff = self._def.differences(other._def)
        if not _same_frame(self._train, other._train):
            diff.append("train: different training frames")
        if diff:
            raise InvalidParameterError(
                "cannot merge evaluations of different definitions: " + "; ".join(diff)
            )
        if self._spill is not None or other._spill is not None:
            _spill.merge(self, other)
        elif other._rows is not None:
            self.add_rows(other._rows)
        return self

    @property
    def state(self) -> pl.DataFrame:
        """The merged state: a definition row, then one row per group (the specs' states:
        sums, extrema and co-moments) or one row per distinct key (the rows kept).

        Write it with ``write_parquet`` and read it back with :meth:`from_state`.
        """
        head = pl.DataFrame({PART: ["def"], DEF: [self._def.to_json()]})
        parts = [head]
        rows = _spill.rows(self) if self._spill is not None else self._rows
        if rows is not None:
            parts.append(rows.with_columns(pl.lit(self.model.part).alias(PART)))
        if self._train is not None:
            parts.append(self._train.with_columns(pl.lit("train").alias(PART)))
        return pl.concat(parts, how="diagonal_relaxed")

    @classmethod
    def from_state(cls, state: pl.DataFrame) -> Evaluation:
        """The evaluation a :attr:`state` frame describes (after a parquet round trip too)."""
        if not isinstance(state, pl.DataFrame) or PART not in state.columns or DEF not in state:
            raise InvalidParameterError(
                "from_state() takes the frame of an Evaluation's .state (columns "
                f'"{PART}" and "{DEF}" are missing)'
            )
        head = state.filter(pl.col(PART) == "def")
        if head.height != 1:
            raise InvalidParameterError("a state frame holds exactly one definition row")
        d = Definition.from_json(head[DEF].item())
        ev = cls.__new__(cls)
        ev._def, ev._spill = d, None
        train = state.filter(pl.col(PART) == "train")
        ev._train = None
        if train.height:  # the columns of a train= frame (series, time, actual)
            ev._train = train.select(c for key in d.spec.train for c in names(d.columns[key]))
        if ev._table is not None and json.loads(head[DEF].item())["version"] < 2:
            raise InvalidParameterError(
                "this state was written by an older polars_eval (state format version 1, "
                "distinct rows), which this version keeps as the metrics' states: evaluate "
                "the rows again"
            )
        model = ev.model
        rows = state.filter(pl.col(PART) == model.part)
        older = state.filter(pl.col(PART) == "rows")
        as_they_are = older.height and not {W, N} & set(older.columns)
        if model.part == "states" and not rows.height and as_they_are:
            # a state of version 1 or 2 that kept the rows (the forecast's): their states now
            rows = ev._batch_rows(older.select(model.inputs).lazy()).collect()
        missing = [c for c in model.columns if c not in rows.columns]
        if missing:
            raise InvalidParameterError(
                f"this state frame lacks the state column(s) {missing} of its definition"
            )
        ev._rows = rows.select(model.columns) if rows.height else None
        return ev

    @classmethod
    def from_spill(cls, path: str | os.PathLike[str]) -> Evaluation:
        """The spilled evaluation written in the directory ``path`` (``spill=``), e.g. in
        another process: :meth:`update` adds to it, :meth:`merge` merges it."""
        store = _spill.Spill.open(path)
        ev = cls.__new__(cls)
        ev._def = Definition.from_json(store.definition)
        ev._rows = ev._train = None
        ev._spill = store
        return ev

    # -- finalize ----------------------------------------------------------------------

    def compute(
        self,
        *,
        ci: str | None = None,
        level: float = 0.95,
        n_resamples: int | None = None,
        seed: int | None = None,
        period: str | int | None = None,
        grouping_sets: Sequence[Sequence[str]] | None = None,
        rollup: Sequence[str] | None = None,
        min_rows: int | None = None,
    ) -> pl.DataFrame:
        """The task method's table (one row per group) on every row seen so far.

        Raises ``ValueError`` when nothing was seen and there is no ``by``, as the task
        method does on an empty frame. With ``time=`` and ``every=`` (SPEC §13), one row per
        (group, window) of ``period`` (default: ``every``: one window per step), merged from
        the states of the steps; ``grouping_sets=`` / ``rollup=`` (keys among ``by``) and
        ``min_rows=`` as on the task methods.

        ``ci="t"`` (ranking and forecasting, SPEC §14) adds ``<metric>_lower`` and
        ``<metric>_upper`` to each mean over queries or series, as the task method's
        ``ci="t"``: from the sums per group (a spilled evaluation keeps only those per
        bucket). ``ci="bootstrap"`` resamples the queries or series (``n_resamples=``,
        ``seed=``; a spilled evaluation then holds one row per query in memory). The
        interval is chosen here, not in the definition: evaluations merge whatever
        interval is asked of them later. ``pe.Evaluation(..., ci="t")`` (with ``level=``,
        ``n_resamples=``, ``seed=``) sets the interval of ``compute()`` without one.
        """
        g = _windows.evaluation_grouping(self._def, period, grouping_sets, rollup, min_rows)
        if g is not None:
            return self._compute_grouped(g)
        d = self._def
        if ci is None and d.options.get("ci") is not None:  # the definition's interval
            ci, level = d.options["ci"], d.options.get("level", 0.95)
            n_resamples, seed = d.options.get("n_resamples"), d.options.get("seed")
        interval = units.unit_ci(ci, level, n_resamples, seed)
        if interval is not None:
            _no_units(d.task)
        spilled = self._spill is not None and bool(self._spill.files())
        if self._rows is None and not spilled and not d.by:
            raise UndefinedMetricError(f"no rows to evaluate: this {d.task} evaluation saw none")
        rows = self._rows if self._rows is not None else self.model.empty()
        request, selects = self._request()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if spilled:
                out = _spill.compute(self, interval)
            else:
                args = self._method_arguments(request) | _ci_arguments(interval)
                out = self.model.finalize(rows, args, interval)
        _rewarn(caught, d.metrics if selects else None)
        return self._chosen(out, list(d.by), selects, interval)

    def _request(self) -> tuple[dict[str, Any], bool]:
        """The task method's arguments for ``metrics=`` and whether the names then select
        the result's columns (the task's hook ``Task.request``)."""
        task = self._def.spec
        return task.load("request")(self._def) if task.request else ({}, True)

    def _method_arguments(self, request: dict[str, Any]) -> dict[str, Any]:
        """The task method's arguments on the state rows (their weight: the model's)."""
        d = self._def
        options = {k: v for k, v in d.options.items() if k not in units.OPTIONS}
        args = {**d.columns, "by": list(d.by) or None, "metrics": None, **options, **request}
        return args | ({} if self._train is None else {"train": self._train})

    def _chosen(
        self, out: pl.DataFrame, keys: list[str], selects: bool, interval: Any = None
    ) -> pl.DataFrame:
        """The columns ``metrics=`` names (when they are not the task method's own)."""
        d = self._def
        if d.metrics is not None and selects:
            missing = [m for m in d.metrics if m not in out.columns]
            if missing:
                raise InvalidParameterError(
                    f"metrics {missing} are not columns of the {d.task} task; "
                    f"available: {[c for c in out.columns if c not in keys]}"
                )
            kept = units.ordered(d.metrics, d.metrics, interval)  # with their intervals
            out = out.select([*keys, *(c for c in kept if c in out.columns)])
        return out

    def _compute_grouped(self, g: _windows.Grouping) -> pl.DataFrame:
        """:meth:`compute` per window and grouping (SPEC §13)."""
        d = self._def
        if self._spill is not None or not self.model.grouped:
            raise InvalidParameterError(
                "windows and grouping sets need pe.Evaluation(..., time=, every=) or a state "
                "of the specs or of the rows (not spill=, the forecast series state or bins= "
                "without time=)"
            )
        rows = self._rows if self._rows is not None else self.model.empty()
        request, selects = self._request()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = self.model.finalize_grouped(rows, g, self._method_arguments(request))
        small = [w for w in caught if "min_rows=" in str(w.message)]  # about every metric
        _rewarn(small, None)
        _rewarn([w for w in caught if w not in small], d.metrics if selects else None)
        return self._chosen(out, g.out, selects)


def _ci_arguments(ci: Any) -> dict[str, Any]:
    """A task method's ``ci=`` arguments for a ``units.UnitCI`` (none without one)."""
    if ci is None:
        return {}
    boot = {"n_resamples": ci.n_resamples, "seed": ci.seed} if ci.bootstrap else {}
    return {"ci": ci.method, "level": ci.level, **boot}


def _lazy(data: pl.DataFrame | pl.LazyFrame | pa.Table) -> pl.LazyFrame:
    """A batch given to :meth:`Evaluation.update` as a LazyFrame."""
    if isinstance(data, pa.Table):
        columns = data.column_names
        repeated = next((name for name in columns if columns.count(name) > 1), None)
        if repeated is not None:  # Polars would raise its own DuplicateError
            raise DataValidationError(
                f'column "{repeated}" appears {columns.count(repeated)} times in the Arrow '
                "table; column names must be unique"
            )
        data = pl.from_arrow(data)  # type: ignore[assignment]
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            "update() takes a polars DataFrame or LazyFrame or a pyarrow Table; "
            f"got {type(data).__name__}"
        )
    return data.lazy()


def _rewarn(caught: list[warnings.WarningMessage], metrics: Sequence[str] | None) -> None:
    """Warn again what the task method warned, only about the ``metrics`` kept."""
    for item in caught:
        message = str(item.message)
        if metrics is not None and issubclass(item.category, UndefinedMetricWarning):
            parts = [p for p in message.split("; ") if p.split(" ", 1)[0] in metrics]
            if not parts:
                continue
            message = "; ".join(parts)
        warnings.warn(message, item.category, stacklevel=3)


def _same_frame(a: pl.DataFrame | None, b: pl.DataFrame | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.equals(b)
