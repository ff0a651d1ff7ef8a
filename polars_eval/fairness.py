"""Group fairness (SPEC §15): metrics per sensitive group, their disparity, fairlearn's measures.

``df.eval.fairness`` is fairlearn's ``MetricFrame(...).by_group``, ``df.eval.disparity``
its ``.difference()`` and ``.ratio()``, and ``df.eval.demographic_parity_difference`` ...
fairlearn's functions of those names, with the conventions of SPEC §2.

How it runs
-----------
* **One pass, the planner's.** The states of every requested metric are planned with
  :func:`~polars_eval._core.planner.plan_specs` (selection rate, true and false positive
  rates and accuracy share one set of weighted confusion counts) and computed in one
  ``group_by(by + sensitive)`` with the validation counts (:func:`~polars_eval._core.
  table.build`). Each group's metrics are finalized from its states; the value over all
  rows of a ``by`` group (``method="to_overall"``) is the finalize of the groups' states
  merged by each state's rule, never a second pass over the rows. The rest — the
  differences and ratios of a handful of groups — runs on that small state table at the
  end of the query, so a LazyFrame stays lazy (errors and warnings at ``collect()``).
* **Undefined rates.** A group whose rate is undefined (no positive row for a true
  positive rate) has a null there and is left out of that rate's difference and ratio;
  fairlearn counts it as 0 (scikit-learn's ``zero_division`` default). A difference or
  ratio over no defined group is null. Rows whose sensitive value is null belong to no
  group: they are ignored and counted. Both are reported in one
  :class:`~polars_eval.UndefinedMetricWarning`. One group gives difference 0 and ratio 1.
* **Bootstrap** (``ci="bootstrap"``): row resamples drawn by the package's bootstrap
  (:mod:`polars_eval.stats.bootstrap`: multinomial counts of the rows, within each ``by``
  group, from ``numpy.random.default_rng([seed, r])``), the same resamples for every
  sensitive group. A resample is only its counts: the confusion counts of every group are
  one weighted ``bincount`` of the counts (vectorised numpy over the rows, a loop over
  resamples only), and every other metric uses the bootstrap's kernels with the groups as
  strata. The metrics, differences and ratios of each resample are then finalized as the
  estimate is, and the percentiles taken; undefined resamples are left out.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core import table as _tables
from polars_eval._core.planner import Planned, normalize_by, plan_specs
from polars_eval._core.registry import MetricInfo
from polars_eval._core.spec import MetricSpec
from polars_eval._exprs import F64, binary_label, count_true, not_null, to_float, weight_expr
from polars_eval._params import check_choice, check_column_names, check_number
from polars_eval._typing import IntoExpr
from polars_eval._validate import column_problems
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)
from polars_eval.metrics.binary import confusion_states
from polars_eval.metrics.fairness import DEFAULT_METRICS, MEASURES
from polars_eval.stats import bootstrap as _boot
from polars_eval.stats.intervals import Interval

Frame = pl.DataFrame | pl.LazyFrame
METHODS = ("between_groups", "to_overall")
AGGS = ("worst_case", "mean")
CI_METHODS = ("bootstrap",)
N_COL = "n"
ROWS = "__pe_rows"
OVERALL = "__pe_overall"
R_COL = _boot.R_COL
CONFUSION = ("tn", "fp", "fn", "tp", "nan")
"""The kernel's classes of a row, in order: 2·label + prediction, then a NaN score."""


# ---------------------------------------------------------------------------------------
# The query: columns, metrics and options, checked once
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """What a fairness call evaluates: the columns, the metrics (output name, registry
    entry) and the options, checked."""

    label: IntoExpr
    score: IntoExpr
    sensitive: list[str]
    metrics: list[tuple[str, MetricInfo]]
    threshold: float
    weight: IntoExpr | None
    pos_label: Any
    by: list[str]
    validate: bool

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.metrics]

    @property
    def keys(self) -> list[str]:
        """The group columns of the per-group table: ``by``, then the sensitive columns."""
        return [*self.by, *self.sensitive]

    @property
    def available(self) -> dict[str, Any]:
        """The arguments a metric of the table may take."""
        return {k: getattr(self, k) for k in ("label", "score", "threshold", "weight", "pos_label")}

    @property
    def args(self) -> dict[str, Any]:
        """The column arguments, for validation."""
        return {k: getattr(self, k) for k in ("label", "score", "weight", "pos_label", "sensitive")}

    @property
    def inputs(self) -> dict[str, Any]:
        """The input roles (the score as a probability when a metric needs one)."""
        proba = any(info.inputs.get("score") == "proba" for _, info in self.metrics)
        return {
            "label": "binary_label",
            "score": "proba" if proba else "score",
            "weight": "weight",
            "sensitive": "key",
        }

    def specs(self) -> dict[str, MetricSpec]:
        return {name: _registry.bind(info, self.available) for name, info in self.metrics}

    def why(self, name: str) -> str:
        info = dict(self.metrics)[name]
        return info.undefined or "no defined value"


def _columns(name: str, value: Any) -> list[str]:
    """``sensitive=`` / ``by=`` as a list of column names."""
    cols = [value] if isinstance(value, str) else value
    if not isinstance(cols, (list, tuple)) or not cols:
        raise InvalidParameterError(
            f"{name}= must be a column name or a non-empty list of column names; got {value!r}"
        )
    return check_column_names(name, cols)


