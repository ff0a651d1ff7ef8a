"""The trend section of a report (SPEC §13 "Report"): ``df.eval.report(..., time=, every=)``.

With ``time=`` and ``every=`` (``period=``, ``offset=``) a report gets a table
``trend``: the task's key metrics (:attr:`Built.key_metrics`, those of its summary) per
window, for all rows and for each ``by`` segment, as ONE call of the task method returns
them (``df.eval.<task>(..., time=, every=, period=, offset=, grouping_sets=[[], by])``:
the windows of ``group_by_dynamic``, each window's value from its steps' merged states).
With the report's intervals on (``ci``), the metrics with a closed-form interval get
``<metric>_lower`` / ``<metric>_upper`` per window, from the same formulas as the rest of
the report (Hanley–McNeil for the AUC, the logit interval for the PR AUC, chi-square for
the RMSE) over the window's counts, themselves summed per step and merged per window by
the same windows. With ``reference=`` a table ``psi``: ``df.eval.psi`` of the score of
all rows per window. On the page: one chart (a panel per metric,
a line per segment, all rows and the ``max_segments`` largest segments, interval bands)
and a section with the latest window of each line and both tables.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core import windows as _windows
from polars_eval._exprs import drop_null_rows, to_float, weight_expr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.report._states import SEGMENT, segment_label
from polars_eval.report.tables import ALL

if TYPE_CHECKING:
    from polars_eval.report._kit import ReportView as Report
    from polars_eval.report.tables import Built

PSI_BINS = 10
PSI_RULES = (0.1, 0.25)
"""The usual reading of a PSI (Siddiqi 2006): below 0.1 stable, above 0.25 a shift."""
PANEL_COLUMNS = 3


@dataclass(frozen=True)
class Trend:
    """The windows of a report's trend section, checked."""

    time: str
    every: Any
    period: Any
    offset: Any
    reference: pl.DataFrame | pl.LazyFrame | None
    segments: list[str]  # the report's ``by`` (the lines besides all rows)

    def grouping(self, task: str) -> _windows.Grouping:
        """The grouping of the task method's call: all rows and the segments, per window."""
        g = _windows.grouping(
            None,
            grouping_sets=[[], self.segments] if self.segments else None,
            time_is_key=task == "forecast",
            **self.window_options(),
        )
        assert g is not None and g.windows is not None
        return g

    def window_options(self) -> dict[str, Any]:
        """The task method's arguments ``time=``, ``every=``, ``period=``, ``offset=``."""
        return {name: getattr(self, name) for name in ("time", "every", "period", "offset")}


def take_options(
    frame: pl.DataFrame | pl.LazyFrame,
    task: str,
    window: dict[str, Any],
    options: dict[str, Any],
    by: list[str],
) -> Trend | None:
    """The trend section's options (``time``, ``every``, ``period``, ``offset``,
    ``reference``) checked before anything is computed; None without ``every``.

    A forecast's ``time=`` is its own column option; its windows follow it."""
    reference = window.get("reference")
    time = options.get("time") if task == "forecast" else window.get("time")
    every, period, offset = (window.get(k) for k in ("every", "period", "offset"))
    if every is None and reference is not None:
        raise InvalidParameterError(
            "reference= adds the PSI per window to the trend section: give time= and every="
        )
    win = _windows.windows(time, every, period, offset, time_is_key=task == "forecast")
    if win is None:
        return None
    schema = frame.lazy().collect_schema()
    win.check(schema)
    if win.time in by:
        raise InvalidParameterError(f'column "{win.time}" is the time= column and a by= column')
    if reference is not None and not isinstance(reference, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            f"reference must be a polars DataFrame or LazyFrame; got {type(reference).__name__}"
        )
    # the segments of the lines: the report's by columns that the rows hold (a forecast's
    # by="lead" is derived from cutoff=: its trend has the line of all rows only)
    segments = by if all(b in schema for b in by) else []
    return Trend(win.time, every, period, offset, reference, segments)


def key_metrics(built: Built) -> list[str]:
    """The metrics of the trend: the task's key metrics that its summary holds."""
    summary = built.tables["summary"]
    return [m for m in built.key_metrics if m in summary.columns]


