"""The threshold state of the sort-based binary metrics (``metrics/_curve.py``).

Without weights the state comes from a plain sort of one integer per row (the bits of
``|score|`` and the label) counted per run, the rows of negative scores sorted apart;
with weights from a ``sort_by`` of the scores. Every branch of that construction is held
here against scikit-learn or a recount of the rows: scores of both signs (both parts),
±0.0 (one threshold), ±inf, subnormal and huge magnitudes, ties, nulls, NaN, weights,
per group against per frame.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import oracles as O
import polars as pl
from hypothesis import example, given, settings
from hypothesis import strategies as st

import polars_eval as pe
from polars_eval.metrics._curve import threshold_state

SPECIAL = [
    0.0,
    -0.0,
    float("inf"),
    float("-inf"),
    5e-324,
    -5e-324,
    1e-300,
    -1e-300,
    1e300,
    -1e300,
    0.5,
    -0.5,
    1.0,
    -1.0,
    2.0,
    -2.0,
    3.25,
    -3.25,
]


@st.composite
def signed_rows(draw: Any, finite: bool = False) -> pl.DataFrame:
    """Labels, scores of both signs with many ties and special magnitudes, weights 0..3."""
    n = draw(st.integers(1, 30))
    pool = [v for v in SPECIAL if not (finite and math.isinf(v))]
    score = st.one_of(
        st.sampled_from(pool),
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    )
    return pl.DataFrame(
        {
            "y": draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)),
            "score": draw(st.lists(score, min_size=n, max_size=n)),
            "w": [float(v) for v in draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))],
        },
        schema={"y": pl.Int64, "score": pl.Float64, "w": pl.Float64},
    )


MIXED = pl.DataFrame(
    {
        "y": [1, 0, 1, 0, 1, 0, 1, 0],
        "score": [-0.0, 0.0, -1.5, -1.5, 2.0, float("-inf"), 5e-324, -5e-324],
        "w": [1.0, 2.0, 1.0, 0.0, 3.0, 1.0, 1.0, 2.0],
    }
)


def state_points(df: pl.DataFrame, weight: str | None) -> dict[str, list[float]]:
    out = df.select(threshold_state("y", "score", weight).alias("c")).explode("c").unnest("c")
    return {k: out.get_column(k).to_list() for k in ("t", "tp", "fp")}


def assert_points(df: pl.DataFrame, weight: str | None) -> None:
    """The state equals a recount of the rows at every distinct threshold (exact counts)."""
    y, s, w = df["y"].to_numpy(), df["score"].to_numpy(), None
    if weight is not None:
        w = df[weight].to_numpy()
    want = O.points(y, s, w)
    got = state_points(df, weight)
    assert got["t"] == want["threshold"].tolist()  # -0.0 == 0.0: one threshold
    assert got["tp"] == want["tp"].tolist()
    assert got["fp"] == want["fp"].tolist()


@settings(max_examples=60)
@given(df=signed_rows(), weighted=st.booleans())
@example(df=MIXED, weighted=False)
@example(df=MIXED, weighted=True)
def test_state_equals_recount_on_signed_special_scores(df: pl.DataFrame, weighted: bool) -> None:
    assert_points(df, "w" if weighted else None)


@settings(max_examples=40)
@given(df=signed_rows())
@example(df=MIXED)
def test_unweighted_state_equals_unit_weights(df: pl.DataFrame) -> None:
    """The counted path (no weight) and the sorted path (weight column of ones) agree."""
    ones = df.with_columns(one=pl.lit(1.0))
    a = df.select(threshold_state("y", "score", None).alias("c"))
    b = ones.select(threshold_state("y", "score", "one").alias("c"))
    assert a.equals(b)


@settings(max_examples=40)
@given(df=signed_rows(finite=True), weighted=st.booleans())
@example(df=MIXED.filter(pl.col("score").is_finite()), weighted=False)
def test_signed_scores_vs_sklearn(df: pl.DataFrame, weighted: bool) -> None:
    y, s = df["y"].to_numpy(), df["score"].to_numpy()
    w = df["w"].to_numpy() if weighted else None
    wcol = "w" if weighted else None
    kept = w if w is not None else np.ones(len(y))
    got = df.select(pe.auc("y", "score", weight=wcol)).item()
    if len(set(y[kept > 0].tolist())) < 2:
        assert got is None
    else:
        assert got == O.sk_auc(y, s, w) or math.isclose(got, O.sk_auc(y, s, w), rel_tol=1e-12)
        roc = df.eval.roc_curve("y", "score", weight=wcol)
        want = O.sk_roc_curve(y, s, w)
        assert roc["threshold"].to_list() == want["threshold"].tolist()
        np.testing.assert_allclose(roc["tpr"].to_numpy(), want["tpr"], rtol=1e-12)
        np.testing.assert_allclose(roc["fpr"].to_numpy(), want["fpr"], rtol=1e-12)


@settings(max_examples=40)
@given(df=signed_rows(), weighted=st.booleans())
@example(df=MIXED, weighted=False)
def test_auc_vs_pair_count_with_infinite_scores(df: pl.DataFrame, weighted: bool) -> None:
    w = df["w"].to_numpy() if weighted else None
    got = df.select(pe.auc("y", "score", weight="w" if weighted else None)).item()
    want = O.brute_auc_pairs(df["y"].to_numpy(), df["score"].to_numpy(), w)
    if math.isnan(want):
        assert got is None
    else:
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15)


@settings(max_examples=25)
@given(
    df=signed_rows(),
    groups=st.lists(st.integers(0, 2), min_size=30, max_size=30),
    weighted=st.booleans(),
)
def test_state_per_group_equals_per_frame(
    df: pl.DataFrame, groups: list[int], weighted: bool
) -> None:
    df = df.with_columns(g=pl.Series(groups[: df.height]))
    weight = "w" if weighted else None
    per_group = df.group_by("g").agg(threshold_state("y", "score", weight).alias("c")).sort("g")
    for g, c in per_group.iter_rows():
        alone = df.filter(pl.col("g") == g).select(threshold_state("y", "score", weight))
        assert c == alone.item().to_list()


def test_nulls_are_ignored_by_both_paths() -> None:
    df = pl.DataFrame(
        {
            "y": [1, None, 0, 1, 0, 1, None],
            "score": [0.4, 0.9, None, -0.3, -0.3, None, -2.0],
            "w": [1.0, 1.0, 1.0, 2.0, 1.0, 1.0, None],
        }
    )
    clean = df.drop_nulls()
    for weight in (None, "w"):
        assert state_points(df, weight) == state_points(clean, weight)
        assert_points(clean, weight)


def test_nan_scores_are_one_threshold_above_every_score() -> None:
    """NaN of either sign or any payload: one threshold, first (as Polars sorts NaN), and
    NaN out of every scalar metric."""
    neg_nan = -float("nan")
    signalling = np.array([0x7FF0_0000_0000_0001], dtype=np.int64).view(np.float64)[0]
    df = pl.DataFrame(
        {
            "y": [1, 0, 1, 0, 1, 0],
            "score": [0.2, float("nan"), neg_nan, signalling, -0.7, float("inf")],
        }
    )
    for weight in (None, "w"):
        frame = df.with_columns(w=pl.lit(1.0))
        points = state_points(frame, weight)
        assert math.isnan(points["t"][0])
        assert points["t"][1:] == [float("inf"), 0.2, -0.7]
        assert points["tp"] == [1.0, 1.0, 2.0, 3.0] and points["fp"] == [2.0, 3.0, 3.0, 3.0]
        assert math.isnan(frame.select(pe.auc("y", "score", weight=weight)).item())


def test_logit_scores_vs_sklearn() -> None:
    """Continuous scores of both signs and large magnitude: both parts of the sort."""
    rng = np.random.default_rng(3)
    n = 3000
    y = rng.integers(0, 2, n)
    s = rng.normal(y * 1.5, 4.0)
    s[:200] = np.round(s[:200])  # some ties, on both sides of 0, and exact zeros
    df = pl.DataFrame({"y": y, "score": s, "g": rng.integers(0, 4, n)})
    assert math.isclose(df.select(pe.auc("y", "score")).item(), O.sk_auc(y, s), rel_tol=1e-12)
    assert math.isclose(
        df.select(pe.average_precision("y", "score")).item(),
        O.sk_average_precision(y, s),
        rel_tol=1e-12,
    )
    per = df.group_by("g").agg(pe.auc("y", "score")).sort("g")
    for g, value in per.iter_rows():
        part = df.filter(pl.col("g") == g)
        assert math.isclose(value, O.sk_auc(part["y"], part["score"]), rel_tol=1e-12)


def test_pos_label_and_bins_take_the_counted_path() -> None:
    df = pl.DataFrame(
        {"y": ["a", "b", "a", "b", "a"], "score": [0.91, 0.12, 0.55, 0.58, -0.0]}
    ).with_columns(one=pl.lit(1.0))
    for kwargs in ({"pos_label": "a"}, {"pos_label": "a", "bins": 4}):
        a = df.select(threshold_state("y", "score", None, **kwargs).alias("c"))
        b = df.select(threshold_state("y", "score", "one", **kwargs).alias("c"))
        assert a.equals(b)
    y = (df["y"] == "a").to_numpy().astype(int)
    assert math.isclose(
        df.select(pe.auc("y", "score", pos_label="a")).item(), O.sk_auc(y, df["score"])
    )
