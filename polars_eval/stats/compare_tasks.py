"""``df.eval.compare``: each system's per-unit values from its task's own table (SPEC §14).

The systems are named in one of two forms: wide, a list of columns of the task's system
argument (``score=["bm25", "dense"]`` for ranking and binary, ``forecast=`` for forecast,
``pred=`` for regression and multiclass, or ``proba=`` a list of List columns); long,
``system=`` a column and one such column, each system's rows for the same units. The units
are the task's: queries (``query=``) for ranking, series (``series=``) for forecast, and
for binary, regression and multiclass the rows, or the groups of ``unit=``.

Per-unit values come from the task tables unchanged: ``df.eval.ranking(per_query=True)``,
``df.eval.forecast(per_series=True)``, and ``df.eval.<task>(by=[..., unit])`` — each
system's column in turn in the wide form, the system column as one more ``by`` key in the
long form — so each metric is computed (and validated) as in its table. With rows as units
a metric must be a mean over rows (accuracy, log loss, MSE ...: its spec says so, see
:func:`polars_eval._core.spec.is_row_mean`), whose value per row is its finalize over
that row's state values; any other metric (AUC, RMSE, F1 ...) is compared by the paired
bootstrap of rows (``test="bootstrap"``, the resampling of ``df.eval.bootstrap``) or, for
AUC, by DeLong's test (``test="delong"``). :mod:`polars_eval.stats.systems` does the rest.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.planner import normalize_by
from polars_eval._core.registry import REGISTRY, MetricInfo
from polars_eval._core.spec import MetricSpec, is_row_mean
from polars_eval._core.tasks import TASKS
from polars_eval._exprs import count_true
from polars_eval._params import check_choice, check_column_names
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricWarning,
)
from polars_eval.stats import bootstrap as _boot
from polars_eval.stats import systems as st

Frame = pl.DataFrame | pl.LazyFrame

SYSTEM_ARGS = {
    "ranking": ("score",),
    "forecast": ("forecast",),
    "binary": ("score",),
    "regression": ("pred",),
    "multiclass": ("pred", "proba"),
}
"""The task argument(s) whose columns are the systems (multiclass: ``pred=``, else
``proba=``)."""
UNIT_ARGS = {"ranking": ("query", "queries"), "forecast": ("series", "series")}
"""The tasks whose units are a key of their own: the argument and what the units are."""
NOT_OPTIONS = {
    "weight": "the tests weigh every unit alike (a weighted mean over units has no paired test here)",
    "per_query": "compare reads the per-query values itself",
    "per_series": "compare reads the per-series values itself",
    "ci": "the difference's interval is compare's lower and upper",
}
COUNTS = ("n", "n_queries", "n_excluded", "n_series", "zero_actuals")
"""Count columns of the task tables (not metrics)."""
ROW = "__pe_row"


@dataclass(frozen=True)
class Systems:
    """The systems of a comparison and where their values are."""

    arg: str  # the task argument naming them
    names: list[Any]  # every system, in order (wide: the columns; long: first appearance)
    baseline: Any
    column: str  # the system column of the per-unit table
    wide: bool


@dataclass(frozen=True)
class Units:
    """What a unit is: key columns of the per-unit table, and its name in messages."""

    keys: list[str]
    name: str
    rows: bool = False


def direction(task: str, column: str) -> bool | None:
    """Whether higher is better for a column of ``task``'s table (the registry's
    ``higher_is_better`` of the metric it shows; None when it has no direction).

    The column is a metric's name or table name (``"mrr"``, ``"precision"`` for
    ``precision_at_k``), possibly with a cutoff (``"ndcg@10"``) or a suffix
    (``"multiclass_recall_macro"``, ``"pinball_0.1"``)."""
    tasks = TASKS[task].metric_tasks or (task,)
    names: dict[str, MetricInfo] = {}
    for info in REGISTRY.values():
        if info.task in tasks:
            names.setdefault(info.name, info)
            names.setdefault(str(info.extra.get("short", info.name)), info)
    stem = column.split("@")[0]
    while stem:
        if stem in names:
            return names[stem].higher_is_better
        longer = [n for n in names if n.startswith(stem + "_")]
        if len(longer) == 1:
            return names[longer[0]].higher_is_better
        stem = stem.rpartition("_")[0]
    return None


def _collect(result: Any) -> pl.DataFrame:
    return result.collect() if isinstance(result, pl.LazyFrame) else result


def _quiet(run: Any) -> pl.DataFrame:
    """A task table's result without its warning about undefined groups: compare leaves
    those units out of each pair's test and counts the rest in ``n_units``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return _collect(run())


