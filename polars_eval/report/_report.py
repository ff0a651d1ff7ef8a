"""The report object: tables (DataFrames), charts (Altair) and a self-contained HTML page."""

from __future__ import annotations

import datetime as _dt
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import polars as pl

from polars_eval._params import check_count
from polars_eval.exceptions import InvalidParameterError
from polars_eval.report import compare as _compare
from polars_eval.report import tables as _tables

DEFAULT_CI: Any = object()
"""``ci=`` not given: the closed-form intervals where the task has them, else none."""


class Report:
    """An evaluation report: what ``df.eval.report(...)`` returns.

    Attributes
    ----------
    task
        The task evaluated (``"binary"``, ``"regression"`` ...).
    tables
        Every table of the report by name, as the metric layer returned it (``summary``,
        ``segments`` sorted worst first, ``roc_curve`` ...) plus ``data``, the row counts:
        ``rows``, ``rows_null`` (skipped: a null in an input), ``rows_zero_weight``,
        ``rows_used``.
    charts
        The Altair charts by name (built on first access; needs the ``plot`` extra).
    counts
        The row counts of the ``data`` table as a dict (and for ranking ``n_queries``,
        ``n_excluded``).
    notes
        What the reader should know: undefined values (the warnings of the metric layer,
        collected instead of raised), missing tables.
    captions
        One sentence under each chart (filled when the charts are built): what it shows,
        which segments, how many of a curve's points are drawn.
    sections
        The settings of the optional sections by name (``"compare"``: the baseline, the
        test, the correction, the level and each metric's direction).

    Methods: ``to_html(path)`` writes one self-contained HTML file (charts inlined as SVG,
    no script and no network fetch when it is opened), ``html()`` returns it as a string,
    ``svgs()`` the rendered charts, and ``_repr_html_`` shows the report in a notebook.
    Without the ``plot`` extra (altair, vl-convert-python) the page and the notebook view
    still come out, with every table and a line saying how to add the charts;
    ``charts`` and ``svgs()`` raise :class:`ModuleNotFoundError` saying the same.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0, 1], "p": [0.2, 0.9, 0.4, 0.3, None]})
    >>> report = df.eval.report("binary", label="y", score="p")
    >>> report.counts["rows"], report.counts["rows_null"], report.counts["rows_used"]
    (5, 1, 4)
    >>> report.tables["roc_curve"].height  # (inf, 0, 0) and one point per distinct score
    5
    """

    def __init__(
        self,
        task: str,
        built: _tables.Built,
        *,
        by: list[str],
        title: str | None,
        max_points: int,
        max_segments: int,
    ) -> None:
        self.task = task
        self.tables: MutableMapping[str, pl.DataFrame] = built.tables
        self.metrics = built.metrics
        self.metric_notes = list(built.metric_notes)
        self._curves = built.curves
        self.counts: dict[str, Any] = built.counts
        self.primary = built.primary
        self.inputs = built.inputs
        self.options = built.options
        self.notes: list[str] = list(built.notes)
        self.key_metrics: list[str] = list(built.key_metrics)
        self.key_counts: list[str] = list(built.key_counts)
        self.by = by
        self.title = title or f"{_tables.task_spec(task).description.capitalize()} evaluation"
        self.max_points = max_points
        self.max_segments = max_segments
        self.created = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        self._charts: dict[str, Any] | None = None
        self.captions: dict[str, str] = {}
        self._svgs: dict[str, str] | None = None
        self.sections: dict[str, Any] = built.sections

    def curve_table(self, name: str, labels: list[str] | None = None) -> pl.DataFrame:
        """The data of curve ``name`` for a chart, thinned inside Polars where it is long.

        A curve finalized from a kept threshold state (binary) comes with at most
        ``PRE_THIN * max_points`` evenly spaced points per curve, its first and last always
        among them (the charts then choose the drawn points by length along the curve);
        any other curve is ``tables[name]`` itself. With ``labels`` (a per-segment curve):
        only the rows of those segments, with a ``segment`` column.
        """
        from polars_eval.report.charts import PRE_THIN

        if self._curves is not None and name in self._curves.names:
            return self._curves.thinned(name, PRE_THIN * self.max_points, labels)
        table = self.tables[name]
        if labels is None:
            return table
        label = _tables.segment_label(self.by)
        return table.with_columns(label).filter(pl.col(_tables.SEGMENT).is_in(labels))

    def curve_length(self, name: str) -> int:
        """The number of points of the whole data's curve ``name`` (before any thinning)."""
        if self._curves is not None and name in self._curves.names:
            return self._curves.length(name)
        return self.tables[name].height

    @property
    def charts(self) -> dict[str, Any]:
        """The charts by name (Altair); only those the data allows (e.g. no ROC of one class)."""
        if self._charts is None:
            from polars_eval.report.charts import build_charts

            self._charts, self.captions = build_charts(self)
        return self._charts

    def svgs(self) -> dict[str, str]:
        """Every chart rendered to SVG (cached)."""
        if self._svgs is None:
            from polars_eval.report.charts import to_svg

            self._svgs = {name: to_svg(chart) for name, chart in self.charts.items()}
        return self._svgs

    def html(self) -> str:
        """The report as one HTML document (a string)."""
        from polars_eval.report.html import render

        return render(self, full=True)

    def to_html(self, path: str | Path) -> Path:
        """Write the report to ``path`` as one self-contained HTML file; the path written."""
        target = Path(path)
        target.write_text(self.html(), encoding="utf-8")
        return target.resolve()

    def _repr_html_(self) -> str:
        from polars_eval.report.html import render

        return render(self, full=False)

    def __repr__(self) -> str:
        names = ", ".join(self.tables)
        return (
            f"<polars_eval Report task={self.task!r} rows={self.counts.get('rows')} "
            f"tables=[{names}]>"
        )


