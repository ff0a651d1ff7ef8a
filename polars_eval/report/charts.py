"""Charts of a report, drawn with Altair (the optional extra ``plot``).

Every chart is built from a table of the report (a DataFrame the metric layer returned)
and nothing else: a chart's top-level ``data`` is that table, possibly downsampled, with
at most two columns added for drawing (``segment``, the curve a row belongs to, and
``order``, the row's position in its curve). Reference marks (the chance diagonal, the
KS point, the overall value) are separate small layers with their own data.

Downsampling: a curve of more than ``max_points`` points (500 by default) keeps its first
and last points and the points where its length — the path through the plotted columns,
each scaled to its range — crosses each of ``max_points - 1`` equal steps, so the drawn
line never leaves out a visible bend; the residual QQ points are thinned evenly by rank
instead (a sample of evenly spaced quantiles, which the residual histogram also reads).
An overlay of several curves keeps at most 5,000 rows in all (Altair's default limit).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval.report._kit import (
    INK,
    PALETTE,
    PLOT_EXTRA,
    REFERENCE,
    WIDE,
    WIDTH,
    PlotExtraMissing,
    dot_layers,
    downsample,
    require_altair,
)
from polars_eval.report._kit import PRE_THIN as PRE_THIN
from polars_eval.report._kit import WIDE_CHARTS as WIDE_CHARTS
from polars_eval.report.compare import compare_chart, wtl_chart
from polars_eval.report.fairness import fairness_chart
from polars_eval.report.tables import ALL, SEGMENT, SERIES_SAMPLE, segment_label
from polars_eval.report.trend import trend_chart

if TYPE_CHECKING:
    import altair as alt

    from polars_eval.report._kit import ReportView as Report

ORDER = "order"
MAX_ROWS = 5000
HEIGHT = 380


def _with_order(table: pl.DataFrame, group: str | None = None) -> pl.DataFrame:
    order = pl.int_range(pl.len()).over(group) if group else pl.int_range(pl.len())
    return table.with_columns(order.cast(pl.Int64).alias(ORDER))


def overlay(
    report: Report, whole: str, per_segment: str, columns: Sequence[str]
) -> tuple[pl.DataFrame, int, list[str]]:
    """The whole-data curve and the curves of the largest segments, in one long table.

    Returns the table (columns of the curve, ``segment``, ``order``), the number of points
    per curve it was thinned to, and the segments shown (largest ``max_segments`` by rows
    used).
    """
    curve = report.curve_table(whole)
    shown: list[str] = []
    by_curve = curve.clear()
    if report.by and per_segment in report.tables:
        seg = report.tables["segments"]
        top = (
            seg.sort("rows_used", descending=True, maintain_order=True)
            .head(report.max_segments)
            .select(segment_label(report.by))
            .get_column(SEGMENT)
            .sort()
            .to_list()
        )
        shown = top
        by_curve = report.curve_table(per_segment, top).select([*curve.columns, SEGMENT])
    per_curve = max(2, min(report.max_points, MAX_ROWS // (1 + len(shown))))
    parts = [downsample(curve, columns, per_curve).with_columns(pl.lit(ALL).alias(SEGMENT))]
    if shown:
        parts.append(downsample(by_curve, columns, per_curve, group=SEGMENT))
    thinned = pl.concat(parts, how="vertical")
    return _with_order(thinned, SEGMENT), per_curve, shown


# ---------------------------------------------------------------------------------------
# Chart helpers
# ---------------------------------------------------------------------------------------


@dataclass
class ChartSpec:
    """One chart of a task: its key in ``report.charts``, title and builder."""

    name: str
    title: str
    build: Callable[[Report], tuple[alt.TopLevelMixin, str] | None]


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "undefined"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if isinstance(value, float) and 1e4 <= abs(value) < 1e15:
        return f"{value:,.0f}"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _summary_value(report: Report, name: str) -> Any:
    summary = report.tables.get("summary")
    if summary is None or name not in summary.columns or summary.height == 0:
        return None
    return summary.get_column(name)[0]


def _diagonal(alt: Any, x: str, y: str) -> Any:
    line = alt.Data(values=[{x: 0.0, y: 0.0}, {x: 1.0, y: 1.0}])
    return (
        alt.Chart(line).mark_line(color=REFERENCE, strokeDash=[4, 4]).encode(x=f"{x}:Q", y=f"{y}:Q")
    )


def _color(alt: Any, shown: list[str], labels: dict[str, str] | None = None) -> Any:
    domain = [ALL, *shown]
    colors = [INK, *(PALETTE[i % len(PALETTE)] for i in range(len(shown)))]
    legend = None
    if shown:
        legend = alt.Legend(
            title=None,
            orient="bottom",
            columns=3,
            labelLimit=WIDTH // 3 - 24,
            **({"labelExpr": label_expr(labels)} if labels else {}),
        )
    return alt.Color(f"{SEGMENT}:N", scale=alt.Scale(domain=domain, range=colors), legend=legend)


def label_expr(labels: dict[str, str]) -> str:
    """A Vega expression that shows ``labels[datum.label]`` (the label itself if absent)."""
    expr = "datum.label"
    for key, text in reversed(labels.items()):
        expr = f"datum.label === {json.dumps(key)} ? {json.dumps(text)} : ({expr})"
    return expr


def _segment_values(report: Report, shown: list[str], metric: str, name: str) -> dict[str, str]:
    """Legend labels "segment · AUC 0.81": each curve's own value of ``metric``."""
    labels = {ALL: f"{ALL} · {name} {_fmt(_summary_value(report, metric))}"}
    segments = report.tables.get("segments")
    if not shown or segments is None or metric not in segments.columns:
        return labels
    values = dict(
        segments.select(segment_label(report.by), pl.col(metric)).iter_rows()  # type: ignore[arg-type]
    )
    for seg in shown:
        labels[seg] = f"{seg} · {name} {_fmt(values.get(seg))}"
    return labels


