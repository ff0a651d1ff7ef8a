"""The bounded state of ``pe.Evaluation("forecast", ...)`` (SPEC §10).

A forecast table is a function of per-series sums (``df.eval.forecast`` aggregates every
metric's states per (``by`` groups, series), then scales MASE / RMSSE by the in-sample
scale of each series and averages or pools over series: :func:`series_plan`,
:func:`series_table`). The state keeps exactly those states, one row per (``by`` groups,
series): memory grows with the series, not with the rows, and two states of disjoint rows
of one series merge by each state's rule (sums, extrema, co-moments).

**Keys.** The task refuses a repeated (series, time) key; a sum cannot tell. So the state
also keeps, per series, the set of times it has seen, as *runs*: arithmetic progressions
``(lo, hi, step)`` of the time's physical value (an integer, date, datetime, duration or
time column; ``step = 0`` is one time). A batch is cut where the series changes or the
time does not increase (a row-wise pass, no sort); each stretch is a run when its times
are evenly spaced, else cut into runs of equal gaps (:meth:`ForecastState._segment`).
Runs, of the stretches of a batch or of two states, are united exactly
(:meth:`ForecastState._union`):

* runs of one series whose ranges do not overlap are disjoint sets: the union is the runs
  themselves, a run that goes on where another ends joined to it (a daily series read
  file by file is one run);
* runs whose ranges overlap (a series whose rows were dealt to partitions row by row, or
  chunks of a lake that interleave its times) are expanded to their times, a repeated
  one counted (``__pe_dups``, with the smallest repeated time), and the union cut into
  runs again.

So the check is exact for any partitioning, and the state is as small as the runs: one
per series when each partition holds stretches of a series' times (a lake written by
time or by series), up to one per time when partitions interleave the times of a series
(then the state holds that data's keys, as a keyed state would). A time of another type
(a string, a float) is kept as one run per time. Rows with a null time are counted per
series (two are a repeated key). The error is raised at :meth:`Evaluation.compute`, as
the task method raises it, naming the key columns and, per series, its smallest
repeated key (up to three series).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.planner import no_rows_text, row_counts
from polars_eval._core.table import Checks, Output, finish
from polars_eval._core.tasks import TASKS
from polars_eval._exprs import count_true, to_float
from polars_eval.exceptions import DataValidationError
from polars_eval.metrics import forecast as _fc
from polars_eval.tasks import forecast as _task

TNULL = "__pe_tnull"  # rows with a null time
DUPS = "__pe_dups"  # rows repeating the (series, time) key of another row
DUP_T = "__pe_dup_t"  # the smallest repeated time
LO, HI, STEP = "__pe_tlo", "__pe_thi", "__pe_tstep"  # a run of times (a run row)
COUNTS = ("__pe_rows", "__pe_complete", "__pe_used")  # for the no-rows message
_P, _PHI, _D, _RID, _RSTEP = "__pe_p", "__pe_phi", "__pe_d", "__pe_rid", "__pe_rstep"
_ANCHORS = 3
"""A run is re-cut from its first and last ``_ANCHORS`` times (its gaps are all equal)."""


def arithmetic(dtype: pl.DataType) -> bool:
    """Times of this type are runs of an integer physical value."""
    return dtype.is_integer() or isinstance(dtype, (pl.Date, pl.Datetime, pl.Duration, pl.Time))


def _physical(column: str) -> pl.Expr:
    return pl.col(column).to_physical().cast(pl.Int64)


def _from_physical(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    return expr.cast(pl.Int32).cast(dtype) if dtype == pl.Date else expr.cast(dtype)


def _same_group(groups: Sequence[str]) -> pl.Expr:
    """Per row of a frame sorted by ``groups``: the row before it is of the same group."""
    same = pl.all_horizontal([pl.col(g).eq_missing(pl.col(g).shift(1)) for g in groups])
    return same & (pl.int_range(pl.len()) > 0)


def _clusters(runs: pl.DataFrame, groups: Sequence[str]) -> pl.DataFrame:
    """Runs sorted by (groups, ``_P``) with ``__pe_cluster``: runs of a group whose ranges
    overlap, directly or through others, share it.

    A run starts a cluster when it starts after every earlier run of its group ends: the
    running maximum of the ends, restarted at each group. Over many small groups a window
    (``cum_max().over(groups)``) evaluates group by group; instead the end is replaced
    by its rank among the ends (``search_sorted`` in their sorted distinct values) and
    packed with the group's index as ``index * 2**32 + rank``, whose running maximum over
    the whole frame never crosses back into an earlier group.
    """
    if not runs.height:
        return runs.with_columns(pl.lit(0, pl.UInt32).alias("__pe_cluster"))
    ends = runs.get_column(_PHI).unique().sort()
    rank = ends.search_sorted(runs.get_column(_PHI)).cast(pl.Int64)
    index = (~_same_group(groups)).cum_sum().cast(pl.Int64)
    packed = (index * 2**32 + pl.lit(rank)).cum_max().shift(1)
    before = ends.gather(pl.Series(runs.select(packed % 2**32).to_series()).fill_null(0))
    earlier = (packed // 2**32 == index).fill_null(False)
    alone = ~earlier | (pl.col(_P) > pl.lit(before))
    return runs.with_columns(alone.cum_sum().alias("__pe_cluster"))


class ForecastState:
    """The states per (``by`` groups, series) of one forecast definition and their rules."""

    def __init__(
        self,
        columns: Mapping[str, Any],
        options: Mapping[str, Any],
        by: Sequence[str],
        metrics: Sequence[str] | None,
        weight: str | None,
        trained: bool,
    ) -> None:
        self.actual, self.forecast = columns["actual"], columns["forecast"]
        self.time: str = columns["time"]
        series = columns["series"]
        self.series = [series] if isinstance(series, str) else list(series)
        self.by = list(by)
        self.groups = list(dict.fromkeys([*self.by, *self.series]))
        self.weight = weight
        self.options = options
        point = _task._point_metrics(metrics, trained, False, (self.actual, self.forecast))
        self.point = point
        self.plan = _task.series_plan(
            self.actual,
            self.forecast,
            weight,
            options["zero_actuals"],
            dict(options.get("quantiles") or {}),
            options.get("interval"),
            point,
            trained,
        )
        self.row_args = {"actual": self.actual, "forecast": self.forecast, "weight": weight}
        self.row_inputs: dict[str, Any] = {
            "actual": "numeric",
            "forecast": "numeric",
            "weight": "weight",
        }

    @property
    def bounded(self) -> bool:
        """Every metric's states are sums, extrema or co-moments (not the rows)."""
        return all(
            s.kind not in ("rows", "list")
            for spec in self.plan.planned.specs.values()
            for s in spec.states.values()
        )

    @property
    def columns(self) -> list[str]:
        """The columns of the state rows (metric rows and run rows)."""
        return [*self.groups, *self.plan.states, *COUNTS, TNULL, DUPS, DUP_T, LO, HI, STEP]

    # -- one batch -------------------------------------------------------------------------

    def batch(self, lf: pl.LazyFrame, scales: pl.LazyFrame | None) -> pl.LazyFrame:
        """The state rows of a batch of rows: one metric row per (``by`` groups, series),
        its runs of times, and its repeated keys.

        Without a sort: the rows are cut where the series changes or the time does not
        increase (a row-wise pass, as the task method's duplicate check); each stretch of
        strictly increasing times is one run when its ``n`` times from ``lo`` to ``hi``
        are evenly spaced (``(hi - lo) / (n - 1)`` an integer step, every time on it: then
        they are exactly the ``n`` points of the progression), else cut into runs in its
        order (:meth:`_segment`); the runs of all stretches are then united as states are
        (:meth:`_union`), which counts a time repeated by two stretches of a series.
        """
        g, t = self.groups, self.time
        if self.plan.row_scale:
            assert scales is not None
            lf = lf.join(scales, on=self.series, how="left", maintain_order="left")
        dtype = lf.collect_schema()[t]
        counts = row_counts(self.row_args, self.row_inputs)
        assert counts is not None
        aggs = [
            *self.plan.aggs,
            *(e.alias(name) for e, name in zip(counts, COUNTS, strict=True)),
            count_true(pl.col(t).is_null()).alias(TNULL),
        ]
        metric = lf.with_columns(self.plan.rows).group_by(g).agg(aggs)
        if not arithmetic(dtype):
            times = lf.select(*g, t).filter(pl.col(t).is_not_null()).sort([*g, t])
            unique, dups = self._dedupe(times, t)
            parts = pl.collect_all([metric, dups, self._points(unique)])
            return self._complete(parts, dtype).lazy()
        block = "__pe_block"
        rows = (
            lf.select(*g, _physical(t).alias(_P))
            .with_columns(_task._maybe_repeated(g, [_P]).cum_sum().alias(block))
            .filter(pl.col(_P).is_not_null())
        )
        n, lo, hi = pl.len().cast(pl.Int64), pl.col(_P).first(), pl.col(_P).last()
        gaps = (n - 1).clip(lower_bound=1)
        step = pl.when(n > 1).then((hi - lo) // gaps).otherwise(0).cast(pl.Int64)
        even = (n == 1) | ((hi - lo) % gaps == 0)
        stretch = [lo.alias(_P), hi.alias(_PHI), step.alias(STEP), even.alias("__pe_even")]
        blocks, metric_rows = pl.collect_all(
            [rows.group_by(block).agg(*(pl.col(c).first() for c in g), *stretch), metric]
        )
        # evenly spaced with a step > 1: every time on it (a step of 1 leaves no other
        # integer in the range)
        wide = blocks.filter(pl.col("__pe_even") & (pl.col(STEP) > 1))
        if wide.height:
            off = (
                rows.join(wide.lazy().select(block, pl.col(_P).alias("__pe_lo"), STEP), on=block)
                .filter((pl.col(_P) - pl.col("__pe_lo")) % pl.col(STEP) != 0)
                .select(block)
                .unique()
                .collect()
            )
            blocks = blocks.with_columns(
                pl.col("__pe_even") & ~pl.col(block).is_in(off.get_column(block).implode())
            )
        runs = blocks.filter(pl.col("__pe_even")).select(*g, _P, _PHI, STEP).lazy()
        other = blocks.filter(~pl.col("__pe_even")).select(block)
        if other.height:  # the other stretches, cut in their order (increasing already)
            ids = other.get_column(block).implode()
            cut = rows.filter(pl.col(block).is_in(ids)).with_columns(
                pl.lit(None, pl.Int64).alias(_RID), pl.lit(0, pl.Int64).alias(_RSTEP)
            )
            runs = pl.concat([runs, self._segment(cut, [block])])
        united, dups = self._union(runs)
        parts = pl.collect_all([self._times(united, dtype), self._times(dups, dtype)])
        return self._complete([metric_rows, *parts], dtype).lazy()

    def _complete(self, parts: Sequence[pl.DataFrame], dtype: pl.DataType) -> pl.DataFrame:
        """State rows stacked, with every state column (times of type ``dtype``)."""
        frame = pl.concat(parts, how="diagonal_relaxed")
        types = {DUPS: pl.Int64, DUP_T: dtype, LO: dtype, HI: dtype, STEP: pl.Int64}
        missing = [pl.lit(None, t).alias(c) for c, t in types.items() if c not in frame.columns]
        return frame.with_columns(missing).select(self.columns)

    def _times(self, frame: pl.LazyFrame, dtype: pl.DataType) -> pl.LazyFrame:
        """Runs (``_P``, ``_PHI``) or repeated times (``DUP_T``) of physical values as
        times of type ``dtype`` (``LO``, ``HI``, ``DUP_T``)."""
        names = {_P: LO, _PHI: HI, DUP_T: DUP_T}
        schema = frame.collect_schema()
        return frame.with_columns(
            _from_physical(pl.col(c), dtype).alias(to) for c, to in names.items() if c in schema
        ).drop(_P, _PHI, strict=False)

    def _dedupe(self, rows: pl.LazyFrame, value: str) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        """Rows sorted by (groups, ``value``) without their repeated values, and the
        repeated ones counted per group (``DUPS``), with the smallest (``DUP_T``)."""
        g = self.groups
        repeated = (_same_group(g) & (pl.col(value) == pl.col(value).shift(1))).fill_null(False)
        rows = rows.with_columns(repeated.alias("__pe_rep"))
        dups = (
            rows.filter(pl.col("__pe_rep"))
            .group_by(g)
            .agg(pl.len().cast(pl.Int64).alias(DUPS), pl.col(value).min().alias(DUP_T))
        )
        return rows.filter(~pl.col("__pe_rep")).drop("__pe_rep"), dups

    def _points(self, unique: pl.LazyFrame) -> pl.LazyFrame:
        """Each distinct time of a type without arithmetic as a run of one time."""
        t = pl.col(self.time)
        return unique.select(*self.groups, t.alias(LO), t.alias(HI), pl.lit(0).alias(STEP))

    def _segment(self, rows: pl.LazyFrame, within: Sequence[str]) -> pl.LazyFrame:
        """Increasing distinct physical times ``_P`` per ``within`` stretch (times, or the
        anchors of runs with their run ``_RID`` and step ``_RSTEP``) cut into runs
        (``_P``, ``_PHI``, ``STEP``).

        Each time but a stretch's first has an arriving gap (from the time before it;
        within an anchored run, the run's step). Consecutive times are joined when their
        gap is kept: a gap equal to the one before it (a streak goes on), or the first of a
        streak (equal to the next gap) unless the gap before it was itself kept in a
        streak. Two kept gaps in a row are then always equal, so every run is an
        arithmetic progression; an isolated gap is not kept (both times start runs).
        """
        p = pl.col(_P)
        same = _same_group(within)
        rid = pl.col(_RID)
        in_run = same & rid.eq_missing(rid.shift(1)) & rid.is_not_null()
        gap = pl.when(~same).then(None).when(in_run).then(pl.col(_RSTEP)).otherwise(p - p.shift(1))
        d = pl.col(_D)
        goes_on = (d == d.shift(1)).fill_null(False)
        starts = (d == d.shift(-1)).fill_null(False) & ~goes_on.shift(1).fill_null(False)
        keep = d.is_not_null() & (goes_on | starts)
        return (
            rows.with_columns(gap.alias(_D))
            .with_columns((~keep).cum_sum().alias("__pe_run"), keep.alias("__pe_keep"))
            .group_by("__pe_run")
            .agg(
                *(pl.col(c).first() for c in self.groups),
                p.first().alias(_P),
                p.last().alias(_PHI),
                d.filter(pl.col("__pe_keep")).first().fill_null(0).cast(pl.Int64).alias(STEP),
            )
            .drop("__pe_run")
        )

    # -- merge -----------------------------------------------------------------------------

    def merge(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Stacked state rows of disjoint rows merged: one metric row per (``by`` groups,
        series) and the union of its runs (repeated keys counted)."""
        g = self.groups
        metric = frame.filter(pl.col(LO).is_null())
        runs = frame.lazy().filter(pl.col(LO).is_not_null()).select(*g, LO, HI, STEP)
        dtype = frame.schema[LO]
        if arithmetic(dtype):
            runs = runs.select(*g, _physical(LO).alias(_P), _physical(HI).alias(_PHI), STEP)
            united, dups = self._union(runs)
            united, dups = self._times(united, dtype), self._times(dups, dtype)
        else:
            united, dups = self._dedupe(runs.sort([*g, LO]), LO)
        merged_runs, dup_rows = pl.collect_all([united, dups])
        states = self.plan.states
        aggs = [state.merged(pl.col(c)).alias(c) for c, state in states.items()]
        aggs += [pl.col(c).sum() for c in (*COUNTS, TNULL, DUPS)]
        aggs.append(pl.col(DUP_T).min())
        rows = pl.concat([metric.drop(LO, HI, STEP), dup_rows], how="diagonal_relaxed")
        rows = rows.group_by(g, maintain_order=True).agg(aggs)
        return self._complete([rows, merged_runs], dtype)

    def _union(self, runs: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
        """The union of runs (``_P``, ``_PHI``, ``STEP``; see the module docstring), and
        the times repeated by two of them counted per group (``DUPS``, ``DUP_T``)."""
        g = self.groups
        p, hi, step = pl.col(_P), pl.col(_PHI), pl.col(STEP)
        runs = _clusters(runs.sort([*g, _P]).collect(), g).lazy()
        runs = runs.with_columns((pl.len().over("__pe_cluster") > 1).alias("__pe_tangled"))
        # overlapping runs: their times, the repeated ones counted
        count = pl.when(step > 0).then((hi - p) // step + 1).otherwise(1)
        times = (
            runs.filter(pl.col("__pe_tangled"))
            .select(*g, (p + pl.int_ranges(0, count) * step).alias(_P))
            .explode(_P)
            .sort([*g, _P])
        )
        unique, dups = self._dedupe(times, _P)
        unique = unique.with_columns(
            pl.lit(None, pl.Int64).alias(_RID), pl.lit(0, pl.Int64).alias(_RSTEP)
        )
        # the others: a run that goes on where the one before it ends, on its step, joins
        # it (a series read stretch by stretch); a series left with one run and no
        # overlap keeps it, the others are re-cut from the runs' first and last times
        follows = _same_group(g) & (step == step.shift(1)) & (step > 0)
        follows = (follows & (p - hi.shift(1) == step)).fill_null(False)
        chains = (
            runs.filter(~pl.col("__pe_tangled"))
            .with_columns((~follows).cum_sum().alias("__pe_chain"))
            .group_by("__pe_chain")
            .agg(*(pl.col(c).first() for c in g), p.first(), hi.last(), step.first())
        )
        tangled = runs.filter(pl.col("__pe_tangled")).select(g).unique()
        chains = chains.join(
            tangled.with_columns(pl.lit(True).alias("__pe_recut")),
            on=g,
            how="left",
            nulls_equal=True,
        ).with_columns(pl.col("__pe_recut").fill_null(False) | (pl.len().over(g) > 1))
        k = _ANCHORS
        count = pl.when(step > 0).then((hi - p) // step + 1).otherwise(1)
        anchors = pl.when(count <= 2 * k).then(pl.int_ranges(0, count))
        anchors = anchors.otherwise(pl.concat_list([*range(k), *(count - k + i for i in range(k))]))
        recut = (
            chains.filter(pl.col("__pe_recut"))
            .with_row_index(_RID)
            .select(
                *g,
                (p + anchors * step).alias(_P),
                pl.col(_RID).cast(pl.Int64),
                step.alias(_RSTEP),
            )
            .explode(_P)
        )
        elements = pl.concat([recut, unique.select(*g, _P, _RID, _RSTEP)]).sort([*g, _P])
        kept = chains.filter(~pl.col("__pe_recut")).select(*g, _P, _PHI, STEP)
        return pl.concat([kept, self._segment(elements, g)]), dups

    # -- finalize --------------------------------------------------------------------------

    def finalize(
        self, frame: pl.DataFrame, train: pl.DataFrame | None, ci: Any = None
    ) -> pl.DataFrame:
        """The task method's table from (stacked) state rows; a repeated key is the
        task's error naming the key columns and a few repeated keys. ``ci``: the interval
        of each mean over series (``units.UnitCI``), as ``df.eval.forecast(ci=...)``."""
        merged = self.merge(frame)
        metric = merged.filter(pl.col(LO).is_null())
        self._raise_for_repeated(metric)
        g, keys, by = self.groups, self.series, self.by
        q = metric.lazy().select(*g, *self.plan.states)
        if train is not None:
            scale = self.scales(train, duplicates=True).collect()
            self._raise_for_train_repeats(metric, scale, train)
            wanted = list(dict.fromkeys(_task.TRAIN_SCALED[n] for n in self.plan.late))
            q = q.join(scale.lazy().select(*keys, *wanted), on=keys, how="left")
        q = _task.series_table(q, self.plan, by, keys, per_series=False, ci=ci)
        out = (q.sort(by, nulls_last=True) if by else q).collect()
        output = Output(_task.table_undefined(self.plan.names, per_series=False), strict=False)

        def no_rows() -> str | None:
            totals = metric.select(pl.col(c).sum() for c in COUNTS).row(0)
            return no_rows_text(*totals, self.row_args, self.row_inputs)

        return finish(out, output, grouped=bool(by), no_rows=no_rows)

    def scales(self, train: pl.DataFrame, *, duplicates: bool = False) -> pl.LazyFrame:
        """The in-sample scales of every series of ``train`` (``pe.seasonal_scale``)."""
        keys = [*self.series, self.time]
        scale = _fc.scale_query(
            train.lazy(),
            self.series,
            self.time,
            self.actual,
            self.options["season_length"],
            duplicates=_task.TRAIN_DUP if duplicates else None,
            presorted=_fc.sorted_by(train, keys[:-1], keys[-1], strict=False),
        )
        return scale

    def _raise_for_train_repeats(
        self, metric: pl.DataFrame, scale: pl.DataFrame, train: pl.DataFrame
    ) -> None:
        """The task's error for repeated (series, time) keys in the training rows of the
        series evaluated (``scale`` counts them per series)."""
        keys = self.series
        seen = metric.select(keys).unique()
        repeats = seen.join(scale.select(*keys, _task.TRAIN_DUP), on=keys, how="inner")
        if repeats.get_column(_task.TRAIN_DUP).fill_null(0).sum():
            rows = train.lazy().filter(to_float(self.actual).is_not_null())
            named = [*keys, self.time]
            error = _task.duplicate_error(rows, named, named, "the train= frame")
            if error is not None:
                raise error

    def _raise_for_repeated(self, metric: pl.DataFrame) -> None:
        """The task's duplicate-key error when some (series, time) key was seen twice."""
        repeats = pl.col(DUPS).fill_null(0) + (pl.col(TNULL) - 1).clip(lower_bound=0)
        found = metric.filter(repeats > 0)
        if not found.height:
            return
        n = found.select(repeats.sum()).item()
        shown = found.sort(self.groups, nulls_last=True).head(_task.N_KEY_EXAMPLES)
        t = self.time
        example = pl.when(pl.col(DUPS).fill_null(0) > 0).then(pl.col(DUP_T)).alias(t)
        examples = shown.select(*self.groups, example).to_dicts()
        named = ", ".join([*self.series, t])
        listed = ", ".join(_task._show_key(row) for row in examples)
        raise DataValidationError(
            f"duplicate ({named}) rows: expected one row per key; found {n} row(s) "
            f"repeating the key of another row, e.g. [{listed}]"
        )


# -- pe.Evaluation's hooks of the forecast task (polars_eval._core.tasks.Task) ------------


def evaluation_metrics(names: Sequence[str] | None) -> list[str] | None:
    """The forecast table's ``metrics=`` behind ``metrics=``: the names when every one is
    a registered metric the table takes (regression and forecasting metrics of one value),
    otherwise None (the default table, whose columns the names then select)."""
    if names is None:
        return None
    known = {
        info.name
        for info in _registry.REGISTRY.values()
        if info.task in _task.KEY_TASKS and info.kind == "scalar" and info.spec is not None
    }
    return list(names) if set(names) <= known and len(set(names)) == len(names) else None


def evaluation_state(d: Any, trained: bool) -> tuple[ForecastState | None, Checks]:
    """What ``pe.Evaluation`` keeps for a forecast definition ``d``: the states per series
    where every metric's state is bounded (not with windows: the rows, keyed by their own
    times), else None (the rows); and the checks of the task method's numeric inputs."""
    roles: dict[str, Any] = {**TASKS["forecast"].roles, "weight": "weight"}
    args: dict[str, Any] = {**d.columns, "weight": d.weight}
    quantiles = list((d.options.get("quantiles") or {}).values())
    if quantiles:
        roles["quantiles"], args["quantiles"] = "numeric", quantiles
    if d.options.get("interval") is not None:
        args["lower"], args["upper"] = d.options["interval"]
        roles["lower"] = roles["upper"] = "numeric"
    checks = Checks(roles, args)
    if d.windows is not None:
        return None, checks
    metrics = evaluation_metrics(d.metrics)
    state = ForecastState(d.columns, d.options, d.by, metrics, d.weight, trained=trained)
    return (state if state.bounded else None), checks


def evaluation_request(d: Any) -> tuple[dict[str, Any], bool]:
    """``pe.Evaluation``'s ``metrics=`` as the task method's (:func:`evaluation_metrics`);
    the names then select the columns."""
    return {"metrics": evaluation_metrics(d.metrics)}, True
