"""The pieces every part of a report draws with: the chart style (widths, colours, the
``plot`` extra, the thinning of long curves) and the HTML cells (escaping, numbers, tables,
figures), and :class:`ReportView`, what the sections read of a report.

The bottom of the report package: the sections (calibration, compare, fairness, trend)
and the assemblers (:mod:`~polars_eval.report.charts`, :mod:`~polars_eval.report.html`,
which re-export these names) import it; it imports none of them.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import MutableMapping, Sequence
from typing import Any, Protocol

import polars as pl


class ReportView(Protocol):
    """What the charts, the page and the sections read of a report
    (:class:`polars_eval.report.Report` is one): its tables and settings, its curves, the
    rendered charts."""

    task: str
    tables: MutableMapping[str, pl.DataFrame]
    metrics: Any
    metric_notes: list[str]
    counts: dict[str, Any]
    primary: Any
    inputs: Any
    options: Any
    notes: list[str]
    key_metrics: list[str]
    key_counts: list[str]
    by: list[str]
    title: str
    max_points: int
    max_segments: int
    created: str
    captions: dict[str, str]
    sections: dict[str, Any]

    def curve_table(self, name: str, labels: list[str] | None = None) -> pl.DataFrame: ...

    def curve_length(self, name: str) -> int: ...

    @property
    def charts(self) -> dict[str, Any]: ...

    def svgs(self) -> dict[str, str]: ...


# ---------------------------------------------------------------------------------------
# Charts: style, the plot extra, thinning
# ---------------------------------------------------------------------------------------

PRE_THIN = 16
WIDTH = 560
"""Width of a chart in pixels, axes and legend included: a card of the report's grid."""
WIDE = 1160
"""Width of a chart that spans the page (the per-segment chart, the series sample)."""
WIDE_CHARTS = ("segments", "series", "fairness", "trend", "compare")
"""The charts drawn across the page (``WIDE`` pixels), not in a card of the grid."""
INK = "#222222"
REFERENCE = "#9a9a9a"
PALETTE = (
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2",
    "#b279a2", "#ff9da6", "#9d755d", "#eeca3b", "#bab0ac",
)  # fmt: skip


PLOT_EXTRA = (
    "charts need the optional extra 'plot' (altair and vl-convert-python): "
    "pip install 'polars-eval[plot]'"
)


class PlotExtraMissing(ModuleNotFoundError):
    """The ``plot`` extra (altair, vl-convert-python) is not installed.

    A :class:`ModuleNotFoundError`, so ``except ModuleNotFoundError`` still catches it; the
    HTML report catches exactly this one and writes its tables with a line saying how to
    add the charts.
    """


def require_altair() -> Any:
    """Import Altair, or say how to install the ``plot`` extra."""
    try:
        import altair as alt
    except ModuleNotFoundError as error:
        raise PlotExtraMissing(PLOT_EXTRA) from error
    return alt


def dot_layers(
    metric: str, x: Any, y: Any, tooltip: list[str], ci: bool, axis: bool = True
) -> list[Any]:
    """A dot plot's layers: a point per row at (``x``, ``y``) and, with ``ci``, its interval
    as a rule from ``<metric>_lower`` to ``<metric>_upper`` behind it; ``axis=False`` leaves
    the points' ``y`` axis out (a panel beside the first)."""
    alt = require_altair()
    layers = []
    if ci:
        layers.append(
            alt.Chart()
            .mark_rule(color=PALETTE[0], strokeWidth=2, opacity=0.55)
            .encode(x=alt.X(f"{metric}_lower:Q", title=metric), x2=f"{metric}_upper:Q", y=y)
        )
    layers.append(
        alt.Chart()
        .mark_point(filled=True, color=PALETTE[0], size=60, opacity=1)
        .encode(x=x, y=y if axis else y.axis(None), tooltip=tooltip)
    )
    return layers


