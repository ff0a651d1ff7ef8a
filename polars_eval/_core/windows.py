"""Metrics over time and over slices (SPEC §13): the states of §10 merged, never the rows
read again.

A grouped evaluation runs in three steps, whatever the task:

1. **One pass over the rows.** Every state of the table is aggregated once per group of
   the *finest* grouping (the union of the key columns of every grouping set, or ``by``)
   and, with windows, per *every-step*: the start of the step of length ``every`` that
   holds the row (:meth:`Windows.step`, the grid of ``group_by_dynamic``'s windows), with
   the earliest time of the step's rows.
2. **Upward merges.** Each grouping's states are those of the finest grouping merged by
   each state's rule (sums added, extrema taken, co-moments pooled, score lists merged,
   rows concatenated): :func:`merge_level`.
3. **Windows.** The step states of a group are merged per window by
   ``group_by_dynamic(<earliest time of the step>, every=, period=, offset=,
   closed="left", label="left", start_by="window", group_by=keys)`` over the (small)
   frame of step states: the windows are Polars' own by construction. A window's bounds
   lie on the step grid (``period`` is a whole multiple of ``every``), so a step falls
   in a window whole or not at all, and the earliest time of the group's steps is the
   earliest time of its rows (the first window is the one of the rows).

The values are then finalized from the merged states as the task method finalizes its
``group_by``: each window equals its rows evaluated on their own, each grouping its rows
grouped by its keys (``tests/test_windows.py``).
"""

from __future__ import annotations

import functools
import inspect
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from polars_eval._core.planner import Planned, plan_specs
from polars_eval._core.spec import MetricSpec, State
from polars_eval._exprs import count_true
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricWarning,
)

STEP = "__pe_step"  # the start of a row's every-step
FIRST = "__pe_first"  # the earliest time of a step's rows (group_by_dynamic's index)
ROWS = "__pe_rows"
SPLIT = "__pe_split"  # units (queries) whose rows fall in several every-steps
LEVEL = "__pe_level"  # the grouping a result row belongs to (its index in the sets)  # the rows used in a slice (min_rows=)
WINDOW_END = "window_end"
GROUPING = "grouping"

BASELINE_NOT_MERGEABLE = (
    "baseline=True is not available with time=/every= or grouping_sets=/rollup=/min_rows= "
    "(the constant predictor is a function of each group's rows, not a mergeable state)"
)

_UNITS = {
    "ns": (0, 1),
    "us": (0, 10**3),
    "ms": (0, 10**6),
    "s": (0, 10**9),
    "m": (0, 60 * 10**9),
    "h": (0, 3600 * 10**9),
    "d": (0, 86400 * 10**9),
    "w": (0, 7 * 86400 * 10**9),
    "mo": (1, 0),
    "q": (3, 0),
    "y": (12, 0),
}
_PART = re.compile(r"(\d+)(ns|us|ms|mo|s|m|h|d|w|q|y|i)")


@dataclass(frozen=True)
class _Duration:
    """A Polars duration string as (months, nanoseconds) or integer steps, with its sign."""

    text: str  # as Polars reads it ("1d", "-6h", "5i")
    months: int = 0
    nanos: int = 0
    ints: int = 0

    @property
    def integer(self) -> bool:
        return self.ints != 0 or (self.months == 0 and self.nanos == 0 and self.text.endswith("i"))

    @property
    def zero(self) -> bool:
        return self.months == 0 and self.nanos == 0 and self.ints == 0

    @property
    def positive(self) -> bool:
        return (self.months >= 0 and self.nanos >= 0 and self.ints >= 0) and not self.zero

    def negated(self) -> str:
        return self.text[1:] if self.text.startswith("-") else "-" + self.text


