"""``df.eval.forecast``: forecast accuracy on long data, per series and across series.

One lazy query: (optional) the lead of each row from its cutoff, the in-sample scale of
every series from the ``train=`` frame (joined on the series id), then one ``group_by`` per
(``by`` groups, series) that sums the *state* of every metric (weighted sums: Σw, Σw|e|,
Σw e², ...). The per-series values are ratios of that state; the pooled values the same
ratios of the state summed over series; the across-series values the mean of the
per-series values. Row-level validation runs in the same query (SPEC §2).

The single regression and forecast metric methods (``df.eval.mae``, ``df.eval.mase`` ...)
take the same keys (SPEC §6): ``series=``, ``time=``, ``cutoff=`` (then ``by="lead"`` and
``lead=``) and, for MASE / RMSSE, ``train=`` and ``season_length=`` instead of a scale
column; they are generated here from the registry around the plain namespace methods.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core import units
from polars_eval._core import windows as _windows
from polars_eval._core.planner import Planned, no_rows_reason, normalize_by, plan_specs
from polars_eval._core.registry import REGISTRY, MetricInfo
from polars_eval._core.spec import MetricSpec, State
from polars_eval._core.table import Checks, Output, Query, Stage, Table, deferred, finish, run
from polars_eval._core.tasks import TASKS
from polars_eval._exprs import count_true, not_null, to_float, weight_expr
from polars_eval._params import check_choice, check_fraction, check_positive_int
from polars_eval._typing import Interval, IntoExpr, ZeroActuals
from polars_eval._validate import check_aggs, column_problems, raise_for_checks, row_checks
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.metrics import forecast as fc
from polars_eval.metrics import regression as reg

STATE = "__pe_s_"
TRAIN_SCALED: dict[str, str] = _registry.declared("train_scale")
"""The metrics whose ``scale`` column ``train=`` can replace, and which scale of
``pe.seasonal_scale`` each reads (declared ``train_scale=`` at ``@register``)."""
SCALED_LATE: dict[str, str] = _registry.declared("late_of")
"""Scaled metrics (declared ``late_of=``) whose states are those of an unscaled one (Σ w, Σ w·term) with each term
divided by the scale, and the weight 0 where the scale is not positive: with one scale per
series, the table sums the unscaled states per series and scales the sums, and so joins the
scales onto the series, not onto every row."""


def _series_undefined(name: str) -> str:
    """Why a metric of the forecast table is undefined for a series: its registered reason,
    or "empty series" where that reason is an empty group (or for a column that is no
    registered metric, such as a quantile's ``pinball_0.1``)."""
    info = REGISTRY.get(name)
    return "empty series" if info is None or info.undefined == reg.EMPTY else info.undefined


LATE = "__pe_unscaled_"
DUP = "__pe_dup"
ONE_SERIES = "__pe_series"
"""The key of the one series of a frame given neither ``series=`` nor a ``by`` column."""
SERIES_HINT = "; if the frame holds several series, name their column(s) with series= (or by=)"
TRAIN_DUP = "__pe_train_dup"
BAD = "__pe_bad_"
N_KEY_EXAMPLES = 3


def check_key_options(time: Any, cutoff: Any, lead: Any, season_length: Any) -> None:
    """The options of the forecast keys: column names for ``time`` / ``cutoff``, a positive
    ``lead`` (which needs ``cutoff``) and a positive ``season_length``."""
    if not isinstance(time, str):
        raise InvalidParameterError(f"time must be a column name; got {time!r}")
    if cutoff is not None and not isinstance(cutoff, str):
        raise InvalidParameterError(f"cutoff must be a column name; got {cutoff!r}")
    if lead is not None:
        check_positive_int("lead", lead)
        if cutoff is None:
            raise InvalidParameterError("lead= needs cutoff= (the column of forecast origins)")
    check_positive_int("season_length", season_length)


def _key_list(name: str, value: Any) -> list[str]:
    keys = [value] if isinstance(value, str) else list(value) if value is not None else []
    if not keys or not all(isinstance(k, str) for k in keys):
        raise InvalidParameterError(
            f"{name} must be a column name or a list of them; got {value!r}"
        )
    return keys


def series_keys(
    series: str | list[str] | None,
    by_cols: list[str],
    cutoff: str | None,
    train_schema: Mapping[str, Any] | None,
) -> list[str]:
    """The series key columns: ``series=``, or without it the ``by`` columns other than
    the lead, those present in ``train`` when it is given (SPEC §6); none: the whole frame
    (each ``by`` group) is one series."""
    if series is not None:
        return _key_list("series", series)
    groups = [c for c in by_cols if not (cutoff is not None and c == "lead")]
    return groups if train_schema is None else [c for c in groups if c in train_schema]


def _missing(schema: Mapping[str, Any], columns: Sequence[str], what: str) -> None:
    for c in columns:
        if c not in schema:
            available = ", ".join(list(schema)[:12])
            raise DataValidationError(
                f'column "{c}" ({what}) not found; available columns: {available}'
            )


def _show_key(row: dict[str, Any]) -> str:
    return (
        "("
        + ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in row.items())
        + ")"
    )


def duplicate_error(
    lf: pl.LazyFrame, keys: list[str], named: list[str], where: str, hint: str = ""
) -> DataValidationError | None:
    """The error for rows of ``lf`` repeating a ``keys`` tuple (None when there is none).

    The message names the key columns ``named`` (those that must be unique, e.g. series
    and time), how many rows repeat a key, and a few repeated keys with their time (SPEC
    §6, BAD_INPUTS row 29), then ``hint``. Runs a query of its own: call it when a count
    said so, or before the metric on eager data.
    """
    keys = list(dict.fromkeys(keys))
    counts = lf.group_by(keys).agg(pl.len().alias("__pe_n")).filter(pl.col("__pe_n") > 1)
    total, examples = pl.collect_all(
        [
            counts.select(pl.col("__pe_n").cast(pl.Int64).sum() - pl.len().cast(pl.Int64)),
            counts.sort(keys, nulls_last=True)
            .head(N_KEY_EXAMPLES)
            .select(k for k in keys if k != ONE_SERIES),
        ]
    )
    n = total.item() or 0
    if not n:
        return None
    shown = ", ".join(_show_key(row) for row in examples.to_dicts())
    frame = f"{where} has duplicate" if where else "duplicate"
    return DataValidationError(
        f"{frame} ({', '.join(named)}) rows: expected one row per key; found {n} row(s) "
        f"repeating the key of another row, e.g. [{shown}]{hint}"
    )


