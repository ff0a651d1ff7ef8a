"""Benchmark: the one-pass metrics against the plain Polars expression a user would write
(issue 26), in ``select`` and in ``group_by`` over 1,000 segments.

Each plain expression leaves out the rows with a null in either input, as ours does
(nulls propagate through the arithmetic, and Polars' ``mean``/``sum`` skip them); it does
not check for NaN (ours returns NaN when a used score is NaN). Binary: ``label`` 0/1
Int64, ``score`` in [0, 1] (1% nulls), threshold 0.5; regression: Float64 ``y``, ``p``.
Each round times the plain expression and ours back to back; the ratio is the median
over rounds of ours / plain. Target: <= 1.3.

Usage: ``python benchmarks/bench_one_pass.py --rows 1e7 --repeat 5``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_line  # noqa: E402

import polars_eval as pe  # noqa: E402

EPS = float(np.finfo(np.float64).eps)


def make_frame(rows: int, segments: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    s = rng.random(rows)
    y = rng.gamma(2.0, 3.0, rows)
    frame = pl.DataFrame(
        {
            "label": (rng.random(rows) < s).astype(np.int64),
            "s": s,
            "y": y,
            "p": y + rng.normal(0.0, 2.0, rows),
            "g": rng.integers(0, segments, rows),
        }
    )
    null = pl.int_range(pl.len()) % 97 == 3
    return frame.with_columns(pl.when(null).then(None).otherwise(pl.col(c)).alias(c) for c in "sp")


def pairs() -> dict[str, tuple[pl.Expr, pl.Expr]]:
    """metric -> (ours, the plain expression)."""
    y, s, a, p = pl.col("label"), pl.col("s"), pl.col("y"), pl.col("p")
    yhat = s >= 0.5
    pc = s.clip(EPS, 1.0 - EPS)
    return {
        "accuracy": (pe.accuracy("label", "s"), (y == yhat).mean()),
        "precision": (pe.precision("label", "s"), pl.when(yhat).then(y).mean()),
        "recall": (pe.recall("label", "s"), pl.when(y == 1).then(yhat).mean()),
        "f1": (pe.f1("label", "s"), 2.0 * (y * yhat).sum() / (y + yhat).sum()),
        "logloss": (pe.logloss("label", "s"), -(y * pc.log() + (1 - y) * (1.0 - pc).log()).mean()),
        "brier": (pe.brier("label", "s"), ((s - y) ** 2).mean()),
        "mae": (pe.mae("y", "p"), (a - p).abs().mean()),
        "mse": (pe.mse("y", "p"), ((a - p) ** 2).mean()),
        "rmse": (pe.rmse("y", "p"), ((a - p) ** 2).mean().sqrt()),
        "bias": (pe.bias("y", "p"), (p - a).mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    df = make_frame(int(args.rows), args.segments)
    cases = pairs()
    for name, (ours, plain) in cases.items():  # the same values (not timed)
        a, b = df.select(ours.alias("v")).item(), df.select(plain.alias("v")).item()
        assert abs(a - b) <= 1e-9 * max(1.0, abs(b)), (name, a, b)
    ratios: dict[str, dict[str, list[float]]] = {n: {"select": [], "group_by": []} for n in cases}
    plain_s: dict[str, list[float]] = {n: [] for n in cases}
    for _ in range(args.repeat):
        for name, (ours, plain) in cases.items():
            for context, run in (
                ("select", lambda e: df.select(e)),
                ("group_by", lambda e: df.group_by("g").agg(e)),
            ):
                t0 = time.perf_counter()
                run(plain)
                t1 = time.perf_counter()
                run(ours)
                t2 = time.perf_counter()
                ratios[name][context].append((t2 - t1) / (t1 - t0))
                if context == "select":
                    plain_s[name].append(t1 - t0)
    print(machine_line())
    print(f"{int(args.rows):,} rows, {args.segments:,} segments, median of {args.repeat}")
    print(f"{'metric':12s} {'ours/plain select':>18s} {'ours/plain group_by':>20s} {'plain s':>9s}")
    for name, r in ratios.items():
        sel, grp = statistics.median(r["select"]), statistics.median(r["group_by"])
        print(f"{name:12s} {sel:18.2f} {grp:20.2f} {statistics.median(plain_s[name]):9.4f}")


if __name__ == "__main__":
    main()