def _unit_axis(alt: Any, field: str, title: str) -> Any:
    return alt.X(field, type="quantitative", title=title, scale=alt.Scale(domain=[0, 1]))


def _unit_y(alt: Any, field: str, title: str) -> Any:
    return alt.Y(field, type="quantitative", title=title, scale=alt.Scale(domain=[0, 1]))


def _props(
    chart: Any, title: str, subtitle: str = "", *, width: int = WIDTH, height: int = HEIGHT
) -> Any:
    """Title and size: ``width`` x ``height`` pixels in all (axes, title and legend inside,
    Vega-Lite's ``autosize="fit"``), so every chart fills its card at the same scale."""
    head: dict[str, Any] = {"text": title, "anchor": "start"}
    if subtitle:
        head["subtitle"] = subtitle
    return chart.properties(
        width=width, height=height, title=head, autosize={"type": "fit", "contains": "padding"}
    )


def _label_angle(labels: Sequence[Any]) -> int:
    """Horizontal tick labels when they are short (a bin number, a class letter)."""
    return 0 if all(len(str(v)) <= 4 for v in labels) else -40


def _defined(table: pl.DataFrame, columns: Sequence[str]) -> bool:
    return table.height > 0 and all(table.get_column(c).drop_nulls().len() > 0 for c in columns)


def _thin_note(n: int, kept: int) -> str:
    return f" Drawn with {kept:,} of its {n:,} points." if kept < n else ""


# ---------------------------------------------------------------------------------------
# Binary charts
# ---------------------------------------------------------------------------------------


def roc_chart(report: Report) -> tuple[Any, str] | None:
    """ROC curve (``roc_curve``), one line per segment shown, the chance diagonal."""
    alt = require_altair()
    if not _defined(report.curve_table("roc_curve"), ["fpr", "tpr"]):
        return None
    data, per_curve, shown = overlay(report, "roc_curve", "roc_curve_by", ["fpr", "tpr"])
    line = (
        alt.Chart()
        .mark_line(strokeWidth=1.8, interpolate="linear")
        .encode(
            x=_unit_axis(alt, "fpr", "false positive rate"),
            y=_unit_y(alt, "tpr", "true positive rate"),
            color=_color(alt, shown, _segment_values(report, shown, "auc", "AUC")),
            order=f"{ORDER}:Q",
        )
    )
    chart = alt.layer(_diagonal(alt, "fpr", "tpr"), line, data=data)
    n = report.curve_length("roc_curve")
    caption = (
        "Share of positives found (TPR) against share of negatives flagged (FPR) as the "
        "threshold falls; the diagonal is a random score."
        + _segments_note(shown, report)
        + _thin_note(n, min(n, per_curve))
    )
    subtitle = f"AUC {_fmt(_summary_value(report, 'auc'))}"
    return _props(chart, "ROC curve", subtitle), caption


def _segments_note(shown: list[str], report: Report) -> str:
    if not shown:
        return ""
    total = report.tables["segments"].height
    which = (
        "every segment" if len(shown) == total else f"the {len(shown)} largest of {total} segments"
    )
    return f" Coloured lines: {which}, each with its own value in the legend; black: all rows."


def pr_chart(report: Report) -> tuple[Any, str] | None:
    """Precision–recall curve (``pr_curve``) per segment shown, the positive rate as baseline."""
    alt = require_altair()
    if not _defined(report.curve_table("pr_curve"), ["precision", "recall"]):
        return None
    data, per_curve, shown = overlay(report, "pr_curve", "pr_curve_by", ["recall", "precision"])
    line = (
        alt.Chart()
        .mark_line(strokeWidth=1.8)
        .encode(
            x=_unit_axis(alt, "recall", "recall"),
            y=_unit_y(alt, "precision", "precision"),
            color=_color(alt, shown, _segment_values(report, shown, "average_precision", "AP")),
            order=f"{ORDER}:Q",
        )
    )
    layers = [line]
    rate = _positive_rate(report)
    if rate is not None:
        layers.insert(
            0,
            alt.Chart(alt.Data(values=[{"positive_rate": rate}]))
            .mark_rule(color=REFERENCE, strokeDash=[4, 4])
            .encode(y="positive_rate:Q"),
        )
    chart = alt.layer(*layers, data=data)
    n = report.curve_length("pr_curve")
    caption = (
        "Precision against recall as the threshold falls; the dashed line is the positive "
        "rate (a random score)." + _segments_note(shown, report) + _thin_note(n, min(n, per_curve))
    )
    subtitle = (
        f"PR-AUC {_fmt(_summary_value(report, 'pr_auc'))}, "
        f"AP {_fmt(_summary_value(report, 'average_precision'))}"
    )
    return _props(chart, "Precision–recall curve", subtitle), caption


def _positive_rate(report: Report) -> float | None:
    pos, neg = report.counts.get("positives"), report.counts.get("negatives")
    if pos is None or neg is None or pos + neg <= 0:
        return None
    return float(pos / (pos + neg))


def gain_chart(report: Report) -> tuple[Any, str] | None:
    """Cumulative gain (``gain_table``): share of positives captured vs share of rows."""
    alt = require_altair()
    table = report.tables["gain_table"]
    if not _defined(table, ["cum_pct_positives"]):
        return None
    x = _unit_axis(alt, "cum_pct_population", "share of rows (highest scores first)")
    y = _unit_y(alt, "cum_pct_positives", "share of positives captured")
    # the curve starts at (0, 0): no row taken, no positive captured
    origin = pl.DataFrame(
        {"bin": [0], "cum_pct_population": [0.0], "cum_pct_positives": [0.0]},
        schema={"bin": table.schema["bin"], "cum_pct_population": pl.Float64,
                "cum_pct_positives": pl.Float64},
    )  # fmt: skip
    path = pl.concat(
        [origin, table.select(origin.columns).cast(origin.schema)]  # type: ignore[arg-type]
    )
    line = alt.Chart(path).mark_line(color=INK).encode(x=x, y=y, order="bin:Q")
    points = alt.Chart().mark_point(filled=True, color=INK, size=30).encode(x=x, y=y)
    chart = alt.layer(
        _diagonal(alt, "cum_pct_population", "cum_pct_positives"), line, points, data=table
    )
    caption = (
        f"Rows sorted by score, cut into {table.height} bins of equal size; the curve starts "
        "at (0, 0) and the dashed diagonal is a random score."
    )
    return _props(chart, "Cumulative gain"), caption


