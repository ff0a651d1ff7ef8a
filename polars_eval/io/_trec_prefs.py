"""trec_eval's preference measures (``prefs_*``, ``-R prefs`` and ``-R qrels_prefs``).

A preference file holds lines ``query  jg  jsg  doc  rel_level``: within one judgment
sub-group (jsg) a document of a higher level is preferred to every document of a lower
one; the sub-groups of one judgment group (jg, one user) together form a partial order,
closed transitively; different judgment groups may disagree. ``-R qrels_prefs`` reads a
qrels file the same way, the iteration field as the judgment group, one sub-group.

Per query (trec_eval's form_prefs_counts.c), the judged documents (those of any
preference line of the query) get a docid rank: the retrieved ones by their rank in the
run (score descending, then document id *ascending*, as form_prefs_counts.c sorts; the
ordinary measures break ties by document id descending), cut to ``-M``; the others after
them, by document id. For each judgment group the preferences ``a > b`` are counted in
five areas: both retrieved and fulfilled (a above b) or not, one retrieved (fulfilled
when it is a), neither retrieved. A group of one sub-group holds every pair of
documents of different levels (its equivalence classes, "EC"); a group of several
sub-groups holds the transitive closure of its sub-groups' preferences (its preference
array, "PA"). The measures (m_prefs_*.c) are ratios of those counts.

Vectorised with numpy inside a query: a judgment group's preferences are one boolean
matrix over its documents (docid order), every count a sum over a block of it, and the
transitive closure repeated boolean matrix products. Python loops run over queries and
over judgment groups (and, building a preference array, its sub-groups), never over
lines: trec_eval's own definition is per query and per judgment group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from polars_eval.exceptions import DataValidationError

COUNTS = ("prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret")
"""Preference counts: summed over queries in the summary, as trec_eval."""
MEASURES = (
    *COUNTS,
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
)
"""trec_eval 10's preference measures, in its order."""


@dataclass(frozen=True)
class Judgments:
    """One query's preference lines, sorted by judgment group, sub-group, docid rank.

    ``group`` and ``subgroup`` are codes in the order of their names; ``doc`` is each
    line's docid rank (retrieved documents ``0 .. retrieved - 1`` in rank order, then the
    others by document id, ``judged`` in all); ``doc_names[docid]`` and
    ``group_names[code]`` name them in messages."""

    query: str
    group: np.ndarray
    subgroup: np.ndarray
    doc: np.ndarray
    level: np.ndarray
    retrieved: int
    judged: int
    doc_names: Sequence[str]
    group_names: Mapping[int, str]


@dataclass(frozen=True)
class Group:
    """One judgment group over its documents (docid order, the retrieved ones first)."""

    docs: np.ndarray  # the docid ranks, ascending
    prefs: np.ndarray  # bool (m, m): prefs[a, b] when a is preferred to b
    k: int  # how many of the documents are retrieved (the first k)
    rel: np.ndarray  # bool per document: relevant (level > 0)
    nonrel: np.ndarray  # bool per document: non-relevant
    ec: np.ndarray | None  # EC groups: the class of each document (0: highest level)


def _areas(prefs: np.ndarray, k: int) -> tuple[int, int, int, int, int]:
    """(fulfilled_ret, possible_ret, fulfilled_imp, possible_imp, possible_notoccur).

    Rows and columns in docid order, the first ``k`` retrieved: a preference ``a > b`` is
    fulfilled among the retrieved when a comes first (the upper triangle of the retrieved
    block), implied-fulfilled when only a is retrieved, implied-failed when only b is."""
    top = prefs[:k, :k]
    ful_ret = int(np.count_nonzero(np.triu(top, 1)))
    ful_imp = int(np.count_nonzero(prefs[:k, k:]))
    poss_imp = ful_imp + int(np.count_nonzero(prefs[k:, :k]))
    return (
        ful_ret,
        int(np.count_nonzero(top)),
        ful_imp,
        poss_imp,
        int(np.count_nonzero(prefs[k:, k:])),
    )


def _closure(prefs: np.ndarray) -> np.ndarray:
    """The transitive closure of a preference relation (boolean matrix products until
    nothing changes, as form_prefs_counts.c's add_transitives), without its diagonal."""
    eye = np.eye(len(prefs), dtype=bool)
    reach = prefs | eye
    while True:
        step = reach.astype(np.float32)
        nxt = (step @ step) > 0.0
        if np.array_equal(nxt, reach):
            return reach & ~eye
        reach = nxt