# ---------------------------------------------------------------------------------------
# The systems and the units
# ---------------------------------------------------------------------------------------


def _column_list(value: Any) -> list[Any] | None:
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


def resolve_systems(
    frame: Frame,
    task: str,
    options: Mapping[str, Any],
    system: str | None,
    baseline: Any,
) -> Systems:
    """The systems, checked (BAD_INPUTS row 56): at least two, each a column of one dtype
    (wide), or the distinct values of the ``system=`` column (long)."""
    schema = frame.lazy().collect_schema()
    candidates = SYSTEM_ARGS[task]
    arg = next((a for a in candidates if options.get(a) is not None), candidates[0])
    value = options.get(arg)
    if value is None:
        raise InvalidParameterError(f"{arg}= is required: the systems' {arg} column(s)")
    if system is None:
        columns = _column_list(value)
        if columns is None:
            raise InvalidParameterError(
                f"one system: compare needs at least two; give {arg}= a list of columns (one "
                f"per system), or system= a column naming the system of each row"
            )
        if len(columns) < 2:
            raise InvalidParameterError(
                f"{arg}= names {len(columns)} system; compare needs at least two"
            )
        for col in check_column_names(arg, columns):
            if col not in schema:
                raise DataValidationError(f'system "{col}" is not a column (argument {arg}=)')
        first = columns[0]
        for col in columns[1:]:
            if schema[col] != schema[first]:
                raise DataValidationError(
                    f'systems "{first}" and "{col}" have different dtypes ({schema[first]} and '
                    f"{schema[col]}); the columns of {arg}= must share one"
                )
        names, column, wide = columns, "system", True
        if task == "multiclass" and arg == "proba":
            flat = [c for c in columns if not isinstance(schema[c], (pl.List, pl.Array))]
            if flat:
                raise DataValidationError(
                    f'system "{flat[0]}" is not a List or Array column: in the wide form each '
                    "system's proba= is one such column (per-class columns: use system=)"
                )
    else:
        if not isinstance(system, str):
            raise InvalidParameterError(f"system must be a column name; got {system!r}")
        if system not in schema:
            raise DataValidationError(f'column "{system}" (argument system=) not found')
        if _column_list(value) is not None and not (task == "multiclass" and arg == "proba"):
            raise InvalidParameterError(
                f"with system= (the long form) {arg}= is one column, shared by the systems; "
                f"got {value!r}"
            )
        found = frame.lazy().select(pl.col(system).unique(maintain_order=True)).collect()
        names = found.get_column(system).to_list()
        if None in names:
            raise DataValidationError(
                f'column "{system}" (argument system=) has null values: every row needs a system'
            )
        if len(names) < 2:
            raise DataValidationError(
                f'column "{system}" (argument system=) holds {len(names)} system'
                f"{'' if len(names) == 1 else 's'}: compare needs at least two"
            )
        column, wide = system, False
    if baseline is None:
        base = names[0]
    elif baseline in names:
        base = baseline
    else:
        shown = ", ".join(repr(n) for n in names[:8])
        raise InvalidParameterError(f"baseline {baseline!r} is not one of the systems: {shown}")
    return Systems(arg, names, base, column, wide)


def _wide_name(schema: Mapping[str, Any], by: Sequence[str]) -> str:
    """The system column of a wide comparison's per-unit table: ``"system"``, unless the
    frame or ``by`` uses that name."""
    return "system" if "system" not in schema and "system" not in by else "__pe_system"


