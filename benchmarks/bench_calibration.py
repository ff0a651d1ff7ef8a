"""Benchmark: calibration per segment (SPEC §15, issue 24 item 5).

Ours: ``group_by(segment).agg(pe.calibration_error(label, score))`` (15 uniform bins,
l1), weighted and not; the namespace method ``df.eval.calibration_error(..., by=segment)``
(validated: labels in {0, 1}, scores in [0, 1], no NaN); optionally the quantile bins
and the recalibration slope.
Floor: one plain ``group_by(segment, bin)`` pass of Polars (count, positives, score sum
per bin: the per-bin state itself, the bin computed with one arithmetic expression), and
that pass followed by the second ``group_by(segment)`` that turns it into the ECE.
Peer (``--peer``): scikit-learn's ``calibration_curve`` per segment in a Python loop over
numpy arrays split once by segment (the split is timed).

Run: ``python benchmarks/bench_calibration.py --rows 1e7 --segments 1000``. Prints medians
(repetitions interleaved round-robin) and the ratios to the floor.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_line  # noqa: E402
from bench_multiclass import timeit_interleaved  # noqa: E402

import polars_eval as pe  # noqa: E402

BINS = 15


def make_data(n: int, segments: int, seed: int = 0) -> pl.DataFrame:
    """Continuous scores, labels drawn from a miscalibrated version of them, weights."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 3.0, n)
    y = (rng.random(n) < np.clip(0.05 + 0.9 * p**1.3, 0.0, 1.0)).astype(np.int8)
    return pl.DataFrame(
        {
            "segment": rng.integers(0, segments, n).astype(np.int32),
            "y": y,
            "p": p,
            "w": rng.integers(1, 4, n).astype(np.float64),
        }
    )


def floor_pass(df: pl.DataFrame, weighted: bool) -> pl.DataFrame:
    """The plain Polars pass: one group_by(segment, bin) of the bin's sums."""
    b = ((pl.col("p") * BINS).ceil() - 1).clip(0, BINS - 1).cast(pl.Int32).alias("bin")
    y, p = pl.col("y").cast(pl.Float64), pl.col("p")
    if not weighted:
        return df.group_by("segment", b).agg(
            pl.len().cast(pl.Float64).alias("n"), y.sum().alias("pos"), p.sum().alias("sp")
        )
    w = pl.col("w")
    return df.group_by("segment", b).agg(
        w.sum().alias("n"), (w * y).sum().alias("pos"), (w * p).sum().alias("sp")
    )


def floor_ece(df: pl.DataFrame, weighted: bool) -> pl.DataFrame:
    """The floor pass and the group_by(segment) that makes it an ECE."""
    per_bin = floor_pass(df, weighted)
    gap = (pl.col("pos") - pl.col("sp")).abs()
    return per_bin.group_by("segment").agg((gap.sum() / pl.col("n").sum()).alias("ece"))


def sklearn_loop(y: np.ndarray, p: np.ndarray, seg: np.ndarray) -> list[float]:
    """ECE per segment from scikit-learn's calibration_curve (its bins, its counts)."""
    from sklearn.calibration import calibration_curve

    order = np.argsort(seg, kind="stable")
    bounds = np.flatnonzero(np.diff(seg[order])) + 1
    out = []
    edges = np.linspace(0.0, 1.0, BINS + 1)[1:-1]
    for idx in np.split(order, bounds):
        prob_true, prob_pred = calibration_curve(y[idx], p[idx], n_bins=BINS)
        counts = np.bincount(np.searchsorted(edges, p[idx]), minlength=BINS)
        counts = counts[counts > 0]
        out.append(float((counts * np.abs(prob_true - prob_pred)).sum() / counts.sum()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peer", action="store_true", help="time scikit-learn's loop too")
    parser.add_argument("--extra", action="store_true", help="quantile bins and the slope")
    args = parser.parse_args()
    n = int(args.rows)
    df = make_data(n, args.segments)
    print(machine_line())
    print(f"{n:,} rows, {args.segments:,} segments, {BINS} bins, median of {args.repeat}")

    ece = pe.calibration_error("y", "p", bins=BINS)
    ece_w = pe.calibration_error("y", "p", bins=BINS, weight="w")
    fns: dict[str, Callable[[], Any]] = {
        "floor: group_by(segment, bin)": lambda: floor_pass(df, False),
        "floor + group_by(segment) -> ECE": lambda: floor_ece(df, False),
        "ours: group_by(segment).agg(pe.calibration_error)": lambda: df.group_by("segment").agg(
            ece
        ),
        "ours: df.eval.calibration_error(by=) validated": lambda: df.eval.calibration_error(
            "y", "p", bins=BINS, by="segment"
        ),
        "ours: df.eval.calibration_error(by=) validate=False": lambda: df.eval.calibration_error(
            "y", "p", bins=BINS, by="segment", validate=False
        ),
        "floor, weighted": lambda: floor_pass(df, True),
        "ours, weighted": lambda: df.group_by("segment").agg(ece_w),
    }
    if args.extra:
        quantile = pe.calibration_error("y", "p", bins=BINS, strategy="quantile")
        fns["ours: quantile bins"] = lambda: df.group_by("segment").agg(quantile)
        fns["ours: calibration_slope"] = lambda: df.group_by("segment").agg(
            pe.calibration_slope("y", "p")
        )
        fns["ours: df.eval.calibration_slope(by=)"] = lambda: df.eval.calibration_slope(
            "y", "p", by="segment"
        )
    if args.peer:
        y, p, seg = (df[c].to_numpy() for c in ("y", "p", "segment"))
        fns["peer: scikit-learn calibration_curve loop"] = lambda: sklearn_loop(y, p, seg)

    # the values agree before anything is timed
    ours_values = df.group_by("segment").agg(ece).sort("segment")["calibration_error"]
    floor_values = floor_ece(df, False).sort("segment")["ece"]
    np.testing.assert_allclose(ours_values, floor_values, rtol=1e-9)

    times = timeit_interleaved(fns, args.repeat)
    floors = {False: times["floor: group_by(segment, bin)"], True: times["floor, weighted"]}
    width = max(len(k) for k in times)
    for name, seconds in times.items():
        base = floors["weighted" in name]
        print(f"{name:<{width}}  {seconds:8.3f} s  {seconds / base:5.2f}x the floor")


if __name__ == "__main__":
    main()
