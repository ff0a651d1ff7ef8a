"""The report as one self-contained HTML page.

No script, no stylesheet link, no font or image fetched: the CSS is inline and every
chart is an inline SVG rendered by vl-convert, so the file opens offline, prints, and
can be mailed. Every rule of the CSS is scoped under ``.pe-report`` so the same markup
sits inside a notebook cell (``_repr_html_``) without restyling the notebook.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval.report._kit import PlotExtraMissing, _e, _metric_cell, figure_html, fmt, table_html
from polars_eval.report._kit import scope_svg as scope_svg
from polars_eval.report.compare import CHARTS as SECTION_CHARTS
from polars_eval.report.compare import compare_html
from polars_eval.report.fairness import fairness_html
from polars_eval.report.trend import trend_html

if TYPE_CHECKING:
    from polars_eval.report._kit import ReportView as Report

CSS = """
.pe-report { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: #1f2328; max-width: 1240px; margin: 0 auto; padding: 24px 28px 48px;
  line-height: 1.45; font-size: 15px; background: #fff; }
.pe-report h1 { font-size: 1.6em; margin: 0 0 4px; }
.pe-report h2 { font-size: 1.2em; margin: 32px 0 10px; padding-bottom: 4px;
  border-bottom: 1px solid #d8dee4; }
.pe-report h3 { font-size: 1em; margin: 18px 0 6px; }
.pe-report .pe-meta { color: #57606a; margin: 0 0 14px; }
.pe-report .pe-meta code { background: #f3f4f6; padding: 1px 5px; border-radius: 4px; }
.pe-report .pe-cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 8px 0; }
.pe-report .pe-card { border: 1px solid #d8dee4; border-radius: 8px; padding: 8px 14px;
  min-width: 120px; }
.pe-report .pe-card .pe-num { font-size: 1.35em; font-weight: 600; }
.pe-report .pe-card .pe-lab { color: #57606a; font-size: 0.85em; }
.pe-report .pe-card.pe-warn { border-color: #d4a72c; background: #fff8c5; }
.pe-report table { border-collapse: collapse; font-size: 0.9em; margin: 6px 0 10px; }
.pe-report th, .pe-report td { padding: 4px 10px; border-bottom: 1px solid #eaeef2;
  text-align: right; white-space: nowrap; }
.pe-report th { background: #f6f8fa; font-weight: 600; position: sticky; top: 0; }
.pe-report td.pe-text, .pe-report th.pe-text { text-align: left; }
.pe-report td.pe-desc { text-align: left; white-space: normal; color: #57606a; }
.pe-report td.pe-null { color: #8c959f; }
.pe-report .pe-scroll { overflow: auto; max-height: 560px; max-width: 100%; }
.pe-report .pe-fit { overflow-x: auto; max-width: 100%; }
.pe-report td.pe-key { text-align: left; white-space: normal; overflow-wrap: anywhere;
  max-width: 18em; }
.pe-report .pe-ci { color: #6e7781; font-size: 0.85em; margin-left: 6px; }
.pe-report code { font-size: 0.92em; }
.pe-report td.pe-desc code { background: #f3f4f6; padding: 0 4px; border-radius: 3px; }
.pe-report .pe-grid { display: grid; gap: 18px;
  grid-template-columns: repeat(auto-fill, minmax(min(480px, 100%), 1fr)); }
.pe-report figure.pe-chart { margin: 0; border: 1px solid #eaeef2; border-radius: 8px;
  padding: 10px; min-width: 0; }
.pe-report figure.pe-chart svg { width: 100%; height: auto; display: block; }
.pe-report figure.pe-wide { grid-column: 1 / -1; }
.pe-report figcaption { color: #57606a; font-size: 0.85em; margin-top: 6px; }
.pe-report ul.pe-notes li { margin: 4px 0; }
.pe-report details { margin: 8px 0; }
.pe-report summary { cursor: pointer; font-weight: 600; }
.pe-report footer { color: #8c959f; font-size: 0.8em; margin-top: 36px; }
"""


_LITERAL = re.compile(r"``(.+?)``|`([^`]+)`")
_ROLE = re.compile(r":(?:func|class|meth|attr|mod|data|obj):`~?([^`]+)`")


def desc_html(text: str) -> str:
    """A docstring sentence as HTML: ``literal`` and :func:`x` as <code>, the rest escaped."""
    text = _ROLE.sub(lambda m: f"``{m.group(1)}``", text or "")
    out, last = [], 0
    for match in _LITERAL.finditer(text):
        out.append(_e(text[last : match.start()]))
        out.append(f"<code>{_e(match.group(1) or match.group(2))}</code>")
        last = match.end()
    out.append(_e(text[last:]))
    return "".join(out)


AVERAGES = ("_micro", "_macro", "_weighted", "_pooled")


def registry_info(name: str) -> Any:
    """The registry entry of a summary column (``multiclass_f1_macro`` -> multiclass_f1,
    ``ndcg@10`` -> ndcg)."""
    name = name.split("@")[0]
    info = _registry.REGISTRY.get(name)
    if info is None:
        for suffix in AVERAGES:
            if name.endswith(suffix):
                return _registry.REGISTRY.get(name.removesuffix(suffix))
    return info


def summary_rows(summary: pl.DataFrame) -> pl.DataFrame:
    """The one-row summary as a long table: metric, value, [lower, upper], baseline, direction."""
    row = summary.row(0, named=True) if summary.height else {}
    suffixes = ("_lower", "_upper", "_baseline")
    records = []
    for name, value in row.items():
        if any(name.endswith(s) and name[: -len(s)] in row for s in suffixes):
            continue
        info = registry_info(name)
        better = None
        if info is not None and info.higher_is_better is not None:
            better = "higher" if info.higher_is_better else "lower"
        records.append(
            {
                "metric": name,
                "value": None if value is None else float(value),
                "lower": _float(row.get(f"{name}_lower")),
                "upper": _float(row.get(f"{name}_upper")),
                "baseline": _float(row.get(f"{name}_baseline")),
                "better": better,
                "description": info.description if info is not None else "",
            }
        )
    schema = {
        "metric": pl.String,
        "value": pl.Float64,
        "lower": pl.Float64,
        "upper": pl.Float64,
        "baseline": pl.Float64,
        "better": pl.String,
        "description": pl.String,
    }
    long = pl.DataFrame(records, schema=schema)
    keep = [c for c in long.columns if c not in ("lower", "upper", "baseline")]
    for c in ("lower", "upper", "baseline"):
        if long.get_column(c).drop_nulls().len():
            keep.insert(keep.index("better"), c)
    return long.select(keep)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _summary_html(report: Report) -> str:
    summary = report.tables.get("summary")
    if summary is None:
        return ""
    at_cols = [c for c in summary.columns if "@" in c]
    pivot = ""
    if at_cols and "at_k" in report.tables:
        # ranking: one row per metric, one column per cutoff, instead of a long list
        at_k = report.tables["at_k"]
        wide = at_k.pivot(on="k", index="metric", values="value", maintain_order=True)
        wide = wide.rename({c: f"@{c}" for c in wide.columns if c != "metric"})
        pivot = table_html(wide)
        summary = summary.drop(at_cols)
    long = summary_rows(summary)
    head = "".join(
        f'<th class="pe-text">{_e(c)}</th>'
        if c in ("metric", "description")
        else f"<th>{_e(c)}</th>"
        for c in long.columns
    )
    body = []
    for rec in long.iter_rows(named=True):
        cells = []
        for c, v in rec.items():
            if c == "metric":
                cells.append(f'<td class="pe-text"><b>{_e(v)}</b></td>')
            elif c == "description":
                cells.append(f'<td class="pe-desc">{desc_html(v or "")}</td>')
            elif c == "better":
                arrow = {"higher": "↑ higher", "lower": "↓ lower"}.get(v or "", "")
                cells.append(f'<td class="pe-text">{arrow}</td>')
            else:
                cls = ' class="pe-null"' if v is None else ""
                cells.append(f"<td{cls}>{_e(fmt(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    intervals = ""
    if "lower" in long.columns:
        level = report.options.get("level", 0.95)
        intervals = (
            f" lower, upper: the {fmt(100 * float(level))} % confidence interval "
            f"(closed form{', or bootstrap' if report.options.get('ci') == 'bootstrap' else ''}"
            "; — where the metric has none)."
        )
    return (
        '<section id="pe-summary"><h2>Summary</h2>'
        '<p class="pe-meta">Every summary metric of the task on all rows used '
        f"(— : undefined on this data, see the notes).{intervals}{_pooled_note(summary)}</p>"
        f'{pivot}<div class="pe-fit"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div></section>"
    )


def _pooled_note(table: pl.DataFrame) -> str:
    """One sentence on the forecast's ``<metric>_pooled`` columns, when the table has any."""
    if not any(c.endswith("_pooled") for c in table.columns):
        return ""
    return (
        " A metric without a suffix is the mean of its per-series values (every series "
        "counts once); <code>&lt;metric&gt;_pooled</code> is the metric over all rows "
        "pooled, so long or large series weigh more (for MASE and RMSSE: the mean of every "
        "row's scaled error)."
    )


def _cards(report: Report) -> str:
    c = report.counts
    cards = [("rows", c.get("rows"), False), ("rows used", c.get("rows_used"), False)]
    skipped = c.get("rows_null") or 0
    cards.append(("skipped: null input", skipped, bool(skipped)))
    if report.inputs.get("weight"):
        zero = c.get("rows_zero_weight") or 0
        cards.append(("skipped: zero weight", zero, False))
    if "positives" in c:
        pos, neg = c.get("positives") or 0.0, c.get("negatives") or 0.0
        cards.append(("positives", pos, False))
        if pos + neg > 0:
            cards.append(("positive rate", pos / (pos + neg), False))
    if "zero_actuals" in report.tables.get("summary", pl.DataFrame()).columns:
        z = report.tables["summary"].get_column("zero_actuals")[0]
        cards.append(("zero actuals (skipped by % errors)", z, bool(z)))
    segments = report.tables.get("segments")
    if segments is not None and report.primary in segments.columns:
        undefined = segments.get_column(report.primary).null_count()  # type: ignore[arg-type]
        cards.append(("segments", segments.height, False))
        if undefined:
            cards.append((f"segments with undefined {report.primary}", undefined, True))
    out = []
    for label, value, warn in cards:
        if isinstance(value, float) and value.is_integer() and label != "positive rate":
            value = int(value)
        cls = "pe-card pe-warn" if warn else "pe-card"
        out.append(
            f'<div class="{cls}"><div class="pe-num">{_e(fmt(value))}</div>'
            f'<div class="pe-lab">{_e(label)}</div></div>'
        )
    return '<div class="pe-cards" id="pe-counts">' + "".join(out) + "</div>"


def _charts_html(report: Report) -> str:
    try:
        svgs = report.svgs()
    except PlotExtraMissing as error:
        # without the plot extra the report still comes out: its tables, and this line
        return (
            '<section id="pe-charts"><h2>Charts</h2><p class="pe-meta pe-no-charts">'
            f"Charts left out: {_e(error)}.</p></section>"
        )
    if not svgs:
        return ""
    figures = [figure_html(report, n, svg) for n, svg in svgs.items() if n not in SECTION_CHARTS]
    if not figures:
        return ""
    return (
        '<section id="pe-charts"><h2>Charts</h2>'
        f'<div class="pe-grid">{"".join(figures)}</div></section>'
    )


SEGMENT_ROWS = 20
"""Segments shown in the page's compact per-segment table when there are more than
:data:`SEGMENT_ROWS_ALL` (the worst ones); the full table is one click away."""

SEGMENT_ROWS_ALL = 25

KEY_COLUMNS = 6
"""Most metric columns of the compact per-segment table (the task's key metrics)."""


def key_columns(report: Report, segments: pl.DataFrame) -> tuple[list[str], list[str]]:
    """The count and metric columns of the compact per-segment table (primary first)."""
    keys = report.key_metrics
    metrics = [report.primary, *keys] if report.primary else list(keys)
    present = []
    for name in metrics:
        if name and name in segments.columns and name not in present:
            present.append(name)
    if not present:  # a task without a list: the first metric columns
        skip = set(report.by) | {"rows", "rows_null", "rows_zero_weight", "rows_used"}
        present = [
            c
            for c in segments.columns
            if c not in skip
            and not c.endswith(("_lower", "_upper", "_baseline"))
            and segments.schema[c].is_float()
        ]
    counts = [c for c in report.key_counts or ["rows_used"] if c in segments.columns]
    if "rows_null" in segments.columns and segments.get_column("rows_null").sum():
        counts.append("rows_null")
    return counts, present[:KEY_COLUMNS]


def _segments_html(report: Report) -> str:
    segments = report.tables.get("segments")
    if segments is None:
        return ""
    info = registry_info(report.primary or "")
    direction = ""
    if info is not None and info.higher_is_better is not None:
        direction = "lowest " if info.higher_is_better else "highest "
    counts, metrics = key_columns(report, segments)
    n = segments.height
    shown = segments if n <= SEGMENT_ROWS_ALL else segments.head(SEGMENT_ROWS)
    text_cols = set(report.by)
    head = "".join(
        f'<th class="pe-text">{_e(c)}</th>' if c in text_cols else f"<th>{_e(c)}</th>"
        for c in [*report.by, *counts, *metrics]
    )
    rows = []
    for row in shown.iter_rows(named=True):
        cells = [f'<td class="pe-key">{_e(fmt(row[c]))}</td>' for c in report.by]
        for c in counts:
            value = row[c]
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            cells.append(f"<td>{_e(fmt(value))}</td>")
        cells += [_metric_cell(row, c) for c in metrics]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    has_ci = any(f"{c}_lower" in segments.columns for c in metrics)
    which = (
        f"All {n:,} segments"
        if shown.height == n
        else f"The {shown.height} worst of {n:,} segments"
    )
    level = report.options.get("level", 0.95)
    meta = (
        f"{which}, one row per value of <code>{_e(', '.join(report.by))}</code>, worst first "
        f"({direction}<code>{_e(report.primary)}</code>; undefined last), with the key "
        "metrics"
        + (f" and their {fmt(100 * float(level))} % confidence intervals (grey)" if has_ci else "")
        + "."
        + (" rows_null: rows skipped for a null input." if "rows_null" in counts else "")
        + _pooled_note(segments)
    )
    full = (
        f"<details><summary>Every metric of every segment ({n:,} rows × "
        f"{segments.width} columns)</summary>{table_html(segments)}</details>"
    )
    return (
        '<section id="pe-segments"><h2>By segment</h2>'
        f'<p class="pe-meta">{meta}</p>'
        f'<div class="pe-fit"><table class="pe-key-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{full}</section>"
    )


# report.tables keys -> the titles of their sections (a table holding one metric's output
# is named after it, gain_table: the keys are the report's, not a list of metrics)
SMALL_TABLES = {
    "gain_table": "Gain and lift table",
    "calibration_table": "Calibration table",
    "calibration_table_quantile": "Calibration table (quantile bins)",
    "conditional_actual": "Conditional on the actual",
    "conditional_pred": "Conditional on the prediction",
    "confusion_matrix": "Confusion matrix",
    "per_class": "Per class",
    "at_k": "Metrics by cutoff",
    "by_lead": "Errors by lead time",
    "per_series": "Per series (worst MAE first)",
    "per_query": "Per query (worst first)",
}


def _tables_html(report: Report) -> str:
    parts = [
        f"<details><summary>{_e(title)}</summary>{table_html(report.tables[key])}</details>"
        for key, title in SMALL_TABLES.items()
        if key in report.tables
    ]
    if not parts:
        return ""
    curves = [
        k
        for k in report.tables
        if k not in SMALL_TABLES and k not in ("summary", "segments", "data", "calibration")
    ]
    more = (
        '<p class="pe-meta">Full curves and chart data in <code>report.tables</code>: '
        + ", ".join(f"<code>{_e(k)}</code>" for k in curves)
        + ".</p>"
        if curves
        else ""
    )
    return '<section id="pe-tables"><h2>Tables</h2>' + "".join(parts) + more + "</section>"


_NULL_GROUPS = re.compile(
    r"^(?P<name>.+?) is null for (?P<n>\d+) of (?P<m>\d+) groups \((?P<why>.*)\)$"
)
_UNDEFINED = re.compile(r"^(?P<name>\S+) is undefined on this data: (?P<why>.*)$")
_AS_NULL = " (reported as null)"
NOTE_NAMES = 12
"""Most metric names spelled out in a merged note (past that, the first 8 and a count)."""


def _names(names: list[str]) -> str:
    if len(names) > NOTE_NAMES:
        return ", ".join(names[:8]) + f" and {len(names) - 8} more"
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def merge_notes(notes: Sequence[str]) -> list[str]:
    """The notes with repeats merged, in order of first appearance.

    The metric layer's warnings list one clause per metric ("ndcg@1 is null for 2 of 600
    groups (why); ndcg@2 is null for ..."); clauses with the same count and reason become
    one ("54 metrics are null for 2 of 600 groups (why): ndcg@1, ndcg@2, ... and 46
    more"). Any other note given more than once is shown once, with a count.
    """
    merged: dict[tuple[str, ...], list[str]] = {}
    repeats: dict[tuple[str, ...], int] = {}
    for note in notes:
        suffix = _AS_NULL if note.endswith(_AS_NULL) else ""
        clauses = note.removesuffix(suffix).split("; ")
        matches = [_NULL_GROUPS.match(c) or _UNDEFINED.match(c) for c in clauses]
        if not all(matches):
            key: tuple[str, ...] = ("text", note)
            repeats[key] = repeats.get(key, 0) + 1
            merged.setdefault(key, [])
            continue
        for match in matches:
            assert match is not None
            groups = match.groupdict()
            if "n" in groups:
                key = ("null", groups["n"], groups["m"], groups["why"])
            else:
                key = ("undefined", groups["why"], suffix)
            names = merged.setdefault(key, [])
            if groups["name"] not in names:  # the same fact twice is said once
                names.append(groups["name"])
    out = []
    for key, names in merged.items():
        count = repeats.get(key, 1)
        times = f" (×{count})" if count > 1 else ""
        if key[0] == "text":
            out.append(key[1] + times)
            continue
        many = len(names) > 1
        who = f"{len(names)} metrics" if len(names) > NOTE_NAMES else _names(names)
        listed = f": {_names(names)}" if len(names) > NOTE_NAMES else ""
        if key[0] == "null":
            _, n, m, why = key
            verb = "are" if many else "is"
            out.append(f"{who} {verb} null for {n} of {m} groups ({why}){listed}{times}")
        else:
            _, why, suffix = key
            verb = "are" if many else "is"
            null = ", reported as null" if suffix else ""
            out.append(f"{who} {verb} undefined on this data ({why}){null}{listed}{times}")
    return out


def _notes_html(report: Report) -> str:
    if not report.notes:
        return ""
    items = "".join(f"<li>{_e(n)}</li>" for n in merge_notes(report.notes))
    return f'<section id="pe-notes"><h2>Notes</h2><ul class="pe-notes">{items}</ul></section>'


def _meta(report: Report) -> str:
    bits = [f"task <code>{_e(report.task)}</code>"]
    for key, value in report.inputs.items():
        if value:
            bits.append(f"{_e(key)} <code>{_e(value)}</code>")
    if report.by:
        bits.append(f"by <code>{_e(', '.join(report.by))}</code>")
    for key, value in report.options.items():
        bits.append(f"{_e(key)} <code>{_e(fmt(value))}</code>")
    return '<p class="pe-meta">' + " · ".join(bits) + "</p>"


def body(report: Report) -> str:
    """The report's markup, inside one ``div.pe-report`` with its scoped style.

    Without the ``plot`` extra (altair, vl-convert-python) the charts are replaced by one
    line saying how to install it; the tables are all there.
    """
    from polars_eval._version import __version__
    from polars_eval.report.calibration import calibration_html

    return (
        f'<div class="pe-report"><style>{CSS}</style>'
        f"<header><h1>{_e(report.title)}</h1>{_meta(report)}{_cards(report)}</header>"
        f"{_summary_html(report)}{_charts_html(report)}{calibration_html(report)}"
        f"{_segments_html(report)}{fairness_html(report)}{trend_html(report)}"
        f"{compare_html(report)}"
        f"{_tables_html(report)}{_notes_html(report)}"
        f"<footer>polars_eval {_e(__version__)} · {_e(report.created)} · every number and "
        "chart comes from the tables of the metric layer.</footer></div>"
    )


def render(report: Report, *, full: bool) -> str:
    """A full HTML document (``full``) or the fragment a notebook shows."""
    fragment = body(report)
    if not full:
        return fragment
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(report.title)}</title></head><body>{fragment}</body></html>\n"
    )