def _point_metrics(
    metrics: str | Sequence[str] | None, trained: bool, per_series: bool, columns: Any
) -> list[str]:
    """The metrics of ``df.eval.forecast`` besides the quantile and interval ones: the
    default point metrics (and the scaled ones with ``train=``), or those of ``metrics=``
    (an order statistic pools over series only from every row: ``per_series=True``)."""
    if metrics is None:
        return _registry.default_table("forecast", train=trained)
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    known = [
        i.name
        for i in REGISTRY.values()
        if i.task in KEY_TASKS and i.kind == "scalar" and i.spec is not None
    ]
    for name in names:
        if name not in known:
            raise InvalidParameterError(
                f"metrics: {name!r} is not a regression or forecasting metric of one value; "
                f"available: {', '.join(known)}"
            )
        if name in TRAIN_SCALED and not trained:
            raise InvalidParameterError(f"{name} needs train= (its scale is in-sample)")
        spec = REGISTRY[name].spec
        if not per_series and spec is not None and _is_order_statistic(name, columns):
            raise InvalidParameterError(
                f"{name} is an order statistic of the rows: the table gives it per series "
                f"(per_series=True); over every row use pe.{name} in a group_by"
            )
    if len(set(names)) < len(names):
        raise InvalidParameterError("metrics: a metric is named twice")
    return names


def _point_arguments(actual: Any, forecast: Any, weight: Any, zero_actuals: str) -> dict[str, Any]:
    """What the table gives a point metric: the actual, the forecast (as ``pred=`` for the
    regression metrics), the weight and the zero-actuals rule."""
    return {
        "actual": actual,
        "pred": forecast,
        "forecast": forecast,
        "weight": weight,
        "zero_actuals": zero_actuals,
    }


def _with_scale(name: str, available: dict[str, Any]) -> dict[str, Any]:
    """The arguments of ``name``, with its in-sample scale column when it is scaled."""
    return {**available, "scale": TRAIN_SCALED[name]} if name in TRAIN_SCALED else available


def _is_order_statistic(name: str, columns: Any) -> bool:
    """Whether the metric's state is the rows themselves (no summary merges across series)."""
    available = _with_scale(name, _point_arguments(*columns, None, "skip"))
    try:
        return _registry.bind(REGISTRY[name], available).has_rows
    except InvalidParameterError:  # it needs more than the table gives: said when it runs
        return False


def _sorted_group(frame: pl.DataFrame | pl.LazyFrame, groups: list[str]) -> str | None:
    """The one group column of an eager frame when its values are sorted (ascending, no
    null, not float), which Polars then groups by slices; None otherwise."""
    if not isinstance(frame, pl.DataFrame) or len(groups) != 1:
        return None
    column = frame.get_column(groups[0])
    if column.dtype.is_float() or column.null_count() or not column.is_sorted():
        return None
    return groups[0]


def _late_columns(name: str) -> dict[str, str]:
    return {"w": f"{LATE}{name}_w", "sum": f"{LATE}{name}_sum"}


def _late_states(planned: Planned, late: Mapping[str, Any]) -> list[pl.Expr]:
    """The states of each metric of ``late`` (see ``SCALED_LATE``) from the summed states
    of its unscaled metric and the series' scale column: the weight where the scale is
    positive (else 0), the weighted sum of terms divided by the scale (else 0)."""
    out = []
    for name in late:
        unscaled = planned.columns[LATE + name]
        scale = fc.valid_scale(TRAIN_SCALED[name])
        valid = scale.is_not_null()
        columns = _late_columns(name)
        out.append(pl.when(valid).then(pl.col(unscaled["w"])).otherwise(0.0).alias(columns["w"]))
        total = pl.when(valid).then(pl.col(unscaled["sum"]) / scale).otherwise(0.0)
        out.append(total.alias(columns["sum"]))
    return out


def _late_finals(planned: Planned, late: Mapping[str, Any], names: Sequence[str]) -> list[pl.Expr]:
    """The finalizers of ``names`` per series, those of ``late`` over their late states (the
    unscaled helper metrics left out)."""
    return [
        *[e for e in planned.finals if e.meta.output_name() in names],
        *[spec.finalize({k: pl.col(c) for k, c in _late_columns(n).items()}).alias(n)
          for n, spec in late.items()],
    ]  # fmt: skip


def _late_merged(planned: Planned, late: Mapping[str, Any], names: Sequence[str]) -> list[pl.Expr]:
    """The pooled values of ``names`` (``<name>_pooled``): each metric over the states of
    every series, merged (those of ``late`` from their late states)."""
    rescaled = Planned([], [], dict(late), {n: _late_columns(n) for n in late})
    pooled = planned.merged("_pooled")
    kept = [e for e in pooled if e.meta.output_name().removesuffix("_pooled") in names]
    return [*kept, *rescaled.merged("_pooled")]


def _strictly_sorted(
    frame: pl.DataFrame | pl.LazyFrame, groups: list[str], order: list[str], cutoff: str | None
) -> bool:
    """Whether an eager frame is strictly sorted by its keys, so that no key repeats (the
    lead, a function of the other keys, left out)."""
    keys = [g for g in groups if not (cutoff is not None and g == "lead")]
    return _sorted(frame, [*keys, *order], strict=True)


def _maybe_repeated(groups: list[str], order: list[str]) -> pl.Expr:
    """Per row: whether it may start a run of its group in the frame, or not come strictly
    after the row before it in ``order`` (lexicographic; a null compares as neither).
    Summed per group, a group counts 1 when its rows are adjacent and in strictly increasing
    order: then no key repeats in it, and only the other groups need the exact (costlier)
    count of repeated keys."""
    after = pl.col(order[-1]) > pl.col(order[-1]).shift(1)
    for c in reversed(order[:-1]):
        prev = pl.col(c).shift(1)
        after = (pl.col(c) > prev) | ((pl.col(c) == prev) & after)
    same = pl.all_horizontal([pl.col(g) == pl.col(g).shift(1) for g in groups])
    return (~(same & after).fill_null(False)).alias(DUP)


