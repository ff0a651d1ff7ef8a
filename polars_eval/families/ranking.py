"""Ranking metrics over query logs (SPEC §7).

Long format: one row per (query, item) with a relevance grade and a model score. Every
function here is a *per-query* expression: it reduces the rows of one query to one value,
so it is used as ``df.group_by("qid").agg(pe.ndcg("rel", "score", k=10))`` (or in a
``select`` over a frame holding one query). The ``.eval`` namespace takes ``query=`` and
returns the mean over queries (``df.eval.ndcg("rel", "score", query="qid")``).

Two engines evaluate the same closed forms, and the tests hold them equal:

* the per-query expressions sort the rows of a query once by score, descending, into one
  ``List[Struct{s, r}]`` (:func:`ranked_state`); each metric is a finalize step over that
  list inside ``list.eval`` (:func:`finalize`). Convenient in any ``agg``/``select``, but
  with a fixed cost per query and per operation;
* the namespace (``df.eval.ndcg(..., query=)``, ``df.eval.ranking``) and
  :func:`polars_eval.trec_eval` use the *flat engine* (:func:`state_aggs`,
  :func:`evaluate_queries`): one sort per query in a ``group_by``, then every query laid
  out flat and each step one vectorised column operation over all queries, several
  metrics and cutoffs sharing the one sort.

Every metric defaults to ``ties="average"``. The expectations of ERR and 11-point AP over
tie orders need a recurrence over each tie block, evaluated in numpy (:mod:`._err_ties`,
:mod:`._ap11_ties`).

Conventions shared by every function of this module:

* an item is *relevant* when its relevance is >= ``min_relevance`` (default 1); gains
  (DCG, NDCG, CG, ERR) use the grades themselves;
* ``k`` is the cutoff (a positive int) and ``k=None`` the whole list;
* ``ties="average"`` (default): the expected value of the metric over every order of the
  items with tied scores, equally likely (McSherry & Najork 2008), in closed form per tie
  block; ``ties="first"``: tied items keep their input order;
* a query with no relevant item gives null (it is left out of a mean over queries), or 0
  with ``no_relevant="zero"``; the same rule holds for every metric, so a mean over queries
  always runs over the same queries;
* rows with a null relevance are ignored; rows with a null score are ignored too
  (``unscored="ignore"``, SPEC §2), or, with ``unscored="unretrieved"``, are items that
  were judged but never retrieved: they count in the number of relevant items (recall,
  AP, R-precision) and in the ideal DCG, and are never ranked (as trec_eval's qrels);
* NaN in a score or a relevance gives NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_eval._core.registry import register
from polars_eval._exprs import (
    F64,
    NAN,
    check_choice,
    check_number,
    check_positive_int,
    to_expr,
    to_float,
)
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.families._ap11_ties import expected_ap_11pt
from polars_eval.families._err_ties import expected_err
from polars_eval.families._runs import run_starts

__all__ = [
    "ap_11pt",
    "ap_at_k",
    "cg",
    "dcg",
    "err",
    "hit_rate_at_k",
    "mrr",
    "ndcg",
    "precision_at_k",
    "r_precision",
    "recall_at_k",
    "reciprocal_rank",
]

TIES = ("average", "first")
GAINS = ("exp2", "linear")
NO_RELEVANT = (None, "zero")
UNSCORED = ("ignore", "unretrieved")
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


def _suffix(k: int | None) -> str:
    return "" if k is None else f"@{k}"


# ---------------------------------------------------------------------------------------
# State: the rows of one query sorted by score, descending
# ---------------------------------------------------------------------------------------


def ranked_state(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    ties: str = "average",
    unscored: str = "ignore",
    tiebreak: IntoExpr | None = None,
) -> pl.Expr:
    """The state of one query: ``List[Struct{s, r}]`` sorted by score descending.

    Unscored rows (kept only with ``unscored="unretrieved"``) have a null score and sort
    last. ``ties="first"`` keeps the input order of tied rows (a stable sort);
    ``tiebreak`` orders tied rows by that column, descending (trec_eval's document order).
    """
    r = to_float(relevance)
    s = to_float(score)
    keep = r.is_not_null()
    if unscored == "ignore":
        keep = keep & s.is_not_null()
    r, s = r.filter(keep), s.filter(keep)
    by = [s]
    if tiebreak is not None:
        by.append(to_expr(tiebreak).filter(keep))
    return (
        pl.struct(s.alias("s"), r.alias("r"))
        .sort_by(by, descending=True, nulls_last=True, maintain_order=True)
        .implode()
    )


class Ranked:
    """Expressions over one query's sorted state, evaluated inside ``list.eval``.

    Positions ``p = 1..n`` follow the sorted list (retrieved rows first). With
    ``ties="average"`` a *block* is a run of equal scores occupying ranks ``a..b``
    (``m = b - a + 1`` items); every item of a block is at each of those ranks with
    probability ``1/m``, which gives the closed forms of McSherry & Najork (2008): a
    position-discounted sum gives each item of the block the block's mean discount, and
    so on (see each metric). With ``ties="first"`` every row is its own block.
    Block totals are read at the block's last row from cumulative sums.
    """

    def __init__(self, opts: Options) -> None:
        e = pl.element()
        self.opts = opts
        self.s = e.struct.field("s")
        self.r = e.struct.field("r")
        self.ret = self.s.is_not_null()
        self.p = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).cast(F64)
        if opts.ties == "first":
            self.start: pl.Expr = pl.lit(True)
            self.end: pl.Expr = pl.lit(True)
        else:
            self.start = (self.s != self.s.shift(1)).fill_null(True)
            self.end = (self.s != self.s.shift(-1)).fill_null(True)
        self.y = (self.r >= opts.min_relevance).cast(F64)
        ret = self.ret.cast(F64)
        self.incut = ret if opts.k is None else ret * (self.p <= opts.k).cast(F64)
        # the retrieved list's length, and the relevant items (retrieved or not)
        self.n = self.ret.sum().cast(F64)
        self.R = self.y.sum()
        self.a = pl.when(self.start).then(self.p).forward_fill()
        self.m = self.p - self.a + 1.0

    # block arithmetic ----------------------------------------------------------------
    def before(self, x: pl.Expr) -> pl.Expr:
        """Sum of ``x`` over the rows before the current row's block (every row)."""
        return pl.when(self.start).then(x.cum_sum() - x).forward_fill()

    def block(self, x: pl.Expr) -> pl.Expr:
        """Sum of ``x`` over the current block (valid at the block's last row)."""
        return x.cum_sum() - self.before(x)

    def broadcast(self, x: pl.Expr) -> pl.Expr:
        """A value read at the block's last row, given to every row of the block."""
        return pl.when(self.end).then(x).backward_fill()

    def over_blocks(self, x: pl.Expr) -> pl.Expr:
        """Sum of a per-block value ``x`` (read at each block's last retrieved row)."""
        return pl.when(self.end & self.ret).then(x).otherwise(0.0).sum()

    def expected_in_cut(self, x: pl.Expr) -> pl.Expr:
        """E[Σ x over the items ranked in the cutoff]: block total × share of its ranks in the cutoff."""
        return self.over_blocks(self.block(x) * self.block(self.incut) / self.m)

    # gains ---------------------------------------------------------------------------
    def gain(self, r: pl.Expr) -> pl.Expr:
        return 2.0**r - 1.0 if self.opts.gain == "exp2" else r

    def discount(self) -> pl.Expr:
        return self.incut / (self.p + 1.0).log(2)

    def dcg(self) -> pl.Expr:
        return self.over_blocks(
            self.block(self.gain(self.r)) * self.block(self.discount()) / self.m
        )

    def idcg(self) -> pl.Expr:
        ideal = self.gain(self.r.sort(descending=True))
        cut = pl.lit(1.0) if self.opts.k is None else (self.p <= self.opts.k).cast(F64)
        return (ideal * cut / (self.p + 1.0).log(2)).sum()

    # first relevant item -------------------------------------------------------------
    def first_relevant(self) -> tuple[pl.Expr, pl.Expr]:
        """Per row: P(the first relevant item is at this row's rank), and a mask of the rows that can be.

        In the first block holding a relevant item (``Y`` relevant of ``m``), the chance that
        the first ``t - 1`` places hold no relevant item is ``q_t = Π_{u<t} (m-Y-u+1)/(m-u+1)``
        (hypergeometric), and the first relevant item is at place ``t`` with chance
        ``q_t · Y / (m - t + 1)``. With ``ties="first"`` that is 1 at the first relevant row.
        """
        y_block = self.broadcast(self.block(self.y))
        first_block = (self.before(self.y) == 0.0) & (y_block > 0.0) & self.ret
        if self.opts.ties == "first":
            return self.y, first_block
        m = self.broadcast(self.m)
        left = m - self.m + 1.0  # items not yet placed: self.m is the place t = p - a + 1
        # Every block before the first relevant one has Y = 0, so its factors are exactly 1
        # and the running product over the whole list equals q_t inside the first block.
        f = (left - y_block) / left
        q = f.cum_prod().shift(1).fill_null(1.0)
        return q * y_block / left, first_block

    # guards --------------------------------------------------------------------------
    def finish(self, value: pl.Expr) -> pl.Expr:
        """NaN if a score or a relevance is NaN; null (or 0) when the query has no relevant item."""
        has_nan = self.s.is_nan().any() | self.r.is_nan().any()
        undefined = pl.lit(0.0 if self.opts.no_relevant == "zero" else None, dtype=F64)
        return (
            pl.when(has_nan)
            .then(pl.lit(NAN, dtype=F64))
            .when(self.R > 0.0)
            .then(value.cast(F64))
            .otherwise(undefined)
        )


# ---------------------------------------------------------------------------------------
# Finalize steps (raw values, before the guard)
# ---------------------------------------------------------------------------------------


def _dcg(c: Ranked, **_: Any) -> pl.Expr:
    return c.dcg()


def _ndcg(c: Ranked, **_: Any) -> pl.Expr:
    ideal = c.idcg()
    return pl.when(ideal > 0.0).then(c.dcg() / ideal).otherwise(0.0)


def _cg(c: Ranked, **_: Any) -> pl.Expr:
    return c.expected_in_cut(c.r)


def _precision(c: Ranked, **_: Any) -> pl.Expr:
    hits = c.expected_in_cut(c.y)
    if c.opts.k is not None:
        return hits / float(c.opts.k)
    return pl.when(c.n > 0.0).then(hits / c.n).otherwise(0.0)


def _recall(c: Ranked, **_: Any) -> pl.Expr:
    return c.expected_in_cut(c.y) / c.R


def _r_precision(c: Ranked, **_: Any) -> pl.Expr:
    # precision at rank R: per-row cutoff p <= R (used by trec_eval's Rprec)
    incut = c.ret.cast(F64) * (c.p <= c.R).cast(F64)
    return c.over_blocks(c.block(c.y) * c.block(incut) / c.m) / c.R


def _hit_rate(c: Ranked, **_: Any) -> pl.Expr:
    prob, first = c.first_relevant()
    return pl.when(first).then(prob * c.incut).otherwise(0.0).sum()


def _reciprocal_rank(c: Ranked, **_: Any) -> pl.Expr:
    prob, first = c.first_relevant()
    return pl.when(first).then(prob * c.incut / c.p).otherwise(0.0).sum()


def _ap(c: Ranked, *, denominator: str = "all", **_: Any) -> pl.Expr:
    # A relevant item of a block with Y relevant of m items, ranks a..b, C relevant before:
    # at rank j, the other relevant items above it in the block are hypergeometric with
    # mean (j - a)(Y - 1)/(m - 1), so E[precision at j] = (C + 1 + (j - a)·α) / j with
    # α = (Y - 1)/(m - 1). Summed over the block's ranks in the cutoff, times Y/m.
    y_block = c.block(c.y)
    alpha = pl.when(c.m > 1.0).then((y_block - 1.0) / (c.m - 1.0)).otherwise(0.0)
    harmonic = c.block(c.incut / c.p)
    count = c.block(c.incut)
    total = c.over_blocks(
        y_block / c.m * ((c.before(c.y) + 1.0 - c.a * alpha) * harmonic + alpha * count)
    )
    if denominator == "min_k" and c.opts.k is not None:
        den = pl.min_horizontal(c.R, pl.lit(float(c.opts.k)))
    else:
        den = c.R
    return total / den


def _err(c: Ranked, *, max_relevance: float = 4.0, **_: Any) -> pl.Expr:
    stop = (2.0 ** c.r.clip(upper_bound=max_relevance) - 1.0) / 2.0**max_relevance
    stop = stop * c.ret.cast(F64)
    reach = (1.0 - stop).cum_prod().shift(1).fill_null(1.0)
    return (stop * reach * c.incut / c.p).sum()


def _ap_11pt(c: Ranked, **_: Any) -> pl.Expr:
    hits = (c.y * c.ret.cast(F64)).cum_sum()
    precision = hits / c.p
    recall = hits / c.R
    levels = [
        precision.filter(c.ret & (recall >= i / 10.0 - 1e-12)).max().fill_null(0.0)
        for i in range(11)
    ]
    return pl.sum_horizontal(levels) / 11.0


FINALIZE: dict[str, Callable[..., pl.Expr]] = {
    "ndcg": _ndcg,
    "dcg": _dcg,
    "precision_at_k": _precision,
    "recall_at_k": _recall,
    "hit_rate_at_k": _hit_rate,
    "ap_at_k": _ap,
    "ap_11pt": _ap_11pt,
    "reciprocal_rank": _reciprocal_rank,
    "mrr": _reciprocal_rank,
    "err": _err,
    "cg": _cg,
    "r_precision": _r_precision,
}
"""Finalize steps by metric name (``df.eval.ranking`` and ``pe.trec_eval`` use them)."""


def finalize(state: pl.Expr, opts: Options, name: str, **extra: Any) -> pl.Expr:
    """One metric of one query from its state (a scalar expression, not aliased)."""
    c = Ranked(opts)
    return state.list.eval(c.finish(FINALIZE[name](c, **extra))).list.first().cast(F64)


def _metric(
    name: str,
    relevance: IntoExpr,
    score: IntoExpr,
    opts: Options,
    **extra: Any,
) -> pl.Expr:
    state = ranked_state(relevance, score, ties=opts.ties, unscored=opts.unscored)
    return finalize(state, opts, name, **extra).alias(name)


# ---------------------------------------------------------------------------------------
# The flat engine: many queries, many metrics, one sort per query
# ---------------------------------------------------------------------------------------
#
# The per-query expressions above evaluate their formulas inside ``list.eval``, one list
# (query) at a time; that costs a fixed overhead per query and per operation. The
# namespace, ``df.eval.ranking`` and ``pe.trec_eval`` evaluate the same closed forms on
# the *exploded* state instead: the rows of every query sorted once in a ``group_by`` (one
# sort per query), then laid out flat, query after query, so every step is one vectorised
# column operation over all queries at once:
#
# 1. cumulative sums over the whole column of the per-row inputs (relevant flag, gain,
#    discount within the cutoff, ...);
# 2. the rows that end a tie block are kept; a block's total is the difference of two
#    consecutive cumulative sums (only differences within a block or a query are used, so
#    nothing leaks between queries, and the rounding error grows with the block's length,
#    not the column's); each block adds its closed-form contribution;
# 3. the first block holding a relevant item (at most one per query) is expanded into its
#    places for the hypergeometric first-relevant-rank distribution (MRR, hit rate);
# 4. ``group_by(query).sum()``, then the finalize formulas per query.
#
# The ideal DCG is a per-query scalar of the first stage (top k relevance grades). The two
# engines are checked against each other in the tests.

QI = "__pe_qi"
ST = "__pe_st"
NREL = "__pe_R"
NRET = "__pe_n"
HASNAN = "__pe_nan"
IDEAL = "__pe_ideal"
INTERPOLATED = ("ap_11pt", "iprec_at_recall")
"""Metrics read from the interpolated precision at the 11 recall levels."""


@dataclass(frozen=True)
class Spec:
    """One output column of the flat engine: ``metric`` (a key of :data:`FINALIZE`) at cutoff ``k``."""

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


def _idcg_name(gain: str, k: int | None) -> str:
    return f"__pe_idcg_{gain}_{k}"


def state_aggs(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    ties: str,
    unscored: str,
    min_relevance: float,
    specs: list[Spec] = (),  # type: ignore[assignment]
    tiebreak: IntoExpr | None = None,
) -> list[pl.Expr]:
    """First stage (inside ``group_by(query).agg``): the sorted state and per-query scalars.

    The state keeps the retrieved rows only (score not null); the per-query scalars count
    every kept row: the relevant items (retrieved or not) and the ideal DCG of each
    (gain, cutoff) that an NDCG spec needs.
    """
    r = to_float(relevance)
    s = to_float(score)
    keep = r.is_not_null()
    if unscored == "ignore":
        keep = keep & s.is_not_null()
    rf, sf = r.filter(keep), s.filter(keep)
    retrieved = keep & s.is_not_null()
    rr, sr = r.filter(retrieved), s.filter(retrieved)
    by = [sr]
    if tiebreak is not None:
        by.append(to_expr(tiebreak).filter(retrieved))
    out = [
        pl.struct(sr.alias("s"), rr.alias("r"))
        .sort_by(by, descending=True, maintain_order=ties == "first")
        .alias(ST),
        (rf >= min_relevance).sum().cast(F64).alias(NREL),
        sf.is_not_null().sum().cast(F64).alias(NRET),
        (sf.is_nan().any() | rf.is_nan().any()).alias(HASNAN),
    ]
    return out + ideal_aggs(rf, specs)


def ideal_aggs(relevance: pl.Expr, specs: list[Spec]) -> list[pl.Expr]:
    """Per query: the relevance grades, highest first, that the ideal DCG of an NDCG spec needs.

    One list (``__pe_ideal``, the top max-k grades) serves every (gain, cutoff);
    :func:`ideal_scalars` reduces it to one ideal DCG each. A per-group sort then ``head``
    is ~2x faster than ``top_k`` inside a ``group_by``, and the list arithmetic is cheaper
    outside it (Polars 2.1).
    """
    cuts = {s.k for s in specs if s.metric == "ndcg"}
    if not cuts:
        return []
    top = relevance.sort(descending=True)
    if None not in cuts:
        top = top.head(max(k for k in cuts if k is not None))
    return [top.alias(IDEAL)]


def ideal_scalars(specs: list[Spec]) -> list[pl.Expr]:
    """The ideal DCG of each (gain, cutoff) of the NDCG specs, from the ``__pe_ideal`` list."""
    out = []
    for gain, k in sorted({(s.gain, s.k) for s in specs if s.metric == "ndcg"}, key=str):
        top = pl.element() if k is None else pl.element().head(k)
        discount = pl.int_range(2, top.len() + 2, dtype=pl.Int64).cast(F64).log(2)
        idcg = pl.col(IDEAL).list.eval((_gain_expr(top, gain) / discount).sum()).list.first()
        out.append(idcg.alias(_idcg_name(gain, k)))
    return out


def _gain_expr(r: pl.Expr, gain: str) -> pl.Expr:
    return 2.0**r - 1.0 if gain == "exp2" else r


def _sum_inputs(specs: list[Spec], p: pl.Expr, y: pl.Expr, r: pl.Expr) -> dict[str, pl.Expr]:
    """The per-row inputs whose block totals the specs need, by name."""

    def cut(k: int | None) -> pl.Expr:
        # a column, not a literal: its cumulative sum must count rows
        return (p > 0.0).cast(F64) if k is None else (p <= k).cast(F64)

    inputs: dict[str, pl.Expr] = {"y": y}
    for spec in specs:
        k = spec.k
        if spec.metric in ("precision_at_k", "recall_at_k", "ap_at_k", "cg"):
            inputs[f"i{k}"] = cut(k)
        if spec.metric == "ap_at_k":
            inputs[f"h{k}"] = cut(k) / p
        if spec.metric in ("ndcg", "dcg"):
            inputs[f"d{k}"] = cut(k) / (p + 1.0).log(2)
            inputs[f"g{spec.gain}"] = _gain_expr(r, spec.gain)
        if spec.metric == "cg":
            inputs["r"] = r
        if spec.metric == "r_precision":
            inputs["iR"] = (p <= pl.col(NREL)).cast(F64)
    return inputs


def flat_sums(
    grouped: pl.LazyFrame,
    specs: list[Spec],
    *,
    ties: str,
    min_relevance: float,
    constant: bool = False,
    prefix: str = "",
) -> pl.LazyFrame:
    """Per query (column ``__pe_qi``): the sums each spec's finalize formula needs.

    ``constant=True`` evaluates a constant score (every retrieved item of a query tied).
    """
    c = pl.col
    # the state holds the retrieved rows only; a query that ranks nothing adds no row (its
    # sums are 0 after the join); the number of relevant items is needed per row only by
    # R-precision and 11-point AP
    per_row = [NREL] if any(s.metric in ("r_precision", *INTERPOLATED) for s in specs) else []
    flat = (
        grouped.select(QI, ST, *per_row)
        .filter(c(ST).list.len() > 0)
        .explode(ST)
        .unnest(ST)
        .with_columns(
            # the query index is ascending (a row index before the explode): flagged so,
            # every group_by(QI) below takes Polars' sorted-key path (~4x faster)
            pl.col(QI).set_sorted(),
            pl.int_range(0, pl.len(), dtype=pl.Int64).alias("_i"),
            (c(QI) != c(QI).shift(1)).fill_null(True).alias("_qs"),
            (c(QI) != c(QI).shift(-1)).fill_null(True).alias("_qe"),
        )
    )
    flat = flat.with_columns(
        (c("_i") - pl.when(c("_qs")).then(c("_i")).forward_fill() + 1).cast(F64).alias("_p"),
        (c("r") >= min_relevance).cast(F64).alias("_y"),
    ).drop("_i")
    p, y = c("_p"), c("_y")
    if constant:
        end = c("_qe")
    elif ties == "first":
        end = pl.lit(True)
    else:
        end = c("_qe") | (c("s") != c("s").shift(-1)).fill_null(True)
    inputs = _sum_inputs(specs, p, y, c("r"))
    flat = flat.with_columns(
        end.alias("_en"), *[x.cum_sum().alias(f"_c_{n}") for n, x in inputs.items()]
    )
    # one row per tie block: its totals are differences of consecutive cumulative sums
    new_query = (c(QI) != c(QI).shift(1)).fill_null(True)
    blocks = (
        flat.filter(c("_en"))
        .select(QI, "_p", *[f"_c_{n}" for n in inputs])
        .with_columns(
            (c("_p") - pl.when(new_query).then(0.0).otherwise(c("_p").shift(1))).alias("_m"),
            new_query.alias("_bq"),
            *[
                (c(f"_c_{n}") - c(f"_c_{n}").shift(1).fill_null(0.0)).alias(f"_t_{n}")
                for n in inputs
            ],
        )
    )
    # relevant items above the block within its query
    before = c("_c_y") - c("_t_y")
    blocks = blocks.with_columns(
        (before - pl.when(c("_bq")).then(before).forward_fill()).alias("_C"),
        (c("_p") - c("_m") + 1.0).alias("_a"),
    )
    m, a, big_c, t = c("_m"), c("_a"), c("_C"), lambda n: c(f"_t_{n}")
    sums: dict[str, pl.Expr] = {}
    for spec in specs:
        k, name = spec.k, spec.metric
        if name in ("precision_at_k", "recall_at_k"):
            sums[f"hits{k}"] = t("y") * t(f"i{k}") / m
        elif name == "ap_at_k":
            alpha = pl.when(m > 1.0).then((t("y") - 1.0) / (m - 1.0)).otherwise(0.0)
            sums[f"ap{k}"] = (
                t("y") / m * ((big_c + 1.0 - a * alpha) * t(f"h{k}") + alpha * t(f"i{k}"))
            )
        elif name == "cg":
            sums[f"cg{k}"] = t("r") * t(f"i{k}") / m
        elif name in ("ndcg", "dcg"):
            sums[f"dcg{spec.gain}{k}"] = t(f"g{spec.gain}") * t(f"d{k}") / m
        elif name == "r_precision":
            sums["rprec"] = t("y") * t("iR") / m
    out = blocks.group_by(QI).agg([x.sum().alias(f"{prefix}{n}") for n, x in sums.items()])

    first_specs = [s for s in specs if s.metric in ("reciprocal_rank", "mrr", "hit_rate_at_k")]
    if first_specs:
        out = out.join(_first_relevant(blocks, first_specs, prefix), on=QI, how="left")
    err_specs = [s for s in specs if s.metric == "err"]
    if err_specs:
        # ties="average" and not constant: a tie block's expectation needs a recurrence
        # (numpy, see _err_ties); a constant score is never asked for ERR
        sums = _err_sums if ties == "first" or constant else _err_sums_tied
        out = out.join(sums(flat, err_specs, prefix), on=QI, how="left")
    if any(s.metric in INTERPOLATED for s in specs):
        flavors = {s.flavor for s in specs if s.metric in INTERPOLATED}
        if ties == "average" and not constant and "textbook" in flavors:
            # the expectation of a maximum over tie orders: numpy (see _ap11_ties)
            out = out.join(_ap_11pt_sums_tied(flat, prefix), on=QI, how="left")
            flavors.discard("textbook")
        if flavors:
            out = out.join(_ap_11pt_sums(flat, prefix, flavors), on=QI, how="left")
    return out


def _first_relevant(blocks: pl.LazyFrame, specs: list[Spec], prefix: str) -> pl.LazyFrame:
    """E[1/rank] and P(rank <= k) of the first relevant item, from the first relevant block.

    The block (ranks a..a+m-1, Y relevant of m) is expanded into its places t = 1..m: the
    first relevant item is at place t with chance q_t · Y / (m − t + 1), where
    q_t = Π_{u<t} (m − u + 1 − Y)/(m − u + 1) is the chance that the places before hold
    no relevant item (sampling without replacement).
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
    rank = c("a") + c("t") - 1.0
    prob = c("_q") * c("Y") / left
    sums: dict[str, pl.Expr] = {}
    for spec in specs:
        inside = pl.lit(1.0) if spec.k is None else (rank <= spec.k).cast(F64)
        if spec.metric == "hit_rate_at_k":
            sums[f"{prefix}hit{spec.k}"] = prob * inside
        else:
            sums[f"{prefix}rr{spec.k}"] = prob * inside / rank
    return first.group_by(QI).agg([x.sum().alias(n) for n, x in sums.items()])


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


def _ap_11pt_sums(flat: pl.LazyFrame, prefix: str, flavors: set[str]) -> pl.LazyFrame:
    c = pl.col
    y = c("_y")
    hits = y.cum_sum() - pl.when(c("_qs")).then(y.cum_sum() - y).forward_fill()
    flat = flat.with_columns(hits.alias("_hq"))
    precision = c("_hq") / c("_p")
    recall = c("_hq") / c(NREL)
    aggs, means = [], []
    for flavor in sorted(flavors):
        # the interpolated precision at each recall level (trec_eval's iprec_at_recall),
        # then their mean
        levels = [f"{prefix}ip{flavor}{i}" for i in range(11)]
        for i, name in enumerate(levels):
            if flavor == "trec":  # trec_eval 9.x: (long) (level * R + 0.9)
                need = (pl.lit(i / 10.0) * c(NREL) + 0.9).floor()
                reached = c("_hq") >= need
            elif flavor == "trec10":  # trec_eval 10: lround(level * R)
                need = (pl.lit(i / 10.0) * c(NREL)).round(0, mode="half_away_from_zero")
                reached = c("_hq") >= need
            else:
                reached = recall >= i / 10.0 - 1e-12
            aggs.append(precision.filter(reached).max().fill_null(0.0).alias(name))
        means.append((pl.sum_horizontal(levels) / 11.0).alias(f"{prefix}ap11{flavor}"))
    return flat.group_by(QI).agg(aggs).with_columns(means)


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
    c = pl.col
    k, name = spec.k, spec.metric
    R, n = c(NREL), c(NRET)

    def raw(col: str) -> pl.Expr:
        return c(f"{prefix}{col}").fill_null(0.0)

    if name == "ndcg":
        idcg = c(_idcg_name(spec.gain, k))
        value = pl.when(idcg > 0.0).then(raw(f"dcg{spec.gain}{k}") / idcg).otherwise(0.0)
    elif name == "dcg":
        value = raw(f"dcg{spec.gain}{k}")
    elif name == "cg":
        value = raw(f"cg{k}")
    elif name == "precision_at_k":
        hits = raw(f"hits{k}")
        value = hits / float(k) if k is not None else pl.when(n > 0).then(hits / n).otherwise(0.0)
    elif name == "recall_at_k":
        value = raw(f"hits{k}") / R
    elif name == "hit_rate_at_k":
        value = raw(f"hit{k}")
    elif name in ("reciprocal_rank", "mrr"):
        value = raw(f"rr{k}")
    elif name == "ap_at_k":
        den = (
            R if spec.denominator == "all" or k is None else pl.min_horizontal(R, pl.lit(float(k)))
        )
        value = raw(f"ap{k}") / den
    elif name == "err":
        value = raw(f"err{spec.max_relevance}_{k}")
    elif name == "ap_11pt":
        value = raw(f"ap11{spec.flavor}")
    elif name == "iprec_at_recall":  # k: the recall level's index, 0..10
        value = raw(f"ip{spec.flavor}{k}")
    elif name == "r_precision":
        value = raw("rprec") / R
    else:  # pragma: no cover - specs name FINALIZE's keys
        raise KeyError(name)
    undefined = pl.lit(0.0 if no_relevant == "zero" else None, dtype=F64)
    return (
        pl.when(c(HASNAN))
        .then(pl.lit(NAN, dtype=F64))
        .when(R > 0.0)
        .then(value.cast(F64))
        .otherwise(undefined)
        .alias(spec.out)
    )


def evaluate_queries(
    grouped: pl.LazyFrame,
    keys: list[str],
    specs: list[Spec],
    *,
    ties: str,
    min_relevance: float,
    no_relevant: str | None,
    order: list[str],
    baseline: list[Spec] | None = None,
) -> pl.LazyFrame:
    """``grouped`` (:func:`state_aggs` columns and ``keys``) -> ``keys`` + one column per spec.

    ``keys`` are the columns of ``grouped`` to keep (query keys, counts); one row per query.
    ``order`` are the columns identifying a query: ``grouped`` is sorted by them, so that
    the row index that joins the two branches of the plan names the same query in both
    (and the rounding of the cumulative sums is reproducible). ``baseline`` specs are
    evaluated for a constant score (every item tied).
    """
    grouped = grouped.sort(order, nulls_last=True, maintain_order=True).with_row_index(QI)
    scalars = ideal_scalars([*specs, *(baseline or [])])
    out = grouped.select(QI, *dict.fromkeys([*keys, NREL, NRET, HASNAN]), *scalars).join(
        flat_sums(grouped, specs, ties=ties, min_relevance=min_relevance), on=QI, how="left"
    )
    finals = [_finalize_spec(spec, "", no_relevant) for spec in specs]
    if baseline:
        base = flat_sums(
            grouped,
            baseline,
            ties="average",
            min_relevance=min_relevance,
            constant=True,
            prefix="b_",
        )
        out = out.join(base, on=QI, how="left")
        finals += [_finalize_spec(spec, "b_", no_relevant) for spec in baseline]
    return out.select(*keys, *finals)


# ---------------------------------------------------------------------------------------
# Metrics whose tie expectation is a numpy kernel (ERR, 11-point AP)
# ---------------------------------------------------------------------------------------


def _by_kernel(state: pl.Expr, opts: Options, kernel: Callable[[pl.Series], pl.Series]) -> pl.Expr:
    """A per-query value computed by ``kernel`` from the states (a Series of lists), guarded.

    ``map_batches`` hands the kernel the state of one query per call inside a
    ``group_by`` (one call for the frame in a ``select``). NaN, null (no relevant item) or
    0 (``no_relevant="zero"``) come from the shared guard, where 1.0 marks a query whose
    value is the kernel's.
    """
    value = state.map_batches(kernel, return_dtype=F64, returns_scalar=True)
    guard = state.list.eval(Ranked(opts).finish(pl.lit(1.0))).list.first()
    return pl.when(guard == 1.0).then(value).otherwise(guard).cast(F64)


def _state_rows(lists: pl.Series) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows of a Series of query states: (number of queries, query index, score,
    relevance, retrieved mask), each query's rows in rank order (unretrieved ones last)."""
    lengths = lists.list.len().fill_null(0).to_numpy()
    rows = lists.explode(empty_as_null=False, keep_nulls=False).struct.unnest()
    index = np.repeat(np.arange(len(lengths)), lengths)
    score = rows.get_column("s")
    retrieved = score.is_not_null().to_numpy()
    return len(lengths), index, score.to_numpy(), rows.get_column("r").to_numpy(), retrieved


def _err_lists(lists: pl.Series, k: int | None, max_relevance: float) -> pl.Series:
    n, index, score, relevance, ret = _state_rows(lists)
    value = expected_err(index[ret], score[ret], relevance[ret], n, [k], max_relevance)
    return pl.Series(value[:, 0])


def _ap_11pt_lists(lists: pl.Series, min_relevance: float) -> pl.Series:
    n, index, score, relevance, ret = _state_rows(lists)
    relevant = (relevance >= min_relevance).astype(np.float64)
    n_relevant = np.bincount(index, weights=relevant, minlength=n)
    return pl.Series(ap_11pt_expected(index[ret], score[ret], relevant[ret], n_relevant))


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


# ---------------------------------------------------------------------------------------
# Public metrics
# ---------------------------------------------------------------------------------------

_COMMON_DOC = """
    Parameters
    ----------
    relevance
        Relevance grade of each item (>= 0; relevant when >= ``min_relevance``).
    score
        Model score; higher is ranked first.
    k
        Cutoff (positive int), or None for the whole list.
    ties
        ``"average"``: expected value over every order of tied scores (McSherry & Najork
        2008); ``"first"``: tied items keep their input order.
    min_relevance
        Items with relevance >= this (> 0) are relevant.
    no_relevant
        None: a query with no relevant item gives null; ``"zero"``: it gives 0.
    unscored
        ``"ignore"``: rows with a null score are ignored; ``"unretrieved"``: they are
        relevant-but-not-retrieved items (they count in the denominators).
"""


def _doc(fn: Callable[..., Any]) -> Callable[..., Any]:
    if fn.__doc__ and "{common}" in fn.__doc__:
        fn.__doc__ = fn.__doc__.replace("{common}", _COMMON_DOC.strip("\n"))
    return fn


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="ndcg",
)
@_doc
def ndcg(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    gain: str = "exp2",
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Normalised discounted cumulative gain of one query, DCG@k / ideal DCG@k.

    DCG@k = Σ_{rank i ≤ k} gain(rel_i) / log2(i + 1), gain ``"exp2"`` = 2^rel − 1 (Burges
    et al. 2005) or ``"linear"`` = rel (trec_eval). The ideal DCG sorts every item of the
    query by relevance. With ``ties="average"`` each item of a tie block occupying ranks
    a..b gets the mean discount over those ranks within the cutoff (McSherry & Najork
    2008; as YDF and scikit-learn's ``ndcg_score``).

    {common}

    References
    ----------
    Järvelin, K. & Kekäläinen, J. (2002). Cumulated gain-based evaluation of IR techniques.
    ACM TOIS 20(4). McSherry, F. & Najork, M. (2008). Computing information retrieval
    performance measures efficiently in the presence of tied scores. ECIR.

    Examples
    --------
    Wikipedia's worked example: relevance [3, 2, 3, 0, 1, 2] in ranked order, two more
    judged items (relevance 3 and 2) never ranked, linear gain: DCG@6 = 6.861, ideal
    DCG@6 = 8.740 (from [3, 3, 3, 2, 2, 2]), NDCG@6 = 0.785.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"q": 1, "rel": [3, 2, 3, 0, 1, 2, 3, 2],
    ...                    "s": [6, 5, 4, 3, 2, 1, None, None]})
    >>> opts = dict(k=6, gain="linear", unscored="unretrieved")
    >>> round(df.select(pe.ndcg("rel", "s", **opts)).item(), 3)
    0.785
    >>> round(df.eval.ndcg("rel", "s", query="q", **opts), 3)
    0.785
    """
    opts = Options(k, ties, min_relevance, no_relevant, unscored, gain)
    return _metric("ndcg", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    undefined=NO_RELEVANT_ITEM,
    short="dcg",
)
@_doc
def dcg(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    gain: str = "exp2",
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Discounted cumulative gain of one query, Σ_{rank i ≤ k} gain(rel_i) / log2(i + 1).

    ``gain="exp2"`` (default) is 2^rel − 1, ``"linear"`` is rel. Ties as in :func:`ndcg`.
    Null for a query with no relevant item (like every ranking metric).

    {common}

    References
    ----------
    Järvelin, K. & Kekäläinen, J. (2002). ACM TOIS 20(4).

    Examples
    --------
    Relevance [3, 2, 3, 0, 1, 2], linear gain: 3 + 2/log2(3) + 3/2 + 0 + 1/log2(6) +
    2/log2(7) = 6.861 (Wikipedia's worked example).

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [3, 2, 3, 0, 1, 2], "s": [6, 5, 4, 3, 2, 1]})
    >>> round(df.select(pe.dcg("rel", "s", k=None, gain="linear")).item(), 3)
    6.861
    """
    opts = Options(k, ties, min_relevance, no_relevant, unscored, gain)
    return _metric("dcg", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="precision",
)
@_doc
def precision_at_k(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Precision at k: relevant items among the top k, divided by k.

    Divides by k even when the list is shorter (as trec_eval's ``P.k``); with ``k=None``
    divides by the length of the list. With ties, the expected count of relevant items in
    the top k.

    {common}

    References
    ----------
    Manning, C., Raghavan, P. & Schütze, H. (2008). Introduction to Information Retrieval, §8.4.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"q": [1, 1, 1, 2, 2], "rel": [1, 0, 1, 0, 1], "s": [3, 2, 1, 2, 1]})
    >>> df.group_by("q", maintain_order=True).agg(pe.precision_at_k("rel", "s", k=2))
    shape: (2, 2)
    ┌─────┬────────────────┐
    │ q   ┆ precision_at_k │
    │ --- ┆ ---            │
    │ i64 ┆ f64            │
    ╞═════╪════════════════╡
    │ 1   ┆ 0.5            │
    │ 2   ┆ 0.5            │
    └─────┴────────────────┘
    """
    opts = Options(k, ties, min_relevance, no_relevant, unscored)
    return _metric("precision_at_k", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="recall",
)
@_doc
def recall_at_k(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Recall at k: relevant items among the top k, divided by the query's relevant items.

    {common}

    References
    ----------
    Manning, Raghavan & Schütze (2008), Introduction to Information Retrieval, §8.4.

    Examples
    --------
    Two of the three relevant items are in the top 2 of 4:

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [1, 1, 0, 1], "s": [4, 3, 2, 1]})
    >>> round(df.select(pe.recall_at_k("rel", "s", k=2)).item(), 4)
    0.6667
    """
    opts = Options(k, ties, min_relevance, no_relevant, unscored)
    return _metric("recall_at_k", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="hit_rate",
)
@_doc
def hit_rate_at_k(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Hit rate at k (success@k): 1 when a relevant item is in the top k, else 0.

    With ties, the probability that a relevant item is in the top k (hypergeometric over
    the tie block that straddles the cutoff).

    {common}

    References
    ----------
    trec_eval's ``success.k``; Deshpande, M. & Karypis, G. (2004). Item-based top-N
    recommendation algorithms. ACM TOIS 22(1).

    Examples
    --------
    Two items tied at the top, one relevant: with k=1 the relevant one is first in half
    of the orders.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [0, 1, 0], "s": [5, 5, 1]})
    >>> df.select(pe.hit_rate_at_k("rel", "s", k=1)).item()
    0.5
    """
    opts = Options(k, ties, min_relevance, no_relevant, unscored)
    return _metric("hit_rate_at_k", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="map",
)
@_doc
def ap_at_k(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    denominator: str = "all",
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Average precision at k of one query (its mean over queries is MAP, ``df.eval.map``).

    AP@k = Σ_{relevant item at rank i ≤ k} precision@i / D, with D the number of relevant
    items of the query (``denominator="all"``, trec_eval's ``map_cut.k``) or min(k, D)
    (``denominator="min_k"``). With ties, each relevant item of a tie block gets the
    expected precision over the block's orders (McSherry & Najork 2008). The name
    ``average_precision`` is the binary metric of SPEC §3.

    {common}
    denominator
        ``"all"`` (every relevant item of the query) or ``"min_k"`` (min(k, relevant)).

    References
    ----------
    Manning, Raghavan & Schütze (2008), §8.4; trec_eval ``map``.

    Examples
    --------
    True items {a, b, c, d, e, k}, predicted [a, f, d, e, g]: AP = (1 + 2/3 + 3/4) / 6.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [1, 0, 1, 1, 0, 1, 1, 1], "s": [5, 4, 3, 2, 1, None, None, None]})
    >>> round(df.select(pe.ap_at_k("rel", "s", k=None, unscored="unretrieved")).item(), 6)
    0.402778
    """
    check_choice("denominator", denominator, DENOMINATORS)
    opts = Options(k, ties, min_relevance, no_relevant, unscored)
    state = ranked_state(relevance, score, ties=opts.ties, unscored=opts.unscored)
    return finalize(state, opts, "ap_at_k", denominator=denominator).alias("ap_at_k")


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="map",
    name="map",
)
@_doc
def map_(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = None,
    denominator: str = "all",
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Mean average precision: the average precision of each query over the whole list.

    Registered as ``map`` (``df.eval.map``, the mean over queries; trec_eval's ``map``);
    per query it is :func:`ap_at_k` with ``k=None`` (a cutoff may still be given), named
    ``"map"``. Not exported as ``pe.map``, which would shadow Python's ``map``: use
    ``pe.ap_at_k(..., k=None)`` in expressions.

    {common}
    denominator
        ``"all"`` (every relevant item of the query) or ``"min_k"`` (min(k, relevant)).

    Examples
    --------
    Query 1: relevant at ranks 1 and 3, AP = (1 + 2/3) / 2; query 2: relevant at rank 2,
    AP = 1/2. MAP = (5/6 + 1/2) / 2.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"q": [1, 1, 1, 2, 2], "rel": [1, 0, 1, 0, 1],
    ...                    "s": [0.9, 0.5, 0.1, 0.8, 0.7]})
    >>> round(df.eval.map("rel", "s", query="q"), 6)
    0.666667
    """
    return ap_at_k(
        relevance,
        score,
        k=k,
        denominator=denominator,
        ties=ties,
        min_relevance=min_relevance,
        no_relevant=no_relevant,
        unscored=unscored,
    ).alias("map")


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="ap_11pt",
)
def ap_11pt(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """11-point interpolated average precision of one query (textbook definition).

    The mean over recall levels 0, 0.1, …, 1 of the interpolated precision, the highest
    precision at any rank whose recall is >= the level (0 when the list never reaches
    it). With ``ties="average"`` the expectation over the orders of tied items: the
    distribution of each tie block's best precision, multiplied over independent blocks
    (:mod:`polars_eval.families._ap11_ties`). Exact; very large tie blocks holding many
    relevant items are refused with a ``ValueError`` (their cost grows as the fourth power
    of the block's length) — use ``ties="first"`` there. The numpy kernel is called once
    per query inside a ``group_by`` (~1-2 ms a call); ``df.eval.ap_11pt`` and
    ``df.eval.ranking`` call it once for every query, sharing identical tie blocks.

    {common}

    References
    ----------
    Manning, Raghavan & Schütze (2008), Introduction to Information Retrieval, §8.4.
    McSherry & Najork (2008), ECIR (ties).

    Examples
    --------
    Relevant at ranks 1 and 3 of 3: precision 1 up to recall 0.5, then 2/3:
    (6 · 1 + 5 · 2/3) / 11 = 0.848485. Tied with the second item, the second relevant item
    is at rank 2 or 3: the mean of (6 + 5) / 11 = 1 and 0.848485.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [1, 0, 1], "s": [3, 2, 1]})
    >>> round(df.select(pe.ap_11pt("rel", "s")).item(), 6)
    0.848485
    >>> tied = pl.DataFrame({"rel": [1, 0, 1], "s": [3, 1, 1]})
    >>> round(tied.select(pe.ap_11pt("rel", "s")).item(), 6)
    0.924242
    """
    opts = Options(None, ties, min_relevance, no_relevant, unscored)
    if ties == "first":
        return _metric("ap_11pt", relevance, score, opts)
    state = ranked_state(relevance, score, ties=opts.ties, unscored=opts.unscored)
    threshold = float(min_relevance)
    kernel = _by_kernel(state, opts, lambda lists: _ap_11pt_lists(lists, threshold))
    return kernel.alias("ap_11pt")


ap_11pt = _doc(ap_11pt)


def _rr_doc(name: str) -> str:
    return f"""Reciprocal rank of the first relevant item of one query (0 when none is in the top k).

    With ties, the expected reciprocal rank over the orders of the first tie block that
    holds a relevant item. The mean over queries is the MRR; ``{name}`` and
    ``{"mrr" if name == "reciprocal_rank" else "reciprocal_rank"}`` are the same per-query
    value under two names.

    {{common}}

    References
    ----------
    Voorhees, E. (1999). The TREC-8 question answering track report. trec_eval ``recip_rank``.

    Examples
    --------
    Two items tied at the top, one relevant: E[1/rank] = (1 + 1/2) / 2 = 0.75.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"rel": [0, 1, 0], "s": [5, 5, 1]}})
    >>> df.select(pe.{name}("rel", "s")).item()
    0.75
    """


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    summary=False,
    short="reciprocal_rank",
)
def reciprocal_rank(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = None,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    opts = Options(k, ties, min_relevance, no_relevant, unscored)
    return _metric("reciprocal_rank", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="mrr",
)
def mrr(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = None,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    opts = Options(k, ties, min_relevance, no_relevant, unscored)
    return _metric("mrr", relevance, score, opts)


reciprocal_rank.__doc__ = _rr_doc("reciprocal_rank")
mrr.__doc__ = _rr_doc("mrr")
_doc(reciprocal_rank)
_doc(mrr)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="err",
)
def err(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    max_relevance: float = 4.0,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Expected reciprocal rank of one query (Chapelle et al. 2009).

    ERR@k = Σ_{rank i ≤ k} (1/i) R_i Π_{j<i} (1 − R_j), with the stop probability
    R = (2^rel − 1) / 2^max_relevance; grades above ``max_relevance`` count as
    ``max_relevance``. With ``ties="average"`` the expectation over the orders of each
    tie block: the item at place t of a block stops the user with probability
    ē_{t−1} − ē_t, ē_t the mean product of (1 − R) over the t-subsets of the block (see
    :mod:`polars_eval.families._err_ties`; a numpy recurrence, called once per query
    inside a ``group_by`` — ``df.eval.err`` and ``df.eval.ranking`` evaluate every query
    in one call).

    {common}
    max_relevance
        The grade that stops the user with probability (2^g − 1) / 2^g; higher grades
        count as this one.

    References
    ----------
    Chapelle, O., Metzler, D., Zhang, Y. & Grinspan, P. (2009). Expected reciprocal rank
    for graded relevance. CIKM. McSherry, F. & Najork, M. (2008). ECIR (ties).

    Examples
    --------
    Grades [4, 0] with max_relevance 4: R_1 = 15/16, so ERR = 15/16 = 0.9375; grades
    [1, 4]: 1/16 + (15/16)(15/16)/2 = 0.501953125. Tied, [1, 4] and [4, 1] are equally
    likely: (0.501953125 + 15/16 + (1/16)(1/16)/2) / 2 = 0.720703125.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"q": [1, 1, 2, 2], "rel": [4, 0, 1, 4], "s": [2, 1, 2, 1]})
    >>> df.group_by("q", maintain_order=True).agg(pe.err("rel", "s"))["err"].to_list()
    [0.9375, 0.501953125]
    >>> tied = pl.DataFrame({"rel": [1, 4], "s": [1, 1]})
    >>> tied.select(pe.err("rel", "s")).item()
    0.720703125
    """
    check_number("max_relevance", max_relevance)
    if max_relevance <= 0:
        raise InvalidParameterError(f"max_relevance must be > 0; got {max_relevance!r}")
    opts = Options(k, ties, min_relevance, no_relevant, unscored)
    g = float(max_relevance)
    state = ranked_state(relevance, score, ties=opts.ties, unscored=opts.unscored)
    if ties == "first":
        return finalize(state, opts, "err", max_relevance=g).alias("err")
    return _by_kernel(state, opts, lambda lists: _err_lists(lists, k, g)).alias("err")


