"""The expected 11-point interpolated AP under tied scores, against brute force.

The oracle averages the textbook 11-point interpolated AP (Manning, Raghavan & Schütze,
*Introduction to Information Retrieval*, 2008, §8.4), written plainly below, over every
order of the items inside each tie block (McSherry & Najork, ECIR 2008).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from polars_eval.metrics.ranking import _ap11_ties
from polars_eval.metrics.ranking._ap11_ties import expected_ap_11pt

Query = tuple[list[list[int]], int]  # tie blocks of 0/1 relevance flags in rank order, R


def ap11_one_order(relevant: list[int], n_relevant: int) -> float:
    """11-point interpolated AP of one fixed order, straight from the textbook definition."""
    hits = 0
    precision, recall = [], []
    for rank, rel in enumerate(relevant, start=1):
        hits += rel
        precision.append(hits / rank)
        recall.append(hits / n_relevant)
    total = 0.0
    for k in range(11):
        level = k / 10
        reached = [p for p, r in zip(precision, recall, strict=True) if r >= level - 1e-12]
        total += max(reached, default=0.0)
    return total / 11


def brute_force(blocks: list[list[int]], n_relevant: int) -> float:
    """Mean of :func:`ap11_one_order` over every order of the items of each tie block."""
    orders = itertools.product(*(itertools.permutations(block) for block in blocks))
    values = [ap11_one_order([y for block in order for y in block], n_relevant) for order in orders]
    return sum(values) / len(values)


def brute_force_by_placements(blocks: list[list[int]], n_relevant: int) -> float:
    """Same mean over the distinct placements of each block's relevant items (equally likely)."""

    def placements(block: list[int]) -> list[list[int]]:
        m, y = len(block), sum(block)
        return [
            [int(i in chosen) for i in range(m)] for chosen in itertools.combinations(range(m), y)
        ]

    orders = itertools.product(*(placements(block) for block in blocks))
    values = [ap11_one_order([y for block in order for y in block], n_relevant) for order in orders]
    return sum(values) / len(values)


def kernel_inputs(queries: list[Query]) -> tuple[np.ndarray, ...]:
    """The kernel's flat arrays for the queries, laid out query after query."""
    query_start, block_start, relevant = [], [], []
    for blocks, _ in queries:
        for b, block in enumerate(blocks):
            for i, rel in enumerate(block):
                query_start.append(b == 0 and i == 0)
                block_start.append(i == 0)
                relevant.append(float(rel))
    n_relevant = np.array([float(r) for _, r in queries])
    return np.array(query_start), np.array(block_start), np.array(relevant), n_relevant


def check_against(queries: list[Query], oracle=brute_force) -> None:
    """All queries in one call; compare those with R > 0 to the oracle to 1e-12."""
    got = expected_ap_11pt(*kernel_inputs(queries))
    assert got.shape == (len(queries),)
    for (blocks, n_relevant), value in zip(queries, got, strict=True):
        if n_relevant > 0:
            assert value == pytest.approx(oracle(blocks, n_relevant), abs=1e-12, rel=0)


def random_query(rng: np.random.Generator, max_orders: int = 1000) -> Query:
    blocks, orders = [], 1
    for _ in range(rng.integers(1, 7)):
        size = int(rng.integers(1, 6))
        if orders * math.factorial(size) > max_orders:
            size = 1
        orders *= math.factorial(size)
        blocks.append([int(x) for x in rng.random(size) < rng.uniform(0.2, 0.7)])
    hits = sum(map(sum, blocks))
    return blocks, hits + int(rng.choice([0, 0, 1, 4]))


def test_worked_example() -> None:
    # relevant at ranks 1 and 3 of 3, R = 2: IP = 1 up to recall 0.5, then 2/3
    got = expected_ap_11pt(*kernel_inputs([([[1], [0], [1]], 2)]))
    assert got[0] == pytest.approx((6 * 1 + 5 * 2 / 3) / 11, abs=1e-15)
    assert got[0] == pytest.approx(0.848485, abs=1e-6)


CASES: dict[str, Query] = {
    "no tie": ([[1], [0], [1], [0], [1]], 3),
    "everything tied": ([[1, 0, 1, 0, 0, 1]], 3),
    "everything tied, unretrieved relevant": ([[0, 1, 0, 1, 0]], 5),
    "no relevant retrieved": ([[0, 0], [0], [0, 0, 0]], 3),
    "R == 0": ([[0, 0, 0]], 0),
    "single row, relevant": ([[1]], 1),
    "single row, not relevant": ([[0]], 2),
    "single row, unretrieved relevant": ([[1]], 4),
    "block at the start": ([[1, 0, 0, 1], [1], [0], [1]], 5),
    "block in the middle": ([[0], [1], [1, 0, 1, 0], [0], [1]], 4),
    "block at the end": ([[1], [0], [0, 1, 1, 0, 0]], 3),
    "all-relevant block": ([[1, 1, 1], [0], [1], [0, 1]], 6),
    "all-irrelevant block": ([[0, 0, 0], [1], [0, 1]], 2),
    "many tied blocks": ([[1, 0], [0, 1, 0], [1, 1, 0], [0, 1]], 7),
    "tied then fixed hits": ([[0, 0, 1], [1], [1], [0, 0]], 3),
    "ten relevant, recall steps": ([[1, 1, 0], [1, 0, 1], [1, 1], [0, 1, 1], [1]], 12),
}


