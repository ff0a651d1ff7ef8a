"""The comparison section of a report (SPEC §14, §9): ``df.eval.report`` with several systems.

``score=["bm25", "dense", "hybrid"]`` (wide: a list of columns of the task's system
argument, as ``df.eval.compare`` takes) or ``system="run"`` (long: a column naming each
row's system) makes the report that of the baseline system (the first, or ``baseline=``)
with one more section: the compare table (``df.eval.compare`` with the same arguments,
over every unit: the report's ``by`` segments are not split), a chart of the per-unit
differences of each system against the baseline, sorted (one line per system, one panel
per metric), and a chart of the wins, ties and losses. The differences drawn are those
the tests read (:func:`polars_eval.stats.systems.paired_differences`), kept as the table
``compare_units``; nothing is computed twice.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_eval._core.tasks import TASKS
from polars_eval.exceptions import InvalidParameterError
from polars_eval.stats import compare_tasks

if TYPE_CHECKING:
    from polars_eval.report._kit import ReportView as Report

SETTINGS = ("test", "correction", "n_resamples", "seed", "missing", "unit", "metrics")
"""The options of a report that go to its comparison only (with ``system`` and a named
``baseline``)."""
DEFAULTS: dict[str, Any] = {
    "test": "t", "correction": "holm", "n_resamples": 10_000, "seed": 0, "missing": None,
    "unit": None, "metrics": None,
}  # fmt: skip
NOT_COMPARED = ("baseline", "weight", "bins")
"""Report options the comparison does not take: ``baseline`` (a bool: the constant
predictor's columns of the baseline's report), ``weight`` (every unit counts alike) and
``bins`` (the report's gain and calibration bins, not the table's histogram)."""
CHARTS = ("compare", "compare_wtl")
"""The section's charts (drawn in the section, not in the report's grid of charts)."""
CHART_METRICS = 4
"""Most metrics drawn in the section's charts (the report's primary and key metrics first);
every metric compared is in the table."""
KEY_ROWS = 30
"""A compare table of more rows shows those of the charted metrics first, and the whole
table one click away."""
UNITS = {"ranking": "queries", "forecast": "series", "trec": "queries"}
OUTCOMES = ("wins", "ties", "losses")
OUTCOME_COLORS = ("#54a24b", "#bab0ac", "#e45756")
TESTS = {
    "t": "paired t-test",
    "randomization": "Fisher's paired randomization test",
    "bootstrap": "paired bootstrap",
    "wilcoxon": "Wilcoxon signed-rank test",
    "sign": "sign test",
    "delong": "DeLong's test",
}
CORRECTIONS = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "Benjamini–Hochberg"}


@dataclass(frozen=True)
class Comparison:
    """A report's comparison, its systems resolved: what ``compare_units`` is called with."""

    task: str
    systems: list[Any]
    baseline: Any
    system: str | None
    options: dict[str, Any]
    settings: dict[str, Any]


def _system_arg(task: str, arguments: Mapping[str, Any], options: Mapping[str, Any]) -> str:
    """The argument naming the systems: the task's ``score``/``forecast``/``pred`` (or
    multiclass ``proba=`` when no ``pred=`` is given)."""
    candidates = compare_tasks.SYSTEM_ARGS[task]
    given = {**options, **arguments}
    return next((a for a in candidates if given.get(a) is not None), candidates[0])


def split(
    frame: pl.DataFrame | pl.LazyFrame,
    task: str,
    arguments: dict[str, Any],
    options: dict[str, Any],
) -> tuple[pl.DataFrame | pl.LazyFrame, Comparison | None]:
    """Take the comparison out of a report's arguments and options (both changed in place).

    Several systems (a list of columns of the system argument, or ``system=``): the
    baseline's column replaces the list (wide), or the frame keeps the baseline's rows
    (long); returns that frame and the :class:`Comparison`. One system: the frame as is
    and None; a comparison option then is an error."""
    if task not in compare_tasks.SYSTEM_ARGS:
        return frame, None
    arg = _system_arg(task, arguments, options)
    holder = arguments if arg in arguments else options
    value = holder.get(arg)
    system = options.pop("system", None)
    baseline = options.get("baseline")
    named = baseline is not None and not isinstance(baseline, bool)
    settings = {key: options.pop(key) for key in SETTINGS if key in options}
    # multiclass proba= is a list of per-class columns: its wide form is pred=[...]
    wide = isinstance(value, (list, tuple)) and not (task == "multiclass" and arg == "proba")
    if system is None and not wide:
        given = [*settings, *(["baseline"] if named else [])]
        if given:
            raise InvalidParameterError(
                f"{given[0]}= is an option of a comparison of systems: give {arg}= a list of "
                "columns (one per system) or system= a column naming each row's system"
            )
        return frame, None
    if named:
        options.pop("baseline")
    sys = compare_tasks.resolve_systems(
        frame, task, {arg: value}, system, baseline if named else None
    )
    method = getattr(TASKS[task].load("methods"), task)
    params = inspect.signature(method).parameters
    compared = {k: v for k, v in options.items() if k in params and k not in NOT_COMPARED}
    compared.update({k: v for k, v in arguments.items() if v is not None})
    compared[arg] = value
    if sys.wide:
        holder[arg] = sys.baseline
    else:
        frame = frame.filter(pl.col(str(system)) == sys.baseline)
    comparison = Comparison(task, sys.names, sys.baseline, system, compared, settings)
    return frame, comparison