def _duration(name: str, value: Any) -> _Duration:
    """``value`` (a Polars duration string such as ``"1d"``, ``"1mo"``, ``"2w"``,
    ``"1d12h"``, or an int: steps of an integer column) parsed, or an
    ``InvalidParameterError`` naming ``name``."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = f"{value}i"
    if not isinstance(value, str):
        raise InvalidParameterError(
            f'{name} must be a duration string such as "1d", "1w", "1mo" (or an int for an '
            f"integer time column); got {value!r}"
        )
    text = value.strip()
    body = text[1:] if text.startswith("-") else text
    parts = _PART.findall(body)
    if not body or "".join(n + u for n, u in parts) != body:
        raise InvalidParameterError(
            f'{name}={value!r} is not a duration: expected e.g. "1d", "12h", "1w", "1mo", '
            '"1q", "1y", "1d12h" (or an int for an integer time column)'
        )
    sign = -1 if text.startswith("-") else 1
    units = {u for _, u in parts}
    if "i" in units and len(units) > 1:
        raise InvalidParameterError(f"{name}={value!r} mixes integer steps (i) with a duration")
    months = nanos = ints = 0
    for n, unit in parts:
        if unit == "i":
            ints += int(n)
            continue
        mo, ns = _UNITS[unit]
        months += int(n) * mo
        nanos += int(n) * ns
    return _Duration(text, sign * months, sign * nanos, sign * ints)


def _multiple(period: _Duration, every: _Duration) -> int | None:
    """``period`` / ``every`` when a whole number, else None."""
    if every.integer or period.integer:
        if not (every.integer and period.integer) or period.ints % every.ints:
            return None
        return period.ints // every.ints
    if every.months and every.nanos:  # a calendar and a fixed part: only period = every
        return 1 if (period.months, period.nanos) == (every.months, every.nanos) else None
    if every.months:
        if period.nanos or period.months % every.months:
            return None
        return period.months // every.months
    if period.months or period.nanos % every.nanos:
        return None
    return period.nanos // every.nanos


@dataclass(frozen=True)
class Windows:
    """Time windows: those of ``group_by_dynamic(time, every=, period=, offset=,
    closed="left", label="left", start_by="window")``, as merges of every-step states."""

    time: str
    every: _Duration
    period: _Duration
    offset: _Duration
    steps: int  # period / every

    @property
    def columns(self) -> list[str]:
        """The window columns of a result: the start (the time column) and the end."""
        return [self.time, WINDOW_END]

    def check(self, schema: Mapping[str, pl.DataType]) -> pl.DataType:
        """The time column's dtype, checked against the durations (DataValidationError
        naming the column, InvalidParameterError naming the parameter)."""
        if self.time not in schema:
            available = ", ".join(list(schema)[:12])
            raise DataValidationError(
                f'column "{self.time}" (argument time=) not found; available columns: {available}'
            )
        dtype = schema[self.time]
        if dtype.is_integer():
            for name, d in (
                ("every", self.every),
                ("period", self.period),
                ("offset", self.offset),
            ):
                if not (d.integer or d.zero):
                    raise InvalidParameterError(
                        f'{name}={d.text!r} is a duration, but the time column "{self.time}" '
                        f"holds integers ({dtype}): give {name} as an int"
                    )
            return dtype
        if dtype == pl.Date or isinstance(dtype, pl.Datetime):
            for name, d in (
                ("every", self.every),
                ("period", self.period),
                ("offset", self.offset),
            ):
                if d.integer and not d.zero:
                    raise InvalidParameterError(
                        f"{name}={d.text!r} counts integer steps, but the time column "
                        f'"{self.time}" holds {dtype}: give {name} as a duration such as "1d"'
                    )
                zoned = isinstance(dtype, pl.Datetime) and dtype.time_zone is not None
                if zoned and name == "every" and d.nanos % (86400 * 10**9):
                    raise InvalidParameterError(
                        f"every={d.text!r} is not a whole number of days on the time-zone-aware "
                        f'column "{self.time}": group_by_dynamic\'s windows of hours follow '
                        "the wall clock across daylight-saving changes from the first row's; "
                        'convert the column with .dt.convert_time_zone("UTC"), or use whole days'
                    )
                if dtype == pl.Date and d.nanos % (86400 * 10**9):
                    raise InvalidParameterError(
                        f"{name}={d.text!r} is not a whole number of days, but the time column "
                        f'"{self.time}" holds dates: use "1d", "1w", "1mo" ... or a Datetime column'
                    )
            return dtype
        raise DataValidationError(
            f'column "{self.time}" (argument time=) must be a Date, Datetime or integer '
            f"column; got {dtype}"
        )

    def step(self, dtype: pl.DataType) -> pl.Expr:
        """The start of the every-step that holds each row's time (null for a null time):
        the greatest point of the window grid (multiples of ``every`` from the epoch, weeks
        from a Monday, months from January, shifted by ``offset``) at or before it."""
        t = pl.col(self.time)
        if dtype.is_integer():
            e, o = self.every.ints, self.offset.ints
            t64 = t.cast(pl.Int64)
            return ((t64 - o) // e * e + o).alias(STEP)
        zone = dtype.time_zone if isinstance(dtype, pl.Datetime) else None
        if zone is not None:  # the grid of group_by_dynamic is one of wall-clock times
            t = t.dt.replace_time_zone(None)
        shifted = t if self.offset.zero else t.dt.offset_by(self.offset.negated())
        start = shifted.dt.truncate(self.every.text)
        start = start if self.offset.zero else start.dt.offset_by(self.offset.text)
        if zone is not None:
            start = start.dt.replace_time_zone(zone, ambiguous="earliest", non_existent="null")
        return start.alias(STEP)

    def merge(
        self,
        states: pl.LazyFrame,
        keys: Sequence[str],
        aggs: Sequence[pl.Expr],
        dtype: pl.DataType,
        cumulative: Mapping[str, Cumulative] | None = None,
    ) -> pl.LazyFrame:
        """The states of each window (``aggs``: each state's merge), from one row per
        (keys, step) with the earliest time of its rows (:data:`FIRST`).

        A ``cumulative`` list state (running sums per key, e.g. the threshold state of
        the sort-based binary metrics) is not merged by its rule once per window (one sort
        and a dozen list passes each: 13x slower on 7,300 windows) but for every window at
        once by :func:`cumulative_windows`.
        """
        names = [e.meta.output_name() for e in aggs]
        cumulative = {c: v for c, v in (cumulative or {}).items() if c in names}
        plain = [e for n, e in zip(names, aggs, strict=True) if n not in cumulative]
        out = self._dynamic(states.drop(STEP), keys, plain or [pl.len().alias(WID)], dtype)
        schema = states.collect_schema()
        for column, (key, fields) in cumulative.items():
            result = {k: schema[k] for k in keys} | {self.time: dtype, column: schema[column]}

            def run(
                df: pl.DataFrame, c: str = column, k: str = key, f: tuple = fields
            ) -> pl.DataFrame:
                return cumulative_windows(self, df, keys, c, k, f, dtype)

            part = states.select(*keys, FIRST, column).map_batches(run, schema=pl.Schema(result))
            out = out.join(
                part, on=[*keys, self.time], how="left", nulls_equal=True, maintain_order="left"
            )
        return out.select(*keys, *self.columns, *names)

    def merge_units(
        self,
        states: pl.LazyFrame,
        keys: Sequence[str],
        units: Sequence[str],
        aggs: Sequence[pl.Expr],
        dtype: pl.DataType,
    ) -> pl.LazyFrame:
        """The states of each (window, unit), from one row per (keys, unit, step): the
        windows are those of the ``keys`` groups (a unit's rows counting in the windows of
        its group, whichever step they start in), each unit's steps merged per window."""
        steps = states.group_by([*keys, STEP]).agg(pl.col(FIRST).min())
        members = self._dynamic(steps, keys, [pl.col(STEP)], dtype).explode(STEP)
        joined = states.join(
            members.select(*keys, *self.columns, STEP), on=[*keys, STEP], nulls_equal=True
        )
        return joined.group_by([*keys, *self.columns, *units]).agg(aggs)

    def _dynamic(
        self, frame: pl.LazyFrame, keys: Sequence[str], aggs: Sequence[pl.Expr], dtype: pl.DataType
    ) -> pl.LazyFrame:
        """``group_by_dynamic`` over the earliest time of each step (:data:`FIRST`) with
        the window's start (the time column) and end (:data:`WINDOW_END`)."""
        if dtype.is_integer():
            frame = frame.with_columns(pl.col(FIRST).cast(pl.Int64))
            every, period, offset = (f"{d.ints}i" for d in (self.every, self.period, self.offset))
        else:
            every, period, offset = (d.text for d in (self.every, self.period, self.offset))
        out = (
            frame.sort([*keys, FIRST], nulls_last=True)
            .group_by_dynamic(
                FIRST,
                every=every,
                period=period,
                offset=offset,
                closed="left",
                label="left",
                start_by="window",
                group_by=list(keys) or None,
                include_boundaries=True,
            )
            .agg(aggs)
        )
        return out.with_columns(
            pl.col(FIRST).cast(dtype).alias(self.time),
            pl.col("_upper_boundary").cast(dtype).alias(WINDOW_END),
        )


Cumulative = tuple[str, tuple[str, ...]]
WID = "__pe_wid"


RANK = "__pe_rank"
SID = "__pe_sid"
DENSE_CELLS = 4_000_000
"""Cells (steps x distinct keys) of one block of the dense merge of cumulative states."""


def cumulative_windows(
    win: Windows,
    df: pl.DataFrame,
    keys: Sequence[str],
    column: str,
    key: str,
    fields: Sequence[str],
    dtype: pl.DataType,
) -> pl.DataFrame:
    """A cumulative list state (running sums of ``fields`` along ``key`` descending) of
    every window, from one state per (keys, step) in ``df`` (with :data:`FIRST`).

    The steps' points become counts per key, each key numbered by its dense rank among
    every step's keys. When the steps times the distinct keys are few (binned scores,
    scores of a few decimals), the counts of each window are differences of running
    sums over the steps, in numpy arrays of steps x keys (a block of groups at a time),
    and the window's running sums along the keys a ``cumsum``: no sort, a cost linear in
    the windows x keys. Otherwise each window's points are gathered, sorted by (window,
    rank) as one integer, accumulated and thinned to one point per key. Either way a window
    holds the keys of its rows only (a key of weight 0 adds no point, as it adds no area).
    """
    df = df.sort([*keys, FIRST], nulls_last=True).with_row_index(SID)
    group = pl.struct(keys).rle_id() if keys else pl.lit(0, dtype=pl.UInt32)
    df = df.with_columns(group.alias(WID))
    bounds = win._dynamic(
        df.lazy(),
        keys,
        [
            pl.col(SID).min().alias("__pe_lo"),
            pl.col(SID).max().alias("__pe_hi"),
            pl.col(WID).first().alias("__pe_g"),
        ],
        dtype,
    )
    bounds = (
        bounds.select(*keys, win.time, "__pe_lo", "__pe_hi", "__pe_g").sort("__pe_lo").collect()
    )
    long = df.select(SID, column).explode(column).unnest(column).drop_nulls(key)
    long = long.with_columns(
        pl.col(key).rank("dense", descending=True).cast(pl.Int64).sub(1).alias(RANK),
        *((pl.col(f) - pl.col(f).shift(1).over(SID).fill_null(0.0)).alias(f) for f in fields),
    )
    n_keys = int(long.get_column(RANK).max() or 0) + 1 if long.height else 0
    steps = df.group_by(WID).len().get_column("len")
    longest = int(steps.max() or 0) if steps.len() else 0
    window_steps = (bounds["__pe_hi"] - bounds["__pe_lo"] + 1).sum() if bounds.height else 0
    gathered = long.height / max(df.height, 1) * window_steps  # the points a sort would hold
    dense = _dense_is_cheaper(n_keys, longest, bounds.height, gathered)
    points = _Points(long, bounds, df, column, key, tuple(fields), n_keys)
    merged = (_dense if dense else _sorted)(points)
    out = bounds.with_row_index("__pe_w").join(
        merged, on="__pe_w", how="left", maintain_order="left"
    )
    return out.select(*keys, win.time, column)


@dataclass(frozen=True)
class _Points:
    """The counts per key of every step (``long``: step, rank, key, fields), the windows'
    first and last steps (``bounds``) and the steps (``df``) of a cumulative state."""

    long: pl.DataFrame
    bounds: pl.DataFrame
    df: pl.DataFrame
    column: str
    key: str
    fields: tuple[str, ...]
    n_keys: int


def _dense_is_cheaper(n_keys: int, longest: int, windows: int, gathered: float) -> bool:
    """The dense merge when its arrays stay small (the longest group's steps x keys) and
    its cells (windows x keys) are fewer than four per point that sorting would gather."""
    return (
        n_keys > 0
        and (longest + 1) * n_keys <= 8 * DENSE_CELLS
        and windows * n_keys <= 4 * gathered
    )


def _sorted(p: _Points) -> pl.DataFrame:
    """Each window's state from its gathered points (see :func:`cumulative_windows`)."""
    long, bounds, column, key, fields = p.long, p.bounds, p.column, p.key, p.fields
    members = bounds.with_row_index("__pe_w").select(
        "__pe_w", pl.int_ranges("__pe_lo", pl.col("__pe_hi") + 1, dtype=pl.UInt32).alias(SID)
    )
    gathered = members.explode(SID).join(long, on=SID, how="inner")
    order = (pl.col("__pe_w").cast(pl.UInt64) * (1 << 32) + pl.col(RANK).cast(pl.UInt64)).alias(
        RANK
    )
    gathered = gathered.with_columns(order).sort(RANK)
    # running sums within each window: one running sum over every point less its value
    # before the window's first point (exact for counts; for weights the rounding is
    # relative to the running total, ~1e-16 x the points)
    start = (pl.col("__pe_w") != pl.col("__pe_w").shift(1)).fill_null(True)
    running = [pl.col(f).cum_sum() for f in fields]
    before = [
        pl.when(start).then(r - pl.col(f)).forward_fill()
        for r, f in zip(running, fields, strict=True)
    ]
    gathered = gathered.with_columns(
        (r - b).alias(f) for r, b, f in zip(running, before, fields, strict=True)
    )
    last = (pl.col(RANK) != pl.col(RANK).shift(-1)).fill_null(True)
    # a group keeps the order of its rows: the points stay sorted
    return gathered.filter(last).group_by("__pe_w").agg(pl.struct(key, *fields).alias(column))


def _dense(p: _Points) -> pl.DataFrame:
    """Each window's state from running sums over the steps of dense arrays (steps x
    keys), a block of whole groups at a time (see :func:`cumulative_windows`). numpy: the
    differences of running sums between two rows of a steps x keys array, for thousands
    of windows at once, are one fancy-indexing operation; Polars has no such array form."""
    long, bounds, df, column, key, fields, n_keys = (
        p.long, p.bounds, p.df, p.column, p.key, p.fields, p.n_keys
    )  # fmt: skip
    sid = long.get_column(SID).to_numpy().astype(np.int64)
    rank = long.get_column(RANK).to_numpy()
    values = [long.get_column(f).to_numpy() for f in fields]
    key_of = long.group_by(RANK).agg(pl.col(key).first()).sort(RANK).get_column(key).to_numpy()
    lo_all, hi_all = (
        bounds["__pe_lo"].to_numpy().astype(np.int64),
        bounds["__pe_hi"].to_numpy().astype(np.int64),
    )
    counted = all(  # whole counts: the sums of unweighted rows
        bool(np.all(v == np.floor(v))) and float(np.abs(v).sum()) < 2**31 for v in values
    )
    group_of = df.get_column(WID).to_numpy()
    starts = np.flatnonzero(np.r_[True, group_of[1:] != group_of[:-1]])
    ends = np.r_[starts[1:], len(group_of)]
    parts: list[tuple[np.ndarray, ...]] = []
    block_start = 0
    while block_start < len(starts):  # blocks of whole groups (a loop over blocks, not rows)
        block_end = block_start + 1
        while (
            block_end < len(starts)
            and (ends[block_end] - starts[block_start] + 1) * n_keys <= DENSE_CELLS
        ):
            block_end += 1
        a, b = int(starts[block_start]), int(ends[block_end - 1])
        block_start = block_end
        rows = slice(np.searchsorted(sid, a, "left"), np.searchsorted(sid, b, "left"))
        index = (sid[rows] - a + 1) * n_keys + rank[rows]
        size = (b - a + 1) * n_keys
        dense = [
            np.bincount(index, weights=v[rows], minlength=size).reshape(b - a + 1, n_keys)
            for v in values
        ]
        # two fields (the positive and negative weights) as one array: one pass of each
        # operation below for both; counts (whole numbers below 2^31) as the two halves
        # of one int64 (a difference or a sum of two such never carries across), else as
        # one complex number
        packed = dense
        if len(dense) == 2 and counted:
            packed = [(dense[0].astype(np.int64) << 32) | dense[1].astype(np.int64)]
        elif len(dense) == 2:
            packed = [dense[0] + 1j * dense[1]]
        running = [np.cumsum(d, axis=0) for d in packed]
        chosen = np.flatnonzero((lo_all >= a) & (lo_all < b))
        step = max(1, DENSE_CELLS // max(n_keys, 1))
        for c0 in range(0, len(chosen), step):  # windows in slices of bounded cells
            w = chosen[c0 : c0 + step]
            counts = [r[hi_all[w] - a + 1] - r[lo_all[w] - a] for r in running]
            present = counts[0] != 0.0
            for c in counts[1:]:
                present |= c != 0.0
            iw, ik = np.nonzero(present)
            sums = [np.cumsum(c, axis=1)[iw, ik] for c in counts]
            if len(dense) == 2 and counted:
                sums = [
                    (sums[0] >> 32).astype(np.float64),
                    (sums[0] & 0xFFFFFFFF).astype(np.float64),
                ]
            elif len(dense) == 2:
                sums = [sums[0].real, sums[0].imag]
            parts.append((w[iw], key_of[ik], *sums))
    # the windows come in order (blocks in step order, windows sorted by first step): a
    # window's points are one slice of the arrays, and the lists are built from offsets
    n_windows = bounds.height
    if parts:
        columns = [np.concatenate([p[i] for p in parts]) for i in range(2 + len(fields))]
    else:
        columns = [np.zeros(0, dtype=np.int64), np.zeros(0)] + [np.zeros(0) for _ in fields]
    offsets = np.zeros(n_windows + 1, dtype=np.int64)
    np.cumsum(np.bincount(columns[0], minlength=n_windows), out=offsets[1:])
    values = pa.StructArray.from_arrays(
        [pa.array(columns[1]), *(pa.array(columns[2 + i]) for i in range(len(fields)))],
        names=[key, *fields],
    )
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), values)
    series = pl.Series(column, lists).cast(df.schema[column])  # the state's own dtype
    return pl.DataFrame({"__pe_w": np.arange(n_windows, dtype=np.uint32)}).with_columns(series)