@dataclass(frozen=True)
class SeriesPlan:
    """The forecast table as states per (``by`` groups, series): the row columns and the
    aggregations of its first stage (sums, extrema, co-moments of every metric, the used
    rows ``n`` and ``zero_actuals``), and what its second stage finalizes
    (:func:`series_table`). Two such states of disjoint rows of one series merge by each
    state's rule (``pe.Evaluation`` keeps them, SPEC §10)."""

    specs: Mapping[str, MetricSpec]  # the metrics planned (LATE + name: an unscaled helper)
    late: Mapping[str, MetricSpec]  # scaled per series after the aggregation (SCALED_LATE)
    planned: Planned
    names: list[str]  # the metric columns of the table, in order
    rows: list[pl.Expr]  # row columns to add before the aggregation
    aggs: list[pl.Expr]  # the aggregations per (by groups, series)
    row_scale: bool  # a metric reads the in-sample scale per row (join it onto the rows)

    @property
    def states(self) -> dict[str, State]:
        """Each state column of :attr:`aggs` (``n`` and ``zero_actuals`` are counts) and
        its state, whose rule merges it."""
        out = {
            self.planned.columns[name][key]: state
            for name, spec in self.planned.specs.items()
            for key, state in spec.states.items()
        }
        return out | {"n": State(pl.col("n")), "zero_actuals": State(pl.col("zero_actuals"))}


def series_plan(
    actual: str,
    forecast: str,
    weight: IntoExpr | None,
    zero_actuals: str,
    quantiles: Mapping[float, str],
    interval: tuple[str, str] | None,
    point: Sequence[str],
    trained: bool,
) -> SeriesPlan:
    """The states per series of ``df.eval.forecast`` (``point``: see :func:`_point_metrics`;
    ``trained``: ``train=`` is given)."""
    y, f, w = to_float(actual), to_float(forecast), weight_expr(weight)
    used = not_null(y, f) if weight is None else not_null(y, f, w)
    available = _point_arguments(actual, forecast, weight, zero_actuals)
    specs: dict[str, Any] = {}
    late: dict[str, Any] = {}  # scaled per series after the aggregation
    for name in point:
        spec = _registry.bind(REGISTRY[name], _with_scale(name, available))
        if trained and name in SCALED_LATE:
            unscaled = _registry.bind(REGISTRY[SCALED_LATE[name]], available)
            if set(spec.states) == set(unscaled.states) == {"w", "sum"}:
                late[name] = spec
                specs[LATE + name] = unscaled
                continue
        specs[name] = spec
    row_scale = trained and any(n in TRAIN_SCALED for n in specs)
    for q, col in sorted(quantiles.items()):
        specs[f"pinball_{q:g}"] = REGISTRY["pinball_loss"].spec(  # type: ignore[misc]
            actual, col, quantile=q, weight=weight
        )
    if interval is not None:
        specs["coverage"] = REGISTRY["coverage"].spec(actual, *interval, weight=weight)  # type: ignore[misc]
    planned = plan_specs(specs, columns_first=True)
    counted = used & (w > 0.0)
    rows = [
        *planned.row_columns,
        counted.alias(STATE + "n"),
        (counted & (y == 0.0)).alias(STATE + "zero"),
    ]
    aggs = [
        *planned.aggs,
        count_true(pl.col(STATE + "n")).alias("n"),
        count_true(pl.col(STATE + "zero")).alias("zero_actuals"),
    ]
    names = [*point, *(n for n in specs if n not in point and not n.startswith(LATE))]
    return SeriesPlan(specs, late, planned, names, rows, aggs, row_scale)


def series_table(
    q: pl.LazyFrame,
    sp: SeriesPlan,
    by_cols: list[str],
    keys: list[str],
    per_series: bool,
    ci: units.UnitCI | None = None,
) -> pl.LazyFrame:
    """The second stage of the forecast table over the states per (``by`` groups, series)
    of :func:`series_plan` (with the columns of ``pe.seasonal_scale`` that the late-scaled
    metrics read, joined on the series): each metric per series, then (unless
    ``per_series``) one row per ``by`` group: the mean over series (with ``ci``, its
    interval over series: :mod:`polars_eval.stats.units`) and the pooled value."""
    planned, late, names = sp.planned, sp.late, sp.names
    if late:
        q = q.with_columns(_late_states(planned, late))
    q = q.with_columns(_late_finals(planned, late, names))
    if per_series:
        return q.select([*by_cols, *keys, "n", *names, "zero_actuals"])
    aggs = [
        pl.len().cast(pl.Int64).alias("n_series"),
        pl.col("n").sum(),  # Int64 counts
        *units.unit_sums(names, ci=ci),  # the mean over series (and its interval's sums)
        *_late_merged(planned, late, names),  # the states of every series, merged
        pl.col("zero_actuals").sum(),
    ]
    table = q.group_by(by_cols).agg(aggs) if by_cols else q.select(aggs)
    pooled = [n + "_pooled" for n in names]
    means = units.unit_means(names, ci)
    table = table.select([*by_cols, "n_series", "n", *means, *pooled, "zero_actuals"])
    return units.with_bootstrap(table, q, names, by_cols, keys, ci)


def _grouped_table(
    q: pl.LazyFrame,
    g: _windows.Grouping,
    schema: Mapping[str, Any],
    sp: SeriesPlan,
    keys: list[str],
    per_series: bool,
) -> pl.LazyFrame:
    """The forecast table per window and grouping (SPEC §13) from the states per (finest
    ``by`` keys, series[, step]): each series' states merged per (grouping, window), then
    the table of :func:`series_table` per grouping and window."""
    if g.windows is not None:
        q = q.filter(pl.col(_windows.STEP).is_not_null())  # a row of null time is ignored
    states = sp.states
    scales = [c for c in q.collect_schema() if c in set(TRAIN_SCALED.values())]
    merges = [state.merged(pl.col(c)).alias(c) for c, state in states.items()]
    merges += [pl.col(c).first() for c in scales]  # one scale per series

    def finish(level: pl.LazyFrame, group: list[str]) -> pl.LazyFrame:
        table = series_table(level, sp, group, keys, per_series)
        return table.sort(keys, nulls_last=True) if per_series else table

    return _windows.unit_levels(q, g, schema, keys, merges, finish)