def _group(j: Judgments, rows: np.ndarray) -> Group:
    """A judgment group's preferences (form_jg_ec / form_jg_pa in form_prefs_counts.c)."""
    doc, level, sub = j.doc[rows], j.level[rows], j.subgroup[rows]
    docs, local = np.unique(doc, return_inverse=True)
    m = len(docs)
    k = int(np.searchsorted(docs, j.retrieved))
    if len(np.unique(sub)) == 1:  # one sub-group: every pair of different levels
        at = np.empty(m)
        at[local] = level  # a document appears once in a sub-group (checked before)
        classes = np.unique(at)
        ec = len(classes) - 1 - np.searchsorted(classes, at)
        rel = at > 0.0
        return Group(docs, at[:, None] > at[None, :], k, rel, ~rel, ec)
    prefs = np.zeros((m, m), dtype=bool)
    for s in np.unique(sub):  # a sub-group orders its own documents by level
        mine = sub == s
        idx, lv = local[mine], level[mine]
        prefs[np.ix_(idx, idx)] |= lv[:, None] > lv[None, :]
    zero = np.bincount(local, weights=level == 0.0, minlength=m) > 0
    positive = np.bincount(local, weights=level > 0.0, minlength=m) > 0
    if (zero & positive).any():
        name = j.doc_names[docs[np.flatnonzero(zero & positive)[0]]]
        raise DataValidationError(
            f'document "{name}" has both level 0 (non-relevant) and a positive level in '
            f'judgment group "{j.group_names[j.group[rows][0]]}" of query "{j.query}" of the '
            "preference judgments (trec_eval stops too)"
        )
    # the level trec_eval keeps for a document: that of its last line in (sub-group,
    # level descending, docid) order
    order = np.lexsort((doc, -level, sub))
    last = len(order) - 1 - np.unique(local[order][::-1], return_index=True)[1]
    kept = level[order][last]
    prefs = _closure(prefs)
    conflict = np.argwhere(prefs & prefs.T)
    if len(conflict):
        a, b = (j.doc_names[docs[i]] for i in conflict[0])
        raise DataValidationError(
            f'documents "{a}" and "{b}" are each preferred to the other in judgment group '
            f'"{j.group_names[j.group[rows][0]]}" of query "{j.query}" of the preference '
            "judgments (a judgment group must be consistent; trec_eval stops too)"
        )
    return Group(docs, prefs, k, kept > 0.0, kept == 0.0, None)


def _rnonrel(g: Group, retrieved_only: bool) -> float:
    """m_prefs_avgjg_Rnonrel.c (``retrieved_only``: _ret.c) for one judgment group:
    fulfilled / possible as if the group had as many non-relevant documents as relevant
    ones (R): with fewer (N < R), R - N fulfilled preferences are added for each relevant
    retrieved document (and R - N possible for each relevant one); with more, only the
    first R non-relevant documents in docid order are kept and the counts recomputed.

    Recomputing follows trec_eval's code: in an EC group the kept non-relevant
    documents are the first R of its lowest class, paired with every document of the
    group, that class included (each with itself too); the _ret form keeps the first R
    retrieved ones of that class only among its first R (R counted as retrieved
    relevant), while in a PA group it discards the non-relevant retrieved documents
    after the first R with R the group's relevant count. 0/0 is NaN, as in C."""
    ful_ret, poss_ret, ful_imp, poss_imp, notocc = _areas(g.prefs, g.k)
    k = g.k
    num_rel, num_rel_ret = int(g.rel.sum()), int(g.rel[:k].sum())
    r, n = (
        (num_rel_ret, int(g.nonrel[:k].sum())) if retrieved_only else (num_rel, int(g.nonrel.sum()))
    )
    if r >= n:
        if retrieved_only:
            ful, poss = ful_ret, poss_ret
        else:
            ful, poss = ful_ret + ful_imp, poss_ret + poss_imp + notocc
        ful += num_rel_ret * (r - n)
        poss += num_rel * (r - n)
    elif g.ec is not None:
        in_last = g.ec == g.ec.max()
        kept = np.flatnonzero(in_last)[:r]  # r: the relevant (retrieved) count
        higher = g.prefs & ~in_last[None, :]  # pairs of classes above the lowest
        if retrieved_only:
            kept, higher = kept[kept < k], higher[:k, :k]
            ful = int(np.count_nonzero(np.triu(higher, 1))) + int(kept.sum())
            poss = int(np.count_nonzero(higher)) + k * len(kept)
        else:
            ful = int(np.count_nonzero(np.triu(higher, 1)[:k])) + int(np.minimum(kept, k).sum())
            poss = int(np.count_nonzero(higher)) + len(g.docs) * len(kept)
    else:
        nonrel = np.flatnonzero(g.nonrel[:k] if retrieved_only else g.nonrel)
        keep = np.ones(len(g.docs), dtype=bool)
        keep[nonrel[num_rel:]] = False
        if retrieved_only:
            keep[k:] &= ~g.nonrel[k:]
        prefs = g.prefs[np.ix_(keep, keep)]
        ful_ret, poss_ret, ful_imp, poss_imp, notocc = _areas(prefs, int(keep[:k].sum()))
        if retrieved_only:
            ful, poss = ful_ret, poss_ret
        else:
            ful, poss = ful_ret + ful_imp, poss_ret + poss_imp + notocc
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.float64(ful) / np.float64(poss))