def lift_chart(report: Report) -> tuple[Any, str] | None:
    """Lift per bin (bars) and cumulative lift (line) from ``gain_table``; 1 = random."""
    alt = require_altair()
    table = report.tables["gain_table"]
    if not _defined(table, ["lift"]):
        return None
    x = alt.X(
        "bin:O",
        title="bin (highest scores first)",
        axis=alt.Axis(labelAngle=_label_angle(table.get_column("bin").to_list())),
    )
    bars = (
        alt.Chart()
        .mark_bar(color=PALETTE[0], opacity=0.8)
        .encode(x=x, y=alt.Y("lift:Q", title="lift"))
    )
    line = alt.Chart().mark_line(point={"color": INK}, color=INK).encode(x=x, y="cum_lift:Q")
    one = (
        alt.Chart(alt.Data(values=[{"lift": 1.0}]))
        .mark_rule(color=REFERENCE, strokeDash=[4, 4])
        .encode(y="lift:Q")
    )
    chart = alt.layer(bars, line, one, data=table)
    caption = (
        "Bars: positive rate of each bin over the overall rate. Line: cumulative lift "
        "down to that bin. The dashed line (1) is a random score."
    )
    return _props(chart, "Lift"), caption


def ks_chart(report: Report) -> tuple[Any, str] | None:
    """KS chart from ``roc_curve``: share of positives and of negatives scored ≥ threshold."""
    alt = require_altair()
    # the whole data's ROC curve (thinned in Polars if long, its KS point kept)
    curve = report.curve_table("roc_curve")
    roc = curve.filter(pl.col("threshold").is_finite())
    full = report.curve_length("roc_curve")
    n_finite = roc.height if curve.height == full else full - 1
    if not _defined(roc, ["fpr", "tpr"]):
        return None
    kept = _with_order(downsample(roc, ["threshold", "tpr", "fpr"], report.max_points))
    gap = (pl.col("tpr") - pl.col("fpr")).abs()
    best = roc.filter(gap == gap.max()).head(1)
    curves = (
        alt.Chart()
        .transform_fold(["tpr", "fpr"], as_=["class", "share"])
        .transform_calculate(
            label="datum['class'] == 'tpr' ? 'positives (TPR)' : 'negatives (FPR)'"
        )
        .mark_line(strokeWidth=1.8)
        .encode(
            x=alt.X("threshold:Q", title="threshold", scale=alt.Scale(zero=False)),
            y=_unit_y(alt, "share:Q", "share of the class scored ≥ threshold"),
            color=alt.Color(
                "label:N",
                scale=alt.Scale(range=[PALETTE[0], PALETTE[1]]),
                legend=alt.Legend(title=None, orient="bottom"),
            ),
            order=f"{ORDER}:Q",
        )
    )
    rule = (
        alt.Chart(best)
        .mark_rule(color=INK, strokeDash=[2, 2])
        .encode(x="threshold:Q", y="fpr:Q", y2="tpr:Q")
    )
    chart = alt.layer(curves, rule, data=kept)
    row = best.row(0, named=True)
    caption = (
        "The KS statistic is the largest vertical gap between the two lines (dotted), at "
        f"threshold {_fmt(row['threshold'])}." + _thin_note(n_finite, kept.height)
    )
    return _props(chart, "Kolmogorov–Smirnov", f"KS {_fmt(_summary_value(report, 'ks'))}"), caption


def lorenz_chart(report: Report) -> tuple[Any, str] | None:
    """Lorenz curve (``lorenz_curve``) and the diagonal of a random score."""
    alt = require_altair()
    table = report.curve_table("lorenz_curve")
    if not _defined(table, ["positives"]):
        return None
    kept = _with_order(downsample(table, ["population", "positives"], report.max_points))
    line = (
        alt.Chart()
        .mark_line(color=INK, strokeWidth=1.8)
        .encode(
            x=_unit_axis(alt, "population", "share of rows (highest scores first)"),
            y=_unit_y(alt, "positives", "share of positives"),
            order=f"{ORDER}:Q",
        )
    )
    chart = alt.layer(_diagonal(alt, "population", "positives"), line, data=kept)
    gini = _summary_value(report, "gini")
    caption = (
        "Cumulative share of positives against cumulative share of rows; twice the area "
        "between the curve and the diagonal, over that of a perfect score, is the "
        "accuracy ratio." + _thin_note(report.curve_length("lorenz_curve"), kept.height)
    )
    return _props(chart, "Lorenz curve", f"Gini {_fmt(gini)}"), caption


