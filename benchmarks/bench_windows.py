"""Metrics over time windows (SPEC §13): trailing windows merged from per-day states.

Data: ``--rows`` rows (1e7) over 365 days, 20 segments, scores at 4 decimals; windows
``every="1d"``, ``period="30d"`` per segment. Every ratio is measured in one command on
the same data (medians of ``--repeat`` runs):

1. sum-state metrics (log loss, Brier score, accuracy, F1) over 30-day windows against one
   plain ``group_by(segment, day)`` pass of the same sums (target <= 2x);
2. exact AUC over 30-day windows against ``group_by_dynamic(...).agg(pe.auc(...))`` (no
   slower), and binned (``bins=1000``) against the same (>= 5x faster);
3. a Python loop of scikit-learn's ``roc_auc_score`` over the windows (the ratio);
4. appending one day and 30 days to a ``pe.Evaluation`` state of 365 days (proportional
   to the rows added, not to the history).

    python benchmarks/bench_windows.py --rows 2e6 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_line, median_time  # noqa: E402

import polars_eval as pe  # noqa: E402

SUMS = ["logloss", "brier", "accuracy", "f1"]
DYNAMIC = {"every": "1d", "period": "30d", "closed": "left", "label": "left", "start_by": "window"}


def data(rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, rows)
    p = np.clip(rng.random(rows) * 0.7 + 0.3 * y * rng.random(rows), 0.0, 1.0).round(4)
    seconds = rng.integers(0, 365 * 86400, rows)
    start = np.datetime64("2024-01-01T00:00:00", "us")
    return pl.DataFrame(
        {
            "ts": start + seconds.astype("timedelta64[s]").astype("timedelta64[us]"),
            "segment": rng.integers(0, 20, rows).astype(np.int32),
            "y": y.astype(np.int8),
            "p": p,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--sklearn-windows", type=int, default=300, help="windows timed in the loop"
    )
    parser.add_argument("--only", choices=["sums", "auc", "sklearn", "append"], action="append")
    args = parser.parse_args()
    rows = int(args.rows)
    df = data(rows)
    print(f"# {machine_line()}; {rows:,} rows, 365 days, 20 segments, every=1d, period=30d")
    window = {"time": "ts", "every": "1d", "period": "30d", "by": "segment"}

    only = set(args.only or ["sums", "auc", "sklearn", "append"])

    # 1. sum states over trailing windows against one plain group_by(day) pass
    def ours_sums() -> object:
        return df.eval.binary("y", "p", metrics=SUMS, validate=False, **window)

    p = pl.col("p").clip(1e-15, 1 - 1e-15)
    y = pl.col("y").cast(pl.Float64)
    hit = (pl.col("p") >= 0.5).cast(pl.Float64)

    def plain_day() -> object:
        return df.group_by("segment", pl.col("ts").dt.truncate("1d")).agg(
            pl.len(),
            (-(y * p.log() + (1 - y) * (1 - p).log())).sum(),
            ((pl.col("p") - y) ** 2).sum(),
            (hit * y).sum().alias("tp"),
            (hit * (1 - y)).sum().alias("fp"),
            ((1 - hit) * y).sum().alias("fn"),
        )

    if "sums" in only:
        t_sums, t_day = median_time(ours_sums, args.repeat), median_time(plain_day, args.repeat)
        print(
            f"sum states, 30d windows: ours {t_sums:.2f}s, plain group_by(day) {t_day:.2f}s, ratio {t_sums / t_day:.2f}x (target <= 2x)"
        )

    # 2. exact AUC over windows against group_by_dynamic(...).agg(pe.auc)
    def ours_auc() -> object:
        return df.eval.auc("y", "p", validate=False, **window)

    def ours_binned() -> object:
        return df.eval.binary("y", "p", metrics=["auc"], bins=1000, validate=False, **window)

    sorted_df = df.sort("segment", "ts")

    def peer_auc() -> object:
        return sorted_df.group_by_dynamic("ts", group_by="segment", **DYNAMIC).agg(pe.auc("y", "p"))

    if "auc" in only:
        check = ours_auc().join(peer_auc(), on=["segment", "ts"])
        assert (check["auc"] - check["auc_right"]).abs().max() < 1e-12
        t_auc, t_binned, t_peer = (
            median_time(f, args.repeat) for f in (ours_auc, ours_binned, peer_auc)
        )
        print(
            f"exact AUC, 30d windows: ours {t_auc:.2f}s, group_by_dynamic+pe.auc {t_peer:.2f}s (sorted input, sort not timed), "
            f"ratio {t_peer / t_auc:.2f}x faster (target >= 1x); binned bins=1000 {t_binned:.2f}s, {t_peer / t_binned:.2f}x faster (target >= 5x)"
        )

    # 3. a Python loop of scikit-learn over (a sample of) the windows
    if "sklearn" in only:
        from sklearn.metrics import roc_auc_score

        windows = ours_auc()
        ts = sorted_df["ts"].to_numpy()
        seg = sorted_df["segment"].to_numpy()
        yy, pp = sorted_df["y"].to_numpy(), sorted_df["p"].to_numpy()
        bounds = {
            s: (int(np.searchsorted(seg, s, "left")), int(np.searchsorted(seg, s, "right")))
            for s in range(20)
        }
        sample = windows.sample(min(args.sklearn_windows, windows.height), seed=1)
        start = time.perf_counter()
        for s, lo_t, hi_t in sample.select("segment", "ts", "window_end").iter_rows():
            a, b = bounds[s]
            lo = a + int(np.searchsorted(ts[a:b], np.datetime64(lo_t, "us")))
            hi = a + int(np.searchsorted(ts[a:b], np.datetime64(hi_t, "us")))
            roc_auc_score(yy[lo:hi], pp[lo:hi])
        loop = (time.perf_counter() - start) / sample.height * windows.height
        print(
            f"scikit-learn loop over the {windows.height} windows (extrapolated from {sample.height}): {loop:.1f}s, {loop / t_auc:.1f}x ours"
        )

    # 4. appending one day and 30 days to a 365-day state
    if "append" in only:
        day = pl.col("ts").dt.date()
        last = dt.date(2024, 12, 30)
        history = df.filter(day < last - dt.timedelta(days=29))
        one, thirty = df.filter(day == last), df.filter(day >= last - dt.timedelta(days=29))
        ev = pe.Evaluation(
            "binary", label="y", score="p", metrics=SUMS, by="segment", time="ts", every="1d"
        )
        ev.update(history)
        state = ev.state

        def append(part: pl.DataFrame) -> float:
            fresh = pe.Evaluation.from_state(state)
            start = time.perf_counter()
            fresh.update(part)
            return time.perf_counter() - start

        t_one = float(np.median([append(one) for _ in range(args.repeat)]))
        t_thirty = float(np.median([append(thirty) for _ in range(args.repeat)]))
        print(
            f"append to a {state.height - 1}-row state ({history.height:,} rows seen): one day ({one.height:,} rows) {t_one * 1e3:.0f} ms, "
            f"30 days ({thirty.height:,} rows) {t_thirty * 1e3:.0f} ms, ratio {t_thirty / t_one:.1f}x for {thirty.height / one.height:.0f}x the rows"
        )


if __name__ == "__main__":
    main()