# ---------------------------------------------------------------------------------------
# The request: what to compare and how
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One ``compare`` call, its options checked: the task, its data arguments (besides the
    systems) and options, the groups, the units, the metrics and the test."""

    task: str
    data: dict[str, Any]
    options: dict[str, Any]  # the task method's options (the long form's system column too)
    by: list[str]
    unit: list[str]
    metrics: Any
    missing: str | None
    validate: bool
    test: str
    level: float
    n_resamples: int
    seed: int
    correction: str | None

    @property
    def test_options(self) -> dict[str, Any]:
        return {"test": self.test, "level": self.level, "n_resamples": self.n_resamples,
                "seed": self.seed}  # fmt: skip

    def method(self) -> Any:
        """The task method (``df.eval.<task>``) as a function of the namespace."""
        return getattr(TASKS[self.task].load("methods"), self.task)

    def table(self, frame: Frame, sys: Systems, name: Any, by: list[str], **extra: Any) -> Any:
        """The task table of one system's column (``name``; None: the long form's column)."""
        method = self.method()
        opts = table_options(method, self.options, tuple(self.data))
        if name is not None:
            opts[sys.arg] = name
        return method(frame.eval, *self.data.values(), by=by or None, **opts, **extra)


def table_options(method: Any, options: Mapping[str, Any], taken: Sequence[str]) -> dict[str, Any]:
    """The options of ``options`` that the task method takes (an unknown one is an error)."""
    params = inspect.signature(method).parameters
    known = [p for p in params if p not in ("self", "by", "metrics", "validate", "baseline")]
    out = {}
    for key, value in options.items():
        if key in taken:
            continue
        if key not in known:
            raise InvalidParameterError(
                f"compare got an unexpected option {key!r}; the task's options: {', '.join(known)}"
            )
        out[key] = value
    return out


PerUnit = tuple[pl.DataFrame, list[str], dict[str, "bool | None"], Units]
"""Per-unit values (by, system, unit keys, one column per metric), the metric columns in
the table's order, their directions, and the units."""


# ---------------------------------------------------------------------------------------
# Per-unit values: ranking, forecast, and the unit= groups of the other tasks
# ---------------------------------------------------------------------------------------


def _per_system(sys: Systems, by: list[str], run: Any) -> pl.DataFrame:
    """``run(column, by)`` (a task table of one system column) for each system of the wide
    form, stacked with the system column; the long form's in one call, the system column
    as a ``by`` key."""
    if not sys.wide:
        return _quiet(lambda: run(None, [*by, sys.column]))
    parts = []
    for name in sys.names:
        part = _quiet(lambda name=name: run(name, by))
        parts.append(part.with_columns(pl.lit(name, pl.String).alias(sys.column)))
    return pl.concat(parts, how="vertical_relaxed")


def ranking_units(frame: Frame, sys: Systems, req: Request) -> PerUnit:
    """Per-query values of each system: ``df.eval.ranking(per_query=True)``."""
    from polars_eval.tasks.ranking import _ranking, run_ranking, table_arguments

    options = req.options
    if options.get("query") is None:
        raise InvalidParameterError("query= is required: the column(s) identifying a query")
    opts = table_options(_ranking, options, ("score",))
    if req.metrics is not None and "k" not in opts:
        opts["k"] = None  # "map" is the whole list's column, "ndcg@10" the cutoff's (SPEC §14)

    def arguments(score: Any, keys: list[str]) -> dict[str, Any]:
        return table_arguments(
            relevance=req.data["relevance"], score=score, per_query=True, by=keys,
            metrics=req.metrics, validate=req.validate, **opts,
        )  # fmt: skip

    shared = arguments(sys.names[0] if sys.wide else options["score"], req.by)
    names = [spec.out for spec in shared["specs"]]
    directions = {spec.out: REGISTRY[spec.metric].higher_is_better for spec in shared["specs"]}

    def run(column: str | None, keys: list[str]) -> Any:
        return run_ranking(frame, **arguments(column or options["score"], keys))

    return _per_system(sys, req.by, run), names, directions, Units(shared["query"], "queries")


