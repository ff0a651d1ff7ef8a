"""``pe.Evaluation``: a task's mergeable state, updated batch by batch (SPEC §10).

Two kinds of state, chosen from the definition:

**The metric specs' states**, where every metric of the task table keeps states of a
bounded size: sums, minima, maxima and co-moments (see ``polars_eval/_core/spec.py``).
That is the regression table without its order statistics, the multiclass table with
``classes=`` (without its AUCs), and binary tables of one-pass metrics (log loss, Brier
score, the confusion-count metrics at ``threshold``). :meth:`Evaluation.update`
computes, per group, every distinct state of the table's specs once (the planner's
layout, columns ``__pe_s<i>``; a LazyFrame in one streaming query, every state being a
streaming aggregation, the co-moments included), :meth:`Evaluation.merge` stacks two such frames and re-aggregates each column
by its state's merge rule (a sum, a minimum, a maximum, Chan et al.'s merge of
co-moments), and :meth:`Evaluation.compute` finalizes every metric over the merged
states, as the task method finalizes its own ``group_by``. Memory is bounded by the
number of groups, not by the rows. The forecast table is the same per (``by`` groups,
series): the sums of its first stage, scaled and averaged over series at ``compute()``,
with the runs of times each series has seen to find a repeated (series, time) key; see
:mod:`polars_eval.scale.forecast_state`. Memory is bounded by the series.

**The distinct rows** (everything else): one row per distinct (group, input values)
with the summed weight. The states of a size that grows with the data keep them: the
rows themselves (order statistics: ``medae``, ``spearman``, ``kendall_tau``, ``mer``; the
multiclass AUCs; a multiclass task without ``classes=``) and the sort-based binary
metrics' list of one ``{t, tp, fp}`` per distinct score (AUC, PR-AUC, KS, ECE, the
max-over-threshold metrics: their distinct (group, label, score) rows are the same
"counts per distinct key" of SPEC §10, counted by a streaming hash aggregation, which
``benchmarks/RESULTS.md`` ("Lakes") measured 2.3× faster and 40 % smaller than sorting
chunks and merging their lists); the ``baseline=True`` columns of binary and regression
(the constant predictor is the group's mean: a function of the whole group); and the
ranking task. A metric is a function of the *weighted empirical distribution* of its
inputs within a group, so two such states merge by concatenating them and summing the
weights per key, and :meth:`Evaluation.compute` runs the task method on the state, the
summed weight as the weight. Memory grows with the distinct rows: a score column
stored at 4 decimals has at most 10,001 distinct values per (group, label).
``bins=N`` (binary) counts scores in N bins instead, with the one-pass metrics (log
loss, Brier score and the confusion counts at ``threshold``) kept exact as sums; see
:func:`score_bin`. Ranked items with ids (a row by its query and item id) keep their
rows as they are: a query split across partitions still merges exactly, and a key seen
twice is the task's duplicate-key error at ``compute()`` (as a forecast key is).

Either way the numbers are those of the task method on all the rows seen (to rounding,
1e-12). The state is a ``pl.DataFrame`` that carries its own definition (task, columns,
options, format version) in a first row, so ``ev.state.write_parquet(path)`` and
``Evaluation.from_state(pl.read_parquet(path))`` round-trip (the co-moments' struct
columns included).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl
import pyarrow as pa

from polars_eval._core import registry as _registry
from polars_eval._core import windows as _windows
from polars_eval._core.planner import no_rows_text, row_counts
from polars_eval._core.table import Checks, Specs, Table, arguments
from polars_eval._core.tasks import TASKS
from polars_eval._exprs import binary_label, to_float
from polars_eval._validate import (
    check_aggs,
    raise_for_checks,
)
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)
from polars_eval.metrics import multiclass as _multiclass
from polars_eval.metrics._curve import score_bin  # noqa: F401 - re-exported (pe.scale.score_bin)
from polars_eval.scale import chunked as _chunked
from polars_eval.scale import spill as _spill
from polars_eval.scale.binned import Binned
from polars_eval.scale.forecast_state import ForecastState
from polars_eval.stats import units
from polars_eval.tasks import binary as _binary_task
from polars_eval.tasks import multiclass as _multiclass_task
from polars_eval.tasks import regression as _regression_task

STATE_VERSION = 3
"""The format version of a state frame; a state of a newer version is refused, and one
of version 1 (distinct rows for every task) where this version keeps the specs' states.
Version 3: the forecast state per series (versions 1 and 2 kept its rows, which are read
and turned into it)."""

PART = "__pe_part"  # "def": the definition row; "states" / "rows" / "train": data rows
DEF = "__pe_def"  # the JSON definition, on the definition row only
W = "__pe_w"  # summed weight per distinct key
N = "__pe_n"  # number of rows per distinct key (ranking without item ids)
BIN = "__pe_bin"  # the bin of a score (binned mode)
ABOVE = "__pe_above"  # score >= threshold (binned mode)
LL = "__pe_ll"  # summed weighted log loss terms (binned mode)
SQ = "__pe_sq"  # summed weighted squared errors (binned mode)
LABEL01 = "__pe_y"  # the 0/1 label (binned mode)


@dataclass(frozen=True)
class _Definition:
    task: str
    columns: Mapping[str, Any]
    options: Mapping[str, Any]
    by: tuple[str, ...]
    metrics: tuple[str, ...] | None
    weight: str | None
    bins: int | None
    windows: Mapping[str, Any] | None = None  # time, every, offset (SPEC §13)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": STATE_VERSION,
                "task": self.task,
                "columns": dict(self.columns),
                "options": _jsonable(dict(self.options)),
                "by": list(self.by),
                "metrics": None if self.metrics is None else list(self.metrics),
                "weight": self.weight,
                "bins": self.bins,
                "windows": None if self.windows is None else dict(self.windows),
            },
            sort_keys=True,
        )

    @staticmethod
    def from_json(text: str) -> _Definition:
        raw = json.loads(text)
        version = raw.get("version")
        if not isinstance(version, int) or version > STATE_VERSION:
            raise InvalidParameterError(
                f"this state was written by a newer polars_eval (state format version "
                f"{version!r}; this version reads up to {STATE_VERSION}): upgrade polars_eval"
            )
        options = dict(raw["options"])
        if raw["task"] == "forecast" and options.get("quantiles") is not None:
            options["quantiles"] = {float(q): c for q, c in options["quantiles"].items()}
        for key in ("interval", "k"):
            if isinstance(options.get(key), list):
                options[key] = tuple(options[key])
        return _Definition(
            task=raw["task"],
            columns=raw["columns"],
            options=options,
            by=tuple(raw["by"]),
            metrics=None if raw["metrics"] is None else tuple(raw["metrics"]),
            weight=raw["weight"],
            bins=raw["bins"],
            windows=raw.get("windows"),
        )

    def differences(self, other: _Definition) -> list[str]:
        mine, theirs = json.loads(self.to_json()), json.loads(other.to_json())
        return [
            f"{key}: {mine[key]!r} vs {theirs[key]!r}"
            for key in sorted(mine)
            if mine[key] != theirs[key]
        ]


# -- the specs' states of a task table -----------------------------------------------------

COUNTS = ("__pe_n", "__pe_complete", "__pe_used")  # rows, complete rows, used rows (no by)
_CHUNK_ROWS = 1 << 20
"""A forecast LazyFrame's rows are turned into states about this many at a time (the
distinct rows: :data:`polars_eval.scale.chunked.CHUNK_ROWS`)."""
_MERGE_EVERY = 8
"""The states of this many chunks are merged into one as they come."""


def _bounded(table: Table) -> bool:
    """Every state of the table's specs is of a bounded size (no ``rows``, no per-score
    ``list``)."""
    assert isinstance(table.query, Specs)
    specs = table.query.specs.values()
    return all(s.kind not in ("rows", "list") for spec in specs for s in spec.states.values())


def _arguments(d: _Definition, **extra: Any) -> dict[str, Any]:
    """The task method's arguments (its defaults filled in) for the definition ``d``."""
    method = TASKS[d.task].method
    given = {**d.columns, **d.options, "weight": d.weight, "by": list(d.by), **extra}
    return arguments(method, **given)