def downsample(
    table: pl.DataFrame,
    columns: Sequence[str],
    max_points: int,
    *,
    group: str | None = None,
    by_rank: bool = False,
) -> pl.DataFrame:
    """At most ``max_points`` rows per curve (per ``group``), first and last always kept.

    ``by_rank=False``: rows where the curve's length through ``columns`` (each scaled to
    its range; nulls and infinities count as no move) crosses one of ``max_points - 1``
    equal steps (the first row after each crossing). ``by_rank=True``: evenly spaced rows. Row order is kept.
    """
    if max_points < 2:
        raise ValueError(f"max_points must be at least 2; got {max_points}")
    over = [group] if group else None

    def win(e: pl.Expr) -> pl.Expr:
        return e.over(over) if over else e

    if table.height <= max_points:
        return table
    # staged with_columns: each window result is materialised once, not re-evaluated
    index = [win(pl.int_range(pl.len())).alias("__i"), win(pl.len()).alias("__n")]
    lf = table.lazy().with_columns(index)
    dense = PRE_THIN * max_points
    if not by_rank and table.height > dense:
        # a cheap first pass on long curves: evenly spaced rows, PRE_THIN times more than
        # drawn (finer than any pixel), then the length-based choice below
        i, n = pl.col("__i"), pl.col("__n")
        step = (i * dense // n) != ((i - 1) * dense // n)
        lf = lf.filter((n <= dense) | step | (i == n - 1)).with_columns(index)
    if by_rank:
        lf = lf.with_columns(
            (pl.col("__i") / (pl.col("__n") - 1).clip(lower_bound=1)).alias("__pos")
        )
    else:
        finite = [
            pl.when(pl.col(c).cast(pl.Float64).is_finite()).then(pl.col(c).cast(pl.Float64))
            for c in columns
        ]
        lf = lf.with_columns(f.alias(f"__f{k}") for k, f in enumerate(finite))
        fs = [pl.col(f"__f{k}") for k in range(len(columns))]
        lf = lf.with_columns(
            [win(f.max() - f.min()).alias(f"__s{k}") for k, f in enumerate(fs)]
            + [win(f.shift(1)).alias(f"__p{k}") for k, f in enumerate(fs)]
        )
        steps = [
            pl.when(pl.col(f"__s{k}") > 0)
            .then(((f - pl.col(f"__p{k}")) / pl.col(f"__s{k}")) ** 2)
            .otherwise(0.0)
            .fill_null(0.0)
            .fill_nan(0.0)
            for k, f in enumerate(fs)
        ]
        lf = lf.with_columns(pl.sum_horizontal(steps).sqrt().alias("__step"))
        lf = lf.with_columns(
            win(pl.col("__step").cum_sum()).alias("__len"),
            win(pl.col("__step").sum()).alias("__tot"),
        )
        lf = lf.with_columns(
            pl.when(pl.col("__tot") > 0)
            .then(pl.col("__len") / pl.col("__tot"))
            .otherwise(pl.col("__i") / (pl.col("__n") - 1).clip(lower_bound=1))
            .alias("__pos")
        )
    # buckets 0 .. max_points - 2 keep their first row; bucket max_points - 1 holds only the
    # end of the curve (position 1), represented by the last row
    lf = lf.with_columns((pl.col("__pos") * (max_points - 1)).floor().alias("__b"))
    lf = lf.with_columns(win(pl.col("__b").shift(1)).alias("__pb"))
    first_of_bucket = (pl.col("__b") != pl.col("__pb")).fill_null(True)
    keep = (
        (pl.col("__n") <= max_points)
        | (first_of_bucket & (pl.col("__b") < max_points - 1))
        | (pl.col("__i") == pl.col("__n") - 1)
    )
    return lf.filter(keep).select(table.columns).collect()


# ---------------------------------------------------------------------------------------
# HTML cells
# ---------------------------------------------------------------------------------------

MAX_TABLE_ROWS = 200


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fmt(value: Any) -> str:
    """A cell: floats to 4 significant digits, integers with thousands separators."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.3e}"
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table_html(df: pl.DataFrame, *, max_rows: int = MAX_TABLE_ROWS) -> str:
    """A DataFrame as an HTML table (nulls as an em dash); the first ``max_rows`` rows."""
    text_cols = {c for c, t in df.schema.items() if not (t.is_numeric() or t == pl.Boolean)}
    head = "".join(
        f'<th class="pe-text">{_e(c)}</th>' if c in text_cols else f"<th>{_e(c)}</th>"
        for c in df.columns
    )
    rows = []
    for row in df.head(max_rows).iter_rows():
        cells = []
        for c, v in zip(df.columns, row, strict=True):
            cls = "pe-text" if c in text_cols else ""
            if v is None:
                cls = (cls + " pe-null").strip()
            attr = f' class="{cls}"' if cls else ""
            cells.append(f"<td{attr}>{_e(fmt(v))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = (
        f'<p class="pe-meta">First {max_rows:,} of {df.height:,} rows; all of them are in '
        "<code>report.tables</code>.</p>"
        if df.height > max_rows
        else ""
    )
    return (
        f'<div class="pe-scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{more}"
    )


def _metric_cell(row: dict[str, Any], name: str) -> str:
    value = row.get(name)
    lower, upper = row.get(f"{name}_lower"), row.get(f"{name}_upper")
    ci = ""
    if lower is not None and upper is not None:
        ci = f'<span class="pe-ci">{_e(fmt(lower))}–{_e(fmt(upper))}</span>'
    cls = ' class="pe-null"' if value is None else ""
    return f"<td{cls}>{_e(fmt(value))}{ci}</td>"


_ID = re.compile(r'\bid="([^"]+)"')


def scope_svg(svg: str, prefix: str) -> str:
    """Prefix every id of an inline SVG (and its references) so that charts never collide."""
    ids = set(_ID.findall(svg))
    if not ids:
        return svg
    for old in sorted(ids, key=len, reverse=True):
        new = f"{prefix}-{old}"
        svg = svg.replace(f'id="{old}"', f'id="{new}"')
        svg = svg.replace(f"url(#{old})", f"url(#{new})")
        svg = svg.replace(f'href="#{old}"', f'href="#{new}"')
    return svg


def figure_html(report: ReportView, name: str, svg: str) -> str:
    """One chart as a figure of the page, with its caption."""
    wide = " pe-wide" if name in WIDE_CHARTS else ""
    caption = report.captions.get(name, "")
    return (
        f'<figure class="pe-chart{wide}" id="pe-chart-{_e(name)}" data-chart="{_e(name)}">'
        f"{scope_svg(svg, f'pe-{name}')}<figcaption>{_e(caption)}</figcaption></figure>"
    )
