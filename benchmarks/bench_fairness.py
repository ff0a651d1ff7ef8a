"""Fairness benchmark (SPEC §15, §11): per-group metrics and disparity against fairlearn.

Run:  python benchmarks/bench_fairness.py [--rows 1e6] [--resamples 1000] [--repeat 3]
      [--only fairness|bootstrap]

Scenarios, each timed in the same run on the same data (median seconds; each part is a
function, so more parts can join this file):

* ``fairness``: ``df.eval.fairness`` (selection rate, true and false positive rates,
  accuracy per group) and ``df.eval.disparity`` on two sensitive columns of 10 values
  each (100 intersections) against fairlearn's ``MetricFrame`` with the same four metrics
  and ``.difference()`` (target: ≥ 10×, equal values), and the plain-Polars floor (one
  ``group_by`` of the two columns summing the confusion counts);
* ``bootstrap``: ``df.eval.equalized_odds_difference(..., ci="bootstrap")``, ``--resamples``
  resamples of every row (target: under 10 s at 1e6 rows), wall and CPU seconds.

Needs the ``bench`` extra (fairlearn, scikit-learn, pandas).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

import polars_eval as pe

sys.path.insert(0, str(Path(__file__).parent))
from _harness import machine_line, median_time  # noqa: E402

METRICS = ("selection_rate", "true_positive_rate", "false_positive_rate", "accuracy")


def make_data(n: int, seed: int = 0) -> pl.DataFrame:
    """Labels, probabilities and two sensitive columns of 10 values (100 intersections)."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 10, n), rng.integers(0, 10, n)
    y = rng.integers(0, 2, n)
    p = np.clip(rng.normal(0.35 + 0.3 * y + 0.01 * a - 0.01 * b, 0.2), 0.0, 1.0)
    return pl.DataFrame({"y": y, "p": p, "a": a, "b": b})


def table(title: str, rows: list[tuple[str, float]], ours: str) -> None:
    base = dict(rows)[ours]
    print(f"\n## {title}")
    print(f"| {'tool':58s} | median s | vs ours |")
    print(f"|{'-' * 60}|----------|---------|")
    for name, t in rows:
        note = f"{t / base:6.2f}x" if name != ours else "   1.00"
        print(f"| {name:58s} | {t:8.3f} | {note} |")


def part_fairness(df: pl.DataFrame, repeat: int) -> None:
    """Per-group table and disparity against fairlearn's MetricFrame (+ .difference())."""
    from fairlearn.metrics import (
        MetricFrame,
        false_positive_rate,
        selection_rate,
        true_positive_rate,
    )
    from sklearn.metrics import accuracy_score

    fns = {
        "selection_rate": selection_rate,
        "true_positive_rate": true_positive_rate,
        "false_positive_rate": false_positive_rate,
        "accuracy": accuracy_score,
    }
    pdf = df.to_pandas()
    y_true, y_pred = pdf["y"].to_numpy(), (pdf["p"] >= 0.5).astype(int).to_numpy()
    sensitive = pdf[["a", "b"]]

    def ours() -> tuple[pl.DataFrame, pl.DataFrame]:
        return (
            df.eval.fairness("y", "p", sensitive=["a", "b"]),
            df.eval.disparity("y", "p", sensitive=["a", "b"]),
        )

    def theirs() -> tuple[object, object]:
        mf = MetricFrame(metrics=fns, y_true=y_true, y_pred=y_pred, sensitive_features=sensitive)
        return mf.by_group, mf.difference()

    def floor() -> pl.DataFrame:
        pred = (pl.col("p") >= 0.5).cast(pl.Float64)
        y = pl.col("y").cast(pl.Float64)
        return df.group_by("a", "b").agg(
            (y * pred).sum().alias("tp"),
            ((1 - y) * pred).sum().alias("fp"),
            ((1 - y) * (1 - pred)).sum().alias("tn"),
            (y * (1 - pred)).sum().alias("fn"),
        )

    groups, disparity = ours()
    by_group, difference = theirs()
    ref = by_group.reset_index().sort_values(["a", "b"])
    worst = 0.0
    for name in METRICS:
        worst = max(worst, float(np.max(np.abs(groups[name].to_numpy() - ref[name].to_numpy()))))
        worst = max(worst, abs(disparity[f"{name}_difference"].item() - difference[name]))
    print(f"max |ours − fairlearn| over the groups and differences: {worst:.2e}")
    rows = [
        ("polars_eval fairness + disparity", median_time(ours, repeat)),
        ("fairlearn MetricFrame(4 metrics).by_group + .difference()", median_time(theirs, repeat)),
        ("plain Polars floor: group_by(a, b) confusion sums", median_time(floor, repeat)),
    ]
    table(f"Fairness, {df.height:.0e} rows, 100 groups", rows, rows[0][0])


def part_bootstrap(df: pl.DataFrame, resamples: int, repeat: int) -> None:
    """Equalized odds difference with a bootstrap interval: wall and CPU seconds."""

    def ours() -> object:
        return df.eval.equalized_odds_difference(
            "y", "p", sensitive=["a", "b"], ci="bootstrap", n_resamples=resamples
        )

    cpu0, wall0 = time.process_time(), time.perf_counter()
    interval = ours()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    med = median_time(ours, repeat - 1) if repeat > 1 else wall
    print(f"\n## Equalized odds bootstrap, {df.height:.0e} rows, {resamples} resamples")
    print(f"{interval}")
    print(
        f"median wall {med:.2f} s; first run wall {wall:.2f} s, CPU {cpu:.2f} s; "
        f"load {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("fairness", "bootstrap"))
    args = parser.parse_args()
    print(machine_line(), f"polars_eval from {Path(pe.__file__).parent}")
    df = make_data(int(args.rows))
    if args.only in (None, "fairness"):
        part_fairness(df, args.repeat)
    if args.only in (None, "bootstrap"):
        part_bootstrap(df, args.resamples, args.repeat)


if __name__ == "__main__":
    main()
