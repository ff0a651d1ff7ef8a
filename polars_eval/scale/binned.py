"""The state rows of the binned binary task (``pe.Evaluation(..., bins=N)``, SPEC §10).

Per (group, label, bin, side of the threshold): the summed weight; per group: the
summed weighted log loss and squared error terms (exact, as ``compute()`` reads them:
per group), on a row whose label, bin and side are null and whose weight is 0. Both
kinds are summed per key when states merge, so states of any partitioning merge, and a
state whose log loss and squared error terms sit on its bin rows (as written before
this layout) merges with them too.

Speed: this ``group_by`` runs over every row of a lake. Polars hashes a single integer
column several times faster than several columns (which it row-encodes first), so the
label, the bin and the side are packed into one Int64 key, and so are the ``by``
columns when they are integers (or booleans) whose codes fit beside them (63 bits in
all: any one column up to 32 bits, with 1,000 bins). Other ``by`` columns (strings,
64-bit integers, several wide integers) are keys of their own. The key is unpacked after
the aggregation, on the state's rows only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from polars_eval.metrics._curve import score_bin

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


def binned_rows(
    lf: pl.LazyFrame,
    by: Sequence[str],
    y: pl.Expr,
    s: pl.Expr,
    w: pl.Expr,
    valid: pl.Expr,
    ll: pl.Expr,
    *,
    bins: int,
    probability: bool,
    threshold: float,
    columns: tuple[str, str, str, str, str, str],
) -> pl.LazyFrame:
    """The binned state rows of ``lf``: ``[*by, label, bin, above, weight, ll, sq]`` (the
    names in ``columns``), ``y`` the 0/1 label, ``s`` the score, ``w`` the weight and
    ``ll`` the log loss term of a row, counted where ``valid``."""
    label, bin_, above, weight, logloss, squared = columns
    # the score's part: 0 for a null score, else 1 + 2·bin + (s >= threshold); the
    # label's: 0 for a null label, else 1 + y (as the unpacked columns say)
    b = score_bin(s, bins, probability=probability).cast(pl.Int64)
    side = (s >= threshold).cast(pl.Int64)
    score_part = (1 + 2 * b + side).fill_null(0)
    label_part = (1 + y.cast(pl.Int64)).fill_null(0)
    parts: list[tuple[pl.Expr, int]] = [(score_part, 2 * bins + 1), (label_part, 3)]
    schema = lf.collect_schema()
    packed: list[str] = []
    decoders: list[Callable[[pl.Expr], pl.Expr]] = []
    room = (1 << 63) // ((2 * bins + 1) * 3)  # what the by columns' codes may take
    for name in by:
        dtype = schema[name]
        width = _CODE_BITS.get(type(dtype))
        if width is None or (1 << width) + 1 > room:
            continue
        code, size, decode = _code(name, dtype, width)
        parts.append((code, size))
        packed.append(name)
        decoders.append(decode)
        room //= size
    key = _pack(parts).alias(KEY)
    keys = [b for b in by if b not in packed]
    counts = lf.group_by([*keys, key]).agg(pl.when(valid).then(w).sum().alias(weight))
    score_code, label_code, *by_codes = _unpack(pl.col(KEY), [size for _, size in parts])
    unpacked = {name: decode(c) for name, decode, c in zip(packed, decoders, by_codes, strict=True)}
    counts = counts.select(
        *(unpacked.get(name, pl.col(name)).alias(name) for name in by),
        pl.when(label_code > 0).then(label_code - 1).cast(pl.Float64).alias(label),
        pl.when(score_code > 0).then((score_code - 1) // 2).cast(pl.Int32).alias(bin_),
        pl.when(score_code > 0).then((score_code - 1) % 2 == 1).alias(above),
        weight,
        pl.lit(0.0).alias(logloss),
        pl.lit(0.0).alias(squared),
    )
    sums = [
        pl.lit(None, pl.Float64).alias(label),
        pl.lit(None, pl.Int32).alias(bin_),
        pl.lit(None, pl.Boolean).alias(above),
        pl.lit(0.0).alias(weight),
        pl.when(valid).then(w * ll).sum().alias(logloss),
        pl.when(valid).then(w * (s - y) ** 2).sum().alias(squared),
    ]
    per_group = lf.group_by(list(by)).agg(sums) if by else lf.select(sums)
    return pl.concat([counts, per_group])


def _code(
    name: str, dtype: pl.DataType, width: int
) -> tuple[pl.Expr, int, Callable[[pl.Expr], pl.Expr]]:
    """An integer column as a code in [0, 2^width]: 0 for null, else 1 + its offset from
    the type's minimum; the code's size; and the function that decodes it."""
    low = -(1 << (width - 1)) if dtype.is_signed_integer() else 0
    value = pl.col(name).cast(pl.Int64)
    code = (value - low + 1).fill_null(0)

    def decode(c: pl.Expr) -> pl.Expr:
        return pl.when(c > 0).then(c - 1 + low).cast(dtype)

    return code, (1 << width) + 1, decode


def _pack(parts: Sequence[tuple[pl.Expr, int]]) -> pl.Expr:
    """Non-negative integer parts, each below its size, as one Int64 (mixed radix)."""
    key = parts[-1][0]
    for expr, size in reversed(parts[:-1]):
        key = key * size + expr
    return key


def _unpack(key: pl.Expr, sizes: Sequence[int]) -> list[pl.Expr]:
    """The parts of a key that :func:`_pack` made of parts of these sizes."""
    out = []
    for i, size in enumerate(sizes):
        rest = key
        for before in sizes[:i]:
            rest = rest // before
        out.append(rest % size if i < len(sizes) - 1 else rest)
    return out
