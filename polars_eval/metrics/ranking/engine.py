"""The ranking engine (SPEC §7): the state of a query, the formulas, the evaluation of many
queries at once.

Every ranking metric (:mod:`polars_eval.metrics.ranking`) is a
:class:`~polars_eval._core.spec.MetricSpec` whose states are the rows of the query
(relevance and score, merged by concatenation: a query split across partitions merges
exactly), and this engine evaluates it, in the expressions, the namespace
(``df.eval.ndcg(..., query=)``, ``df.eval.ranking``) and :func:`polars_eval.trec_eval`
alike: per query, one sort of its rows by score, descending (:func:`query_state`, inside
the aggregation); then every query of the aggregation at once, laid out flat, each step one
vectorised column operation (:func:`evaluate`, called by the expression on the aggregated
states: :func:`query_metrics`). Each metric's formula is written once, over the totals of
the blocks of tied scores (:data:`FORMULAS`). The expectations of ERR and 11-point AP over
tie orders need a recurrence over each tie block, evaluated in numpy over every query at
once (:mod:`._err_ties`, :mod:`._ap11_ties`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from polars_eval._exprs import F64, NAN, count_true, to_expr, to_float
from polars_eval._params import check_choice, check_fraction, check_number, check_positive_int
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics.ranking._ap11_ties import expected_ap_11pt
from polars_eval.metrics.ranking._err_ties import expected_err
from polars_eval.metrics.ranking._runs import run_starts

TIES = ("average", "first")
GAINS = ("exp2", "linear")
NO_RELEVANT = (None, "zero")
UNSCORED = ("ignore", "unretrieved")
UNJUDGED = ("ignore", "nonrelevant")
DENOMINATORS = ("all", "min_k")

INPUTS = {"relevance": "relevance", "score": "score"}
NO_RELEVANT_ITEM = "the query has no relevant item (relevance >= min_relevance)"


# ---------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """The options every ranking metric shares (checked when the expression is built)."""

    k: int | None = 10
    ties: str = "average"
    min_relevance: float = 1.0
    no_relevant: str | None = None
    unscored: str = "ignore"
    gain: str = "exp2"
    unjudged: str = "ignore"

    def __post_init__(self) -> None:
        check_positive_int("k", self.k, allow_none=True)
        check_choice("ties", self.ties, TIES)
        check_number("min_relevance", self.min_relevance)
        if self.min_relevance <= 0:
            raise InvalidParameterError(
                f"min_relevance must be > 0 (a relevance of 0 is never relevant); got {self.min_relevance!r}"
            )
        check_choice("no_relevant", self.no_relevant, NO_RELEVANT)
        check_choice("unscored", self.unscored, UNSCORED)
        check_choice("gain", self.gain, GAINS)
        check_choice("unjudged", self.unjudged, UNJUDGED)


def _suffix(k: int | None) -> str:
    return "" if k is None else f"@{k}"


# ---------------------------------------------------------------------------------------
# The state of a query
# ---------------------------------------------------------------------------------------
#
# Every ranking metric, as an expression in the user's ``group_by(query).agg(...)``, in the
# namespace and in ``pe.trec_eval``, runs the same two steps:
#
# 1. in the aggregation (one group = one query), :func:`query_state`: the query's rows
#    sorted by score, descending (the one sort), as one list;
# 2. :func:`evaluate`, the engine, handed the states of many queries at once: the
#    expression maps it over the aggregated lists elementwise, so Polars calls it once per
#    batch of groups, never once per query (:func:`query_metrics`).
#
# Everything else (which rows count, the per-query counts, the ideal DCG) is the engine's:
# in the aggregation each further operation costs once per group, in the engine once.

QI = "__pe_qi"
ST = "__pe_st"
NREL = "__pe_R"
NRET = "__pe_n"
NNONREL = "__pe_N"
HASNAN = "__pe_nan"
IDEAL = "__pe_ideal"
INTERPOLATED = ("ap_11pt", "iprec_at_recall")
"""Metrics read from the interpolated precision at the 11 recall levels."""


@dataclass(frozen=True)
class Spec:
    """One output column of the engine: ``metric`` (a key of :data:`FORMULAS`) at cutoff ``k``."""

    out: str
    metric: str
    k: int | None = None
    gain: str = "exp2"
    denominator: str = "all"
    max_relevance: float = 4.0
    # ap_11pt / iprec_at_recall: "textbook" (recall >= level); "trec" (trec_eval 9.x's
    # 11pt_avg: at least floor(level * R + 0.9) relevant items above, computed in doubles
    # as trec_eval does); "trec10" (trec_eval 10: at least lround(level * R), half away
    # from zero)
    flavor: str = "textbook"
    # dcg / ndcg: the base of the logarithm of the discount (as scikit-learn's log_base)
    log_base: float = 2.0
    # rbp / rbp_residual: the persistence
    p: float = 0.8
    # ap_11pt / iprec_at_recall: the recall levels (None: 0, 0.1, ..., 1); ``k`` is the
    # index of iprec_at_recall's level
    levels: tuple[float, ...] | None = None
    # rprec_mult: the multiple of R whose precision is read (trec_eval's Rprec_mult)
    multiple: float = 1.0


def check_log_base(log_base: float) -> None:
    """The base of a logarithmic discount: a finite number > 1."""
    check_number("log_base", log_base)
    if log_base <= 1:
        raise InvalidParameterError(f"log_base must be > 1; got {log_base!r}")


def check_persistence(p: float) -> None:
    """RBP's persistence: a number in (0, 1)."""
    check_fraction("p", p, low_open=True, high_open=True)


def query_state(
    relevance: IntoExpr, score: IntoExpr, *, ties: str, tiebreak: IntoExpr | None = None
) -> pl.Expr:
    """In an aggregation over one query's rows: its state, the rows as
    ``List[Struct{s, r}]`` (Float64) sorted by score, descending, null scores last.

    Nothing is filtered here (the engine leaves out a row with a null relevance, and one
    with a null score unless ``unscored="unretrieved"``). ``ties="first"`` keeps the input
    order of tied rows (a stable sort); ``tiebreak`` orders them by that column,
    descending (trec_eval's document order).
    """
    r, s = to_float(relevance), to_float(score)
    by = [s] if tiebreak is None else [s, to_expr(tiebreak)]
    return (
        pl.struct(s.alias("s"), r.alias("r"))
        .sort_by(by, descending=True, nulls_last=True, maintain_order=ties == "first")
        .implode()
        .alias(ST)
    )


def kept_rows(r: pl.Expr, s: pl.Expr, *, unscored: str, unjudged: str) -> pl.Expr:
    """Per row: whether it counts (:func:`evaluate`): a relevance, and a score unless
    ``unscored="unretrieved"``; with ``unjudged="nonrelevant"``, any row with a score."""
    keep = r.is_not_null() if unscored == "unretrieved" else r.is_not_null() & s.is_not_null()
    return keep | s.is_not_null() if unjudged == "nonrelevant" else keep


GMAX = "__pe_gmax"
""":func:`leading_state`'s highest grade of a query (NaN when one is NaN)."""
READS = {
    "precision_at_k": (NRET,),
    "recall_at_k": (NREL,),
    "ap_at_k": (NREL,),
    "f1_at_k": (NREL, NRET),
    "relative_precision": (NREL, NRET),
    "fallout_at_k": (NNONREL,),
    "rbp_residual": (NRET,),
}
"""The query scalars the value of a metric reading the top of a list reads (besides the
shared guard: a relevant item, a NaN)."""