def _regression_table(d: _Definition) -> Table | None:
    if d.options["baseline"]:
        return None
    names = None if d.metrics is None else [n for n in d.metrics if n != "zero_actuals"]
    table = _regression_task.regression_table(_arguments(d, metrics=names))
    return table if _bounded(table) else None


def _binary_table(d: _Definition) -> Table | None:
    binned = d.bins is not None and d.windows is not None  # per step: lists of <= bins points
    if d.options["baseline"] or (d.bins is not None and not binned):
        return None
    table = _binary_task.binary_table(_arguments(d, bins=d.bins, metrics=d.metrics))
    return table if binned or _bounded(table) else None


def _multiclass_table(d: _Definition) -> Table | None:
    if d.options["classes"] is None or (d.columns["pred"] is None and d.columns["proba"] is None):
        return None  # classes learnt from each group's rows (or the task method's error)
    metrics = _multiclass_metrics(d.metrics)
    table = _multiclass_task.multiclass_table(_arguments(d, metrics=metrics))
    return table if _bounded(table) else None  # e.g. the AUCs, whose state is the rows


def _multiclass_metrics(names: Sequence[str] | None) -> list[str] | None:
    """The registered multiclass metrics behind ``metrics=``: the names themselves when
    every one is registered, else the metrics whose columns they name (``multiclass_f1_macro``
    is a column of ``multiclass_f1``), so that the states kept are those of the columns
    asked for (None: the task's defaults)."""
    if names is None:
        return None
    infos = _registry.by_task("multiclass")
    if set(names) <= {info.name for info in infos}:
        return list(names)
    return [
        info.name
        for info in infos
        if any(n == info.name or n.startswith(info.name + "_") for n in names)
    ] or None


