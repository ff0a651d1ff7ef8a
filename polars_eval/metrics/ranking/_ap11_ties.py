"""Expected 11-point interpolated average precision of rankings with tied scores.

Definition. For one order of a query's retrieved items, the 11-point interpolated average
precision (Manning, Raghavan & Schütze, *Introduction to Information Retrieval*, 2008,
§8.4) is the mean over the recall levels ``L = 0, 0.1, ..., 1`` of the interpolated
precision ``IP(L) = max{precision(r) : recall(r) >= L}`` (0 when no rank reaches recall
``L``). The number of relevant items among the retrieved ones is the same for every order,
so ``IP(L) = max over hit counts h >= h_L of h / rank of the h-th hit``, with
``h_L = max(1, ceil(L * R))`` and ``R`` the query's number of relevant items. Ties follow
McSherry & Najork (*Computing information retrieval performance measures efficiently in
the presence of tied scores*, ECIR 2008): a query's value is the expected value over all
orders of its tied items, every order inside a tie block equally likely, blocks
independent.

Method, per level. A hit in a block of one item, or in a block whose items are all
relevant, has a fixed rank: ``D`` is the largest precision at such hits with ``h >= h_L``.
In any other block (``m`` items at ranks ``a .. a+m-1``, ``Y`` of them relevant, ``C``
relevant items before it) the relevant items take a uniformly random ``Y``-subset of the
block's places, and the block's part of ``IP(L)`` is ``M = max over its hits i >= i0 of
(C + i) / (a - 1 + pos_i)`` with ``i0 = max(1, h_L - C)``. The blocks are independent, so
``P(IP(L) <= v) = [v >= D] * prod_blocks F(v)`` with ``F(v) = P(M <= v)``, and
``E[IP(L)] = D + integral from D to 1 of (1 - P(IP(L) <= v)) dv``, a finite sum: ``F`` is a
step function that jumps only at the block's candidate precisions ``(C + i) / (a - 1 + t)``
(its *thresholds*). For every threshold ``v``, one backward pass over the block's places
(the hypergeometric urn: place ``t`` holds a relevant item with probability
``(Y - k) / (m - t + 1)`` given ``k`` among the places before it) gives the probability
that every hit ``i' > k`` still to come lands at a rank of precision ``<= v``; weighting it
by ``P(pos_i = t)`` gives ``F(v)`` for every ``i0`` at once. Blocks with the same
``(a, m, Y, C)`` share one computation, so a constant score over many queries costs one
block per distinct relevant count. Before that, ``D`` rises to the least value of each
block's ``M`` (its hits last), and blocks whose greatest value (hits first) does not exceed
it are dropped. The product of the CDFs is summed in logs along the sorted jumps, the
factors still 0 counted apart; (query, level) pairs with the same floor and blocks share
one product.

Cost. A block signature costs about ``T * m * Y`` cell updates, ``T <= Y (m - Y + 1)``
thresholds: ``O(m^2 Y^2)`` with few relevant items, ``O(m^4)`` when a fixed fraction of the
block is relevant (2-4 ns an update on a laptop-class CPU). One block of 100 items with 30
relevant takes ~0.02 s, of 200 with 60 ~0.15 s, of 300 with 90 ~1 s, of 10,000 with 9
~20 s. Larger ones are infeasible: 1,000 items with 300 relevant need ~6e10 updates,
10,000 with 3,000 ~6e14; work above ``MAX_DP_CELLS`` raises ``ValueError`` at once instead
of running for minutes or days. Combining costs one step per jump above the floor of each
CDF of a group (a group with one random block: a binary search). 100,000 queries of 100
items, 30% relevant: ~1 s with scores rounded to 2 decimals (blocks of 1.6 items on
average) or a constant score, ~10 s rounded to 1 decimal (blocks of 9), ~30 s with binary
scores (two blocks of 50 per query).

Why numpy and not Polars expressions: the distribution of a block's maximum precision is a
counting recurrence over (place, hit count) evaluated for many thresholds at once, and the
expectation multiplies step functions of independent blocks; neither is a column
operation.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from polars_eval.metrics.ranking._runs import run_starts

N_LEVELS = 11
MAX_DP_CELLS = 1e10  # most cell updates of the tie-block recurrence before ValueError (~25 s)

_CHUNK_CELLS = 1 << 22  # cells of one chunk's recurrence arrays (memory bound, ~32 MiB each)


class _Blocks(NamedTuple):
    """Tie blocks: first rank ``a``, size ``m``, hits ``Y`` and hits before ``C`` (in-query)."""

    rank: np.ndarray
    size: np.ndarray
    hits: np.ndarray
    before: np.ndarray


class _Layout(NamedTuple):
    """The blocks of random order and the fixed-rank hits of all queries."""

    random: _Blocks  # the blocks with 0 < Y < m: the others have a fixed order
    random_query: np.ndarray
    query_hits: np.ndarray  # retrieved relevant items per query
    query_first_hit: np.ndarray  # offset of the query's first hit in hit_precision
    hit_precision: np.ndarray  # precision at each fixed-rank hit, 0 at hits of random blocks


class _Uses(NamedTuple):
    """A random block's part in one level of one query: group = level * n_queries + query."""

    group: np.ndarray  # non-decreasing
    rank: np.ndarray
    size: np.ndarray
    hits: np.ndarray
    before: np.ndarray
    i0: np.ndarray  # the block's first hit with h >= h_L


