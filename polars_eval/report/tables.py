"""The tables of a report, computed by the metric layer and nothing else.

Every table is the DataFrame a namespace method returns (``df.eval.binary``,
``df.eval.roc_curve`` ...), computed once: the lazy queries of one task are built first
and collected together with :func:`polars.collect_all`, so a ``LazyFrame`` scanned from
files is read in one go and the queries run in parallel. The binary task computes the
threshold states of the whole data and of each segment once and finalizes its metrics,
tables and curves from them (:mod:`polars_eval.report._states`). Charts and HTML only read these tables; nothing is
recomputed there.

A task is one :class:`TaskSpec` in :data:`TASKS`: how to compute its tables, which metric
orders its segments (worst first), which charts it draws. Adding a task (regression,
ranking, forecast) is adding one builder function and one entry; a task whose metric
family is not installed is simply absent.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.planner import normalize_by
from polars_eval._core.spec import nan_or
from polars_eval._core.table import Specs, Table, run
from polars_eval._core.tasks import TASKS, Task
from polars_eval._exprs import binary_label, count_true, to_expr, to_float
from polars_eval._params import check_positive_int
from polars_eval._typing import IntoExpr
from polars_eval._validate import column_problems
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)
from polars_eval.metrics import binary as binary_family
from polars_eval.metrics import calibration as calibration_family
from polars_eval.metrics._curve import thresholds
from polars_eval.report import _states
from polars_eval.report.calibration import calibration_tables_soon
from polars_eval.tasks.binary import binary_table, summary_infos

SEGMENT = _states.SEGMENT
"""Name of the column that labels a segment (its ``by`` values joined) in chart data."""

segment_label = _states.segment_label

ALL = "all rows"
"""Segment label of the whole-data curve in overlaid charts."""


@dataclass
class Built:
    """What a task builder returns: its tables and what the report says about them."""

    tables: dict[str, pl.DataFrame]
    counts: dict[str, Any]
    primary: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the arguments of the task's registered metric functions, for their intervals
    metric_args: dict[str, Any] = field(default_factory=dict)
    # the metrics the page's per-segment table shows (the primary first); the full table
    # with every metric is one click away
    key_metrics: list[str] = field(default_factory=list)
    # the count columns of the per-segment table shown next to the key metrics
    key_counts: list[str] = field(default_factory=list)
    # the long curves finalized from kept states (binary), for thinned chart data
    curves: Any = None
    # the table ``df.eval.<task>(..., by=by)`` returns, when the builder computed exactly
    # that on the way (the CLI then prints it instead of computing it again), and the
    # undefined-value warnings of its query
    metrics: pl.DataFrame | None = None
    metric_notes: list[str] = field(default_factory=list)
    # adds the intervals itself (from what the tables were computed with), given ci, level
    intervals: Callable[[str, float], None] | None = None
    # the settings of the optional sections (the comparison of systems), by name
    sections: dict[str, Any] = field(default_factory=dict)


def _name(value: IntoExpr | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return value.meta.output_name()
    except Exception:  # noqa: BLE001 - an expression without one root column
        return str(value)


def collect_quietly(queries: dict[str, pl.LazyFrame], notes: list[str]) -> dict[str, pl.DataFrame]:
    """Collect every query at once; warnings about undefined values become report notes.

    Other warnings are passed on unchanged.
    """
    frames = _quietly(lambda: pl.collect_all(list(queries.values())), notes)
    return dict(zip(queries, frames, strict=True))


def sort_worst_first(table: pl.DataFrame, metric: str | None) -> pl.DataFrame:
    """Segments sorted worst first by ``metric`` (its registered direction); nulls last."""
    if metric is None or metric not in table.columns:
        return table
    info = _registry.REGISTRY.get(metric)
    higher_is_better = (
        True if info is None or info.higher_is_better is None else info.higher_is_better
    )
    return table.sort(metric, descending=not higher_is_better, nulls_last=True, maintain_order=True)


def _row_counts(
    lf: pl.LazyFrame,
    inputs: Sequence[IntoExpr],
    weight: IntoExpr | None,
    by: list[str],
    positives: pl.Expr | None = None,
) -> pl.LazyFrame:
    """Rows, rows skipped for a null input, rows of zero weight, rows used (per segment)."""
    aggs = _row_count_aggs(inputs, weight, positives)
    if by:
        return lf.group_by(by).agg(aggs).sort(by, nulls_last=True)
    return lf.select(aggs)


def _row_count_aggs(
    inputs: Sequence[IntoExpr], weight: IntoExpr | None, positives: pl.Expr | None = None
) -> list[pl.Expr]:
    """The aggregations of :func:`_row_counts` (and the weighted classes, given ``positives``)."""
    exprs = [to_expr(x) for x in inputs] + ([to_expr(weight)] if weight is not None else [])
    has_null = pl.any_horizontal([e.is_null() for e in exprs])
    zero_weight = (~has_null & (to_float(weight) == 0.0)) if weight is not None else pl.lit(False)
    used = ~has_null & ~zero_weight
    aggs = [
        pl.len().cast(pl.Int64).alias("rows"),
        count_true(has_null).alias("rows_null"),
        count_true(zero_weight).alias("rows_zero_weight"),
        count_true(used).alias("rows_used"),
    ]
    if positives is not None:
        w = to_float(weight) if weight is not None else pl.lit(1.0)
        aggs += [
            (w * positives).filter(used).sum().alias("positives"),
            (w * (1.0 - positives)).filter(used).sum().alias("negatives"),
        ]
    return aggs


def check_columns(lf: pl.LazyFrame, args: dict[str, Any], inputs: Any, by: Sequence[str]) -> None:
    """Missing columns and wrong dtypes, as the namespace reports them, before any query."""
    schema = lf.collect_schema()
    problems = column_problems(schema, args, inputs)
    problems += [f'column "{b}" (argument by=) not found' for b in by if b not in schema]
    if problems:
        raise DataValidationError(problems[0])


def _check_options(task: str, options: dict[str, Any], allowed: Sequence[str]) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InvalidParameterError(
            f"report(task={task!r}) does not take {', '.join(map(repr, unknown))}; "
            f"options of this task: {', '.join(sorted(allowed))}"
        )


# ---------------------------------------------------------------------------------------
# Binary classification
# ---------------------------------------------------------------------------------------

BINARY_OPTIONS = ("pos_label", "threshold", "probability", "bins", "baseline", "sensitive")
"""The binary report's options (``sensitive``, the fairness section, is taken by
``make_report`` before the builder runs)."""
COUNT_COLUMNS = ("rows", "rows_null", "rows_zero_weight", "rows_used", "positives", "negatives")
CALIBRATION = "__pe_calibration"


def build_binary(
    frame: pl.DataFrame | pl.LazyFrame,
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None,
    by: list[str],
    validate: bool,
    max_points: int,
    options: dict[str, Any],
) -> Built:
    """Summary, segments, curves and tables of a binary classifier, from their states.

    Tables: ``data`` (row counts), ``summary`` (``df.eval.binary``), ``segments``
    (``df.eval.binary(by=...)`` with the segments' row counts, worst AUC first),
    ``roc_curve``, ``pr_curve``, ``threshold_table`` (``n_thresholds=max_points``: the
    metric layer's own volume-quantile thresholds), ``lorenz_curve``, ``gain_table``,
    ``calibration_table`` (only for probabilities), and with ``by`` the per-segment
    ``roc_curve_by`` / ``pr_curve_by``: each equal to the namespace method's result.

    The summary and the segments are the table of ``df.eval.binary`` itself
    (:func:`~polars_eval.tasks.binary.binary_table`, run by the one runner), once for
    the whole data and once per segment, each keeping its threshold state and its
    confusion counts as columns (``Specs.keep``: the state out of the same sort as the
    sort-based metrics, the counts the threshold metrics' own) and the row counts
    (``Specs.sums``). Every curve and table is the metric layer's finalizer over the
    kept states; the long curves are finalized when first read from ``report.tables``.
    """
    _check_options("binary", options, BINARY_OPTIONS)
    pos_label = options.get("pos_label")
    threshold = options.get("threshold", 0.5)
    probability = options.get("probability", True)
    bins = options.get("bins", 10)
    check_positive_int("bins", bins)
    baseline = bool(options.get("baseline"))
    lf = frame.lazy()
    common: dict[str, Any] = {"weight": weight, "pos_label": pos_label}
    inputs = binary_family.PROBA_INPUTS if probability else binary_family.ORDER_INPUTS
    check_columns(lf, {"label": label, "score": score, **common}, inputs, by)
    # a lazy source is read once: the columns it needs, collected
    rows = (
        _states.input_rows(lf, label, score, weight, by).collect()
        if isinstance(frame, pl.LazyFrame)
        else frame
    )
    arguments = {
        "label": label,
        "score": score,
        **common,
        "threshold": threshold,
        "probability": probability,
        "bins": None,
        "metrics": None,
        "grouping": None,
    }
    whole = binary_table({**arguments, "baseline": baseline, "by": None, "validate": validate})
    assert isinstance(whole.query, Specs)
    summary_names = list(whole.query.specs)  # with the baseline's columns
    counts = _row_count_aggs([label, score], weight, binary_label(label, pos_label))
    kept = _kept_states(label, score, weight, pos_label, threshold)

    # the whole data first: the calibration section's fits over its state's points (numpy,
    # one core) then run in a thread beside the segments' query
    notes: list[str] = []
    metric_notes: list[str] = []
    summary_all = _quietly(
        lambda: run(_reported(whole, kept, counts), rows), metric_notes if not by else notes
    )
    whole_state = summary_all.select(_states.STATE)
    if probability:
        calibration = calibration_tables_soon(whole_state, bins)
    segments_all = None
    if by:
        segments = binary_table({**arguments, "baseline": False, "by": by, "validate": False})
        segments_all = _quietly(lambda: run(_reported(segments, kept, counts), rows), metric_notes)
    notes = [*metric_notes, *(n for n in notes if n not in metric_notes)]
    tables = _states.Tables(
        {"summary": summary_all.select(summary_names), "data": summary_all.select(COUNT_COLUMNS)}
    )
    names = [info.name for info in summary_infos(probability)]
    metrics = summary_all.select(summary_names)
    if segments_all is not None:
        metrics = segments_all.select(*by, *names) if not baseline else None
        tables["segments"] = sort_worst_first(
            segments_all.select(*by, *COUNT_COLUMNS, *names), "auc"
        )

    # the curves: the short tables at once, the long ones when first read
    args = {"label": label, "score": score, **common}
    finalize = {  # each curve's finalizer over a threshold state (its spec's)
        name: _state_finalizer(_registry.REGISTRY[name].spec(**args))
        for name in ("roc_curve", "pr_curve", "lorenz_curve")
    }
    segment_state = None if segments_all is None else segments_all.select(*by, _states.STATE)
    curves = _states.StateCurves(whole_state, segment_state, by, finalize)
    # the short tables over the points of the whole data's state (``one_group`` forms)
    points = pl.col(_states.STATE)
    short = {
        name: _state_finalizer(_registry.REGISTRY[name].spec(**args, **kw), one_group=True)(points)
        for name, kw in (
            ("threshold_table", {"n_thresholds": max_points}),
            ("gain_table", {"bins": bins}),
        )
    }
    for name in ("roc_curve", "pr_curve", "threshold_table", "lorenz_curve", "gain_table"):
        if name not in short:
            tables.defer(name, lambda name=name: curves.full(name))
            continue
        try:
            tables[name] = _short_curve(whole_state, name, short[name])
        except pl.exceptions.OutOfBoundsError:
            # threshold_table(n_thresholds=...) fails on data with no usable row (a
            # metric-layer issue, reported); the report then goes on without that table
            notes.append("threshold table unavailable: no usable row")
    if probability:
        tables["calibration_table"] = _short_curve(
            whole_state, "calibration_table", calibration_family.calibration_one(points, bins)
        )
        for name, table in calibration.items():
            tables.defer(name, table)
    if by:
        for name in ("roc_curve_by", "pr_curve_by"):
            tables.defer(name, lambda name=name: curves.full(name))
    built = Built(
        tables=tables,  # type: ignore[arg-type]
        counts=tables["data"].row(0, named=True),
        primary="auc",
        inputs={"label": _name(label), "score": _name(score), "weight": _name(weight)},
        options={
            "threshold": threshold,
            "probability": probability,
            "bins": bins,
            **({"pos_label": pos_label} if pos_label is not None else {}),
        },
        notes=notes,
        metric_args={
            "label": label,
            "score": score,
            "weight": weight,
            "pos_label": pos_label,
            "threshold": threshold,
        },
        key_metrics=["auc", "pr_auc", "ks", "logloss", "brier"],
        key_counts=["rows_used", "positives"],
        curves=curves,
        metrics=metrics,
        metric_notes=metric_notes,
    )
    parts = {"summary": summary_all, **({"segments": segments_all} if by else {})}
    built.intervals = lambda ci, level: _binary_intervals(built, parts, by, ci, level)
    return built


CONFUSION = "__pe_confusion_"
"""The prefix of the kept confusion counts (``tp``, ``fp``, ``tn``, ``fn``, ``nan``)."""


def _kept_states(
    label: IntoExpr, score: IntoExpr, weight: IntoExpr | None, pos_label: Any, threshold: float
) -> dict[str, Any]:
    """The states the report keeps from the binary table: the threshold state (its
    curves and tables) and the confusion counts at ``threshold`` (the intervals), each
    equal to the table's own (the same specs' states: computed once)."""
    confusion = binary_family.confusion_states(
        label, score, pred=None, threshold=threshold, weight=weight, pos_label=pos_label
    )
    return {
        _states.STATE: thresholds(label, score, weight, pos_label),
        **{CONFUSION + key: state for key, state in confusion.items()},
    }


def _reported(table: Table, kept: dict[str, Any], counts: list[pl.Expr]) -> Table:
    """``table`` (the binary table) with the report's kept states and row counts."""
    query = table.query
    assert isinstance(query, Specs)
    names = [*query.specs, *kept, *(c.meta.output_name() for c in counts)]
    return replace(
        table,
        query=replace(
            query,
            keep=kept,
            sums=[*query.sums, *counts],
            columns=lambda values: [values[n].alias(n) for n in names],
        ),
    )


def _quietly(compute: Callable[[], Any], notes: list[str]) -> Any:
    """``compute()``, its warnings about undefined values added to ``notes`` (once each);
    other warnings passed on unchanged."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compute()
    for w in caught:
        if not issubclass(w.category, UndefinedMetricWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        message = str(w.message)
        if message not in notes:
            notes.append(message)
    return out


def _state_finalizer(spec: Any, one_group: bool = False) -> Callable[[pl.Expr], pl.Expr]:
    """A sort-based spec's finalizer as a function of one threshold-state column (with
    ``one_group``, its form for a frame of one state where it has one)."""
    (key,) = spec.states
    run = spec.one_group if one_group and spec.one_group is not None else spec.finalize
    return lambda state: run({key: state})


def _short_curve(
    whole_state: pl.DataFrame, name: str, expr: pl.Expr, points: bool = True
) -> pl.DataFrame:
    """A short curve or table of the whole data (a few hundred rows at most), exploded:
    ``expr`` over the points of the whole data's state (exploded into a frame of their
    own), or with ``points=False`` over the state row."""
    lf = whole_state.lazy()
    if points:
        lf = lf.select(pl.col(_states.STATE).explode())
    return lf.select(expr.alias(name)).explode(name).unnest(name).collect()


def _binary_intervals(
    built: Built,
    parts: dict[str, pl.DataFrame],
    by: list[str],
    ci: str,
    level: float,
) -> None:
    """The closed-form intervals of the summary and segment metrics, from their counts.

    The same formulas as ``ci="closed"`` of the metric layer (:mod:`polars_eval.stats`):
    Hanley–McNeil for the AUC (with the weighted class counts), the logit interval for the
    PR AUC, Wilson for the proportions (from the weighted confusion counts at the
    threshold), over the values and counts computed once; no pass over the data. The
    binary metrics without a closed form have none (the AUC, the primary metric, has one,
    so ``ci="bootstrap"`` gives the same columns).
    """
    from polars_eval.stats import intervals as iv

    check_ci(ci)
    z = iv.z_quantile(level)
    # the weighted confusion counts (kept) as the Wilson intervals read them (NaN → NaN)
    confusion = {
        k: nan_or(pl.col(CONFUSION + "nan"), pl.col(CONFUSION + k))
        for k in ("tp", "fp", "tn", "fn")
    }

    def interval(name: str) -> pl.Expr | None:
        if name == "auc":
            values = [pl.col("auc"), pl.col("positives"), pl.col("negatives")]
            return iv.finish(values, iv.hanley_formula(z), name)
        if name == "pr_auc":
            return iv.finish([pl.col("pr_auc"), pl.col("positives")], iv.logistic_formula(z), name)
        if name in iv.PROPORTIONS:
            num, den = iv.PROPORTIONS[name]
            k = pl.sum_horizontal([confusion[c] for c in num])
            n = pl.sum_horizontal([confusion[c] for c in den])
            return iv.finish([k, n], iv.wilson_formula(z), name)
        return None

    summary = built.tables["summary"]
    for key, frame in parts.items():
        table = built.tables[key]
        exprs = {}
        for name in table.columns:
            expr = interval(name)
            if expr is None:
                continue
            if key == "summary" and (table.height == 0 or table.get_column(name)[0] is None):
                continue  # no value, no interval (the notes say why)
            exprs[name] = expr
        if not exprs:
            continue
        bounds = frame.select(
            *by if key == "segments" else [],
            *[
                e.struct.field(side).alias(f"{name}_{side}")
                for name, e in exprs.items()
                for side in ("lower", "upper")
            ],
        )
        if key == "segments":
            table = table.join(bounds, on=by, how="left", nulls_equal=True)
            built.tables[key] = table.select(_bounds_next_to_values(table.columns))
        else:
            built.tables[key] = summary.hstack(bounds)
    built.options["ci"] = ci
    built.options["level"] = level


# ---------------------------------------------------------------------------------------
# Regression (present when the regression family is installed)
# ---------------------------------------------------------------------------------------

REGRESSION_OPTIONS = ("zero_actuals", "bins", "baseline")


def build_regression(
    frame: pl.DataFrame | pl.LazyFrame,
    actual: IntoExpr,
    pred: IntoExpr,
    *,
    weight: IntoExpr | None,
    by: list[str],
    validate: bool,
    max_points: int,
    options: dict[str, Any],
) -> Built:
    """Summary, segments, residual QQ and the conditional tables of a regression model.

    Tables: ``data``, ``summary`` (``df.eval.regression``), ``segments`` (worst RMSE
    first), ``residual_qq`` (one point per row: downsampled for the charts only),
    ``conditional_actual`` and ``conditional_pred`` (``conditional_table`` with
    ``of="actual"`` / ``of="pred"``).
    """
    _check_options("regression", options, REGRESSION_OPTIONS)
    bins = options.pop("bins", 10)
    lf = frame.lazy()
    from polars_eval.metrics import regression as regression_family

    check_columns(
        lf, {"actual": actual, "pred": pred, "weight": weight}, regression_family.INPUTS, by
    )
    ev: Any = lf.eval  # type: ignore[attr-defined]
    method_params = inspect.signature(ev.regression).parameters
    passed = {k: v for k, v in options.items() if k in method_params}
    queries: dict[str, pl.LazyFrame] = {
        "summary": ev.regression(actual, pred, weight=weight, validate=validate, **passed),
        "data": _row_counts(lf, [actual, pred], weight, []),
        "residual_qq": ev.residual_qq(actual, pred, weight=weight, validate=False),
        "conditional_actual": ev.conditional_table(
            actual, pred, of="actual", bins=bins, weight=weight, validate=False
        ),
        "conditional_pred": ev.conditional_table(
            actual, pred, of="pred", bins=bins, weight=weight, validate=False
        ),
    }
    if by:
        queries["segments"] = ev.regression(
            actual, pred, weight=weight, by=by, validate=False, **passed
        )
        queries["segment_rows"] = _row_counts(lf, [actual, pred], weight, by)
    notes: list[str] = []
    tables = collect_quietly(queries, notes)
    if by:
        rows = tables.pop("segment_rows")
        tables["segments"] = sort_worst_first(
            rows.join(tables["segments"], on=by, how="left", nulls_equal=True), "rmse"
        )
    return Built(
        tables=tables,
        counts=tables["data"].row(0, named=True),
        primary="rmse",
        inputs={"actual": _name(actual), "pred": _name(pred), "weight": _name(weight)},
        options={"bins": bins, **passed},
        notes=notes,
        metric_args={"actual": actual, "pred": pred, "weight": weight},
        key_metrics=["rmse", "mae", "bias", "r2", "mape"],
        key_counts=["rows_used"],
    )


# ---------------------------------------------------------------------------------------
# Ranking (present when the ranking family is installed)
# ---------------------------------------------------------------------------------------

RANKING_OPTIONS = (
    "query",
    "k",
    "gain",
    "ties",
    "min_relevance",
    "no_relevant",
    "max_relevance",
    "unscored",
    "item",
    "baseline",
)
RANKING_CUTOFFS = (1, 2, 3, 5, 10, 20)
AT = "@"


def metrics_at_k(summary: pl.DataFrame) -> pl.DataFrame:
    """The ``<metric>@<k>`` columns of a one-row ranking summary as a long table.

    Columns ``metric``, ``k`` (Int64) and ``value``: a reshaping of ``df.eval.ranking``'s
    row, nothing computed. Baseline columns (``..._baseline``) are left out.
    """
    records = []
    row = summary.row(0, named=True) if summary.height else {}
    for column, value in row.items():
        if AT not in column or column.endswith("_baseline"):
            continue
        metric, _, cut = column.rpartition(AT)
        if not cut.isdigit():
            continue
        records.append({"metric": metric, "k": int(cut), "value": value})
    schema = {"metric": pl.String, "k": pl.Int64, "value": pl.Float64}
    return pl.DataFrame(records, schema=schema)


def build_ranking(
    frame: pl.DataFrame | pl.LazyFrame,
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None,
    by: list[str],
    validate: bool,
    max_points: int,
    options: dict[str, Any],
) -> Built:
    """Summary at several cutoffs, metrics against k, segments worst NDCG first.

    Tables: ``data``, ``summary`` (``df.eval.ranking`` at ``k`` = 1, 2, 3, 5, 10, 20 by
    default), ``at_k`` (its ``<metric>@<k>`` columns as a long table), ``segments``, and
    ``per_query`` (one row per query, worst NDCG first).
    """
    _check_options("ranking", options, RANKING_OPTIONS)
    if weight is not None:
        raise InvalidParameterError(
            "ranking reports take no weight= (ranking metrics are per query)"
        )
    query = options.get("query")
    if query is None:
        raise InvalidParameterError("report(task='ranking') needs query= (the query id column)")
    queries_cols = by_columns(query)
    k = options.get("k", RANKING_CUTOFFS)
    cuts = [c for c in (k if isinstance(k, (list, tuple)) else [k]) if c is not None]
    options = {**options, "k": k}
    lf = frame.lazy()
    check_columns(
        lf,
        {"relevance": relevance, "score": score},
        {"relevance": "relevance", "score": "score"},
        [*by, *queries_cols],
    )
    ev: Any = lf.eval  # type: ignore[attr-defined]
    primary_cut = max([c for c in cuts if c <= 10] or cuts or [None], key=lambda c: c or 0)
    primary = "ndcg" + (f"{AT}{primary_cut}" if primary_cut is not None else "")
    queries: dict[str, pl.LazyFrame] = {
        "summary": ev.ranking(relevance, score, validate=validate, **options),
        "data": _row_counts(lf, [relevance, score, *queries_cols], None, []),
        "per_query": ev.ranking(
            relevance,
            score,
            validate=False,
            per_query=True,
            **{**options, "baseline": False},
        ),
    }
    if by:
        queries["segments"] = ev.ranking(relevance, score, by=by, validate=False, **options)
        queries["segment_rows"] = _row_counts(lf, [relevance, score, *queries_cols], None, by)
    notes: list[str] = []
    tables = collect_quietly(queries, notes)
    tables["at_k"] = metrics_at_k(tables["summary"])
    tables["per_query"] = sort_worst_first(tables["per_query"], primary)
    if by:
        rows = tables.pop("segment_rows")
        tables["segments"] = sort_worst_first(
            rows.join(tables["segments"], on=by, how="left", nulls_equal=True), primary
        )
    counts = tables["data"].row(0, named=True)
    for extra in ("n_queries", "n_excluded"):
        if extra in tables["summary"].columns:
            counts[extra] = tables["summary"].get_column(extra)[0]
    return Built(
        tables=tables,
        counts=counts,
        primary=primary,
        inputs={
            "relevance": _name(relevance),
            "score": _name(score),
            "query": ", ".join(queries_cols),
        },
        options={key: value for key, value in options.items() if key != "query"},
        notes=notes,
        key_metrics=[
            f"{m}{AT}{primary_cut}" if primary_cut is not None else m
            for m in ("ndcg", "map", "mrr", "recall", "precision")
        ],
        key_counts=["n_queries", "rows_used"],
    )


# ---------------------------------------------------------------------------------------
# Forecasting (present when the forecast family is installed)
# ---------------------------------------------------------------------------------------

FORECAST_OPTIONS = (
    "series",
    "time",
    "train",
    "season_length",
    "cutoff",
    "lead",
    "zero_actuals",
    "quantiles",
    "interval",
)


SERIES_SAMPLE = 6
"""Series drawn in the forecast report's actual-vs-forecast chart (half worst, half best)."""