def calibration_chart(report: Report) -> tuple[Any, str] | None:
    """Reliability diagram (``calibration_table``, and ``calibration_table_quantile``
    where the report has it): positive rate vs mean score per bin, one line per bin
    strategy."""
    alt = require_altair()
    table = report.tables.get("calibration_table")
    if table is None or not _defined(table, ["mean_score"]):
        return None
    parts = [table.with_columns(bins=pl.lit("uniform"))]
    quantile = report.tables.get("calibration_table_quantile")
    if quantile is not None and _defined(quantile, ["mean_score"]):
        parts.append(quantile.with_columns(bins=pl.lit("quantile")))
    data = pl.concat(parts)
    strategies = data.get_column("bins").unique(maintain_order=True).to_list()
    colour = alt.Color(
        "bins:N",
        title="bins",
        scale=alt.Scale(domain=strategies, range=[INK, PALETTE[1]][: len(strategies)]),
        legend=alt.Legend(orient="bottom"),
    )
    points = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=_unit_axis(alt, "mean_score", "mean predicted probability"),
            y=_unit_y(alt, "positive_rate", "observed positive rate"),
            color=colour,
            order="bin:Q",
        )
    )
    sizes = (
        alt.Chart()
        .mark_circle(opacity=0.3)
        .encode(
            x="mean_score:Q",
            y="positive_rate:Q",
            color=colour,
            size=alt.Size("count:Q", title="rows", legend=alt.Legend(orient="bottom")),
        )
    )
    chart = alt.layer(_diagonal(alt, "mean_score", "positive_rate"), sizes, points, data=data)
    caption = (
        f"{table.height} non-empty equal-width probability bins"
        + (f" and {quantile.height} equal-count (quantile) bins" if len(parts) > 1 else "")
        + "; circles sized by rows. Points on the diagonal are calibrated; below it the "
        "model over-predicts."
    )
    errors = f"ECE {_fmt(_summary_value(report, 'ece'))}"
    summary = report.tables.get("calibration")
    if summary is not None and len(parts) > 1:
        quantile_ece = summary.filter(metric="ece", bins="quantile").get_column("value")
        errors += f" (uniform) · {_fmt(quantile_ece.item())} (quantile)"
    return _props(chart, "Calibration", errors), caption


def threshold_chart(report: Report) -> tuple[Any, str] | None:
    """Precision, recall and F1 against the threshold (``threshold_table``)."""
    alt = require_altair()
    table = report.tables.get("threshold_table")
    if table is None or not _defined(table, ["threshold"]):
        return None
    data = _with_order(table)
    lines = (
        alt.Chart()
        .transform_fold(["precision", "recall", "f1"], as_=["metric", "value"])
        .mark_line(strokeWidth=1.8)
        .encode(
            x=alt.X("threshold:Q", title="threshold", scale=alt.Scale(zero=False)),
            y=_unit_y(alt, "value:Q", "value"),
            color=alt.Color(
                "metric:N",
                scale=alt.Scale(
                    domain=["precision", "recall", "f1"], range=[PALETTE[0], PALETTE[1], INK]
                ),
                legend=alt.Legend(title=None, orient="bottom"),
            ),
            order=f"{ORDER}:Q",
        )
    )
    t = report.options.get("threshold")
    layers = [lines]
    if t is not None:
        layers.append(
            alt.Chart(alt.Data(values=[{"threshold": t}]))
            .mark_rule(color=REFERENCE, strokeDash=[4, 4])
            .encode(x="threshold:Q")
        )
    chart = alt.layer(*layers, data=data)
    caption = (
        f"At {table.height} thresholds spread by volume (the metric layer's "
        f"n_thresholds={report.max_points}); the dashed line is the report's threshold "
        f"({_fmt(t)}) used by the summary's threshold metrics."
    )
    return _props(chart, "Precision, recall and F1 by threshold"), caption


# ---------------------------------------------------------------------------------------
# Shared: per-segment bars
# ---------------------------------------------------------------------------------------

MAX_BARS = 40
"""Most segments drawn in the per-segment chart (the worst ones)."""


def segments_chart(report: Report) -> tuple[Any, str] | None:
    """The primary metric per segment, worst first: a dot per segment with its interval.

    Dots, not bars: the axis is scaled to the values and their intervals (a bar would
    have to start at 0 and a hundred bars of AUC 0.7-0.9 would all look alike).
    """
    alt = require_altair()
    table = report.tables.get("segments")
    metric = report.primary
    if table is None or metric is None or metric not in table.columns:
        return None
    data = table.head(MAX_BARS).with_columns(segment_label(report.by))
    if data.get_column(metric).drop_nulls().len() == 0:
        return None
    info = _registry.REGISTRY.get(metric) or _registry.REGISTRY.get(metric.split("@")[0])
    order = data.get_column(SEGMENT).to_list()
    lower, upper = f"{metric}_lower", f"{metric}_upper"
    has_ci = lower in data.columns and upper in data.columns
    overall = _summary_value(report, metric)
    spread = [metric, *([lower, upper] if has_ci else [])]
    values = data.select(pl.concat_list(spread).alias("v")).explode("v").get_column("v")
    values = values.filter(values.is_finite())
    if overall is not None and math.isfinite(overall):
        values = values.append(pl.Series([float(overall)]))
    lo, hi = float(values.min()), float(values.max())  # type: ignore[arg-type]
    pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 0.05
    domain = [lo - pad, hi + pad]
    if info is not None and info.lower is not None:  # e.g. AUC never leaves [0, 1]
        domain[0] = max(domain[0], info.lower)
    if info is not None and info.upper is not None:
        domain[1] = min(domain[1], info.upper)
    y = alt.Y(
        f"{SEGMENT}:N",
        sort=order,
        title=" / ".join(report.by),
        axis=alt.Axis(labelLimit=220, grid=True, gridColor="#f0f0f0"),
    )
    x = alt.X(f"{metric}:Q", title=metric, scale=alt.Scale(domain=domain, zero=False, nice=False))
    layers = dot_layers(metric, x, y, [f"{SEGMENT}:N", f"{metric}:Q", "rows_used:Q"], has_ci)
    if overall is not None:
        layers.append(
            alt.Chart(alt.Data(values=[{metric: overall}]))
            .mark_rule(color=INK, strokeDash=[4, 4])
            .encode(x=f"{metric}:Q")
        )
    chart = _props(
        alt.layer(*layers, data=data),
        f"{metric} by segment",
        width=WIDE,
        height=max(160, 18 * data.height + 80),
    )
    direction = (
        ""
        if info is None or info.higher_is_better is None
        else (" (higher is better)" if info.higher_is_better else " (lower is better)")
    )
    caption = (
        f"{metric}{direction} of each segment, worst first"
        + (f" (the {MAX_BARS} worst of {table.height})" if table.height > MAX_BARS else "")
        + ("; lines: confidence interval" if has_ci else "")
        + "; the dashed line is the value on all rows. The axis spans the values shown."
    )
    return chart, caption