def _metric_columns(per_unit: pl.DataFrame, fixed: Sequence[str]) -> list[str]:
    return [c for c in per_unit.columns if c not in {*fixed, *COUNTS}]


def forecast_units(frame: Frame, sys: Systems, req: Request) -> PerUnit:
    """Per-series values of each system: ``df.eval.forecast(per_series=True)``."""
    from polars_eval.tasks.forecast import _key_list

    series = req.options.get("series")
    if series is None:
        raise InvalidParameterError("series= is required: the column(s) identifying a series")
    keys = _key_list("series", series)

    def run(column: str | None, by: list[str]) -> Any:
        return req.table(frame, sys, column, by, per_series=True, metrics=req.metrics,
                         validate=req.validate)  # fmt: skip

    per_unit = _per_system(sys, req.by, run)
    names = _metric_columns(per_unit, [*req.by, sys.column, *keys])
    return per_unit, names, {n: direction("forecast", n) for n in names}, Units(keys, "series")


def group_units(frame: Frame, sys: Systems, req: Request) -> PerUnit:
    """Per-unit values of binary, regression or multiclass with ``unit=``: the task table
    per (``by`` group, unit)."""
    schema = frame.lazy().collect_schema()
    for col in req.unit:
        if col not in schema:
            raise DataValidationError(f'column "{col}" (argument unit=) not found')

    def run(column: str | None, by: list[str]) -> Any:
        return req.table(frame, sys, column, [*by, *req.unit], metrics=req.metrics,
                         validate=req.validate)  # fmt: skip

    per_unit = _per_system(sys, req.by, run)
    names = _metric_columns(per_unit, [*req.by, sys.column, *req.unit])
    return per_unit, names, {n: direction(req.task, n) for n in names}, Units(req.unit, "units")


# ---------------------------------------------------------------------------------------
# Rows as units (binary, regression, multiclass without unit=): the wide form
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowMetric:
    """A metric compared with rows as units: its registry entry and, per system, its spec
    (bound to that system's column) and public expression."""

    info: MetricInfo
    specs: dict[Any, MetricSpec]
    exprs: dict[Any, pl.Expr]

    @property
    def row_mean(self) -> bool:
        return all(is_row_mean(s) for s in self.specs.values())


def _row_infos(req: Request) -> list[MetricInfo]:
    """The metrics a comparison with rows as units considers: those of the task table (or
    of ``metrics=``); ``test="delong"``: AUC."""
    if req.test == "delong":
        named = [req.metrics] if isinstance(req.metrics, str) else req.metrics
        if named is not None and list(named) != ["auc"]:
            raise InvalidParameterError(
                f"test='delong' compares AUCs: metrics must be ['auc'] (or None); got {named!r}"
            )
        return [REGISTRY["auc"]]
    if req.task == "binary":
        from polars_eval.tasks.binary import summary_infos

        return summary_infos(req.options.get("probability", True), req.metrics)
    return _registry.select(req.task, req.metrics)


def _available(req: Request) -> dict[str, Any]:
    """What a metric of the task may read: the data, the options, the table's defaults."""
    params = inspect.signature(req.method()).parameters
    out = {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}
    out.update(req.options)
    out.update(req.data)
    if req.task == "multiclass":
        from polars_eval.metrics import multiclass as m

        out["k"] = 2 if out.get("k") is None else out["k"]
        out["classes"] = m.check_classes(out.get("classes"))
    out["weight"] = None
    return out