def windows(
    time: str | None,
    every: Any,
    period: Any = None,
    offset: Any = None,
    *,
    time_is_key: bool = False,
) -> Windows | None:
    """The windows of ``time=``, ``every=``, ``period=``, ``offset=`` (None without
    ``every``), every option checked (SPEC §13; ``InvalidParameterError`` naming it).

    ``time_is_key``: ``time=`` is also a column argument of the method (the forecast's
    target times), so ``time=`` without ``every=`` is no error there.
    """
    if every is None:
        if period is not None or offset is not None:
            given = "period=" if period is not None else "offset="
            raise InvalidParameterError(
                f"{given} needs every= (and time=): the step of the windows"
            )
        if time is not None and not time_is_key:
            raise InvalidParameterError(
                f'time="{time}" needs every= (a duration such as "1d", or an int for an '
                "integer column): the step of the windows"
            )
        return None
    if time is None:
        raise InvalidParameterError(
            "every= needs time= (the Date, Datetime or integer column the windows follow)"
        )
    if not isinstance(time, str):
        raise InvalidParameterError(f"time= must be a column name; got {time!r}")
    step = _duration("every", every)
    if not step.positive:
        raise InvalidParameterError(f"every must be a positive duration; got {every!r}")
    length = step if period is None else _duration("period", period)
    if not length.positive:
        raise InvalidParameterError(f"period must be a positive duration; got {period!r}")
    k = _multiple(length, step)
    if k is None:
        raise InvalidParameterError(
            f"period={length.text!r} must be a whole multiple of every={step.text!r} (the "
            "windows merge whole every-steps)"
        )
    shift = _duration("offset", 0 if offset is None else offset)
    if offset is None:
        shift = _Duration("0i" if step.integer else "0ns")
    return Windows(time, step, length, shift, k)


