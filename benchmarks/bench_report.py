"""Report benchmark (issue 6, SPEC §9/§11): the HTML report must not dominate.

Scenario of the issue: a parquet file of ``--rows`` rows with 100 segments. Timed, each
the median of ``--repeat`` runs, in one process on the same data:

* metrics alone: ``pl.scan_parquet(f).eval.binary(label, score, by=seg)`` collected
  (what ``polars-eval binary --by seg`` computes);
* report: read the three columns, ``df.eval.report(...)`` (every table), its charts and
  ``.html()`` (SVG rendering included);
* peer: the same curves and per-segment AUC with scikit-learn (``roc_curve``,
  ``precision_recall_curve``, ``calibration_curve``, ``roc_auc_score`` per segment), the
  computation a user would otherwise do before plotting; no plotting timed;
* floor: one sort of the score column.

Target: (metrics + report) / metrics < 3.

Run:  python benchmarks/bench_report.py [--rows 1e6] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl

import polars_eval as pe  # noqa: F401  (registers the .eval namespace)

sys.path.insert(0, str(Path(__file__).parent))
from _harness import median_time  # noqa: E402


def make_data(n: int, segments: int = 100, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0.0, 1.0)
    return pl.DataFrame({"y": y, "score": score, "seg": rng.integers(0, segments, n)})


def sklearn_curves(df: pl.DataFrame) -> None:
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import precision_recall_curve, roc_auc_score, roc_curve

    y, s = df["y"].to_numpy(), df["score"].to_numpy()
    roc_curve(y, s, drop_intermediate=False)
    precision_recall_curve(y, s)
    calibration_curve(y, s, n_bins=10)
    for _, part in df.group_by("seg"):
        roc_auc_score(part["y"].to_numpy(), part["score"].to_numpy())


def run(n: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.parquet"
        make_data(n).write_parquet(path)

        def metrics() -> object:
            return pl.scan_parquet(path).eval.binary("y", "score", by="seg").collect()

        parts: dict[str, float] = {}

        def report() -> object:
            t0 = time.perf_counter()
            df = pl.read_parquet(path, columns=["y", "score", "seg"])
            t1 = time.perf_counter()
            rep = df.eval.report("binary", label="y", score="score", by="seg")
            t2 = time.perf_counter()
            _ = rep.charts
            t3 = time.perf_counter()
            rep.html()
            t4 = time.perf_counter()
            for key, value in (
                ("read", t1 - t0),
                ("tables", t2 - t1),
                ("charts", t3 - t2),
                ("html", t4 - t3),
            ):
                parts.setdefault(key, 0.0)
                parts[key] = value
            return rep

        report()  # warm-up: imports altair, starts the vl-convert engine
        t_metrics = median_time(metrics, repeat)
        t_report = median_time(report, repeat)
        df = pl.read_parquet(path)
        t_peer = median_time(lambda: sklearn_curves(df), repeat)
        t_floor = median_time(lambda: df.get_column("score").sort(), repeat)
    print(f"\n## binary report, {n:,} rows, 100 segments (median of {repeat})")
    print("| step | median s |")
    print("|---|---|")
    print(f"| metrics alone (scan_parquet + eval.binary by seg) | {t_metrics:.3f} |")
    print(f"| report, total | {t_report:.3f} |")
    for key, value in parts.items():
        print(f"|   report: {key} (last run) | {value:.3f} |")
    print(f"| peer: scikit-learn curves + per-segment AUC | {t_peer:.3f} |")
    print(f"| floor: one sort of the score | {t_floor:.3f} |")
    print(f"(metrics + report) / metrics = {(t_metrics + t_report) / t_metrics:.2f} (target < 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for rows in args.rows:
        run(int(rows), args.repeat)


if __name__ == "__main__":
    main()