def make_report(
    frame: pl.DataFrame | pl.LazyFrame,
    task: str,
    arguments: dict[str, Any],
    *,
    weight: Any,
    by: Any,
    validate: bool,
    title: str | None,
    max_points: int,
    max_segments: int,
    options: dict[str, Any],
    window: dict[str, Any] | None = None,
) -> Report:
    """Compute the tables of ``task`` and wrap them in a :class:`Report`.

    ``window``: ``time``, ``every``, ``period``, ``offset``, ``reference`` of the trend
    section (SPEC §13; :mod:`polars_eval.report.trend`).
    """
    spec = _tables.task_spec(task)
    check_count("max_points", max_points, 2)
    check_count("max_segments", max_segments, 1)
    by_cols = _tables.by_columns(by)
    missing = [name for name in spec.data_args if arguments.get(name) is None]
    if missing:
        raise InvalidParameterError(
            f"report(task={task!r}) needs the columns {', '.join(spec.data_args)}; "
            f"missing: {', '.join(missing)}"
        )
    options = dict(options)
    # intervals are on by default where the task has closed forms (binary, regression)
    ci = options.pop("ci", DEFAULT_CI)
    level = options.pop("level", 0.95)
    sensitive = options.pop("sensitive", None)
    whole = frame
    arguments = dict(arguments)
    # several systems (SPEC §14): the baseline's report and a comparison section
    frame, comparison = _compare.split(frame, task, arguments, options)
    data = [arguments[name] for name in spec.data_args]
    if ci is True:
        ci = "closed"
    from polars_eval.report import trend as _trend

    trend = _trend.take_options(frame, task, window or {}, options, by_cols)
    task_options = dict(options)  # the builder may take some out
    built = spec.load("report")(
        frame,
        *data,
        weight=weight,
        by=by_cols,
        validate=validate,
        max_points=max_points,
        options=options,
    )
    if ci is DEFAULT_CI:
        ci = "closed" if built.metric_args else None
    if ci and built.intervals is not None:
        built.intervals(ci, level)
    elif ci:
        _tables.add_intervals(frame, built, by_cols, ci, level)
    if sensitive is not None:  # the fairness section (SPEC §15)
        from polars_eval.report.fairness import add_fairness

        add_fairness(
            frame,
            built,
            task,
            arguments,
            sensitive=sensitive,
            weight=weight,
            validate=validate,
            ci=ci,
            level=level,
        )
    if trend is not None:  # the trend section (SPEC §13)
        _trend.add_trend(
            frame,
            built,
            task,
            arguments,
            trend,
            options=task_options,
            weight=weight,
            ci=ci,
            level=level,
        )
    if comparison is not None:
        _compare.add_compare(
            whole, built, comparison, weight=weight, validate=validate, level=level
        )
    return Report(
        task, built, by=by_cols, title=title, max_points=max_points, max_segments=max_segments
    )