def add_compare(
    frame: pl.DataFrame | pl.LazyFrame,
    built: Any,
    comparison: Comparison,
    *,
    weight: Any,
    validate: bool,
    level: float,
) -> None:
    """Compute the comparison (``compare_units``, over every unit) and :func:`attach` it."""
    settings = {**DEFAULTS, **comparison.settings}
    unit = settings.pop("unit")
    table, units = compare_tasks.compare_units(
        frame, comparison.task, (), baseline=comparison.baseline, system=comparison.system,
        unit=unit, by=None, options=dict(comparison.options), level=level, validate=validate,
        **settings,
    )  # fmt: skip
    notes = []
    if weight is not None:
        notes.append(
            "The comparison weighs every unit alike (weight= applies to the baseline's "
            "tables only): its paired tests have no weighted form here."
        )
    unit_name = "units" if unit else UNITS.get(comparison.task, "rows")
    attach(
        built, table, units, systems=comparison.systems, baseline=comparison.baseline,
        directions=compare_tasks.metric_directions(comparison.task, table),
        test=settings["test"], correction=settings["correction"], level=level,
        unit_name=unit_name, notes=notes,
    )  # fmt: skip


def attach(
    target: Any,
    table: pl.DataFrame,
    units: pl.DataFrame | None,
    *,
    systems: Sequence[Any],
    baseline: Any,
    directions: Mapping[str, bool | None],
    test: str,
    correction: str | None,
    level: float,
    unit_name: str,
    notes: Sequence[str] = (),
) -> None:
    """Put a computed comparison into a built report or a :class:`Report` (anything with
    ``tables``, ``options``, ``notes`` and ``sections``): tables ``compare`` and
    ``compare_units``, the systems in the page's header, the settings for the section."""
    target.tables["compare"] = table
    if units is not None:
        target.tables["compare_units"] = units
    shown = [f"{s} (baseline)" if s == baseline else str(s) for s in systems]
    target.options["systems"] = ", ".join(shown)
    target.notes.extend(n for n in notes if n not in target.notes)
    target.sections["compare"] = {
        "baseline": str(baseline),
        "directions": dict(directions),
        "test": test,
        "correction": correction,
        "level": level,
        "units": unit_name,
    }


def _units_for(table: pl.DataFrame) -> list[str]:
    """The unit key columns of a ``compare_units`` table."""
    from polars_eval.stats.systems import UNIT_COLUMNS

    return [c for c in table.columns if c not in UNIT_COLUMNS]


def chart_metrics(report: Report) -> list[str]:
    """The metrics the section draws: the report's primary and key metrics first (those
    compared per unit), then the table's order; at most :data:`CHART_METRICS`."""
    table = report.tables.get("compare")
    if table is None:
        return []
    units = report.tables.get("compare_units")
    compared = table.get_column("metric").unique(maintain_order=True).to_list()
    drawable = set(units.get_column("metric").unique().to_list()) if units is not None else set()
    first = [m for m in [report.primary, *report.key_metrics] if m in compared]
    order = list(dict.fromkeys([*first, *compared]))
    return [m for m in order if m in drawable][:CHART_METRICS]


def _direction_word(hib: bool | None) -> str:
    return {True: "higher is better", False: "lower is better"}.get(hib, "no direction")  # type: ignore[arg-type]


