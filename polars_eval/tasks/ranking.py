"""Ranking methods of the ``.eval`` namespace (SPEC §7): per-query metrics averaged over queries.

Every method takes ``query=`` (the query id column, or several) and evaluates in two
stages: per query (``group_by([*by, *query])`` and the metrics' expression, the one engine
of :mod:`polars_eval.metrics.ranking`), then the mean over queries per ``by`` group (queries
whose value is null, those with no relevant item, are left out of the mean; weighted by
a query weight with ``weight=``). ``per_query=True`` stops after the first stage: one row
per query. ``item=`` names the item column; when given, an item repeated within one query
is an error naming the query and the item. A query split across ``by`` groups counts as
one query per group.

The generated namespace method of a per-query expression would compute one value over
the whole frame as if it were one query, so each ranking metric gets its method here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core import units
from polars_eval._core import windows as _windows
from polars_eval._core.planner import normalize_by
from polars_eval._core.table import Checks, Output, Query, Stage, Table, finish, run
from polars_eval._core.windows import Grouping, Units
from polars_eval._exprs import column_name, count_true, to_expr, to_float
from polars_eval._typing import Interval, IntoExpr
from polars_eval._validate import Check
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.metrics.ranking import engine as rk
from polars_eval.tasks._methods import method_doc

Frame = pl.DataFrame | pl.LazyFrame
WEIGHT = "__pe_query_weight"
METRICS = "__pe_metrics"


def _keys(value: str | Sequence[str] | None, arg: str) -> list[str]:
    cols = normalize_by(value)
    if arg == "query" and not cols:
        raise InvalidParameterError("query= is required: the column(s) identifying a query")
    for col in cols:
        if not isinstance(col, str):
            raise InvalidParameterError(f"{arg}= takes column names; got {type(col).__name__}")
    return cols


def duplicate_check(keys: list[str], item: IntoExpr) -> Check:
    """An item repeated within one query (and ``by`` group) is an error naming both."""
    item_expr = to_expr(item)
    label = pl.concat_str(
        [pl.lit("query ")]
        + [pl.col(k).cast(pl.String).fill_null("null") for k in keys[-1:]]
        + [pl.lit(" item "), item_expr.cast(pl.String).fill_null("null")]
    )
    return Check(
        column_name(item),
        pl.struct([*[pl.col(k) for k in keys], item_expr.alias("__pe_item")]).is_duplicated(),
        label,
        "must not repeat an item within a query; found {n} duplicated rows",
    )


def constant_weight_check(keys: list[str], weight: IntoExpr) -> Check:
    """A query weight must be the same on every row of the query."""
    w = to_float(weight)
    return Check(
        column_name(weight),
        w.drop_nulls().n_unique().over(keys) > 1,
        pl.concat_str([pl.lit("query "), pl.col(keys[-1]).cast(pl.String).fill_null("null")]),
        "must hold one weight per query (a query weight); found {n} rows in queries with several",
    )


def run_ranking(frame: Frame, **arguments: Any) -> pl.DataFrame | pl.LazyFrame:
    """The ranking table of :func:`ranking_table` (whose arguments these are) over
    ``frame``: collected on a DataFrame, lazy on a LazyFrame (errors at collect)."""
    return run(ranking_table(**arguments), frame)


def ranking_table(
    *,
    relevance: IntoExpr,
    score: IntoExpr,
    specs: list[rk.Spec],
    query: list[str],
    by: list[str],
    item: IntoExpr | None,
    ties: str,
    min_relevance: float,
    no_relevant: str | None,
    unscored: str,
    per_query: bool,
    validate: bool,
    strict: bool = True,
    baseline: list[rk.Spec] | None = None,
    counts: bool = False,
    weight: IntoExpr | None = None,
    unjudged: str = "ignore",
    partial: bool = False,
    ci: units.UnitCI | None = None,
    grouping: Grouping | None = None,
) -> Table:
    """The ranking table: validate, evaluate per query (the metrics' own engine), then
    average per ``by`` group (a second stage over the query keys, which it averages away).
    ``partial=True`` stops the second stage at its sums per ``by`` group, which add up over
    disjoint sets of whole queries (:func:`combine_partials` finishes them); with
    ``ci="bootstrap"`` it stops at one row per query instead (the resamples need every
    query's value). ``ci`` (:func:`units.unit_ci`) adds each mean's interval over queries.
    """
    units.check_no_per_unit(ci, per_query, "per_query")
    names = [spec.out for spec in [*specs, *(baseline or [])]]
    # a row with a null weight is ignored, as one with a null relevance and score (BAD_INPUTS
    # row 1: neither an unjudged nor an unretrieved item)
    graded, scored = relevance, score
    if weight is not None:
        weighted_row = to_float(weight).is_not_null()
        graded = pl.when(weighted_row).then(to_float(relevance))
        scored = pl.when(weighted_row).then(to_float(score))
    values = rk.query_metrics(
        rk.query_state(graded, scored, ties=ties),
        specs,
        ties=ties,
        unscored=unscored,
        min_relevance=float(min_relevance),
        no_relevant=no_relevant,
        baseline=baseline or (),
        as_struct=True,
        counts=True,  # the number of relevant items, for n_excluded
        unjudged=unjudged,
    )
    first = [values.alias(METRICS)]
    if weight is not None:
        first.append(to_float(weight).drop_nulls().first().alias(WEIGHT))

    def middle(grouped: pl.LazyFrame) -> pl.LazyFrame:
        return grouped.unnest(METRICS)

    return _table(
        first=first,
        names=names,
        args={"relevance": relevance, "score": score, "item": item, "weight": weight},
        query=query,
        by=by,
        item=item,
        per_query=per_query,
        validate=validate,
        strict=strict,
        middle=middle,
        counts=counts and no_relevant is None,
        zero_counts=counts and no_relevant is not None,
        weighted=weight is not None,
        reasons={spec.out: _reason(spec.metric) for spec in [*specs, *(baseline or [])]},
        partial=partial,
        ci=ci,
        grouping=grouping,
    )


def _reason(metric: str) -> str:
    """Why a value of ``metric`` can be null (the registry's word; the engine's formulas
    that are no public metric share the rule of every ranking metric)."""
    info = _registry.REGISTRY.get(metric)
    return info.undefined if info is not None and info.undefined else rk.NO_RELEVANT_ITEM


INPUTS: dict[str, Any] = {
    "relevance": "relevance",
    "score": "score",
    # the item column only names rows for the duplicate check: a null item drops no row
    "item": "row_id",
    "weight": "weight",
}
"""The input roles of the ranking plan."""

COUNTS = ("n_queries", "n_excluded")


def _partial_sums(
    names: Sequence[str],
    *,
    weighted: bool,
    counts: bool,
    zero_counts: bool,
    ci: units.UnitCI | None = None,
) -> list[pl.Expr]:
    """The second stage's sums over the queries of a group (:func:`units.unit_sums`: for
    each metric the (query weighted) sum of its values, the (weight of the) queries where
    it is defined, and with ``ci="t"`` the sum of squares); the number of queries and of
    those without a relevant item. Sums of disjoint sets of queries add up to the sums of
    their union."""
    weight = pl.col(WEIGHT) if weighted else None
    aggs = units.unit_sums(names, weight=weight, ci=ci)
    if counts or zero_counts:
        excluded = count_true(pl.col(rk.NREL) == 0.0) if counts else pl.lit(0)
        aggs = [
            pl.len().cast(pl.Int64).alias(COUNTS[0]),
            excluded.cast(pl.Int64).alias(COUNTS[1]),
            *aggs,
        ]
    return aggs


def _means(names: Sequence[str], counts: bool, ci: units.UnitCI | None = None) -> list[pl.Expr]:
    """The (query-weighted) mean over queries from the sums of :func:`_partial_sums`;
    null where no query has a value; with ``ci="t"`` its bounds (:func:`units.unit_means`)."""
    return [*(pl.col(c) for c in COUNTS if counts), *units.unit_means(names, ci)]


def combine_partials(
    parts: Sequence[pl.DataFrame], arguments: Mapping[str, Any], source: pl.LazyFrame
) -> pl.DataFrame:
    """What :func:`run_ranking` gives on all rows, from its ``partial=True`` results on
    disjoint sets of whole queries (``arguments``: those of run_ranking). Null values are
    reported as run_ranking reports them; ``source`` (every row, lazy) is read only to say
    why nothing could be evaluated."""
    specs = [*arguments["specs"], *(arguments.get("baseline") or [])]
    by: list[str] = arguments["by"]
    ci: units.UnitCI | None = arguments.get("ci")
    names = [s.out for s in specs]
    counts = bool(arguments.get("counts"))
    merged = pl.concat(parts, how="vertical_relaxed")
    if ci is not None and ci.bootstrap:  # the parts are one row per query: one second stage
        zero_counts = arguments.get("no_relevant") is not None
        out = _second_stage(
            merged.lazy(),
            names,
            by=by,
            query=arguments["query"],
            weighted=arguments.get("weight") is not None,
            counts=counts and not zero_counts,
            zero_counts=counts and zero_counts,
            ci=ci,
        ).collect()
    else:
        sums = pl.col([c for c in merged.columns if c not in by]).sum()
        merged = merged.group_by(by).agg(sums) if by else merged.select(sums)
        out = merged.select(*by, *_means(names, counts, ci))
    if by:
        out = out.sort(by, nulls_last=True)
    checks = Checks(INPUTS, {key: arguments.get(key) for key in INPUTS})
    output = Output(
        {spec.out: _reason(spec.metric) for spec in specs}, strict=arguments.get("strict", True)
    )
    return finish(out, output, grouped=bool(by), no_rows=lambda: checks.no_rows(source))


PARTITION_ROWS = 2_500_000
"""A DataFrame longer than this is evaluated in slices of whole queries: the engine holds a
dozen columns as long as its input (the planner's ``slice_rows``)."""


def _table(
    *,
    first: list[pl.Expr],
    names: list[str],
    args: Mapping[str, Any],
    query: list[str],
    by: list[str],
    item: IntoExpr | None,
    per_query: bool,
    validate: bool,
    strict: bool,
    middle: Callable[[pl.LazyFrame], pl.LazyFrame],
    counts: bool,
    zero_counts: bool,
    weighted: bool = False,
    reasons: Mapping[str, str] | None = None,
    partial: bool = False,
    ci: units.UnitCI | None = None,
    grouping: Grouping | None = None,
) -> Table:
    """The table of the ranking metrics: the engine per query (``by`` + ``query`` groups),
    then the second stage: one row per query, or the (query-weighted) mean per ``by``
    group with the number of queries and of those left out for having no relevant item."""
    keys = by + query

    if grouping is not None:
        by = grouping.finest
        keys = by + query
    by_arg = "grouping_sets" if grouping is not None and grouping.stacked else "by"

    def key_checks(schema: Mapping[str, Any]) -> list[Check]:
        missing = [(arg, c) for arg, cols in (("query", query), (by_arg, by)) for c in cols]
        for arg, col in missing:
            if col not in schema:
                raise DataValidationError(f'column "{col}" (argument {arg}=) not found')
        overlap = [c for c in by if c in query]
        if overlap:
            raise DataValidationError(
                f'column "{overlap[0]}" is given both as query= and {by_arg}='
            )
        checks = []
        if item is not None:
            checks.append(duplicate_check(keys, item))
        if weighted:
            checks.append(constant_weight_check(keys, args["weight"]))
        return checks

    def second_stage(per_key: pl.LazyFrame) -> pl.LazyFrame:
        per_key = middle(per_key)
        if per_query:
            return per_key.select(keys + names)
        if partial and ci is not None and ci.bootstrap:  # every query's value, for the resamples
            kept = [*keys, *names, rk.NREL, *([WEIGHT] if weighted else [])]
            return per_key.select(kept)
        options = {"weighted": weighted, "counts": counts, "zero_counts": zero_counts}
        if partial:
            aggs = _partial_sums(names, **options, ci=ci)
            return per_key.group_by(by).agg(aggs) if by else per_key.select(aggs)
        return _second_stage(per_key, names, by=by, query=query, ci=ci, **options)

    undefined = {name: (reasons or {}).get(name, rk.NO_RELEVANT_ITEM) for name in names}
    checks = Checks(INPUTS, args, validate, [key_checks])
    if grouping is not None:  # per (group, step, query), summed per (group, step), merged
        if per_query:
            raise InvalidParameterError(
                "per_query=True is not available with time=/every= or grouping sets"
            )
        sums = _partial_sums(names, weighted=weighted, counts=counts, zero_counts=zero_counts)
        merged = [pl.col(e.meta.output_name()).sum() for e in sums]

        def reduce(per_key: pl.LazyFrame, group: list[str], extra: list[pl.Expr]) -> pl.LazyFrame:
            per_key = middle(per_key)
            aggs = [*sums, *extra]
            return per_key.group_by(group).agg(aggs) if group else per_key.select(aggs)

        return Table(
            Query(first, _means(names, counts or zero_counts), merges=merged, last=merged),
            checks,
            Output(undefined),
            grouping=grouping,
            stage=Stage(units=Units(query, reduce)),
        )
    return Table(
        Query(first),
        checks,
        Output({} if partial else undefined, strict=strict),
        by=by,
        stage=Stage(
            second_stage, keys=query, out_by=keys if per_query else by, slice_rows=PARTITION_ROWS
        ),
    )


def _second_stage(
    per_key: pl.LazyFrame,
    names: Sequence[str],
    *,
    by: list[str],
    query: list[str],
    weighted: bool,
    counts: bool,
    zero_counts: bool,
    ci: units.UnitCI | None,
) -> pl.LazyFrame:
    """The mean over queries per ``by`` group (one row per query in ``per_key``), the
    counts and, with ``ci``, each mean's interval: Student's t from the sums, or the
    bootstrap of the queries (:mod:`polars_eval.stats.units`)."""
    aggs = _partial_sums(names, weighted=weighted, counts=counts, zero_counts=zero_counts, ci=ci)
    sums = per_key.group_by(by).agg(aggs) if by else per_key.select(aggs)
    table = sums.select(*by, *_means(names, counts or zero_counts, ci))
    weight = WEIGHT if weighted else None
    return units.with_bootstrap(table, per_key, names, by, query, ci, weight)


# ---------------------------------------------------------------------------------------
# One method per registered ranking metric
# ---------------------------------------------------------------------------------------

_METHOD_OPTIONS = (
    *("query", "item", "weight", "per_query", "by", "validate"),
    *("ci", "level", "n_resamples", "seed", "time", "every", "period", "offset"),
)
"""The arguments of ``df.eval.ranking`` that the method of a ranking metric takes after the
metric's own, in this order and with ``df.eval.ranking``'s defaults."""

_METHOD_PARAMS = """query : str or list of str
    The query column(s) (required): the metric is computed per query, then averaged.
item : str, optional
    The item column: enables the check that no item repeats within a query.
weight : str, optional
    A query weight (one value per query, >= 0): the mean over queries is then weighted.
per_query : bool, default False
    One row per query (the query columns and the value) instead of the mean.
by : str or list of str, optional
    Group columns: one mean per group instead of one for the frame.
validate : bool, default True
    Check the rows first (SPEC §2): relevance and scores finite, one query weight per
    query; a clear ``pe.DataValidationError`` naming the column otherwise.
ci : {"t", "bootstrap"}, optional
    An interval of the mean over queries (SPEC §14): ``"t"``, mean ± t_{n−1} · s / √n
    over the n queries with a value; ``"bootstrap"``, the percentile interval of the
    queries resampled with replacement. The result becomes ``pe.Interval(value, lower,
    upper)`` (columns ``{name}``, ``{name}_lower``, ``{name}_upper`` with ``by``).
level : float, default 0.95
    The interval's confidence level.
n_resamples, seed : int, optional
    With ``ci="bootstrap"``: the number of resamples (1000) and the seed (0).
time, every, period, offset : optional
    Windows (SPEC §13): the mean over the queries of each window of ``group_by_dynamic(time,
    every=, period=, offset=, closed="left", label="left", start_by="window",
    group_by=by)``, as a table; a query's rows must fall in one ``every`` step."""

_METHOD_RETURNS = """float
    Without ``by`` (and ``per_query``) on a DataFrame: the mean over the queries that have
    a relevant item (``pe.UndefinedMetricError`` when none has; "no rows to evaluate" for
    an empty input, every row null or of query weight 0).
pl.DataFrame
    With ``by``: the group columns and ``{name}``, one row per group; with
    ``per_query=True``: one row per query.
pl.LazyFrame
    On a LazyFrame: the same, computed (and validated) at ``collect()``."""


def _spec(out: str, metric: str, arguments: Mapping[str, Any]) -> rk.Spec:
    return rk.Spec(
        out,
        metric,
        k=arguments.get("k"),
        gain=arguments.get("gain", "exp2"),
        denominator=arguments.get("denominator", "all"),
        max_relevance=float(arguments.get("max_relevance", 4.0)),
        log_base=float(arguments.get("log_base", 2.0)),
        p=float(arguments.get("p", 0.8)),
    )


def _make_method(
    info: _registry.MetricInfo, out: str | None = None, defaults: Mapping[str, Any] | None = None
) -> Any:
    sig = info.signature
    if defaults:
        sig = sig.replace(
            parameters=[
                p.replace(default=defaults[p.name]) if p.name in defaults else p
                for p in sig.parameters.values()
            ]
        )
    out_name = out or info.name

    @functools.wraps(info.fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = method.__signature__.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["self"]
        o = {name: arguments.pop(name) for name in _METHOD_OPTIONS}
        info.fn(**arguments)  # checks every option, raising InvalidParameterError
        by_cols = _keys(o["by"], "by")
        interval = units.unit_ci(o["ci"], o["level"], o["n_resamples"], o["seed"])
        window = {k: o[k] for k in ("time", "every", "period", "offset")}
        windows = _windows.grouping(o["by"], **window)
        result = run_ranking(
            self._frame,
            relevance=arguments["relevance"],
            score=arguments["score"],
            specs=[_spec(out_name, info.name, arguments)],
            query=_keys(o["query"], "query"),
            by=by_cols,
            item=o["item"],
            weight=o["weight"],
            ties=arguments.get("ties", "average"),
            min_relevance=arguments.get("min_relevance", 1.0),
            no_relevant=arguments.get("no_relevant"),
            unscored=arguments.get("unscored", "ignore"),
            per_query=o["per_query"],
            validate=o["validate"],
            unjudged=arguments.get("unjudged", "ignore"),
            ci=interval,
            grouping=windows,
        )
        if isinstance(result, pl.LazyFrame) or by_cols or o["per_query"] or windows is not None:
            return result
        if interval is not None:
            return Interval(*result.row(0))
        return result.item()

    # the options as df.eval.ranking declares them; the namespace types them (its _typed)
    table = inspect.signature(_ranking).parameters
    params = [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *sig.parameters.values(),
        *(table[name].replace(annotation=inspect.Parameter.empty) for name in _METHOD_OPTIONS),
    ]
    method.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=params, return_annotation="float | pl.DataFrame | pl.LazyFrame"
    )
    method.__doc__ = method_doc(
        info,
        params=_METHOD_PARAMS,
        returns=_METHOD_RETURNS.format(name=out_name),
        form="per query, then the mean over queries",
    )
    if out is not None:
        method.__name__ = out
    return method


def metric_method(info: _registry.MetricInfo, base: Any = None) -> Any:
    """The namespace method of a registered ranking metric (the task list's
    ``metric_method``): the mean over queries. ``map`` is ``ap_at_k`` over the whole list
    (trec_eval's map). ``base``, the generic method the namespace passes, is not used."""
    if info.name == "map":
        return _make_method(_registry.get("ap_at_k"), out="map", defaults={"k": None})
    return _make_method(info)


# ---------------------------------------------------------------------------------------
# df.eval.ranking: every metric at every cutoff
# ---------------------------------------------------------------------------------------


def _table_metrics() -> tuple[list[str], list[str]]:
    """The metrics of ``df.eval.ranking``, from the registry: those with a cutoff ``k`` (in
    registration order), then those of the whole list (11-point AP, R-precision). A metric
    whose short name an earlier one has is that one's columns under its own name (``map``
    is ``ap_at_k``'s whole-list mean): it is left to the other."""
    cutoff: list[str] = []
    whole: list[str] = []
    shorts: set[str] = set()
    for info in _registry.by_task("ranking"):
        short = info.extra.get("short", info.name)
        if short in shorts:
            continue
        shorts.add(short)
        (cutoff if "k" in info.signature.parameters else whole).append(info.name)
    return cutoff, whole


ALL_CUTOFFS = object()
"""A chosen metric without ``@k``: evaluated at every cutoff of ``k``."""


def _choose(metrics: Sequence[str] | None, ties: str) -> list[tuple[str, Any]]:
    """(metric name, cutoff) pairs for ``df.eval.ranking``; the cutoff is :data:`ALL_CUTOFFS`
    unless the entry names one (``"ndcg@10"``). By default the metrics of the registry's
    default table (:func:`~polars_eval._core.registry.default_table`: 11-point AP with
    ``ties="first"`` only), in the table's order (the metrics with a cutoff first)."""
    cutoff, whole = _table_metrics()
    available = [*cutoff, *whole]
    if metrics is None:
        default = _registry.default_table("ranking", ties=ties)
        return [(m, ALL_CUTOFFS) for m in available if m in default]
    stems = {_registry.get(m).extra.get("short", m): m for m in available}
    chosen: list[tuple[str, Any]] = []
    for entry in [metrics] if isinstance(metrics, str) else metrics:
        name, at, cut_text = str(entry).partition("@")
        metric = stems.get(name, name)
        if metric not in available:
            raise InvalidParameterError(
                f"unknown ranking metric {entry!r}; choose from {sorted(stems)}, "
                f'optionally with a cutoff ("ndcg@10")'
            )
        cut: Any = ALL_CUTOFFS
        if at:
            if metric in whole or not cut_text.isdigit() or int(cut_text) <= 0:
                raise InvalidParameterError(
                    f"metrics entry {entry!r}: the cutoff after '@' must be a positive int"
                    + (f" ({metric} takes none)" if metric in whole else "")
                )
            cut = int(cut_text)
        if (metric, cut) not in chosen:
            chosen.append((metric, cut))
    return chosen


def _ranking(
    self: Any,
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    query: str | Sequence[str],
    k: int | None | Sequence[int | None] = (1, 5, 10),
    gain: str = "exp2",
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    max_relevance: float = 4.0,
    unscored: str = "ignore",
    unjudged: str = "ignore",
    log_base: float = 2.0,
    p: float = 0.8,
    metrics: Sequence[str] | None = None,
    item: IntoExpr | None = None,
    weight: IntoExpr | None = None,
    baseline: bool = False,
    per_query: bool = False,
    by: str | Sequence[str] | None = None,
    validate: bool = True,
    ci: str | None = None,
    level: float = 0.95,
    n_resamples: int | None = None,
    seed: int | None = None,
    time: str | None = None,
    every: str | int | None = None,
    period: str | int | None = None,
    offset: str | int | None = None,
    grouping_sets: Sequence[Sequence[str]] | None = None,
    rollup: Sequence[str] | None = None,
    min_rows: int | None = None,
) -> Any:
    """Every ranking metric at every cutoff, one wide row per group (mean over queries).

    Columns ``<metric>@<k>`` for each cutoff in ``k`` (``None`` = the whole list, no
    suffix): ``ndcg``, ``dcg``, ``precision``, ``recall``, ``hit_rate``, ``map`` (mean
    AP@k), ``mrr``, ``err``, ``cg``; then the whole-list ``ap_11pt`` (by default with
    ``ties="first"`` only: with ``ties="average"`` its exact expectation, costly on large
    tie blocks, is computed when named in ``metrics=``) and ``r_precision``; plus ``n_queries`` and ``n_excluded`` (the
    queries with no relevant item, left out of every mean; 0 with ``no_relevant="zero"``).
    By default (no ``metrics=``) the whole-list ``ndcg``, ``map`` and ``mrr`` come beside
    their cutoffs whatever ``k`` holds. The metrics of SPEC §12 (``f1``, ``fallout``,
    ``rbp``, ``rbp_residual`` at each cutoff, the whole-list ``bpref``) are computed when
    named in ``metrics=`` (``p=`` is RBP's persistence; ``log_base=`` the base of DCG's
    discount; ``unjudged=`` as in every ranking metric).
    The rows of each query are sorted once; every metric is finalized from that state.
    ``metrics=`` keeps a subset, by column stem or metric name (``["ndcg", "map", "mrr"]``),
    each at every cutoff of ``k``; an entry with a cutoff, ``"ndcg@10"``, is that metric
    at that cutoff only (``k=None, metrics=["ndcg@10", "map", "mrr"]`` gives NDCG@10, MAP
    and MRR over the whole list, one sort per query for the three).
    ``weight=`` names a query weight (one value per query): weighted means over queries.
    ``item=`` names the item column: an item repeated within a query is then an error.

    ``baseline=True`` adds ``<column>_baseline``: the same metrics for a constant score
    (every item tied, ``ties="average"``), the default predictor of SPEC §8.

    ``ci="t"`` adds ``<column>_lower`` and ``<column>_upper`` after each metric column:
    Student's interval of the mean over queries at ``level`` (mean ± t_{n−1} · s / √n over
    the n queries with a value; null below two), computed from each group's count, Σx and
    Σx², so ``pe.Evaluation(...).compute(ci="t")`` gives it too. ``ci="bootstrap"``:
    the percentile interval of the queries resampled with replacement (``n_resamples=``,
    ``seed=``). See :mod:`polars_eval.stats.units` (SPEC §14).

    Returns a one-row DataFrame without ``by`` (a LazyFrame on a LazyFrame); with
    ``per_query=True`` one row per query (without the counts). Without ``by``, an input
    with no row to evaluate (empty, every row null or of query weight 0) raises
    ``UndefinedMetricError`` "no rows to evaluate" (BAD_INPUTS rows 5, 37, 49).

    ``time=``, ``every=`` (``period=``, ``offset=``) give the means over the queries of
    each time window, and ``grouping_sets=`` / ``rollup=`` (``min_rows=``: rows) of each
    slice (SPEC §13): the queries are evaluated once per (group, step), their sums merged
    per window and slice. A query's rows must fall in one ``every`` step (else an error
    says how many queries do not).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"q": [1, 1, 1, 2, 2, 2], "rel": [1, 0, 0, 0, 1, 0],
    ...                    "s": [0.9, 0.5, 0.1, 0.8, 0.7, 0.1]})
    >>> df.eval.ranking("rel", "s", query="q", k=[1, 3]).select("n_queries", "mrr@3", "precision@1")
    shape: (1, 3)
    ┌───────────┬───────┬─────────────┐
    │ n_queries ┆ mrr@3 ┆ precision@1 │
    │ ---       ┆ ---   ┆ ---         │
    │ i64       ┆ f64   ┆ f64         │
    ╞═══════════╪═══════╪═════════════╡
    │ 2         ┆ 0.75  ┆ 0.5         │
    └───────────┴───────┴─────────────┘
    """
    arguments = dict(locals())  # every argument by name (the first statement: nothing else)
    del arguments["self"]
    return run_ranking(self._frame, **table_arguments(**arguments))


def table_arguments(**arguments: Any) -> dict[str, Any]:
    """The :func:`run_ranking` arguments of ``df.eval.ranking(**arguments)`` (with its
    defaults; the options checked), without a frame: the spilled evaluation runs them on
    parts of its rows (:mod:`polars_eval.scale.spill`)."""
    bound = inspect.signature(_ranking).bind(None, **arguments)
    bound.apply_defaults()
    a = bound.arguments
    k, ties, metrics = a["k"], a["ties"], a["metrics"]
    gain, max_relevance, log_base, p = a["gain"], a["max_relevance"], a["log_base"], a["p"]
    min_relevance, no_relevant, unscored = a["min_relevance"], a["no_relevant"], a["unscored"]
    unjudged, per_query = a["unjudged"], a["per_query"]
    ci = units.unit_ci(a["ci"], a["level"], a["n_resamples"], a["seed"])
    units.check_no_per_unit(ci, per_query, "per_query")
    cutoffs: list[int | None] = list(k) if isinstance(k, (list, tuple)) else [k]  # type: ignore[list-item]
    if not cutoffs:
        raise InvalidParameterError("k must name at least one cutoff")
    for cut in cutoffs:  # checks the options
        rk.Options(cut, ties, min_relevance, no_relevant, unscored, gain, unjudged)
    rk.check_number("max_relevance", max_relevance)
    rk.check_log_base(log_base)
    rk.check_persistence(p)
    chosen = _choose(metrics, ties)
    if metrics is None:  # whole-list NDCG, MAP and MRR beside the cutoffs (SPEC §7)
        whole = {"ndcg", "ap_at_k", "mrr"}
        chosen = [p for m, cut in chosen for p in ([(m, None)] if m in whole else []) + [(m, cut)]]

    def specs_for(pairs: list[tuple[str, Any]], suffix: str) -> list[rk.Spec]:
        out: dict[str, rk.Spec] = {}
        for name, fixed in pairs:
            short = _registry.get(name).extra.get("short", name)
            if "k" not in _registry.get(name).signature.parameters:  # a whole-list metric
                out[short + suffix] = rk.Spec(short + suffix, name)
                continue
            for cut in cutoffs if fixed is ALL_CUTOFFS else [fixed]:
                col = f"{short}{rk._suffix(cut)}{suffix}"
                out[col] = rk.Spec(
                    col,
                    name,
                    k=cut,
                    gain=gain,
                    max_relevance=float(max_relevance),
                    log_base=float(log_base),
                    p=float(p),
                )
        return list(out.values())

    specs = specs_for(chosen, "")
    base = None
    if a["baseline"]:
        base = specs_for(
            [(m, cut) for m, cut in chosen if m not in ("err", "ap_11pt")], "_baseline"
        )
    return {
        "relevance": a["relevance"],
        "score": a["score"],
        "specs": specs,
        "query": _keys(a["query"], "query"),
        "by": _keys(a["by"], "by"),
        "item": a["item"],
        "weight": a["weight"],
        "ties": ties,
        "min_relevance": min_relevance,
        "no_relevant": no_relevant,
        "unscored": unscored,
        "per_query": per_query,
        "validate": a["validate"],
        "strict": False,
        "baseline": base,
        "counts": not per_query,
        "unjudged": unjudged,
        "ci": ci,
        "grouping": _windows.grouping(
            a["by"],
            grouping_sets=a["grouping_sets"],
            rollup=a["rollup"],
            time=a["time"],
            every=a["every"],
            period=a["period"],
            offset=a["offset"],
            min_rows=a["min_rows"],
        ),
    }


class RankingMethods:
    """``df.eval.ranking``: every metric at every cutoff, mean over queries."""

    _frame: Frame
    ranking = _ranking


def evaluation_request(d: Any) -> tuple[dict[str, Any], bool]:
    """``pe.Evaluation``'s ``metrics=`` (columns of the ranking table) as arguments of
    ``df.eval.ranking`` (the task's hook, :class:`~polars_eval._core.tasks.Task`): only
    the columns kept are computed (``k=None`` and an entry per column: ``"ndcg@10"``,
    ``"map"`` for the whole list), unless a name is no table column (then the whole
    table); the names then select the columns (and name what is missing)."""
    if d.metrics is None:
        return {}, True
    entries: list[str] = []
    for name in d.metrics:
        if name in COUNTS:
            continue
        if d.options.get("baseline") and name.endswith("_baseline"):
            name = name[: -len("_baseline")]
        if name not in entries:
            entries.append(name)
    narrowed = {"k": None, "metrics": entries}
    try:
        table_arguments(**d.arguments(**narrowed))
    except InvalidParameterError:
        return {}, True
    return (narrowed if entries else {}), True
