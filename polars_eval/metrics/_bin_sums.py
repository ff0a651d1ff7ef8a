"""numpy kernels of the calibration metrics (SPEC §15): the rows of each group as numpy
arrays, and the uniform-bin states of the multiclass calibration error by counting.

The uniform-bin state (:func:`polars_eval.metrics._calibration.bin_state`: per non-empty
bin ``{b, w, y, p}``, Σw, Σw·y, Σw·p) is a sum per (group, bin, label): a ``group_by``
that an expression inside an aggregation cannot run. The Polars form sorts the scores to
read the sums at the bin ends (a sort per group and class); here each row's bin is
computed arithmetically (:func:`uniform_bins`) and the sums are ``numpy.bincount`` over
every group at once, from the rows of each group as lists (``map_batches(...,
is_elementwise=True)``: one call for all the groups of a query, as :mod:`._sorted_keys`
does), chunk by chunk in two threads (:func:`in_chunks`). The state is the same, merged
alike.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np
import polars as pl
import pyarrow as pa

from polars_eval._exprs import F64
from polars_eval.metrics._sorted_keys import PARALLEL_ROWS

BIN_STATE_DTYPE = pl.List(pl.Struct({"b": pl.Int32, "w": F64, "y": F64, "p": F64}))
"""The uniform-bin state: ``{b, w, y, p}`` per non-empty bin, in bin order."""

CHUNK = 1 << 17
"""The rows computed together: their temporaries stay in cache (a whole 1e6-row array
costs a pass through memory per operation), and a few chunks per thread."""

_T = TypeVar("_T")
_R = TypeVar("_R")


def in_chunks(fn: Callable[[_T], _R], chunks: Sequence[_T], rows: int) -> list[_R]:
    """``fn`` over ``chunks`` in order; from :data:`PARALLEL_ROWS` rows on in a pool of
    threads (numpy's passes release the GIL; the exp, log and bincount per row take most
    of a kernel), as :mod:`._sorted_keys` runs its groups."""
    workers = min(len(chunks), os.cpu_count() or 1)
    if workers < 2 or rows < PARALLEL_ROWS:
        return [fn(c) for c in chunks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, chunks))


def row_chunks(n: int) -> list[slice]:
    """Consecutive slices of :data:`CHUNK` rows (the last shorter) covering ``n``."""
    return [slice(a, min(a + CHUNK, n)) for a in range(0, n, CHUNK)]


def rows_of(lists: pl.Series) -> tuple[int, np.ndarray, list[np.ndarray]]:
    """A struct of lists (one list per field and group) as numpy: (groups, the group of
    each row kept, the kept rows' columns in field order), a row kept when no field is
    null and, with a field ``w`` (a weight), its weight is not 0. The groups are in
    order, so the group index is non-decreasing; one group gives a read-only broadcast
    zero (no index per row). The columns are read-only views of Polars' memory where
    no row is left out."""
    names = list(lists.struct.fields)
    columns = [lists.struct.field(name) for name in names]
    groups = len(lists)
    lengths = columns[0].list.len().fill_null(0).to_numpy().astype(np.int64)
    arrays, keep = [], None
    for column in columns:
        values, valid = _values(column.explode(empty_as_null=False))
        arrays.append(values)
        if valid is not None:
            keep = valid if keep is None else keep & valid
    if "w" in names:
        nonzero = arrays[names.index("w")] != 0.0
        keep = nonzero if keep is None else keep & nonzero
    g = np.repeat(np.arange(groups), lengths) if groups > 1 else None
    if keep is not None and not keep.all():
        arrays = [x[keep] for x in arrays]
        g = None if g is None else g[keep]
    if g is None:  # one group: no index per row
        g = np.broadcast_to(np.int64(0), (len(arrays[0]),))
    return groups, g, arrays


def _values(column: pl.Series) -> tuple[np.ndarray, np.ndarray | None]:
    """A column's values (anything where null; Boolean, Float64 and integers as they are,
    any other type as Float64) and its validity (None without a null), read from its
    Arrow buffers: no copy and no fill of the nulls (``to_numpy`` of a column with nulls
    copies it to write NaN)."""
    if not (column.dtype in (pl.Boolean, F64) or column.dtype.is_integer()):
        column = column.cast(F64)
    array = column.to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n, offset = len(array), array.offset
    boolean = column.dtype == pl.Boolean
    dtype = bool if boolean else array.type.to_pandas_dtype()
    if n == 0:
        return np.empty(0, dtype), None
    validity, data = array.buffers()[:2]
    values = _bits(data, offset, n) if boolean else np.frombuffer(data, dtype)[offset : offset + n]
    return values, None if array.null_count == 0 else _bits(validity, offset, n)


def _bits(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """Bits ``offset`` … ``offset + n`` of an Arrow bitmap as booleans."""
    bits = np.unpackbits(np.frombuffer(buffer, np.uint8), count=offset + n, bitorder="little")
    return bits[offset:].view(bool)


def uniform_bins(p: np.ndarray, bins: int) -> np.ndarray:
    """The bin of each score among ``bins`` uniform bins of [0, 1]:
    ``numpy.searchsorted(numpy.linspace(0, 1, bins + 1)[1:-1], p)`` (the inner edges
    strictly below p: bins right-closed, the first closed; NaN in the last bin), without
    its binary search per score (~4x slower at 15 bins).

    ⌈p·bins⌉ − 1, clipped to the bins, is that bin but for a score within a few ulps of
    an edge (``linspace``'s edges and the product are each within an ulp or two of k/bins
    and p·bins), where it may be one off: one comparison with each edge of the guessed
    bin moves it there."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    with np.errstate(over="ignore"):  # p·bins = inf: clipped to the last bin
        guess = np.multiply(p, float(bins))
    np.ceil(guess, out=guess)
    guess -= 1.0
    np.fmin(guess, bins - 1.0, out=guess)  # NaN to the last bin (fmin ignores NaN) ...
    np.fmax(guess, 0.0, out=guess)
    b = guess.astype(np.intp)
    # the guessed bin's lower (open) and upper (closed) edge; NaN, never compared true,
    # below the first bin and above the last (no edge there, even for ±inf)
    lower = np.concatenate([[np.nan], edges[1:bins]])
    upper = np.concatenate([edges[1:bins], [np.nan]])
    b -= p <= lower[b]  # ... where it stays (NaN compares false)
    b += p > upper[b]
    return b