def table_undefined(names: Sequence[str], per_series: bool) -> dict[str, str]:
    """Why each metric column of the forecast table may be null."""
    undefined = {name: _series_undefined(name) for name in names}
    if not per_series:
        undefined.update({name + "_pooled": why for name, why in undefined.items()})
    return undefined


class ForecastMethods:
    """``df.eval.forecast``: every forecast metric per series, across series and pooled."""

    _frame: pl.DataFrame | pl.LazyFrame

    @_windows.grouped_method
    def forecast(
        self,
        actual: str,
        forecast: str,
        *,
        series: str | list[str] | None = None,
        time: str,
        train: pl.DataFrame | pl.LazyFrame | None = None,
        season_length: int = 1,
        cutoff: str | None = None,
        lead: int | None = None,
        by: str | list[str] | None = None,
        weight: IntoExpr | None = None,
        zero_actuals: ZeroActuals = "skip",
        quantiles: Mapping[float, str] | None = None,
        interval: tuple[str, str] | None = None,
        per_series: bool = False,
        metrics: str | Sequence[str] | None = None,
        validate: bool = True,
        ci: str | None = None,
        level: float = 0.95,
        n_resamples: int | None = None,
        seed: int | None = None,
        grouping: _windows.Grouping | None = None,
    ) -> Any:
        """Forecast accuracy of a long frame (series id, time, actual, forecast).

        Metrics: ``mae``, ``mse``, ``rmse``, ``bias`` (mean forecast − actual, positive
        when over-forecasting), ``mape`` (zero actuals skipped and counted in
        ``zero_actuals``, or ``zero_actuals="inf"``), ``smape`` (in [0, 2]), ``wape``;
        with ``train=`` (a frame with the same series, time and actual columns) ``mase``
        and ``rmsse`` scaled by the in-sample seasonal naive errors of each series
        (``season_length=``; null for a series whose training part is constant or not
        longer than the season, see :func:`polars_eval.seasonal_scale`); with
        ``quantiles={0.1: "q10", 0.9: "q90"}`` one ``pinball_<q>`` per quantile column;
        with ``interval=("lo", "hi")`` the ``coverage`` of the interval.

        With ``cutoff=`` (the column saying when each forecast was made) a ``lead`` column
        is added, the rank of the target time within (series, cutoff) (see
        :func:`polars_eval.with_lead`); use ``by="lead"`` for metrics by lead and ``lead=1``
        for one-step-ahead errors only.

        The series key is ``series=`` (a column or a list); without it, the ``by`` column(s)
        other than ``"lead"`` (with ``train=``: those present in ``train``, as for
        ``df.eval.mase``), so ``by="series"`` gives one row per series; with neither, the
        whole frame (each ``by`` group) is one series, and a repeated (cutoff, time) key is
        an error that suggests ``series=``.

        ``per_series=True`` returns one row per (``by`` group, series) with ``n`` (rows) and
        the metrics. Otherwise one row per ``by`` group with ``n_series``, ``n``, each
        metric as the mean of its per-series values (series where it is undefined left out)
        and ``<metric>_pooled``, the metric over all rows pooled (for MASE / RMSSE: the mean
        of every row's scaled error). Keys (``by`` groups, series, [cutoff,] time) must be
        unique: a duplicate is an error naming the keys (the same on ``train``).
        ``weight=`` weighs rows inside each series. ``metrics=`` replaces the point metrics
        (``mae`` … ``wape``, and ``mase``/``rmsse`` with ``train=``) by any registered
        regression or forecasting metric of the actual and the forecast, in the order given
        (``["mae", "msse", "linex"]``; a scaled one needs ``train=``, one that needs more
        columns or options than the table takes is an error that says so); ``quantiles=``
        and ``interval=`` still add theirs.

        ``ci="t"`` adds ``<metric>_lower`` and ``<metric>_upper`` after each mean over
        series: Student's interval mean ± t_{n−1} · s / √n over the n series where the
        metric is defined (null below two), from each group's count, Σx and Σx² (SPEC
        §14; ``pe.Evaluation("forecast", ...).compute(ci="t")`` gives it too);
        ``ci="bootstrap"`` resamples the series (``n_resamples=``, ``seed=``). The pooled
        columns get none (they are not means over series).
        ``every=`` (``period=``, ``offset=``) evaluates per window of the target times
        ``time=`` (SPEC §13): each series' states per ``every`` step, merged per window of
        its ``by`` group, then per series and across series as above. ``grouping_sets=`` /
        ``rollup=`` stack the table of each grouping of the ``by`` keys (merged from the
        finest one's states), ``min_rows=`` nulls the metrics of a row of fewer rows.

        Rows may come in any order. A DataFrame (and ``train``) sorted by (series, time)
        is the fast case: one cheap pass finds it sorted, which rules out duplicate keys and
        spares the sort of the training rows; other orders give the same result.

        Examples
        --------
        Series a: errors (1, −1), b: errors (2, 2) against actuals 10, 10, 4, 4.

        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"id": ["a", "a", "b", "b"], "t": [1, 2, 1, 2],
        ...                    "y": [10.0, 10.0, 4.0, 4.0], "f": [11.0, 9.0, 6.0, 6.0]})
        >>> df.eval.forecast("y", "f", series="id", time="t", per_series=True).select("id", "mae", "bias", "mape")
        shape: (2, 4)
        ┌─────┬─────┬──────┬──────┐
        │ id  ┆ mae ┆ bias ┆ mape │
        │ --- ┆ --- ┆ ---  ┆ ---  │
        │ str ┆ f64 ┆ f64  ┆ f64  │
        ╞═════╪═════╪══════╪══════╡
        │ a   ┆ 1.0 ┆ 0.0  ┆ 0.1  │
        │ b   ┆ 2.0 ┆ 2.0  ┆ 0.5  │
        └─────┴─────┴──────┴──────┘
        >>> df.eval.forecast("y", "f", series="id", time="t").select("n_series", "mae", "wape", "wape_pooled")
        shape: (1, 4)
        ┌──────────┬─────┬──────┬─────────────┐
        │ n_series ┆ mae ┆ wape ┆ wape_pooled │
        │ ---      ┆ --- ┆ ---  ┆ ---         │
        │ i64      ┆ f64 ┆ f64  ┆ f64         │
        ╞══════════╪═════╪══════╪═════════════╡
        │ 2        ┆ 1.5 ┆ 0.3  ┆ 0.214286    │
        └──────────┴─────┴──────┴─────────────┘
        """
        if series is not None:
            _key_list("series", series)
        check_key_options(time, cutoff, lead, season_length)
        check_choice("zero_actuals", zero_actuals, reg.ZERO_ACTUAL_OPTIONS)
        quantiles = dict(quantiles or {})
        for q, col in quantiles.items():
            check_fraction("quantile", q, low_open=True, high_open=True)
            if not isinstance(col, str):
                raise InvalidParameterError(
                    f"quantiles must map a quantile to a column name; got {col!r}"
                )
        if interval is not None and (
            len(interval) != 2 or not all(isinstance(c, str) for c in interval)
        ):
            raise InvalidParameterError(
                f"interval must be (lower, upper) column names; got {interval!r}"
            )
        if train is not None and not isinstance(train, (pl.DataFrame, pl.LazyFrame)):
            raise InvalidParameterError(
                f"train must be a polars DataFrame or LazyFrame; got {type(train).__name__}"
            )
        g = grouping
        by_cols = normalize_by(by) if g is None else g.finest
        unit_ci = units.unit_ci(ci, level, n_resamples, seed)
        units.check_no_per_unit(unit_ci, per_series, "per_series")
        tschema = train.lazy().collect_schema() if train is not None else None
        keys = series_keys(series, by_cols, cutoff, tschema)
        frame: Any = self
        if not keys:  # the whole frame (each by group) is one series
            frame = _Frame(self._frame.with_columns(pl.lit(0, pl.Int8).alias(ONE_SERIES)))
            train = (
                None if train is None else train.with_columns(pl.lit(0, pl.Int8).alias(ONE_SERIES))
            )
            keys = [ONE_SERIES]
        lazy = isinstance(self._frame, pl.LazyFrame)
        try:
            table, rows = forecast_table(
                frame._frame, actual, forecast, keys, time, train, season_length, cutoff, lead,
                by_cols, weight, zero_actuals, quantiles, interval, per_series, validate,
                _point_metrics(metrics, train is not None, per_series, (actual, forecast)),
                SERIES_HINT if series is None else "",
                unit_ci, g,
            )  # fmt: skip
        except DataValidationError as error:
            if lazy:
                return deferred(error)
            raise
        out = run(table, rows, lazy=lazy)
        return out.drop(ONE_SERIES, strict=False) if per_series else out