def resolve_metrics(metrics: str | Sequence[str] | None) -> list[tuple[str, MetricInfo]]:
    """(output name, registry entry) of ``metrics=``: the default table (selection rate,
    true and false positive rates, accuracy), or any binary metric of one value by its
    registered name or a declared alias (fairlearn's ``true_positive_rate`` = ``recall``,
    ``false_positive_rate`` = ``fpr``, ``true_negative_rate`` = ``specificity``,
    ``false_negative_rate`` = ``fnr``); a column keeps the name it was asked by."""
    names = list(DEFAULT_METRICS) if metrics is None else metrics
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise InvalidParameterError("metrics= names no metric")
    known = {
        info.name: info
        for info in _registry.by_task("binary")
        if info.kind == "scalar" and info.spec is not None
    }
    known |= {alias: info for alias, info in _registry.aliases("binary").items()}
    out = []
    for name in names:
        if not isinstance(name, str) or name not in known:
            raise InvalidParameterError(
                f"metrics: {name!r} is not a binary metric of one value; available: "
                f"{', '.join(sorted(known))}"
            )
        out.append((name, known[name]))
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InvalidParameterError(f"metrics: {repeated[0]!r} is named twice")
    return out


def make_query(
    label: IntoExpr,
    score: IntoExpr,
    *,
    sensitive: Any,
    metrics: str | Sequence[str] | None,
    threshold: float,
    weight: IntoExpr | None,
    pos_label: Any,
    by: Any,
    validate: bool,
) -> Query:
    """The checked query of a fairness call (every option error before anything runs)."""
    if sensitive is None:
        raise InvalidParameterError("sensitive= is required: the column(s) that define the groups")
    cols = _columns("sensitive", sensitive)
    by_cols = normalize_by(by)
    both = [c for c in cols if c in by_cols]
    if both:
        raise InvalidParameterError(
            f'column "{both[0]}" is both in sensitive= and in by=; a column groups one way'
        )
    check_number("threshold", threshold)
    chosen = resolve_metrics(metrics)
    taken = [c for c in [*by_cols, *cols] if c in {N_COL, *(n for n, _ in chosen)}]
    if taken:
        raise InvalidParameterError(
            f'column "{taken[0]}" of sensitive=/by= has the name of a result column; rename it'
        )
    return Query(label, score, cols, chosen, threshold, weight, pos_label, by_cols, validate)


# ---------------------------------------------------------------------------------------
# The estimate: states per (by, sensitive) group in one pass, then small tables
# ---------------------------------------------------------------------------------------


def state_plan(q: Query) -> tuple[_tables.Table, Planned]:
    """The planner's query of the states of every metric per (by, sensitive) group, with
    ``n`` (rows evaluated: no null input, weight not 0) and the rows of the group."""
    planned = plan_specs(q.specs())
    y, s, w = binary_label(q.label, q.pos_label), to_float(q.score), weight_expr(q.weight)
    exprs = [
        *planned.aggs,
        count_true(not_null(y, s, w) & (w != 0.0)).alias(N_COL),
        pl.len().cast(pl.Int64).alias(ROWS),
    ]
    infos = [info for _, info in q.metrics]
    plan = _tables.Table(
        _tables.Query(exprs),
        _tables.Checks(
            q.inputs,
            q.args,
            q.validate,
            _registry.data_checks(infos, {"label": q.label, "score": q.score})
            if q.validate
            else [],
        ),
        by=q.keys,
    )
    return plan, planned


@dataclass
class Evaluated:
    """The metrics of every sensitive group and over each ``by`` group's rows."""

    groups: pl.DataFrame  # by, sensitive, n, metrics
    overall: pl.DataFrame | None  # by, metrics (rows with a sensitive value); None: not needed
    dropped: int  # rows with a null sensitive value


def evaluated(states: pl.DataFrame, q: Query, planned: Planned, overall: bool) -> Evaluated:
    """The group table (and the overall values) from the state table of :func:`state_plan`."""
    unknown = pl.any_horizontal([pl.col(c).is_null() for c in q.sensitive])
    dropped = int(states.filter(unknown).get_column(ROWS).sum() or 0)
    kept = states.filter(~unknown)
    groups = kept.select(*q.keys, pl.col(N_COL), *planned.finals)
    whole = None
    if overall:
        merged = planned.merged()
        whole = kept.group_by(q.by).agg(merged) if q.by else kept.select(merged)
    return Evaluated(groups, whole, dropped)


def disparity_table(
    groups: pl.DataFrame,
    overall: pl.DataFrame | None,
    names: Sequence[str],
    by: list[str],
    method: str,
) -> pl.DataFrame:
    """``<metric>_difference`` and ``<metric>_ratio`` per ``by`` group, as fairlearn's
    ``MetricFrame.difference()`` / ``.ratio()`` over the groups' values (nulls left out).

    between_groups: max − min and min / max; to_overall: max |v − overall| and the least
    of v / overall (each taken as its inverse when above 1). A ratio of 0 / 0 is null.
    """
    aggs: list[pl.Expr] = []
    for m in names:
        v = pl.col(m)
        if method == "between_groups":
            diff, ratio = v.max() - v.min(), (v.min() / v.max()).fill_nan(None)
        else:
            o = pl.col(m + OVERALL)
            r = v / o
            diff = (v - o).abs().max()
            ratio = pl.when(r > 1.0).then(1.0 / r).otherwise(r).fill_nan(None).min()
        aggs += [diff.cast(F64).alias(f"{m}_difference"), ratio.cast(F64).alias(f"{m}_ratio")]
    if method == "to_overall":
        assert overall is not None
        whole = overall.select(*by, *[pl.col(m).alias(m + OVERALL) for m in names])
        groups = (
            groups.join(whole, on=by, how="left", nulls_equal=True)
            if by
            else groups.join(whole, how="cross")
        )
    if not by:
        return groups.select(aggs)
    return groups.group_by(by).agg(aggs).sort(by, nulls_last=True)