def row_metrics(sys: Systems, req: Request) -> list[RowMetric]:
    """The metrics compared with rows as units, bound to each system's column.

    With a test of per-unit values, a metric must be a mean over rows: without
    ``metrics=`` the table's metrics that are; a named one that is not is an error."""
    available = _available(req)
    out = []
    for info in _row_infos(req):
        specs, exprs = {}, {}
        for name in sys.names:
            args = {**available, sys.arg: name}
            if req.task == "multiclass" and args.get("proba") is None:
                args["classes"] = None  # the plain accuracy: a mean over rows
            try:
                specs[name] = _registry.bind(info, args)
            except InvalidParameterError:
                if req.metrics is not None:
                    raise
                break  # a table metric that needs what compare does not give
            params = info.signature.parameters
            exprs[name] = info.fn(**{k: v for k, v in args.items() if k in params}).alias(info.name)
        else:
            out.append(RowMetric(info, specs, exprs))
    if req.test in ("bootstrap", "delong"):
        return out
    kept = [m for m in out if m.row_mean]
    if req.metrics is not None and len(kept) < len(out):
        name = next(m.info.name for m in out if not m.row_mean)
        raise InvalidParameterError(
            f"{name} is not a mean over rows: test={req.test!r} needs a value per unit; use "
            "test='bootstrap' (rows resampled)"
            + (" or test='delong'" if name == "auc" else "")
            + ", or unit= a column whose groups are the units"
        )
    if not kept:
        raise InvalidParameterError(
            f"no metric of the {req.task} table is a mean over rows for test={req.test!r}: "
            "name metrics= (e.g. a loss), use test='bootstrap', or give unit= a column whose "
            "groups are the units"
        )
    return kept


def _row_value(spec: MetricSpec) -> pl.Expr:
    """The metric of one row: its finalize over the row-level values of its states (sums,
    minima, maxima of one row are the row's values)."""
    return spec.finalize({name: state.value for name, state in spec.states.items()})


def validate_rows(frame: Frame, sys: Systems, req: Request, names: list[str]) -> None:
    """Each system's rows checked by its task table (SPEC §2), as ``df.eval.<task>`` would."""
    if req.validate:
        for name in sys.names:
            _quiet(lambda name=name: req.table(frame, sys, name, req.by, metrics=names))


def row_units(
    frame: Frame, sys: Systems, req: Request, chosen: Sequence[RowMetric]
) -> pl.DataFrame:
    """Per-row values of the row-mean metrics of ``chosen`` for every system."""
    validate_rows(frame, sys, req, [m.info.name for m in chosen])
    parts = []
    for name in sys.names:
        values = [_row_value(m.specs[name]).cast(pl.Float64).alias(m.info.name) for m in chosen]
        row = pl.int_range(pl.len(), dtype=pl.Int64).alias(ROW)
        part = frame.lazy().select(*req.by, row, *values)
        parts.append(part.with_columns(pl.lit(name, pl.String).alias(sys.column)))
    return pl.concat(parts, how="vertical_relaxed").collect()