# ---------------------------------------------------------------------------------------
# Regression charts
# ---------------------------------------------------------------------------------------


def _span(table: pl.DataFrame, columns: list[str]) -> tuple[float, float]:
    """The smallest and largest finite value over ``columns`` (for a diagonal)."""
    values = table.select(pl.concat_list(columns).alias("v")).explode("v").get_column("v")
    finite = values.filter(values.is_finite())
    return float(finite.min()), float(finite.max())  # type: ignore[arg-type]


def _qq_sample(report: Report) -> pl.DataFrame:
    table = report.tables["residual_qq"]
    return downsample(table, ["theoretical", "sample"], report.max_points, by_rank=True)


HIST_BINS = 40


def _nice_step(span: float, bins: int) -> float:
    """A round bin width (1, 2 or 5 times a power of ten) giving about ``bins`` bins."""
    raw = span / bins
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw)


def error_histogram(residuals: pl.Series, bins: int = HIST_BINS) -> pl.DataFrame:
    """Counts of the errors ``prediction − actual`` (minus the residual) in round bins.

    Every row is counted once: columns ``start``, ``end`` (the bin ``[start, end)``, of
    a round width) and ``rows``; empty bins are left out.
    """
    error = (-residuals.cast(pl.Float64)).filter(residuals.is_finite())
    schema = {"start": pl.Float64, "end": pl.Float64, "rows": pl.Int64}
    if error.len() == 0:
        return pl.DataFrame(schema=schema)
    lo, hi = float(error.min()), float(error.max())  # type: ignore[arg-type]
    if hi == lo:
        return pl.DataFrame({"start": [lo - 0.5], "end": [lo + 0.5], "rows": [error.len()]})
    step = _nice_step(hi - lo, bins)
    index = (error / step).floor().cast(pl.Int64)
    counts = index.value_counts(sort=False, name="rows").sort(index.name)
    k = counts.get_column(index.name).cast(pl.Float64)
    return pl.DataFrame(
        {"start": k * step, "end": (k + 1) * step, "rows": counts.get_column("rows")},
        schema=schema,
    )


def residual_hist_chart(report: Report) -> tuple[Any, str] | None:
    """Histogram of the errors (prediction − actual, the sign of ``bias``) of every row."""
    alt = require_altair()
    table = report.tables["residual_qq"]
    if not _defined(table, ["residual"]):
        return None
    data = error_histogram(table.get_column("residual"))
    title = "error: prediction − actual"
    bars = (
        alt.Chart()
        .mark_rect(color=PALETTE[0], opacity=0.85, stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("start:Q", title=title, scale=alt.Scale(zero=False)),
            x2="end:Q",
            y=alt.Y("rows:Q", title="rows"),
        )
    )
    zero = (
        alt.Chart(alt.Data(values=[{"start": 0.0}]))
        .mark_rule(color=INK, strokeDash=[4, 4])
        .encode(x="start:Q")
    )
    chart = alt.layer(bars, zero, data=data)
    n = int(data.get_column("rows").sum())
    step = float(data.get_column("end")[0] - data.get_column("start")[0]) if n else 0.0
    caption = (
        f"Errors of all {n:,} rows, in bins of width {_fmt(step)}; right of the dashed line "
        f"(0) the model over-predicts, as a positive bias ({_fmt(_summary_value(report, 'bias'))})."
    )
    return _props(chart, "Errors (prediction − actual)"), caption


def residual_qq_chart(report: Report) -> tuple[Any, str] | None:
    """Normal QQ plot of the variance-normalised residuals (``residual_qq``).

    Both axes span the same interval, symmetric around 0 and wide enough for every point,
    so the diagonal is at 45 degrees and a skew shows as a bend to one side.
    """
    alt = require_altair()
    table = report.tables["residual_qq"]
    if not _defined(table, ["sample"]):
        return None
    data = _qq_sample(report)
    lo, hi = _span(table, ["theoretical", "sample"])
    reach = max(abs(lo), abs(hi)) or 1.0
    reach = math.ceil(reach * 1.05 * 2) / 2  # to the next half unit
    scale = alt.Scale(domain=[-reach, reach], nice=False, zero=False)
    ref = alt.Chart(
        alt.Data(
            values=[
                {"theoretical": -reach, "sample": -reach},
                {"theoretical": reach, "sample": reach},
            ]
        )
    )
    chart = alt.layer(
        ref.mark_line(color=REFERENCE, strokeDash=[4, 4]).encode(
            x=alt.X("theoretical:Q", scale=scale), y=alt.Y("sample:Q", scale=scale)
        ),
        alt.Chart()
        .mark_circle(color=INK, size=14)
        .encode(
            x=alt.X("theoretical:Q", title="normal quantile", scale=scale),
            y=alt.Y("sample:Q", title="standardised residual (actual − prediction)", scale=scale),
        ),
        data=data,
    )
    caption = (
        "Points on the diagonal: normally distributed residuals; both axes span the same "
        "range." + _thin_note(table.height, data.height)
    )
    return _props(chart, "Normal QQ plot of residuals", height=WIDTH), caption


def _conditional_chart(
    report: Report, key: str, title: str, x_title: str
) -> tuple[Any, str] | None:
    alt = require_altair()
    table = report.tables.get(key)
    if table is None or not _defined(table, ["mean_actual"]):
        return None
    lo, hi = _span(table, ["mean_actual", "mean_pred"])
    ref = alt.Chart(
        alt.Data(
            values=[{"mean_actual": lo, "mean_pred": lo}, {"mean_actual": hi, "mean_pred": hi}]
        )
    )
    chart = alt.layer(
        ref.mark_line(color=REFERENCE, strokeDash=[4, 4]).encode(
            x="mean_actual:Q", y="mean_pred:Q"
        ),
        alt.Chart()
        .mark_line(point={"color": INK}, color=INK)
        .encode(
            x=alt.X("mean_actual:Q", title="mean actual", scale=alt.Scale(zero=False)),
            y=alt.Y("mean_pred:Q", title="mean prediction", scale=alt.Scale(zero=False)),
            order="bin:Q",
        ),
        data=table,
    )
    caption = f"{table.height} bins of equal size by {x_title}; the diagonal is an unbiased model."
    return _props(chart, title), caption