def measure_table(
    table: pl.DataFrame, measure: str, kind: str, agg: str, by: list[str]
) -> pl.DataFrame:
    """One fairness measure (``<measure>_<kind>``) from a disparity table of its rates:
    equalized odds takes the larger difference / smaller ratio (``agg="worst_case"``) or
    the mean of its two rates' (``"mean"``), null when either is undefined."""
    parts = [pl.col(f"{rate}_{kind}") for rate in MEASURES[measure]]
    if len(parts) == 1:
        value = parts[0]
    elif agg == "mean":
        value = pl.sum_horizontal(parts) / len(parts)
    else:
        pick = pl.max_horizontal if kind == "difference" else pl.min_horizontal
        value = pick(parts)
    missing = pl.any_horizontal([p.is_null() for p in parts])
    value = pl.when(missing).then(None).otherwise(value).cast(F64)
    return table.select(*by, value.alias(f"{measure}_{kind}"))


def disparity_long(table: pl.DataFrame, by: Sequence[str]) -> pl.DataFrame:
    """A disparity table as one row per (``by`` group, metric): ``metric``,
    ``difference`` and ``ratio`` (and their bounds), for reading (the report, the CLI)."""
    names = [c.removesuffix("_difference") for c in table.columns if c.endswith("_difference")]
    parts = []
    for name in names:
        values = [
            pl.col(f"{name}_{kind}{part}").alias(f"{kind}{part}")
            for kind in ("difference", "ratio")
            for part in ("", "_lower", "_upper")
            if f"{name}_{kind}{part}" in table.columns
        ]
        parts.append(table.select(*by, pl.lit(name).alias("metric"), *values))
    out = pl.concat(parts) if parts else pl.DataFrame()
    return out.sort(list(by), nulls_last=True, maintain_order=True) if by else out


# ---------------------------------------------------------------------------------------
# What a call returns: a table shape, its warning, strictness
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """The result of a call as a function of the group table and the overall values:
    ``make(groups, overall, by)`` (``by`` is the query's, or it and the resample column
    for the bootstrap), keyed by ``keys``."""

    make: Callable[[pl.DataFrame, pl.DataFrame | None, list[str]], pl.DataFrame]
    keys: list[str]
    overall: bool = False  # needs the overall values (method="to_overall")
    disparity: bool = True  # differences/ratios (the warning says undefined rates are left out)
    strict: str | None = None  # a measure's name: without by, a null value is an error


def fairness_shape(q: Query) -> Shape:
    def make(groups: pl.DataFrame, overall: pl.DataFrame | None, by: list[str]) -> pl.DataFrame:
        return groups

    return Shape(make, q.keys, disparity=False)


def disparity_shape(q: Query, method: str) -> Shape:
    def make(groups: pl.DataFrame, overall: pl.DataFrame | None, by: list[str]) -> pl.DataFrame:
        return disparity_table(groups, overall, q.names, by, method)

    return Shape(make, q.by, overall=method == "to_overall")


def measure_shape(q: Query, method: str, measure: str, kind: str, agg: str) -> Shape:
    inner = disparity_shape(q, method)

    def make(groups: pl.DataFrame, overall: pl.DataFrame | None, by: list[str]) -> pl.DataFrame:
        return measure_table(inner.make(groups, overall, by), measure, kind, agg, by)

    name = f"{measure}_{kind}"
    return Shape(make, q.by, overall=inner.overall, strict=None if q.by else name)


def note(ev: Evaluated, q: Query, shape: Shape) -> str | None:
    """The one warning: rates null in some groups, rows without a sensitive value."""
    parts = []
    for name in q.names:
        k = ev.groups.get_column(name).null_count()
        if k:
            parts.append(f"{name} is null for {k} of {ev.groups.height} groups ({q.why(name)})")
    if parts and shape.disparity:
        parts.append("a null rate is left out of its difference and ratio")
    if ev.dropped:
        cols = ", ".join(f'"{c}"' for c in q.sensitive)
        rows = "row has" if ev.dropped == 1 else "rows have"
        parts.append(f"{ev.dropped} {rows} a null in the sensitive column(s) {cols}: ignored")
    return "; ".join(parts) if parts else None