def row_tests(
    frame: Frame,
    sys: Systems,
    data: Mapping[str, Any],
    by: list[str],
    chosen: Sequence[tuple[int, RowMetric]],
    test: str,
    level: float,
    n_resamples: int,
    seed: int,
) -> pl.DataFrame:
    """The compare rows of metrics that are no mean over rows: DeLong's test, or the paired
    bootstrap of rows (every metric of every system on the same resamples, as
    ``df.eval.paired_bootstrap``). ``n_units`` is the number of rows where the label and
    both scores are set; wins, ties and losses have no meaning here (null)."""
    from polars_eval.stats.compare import delong, paired_summary

    label = data["label"]
    others = [s for s in sys.names if s != sys.baseline]
    lf = frame.lazy()
    both = [pl.col(label).is_not_null() & pl.col(sys.baseline).is_not_null()]
    counts = [count_true(both[0] & pl.col(s).is_not_null()).alias(s) for s in others]
    n_units = (lf.group_by(by).agg(counts) if by else lf.select(counts)).collect()

    def rows(result: pl.DataFrame, system: Any, metric: str, position: int) -> pl.DataFrame:
        """One system's rows from ``result`` (by, value, baseline_value, difference, lower,
        upper, p_value)."""
        n = n_units.select(*by, pl.col(system).alias("n_units"))
        if by:
            result = result.join(n, on=by, how="left", nulls_equal=True)
        else:
            result = pl.concat([result, n], how="horizontal")
        return result.select(
            *by,
            pl.lit(system, pl.String).alias(sys.column),
            pl.lit(metric).alias("metric"),
            pl.lit(position, pl.Int64).alias(st.POSITION),
            *("value", "baseline_value", "difference", "lower", "upper", "p_value"),
            *[pl.lit(None, pl.Int64).alias(c) for c in ("wins", "ties", "losses")],
            "n_units",
        )

    frames = []
    if test == "delong":
        for s in others:
            expr = delong(label, s, sys.baseline, pos_label=data.get("pos_label"), level=level)
            result = (lf.group_by(by).agg(expr) if by else lf.select(expr)).collect()
            result = result.unnest("delong").rename({"auc_1": "value", "auc_2": "baseline_value"})
            frames.append(rows(result, s, "auc", chosen[0][0]))
        return pl.concat(frames, how="vertical_relaxed")
    names = {(p, s): f"__pe_{p}_{j}" for p, _ in chosen for j, s in enumerate(sys.names)}
    items = [(names[p, s], m.exprs[s]) for p, m in chosen for s in sys.names]
    cells = lf.select(_boot.needed_columns(items, by, [])).collect()
    reps, _ = _boot.replicates(
        cells, items, by=by, group=[], n_resamples=n_resamples, method="multinomial", seed=seed
    )
    estimates = _boot.estimates(cells, items, by)
    for position, metric in chosen:
        base = names[position, sys.baseline]
        for s in others:
            pair = {names[position, s]: "__pe_1", base: "__pe_2"}
            result = paired_summary(
                reps.select(*by, *pair).rename(pair),
                estimates.select(*by, *pair).rename(pair),
                by,
                level,
                n_resamples,
            ).rename({"estimate_1": "value", "estimate_2": "baseline_value"})
            frames.append(rows(result, s, metric.info.name, position))
    return pl.concat(frames, how="vertical_relaxed")


# ---------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------


def positional_args(task: str) -> list[str]:
    """The column arguments ``compare(task, ...)`` takes by position, in order."""
    return list(TASKS[task].data_args) + (["pred"] if task == "multiclass" else [])


def _data_args(task: str, args: Sequence[Any], options: dict[str, Any]) -> dict[str, Any]:
    """The task's data arguments (positional, in the task's order, or by keyword) besides
    the systems'; the systems' argument stays in ``options``."""
    names = TASKS[task].data_args
    positional = positional_args(task)
    if len(args) > len(positional):
        raise InvalidParameterError(
            f"compare({task!r}, ...) takes at most {len(positional)} column arguments "
            f"({', '.join(positional)}) by position; got {len(args)}"
        )
    for name, value in zip(positional, args, strict=False):
        if name in options:
            raise InvalidParameterError(f"{name}= given twice (by position and by keyword)")
        options[name] = value
    data = {}
    for name in names:
        if name in SYSTEM_ARGS[task]:
            continue
        if options.get(name) is None:
            raise InvalidParameterError(f"{name}= is required for compare({task!r}, ...)")
        data[name] = options.pop(name)
    return data


def compare(
    frame: Frame, task: str, args: Sequence[Any], **kwargs: Any
) -> pl.DataFrame | pl.LazyFrame:
    """See ``df.eval.compare`` (``kwargs``: those of :func:`_prepare`)."""
    compute, schema = _prepare(frame, task, args, **kwargs)
    if isinstance(frame, pl.LazyFrame):
        return pl.defer(lambda: compute(None), schema=schema)
    return compute(None)


