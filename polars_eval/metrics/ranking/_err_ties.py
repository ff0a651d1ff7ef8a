"""Expected reciprocal rank averaged over the orders of tied items (numpy kernel).

ERR@k = Σ_{rank i ≤ k} (1/i) R_i Π_{j<i} (1 − R_j) (Chapelle et al. 2009). With
``ties="average"`` the value is the expectation over every order of the items inside each
tie block, all orders equally likely (McSherry & Najork 2008). The blocks before a block
multiply its terms by the product of their ``1 − R`` (whatever their order), so only the
order inside a block matters. For a block of ``m`` items at ranks ``a..a+m-1`` with
``x = 1 − R`` per item, let ``ē_t`` be the mean, over the ``t``-subsets of the block, of
the product of their ``x`` (the normalised elementary symmetric polynomial,
``ē_0 = 1``). The item at place ``t`` of a random order stops the user with probability
``ē_{t-1} − ē_t`` (the chance that the first ``t-1`` places do not stop, less the chance
that the first ``t`` do not), so the block adds
``Π_{earlier blocks} x · Σ_t (ē_{t-1} − ē_t) / (a + t − 1)`` over its places in the cutoff.

Why numpy: ``ē`` comes from a recurrence over the items of a block with a vector state
(``ē_t ← ((j − t) ē_t + t x_j ē_{t-1}) / j`` when item ``j`` joins), which no Polars
column operation expresses. The recurrence runs over the places of a block, vectorised
across every block at once; blocks whose items all have the same ``x`` (every block of
one item among them) have the closed form of the ``ties="first"`` sum and skip it.
Cost: Σ over the mixed blocks of (items × places within the cutoff).

References
----------
Chapelle, O., Metzler, D., Zhang, Y. & Grinspan, P. (2009). Expected reciprocal rank for
graded relevance. CIKM. McSherry, F. & Najork, M. (2008). Computing information retrieval
performance measures efficiently in the presence of tied scores. ECIR.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from polars_eval.metrics.ranking._runs import run_starts


def stop_probability(relevance: np.ndarray, max_relevance: float) -> np.ndarray:
    """R = (2^min(rel, max_relevance) − 1) / 2^max_relevance (Chapelle et al. 2009)."""
    return (np.exp2(np.minimum(relevance, max_relevance)) - 1.0) / 2.0**max_relevance


def expected_err(
    query_index: np.ndarray,
    score: np.ndarray,
    relevance: np.ndarray,
    n_queries: int,
    cutoffs: Sequence[int | None],
    max_relevance: float,
) -> np.ndarray:
    """ERR at each cutoff of every query, expected over the orders of tied scores.

    The rows are the retrieved items, query after query (``query_index`` non-decreasing,
    in ``0..n_queries-1``), each query's rows sorted by ``score`` descending. Returns a
    ``(n_queries, len(cutoffs))`` array; a query without rows gets 0. ``None`` in
    ``cutoffs`` is the whole list.
    """
    out = np.zeros((n_queries, len(cutoffs)))
    n = len(score)
    if n == 0:
        return out
    query_start = run_starts(query_index)
    block_start = run_starts(query_index, score)
    first_row = np.flatnonzero(query_start)
    rank = np.arange(n) - first_row[np.cumsum(query_start) - 1] + 1

    stop = stop_probability(relevance, max_relevance)
    x = 1.0 - stop
    reach = _exclusive_product_within(x, query_start)

    starts = np.flatnonzero(block_start)
    lengths = np.diff(np.append(starts, n))
    deepest = max((k for k in cutoffs if k is not None), default=0)
    whole = any(k is None for k in cutoffs)
    mixed = (lengths > 1) & (np.maximum.reduceat(x, starts) > np.minimum.reduceat(x, starts))
    if not whole:
        mixed &= rank[starts] <= deepest
    in_mixed = np.repeat(mixed, lengths)

    # every row outside a mixed block: its ties="first" term (exact for such blocks)
    term = np.where(in_mixed, 0.0, stop * reach / rank)
    for c, k in enumerate(cutoffs):
        kept = term if k is None else np.where(rank <= k, term, 0.0)
        out[:, c] = np.bincount(query_index, weights=kept, minlength=n_queries)

    if mixed.any():
        starts, lengths = starts[mixed], lengths[mixed]
        first_rank = rank[starts]
        places = lengths if whole else np.minimum(lengths, deepest - first_rank + 1)
        probability = place_stop_probabilities(x, starts, lengths, places)
        block = np.repeat(np.arange(len(starts)), places)
        place_rank = first_rank[block] + _ranges(places)
        weight = probability * reach[starts][block] / place_rank
        owner = query_index[starts][block]
        for c, k in enumerate(cutoffs):
            kept = weight if k is None else np.where(place_rank <= k, weight, 0.0)
            out[:, c] += np.bincount(owner, weights=kept, minlength=n_queries)
    return out


def place_stop_probabilities(
    x: np.ndarray, starts: np.ndarray, lengths: np.ndarray, places: np.ndarray
) -> np.ndarray:
    """Per block, ``ē_{t-1} − ē_t`` for the places ``t = 1..places``, concatenated block after block.

    Block ``b`` holds ``x[starts[b] : starts[b] + lengths[b]]`` (``1 <= places <= lengths``).
    Blocks are processed in buckets of equal power-of-two width (so no block pads its
    state to more than twice its places), the longest first within a bucket, so that the
    blocks still taking items at step ``j`` are a prefix of the bucket.
    """
    out = np.empty(int(places.sum()))
    offsets = np.concatenate([[0], np.cumsum(places)[:-1]])
    widths = 1 << np.ceil(np.log2(places)).astype(np.int64)
    for width in np.unique(widths):
        chosen = np.flatnonzero(widths == width)
        chosen = chosen[np.argsort(-lengths[chosen], kind="stable")]
        means = _subset_product_means(x, starts[chosen], lengths[chosen], int(width))
        probability = means[:, :-1] - means[:, 1:]
        inside = np.arange(width) < places[chosen][:, None]
        target = offsets[chosen][:, None] + np.arange(width)
        out[target[inside]] = probability[inside]
    return out


def _subset_product_means(
    x: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int
) -> np.ndarray:
    """``ē_0..ē_width`` of each block (rows; blocks sorted by length, descending).

    Adding item ``j`` (1-based) to a block: ``ē_t ← ((j − t) ē_t + t x_j ē_{t-1}) / j``, a
    convex combination for ``t <= j`` (so stable); for ``t > j`` both terms are exactly 0.
    The loop runs over the item positions of the longest block, each step vectorised over
    the blocks that still have an item at that position.
    """
    means = np.zeros((len(starts), width + 1))
    means[:, 0] = 1.0
    t = np.arange(1, width + 1, dtype=np.float64)
    negative_lengths = -lengths
    for j in range(1, int(lengths[0]) + 1):
        active = int(np.searchsorted(negative_lengths, -j, side="right"))
        head = means[:active]
        xj = x[starts[:active] + j - 1][:, None]
        head[:, 1:] = ((j - t) * head[:, 1:] + t * xj * head[:, :-1]) / j
    return means


def _exclusive_product_within(x: np.ndarray, group_start: np.ndarray) -> np.ndarray:
    """Product of ``x`` (> 0) over the earlier rows of the same group (1 at a group's first row)."""
    logs = np.log(x)
    before = np.cumsum(logs) - logs
    return np.exp(before - before[np.flatnonzero(group_start)][np.cumsum(group_start) - 1])


def _ranges(lengths: np.ndarray) -> np.ndarray:
    """0..length-1 for each length, concatenated."""
    total = int(lengths.sum())
    offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(total) - offsets
