"""The numpy kernels of the unweighted sort-based binary metrics and state (SPEC §3).

``pe.auc``, ``pe.gini``, ``pe.average_precision``, ``pe.pr_auc`` and ``pe.roc_curve`` of
unweighted rows (``MetricSpec.alone``), and the unweighted threshold state that the task
tables finalize (:func:`state_points`), run one of these kernels on each group, every
group of a query in one ``map_batches`` call (:func:`per_group`, two threads; the
expressions: :func:`polars_eval.metrics._curve.sorted_keys_metric`): each row becomes
one UInt64 key (the bits of its score and its label, :func:`sorted_parts`), sorted once
by numpy, and the value is read from the tie blocks of the sorted keys (:class:`Blocks`),
a chunk of a few thousand keys at a time. numpy, not Polars: numpy sorts the keys (one
core) about as fast as Polars sorts the float column itself (two cores), builds them in
place from the float bits, and its passes over the sorted keys need none of the ``rle``,
``struct.eval`` and ``list.eval`` copies of the Polars form (1e7 distinct scores: average
precision ~0.43 s of CPU against ~1.1 s; the state ~0.4 s against ~1.35 s). With weights
the state and the metrics stay in Polars (:mod:`polars_eval.metrics._curve`).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from polars_eval._exprs import F64, NAN
from polars_eval.metrics._group_auc import group_auc
from polars_eval.metrics._multiclass_auc import _run_all

U64 = np.uint64
_MAGNITUDE = np.uint64(0x7FFF_FFFF_FFFF_FFFF)  # the bits of |s|
_SIGN = np.uint64(0x8000_0000_0000_0000)
_INF = 0x7FF0_0000_0000_0000
# the first key (part of the scores >= 0) of a score that is not NaN: the key of +inf
# with its label bit 0; every NaN's key (bits above +inf's) sorts below it
_FIRST_NUMBER = (~_INF & 0x7FFF_FFFF_FFFF_FFFF) << 1
_LOW_BYTE = 0 if sys.byteorder == "little" else 7


def sorted_parts(positive: np.ndarray, s: np.ndarray) -> list[tuple[np.ndarray, bool]]:
    """The keys of the rows (``positive``: booleans, ``s``: the scores) in descending
    score order, the positives first within a score, as consecutive parts, each an
    ascending UInt64 array and whether its scores are >= 0.

    A key is 2·(magnitude bits) + (1 if the row is negative else 0): for a score >= 0
    (and ±0.0 alike, and NaN, above +inf) the magnitude is ``~bits(s)`` without the sign
    bit, which reverses the order of the scores; for a score < 0 it is ``bits(|s|)``. The
    64 bits of a score and its label do not fit in 64 bits, so the two signs are sorted
    apart and the rows of negative scores follow; a tie block is a run of keys equal
    but for the lowest bit. (Sorting two halves in two threads does not pay: numpy's
    partition of 1e7 keys by a pivot costs most of what the second thread saves.)
    """
    split = len(s) > 0 and not s.min() >= 0.0  # a negative score (or a NaN: min is NaN)
    negative = s < 0.0 if split else None
    bits = s.view(U64)
    parts = []
    pieces = ((~negative, True), (negative, False)) if negative is not None else ((None, True),)
    for rows, flip in pieces:
        part_bits = bits if rows is None else bits[rows]  # ``bits[rows]``: a copy
        keys = np.left_shift(part_bits, U64(1), out=None if rows is None else part_bits)
        if flip:  # ~(2 bits + positive): 2 ~bits (the sign bit dropped) + negative
            np.bitwise_or(keys, positive if rows is None else positive[rows], out=keys)
            np.invert(keys, out=keys)
        else:  # 2 bits(|s|) + negative
            np.bitwise_or(keys, ~positive[rows], out=keys)
        keys.sort()
        parts.append((keys, flip))
    return parts


_CHUNK = 1 << 15


class Blocks:
    """The tie blocks (distinct scores) of :func:`sorted_parts`, in descending score
    order, chunk by chunk (:meth:`chunks`).

    ``nan``: the rows of NaN scores (NaN sorts first; every NaN forms one block, which
    the chunks leave out, counting its rows first), ``nan_positives`` the positives among
    them. ``P``/``N``: the class totals, known once the chunks are read.
    """

    def __init__(self, parts: list[tuple[np.ndarray, bool]]) -> None:
        self.parts = parts
        self.rows = sum(len(keys) for keys, _ in parts)
        self.nan = self.nan_positives = 0
        keys, nonneg = parts[0]
        if nonneg and len(keys) > 0 and int(keys[0]) < _FIRST_NUMBER:
            self.nan = int(np.searchsorted(keys, U64(_FIRST_NUMBER)))
            low = keys[: self.nan].view(np.uint8)[_LOW_BYTE::8]
            self.nan_positives = self.nan - int(np.count_nonzero(low & 1))
        self.has_nan = self.nan > 0
        self.P = self.N = 0  # noqa: N815 - the textbook names
        self._memo: dict[Any, Any] = {}

    def memo(self, key: Any, compute: Callable[[Blocks], Any]) -> Any:
        """``compute(self)`` once per group and ``key`` (the AUC that AUC and Gini read)."""
        if key not in self._memo:
            self._memo[key] = compute(self)
        return self._memo[key]

    def count(self) -> None:
        """The class totals ``P``/``N`` before the chunks are read (one pass over the
        keys' label bits)."""
        negatives = sum(
            int(np.count_nonzero(keys.view(np.uint8)[_LOW_BYTE::8] & 1)) for keys, _ in self.parts
        )
        self.P, self.N = self.rows - negatives, negatives

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, bool]]:
        """Per chunk of whole blocks: the positives and the rows up to the end of each
        block (cumulative over the chunks, Int64), the key of each block's last row, and
        whether the chunk's scores are >= 0. Each chunk is a few thousand keys, so that
        its temporaries stay in cache: the passes over 1e7 keys as whole arrays took
        about as long as the sort."""
        tp, rows = self.nan_positives, self.nan
        for i, (keys, nonneg) in enumerate(self.parts):
            a = self.nan if i == 0 else 0
            n = len(keys)
            while a < n:
                z = n
                if a + _CHUNK < n:  # to the end of the block of key z - 1
                    z = int(np.searchsorted(keys, keys[a + _CHUNK - 1] | U64(1), side="right"))
                chunk = keys[a:z]
                fps = np.cumsum(chunk.view(np.uint8)[_LOW_BYTE::8] & 1, dtype=np.int64)
                change = (chunk[1:] ^ chunk[:-1]) > 1
                if change.all():
                    ends_rows, last = np.arange(rows + 1, rows + z - a + 1), chunk
                else:
                    ends = np.append(np.flatnonzero(change), z - a - 1)
                    fps, last = fps[ends], chunk[ends]
                    ends_rows = ends + (rows + 1)
                ends_tp = ends_rows - fps
                ends_tp -= rows - tp  # the negatives before the chunk
                yield ends_tp, ends_rows, last, nonneg
                tp, rows = int(ends_tp[-1]), int(ends_rows[-1])
                a = z
        self.P, self.N = tp, rows - tp

    def defined(self) -> bool:
        return self.P > 0 and self.N > 0


