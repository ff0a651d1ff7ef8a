"""numpy kernels of the calibration metrics (SPEC §15): the rows of each group as numpy
arrays, and the uniform-bin state of the multiclass calibration error by counting.

The uniform-bin state (:func:`polars_eval.metrics._calibration.bin_state`: per non-empty
bin ``{b, w, y, p}``, Σw, Σw·y, Σw·p) is a sum per (group, bin, label): a ``group_by``
that an expression inside an aggregation cannot run. The Polars form sorts the scores to
read the sums at the bin ends (a sort per group and class); here each row's bin is
computed arithmetically (:func:`uniform_bins`) and the sums are one ``numpy.bincount``
per field over every group at once, from the rows of each group as lists
(``map_batches(..., is_elementwise=True)``: one call for all the groups of a query, as
:mod:`._sorted_keys` does). The state is the same, merged alike.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from polars_eval._exprs import F64

BIN_STATE_DTYPE = pl.List(pl.Struct({"b": pl.Int32, "w": F64, "y": F64, "p": F64}))
"""The uniform-bin state: ``{b, w, y, p}`` per non-empty bin, in bin order."""

TINY = 5e-324  # as polars_eval.metrics._calibration.TINY (signed_key)
SMALL = 2.0**-1020  # from here on up, x − TINY rounds to x


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
    """A Boolean or Float64 column's values (anything where null) and its validity (None
    without a null), read from its Arrow buffers: no copy of the floats and no fill of
    the nulls (``to_numpy`` of a column with nulls copies it to write NaN)."""
    if column.dtype not in (pl.Boolean, F64):
        column = column.cast(F64)
    array = column.to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n, offset = len(array), array.offset
    if n == 0:
        return np.empty(0, bool if column.dtype == pl.Boolean else np.float64), None
    validity, data = array.buffers()[:2]
    if column.dtype == pl.Boolean:
        values = _bits(data, offset, n)
    else:
        values = np.frombuffer(data, dtype=np.float64)[offset : offset + n]
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
    np.fmax(guess, 0.0, out=guess)  # NaN to 0 (fmax ignores NaN), moved last below
    np.fmin(guess, bins - 1.0, out=guess)
    b = guess.astype(np.intp)
    # the guessed bin's lower (open) and upper (closed) edge; NaN, never compared true,
    # below the first bin and above the last (no edge there, even for ±inf)
    lower = np.concatenate([[np.nan], edges[1:bins]])
    upper = np.concatenate([edges[1:bins], [np.nan]])
    b -= p <= lower[b]
    b += p > upper[b]
    nan = np.isnan(p)
    if nan.any():
        b[nan] = bins - 1
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
    return _sums(groups, g, arrays[0], arrays[1], arrays[2] if len(arrays) > 2 else None, bins)


def signed_bin_sums(lists: pl.Series, *, bins: int) -> pl.Series:
    """:func:`bin_sums` of rows given as signed keys
    (:func:`polars_eval.metrics._calibration.signed_key`: the score of a positive, −score
    − TINY of a negative; NaN a positive of NaN score) and weights: ``{k}`` or ``{k, w}``.

    """
    groups, g, arrays = rows_of(lists)
    positive, p = decode_signed(arrays[0])
    return _sums(groups, g, positive, p, arrays[1] if len(arrays) > 1 else None, bins)


def decode_signed(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each signed key is a positive's (NaN is, as the sorted keys place it) and
    its score: k, or −k − TINY for a negative's.

    −k − TINY = |k| − TINY exactly (−k is |k|), and that is |k| itself from 2⁻¹⁰²⁰ on
    (TINY is below half an ulp there): the scores are ``abs``, and TINY is subtracted
    from the few keys below that only (a ``where=`` over every row costs more than the
    rest of the decoding)."""
    negative = k < 0.0
    p = np.abs(k)
    small = p < SMALL
    if small.any():
        small &= negative
        p[small] -= TINY
    return ~negative, p


def _sums(
    groups: int,
    g: np.ndarray,
    positive: np.ndarray,
    p: np.ndarray,
    w: np.ndarray | None,
    bins: int,
) -> pl.Series:
    """The state from the rows' group, label, score and weight: each (group, bin, label)
    one slot of two ``bincount`` (the weight, the weighted score)."""
    slot = uniform_bins(p, bins)
    slot *= 2
    slot += positive
    if groups > 1:
        slot += g * (2 * bins)
    size = 2 * bins * groups
    weight = np.bincount(slot, weights=w, minlength=size).astype(np.float64, copy=False)
    weight = weight.reshape(groups, bins, 2)
    score = np.bincount(slot, weights=p if w is None else w * p, minlength=size)
    score = score.reshape(groups, bins, 2)
    return bin_lists(
        weight[:, :, 0] + weight[:, :, 1], weight[:, :, 1], score[:, :, 0] + score[:, :, 1]
    )