def add_trend(
    frame: pl.DataFrame | pl.LazyFrame,
    built: Built,
    task: str,
    arguments: dict[str, Any],
    trend: Trend,
    *,
    options: dict[str, Any],
    weight: Any,
    ci: Any,
    level: float,
) -> None:
    """Add the ``trend`` table (and ``psi`` with a reference) to a built report."""
    from polars_eval.report.tables import collect_quietly, task_spec

    spec = task_spec(task)
    names = key_metrics(built)
    lf = frame.lazy()
    method = getattr(lf.eval, task)  # type: ignore[attr-defined]
    params = inspect.signature(method).parameters
    # the task method's options as the report gave them (bins= is the report's number of
    # gain and calibration bins, not the binned mode; baseline= is not mergeable)
    skip = ("bins", "baseline", *trend.window_options())
    kw = {k: v for k, v in options.items() if k in params and k not in skip}
    if task == "ranking":  # the report's cutoffs (its key metrics are ndcg@<k> ...)
        kw["k"] = built.options["k"]
    if task == "multiclass" and kw.get("classes") is None:  # the classes the report found
        kw["classes"] = built.tables["per_class"].get_column("class").to_list()
    own = {i.name for i in _registry.by_task(task)}
    if "metrics" in params and names and set(names) <= own:
        kw["metrics"] = names  # the key metrics only (each a registered metric of the task)
    g = trend.grouping(task)
    call = method(
        *(arguments[a] for a in spec.data_args),
        weight=weight,
        validate=False,
        **kw,
        **trend.window_options(),
        grouping_sets=[[], trend.segments] if trend.segments else None,
    )
    queries = {"trend": call}
    score = arguments.get(spec.data_args[-1]) if len(spec.data_args) == 2 else None
    if trend.reference is not None:
        if not isinstance(score, str):
            raise InvalidParameterError(
                f"reference= (the PSI of a score) needs a task with one score column given by "
                f"name; task={task!r} has {score!r}"
            )
        queries["psi"] = _psi_query(lf, score, trend, weight if isinstance(weight, str) else None)
    notes: list[str] = []
    found = collect_quietly(queries, notes)
    built.notes += [f"Over time: {n}" for n in notes if f"Over time: {n}" not in built.notes]
    table = found["trend"].select(*g.out, *names)
    if ci:
        table = _with_bands(lf, table, names, built.metric_args, g, level)
    built.tables["trend"] = table
    if trend.reference is not None:
        built.tables["psi"] = found["psi"]
    built.options.update(
        {
            k: v
            for k, v in trend.window_options().items()
            if v is not None and k not in built.options
        }
    )


def _psi_query(lf: pl.LazyFrame, score: str, trend: Trend, weight: str | None) -> pl.LazyFrame:
    """``df.eval.psi`` of all rows per window. Not per segment: ``psi(by=)`` compares each
    segment with the whole reference, which measures how the segments differ, not drift."""
    ev: Any = lf.eval  # type: ignore[attr-defined]
    return ev.psi(
        score,
        reference=trend.reference,
        bins=PSI_BINS,
        weight=weight,
        validate=False,
        **trend.window_options(),
    )


# -- interval bands ---------------------------------------------------------------------


def _band_counts(method: str, args: dict[str, Any]) -> list[pl.Expr] | None:
    """The counts a closed-form interval reads besides the value (sums over the rows the
    metric uses, so that steps merge into windows by adding), or None for a method the
    trend does not draw (Wilson: the proportions are not key metrics)."""
    weight = weight_expr(args.get("weight"))
    if method in ("hanley", "logistic"):
        from polars_eval.stats.intervals import _auc_counts

        pos, neg = _auc_counts(
            args["label"], args["score"], args.get("weight"), args.get("pos_label")
        )
        return [pos, neg] if method == "hanley" else [pos]
    if method == "chi2":
        info = _registry.REGISTRY["rmse"]
        data = [
            to_float(args[a])
            for a, role in info.inputs.items()
            if role in ("numeric", "positive") and args.get(a) is not None
        ]
        *_, w = drop_null_rows(*data, weight=weight)
        return [w.sum()]
    return None


def _band(method: str, name: str, parts: list[pl.Expr], level: float) -> pl.Expr:
    """The ``{value, lower, upper}`` struct of ``name`` from its value and counts."""
    from polars_eval.stats import intervals as iv

    if method == "chi2":
        return iv.chi2_interval(parts[0], parts[1], level, name)
    z = iv.z_quantile(level)
    formula = iv.hanley_formula(z) if method == "hanley" else iv.logistic_formula(z)
    return iv.finish(parts, formula, name)


