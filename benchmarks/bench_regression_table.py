"""Benchmark: ``df.eval.regression`` (the default table, 19 metrics) against scikit-learn +
scipy computing the same metrics (issue 26), and each metric of the table alone.

Ours: ``df.eval.regression(actual, pred)`` (validated), on a DataFrame of ``--rows`` rows
(about 1% nulls in the prediction). Peer: the same 19 values from scikit-learn
(``mean_squared_error``, ``root_mean_squared_error``, ``mean_absolute_error``,
``median_absolute_error``, ``max_error``, ``r2_score``, ``explained_variance_score``,
``mean_squared_log_error``, ``root_mean_squared_log_error``,
``mean_absolute_percentage_error``), scipy (``pearsonr``, ``spearmanr``, ``kendalltau``)
and numpy (bias, RMSPE, SMAPE, MER, WAPE) on numpy arrays of the complete rows (the null
filter and the conversion to numpy timed with the peer: a user starting from the frame
does both). Rounds interleaved; medians; the ratio is peer / ours.

Usage: ``python benchmarks/bench_regression_table.py --rows 1e6 --repeat 3``
(``--parts`` also times the table with each metric alone, ``metrics=[name]``, the two
rank correlations together, and the 17 others together).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_line  # noqa: E402

import polars_eval  # noqa: E402, F401


def make_frame(rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 3.0, rows) + 0.1
    p = np.abs(y + rng.normal(0.0, 2.0, rows)) + 0.1
    frame = pl.DataFrame({"y": y, "p": p})
    null = pl.int_range(pl.len()) % 97 == 3
    return frame.with_columns(pl.when(null).then(None).otherwise(pl.col("p")).alias("p"))


def peer(df: pl.DataFrame) -> dict[str, float]:
    """The 19 metrics of the default table from scikit-learn, scipy and numpy."""
    from scipy import stats
    from sklearn import metrics as m

    y, p = df.drop_nulls(["y", "p"]).select("y", "p").to_numpy().T
    err = np.abs(y - p)
    nonzero = y != 0
    rel = err[nonzero] / np.abs(y[nonzero])
    return {
        "mse": m.mean_squared_error(y, p),
        "rmse": m.root_mean_squared_error(y, p),
        "mae": m.mean_absolute_error(y, p),
        "medae": m.median_absolute_error(y, p),
        "max_error": m.max_error(y, p),
        "bias": float(np.mean(p - y)),
        "r2": m.r2_score(y, p),
        "r2_pearson": stats.pearsonr(y, p)[0] ** 2,
        "pearson": stats.pearsonr(y, p)[0],
        "spearman": stats.spearmanr(y, p)[0],
        "kendall_tau": stats.kendalltau(y, p)[0],
        "explained_variance": m.explained_variance_score(y, p),
        "rmsle": m.root_mean_squared_log_error(y, p),
        "msle": m.mean_squared_log_error(y, p),
        "rmspe": float(np.sqrt(np.mean(rel * rel))),
        "mape": m.mean_absolute_percentage_error(y[nonzero], p[nonzero]),
        "smape": float(np.mean(2.0 * err / (np.abs(y) + np.abs(p)))),
        "mer": float(np.median(rel)),
        "wape": float(err.sum() / np.abs(y).sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parts", action="store_true")
    args = parser.parse_args()
    df = make_frame(int(args.rows))
    ours = df.eval.regression("y", "p")
    want = peer(df)
    for name, value in want.items():  # the same numbers (not timed)
        got = ours.get_column(name).item()
        assert abs(got - value) <= 1e-6 * max(1.0, abs(value)), (name, got, value)
    cases: dict[str, Any] = {
        "df.eval.regression": lambda: df.eval.regression("y", "p"),
        "scikit-learn + scipy": lambda: peer(df),
        "sort of a float column": lambda: df.select(pl.col("p").sort()),
    }
    if args.parts:
        for name in want:
            cases[name] = lambda name=name: df.eval.regression("y", "p", metrics=[name])
        # the two rank correlations together: one shared numpy call (shared_ranks)
        ranks = ["spearman", "kendall_tau"]
        cases["spearman + kendall_tau"] = lambda: df.eval.regression("y", "p", metrics=ranks)
        others = [name for name in want if name not in ranks]
        cases["the 17 others"] = lambda: df.eval.regression("y", "p", metrics=others)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, fn in cases.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    print(machine_line())
    print(f"df.eval.regression (19 metrics), {int(args.rows):,} rows, median of {args.repeat}")
    base = med["df.eval.regression"]
    for name, t in med.items():
        print(f"{name:28s} {t:8.4f} s   {t / base:6.2f}x ours")


if __name__ == "__main__":
    main()