def thresholds(last: np.ndarray, nonneg: bool, out: np.ndarray) -> None:
    """The scores of keys (0.0 for ±0.0) into ``out`` (Float64)."""
    bits = out.view(U64)
    np.right_shift(last, U64(1), out=bits)
    if nonneg:
        np.bitwise_xor(bits, _MAGNITUDE, out=bits)  # back from ~bits
    else:
        np.bitwise_or(bits, _SIGN, out=bits)


def _steps(cumulative: np.ndarray, before: int) -> np.ndarray:
    """The differences of consecutive values of ``cumulative``, ``before`` the value
    before the first (``np.diff`` with ``prepend``, without its Python overhead)."""
    out = np.empty_like(cumulative)
    out[0] = cumulative[0] - before
    np.subtract(cumulative[1:], cumulative[:-1], out=out[1:])
    return out


class Chunk:
    """One chunk of :meth:`Blocks.chunks` as the accumulators of :func:`together` read
    it: the cumulative positives and rows at each block's end (Int64), the counts before
    the chunk, and the arrays several accumulators share, each computed on first use
    (a chunk is a few thousand blocks, so they stay in cache)."""

    def __init__(
        self, b: Blocks, ends: tuple[np.ndarray, np.ndarray, np.ndarray, bool], tp0: int, rows0: int
    ) -> None:
        self.b = b
        self.tp, self.rows, self.last, self.nonneg = ends
        self.tp0, self.rows0 = tp0, rows0

    @functools.cached_property
    def fp(self) -> np.ndarray:
        """The negatives at each block's end (Int64)."""
        return self.rows - self.tp

    @functools.cached_property
    def tp_f(self) -> np.ndarray:
        return self.tp.astype(np.float64)

    @functools.cached_property
    def rows_f(self) -> np.ndarray:
        return self.rows.astype(np.float64)

    @functools.cached_property
    def precision(self) -> np.ndarray:
        return self.tp_f / self.rows_f

    @functools.cached_property
    def positives(self) -> np.ndarray:
        """The positives of each block (Float64)."""
        return _steps(self.tp_f, self.tp0)

    @functools.cached_property
    def gap(self) -> np.ndarray:
        """TPR − FPR at each block's end (KS, MCC), as the Polars finalizers compute it."""
        fp = self.rows_f - self.tp_f
        fp /= float(self.b.N)
        return np.subtract(self.tp_f / float(self.b.P), fp, out=fp)

    @functools.cached_property
    def twice_area(self) -> int:
        """Σ over the chunk's blocks of (FP_b − FP_{b−1}) · (TP_b + TP_{b−1}): twice the
        Mann–Whitney count of its pairs (a tied pair ½), an exact integer (Int64)."""
        pairs = self.tp.copy()
        pairs[1:] += self.tp[:-1]
        pairs[0] += self.tp0
        return int(np.dot(_steps(self.fp, self.rows0 - self.tp0), pairs))

    @functools.cached_property
    def scores(self) -> np.ndarray:
        """The score of each block."""
        out = np.empty(len(self.last))
        thresholds(self.last, self.nonneg, out)
        return out