def compare_chart(report: Report) -> tuple[Any, str] | None:
    """The per-unit differences (system − baseline) of each system, sorted: one line per
    system, one panel per metric (the data: ``compare_units`` of the drawn metrics with
    each unit's ``rank`` in its sorted line, thinned evenly by rank to ``max_points``)."""
    from polars_eval.report._kit import PALETTE, REFERENCE, WIDE, downsample, require_altair

    names = chart_metrics(report)
    if not names:
        return None
    alt = require_altair()
    info = report.sections["compare"]
    units = report.tables["compare_units"]
    data = units.filter(pl.col("metric").is_in(names)).with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("metric", "system").alias("rank"),
        pl.concat_str("metric", "system", separator="\x1f").alias("__pe_line"),
    )
    data = downsample(data, ["difference"], report.max_points, group="__pe_line", by_rank=True)
    data = data.drop("__pe_line")
    systems = data.get_column("system").unique(maintain_order=True).to_list()
    color = alt.Color(
        "system:N",
        scale=alt.Scale(domain=systems, range=list(PALETTE[1 : 1 + len(systems)]) or None),
        legend=alt.Legend(title=None, orient="bottom"),
    )
    few = data.group_by("metric", "system").len().get_column("len").max() or 0
    keys = _units_for(units)
    zero = alt.Data(values=[{"zero": 0.0}])
    panels = []
    width = max(160, WIDE // len(names) - 70)
    for name in names:
        hib = info["directions"].get(name)
        line = (
            alt.Chart()
            .transform_filter(alt.FieldEqualPredicate(field="metric", equal=name))
            .mark_line(interpolate="step-after", point=few <= 60, strokeWidth=1.6)
            .encode(
                x=alt.X("rank:Q", title=f"{info['units']}, sorted by difference"),
                y=alt.Y("difference:Q", title=f"{name} − baseline"),
                color=color,
                tooltip=[
                    "system:N",
                    *[f"{k}:N" for k in keys],
                    "value:Q",
                    "baseline_value:Q",
                    "difference:Q",
                ],
            )  # fmt: skip
        )
        rule = alt.Chart(zero).mark_rule(color=REFERENCE).encode(y="zero:Q")
        panel = alt.layer(rule, line).properties(
            width=width, height=240, title=f"{name} ({_direction_word(hib)})"
        )
        panels.append(panel)
    chart = alt.hconcat(*panels, data=data, spacing=16)
    caption = (
        f"Each system's value minus the baseline's ({info['baseline']}) on every one of the "
        f"{info['units']} of {', '.join(names)}, sorted from the most negative difference to "
        "the most positive; the line above 0 is where the system scores higher. The units "
        "compared are those the tests read (both values defined)."
    )
    return chart, caption


def wtl_chart(report: Report) -> tuple[Any, str] | None:
    """Wins, ties and losses of each system against the baseline on the drawn metrics:
    stacked bars (the data: the compare table's rows of those metrics)."""
    from polars_eval.report._kit import WIDTH, require_altair

    names = chart_metrics(report)
    if not names:
        return None
    table = report.tables["compare"].filter(
        pl.col("metric").is_in(names) & pl.col("wins").is_not_null()
    )
    if table.height == 0:
        return None
    alt = require_altair()
    info = report.sections["compare"]
    data = table.with_columns(
        pl.concat_str("system", pl.lit(" · "), "metric").alias("__pe_label")
    ).unpivot(
        index=["metric", "system", "__pe_label", "n_units"],
        on=list(OUTCOMES),
        variable_name="outcome",
        value_name="units",
    ).with_columns(
        pl.col("outcome").replace_strict(
            {o: i for i, o in enumerate(OUTCOMES)}, return_dtype=pl.Int64
        ).alias("__pe_order")
    )  # fmt: skip
    labels = table.select(pl.concat_str("system", pl.lit(" · "), "metric")).to_series().to_list()
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("__pe_label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=220)),
            x=alt.X("units:Q", stack="zero", title=info["units"]),
            color=alt.Color(
                "outcome:N",
                scale=alt.Scale(domain=list(OUTCOMES), range=list(OUTCOME_COLORS)),
                legend=alt.Legend(title=None, orient="bottom"),
            ),
            order=alt.Order("__pe_order:Q"),
            tooltip=["system:N", "metric:N", "outcome:N", "units:Q", "n_units:Q"],
        )
        .properties(
            width=WIDTH - 220,
            height=max(60, 26 * len(labels)),
            title={"text": "Wins, ties and losses", "anchor": "start"},
        )
    )
    caption = (
        f"The {info['units']} where each system does better than (wins), the same as (ties) or "
        f"worse than (losses) {info['baseline']}, in each metric's direction."
    )
    return chart, caption