def _with_bands(
    lf: pl.LazyFrame,
    table: pl.DataFrame,
    names: list[str],
    metric_args: dict[str, Any],
    g: _windows.Grouping,
    level: float,
) -> pl.DataFrame:
    """``<metric>_lower`` / ``_upper`` beside each key metric with a closed-form interval."""
    if not metric_args:
        return table
    counts: dict[str, pl.Expr] = {}  # column -> its sum over the rows
    bands: dict[str, tuple[str, list[str]]] = {}  # metric -> (method, count columns)
    for name in names:
        info = _registry.REGISTRY.get(name)
        if info is None:
            continue
        for method in info.intervals:
            args = {k: v for k, v in metric_args.items() if k in info.signature.parameters}
            parts = _band_counts(method, args)
            if parts is None:
                continue
            columns = []
            for expr in parts:
                key = next((c for c, e in counts.items() if e.meta.eq(expr)), None)
                if key is None:
                    key = f"__pe_count{len(counts)}"
                    counts[key] = expr
                columns.append(key)
            bands[name] = (method, columns)
            break
    if not bands:
        return table
    schema = lf.collect_schema()
    aggs = [e.alias(c) for c, e in counts.items()]
    sums = [pl.col(c).sum() for c in counts]
    per_window = _windows.query(lf, g, schema, aggs, sums, sums).collect()
    joined = table.join(per_window, on=g.out, how="left", nulls_equal=True, maintain_order="left")
    structs = [
        _band(method, name, [pl.col(name), *map(pl.col, columns)], level).alias(name)
        for name, (method, columns) in bands.items()
    ]
    bounds = joined.select(structs).select(
        pl.col(name).struct.field(side).alias(f"{name}_{side}")
        for name in bands
        for side in ("lower", "upper")
    )
    out = table.hstack(bounds)
    order: list[str] = []
    for c in table.columns:
        order += [c, *([f"{c}_lower", f"{c}_upper"] if c in bands else [])]
    return out.select(order)


# -- the chart and the page -------------------------------------------------------------


def shown_segments(report: Report) -> list[str]:
    """The labels of the segments drawn: the ``max_segments`` largest by rows used,
    largest first (none without ``by``)."""
    segments = report.tables.get("segments")
    table = report.tables.get("trend")
    if segments is None or table is None or _windows.GROUPING not in table.columns:
        return []
    keys = [c for c in table.columns if c in report.by]
    if "rows_used" in segments.columns:
        segments = segments.sort("rows_used", descending=True, nulls_last=True, maintain_order=True)
    return (
        segments.head(report.max_segments).select(segment_label(keys)).get_column(SEGMENT).to_list()
    )


def _labelled(report: Report, table: pl.DataFrame, shown: list[str]) -> pl.DataFrame:
    """The rows of the lines drawn, with their ``segment`` label (all rows first)."""
    if _windows.GROUPING not in table.columns:
        return table.with_columns(pl.lit(ALL).alias(SEGMENT))
    keys = [c for c in table.columns if c in report.by]
    label = (
        pl.when(pl.col(_windows.GROUPING) == "")
        .then(pl.lit(ALL))
        .otherwise(segment_label(keys))
        .alias(SEGMENT)
    )
    data = table.with_columns(label).filter(pl.col(SEGMENT).is_in([ALL, *shown]))
    rank = {s: i for i, s in enumerate([ALL, *shown])}
    return data.sort(
        pl.col(SEGMENT).replace_strict(rank, return_dtype=pl.Int64), maintain_order=True
    )


def _time_column(report: Report) -> str:
    return str(report.options["time"])


def trend_chart(report: Report) -> tuple[Any, str] | None:
    """Each key metric per window, a line per segment (interval bands), and the PSI."""
    from polars_eval.report._kit import INK, PALETTE, WIDE, require_altair

    table = report.tables.get("trend")
    if table is None or table.height == 0:
        return None
    alt = require_altair()
    shown = shown_segments(report)
    time = _time_column(report)
    kind = "Q" if table.schema[time].is_integer() else "T"
    x = alt.X(f"{time}:{kind}", title=f"window start ({time})")
    legend = None
    if shown:  # line symbols (the first layer, a band, would lend its faint fill)
        legend = alt.Legend(
            title=None, orient="bottom", columns=6, symbolType="stroke", symbolOpacity=1
        )
    colors = [INK, *(PALETTE[i % len(PALETTE)] for i in range(len(shown)))]
    scale = alt.Scale(domain=[ALL, *shown], range=colors)
    color = alt.Color(f"{SEGMENT}:N", scale=scale, legend=legend)
    width = (WIDE - 80 * PANEL_COLUMNS) // PANEL_COLUMNS
    data = _labelled(report, table, shown)
    names = [m for m in key_metrics_of(table) if data.get_column(m).drop_nulls().len()]
    panels = []
    for name in names:
        layers = []
        if f"{name}_lower" in data.columns:
            layers.append(
                alt.Chart(data)
                .mark_area(opacity=0.13)
                .encode(
                    x=x,
                    y=alt.Y(f"{name}_lower:Q", title=name),
                    y2=f"{name}_upper:Q",
                    color=color,
                )
            )
        layers.append(_line(alt, data, x, name, color, time))
        panels.append(alt.layer(*layers).properties(width=width, height=170, title=name))
    psi = report.tables.get("psi")
    if psi is not None and psi.height:
        psi_data = psi.with_columns(pl.lit(ALL).alias(SEGMENT))
        rules = alt.Data(values=[{"psi": v} for v in PSI_RULES])
        panels.append(
            alt.layer(
                alt.Chart(rules).mark_rule(color="#9a9a9a", strokeDash=[4, 4]).encode(y="psi:Q"),
                _line(alt, psi_data, x, "psi", color, time),
            ).properties(width=width, height=170, title="PSI of all rows against the reference")
        )
    if not panels:
        return None
    title = {"text": "Over time", "anchor": "start"}
    chart = alt.concat(*panels, columns=PANEL_COLUMNS).properties(title=title)
    return chart, _caption(report, shown, names, psi is not None)


