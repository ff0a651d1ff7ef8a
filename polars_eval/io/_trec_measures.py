"""trec_eval's measures that no ranking metric carries (:func:`polars_eval.trec_eval`).

Each is computed per query, as trec_eval's ``m_<name>.c`` computes it, from two arrays:
the relevance codes of the retrieved documents in trec_eval's order (score descending,
then document id descending; a judged document's relevance level ``>= 0``,
:data:`NONPOOL` for a document absent from the qrels, :data:`UNJUDGED` for one in the
qrels with a negative relevance, trec_eval's pooled-but-unjudged) and the number of
judged documents of the query at each relevance level ``0, 1, ...`` (the qrels). The
measures with a gain map (``ndcg.1=0,2=3``, ``G``, ``ndcg_rel``, ``Rndcg``, ``dcg``,
``ideal_dcg``, ``rbp``) share trec_eval's gain table (:func:`gain_table`).

Vectorised within a query (numpy cumulative sums over its documents); one Python call per
query and measure family.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

NONPOOL = -1
"""A retrieved document absent from the qrels (trec_eval's ``RELVALUE_NONPOOL``)."""
UNJUDGED = -2
"""A retrieved document of the qrels with a negative relevance (``RELVALUE_UNJUDGED``)."""
INFAP_EPSILON = 1e-5
"""trec_eval's ``INFAP_EPSILON``."""
RBP_P = 0.9
"""trec_eval's default persistence of ``rbp`` (and the fixed one of ``rbp_resid``)."""


@dataclass(frozen=True)
class Query:
    """One query: the retrieved documents' relevance codes in trec_eval's order, the judged
    documents per relevance level, and the relevance level (``-l``)."""

    codes: np.ndarray
    levels: np.ndarray
    level: int

    @property
    def num_rel(self) -> int:
        return int(self.levels[self.level :].sum())

    @property
    def relevant(self) -> np.ndarray:
        return self.codes >= self.level


# ---------------------------------------------------------------------------------------
# Gains (trec_eval's setup_gains, shared by ndcg, G, ndcg_rel, Rndcg, dcg, rbp)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gains:
    """The gain of each relevance level and the ideal ordering of the judged documents."""

    level_gain: Mapping[int, float]
    ideal: np.ndarray  # the gain at each ideal rank: levels by gain descending, repeated

    def of(self, codes: np.ndarray) -> np.ndarray:
        """The gain of each retrieved document (0 for a level without a gain, or unjudged)."""
        out = np.zeros(len(codes))
        for level, gain in self.level_gain.items():
            out[codes == level] = gain
        return out

    @property
    def positive(self) -> np.ndarray:
        """The ideal gains while positive (trec_eval's ideal stops at the first gain <= 0)."""
        stop = np.flatnonzero(self.ideal <= 0.0)
        return self.ideal if len(stop) == 0 else self.ideal[: stop[0]]


def gain_table(levels: np.ndarray, pairs: Mapping[int, float]) -> Gains:
    """trec_eval's gains: level i has gain i unless the gain map (``pairs``) gives one;
    the levels are 0 .. the highest level judged, and the levels of the gain map.

    The ideal ranking takes the levels by gain, highest first (a stable sort; trec_eval's
    comparator truncates the difference of two gains to an integer, so gains less than 1
    apart may be ordered otherwise there), each as many times as it has judged documents.
    """
    present = np.flatnonzero(levels)
    top = int(present[-1]) + 1 if len(present) else 0
    entries = [(lv, g, int(levels[lv]) if lv < top else 0) for lv, g in pairs.items()]
    entries += [(lv, float(lv), int(levels[lv])) for lv in range(top) if lv not in pairs]
    entries.sort(key=lambda e: e[1])  # increasing gain, stable
    ideal = [g for _, g, n in reversed(entries) for _ in range(n)]
    return Gains({lv: g for lv, g, _ in entries}, np.asarray(ideal, dtype=float))


def _discount(n: int) -> np.ndarray:
    return np.log2(np.arange(n, dtype=float) + 2.0)


def _cumulative(values: np.ndarray, n: int) -> np.ndarray:
    """The running sum of ``values`` over positions 0..n-1 (the last value beyond the end)."""
    out = np.cumsum(values)
    if n <= len(out):
        return out[:n]
    last = out[-1] if len(out) else 0.0
    return np.concatenate([out, np.full(n - len(out), last)])


def dcg(q: Query, gains: Gains) -> float:
    g = gains.of(q.codes)
    return float(np.cumsum(g / _discount(len(g)))[-1]) if len(g) else 0.0


def ideal_dcg(q: Query, gains: Gains) -> float:
    ideal = gains.positive
    return float(np.cumsum(ideal / _discount(len(ideal)))[-1]) if len(ideal) else 0.0


def ndcg(q: Query, gains: Gains) -> float:
    """m_ndcg.c: DCG of the ranking / DCG of the ideal ranking (all judged documents of
    positive gain), 0 when the latter is 0."""
    ideal = ideal_dcg(q, gains)
    return dcg(q, gains) / ideal if ideal > 0.0 else 0.0


def ndcg_rel(q: Query, gains: Gains) -> float:
    """m_ndcg_rel.c: NDCG averaged over the relevant documents (positive gain): at each one
    retrieved, the NDCG at its rank; for each one not retrieved, the final NDCG."""
    g = gains.of(q.codes)
    ideal = gains.positive
    n, n_rel = len(g), len(ideal)
    if n_rel == 0:
        return 0.0
    results = np.cumsum(g / _discount(n))
    best = _cumulative(ideal / _discount(n_rel), n)
    hit = g > 0.0
    total = float((results[hit] / best[hit]).sum())
    final = results[-1] if n else 0.0
    ideal_total = float((ideal / _discount(n_rel)).sum())
    total += (n_rel - int(hit.sum())) * final / ideal_total
    return total / n_rel if total > 0.0 else 0.0


def rndcg(q: Query, gains: Gains) -> float:
    """m_Rndcg.c: NDCG averaged at the R levels, the ranks where the ideal gain changes
    (the NDCG before that rank), plus the final NDCG when documents remain after the ideal
    gains are exhausted. 0 without a relevant document."""
    if q.num_rel == 0:
        return 0.0
    g = gains.of(q.codes)
    ideal = gains.positive
    n, n_rel = len(g), len(ideal)
    ideal_rest = gains.ideal[n_rel:]
    after = ideal_rest[0] if len(ideal_rest) else 0.0  # the ideal gain after the positive ones
    sequence = np.append(ideal, after)
    results = _cumulative(g / _discount(n), max(n, n_rel + 1))
    best = np.cumsum(ideal / _discount(n_rel)) if n_rel else np.zeros(0)
    total, count = 0.0, 0
    for i in range(1, n_rel + 1):  # a boundary at i: the gain at i differs from the one before
        if sequence[i] != sequence[i - 1] and best[i - 1] > 0.0:
            total += results[min(i, n) - 1] / best[i - 1] if min(i, n) > 0 else 0.0
            count += 1
    if n_rel + 1 < n and n_rel and best[-1] > 0.0:
        total += results[n - 1] / best[-1]
        count += 1
    return total / count if count else math.nan


def g_measure(q: Query, gains: Gains) -> float:
    """m_G.c: each retrieved document of non-zero gain adds gain / log2(2 + cost - gained),
    cost the running sum of max(ideal gain, 1) and gained the running sum of gains; over
    the sum of the positive ideal gains (0 when that is 0)."""
    g = gains.of(q.codes)
    n = len(g)
    ideal_sum = float(gains.positive.sum())
    if ideal_sum <= 0.0:
        return 0.0
    ideal = np.zeros(n)
    ideal[: min(n, len(gains.ideal))] = gains.ideal[:n]
    cost = np.cumsum(np.maximum(ideal, 1.0))
    gained = np.cumsum(g)
    nonzero = g != 0.0
    value = (g[nonzero] / np.log2(2.0 + cost[nonzero] - gained[nonzero])).sum()
    return float(value) / ideal_sum


def rbp(q: Query, gains: Gains, p: float) -> float:
    """m_rbp.c: (1 - p) sum of gain p^(rank - 1), the gains scaled to [0, 1] by their
    minimum and maximum over the levels when some lie outside."""
    values = np.array(list(gains.level_gain.values()) or [0.0])
    low, high = float(values.min()), float(values.max())
    g = gains.of(q.codes)
    if (low < 0.0 or high > 1.0) and high > low:
        g = np.where(np.isin(q.codes, list(gains.level_gain)), (g - low) / (high - low), 0.0)
    return (1.0 - p) * float((g * p ** np.arange(len(g), dtype=float)).sum())


# ---------------------------------------------------------------------------------------
# Measures of the relevance codes alone
# ---------------------------------------------------------------------------------------


def infap(q: Query) -> float:
    """m_infap.c: inferred AP (Yilmaz & Aslam 2006): documents outside the pool skipped,
    pooled-but-unjudged ones counted, the precision above each relevant document estimated
    from the judged ones."""
    codes = q.codes
    judged_rel = codes >= q.level
    nonrel = (codes >= 0) & (codes < q.level)
    unjudged = codes == UNJUDGED
    rel_so_far = np.cumsum(judged_rel)  # including the document
    nonrel_above = np.cumsum(nonrel) - nonrel
    unjudged_above = np.cumsum(unjudged) - unjudged
    j = np.arange(len(codes), dtype=float)
    at = np.flatnonzero(judged_rel)
    if len(at) == 0:
        return 0.0
    jr, r, nr, un = j[at], rel_so_far[at] - 1.0, nonrel_above[at], unjudged_above[at]
    with np.errstate(divide="ignore", invalid="ignore"):
        later = 1.0 / (jr + 1.0) + (jr / (jr + 1.0)) * ((r + nr + un) / jr) * (
            (r + INFAP_EPSILON) / (r + nr + 2.0 * INFAP_EPSILON)
        )
    value = np.where(jr == 0.0, 1.0, later).sum()
    return float(value) / q.num_rel if q.num_rel else float(value)


def bin_g(q: Query) -> float:
    """m_binG.c: the mean over relevant documents of 1 / log2(2 + non-relevant retrieved up
    to it), the missing ones adding 0; 0 without a relevant document retrieved."""
    rel = q.relevant
    if not rel.any():
        return 0.0
    rank = np.arange(1, len(rel) + 1, dtype=float)
    nonrel_up_to = rank - np.cumsum(rel)
    return float((1.0 / np.log2(2.0 + nonrel_up_to[rel])).sum()) / q.num_rel


def yaap(q: Query) -> float:
    """m_yaap.c: log((1 + S) / (1 + R - S)), S the sum of the precisions at the relevant
    documents retrieved (Robertson 2012)."""
    rel = q.relevant
    rank = np.arange(1, len(rel) + 1, dtype=float)
    total = float((np.cumsum(rel)[rel] / rank[rel]).sum())
    return math.log((1.0 + total) / (1.0 + q.num_rel - total))


def rbp_resid(q: Query) -> float:
    """m_rbp_resid.c (p = 0.9 fixed): p^n + (1 - p) sum of p^(rank - 1) over the unjudged
    retrieved documents (outside the pool or pooled but unjudged); trec_eval reports 0
    when no retrieved document is unjudged."""
    unjudged = q.codes < 0
    if not unjudged.any():
        return 0.0
    weights = RBP_P ** np.arange(len(unjudged), dtype=float)
    return RBP_P ** len(unjudged) + (1.0 - RBP_P) * float(weights[unjudged].sum())


def unj(q: Query, cutoff: int) -> float:
    """m_unjudged.c (trec_eval 10): the share of unjudged documents (outside the pool or
    pooled but unjudged) among the top ``cutoff``, a ranking shorter than the cutoff
    counting as filled with judged ones (15 documents, 4 unjudged: unj_20 = 4 / 20)."""
    return float(np.count_nonzero(q.codes[:cutoff] < 0)) / cutoff


def relstring(q: Query, length: int) -> str:
    """m_relstring.c: one character per document of the top ``length``: its level (0-9),
    '>' above 9, '-' outside the pool, '.' pooled but unjudged."""

    def char(code: int) -> str:
        if code > 9:
            return ">"
        if code >= 0:
            return str(code)
        return "-" if code == NONPOOL else "." if code == UNJUDGED else "<"

    return "".join(char(int(c)) for c in q.codes[: max(length, 0)])


# ---------------------------------------------------------------------------------------
# Every query
# ---------------------------------------------------------------------------------------

GAIN_MEASURES: dict[str, Callable[[Query, Gains], float]] = {
    "ndcg": ndcg,
    "dcg": dcg,
    "ideal_dcg": ideal_dcg,
    "ndcg_rel": ndcg_rel,
    "Rndcg": rndcg,
    "G": g_measure,
}
PLAIN: dict[str, Callable[[Query], float]] = {
    "infAP": infap,
    "binG": bin_g,
    "yaap": yaap,
    "rbp_resid": rbp_resid,
}
MEASURES = (*GAIN_MEASURES, *PLAIN, "rbp", "relstring", "unj")
"""The measures computed here."""


@dataclass(frozen=True)
class Request:
    """One output column: ``measure`` with its gain map and numeric parameters."""

    column: str
    measure: str
    pairs: tuple[tuple[int, float], ...] = ()
    params: tuple[float, ...] = ()


def evaluate(
    codes: Sequence[np.ndarray],
    levels: Sequence[np.ndarray],
    requests: Sequence[Request],
    level: int,
) -> dict[str, list[float] | list[str]]:
    """Each request's column, one value per query (``codes[i]``, ``levels[i]``)."""
    out: dict[str, list] = {r.column: [] for r in requests}
    for query_codes, query_levels in zip(codes, levels, strict=True):
        q = Query(query_codes, query_levels, level)
        tables: dict[tuple[tuple[int, float], ...], Gains] = {}
        for r in requests:
            if r.measure in PLAIN:
                value: float | str = PLAIN[r.measure](q)
            elif r.measure == "relstring":
                value = relstring(q, int(r.params[0]) if r.params else 10)
            elif r.measure == "unj":  # params: the cutoff
                value = unj(q, int(r.params[0]))
            else:
                if r.pairs not in tables:
                    tables[r.pairs] = gain_table(query_levels, dict(r.pairs))
                gains = tables[r.pairs]
                if r.measure == "rbp":  # params: the persistence
                    value = rbp(q, gains, r.params[0] if r.params else RBP_P)
                else:
                    value = GAIN_MEASURES[r.measure](q, gains)
            out[r.column].append(value)
    return out