class Accumulator:
    """One metric computed in :func:`together`'s pass over the chunks: ``step`` per chunk
    (``chunked``), ``value`` at the end (``None``: undefined). ``totals``: it reads the
    class totals ``P``/``N`` while it steps (counted before the pass)."""

    chunked = True
    totals = False
    rides = False  # stepped too when the chunks are read for another accumulator

    def __init__(self, b: Blocks) -> None:
        self.b = b

    def step(self, c: Chunk) -> None:  # pragma: no cover - every chunked one overrides it
        raise NotImplementedError

    def value(self) -> float | None:  # pragma: no cover
        raise NotImplementedError


class Auc(Accumulator):
    """The AUC: alone, :func:`auc` (from the sorted keys themselves: a few passes without
    the chunks' cumulative counts, cheaper than a trapezoid per block); when the chunks
    are read anyway (``rides``), twice the Mann–Whitney count from them
    (:attr:`Chunk.twice_area`: the same exact integer, so the same value, and no second
    pass over the keys: a 1,000-row group 10 µs instead of 160)."""

    chunked = False
    rides = True

    def __init__(self, b: Blocks) -> None:
        super().__init__(b)
        self.twice: int | None = None

    def step(self, c: Chunk) -> None:
        self.twice = (self.twice or 0) + c.twice_area

    def auc(self) -> float | None:
        if self.twice is None:
            return self.b.memo(auc, auc)
        return self.twice / (2.0 * self.b.P * self.b.N) if self.b.defined() else None

    def value(self) -> float | None:
        return self.auc()


class Gini(Auc):
    """2·AUC − 1, written as ``pe.gini`` alone writes it (from the table's one AUC)."""

    def value(self) -> float | None:
        a = self.auc()
        return None if a is None else (a - 0.5) / 0.5


class AveragePrecision(Accumulator):
    """Σ_b (TP_b − TP_{b−1}) · TP_b / rows_b / P over the blocks (scikit-learn's step rule)."""

    def __init__(self, b: Blocks) -> None:
        super().__init__(b)
        self.total = 0.0

    def step(self, c: Chunk) -> None:
        # einsum, not np.dot: BLAS's threads spin after a call, taking the other core
        self.total += float(np.einsum("i,i->", c.positives, c.precision))

    def value(self) -> float | None:
        return self.total / self.b.P if self.b.defined() else None


