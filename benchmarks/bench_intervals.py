"""Intervals benchmark (issue 5, SPEC §8, §11): bootstrap of AUC, DeLong, closed forms.

Run:  python benchmarks/bench_intervals.py [--rows 1e6] [--resamples 1000] [--repeat 3]

Scenarios, each timed in the same run on the same data (median seconds):

* bootstrap of ROC AUC, ``n_resamples`` resamples: ``df.eval.bootstrap(pe.auc(...))`` vs the
  loop a user writes — scikit-learn ``roc_auc_score`` over resampled indices, timed on
  ``--loop`` resamples and scaled to ``n_resamples`` — and the plain-Polars floor (one
  sort of the score column per resample, i.e. a sort timed once × n_resamples);
* DeLong's test on two scores vs one ``df.eval.auc`` (target: < 3×) and a numpy
  Sun & Xu implementation (midranks with ``scipy.stats.rankdata``, the usual "fast DeLong");
* the closed-form intervals (Hanley–McNeil, Wilson) vs the bare metric;
* the bootstrap of other metrics (``--others``: the sum-state and curve kernels), each
  timed once, wall and CPU seconds.

Prints one table per scenario: median seconds and the ratio to our time (> 1: we are faster);
the bootstrap scenario also prints CPU seconds and the load average.
Needs the ``bench`` extra (scikit-learn).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

import polars_eval as pe

sys.path.insert(0, str(Path(__file__).parent))
from _harness import machine_line, median_time  # noqa: E402


def make_data(n: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "y": y,
            "p1": np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0.0, 1.0),
            "p2": np.clip(rng.normal(0.4 + 0.15 * y, 0.2), 0.0, 1.0),
        }
    )


def table(title: str, rows: list[tuple[str, float]], ours: str) -> None:
    base = dict(rows)[ours]
    print(f"\n## {title}")
    print(f"| {'tool':52s} | median s | vs ours |")
    print(f"|{'-' * 54}|----------|---------|")
    for name, t in rows:
        note = f"{t / base:6.2f}x" if name != ours else "   1.00"
        print(f"| {name:52s} | {t:8.3f} | {note} |")


def sklearn_bootstrap_loop(y: np.ndarray, s: np.ndarray, n_resamples: int) -> list[float]:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    out = []
    for _ in range(n_resamples):
        idx = rng.integers(0, len(y), len(y))
        out.append(roc_auc_score(y[idx], s[idx]))
    return out


def numpy_fast_delong(y: np.ndarray, s1: np.ndarray, s2: np.ndarray) -> tuple[float, float]:
    """Sun & Xu (2014) with numpy/scipy midranks: the peer a Python user copies."""
    from scipy import stats

    pos, neg = y == 1, y == 0
    m, n = pos.sum(), neg.sum()
    v10, v01 = [], []
    for s in (s1, s2):
        tz = stats.rankdata(s)
        tx = stats.rankdata(s[pos])
        ty = stats.rankdata(s[neg])
        v10.append((tz[pos] - tx) / n)
        v01.append(1.0 - (tz[neg] - ty) / m)
    s10, s01 = np.cov(np.vstack(v10)), np.cov(np.vstack(v01))
    var = (s10[0, 0] + s10[1, 1] - 2 * s10[0, 1]) / m + (s01[0, 0] + s01[1, 1] - 2 * s01[0, 1]) / n
    diff = v10[0].mean() - v10[1].mean()
    z = diff / np.sqrt(var)
    return diff, 2 * stats.norm.sf(abs(z))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--loop", type=int, default=50, help="sklearn loop resamples (scaled)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--others",
        default="logloss,brier,accuracy,average_precision,ks",
        help="other metrics to bootstrap, timed once each (empty: none)",
    )
    args = parser.parse_args()
    n = int(args.rows)
    R = args.resamples
    print(
        f"# bench_intervals: {n:,} rows, {R} resamples; polars {pl.__version__}, "
        f"python {platform.python_version()}, {platform.machine()}"
    )
    print(f"# {machine_line()}; load average {os.getloadavg()[0]:.1f} at start")
    df = make_data(n)
    y, s1, s2 = (df[c].to_numpy() for c in ("y", "p1", "p2"))

    # -- bootstrap of AUC -------------------------------------------------------------
    # CPU seconds beside the wall medians: on a shared machine they move less with the load
    cpu = time.process_time()
    ours = median_time(lambda: df.eval.bootstrap(pe.auc("y", "p1"), n_resamples=R), args.repeat)
    ours_cpu = (time.process_time() - cpu) / args.repeat
    import sklearn.metrics  # noqa: F401 - imported before the loop is timed

    start, cpu = time.perf_counter(), time.process_time()
    sklearn_bootstrap_loop(y, s1, args.loop)
    loop = (time.perf_counter() - start) * R / args.loop
    loop_cpu = (time.process_time() - cpu) * R / args.loop
    sort_once = median_time(lambda: df.select(pl.col("p1").sort()), args.repeat)
    table(
        f"bootstrap of ROC AUC, {R} resamples",
        [
            ("polars_eval df.eval.bootstrap(pe.auc)", ours),
            (f"scikit-learn roc_auc_score loop ({args.loop} timed, scaled)", loop),
            ("plain Polars floor: one sort per resample (scaled)", sort_once * R),
        ],
        "polars_eval df.eval.bootstrap(pe.auc)",
    )
    print(
        f"CPU s (every thread): ours {ours_cpu:.2f} (mean of {args.repeat}), scikit-learn "
        f"loop {loop_cpu:.1f} (scaled): {loop_cpu / ours_cpu:.1f}x; "
        f"load average {os.getloadavg()[0]:.1f} after the bootstrap scenario"
    )

    # -- DeLong -------------------------------------------------------------------------
    ours = median_time(lambda: df.eval.delong("y", "p1", "p2"), args.repeat)
    one_auc = median_time(lambda: df.eval.auc("y", "p1"), args.repeat)
    peer = median_time(lambda: numpy_fast_delong(y, s1, s2), args.repeat)
    table(
        "DeLong test of two correlated AUCs",
        [
            ("polars_eval df.eval.delong", ours),
            ("polars_eval df.eval.auc (one AUC; target delong < 3x)", one_auc),
            ("numpy/scipy fast DeLong (Sun & Xu)", peer),
        ],
        "polars_eval df.eval.delong",
    )
    print(f"delong / one auc = {ours / one_auc:.2f}")

    # -- bootstrap of other metrics -----------------------------------------------------
    others = [m for m in args.others.split(",") if m]
    if others:
        print(f"\n## bootstrap of other metrics, {R} resamples (each timed once)")
        print(f"| {'metric':20s} | wall s | CPU s | load |")
        print(f"|{'-' * 22}|--------|-------|------|")
    for name in others:
        expr = getattr(pe, name)("y", "p1")
        start, cpu = time.perf_counter(), time.process_time()
        df.eval.bootstrap(expr, n_resamples=R)
        wall, used = time.perf_counter() - start, time.process_time() - cpu
        print(f"| {name:20s} | {wall:6.2f} | {used:5.2f} | {os.getloadavg()[0]:4.1f} |")

    # -- closed forms -------------------------------------------------------------------
    hm = median_time(lambda: df.select(pe.hanley_mcneil("y", "p1")), args.repeat)
    wl = median_time(lambda: df.select(pe.proportion_ci("recall", "y", "p1")), args.repeat)
    bare = median_time(lambda: df.select(pe.recall("y", "p1")), args.repeat)
    table(
        "closed-form intervals",
        [
            ("pe.hanley_mcneil (AUC + interval)", hm),
            ("pe.auc (bare metric)", one_auc),
            ("pe.proportion_ci('recall') (Wilson)", wl),
            ("pe.recall (bare metric)", bare),
        ],
        "pe.hanley_mcneil (AUC + interval)",
    )


if __name__ == "__main__":
    main()