def _pairs(counts: np.ndarray, njr: int) -> tuple[float, float, float]:
    """prefs_pair, _ret, _imp (m_prefs_pair*.c): over document pairs with a preference
    either way, the share of the preferences that the ranking fulfils, averaged; a pair
    of two unretrieved documents counts 0 (prefs_pair only). ``counts[a, b]``: how many
    judgment groups prefer a to b; the first ``njr`` documents are the retrieved ones."""
    upper = np.triu_indices(njr, 1)  # both retrieved, i above j
    ahead, behind = counts[:njr, :njr][upper], counts[:njr, :njr].T[upper]
    both = ahead + behind
    sel = both > 0
    sum_ret, n_ret = float((ahead[sel] / both[sel]).sum()), int(sel.sum())
    ahead, behind = counts[:njr, njr:], counts[njr:, :njr].T  # only i retrieved
    both = ahead + behind
    sel = both > 0
    sum_imp, n_imp = float((ahead[sel] / both[sel]).sum()), int(sel.sum())
    rest = counts[njr:, njr:] > 0  # neither retrieved: each pair once
    n_out = int(np.count_nonzero(rest | rest.T)) // 2

    def ratio(total: float, n: int) -> float:
        return total / n if n else 0.0

    return (
        ratio(sum_ret + sum_imp, n_ret + n_imp + n_out),
        ratio(sum_ret, n_ret),
        ratio(sum_ret + sum_imp, n_ret + n_imp),
    )


def query_values(j: Judgments) -> dict[str, float]:
    """Every preference measure of one query (trec_eval's per-query values)."""
    bounds = np.flatnonzero(np.diff(j.group)) + 1
    groups = [_group(j, rows) for rows in np.split(np.arange(len(j.group)), bounds)]
    counts = np.zeros((j.judged, j.judged), dtype=np.int32)  # trec_eval's counts array
    per_group = []
    for g in groups:
        if len(g.docs) == j.judged:  # the group judges every document
            counts += g.prefs
        else:
            counts[np.ix_(g.docs, g.docs)] += g.prefs
        per_group.append(_areas(g.prefs, g.k))
    areas = np.array(per_group, dtype=float).reshape(-1, 5)
    ful_ret, poss_ret, ful_imp, poss_imp, notocc = areas.T
    ful, poss = ful_ret + ful_imp, poss_ret + poss_imp + notocc
    imp_ful, imp_poss = ful_ret + ful_imp, poss_ret + poss_imp

    def simple(f: np.ndarray, p: np.ndarray) -> float:
        return float(f.sum() / p.sum()) if p.sum() else 0.0

    def per_jg(f: np.ndarray, p: np.ndarray) -> float:
        # the mean over judgment groups of fulfilled / possible (0 where nothing is
        # possible); 0 unless the sum is positive, as trec_eval
        total = float(np.where(p > 0, f / np.where(p > 0, p, 1.0), 0.0).sum())
        return total / len(groups) if total > 0.0 else 0.0

    def rnonrel(retrieved_only: bool) -> float:
        total = float(np.sum([_rnonrel(g, retrieved_only) for g in groups]))
        return total / len(groups) if total > 0.0 else 0.0  # NaN (0/0) gives 0

    pair, pair_ret, pair_imp = _pairs(counts, j.retrieved)
    return {
        "prefs_num_prefs_poss": float(poss.sum()),
        "prefs_num_prefs_ful": float(ful.sum()),
        "prefs_num_prefs_ful_ret": float(ful_ret.sum()),
        "prefs_simp": simple(ful, poss),
        "prefs_pair": pair,
        "prefs_avgjg": per_jg(ful, poss),
        "prefs_avgjg_Rnonrel": rnonrel(False),
        "prefs_simp_ret": simple(ful_ret, poss_ret),
        "prefs_pair_ret": pair_ret,
        "prefs_avgjg_ret": per_jg(ful_ret, poss_ret),
        "prefs_avgjg_Rnonrel_ret": rnonrel(True),
        "prefs_simp_imp": simple(imp_ful, imp_poss),
        "prefs_pair_imp": pair_imp,
        "prefs_avgjg_imp": per_jg(imp_ful, imp_poss),
    }