def forecast_table(
    frame: pl.DataFrame | pl.LazyFrame,
    actual: str,
    forecast: str,
    keys: list[str],
    time: str,
    train: pl.DataFrame | pl.LazyFrame | None,
    season_length: int,
    cutoff: str | None,
    lead: int | None,
    by_cols: list[str],
    weight: IntoExpr | None,
    zero_actuals: str,
    quantiles: dict[float, str],
    interval: tuple[str, str] | None,
    per_series: bool,
    validate: bool,
    point: Sequence[str],
    hint: str,
    ci: units.UnitCI | None = None,
    g: _windows.Grouping | None = None,
) -> tuple[Table, pl.LazyFrame]:
    """The table of ``df.eval.forecast`` (:meth:`ForecastMethods.forecast`, whose
    arguments these are, its series keys found) over ``frame``, and its rows: the
    frame with the lead, the every-step and the in-sample scales of the series."""
    lf = frame.lazy()
    schema = lf.collect_schema()
    row_keys = [*keys, *([cutoff] if cutoff else []), time]
    _missing(schema, row_keys, "a key")
    inputs: dict[str, Any] = {"actual": "numeric", "forecast": "numeric", "weight": "weight"}
    args: dict[str, Any] = {"actual": actual, "forecast": forecast, "weight": weight}
    for i, col in enumerate(quantiles.values()):
        inputs[f"quantile_{i}"] = "numeric"
        args[f"quantile_{i}"] = col
    if interval is not None:
        inputs.update({"lower": "numeric", "upper": "numeric"})
        args.update({"lower": interval[0], "upper": interval[1]})
    problems = column_problems(schema, args, inputs)
    problems += [
        f'column "{b}" (argument by=) not found'
        for b in by_cols
        if b not in schema and not (cutoff is not None and b == "lead")
    ]
    if problems:
        raise DataValidationError(problems[0])
    if cutoff is not None:
        lf = fc.with_lead(lf, series=keys, time=time, cutoff=cutoff)
        if lead is not None:
            lf = lf.filter(pl.col("lead") == lead)
    keyed = lf  # the rows whose keys must be unique
    extra = [k for k in keys if k not in by_cols]  # the series keys besides by
    groups = [*by_cols, *extra]
    win = g.windows if g is not None else None
    if win is not None:  # the every-step of each row's time (SPEC §13)
        dtype = win.check(schema)
        lf = lf.with_columns(win.step(dtype))
    # an eager frame already sorted by its one group column: flag it, so that the
    # group_by takes the slices of each group instead of hashing every row
    sorted_key = _sorted_group(frame, groups)
    if sorted_key is not None:
        lf = lf.with_columns(pl.col(sorted_key).set_sorted())
    # duplicate keys: none when an eager frame is strictly sorted by them (one cheap
    # pass); otherwise a flag per row, summed per group in the metric query
    order = [*([cutoff] if cutoff else []), time]
    flag = validate and not _strictly_sorted(frame, groups, order, cutoff)
    if flag:  # in the frame's order, before the join
        lf = lf.with_columns(_maybe_repeated(groups, order))
    train_rows = scale = None
    if train is not None:
        train_rows = train.lazy().filter(to_float(actual).is_not_null())
        tschema = train.lazy().collect_schema()
        _missing(tschema, [*keys, time, actual], "in the train= frame")
        scale = fc.scale_query(
            train.lazy(),
            keys,
            time,
            actual,
            season_length,
            duplicates=TRAIN_DUP if validate else None,
            presorted=_sorted(train, [*keys, time], strict=False),
        )

    sp = series_plan(
        actual, forecast, weight, zero_actuals, quantiles, interval, point, train is not None
    )
    late, names = sp.late, sp.names
    if scale is not None and sp.row_scale:  # scales per row
        scales = scale.drop(TRAIN_DUP, strict=False)
        if sorted_key is None:
            lf = lf.join(scales, on=keys, how="left")
        else:  # the frame's order, and so its sorted group column, kept
            lf = lf.join(scales, on=keys, how="left", maintain_order="left")
            lf = lf.with_columns(pl.col(sorted_key).set_sorted())

    # row terms first (plain element-wise columns), then plain sums per group: the
    # fastest path of a Polars group_by. The duplicate-key flag (if any) is summed per
    # group there; the row checks are counted over the input apart (second stage).
    first = list(sp.aggs)
    checks = row_checks(schema, args, inputs) if validate else []
    if flag:  # per series (with windows: summed over its steps in ``second``)
        first.append((count_true(pl.col(DUP)) - (0 if win else 1)).alias(DUP))
    if win is not None:
        first.append(pl.col(time).min().alias(_windows.FIRST))
    lf = lf.with_columns(sp.rows)
    checked = [DUP, TRAIN_DUP, *(f"{BAD}{i}" for i in range(len(checks)))]

    def check_rows(df: pl.DataFrame) -> pl.DataFrame:
        """Raise for a repeated key, then for a bad input value (SPEC §2, §6)."""
        if DUP in df.columns:
            maybe = df.filter(pl.col(DUP) > 0)
            if maybe.height:  # a group not in strictly increasing key order: count
                source = keyed
                if maybe.height < df.height:  # only those groups
                    suspects = maybe.select(groups).lazy()
                    source = keyed.join(suspects, on=groups, how="semi", nulls_equal=True)
                named = [k for k in row_keys if k != ONE_SERIES]
                error = duplicate_error(source, [*by_cols, *row_keys], named, "", hint)
                if error is not None:
                    raise error
        if (
            train_rows is not None
            and TRAIN_DUP in df.columns
            and (df.get_column(TRAIN_DUP).fill_null(0) > 0).any()
        ):
            named = [k for k in [*keys, time] if k != ONE_SERIES]
            error = duplicate_error(train_rows, [*keys, time], named, "the train= frame")
            if error is not None:
                raise error
        raise_for_checks(df, checks, per_row=False, source=keyed)
        return df.drop([c for c in checked if c in df.columns])

    def second(q: pl.LazyFrame) -> pl.LazyFrame:
        if checks:  # counted over the input rows apart: cheaper than per group
            q = q.join(keyed.select(check_aggs(checks, examples=False)), how="cross")
        # the scales of the series evaluated (and the count of their repeated training
        # keys): one row per series
        wanted = list(dict.fromkeys(TRAIN_SCALED[n] for n in late))
        wanted += [TRAIN_DUP] if validate else []
        if scale is not None and wanted:
            q = q.join(scale.select(*keys, *wanted), on=keys, how="left")
        if validate:
            if win is not None and flag:
                q = q.with_columns(pl.col(DUP).sum().over(groups, order_by=None) - 1)
            schema = q.collect_schema()
            kept = {k: v for k, v in schema.items() if k not in checked}
            q = q.map_batches(check_rows, schema=pl.Schema(kept))
        if g is not None:  # windows, grouping sets: the series' states merged first
            return _grouped_table(q, g, frame.lazy().collect_schema(), sp, extra, per_series)
        q = series_table(q, sp, by_cols, extra, per_series, ci)
        if per_series:
            return q
        # sort keys of the plan, dropped
        return q.with_columns([pl.lit(None).alias(k) for k in extra])

    undefined = table_undefined(names, per_series)
    # without by (one summary row) an input with no row to evaluate is an error, as
    # for every task table (BAD_INPUTS rows 5, 37, 49): reported after validation
    single = not by_cols and not per_series and g is None
    reported = Output(undefined, strict=False)
    row_inputs = {k: inputs[k] for k in ("actual", "forecast", "weight")}

    def no_rows() -> str | None:
        return no_rows_reason(keyed, args, row_inputs)

    def report(df: pl.DataFrame) -> pl.DataFrame:
        if g is not None:  # per window and grouping (the result is always a table)
            return finish(df, reported, grouped=True, grouping=g, rows="n")
        return finish(df, reported, grouped=bool(by_cols), no_rows=no_rows)

    def then(q: pl.LazyFrame) -> pl.LazyFrame:
        q = second(q)
        if g is None and not per_series:
            q = q.drop(extra)  # sort keys of the plan
        if g is not None or single:
            q = q.map_batches(report, schema=q.collect_schema())
        return q

    table = Table(
        Query(first),
        # the checks are counted and raised in ``second`` (check_rows)
        Checks(inputs, args, validate=False),
        Output({} if single or g is not None else undefined, strict=False),
        by=[*groups, *([_windows.STEP] if win is not None else [])],
        stage=Stage(then, out_by=[] if g is not None else None if per_series else by_cols),
    )
    return table, lf


