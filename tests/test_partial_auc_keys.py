"""The partial AUC of unweighted rows, computed from the numpy sort of the row keys
(``metrics.binary._partial_auc_keys``), against scikit-learn: many chunks of keys, ties,
negative scores, the cut on a point and inside a tie block, per group = per frame,
lazy = eager, and the undefined cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_binary import assert_same, scalar, sk_partial_auc, two_class_rows

import polars_eval as pe

MAX_FPRS = [0.001, 0.3, 0.77, 1.0]


def frame(n: int, *, seed: int, tied: bool, negative: bool) -> pl.DataFrame:
    """Labels, scores (real numbers of both signs, or probabilities; rounded to 2 decimals
    when ``tied``), integer weights and three groups."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.normal(size=n) + 0.8 * y
    if not negative:
        s = 1.0 / (1.0 + np.exp(-s))
    if tied:
        s = np.round(s, 2)
    w = rng.integers(0, 4, n).astype(np.float64)
    return pl.DataFrame({"y": y, "score": s, "w": w, "g": rng.integers(0, 3, n)})


@pytest.mark.parametrize("negative", [False, True], ids=["proba", "signed"])
@pytest.mark.parametrize("tied", [False, True], ids=["continuous", "tied"])
@pytest.mark.parametrize("max_fpr", MAX_FPRS)
def test_many_rows_vs_sklearn(max_fpr: float, tied: bool, negative: bool, collect: Any) -> None:
    # 80,000 rows: the sorted keys are read in several chunks (of 2**15 keys)
    df = frame(80_000, seed=1, tied=tied, negative=negative)
    y, s, w = (df[c].to_numpy() for c in ("y", "score", "w"))
    for standardized in (True, False):
        for weight in (None, "w"):
            expr = pe.partial_auc(
                "y", "score", max_fpr=max_fpr, standardized=standardized, weight=weight
            )
            wa = None if weight is None else w
            assert_same(scalar(df, expr, collect), sk_partial_auc(y, s, wa, max_fpr, standardized))


@pytest.mark.parametrize("tied", [False, True], ids=["continuous", "tied"])
def test_per_group_is_per_frame(tied: bool, collect: Any) -> None:
    df = frame(30_000, seed=2, tied=tied, negative=False)
    for max_fpr in MAX_FPRS:
        expr = pe.partial_auc("y", "score", max_fpr=max_fpr)
        got = collect(df.lazy().group_by("g").agg(expr).sort("g"))
        for g, value in got.iter_rows():
            part = df.filter(pl.col("g") == g)
            assert value == part.select(expr).item()  # the same kernel on the group's rows
            want = sk_partial_auc(
                part["y"].to_numpy(), part["score"].to_numpy(), None, max_fpr, True
            )
            assert_same(value, want)
    eager = df.select(pe.partial_auc("y", "score", max_fpr=0.3)).item()
    assert_same(df.lazy().select(pe.partial_auc("y", "score", max_fpr=0.3)).collect().item(), eager)


@settings(max_examples=60)
@given(df=two_class_rows(), max_fpr=st.sampled_from(MAX_FPRS))
@example(  # the cut on a point (C = 2 negatives) and inside a tie block of both classes
    df=pl.DataFrame(
        {"y": [0, 0, 1, 0, 1, 0], "score": [0.9, 0.8, 0.8, 0.5, 0.5, 0.1], "w": [1.0] * 6}
    ),
    max_fpr=0.5,
)
def test_small_data_vs_sklearn(df: pl.DataFrame, max_fpr: float) -> None:
    y, s = df["y"].to_numpy(), df["score"].to_numpy()
    for standardized in (True, False):
        expr = pe.partial_auc("y", "score", max_fpr=max_fpr, standardized=standardized)
        assert_same(df.select(expr).item(), sk_partial_auc(y, s, None, max_fpr, standardized))


def test_full_range_is_the_auc_and_undefined_cases() -> None:
    df = frame(5_000, seed=3, tied=True, negative=True)
    for standardized in (True, False):
        got = df.select(pe.partial_auc("y", "score", max_fpr=1.0, standardized=standardized))
        assert_same(got.item(), df.select(pe.auc("y", "score")).item(), 1e-12)
    expr = pe.partial_auc("y", "score", max_fpr=0.2)
    nan = df.with_columns(
        score=pl.when(pl.int_range(pl.len()) == 7).then(np.nan).otherwise("score")
    )
    assert math.isnan(nan.select(expr).item())
    assert df.filter(pl.col("y") == 1).select(expr).item() is None  # one class
    assert df.head(0).select(expr).item() is None
    nulls = df.with_columns(
        y=pl.when(pl.int_range(pl.len()) % 5 == 0).then(None).otherwise("y"),
        score=pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise("score"),
    )
    kept = nulls.drop_nulls(["y", "score"])
    assert nulls.select(expr).item() == kept.select(expr).item()
    assert_same(
        kept.select(expr).item(),
        sk_partial_auc(kept["y"].to_numpy(), kept["score"].to_numpy(), None, 0.2, True),
    )