class PrAuc(Accumulator):
    """Σ_b (prec_b + prec_{b−1})/2 · (TP_b − TP_{b−1}) / P, the point before the first
    block of precision 1 (the lower trapezoid rule, :func:`polars_eval.pr_auc`)."""

    def __init__(self, b: Blocks) -> None:
        super().__init__(b)
        self.total, self.last = 0.0, 1.0

    def step(self, c: Chunk) -> None:
        precision = c.precision
        pairs = np.empty_like(precision)
        pairs[0] = precision[0] + self.last
        np.add(precision[1:], precision[:-1], out=pairs[1:])
        self.total += float(np.einsum("i,i->", pairs, c.positives))
        self.last = float(precision[-1])

    def value(self) -> float | None:
        return self.total / (2.0 * self.b.P) if self.b.defined() else None


class _Maximum(Accumulator):
    """The maximum of a value over the blocks' ends (None where no block defines it)."""

    totals = True

    def __init__(self, b: Blocks) -> None:
        super().__init__(b)
        self.best: float | None = None

    def points(self, c: Chunk) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def step(self, c: Chunk) -> None:
        values = self.points(c)
        if len(values):
            best = float(values.max())
            self.best = best if self.best is None else max(self.best, best)

    def scale(self, best: float) -> float:
        return best

    def value(self) -> float | None:
        if not self.b.defined() or self.best is None:
            return None
        return self.scale(self.best)


class Ks(_Maximum):
    """max |TPR − FPR| over the blocks' ends (the larger of the gap's maximum and its
    minimum negated: no array of absolute values)."""

    def step(self, c: Chunk) -> None:
        best = max(float(c.gap.max()), -float(c.gap.min()))
        self.best = best if self.best is None else max(self.best, best)


class MaxAccuracy(_Maximum):
    """max (TP + N − FP) / (P + N): the maximum of TP − FP (exact integers) over P + N."""

    def points(self, c: Chunk) -> np.ndarray:
        return c.tp - c.fp

    def scale(self, best: float) -> float:
        return (best + self.b.N) / float(self.b.P + self.b.N)


class MaxF1(_Maximum):
    """max 2·TP / (2·TP + FN + FP) = 2·TP / (rows + P), two exact integers divided."""

    def points(self, c: Chunk) -> np.ndarray:
        return c.tp_f / (c.rows_f + float(self.b.P))

    def scale(self, best: float) -> float:
        return 2.0 * best  # exact: (2 TP) / d == 2 (TP / d)


class MaxFBeta(_Maximum):
    """max F-beta = (1 + β²)·TP / ((1 + β²)·TP + β²·FN + FP) = (1 + β²)·TP / (rows + β²·P)
    (FN = P − TP, FP = rows − TP)."""

    def __init__(self, b: Blocks, beta: float) -> None:
        super().__init__(b)
        self.b2 = beta * beta

    def points(self, c: Chunk) -> np.ndarray:
        return ((1.0 + self.b2) * c.tp_f) / (c.rows_f + self.b2 * float(self.b.P))


class MaxMcc(_Maximum):
    """max MCC as :func:`polars_eval.metrics.binary._max_mcc`: the maximum of (TPR − FPR)
    / √(q (T − q)) over the blocks where q (T − q) > 0 (q = TP + FP, the rows up to the
    block's end, T = P + N), times √(P N). q >= 1 at every block, and q = T at the last
    block only, which is left out."""

    def points(self, c: Chunk) -> np.ndarray:
        q, gap = c.rows_f, c.gap
        if c.rows[-1] == self.b.rows:
            q, gap = q[:-1], gap[:-1]
        spread = float(self.b.rows) - q
        spread *= q
        return gap / np.sqrt(spread, out=spread)

    def scale(self, best: float) -> float:
        return best * float(np.sqrt(float(self.b.P) * float(self.b.N)))