# ---------------------------------------------------------------------------------------
# The forecast keys on the single metric methods (SPEC §6): df.eval.mae(..., cutoff=,
# time=, by=["series", "lead"]), df.eval.mase(..., train=, season_length=, time=, by=)
# ---------------------------------------------------------------------------------------

KEY_TASKS = TASKS["forecast"].metric_tasks  # the tasks whose metrics read the forecast keys
SCALE = "__pe_scale"

KEYS_DOC = """    On the ``.eval`` namespace, the forecast keys (SPEC §6): ``time=`` (with ``series=``)
    names the key of each row, which must be unique (an error names a repeated key);
    ``cutoff=`` (with ``time=``) adds a ``lead`` column, the rank of the target time within
    (series, cutoff), after which ``by=`` may name ``"lead"`` and ``lead=k`` keeps one lead.
    Without ``series=`` the series key is the ``by`` column(s) other than ``"lead"`` (none:
    the whole frame is one series).{train}

"""
TRAIN_DOC = """ ``train=`` (a frame with the same series, time and actual columns)
    and ``season_length=`` give the scale of each series from its training rows (column
    ``{scale}`` of ``pe.seasonal_scale``) instead of a ``scale`` column; without ``series=``
    the series key is then the ``by`` column(s) present in ``train``."""