# -- grouping sets ---------------------------------------------------------------------


@dataclass(frozen=True)
class Grouping:
    """How a grouped evaluation groups its rows: one grouping (``by``) or several
    (grouping sets, stacked with a :data:`GROUPING` column), optional windows, and
    ``min_rows`` (slices of fewer used rows get null metrics)."""

    sets: tuple[tuple[str, ...], ...]
    windows: Windows | None = None
    min_rows: int | None = None
    stacked: bool = False  # grouping sets (a GROUPING column) rather than one ``by``

    @property
    def finest(self) -> list[str]:
        """The union of the key columns (the states of one pass over the rows)."""
        return list(dict.fromkeys(k for keys in self.sets for k in keys))

    @property
    def keys(self) -> list[str]:
        """The key columns of the result, before the window columns."""
        return [*self.finest, *([GROUPING] if self.stacked else [])]

    @property
    def out(self) -> list[str]:
        """Every column of the result before the metrics."""
        return [*self.keys, *(self.windows.columns if self.windows else [])]


def grouping(
    by: str | Sequence[str] | None = None,
    *,
    grouping_sets: Sequence[Sequence[str]] | None = None,
    rollup: Sequence[str] | None = None,
    time: str | None = None,
    every: Any = None,
    period: Any = None,
    offset: Any = None,
    min_rows: int | None = None,
    time_is_key: bool = False,
) -> Grouping | None:
    """The grouping of a task method's options (None when it is a plain ``by``, which
    the planner runs as it always did). Every option is checked here."""
    win = windows(time, every, period, offset, time_is_key=time_is_key)
    if min_rows is not None and (
        isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 1
    ):
        raise InvalidParameterError(f"min_rows must be a positive integer; got {min_rows!r}")
    if grouping_sets is not None and rollup is not None:
        raise InvalidParameterError(
            "grouping_sets= and rollup= both given: rollup=[a, b] is grouping_sets=[[], [a], [a, b]]"
        )
    by_cols = _names("by", by) if by is not None else []
    stacked = grouping_sets is not None or rollup is not None
    if stacked and by is not None:
        given = "grouping_sets=" if grouping_sets is not None else "rollup="
        raise InvalidParameterError(
            f"by= and {given} both given: the groupings name their own key columns "
            f"(put {by_cols} in every grouping instead)"
        )
    if rollup is not None:
        keys = _names("rollup", rollup)
        if not keys:
            raise InvalidParameterError("rollup= must name at least one column")
        sets = [keys[:i] for i in range(len(keys) + 1)]
    elif grouping_sets is not None:
        if isinstance(grouping_sets, str) or not isinstance(grouping_sets, Sequence):
            raise InvalidParameterError(
                "grouping_sets must be a list of lists of key columns, e.g. "
                f'[[], ["region"], ["region", "channel"]]; got {grouping_sets!r}'
            )
        sets = [_names("grouping_sets", keys) for keys in grouping_sets]
        if not sets:
            raise InvalidParameterError("grouping_sets must hold at least one grouping")
        seen: list[frozenset[str]] = []
        for keys in sets:
            if len(set(keys)) != len(keys):
                raise InvalidParameterError(
                    f"grouping_sets: the grouping {keys} names a column twice"
                )
            if frozenset(keys) in seen:
                raise InvalidParameterError(f"grouping_sets: the grouping {keys} is given twice")
            seen.append(frozenset(keys))
    else:
        sets = [by_cols]
    if win is None and not stacked and min_rows is None:
        return None
    for keys in sets:
        if win is not None and win.time in keys:
            raise InvalidParameterError(
                f'column "{win.time}" is the time= column of the windows and a key column'
            )
        reserved = [k for k in keys if k in (GROUPING, WINDOW_END)]
        if reserved and (stacked or win is not None):
            raise InvalidParameterError(
                f'a key column may not be named "{reserved[0]}" (a column of the result)'
            )
    return Grouping(tuple(tuple(k) for k in sets), win, min_rows, stacked)


