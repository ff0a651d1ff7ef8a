"""The numpy kernels of the multiclass ROC AUC (SPEC §4): one-vs-rest and one-vs-one.

The metrics (``polars_eval.metrics.multiclass``: ``auc_spec``, ``ovo_auc_spec``) keep a
group's used rows as their state (class index ``y``, probabilities ``p0`` …, weight
``w``); their finalize runs :func:`ovr_auc` or :func:`ovo_auc` on them. numpy, not
Polars: the AUC of each class is a sort of UInt64 keys built from the bits of the
probabilities (:func:`_sort_keys`), which Polars cannot build in place and sorts several
times slower (numpy sorts them as the float64 they read as where every score is below
1.5, :func:`_sort`); the sorts of the classes (and of the micro average's n × K keys) run
in threads (:func:`_run_all`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl

from polars_eval._exprs import NAN

AUC_AVERAGES = ("micro", "macro", "weighted")
"""The averages of the one-vs-rest AUC (the fields of :func:`ovr_auc`'s result)."""


def ovr_auc(
    rows: pl.Series, *, k: int, weighted: bool, per_class: bool, micro: bool
) -> dict[str, float | None]:
    """Macro, weighted and micro one-vs-rest AUC of the used rows of a group.

    Per class c, the binary AUC of [y = c] against the probability of c; macro = the mean
    of the defined ones, weighted = their mean weighted by the support; micro = one binary
    AUC of the n × K one-hot labels against the n × K probabilities (each pair with its
    row's weight). A NaN propagates; a negative probability gives NaN (not a probability).

    Unweighted and per class only (the bare macro or weighted average), each class's task
    builds its n keys (:func:`_sort_keys`) and sorts them in place, so that the building
    runs in the threads too; else the n × K keys are built once, class after class, and
    each class sorts a copy of its n keys (weighted: arg-sorts them), the micro average
    all of them.
    """
    out: dict[str, float | None] = dict.fromkeys(AUC_AVERAGES)
    y, scores, w = _arrays(rows, k, weighted)
    positives = [y == i for i in range(k)]
    n = len(y)
    valid = not any(_not_probabilities(s) for s in scores)
    keys = None
    if valid and (micro or weighted):
        keys = np.empty(n * k, dtype=np.uint64)
        for i, (s, pos) in enumerate(zip(scores, positives, strict=True)):
            _sort_keys(s, pos, out=keys[i * n : (i + 1) * n])
    if w is not None:
        sides = [_sides(w, pos) for pos in positives]
    else:
        sides = [(float(c), float(n - c)) for c in map(np.count_nonzero, positives)]

    def auc_of(i: int | None, pos: float, neg: float) -> float | None:
        """The AUC of class ``i`` (None: of all the keys, the micro average), of weight
        ``pos`` positive and ``neg`` negative (counts unweighted)."""
        if not valid:
            return NAN
        if pos <= 0.0 or neg <= 0.0:
            return None
        if keys is None:  # unweighted, per class only: the class's own keys
            assert i is not None
            own = _sort_keys(scores[i], positives[i])
            return _sorted_keys_auc(_sort(own, _float_keys(scores[i])), int(pos), int(neg))
        part = keys if i is None else keys[i * n : (i + 1) * n]
        if w is None:
            floats = all(map(_float_keys, scores if i is None else [scores[i]]))
            return _sorted_keys_auc(_sort(part.copy(), floats), int(pos), int(neg))
        return _weighted_keys_auc(part, w, pos, neg)

    tasks = []
    if micro:  # n positives (one per row), the other n(K − 1) negative
        totals = [sum(side[j] for side in sides) for j in (0, 1)]
        tasks.append(functools.partial(auc_of, None, *totals))
    if per_class:
        tasks += [functools.partial(auc_of, i, *s) for i, s in enumerate(sides)]
    values = _run_all(tasks, parallel=n * k >= PARALLEL_KEYS)
    if micro:
        out["micro"] = values.pop(0)
    defined = [(a, s[0]) for a, s in zip(values, sides, strict=False) if a is not None]
    if defined:
        aucs, supports = np.array(defined).T
        out["macro"] = float(aucs.mean())
        out["weighted"] = float((aucs * supports).sum() / supports.sum())
    return out


def _arrays(
    rows: pl.Series, k: int, weighted: bool
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray | None]:
    """The class indices, the ``k`` probabilities and the weights (or None) of the rows:
    from the struct's columns unnested, not ``struct.field`` (an expression evaluated
    per call: ~0.1 ms each, most of a small group's time in a ``group_by``)."""
    columns = dict(zip(rows.struct.fields, rows.struct.unnest().get_columns(), strict=True))

    def floats(name: str) -> np.ndarray:
        column = columns[name]
        return (column if column.dtype == pl.Float64 else column.cast(pl.Float64)).to_numpy()

    scores = [floats(f"p{i}") for i in range(k)]
    return columns["y"].to_numpy(), scores, floats("w") if weighted else None


PARALLEL_KEYS = 1 << 18
"""From this many keys (n × K) on, the one-vs-rest AUC sorts in threads."""


def _run_all(tasks: Sequence[Callable[[], float | None]], *, parallel: bool) -> list[float | None]:
    """The values of ``tasks`` in order; with ``parallel``, in a pool of threads (numpy's
    sorts and array passes release the GIL, so the micro average's sort of the n × K keys,
    the first task, runs beside the per-class ones)."""
    workers = min(len(tasks), os.cpu_count() or 1)
    if not parallel or workers < 2:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda task: task(), tasks))


