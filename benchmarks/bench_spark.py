"""Spark benchmark: ``pe.spark.evaluate`` against what a Spark user does today (issue 12).

On one local Spark cluster (``local[N]``), on the same parquet data in the same run:

1. exact per-segment AUC, logloss and KS: ``pe.spark.evaluate(..., by="seg")`` against
   ``groupBy("seg").applyInPandas`` with scikit-learn's ``roc_auc_score`` and
   ``log_loss`` and a KS by hand (the largest TPR − FPR over ``roc_curve``'s thresholds);
2. global AUC: ``pe.spark.evaluate`` (exact, and binned with 1,000 bins) against Spark
   ML's ``BinaryClassificationEvaluator`` (``numBins=0``: exact; default 1,000: its
   down-sampled curve).

Run:  python benchmarks/bench_spark.py [--rows 1e7] [--segments 1000] [--repeat 3]
      [--decimals 4] [--cores 2] [--only segments|global|profile]
      [--package /path/to/checkout]
(the driver and the executors import this checkout's ``polars_eval``, or the one of
``--package``: another checkout, such as main's, measured by the same script).

Prints the machine line, median wall seconds and the median CPU seconds of the whole
process tree (driver, JVM, Python workers: a measure that the load of a shared machine
bends less than wall time), ratios (peer / ours: > 1 means we are faster) and the
largest difference between the results. The tools of each comparison run in turn, run
after run (interleaved), so that a change of load touches them alike. Needs the
``spark`` and ``bench`` extras and a Java runtime.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

pe: Any = None  # polars_eval, imported by main() from the checkout measured


def tree_cpu() -> float:
    """CPU seconds used so far by this process and its descendants (the JVM, Spark's Python
    workers), the children already waited for included (Linux ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    used: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        used[int(entry)] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0)
        todo += children.get(pid, [])
    return total / tick


def java_version() -> str:
    """The Java runtime's version (``java -version``'s first line, quoted part)."""
    import subprocess

    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    except OSError:
        return "?"
    first = (out.stderr or out.stdout).splitlines()[:1]
    return first[0].split('"')[1] if first and '"' in first[0] else "?"


def interleaved(
    tools: dict[str, Callable[[], object]], repeat: dict[str, int]
) -> dict[str, tuple[float, float, object]]:
    """Each tool's median wall and CPU seconds and its last result, the tools run in turn."""
    wall: dict[str, list[float]] = {name: [] for name in tools}
    cpu: dict[str, list[float]] = {name: [] for name in tools}
    out: dict[str, object] = {}
    for i in range(max(repeat.values())):
        for name, fn in tools.items():
            if i >= repeat[name]:
                continue
            c, start = tree_cpu(), time.perf_counter()
            out[name] = fn()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(tree_cpu() - c)
    return {
        name: (statistics.median(wall[name]), statistics.median(cpu[name]), out[name])
        for name in tools
    }