class _StepCdfs(NamedTuple):
    """Step CDFs laid end to end: ``cdf[e]`` holds on ``[value[e], value[e + 1])``."""

    start: np.ndarray  # first entry of each step function (length n + 1)
    owner: np.ndarray  # step function of each entry
    value: np.ndarray  # increasing within each step function
    cdf: np.ndarray  # increasing within each step function, 0 before the first, last ~1


def expected_ap_11pt(
    query_start: np.ndarray,
    block_start: np.ndarray,
    relevant: np.ndarray,
    n_relevant: np.ndarray,
) -> np.ndarray:
    """Expected 11-point interpolated average precision of each query under random tie order.

    Rows are the retrieved items of all queries, query after query, each in rank order;
    ``query_start``/``block_start`` flag the first row of each query/tie block,
    ``relevant`` holds 0/1 and ``n_relevant`` the number ``R`` of relevant items per query.
    Queries with ``R == 0`` get 0.0. Raises ``ValueError`` when the tie blocks are too large
    for the exact computation (see the module docstring).
    """
    n_queries = len(n_relevant)
    if len(relevant) == 0:
        return np.zeros(n_queries)
    layout = _layout(query_start, block_start, relevant)
    first_hit = _first_hit_per_level(n_relevant)
    floor, uses = _random_block_uses(layout, first_hit, _fixed_hits_max(layout, first_hit))
    expected = floor
    if len(uses.group):
        pair, cdfs = _block_cdfs(uses)
        expected = floor + _tail_above_floor(floor, uses.group, pair, cdfs)
    return expected.reshape(N_LEVELS, n_queries).mean(axis=0)


def _layout(query_start: np.ndarray, block_start: np.ndarray, relevant: np.ndarray) -> _Layout:
    rel = relevant > 0.5
    query_first_row = np.flatnonzero(query_start)
    block_first_row = np.flatnonzero(block_start)
    block_size = np.diff(block_first_row, append=len(rel))
    block_hits = np.add.reduceat(rel, block_first_row, dtype=np.int64)
    starts_query = query_start[block_first_row]
    block_query = np.cumsum(starts_query) - 1
    query_hits = np.add.reduceat(block_hits, np.flatnonzero(starts_query))
    query_first_hit = np.cumsum(query_hits) - query_hits
    is_random = (block_hits > 0) & (block_hits < block_size)
    hit_query = np.repeat(np.arange(len(query_hits)), query_hits)
    hit_rank = np.flatnonzero(rel) - query_first_row[hit_query] + 1
    hit_count = np.arange(1, len(hit_query) + 1) - query_first_hit[hit_query]
    hit_precision = np.where(np.repeat(is_random, block_hits), 0.0, hit_count / hit_rank)
    random_query = block_query[is_random]
    hits_before = np.cumsum(block_hits) - block_hits - query_first_hit[block_query]
    random = _Blocks(
        rank=block_first_row[is_random] - query_first_row[random_query] + 1,
        size=block_size[is_random],
        hits=block_hits[is_random],
        before=hits_before[is_random],
    )
    return _Layout(random, random_query, query_hits, query_first_hit, hit_precision)