def _with_keys_doc(doc: str, scale: str | None) -> str:
    """The metric's docstring with the paragraph on the forecast keys before its sections
    (and on ``train=`` for a metric reading the ``scale`` column of ``pe.seasonal_scale``)."""
    train = TRAIN_DOC.format(scale=scale) if scale is not None else ""
    note = textwrap.dedent(KEYS_DOC.format(train=train))
    note = note.replace("\n    ", "\n")  # the train paragraph's continuation lines
    doc = inspect.cleandoc(doc)
    at = [doc.find(f"\n{h}\n") for h in ("References", "Examples")]
    at = [i for i in at if i >= 0]
    if not at:
        return doc.rstrip() + "\n\n" + note
    i = min(at) + 1
    return doc[:i] + note + doc[i:]


class _Frame:
    """A stand-in namespace on a prepared frame (the generated method reads ``_frame``)."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame


def _keyed_frame(
    frame: pl.DataFrame | pl.LazyFrame,
    *,
    by_cols: list[str],
    series: str | list[str] | None,
    time: str | None,
    cutoff: str | None,
    lead: int | None,
    train: pl.DataFrame | pl.LazyFrame | None,
    season_length: int,
    actual: Any,
    scale_col: str | None,
    validate: bool,
) -> tuple[pl.DataFrame | pl.LazyFrame, Any]:
    """The frame with ``lead`` (and the scale from ``train``), its keys checked.

    Returns the prepared frame (eager on eager input) and, on a LazyFrame with
    ``validate``, the check of duplicate keys to run at collect (None otherwise).
    """
    if time is None:
        raise InvalidParameterError(
            "the forecast keys need time= (the column of target times) with "
            + ("cutoff=" if cutoff is not None else "train=" if train is not None else "series=")
        )
    check_key_options(time, cutoff, lead, season_length)
    if train is not None:
        if not isinstance(train, (pl.DataFrame, pl.LazyFrame)):
            raise InvalidParameterError(
                f"train must be a polars DataFrame or LazyFrame; got {type(train).__name__}"
            )
        if not isinstance(actual, str):
            raise InvalidParameterError(
                f"train= needs actual as a column name (the same in both frames); got {actual!r}"
            )
    groups = [c for c in by_cols if not (cutoff is not None and c == "lead")]
    lf = frame.lazy()
    schema = lf.collect_schema()
    tschema = train.lazy().collect_schema() if train is not None else None
    keys = series_keys(series, by_cols, cutoff, tschema)
    # the series of a row and its by groups: the lead and the unique keys are within both
    within = list(dict.fromkeys([*groups, *keys]))
    row_keys = [*within, *([cutoff] if cutoff else []), time]
    _missing(schema, row_keys, "a key")
    if cutoff is not None:
        rank = pl.col(time).rank("dense").over([*within, cutoff]).cast(pl.Int64)
        lf = lf.with_columns(rank.alias("lead"))
        if lead is not None:
            lf = lf.filter(pl.col("lead") == lead)
    named = [*keys, *([cutoff] if cutoff else []), time]
    checks: list[tuple[pl.LazyFrame, list[str], list[str], str]] = []
    # a frame strictly sorted by its keys (one cheap pass on eager data) repeats none
    if validate and not _sorted(frame, row_keys, strict=True):
        checks.append((lf, row_keys, named, ""))
    if train is not None and tschema is not None:
        _missing(tschema, [*keys, time, actual], "in the train= frame")
        rows = train.lazy().filter(pl.col(actual).is_not_null())
        if validate and not _sorted(train, [*keys, time], strict=True):
            checks.append((rows, [*keys, time], [*keys, time], "the train= frame"))
        presorted = _sorted(train, [*keys, time], strict=False)
        scale = scale_frame(rows, keys, time, actual, season_length, validate, presorted)
        scale = scale.select(*keys, pl.col(scale_col or "mase_scale").alias(SCALE))
        lf = lf.join(scale, on=keys, how="left") if keys else lf.join(scale, how="cross")

    def check() -> None:
        for source, cols, names, where in checks:
            error = duplicate_error(
                source, cols, names, where, SERIES_HINT if series is None else ""
            )
            if error is not None:
                raise error

    if isinstance(frame, pl.DataFrame):
        check()  # before the metric, as every eager check
        return lf.collect(), None
    return lf, check if checks else None


def _sorted(frame: pl.DataFrame | pl.LazyFrame, columns: list[str], *, strict: bool) -> bool:
    """Whether an eager frame is sorted by ``columns`` (see :func:`fc.sorted_by`)."""
    if not isinstance(frame, pl.DataFrame):
        return False
    return fc.sorted_by(frame, columns[:-1], columns[-1], strict=strict)


def scale_frame(
    train: pl.LazyFrame,
    keys: list[str],
    time: str,
    actual: str,
    season_length: int,
    validate: bool,
    presorted: bool = False,
) -> pl.LazyFrame:
    """The in-sample scales per series (``mase_scale``, ``rmsse_scale``, ``spis_scale``);
    NaN/inf in the training actuals is an error naming the column (at collect on lazy data).
    ``presorted``: the rows are sorted by (``keys``, ``time``) (no sort needed)."""
    scale = fc.scale_query(train, keys, time, actual, season_length, presorted=presorted)
    if not validate:
        return scale
    y = to_float(actual)
    bad = train.select(count_true(~y.is_finite()))

    def checked(df: pl.DataFrame) -> pl.DataFrame:
        n = bad.collect().item()
        if n:
            shown = ", ".join(
                repr(v)
                for v in train.filter(~y.is_finite()).select(y).head(3).collect().to_series()
            )
            raise DataValidationError(
                f'column "{actual}" of the train= frame must hold finite numbers; found {n} '
                f"rows with NaN or ±inf, e.g. [{shown}]"
            )
        return df

    return scale.map_batches(checked, schema=scale.collect_schema())


def keyed_method(info: MetricInfo, base: Any) -> Any:
    """The namespace method of a regression / forecast metric, with the forecast keys:
    ``base`` (the generic method the namespace generates) with ``series=``, ``time=`` ..."""
    base_sig = inspect.signature(base)
    scaled = info.name in TRAIN_SCALED

    def method(
        self: Any,
        *args: Any,
        by: Any = None,
        validate: bool = True,
        series: str | list[str] | None = None,
        time: str | None = None,
        cutoff: str | None = None,
        lead: int | None = None,
        **kwargs: Any,
    ) -> Any:
        ci = kwargs.get("ci")
        if ci == "t" or (ci == "bootstrap" and series is not None):  # units: the series
            keys = {"series": series, "time": time, "cutoff": cutoff, "lead": lead}
            return _over_series(method, info, self, args, kwargs, by, validate, keys)
        train = kwargs.pop("train", None) if scaled else None
        season_length = kwargs.pop("season_length", 1) if scaled else 1
        if kwargs.get("every") is not None:  # windows over time= (SPEC §13)
            kwargs["time"] = time
        if (
            series is None
            and (time is None or "time" in kwargs)
            and cutoff is None
            and lead is None
        ):
            if train is not None:
                raise InvalidParameterError("train= needs time= (the column of target times)")
            if scaled and season_length != 1:
                raise InvalidParameterError("season_length= needs train= and time=")
            return base(self, *args, by=by, validate=validate, **kwargs)
        bound = base_sig.bind_partial(self, *args, **kwargs).arguments
        if scaled:
            if train is not None and bound.get("scale") is not None:
                raise InvalidParameterError(
                    f"{info.name} takes its scale from a scale column or from train=, not both"
                )
            if train is None and bound.get("scale") is None:
                raise InvalidParameterError(
                    f"{info.name} needs scale= (a column) or train= (the training frame)"
                )
            if train is not None:
                kwargs["scale"] = SCALE
        by_cols = normalize_by(by)
        try:
            frame, check = _keyed_frame(
                self._frame,
                by_cols=by_cols,
                series=series,
                time=time,
                cutoff=cutoff,
                lead=lead,
                train=train,
                season_length=season_length,
                actual=bound.get("actual"),
                scale_col=TRAIN_SCALED[info.name] if train is not None else None,
                validate=validate,
            )
        except DataValidationError as error:
            if isinstance(self._frame, pl.LazyFrame):
                return deferred(error)
            raise
        out = base(_Frame(frame), *args, by=by_cols or None, validate=validate, **kwargs)
        if check is None:
            return out

        def checked(df: pl.DataFrame) -> pl.DataFrame:
            check()
            return df

        return out.map_batches(checked, schema=out.collect_schema())

    functools.update_wrapper(method, base)
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [p for p in base_sig.parameters.values() if p.name != "time"]
    if scaled:
        params = [p.replace(default=None) if p.name == "scale" else p for p in params]
        params += [
            inspect.Parameter("train", keyword, default=None),
            inspect.Parameter("season_length", keyword, default=1),
        ]
    params += [
        inspect.Parameter(k, keyword, default=None) for k in ("series", "time", "cutoff", "lead")
    ]
    method.__signature__ = base_sig.replace(parameters=params)  # type: ignore[attr-defined]
    method.__doc__ = _with_keys_doc(base.__doc__ or "", TRAIN_SCALED.get(info.name))
    return method


def _over_series(
    method: Any,
    info: MetricInfo,
    namespace: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    by: Any,
    validate: bool,
    keys: dict[str, Any],
) -> Any:
    """A forecast metric method with ``ci="t"`` (or ``ci="bootstrap"`` and ``series=``):
    the metric per (``by`` group, series), then the mean over series with its interval
    (SPEC §14: a forecast metric's unit is the series; :mod:`polars_eval.stats.units`)."""
    kwargs = dict(kwargs)
    ci, level = kwargs.pop("ci"), kwargs.pop("level", 0.95)
    n_resamples, seed = kwargs.pop("n_resamples", None), kwargs.pop("seed", None)
    if kwargs.pop("method", None) not in (None, "multinomial"):
        raise InvalidParameterError(
            "ci over series resamples whole series with replacement; method= (the row "
            "bootstrap's 'multinomial' or 'poisson') does not apply"
        )
    interval = units.unit_ci(ci, level, n_resamples, seed)
    assert interval is not None
    if keys["series"] is None:
        raise InvalidParameterError(
            f"ci={ci!r} on {info.name} needs series= (and time=): a forecast metric's interval "
            "is over its series (SPEC §14)"
        )
    series = _key_list("series", keys["series"])
    by_cols = normalize_by(by)
    per_series = method(
        namespace, *args, by=[*by_cols, *series], validate=validate, **keys, **kwargs
    )
    name = info.name
    rows = per_series.lazy()
    sums = units.unit_sums([name], ci=interval)
    table = rows.group_by(by_cols).agg(sums) if by_cols else rows.select(sums)
    table = table.select(*by_cols, *units.unit_means([name], interval))
    table = units.with_bootstrap(table, rows, [name], by_cols, series, interval)
    if by_cols:
        table = table.sort(by_cols, nulls_last=True)
    why = Output({name: f"no series has a value ({info.undefined or 'no defined value'})"})

    def report(df: pl.DataFrame) -> pl.DataFrame:
        return finish(df, why, grouped=bool(by_cols))

    table = table.map_batches(report, schema=table.collect_schema())
    if isinstance(per_series, pl.LazyFrame):
        return table
    out = table.collect()
    return out if by_cols else Interval(*out.row(0))
