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
import pytest
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


# ---------------------------------------------------------------------------------------
# A metric computed alone, unweighted: straight from the sorted keys, without the state
# (``MetricSpec.alone``: AUC from the positives' places or per run, AP, PR-AUC and the ROC
# curve from the runs). The AUC chooses its way by the data (a slice of the sorted keys
# estimates the share of tied rows): each case below sits on one side of that choice.
# ---------------------------------------------------------------------------------------


def switch_frame(case: str, n: int = 4000, seed: int = 5) -> pl.DataFrame:
    """Scores of both signs: ``continuous`` (every score distinct: counted row by row),
    ``tied`` (9 distinct scores: counted per run), ``decimals`` (one decimal, about 100
    distinct scores: per run, tie blocks of one label too), ``clipped`` (distinct in the
    middle, tie blocks of both labels at both ends: row by row with tied pairs),
    ``mid-tied`` (a large tie block at the middle of each sign, distinct scores elsewhere:
    per run, most runs of one row)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.normal(y * 0.8, 1.5, n)
    if case == "tied":
        s = np.round(s).clip(-4, 4)
    elif case == "decimals":
        s = np.round(s, 1)
    elif case == "clipped":
        s = s.clip(-2.0, 2.5)
    elif case == "mid-tied":
        s = np.where(np.abs(s - 1.2) < 0.3, 1.2, s)
        s = np.where(np.abs(s + 1.2) < 0.3, -1.2, s)
    return pl.DataFrame({"y": y, "score": s})


SWITCH_CASES = ["continuous", "tied", "decimals", "clipped", "mid-tied"]


@pytest.mark.parametrize("case", SWITCH_CASES)
def test_metrics_alone_vs_sklearn_on_both_sides_of_the_switch(case: str) -> None:
    df = switch_frame(case)
    y, s = df["y"].to_numpy(), df["score"].to_numpy()
    got = df.select(
        pe.auc("y", "score"),
        pe.gini("y", "score"),
        pe.average_precision("y", "score"),
        pe.pr_auc("y", "score"),
    ).row(0)
    auc = O.sk_auc(y, s)
    assert math.isclose(got[0], auc, rel_tol=1e-12)
    assert math.isclose(got[1], 2.0 * auc - 1.0, rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(got[2], O.sk_average_precision(y, s), rel_tol=1e-12)
    assert math.isclose(got[3], O.brute_pr_auc(y, s), rel_tol=1e-12)
    assert math.isclose(got[0], O.brute_auc_pairs(y, s), rel_tol=1e-12)
    roc = df.eval.roc_curve("y", "score")
    want = O.sk_roc_curve(y, s)
    assert roc["threshold"].to_list() == want["threshold"].tolist()
    np.testing.assert_allclose(roc["fpr"].to_numpy(), want["fpr"], rtol=1e-12)
    np.testing.assert_allclose(roc["tpr"].to_numpy(), want["tpr"], rtol=1e-12)


@pytest.mark.parametrize("case", SWITCH_CASES)
def test_metrics_alone_equal_the_state_path(case: str) -> None:
    """Alone (no weight) and through the state (a weight column of ones: the state's
    ``sort_by``), per group and lazily on the streaming engine."""
    df = switch_frame(case).with_columns(one=pl.lit(1.0), g=pl.int_range(pl.len()) % 3)
    names = ["auc", "gini", "average_precision", "pr_auc", "roc_curve"]
    alone = [getattr(pe, m)("y", "score").alias(m) for m in names]
    state = [getattr(pe, m)("y", "score", weight="one").alias(m) for m in names]
    for by in ([], ["g"]):
        got = df.group_by(by).agg(alone).sort(by) if by else df.select(alone)
        want = df.group_by(by).agg(state).sort(by) if by else df.select(state)
        lazy = df.lazy().select(alone) if not by else df.lazy().group_by(by).agg(alone).sort(by)
        for frame in (got, lazy.collect(engine="streaming")):
            for m in names[:4]:
                np.testing.assert_allclose(frame[m].to_numpy(), want[m].to_numpy(), rtol=1e-12)
            a = frame.select("roc_curve").explode("roc_curve").unnest("roc_curve")
            b = want.select("roc_curve").explode("roc_curve").unnest("roc_curve")
            assert a["threshold"].to_list() == b["threshold"].to_list()
            for field in ("fpr", "tpr"):
                np.testing.assert_allclose(a[field].to_numpy(), b[field].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 300])
def test_auc_alone_on_few_rows_and_one_class(n: int) -> None:
    """Fewer rows than the slice that estimates the ties; one class; NaN; nulls."""
    df = switch_frame("tied", n=max(n, 1)).head(n)
    y, s = df["y"].to_numpy(), df["score"].to_numpy()
    got = df.select(pe.auc("y", "score")).item()
    if len(set(y.tolist())) < 2:
        assert got is None
    else:
        assert math.isclose(got, O.sk_auc(y, s), rel_tol=1e-12)
    assert df.with_columns(y=pl.lit(1)).select(pe.auc("y", "score")).item() is None
    if n:
        nan = df.with_columns(score=pl.when(pl.int_range(pl.len()) == n - 1).then(float("nan")))
        nan = nan.with_columns(score=pl.col("score").fill_null(df["score"]))
        assert math.isnan(nan.select(pe.auc("y", "score")).item())
        nulls = df.with_columns(y=pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise("y"))
        kept = df.slice(1)
        a = nulls.select(pe.auc("y", "score")).item()
        b = kept.select(pe.auc("y", "score")).item()
        assert a == b or (a is not None and math.isclose(a, b, rel_tol=1e-12))


def test_auc_adjacent_magnitudes_are_no_tie() -> None:
    """A negative at the magnitude just above a positive's (5e-324 over ±0.0: keys 2 and
    1) is no tied pair; found by hypothesis as a negative AUC."""
    rows = [(0, 2.0), (1, -0.0), (0, 5e-324), (0, 1e308), (0, 1e308), (0, 3.0)]
    rows += [(0, 1e308), (0, -0.0), (0, 3.0), (0, 1e308), (0, 5e-324)]
    df = pl.DataFrame({"y": [r[0] for r in rows], "score": [r[1] for r in rows]})
    want = O.brute_auc_pairs(df["y"].to_numpy(), df["score"].to_numpy(), None)
    assert want == 0.05  # the positive ties the negative -0.0 only: ½ of 10 pairs
    assert math.isclose(df.select(pe.auc("y", "score")).item(), want, rel_tol=1e-12)
    assert math.isclose(df.eval.auc("y", "score"), want, rel_tol=1e-12)