def _first_hit_per_level(n_relevant: np.ndarray) -> np.ndarray:
    """``h_L = max(1, ceil(L R))`` per level (rows) and query (columns), in integers.

    ``h / R >= L - 1e-12`` is ``10 h >= k R`` for ``L = k / 10`` and any ``R < 1e11``.
    """
    r = np.rint(n_relevant).astype(np.int64)
    k = np.arange(N_LEVELS)[:, None]
    return np.maximum((k * r + 9) // 10, 1)


def _fixed_hits_max(layout: _Layout, first_hit: np.ndarray) -> np.ndarray:
    """``D``: the largest precision at fixed-rank hits ``h >= h_L`` (0 if none), per level."""
    lo = layout.query_first_hit + first_hit - 1
    hi = np.broadcast_to(layout.query_first_hit + layout.query_hits, lo.shape)
    nonempty = first_hit <= layout.query_hits
    lo = np.where(nonempty, lo, hi)
    # reduceat over the interleaved (lo, hi) bounds: the even results are the maxima on
    # [lo, hi); the trailing 0 keeps the last bound a valid index.
    padded = np.append(layout.hit_precision, 0.0)
    bounds = np.stack([lo, hi], axis=-1).ravel()
    maxima = np.maximum.reduceat(padded, bounds)[::2].reshape(lo.shape)
    return np.where(nonempty, maxima, 0.0)


def _random_block_uses(
    layout: _Layout, first_hit: np.ndarray, floor: np.ndarray
) -> tuple[np.ndarray, _Uses]:
    """The uses of the random blocks, sorted by group, and each group's raised floor.

    A use is a random block holding a hit ``h >= h_L``. The floor ``D`` of its group rises
    to the least value of the block's ``M``; a use whose ``M`` cannot exceed the floor leaves
    ``max(floor, ...)`` as it is and is dropped.
    """
    blocks = layout.random
    n_queries = first_hit.shape[1]
    floor = floor.reshape(N_LEVELS, n_queries).copy()
    kept = []
    for level in range(N_LEVELS):  # a loop over the 11 levels, vectorised over queries
        need = first_hit[level, layout.random_query]
        block = np.flatnonzero(blocks.before + blocks.hits >= need)
        query = layout.random_query[block]
        i0 = np.maximum(need[block] - blocks.before[block], 1)
        lowest, highest = _support_bounds(_Blocks(*(field[block] for field in blocks)), i0)
        starts = np.flatnonzero(np.diff(query, prepend=-1))
        floor_at = floor[level]
        floor_at[query[starts]] = np.maximum(
            floor_at[query[starts]], np.maximum.reduceat(lowest, starts)
        )
        keep = highest > floor_at[query]
        kept.append((level * n_queries + query[keep], block[keep], i0[keep]))
    group, block, i0 = (np.concatenate(parts) for parts in zip(*kept, strict=True))
    return floor.ravel(), _Uses(group, *(field[block] for field in blocks), i0)


def _support_bounds(blocks: _Blocks, i0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least and greatest value of ``M``: with the block's hits last and first.

    ``(C + i) / (a - 1 + d + i)`` is monotone in ``i``: both are at ``i = i0`` or ``Y``.
    """

    def precision(hit: np.ndarray, shift: np.ndarray | int) -> np.ndarray:
        return (blocks.before + hit) / (blocks.rank - 1 + hit + shift)

    last = blocks.size - blocks.hits  # place of hit i, less i, when the hits come last
    lowest = np.maximum(precision(i0, last), precision(blocks.hits, last))
    highest = np.maximum(precision(i0, 0), precision(blocks.hits, 0))
    return lowest, highest


def _block_cdfs(uses: _Uses) -> tuple[np.ndarray, _StepCdfs]:
    """Step CDF of ``M`` for each distinct (block signature, i0) used, and each use's CDF."""
    pair, pair_first = _group_ids(*uses[1:])
    rep = _Uses(*(field[pair_first] for field in uses))  # one use per pair, sorted
    new_sig = run_starts(*rep[1:5])
    sigs = _Blocks(*(field[new_sig] for field in rep[1:5]))
    # pairs are sorted by i0 within a signature: the first one has the signature's least i0
    return pair, _signature_cdfs(sigs, rep.i0[new_sig], np.cumsum(new_sig) - 1, rep.i0)


def _signature_cdfs(
    sigs: _Blocks, sig_i0: np.ndarray, pair_sig: np.ndarray, pair_i0: np.ndarray
) -> _StepCdfs:
    """Step CDF of ``M`` for each pair (signature, i0), by the recurrence over thresholds."""
    _check_cost(sigs, sig_i0)
    row_sig, row_num, row_den = _thresholds(sigs, sig_i0)
    sig_rows = np.bincount(row_sig, minlength=len(sig_i0))
    sig_first_row = np.cumsum(sig_rows) - sig_rows
    pieces = []
    # a loop over memory-bounded chunks of signatures, not over queries
    for chunk in _chunks(sigs.hits, sig_rows):
        chunk = chunk[np.argsort(-sigs.size[chunk], kind="stable")]
        rows = _ranges(sig_first_row[chunk], sig_rows[chunk])
        cdf = _threshold_cdfs(
            _Blocks(*(field[chunk] for field in sigs)),
            sig_rows[chunk],
            row_num[rows],
            row_den[rows],
        )
        local = np.full(len(sig_i0), -1)
        local[chunk] = np.arange(len(chunk))
        in_chunk = np.flatnonzero(local[pair_sig] >= 0)
        chunk_first_row = np.cumsum(sig_rows[chunk]) - sig_rows[chunk]
        pieces.append(
            _pair_steps(
                in_chunk,
                chunk_first_row[local[pair_sig[in_chunk]]],
                sig_rows[pair_sig[in_chunk]],
                pair_i0[in_chunk] - 1,
                cdf,
                row_num[rows] / row_den[rows],
            )
        )
    return _concat_steps(pieces, len(pair_sig))


def _chunks(hits: np.ndarray, sig_rows: np.ndarray) -> list[np.ndarray]:
    """Signatures in chunks of bounded memory, each with hits within 25% of each other.

    A chunk's arrays are as wide as its most hits, so close hits waste little padding.
    """
    by_hits = np.argsort(hits, kind="stable")
    cells = np.cumsum(sig_rows[by_hits] * (hits[by_hits] + 1))
    hits_class = np.floor(np.log(hits[by_hits]) / np.log(1.25))
    cut = (np.diff((cells - 1) // _CHUNK_CELLS) != 0) | (np.diff(hits_class) != 0)
    return np.split(by_hits, np.flatnonzero(cut) + 1)


def _check_cost(sigs: _Blocks, sig_i0: np.ndarray) -> None:
    thresholds = (sigs.hits - sig_i0 + 1) * (sigs.size - sigs.hits + 1)
    cost = thresholds * sigs.size * (sigs.hits + 1.0)
    if cost.sum() > MAX_DP_CELLS:
        worst = np.argmax(cost)
        raise ValueError(
            "expected 11-point AP under ties: the exact computation needs "
            f"~{cost.sum():.1e} steps (largest tie block: {sigs.size[worst]} items, "
            f"{sigs.hits[worst]} relevant); break the ties (ties='first') or use fewer "
            "tied items"
        )


def _thresholds(sigs: _Blocks, sig_i0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct candidate precisions ``num / den`` of hits ``i >= i0`` of each signature.

    Rows are sorted by signature, then value. Values under the precision of the last hit at
    the block's end, which every order reaches, are left out: ``F`` is 0 there.
    """
    places = sigs.size - sigs.hits + 1  # places each hit can take
    count = (sigs.hits - sig_i0 + 1) * places
    row_sig = np.repeat(np.arange(len(sig_i0)), count)
    local = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    hit = sig_i0[row_sig] + local // places[row_sig]
    place = hit + local % places[row_sig]
    num = sigs.before[row_sig] + hit
    den = sigs.rank[row_sig] - 1 + place
    value = num / den  # equal fractions give equal floats (correctly rounded division)
    least = (sigs.before + sigs.hits) / (sigs.rank - 1 + sigs.size)
    order = np.lexsort((value, row_sig))
    row_sig, num, den, value = row_sig[order], num[order], den[order], value[order]
    keep = value >= least[row_sig]
    keep[1:] &= (np.diff(row_sig) != 0) | (np.diff(value) != 0)
    return row_sig[keep], num[keep], den[keep]


def _threshold_cdfs(
    sigs: _Blocks, sig_rows: np.ndarray, num: np.ndarray, den: np.ndarray
) -> np.ndarray:
    """``cdf[r, i - 1] = P(max over hits i' >= i of precision <= num[r] / den[r])``.

    ``sigs`` are sorted by size, descending; their rows (thresholds) follow in that order.
    Backward over the places ``t = m, ..., 1``: ``survive[r, k]`` is the probability that
    every hit after the first ``k`` lands at an allowed place given ``k`` hits among places
    ``1..t``, and ``urn[s, k]`` the probability of ``k`` hits among places ``1..t``.
    """
    n_rows, width = len(num), int(sigs.hits.max())
    hit = np.arange(1, width + 1)
    row_sig = np.repeat(np.arange(len(sig_rows)), sig_rows)
    # hit i may sit at place t of its block iff t >= lowest[r, i - 1] (precision <= threshold)
    hit_count = sigs.before[row_sig, None] + hit
    lowest = -((-hit_count * den[:, None]) // num[:, None]) - (sigs.rank[row_sig, None] - 1)
    to_place = np.maximum(sigs.hits[:, None] - hit + 1, 0.0)  # hits left at k = i - 1
    survive = np.ones((n_rows, width + 1))
    cdf = np.zeros((n_rows, width))
    allowed = np.empty((n_rows, width), dtype=bool)
    passed, scratch = np.empty((n_rows, width)), np.empty((n_rows, width))
    urn = np.zeros((len(sig_rows), width + 1))
    urn[np.arange(len(sig_rows)), sigs.hits] = 1.0
    row_end = np.cumsum(sig_rows)
    n_active = np.searchsorted(-sigs.size, -np.arange(sigs.size[0]), side="left")
    # a loop over the places of the largest block, vectorised over every block and
    # threshold; blocks shorter than the step are done and sit after the active prefix.
    # The updates write into preallocated buffers (fresh temporaries cost page faults).
    for step, n_sig in enumerate(n_active):
        r = row_end[n_sig - 1]
        place = (sigs.size[:n_sig] - step)[:, None]
        at_place = urn[:n_sig, 1:] * (hit / place)  # P(i-th hit at this place)
        np.greater_equal(place[row_sig[:r]], lowest[:r], out=allowed[:r])
        np.multiply(survive[:r, 1:], allowed[:r], out=passed[:r])
        np.take(at_place, row_sig[:r], axis=0, out=scratch[:r])
        np.multiply(scratch[:r], passed[:r], out=scratch[:r])
        np.add(cdf[:r], scratch[:r], out=cdf[:r])
        p_hit = np.minimum(to_place[:n_sig] / (step + 1), 1.0)  # P(hit here | k hits before)
        np.take(p_hit, row_sig[:r], axis=0, out=scratch[:r])
        np.subtract(passed[:r], survive[:r, :-1], out=passed[:r])
        np.multiply(passed[:r], scratch[:r], out=passed[:r])
        np.add(survive[:r, :-1], passed[:r], out=survive[:r, :-1])
        stay = 1.0 - np.arange(width + 1) / place
        urn[:n_sig, :-1] = urn[:n_sig, :-1] * stay[:, :-1] + at_place
        urn[:n_sig, -1] *= stay[:, -1]
    return cdf


def _pair_steps(
    pair: np.ndarray,
    first_row: np.ndarray,
    n_rows: np.ndarray,
    column: np.ndarray,
    cdf: np.ndarray,
    value: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(owner, value, cdf) of each pair's step function, keeping only the jumps."""
    rows = _ranges(first_row, n_rows)
    owner = np.repeat(pair, n_rows)
    f = cdf[rows, np.repeat(column, n_rows)]
    previous = np.zeros_like(f)
    previous[1:] = f[:-1]
    previous[np.cumsum(n_rows) - n_rows] = 0.0
    jump = f != previous
    return owner[jump], value[rows][jump], f[jump]


def _concat_steps(pieces: list[tuple[np.ndarray, ...]], n_pairs: int) -> _StepCdfs:
    """The chunks' step functions, laid end to end in pair order."""
    owner, value, cdf = (np.concatenate(parts) for parts in zip(*pieces, strict=True))
    order = np.argsort(owner, kind="stable")
    counts = np.bincount(owner, minlength=n_pairs)
    start = np.concatenate([[0], np.cumsum(counts)])
    return _StepCdfs(start, owner[order], value[order], cdf[order])


def _tail_above_floor(
    floor: np.ndarray, group: np.ndarray, pair: np.ndarray, cdfs: _StepCdfs
) -> np.ndarray:
    """``integral from floor to 1 of (1 - prod F(v)) dv`` per group, over its uses' CDFs."""
    distinct, rank = np.unique(cdfs.value, return_inverse=True)
    rank += 1  # exact integer sort keys of the values, 0 left for "below them all"
    x = floor[group]
    x_rank = np.searchsorted(distinct, floor, side="right")[group]
    at_most = _count_at_most(cdfs, rank, pair, x_rank)
    single = np.bincount(group, minlength=len(floor))[group] == 1
    tail = np.zeros(len(floor))
    tail[group[single]] = _single_tail(cdfs, pair[single], x[single], at_most[single])
    multi = ~single
    if multi.any():
        groups, tails = _product_tails(
            cdfs, rank, group[multi], pair[multi], x[multi], at_most[multi]
        )
        tail[groups] = tails
    return tail


def _count_at_most(
    cdfs: _StepCdfs, rank: np.ndarray, pair: np.ndarray, x_rank: np.ndarray
) -> np.ndarray:
    """Number of jumps at values ``<= x`` (``x_rank`` distinct values) in each pair's CDF.

    One binary search over the integer keys ``(owner, rank)``: exact, unlike a float key.
    """
    stride = rank.max() + 1
    keys = cdfs.owner * stride + rank
    return np.searchsorted(keys, pair * stride + x_rank, side="right") - cdfs.start[pair]


def _single_tail(
    cdfs: _StepCdfs, pair: np.ndarray, x: np.ndarray, at_most: np.ndarray
) -> np.ndarray:
    """``integral from x to 1 of (1 - F(v)) dv`` for one step CDF per entry."""
    starts, last = cdfs.start[:-1], cdfs.start[1:] - 1
    width = np.append(np.diff(cdfs.value), 0.0)
    width[last] = 0.0
    area = width * (1.0 - cdfs.cdf)
    tail = _segment_total(area, starts) - _segment_cumsum(area, starts) + area  # from e on
    first_above = np.minimum(starts[pair] + at_most, last[pair])
    below = np.where(at_most > 0, cdfs.cdf[first_above - 1], 0.0)
    above_x = (cdfs.value[first_above] - x) * (1.0 - below) + tail[first_above]
    return np.where(starts[pair] + at_most <= last[pair], above_x, 0.0)


def _product_tails(
    cdfs: _StepCdfs,
    rank: np.ndarray,
    group: np.ndarray,
    pair: np.ndarray,
    x: np.ndarray,
    at_most: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The groups of the uses (sorted by group) and the tail of each, with several uses.

    Groups often repeat (the same blocks at the same ranks in many queries): the product
    is computed once per kind of group (same floor, same CDFs in the same order).
    """
    starts, kind = _group_kinds(group, pair, x)
    kinds, first, inverse = np.unique(kind, return_index=True, return_inverse=True)
    size = np.diff(starts, append=len(group))[first]
    uses = _ranges(starts[first], size)  # the uses of one group of each kind
    use_bound = np.append(0, np.cumsum(size))
    n_events = np.add.reduceat(np.diff(cdfs.start)[pair[uses]] - at_most[uses] + 1, use_bound[:-1])
    kind_bound = np.flatnonzero(run_starts(np.cumsum(n_events) // _CHUNK_CELLS))
    jump_log, from_zero = _jump_logs(cdfs)
    tails = np.empty(len(kinds))
    # a loop over memory-bounded chunks of kinds of groups, not over queries
    for lo, hi in zip(kind_bound, np.append(kind_bound[1:], len(kinds)), strict=True):
        part = uses[use_bound[lo] : use_bound[hi]]
        label = np.repeat(np.arange(hi - lo), size[lo:hi])
        tails[lo:hi] = _product_tail(
            cdfs, rank, jump_log, from_zero, label, pair[part], x[part], at_most[part]
        )
    return group[starts], tails[inverse]


def _group_kinds(
    group: np.ndarray, pair: np.ndarray, floor: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """First use of each group (sorted) and an id equal for groups with equal floor and CDFs.

    The floor itself, not its rank among the jumps, is part of the id: the integral starts
    at the floor, so two floors between the same two jumps give different tails.
    """
    starts = np.flatnonzero(run_starts(group))
    size = np.diff(starts, append=len(group))
    kind = _group_ids(size, floor[starts])[0]
    # a loop over the positions of the uses within a group (at most the number of random
    # blocks of one query), vectorised over groups: fold the k-th use's CDF into the id
    for k in range(size.max()):
        longer = np.flatnonzero(size > k)
        fold = _group_ids(kind[longer], pair[starts[longer] + k])[0]
        kind[longer] = kind.max() + 1 + fold
    return starts, kind


def _jump_logs(cdfs: _StepCdfs) -> tuple[np.ndarray, np.ndarray]:
    """Log of the ratio of the CDF across each jump, and whether the jump rises from 0."""
    log_cdf = np.log(cdfs.cdf)
    jump_log = log_cdf.copy()
    jump_log[1:] -= log_cdf[:-1]
    jump_log[cdfs.start[:-1]] = log_cdf[cdfs.start[:-1]]
    from_zero = np.zeros(len(log_cdf), dtype=np.int64)
    from_zero[cdfs.start[:-1]] = 1
    return jump_log, from_zero


def _product_tail(
    cdfs: _StepCdfs,
    rank: np.ndarray,
    jump_log: np.ndarray,
    from_zero: np.ndarray,
    label: np.ndarray,
    pair: np.ndarray,
    x: np.ndarray,
    at_most: np.ndarray,
) -> np.ndarray:
    """``integral from x to 1 of (1 - prod F(v)) dv`` per group ``label = 0, 1, ...``.

    One event per jump above the group's ``x``, plus a leading one at ``x`` per group that
    carries the factors' values there. The product is carried as the number of factors
    still 0 and the sum of the logs of the others, summed along each group's events in
    order of value.
    """
    n_groups = label[-1] + 1
    first = cdfs.start[pair] + at_most
    n_jumps = cdfs.start[pair + 1] - first
    entry = _ranges(first, n_jumps)
    at_x = np.where(at_most > 0, cdfs.cdf[first - 1], 0.0)
    event_group = np.concatenate([np.arange(n_groups), np.repeat(label, n_jumps)])
    # sort by (group, value); the leading events (rank 0) go first in their group
    key = event_group * (rank.max() + 1) + np.concatenate([np.zeros(n_groups, int), rank[entry]])
    order = np.argsort(key, kind="stable")
    lead_x = x[run_starts(label)]
    value = np.concatenate([lead_x, cdfs.value[entry]])[order]
    lead_zeros = np.bincount(label, at_x == 0, minlength=n_groups)
    zeros = np.concatenate([lead_zeros, -from_zero[entry]])[order]
    lead_log = np.bincount(label, _log0(at_x), minlength=n_groups)
    log = np.concatenate([lead_log, jump_log[entry]])[order]
    event_group = event_group[order]
    starts = np.flatnonzero(run_starts(event_group))
    product = np.where(
        _segment_cumsum(zeros, starts) == 0, np.exp(_segment_cumsum(log, starts)), 0.0
    )
    width = np.append(np.diff(value), 0.0)
    width[np.append(starts[1:], len(value)) - 1] = 0.0
    return np.bincount(event_group, width * (1.0 - product), minlength=n_groups)


def _log0(p: np.ndarray) -> np.ndarray:
    """``log p`` where ``p > 0``, else 0 (the zero factors are counted apart)."""
    return np.log(np.where(p > 0, p, 1.0))


def _group_ids(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense id of each row's key tuple (ids in lexicographic order) and one row per id."""
    order = np.lexsort(keys[::-1])
    new = run_starts(*(key[order] for key in keys))
    ids = np.empty(len(order), dtype=np.int64)
    ids[order] = np.cumsum(new) - 1
    return ids, order[new]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` over the pairs ``(s, n)``."""
    offsets = np.cumsum(lengths) - lengths
    return np.arange(lengths.sum()) - np.repeat(offsets - starts, lengths)


def _segment_cumsum(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sum restarting at each of ``starts`` (sorted, first 0, none empty).

    Each segment's total is taken back at the next segment's start, so the running sum
    stays as small as one segment's and the rounding error of a sum is local to it.
    """
    totals = np.add.reduceat(x, starts)
    shifted = x.astype(np.float64)
    shifted[starts[1:]] -= totals[:-1]
    running = np.cumsum(shifted)
    base = np.zeros(len(starts))
    base[1:] = running[starts[1:] - 1] - totals[:-1]
    return running - np.repeat(base, np.diff(starts, append=len(x)))


def _segment_total(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each entry's segment total (segments as in :func:`_segment_cumsum`)."""
    return np.repeat(np.add.reduceat(x, starts), np.diff(starts, append=len(x)))
