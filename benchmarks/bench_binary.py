"""Binary-classification benchmark: polars_eval vs scikit-learn, polars-ds, polarbearings
and the plain-Polars floor, on the same data in the same run (issue 2, SPEC §11).

Run:  python benchmarks/bench_binary.py [--rows 1e6 1e7] [--repeat 3] [--segments 1000]
      [--only threshold_free one_pass all_at_once per_segment memory]

Prints one table per scenario: median seconds and the ratio to our time (peer / ours;
> 1 means we are faster) and to the floor (ours / floor). Needs the ``bench`` extra.
"""

from __future__ import annotations

import argparse
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

import polars_eval as pe

sys.path.insert(0, str(Path(__file__).parent))
from _harness import median_time, status_mib  # noqa: E402


def make_data(n: int, *, tied: bool, segments: int = 0, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0.0, 1.0)
    if tied:
        score = np.round(score, 3)
    data = {"y": y, "score": score}
    if segments:
        data["seg"] = rng.integers(0, segments, n)
    return pl.DataFrame(data)


def table(title: str, rows: list[tuple[str, float]], ours: str, floor: str | None = None) -> None:
    base = dict(rows)[ours]
    print(f"\n## {title}")
    print(f"| {'tool':44s} | median s | vs ours |")
    print(f"|{'-' * 46}|----------|---------|")
    for name, t in rows:
        ratio = t / base
        note = f"{ratio:6.2f}x" if name != ours else "   1.00"
        print(f"| {name:44s} | {t:8.3f} | {note} |")
    if floor is not None:
        print(f"ours / floor = {base / dict(rows)[floor]:.2f}")