class Ece(Accumulator):
    """The expected calibration error over ``bins`` equal bins of [0, 1], bins as
    scikit-learn's ``calibration_curve`` (bin ``numpy.searchsorted(edges[1:-1], p)``):
    per bin its rows, positives and sum of scores, then Σ_b n_b |pos_b / n_b − mean_b| / n.
    Defined wherever a row is (one class too).

    A chunk's blocks come in descending score order, so each bin's blocks are
    consecutive: the bins' bounds are binary searches of the edges in the chunk's scores,
    its rows and positives differences of the cumulative counts at those bounds, and its
    sum of scores one ``reduceat`` (searching every block's bin and three ``bincount``
    calls cost as much as the sort at 1e6 distinct scores).
    """

    def __init__(self, b: Blocks, bins: int) -> None:
        super().__init__(b)
        self.bins = bins
        self.inner = _inner_edges(bins)
        # per bin from the top one down (the chunks' order)
        self.count = np.zeros(bins)
        self.positives = np.zeros(bins)
        self.sums = np.zeros(bins)

    def step(self, c: Chunk) -> None:
        scores = c.scores
        n = len(scores)
        # bin j holds inner[j - 1] < p <= inner[j]: its blocks start after those above
        # inner[j]; bounds[k]:bounds[k + 1] are the blocks of the k-th bin from the top
        bounds = np.empty(self.bins + 1, np.int64)
        bounds[0], bounds[-1] = 0, n
        bounds[-2:0:-1] = n - np.searchsorted(scores[::-1], self.inner, side="right")
        before = bounds - 1
        rows = np.where(bounds > 0, c.rows[before], c.rows0)
        tp = np.where(bounds > 0, c.tp[before], c.tp0)
        self.count += np.diff(rows)
        self.positives += np.diff(tp)
        full = np.flatnonzero(bounds[:-1] < bounds[1:])
        # a block's score times its rows (continuous scores: one row a block)
        single = len(scores) == int(c.rows[-1]) - c.rows0
        weighted = scores if single else scores * _steps(c.rows, c.rows0)
        self.sums[full] += np.add.reduceat(weighted, bounds[full])

    def value(self) -> float | None:
        kept = self.count > 0
        if not kept.any():
            return None
        count = self.count[kept]
        gap = np.abs(self.positives[kept] / count - self.sums[kept] / count)
        return float((count * gap).sum() / count.sum())


class Xy(Accumulator):
    """X at Y, conservative (as YDF, :func:`polars_eval.precision_at_recall` ...): over
    the curve's points (the empty prediction, TP = FP = 0 with precision 1, then each
    block's end, in descending threshold order) the ``target`` of the first (``first``)
    or last point whose ``constraint`` is ``op`` ``value``; the rates as the Polars
    finalizer computes them (TP / P, FP / N, TP / rows, rows / (P + N)). None when no
    point qualifies or a class is absent."""

    totals = True

    def __init__(
        self, b: Blocks, constraint: str, target: str, op: str, value: float, first: bool
    ) -> None:
        super().__init__(b)
        self.constraint, self.target, self.first = constraint, target, first
        self.bound, self.at_least = value, op == ">="
        head = {"recall": 0.0, "fpr": 0.0, "precision": 1.0, "volume": 0.0}
        self.found = bool(self._ok(head[constraint]))
        self.chosen: float | None = head[target] if self.found else None

    def _ok(self, values: Any) -> Any:
        return values >= self.bound if self.at_least else values <= self.bound

    def _rate(self, c: Chunk, name: str) -> np.ndarray:
        if name == "recall":
            return c.tp_f / float(self.b.P)
        if name == "fpr":
            return (c.rows_f - c.tp_f) / float(self.b.N)
        if name == "precision":
            return c.precision
        return c.rows_f / float(self.b.P + self.b.N)

    def step(self, c: Chunk) -> None:
        if self.first and self.found:
            return
        at = np.flatnonzero(self._ok(self._rate(c, self.constraint)))
        if len(at):
            self.found = True
            self.chosen = float(self._rate(c, self.target)[at[0] if self.first else at[-1]])

    def value(self) -> float | None:
        return self.chosen if self.b.defined() else None


@functools.lru_cache(maxsize=64)
def _inner_edges(bins: int) -> np.ndarray:
    """The inner edges of ``bins`` equal bins of [0, 1] (read-only: shared)."""
    edges = np.linspace(0.0, 1.0, bins + 1)[1:-1]
    edges.flags.writeable = False
    return edges