def _names(arg: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise InvalidParameterError(
            f"{arg} must name columns (str or a list of str); got {value!r}"
        )
    return list(value)


def check_columns(g: Grouping, schema: Mapping[str, pl.DataType]) -> pl.DataType | None:
    """The key columns and the time column checked against the frame's schema; the time
    column's dtype (None without windows)."""
    arg = "grouping_sets" if g.stacked else "by"
    for key in g.finest:
        if key not in schema:
            available = ", ".join(list(schema)[:12])
            raise DataValidationError(
                f'column "{key}" (argument {arg}=) not found; available columns: {available}'
            )
    return g.windows.check(schema) if g.windows is not None else None


# -- the specs of a table, planned for merging -------------------------------------------


@dataclass
class MergePlan:
    """A set of specs laid out for a grouped evaluation: each distinct state aggregated
    once (``aggs``, as :func:`plan_specs` lays them out), its merge (``merges``: the state
    of a union of groups, for the upward merges), the last merge (``last``: the states
    that the ``finals`` read, and the metrics whose state is the rows finalized inside the
    aggregation) and each metric's value over the merged columns (``values``)."""

    aggs: list[pl.Expr]
    merges: list[pl.Expr]
    last: list[pl.Expr]
    values: dict[str, pl.Expr]
    row_columns: list[pl.Expr] = field(default_factory=list)
    planned: Planned | None = None
    cumulative: dict[str, Cumulative] = field(default_factory=dict)

    def finals(self, names: Sequence[str] | None = None) -> list[pl.Expr]:
        """Each metric's value (of ``names``, default all), aliased to its name."""
        return [self.values[n].alias(n) for n in (self.values if names is None else names)]

    def add_sum(self, agg: pl.Expr) -> pl.Expr:
        """An extra aggregation merged by summing (a count); returns its column."""
        name = agg.meta.output_name()
        self.aggs.append(agg)
        self.merges.append(pl.col(name).sum().alias(name))
        self.last.append(pl.col(name).sum().alias(name))
        return pl.col(name)


def plan_merged(specs: Mapping[str, MetricSpec], *, columns_first: bool = False) -> MergePlan:
    """:func:`plan_specs` for merging: every state of every spec (the rows too) as its own
    column, so that groups merge by each state's rule before the finalize."""
    plain = {name: spec for name, spec in specs.items() if not spec.has_rows}
    planned = plan_specs(plain, columns_first=columns_first)
    states: dict[str, State] = {}
    for name, spec in plain.items():
        for key, state in spec.states.items():
            states[planned.columns[name][key]] = state
    aggs = list(planned.aggs)
    merges = [state.merged(pl.col(c)).alias(c) for c, state in states.items()]
    last = list(merges)
    values: dict[str, pl.Expr] = {}
    for name, spec in specs.items():
        if name in plain:
            columns = planned.columns[name]
            values[name] = spec.finalize({k: pl.col(c) for k, c in columns.items()})
            continue
        merged: dict[str, pl.Expr] = {}
        for key, state in spec.states.items():
            column = f"__pe_r{len(aggs)}"
            aggs.append(state.aggregate().alias(column))
            merges.append(state.merged(pl.col(column)).alias(column))
            merged[key] = state.merged(pl.col(column))
        last.append(spec.finalize(merged).alias(name))
        values[name] = pl.col(name)
    cumulative = {c: st.cumulative for c, st in states.items() if st.cumulative is not None}
    return MergePlan(aggs, merges, last, values, list(planned.row_columns), planned, cumulative)


@dataclass(frozen=True)
class Units:
    """A second stage over unit keys (ranking: the queries): the rows are aggregated per
    (group, step, unit), and ``reduce(frame, group, extra)`` turns those per-unit rows into
    one row of mergeable sums per (group, step) with the ``extra`` aggregations."""

    keys: Sequence[str]
    reduce: Callable[[pl.LazyFrame, list[str], list[pl.Expr]], pl.LazyFrame]


# -- the query -----------------------------------------------------------------------------


def merge_level(
    states: pl.LazyFrame, keys: Sequence[str], merges: Sequence[pl.Expr]
) -> pl.LazyFrame:
    """The step states of a coarser grouping (``keys``) merged from finer ones."""
    return states.group_by([*keys, STEP]).agg(*merges, pl.col(FIRST).min())


def query(
    rows: pl.LazyFrame,
    g: Grouping,
    schema: Mapping[str, pl.DataType],
    aggs: Sequence[pl.Expr],
    merges: Sequence[pl.Expr],
    last: Sequence[pl.Expr],
    side: Sequence[pl.Expr] = (),
    units: Units | None = None,
    cumulative: Mapping[str, Cumulative] | None = None,
) -> pl.LazyFrame:
    """The merged states of every grouping, stacked, with the key and window columns of
    :attr:`Grouping.out`, from one aggregation of ``rows``. The ``side`` aggregations
    (counts, e.g. of the validation) are summed over every row and carried on each row of
    the result (read from its first row). With ``units`` the aggregation is per unit
    (query) too, and :attr:`Units.reduce` turns the units' values into the states of
    their group and step (sums, merged as sums)."""
    dtype = check_columns(g, schema)
    win = g.windows
    finest = g.finest
    group = list(finest)
    first_aggs = list(aggs) + list(side)
    if win is not None:
        assert dtype is not None
        rows = rows.with_columns(win.step(dtype))
        group.append(STEP)
        first_aggs.append(pl.col(win.time).min().alias(FIRST))
    totals = [e.meta.output_name() for e in side]
    if units is not None:
        first = rows.group_by([*group, *units.keys]).agg(first_aggs)
        if totals:  # the totals over every row (before a row of null time is dropped)
            first = first.with_columns(pl.col(totals).sum())
        if win is not None:  # a unit split across steps has no value of its own per window
            unit = pl.struct([*finest, *units.keys, pl.col(STEP).is_null().alias("__pe_n")])
            split = unit.is_duplicated() & unit.is_first_distinct() & pl.col(STEP).is_not_null()
            first = first.with_columns(count_true(split).alias(SPLIT))
            totals.append(SPLIT)
        extra = [pl.col(n).first() for n in totals]
        if win is not None:
            extra.append(pl.col(FIRST).min())
        if ROWS in [e.meta.output_name() for e in aggs]:
            extra.append(pl.col(ROWS).sum())
        first = units.reduce(first, group, extra)
    else:
        first = rows.group_by(group).agg(first_aggs) if group else rows.select(first_aggs)
        if totals:  # the totals over every row (before a row of null time is dropped)
            first = first.with_columns(pl.col(totals).sum())
    carried = [pl.col(n).first() for n in totals]
    if win is not None:
        first = first.filter(pl.col(STEP).is_not_null())  # a row of null time is ignored
    return merge_up(first, g, schema, dtype, [*merges, *carried], [*last, *carried], cumulative)


def merge_up(
    first: pl.LazyFrame,
    g: Grouping,
    schema: Mapping[str, pl.DataType],
    dtype: pl.DataType | None,
    merges: Sequence[pl.Expr],
    last: Sequence[pl.Expr],
    cumulative: Mapping[str, Cumulative] | None = None,
) -> pl.LazyFrame:
    """Every grouping's (and window's) states, stacked, from the states of the finest
    grouping (one row per finest keys and, with windows, :data:`STEP` with its earliest
    time :data:`FIRST`): merged upward by ``merges``, per window by ``last``."""
    win = g.windows
    finest = g.finest
    names = [e.meta.output_name() for e in last]
    levels: list[pl.LazyFrame] = []
    for keys in g.sets:
        if win is None:
            level = first.group_by(list(keys)).agg(last) if keys else first.select(last)
        else:
            assert dtype is not None
            steps = first if list(keys) == finest else merge_level(first, keys, merges)
            level = win.merge(steps, keys, last, dtype, cumulative)
        levels.append(level.select(*keys, *(win.columns if win else []), *names))
    return stack(levels, g, schema)


def stack(
    levels: Sequence[pl.LazyFrame], g: Grouping, schema: Mapping[str, pl.DataType]
) -> pl.LazyFrame:
    """The result of each grouping (``g.sets``, in order; its keys, the window columns,
    then its values), each sorted by its keys and windows, stacked with the key columns
    of the others null and the :data:`GROUPING` column."""
    win = g.windows
    out: list[pl.LazyFrame] = []
    for i, (keys, level) in enumerate(zip(g.sets, levels, strict=True)):
        order = [*keys, *([win.time] if win is not None else [])]
        if order:  # stable: the order within a group and window stays (e.g. by series)
            level = level.sort(order, nulls_last=True, maintain_order=True)
        missing = [pl.lit(None, dtype=schema[k]).alias(k) for k in g.finest if k not in keys]
        if g.stacked:
            missing.append(pl.lit(",".join(keys), dtype=pl.String).alias(GROUPING))
        missing.append(pl.lit(i, dtype=pl.Int32).alias(LEVEL))
        level = level.with_columns(missing)
        values = [c for c in level.collect_schema() if c not in (*g.out, LEVEL)]
        out.append(level.select(LEVEL, *g.out, *values))
    if len(out) == 1:
        return out[0].drop(LEVEL)
    # each grouping in the order given (a stable sort), each sorted by its keys (and windows)
    stacked = pl.concat(out, how="vertical", parallel=False)
    return stacked.sort(LEVEL, maintain_order=True).drop(LEVEL)


def unit_levels(
    states: pl.LazyFrame,
    g: Grouping,
    schema: Mapping[str, pl.DataType],
    units: Sequence[str],
    merges: Sequence[pl.Expr],
    finish: Callable[[pl.LazyFrame, list[str]], pl.LazyFrame],
) -> pl.LazyFrame:
    """Units merged before their second stage (forecast: the series, whose states are
    sums): ``states`` hold one row per (finest keys, unit[, step]) (with :data:`FIRST`
    under windows); each grouping merges them per (its keys, unit[, window]) and
    ``finish(frame, group columns)`` reduces the units per group (keys and windows)."""
    dtype = check_columns(g, schema)
    win = g.windows
    levels = []
    for keys in g.sets:
        if win is None:
            same = list(keys) == g.finest
            level = states if same else states.group_by([*keys, *units]).agg(merges)
            group = list(keys)
        else:
            assert dtype is not None
            steps = states
            if list(keys) != g.finest:
                steps = states.group_by([*keys, *units, STEP]).agg(*merges, pl.col(FIRST).min())
            level = win.merge_units(steps, keys, units, merges, dtype)
            group = [*keys, *win.columns]
        levels.append(finish(level, group))
    return stack(levels, g, schema)


def apply_min_rows(
    df: pl.DataFrame, g: Grouping, metrics: Sequence[str], rows: str = ROWS
) -> tuple[pl.DataFrame, pl.Series | None]:
    """Null metrics for the slices of fewer than ``min_rows`` used rows (column ``rows``),
    counted in one warning; the mask of those slices (None without ``min_rows``)."""
    if g.min_rows is None or rows not in df.columns:
        return df, None
    small = (df.get_column(rows) < g.min_rows).fill_null(True)
    n = int(small.sum())
    if n:
        warnings.warn(
            f"{n} of {df.height} slices have fewer than min_rows={g.min_rows} rows: "
            "their metrics are null",
            UndefinedMetricWarning,
            stacklevel=4,
        )
        df = df.with_columns(
            pl.when(small).then(None).otherwise(pl.col(m)).alias(m) for m in metrics
        )
    return df, small


# -- pe.Evaluation: one state per (group, step) ----------------------------------------------


def evaluation_windows(
    task: str, time: str | None, every: Any, offset: Any, by: Sequence[str]
) -> dict[str, Any] | None:
    """The windows of ``pe.Evaluation(task, ..., time=, every=, offset=)`` as its definition
    keeps them (None without ``every``); the options checked."""
    win = windows(time, every, None, offset, time_is_key=task == "forecast")
    if win is None:
        return None
    if win.time in by:
        raise InvalidParameterError(f'column "{win.time}" is the time= column and a by= column')
    return {"time": win.time, "every": win.every.text, "offset": win.offset.text}


def state_keys(task: str, by: Sequence[str], definition: Mapping[str, Any] | None) -> list[str]:
    """The keys of an evaluation's state: ``by`` and, with windows, the time column (its
    every-step; a forecast keeps its rows, keyed by their own times)."""
    if definition is None or task == "forecast":
        return list(by)
    return [*by, definition["time"]]


def steps_of(lf: pl.LazyFrame, task: str, definition: Mapping[str, Any] | None) -> pl.LazyFrame:
    """The rows of a batch with the time column replaced by its every-step's start (a row
    of a day seen before then merges into that day's state)."""
    if definition is None or task == "forecast":
        return lf
    win = windows(definition["time"], definition["every"], None, definition["offset"])
    assert win is not None
    dtype = win.check(lf.collect_schema())
    return lf.with_columns(win.step(dtype).cast(dtype).alias(win.time))


def evaluation_grouping(
    d: Any, period: Any, grouping_sets: Any, rollup: Any, min_rows: Any
) -> Grouping | None:
    """The grouping of ``Evaluation.compute(period=, grouping_sets=, rollup=, min_rows=)``
    (None: the plain table). The keys of the groupings must be among the state's ``by``."""
    w = d.windows
    if w is None and period is not None:
        raise InvalidParameterError(
            "period= needs an evaluation with windows: pe.Evaluation(..., time=, every=)"
        )
    stacked = grouping_sets is not None or rollup is not None
    if w is None and not stacked and min_rows is None:
        return None
    by = [b for b in d.by if w is None or d.task == "forecast" or b != w["time"]]
    g = grouping(
        None if stacked else (by or None),
        grouping_sets=grouping_sets,
        rollup=rollup,
        time=w["time"] if w else None,
        every=w["every"] if w else None,
        period=period,
        offset=w["offset"] if w else None,
        min_rows=min_rows,
        time_is_key=d.task == "forecast",
    )
    assert g is not None
    outside = [k for k in g.finest if k not in by]
    if outside:
        raise InvalidParameterError(
            f'grouping key "{outside[0]}" is not among by={by} of this evaluation: its state '
            "is kept per by group, and groupings merge those"
        )
    return g


def method_options(g: Grouping, d: Any) -> dict[str, Any]:
    """The task method's options (``by`` among them) for grouping ``g``."""
    opts: dict[str, Any] = {}
    if g.stacked:
        opts["by"] = None
        opts["grouping_sets"] = [list(keys) for keys in g.sets]
    else:
        opts["by"] = list(g.sets[0]) or None
    win = g.windows
    if win is not None:
        if d.task != "forecast":  # the forecast's time= is its column argument
            opts["time"] = win.time
        opts.update(every=win.every.text, period=win.period.text, offset=win.offset.text)
    if g.min_rows is not None:
        opts["min_rows"] = g.min_rows
    return opts


USED = "__pe_used"  # the used rows of an evaluation's state without by (COUNTS)


# -- the options on the task methods ---------------------------------------------------------

OPTIONS: dict[str, str] = {
    "time": "str | None",
    "every": "str | int | None",
    "period": "str | int | None",
    "offset": "str | int | None",
    "grouping_sets": "Sequence[Sequence[str]] | None",
    "rollup": "Sequence[str] | None",
    "min_rows": "int | None",
}
"""The options of windows and slices on every task method (SPEC §13), declared once."""


def grouped_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A task method that takes the options of :data:`OPTIONS`: the wrapper's signature
    is ``fn``'s (without its ``grouping`` parameter) plus those options (``time`` only
    where ``fn`` lacks it: a forecast's ``time=`` is its column argument, which the
    windows then follow); ``fn`` receives them as one ``grouping`` (:func:`grouping`;
    None for a plain ``by``)."""
    sig = inspect.signature(fn)
    own_time = "time" in sig.parameters
    added = [name for name in OPTIONS if not (own_time and name == "time")]

    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        options = {name: kwargs.pop(name, None) for name in added}
        time = kwargs.get("time") if own_time else options.pop("time", None)
        g = grouping(kwargs.get("by"), time=time, time_is_key=own_time, **options)
        return fn(self, *args, grouping=g, **kwargs)

    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [p for p in sig.parameters.values() if p.name != "grouping"]
    params += [inspect.Parameter(n, keyword, default=None, annotation=OPTIONS[n]) for n in added]
    method.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return method