def threshold_free(df: pl.DataFrame, repeat: int, title: str) -> None:
    from sklearn import metrics as skm

    y = df["y"].to_numpy()
    s = df["score"].to_numpy()
    try:
        import polars_ds as pds
    except ImportError:  # pragma: no cover - optional peer
        pds = None
    try:
        import polarbearings as pb
    except ImportError:  # pragma: no cover - optional peer
        pb = None

    floor = median_time(lambda: df.select(pl.col("score").sort()), repeat)
    for metric, sk in (
        ("auc", lambda: skm.roc_auc_score(y, s)),
        ("average_precision", lambda: skm.average_precision_score(y, s)),
        ("pr_auc", lambda: skm.auc(*skm.precision_recall_curve(y, s)[1::-1])),
        ("roc_curve", lambda: skm.roc_curve(y, s, drop_intermediate=False)),
    ):
        fn = getattr(pe, metric)
        method = getattr(df.eval, metric)
        ours = f"polars_eval pe.{metric} (select)"
        rows = [
            (ours, median_time(lambda fn=fn: df.select(fn("y", "score")), repeat)),
            (
                f"polars_eval df.eval.{metric} (validated)",
                median_time(lambda m=method: m("y", "score"), repeat),
            ),
            ("scikit-learn", median_time(sk, max(1, repeat // 2))),
        ]
        if metric == "auc" and pds is not None:
            rows.append(
                (
                    "polars-ds query_roc_auc",
                    median_time(lambda: df.select(pds.query_roc_auc("y", "score")), repeat),
                )
            )
        if pb is not None and metric in ("auc", "average_precision"):
            pbf = pb.roc_auc if metric == "auc" else pb.average_precision
            rows.append(
                (
                    f"polarbearings {pbf.__name__}",
                    median_time(lambda f=pbf: df.select(f("y", "score")), repeat),
                )
            )
        rows.append(("plain-Polars floor: one sort of score", floor))
        table(f"{metric} — {title}", rows, ours, "plain-Polars floor: one sort of score")


def alternate(calls: dict[str, Callable[[], object]], repeat: int) -> dict[str, list[float]]:
    """The seconds of each call: one warm-up call each, then the calls alternated
    ``3 * repeat`` times (a shared machine's load then hits them alike)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for fn in calls.values():
        fn()
    for _ in range(3 * repeat):
        for name, fn in calls.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def per_segment(df: pl.DataFrame, repeat: int, title: str) -> None:
    """Per-segment AUC against Polars' own per-group sort: ours and the floor alternated
    ``3 * repeat`` times after a warm-up each (a shared machine's load then hits them
    alike), medians; the peers timed once each."""
    from sklearn.metrics import roc_auc_score

    pdf = df.to_pandas()

    def pandas_loop() -> object:
        return pdf.groupby("seg").apply(
            lambda g: roc_auc_score(g["y"], g["score"]), include_groups=False
        )

    per_group = "plain-Polars floor: group_by(seg).agg(score.sort())"
    alternated = {
        "polars_eval df.eval.auc(by=)": lambda: df.eval.auc("y", "score", by="seg"),
        "polars_eval group_by().agg(pe.auc)": lambda: df.group_by("seg").agg(pe.auc("y", "score")),
        per_group: lambda: df.group_by("seg").agg(pl.col("score").sort()),
    }
    times = alternate(alternated, repeat)
    rows = [(name, statistics.median(t)) for name, t in times.items()]
    rows += [
        ("pandas groupby + scikit-learn", median_time(pandas_loop, 1)),
        (
            "polars_eval df.eval.binary(by=) (all metrics)",
            median_time(lambda: df.eval.binary("y", "score", by="seg"), repeat),
        ),
    ]
    try:
        import polars_ds as pds

        rows.append(
            (
                "polars-ds group_by",
                median_time(
                    lambda: df.group_by("seg").agg(pds.query_roc_auc("y", "score")), repeat
                ),
            )
        )
    except ImportError:  # pragma: no cover
        pass
    rows.append(
        (
            "plain-Polars floor: sort by (seg, score)",
            median_time(lambda: df.sort("seg", "score"), repeat),
        )
    )
    table(f"per-segment AUC — {title}", rows, "polars_eval df.eval.auc(by=)", per_group)
    bare = dict(rows)["polars_eval group_by().agg(pe.auc)"] / dict(rows)[per_group]
    print(f"group_by().agg(pe.auc) / floor = {bare:.2f}")


def one_pass(df: pl.DataFrame, repeat: int, title: str) -> None:
    y = pl.col("y").cast(pl.Float64)
    p = pl.col("score").clip(1e-15, 1 - 1e-15)
    floor_ll = -(y * p.log() + (1 - y) * (1 - p).log()).mean()
    pred = (pl.col("score") >= 0.5).cast(pl.Float64)
    floor_acc = (pred == y).cast(pl.Float64).mean()
    tp = (y * pred).sum()
    floor_f1 = 2 * tp / (2 * tp + ((1 - y) * pred).sum() + (y * (1 - pred)).sum())
    for name, ours, floor in (
        ("logloss", pe.logloss("y", "score"), floor_ll),
        ("accuracy", pe.accuracy("y", "score"), floor_acc),
        ("f1", pe.f1("y", "score"), floor_f1),
        ("mcc", pe.mcc("y", "score"), floor_f1),
    ):
        rows = [
            (f"polars_eval pe.{name}", median_time(lambda e=ours: df.select(e), repeat)),
            ("plain-Polars one-pass expression", median_time(lambda e=floor: df.select(e), repeat)),
        ]
        table(
            f"{name} — {title}", rows, f"polars_eval pe.{name}", "plain-Polars one-pass expression"
        )


def all_at_once(df: pl.DataFrame, repeat: int, title: str) -> None:
    """``df.eval.binary`` against ``df.eval.auc``: one warm-up call each, then the two
    alternated ``3 * repeat`` times (a shared machine's load then hits both alike);
    medians, and the ratio of the fastest calls too (what the load inflates least)."""
    calls = {
        "polars_eval df.eval.binary (all metrics)": lambda: df.eval.binary("y", "score"),
        "polars_eval df.eval.auc alone": lambda: df.eval.auc("y", "score"),
    }
    times = alternate(calls, repeat)
    rows = [(name, statistics.median(t)) for name, t in times.items()]
    table(f"binary() vs auc — {title}", rows, "polars_eval df.eval.auc alone")
    fastest = [min(t) for t in times.values()]
    print(f"fastest calls: {fastest[0]:.3f} / {fastest[1]:.3f} s = {fastest[0] / fastest[1]:.2f}x")


MEMORY_CASES = {
    "pe.auc": lambda: pe.auc("y", "score"),
    "floor: one sort of score": lambda: pl.col("score").sort(),
}


def memory_child(case: str, n: int) -> None:
    """In a fresh process: the peak resident memory one ``select`` adds over the memory
    held before it (the peak counter reset just before, Linux ``clear_refs``), and the
    input columns' size. The data is built first, so its own peak is not counted (the
    old step's ``ru_maxrss``, which cannot be reset, printed 0 MiB)."""
    df = make_data(n, tied=False)
    df.head(1000).select(MEMORY_CASES[case]())  # imports and first calls, outside the measure
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = status_mib("VmRSS")
    df.select(MEMORY_CASES[case]())
    print(f"{status_mib('VmHWM') - before:.1f} {df.estimated_size() / 2**20:.1f}")


def peak_memory(n: int) -> None:
    """Peak memory of ``pe.auc`` (and of the floor) on ``n`` continuous rows, each in a
    child process (:func:`memory_child`) that imports the parent's ``polars_eval``."""
    import polars_eval

    root = str(Path(polars_eval.__file__).resolve().parent.parent)
    print(f"\n## peak memory on {n:.0e} rows (child process, peak RSS over the RSS before)")
    for case in MEMORY_CASES:
        code = (
            f"import sys; sys.path[:0] = [{root!r}, {str(Path(__file__).parent)!r}]; "
            f"import bench_binary; bench_binary.memory_child({case!r}, {n})"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{case}: failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        extra, size = (float(x) for x in out.stdout.split())
        print(
            f"{case}: +{extra:.0f} MiB over {size:.0f} MiB of input columns = {extra / size:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument(
        "--only",
        nargs="+",
        choices=["threshold_free", "one_pass", "all_at_once", "per_segment", "memory"],
        help="run only these parts",
    )
    args = parser.parse_args()
    parts = set(args.only or ["threshold_free", "one_pass", "all_at_once", "per_segment", "memory"])
    print(
        f"machine: {platform.machine()} {platform.processor() or ''}, {resource.getpagesize()} B pages, "
        f"python {platform.python_version()}, polars {pl.__version__}, polars_eval {pe.__version__}"
    )
    for n in (int(r) for r in args.rows):
        if "threshold_free" in parts:
            for tied in (False, True):
                df = make_data(n, tied=tied)
                title = f"{n:.0e} rows, {'tied (3 decimals)' if tied else 'continuous'} scores"
                threshold_free(df, args.repeat, title)
        df = make_data(n, tied=False)
        if "one_pass" in parts:
            one_pass(df, args.repeat, f"{n:.0e} rows")
        if "all_at_once" in parts:
            all_at_once(df, args.repeat, f"{n:.0e} rows")
    n = int(max(args.rows))
    if "per_segment" in parts:
        per_segment(
            make_data(n, tied=False, segments=args.segments),
            args.repeat,
            f"{n:.0e} rows, {args.segments} segments",
        )
    if "memory" in parts:
        peak_memory(n)


if __name__ == "__main__":
    main()