def leading_state(
    relevance: IntoExpr,
    score: IntoExpr,
    specs: Sequence[Spec],
    *,
    ties: str,
    unscored: str,
    min_relevance: float,
    unjudged: str,
    tiebreak: IntoExpr | None = None,
) -> pl.Expr:
    """In an aggregation over one query's rows: its state for the ``specs``, as
    :func:`query_state`, holding only the rows they read when each reads only the top of a
    list (:func:`reach`), with the query scalars those rows no longer give.

    Each expression of a ``group_by().agg`` holds its own state (Polars shares no
    aggregation between them): ``ndcg@10`` holds ~10 rows a query instead of every row.
    The rows held are the head of the query's sort (as :func:`query_state`: a stable sort,
    ``tiebreak`` after the score) down to the last row scored at least its threshold, the
    score at the largest cutoff among the ranked rows (``top_k``; the lowest of a shorter
    list) or the highest score of a ranked relevant item (+inf without one): whole tie
    blocks, so every sum over their blocks is that of the whole list (the rows
    :func:`leading_rows` keeps), and NaN scores (sorted first). Polars sorts the indices of
    a group and gathers only the head. With them, as a struct, what the engine reads from
    every row that counts (:func:`kept_rows`): NDCG's highest grades (highest first) or
    the highest grade (NaN when one is NaN; their guard: a relevant item, a NaN
    grade), and the scalars of :data:`READS` (:func:`query_metrics` hands them to
    :func:`evaluate`: :func:`_leading_scalars`).
    """
    read = reach(specs)
    if read is None:
        return query_state(relevance, score, ties=ties, tiebreak=tiebreak)
    cutoff, first = read
    r, s = to_float(relevance), to_float(score)
    keep = kept_rows(r, s, unscored=unscored, unjudged=unjudged)
    # the ranked rows: those that count with a score
    ranked = s.is_not_null() if unjudged == "nonrelevant" else r.is_not_null() & s.is_not_null()
    scored = s if unjudged == "nonrelevant" else pl.when(ranked).then(s)  # nulls: not ranked
    bounds = [] if cutoff is None else [scored.top_k(cutoff).min()]
    if first:
        bounds.append(pl.when(r >= min_relevance).then(scored).max())
    bound = bounds[0] if len(bounds) == 1 else pl.min_horizontal(bounds)
    threshold = bound.fill_null(float("inf"))
    by = [s] if tiebreak is None else [s, to_expr(tiebreak)]
    rows = (
        pl.struct(s.alias("s"), r.alias("r"))
        .sort_by(by, descending=True, nulls_last=True, maintain_order=ties == "first")
        .head((s >= threshold).sum())
        .implode()
    )
    # an unjudged item ranked as not relevant has grade 0 (evaluate)
    grade = pl.when(keep).then(r.fill_null(0.0) if unjudged == "nonrelevant" else r)
    cuts = [spec.k for spec in specs if spec.metric == "ndcg" and spec.k is not None]
    fields = [rows.alias(ST)]
    scalars = {}
    if cuts:  # highest first, nulls (rows that do not count) last; as fast as top_k
        top = grade.sort(descending=True, nulls_last=True).head(max(cuts))
        fields.append(top.implode().alias(IDEAL))
    else:
        scalars[GMAX] = grade.nan_max()
    reads = {c for spec in specs for c in READS.get(spec.metric, ())}
    if NREL in reads:
        scalars[NREL] = count_true(keep & (r >= min_relevance)).cast(F64)
    if NRET in reads:
        scalars[NRET] = count_true(ranked).cast(F64)
    if NNONREL in reads:
        scalars[NNONREL] = count_true(keep & r.is_not_null() & (r < min_relevance)).cast(F64)
    # each scalar as a list of one: Polars builds a struct of aggregated scalars and lists
    # per group, ~2x the cost of a struct of lists (Polars 2.1)
    fields += [x.implode().alias(n) for n, x in scalars.items()]
    return pl.struct(fields).alias(ST)


def _leading_scalars(states: pl.DataFrame, min_relevance: float) -> pl.DataFrame:
    """The fields of :func:`leading_state` as the per-query columns :func:`evaluate` reads:
    a NaN grade (:data:`HASNAN`, or-ed with the rows'), and, when no spec reads its value, a
    relevant item (``__pe_R`` 1 or 0) from the highest grade (the first ideal grade: NaN
    sorts first). The scalars no spec reads are counted by :func:`evaluate` from the rows
    held (and not read)."""
    c = pl.col
    states = states.with_columns(
        c(n).list.first() for n in (GMAX, NREL, NRET, NNONREL) if n in states.columns
    )
    if IDEAL in states.columns:  # sorted: NaN first
        states = states.with_columns(c(IDEAL).list.first().alias(GMAX))
    top = c(GMAX)
    guard = [] if NREL in states.columns else [(top >= min_relevance).fill_null(False).cast(F64)]
    return states.with_columns(
        top.is_nan().fill_null(False).alias(HASNAN), *[g.alias(NREL) for g in guard]
    ).drop(GMAX)


def _ideal_top(relevance: pl.Expr, specs: Sequence[Spec]) -> pl.Expr | None:
    """The relevance grades, highest first, that the ideal DCG of the NDCG specs needs (the
    top max-k grades, or all of them): None without an NDCG spec. A sort then ``head`` is
    ~2x faster than ``top_k`` per group (Polars 2.1), and ``top_k`` promises no order."""
    cuts = {s.k for s in specs if s.metric == "ndcg"}
    if not cuts:
        return None
    top = relevance.sort(descending=True)
    if None not in cuts:
        top = top.head(max(k for k in cuts if k is not None))
    return top


def _ideal_lists(rows: pl.DataFrame, top: pl.Expr) -> pl.LazyFrame:
    """Per query (``__pe_qi``): its ideal grades (:func:`_ideal_top`) as ``__pe_ideal``.

    A grade of 0 adds nothing to an ideal DCG and ranks below every positive grade, so
    when no grade is negative only the positive ones are sorted (a query without one gets
    null, an ideal DCG of 0): the relevant items are usually a small part of the rows.
    """
    r = pl.col("r")
    lf = rows.lazy()
    if rows.height and not (rows.get_column("r").min() or 0.0) < 0.0:
        lf = lf.filter(r > 0.0)
    return lf.group_by(QI).agg(top.alias(IDEAL))


def ideal_aggs(relevance: pl.Expr, specs: Sequence[Spec]) -> list[pl.Expr]:
    """In an aggregation over one query's judged items: the ``__pe_ideal`` column
    :func:`evaluate` reads instead of the one it finds in the rows (``pe.trec_eval``)."""
    top = _ideal_top(relevance, specs)
    return [] if top is None else [top.implode().alias(IDEAL)]


