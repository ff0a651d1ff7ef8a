"""Ranking metrics over query logs (SPEC §7).

Long format: one row per (query, item) with a relevance grade and a model score. Every
function here is a *per-query* expression: it reduces the rows of one query to one value,
so it is used as ``df.group_by("qid").agg(pe.ndcg("rel", "score", k=10))`` (or in a
``select`` over a frame holding one query). The ``.eval`` namespace takes ``query=`` and
returns the mean over queries (``df.eval.ndcg("rel", "score", query="qid")``).

Every metric is a :class:`~polars_eval._core.spec.MetricSpec` whose states are the rows
of the query, evaluated by one engine (:mod:`polars_eval.metrics.ranking.engine`) in the
expressions, the namespace and :func:`polars_eval.trec_eval` alike. Every metric defaults
to ``ties="average"``.

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
* rows with a score and a null relevance are ignored too (``unjudged="ignore"``), or, with
  ``unjudged="nonrelevant"``, are retrieved items without a judgment: ranked, not
  relevant, and not judged non-relevant (bpref, fallout); RBP's residual is their weight;
* NaN in a score or a relevance gives NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from polars_eval._core.registry import register
from polars_eval._core.spec import MetricSpec, State
from polars_eval._exprs import to_float
from polars_eval._params import check_choice, check_number
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics.ranking.engine import (
    DENOMINATORS,
    INPUTS,
    NO_RELEVANT_ITEM,
    Options,
    Spec,
    check_log_base,
    check_persistence,
    leading_state,
    query_metrics,
)

__all__ = [
    "ap_11pt",
    "ap_at_k",
    "bpref",
    "cg",
    "dcg",
    "err",
    "f1_at_k",
    "fallout_at_k",
    "hit_rate_at_k",
    "mrr",
    "ndcg",
    "precision_at_k",
    "r_precision",
    "rbp",
    "rbp_residual",
    "recall_at_k",
    "reciprocal_rank",
]


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
    unjudged
        ``"ignore"``: rows with a null relevance are ignored (SPEC §2; the ranking of the
        judged items, a "condensed list"); ``"nonrelevant"``: a row with a score and a null
        relevance is a retrieved item without a judgment, ranked and not relevant (grade 0),
        as trec_eval's unjudged documents (a run left-joined to its qrels).
"""


def _doc(fn: Callable[..., Any]) -> Callable[..., Any]:
    if fn.__doc__ and "{common}" in fn.__doc__:
        fn.__doc__ = fn.__doc__.replace("{common}", _COMMON_DOC.strip())
    return fn