HISTORY_POINTS = 24
"""Most points of each sampled series' training history drawn before its forecasts."""


def build_forecast(
    frame: pl.DataFrame | pl.LazyFrame,
    actual: IntoExpr,
    forecast: IntoExpr,
    *,
    weight: IntoExpr | None,
    by: list[str],
    validate: bool,
    max_points: int,
    options: dict[str, Any],
) -> Built:
    """Summary, errors by lead time (with ``cutoff=``), per-series and per-segment tables.

    Tables: ``data``, ``summary`` (``df.eval.forecast``), ``by_lead``
    (``df.eval.forecast(..., cutoff=..., by="lead")``, only with ``cutoff=``),
    ``per_series`` (worst MAE first), ``segments`` and ``series_sample``: the rows of a
    few series (the worst and the best by MAE, :data:`SERIES_SAMPLE` in all) with their
    actual, forecast and interval columns, and the end of their ``train=`` history
    (``part`` = ``"history"``), for the actual-vs-forecast chart. ``by="lead"`` with
    ``cutoff=`` gives segments by lead time (the lead is added as the metric layer does).
    """
    _check_options("forecast", options, FORECAST_OPTIONS)
    for required in ("series", "time"):
        if options.get(required) is None:
            raise InvalidParameterError(f"report(task='forecast') needs {required}=")
    series = by_columns(options["series"])
    keys = [*series, options["time"]]
    cutoff = options.get("cutoff")
    lf = frame.lazy()
    if cutoff is not None and "lead" in by and "lead" not in lf.collect_schema():
        # by="lead": the lead column the metric layer adds with cutoff= (with_lead)
        from polars_eval.metrics.forecast import with_lead

        if isinstance(cutoff, str) and cutoff in lf.collect_schema():
            lf = with_lead(lf, series=series, time=options["time"], cutoff=cutoff)
    interval = options.get("interval")
    check_columns(
        lf,
        {"actual": actual, "forecast": forecast, "weight": weight},
        {"actual": "numeric", "forecast": "numeric", "weight": "weight"},
        [*by, *keys, *([cutoff] if cutoff else [])],
    )
    ev: Any = lf.eval  # type: ignore[attr-defined]
    common = {"weight": weight, **options}
    queries: dict[str, pl.LazyFrame] = {
        "summary": ev.forecast(actual, forecast, validate=validate, **common),
        "data": _row_counts(lf, [actual, forecast, *keys], weight, []),
        "per_series": ev.forecast(actual, forecast, per_series=True, validate=False, **common),
    }
    if cutoff is not None and options.get("lead") is None:
        queries["by_lead"] = ev.forecast(actual, forecast, by="lead", validate=False, **common)
    if by:
        queries["segments"] = ev.forecast(actual, forecast, by=by, validate=False, **common)
        queries["segment_rows"] = _row_counts(lf, [actual, forecast, *keys], weight, by)
    notes: list[str] = []
    tables = collect_quietly(queries, notes)
    tables["per_series"] = sort_worst_first(tables["per_series"], "mae")
    if by:
        rows = tables.pop("segment_rows")
        tables["segments"] = sort_worst_first(
            rows.join(tables["segments"], on=by, how="left", nulls_equal=True), "mae"
        )
    sample = _series_sample(lf, tables["per_series"], series, actual, forecast, options)
    if sample is not None:
        tables["series_sample"] = sample
    key_metrics = ["mae", "rmse", "bias", "mase", "wape"]
    if interval is not None:
        key_metrics.append("coverage")
    return Built(
        tables=tables,
        counts=tables["data"].row(0, named=True),
        primary="mae",
        inputs={"actual": _name(actual), "forecast": _name(forecast), "weight": _name(weight)},
        options={k: v for k, v in options.items() if k != "train" and v is not None},
        notes=notes,
        key_metrics=key_metrics,
        key_counts=["n_series", "rows_used"],
    )