def finish(
    ev: Evaluated,
    out: pl.DataFrame,
    q: Query,
    shape: Shape,
    no_rows: Callable[[], str | None],
    *,
    warn: bool = True,
) -> pl.DataFrame:
    """Raise where a result without ``by`` has nothing to say, else warn once."""
    used = int(ev.groups.get_column(N_COL).sum() or 0)
    if not q.by and used == 0:
        why = no_rows() or "no row has a value in every input and sensitive column"
        raise UndefinedMetricError(f"no rows to evaluate: {why}")
    text = note(ev, q, shape)
    if shape.strict is not None and out.get_column(shape.strict).null_count():
        rates = " and ".join(MEASURES[shape.strict.rsplit("_", 1)[0]])
        reason = text or f"no two groups with a defined {rates}"
        raise UndefinedMetricError(f"{shape.strict} is undefined on this data: {reason}")
    if text and warn:
        warnings.warn(text, UndefinedMetricWarning, stacklevel=2)
    return out


# ---------------------------------------------------------------------------------------
# Running a call: one lazy query (no interval), or the bootstrap over collected rows
# ---------------------------------------------------------------------------------------


def run(
    frame: Frame,
    q: Query,
    shape: Shape,
    *,
    ci: str | None,
    level: float,
    n_resamples: int,
    seed: int,
) -> pl.DataFrame | pl.LazyFrame:
    """Evaluate ``shape`` over ``frame``: collected on a DataFrame, lazy on a LazyFrame."""
    if ci is not None:
        check_choice("ci", ci, CI_METHODS)
        _boot.check_options(n_resamples, level, seed, "multinomial")
    plan, planned = state_plan(q)
    lazy = isinstance(frame, pl.LazyFrame)
    try:
        states = _tables.build(plan, frame)
    except DataValidationError as error:
        if lazy:
            return _tables.deferred(error)
        raise
    source = frame.lazy()

    def no_rows() -> str | None:
        return plan.checks.no_rows(source)

    def post(table: pl.DataFrame, *, quiet: bool = False) -> pl.DataFrame:
        ev = evaluated(table, q, planned, shape.overall)
        out = shape.make(ev.groups, ev.overall, q.by)
        return out if quiet else finish(ev, out, q, shape, no_rows)

    empty = pl.DataFrame(schema=states.collect_schema())
    schema = post(empty, quiet=True).schema
    if ci is None:
        result = states.map_batches(post, schema=schema)
        return result if lazy else result.collect()

    def compute() -> pl.DataFrame:
        data = needed_rows(frame, q)
        (out,) = evaluate_shapes(
            data, q, [shape], ci=ci, level=level, n_resamples=n_resamples, seed=seed
        )
        return out

    if lazy:
        values = [c for c in schema if c not in shape.keys and c != N_COL]
        bounded = _bounded_schema(dict(schema), values)
        return pl.defer(compute, schema=bounded)
    return compute()


def evaluate_shapes(
    data: pl.DataFrame,
    q: Query,
    shapes: Sequence[Shape],
    *,
    ci: str | None,
    level: float,
    n_resamples: int,
    seed: int,
) -> list[pl.DataFrame]:
    """Several results of one query over rows in memory, from one pass of states and (with
    ``ci``) one set of resamples; warns once (the last shape's warning)."""
    plan, planned = state_plan(q)
    table = _tables.build(plan, data).collect()
    overall = any(shape.overall for shape in shapes)
    ev = evaluated(table, q, planned, overall)

    def no_rows() -> str | None:
        return plan.checks.no_rows(data.lazy())

    outs = [
        finish(ev, shape.make(ev.groups, ev.overall, q.by), q, shape, no_rows, warn=last)
        for last, shape in zip([False] * (len(shapes) - 1) + [True], shapes, strict=True)
    ]
    if ci is None:
        return outs
    groups, whole = replicates(data, q, n_resamples, seed, overall=overall)
    by = [R_COL, *q.by]
    return [
        with_bounds(out, shape.make(groups, whole, by), shape.keys, level)
        for out, shape in zip(outs, shapes, strict=True)
    ]


def needed_rows(frame: Frame, q: Query) -> pl.DataFrame:
    """The columns the bootstrap reads, collected once (a missing one is an error)."""
    roots: list[str] = []
    for item in (q.label, q.score, q.weight):
        if isinstance(item, str):
            roots.append(item)
        elif isinstance(item, pl.Expr):
            roots += item.meta.root_names()
    cols = list(dict.fromkeys([*roots, *q.keys]))
    schema = frame.collect_schema()
    problems = column_problems(schema, q.args, q.inputs)
    problems += [f'column "{b}" (argument by=) not found' for b in q.by if b not in schema]
    if problems:
        raise DataValidationError(problems[0])
    if isinstance(frame, pl.DataFrame):
        return frame.select(cols)
    return frame.select(cols).collect()


