"""The bins rows of the binned binary task, reduced fast (``pe.Evaluation(..., bins=N)``, SPEC §10).

The bins table (:func:`polars_eval.tasks._binary_bins.bins_table`) says what a row adds
to its (group, label, bin, side of the threshold): its weight and the row values of the
exact metrics' sums; ``compute()`` sums them per group. Rows with a null label or score
keep a null label, or a null bin and side, and weight 0, as a ``group_by`` of those
columns gives them (the table's own ``partition``). This module gives the same rows
faster over a lake.

Speed (this aggregation runs over every row of a lake): the label, the bin and the side
are packed into one Int64 key, and so are the ``by`` columns when they are integers (or
booleans) whose codes fit beside them (63 bits in all: any one column of up to 32 bits
with 1,000 bins). Where every ``by`` column is packed and the keys of a frame span a
range at most a few times its rows (the bins are dense: 100 segments × 2 labels × 1,000
bins × 2 sides is a range of 600,000), the sums per key are numpy ``bincount``\\ s over
that range: Polars has no dense histogram, and its hash ``group_by`` of the same key takes
4× the time (0.12 s against 0.03 s for 2e6 rows; issue 27). Otherwise Polars' ``group_by``
of the packed key (and the ``by`` columns left unpacked) sums them. The key is unpacked
on the state's rows only (:meth:`Binned.unpack`), so chunks of a lake are reduced and
merged on it (:mod:`polars_eval.scale.chunked`) and unpacked once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from polars_eval.tasks._binary_bins import KEYS, BinsTable

KEY = "__pe_key"
_CODE_BITS = {
    pl.Boolean: 1,
    pl.Int8: 8,
    pl.UInt8: 8,
    pl.Int16: 16,
    pl.UInt16: 16,
    pl.Int32: 32,
    pl.UInt32: 32,
}
_DENSE_RANGE = 1 << 20
"""Keys spanning up to this range (or up to 4× the rows) are summed by ``bincount``."""


class Binned:
    """The bins rows of one bins table over frames of one schema (its keys: the 0/1
    label, the bin and the side of the threshold of a row; its values: the sums)."""

    def __init__(self, table: BinsTable, schema: pl.Schema) -> None:
        self.by = table.by
        self.columns = table.columns
        label, bin_, above = (table.rows[k] for k in KEYS)
        bins = table.n_bins
        # the score's part: 0 for a null bin, else 1 + 2·bin + side; the label's: 0 for a
        # null label, else 1 + y
        score = 1 + 2 * bin_.cast(pl.Int64) + above.cast(pl.Int64)
        parts = [(score.fill_null(0), 2 * bins + 1)]
        parts.append(((1 + label.cast(pl.Int64)).fill_null(0), 3))
        room = (1 << 63) // ((2 * bins + 1) * 3)  # what the by columns' codes may take
        self._decoders: dict[str, Callable[[pl.Expr], pl.Expr]] = {}
        for name in self.by:
            width = _CODE_BITS.get(type(schema[name]))
            if width is None or (1 << width) + 1 > room:
                continue
            code, size, self._decoders[name] = _code(name, schema[name], width)
            parts.append((code, size))
            room //= size
        self._sizes = [size for _, size in parts]
        self.keys = [name for name in self.by if name not in self._decoders]
        self.values = list(table.sums)
        self._rows = [
            *self.keys,
            _pack([expr for expr, _ in parts], self._sizes).alias(KEY),
            *(value.alias(name) for name, value in table.sums.items()),
        ]

    def rows(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        """Every row of ``lf`` as its key and values (not summed)."""
        return lf.select(self._rows)

    def reduce(self, frames: Sequence[pl.DataFrame]) -> pl.DataFrame:
        """Frames of keys and values (rows, or the sums of earlier reductions) summed per
        key: by ``bincount`` where the keys are one dense integer, else a ``group_by``."""
        frame = pl.concat(frames) if len(frames) > 1 else frames[0]
        if not self.keys and frame.height:
            key = frame.get_column(KEY).to_numpy()
            low, high = int(key.min()), int(key.max())
            if high - low < max(_DENSE_RANGE, 4 * frame.height):
                return self._bincount(frame, key - low, low)
        keys = [*self.keys, KEY]
        summed = frame.lazy().group_by(keys).agg(pl.col(self.values).sum())
        return summed.collect(engine="streaming")

    def _bincount(self, frame: pl.DataFrame, offsets: np.ndarray, low: int) -> pl.DataFrame:
        # the sums per key over the dense range of the keys (see the module docstring)
        size = int(offsets.max()) + 1
        present = np.flatnonzero(np.bincount(offsets, minlength=size))
        sums = {
            name: np.bincount(offsets, weights=frame.get_column(name).to_numpy(), minlength=size)
            for name in self.values
        }
        return pl.DataFrame(
            {KEY: present + low, **{name: sums[name][present] for name in self.values}},
            schema={KEY: pl.Int64, **dict.fromkeys(self.values, pl.Float64)},
        )

    def unpack(self, frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
        """The bins rows of reduced keys: ``[*by, label, bin, above, *sums]``."""
        label, bin_, above = KEYS
        score_code, label_code, *codes = _unpack(pl.col(KEY), self._sizes)
        decoded = dict(zip(self._decoders, codes, strict=True))
        return frame.select(
            *(self._decoders[b](decoded[b]) if b in decoded else pl.col(b) for b in self.by),
            pl.when(label_code > 0).then(label_code - 1).cast(pl.Float64).alias(label),
            pl.when(score_code > 0).then((score_code - 1) // 2).cast(pl.Int32).alias(bin_),
            pl.when(score_code > 0).then((score_code - 1) % 2 == 1).alias(above),
            *self.values,
        )

    def state_rows(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        """The state rows of ``lf``, lazily (its rows reduced at collect)."""
        schema = {**{k: lf.collect_schema()[k] for k in self.keys}, KEY: pl.Int64}
        schema |= dict.fromkeys(self.values, pl.Float64)
        reduced = self.rows(lf).map_batches(lambda df: self.reduce([df]), schema=schema)
        return self.unpack(reduced)  # type: ignore[return-value]


def _code(
    name: str, dtype: pl.DataType, width: int
) -> tuple[pl.Expr, int, Callable[[pl.Expr], pl.Expr]]:
    """An integer column as a code in [0, 2^width]: 0 for null, else 1 + its offset from
    the type's minimum; the code's size; and the function that decodes it."""
    low = -(1 << (width - 1)) if dtype.is_signed_integer() else 0
    code = (pl.col(name).cast(pl.Int64) - low + 1).fill_null(0)

    def decode(c: pl.Expr) -> pl.Expr:
        return pl.when(c > 0).then(c - 1 + low).cast(dtype).alias(name)

    return code, (1 << width) + 1, decode


def _pack(parts: Sequence[pl.Expr], sizes: Sequence[int]) -> pl.Expr:
    """Non-negative integer parts, each below its size, as one Int64 (mixed radix, the
    first part the fastest)."""
    key = parts[-1]
    for expr, size in zip(reversed(parts[:-1]), reversed(sizes[:-1]), strict=True):
        key = key * size + expr
    return key


def _unpack(key: pl.Expr, sizes: Sequence[int]) -> list[pl.Expr]:
    """The parts of a key that :func:`_pack` made of parts of these sizes."""
    out = []
    rest = key
    for i, size in enumerate(sizes):
        out.append(rest % size if i < len(sizes) - 1 else rest)
        rest = rest // size
    return out