def compare_units(
    frame: Frame, task: str, args: Sequence[Any], **kwargs: Any
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """:func:`compare` (eager) and the per-unit differences its tests read
    (:func:`systems.unit_differences`; the row index of rows as units is the column
    ``row``), or None when no metric compared is a mean over units (AUC by the bootstrap
    of rows, DeLong's test)."""
    compute, _ = _prepare(frame, task, args, **kwargs)
    differences: list[pl.DataFrame] = []
    table = compute(differences)
    return table, pl.concat(differences, how="vertical_relaxed") if differences else None


def _prepare(
    frame: Frame,
    task: str,
    args: Sequence[Any],
    *,
    baseline: Any,
    system: str | None,
    unit: Any,
    by: Any,
    options: dict[str, Any],
    **settings: Any,
) -> tuple[Any, dict[str, Any]]:
    """The checks of :func:`compare` (before anything runs) and the function computing the
    table (given a list, it appends the per-unit differences there), with its schema
    (``settings``: test, correction, level, n_resamples, seed, metrics, missing,
    validate)."""
    check_choice("task", task, tuple(TASKS))
    st.check_options(
        settings["test"], settings["correction"], settings["level"], settings["n_resamples"],
        settings["seed"], settings["missing"],
    )  # fmt: skip
    options = dict(options)
    for key, why in NOT_OPTIONS.items():
        if options.get(key) not in (None, False):
            raise InvalidParameterError(f"compare does not take {key}=: {why}")
        options.pop(key, None)
    data = _data_args(task, args, options)
    by_cols, unit_cols = normalize_by(by), normalize_by(unit)
    if unit_cols and task in UNIT_ARGS:
        arg, what = UNIT_ARGS[task]
        raise InvalidParameterError(f"unit= is not for {task}: its units are the {what} ({arg}=)")
    if settings["test"] == "delong" and (task != "binary" or unit_cols):
        raise InvalidParameterError("test='delong' compares AUCs over rows: binary, without unit=")
    schema = frame.lazy().collect_schema()
    for col in by_cols:
        if col not in schema:
            raise DataValidationError(f'column "{col}" (argument by=) not found')
    clash = [c for c in by_cols if c in st.SCHEMA]
    if clash:
        raise InvalidParameterError(f"by= column {clash[0]!r} is a column of the compare table")
    by_schema = {c: schema[c] for c in by_cols}

    def compute(differences: list[pl.DataFrame] | None) -> pl.DataFrame:
        sys = resolve_systems(frame, task, {**options, **data}, system, baseline)
        rest = dict(options)
        if sys.wide:
            sys = Systems(sys.arg, sys.names, sys.baseline, _wide_name(schema, by_cols), True)
            rest.pop(sys.arg, None)
        req = Request(task, data, rest, by_cols, unit_cols, **settings)
        return st.finish(
            _rows(frame, sys, req, differences), by=by_cols, by_schema=by_schema,
            system=sys.column, systems=sys.names, baseline=sys.baseline,
            correction=req.correction,
        )  # fmt: skip

    return compute, {**by_schema, **st.SCHEMA}


def _keep_differences(
    differences: list[pl.DataFrame] | None,
    per_unit: pl.DataFrame,
    sys: Systems,
    by: list[str],
    units: list[str],
    metrics: Sequence[str],
) -> None:
    """Append the per-unit differences of ``metrics`` to ``differences`` (when a list)."""
    if differences is None or not metrics:
        return
    differences.append(st.unit_differences(
        per_unit, by=by, system=sys.column, units=units, systems=sys.names,
        baseline=sys.baseline, metrics=metrics, unit_names=unit_names(units, metrics),
    ))  # fmt: skip


def unit_names(units: Sequence[str], metrics: Sequence[str]) -> dict[str, str]:
    """The unit keys' names in a table of per-unit differences: the row index is ``row``;
    a key named like a column of that table gets ``_unit`` appended."""
    taken = {*st.UNIT_COLUMNS, *metrics}
    out = {}
    for key in units:
        name = "row" if key == ROW else key
        while name in taken:
            name += "_unit"
        out[key] = name
        taken.add(name)
    return out


def _rows(
    frame: Frame, sys: Systems, req: Request, differences: list[pl.DataFrame] | None = None
) -> list[pl.DataFrame]:
    """The compare rows of every metric (before :func:`systems.finish`); with a list
    ``differences``, the per-unit differences are appended to it."""
    if req.task in UNIT_ARGS or req.unit:
        units_of = {"ranking": ranking_units, "forecast": forecast_units}.get(req.task, group_units)
        per_unit, names, directions, units = units_of(frame, sys, req)
        per_unit = st.align_units(
            per_unit, by=req.by, system=sys.column, units=units.keys, systems=sys.names,
            metrics=names, missing=req.missing, unit_name=units.name,
        )  # fmt: skip
        _keep_differences(differences, per_unit, sys, req.by, units.keys, names)
        return [st.unit_table(
            per_unit, by=req.by, system=sys.column, units=units.keys, baseline=sys.baseline,
            metrics=list(enumerate(names)), directions=directions, **req.test_options,
        )]  # fmt: skip
    if not sys.wide:
        raise InvalidParameterError(
            "with rows as units the systems must be columns of the same rows (the wide "
            f"form, {sys.arg}=[...]); in the long form give unit= a column whose groups "
            "are the units (a row id pairs rows)"
        )
    chosen = list(enumerate(row_metrics(sys, req)))
    per_row = req.test != "delong"
    means = [(p, m) for p, m in chosen if per_row and m.row_mean]
    others = [(p, m) for p, m in chosen if not (per_row and m.row_mean)]
    parts = []
    if means:
        per_unit = row_units(frame, sys, req, [m for _, m in means])
        _keep_differences(
            differences, per_unit, sys, req.by, [ROW], [m.info.name for _, m in means]
        )
        parts.append(st.unit_table(
            per_unit, by=req.by, system=sys.column, units=[ROW], baseline=sys.baseline,
            metrics=[(p, m.info.name) for p, m in means],
            directions={m.info.name: m.info.higher_is_better for _, m in means},
            **req.test_options,
        ))  # fmt: skip
    if others:
        validate_rows(frame, sys, req, [m.info.name for _, m in others])
        parts.append(row_tests(frame, sys, req.data, req.by, others, **req.test_options))
    return parts


def metric_directions(task: str, table: pl.DataFrame) -> dict[str, bool | None]:
    """The direction of each metric of a compare table (for a gate)."""
    return {m: direction(task, m) for m in table.get_column("metric").unique().to_list()}


def compare_values(per_unit: pl.DataFrame, **kwargs: Any) -> pl.DataFrame:
    """The compare table of per-unit values computed elsewhere (e.g. trec_eval's per-query
    measures of several runs): ``per_unit`` holds ``by``, ``system``, ``units`` and the
    ``metrics`` columns; the systems in their order of first appearance, the baseline the
    first unless named (``kwargs``: those of :func:`values_units`)."""
    return values_units(per_unit, **kwargs, differences=False)[0]


def values_units(
    per_unit: pl.DataFrame,
    *,
    system: str,
    units: list[str],
    metrics: Sequence[str],
    directions: Mapping[str, bool | None],
    baseline: Any = None,
    by: Sequence[str] = (),
    unit_name: str = "units",
    test: str = "t",
    correction: str | None = "holm",
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    missing: str | None = None,
    differences: bool = True,
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """:func:`compare_values` and the per-unit differences its tests read
    (:func:`systems.unit_differences`; None with ``differences=False``)."""
    st.check_options(test, correction, level, n_resamples, seed, missing)
    by_cols = list(by)
    names = per_unit.get_column(system).unique(maintain_order=True).to_list()
    if len(names) < 2:
        raise InvalidParameterError(f"compare needs at least two systems; got {len(names)}")
    base = names[0] if baseline is None else baseline
    aligned = st.align_units(
        per_unit, by=by_cols, system=system, units=units, systems=names, metrics=metrics,
        missing=missing, unit_name=unit_name,
    )  # fmt: skip
    rows = st.unit_table(
        aligned, by=by_cols, system=system, units=units, baseline=base,
        metrics=list(enumerate(metrics)), directions=directions, test=test, level=level,
        n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    table = st.finish(
        [rows], by=by_cols, by_schema={c: per_unit.schema[c] for c in by_cols}, system=system,
        systems=names, baseline=base, correction=correction,
    )  # fmt: skip
    if not differences:
        return table, None
    diffs = st.unit_differences(
        aligned, by=by_cols, system=system, units=units, systems=names, baseline=base,
        metrics=metrics, unit_names=unit_names(units, metrics),
    )  # fmt: skip
    return table, diffs