def together(parts: Mapping[str, Callable[[Blocks], Accumulator]]) -> Callable[[Blocks], dict]:
    """The kernel of several metrics of the same rows (``parts``: name -> accumulator of
    the blocks): one pass over the chunks of the sorted keys steps every chunked
    accumulator, sharing the parts of a chunk (the precision, TPR − FPR ...). Every value
    is NaN if a score is NaN."""

    def kernel(b: Blocks) -> dict[str, float | None]:
        with np.errstate(divide="ignore", invalid="ignore"):  # a class absent: 0/0, unread
            return run(b)

    def run(b: Blocks) -> dict[str, float | None]:
        if b.has_nan:
            return dict.fromkeys(parts, NAN)
        accumulators = {name: make(b) for name, make in parts.items()}
        chunked = [a for a in accumulators.values() if a.chunked]
        if chunked:
            chunked += [a for a in accumulators.values() if a.rides]
        if any(a.totals for a in chunked):
            b.count()
        if chunked:
            tp0 = rows0 = 0
            for ends in b.chunks():
                chunk = Chunk(b, ends, tp0, rows0)
                for a in chunked:
                    a.step(chunk)
                tp0, rows0 = int(ends[0][-1]), int(ends[1][-1])
        return {name: a.value() for name, a in accumulators.items()}

    return kernel


def alone(make: Callable[[Blocks], Accumulator]) -> Callable[[Blocks], float | None]:
    """The kernel of one accumulator, for the metric's bare expression (NaN scores: the
    caller's :func:`_scalar`)."""
    kernel = together({"v": make})
    return lambda b: kernel(b)["v"]


average_precision = alone(AveragePrecision)
pr_auc = alone(PrAuc)