err = _doc(err)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    undefined=NO_RELEVANT_ITEM,
    short="cg",
)
@_doc
def cg(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """Cumulative gain of one query: the sum of the relevance grades of the top k (linear).

    With ties, the expected sum: a tie block straddling the cutoff adds its mean grade
    times the number of its ranks within k.

    {common}

    References
    ----------
    Järvelin, K. & Kekäläinen, J. (2002). ACM TOIS 20(4).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [3, 2, 3, 0, 1, 2], "s": [6, 5, 4, 3, 2, 1]})
    >>> df.select(pe.cg("rel", "s", k=3)).item()
    8.0
    """
    opts = Options(k, ties, min_relevance, no_relevant, unscored)
    return _metric("cg", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="r_precision",
)
@_doc
def r_precision(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
) -> pl.Expr:
    """R-precision of one query: the precision at rank R, R the query's relevant items.

    Relevant items among the top R, divided by R (trec_eval's ``Rprec``); R counts every
    relevant item of the query, so with ``unscored="unretrieved"`` the judged items never
    ranked count in R as in trec_eval, and a list shorter than R still divides by R. With
    ``ties="average"`` the expected count of relevant items in the top R over the orders
    of tied items (a tie block straddling rank R adds its share of relevant items times
    the number of its ranks within R).

    {common}

    References
    ----------
    Buckley, C. & Voorhees, E. (2000). Evaluating evaluation measure stability. SIGIR.
    trec_eval's ``Rprec``; ranx's ``r-precision``.

    Examples
    --------
    Three relevant items ranked 1st, 3rd and 5th, one more never ranked: R = 4 and the top
    4 hold 2 of them, 2/4; counting only the ranked items, R = 3 and the top 3 hold 2, 2/3.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"q": 1, "rel": [1, 0, 1, 0, 1, 1], "s": [6, 5, 4, 3, 2, None]})
    >>> df.select(pe.r_precision("rel", "s", unscored="unretrieved")).item()
    0.5
    >>> round(df.eval.r_precision("rel", "s", query="q"), 6)
    0.666667
    """
    opts = Options(None, ties, min_relevance, no_relevant, unscored)
    return _metric("r_precision", relevance, score, opts)