def query_metrics(
    state: pl.Expr,
    specs: Sequence[Spec],
    *,
    ties: str,
    unscored: str,
    min_relevance: float,
    no_relevant: str | None,
    baseline: Sequence[Spec] = (),
    as_struct: bool = False,
    counts: bool = False,
    unjudged: str = "ignore",
) -> pl.Expr:
    """One aggregation: the value of each spec for the query whose :func:`query_state` is
    ``state`` (Float64 for one spec unless ``as_struct``; else a struct, one field per spec,
    and with ``counts`` the number of relevant items ``__pe_R`` first).

    The engine runs on the states of every group of the aggregation at once: a state is an
    aggregated scalar (a list), so an elementwise ``map_batches`` over it is one call per
    batch of groups (in a ``select``: one call, one group).
    """
    outs = [spec.out for spec in (*specs, *baseline)]
    single = len(outs) == 1 and not as_struct and not counts
    fields = {**({NREL: F64} if counts else {}), **{out: F64 for out in outs}}
    dtype = F64 if single else pl.Struct(fields)

    def kernel(states: pl.Series) -> pl.Series:
        leading = states.dtype == pl.Struct  # leading_state: the rows and query scalars
        if leading:
            frame = _leading_scalars(states.struct.unnest(), min_relevance)
        else:
            frame = states.to_frame(ST)
        values = pl.concat(
            evaluate(
                part,
                specs,
                ties=ties,
                unscored=unscored,
                min_relevance=min_relevance,
                no_relevant=no_relevant,
                baseline=baseline,
                counts=counts,
                unjudged=unjudged,
                leading=leading,
            )
            for part in slices(frame)
        )
        return values.to_series() if single else values.to_struct()

    return state.map_batches(kernel, return_dtype=dtype, is_elementwise=True)


ENGINE_ROWS = 1_000_000
"""The engine evaluates the states of an aggregation in slices of whole queries holding
about this many rows: it holds a dozen columns as long as its input (the namespace slices
the frame the same way: ``tasks.ranking.PARTITION_ROWS``)."""