def _significance(row: Mapping[str, Any], hib: bool | None, alpha: float) -> str:
    p, d = row.get("p_adjusted"), row.get("difference")
    if p is None or d is None or p >= alpha or d == 0 or hib is None:
        return ""
    better = (d > 0) == hib
    return "better ▲" if better else "worse ▼"


def _rows_html(table: pl.DataFrame, info: Mapping[str, Any]) -> str:
    from polars_eval.report._kit import _e, fmt

    alpha = 1.0 - float(info["level"])
    body = []
    for row in table.iter_rows(named=True):
        hib = info["directions"].get(row["metric"])
        lo, hi = row["lower"], row["upper"]
        ci = (
            f'<span class="pe-ci">{_e(fmt(lo))}–{_e(fmt(hi))}</span>'
            if lo is not None and hi is not None
            else ""
        )
        wtl = (
            "—"
            if row["wins"] is None
            else f"{fmt(row['wins'])} / {fmt(row['ties'])} / {fmt(row['losses'])}"
        )
        verdict = _significance(row, hib, alpha)
        cells = [
            f'<td class="pe-key">{_e(row["metric"])}</td>',
            f'<td class="pe-key">{_e(row["system"])}</td>',
            f"<td>{_e(fmt(row['value']))}</td>",
            f"<td>{_e(fmt(row['baseline_value']))}</td>",
            f"<td>{_e(fmt(row['difference']))}{ci}</td>",
            f"<td>{_e(fmt(row['p_value']))}</td>",
            f"<td>{_e(fmt(row['p_adjusted']))}</td>",
            f'<td class="pe-text">{"<b>" + _e(verdict) + "</b>" if verdict else ""}</td>',
            f"<td>{_e(wtl)}</td>",
            f"<td>{_e(fmt(row['n_units']))}</td>",
        ]
        body.append("<tr>" + "".join(cells) + "</tr>")
    head = (
        '<th class="pe-text">metric</th><th class="pe-text">system</th><th>value</th>'
        "<th>baseline</th><th>difference</th><th>p</th><th>adjusted p</th>"
        '<th class="pe-text">significant</th><th>wins / ties / losses</th><th>units</th>'
    )
    return (
        f'<div class="pe-scroll"><table class="pe-key-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def compare_html(report: Report) -> str:
    """The page's comparison section: the compare table (the rows of the drawn metrics
    first when it is long, the whole table one click away) and the section's charts."""
    from polars_eval.report._kit import PlotExtraMissing, _e, figure_html

    table = report.tables.get("compare")
    if table is None:
        return ""
    info = report.sections["compare"]
    drawn = chart_metrics(report)
    level = 100 * float(info["level"])
    correction = CORRECTIONS.get(info["correction"] or "", None)
    adjusted = (
        f"p-values adjusted by {correction} over the systems of each metric"
        if correction
        else "p-values not adjusted"
    )
    others = table.get_column("system").unique(maintain_order=True).to_list()
    meta = (
        f"{len(others)} system{'s' if len(others) != 1 else ''} against the baseline "
        f"<code>{_e(info['baseline'])}</code> on the same {_e(info['units'])}, every one "
        f"of them: {_e(TESTS.get(info['test'], info['test']))}, "
        f"{adjusted}; the grey range is the difference's {level:g} % interval. "
        f"<b>Significant</b>: adjusted p below {1 - float(info['level']):.3g}, in the "
        "metric's direction. Wins, ties, losses: the units where the system does better "
        "than, the same as, worse than the baseline."
    )
    if table.height > KEY_ROWS and drawn:
        key = table.filter(pl.col("metric").is_in(drawn))
        shown = _rows_html(key, info) + (
            f"<details><summary>All {table.height:,} comparisons</summary>"
            f"{_rows_html(table, info)}</details>"
        )
    else:
        shown = _rows_html(table, info)
    figures = ""
    try:
        svgs = report.svgs()
    except PlotExtraMissing:
        svgs = {}  # the charts section already says how to add them
    made = [figure_html(report, name, svgs[name]) for name in CHARTS if name in svgs]
    if made:
        figures = f'<div class="pe-grid">{"".join(made)}</div>'
    return (
        f'<section id="pe-compare"><h2>Comparison</h2><p class="pe-meta">{meta}</p>'
        f"{shown}{figures}</section>"
    )