def _line(alt: Any, data: pl.DataFrame, x: Any, name: str, color: Any, time: str) -> Any:
    tooltip = [f"{SEGMENT}:N", f"{time}:T" if data.schema[time].is_temporal() else f"{time}:Q"]
    tooltip += [f"{c}:Q" for c in (name, f"{name}_lower", f"{name}_upper") if c in data.columns]
    return (
        alt.Chart(data)
        .mark_line(strokeWidth=1.8, point=alt.OverlayMarkDef(size=18))
        .encode(
            x=x,
            y=alt.Y(f"{name}:Q", title=name, scale=alt.Scale(zero=False)),
            color=color,
            tooltip=tooltip,
        )
    )


def key_metrics_of(table: pl.DataFrame) -> list[str]:
    """The metric columns of a trend table (not its keys, windows or bounds)."""
    skip = {_windows.GROUPING, _windows.WINDOW_END}
    return [
        c
        for c in table.columns
        if c not in skip and not c.endswith(("_lower", "_upper")) and table.schema[c].is_float()
    ]


def _windows_text(report: Report) -> str:
    o = report.options
    period = o.get("period") or o["every"]
    offset = f", offset {o['offset']}" if o.get("offset") is not None else ""
    return f"windows of {period} every {o['every']}{offset} over {o['time']}"


def _caption(report: Report, shown: list[str], names: list[str], psi: bool) -> str:
    table = report.tables["trend"]
    segments = report.tables.get("segments")
    n = segments.height if segments is not None else 0
    lines = (
        f"one line for all rows and one for each of the {len(shown)} largest of {n} segments"
        if shown
        else "one line for all rows"
    )
    bands = [m for m in names if f"{m}_lower" in table.columns]
    level = report.options.get("level", 0.95)
    band = (
        f"; bands: {100 * float(level):g} % closed-form intervals of {', '.join(bands)}"
        if bands
        else ""
    )
    return (
        f"{', '.join(names)} per window ({_windows_text(report)}), {lines}{band}"
        + (
            "; PSI of the score of all rows against the reference (dashed: 0.1, 0.25)"
            if psi
            else ""
        )
        + "."
    )


def trend_html(report: Report) -> str:
    """The page's trend section: the latest window of each line and the full tables."""
    from polars_eval.report._kit import _e, _metric_cell, fmt, table_html

    table = report.tables.get("trend")
    if table is None:
        return ""
    shown = shown_segments(report)
    time = _time_column(report)
    data = _labelled(report, table, shown)
    names = key_metrics_of(table)
    latest = data.filter(pl.col(time) == pl.col(time).max().over(SEGMENT))
    head = '<th class="pe-text">line</th><th class="pe-text">window</th>'
    head += "".join(f"<th>{_e(c)}</th>" for c in names)
    body = []
    for row in latest.iter_rows(named=True):
        window = f"{fmt(row[time])} – {fmt(row[_windows.WINDOW_END])}"
        cells = [
            f'<td class="pe-key">{_e(row[SEGMENT])}</td>',
            f'<td class="pe-key">{_e(window)}</td>',
        ]
        cells += [_metric_cell(row, c) for c in names]
        body.append("<tr>" + "".join(cells) + "</tr>")
    n_windows = table.select(pl.col(time).n_unique()).item()
    has_ci = any(f"{c}_lower" in table.columns for c in names)
    level = report.options.get("level", 0.95)
    meta = (
        f"{_e(_windows_text(report).capitalize())}: {n_windows:,} windows (the time column "
        "holds each window's start, <code>window_end</code> its end; a window is the rows "
        "in [start, end)). The latest window of each line"
        + (f", with {fmt(100 * float(level))} % confidence intervals (grey)" if has_ci else "")
        + "; every window in the tables below."
    )
    parts = [
        f"<details><summary>Every window ({table.height:,} rows)</summary>"
        f"{table_html(table)}</details>"
    ]
    psi = report.tables.get("psi")
    if psi is not None:
        parts.append(
            f"<details><summary>PSI per window ({psi.height:,} rows; {PSI_BINS} bins at the "
            f"reference's deciles)</summary>{table_html(psi)}</details>"
        )
    return (
        '<section id="pe-trend"><h2>Over time</h2>'
        f'<p class="pe-meta">{meta}</p>'
        f'<div class="pe-fit"><table class="pe-key-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{''.join(parts)}</section>"
    )