def _series_sample(
    lf: pl.LazyFrame,
    per_series: pl.DataFrame,
    series: list[str],
    actual: IntoExpr,
    forecast: IntoExpr,
    options: dict[str, Any],
) -> pl.DataFrame | None:
    """The rows of a few series for the actual-vs-forecast chart (one small query).

    The ``SERIES_SAMPLE // 2`` series of worst MAE and as many of best (all of them when
    there are few), in that order; columns: the series keys, ``time`` (as given),
    [``cutoff``,] ``actual``, ``forecast``, [``lower``, ``upper``,] ``part``
    (``"forecast"``, or ``"history"`` for the last :data:`HISTORY_POINTS` rows of each
    series in ``train=``).
    """
    if not all(isinstance(c, str) for c in (actual, forecast)) or per_series.height == 0:
        return None
    ranked = per_series.select(series).unique(maintain_order=True)
    if ranked.height > SERIES_SAMPLE:
        half = SERIES_SAMPLE // 2
        ranked = pl.concat([ranked.head(half), ranked.tail(half)])
    chosen = ranked.with_row_index("rank")
    time, cutoff, interval = options["time"], options.get("cutoff"), options.get("interval")
    cols = [
        *series,
        pl.col(time).alias("time"),
        *([pl.col(cutoff).alias("cutoff")] if cutoff else []),
        to_float(actual).alias("actual"),
        to_float(forecast).alias("forecast"),
    ]
    if interval is not None:
        cols += [to_float(interval[0]).alias("lower"), to_float(interval[1]).alias("upper")]
    if len(series) == 1 and chosen.get_column(series[0]).null_count() == 0:
        # a filter the scan can push down (a lake is not read whole again)
        lf = lf.filter(pl.col(series[0]).is_in(chosen.get_column(series[0]).implode()))
    rows = (
        lf.join(chosen.lazy(), on=series, how="inner", nulls_equal=True)
        .select("rank", *cols)
        .with_columns(pl.lit("forecast").alias("part"))
    )
    parts = [rows]
    train = options.get("train")
    if isinstance(train, (pl.DataFrame, pl.LazyFrame)):
        history = (
            train.lazy()
            .join(chosen.lazy(), on=series, how="inner", nulls_equal=True)
            .sort(time)
            .group_by(series, maintain_order=True)
            .tail(HISTORY_POINTS)
            .select("rank", *series, pl.col(time).alias("time"), to_float(actual).alias("actual"))
            .with_columns(pl.lit("history").alias("part"))
        )
        parts.append(history)
    sample = pl.concat(parts, how="diagonal_relaxed").collect()
    order = ["rank", "time", *(["cutoff"] if cutoff else [])]
    return sample.sort(order).drop("rank")