def conditional_actual_chart(report: Report) -> tuple[Any, str] | None:
    """YDF's conditional ground-truth view (``conditional_table(of="actual")``)."""
    return _conditional_chart(report, "conditional_actual", "Conditional on the actual", "actual")


def conditional_pred_chart(report: Report) -> tuple[Any, str] | None:
    """YDF's conditional prediction view (``conditional_table(of="pred")``)."""
    return _conditional_chart(
        report, "conditional_pred", "Conditional on the prediction", "prediction"
    )


# ---------------------------------------------------------------------------------------
# Ranking and forecast charts
# ---------------------------------------------------------------------------------------


def _metric_lines(
    alt: Any, data: pl.DataFrame, x: str, x_title: str, metrics: Sequence[str], y_title: str
) -> Any:
    return (
        alt.Chart(data)
        .mark_line(point=True, strokeWidth=1.8)
        .encode(
            x=alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(zero=False)),
            y=alt.Y("value:Q", title=y_title),
            color=alt.Color(
                "metric:N",
                scale=alt.Scale(domain=list(metrics), range=list(PALETTE[: len(metrics)])),
                legend=alt.Legend(title=None, orient="bottom", columns=4),
            ),
        )
    )


AT_K_METRICS = tuple(
    _registry.get(name).extra.get("short", name) for name in _registry.ranked("at_k_chart")
)
"""The ranking metrics drawn against k (declared ``at_k_chart=`` at ``@register``, in that
order), by their column names in the ``at_k`` table."""


def at_k_chart(report: Report) -> tuple[Any, str] | None:
    """NDCG@k, precision@k, recall@k ... against k (``at_k``, the summary's columns)."""
    alt = require_altair()
    table = report.tables.get("at_k")
    if table is None:
        return None
    data = table.filter(pl.col("metric").is_in(AT_K_METRICS))
    if data.get_column("k").n_unique() < 2 or data.get_column("value").drop_nulls().len() == 0:
        return None
    shown = [m for m in AT_K_METRICS if m in set(data.get_column("metric"))]
    chart = _metric_lines(alt, data, "k", "cutoff k", shown, "mean over queries")
    caption = (
        "Each metric at each cutoff k, averaged over the queries"
        + (
            f" ({_fmt(report.counts.get('n_queries'))} queries"
            + (
                f"; {_fmt(report.counts.get('n_excluded'))} without a relevant item left out)"
                if report.counts.get("n_excluded")
                else ")"
            )
            if report.counts.get("n_queries") is not None
            else ""
        )
        + "."
    )
    return _props(chart, "Ranking metrics by cutoff"), caption


def per_query_chart(report: Report) -> tuple[Any, str] | None:
    """Histogram of the per-query value of the primary metric (``per_query``)."""
    alt = require_altair()
    table = report.tables.get("per_query")
    metric = report.primary
    if table is None or metric is None or metric not in table.columns:
        return None
    if table.get_column(metric).drop_nulls().len() == 0:
        return None
    chart = (
        alt.Chart(table)
        .mark_bar(color=PALETTE[0], opacity=0.85)
        .encode(
            x=alt.X(f"{metric}:Q", bin=alt.Bin(maxbins=20), title=metric),
            y=alt.Y("count():Q", title="queries"),
        )
    )
    caption = f"How {metric} spreads over the {table.height:,} queries (undefined ones left out)."
    return _props(chart, f"{metric} per query"), caption


LEAD_METRICS = _registry.ranked("lead_chart")
"""The forecast errors drawn against the lead (declared ``lead_chart=``, in that order)."""


