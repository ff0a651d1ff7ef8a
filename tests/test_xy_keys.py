"""X at Y (precision_at_recall ...) of unweighted rows from the sorted keys' chunks
(``_sorted_keys.Xy``, the bare expression) against the threshold state's Polars
finalizer (the weighted path, here with unit weights) and a brute force over the
points, as YDF defines them."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import polars_eval as pe

CASES = [
    ("precision_at_recall", "recall", "precision", ">=", True),
    ("recall_at_precision", "precision", "recall", ">=", False),
    ("precision_at_volume", "volume", "precision", ">=", True),
    ("fpr_at_recall", "recall", "fpr", ">=", True),
    ("recall_at_fpr", "fpr", "recall", "<=", False),
]


def brute(
    y: np.ndarray, s: np.ndarray, constraint: str, target: str, op: str, value: float, first: bool
) -> float | None:
    """The points (the empty prediction, then every distinct score, descending) and the
    target of the first / last one meeting the constraint."""
    p, n = int(y.sum()), int(len(y) - y.sum())
    if p == 0 or n == 0:
        return None
    points = [(0, 0)]
    for t in np.unique(s)[::-1]:
        chosen = s >= t
        points.append((int(y[chosen].sum()), int(chosen.sum() - y[chosen].sum())))
    rates = []
    for tp, fp in points:
        rates.append(
            {
                "recall": tp / p,
                "fpr": fp / n,
                "precision": tp / (tp + fp) if tp + fp else 1.0,
                "volume": (tp + fp) / (p + n),
            }
        )
    ok = [r for r in rates if (r[constraint] >= value if op == ">=" else r[constraint] <= value)]
    if not ok:
        return None
    return (ok[0] if first else ok[-1])[target]


def same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize(("name", "constraint", "target", "op", "first"), CASES)
def test_keys_equal_the_state_path_and_the_points(
    name: str, constraint: str, target: str, op: str, first: bool
) -> None:
    rng = np.random.default_rng(7)
    metric = getattr(pe, name)
    for _ in range(60):
        n = int(rng.integers(1, 50))
        y = rng.integers(0, 2, n)
        s = np.round(rng.random(n), int(rng.integers(1, 3)))  # ties
        value = float(rng.choice([0.0, 0.2, 1 / 3, 0.5, 0.75, 1.0]))
        df = pl.DataFrame({"y": y, "s": s, "w": np.ones(n)})
        keys = df.select(metric("y", "s", **{constraint: value})).item()
        state = df.select(metric("y", "s", **{constraint: value}, weight="w")).item()
        want = brute(y, s, constraint, target, op, value, first)
        assert same(keys, want), (name, value, y.tolist(), s.tolist(), keys, want)
        assert same(state, want)


def test_per_group_equals_per_frame_nan_and_one_class() -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 30, 3000),
            "y": rng.integers(0, 2, 3000),
            "s": np.round(rng.random(3000), 2),
        }
    )
    df = df.with_columns(  # one group of one class, one group with a NaN score
        y=pl.when(pl.col("g") == 0).then(1).otherwise(pl.col("y")),
        s=pl.when((pl.col("g") == 1) & (pl.int_range(pl.len()) % 7 == 0))
        .then(float("nan"))
        .otherwise(pl.col("s")),
    )
    expr = pe.precision_at_recall("y", "s", recall=0.6)
    grouped = dict(df.group_by("g").agg(expr).iter_rows())
    for g, part in df.partition_by("g", as_dict=True).items():
        assert same(grouped[g[0]], part.select(expr).item())
    assert grouped[0] is None
    assert math.isnan(grouped[1])
    lazy = dict(df.lazy().group_by("g").agg(expr).collect().iter_rows())
    assert all(same(lazy[g], grouped[g]) for g in grouped)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_rate_of_one_meets_a_constraint_of_one(weighted: bool) -> None:
    """49 positives: Polars' 49 / 49 by a scalar is 0.9999999999999999 (a product with
    the reciprocal), which missed recall=1.0 and volume=1.0 (null before the fix)."""
    y = np.r_[np.ones(49, int), np.zeros(7, int)]
    s = np.r_[np.linspace(0.5, 1.0, 49), np.linspace(0.0, 0.6, 7)]
    df = pl.DataFrame({"y": y, "s": s, "w": np.ones(56)})
    w = {"weight": "w"} if weighted else {}
    got = df.select(
        pe.precision_at_recall("y", "s", recall=1.0, **w).alias("a"),
        pe.precision_at_volume("y", "s", volume=1.0, **w).alias("b"),
        pe.recall_at_fpr("y", "s", fpr=1.0, **w).alias("c"),
    ).row(0)
    want = (
        brute(y, s, "recall", "precision", ">=", 1.0, True),
        brute(y, s, "volume", "precision", ">=", 1.0, True),
        brute(y, s, "fpr", "recall", "<=", 1.0, False),
    )
    assert all(w_ is not None for w_ in want)
    assert all(same(g, w_) for g, w_ in zip(got, want, strict=True))