# ---------------------------------------------------------------------------------------
# Multiclass (present when the multiclass family is installed)
# ---------------------------------------------------------------------------------------

MULTICLASS_OPTIONS = ("pred", "proba", "classes", "k", "baseline")
PER_CLASS = _registry.ranked("report_per_class")
"""The columns of the per-class table (declared ``report_per_class=`` at ``@register``)."""


def _flat(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def build_multiclass(
    frame: pl.DataFrame | pl.LazyFrame,
    label: IntoExpr,
    *,
    weight: IntoExpr | None,
    by: list[str],
    validate: bool,
    max_points: int,
    options: dict[str, Any],
) -> Built:
    """Summary, confusion matrix, per-class precision / recall / F1 and segments.

    Tables: ``data``, ``summary`` (``df.eval.multiclass``), ``confusion_matrix``
    (``multiclass_confusion_matrix``, rows = truth), ``per_class`` (the three
    ``average=None`` tables joined on the class), ``segments`` (worst accuracy first).
    Without ``classes=`` the classes are the sorted distinct values of the label and the
    prediction, read in a first small query.
    """
    _check_options("multiclass", options, MULTICLASS_OPTIONS)
    pred, proba = options.get("pred"), options.get("proba")
    if pred is None and proba is None:
        raise InvalidParameterError("report(task='multiclass') needs pred= and/or proba=")
    lf = frame.lazy()
    from polars_eval.metrics import multiclass as multiclass_family

    inputs = multiclass_family.PRED_INPUTS if pred is not None else multiclass_family.PROBA_INPUTS
    check_columns(lf, {"label": label, "pred": pred, "proba": proba, "weight": weight}, inputs, by)
    classes = options.get("classes")
    if classes is None:
        seen = [to_expr(label)] + ([to_expr(pred)] if pred is not None else [])
        values = lf.select(pl.concat([e.drop_nulls().unique() for e in seen]).unique().sort())
        classes = values.collect().to_series().to_list()
    common: dict[str, Any] = {"pred": pred, "proba": proba, "classes": classes, "weight": weight}
    ev: Any = lf.eval  # type: ignore[attr-defined]
    summary_opts: dict[str, Any] = {k: options[k] for k in ("k", "baseline") if k in options}
    queries: dict[str, pl.LazyFrame] = {
        "summary": ev.multiclass(label, validate=validate, **common, **summary_opts),
        "data": _row_counts(lf, [label, *_flat(pred), *_flat(proba)], weight, []),
    }
    # the confusion and per-class tables take one prediction: the classes when given
    one = {"pred": pred} if pred is not None else {"proba": proba}
    per_class_pred = {**one, "classes": classes, "weight": weight}
    queries["confusion_matrix"] = ev.multiclass_confusion_matrix(
        label, validate=False, **per_class_pred
    )
    for name in PER_CLASS:
        queries[name] = getattr(ev, name)(label, average=None, validate=False, **per_class_pred)
    if by:
        queries["segments"] = ev.multiclass(label, by=by, validate=False, **common)
        queries["segment_rows"] = _row_counts(lf, [label, *_flat(pred), *_flat(proba)], weight, by)
    notes: list[str] = []
    tables = collect_quietly(queries, notes)
    per_class = tables.pop(PER_CLASS[0])
    for name in PER_CLASS[1:]:
        per_class = per_class.join(
            tables.pop(name).drop("support"), on="class", how="left", nulls_equal=True
        )
    tables["per_class"] = per_class.rename(
        {name: name.removeprefix("multiclass_") for name in PER_CLASS}
    )
    if by:
        rows = tables.pop("segment_rows")
        tables["segments"] = sort_worst_first(
            rows.join(tables["segments"], on=by, how="left", nulls_equal=True),
            "multiclass_accuracy",
        )
    return Built(
        tables=tables,
        counts=tables["data"].row(0, named=True),
        primary="multiclass_accuracy",
        inputs={
            "label": _name(label),
            "pred": _name(pred),
            "proba": ", ".join(_name(p) for p in _flat(proba)),
            "weight": _name(weight),
        },
        options={"classes": ", ".join(map(str, classes)), **summary_opts},
        notes=notes,
        key_metrics=[
            "multiclass_accuracy",
            "multiclass_balanced_accuracy",
            "multiclass_f1_macro",
            "multiclass_logloss",
        ],
        key_counts=["rows_used"],
    )


SHARES_METRICS = ("binary",)
"""The tasks whose report builder computes the task's metric table on its way (the CLI
prints the report's table instead of computing it again)."""


def available_tasks() -> list[str]:
    """The tasks a report can be written for, in the order the docs list them."""
    return list(TASKS)


def task_spec(task: str) -> Task:
    """The task ``task`` (its builder: ``.load("report")``); a clear error for an unknown task."""
    if task not in TASKS:
        raise InvalidParameterError(f"report task must be one of {available_tasks()}; got {task!r}")
    return TASKS[task]


def by_columns(by: str | Sequence[str] | None) -> list[str]:
    """``by`` as a list of column names, checked."""
    cols = normalize_by(by)
    for c in cols:
        if not isinstance(c, str):
            raise InvalidParameterError(f"by= must name columns (str); got {c!r}")
    return cols


# ---------------------------------------------------------------------------------------
# Confidence intervals (present when polars_eval.stats is installed)
# ---------------------------------------------------------------------------------------

CI_CHOICES = ("closed", "bootstrap")


def check_ci(ci: Any) -> None:
    """Raise unless ``ci`` is one of :data:`CI_CHOICES`."""
    if ci not in CI_CHOICES:
        raise InvalidParameterError(f"ci must be one of {list(CI_CHOICES)} or None; got {ci!r}")


def _interval_method(info: Any, ci: str, primary: str | None) -> str | None:
    closed = [m for m in info.intervals if m != "bootstrap"]
    if closed:
        return closed[0]
    if ci == "bootstrap" and info.name == primary and "bootstrap" in info.intervals:
        return "bootstrap"
    return None


def _bounds_next_to_values(columns: list[str]) -> list[str]:
    bounds = {c for c in columns if c.endswith(("_lower", "_upper"))}
    order: list[str] = []
    for c in columns:
        if c in bounds:
            continue
        order.append(c)
        order += [f"{c}{s}" for s in ("_lower", "_upper") if f"{c}{s}" in bounds]
    return order + [c for c in columns if c in bounds and c not in order]


def add_intervals(
    frame: pl.DataFrame | pl.LazyFrame,
    built: Built,
    by: list[str],
    ci: str,
    level: float,
) -> None:
    """``<metric>_lower`` / ``_upper`` columns on the summary and segment tables.

    ``ci="closed"``: every summary metric with a closed-form interval (Wilson for the
    proportions, Hanley–McNeil for AUC, logistic for PR-AUC, chi-square for RMSE), from
    the metric layer's ``ci=`` (``polars_eval.stats``); ``ci="bootstrap"`` adds the
    bootstrap interval of the primary metric when it has no closed form. One more pass
    over the data, in one ``collect_all``.
    """
    check_ci(ci)
    try:
        from polars_eval.stats import run_interval
    except ModuleNotFoundError as error:  # pragma: no cover - stats is part of the package
        raise InvalidParameterError("ci= needs polars_eval.stats, not installed") from error
    if not built.metric_args:
        built.notes.append("confidence intervals are not available for this task")
        return
    summary = built.tables["summary"]
    lf = frame.lazy()
    queries: dict[str, pl.LazyFrame] = {}
    for name in summary.columns:
        info = _registry.REGISTRY.get(name)
        if info is None or info.kind != "scalar" or not info.intervals:
            continue
        method = _interval_method(info, ci, built.primary)
        if method is None:
            continue
        params = info.signature.parameters
        args = {k: v for k, v in built.metric_args.items() if k in params}
        bound = info.signature.bind_partial(**args)
        bound.apply_defaults()
        undefined = summary.height == 0 or summary.get_column(name)[0] is None
        for key, group in (("", []), ("by:", by)):
            if key and "segments" not in built.tables:
                continue
            if not key and undefined:  # no value, no interval (the notes say why)
                continue
            queries[f"{key}{name}"] = run_interval(
                lf,
                info,
                dict(bound.arguments),
                by=group or None,
                validate=False,
                method=method,
                level=level,
            )
    try:
        found = collect_quietly(queries, built.notes)
    except UndefinedMetricError as error:  # the report goes on without them
        built.notes.append(f"confidence intervals left out: {error}")
        found = {}
    for key, table in found.items():
        name = key.removeprefix("by:")
        bounds = table.select(
            *(by if key.startswith("by:") else []), f"{name}_lower", f"{name}_upper"
        )
        if key.startswith("by:"):
            segments = built.tables["segments"].join(bounds, on=by, how="left", nulls_equal=True)
            built.tables["segments"] = segments.select(_bounds_next_to_values(segments.columns))
        else:
            built.tables["summary"] = built.tables["summary"].with_columns(
                [bounds.get_column(c) for c in bounds.columns]
            )
    built.options["ci"] = ci
    built.options["level"] = level
