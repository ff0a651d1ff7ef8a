"""Benchmark: every scalar metric of the registry as a bare expression, against one sort.

Every registered scalar metric of the binary, regression, forecast and multiclass tasks
is built from the registry (its input roles mapped to the columns of one frame, the
options without a default given below) and timed as ``df.select(expr)`` on the same
frame; the floor is one Polars sort of a float column of that frame
(``df.select(pl.col("p").sort())``), the least any rank-based metric does. A metric of
sums sits far below it; the target (issue 26) is every metric <= 3x the sort (Kendall's
tau <= 6x). The sort is timed before each metric in every round (a shared machine's load
drifts; each metric's ratio is the median over rounds of its time / the sort's just
before it). Prints the metrics slowest first, the size of each printed expression, and
how many exceed the target.

Usage: ``python benchmarks/bench_registry.py --rows 1e6 --repeat 3`` (``--weighted`` adds
a weight column; ``--only NAME ...`` times some metrics; ``--top N`` prints N rows).
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_line  # noqa: E402

import polars_eval  # noqa: E402, F401 - registers every metric
from polars_eval._core.registry import REGISTRY, MetricInfo  # noqa: E402

TASKS = ("binary", "regression", "forecast", "multiclass")
CLASSES = [0, 1, 2, 3, 4]
# argument name or role -> column(s) of the frame, per task (argument first)
COLUMNS: dict[str, dict[str, Any]] = {
    "binary": {"label": "label", "score": "s", "pred": "hard", "weight": "w"},
    "regression": {"actual": "y", "pred": "p", "weight": "w"},
    "forecast": {
        "actual": "y",
        "forecast": "p",
        "quantile_pred": "p",
        "quantile_preds": ["lo", "p", "hi"],
        "scale": "sc",
        "lower": "lo",
        "upper": "hi",
        "baseline": "base",
        "weight": "w",
    },
    "multiclass": {
        "label": "k",
        "pred": "kp",
        "proba": [f"q{c}" for c in CLASSES],
        "score": [f"q{c}" for c in CLASSES],
        "weight": "w",
    },
}
# options without a default (and the classes of the multiclass metrics)
OPTIONS: dict[str, Any] = {
    "beta": 2.0,
    "recall": 0.5,
    "precision": 0.6,
    "volume": 0.3,
    "fpr": 0.2,
    "max_fpr": 0.3,
    "quantile": 0.3,
    "quantiles": [0.1, 0.5, 0.9],
    "alpha": 0.2,
    "classes": CLASSES,
}
TARGET = {"kendall_tau": 6.0}  # the ratio to the sort a metric may take (default 3)


def make_frame(rows: int, seed: int = 0) -> pl.DataFrame:
    """Columns for every task's metrics, about 1% nulls in the predictions."""
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 3.0, rows) + 0.1
    p = np.abs(y + rng.normal(0.0, 2.0, rows)) + 0.1
    s = rng.random(rows)
    label = (rng.random(rows) < s).astype(np.int64)
    k = rng.integers(0, len(CLASSES), rows)
    logits = rng.normal(size=(rows, len(CLASSES)))
    logits[np.arange(rows), k] += 1.0
    q = np.exp(logits)
    q /= q.sum(axis=1, keepdims=True)
    frame = pl.DataFrame(
        {
            "y": y,
            "p": p,
            "w": rng.integers(0, 4, rows).astype(float),
            "label": label,
            "s": s,
            "hard": (s > 0.5).astype(np.int64),
            "sc": rng.gamma(2.0, 1.0, rows) + 0.1,
            "lo": p - 1.0,
            "hi": p + rng.gamma(2.0, 1.0, rows),
            "base": y + rng.normal(0.0, 3.0, rows),
            "k": k,
            "kp": np.where(rng.random(rows) < 0.6, k, rng.integers(0, len(CLASSES), rows)),
            **{f"q{c}": q[:, c] for c in CLASSES},
        }
    )
    null = pl.int_range(pl.len()) % 97 == 3
    return frame.with_columns(
        pl.when(null).then(None).otherwise(pl.col(c)).alias(c) for c in ("p", "s", "kp")
    )


def arguments(info: MetricInfo, weighted: bool) -> dict[str, Any]:
    """The metric's data arguments by role (of the optional data inputs, the first) and
    its options without a default."""
    columns = COLUMNS[info.task]
    params = info.signature.parameters
    args: dict[str, Any] = {}
    optional_data = False
    for name, role in info.inputs.items():
        if role == "weight" and not weighted:
            continue
        if role != "weight" and params[name].default is None:
            if optional_data:
                continue
            optional_data = True
        column = columns.get(name, columns.get(role))
        if column is not None:
            args[name] = column
    for name, param in params.items():
        if name in args or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if name in OPTIONS:
            args[name] = OPTIONS[name]
        elif param.default is inspect.Parameter.empty:
            raise SystemExit(f"{info.name}: no value for its option {name!r} in OPTIONS")
    return args


def metrics(only: list[str]) -> list[MetricInfo]:
    infos = [i for i in REGISTRY.values() if i.task in TASKS and i.kind == "scalar"]
    return [i for i in infos if not only or i.name in only]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--weighted", action="store_true")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--top", type=int, default=1000)
    args = parser.parse_args()
    df = make_frame(int(args.rows))
    sort: Callable[[], object] = lambda: df.select(pl.col("p").sort())  # noqa: E731
    cases = [(info, info.fn(**arguments(info, args.weighted))) for info in metrics(args.only)]
    for _, expr in cases:  # warm-up (and a failure before any timing)
        df.select(expr)
    ratios: dict[str, list[float]] = {info.name: [] for info, _ in cases}
    seconds: dict[str, list[float]] = {info.name: [] for info, _ in cases}
    floor: list[float] = []
    for _ in range(args.repeat):
        for info, expr in cases:
            start = time.perf_counter()
            sort()
            middle = time.perf_counter()
            df.select(expr)
            end = time.perf_counter()
            floor.append(middle - start)
            seconds[info.name].append(end - middle)
            ratios[info.name].append((end - middle) / (middle - start))
    rows = sorted(
        ((statistics.median(ratios[i.name]), statistics.median(seconds[i.name]), i, e))
        for i, e in cases
    )[::-1]
    print(machine_line())
    print(
        f"{len(cases)} scalar metrics, {int(args.rows):,} rows, "
        f"{'weighted' if args.weighted else 'unweighted'}, median of {args.repeat}; "
        f"one sort of a float column: {statistics.median(floor):.4f} s"
    )
    print(f"{'metric':32s} {'task':11s} {'seconds':>8s} {'/ sort':>7s} {'expr chars':>10s}")
    over = []
    for ratio, secs, info, expr in rows[: args.top]:
        flag = " *" if ratio > TARGET.get(info.name, 3.0) else ""
        print(
            f"{info.name:32s} {info.task:11s} {secs:8.4f} {ratio:7.2f} {len(str(expr)):10d}{flag}"
        )
    over = [i.name for r, _, i, _ in rows if r > TARGET.get(i.name, 3.0)]
    print(f"{len(over)} of {len(rows)} over the target (* : > 3x the sort, Kendall's tau > 6x)")


if __name__ == "__main__":
    main()