def _ranking_spec(
    metric: str,
    relevance: IntoExpr,
    score: IntoExpr,
    opts: Options,
    *,
    out: str | None = None,
    **params: Any,
) -> MetricSpec:
    """A ranking metric as a spec: its states are the query's rows (relevance and score,
    merged by concatenation, so a query split across partitions merges exactly; the engine
    leaves out the rows that do not count); the finalize sorts them, only those the metric
    reads when it reads the top of the list (:func:`leading_state`), and runs the engine
    (:func:`query_metrics`)."""
    spec = Spec(out or metric, metric, k=opts.k, gain=opts.gain, **params)

    def finalize(rows: Mapping[str, pl.Expr]) -> pl.Expr:
        state = leading_state(
            rows["r"],
            rows["s"],
            [spec],
            ties=opts.ties,
            unscored=opts.unscored,
            min_relevance=opts.min_relevance,
            unjudged=opts.unjudged,
        )
        return query_metrics(
            state,
            [spec],
            ties=opts.ties,
            unscored=opts.unscored,
            min_relevance=opts.min_relevance,
            no_relevant=opts.no_relevant,
            unjudged=opts.unjudged,
        )

    states = {"r": State(to_float(relevance), "rows"), "s": State(to_float(score), "rows")}
    return MetricSpec(states, finalize, undefined=NO_RELEVANT_ITEM)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="ndcg",
    at_k_chart=1,
    trec=("ndcg", "ndcg_cut"),
)
@_doc
def ndcg(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    gain: str = "exp2",
    log_base: float = 2.0,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
    unjudged: str = "ignore",
) -> MetricSpec:
    """Normalised discounted cumulative gain of one query, DCG@k / ideal DCG@k.

    DCG@k = Σ_{rank i ≤ k} gain(rel_i) / log2(i + 1), gain ``"exp2"`` = 2^rel − 1 (Burges
    et al. 2005) or ``"linear"`` = rel (trec_eval). The ideal DCG sorts every item of the
    query by relevance. With ``ties="average"`` each item of a tie block occupying ranks
    a..b gets the mean discount over those ranks within the cutoff (McSherry & Najork
    2008; as YDF and scikit-learn's ``ndcg_score``).

    {common}
    log_base
        Base of the logarithm of the discount, 1 / log_base(rank + 1) (as scikit-learn's
        ``dcg_score``); NDCG does not depend on it (the ratio of two sums with the same
        discount), up to rounding.

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
    check_log_base(log_base)
    opts = Options(k, ties, min_relevance, no_relevant, unscored, gain, unjudged)
    return _ranking_spec("ndcg", relevance, score, opts, log_base=float(log_base))


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
    log_base: float = 2.0,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
    unjudged: str = "ignore",
) -> MetricSpec:
    """Discounted cumulative gain of one query, Σ_{rank i ≤ k} gain(rel_i) / log2(i + 1).

    ``gain="exp2"`` (default) is 2^rel − 1, ``"linear"`` is rel. Ties as in :func:`ndcg`.
    Null for a query with no relevant item (like every ranking metric). With
    ``gain="linear"`` and the default ties, scikit-learn's ``dcg_score`` (``log_base`` as
    its).

    {common}
    log_base
        Base of the logarithm of the discount, 1 / log_base(rank + 1) (scikit-learn's
        ``log_base``; default 2).

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
    check_log_base(log_base)
    opts = Options(k, ties, min_relevance, no_relevant, unscored, gain, unjudged)
    return _ranking_spec("dcg", relevance, score, opts, log_base=float(log_base))


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="precision",
    at_k_chart=2,
    trec=("P",),
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
    unjudged: str = "ignore",
) -> MetricSpec:
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
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("precision_at_k", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="recall",
    at_k_chart=3,
    trec=("recall",),
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
    unjudged: str = "ignore",
) -> MetricSpec:
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
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("recall_at_k", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="hit_rate",
    at_k_chart=6,
    trec=("success",),
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
    unjudged: str = "ignore",
) -> MetricSpec:
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
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("hit_rate_at_k", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="map",
    at_k_chart=4,
    trec=("map", "map_cut", "gm_map"),
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
    unjudged: str = "ignore",
) -> MetricSpec:
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
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("ap_at_k", relevance, score, opts, denominator=denominator)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="map",
    name="map",
    summary=False,  # the table's map columns are ap_at_k's (the same short name)
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
    unjudged: str = "ignore",
) -> MetricSpec:
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
    check_choice("denominator", denominator, DENOMINATORS)
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("ap_at_k", relevance, score, opts, out="map", denominator=denominator)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="ap_11pt",
    # in the default table with ties="first" only: the exact expectation over tie orders
    # costs the fourth power of a tie block's length (see below)
    summary={"ranking": {"ties": "first"}},
    trec=("11pt_avg",),
)
def ap_11pt(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
    unjudged: str = "ignore",
) -> MetricSpec:
    """11-point interpolated average precision of one query (textbook definition).

    The mean over recall levels 0, 0.1, …, 1 of the interpolated precision, the highest
    precision at any rank whose recall is >= the level (0 when the list never reaches
    it). With ``ties="average"`` the expectation over the orders of tied items: the
    distribution of each tie block's best precision, multiplied over independent blocks
    (:mod:`polars_eval.metrics.ranking._ap11_ties`). Exact; very large tie blocks holding many
    relevant items are refused with a ``ValueError`` (their cost grows as the fourth power
    of the block's length) — use ``ties="first"`` there. The numpy kernel runs once for
    every query of an aggregation, sharing identical tie blocks.

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
    opts = Options(None, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("ap_11pt", relevance, score, opts)


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
    trec=("recip_rank",),
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
    unjudged: str = "ignore",
) -> MetricSpec:
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("reciprocal_rank", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="mrr",
    at_k_chart=5,
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
    unjudged: str = "ignore",
) -> MetricSpec:
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("mrr", relevance, score, opts)


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
    unjudged: str = "ignore",
) -> MetricSpec:
    """Expected reciprocal rank of one query (Chapelle et al. 2009).

    ERR@k = Σ_{rank i ≤ k} (1/i) R_i Π_{j<i} (1 − R_j), with the stop probability
    R = (2^rel − 1) / 2^max_relevance; grades above ``max_relevance`` count as
    ``max_relevance``. With ``ties="average"`` the expectation over the orders of each
    tie block: the item at place t of a block stops the user with probability
    ē_{t−1} − ē_t, ē_t the mean product of (1 − R) over the t-subsets of the block (see
    :mod:`polars_eval.metrics.ranking._err_ties`; a numpy recurrence, run once for every query
    of an aggregation).

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
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("err", relevance, score, opts, max_relevance=float(max_relevance))


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
    unjudged: str = "ignore",
) -> MetricSpec:
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
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("cg", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="r_precision",
    trec=("Rprec",),
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
    unjudged: str = "ignore",
) -> MetricSpec:
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
    opts = Options(None, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("r_precision", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="f1",
    summary=False,
)
@_doc
def f1_at_k(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
    unjudged: str = "ignore",
) -> MetricSpec:
    """F1 at k: the harmonic mean of :func:`precision_at_k` and :func:`recall_at_k`.

    2·P·R / (P + R) with P = hits / k and R = hits / relevant items, that is
    2·hits / (k + relevant items) (0 without a hit; ``k=None``: the list's length for k).
    As ranx's ``f1`` (``f1@k``); P divides by k even when the list is shorter, as
    trec_eval's ``P.k``. Linear in the hits, so with ties the expected hits give the
    expected F1.

    {common}

    References
    ----------
    van Rijsbergen, C. J. (1979). Information Retrieval, ch. 7. ranx's ``f1``.

    Examples
    --------
    One hit in the top 2, three relevant items: P = 1/2, R = 1/3, F1 = 2/5.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"q": 1, "rel": [1, 0, 1, 1], "s": [4, 3, 2, 1]})
    >>> df.select(pe.f1_at_k("rel", "s", k=2)).item()
    0.4
    >>> df.eval.f1_at_k("rel", "s", query="q", k=2)
    0.4
    """
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("f1_at_k", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=False,
    lower=0.0,
    upper=1.0,
    undefined="the query has no relevant item, or no judged non-relevant item",
    short="fallout",
    summary=False,
)
@_doc
def fallout_at_k(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    k: int | None = 10,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
    unjudged: str = "ignore",
) -> MetricSpec:
    """Fallout at k: judged non-relevant items in the top k / judged non-relevant items.

    The false positive rate of the top k (Salton & McGill's fallout); lower is better. A
    judged non-relevant item has a relevance below ``min_relevance``; with
    ``unscored="unretrieved"`` the judged items never ranked count in the denominator;
    with ``unjudged="nonrelevant"`` the unjudged items are ranked but are not judged
    non-relevant (neither numerator nor denominator). Null for a query without a judged
    non-relevant item (0/0), and, as every ranking metric, for a query without a relevant
    item. With ties, the expected count in the top k.

    {common}

    References
    ----------
    Salton, G. & McGill, M. J. (1983). Introduction to Modern Information Retrieval, §5.

    Examples
    --------
    Two of the three non-relevant items are in the top 3:

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [1, 0, 0, 1, 0], "s": [5, 4, 3, 2, 1]})
    >>> round(df.select(pe.fallout_at_k("rel", "s", k=3)).item(), 6)
    0.666667
    """
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("fallout_at_k", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="bpref",
    summary=False,
    trec=("bpref", "gm_bpref"),
)
@_doc
def bpref(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
    unjudged: str = "ignore",
) -> MetricSpec:
    """Binary preference (bpref) of one query, as trec_eval's ``bpref``.

    bpref = (1/R) Σ_{relevant item r ranked} (1 − min(n_r, D) / D), where n_r is the
    number of judged non-relevant items ranked above r, R the relevant items of the query
    and D = min(R, judged non-relevant items) (a relevant item adds 1 when D = 0). Only
    judgments count: a row with a null relevance (an unjudged item) changes nothing,
    whether ignored or ranked (``unjudged``); with ``unscored="unretrieved"`` the judged
    items never ranked count in R and in the judged non-relevant items, as trec_eval's
    qrels. With ``ties="average"`` the expectation over the orders of tied items: the
    number of a block's non-relevant items above one of its relevant items is uniform
    over 0..L, summed in closed form.

    {common}

    References
    ----------
    Buckley, C. & Voorhees, E. (2004). Retrieval evaluation with incomplete information.
    SIGIR. trec_eval's ``bpref``; ranx's ``bpref``.

    Examples
    --------
    Relevant at ranks 1, 4 and 7, judged non-relevant at 3, 5 and 6, unjudged at 2; one
    relevant and one non-relevant item never ranked: R = 4, D = 4, bpref = (1 + (1 − 1/4)
    + (1 − 3/4)) / 4 = 0.5. Counting only the ranked items: R = 3, D = 3,
    (1 + 2/3 + 0) / 3.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [1, None, 0, 1, 0, 0, 1, 1, 0],
    ...                    "s": [9, 8, 7, 6, 5, 4, 3, None, None]})
    >>> df.select(pe.bpref("rel", "s", unscored="unretrieved")).item()
    0.5
    >>> round(df.select(pe.bpref("rel", "s")).item(), 6)
    0.555556
    """
    opts = Options(None, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("bpref", relevance, score, opts)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="rbp",
    summary=False,
)
def rbp(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    p: float = 0.8,
    k: int | None = None,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
    unjudged: str = "ignore",
) -> MetricSpec:
    """Rank-biased precision of one query (Moffat & Zobel 2008).

    RBP = (1 − p) Σ_{rank i ≤ d} r_i p^(i − 1), r_i = 1 for a relevant item, d the ranked
    items (or k). Binary relevance, as ranx's ``rbp`` and the paper. Its uncertainty, the
    weight that unjudged items and the items beyond the list could add, is
    :func:`rbp_residual` (RBP lies in [rbp, rbp + rbp_residual]): a separate metric, so
    that both are plain values averaged over queries (``metrics=["rbp", "rbp_residual"]``
    in ``df.eval.ranking``). With ties, each relevant item of a tie block gets the mean
    weight of the block's ranks. Null for a query without a relevant item (its value, 0,
    with ``no_relevant="zero"``).

    {common}
    p
        The persistence, in (0, 1): the chance that the user goes on to the next item.

    References
    ----------
    Moffat, A. & Zobel, J. (2008). Rank-biased precision for measurement of retrieval
    effectiveness. ACM TOIS 27(1). ranx's ``rbp``; trec_eval 10's ``rbp``.

    Examples
    --------
    Relevant at ranks 1 and 3 of [rel, unjudged, rel, non-rel], p = 0.5: the unjudged item
    ignored, the list is [rel, rel, non-rel] and RBP = 0.5 (1 + 0.5) = 0.75; ranked as not
    relevant, RBP = 0.5 (1 + 0.25) = 0.625.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [1, None, 1, 0], "s": [4, 3, 2, 1]})
    >>> df.select(pe.rbp("rel", "s", p=0.5)).item()
    0.75
    >>> df.select(pe.rbp("rel", "s", p=0.5, unjudged="nonrelevant")).item()
    0.625
    """
    check_persistence(p)
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("rbp", relevance, score, opts, p=float(p))


rbp = _doc(rbp)


@register(
    task="ranking",
    inputs=INPUTS,
    higher_is_better=False,
    lower=0.0,
    upper=1.0,
    undefined=NO_RELEVANT_ITEM,
    short="rbp_residual",
    summary=False,
)
def rbp_residual(
    relevance: IntoExpr,
    score: IntoExpr,
    *,
    p: float = 0.8,
    k: int | None = None,
    ties: str = "average",
    min_relevance: float = 1.0,
    no_relevant: str | None = None,
    unscored: str = "ignore",
    unjudged: str = "ignore",
) -> MetricSpec:
    """The residual of rank-biased precision: what unjudged and unranked items could add.

    (1 − p) Σ_{unjudged item at rank i ≤ d} p^(i − 1) + p^d, with d the ranked items (or
    k when fewer): the RBP of the query lies between :func:`rbp` and rbp + residual
    (Moffat & Zobel 2008, §4). Unjudged items are the rows with a score and a null
    relevance, ranked with ``unjudged="nonrelevant"``; with ``unjudged="ignore"`` (the
    default, SPEC §2) they are left out and the residual is p^d. Defined for a query
    without a relevant item too: null there by the shared rule, its value with
    ``no_relevant="zero"``.

    {common}
    p
        The persistence, in (0, 1).

    References
    ----------
    Moffat, A. & Zobel, J. (2008). ACM TOIS 27(1). trec_eval 10's ``rbp_resid``.

    Examples
    --------
    [rel, unjudged, rel, non-rel], p = 0.5: the unjudged item ranked, 0.5 · 0.5 + 0.5^4 =
    0.3125; ignored, 0.5^3 = 0.125.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"rel": [1, None, 1, 0], "s": [4, 3, 2, 1]})
    >>> df.select(pe.rbp_residual("rel", "s", p=0.5, unjudged="nonrelevant")).item()
    0.3125
    >>> df.select(pe.rbp_residual("rel", "s", p=0.5)).item()
    0.125
    """
    check_persistence(p)
    opts = Options(k, ties, min_relevance, no_relevant, unscored, unjudged=unjudged)
    return _ranking_spec("rbp_residual", relevance, score, opts, p=float(p))


rbp_residual = _doc(rbp_residual)
