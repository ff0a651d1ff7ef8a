"""What ``pe.Evaluation`` keeps of the rows it sees: its state rows and their rules (SPEC §10).

:func:`kept` asks the task's hook (``Task.evaluation``, see
:class:`~polars_eval._core.tasks.Task`) for the bounded state of a definition and wraps
it, or keeps the rows:

- :class:`TableKept`: a task table's specs' states, one row per group (the table's
  ``partition``, ``merge``, ``finalize``; per window and grouping too);
- :class:`BinsKept`: the binary bins and sums (``bins=``, the bins table of
  :mod:`polars_eval.tasks._binary_bins`, reduced by :class:`~polars_eval.scale.binned.Binned`);
- :class:`SeriesKept`: the forecast states per series (:mod:`polars_eval.scale.forecast_state`);
- :class:`RowsKept`: the rows, for everything else. A task with keys keeps its rows as
  they are where every key column is given (a key seen twice is the task's error at
  ``compute()``), else counted per distinct row (``__pe_n``: ranked items of one query
  with the same grade are interchangeable); any other task one row per distinct (group,
  input values) with the summed weight (``__pe_w``). A metric is a function of the
  weighted empirical distribution of its inputs within a group, so such states merge by
  summing per key, and the task method finalizes them, the summed weight as the weight.

Each gives the columns of its state rows (``columns``; ``values``: those summed per key by
a merge, none where its own rule merges), the state rows of a batch (``batch``), the
merge of stacked state rows (``merge``), the table (``finalize``; per window and grouping:
``finalize_grouped`` where ``grouped``), the state of no rows (``empty``), the checks of a
batch (``checks``), and how a LazyFrame is read (``stream``: in chunks, in chunks where the
first rows hold many groups, or one query; :mod:`polars_eval.scale.chunked`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import polars as pl

from polars_eval._core import windows as _windows
from polars_eval._core.planner import no_rows_text, row_counts
from polars_eval._core.table import Checks, Specs, Table
from polars_eval.metrics.multiclass import check_classes, class_dtype
from polars_eval.scale.binned import Binned
from polars_eval.scale.definition import Definition, names
from polars_eval.scale.forecast_state import ForecastState
from polars_eval.tasks._binary_bins import SUMS, BinsTable

W = "__pe_w"  # summed weight per distinct key
N = "__pe_n"  # number of rows per distinct key (a task with keys, not all given)
COUNTS = ("__pe_n", "__pe_complete", "__pe_used")  # rows, complete rows, used rows (no by)


class Kept:
    """The state rows of one definition (see the module's docstring)."""

    part = "rows"  # the ``__pe_part`` tag of the state rows in ``Evaluation.state``
    values: list[str] = []
    stream = "chunks"
    grouped = False
    table: Table | None = None  # the task table whose states are kept

    def __init__(self, d: Definition, checks: Checks) -> None:
        self.d = d
        self.checks = checks

    @property
    def inputs(self) -> list[str]:
        """The input columns a batch must have (``by``, the columns, the weight)."""
        args = self.checks.args
        used = [c for a in self.checks.inputs if a != "weight" for c in names(args.get(a))]
        weight = [self.d.weight] if self.d.weight is not None else []
        return list(dict.fromkeys([*self.d.by, *used, *weight]))

    @property
    def columns(self) -> list[str]:
        raise NotImplementedError

    def batch(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        raise NotImplementedError

    def merge(self, frame: pl.DataFrame) -> pl.DataFrame:
        raise NotImplementedError

    def finalize(self, rows: pl.DataFrame, args: Mapping[str, Any], ci: Any) -> pl.DataFrame:
        """The task's table from the state rows (``args``: the task method's arguments,
        ``ci``: the interval over units)."""
        raise NotImplementedError

    def finalize_grouped(
        self, rows: pl.DataFrame, g: _windows.Grouping, args: Mapping[str, Any]
    ) -> pl.DataFrame:
        raise NotImplementedError

    def empty(self) -> pl.DataFrame:
        """The state rows of no rows (a batch of Float64 columns)."""
        schema = {c: pl.Float64 for c in self.inputs}
        return self.batch(pl.LazyFrame(schema=schema)).collect()


class TableKept(Kept):
    """A task table's specs' states, one row per group. Without ``by`` (or with
    windows) the states hold the rows, complete rows and used rows too (the "no rows"
    error, ``min_rows=``)."""

    part = "states"
    stream = "groups"
    grouped = True

    def __init__(self, d: Definition, table: Table, checks: Checks) -> None:
        super().__init__(d, checks)
        if not d.by or d.windows is not None:
            counts = row_counts(table.checks.args, table.checks.inputs)
            assert counts is not None and isinstance(table.query, Specs)
            added = [e.alias(n) for n, e in zip(COUNTS, counts, strict=True)]
            table = replace(table, query=replace(table.query, sums=[*table.query.sums, *added]))
        self.table = table

    @property
    def columns(self) -> list[str]:
        assert self.table is not None
        return [*self.d.by, *self.table.states]

    def batch(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        assert self.table is not None
        return self.table.partition(lf)

    def merge(self, frame: pl.DataFrame) -> pl.DataFrame:
        assert self.table is not None
        return self.table.merge(frame)

    def finalize(self, rows: pl.DataFrame, args: Mapping[str, Any], ci: Any) -> pl.DataFrame:
        """Every column of the task table from the states, as the task method finalizes
        its ``group_by``; its undefined values reported as it reports them."""
        table, by = self.table, list(self.d.by)
        assert table is not None
        # stacked states of several parts (Spark sends them so) are merged first
        stacked = rows.select(pl.struct(by).is_duplicated().any()).item() if by else rows.height > 1
        merged = self.merge(rows) if stacked else rows

        def no_rows() -> str | None:
            n, complete, used = (merged.get_column(c).item() for c in COUNTS)
            return no_rows_text(n, complete, used, table.checks.args, table.checks.inputs)

        return table.finalize(merged, no_rows=no_rows)

    def finalize_grouped(
        self, rows: pl.DataFrame, g: _windows.Grouping, args: Mapping[str, Any]
    ) -> pl.DataFrame:
        assert self.table is not None
        return self.table.finalize(rows, grouping=g, used=_windows.USED)

    def empty(self) -> pl.DataFrame:
        """The state of no rows, its class columns of the classes' kind."""
        schema: dict[str, pl.DataType] = {c: pl.Float64 for c in self.inputs}
        args = self.checks.args
        for arg, role in self.checks.inputs.items():
            value = args.get(arg)
            if role == "key" and args.get("classes") is not None:
                classes = check_classes(args["classes"]) or [0.0]
                schema.update({c: class_dtype(classes) for c in names(value)})
            elif role == "class_proba" and isinstance(value, str):
                schema[value] = pl.List(pl.Float64)
        return self.batch(pl.LazyFrame(schema=schema)).collect()


class BinsKept(Kept):
    """The binary bins and sums (``bins=``): reduced by packed keys (``Binned``)."""

    def __init__(self, d: Definition, bins: BinsTable) -> None:
        super().__init__(d, bins.checks)
        self.bins = bins
        self.values = list(SUMS)

    @property
    def columns(self) -> list[str]:
        return self.bins.columns

    def binned(self, schema: pl.Schema) -> Binned:
        """The reduction of frames of ``schema`` (:mod:`polars_eval.scale.binned`)."""
        return Binned(self.bins, schema)

    def batch(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        return self.binned(lf.collect_schema()).state_rows(lf)

    def merge(self, frame: pl.DataFrame) -> pl.DataFrame:
        return self.bins.merge(frame)

    def finalize(self, rows: pl.DataFrame, args: Mapping[str, Any], ci: Any) -> pl.DataFrame:
        return self.bins.finalize(rows)


class SeriesKept(Kept):
    """The forecast states per series, with the training rows' in-sample scales."""

    part = "states"
    stream = "series"

    def __init__(
        self, d: Definition, state: ForecastState, checks: Checks, train: pl.DataFrame | None
    ) -> None:
        super().__init__(d, checks)
        self.state = state
        self.train = train
        self._scales: pl.DataFrame | None = None

    @property
    def columns(self) -> list[str]:
        return self.state.columns

    def batch(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        return self.state.batch(lf, self._row_scales())

    def _row_scales(self) -> pl.LazyFrame | None:
        """The in-sample scales of the series, for the metrics that read them per row
        (``spis``, the scaled quantile losses); None where none does."""
        if not self.state.plan.row_scale or self.train is None:
            return None
        if self._scales is None:
            self._scales = self.state.scales(self.train).collect()
        return self._scales.lazy()

    def merge(self, frame: pl.DataFrame) -> pl.DataFrame:
        return self.state.merge(frame)

    def finalize(self, rows: pl.DataFrame, args: Mapping[str, Any], ci: Any) -> pl.DataFrame:
        return self.state.finalize(rows, self.train, ci)


class RowsKept(Kept):
    """The rows: as they are, counted per distinct row, or with the summed weight."""

    grouped = True

    def __init__(self, d: Definition, checks: Checks) -> None:
        super().__init__(d, checks)
        task = d.spec
        keys = [k for k in task.keys if k in task.columns]
        self.keyed = bool(keys) and all(d.columns.get(k) is not None for k in keys)
        self.counted = bool(keys) and not self.keyed
        self.values = [] if self.keyed else [N] if self.counted else [W]
        self.stream = "query" if self.keyed else "chunks"

    @property
    def columns(self) -> list[str]:
        if self.keyed or self.counted:
            return self.inputs + self.values
        return [c for c in self.inputs if c != self.d.weight] + [W]

    def batch(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        inputs, weight = self.inputs, self.d.weight
        if self.keyed:
            return lf.select(inputs)
        if self.counted:  # tied rows of one unit with equal values are interchangeable
            return lf.group_by(inputs).agg(pl.len().cast(pl.Int64).alias(N))
        total = pl.col(weight).cast(pl.Float64).sum() if weight is not None else pl.len()
        keys = [c for c in inputs if c != weight]
        return lf.group_by(keys).agg(total.cast(pl.Float64).alias(W))

    def merge(self, frame: pl.DataFrame) -> pl.DataFrame:
        if not self.values:
            return frame
        keys = [c for c in frame.columns if c not in self.values]
        return frame.group_by(keys, maintain_order=True).agg(pl.col(self.values).sum())

    def finalize(self, rows: pl.DataFrame, args: Mapping[str, Any], ci: Any) -> pl.DataFrame:
        """The task method on the rows (counted rows repeated), the summed weight as the
        weight."""
        if self.counted:
            values = [c for c in rows.columns if c != N]
            rows = rows.with_columns(pl.col(values).repeat_by(N)).explode(values).drop(N)
        weight = self.d.weight if self.keyed or self.counted else W
        return getattr(rows.eval, self.d.task)(**args, weight=weight)

    def finalize_grouped(
        self, rows: pl.DataFrame, g: _windows.Grouping, args: Mapping[str, Any]
    ) -> pl.DataFrame:
        return self.finalize(rows, {**args, **_windows.method_options(g, self.d)}, None)

    def empty(self) -> pl.DataFrame:
        schema = {c: pl.Int64 if c == N else pl.Float64 for c in self.columns}
        return pl.DataFrame(schema=schema)


def kept(d: Definition, train: pl.DataFrame | None) -> Kept:
    """What an evaluation of ``d`` keeps: the bounded state the task's hook gives, else
    the rows (checked by the hook's checks, or by the task's roles)."""
    task = d.spec
    state, checks = (
        task.load("evaluation")(d, train is not None) if task.evaluation else (None, None)
    )
    if checks is None:
        roles = {**task.roles, "weight": "weight"}
        checks = Checks(roles, {**d.columns, "weight": d.weight})
    if isinstance(state, Table):
        return TableKept(d, state, checks)
    if isinstance(state, BinsTable):
        return BinsKept(d, state)
    if isinstance(state, ForecastState):
        return SeriesKept(d, state, checks, train)
    return RowsKept(d, checks)
