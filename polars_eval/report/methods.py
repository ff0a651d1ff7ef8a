"""``df.eval.report``: an evaluation report of one task (SPEC §9)."""

from __future__ import annotations

from typing import Any

import polars as pl

from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError


class ReportMethods:
    """``df.eval.report``: tables, charts and a self-contained HTML page of one evaluation."""

    _frame: pl.DataFrame | pl.LazyFrame

    def report(
        self,
        task: str = "binary",
        *,
        label: IntoExpr | None = None,
        score: IntoExpr | None = None,
        by: str | list[str] | None = None,
        weight: IntoExpr | None = None,
        title: str | None = None,
        max_points: int = 500,
        max_segments: int = 10,
        validate: bool = True,
        time: str | None = None,
        every: str | int | None = None,
        period: str | int | None = None,
        offset: str | int | None = None,
        reference: pl.DataFrame | pl.LazyFrame | None = None,
        **options: Any,
    ) -> Any:
        """An evaluation report: tables (DataFrames), charts (Altair) and ``.to_html(path)``.

        Every table is what the metric layer returns (``df.eval.binary``,
        ``df.eval.roc_curve`` ...), computed once. A binary report sorts the rows by score
        once: the threshold state of the whole data and of every segment comes from that
        sort, and every metric, table, curve and closed-form interval is finalized from
        those states; its long curves (``roc_curve``, ``pr_curve``, ``lorenz_curve``,
        ``roc_curve_by``, ``pr_curve_by``) are computed when first read from
        ``report.tables``. The charts get curves thinned inside Polars (evenly spaced
        points, the first and last kept, then at most ``max_points`` chosen by length
        along the curve), never in ``report.tables``. With ``by``, the segment table is sorted worst first and the ROC
        and PR charts overlay the ``max_segments`` largest segments.

        Parameters
        ----------
        task
            ``"binary"``, or another task whose metric family is installed:
            ``"multiclass"``, ``"regression"``, ``"ranking"``, ``"forecast"``.
        label, score
            The truth and the model's output. The task's own argument names are accepted
            too: regression ``actual=``/``pred=``, ranking ``relevance=``/``score=``,
            forecast ``actual=``/``forecast=``, multiclass ``label=`` with ``pred=``
            and/or ``proba=`` (``score=`` is taken as ``pred=``).
        by
            Segment column(s): per-segment table, bars and curves.
        weight
            Row weights (zero ignores a row).
        title
            The page title (default: "<Task> evaluation").
        max_points
            Most points drawn per curve (at least 2).
        max_segments
            Most segments overlaid in the ROC and PR charts and the trend chart.
        validate
            Check the data as the metric methods do (``validate=False`` to skip).
        time, every, period, offset
            Add the trend section (SPEC §13): the windows of ``group_by_dynamic(time,
            every=, period=, offset=)`` as every task method takes them (``time``: a Date,
            Datetime or integer column; a forecast's windows follow its own ``time=``). Table
            ``trend``: the task's key metrics per window for all rows and each ``by``
            segment, exactly what ``df.eval.<task>(..., time=, every=, period=, offset=,
            grouping_sets=[[], by])`` returns, with ``<metric>_lower`` / ``_upper`` per
            window when the report has intervals (the metrics with a closed form: AUC,
            PR AUC, RMSE); a chart of each metric per window, one line for all rows and
            one for each of the ``max_segments`` largest segments, the intervals as bands.
        reference
            With ``every``: a reference sample (DataFrame or LazyFrame holding the score
            column) for the population stability index of the score per window (table
            ``psi``: ``df.eval.psi(score, reference=, time=, every=, ...)`` of all rows, 10
            bins), drawn beside the metrics.
        **options
            Options of the task: binary ``pos_label``, ``threshold`` (0.5),
            ``probability`` (True; False leaves out logloss, Brier and calibration),
            ``bins`` (10, gain and calibration), ``baseline``, ``sensitive`` (a column or
            list of columns: adds the fairness section, SPEC §15 — tables ``fairness``
            and ``disparity`` as ``df.eval.fairness`` / ``df.eval.disparity`` give them
            over all rows, with bootstrap intervals when the report has intervals, and a
            chart of each metric per group); regression
            ``zero_actuals``, ``bins``, ``baseline``; multiclass ``pred``, ``proba``,
            ``classes``, ``k``, ``baseline``; ranking ``query`` (required), ``k``
            (cutoffs, default 1, 2, 3, 5, 10, 20) and the options of
            ``df.eval.ranking``; forecast ``series``, ``time`` (required), ``cutoff``
            (adds errors by lead, and ``by="lead"``), ``interval`` (adds coverage),
            ``train``, ``season_length`` ... as ``df.eval.forecast``. Intervals: by default
            (``ci="closed"``, also ``ci=True``) the summary and segment metrics of a
            binary or regression report carry their closed-form confidence intervals
            (Wilson, Hanley–McNeil, logistic, chi-square; ``level=0.95``), one more pass
            over the data; ``ci=None`` leaves them out; ``ci="bootstrap"`` also
            bootstraps the primary metric when it has no closed form.

            Several systems (SPEC §14): the task's system argument a list of columns, one
            per system (``score=["bm25", "dense"]`` for ranking and binary, ``forecast=``,
            ``pred=`` for regression and multiclass: the wide form of
            ``df.eval.compare``), or ``system=`` a column naming each row's system (the
            long form). The report is then the baseline's (the first system, or
            ``baseline=`` naming one; a bool ``baseline=`` keeps its meaning above) with a
            comparison section: table ``compare``, exactly ``df.eval.compare`` with the
            same columns and task options over every unit (``by`` segments are not split,
            ``weight=`` is not used by it: a note says so), and table ``compare_units``,
            the per-unit differences its tests read (one row per metric, system and
            unit, sorted); a chart of those differences sorted (one line per system, a
            panel for each of up to 4 metrics, the primary first) and one of the wins,
            ties and losses. ``test=``, ``correction=``, ``n_resamples=``, ``seed=``,
            ``missing=``, ``unit=`` and ``metrics=`` go to ``df.eval.compare``, as does
            ``level=``. One system in the list, or a ``system=`` column with one value,
            is an error (as in ``df.eval.compare``), as is a comparison option without
            several systems, or a ``baseline=`` that is none of them
            (``InvalidParameterError`` naming it).

        Returns
        -------
        Report
            ``.tables``, ``.charts``, ``.notes``, ``.to_html(path)``, ``_repr_html_()``.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
        >>> report = df.eval.report("binary", label="y", score="p")
        >>> report.tables["summary"]["auc"].item()
        0.75
        >>> report.counts["rows_used"]
        4

        Two systems: the report of the first, with the comparison section.

        >>> df = df.with_columns(q=pl.Series([0.3, 0.2, 0.6, 0.7]))
        >>> both = df.eval.report("binary", label="y", score=["p", "q"], metrics=["brier"])
        >>> both.inputs["score"], both.tables["compare"].select("system", "wins", "losses").row(0)
        ('p', ('q', 2, 2))
        """
        from polars_eval.report._report import make_report
        from polars_eval.report.tables import task_spec

        spec = task_spec(task)
        arguments: dict[str, Any] = {}
        generics = [label, score]
        if len(spec.data_args) == 1 and score is not None:
            # multiclass: the model's output is pred= (class ids)
            if options.get("pred") is not None:
                raise InvalidParameterError("give the predictions once (as pred= or score=)")
            options["pred"] = score
        for name, generic in zip(spec.data_args, generics[: len(spec.data_args)], strict=True):
            own = options.pop(name, None) if name not in ("label", "score") else None
            if own is not None and generic is not None:
                raise InvalidParameterError(
                    f"give the column of {name!r} once (as {name}= or as the generic argument)"
                )
            arguments[name] = own if own is not None else generic
        if task == "forecast" and time is not None:
            options["time"] = time  # the forecast's own time column (its windows follow it)
        return make_report(
            self._frame,
            task,
            arguments,
            weight=weight,
            by=by,
            validate=validate,
            title=title,
            max_points=max_points,
            max_segments=max_segments,
            options=options,
            window={
                "time": time,
                "every": every,
                "period": period,
                "offset": offset,
                "reference": reference,
            },
        )