def _bounded_schema(schema: dict[str, Any], values: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, dtype in schema.items():
        out[name] = dtype
        if name in values:
            out[f"{name}_lower"] = F64
            out[f"{name}_upper"] = F64
    return out


def with_bounds(
    est: pl.DataFrame, reps: pl.DataFrame, keys: list[str], level: float
) -> pl.DataFrame:
    """The estimate with ``<value>_lower`` and ``<value>_upper`` after each value column:
    the percentile interval of its resampled values (undefined resamples left out)."""
    values = [c for c in est.columns if c not in keys and c != N_COL]
    key = keys or ["__pe_key"]
    if not keys:
        est = est.with_columns(pl.lit(0).alias(key[0]))
        reps = reps.with_columns(pl.lit(0).alias(key[0]))
    summary = _boot.percentile_summary(reps, est, values, key, level)
    out = est
    for name in values:
        part = summary.filter(pl.col("metric") == name).select(
            *key,
            pl.col("lower").alias(f"{name}_lower"),
            pl.col("upper").alias(f"{name}_upper"),
        )
        out = out.join(part, on=key, how="left", nulls_equal=True, maintain_order="left")
    order = list(_bounded_schema(dict.fromkeys(est.columns), values))
    return out.select(order).drop(key) if not keys else out.select(order)


# ---------------------------------------------------------------------------------------
# Replicates: the groups' metrics in every resample
# ---------------------------------------------------------------------------------------


def confusion_index(rows: pl.DataFrame, q: Query, cell: np.ndarray) -> tuple[np.ndarray, Any]:
    """Every row's (group, class) as one index, group · 5 + class (true negative, false
    positive, false negative, true positive by 2 · label + prediction; 4: a NaN score),
    and its weight (None: every weight is 1)."""
    y = rows.select(binary_label(q.label, q.pos_label)).to_series().to_numpy()
    s = rows.select(to_float(q.score)).to_series().to_numpy()
    w = rows.select(weight_expr(q.weight)).to_series().to_numpy()
    if len(y) and not np.isin(y, (0.0, 1.0)).all():
        name = q.label if isinstance(q.label, str) else "label"
        raise DataValidationError(
            f'column "{name}" must hold 0/1 or booleans as binary labels for the bootstrap'
        )
    pred = (s >= q.threshold).astype(np.int64)
    cls = np.where(np.isnan(s), 4, 2 * y.astype(np.int64) + pred)
    weight = None if np.all(w == 1.0) else np.broadcast_to(w, len(y)).astype(np.float64)
    return cell * len(CONFUSION) + cls, weight


class ConfusionKernel:
    """The weighted confusion counts of every (resample, group) from a block of row counts.

    The rows come sorted by their (group, class) index (:func:`confusion_index`), so a
    resample's counts of every group and class are the sums of its row counts over
    consecutive runs: one ``np.add.reduceat`` of the (resamples, rows) count block, in
    integers without weights (exact: a multinomial resample has as many draws as rows),
    of the counts times the weights with them. numpy, not Polars: the same 4 × groups
    sums over a fixed assignment of rows are needed a thousand times with other weights,
    where a Polars query would rebuild the groups every time.
    """

    def __init__(self, index: np.ndarray, weight: np.ndarray | None, n_cells: int) -> None:
        self.present, self.starts = np.unique(index, return_index=True)  # index is sorted
        self.weight = weight
        self.size = n_cells * len(CONFUSION)
        self.n_cells = n_cells

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        """Counts (resamples, rows) -> confusion counts (resamples, groups, classes)."""
        out = np.zeros((counts.shape[0], self.size))
        if len(self.starts):
            if self.weight is not None:
                sums = np.add.reduceat(counts * self.weight, self.starts, axis=1)
            else:  # uint32 sums of uint8 counts: exact below 2^32 rows, and 4x faster
                dtype = np.uint32 if counts.dtype == np.uint8 else np.int64
                sums = np.add.reduceat(counts, self.starts, axis=1, dtype=dtype)
            out[:, self.present] = sums
        return out.reshape(counts.shape[0], self.n_cells, len(CONFUSION))


def _confusion_columns(q: Query) -> dict[Any, str]:
    """State key -> the kernel's column of it, for the confusion states of the query."""
    states = confusion_states(
        q.label, q.score, pred=None, threshold=q.threshold, weight=q.weight, pos_label=q.pos_label
    )
    return {state.key: name for name, state in states.items()}


def _finals_on_counts(q: Query) -> tuple[list[pl.Expr], list[tuple[str, MetricInfo]]]:
    """The finalize of each metric whose states are all confusion counts, over the
    kernel's columns; and the other metrics."""
    columns = _confusion_columns(q)
    finals, others = [], []
    specs = q.specs()
    for name, info in q.metrics:
        spec = specs[name]
        if all(state.key in columns for state in spec.states.values()):
            read = {k: pl.col(columns[st.key]) for k, st in spec.states.items()}
            finals.append(spec.finalize(read).cast(F64).alias(name))
        else:
            others.append((name, info))
    return finals, others


def _other_kernel(
    name: str, info: MetricInfo, q: Query, rows: pl.DataFrame, strata: np.ndarray, n: int
) -> Any:
    args = {k: v for k, v in q.available.items() if k in info.signature.parameters}
    args = {k: v for k, v in args.items() if v is not None}
    kernel = _boot._kernel_for(_boot.Recognized(info, args), rows, strata, n)
    if kernel is None:
        raise InvalidParameterError(
            f"ci='bootstrap' cannot resample {name} here: the fairness bootstrap takes "
            "metrics of confusion counts, of sums and of sorted scores over plain columns"
        )
    return kernel


def resampled_rows(
    data: pl.DataFrame, q: Query
) -> tuple[pl.DataFrame, np.ndarray, pl.DataFrame, np.ndarray, Any]:
    """The rows a resample draws from: those evaluated (no null input, a sensitive value,
    weight not 0), sorted by (group, class) (stably: rows of one group and class keep
    their order). Also each row's group code, the group keys (code order: sorted by
    ``by``, then the sensitive columns), the (group, class) index and the weights."""
    y, s, w = binary_label(q.label, q.pos_label), to_float(q.score), weight_expr(q.weight)
    sensitive = [pl.col(c) for c in q.sensitive]
    rows = data.filter(not_null(y, s, w, *sensitive) & (w != 0.0))
    cell, cell_keys = _boot._codes(rows, q.keys, "__pe_cell")
    index, weight = confusion_index(rows, q, cell)
    order = np.argsort(index, kind="stable")
    weight = None if weight is None else weight[order]
    return rows[order], cell[order], cell_keys, index[order], weight


def replicates(
    data: pl.DataFrame, q: Query, n_resamples: int, seed: int, *, overall: bool
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The metrics of every (resample, by, sensitive) group, and (``overall``) of every
    (resample, by) group, as :func:`evaluated` gives them for the data."""
    rows, cell, cell_keys, index, weight = resampled_rows(data, q)
    design, stratum, by_keys = _boot.make_design(rows, q.by, [], "multinomial", seed)
    n_cells, n_strata = cell_keys.height, max(by_keys.height, 1)
    finals, others = _finals_on_counts(q)
    counts_kernel = ConfusionKernel(index, weight, n_cells) if finals else None
    kernels = {name: _other_kernel(name, info, q, rows, cell, n_cells) for name, info in others}
    whole = (
        {name: _other_kernel(name, info, q, rows, stratum, n_strata) for name, info in others}
        if overall
        else {}
    )
    for k in [*kernels.values(), *whole.values()]:
        k.bind(design.unit_of_row, design.n_units)

    def one(ids: range) -> tuple[np.ndarray | None, dict[str, Any], dict[str, Any]]:
        block = design.unit_counts_block(ids)
        conf = counts_kernel(block) if counts_kernel is not None else None
        return (
            conf,
            {n: k(block) for n, k in kernels.items()},
            {n: k(block) for n, k in whole.items()},
        )

    size = max(1, min(n_resamples, _boot.BLOCK_CELLS // max(design.n_rows, 1)))
    blocks = [range(b, min(n_resamples, b + size)) for b in range(0, n_resamples, size)]
    with ThreadPoolExecutor(max_workers=_boot._threads()) as pool:
        results = list(pool.map(one, blocks))

    def frame(
        keys: pl.DataFrame,
        n: int,
        conf: np.ndarray | None,
        values: Mapping[str, np.ndarray],
    ) -> pl.DataFrame:
        index = pl.DataFrame({R_COL: np.repeat(np.arange(n_resamples, dtype=np.int64), n)})
        if keys.width:
            index = pl.concat([index, pl.concat([keys] * n_resamples)], how="horizontal")
        cols: list[pl.Series] = []
        if conf is not None:
            flat = conf.reshape(-1, len(CONFUSION))
            cols += [pl.Series(c, flat[:, i]) for i, c in enumerate(CONFUSION[:4])]
            cols.append(pl.Series("nan", flat[:, 4] > 0))
        cols += [pl.Series(name, v.ravel()).fill_nan(None) for name, v in values.items()]
        table = index.with_columns(cols)
        return table.select(*index.columns, *finals, *[pl.col(n) for n in values]).select(
            *index.columns, *q.names
        )

    conf = np.concatenate([r[0] for r in results]) if counts_kernel is not None else None
    values = {n: kernels[n].finish(np.concatenate([r[1][n] for r in results])) for n in kernels}
    groups = frame(cell_keys, n_cells, conf, values)
    if not overall:
        return groups, None
    whole_conf = None
    if conf is not None:  # the groups of a by stratum are consecutive cells (keys sorted)
        cell_stratum = np.zeros(n_cells, dtype=np.int64)
        if q.by:
            cell_stratum = (
                cell_keys.select(q.by)
                .join(by_keys.with_row_index("__pe_s"), on=q.by, how="left", nulls_equal=True)
                .get_column("__pe_s")
                .to_numpy()
                .astype(np.int64)
            )
        starts = np.searchsorted(cell_stratum, np.arange(n_strata))
        whole_conf = np.add.reduceat(conf, starts, axis=1) if n_cells else conf
    whole_values = {n: whole[n].finish(np.concatenate([r[2][n] for r in results])) for n in whole}
    strata = by_keys if q.by else pl.DataFrame()
    return groups, frame(strata, n_strata, whole_conf, whole_values)


# ---------------------------------------------------------------------------------------
# The namespace methods
# ---------------------------------------------------------------------------------------

_COMMON_DOC = """
        Parameters
        ----------
        label
            0/1 or boolean truth (any values with ``pos_label=``).
        score
            Scores or probabilities (hard 0/1 predictions work with the default
            threshold); a row is predicted positive when ``score >= threshold``.
        sensitive
            The column, or list of columns, whose values define the groups (a list:
            every combination present). Rows with a null there are ignored and counted
            in the warning.
        threshold
            Scores at or above it are predicted positive (default 0.5).
        weight
            Row weights (zero ignores a row), fairlearn's ``sample_weight``.
        ci
            ``"bootstrap"`` adds percentile intervals (``_lower``, ``_upper`` columns):
            ``n_resamples`` multinomial row resamples (within each ``by`` group), the same
            for every sensitive group, from ``seed``; ``level`` is their confidence.
        by
            Column(s) evaluated apart (fairlearn's ``control_features``).
        pos_label
            The value of ``label`` that marks the positive class.
        validate
            Check the rows first (SPEC §2); ``False`` skips the checks."""


RUN_OPTIONS = ("ci", "level", "n_resamples", "seed")


def _options(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments of :func:`make_query` and :func:`run` among a method's ``locals()``."""
    names = [*inspect.signature(make_query).parameters, *RUN_OPTIONS]
    return {k: arguments[k] for k in names if k in arguments}


def _table(frame: Frame, shape: Callable[[Query], Shape], options: dict[str, Any]) -> Any:
    """Check the options, then evaluate ``shape`` of the query they describe."""
    run_options = {k: options.pop(k) for k in RUN_OPTIONS}
    q = make_query(**options)
    return run(frame, q, shape(q), **run_options)


class FairnessMethods:
    """``df.eval.fairness``, ``df.eval.disparity`` and fairlearn's fairness measures."""

    _frame: pl.DataFrame | pl.LazyFrame

    def fairness(
        self,
        label: IntoExpr,
        score: IntoExpr,
        *,
        sensitive: str | Sequence[str],
        metrics: str | Sequence[str] | None = None,
        threshold: float = 0.5,
        weight: IntoExpr | None = None,
        ci: str | None = None,
        level: float = 0.95,
        n_resamples: int = 1000,
        seed: int = 0,
        by: str | list[str] | None = None,
        pos_label: Any = None,
        validate: bool = True,
    ) -> pl.DataFrame | pl.LazyFrame:
        """Metrics per sensitive group, one row each (fairlearn's ``MetricFrame.by_group``).

        Columns: ``by``, the sensitive column(s), ``n`` (the rows evaluated: no null
        input, weight not 0) and one column per metric: by default ``selection_rate``,
        ``true_positive_rate``, ``false_positive_rate`` and ``accuracy``; ``metrics=``
        takes any binary metric of one value by its name (``"auc"``, ``"f1"`` ...) or
        fairlearn's (``true_positive_rate`` is ``recall``, ``false_positive_rate``
        ``fpr``, ``true_negative_rate`` ``specificity``, ``false_negative_rate``
        ``fnr``); a column keeps the name it was asked by. Sorted by the keys. The states
        of all metrics come from one ``group_by(by + sensitive)`` pass (the rates share
        one set of weighted confusion counts). A group whose metric is undefined (no
        positive row for a true positive rate) has a null there, reported in one warning.
        {common}

        Returns
        -------
        pl.DataFrame or pl.LazyFrame
            One row per (``by``, sensitive) group; a LazyFrame on a LazyFrame.

        References
        ----------
        Bird et al. (2020), Fairlearn: a toolkit for assessing and improving fairness
        in AI, Microsoft MSR-TR-2020-32 (``MetricFrame``).

        Examples
        --------
        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({{
        ...     "y": [1, 1, 0, 0, 1, 1, 0, 0],
        ...     "p": [0.9, 0.4, 0.6, 0.1, 0.8, 0.7, 0.2, 0.3],
        ...     "sex": ["f", "f", "f", "f", "m", "m", "m", "m"],
        ... }})
        >>> df.eval.fairness("y", "p", sensitive="sex")
        shape: (2, 6)
        ┌─────┬─────┬────────────────┬────────────────────┬─────────────────────┬──────────┐
        │ sex ┆ n   ┆ selection_rate ┆ true_positive_rate ┆ false_positive_rate ┆ accuracy │
        │ --- ┆ --- ┆ ---            ┆ ---                ┆ ---                 ┆ ---      │
        │ str ┆ i64 ┆ f64            ┆ f64                ┆ f64                 ┆ f64      │
        ╞═════╪═════╪════════════════╪════════════════════╪═════════════════════╪══════════╡
        │ f   ┆ 4   ┆ 0.5            ┆ 0.5                ┆ 0.5                 ┆ 0.5      │
        │ m   ┆ 4   ┆ 0.5            ┆ 1.0                ┆ 0.0                 ┆ 1.0      │
        └─────┴─────┴────────────────┴────────────────────┴─────────────────────┴──────────┘
        """
        return _table(self._frame, fairness_shape, _options(locals()))

    def disparity(
        self,
        label: IntoExpr,
        score: IntoExpr,
        *,
        sensitive: str | Sequence[str],
        metrics: str | Sequence[str] | None = None,
        method: Literal["between_groups", "to_overall"] = "between_groups",
        threshold: float = 0.5,
        weight: IntoExpr | None = None,
        ci: str | None = None,
        level: float = 0.95,
        n_resamples: int = 1000,
        seed: int = 0,
        by: str | list[str] | None = None,
        pos_label: Any = None,
        validate: bool = True,
    ) -> dict[str, Any] | pl.DataFrame | pl.LazyFrame:
        """How far apart the groups are: ``<metric>_difference`` and ``<metric>_ratio``.

        One row (per ``by`` group) with, for every metric of :meth:`fairness`, fairlearn's
        ``MetricFrame.difference()`` and ``.ratio()``: ``method="between_groups"``
        (default) gives max − min and min / max over the groups; ``"to_overall"`` gives
        the largest |group − overall| and the smallest group / overall ratio (each ratio
        above 1 inverted), the overall value being the metric over all rows of the ``by``
        group that have a sensitive value. A group whose metric is undefined is left out
        (fairlearn counts it as 0); a difference over no defined group, or a ratio of
        0 / 0, is null; one group gives difference 0 and ratio 1. With
        ``ci="bootstrap"`` every difference and ratio gets its percentile interval, from
        the same row resamples for every group.
        {common}

        Returns
        -------
        pl.DataFrame or pl.LazyFrame
            One row, or one per ``by`` group; a LazyFrame on a LazyFrame.

        Examples
        --------
        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({{
        ...     "y": [1, 1, 0, 0, 1, 1, 0, 0],
        ...     "p": [0.9, 0.4, 0.6, 0.1, 0.8, 0.7, 0.2, 0.3],
        ...     "sex": ["f", "f", "f", "f", "m", "m", "m", "m"],
        ... }})
        >>> out = df.eval.disparity("y", "p", sensitive="sex", metrics=["accuracy", "recall"])
        >>> out.row(0, named=True)
        {{'accuracy_difference': 0.5, 'accuracy_ratio': 0.5, 'recall_difference': 0.5, 'recall_ratio': 0.5}}
        """
        check_choice("method", method, METHODS)
        options = _options(locals())
        return _table(self._frame, lambda q: disparity_shape(q, method), options)


FairnessMethods.fairness.__doc__ = (FairnessMethods.fairness.__doc__ or "").format(
    common=_COMMON_DOC
)
FairnessMethods.disparity.__doc__ = (FairnessMethods.disparity.__doc__ or "").format(
    common=_COMMON_DOC
)

_MEASURE_DOC = {
    "demographic_parity": (
        "selection rate",
        "the share of rows predicted positive, Σ w·[score ≥ t] / Σ w",
    ),
    "equalized_odds": (
        "true and false positive rates",
        'TPR = TP / (TP + FN) and FPR = FP / (FP + TN); ``agg="worst_case"`` (default) '
        'takes the larger difference (smaller ratio) of the two, ``agg="mean"`` their mean',
    ),
    "equal_opportunity": ("true positive rate", "TPR = TP / (TP + FN)"),
}


def _measure_method(measure: str, kind: str) -> Callable[..., Any]:
    """The namespace method ``<measure>_<kind>`` (fairlearn's function of that name)."""
    name = f"{measure}_{kind}"
    rates = list(MEASURES[measure])

    # disparity's arguments but metrics= (the measure's rates), and agg= with two rates
    disparity = inspect.signature(FairnessMethods.disparity)
    sig = disparity.replace(
        parameters=[p for p in disparity.parameters.values() if p.name != "metrics"],
        return_annotation="float | Interval | pl.DataFrame | pl.LazyFrame",
    )

    def method(self: FairnessMethods, *args: Any, agg: Any = None, **kwargs: Any) -> Any:
        bound = sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        if agg is not None and len(rates) == 1:
            raise InvalidParameterError(f"agg= combines two rates: {name} has one")
        agg = "worst_case" if agg is None else agg
        check_choice("method", a["method"], METHODS)
        check_choice("agg", agg, AGGS)
        options = {**_options(a), "metrics": rates}
        out = _table(
            self._frame, lambda q: measure_shape(q, a["method"], measure, kind, str(agg)), options
        )
        if isinstance(out, pl.LazyFrame) or normalize_by(a["by"]):
            return out
        if a["ci"] is None:
            return out.item()
        return Interval(*out.row(0))

    params = list(sig.parameters.values())
    if len(rates) > 1:  # equalized odds: agg= (fairlearn's default "worst_case")
        at = [p.name for p in params].index("by")
        keyword = inspect.Parameter.KEYWORD_ONLY
        params.insert(at, inspect.Parameter("agg", keyword, default="worst_case", annotation="str"))
    method.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    method.__name__ = method.__qualname__ = name
    what, definition = _MEASURE_DOC[measure]
    form = "difference: max − min" if kind == "difference" else "ratio: min / max"
    method.__doc__ = (
        f"{measure.replace('_', ' ').capitalize()} {kind}: the {form} of the groups' {what}.\n\n"
        f"        fairlearn's ``{name}`` with the conventions of SPEC §2, from\n"
        f"        :meth:`disparity` of {', '.join(rates)} ({definition}).\n"
        '        ``method="to_overall"`` compares each group with all rows instead. A group\n'
        "        whose rate is undefined (no positive row for a true positive rate) is left\n"
        "        out, where fairlearn counts 0; with no group left the value is undefined (an\n"
        "        error without ``by``, null and a warning with it).\n"
        f"{_COMMON_DOC}\n\n"
        "        Returns\n        -------\n"
        "        float, Interval, pl.DataFrame or pl.LazyFrame\n"
        "            The value (``pe.Interval(value, lower, upper)`` with ``ci=``); with\n"
        f"            ``by`` a DataFrame of the groups and ``{name}`` (and its bounds);\n"
        "            a LazyFrame on a LazyFrame.\n\n"
        "        References\n        ----------\n"
        "        Hardt, Price & Srebro (2016), Equality of opportunity in supervised\n"
        "        learning, NeurIPS; fairlearn 0.15 ``fairlearn.metrics``.\n"
    )
    return method


for _measure in MEASURES:
    for _kind in ("difference", "ratio"):
        setattr(FairnessMethods, f"{_measure}_{_kind}", _measure_method(_measure, _kind))
