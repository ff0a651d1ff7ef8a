"""The multiclass ROC AUC kernels (``metrics/_multiclass_auc.py``) against scikit-learn,
on the paths the bare expressions take: one-vs-rest macro and weighted (each class's keys
built and sorted in its own task), micro (the n × K keys), one-vs-one; unweighted and
weighted, continuous and tied, past the threaded kernel's threshold, per group = per
frame, and scores that are not below 1.5 (keys sorted as UInt64, not as float64)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import polars as pl
import pytest
import sklearn.metrics as skm
from test_multiclass import assert_same

import polars_eval as pe
from polars_eval.metrics._multiclass_auc import FLOAT_KEYS_BELOW, PARALLEL_KEYS

K = 4
CLASSES = [10, 11, 12, 13]
COLS = [f"p{i}" for i in range(K)]
N = PARALLEL_KEYS // K + 5_000  # n × K keys past the threaded kernel's threshold


def frame(n: int, *, seed: int, tied: bool) -> pl.DataFrame:
    """Labels, probabilities (on a grid of tenths when ``tied``), integer weights 0..3
    and three groups."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    if tied:
        proba = rng.multinomial(10, np.ones(K) / K, size=n) / 10.0
    else:
        logits = rng.normal(size=(n, K))
        logits[np.arange(n), y] += 1.0
        proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return pl.DataFrame(
        {
            "y": np.asarray(CLASSES)[y],
            "w": rng.integers(0, 4, n).astype(np.float64),
            "g": rng.integers(0, 3, n),
            **{c: proba[:, i] for i, c in enumerate(COLS)},
        }
    )


def arrays(df: pl.DataFrame, weighted: bool) -> tuple[np.ndarray, np.ndarray, Any]:
    return df["y"].to_numpy(), df.select(COLS).to_numpy(), df["w"].to_numpy() if weighted else None


def sk_auc(y: np.ndarray, scores: np.ndarray, w: Any, multi_class: str, average: str) -> float:
    """scikit-learn's ``roc_auc_score`` where it takes the scores (probabilities; ovo
    without weights), else its binary AUCs combined as its multiclass averages do:
    per class (ovr macro / weighted by the support), the n × K one-hot labels (micro),
    per pair of classes (ovo, Hand & Till)."""
    if np.allclose(scores.sum(axis=1), 1.0) and (multi_class == "ovr" or w is None):
        kw = {"labels": CLASSES, "sample_weight": w}
        return float(skm.roc_auc_score(y, scores, multi_class=multi_class, average=average, **kw))
    w = np.ones(len(y)) if w is None else w
    if multi_class == "ovr" and average == "micro":
        onehot = y[:, None] == np.asarray(CLASSES)[None, :]
        return float(
            skm.roc_auc_score(onehot.ravel(), scores.ravel(), sample_weight=np.repeat(w, K))
        )
    if multi_class == "ovr":
        aucs = [
            skm.roc_auc_score(y == c, scores[:, i], sample_weight=w) for i, c in enumerate(CLASSES)
        ]
        support = [w[y == c].sum() for c in CLASSES]
        return float(np.average(aucs, weights=None if average == "macro" else support))
    values, masses = [], []
    for (a, ca), (b, cb) in itertools.combinations(enumerate(CLASSES), 2):
        pair = (y == ca) | (y == cb)
        halves = [
            skm.roc_auc_score(y[pair] == c, scores[pair, i], sample_weight=w[pair])
            for i, c in ((a, ca), (b, cb))
        ]
        values.append(np.mean(halves))
        masses.append(w[pair].sum())
    return float(np.average(values, weights=None if average == "macro" else masses))


CASES = [
    ("ovr", "macro"),
    ("ovr", "weighted"),
    ("ovr", "micro"),
    ("ovo", "macro"),
    ("ovo", "weighted"),
]


def expressions(weight: str | None) -> list[pl.Expr]:
    return [
        pe.multiclass_auc(
            "y", COLS, multi_class=mc, average=avg, classes=CLASSES, weight=weight
        ).alias(f"{mc}_{avg}")
        for mc, avg in CASES
    ]


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("tied", [False, True], ids=["continuous", "tied"])
def test_many_rows_vs_sklearn(tied: bool, weighted: bool) -> None:
    df = frame(N, seed=1, tied=tied)
    y, scores, w = arrays(df, weighted)
    got = df.lazy().select(expressions("w" if weighted else None)).collect().row(0, named=True)
    for mc, avg in CASES:
        assert_same(got[f"{mc}_{avg}"], sk_auc(y, scores, w, mc, avg))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("tied", [False, True], ids=["continuous", "tied"])
def test_per_group_is_per_frame(tied: bool, weighted: bool) -> None:
    df = frame(3_000, seed=2, tied=tied)
    exprs = expressions("w" if weighted else None)
    got = df.group_by("g").agg(exprs).sort("g")
    for row in got.iter_rows(named=True):
        part = df.filter(pl.col("g") == row["g"])
        alone = part.select(exprs).row(0, named=True)
        y, scores, w = arrays(part, weighted)
        for mc, avg in CASES:
            name = f"{mc}_{avg}"
            assert row[name] == alone[name]  # the same kernel on the group's rows
            assert_same(row[name], sk_auc(y, scores, w, mc, avg))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_scores_not_below_the_float_key_bound(weighted: bool) -> None:
    # class 0's scores scaled past 1.5 (its keys are sorted as UInt64), one huge and one
    # subnormal score, zeros; the others stay probabilities (sorted as float64)
    df = frame(N, seed=3, tied=True).with_columns(
        p0=pl.col("p0") * 4.0,
        p1=pl.when(pl.int_range(pl.len()) == 3)
        .then(1e300)
        .when(pl.int_range(pl.len()) == 4)
        .then(5e-324)
        .otherwise("p1"),
    )
    assert df["p0"].max() >= FLOAT_KEYS_BELOW and (df["p2"] == 0.0).any()
    y, scores, w = arrays(df, weighted)
    got = df.select(expressions("w" if weighted else None)).row(0, named=True)
    for mc, avg in CASES:
        assert_same(got[f"{mc}_{avg}"], sk_auc(y, scores, w, mc, avg))