def auc(b: Blocks) -> float | None:
    """The Mann–Whitney count over P·N, a tied pair ½ (the trapezoid rule's area).

    In the order of the keys (descending score, the positives of a tie first) the pairs
    with the positive first are, over the negatives, the positives before each:
    Σ_neg i − N(N − 1)/2 (i a negative's place). That counts a tied pair whole, so half
    of T = Σ_b pos_b·neg_b is taken off; twice the count is an exact integer. A score with
    both labels is where a positive run (key 2m) meets the negative run of its score
    (2m + 1): the two runs' lengths come from binary searches in the sorted keys. No
    cumulative count: a few passes over the keys (the per-group cost of ``group_by``).
    """
    places = tied = negatives = rows = 0
    for keys, _ in b.parts:
        at = np.flatnonzero((keys.view(np.uint8)[_LOW_BYTE::8] & 1).view(np.bool_))
        places += int(at.sum()) + rows * len(at)
        negatives += len(at)
        meet = np.flatnonzero((keys[1:] ^ keys[:-1]) == 1)
        if len(meet):
            pos = meet + 1 - np.searchsorted(keys, keys[meet], side="left")
            neg = np.searchsorted(keys, keys[meet + 1], side="right") - (meet + 1)
            tied += int(np.dot(pos, neg))
        rows += len(keys)
    b.P, b.N = rows - negatives, negatives
    if not b.defined():
        return None
    twice = 2 * (places - negatives * (negatives - 1) // 2) - tied
    return twice / (2.0 * b.P * b.N)


ROC_DTYPE = pl.List(pl.Struct({"threshold": F64, "fpr": F64, "tpr": F64}))
STATE_DTYPE = pl.List(pl.Struct({"t": F64, "tp": F64, "fp": F64}))


def _points(b: Blocks, head: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One point per block, in descending threshold order: its score, and the positives
    and the negatives with a score >= it (Float64); first the block of NaN scores (if
    any: threshold NaN), and with ``head`` the point (inf, 0, 0) before every other."""
    size = b.rows + 1  # at most one point per row, and the head
    threshold, tp, fp = np.empty(size), np.empty(size), np.empty(size)
    m = 0
    if head:
        threshold[0], tp[0], fp[0] = np.inf, 0.0, 0.0
        m = 1
    if b.has_nan:
        threshold[m], tp[m], fp[m] = np.nan, b.nan_positives, b.nan - b.nan_positives
        m += 1
    for positives, rows, last, nonneg in b.chunks():
        k = m + len(positives)
        thresholds(last, nonneg, threshold[m:k])
        tp[m:k] = positives
        np.subtract(rows, positives, out=fp[m:k], casting="unsafe")
        m = k
    return threshold[:m], tp[:m], fp[:m]


def _state(b: Blocks) -> dict[str, Any]:
    """The threshold state (:func:`polars_eval.metrics._curve.threshold_state`): ``{t,
    tp, fp}`` per distinct score, descending (NaN first, one point for every NaN)."""
    t, tp, fp = _points(b, head=False)
    return {"t": t, "tp": tp, "fp": fp}


def _roc(b: Blocks) -> dict[str, Any]:
    """The ROC curve's points: (inf, 0, 0), then one per block (threshold, FP/N, TP/P),
    each rate null when its class is absent, every field NaN if a score is NaN."""
    threshold, tp, fp = _points(b, head=True)
    m = len(threshold)
    columns: dict[str, Any] = {"threshold": threshold}
    for name, rate, total in (("fpr", fp, b.N), ("tpr", tp, b.P)):
        rate /= total if total else 1
        # the rate of an absent class is null: a masked array, not NaN
        columns[name] = rate if total else np.ma.masked_all(m)
    if b.has_nan:
        columns = {name: np.full(m, np.nan) for name in columns}
    return columns


def _lists(values: list[dict[str, Any]], dtype: pl.DataType) -> pl.Series:
    """One list of structs per group from each group's columns (numpy arrays, a masked
    array for a null column): the columns of every group concatenated once and cut by
    offsets, not a Series built and imploded per group (1,000 groups: ~0.4 s)."""
    fields = list(dtype.inner.to_schema())  # type: ignore[attr-defined]
    lengths = np.fromiter((len(v[fields[0]]) for v in values), np.int64, len(values))
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    arrays = []
    for name in fields:
        parts = [v[name] for v in values]
        if any(np.ma.isMaskedArray(x) for x in parts):
            column = np.ma.concatenate(parts)
            mask = np.ma.getmaskarray(column)
            arrays.append(pa.array(column.filled(np.nan), pa.float64(), mask=mask))
        else:
            arrays.append(pa.array(np.concatenate(parts), pa.float64()))
    points = pa.StructArray.from_arrays(arrays, fields)
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), points)
    return pl.Series(lists).cast(dtype)


def _scalar(kernel: Callable[[Blocks], float | None]) -> Callable[[Blocks], float | None]:
    def value(b: Blocks) -> float | None:
        return NAN if b.has_nan else kernel(b)

    return value


PARALLEL_ROWS = 1 << 16
"""From this many rows on, the groups of one call are computed in two threads..."""
GROUP_ROWS = 1 << 14
"""... if they hold this many rows each on average."""
MANY_GROUPS = 16
"""From this many groups on, ``per_group``'s ``many`` computes them all at once where they
hold fewer than GROUP_ROWS each on average (else one at a time, in two threads)."""

Many = Callable[[np.ndarray, np.ndarray, np.ndarray], pl.Series]


def per_group(
    kernel: Callable[[Blocks], Any], dtype: pl.DataType, many: Many | None = None
) -> Callable[[pl.Series], pl.Series]:
    """The function of ``rows.map_batches(..., is_elementwise=True)`` over ``{y, s}``,
    one list of each per group (``y`` whether the row is positive, ``s`` the score), all
    the groups in one call; ``kernel`` over the blocks of each group's rows with neither field null,
    a float (``dtype`` Float64), a dict of columns per group (``dtype`` a list of
    structs, assembled by :func:`_lists`) or a dict of floats per group (``dtype`` a
    struct of Float64 fields: :func:`together`).

    One call for all the groups, not one per group: Polars calls a Python function of a
    ``group_by`` once per group and one group at a time (1,000 groups of 1e4 rows: ~0.3 s
    of calls and gathers), and here the groups run in two threads (numpy's sort and
    passes release the GIL), as Polars' own per-group sort does.

    ``many``: the same values of many small groups at once, from the rows without nulls
    and the groups' offsets (:func:`_many_auc`, :data:`MANY_GROUPS`): 1,000 groups of
    1,000 rows ~20 ms instead of ~70 (at 60,000 rows a group about even, beyond that the
    groups one at a time win).
    """

    def one(positive: np.ndarray, s: np.ndarray, keep: np.ndarray | None) -> Any:
        if keep is not None:
            positive, s = positive[keep], s[keep]
        return kernel(Blocks(sorted_parts(positive, s)))

    def run(lists: pl.Series) -> pl.Series:
        y, s = (lists.struct.field(name) for name in ("y", "s"))
        lengths = s.list.len().fill_null(0).to_numpy().astype(np.int64)
        ends = np.cumsum(lengths)
        y, s = y.explode(empty_as_null=False), s.explode(empty_as_null=False)
        keep = None
        if y.has_nulls() or s.has_nulls():
            keep = (y.is_not_null() & s.is_not_null()).to_numpy()
            y, s = y.fill_null(False), s.fill_null(0.0)
        pos, score = y.to_numpy(), s.to_numpy()
        if (
            many is not None
            and MANY_GROUPS <= len(lengths)
            and len(pos) < GROUP_ROWS * len(lengths)
        ):
            offsets = np.zeros(len(lengths) + 1, np.int64)
            offsets[1:] = ends
            if keep is not None:  # the offsets of the rows kept
                kept = np.zeros(len(keep) + 1, np.int64)
                np.cumsum(keep, out=kept[1:])
                offsets, pos, score = kept[offsets], pos[keep], score[keep]
            return many(pos, score, offsets)
        tasks = [
            partial(one, pos[a:z], score[a:z], None if keep is None else keep[a:z])
            for a, z in zip((ends - lengths).tolist(), ends.tolist(), strict=True)
        ]
        # two threads pay off only where a group's numpy work outweighs its Python calls
        # (1,000 groups of 1,000 rows: one thread 0.13 s, two 0.31 s for the GIL)
        parallel = len(pos) >= PARALLEL_ROWS and len(pos) >= GROUP_ROWS * len(tasks)
        values = _run_all(tasks, parallel=parallel)
        if dtype == F64:
            return pl.Series(values, dtype=F64)
        if isinstance(dtype, pl.Struct):
            fields = {n: pl.Series(n, [v[n] for v in values], F64) for n in dtype.to_schema()}
            return pl.DataFrame(fields).to_struct()
        return _lists(values, dtype) if values else pl.Series([], dtype=dtype)

    return run


state_points = per_group(_state, STATE_DTYPE)
roc_points = per_group(_roc, ROC_DTYPE)


def _many_auc(gini: Mapping[str, bool] | None) -> Many:
    """The AUC of every group at once (:func:`polars_eval.metrics._group_auc.group_auc`):
    a Float64 column (``gini`` None), or a struct of the fields ``gini`` names, each the
    AUC or, where ``gini[name]``, the Gini coefficient (AUC − 0.5) / 0.5 (as :class:`Gini`)."""

    def run(positive: np.ndarray, s: np.ndarray, offsets: np.ndarray) -> pl.Series:
        values, defined = group_auc(positive, s, offsets)
        null = ~defined

        def column(name: str, values: np.ndarray) -> pl.Series:
            return pl.Series(name, pa.array(values, pa.float64(), mask=null))

        if gini is None:
            return column("auc", values)
        gini_values = (values - 0.5) / 0.5
        columns = [column(n, gini_values if g else values) for n, g in gini.items()]
        return pl.DataFrame(columns).to_struct()

    return run


def metric(kernel: Callable[[Blocks], float | None]) -> Callable[[pl.Series], pl.Series]:
    """The ``map_batches`` function of a scalar ``kernel`` (NaN if a score is NaN)."""
    return per_group(_scalar(kernel), F64, _many_auc(None) if kernel is auc else None)


def metrics(
    parts: Mapping[str, Callable[[Blocks], Accumulator]],
) -> Callable[[pl.Series], pl.Series]:
    """The ``map_batches`` function of several metrics of the same rows (:func:`together`):
    a struct of one Float64 field per name, one row per group."""
    many = None
    if all(part in (Auc, Gini) for part in parts.values()):
        many = _many_auc({name: part is Gini for name, part in parts.items()})
    return per_group(together(parts), pl.Struct(dict.fromkeys(parts, F64)), many)