def _not_probabilities(score: np.ndarray) -> bool:
    """True when a score is NaN or negative (one pass: the minimum propagates NaN)."""
    if not len(score):
        return False
    low = score.min()
    return bool(np.isnan(low) or low < 0.0)


def _sort_keys(
    score: np.ndarray, positive: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """UInt64 keys ``bits << 1 | label`` that sort as a score >= 0 (checked by the caller,
    :func:`_not_probabilities`), the negatives of a tie first: for x >= 0 the IEEE-754
    bits read as an unsigned integer are in the order of x, and the shift drops the sign
    bit (−0.0 and 0.0 alike), so a key loses nothing. Written into ``out`` when given.
    numpy because Polars cannot reinterpret float bits in place, and sorts a UInt64
    column several times slower than numpy."""
    bits = np.ascontiguousarray(score, dtype=np.float64).view(np.uint64)
    out = np.left_shift(bits, np.uint64(1), out=out)
    return np.bitwise_or(out, positive, out=out, casting="unsafe")


FLOAT_KEYS_BELOW = 1.5
"""Below this score every key of :func:`_sort_keys` (``bits << 1 | label``: below the bits
of +inf) reads as a finite float64 >= 0, and those sort in the order of their bits."""


def _float_keys(score: np.ndarray) -> bool:
    """Whether the keys of ``score`` (>= 0, no NaN) sort as float64 (:func:`_sort`)."""
    return not len(score) or bool(score.max() < FLOAT_KEYS_BELOW)


def _sort(keys: np.ndarray, floats: bool) -> np.ndarray:
    """``keys`` sorted in place and returned; with ``floats`` (:func:`_float_keys`) as
    the float64 they read as (the same order; numpy 2.4 with AVX2 sorts 1e6 of them in
    ~0.8x the time of the UInt64)."""
    (keys.view(np.float64) if floats else keys).sort()
    return keys


def _binary_auc(score: np.ndarray, positive: np.ndarray) -> float | None:
    """The ROC AUC of unweighted rows (:func:`_sorted_keys_auc`)."""
    if _not_probabilities(score):
        return NAN
    npos = int(np.count_nonzero(positive))
    keys = _sort(_sort_keys(score, positive), _float_keys(score))
    return _sorted_keys_auc(keys, npos, len(score) - npos)


def _label_bits(keys: np.ndarray) -> np.ndarray:
    """The label bits of keys as booleans, read from the lowest byte of each key (no UInt64
    copy; booleans find their positions twice as fast as bytes)."""
    low_byte = 0 if sys.byteorder == "little" else 7
    return (keys.view(np.uint8)[low_byte::8] & 1).view(np.bool_)


_CHUNK = 1 << 16


def _has_ties(keys: np.ndarray) -> bool:
    """Whether two neighbours of sorted keys share a score (differ in the label bit at
    most): chunk by chunk, so that the XOR of neighbours stays in cache (half the time of
    one pass over the whole array) and the search stops at the first tie."""
    buf = np.empty(min(_CHUNK, len(keys)), dtype=np.uint64)
    for start in range(0, len(keys) - 1, _CHUNK):
        stop = min(start + _CHUNK, len(keys) - 1)
        part = buf[: stop - start]
        np.bitwise_xor(keys[start + 1 : stop + 1], keys[start:stop], out=part)
        if (part <= 1).any():
            return True
    return False


def _sorted_keys_auc(keys: np.ndarray | None, npos: int, nneg: int) -> float | None:
    """ROC AUC (trapezoid rule, a tied pair counts ½) from the sorted keys of
    :func:`_sort_keys`: NaN for keys of NaN or negative scores (None), null (None) unless
    both classes are present.

    The Mann-Whitney count: with the negatives of a tie block first, Σ over positives of
    their position − P(P − 1)/2 counts the negatives below or tied with each positive;
    half the tied pairs, Σ over tie blocks of (positives × negatives), are taken off.
    """
    if keys is None:
        return NAN
    if npos == 0 or nneg == 0:
        return None
    bits = _label_bits(keys)
    below = float(np.flatnonzero(bits).sum()) - npos * (npos - 1) / 2.0
    if _has_ties(keys):
        blocks = keys >> np.uint64(1)
        starts = np.flatnonzero(np.concatenate(([True], blocks[1:] != blocks[:-1])))
        ends = np.append(starts[1:], len(keys))
        cum = np.concatenate(([0], np.cumsum(bits, dtype=np.int64)))
        pos_b = (cum[ends] - cum[starts]).astype(np.float64)
        below -= float((pos_b * ((ends - starts) - pos_b)).sum()) / 2.0
    return below / (float(npos) * float(nneg))


def _sides(w: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """The positive and the negative weight (no copy of either side)."""
    return float(np.where(positive, w, 0.0).sum()), float(np.where(positive, 0.0, w).sum())


def _weighted_auc(score: np.ndarray, positive: np.ndarray, w: np.ndarray) -> float | None:
    """Weighted ROC AUC (:func:`_weighted_keys_auc`): NaN if a score is NaN or negative;
    null (None) unless both classes carry weight."""
    if _not_probabilities(score):
        return NAN
    total_pos, total_neg = _sides(w, positive)
    if total_pos <= 0.0 or total_neg <= 0.0:
        return None
    return _weighted_keys_auc(_sort_keys(score, positive), w, total_pos, total_neg)


def _weighted_keys_auc(
    keys: np.ndarray, w: np.ndarray, total_pos: float, total_neg: float
) -> float:
    """Weighted ROC AUC from the keys of :func:`_sort_keys` and the weights of their rows
    (key j belongs to row j mod n, n = len(w): the n × K keys of the micro average).

    The keys arg-sorted (the negatives of a tie block first), Σ over positives of their
    weight × the negative weight up to them is Σ_b Aᵦ (negative mass below b + Bᵦ) over
    the tie blocks b (positive mass Aᵦ, negative mass Bᵦ); half the tied pairs, Σ_b AᵦBᵦ,
    are taken off; over P·N.
    """
    order = np.argsort(keys)
    keys = keys[order]
    ordered_w = w[order % len(w) if len(keys) > len(w) else order]
    bits = _label_bits(keys)
    neg_w = np.where(bits, 0.0, ordered_w)
    pos_w = ordered_w - neg_w
    area = float((pos_w * np.cumsum(neg_w)).sum())  # not np.dot: BLAS threads spin
    if _has_ties(keys):
        blocks = keys >> np.uint64(1)
        starts = np.flatnonzero(np.concatenate(([True], blocks[1:] != blocks[:-1])))
        tied = (np.add.reduceat(pos_w, starts) * np.add.reduceat(neg_w, starts)).sum()
        area -= float(tied) / 2.0
    return area / (total_pos * total_neg)


def ovo_auc(rows: pl.Series, *, k: int, weighted: bool, average: str) -> float | None:
    """Hand & Till's M over the classes present in the used rows of a group.

    Per pair of present classes (a, b), on the rows of a or b only: the mean of the AUC of
    [y = a] against the probability of a and of [y = b] against that of b (trapezoid rule,
    ties ½, row weights). ``"macro"``: the mean over the pairs; ``"weighted"``: weighted by
    the weight of the pair's rows (its prevalence). Null with fewer than two classes; NaN
    when a probability is NaN or negative.
    """
    y, scores, w = _arrays(rows, k, weighted)
    present = np.unique(y)
    values, masses = [], []
    for i, a in enumerate(present):
        for b in present[i + 1 :]:
            pair = (y == a) | (y == b)
            is_a = y[pair] == a
            halves = []
            for c, positive in ((a, is_a), (b, ~is_a)):
                score = scores[c][pair]
                if w is None:
                    halves.append(_binary_auc(score, positive))
                else:
                    halves.append(_weighted_auc(score, positive, w[pair]))
            assert halves[0] is not None and halves[1] is not None  # both classes present
            values.append((halves[0] + halves[1]) / 2.0)
            masses.append(float(w[pair].sum()) if w is not None else float(pair.sum()))
    if not values:
        return None
    if average == "macro":
        return float(np.mean(values))
    return float(np.average(values, weights=masses))