def slices(states: pl.DataFrame) -> list[pl.DataFrame]:
    """``states`` (one row per query) in slices of whole queries of about
    :data:`ENGINE_ROWS` rows (a longer query alone); one slice when it is short or empty."""
    lengths = states.get_column(ST).list.len().fill_null(0)
    total = int(lengths.sum() or 0)
    if total <= ENGINE_ROWS:
        return [states]
    # the slice of each query: its rows before it, in ENGINE_ROWS
    part = ((lengths.cum_sum() - lengths) // ENGINE_ROWS).to_numpy()
    starts = np.flatnonzero(np.diff(part, prepend=-1))
    ends = [*starts[1:], states.height]
    return [states.slice(int(a), int(b - a)) for a, b in zip(starts, ends, strict=True)]


# ---------------------------------------------------------------------------------------
# The engine: many queries, many metrics, one sort per query
# ---------------------------------------------------------------------------------------
#
# The rows of every query are laid out flat, query after query, so every step is one
# vectorised column operation over all queries at once:
#
# 0. when every metric reads only the top of a list (a cutoff, or MRR's first relevant
#    block), each query keeps only those rows (:func:`leading_rows`): NDCG@10 runs over
#    ~10 rows a query;
# 1. cumulative sums over the whole column of the per-row inputs the formulas read
#    (relevant flag, gain, ...);
# 2. the rows that end a tie block are kept; a block's total is the difference of two
#    consecutive cumulative sums, or, for an input of the position alone (a discount,
#    1/rank), of a table of its running sum over positions; each metric adds its
#    closed-form contribution per block (its :class:`Formula`), evaluated only on the
#    blocks where it can be non-zero, summed per query;
# 3. the first block holding a relevant item (at most one per query) is expanded into its
#    places for the hypergeometric first-relevant-rank distribution (MRR, hit rate);
# 4. each metric's value per query from its sum and the query's scalars, then the shared
#    guard (NaN, no relevant item).
#
# ERR and 11-point AP are not sums over tie blocks: with ``ties="first"`` they are
# per-row recurrences over the flat rows, with ``ties="average"`` numpy kernels over every
# query at once (:mod:`._err_ties`, :mod:`._ap11_ties`).

# the flat rows: position, relevant flag, grade
P, Y, REL = pl.col("_p"), pl.col("_y"), pl.col("r")
# the tie blocks: items, first rank, relevant items above the block in its query
M, A, ABOVE = pl.col("_m"), pl.col("_a"), pl.col("_C")
# the places of the first block holding a relevant item: probability, rank
PROB, RANK = pl.col("_prob"), pl.col("_rank")
# the query scalars: relevant items, retrieved items, judged non-relevant items
R, N, NN = pl.col(NREL), pl.col(NRET), pl.col(NNONREL)
# per row: 1 for a retrieved item without a judgment (``unjudged="nonrelevant"``)
U = pl.col("_u")
NEEDS_UNJUDGED = ("bpref", "fallout_at_k", "rbp_residual")
"""Metrics whose formula reads the unjudged flag (judged non-relevant = not relevant, not
unjudged)."""
ROW_SCALARS = {
    "r_precision": (NREL,),
    "ap_11pt": (NREL,),
    "iprec_at_recall": (NREL,),
    "bpref": (NREL, NNONREL),
    "rprec_mult": (NREL,),
}
"""Metrics whose formula reads query scalars on every row (and tie block)."""


def _t(name: str) -> pl.Expr:
    """The block total of the per-row input ``name``."""
    return pl.col(f"_t_{name}")


def _within(k: int | None) -> pl.Expr:
    """Per row: 1 when the position is within the cutoff (a column, whose sum counts rows)."""
    return (P > 0.0).cast(F64) if k is None else (P <= k).cast(F64)


def _inside(rank: pl.Expr, k: int | None) -> pl.Expr:
    return pl.lit(1.0) if k is None else (rank <= k).cast(F64)


def _gain_expr(r: pl.Expr, gain: str) -> pl.Expr:
    return 2.0**r - 1.0 if gain == "exp2" else r


def _base(log_base: float) -> str:
    """The key suffix of a logarithm base (none for base 2: the keys of the default)."""
    return "" if log_base == 2.0 else f"b{log_base!r}"


def _idcg_name(gain: str, k: int | None, log_base: float = 2.0) -> str:
    return f"__pe_idcg_{gain}_{k}{_base(log_base)}"


def _same(total: pl.Expr) -> pl.Expr:
    return total


@dataclass(frozen=True)
class Formula:
    """One metric over tie-block totals (McSherry & Najork 2008).

    A tie block is a run of ``m`` equal scores at ranks ``a .. a + m - 1``; over the orders
    of its items, each item is at each of those ranks with probability ``1/m``, so a
    position-discounted sum gives every item of the block the block's mean discount.
    ``block`` is the contribution of one block, from its totals of the per-row ``inputs``
    (and ``M``, ``A``, ``ABOVE``); ``place`` the contribution of one place of the first
    block holding a relevant item (``PROB``, ``RANK``); their sum per query is the column
    ``key`` (formulas reading the same sum share it), and ``value`` turns it into the
    metric (reading the query scalars ``R``, ``N`` and the ideal DCG).
    """

    key: str
    value: Callable[[pl.Expr], pl.Expr] = _same
    inputs: Mapping[str, pl.Expr] = field(default_factory=dict)
    block: pl.Expr | None = None
    place: pl.Expr | None = None
    # with no_relevant="zero", a query without a relevant item gets its computed value
    # rather than 0 (RBP's residual is defined there)
    defined_without_relevant: bool = False
    # True when it reads no row below the tie blocks starting within the spec's cutoff k
    # (the query scalars aside): the engine leaves the others out (leading_rows)
    cutoff: bool = False
    # the input whose block total ``block`` is proportional to (a block without a relevant
    # item adds nothing to AP): the engine evaluates ``block`` only where one is not 0
    support: str | None = None


def _hits(k: int | None, value: Callable[[pl.Expr], pl.Expr]) -> Formula:
    """E[relevant items in the top k]: a block's relevant items times its share of ranks within k."""
    return Formula(
        key=f"hits{k}",
        value=value,
        inputs={"y": Y, f"i{k}": _within(k)},
        block=_t("y") * _t(f"i{k}") / M,
        support="y",
        cutoff=True,
    )


def _precision(spec: Spec) -> Formula:
    k = spec.k

    def value(hits: pl.Expr) -> pl.Expr:
        if k is not None:
            return hits / float(k)  # divides by k even when the list is shorter (trec_eval)
        return pl.when(N > 0.0).then(hits / N).otherwise(0.0)

    return _hits(k, value)


def _recall(spec: Spec) -> Formula:
    return _hits(spec.k, lambda hits: hits / R)


def _r_precision(spec: Spec) -> Formula:
    # precision at rank R: the cutoff is the query's own number of relevant items
    return Formula(
        key="rprec",
        value=lambda hits: hits / R,
        inputs={"y": Y, "iR": (P <= R).cast(F64)},
        block=_t("y") * _t("iR") / M,
        support="y",
    )


def _f1(spec: Spec) -> Formula:
    # 2PR / (P + R) with P = hits / k and R = hits / R: 2 hits / (k + R), linear in the
    # hits (so the tie expectation is exact); k=None: the list's length
    k = spec.k
    size = N if k is None else pl.lit(float(k))
    return _hits(k, lambda hits: pl.when(size + R > 0.0).then(2.0 * hits / (size + R)))


def _fallout(spec: Spec) -> Formula:
    # judged non-relevant items in the top k / judged non-relevant items (null without one)
    k = spec.k
    return Formula(
        key=f"fallout{k}",
        value=lambda nonrel: pl.when(NN > 0.0).then(nonrel / NN),
        inputs={"nr": (1.0 - Y) * (1.0 - U), f"i{k}": _within(k)},
        block=_t("nr") * _t(f"i{k}") / M,
        support="nr",
        cutoff=True,
    )


def _bpref(spec: Spec) -> Formula:
    # trec_eval's bpref: each relevant item adds 1 - min(n, D) / D, n the judged non-relevant
    # items above it and D = min(judged non-relevant, R) (1 when D = 0). In a tie block with
    # L judged non-relevant items and C above the block, the number of the block's ones
    # above a given relevant item is uniform on 0..L (its place among them), so it adds
    # 1 - S / ((L + 1) D) with S = sum of min(C + j, D) over j = 0..L, in closed form.
    y, nonrel, above = _t("y"), _t("nr"), pl.col("_Cn")
    d = pl.min_horizontal(NN, R)
    lo, hi = above, above + nonrel
    total = (
        pl.when(hi <= d)
        .then((lo + hi) * (nonrel + 1.0) / 2.0)
        .when(lo >= d)
        .then(d * (nonrel + 1.0))
        .otherwise((lo + d) * (d - lo + 1.0) / 2.0 + d * (hi - d))
    )
    block = pl.when(d > 0.0).then(y * (1.0 - total / ((nonrel + 1.0) * d))).otherwise(y)
    return Formula(
        key="bpref",
        value=lambda total: total / R,
        inputs={"y": Y, "nr": (1.0 - Y) * (1.0 - U)},
        block=block,
        support="y",
    )


def _rbp_weight(spec: Spec) -> tuple[str, pl.Expr]:
    """The name and per-row value of p^(rank - 1) within the cutoff."""
    return f"w{spec.p!r}_{spec.k}", _within(spec.k) * pl.lit(spec.p).pow(P - 1.0)


def _rbp(spec: Spec) -> Formula:
    # (1 - p) sum over relevant items at rank i <= k of p^(i - 1) (Moffat & Zobel 2008)
    name, weight = _rbp_weight(spec)
    p = spec.p
    return Formula(
        key=f"rbp{p!r}_{spec.k}",
        value=lambda total: (1.0 - p) * total,
        inputs={"y": Y, name: weight},
        block=_t("y") * _t(name) / M,
        support="y",
        defined_without_relevant=True,
        cutoff=True,
    )


def _rbp_residual(spec: Spec) -> Formula:
    # the weight RBP leaves unassigned: (1 - p) sum over unjudged items at rank i <= d of
    # p^(i - 1), plus p^d beyond the d = min(k, retrieved) ranked items
    name, weight = _rbp_weight(spec)
    p, k = spec.p, spec.k
    depth = N if k is None else pl.min_horizontal(N, pl.lit(float(k)))
    return Formula(
        key=f"rbpres{p!r}_{k}",
        value=lambda total: (1.0 - p) * total + pl.lit(p).pow(depth),
        inputs={"u": U, name: weight},
        block=_t("u") * _t(name) / M,
        support="u",
        defined_without_relevant=True,
        cutoff=True,
    )


def _relative_precision(spec: Spec) -> Formula:
    # trec_eval's relative_P.k: hits in the top k / min(k, R), the precision up to R and
    # the recall after
    k = spec.k
    if k is None:
        return _hits(k, lambda hits: hits / pl.min_horizontal(N, R))
    return _hits(k, lambda hits: hits / pl.min_horizontal(pl.lit(float(k)), R))


def _rprec_mult(spec: Spec) -> Formula:
    # trec_eval's Rprec_mult.x: the precision at rank c = (long) (x R + 0.9) (0 for c = 0)
    x = spec.multiple
    cut = (pl.lit(x) * R + 0.9).floor()
    name = f"iR{x!r}"
    return Formula(
        key=f"rpm{x!r}",
        value=lambda hits: pl.when(cut > 0.0).then(hits / cut).otherwise(0.0),
        inputs={"y": Y, name: (P <= cut).cast(F64)},
        block=_t("y") * _t(name) / M,
        support="y",
    )


def _cg(spec: Spec) -> Formula:
    k = spec.k
    return Formula(
        key=f"cg{k}",
        inputs={"r": REL, f"i{k}": _within(k)},
        block=_t("r") * _t(f"i{k}") / M,
        support="r",
        cutoff=True,
    )


def _dcg_formula(spec: Spec, value: Callable[[pl.Expr], pl.Expr] = _same) -> Formula:
    k, gain, base = spec.k, spec.gain, _base(spec.log_base)
    discount = f"d{k}{base}"
    return Formula(
        key=f"dcg{gain}{k}{base}",
        value=value,
        inputs={
            f"g{gain}": _gain_expr(REL, gain),
            discount: _within(k) / (P + 1.0).log(spec.log_base),
        },
        block=_t(f"g{gain}") * _t(discount) / M,
        support=f"g{gain}",
        cutoff=True,
    )


def _dcg(spec: Spec) -> Formula:
    return _dcg_formula(spec)


def _ndcg(spec: Spec) -> Formula:
    idcg = pl.col(_idcg_name(spec.gain, spec.k, spec.log_base))
    return _dcg_formula(spec, lambda dcg: pl.when(idcg > 0.0).then(dcg / idcg).otherwise(0.0))


def _ap(spec: Spec) -> Formula:
    # A relevant item of a block with Y relevant of m items, ranks a..b, C relevant above:
    # at rank j, the other relevant items above it in the block are hypergeometric with
    # mean (j - a)(Y - 1)/(m - 1), so E[precision at j] = (C + 1 + (j - a)·α) / j with
    # α = (Y - 1)/(m - 1). Summed over the block's ranks in the cutoff (Σ 1/j and their
    # count), times Y/m.
    k = spec.k
    y = _t("y")
    alpha = pl.when(M > 1.0).then((y - 1.0) / (M - 1.0)).otherwise(0.0)
    block = y / M * ((ABOVE + 1.0 - A * alpha) * _t(f"h{k}") + alpha * _t(f"i{k}"))
    if spec.denominator == "min_k" and k is not None:
        den = pl.min_horizontal(R, pl.lit(float(k)))
    else:
        den = R
    return Formula(
        key=f"ap{k}",
        value=lambda total: total / den,
        inputs={"y": Y, f"i{k}": _within(k), f"h{k}": _within(k) / P},
        block=block,
        support="y",
        cutoff=True,
    )


def _reciprocal_rank(spec: Spec) -> Formula:
    return Formula(key=f"rr{spec.k}", place=PROB * _inside(RANK, spec.k) / RANK, cutoff=True)


def _hit_rate(spec: Spec) -> Formula:
    return Formula(key=f"hit{spec.k}", place=PROB * _inside(RANK, spec.k), cutoff=True)


def _err(spec: Spec) -> Formula:
    # per-row (ties="first") or numpy (ties="average"): see flat_sums
    return Formula(key=f"err{spec.max_relevance}_{spec.k}")


def _levels_key(levels: tuple[float, ...] | None) -> str:
    """The key of a set of recall levels (none for the default 0, 0.1, ..., 1)."""
    return "" if levels is None else "L" + ",".join(repr(x) for x in levels)


def _ap_11pt(spec: Spec) -> Formula:
    return Formula(key=f"ap11{spec.flavor}{_levels_key(spec.levels)}")


def _iprec_at_recall(spec: Spec) -> Formula:  # k: the recall level's index
    return Formula(key=f"ip{spec.flavor}{_levels_key(spec.levels)}{spec.k}")


FORMULAS: dict[str, Callable[[Spec], Formula]] = {
    "ndcg": _ndcg,
    "dcg": _dcg,
    "precision_at_k": _precision,
    "recall_at_k": _recall,
    "hit_rate_at_k": _hit_rate,
    "ap_at_k": _ap,
    "ap_11pt": _ap_11pt,
    "iprec_at_recall": _iprec_at_recall,
    "reciprocal_rank": _reciprocal_rank,
    "mrr": _reciprocal_rank,
    "err": _err,
    "cg": _cg,
    "r_precision": _r_precision,
    "f1_at_k": _f1,
    "fallout_at_k": _fallout,
    "bpref": _bpref,
    "rbp": _rbp,
    "rbp_residual": _rbp_residual,
    "relative_precision": _relative_precision,
    "rprec_mult": _rprec_mult,
}
"""The formula of each metric (by name) that the engine evaluates."""
TREC_ONLY = {
    "relative_P": "relative_precision",
    "Rprec_mult": "rprec_mult",
    "iprec_at_recall": "iprec_at_recall",
}
"""The trec_eval measures whose formula here no registered metric exposes -> the formula
(:func:`polars_eval.trec_eval` reads them; a registered metric declares its measures
``trec=`` at ``@register``)."""


def ideal_scalars(per_query: pl.LazyFrame, specs: Sequence[Spec]) -> pl.LazyFrame:
    """``per_query`` with the ideal DCG of each (gain, cutoff) of the NDCG specs, from its
    ``__pe_ideal`` lists of grades, highest first (nulls last, ignored), laid out flat, one
    row per grade: the lists are short, and a ``list.eval`` per query costs twice as much."""
    cuts = sorted({(s.gain, s.k, s.log_base) for s in specs if s.metric == "ndcg"}, key=str)
    if not cuts:
        return per_query
    c = pl.col
    grades = per_query.select(
        QI, IDEAL, pl.int_ranges(2, c(IDEAL).list.len() + 2, dtype=pl.Int64).alias("_j")
    ).explode([IDEAL, "_j"])
    sums = []
    for gain, k, base in cuts:
        term = _gain_expr(c(IDEAL), gain) / c("_j").cast(F64).log(base)
        if k is not None:
            term = term.filter(c("_j") <= k + 1)
        sums.append(term.sum().alias(_idcg_name(gain, k, base)))
    return per_query.join(grades.group_by(QI).agg(sums), on=QI, how="left", maintain_order="left")


def evaluate(
    states: pl.DataFrame,
    specs: Sequence[Spec],
    *,
    ties: str,
    unscored: str,
    min_relevance: float,
    no_relevant: str | None,
    baseline: Sequence[Spec] = (),
    counts: bool = False,
    unjudged: str = "ignore",
    leading: bool = False,
) -> pl.DataFrame:
    """The engine: one column per spec (``spec.out``), one row per query of ``states``.

    ``states`` holds :func:`query_state`'s column, one row per query; the result keeps its
    row order. The rows that count have a relevance, and a score unless
    ``unscored="unretrieved"`` (rows without one are relevant-but-unretrieved items: they
    count in the number of relevant items and the ideal DCG, and are never ranked). With
    ``unjudged="nonrelevant"`` a retrieved row without a relevance is an unjudged item: it
    keeps its rank, is not relevant (grade 0) and is not a judged non-relevant item (bpref,
    fallout); otherwise it is left out. The per-query columns ``__pe_R`` (relevant items),
    ``__pe_n`` (retrieved items), ``__pe_N`` (judged non-relevant items), ``__pe_nan`` (a
    NaN seen) and ``__pe_ideal`` (:func:`ideal_aggs`) of ``states``, when
    present, replace the ones counted from the rows (``pe.trec_eval`` takes the relevant
    items and the ideal grades from the qrels; a given NaN flag is or-ed with the rows':
    :func:`leading_state` gives the NaN grades of the rows it does not hold). ``baseline``
    specs are evaluated for a constant score (every retrieved item of a query tied), from
    the same rows; ``counts`` adds the number of relevant items (``__pe_R``) as the first
    column. ``leading``: the states hold only the rows the specs read
    (:func:`leading_state`; no baseline), so every row is read. The rows of a query with
    a NaN are left out of the sums (its values are NaN; a NaN grade would go through the
    cumulative sums into the queries after it).
    """
    every = [*specs, *baseline]
    schema = {**({NREL: F64} if counts else {}), **{spec.out: F64 for spec in every}}
    if states.height == 0:
        return pl.DataFrame(schema=schema)
    grouped = states.lazy().with_row_index(QI)
    r, s = pl.col("r"), pl.col("s")
    keep = kept_rows(r, s, unscored=unscored, unjudged=unjudged)
    rows = (
        grouped.select(QI, ST)
        .explode(ST)
        .unnest(ST)
        .filter(keep)
        .with_columns(pl.col(QI).set_sorted())  # ascending: a row index before the explode
    )
    if unjudged == "nonrelevant" or any(spec.metric in NEEDS_UNJUDGED for spec in every):
        rows = rows.with_columns(r.is_null().cast(F64).alias("_u"), r.fill_null(0.0))
    rows = rows.collect()
    # per query: relevant items (retrieved or not), retrieved items, judged non-relevant
    # items, a NaN seen, the ideal
    given = [c for c in (NREL, NRET, NNONREL, HASNAN, IDEAL) if c in states.columns]
    judged = r < min_relevance if "_u" not in rows.columns else (r < min_relevance) & (U == 0.0)
    scalars = {
        NREL: count_true(r >= min_relevance).cast(F64),
        NRET: count_true(s.is_not_null()).cast(F64),
        HASNAN: (s.is_nan() | r.is_nan()).any(),
    }
    if any(spec.metric in ("bpref", "fallout_at_k") for spec in every):
        scalars[NNONREL] = count_true(judged).cast(F64)
    top = _ideal_top(r, every)
    counted = [e.alias(n) for n, e in scalars.items() if n not in given]
    if HASNAN in given:  # a NaN given (not in the rows) or in the rows
        counted.append(scalars[HASNAN].alias("_nan"))
    per_query = grouped.select(QI, *given)
    if top is not None and IDEAL not in given:
        per_query = per_query.join(
            _ideal_lists(rows, top), on=QI, how="left", maintain_order="left"
        )
    if counted:
        per_query = (
            per_query.join(
                rows.lazy().group_by(QI).agg(counted), on=QI, how="left", maintain_order="left"
            )
            .with_columns(
                pl.col(n).fill_null(0.0)
                for n in (NREL, NRET, NNONREL)
                if n in scalars or n in given
            )
            .with_columns(pl.col(HASNAN).fill_null(False))
        )
        if HASNAN in given:
            nan = pl.col(HASNAN) | pl.col("_nan").fill_null(False)
            per_query = per_query.with_columns(nan.alias(HASNAN)).drop("_nan")
    per_query = ideal_scalars(per_query, every).collect()
    flat = rows.lazy().filter(s.is_not_null())
    nan = per_query.get_column(HASNAN)
    if nan.any():  # NaN anyway; a NaN grade would carry through the cumulative sums
        flat = flat.filter(pl.lit(~nan).gather(pl.col(QI)))
    on_rows = sorted({c for spec in every for c in ROW_SCALARS.get(spec.metric, ())})
    if on_rows:  # query scalars on every row
        flat = flat.with_columns(
            pl.lit(per_query.get_column(c)).gather(QI).alias(c) for c in on_rows
        )
    lead = (
        flat
        if leading
        else leading_rows(flat, specs, min_relevance=min_relevance, n_queries=states.height)
    )
    longest = int(states.get_column(ST).list.len().max() or 0)  # type: ignore[arg-type]
    out = per_query.lazy().join(
        flat_sums(lead, specs, ties=ties, min_relevance=min_relevance, longest=longest),
        on=QI,
        how="left",
        maintain_order="left",
    )
    if baseline:
        base = flat_sums(
            flat,
            baseline,
            ties="average",
            min_relevance=min_relevance,
            constant=True,
            prefix="b_",
            longest=longest,
        )
        out = out.join(base, on=QI, how="left", maintain_order="left")
    finals = [pl.col(NREL)] if counts else []
    finals += [_finalize_spec(spec, "", no_relevant) for spec in specs]
    finals += [_finalize_spec(spec, "b_", no_relevant) for spec in baseline]
    return out.select(finals).collect()


def flat_sums(
    flat: pl.LazyFrame,
    specs: Sequence[Spec],
    *,
    ties: str,
    min_relevance: float,
    constant: bool = False,
    prefix: str = "",
    longest: int | None = None,
) -> pl.LazyFrame:
    """Per query (column ``__pe_qi``): the sum each spec's formula reads (its ``key``).

    ``flat``: the retrieved rows (``s``, ``r``) of every query, query after query (``__pe_qi``
    ascending, flagged sorted: every ``group_by(QI)`` takes Polars' sorted-key path), each
    query's rows by score, descending; with ``__pe_R`` per row for R-precision and 11-point
    AP. A query without retrieved rows has no row (its sums are 0 after the join).
    ``constant=True`` evaluates a constant score (every retrieved item of a query tied).
    ``longest``: at least the rows of the longest query (counted when not given).
    """
    c = pl.col
    formulas = {spec: FORMULAS[spec.metric](spec) for spec in specs}
    flat = flat.with_columns(
        pl.int_range(0, pl.len(), dtype=pl.Int64).alias("_i"),
        (c(QI) != c(QI).shift(1)).fill_null(True).alias("_qs"),
        (c(QI) != c(QI).shift(-1)).fill_null(True).alias("_qe"),
        (c("r") >= min_relevance).cast(F64).alias("_y"),
    )
    # the position of each row (computed only where read: ERR, 11-point AP, an input that
    # reads a query scalar)
    flat = flat.with_columns(
        (c("_i") - pl.when(c("_qs")).then(c("_i")).forward_fill() + 1).cast(F64).alias("_p")
    )
    if constant:
        end = c("_qe")
    elif ties == "first":
        end = pl.lit(True)
    else:
        end = c("_qe") | (c("s") != c("s").shift(-1)).fill_null(True)
    inputs: dict[str, pl.Expr] = {"y": Y}
    for formula in formulas.values():
        inputs.update(formula.inputs)
    # an input of the position alone (a discount, 1/rank, within the cutoff) has its block
    # total from a table of its running sum over the positions 1..longest; the others are
    # summed over the rows
    positional = {n: x for n, x in inputs.items() if set(x.meta.root_names()) == {"_p"}}
    summed = [n for n in inputs if n not in positional]
    flat = flat.with_columns(
        end.alias("_en"), *[inputs[n].cum_sum().alias(f"_c_{n}") for n in summed]
    )
    # one row per tie block (``_i``: its last row): its totals are differences of
    # consecutive cumulative sums, its size and position from the row numbers
    new_query = (c(QI) != c(QI).shift(1)).fill_null(True)
    before_block = c("_i").shift(1).fill_null(-1)
    on_rows = sorted({c for spec in specs for c in ROW_SCALARS.get(spec.metric, ())})
    blocks = (
        flat.filter(c("_en"))
        .select(QI, "_i", *on_rows, *[f"_c_{n}" for n in summed])
        .with_columns(
            (c("_i") - before_block).cast(F64).alias("_m"),
            pl.when(new_query).then(before_block).forward_fill().alias("_q0"),
            new_query.alias("_bq"),
            *[
                (c(f"_c_{n}") - c(f"_c_{n}").shift(1).fill_null(0.0)).alias(f"_t_{n}")
                for n in summed
            ],
        )
        .with_columns((c("_i") - c("_q0")).cast(F64).alias("_p"))
    )
    # relevant items above the block within its query
    before = c("_c_y") - c("_t_y")
    blocks = blocks.with_columns(
        (before - pl.when(c("_bq")).then(before).forward_fill()).alias("_C"),
        (c("_p") - c("_m") + 1.0).alias("_a"),
    )
    if "nr" in inputs:  # judged non-relevant items above the block within its query
        before = c("_c_nr") - c("_t_nr")
        blocks = blocks.with_columns(
            (before - pl.when(c("_bq")).then(before).forward_fill()).alias("_Cn")
        )
    per_block = {f.key: f.block for f in formulas.values() if f.block is not None}
    supports = {f.support for f in formulas.values() if f.block is not None}
    if per_block and None not in supports:  # the blocks that add something
        places = ["y"] if any(f.place is not None for f in formulas.values()) else []
        blocks = blocks.filter(pl.any_horizontal(_t(n) != 0.0 for n in [*supports, *places]))
    if positional:
        longest = _longest(flat) if longest is None else longest
        last, first = c("_p").cast(pl.Int64), c("_a").cast(pl.Int64) - 1
        totals = []
        for n, x in positional.items():
            running = _running_sum(x, longest)
            totals.append((running.gather(last) - running.gather(first)).alias(f"_t_{n}"))
        blocks = blocks.with_columns(totals)
    out = blocks.group_by(QI).agg([x.sum().alias(f"{prefix}{n}") for n, x in per_block.items()])
    per_place = {f.key: f.place for f in formulas.values() if f.place is not None}
    if per_place:
        out = out.join(_first_relevant(blocks, per_place, prefix), on=QI, how="left")
    err_specs = [s for s in specs if s.metric == "err"]
    if err_specs:
        # ties="average" and not constant: a tie block's expectation needs a recurrence
        # (numpy, see _err_ties); a constant score is never asked for ERR
        sums = _err_sums if ties == "first" or constant else _err_sums_tied
        out = out.join(sums(flat, err_specs, prefix), on=QI, how="left")
    if any(s.metric in INTERPOLATED for s in specs):
        flavors = {(s.flavor, s.levels) for s in specs if s.metric in INTERPOLATED}
        if ties == "average" and not constant and ("textbook", None) in flavors:
            # the expectation of a maximum over tie orders: numpy (see _ap11_ties)
            out = out.join(_ap_11pt_sums_tied(flat, prefix), on=QI, how="left")
            flavors.discard(("textbook", None))
        if flavors:
            out = out.join(_ap_11pt_sums(flat, prefix, flavors), on=QI, how="left")
    return out


def _longest(flat: pl.LazyFrame) -> int:
    """The rows of the longest query of ``flat``."""
    return int(flat.group_by(QI).len().select(pl.col("len").max()).collect().item() or 0)


def _running_sum(x: pl.Expr, longest: int) -> pl.Expr:
    """A literal: Σ_{j <= n} x(j) over the positions j, at n = 0 .. ``longest`` (``x`` reads
    the position ``_p`` alone)."""
    positions = pl.DataFrame({"_p": pl.int_range(1, longest + 1, eager=True).cast(F64)})
    sums = positions.select(x.cum_sum()).to_series()
    return pl.lit(pl.concat([pl.Series([0.0]), sums.cast(F64)]))


def reach(specs: Sequence[Spec]) -> tuple[int | None, bool] | None:
    """How far down each list the specs read: the largest cutoff of a :class:`Formula` with
    ``cutoff`` (None without one) and whether one reads up to the first block holding a
    relevant item (a formula over the places of that block, without a cutoff: MRR); None
    when one reads the whole list."""
    cutoffs, first = [], False
    for spec in specs:
        formula = FORMULAS[spec.metric](spec)
        if formula.cutoff and spec.k is not None:
            cutoffs.append(spec.k)
        elif formula.place is not None and formula.block is None and spec.k is None:
            first = True
        else:
            return None
    if not cutoffs and not first:
        return None
    return (max(cutoffs) if cutoffs else None), first


def leading_rows(
    flat: pl.LazyFrame, specs: Sequence[Spec], *, min_relevance: float, n_queries: int
) -> pl.LazyFrame:
    """The rows of ``flat`` that the specs read, when each reads only the top of a list
    (:func:`reach`): the tie blocks starting within the largest cutoff, and those up to the
    first block holding a relevant item; every row otherwise.

    Each query keeps its rows scored at least its threshold: the score at the largest
    cutoff (the last one of a shorter list), or that of its first relevant item. That is a
    prefix of the query made of whole tie blocks (a tie of ``ties="first"`` past the cutoff
    adds nothing), so the sums over its blocks are those of the whole list; ``ndcg@10`` then
    runs over ~10 rows a query. ``__pe_qi`` numbers the queries 0 .. ``n_queries`` - 1.
    """
    read = reach(specs)
    if read is None:
        return flat
    cutoff, first = read
    s = pl.col("s")
    bounds = [] if cutoff is None else [s.head(cutoff).last()]
    if first:
        bounds.append(s.filter(pl.col("r") >= min_relevance).first())
    found = flat.group_by(QI).agg(pl.min_horizontal(bounds).alias("t")).collect()
    threshold = pl.repeat(None, n_queries, dtype=F64, eager=True).scatter(
        found.get_column(QI), found.get_column("t")
    )
    return flat.filter(s >= pl.lit(threshold).gather(pl.col(QI)))


def _first_relevant(
    blocks: pl.LazyFrame, per_place: Mapping[str, pl.Expr], prefix: str
) -> pl.LazyFrame:
    """Sums over the places of the first block holding a relevant item, per query.

    The block (ranks a..a+m-1, Y relevant of m) is expanded into its places t = 1..m: the
    first relevant item is at place t (rank a + t - 1) with chance q_t · Y / (m − t + 1),
    where q_t = Π_{u<t} (m − u + 1 − Y)/(m − u + 1) is the chance that the places before
    hold no relevant item (sampling without replacement).
    """
    c = pl.col
    first = (
        blocks.filter((c("_C") == 0.0) & (c("_t_y") > 0.0))
        .select(QI, c("_a").alias("a"), c("_m").alias("m"), c("_t_y").alias("Y"))
        .with_columns(pl.int_ranges(1, c("m").cast(pl.Int64) + 1).alias("t"))
        .explode("t")
        .with_columns(c("t").cast(F64))
    )
    left = c("m") - c("t") + 1.0
    first = first.with_columns(((left - c("Y")) / left).alias("_f"), (c("t") == 1.0).alias("_qs"))
    first = _exclusive_product(first, c("_f"), "_q")
    first = first.with_columns(
        (c("_q") * c("Y") / left).alias("_prob"), (c("a") + c("t") - 1.0).alias("_rank")
    )
    return first.group_by(QI).agg([x.sum().alias(f"{prefix}{n}") for n, x in per_place.items()])


def _err_sums(flat: pl.LazyFrame, specs: list[Spec], prefix: str) -> pl.LazyFrame:
    c = pl.col
    aggs: dict[str, pl.Expr] = {}
    for i, g in enumerate(sorted({s.max_relevance for s in specs})):
        stop = (2.0 ** c("r").clip(upper_bound=g) - 1.0) / 2.0**g
        flat = flat.with_columns(stop.alias(f"_stop{i}"))
        flat = _exclusive_product(flat, 1.0 - c(f"_stop{i}"), f"_reach{i}")
        for spec in specs:
            if spec.max_relevance == g:
                inside = pl.lit(1.0) if spec.k is None else (c("_p") <= spec.k).cast(F64)
                value = c(f"_stop{i}") * c(f"_reach{i}") * inside / c("_p")
                aggs[f"{prefix}err{g}_{spec.k}"] = value.sum()
    return flat.group_by(QI).agg([x.alias(n) for n, x in aggs.items()])


def _kernel_sums(
    flat: pl.LazyFrame,
    inputs: list[str],
    names: list[str],
    kernel: Callable[[pl.DataFrame, np.ndarray, np.ndarray], dict[str, np.ndarray]],
) -> pl.LazyFrame:
    """One row per query (``__pe_qi``) with the columns ``names`` computed in numpy.

    ``kernel(rows, index, first)`` gets the flat rows (``inputs``), each row's query number
    (0, 1, ...) and the flags of each query's first row, and returns one array per name.
    """
    qi_type = flat.collect_schema()[QI]
    schema = {QI: qi_type, **{name: F64 for name in names}}

    def compute(df: pl.DataFrame) -> pl.DataFrame:
        qi = df.get_column(QI).to_numpy()
        first = run_starts(qi)
        values = kernel(df, np.cumsum(first) - 1, first)
        return pl.DataFrame({QI: qi[first], **values}, schema=schema)

    return flat.select(QI, *inputs).map_batches(compute, schema=schema)


def _err_sums_tied(flat: pl.LazyFrame, specs: list[Spec], prefix: str) -> pl.LazyFrame:
    """ERR per query and spec, expected over the orders of tied items (:mod:`._err_ties`)."""
    columns: dict[float, dict[str, int | None]] = {s.max_relevance: {} for s in specs}
    for spec in specs:
        columns[spec.max_relevance][f"{prefix}err{spec.max_relevance}_{spec.k}"] = spec.k

    def kernel(df: pl.DataFrame, index: np.ndarray, first: np.ndarray) -> dict[str, np.ndarray]:
        score, relevance = df.get_column("s").to_numpy(), df.get_column("r").to_numpy()
        out = {}
        for g, names in columns.items():
            value = expected_err(index, score, relevance, int(first.sum()), [*names.values()], g)
            out.update({name: value[:, c] for c, name in enumerate(names)})
        return out

    names = [name for names in columns.values() for name in names]
    return _kernel_sums(flat, ["s", "r"], names, kernel)


def _ap_11pt_sums(
    flat: pl.LazyFrame, prefix: str, flavors: set[tuple[str, tuple[float, ...] | None]]
) -> pl.LazyFrame:
    c = pl.col
    y = c("_y")
    hits = y.cum_sum() - pl.when(c("_qs")).then(y.cum_sum() - y).forward_fill()
    flat = flat.with_columns(hits.alias("_hq"))
    precision = c("_hq") / c("_p")
    recall = c("_hq") / c(NREL)
    aggs, means = [], []
    for flavor, levels in sorted(flavors, key=str):
        # the interpolated precision at each recall level (trec_eval's iprec_at_recall),
        # then their mean
        values = [i / 10.0 for i in range(11)] if levels is None else list(levels)
        key = _levels_key(levels)
        names = [f"{prefix}ip{flavor}{key}{i}" for i in range(len(values))]
        for level, name in zip(values, names, strict=True):
            if flavor == "textbook":
                reached = recall >= level - 1e-12
            else:
                reached = c("_hq") >= level_rank(level, c(NREL), flavor)
            aggs.append(precision.filter(reached).max().fill_null(0.0).alias(name))
        means.append((pl.sum_horizontal(names) / len(names)).alias(f"{prefix}ap11{flavor}{key}"))
    return flat.group_by(QI).agg(aggs).with_columns(means)


def level_rank(level: float, n_relevant: pl.Expr, flavor: str) -> pl.Expr:
    """trec_eval's number of relevant items that reach a recall level: 9.x (``"trec"``)
    ``(long) (level * R + 0.9)``, 10 (``"trec10"``) ``lround(level * R)``, computed in
    doubles as trec_eval does."""
    if flavor == "trec":
        return (pl.lit(level) * n_relevant + 0.9).floor()
    return (pl.lit(level) * n_relevant).round(0, mode="half_away_from_zero")


def _exclusive_product(flat: pl.LazyFrame, factor: pl.Expr, name: str) -> pl.LazyFrame:
    """Add ``name``: the product of ``factor`` (>= 0) over the earlier rows of the same group.

    Groups are runs of rows starting where ``_qs`` is true. A sum of logarithms with a
    count of zero factors, differenced at the group's first row (a global ``cum_prod``
    would carry other groups' zeros; ``over`` is slower).
    """
    c = pl.col
    f = factor
    flat = flat.with_columns(
        pl.when(f > 0.0).then(f.log()).otherwise(0.0).alias("_lf"),
        (f <= 0.0).cast(F64).alias("_zf"),
    )
    flat = flat.with_columns(
        (c("_lf").cum_sum() - c("_lf")).alias("_lx"),
        (c("_zf").cum_sum() - c("_zf")).alias("_zx"),
    )
    flat = flat.with_columns(
        pl.when(c("_qs")).then(c("_lx")).forward_fill().alias("_lq"),
        pl.when(c("_qs")).then(c("_zx")).forward_fill().alias("_zq"),
    )
    return flat.with_columns(
        pl.when(c("_zx") - c("_zq") < 0.5)
        .then((c("_lx") - c("_lq")).exp())
        .otherwise(0.0)
        .alias(name)
    )


def _finalize_spec(spec: Spec, prefix: str, no_relevant: str | None) -> pl.Expr:
    """The value of ``spec`` per query from its sum, guarded: NaN when a score or a
    relevance is NaN; null (or 0 with ``no_relevant="zero"``) for a query with no relevant
    item."""
    formula = FORMULAS[spec.metric](spec)
    value = formula.value(pl.col(f"{prefix}{formula.key}").fill_null(0.0))
    undefined = pl.lit(0.0 if no_relevant == "zero" else None, dtype=F64)
    if no_relevant == "zero" and formula.defined_without_relevant:
        undefined = value.cast(F64)
    return (
        pl.when(pl.col(HASNAN))
        .then(pl.lit(NAN, dtype=F64))
        .when(R > 0.0)
        .then(value.cast(F64))
        .otherwise(undefined)
        .alias(spec.out)
    )


# ---------------------------------------------------------------------------------------
# Metrics whose tie expectation is a numpy kernel (ERR, 11-point AP)
# ---------------------------------------------------------------------------------------


def ap_11pt_expected(
    query_index: np.ndarray, score: np.ndarray, relevant: np.ndarray, n_relevant: np.ndarray
) -> np.ndarray:
    """Textbook 11-point AP of every query, expected over tie orders (:mod:`._ap11_ties`).

    Rows: the retrieved items, query after query (``query_index`` non-decreasing), each
    query's rows by score descending; ``n_relevant`` per query (``len`` = the number of
    queries; a query without rows gets 0).
    """
    out = np.zeros(len(n_relevant))
    if len(query_index) == 0:
        return out
    query_start = run_starts(query_index)
    block_start = run_starts(query_index, score)
    present = query_index[query_start]
    out[present] = expected_ap_11pt(query_start, block_start, relevant, n_relevant[present])
    return out


def _ap_11pt_sums_tied(flat: pl.LazyFrame, prefix: str) -> pl.LazyFrame:
    """Textbook 11-point AP per query, expected over the orders of tied items."""
    name = f"{prefix}ap11textbook"

    def kernel(df: pl.DataFrame, index: np.ndarray, first: np.ndarray) -> dict[str, np.ndarray]:
        score, relevant = df.get_column("s").to_numpy(), df.get_column("_y").to_numpy()
        n_relevant = df.get_column(NREL).to_numpy()[first]
        return {name: ap_11pt_expected(index, score, relevant, n_relevant)}

    return _kernel_sums(flat, ["s", "_y", NREL], [name], kernel)