def bin_lists(w: np.ndarray, y: np.ndarray, p: np.ndarray) -> pl.Series:
    """The state (:data:`BIN_STATE_DTYPE`) of per-(group, bin) sums, each ``(groups,
    bins)``: one list per group of its bins with a positive weight, in bin order (cut
    from the flat arrays by offsets, not a Series per group)."""
    used = w > 0.0
    offsets = np.zeros(len(w) + 1, np.int64)
    np.cumsum(used.sum(axis=1), out=offsets[1:])
    b = np.nonzero(used)[1].astype(np.int32)
    fields = [pa.array(b, pa.int32())] + [pa.array(x[used], pa.float64()) for x in (w, y, p)]
    points = pa.StructArray.from_arrays(fields, ["b", "w", "y", "p"])
    return pl.Series(pa.LargeListArray.from_arrays(pa.array(offsets), points)).cast(BIN_STATE_DTYPE)


def bin_sums(lists: pl.Series, *, bins: int) -> pl.Series:
    """The uniform-bin state of each group from its rows ``{y, p}`` or ``{y, p, w}`` (one
    list of each per group: whether the row is positive, its score, its weight; a row
    with a null left out): :data:`BIN_STATE_DTYPE` per group."""
    groups, g, arrays = rows_of(lists)
    positive, p = arrays[0], arrays[1]
    w = arrays[2] if len(arrays) > 2 else None

    def part(rows: slice) -> tuple[np.ndarray, np.ndarray]:
        return _slot_sums(g[rows], groups, positive[rows], p[rows], _at(w, rows), bins)

    return _state(in_chunks(part, row_chunks(len(p)), len(p)), groups, bins)


def top_label_sums(lists: pl.Series, *, bins: int) -> pl.Series:
    """The uniform-bin state of the top label of each group's rows: ``{y, p0 … pK−1}`` or
    with ``w`` (one list of each per group: the index of the row's label among the
    classes, null for a row left out; the probability of each class; the weight).

    Per row the confidence is the largest probability and the row is positive when its
    class (the first class of that probability) is the label: the maximum of the K
    columns, then the first column equal to it, from the last class down. A row with a
    NaN probability (the maximum propagates it) or a negative confidence has a NaN score
    and is a positive (in the last bin: every error is NaN then)."""
    groups, g, arrays = rows_of(lists)
    y, probs = arrays[0], arrays[1:]
    w = None
    if list(lists.struct.fields)[-1] == "w":
        probs, w = probs[:-1], probs[-1]

    def part(rows: slice) -> tuple[np.ndarray, np.ndarray]:
        columns = [q[rows] for q in probs]
        conf = columns[0].copy()
        for q in columns[1:]:
            np.maximum(conf, q, out=conf)
        top = np.full(len(conf), len(columns) - 1, dtype=y.dtype)
        for k in range(len(columns) - 2, -1, -1):
            top = np.where(columns[k] == conf, y.dtype.type(k), top)
        positive = top == y[rows]
        bad = ~(conf >= 0.0)  # NaN, or not a probability
        if bad.any():
            conf[bad] = np.nan
            positive |= bad
        conf += 0.0  # −0.0 as 0.0
        return _slot_sums(g[rows], groups, positive, conf, _at(w, rows), bins)

    return _state(in_chunks(part, row_chunks(len(y)), len(y)), groups, bins)


def _at(w: np.ndarray | None, rows: slice) -> np.ndarray | None:
    return None if w is None else w[rows]


def _slot_sums(
    g: np.ndarray,
    groups: int,
    positive: np.ndarray,
    p: np.ndarray,
    w: np.ndarray | None,
    bins: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Σw and Σw·p per (group, bin, label) slot of rows (its group, label, score and
    weight; None: 1): two ``bincount``."""
    slot = uniform_bins(p, bins)
    slot *= 2
    slot += positive
    if groups > 1:
        slot += g * (2 * bins)
    size = 2 * bins * groups
    weight = np.bincount(slot, weights=w, minlength=size).astype(np.float64, copy=False)
    return weight, np.bincount(slot, weights=p if w is None else w * p, minlength=size)


def _state(parts: list[tuple[np.ndarray, np.ndarray]], groups: int, bins: int) -> pl.Series:
    """The state from each chunk's sums per slot (:func:`_slot_sums`), added up."""
    if parts:
        weight = functools.reduce(np.add, [w for w, _ in parts]).reshape(groups, bins, 2)
        score = functools.reduce(np.add, [p for _, p in parts]).reshape(groups, bins, 2)
    else:
        weight = score = np.zeros((groups, bins, 2))
    return bin_lists(
        weight[:, :, 0] + weight[:, :, 1], weight[:, :, 1], score[:, :, 0] + score[:, :, 1]
    )
