"""Benchmark: the multiclass report (SPEC §4, issue 4), 10 classes.

Ours: ``df.eval.multiclass(label, pred=, proba=, classes=)``, every summary metric
(accuracy, precision / recall / F1 micro-macro-weighted, MCC, kappa, log loss, OvR AUC
macro / weighted / micro, top-2 accuracy) with validation on and off; and the expressions
computing only what the peer computes (per-class and averaged precision / recall / F1,
accuracy, macro OvR AUC) in one ``select``.
Peer: scikit-learn's ``classification_report`` + ``roc_auc_score(multi_class="ovr")``
(macro), on numpy arrays taken from the same frame (conversion not timed).
Floor: plain Polars doing the unavoidable work: the confusion counts (one group_by of
label × prediction) and one sort of each probability column.

Run: ``python benchmarks/bench_multiclass.py --rows 1000000``. Prints medians (repetitions
interleaved round-robin) and ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import polars_eval as pe


def make_data(n: int, k: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), y] += 1.0
    proba = np.exp(logits)
    proba /= proba.sum(axis=1, keepdims=True)
    data: dict[str, Any] = {"y": y, "yhat": proba.argmax(axis=1)}
    data.update({f"p{c}": proba[:, c] for c in range(k)})
    return pl.DataFrame(data)


def timeit_interleaved(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Median seconds of each function, the repetitions run round-robin so that a change
    of load on a shared machine hits every contender alike."""
    for fn in fns.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, k = args.rows, args.classes
    df = make_data(n, k)
    classes = list(range(k))
    cols = [f"p{c}" for c in classes]
    y = df["y"].to_numpy()
    yhat = df["yhat"].to_numpy()
    proba = df.select(cols).to_numpy()

    from sklearn.metrics import classification_report, roc_auc_score

    def ours() -> Any:
        return df.eval.multiclass("y", pred="yhat", proba=cols, classes=classes)

    def ours_fast() -> Any:
        return df.eval.multiclass("y", pred="yhat", proba=cols, classes=classes, validate=False)

    def ours_same_work() -> Any:
        # the peer's metrics only: per-class precision / recall / F1 / support, accuracy,
        # macro and weighted averages, macro OvR AUC, as expressions in one select
        exprs = [pe.multiclass_accuracy("y", "yhat", classes=classes)]
        for fn in (pe.multiclass_precision, pe.multiclass_recall, pe.multiclass_f1):
            for avg in (None, "macro", "weighted"):
                exprs.append(
                    fn("y", "yhat", average=avg, classes=classes).alias(f"{fn.__name__}_{avg}")
                )
        exprs.append(pe.multiclass_auc("y", cols, classes=classes))
        return df.select(exprs)

    def sklearn() -> Any:
        classification_report(y, yhat, output_dict=True, zero_division=np.nan)
        return roc_auc_score(y, proba, multi_class="ovr")

    def floor() -> Any:
        counts = df.group_by("y", "yhat").len()
        sorted_ = df.select(pl.col(c).sort() for c in cols)
        return counts, sorted_

    # agreement check, not timed
    got = ours()
    want_auc = roc_auc_score(y, proba, multi_class="ovr")
    assert abs(got["multiclass_auc_macro"].item() - want_auc) < 1e-9, (got, want_auc)

    timed = timeit_interleaved(
        {
            "polars_eval multiclass (all metrics, validated)": ours,
            "polars_eval multiclass (validate=False)": ours_fast,
            "polars_eval expressions, the peer's metrics only": ours_same_work,
            "sklearn classification_report + roc_auc_score ovr": sklearn,
            "plain polars floor (confusion group_by + K sorts)": floor,
        },
        args.repeat,
    )
    rows = list(timed.items())
    base = timed["sklearn classification_report + roc_auc_score ovr"]
    print(f"multiclass report, {n:,} rows x {k} classes (median of {args.repeat})")
    print(f"{'':52s} {'seconds':>9s} {'sklearn / this':>15s}")
    for name, t in rows:
        print(f"{name:52s} {t:9.3f} {base / t:15.2f}")
    floor_t = timed["plain polars floor (confusion group_by + K sorts)"]
    print(f"ours (validated) / floor: {rows[0][1] / floor_t:.2f}")


if __name__ == "__main__":
    main()