@pytest.mark.parametrize("name", CASES)
def test_named_case(name: str) -> None:
    check_against([CASES[name]])


def test_named_cases_in_one_call() -> None:
    check_against(list(CASES.values()))


def test_random_small_queries() -> None:
    rng = np.random.default_rng(20260101)
    for _ in range(30):  # 30 calls of 1 to 8 queries each
        check_against([random_query(rng) for _ in range(rng.integers(1, 9))])


def test_larger_blocks_against_placements() -> None:
    # blocks too large for permutations: the oracle enumerates the C(m, Y) placements
    queries = [
        ([[0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0]], 6),
        ([[1], [0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0], [0, 1], [1, 0, 0, 1]], 8),
        ([[0, 1], [1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]], 6),
    ]
    check_against(queries, oracle=brute_force_by_placements)


@st.composite
def tied_query(draw: st.DrawFn) -> Query:
    blocks, orders = [], 1
    for _ in range(draw(st.integers(1, 6))):
        size = draw(st.sampled_from([m for m in range(1, 6) if orders * math.factorial(m) <= 2000]))
        orders *= math.factorial(size)
        blocks.append(draw(st.lists(st.integers(0, 1), min_size=size, max_size=size)))
    return blocks, sum(map(sum, blocks)) + draw(st.integers(0, 3))


@settings(max_examples=100, deadline=None)
@given(st.lists(tied_query(), min_size=1, max_size=4))
def test_property_against_brute_force(queries: list[Query]) -> None:
    check_against(queries)


def test_no_ties_is_the_fixed_order_value() -> None:
    rng = np.random.default_rng(7)
    rows = [[int(x) for x in rng.random(rng.integers(1, 30)) < 0.3] for _ in range(60)]
    queries = [([[y] for y in row], sum(row) + int(rng.integers(0, 3))) for row in rows]
    query_start, _, relevant, n_relevant = kernel_inputs(queries)
    got = expected_ap_11pt(query_start, np.ones(len(relevant), bool), relevant, n_relevant)
    for (row, r), value in zip(zip(rows, n_relevant, strict=True), got, strict=True):
        if r > 0:
            assert value == pytest.approx(ap11_one_order(row, r), abs=1e-12, rel=0)


def test_one_relevant_in_a_tied_block_is_the_mean_reciprocal_rank() -> None:
    # a single relevant item uniformly placed among m tied items: every IP(L) is 1 / pos
    for m in (7, 50, 200):
        got = expected_ap_11pt(*kernel_inputs([([[1] + [0] * (m - 1)], 1)]))
        assert got[0] == pytest.approx(sum(1 / t for t in range(1, m + 1)) / m, abs=1e-13)


def test_constant_score_queries_agree() -> None:
    # the same fully tied query many times (shared block signature) and once alone
    query = ([[1, 0, 0, 1, 0, 1, 0, 0]], 4)
    many = expected_ap_11pt(*kernel_inputs([query] * 50))
    alone = expected_ap_11pt(*kernel_inputs([query]))
    np.testing.assert_allclose(many, np.full(50, alone[0]), rtol=0, atol=1e-15)
    assert alone[0] == pytest.approx(brute_force_by_placements(*query), abs=1e-12)


def test_repeated_queries_share_work() -> None:
    # equal (query, level) groups of several tie blocks share one product; mixed with others
    first = ([[1, 0], [0, 1, 0], [1], [0, 1, 1, 0]], 5)
    second = ([[1, 0], [0, 1, 0], [1], [0, 1, 1, 0]], 7)
    third = ([[0], [1, 0], [0, 1, 0], [1], [0, 1, 1, 0]], 5)
    check_against([first, second, first, third, first, second, third])


def test_chunked_recurrence_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    queries = [random_query(rng) for _ in range(30)]
    whole = expected_ap_11pt(*kernel_inputs(queries))
    monkeypatch.setattr(_ap11_ties, "_CHUNK_CELLS", 8)
    np.testing.assert_allclose(expected_ap_11pt(*kernel_inputs(queries)), whole, atol=1e-15)


def test_no_rows() -> None:
    empty = np.array([], dtype=bool)
    got = expected_ap_11pt(empty, empty, np.array([]), np.array([]))
    assert got.shape == (0,)


def test_infeasible_block_raises_at_once() -> None:
    relevant = (np.arange(10_000) % 10 < 3).astype(np.float64)
    start = np.zeros(10_000, dtype=bool)
    start[0] = True
    with pytest.raises(ValueError, match="10000 items, 3000 relevant"):
        expected_ap_11pt(start, start, relevant, np.array([3000.0]))


def test_queries_sharing_blocks_with_different_floors() -> None:
    # the same two random blocks in both queries; the fixed hits of the second raise its
    # floor between the same two jumps of the blocks' CDFs (found by the property test)
    check_against([([[0, 1, 1], [0, 1], [0], [0]], 3), ([[0, 1, 1], [0, 1], [1], [1]], 5)])
    check_against([([[0, 1, 1], [0, 1], [1], [1]], 5), ([[0, 1, 1], [0, 1], [0], [0]], 3)])


def test_many_random_queries_in_one_call() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        check_against([random_query(rng, max_orders=300) for _ in range(12)])