def write_data(
    path: Path, n: int, segments: int, files: int, decimals: int | None = None, seed: int = 0
) -> None:
    """``n`` rows in ``files`` parquet files: segment, 0/1 label, probability (continuous,
    or rounded to ``decimals``)."""
    rng = np.random.default_rng(seed)
    path.mkdir(parents=True, exist_ok=True)
    per = -(-n // files)
    for i in range(files):
        m = min(per, n - i * per)
        y = rng.integers(0, 2, m)
        p = 1.0 / (1.0 + np.exp(-rng.normal(-0.5 + 1.0 * y, 1.0)))  # continuous, in (0, 1)
        if decimals is not None:
            p = np.round(p, decimals)
        pl.DataFrame({"seg": rng.integers(0, segments, m), "y": y, "p": p}).write_parquet(
            path / f"part-{i:03d}.parquet"
        )


def sklearn_by_segment(pdf):  # the applyInPandas function a Spark user writes today
    import pandas as pd
    from sklearn.metrics import log_loss, roc_auc_score, roc_curve

    y, p = pdf["y"].to_numpy(), pdf["p"].to_numpy()
    fpr, tpr, _ = roc_curve(y, p)
    return pd.DataFrame(
        {
            "seg": [pdf["seg"].iloc[0]],
            "auc": [roc_auc_score(y, p)],
            "logloss": [log_loss(y, p, labels=[0, 1])],
            "ks": [float(np.max(tpr - fpr))],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each tool (median)")
    parser.add_argument("--ml-repeat", type=int, default=1, help="runs of Spark ML (slow)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--decimals", type=int, default=None, help="round the scores")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument(
        "--package",
        default=None,
        help="the checkout whose polars_eval is measured (default: this one), e.g. main's",
    )
    parser.add_argument(
        "--only",
        choices=["segments", "global", "profile"],
        default=None,
        help="one comparison only; profile: the per-segment steps of ours timed apart",
    )
    args = parser.parse_args()
    n = int(args.rows)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # the driver and the executors import the checkout measured
    root = str(Path(args.package or Path(__file__).resolve().parents[1]).resolve())
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    sys.path.insert(0, root)
    os.chdir(root)  # Spark's Python workers put their working directory first on sys.path
    global pe
    import pyspark
    from pyspark.sql import SparkSession

    import polars_eval as pe

    spark = (
        SparkSession.builder.master(f"local[{args.cores}]")
        .appName("bench_spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.sql.shuffle.partitions", str(2 * args.cores))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, local[{args.cores}], "
        f"Python {platform.python_version()}, Polars {pl.__version__}, "
        f"PySpark {pyspark.__version__}, Java {java_version()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"polars_eval: {pe.__file__}")
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "scores"
        write_data(data, n, args.segments, args.files, args.decimals)
        sdf = spark.read.parquet(str(data))
        scores = "continuous" if args.decimals is None else f"at {args.decimals} decimals"
        print(
            f"data: {n:,} rows, {args.segments:,} segments, {args.files} parquet files, "
            f"scores {scores}"
        )

        if args.only == "profile":
            profile(sdf, args)
        if args.only in (None, "segments"):
            per_segment(sdf, args)
        if args.only in (None, "global"):
            global_auc(sdf, args)
    spark.stop()


def per_segment(sdf: Any, args: argparse.Namespace) -> None:
    """1. per segment: exact AUC, logloss, KS against applyInPandas with scikit-learn."""
    metrics = ["auc", "logloss", "ks"]

    def ours_by():
        return pe.spark.evaluate(sdf, "binary", label="y", score="p", by="seg", metrics=metrics)

    def peer_by():
        schema = "seg long, auc double, logloss double, ks double"
        out = sdf.groupBy("seg").applyInPandas(sklearn_by_segment, schema).toPandas()
        return pl.from_pandas(out).sort("seg")

    timed = interleaved(
        {"ours": ours_by, "peer": peer_by}, {"ours": args.repeat, "peer": args.repeat}
    )
    (t_ours, c_ours, got), (t_peer, c_peer, want) = timed["ours"], timed["peer"]
    assert isinstance(got, pl.DataFrame) and isinstance(want, pl.DataFrame)
    assert got["seg"].to_list() == want["seg"].to_list()
    diff = {m: float((got[m] - want[m]).abs().max()) for m in metrics}
    print(f"\n## per segment: exact {', '.join(metrics)} ({args.segments:,} segments)")
    print("| tool | median s | vs ours | CPU s | vs ours |")
    print("|---|---|---|---|---|")
    print(f"| pe.spark.evaluate(by='seg') | {t_ours:.2f} | 1.00 | {c_ours:.2f} | 1.00 |")
    print(
        f"| groupBy().applyInPandas + scikit-learn | {t_peer:.2f} | {t_peer / t_ours:.2f}x "
        f"| {c_peer:.2f} | {c_peer / c_ours:.2f}x |"
    )
    print("largest difference: " + ", ".join(f"{m} {d:.1e}" for m, d in diff.items()))
    print(f"load average {os.getloadavg()[0]:.1f}")


def _drain(rows: Any) -> Any:
    for _ in rows:
        pass
    return iter(())


def profile(sdf: Any, args: argparse.Namespace) -> None:
    """The per-segment steps of ``pe.spark.evaluate`` (the JVM Arrow path), each a Spark job
    of its own that stops after it, cumulative: the time of a step is the difference."""
    from functools import partial

    from polars_eval.scale import spark as pe_spark

    selected = sdf.select("seg", "y", "p")
    ev = pe.Evaluation("binary", label="y", score="p", by="seg", metrics=["auc", "logloss", "ks"])
    n = pe_spark._default_parallelism(sdf)
    arrow = pe_spark._arrow_rdd(selected)
    assert arrow is not None, "this Spark has no JVM Arrow batches (toArrowBatchRdd)"

    def batches() -> Any:
        return pe_spark._arrow_rdd(selected)[0]

    def blobs() -> Any:
        return batches().mapPartitions(partial(pe_spark._rdd_blobs, ev, n, arrow[1]))

    steps = {
        "parquet scan (count() of the three columns)": lambda: selected.count(),
        "+ Spark's JVM Arrow batches into the Python workers": lambda: (
            batches().mapPartitions(_drain).count()
        ),
        "+ the state blobs": lambda: blobs().mapPartitions(_drain).count(),
        "+ the shuffle of the blobs": lambda: (
            blobs().partitionBy(n, pe_spark._identity).mapPartitions(_drain).count()
        ),
        "+ the finalize and the collect (pe.spark.evaluate)": lambda: pe.spark.evaluate(
            sdf, "binary", label="y", score="p", by="seg", metrics=["auc", "logloss", "ks"]
        ),
    }
    for fn in steps.values():  # the Python workers started, polars_eval imported
        fn()
    timed = interleaved(steps, dict.fromkeys(steps, args.repeat))
    print(f"\n## per-segment steps, cumulative ({n} target partitions)")
    print("| step | median s | CPU s | the step alone, CPU s |")
    print("|---|---|---|---|")
    before = 0.0
    for name, (t, c, _) in timed.items():
        print(f"| {name} | {t:.2f} | {c:.2f} | {c - before:.2f} |")
        before = c
    print(f"load average {os.getloadavg()[0]:.1f}")


def global_auc(sdf: Any, args: argparse.Namespace) -> None:
    """2. global AUC against Spark ML's BinaryClassificationEvaluator."""
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.sql import functions as F

    labelled = sdf.withColumn("label", F.col("y").cast("double"))

    def ml(num_bins: int) -> Callable[[], float]:
        evaluator = BinaryClassificationEvaluator(
            rawPredictionCol="p", labelCol="label", metricName="areaUnderROC"
        ).setNumBins(num_bins)
        return lambda: evaluator.evaluate(labelled)

    def ours_global(bins: int | None) -> Callable[[], float]:
        return lambda: pe.spark.evaluate(
            sdf, "binary", label="y", score="p", metrics=["auc"], bins=bins
        )["auc"].item()

    rows = {
        "pe.spark.evaluate, exact": (ours_global(None), args.repeat),
        "pe.spark.evaluate, bins=1000": (ours_global(1000), args.repeat),
        "Spark ML BinaryClassificationEvaluator, numBins=0 (exact)": (ml(0), args.ml_repeat),
        "Spark ML BinaryClassificationEvaluator, numBins=1000 (default)": (
            ml(1000),
            args.ml_repeat,
        ),
    }
    timed = interleaved(
        {name: fn for name, (fn, _) in rows.items()},
        {name: repeat for name, (_, repeat) in rows.items()},
    )
    base, base_cpu, exact = timed["pe.spark.evaluate, exact"]
    assert isinstance(exact, float)
    print("\n## global AUC")
    print("| tool | median s | vs ours exact | CPU s | vs ours exact | AUC | − ours exact |")
    print("|---|---|---|---|---|---|---|")
    for name, (t, c, auc) in timed.items():
        assert isinstance(auc, float)
        print(
            f"| {name} | {t:.2f} | {t / base:.2f}x | {c:.2f} | {c / base_cpu:.2f}x "
            f"| {auc:.12f} | {auc - exact:+.1e} |"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
