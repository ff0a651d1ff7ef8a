"""The fairness section of a binary report (SPEC §15): ``df.eval.report(..., sensitive=)``.

Two tables, as the metric layer returns them — ``fairness`` (``df.eval.fairness``: the
metrics of every sensitive group, with bootstrap intervals) and ``disparity``
(``df.eval.disparity``: each metric's difference and ratio between groups, with theirs) —
computed from one pass of states and one set of row resamples; a chart of each metric
per group with its interval; and on the page, the per-group table and the disparity
summary (one row per metric).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_eval import fairness as _fairness
from polars_eval._core import registry as _registry
from polars_eval.exceptions import InvalidParameterError, UndefinedMetricWarning
from polars_eval.report._states import SEGMENT, segment_label

if TYPE_CHECKING:
    from polars_eval.report._kit import ReportView as Report
    from polars_eval.report.tables import Built

RESAMPLES = 1000
SEED = 0
KINDS = ("difference", "ratio")


def add_fairness(
    frame: pl.DataFrame | pl.LazyFrame,
    built: Built,
    task: str,
    arguments: dict[str, Any],
    *,
    sensitive: str | Sequence[str],
    weight: Any,
    validate: bool,
    ci: Any,
    level: float,
) -> None:
    """Add the ``fairness`` and ``disparity`` tables (and their notes) to a built report.

    Over every row (the report's ``by`` segments are not split); the default metrics of
    :meth:`~polars_eval.fairness.FairnessMethods.fairness` at the report's ``threshold``;
    with the report's intervals on (``ci`` not None) every value gets its bootstrap
    interval (1000 resamples, seed 0, at ``level``).
    """
    if task != "binary":
        raise InvalidParameterError(
            f"sensitive= adds a fairness section to a binary report; task={task!r} has none"
        )
    options = built.options
    q = _fairness.make_query(
        arguments["label"],
        arguments["score"],
        sensitive=sensitive,
        metrics=None,
        threshold=options.get("threshold", 0.5),
        weight=weight,
        pos_label=options.get("pos_label"),
        by=None,
        validate=validate,
    )
    shapes = [_fairness.fairness_shape(q), _fairness.disparity_shape(q, "between_groups")]
    data = _fairness.needed_rows(frame, q)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        groups, disparity = _fairness.evaluate_shapes(
            data,
            q,
            shapes,
            ci="bootstrap" if ci else None,
            level=level,
            n_resamples=RESAMPLES,
            seed=SEED,
        )
    for w in caught:
        if not issubclass(w.category, UndefinedMetricWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        elif str(w.message) not in built.notes:
            built.notes.append(str(w.message))
    built.tables["fairness"] = groups
    built.tables["disparity"] = disparity
    built.options["sensitive"] = ", ".join(q.sensitive)


def sensitive_columns(report: Report) -> list[str]:
    """The sensitive columns of the report's fairness table (the columns before ``n``)."""
    table = report.tables["fairness"]
    return table.columns[: table.columns.index(_fairness.N_COL)]


def fairness_metrics(table: pl.DataFrame, keys: Sequence[str]) -> list[str]:
    """The metric columns of a fairness table (not its keys, ``n`` or interval bounds)."""
    return [
        c
        for c in table.columns
        if c not in keys and c != _fairness.N_COL and not c.endswith(("_lower", "_upper"))
    ]


def fairness_chart(report: Report) -> tuple[Any, str] | None:
    """Each metric per sensitive group: a dot per group with its interval, one panel per
    metric side by side (the data: the fairness table with the group's label)."""
    from polars_eval.report._kit import WIDE, dot_layers, require_altair

    if "fairness" not in report.tables:
        return None
    alt = require_altair()
    table = report.tables["fairness"]
    keys = sensitive_columns(report)
    names = fairness_metrics(table, keys)
    if table.height == 0 or not names:
        return None
    data = table.with_columns(segment_label(keys))
    has_ci = all(f"{m}_lower" in table.columns for m in names)
    y = alt.Y(
        f"{SEGMENT}:N",
        sort=data.get_column(SEGMENT).to_list(),
        title=" / ".join(keys),
        axis=alt.Axis(labelLimit=180, grid=True, gridColor="#f0f0f0"),
    )
    height = max(120, 22 * data.height + 40)
    panels = []
    for i, name in enumerate(names):
        info = _registry.aliases("binary").get(name) or _registry.REGISTRY.get(name)
        lo = 0.0 if info is None or info.lower is None else info.lower
        hi = 1.0 if info is None or info.upper is None else info.upper
        x = alt.X(f"{name}:Q", title=name, scale=alt.Scale(domain=[lo, hi], nice=False))
        tooltip = [f"{SEGMENT}:N", "n:Q", f"{name}:Q"]
        layers = dot_layers(name, x, y, tooltip, has_ci, axis=i == 0)
        width = max(120, WIDE // len(names) - 90)
        panels.append(alt.layer(*layers).properties(width=width, height=height))
    title = {"text": "Metrics per sensitive group", "anchor": "start"}
    chart = alt.hconcat(*panels, data=data, spacing=12).properties(title=title)
    level = report.options.get("level", 0.95)
    caption = (
        f"{', '.join(names)} of each group of {' / '.join(keys)} at threshold "
        f"{report.options.get('threshold', 0.5)}"
        + (f"; lines: {100 * float(level):g} % bootstrap intervals" if has_ci else "")
        + "."
    )
    return chart, caption


def disparity_rows(report: Report) -> pl.DataFrame:
    """The disparity table as one row per metric: difference and ratio (and bounds)."""
    return _fairness.disparity_long(report.tables["disparity"], [])


def fairness_html(report: Report) -> str:
    """The page's fairness section: the per-group table and the disparity summary."""
    from polars_eval.report._kit import _e, _metric_cell, fmt

    if "fairness" not in report.tables:
        return ""
    table = report.tables["fairness"]
    keys = sensitive_columns(report)
    names = fairness_metrics(table, keys)
    head = "".join(f'<th class="pe-text">{_e(c)}</th>' for c in keys)
    head += "".join(f"<th>{_e(c)}</th>" for c in ["n", *names])
    body = []
    for row in table.iter_rows(named=True):
        cells = [f'<td class="pe-key">{_e(fmt(row[c]))}</td>' for c in keys]
        cells.append(f"<td>{_e(fmt(row['n']))}</td>")
        cells += [_metric_cell(row, c) for c in names]
        body.append("<tr>" + "".join(cells) + "</tr>")
    summary = disparity_rows(report)
    dis_head = '<th class="pe-text">metric</th><th>difference</th><th>ratio</th>'
    dis_body = []
    for row in summary.iter_rows(named=True):
        cells = [f'<td class="pe-key">{_e(row["metric"])}</td>']
        cells += [_metric_cell(row, kind) for kind in KINDS]
        dis_body.append("<tr>" + "".join(cells) + "</tr>")
    has_ci = any(c.endswith("_lower") for c in table.columns)
    level = report.options.get("level", 0.95)
    interval = (
        f" Grey: {100 * float(level):g} % bootstrap intervals ({RESAMPLES} row resamples, "
        "the same for every group)."
        if has_ci
        else ""
    )
    meta = (
        f"One row per group of <code>{_e(', '.join(keys))}</code> (rows with a null there "
        "are left out); a group whose rate is undefined shows a dash and is left out of the "
        f"differences and ratios.{interval}"
    )
    return (
        '<section id="pe-fairness"><h2>Fairness</h2>'
        f'<p class="pe-meta">{meta}</p>'
        f'<div class="pe-fit"><table class="pe-key-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
        "<h3>Disparity between groups</h3>"
        '<p class="pe-meta">Difference: largest minus smallest group value; ratio: smallest '
        "over largest (fairlearn's <code>MetricFrame.difference()</code> and "
        "<code>.ratio()</code>).</p>"
        f'<div class="pe-fit"><table class="pe-key-table"><thead><tr>{dis_head}</tr></thead>'
        f"<tbody>{''.join(dis_body)}</tbody></table></div></section>"
    )