_TABLES = {
    "binary": _binary_table,
    "regression": _regression_table,
    "multiclass": _multiclass_table,
}


def _table(d: _Definition) -> Table | None:
    """The task method's table, whose specs' states are kept (``Table.partition``), or
    None where the rows are kept. Without ``by`` (or with windows) the states hold the
    rows, complete rows and used rows too (the "no rows" error, ``min_rows=``)."""
    build = _TABLES.get(d.task)
    table = build(d) if build is not None else None
    if table is None or (d.by and d.windows is None):
        return table
    counts = row_counts(table.checks.args, table.checks.inputs)
    assert counts is not None and isinstance(table.query, Specs)
    sums = [*table.query.sums, *(e.alias(n) for n, e in zip(COUNTS, counts, strict=True))]
    return replace(table, query=replace(table.query, sums=sums))


def _forecast_metrics(names: Sequence[str] | None) -> list[str] | None:
    """The forecast table's ``metrics=`` behind ``metrics=``: the names when every one is
    a registered metric the table takes (regression and forecasting metrics of one value),
    otherwise None (the default table, whose columns the names then select)."""
    if names is None:
        return None
    from polars_eval.tasks.forecast import KEY_TASKS

    known = {
        info.name
        for info in _registry.REGISTRY.values()
        if info.task in KEY_TASKS and info.kind == "scalar" and info.spec is not None
    }
    return list(names) if set(names) <= known and len(set(names)) == len(names) else None


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _names(value: Any) -> list[str]:
    """The column names of a column argument (a name or a list of names)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InvalidParameterError(
        "pe.Evaluation takes column names (str, or a list of str for several columns); "
        f"got {value!r}"
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
        time = columns.get("time") if task == "forecast" else columns.pop("time", None)
        windows = _windows.evaluation_windows(task, time, every, offset, _names(by))
        if bins is not None:
            if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
                raise InvalidParameterError(f"bins must be an integer >= 2; got {bins!r}")
            if task != "binary":
                raise InvalidParameterError(
                    f"bins= is available for the binary task; the {task} task keeps exact "
                    "states (distinct values)"
                )
        # the default interval of compute() (ranking, forecast): kept in the definition only
        # when given, so that other definitions read (and merge) as before
        interval = {k: columns.pop(k) for k in units.OPTIONS if k in columns}
        if interval:
            units.unit_ci(**{"level": 0.95, **interval})
            if task not in ("ranking", "forecast"):
                raise InvalidParameterError(
                    f"ci= is an interval over queries or series (the ranking and forecast "
                    f"tasks); the {task} task has no units"
                )
        t = TASKS[task]  # its columns and options (their defaults: the task method's)
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
            _names(columns.get(key))
        if task == "ranking" and columns.get("ties", "average") != "average":
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
        if task == "forecast" and train is not None:
            train = train.lazy().collect()
        elif train is not None:
            raise InvalidParameterError(f"train= is for the forecast task, not {task}")
        options = {key: columns.get(key, default) for key, default in defaults.items()}
        options.update(interval)
        self._def = _Definition(
            task=task,
            columns={key: columns.get(key) for key in t.columns},
            options=options,
            by=tuple(_windows.state_keys(task, _names(by), windows)),
            metrics=None if metrics is None else tuple(metrics),
            weight=weight,
            bins=bins,
            windows=windows,
        )
        self._train: pl.DataFrame | None = train  # type: ignore[assignment]
        self._rows: pl.DataFrame | None = None
        self._table_cache = _table(self._def)  # option and metric errors now, not at compute
        self._forecast  # noqa: B018 - the same for the forecast state
        self._spill: _spill.Spill | None = None
        if spill is not None and task != "ranking":
            raise InvalidParameterError(
                f"spill= is available for the ranking task; the {task} task keeps its state "
                "in memory"
            )
        if spill is not None:
            self._spill = _spill.Spill.create(spill, self._def.to_json(), spill_buckets)
        elif spill_buckets is not None:
            raise InvalidParameterError("spill_buckets= needs spill= (a directory)")

    def __getstate__(self) -> dict[str, Any]:
        # sent to Spark's executors: the table (expressions and closures) is built again there
        return {
            k: v for k, v in self.__dict__.items() if k not in ("_table_cache", "_forecast_cache")
        }

    # -- the state ---------------------------------------------------------------------

    @property
    def _table(self) -> Table | None:
        """The task table as the specs' states; None where the distinct rows are kept."""
        if "_table_cache" not in self.__dict__:
            self._table_cache = _table(self._def)
        return self._table_cache

    @property
    def _forecast(self) -> ForecastState | None:
        """The bounded forecast state (per series: the metrics' states and the runs of
        times seen), None for another task or where a metric's state is the rows."""
        if "_forecast_cache" not in self.__dict__:
            d = self._def
            state = None
            if d.task == "forecast" and d.windows is None:  # windowed: its rows are kept
                state = ForecastState(
                    d.columns,
                    d.options,
                    d.by,
                    _forecast_metrics(d.metrics),
                    d.weight,
                    trained=self.__dict__.get("_train") is not None,
                )
            self._forecast_cache = state if state is not None and state.bounded else None
        return self._forecast_cache

    @property
    def _states(self) -> bool:
        """The state rows are states merged by their rules (not rows summed per key)."""
        return self._table is not None or self._forecast is not None

    @property
    def _part(self) -> str:
        """The ``__pe_part`` tag of the data rows of :attr:`state`."""
        return "states" if self._states else "rows"

    @property
    def _keyed(self) -> bool:
        """Rows kept as they are (keyed by series/time or query/item), not re-aggregated."""
        d = self._def
        if d.task == "forecast":
            return self._forecast is None
        return d.task == "ranking" and d.columns.get("item") is not None

    def _row_scales(self) -> pl.LazyFrame | None:
        """The in-sample scales of the series, for the forecast metrics that read them per
        row (``spis``, the scaled quantile losses); None where none does."""
        fs = self._forecast
        if fs is None or not fs.plan.row_scale or self._train is None:
            return None
        if "_scales_cache" not in self.__dict__:
            self._scales_cache = fs.scales(self._train).collect()
        return self._scales_cache.lazy()

    def _value_columns(self) -> list[str]:
        d = self._def
        if self._keyed or self._states:
            return []
        if d.task == "ranking":
            return [N]
        if d.bins is not None:
            return [W, LL, SQ]
        return [W]

    def _row_columns(self) -> list[str]:
        """The columns of the state rows."""
        d = self._def
        if self._table is not None:
            return [*d.by, *self._table.states]
        if self._forecast is not None:
            return self._forecast.columns
        if d.bins is not None:
            return [*d.by, LABEL01, BIN, ABOVE, W, LL, SQ]
        if self._keyed or d.task == "ranking":
            return self._inputs() + self._value_columns()
        return [c for c in self._inputs() if c != d.weight] + [W]

    def _inputs(self) -> list[str]:
        """The input columns a batch must have (columns, weight, by)."""
        d = self._def
        cols = [c for key in TASKS[d.task].columns for c in _names(d.columns.get(key))]
        if d.task == "forecast":
            for c in (d.options.get("quantiles") or {}).values():
                cols.append(c)
            cols += list(d.options.get("interval") or ())
        if d.weight is not None:
            cols.append(d.weight)
        return list(dict.fromkeys([*d.by, *cols]))

    def _check(self, lf: pl.LazyFrame) -> list[pl.Expr]:
        """Column problems now; the row checks as aggregations to collect with the state."""
        d = self._def
        schema = lf.collect_schema()
        if self._table is not None:  # the task method's own checks: the rows are not kept
            self._checks = self._table.checks.resolve(schema, d.by)
            return check_aggs(self._checks, examples=False)
        args: dict[str, Any] = dict(d.columns)
        roles: dict[str, Any] = dict(TASKS[d.task].roles)
        if d.task == "binary":
            args["pos_label"] = d.options["pos_label"]
            if d.options["probability"]:
                roles["score"] = "proba"
        args["weight"] = d.weight
        roles["weight"] = "weight"
        if d.task == "forecast":  # the task method's numeric inputs
            for i, c in enumerate((d.options.get("quantiles") or {}).values()):
                args[f"quantile_{i}"], roles[f"quantile_{i}"] = c, "numeric"
            if d.options.get("interval") is not None:
                args["lower"], args["upper"] = d.options["interval"]
                roles["lower"] = roles["upper"] = "numeric"
        checks = Checks(roles, args).resolve(schema, d.by)  # a column problem raised first
        for c in (d.options.get("quantiles") or {}).values() if d.task == "forecast" else ():
            if c not in schema:
                raise DataValidationError(f'column "{c}" (argument quantiles=) not found')
        self._checks = checks
        return check_aggs(self._checks, examples=False)

    def _batch_rows(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        """The state rows of one batch, as a lazy query."""
        d = self._def
        lf = _windows.steps_of(lf, d.task, d.windows)  # the time column as its every-step
        table = self._table
        if table is not None:
            return table.partition(lf)
        if self._forecast is not None:
            return self._forecast.batch(lf, self._row_scales())
        cols = self._inputs()
        w = pl.col(d.weight).cast(pl.Float64) if d.weight is not None else pl.lit(1.0)
        if self._keyed:
            return lf.select(cols)
        keys = [c for c in cols if c != d.weight]
        if d.task == "ranking":
            # tied items of one query with the same grade are interchangeable (ties="average")
            keys = cols
            return lf.group_by(keys).agg(pl.len().cast(pl.Int64).alias(N))
        if d.bins is None:
            total = w.sum() if d.weight is not None else pl.len().cast(pl.Float64)
            return lf.group_by(keys).agg(total.alias(W))
        # binned binary: (group, label, bin, score >= threshold) with exact sums
        return self._binned(lf.collect_schema()).state_rows(lf)

    def _binned(self, schema: pl.Schema) -> Binned:
        """The binned state over frames of ``schema`` (:mod:`polars_eval.scale.binned`)."""
        from polars_eval.metrics.binary import LOGLOSS_EPS

        d = self._def
        assert d.bins is not None
        w = pl.col(d.weight).cast(pl.Float64) if d.weight is not None else pl.lit(1.0)
        label, score = d.columns["label"], d.columns["score"]
        y = binary_label(pl.col(label), d.options["pos_label"])
        s = to_float(score)
        p = s.clip(LOGLOSS_EPS, 1.0 - LOGLOSS_EPS)
        ll = -(y * p.log() + (1.0 - y) * (1.0 - p).log())
        return Binned(
            schema,
            d.by,
            y,
            s,
            w,
            y.is_not_null() & s.is_not_null() & w.is_not_null(),
            ll,
            bins=d.bins,
            probability=d.options["probability"],
            threshold=d.options["threshold"],
            columns=(LABEL01, BIN, ABOVE, W, LL, SQ),
        )

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
            self._add(self._state_rows(data))
        return self

    def _state_rows(self, data: pl.DataFrame | pl.LazyFrame | pa.Table) -> pl.DataFrame:
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
        checks = self._check(lf)
        if isinstance(data, pl.LazyFrame) and self._forecast is not None:
            return _chunked.streamed_states(self, lf, checks, _CHUNK_ROWS, _MERGE_EVERY)
        if isinstance(data, pl.LazyFrame) and not (self._states or self._keyed):
            return _chunked.streamed_states(self, lf, checks)
        many = self._table is not None and isinstance(data, pl.LazyFrame)
        if many and not _chunked.few_groups(self, lf):
            return _chunked.streamed_states(self, lf, checks)  # many groups: chunks too
        rows_q = self._batch_rows(lf)
        if checks:
            rows, bad = pl.collect_all([rows_q, lf.select(checks)], engine="streaming")
            raise_for_checks(bad, self._checks, per_row=False, source=lf)
        else:
            rows = rows_q.collect(engine="streaming")
        return rows

    def _add(self, rows: pl.DataFrame) -> None:
        if self._rows is None or self._rows.height == 0:
            self._rows = rows
        else:
            self._rows = self._merge_rows([self._rows, rows])

    def _merge_rows(self, parts: Sequence[pl.DataFrame]) -> pl.DataFrame:
        """State rows of disjoint rows merged: each state column by its merge rule per group
        (the specs' states), or the value columns summed per key (or kept)."""
        merged = pl.concat(parts, how="vertical_relaxed")
        if self._forecast is not None:
            return self._forecast.merge(merged)
        if self._table is not None:
            return self._table.merge(merged)
        values = self._value_columns()
        if values:
            keys = [c for c in merged.columns if c not in values]
            merged = merged.group_by(keys, maintain_order=True).agg(pl.col(values).sum())
        return merged

    def merge(self, other: Evaluation) -> Evaluation:
        """Add the state of ``other`` (the same definition, disjoint rows). Returns ``self``."""
        if not isinstance(other, Evaluation):
            raise InvalidParameterError(f"merge() takes an Evaluation; got {type(other).__name__}")
        diff = self._def.differences(other._def)
        if self._def.task == "forecast" and not _same_frame(self._train, other._train):
            diff.append("train: different training frames")
        if diff:
            raise InvalidParameterError(
                "cannot merge evaluations of different definitions: " + "; ".join(diff)
            )
        if self._spill is not None or other._spill is not None:
            _spill.merge(self, other)
        elif other._rows is not None:
            self._add(other._rows)
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
            parts.append(rows.with_columns(pl.lit(self._part).alias(PART)))
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
        definition = _Definition.from_json(head[DEF].item())
        ev = cls.__new__(cls)
        ev._def = definition
        ev._table_cache = _table(definition)
        if ev._table is not None and json.loads(head[DEF].item())["version"] < 2:
            raise InvalidParameterError(
                "this state was written by an older polars_eval (state format version 1, "
                "distinct rows), which this version keeps as the metrics' states: evaluate "
                "the rows again"
            )
        train = state.filter(pl.col(PART) == "train")
        ev._train = None
        ev._spill = None
        if definition.task == "forecast" and train.height:
            names = [definition.columns[k] for k in ("series", "time", "actual")]
            ev._train = train.select(_names(definition.columns["series"]) + names[1:])
        rows = state.filter(pl.col(PART) == ev._part)
        if ev._forecast is not None and not rows.height:
            # a forecast state of version 1 or 2 keeps the rows: their states now
            older = state.filter(pl.col(PART) == "rows")
            if older.height:
                rows = ev._batch_rows(older.select(ev._inputs()).lazy()).collect()
        columns = ev._row_columns()
        missing = [c for c in columns if c not in rows.columns]
        if missing:
            raise InvalidParameterError(
                f"this state frame lacks the state column(s) {missing} of its definition"
            )
        ev._rows = rows.select(columns) if rows.height else None
        return ev

    @classmethod
    def from_spill(cls, path: str | os.PathLike[str]) -> Evaluation:
        """The spilled evaluation written in the directory ``path`` (``spill=``), e.g. in
        another process: :meth:`update` adds to it, :meth:`merge` merges it."""
        store = _spill.Spill.open(path)
        ev = cls.__new__(cls)
        ev._def = _Definition.from_json(store.definition)
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
        if interval is not None and d.task not in ("ranking", "forecast"):
            raise InvalidParameterError(
                f"ci= is an interval over queries or series (the ranking and forecast "
                f"tasks); the {d.task} task has no units"
            )
        spilled = self._spill is not None and bool(self._spill.files())
        if self._rows is None and not spilled and not d.by:
            raise UndefinedMetricError(f"no rows to evaluate: this {d.task} evaluation saw none")
        rows = self._rows if self._rows is not None else self._empty_rows()
        chosen = self._method_metrics()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = (
                _spill.compute(self, interval)
                if spilled
                else self._finalize(rows, chosen, interval)
            )
        _rewarn(caught, d.metrics if chosen is None else None)
        return self._chosen(out, list(d.by), chosen, interval)

    def _chosen(
        self, out: pl.DataFrame, keys: list[str], chosen: list[str] | None, interval: Any = None
    ) -> pl.DataFrame:
        """The columns ``metrics=`` names (when they are not the task method's own)."""
        d = self._def
        if d.metrics is not None and chosen is None:
            missing = [m for m in d.metrics if m not in out.columns]
            if missing:
                raise InvalidParameterError(
                    f"metrics {missing} are not columns of the {d.task} task; "
                    f"available: {[c for c in out.columns if c not in keys]}"
                )
            from polars_eval.stats import units

            kept = units.ordered(d.metrics, d.metrics, interval)  # with their intervals
            out = out.select([*keys, *(c for c in kept if c in out.columns)])
        return out

    def _compute_grouped(self, g: _windows.Grouping) -> pl.DataFrame:
        """:meth:`compute` per window and grouping (SPEC §13)."""
        d = self._def
        if self._spill is not None or self._forecast is not None or (d.bins and not self._table):
            raise InvalidParameterError(
                "windows and grouping sets need pe.Evaluation(..., time=, every=) or a state "
                "of the specs or of the rows (not spill=, the forecast series state or bins= "
                "without time=)"
            )
        rows = self._rows if self._rows is not None else self._empty_rows()
        chosen = self._method_metrics()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if self._table is not None:
                out = self._table.finalize(rows, grouping=g, used=_windows.USED)
            else:
                out = self._finalize(rows, chosen, grouped=_windows.method_options(g, d))
        small = [w for w in caught if "min_rows=" in str(w.message)]  # about every metric
        _rewarn(small, None)
        _rewarn([w for w in caught if w not in small], d.metrics if chosen is None else None)
        return self._chosen(out, g.out, chosen)

    def _method_metrics(self) -> list[str] | None:
        """The task method's ``metrics=``: for multiclass, the names when every one is a
        registered multiclass metric; otherwise None (the names then select columns)."""
        d = self._def
        if d.task != "multiclass" or d.metrics is None:
            return None
        from polars_eval._core import registry as _registry

        registered = {info.name for info in _registry.by_task("multiclass")}
        return list(d.metrics) if set(d.metrics) <= registered else None

    def _finalize(
        self,
        rows: pl.DataFrame,
        metrics: list[str] | None = None,
        ci: Any = None,
        grouped: Mapping[str, Any] | None = None,
    ) -> pl.DataFrame:
        """The task method on the state rows, the summed weight as the weight; or the
        task table's finalizers over the merged states. ``ci``: the interval over units
        (``units.UnitCI``, ranking and forecasting); ``grouped``: the task method's
        options of windows and grouping sets (``by`` among them)."""
        d = self._def
        if self._table is not None:
            return self._finalize_states(rows)
        if self._forecast is not None:
            return self._forecast.finalize(rows, self._train, ci)
        by = list(d.by) or None
        extra = dict(grouped or {})
        by = extra.pop("by", by)
        opts = {k: v for k, v in d.options.items() if k not in units.OPTIONS} | extra
        if d.task == "binary" and d.bins is not None:
            return self._compute_binned(rows, by)
        if d.task == "ranking":
            if not self._keyed:
                values = [c for c in rows.columns if c != N]
                rows = rows.with_columns(pl.col(values).repeat_by(N)).explode(values)
            request = _spill.table_request(d) | {"by": by} | extra
            return rows.eval.ranking(**request, **_ci_arguments(ci))
        if d.task == "forecast":  # its rows as they are, the training rows, the interval
            opts |= {"train": self._train, **_ci_arguments(ci)}
            metrics = _forecast_metrics(d.metrics)
        # the task method on the rows, their summed weight as the weight
        method = getattr(rows.eval, d.task)
        weight = d.weight if self._keyed else W
        return method(**d.columns, weight=weight, by=by, metrics=metrics, **opts)

    def _finalize_states(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Every column of the task table from the states, as the task method finalizes
        its ``group_by``; its undefined values reported as it reports them."""
        d, table = self._def, self._table
        assert table is not None
        by = list(d.by)
        # stacked states of several parts (Spark sends them so) are merged first
        stacked = rows.select(pl.struct(by).is_duplicated().any()).item() if by else rows.height > 1
        merged = self._merge_rows([rows]) if stacked else rows

        def no_rows() -> str | None:
            n, complete, used = (merged.get_column(c).item() for c in COUNTS)
            return no_rows_text(n, complete, used, table.checks.args, table.checks.inputs)

        return table.finalize(merged, no_rows=no_rows)

    def _empty_rows(self) -> pl.DataFrame:
        """The state of an evaluation that saw no rows (with ``by``: no group)."""
        if self._forecast is not None:
            schema = {c: pl.Float64 for c in self._inputs()}
            return self._batch_rows(pl.LazyFrame(schema=schema)).collect()
        if self._table is not None:
            d = self._def
            schema: dict[str, pl.DataType] = {c: pl.Float64 for c in self._inputs()}
            if d.task == "multiclass":  # labels of the classes' kind
                classes = _multiclass.check_classes(d.options["classes"]) or [0.0]
                for key in ("label", "pred"):
                    for c in _names(d.columns[key]):
                        schema[c] = _multiclass.class_dtype(classes)
                if isinstance(d.columns["proba"], str):
                    schema[d.columns["proba"]] = pl.List(pl.Float64)
            return self._batch_rows(pl.LazyFrame(schema=schema)).collect()
        # the task method on an empty frame
        schema = {c: pl.Float64 for c in self._row_columns()}
        types = {N: pl.Int64, BIN: pl.Int32, ABOVE: pl.Boolean}
        schema.update({c: t for c, t in types.items() if c in schema})
        return pl.DataFrame(schema=schema)

    def _compute_binned(self, rows: pl.DataFrame, by: list[str] | None) -> pl.DataFrame:
        """Sort-based metrics over the bins; log loss, Brier and threshold metrics exact."""
        from polars_eval._core import registry as _registry
        from polars_eval.metrics import binary as b

        d = self._def
        n_bins = d.bins
        assert n_bins is not None
        usable = pl.col(LABEL01).is_not_null() & pl.col(BIN).is_not_null() & (pl.col(W) > 0)
        if not by and not rows.select(usable.any()).item():
            raise UndefinedMetricError(
                "no rows to evaluate: no row seen has a label, a score and a positive "
                "weight; every metric is undefined"
            )
        rep = (pl.col(BIN) + 0.5) / n_bins if d.options["probability"] else pl.col(BIN)
        scored = rows.with_columns(rep.cast(pl.Float64).alias("__pe_rep"))
        out = scored.eval.binary(
            LABEL01,
            "__pe_rep",
            weight=W,
            by=by,
            threshold=d.options["threshold"],
            probability=d.options["probability"],
            baseline=d.options["baseline"],
        )
        order = out.columns
        exact = [
            _registry.get(name).fn(LABEL01, pred=ABOVE, weight=W).alias(name)
            for name in b.THRESHOLD_FORMULAS
            if name in out.columns
        ]
        total = pl.col(W).sum()
        if "logloss" in out.columns:
            exact.append(pl.when(total > 0).then(pl.col(LL).sum() / total).alias("logloss"))
        if "brier" in out.columns:
            exact.append(pl.when(total > 0).then(pl.col(SQ).sum() / total).alias("brier"))
        sums = scored.group_by(by).agg(exact) if by else scored.select(exact)
        replaced = [c for c in sums.columns if c not in (by or [])]
        if by:
            out = out.drop(replaced).join(sums, on=by, how="left", nulls_equal=True)
        else:
            out = out.drop(replaced).with_columns(sums)
        return out.select(order)


def _ci_arguments(ci: Any) -> dict[str, Any]:
    """A task method's ``ci=`` arguments for a ``units.UnitCI`` (none without one)."""
    if ci is None:
        return {}
    boot = {"n_resamples": ci.n_resamples, "seed": ci.seed} if ci.bootstrap else {}
    return {"ci": ci.method, "level": ci.level, **boot}


def _lazy(data: pl.DataFrame | pl.LazyFrame | pa.Table) -> pl.LazyFrame:
    """A batch given to :meth:`Evaluation.update` as a LazyFrame."""
    if isinstance(data, pa.Table):
        names = data.column_names
        repeated = next((name for name in names if names.count(name) > 1), None)
        if repeated is not None:  # Polars would raise its own DuplicateError
            raise DataValidationError(
                f'column "{repeated}" appears {names.count(repeated)} times in the Arrow '
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