def lead_chart(report: Report) -> tuple[Any, str] | None:
    """Forecast errors against lead time (``by_lead``)."""
    alt = require_altair()
    table = report.tables.get("by_lead")
    if table is None or "lead" not in table.columns:
        return None
    metrics = [m for m in LEAD_METRICS if m in table.columns]
    if not metrics:
        return None
    chart = (
        alt.Chart(table)
        .transform_fold(metrics, as_=["metric", "value"])
        .mark_line(point=True, strokeWidth=1.8)
        .encode(
            x=alt.X("lead:Q", title="lead (steps after the cutoff)", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("value:Q", title="error (mean over series)"),
            color=alt.Color(
                "metric:N",
                scale=alt.Scale(domain=metrics, range=list(PALETTE[: len(metrics)])),
                legend=alt.Legend(title=None, orient="bottom"),
            ),
        )
    )
    caption = (
        "Mean over series of each error at each lead time (steps after the forecast was "
        "made); bias > 0 means over-forecasting."
    )
    return _props(chart, "Error by lead time"), caption


SAMPLE_COLUMNS = 3


def series_chart(report: Report) -> tuple[Any, str] | None:
    """Actual and forecast over time for a sample of series (``series_sample``).

    One small panel per series (the worst and the best by MAE); the actual in black (its
    ``train=`` history in grey), one orange line per forecast origin (cutoff), and the
    interval as a band when ``interval=`` is given.
    """
    alt = require_altair()
    table = report.tables.get("series_sample")
    if table is None or table.height == 0 or "forecast" not in table.columns:
        return None
    series = [c for c in table.columns if c not in SAMPLE_FIXED]
    data = table.with_columns(
        pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("null") for c in series], separator=" / "
        ).alias(SEGMENT)
    )
    order = data.get_column(SEGMENT).unique(maintain_order=True).to_list()
    n = len(order)
    columns = min(SAMPLE_COLUMNS, n)
    panel_w = (WIDE - 40) // columns - 70
    x = alt.X("time:T" if data.schema["time"].is_temporal() else "time:Q", title=None)
    lines = [
        alt.Chart()
        .transform_filter("datum.part == 'history'")
        .mark_line(color=REFERENCE, strokeWidth=1.4)
        .encode(x=x, y=alt.Y("actual:Q", title=None, scale=alt.Scale(zero=False))),
    ]
    detail = {"detail": "cutoff:N"} if "cutoff" in data.columns else {}
    forecast_rows = alt.Chart().transform_filter("datum.part == 'forecast'")
    if "lower" in data.columns:
        lines.append(
            forecast_rows.mark_area(color=PALETTE[1], opacity=0.18).encode(
                x=x, y="lower:Q", y2="upper:Q", **detail
            )
        )
    lines += [
        forecast_rows.mark_line(color=INK, strokeWidth=1.6, point={"size": 14, "color": INK})
        .transform_aggregate(actual="mean(actual)", groupby=["time"])
        .encode(x=x, y="actual:Q"),
        forecast_rows.mark_line(color=PALETTE[1], strokeWidth=1.6).encode(
            x=x, y="forecast:Q", **detail
        ),
    ]
    chart = (
        alt.layer(*lines)
        .properties(width=panel_w, height=150)
        .facet(
            facet=alt.Facet(f"{SEGMENT}:N", sort=order, title=None),
            columns=columns,
            data=data,
        )
        .resolve_scale(y="independent", x="independent")
        .properties(title={"text": "Actual and forecast, a sample of series", "anchor": "start"})
    )
    worst = min(n, SERIES_SAMPLE // 2)
    caption = (
        f"{n} series: "
        + (
            "every one"
            if n < SERIES_SAMPLE
            else f"the {worst} of worst MAE (first) and the {n - worst} of best"
        )
        + ". Black: actual; orange: forecast"
        + (", one line per forecast origin" if detail else "")
        + ("; band: the forecast interval" if "lower" in data.columns else "")
        + ("; grey: the end of the training history" if (data["part"] == "history").any() else "")
        + "."
    )
    return chart, caption


def coverage_chart(report: Report) -> tuple[Any, str] | None:
    """Share of actuals inside the forecast interval: by lead time, or per series."""
    alt = require_altair()
    overall = _summary_value(report, "coverage")
    by_lead = report.tables.get("by_lead")
    per_series = report.tables.get("per_series")
    rule = []
    if overall is not None:
        rule = [
            alt.Chart(alt.Data(values=[{"coverage": overall}]))
            .mark_rule(color=INK, strokeDash=[4, 4])
            .encode(y="coverage:Q")
        ]
    if by_lead is not None and "coverage" in by_lead.columns and "lead" in by_lead.columns:
        if by_lead.get_column("coverage").drop_nulls().len() == 0:
            return None
        line = (
            alt.Chart(by_lead)
            .mark_line(point=True, color=PALETTE[0], strokeWidth=1.8)
            .encode(
                x=alt.X(
                    "lead:Q", title="lead (steps after the cutoff)", axis=alt.Axis(tickMinStep=1)
                ),
                y=_unit_y(alt, "coverage:Q", "share of actuals inside the interval"),
            )
        )
        chart = alt.layer(line, *rule)
        caption = (
            "Share of actuals inside the forecast interval at each lead time (mean over "
            f"series); the dashed line is the overall coverage ({_fmt(overall)}, mean over "
            "series). Compare with the interval's nominal level."
        )
        return _props(chart, "Interval coverage by lead time"), caption
    if per_series is None or "coverage" not in per_series.columns:
        return None
    if per_series.get_column("coverage").drop_nulls().len() == 0:
        return None
    bars = (
        alt.Chart(per_series)
        .mark_bar(color=PALETTE[0], opacity=0.85)
        .encode(
            x=alt.X("coverage:Q", bin=alt.Bin(maxbins=20, extent=[0, 1]), title="coverage"),
            y=alt.Y("count():Q", title="series"),
        )
    )
    caption = (
        f"How the interval's coverage spreads over the {per_series.height:,} series; "
        f"the dashed line is their mean ({_fmt(overall)}). Compare with the interval's "
        "nominal level."
    )
    rule = [
        alt.Chart(alt.Data(values=[{"coverage": overall}]))
        .mark_rule(color=INK, strokeDash=[4, 4])
        .encode(x="coverage:Q")
        for _ in rule
    ]
    return _props(alt.layer(bars, *rule), "Interval coverage per series"), caption


# ---------------------------------------------------------------------------------------
# Multiclass charts
# ---------------------------------------------------------------------------------------

PREDICTED = "predicted_"


def confusion_chart(report: Report) -> tuple[Any, str] | None:
    """Heat map of ``multiclass_confusion_matrix`` (counts; shade = share of the true class)."""
    alt = require_altair()
    table = report.tables.get("confusion_matrix")
    if table is None or table.height == 0 or table.height > 40:
        return None
    data = table
    order = table.get_column("truth").cast(pl.String).to_list()
    base = (
        alt.Chart()
        .transform_fold(
            [c for c in table.columns if c.startswith(PREDICTED)], as_=["predicted", "weight"]
        )
        .transform_calculate(predicted=f"substring(datum.predicted, {len(PREDICTED)})")
        .transform_joinaggregate(row_total="sum(weight)", groupby=["truth"])
        .transform_calculate(share="datum.row_total > 0 ? datum.weight / datum.row_total : 0")
    )
    x = alt.X(
        "predicted:N",
        sort=order,
        title="predicted class",
        axis=alt.Axis(labelAngle=_label_angle(order)),
    )
    y = alt.Y("truth:N", sort=order, title="true class")
    rect = base.mark_rect().encode(
        x=x,
        y=y,
        color=alt.Color(
            "share:Q",
            scale=alt.Scale(scheme="blues", domain=[0, 1]),
            legend=alt.Legend(title="share of row", orient="bottom"),
        ),
    )
    text = base.mark_text(fontSize=11).encode(
        x=x,
        y=y,
        text=alt.Text("weight:Q", format=",.4~g"),
        color=alt.condition("datum.share > 0.5", alt.value("white"), alt.value(INK)),
    )
    chart = _props(alt.layer(rect, text, data=data), "Confusion matrix", height=WIDTH)
    caption = (
        "Weighted counts; rows are the true class, columns the prediction. The shade is the "
        "share of the true class (the recall on the diagonal)."
    )
    return chart, caption


def per_class_chart(report: Report) -> tuple[Any, str] | None:
    """Precision, recall and F1 of each class (``per_class``)."""
    alt = require_altair()
    table = report.tables.get("per_class")
    if table is None or table.height == 0:
        return None
    metrics = [m for m in ("precision", "recall", "f1") if m in table.columns]
    data = table.with_columns(pl.col("class").cast(pl.String))
    chart = (
        alt.Chart(data)
        .transform_fold(metrics, as_=["metric", "value"])
        .mark_bar()
        .encode(
            x=alt.X(
                "class:N",
                title="class",
                sort=data.get_column("class").to_list(),
                axis=alt.Axis(labelAngle=_label_angle(data.get_column("class").to_list())),
            ),
            xOffset=alt.XOffset("metric:N", sort=metrics),
            y=_unit_y(alt, "value:Q", "value"),
            color=alt.Color(
                "metric:N",
                scale=alt.Scale(domain=metrics, range=[PALETTE[0], PALETTE[1], INK]),
                legend=alt.Legend(title=None, orient="bottom"),
            ),
        )
    )
    caption = "One-vs-rest precision, recall and F1 of each class (undefined ones left out)."
    return _props(chart, "Per class"), caption


SAMPLE_FIXED = ("time", "cutoff", "actual", "forecast", "lower", "upper", "part")
"""The columns of ``series_sample`` that are not series keys."""

COMPARE_CHARTS = [
    ChartSpec("compare", "Per-unit differences", compare_chart),
    ChartSpec("compare_wtl", "Wins, ties and losses", wtl_chart),
]
"""The comparison section's charts (with several systems), last in every task's list."""

CHARTS: dict[str, list[ChartSpec]] = {
    "binary": [
        ChartSpec("roc", "ROC curve", roc_chart),
        ChartSpec("pr", "Precision–recall curve", pr_chart),
        ChartSpec("gain", "Cumulative gain", gain_chart),
        ChartSpec("lift", "Lift", lift_chart),
        ChartSpec("ks", "Kolmogorov–Smirnov", ks_chart),
        ChartSpec("lorenz", "Lorenz curve", lorenz_chart),
        ChartSpec("calibration", "Calibration", calibration_chart),
        ChartSpec("threshold", "Threshold", threshold_chart),
        ChartSpec("segments", "By segment", segments_chart),
        ChartSpec("trend", "Over time", trend_chart),
        ChartSpec("fairness", "Fairness", fairness_chart),
        *COMPARE_CHARTS,
    ],
    "regression": [
        ChartSpec("residual_hist", "Residuals", residual_hist_chart),
        ChartSpec("residual_qq", "Normal QQ plot", residual_qq_chart),
        ChartSpec("conditional_actual", "Conditional on the actual", conditional_actual_chart),
        ChartSpec("conditional_pred", "Conditional on the prediction", conditional_pred_chart),
        ChartSpec("segments", "By segment", segments_chart),
        ChartSpec("trend", "Over time", trend_chart),
        *COMPARE_CHARTS,
    ],
    "multiclass": [
        ChartSpec("confusion", "Confusion matrix", confusion_chart),
        ChartSpec("per_class", "Per class", per_class_chart),
        ChartSpec("segments", "By segment", segments_chart),
        ChartSpec("trend", "Over time", trend_chart),
        *COMPARE_CHARTS,
    ],
    "ranking": [
        ChartSpec("at_k", "Ranking metrics by cutoff", at_k_chart),
        ChartSpec("per_query", "Per query", per_query_chart),
        ChartSpec("segments", "By segment", segments_chart),
        ChartSpec("trend", "Over time", trend_chart),
        *COMPARE_CHARTS,
    ],
    "forecast": [
        ChartSpec("series", "Actual and forecast", series_chart),
        ChartSpec("lead", "Error by lead time", lead_chart),
        ChartSpec("coverage", "Interval coverage", coverage_chart),
        ChartSpec("segments", "By segment", segments_chart),
        ChartSpec("trend", "Over time", trend_chart),
        *COMPARE_CHARTS,
    ],
}
"""The charts of each task, in the order the report shows them."""


def build_charts(report: Report) -> tuple[dict[str, Any], dict[str, str]]:
    """Every chart of the report's task that its tables allow, and their captions."""
    require_altair()
    charts: dict[str, Any] = {}
    captions: dict[str, str] = {}
    for spec in CHARTS.get(report.task, []):
        made = spec.build(report)
        if made is None:
            continue
        chart, captions[spec.name] = made
        # type sizes that read next to the page's text (Vega-Lite's defaults are 10-11 px)
        charts[spec.name] = (
            chart.configure_axis(labelFontSize=11, titleFontSize=12)
            .configure_legend(labelFontSize=11, titleFontSize=11)
            .configure_title(fontSize=14, subtitleFontSize=12)
            .configure_header(labelFontSize=12)
        )
    return charts, captions


def to_svg(chart: Any) -> str:
    """Render one chart to an SVG string with vl-convert (no browser, no network)."""
    try:
        import vl_convert as vlc
    except ModuleNotFoundError as error:
        raise PlotExtraMissing(PLOT_EXTRA) from error
    # the spec is checked against the Vega-Lite schema in the tests; not again at each render
    return str(vlc.vegalite_to_svg(chart.to_dict(validate=False)))
