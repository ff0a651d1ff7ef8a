"""Calibration (SPEC §15): calibration error, reliability tables, the Brier decomposition,
logistic recalibration; against scikit-learn's ``calibration_curve``, numpy
transcriptions of the definitions on its bins, and statsmodels' binomial GLM.
BAD_INPUTS rows 62 and 63."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from sklearn.calibration import calibration_curve

import polars_eval as pe
from polars_eval._core import planner
from polars_eval._core.registry import REGISTRY

EPS = float(np.finfo(np.float64).eps)
NORMS = ("l1", "l2", "max")
STRATEGIES = ("uniform", "quantile")


# ---------------------------------------------------------------------------------------
# Oracles: numpy transcriptions of the definitions on scikit-learn's bins
# ---------------------------------------------------------------------------------------


def sk_edges(p: np.ndarray, bins: int, strategy: str, w: np.ndarray | None = None) -> np.ndarray:
    """``calibration_curve``'s edges (integer weights: those of the repeated rows)."""
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, bins + 1)
    rows = p if w is None else np.repeat(p, w.astype(int))
    return np.percentile(rows, np.linspace(0.0, 1.0, bins + 1) * 100)


def bin_sums(
    y: np.ndarray, p: np.ndarray, w: np.ndarray | None, bins: int, strategy: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weight, positives and score sum of each non-empty bin (``calibration_curve``'s)."""
    w = np.ones(len(y)) if w is None else w
    ids = np.searchsorted(sk_edges(p, bins, strategy, w)[1:-1], p)
    n = np.bincount(ids, weights=w, minlength=bins)
    pos = np.bincount(ids, weights=w * y, minlength=bins)
    sp = np.bincount(ids, weights=w * p, minlength=bins)
    used = n > 0
    return n[used], pos[used], sp[used]


def np_error(
    y: np.ndarray, p: np.ndarray, w: np.ndarray | None, bins: int, norm: str, strategy: str
) -> float:
    n, pos, sp = bin_sums(y, p, w, bins, strategy)
    gap = np.abs(pos / n - sp / n)
    if norm == "l1":
        return float((n * gap).sum() / n.sum())
    if norm == "l2":
        return float(np.sqrt((n * gap**2).sum() / n.sum()))
    return float(gap.max())


def np_murphy(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """Murphy (1973) over the distinct scores."""
    values, ids = np.unique(p, return_inverse=True)
    n = np.bincount(ids, weights=w)
    o = np.bincount(ids, weights=w * y) / n
    total, rate = w.sum(), (w * y).sum() / w.sum()
    return {
        "reliability": float((n * (values - o) ** 2).sum() / total),
        "resolution": float((n * (o - rate) ** 2).sum() / total),
        "uncertainty": float(rate * (1 - rate)),
    }


def np_stephenson(y: np.ndarray, p: np.ndarray, w: np.ndarray, bins: int) -> dict[str, float]:
    """Stephenson, Coelho & Jolliffe (2008) over uniform bins: row by row."""
    ids = np.searchsorted(np.linspace(0, 1, bins + 1)[1:-1], p)
    total, rate = w.sum(), (w * y).sum() / w.sum()
    n = np.bincount(ids, weights=w, minlength=bins)
    f = np.bincount(ids, weights=w * p, minlength=bins) / np.where(n > 0, n, 1)
    o = np.bincount(ids, weights=w * y, minlength=bins) / np.where(n > 0, n, 1)
    return {
        "reliability": float((n * (f - o) ** 2).sum() / total),
        "resolution": float((n * (o - rate) ** 2).sum() / total),
        "uncertainty": float(rate * (1 - rate)),
        "within_bin_variance": float((w * (p - f[ids]) ** 2).sum() / total),
        "within_bin_covariance": float(2 * (w * (y - o[ids]) * (p - f[ids])).sum() / total),
    }


def logit(p: np.ndarray) -> np.ndarray:
    c = np.clip(p, EPS, 1 - EPS)
    return np.log(c) - np.log1p(-c)


def sm_fit(y: np.ndarray, p: np.ndarray, w: np.ndarray | None, *, slope: bool) -> float:
    """The slope (b of a + b·logit p) or the intercept (a of a + logit p, an offset) of
    statsmodels' binomial GLM, converged tightly; frequency weights."""
    x = logit(p)
    kw: dict[str, Any] = {} if w is None else {"freq_weights": w}
    family = sm.families.Binomial()
    if slope:
        fit = sm.GLM(y, sm.add_constant(x), family=family, **kw).fit(tol=1e-14, maxiter=200)
        return float(fit.params[1])
    fit = sm.GLM(y, np.ones(len(y)), family=family, offset=x, **kw).fit(tol=1e-14, maxiter=200)
    return float(fit.params[0])


def sm_recalibration(y: np.ndarray, p: np.ndarray, w: np.ndarray | None) -> tuple[float, float]:
    return sm_fit(y, p, w, slope=True), sm_fit(y, p, w, slope=False)


def data(seed: int, n: int = 300, kind: str = "continuous", groups: int = 3) -> pl.DataFrame:
    """Labels drawn from miscalibrated probabilities, integer weights, groups."""
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 2.5, n)
    if kind == "tied":
        p = np.round(p, 1)
    elif kind == "edges":  # every score on a uniform edge of 10 bins, or one ulp off it
        grid = np.linspace(0.0, 1.0, 11)
        p = rng.choice(np.concatenate([grid, np.nextafter(grid, 2.0), np.nextafter(grid, -1.0)]), n)
        p = np.clip(p, 0.0, 1.0)
    y = (rng.random(n) < np.clip(0.1 + 0.8 * p**1.5, 0, 1)).astype(np.int64)
    return pl.DataFrame(
        {"y": y, "p": p, "w": rng.integers(0, 4, n).astype(float), "g": rng.integers(0, groups, n)}
    )


def arrays(df: pl.DataFrame, weighted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if weighted:
        df = df.filter(pl.col("w") > 0)
    w = df["w"].to_numpy() if weighted else None
    return df["y"].to_numpy().astype(float), df["p"].to_numpy(), w


# ---------------------------------------------------------------------------------------
# calibration_table(strategy=) and calibration_error
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("kind", ["continuous", "tied", "edges"])
@pytest.mark.parametrize("bins", [1, 5, 10, 15])
def test_table_is_calibration_curve(strategy: str, kind: str, bins: int) -> None:
    df = data(bins, kind=kind)
    table = df.eval.calibration_table("y", "p", bins=bins, strategy=strategy)
    prob_true, prob_pred = calibration_curve(df["y"], df["p"], n_bins=bins, strategy=strategy)
    np.testing.assert_allclose(table["positive_rate"], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(table["mean_score"], prob_pred, rtol=0, atol=1e-12)
    edges = sk_edges(df["p"].to_numpy(), bins, strategy)
    ids = np.searchsorted(edges[1:-1], df["p"].to_numpy())
    assert table["bin"].to_list() == sorted(set((ids + 1).tolist()))
    np.testing.assert_array_equal(table["lower"], edges[table["bin"] - 1])
    np.testing.assert_array_equal(table["upper"], edges[table["bin"]])
    np.testing.assert_array_equal(table["count"], np.bincount(ids)[table["bin"] - 1])


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", ["continuous", "tied", "edges"])
def test_error_on_calibration_curve_bins(
    strategy: str, norm: str, weighted: bool, kind: str, collect: Callable[..., pl.DataFrame]
) -> None:
    df = data(7, kind=kind)
    weight = "w" if weighted else None
    expr = pe.calibration_error("y", "p", bins=8, norm=norm, strategy=strategy, weight=weight)
    y, p, w = arrays(df, weighted)
    assert collect(df.lazy().select(expr)).item() == pytest.approx(
        np_error(y, p, w, 8, norm, strategy), rel=1e-12, abs=1e-12
    )
    grouped = collect(df.lazy().group_by("g").agg(expr).sort("g"))
    for g, value in grouped.iter_rows():
        yg, pg, wg = arrays(df.filter(pl.col("g") == g), weighted)
        assert value == pytest.approx(np_error(yg, pg, wg, 8, norm, strategy), abs=1e-12)
    by = df.eval.calibration_error(
        "y", "p", bins=8, norm=norm, strategy=strategy, weight=weight, by="g"
    )
    assert_frame_equal(by, grouped, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_defaults_and_ece() -> None:
    """15 uniform bins, l1; ``pe.ece`` keeps its own 10 bins and is the l1 error there."""
    df = data(3)
    y, p, _ = arrays(df, False)
    assert df.eval.calibration_error("y", "p") == pytest.approx(
        np_error(y, p, None, 15, "l1", "uniform"), abs=1e-12
    )
    for weight in (None, "w"):
        got = df.group_by("g").agg(
            pe.ece("y", "p", weight=weight).alias("a"),
            pe.calibration_error("y", "p", bins=10, weight=weight).alias("b"),
            pe.ece("y", "p", bins=4, weight=weight).alias("c"),
            pe.calibration_error("y", "p", bins=4, weight=weight).alias("d"),
        )
        np.testing.assert_allclose(got["a"], got["b"], rtol=1e-12)
        np.testing.assert_allclose(got["c"], got["d"], rtol=1e-12)


@pytest.mark.parametrize("bins", [4, 10, 15])
def test_duplicate_quantile_edges_merge_bins(bins: int) -> None:
    """BAD_INPUTS 62: fewer distinct scores than bins; coinciding edges leave no empty bin
    (never a NaN), as scikit-learn."""
    df = pl.DataFrame({"y": [0, 1, 0, 1, 1, 0, 1], "p": [0.2, 0.2, 0.2, 0.6, 0.6, 0.9, 0.9]})
    table = df.eval.calibration_table("y", "p", bins=bins, strategy="quantile")
    prob_true, prob_pred = calibration_curve(df["y"], df["p"], n_bins=bins, strategy="quantile")
    np.testing.assert_allclose(table["positive_rate"], prob_true, atol=1e-12)
    np.testing.assert_allclose(table["mean_score"], prob_pred, atol=1e-12)
    assert table.height == 3
    assert table.select(pl.all().is_nan().any()).row(0) == (False,) * 6
    y, p, _ = arrays(df, False)
    for norm in NORMS:
        got = df.eval.calibration_error("y", "p", bins=bins, norm=norm, strategy="quantile")
        assert got == pytest.approx(np_error(y, p, None, bins, norm, "quantile"), abs=1e-12)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_integer_weights_are_repeated_rows(strategy: str) -> None:
    """The quantile edges count a weight as that many rows."""
    df = data(11, kind="tied")
    repeated = df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64))).explode(pl.all())
    for norm in NORMS:
        a = df.eval.calibration_error("y", "p", bins=7, norm=norm, strategy=strategy, weight="w")
        b = repeated.eval.calibration_error("y", "p", bins=7, norm=norm, strategy=strategy)
        assert a == pytest.approx(b, rel=1e-12)
    a_table = df.eval.calibration_table("y", "p", bins=7, strategy=strategy, weight="w")
    b_table = repeated.eval.calibration_table("y", "p", bins=7, strategy=strategy)
    assert_frame_equal(a_table, b_table, check_exact=False, rel_tol=1e-12)


@pytest.mark.parametrize(
    "spec",
    [
        {"name": "calibration_error", "strategy": "quantile", "norm": "l2", "bins": 6},
        {"name": "calibration_error", "strategy": "uniform", "norm": "max", "bins": 6},
        {"name": "calibration_table", "strategy": "quantile", "bins": 6},
        {"name": "brier_decomposition", "bins": 6},
    ],
    ids=["quantile", "uniform-max", "table-quantile", "brier-binned"],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_options_merge_across_partitions(spec: dict[str, Any], weighted: bool) -> None:
    """SPEC §10 with the options test_merge's defaults do not reach: states of disjoint
    partitions (one group missing from a part) merge to the whole frame's value."""
    options = {k: v for k, v in spec.items() if k != "name"}
    info = REGISTRY[spec["name"]]
    args = {"label": "y", "score": "p", "weight": "w" if weighted else None, **options}
    df = data(5, kind="tied").with_columns(part=pl.int_range(pl.len()) % 4)
    df = df.filter(~((pl.col("g") == 2) & (pl.col("part") == 0)))
    assert info.spec is not None
    specs = {info.name: info.spec(**args)}
    parts = [df.filter(pl.col("part") == k) for k in range(4)]
    stacked = pl.concat([planner.state_frame(part, specs, ["g"]).collect() for part in parts])
    merged = planner.merge_states(stacked.lazy(), specs, ["g"]).collect()
    whole = df.group_by("g").agg(info.fn(**args)).sort("g")
    assert_frame_equal(merged, whole, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_uniform_state_is_bounded_by_bins() -> None:
    """The uniform state holds one entry per non-empty bin, whatever the rows."""
    df = data(2, n=5000)
    info = REGISTRY["calibration_error"]
    assert info.spec is not None
    specs = {"e": info.spec(label="y", score="p", bins=15)}
    state = planner.state_frame(df, specs, ["g"]).collect()
    assert state["__pe_e__b"].list.len().max() <= 15


@settings(max_examples=30)
@given(
    scores=st.lists(
        st.floats(0.0, 1.0) | st.sampled_from(np.linspace(0, 1, 16).tolist()),
        min_size=1,
        max_size=40,
    ),
    seed=st.integers(0, 10),
    strategy=st.sampled_from(STRATEGIES),
)
def test_norms_are_ordered_and_bins_follow_searchsorted(
    scores: list[float], seed: int, strategy: str
) -> None:
    """l1 ≤ l2 ≤ max (power means of the gaps), and every row is counted in
    calibration_curve's bin."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, len(scores))
    assume(0 < y.sum() < len(y))
    df = pl.DataFrame({"y": y, "p": scores})
    kw: dict[str, Any] = {"bins": 15, "strategy": strategy}
    out = df.select(
        *(pe.calibration_error("y", "p", norm=n, **kw).alias(n) for n in NORMS),
        pe.calibration_table("y", "p", **kw),
    )
    l1, l2, mx = out.row(0)[:3]
    assert l1 <= l2 + 1e-12 and l2 <= mx + 1e-12
    table = out.select(pl.col("calibration_table").explode()).unnest("calibration_table")
    ids = np.searchsorted(sk_edges(np.asarray(scores), 15, strategy)[1:-1], scores)
    counts = np.bincount(ids, minlength=15)
    assert dict(zip(table["bin"], table["count"], strict=True)) == {
        b + 1: float(c) for b, c in enumerate(counts) if c
    }


# ---------------------------------------------------------------------------------------
# Bad inputs (BAD_INPUTS 62)
# ---------------------------------------------------------------------------------------

BINNED = {
    "calibration_error": lambda **k: pe.calibration_error("y", "p", **k),
    "calibration_table": lambda **k: pe.calibration_table("y", "p", **k),
    "brier_decomposition": lambda **k: pe.brier_decomposition("y", "p", **k),
    "multiclass_calibration_error": lambda **k: pe.multiclass_calibration_error(
        "y", ["p", "q"], classes=[0, 1], **k
    ),
}


@pytest.mark.parametrize("name", list(BINNED))
@pytest.mark.parametrize("bins", [0, -3, 2.5, True, "10"])
def test_bins_must_be_a_positive_int(name: str, bins: Any) -> None:
    with pytest.raises(pe.InvalidParameterError, match="bins"):
        BINNED[name](bins=bins)


@pytest.mark.parametrize(
    ("build", "word"),
    [
        (lambda: pe.calibration_error("y", "p", norm="l3"), "norm"),
        (lambda: pe.calibration_error("y", "p", strategy="kmeans"), "strategy"),
        (lambda: pe.calibration_table("y", "p", strategy="kmeans"), "strategy"),
        (lambda: pe.multiclass_calibration_error("y", "p", classes=[0, 1], norm="l0"), "norm"),
        (lambda: pe.multiclass_calibration_error("y", "p", classes=[0, 1], method="x"), "method"),
        (lambda: pe.multiclass_calibration_error("y", "p", classes=None), "classes"),
    ],
)
def test_bad_options(build: Callable[[], pl.Expr], word: str) -> None:
    with pytest.raises(pe.InvalidParameterError, match=word):
        build()


PROBABILITY_METHODS = [
    "calibration_error",
    "calibration_table",
    "brier_decomposition",
    "calibration_slope",
    "calibration_intercept",
]


@pytest.mark.parametrize("name", PROBABILITY_METHODS)
@pytest.mark.parametrize("bad", [1.5, -0.25, float("nan")])
def test_scores_outside_the_unit_interval_are_an_error(name: str, bad: float) -> None:
    df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.2, bad, 0.7, 0.4]})
    with pytest.raises(pe.DataValidationError, match='"p"'):
        getattr(df.eval, name)("y", "p")
    lazy = getattr(df.lazy().eval, name)("y", "p", by="y")
    with pytest.raises(pe.DataValidationError, match='"p"'):
        lazy.collect()


def test_multiclass_probabilities_are_checked() -> None:
    df = pl.DataFrame({"y": [0, 1], "p": [[0.5, 0.7], [0.2, 0.8]]})
    with pytest.raises(pe.DataValidationError, match="summing to 1"):
        df.eval.multiclass_calibration_error("y", "p", classes=[0, 1])


def test_nan_score_in_a_bare_expression_is_nan() -> None:
    df = pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.2, float("nan"), 0.7, 0.4]})
    for strategy in STRATEGIES:
        for norm in NORMS:
            expr = pe.calibration_error("y", "p", norm=norm, strategy=strategy)
            assert np.isnan(df.select(expr).item())
    for expr in (pe.calibration_slope("y", "p"), pe.calibration_intercept("y", "p")):
        assert np.isnan(df.select(expr).item())
    for bins in (None, 5):
        value = df.select(pe.brier_decomposition("y", "p", bins=bins)).item()
        assert all(np.isnan(v) for v in value.values())


def test_empty_group_is_null() -> None:
    df = pl.DataFrame({"y": [0, 1, None], "p": [0.2, 0.7, 0.5], "g": ["a", "a", "b"]})
    out = df.group_by("g").agg(
        pe.calibration_error("y", "p").alias("u"),
        pe.calibration_error("y", "p", strategy="quantile").alias("q"),
        pe.calibration_slope("y", "p").alias("s"),
    )
    assert out.filter(g="b").select("u", "q", "s").row(0) == (None, None, None)
    with pytest.raises(pe.UndefinedMetricError, match="no rows"):
        df.filter(pl.col("g") == "b").eval.calibration_error("y", "p")


# ---------------------------------------------------------------------------------------
# Multiclass
# ---------------------------------------------------------------------------------------


def np_multiclass(
    y: np.ndarray, proba: np.ndarray, w: np.ndarray | None, bins: int, norm: str, method: str
) -> float:
    """Top-label (confidence vs correctness, argmax the first class among ties) or the
    mean of the one-vs-rest errors, on calibration_curve's uniform bins."""
    if method == "top_label":
        correct = (proba.argmax(axis=1) == y).astype(float)
        return np_error(correct, proba.max(axis=1), w, bins, norm, "uniform")
    errors = [
        np_error((y == k).astype(float), proba[:, k], w, bins, norm, "uniform")
        for k in range(proba.shape[1])
    ]
    return float(np.mean(errors))


def multiclass_data(seed: int, n: int = 400, tied: bool = False) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, 4))
    y = rng.integers(0, 4, n)
    logits[np.arange(n), y] += 1.2
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    if tied:
        proba = rng.multinomial(4, np.ones(4) / 4, size=n) / 4.0
    return pl.DataFrame(
        {
            "y": y,
            "proba": proba.tolist(),
            **{f"p{k}": proba[:, k] for k in range(4)},
            "w": rng.integers(0, 4, n).astype(float),
            "g": rng.integers(0, 2, n),
        }
    )


@pytest.mark.parametrize("method", ["top_label", "classwise"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tied", [False, True])
def test_multiclass_on_the_definition(
    method: str, norm: str, weighted: bool, tied: bool, collect: Callable[..., pl.DataFrame]
) -> None:
    df = multiclass_data(3, tied=tied)
    weight = "w" if weighted else None
    kw = {"classes": [0, 1, 2, 3], "bins": 10, "norm": norm, "method": method, "weight": weight}
    as_list = pe.multiclass_calibration_error("y", "proba", **kw)
    as_columns = pe.multiclass_calibration_error("y", ["p0", "p1", "p2", "p3"], **kw)
    as_array = pe.multiclass_calibration_error(
        "y", pl.col("proba").cast(pl.Array(pl.Float64, 4)), **kw
    )

    def want(frame: pl.DataFrame) -> float:
        if weighted:
            frame = frame.filter(pl.col("w") > 0)
        proba = np.asarray(frame["proba"].to_list())
        w = frame["w"].to_numpy() if weighted else None
        return np_multiclass(frame["y"].to_numpy(), proba, w, 10, norm, method)

    got = collect(df.lazy().select(as_list.alias("a"), as_columns.alias("b"), as_array.alias("c")))
    for value in got.row(0):
        assert value == pytest.approx(want(df), rel=1e-12, abs=1e-12)
    grouped = collect(df.lazy().group_by("g").agg(as_list).sort("g"))
    for g, value in grouped.iter_rows():
        assert value == pytest.approx(want(df.filter(pl.col("g") == g)), rel=1e-12, abs=1e-12)
    eager = df.eval.multiclass_calibration_error("y", "proba", **kw)
    assert eager == pytest.approx(want(df), rel=1e-12, abs=1e-12)


def test_multiclass_nan_probability_is_nan() -> None:
    df = pl.DataFrame({"y": [0, 1, 1], "a": [float("nan"), 0.2, 0.6], "b": [0.7, 0.8, 0.4]})
    for method in ("top_label", "classwise"):
        expr = pe.multiclass_calibration_error("y", ["a", "b"], classes=[0, 1], method=method)
        assert np.isnan(df.select(expr).item()), method


def test_float32_scores_and_pos_label() -> None:
    """SPEC §2: Float32 inputs give the Float64 result to 1e-6; string labels with
    pos_label=."""
    df = data(31, kind="tied").with_columns(
        label=pl.when(pl.col("y") == 1).then(pl.lit("bad")).otherwise(pl.lit("good"))
    )
    narrow = df.with_columns(pl.col("p").cast(pl.Float32))
    for strategy in STRATEGIES:
        a = narrow.eval.calibration_error("label", "p", pos_label="bad", strategy=strategy)
        b = df.eval.calibration_error("y", "p", strategy=strategy)
        assert a == pytest.approx(b, abs=1e-6)
    for name in ("calibration_slope", "calibration_intercept"):
        a = getattr(narrow.eval, name)("label", "p", pos_label="bad")
        assert a == pytest.approx(getattr(df.eval, name)("y", "p"), abs=1e-6)


def test_multiclass_top_label_confidence_on_edges_and_zero() -> None:
    """Confidences on the bin edges (a score on an edge is in the bin below), correct and
    not, and a row of zeros (confidence 0, class 0 by the tie rule): the one signed key
    per row gives calibration_curve's bins; a negative confidence is NaN."""
    proba = np.array(
        [
            [0.25, 0.25, 0.5],  # conf 0.5 (an edge), class 2
            [0.5, 0.25, 0.25],  # conf 0.5, class 0
            [0.25, 0.75, 0.0],  # conf 0.75 (an edge), class 1
            [0.75, 0.25, 0.0],
            [0.0, 0.0, 0.0],  # conf 0, class 0
            [0.0, 0.0, 0.0],
            [1.0 / 3, 1.0 / 3, 1.0 / 3],
            [0.25 + 1e-16, 0.75 - 1e-16, 0.0],
            [0.5 + 2**-53, 0.5 - 2**-53, 0.0],  # just above the edge 0.5
        ]
    )
    y = np.array([2, 1, 1, 1, 0, 2, 1, 0, 0])
    df = pl.DataFrame({"y": y, **{f"p{k}": proba[:, k] for k in range(3)}})
    cols = ["p0", "p1", "p2"]
    for norm in NORMS:
        got = df.select(
            pe.multiclass_calibration_error("y", cols, classes=[0, 1, 2], bins=4, norm=norm)
        ).item()
        assert got == pytest.approx(np_multiclass(y, proba, None, 4, norm, "top_label"), abs=1e-15)
    negative = df.with_columns(pl.lit(-0.5).alias("p0"), pl.lit(-0.25).alias("p1"))
    negative = negative.with_columns(pl.lit(-0.25).alias("p2"))
    expr = pe.multiclass_calibration_error("y", cols, classes=[0, 1, 2], bins=4)
    assert np.isnan(negative.select(expr).item())


def test_multiclass_string_classes_and_unknown_labels() -> None:
    df = pl.DataFrame(
        {"y": ["a", "b", "c", "a"], "p": [[0.5, 0.5], [0.1, 0.9], [0.3, 0.7], [1.0, 0.0]]}
    )
    expr = pe.multiclass_calibration_error("y", "p", classes=["a", "b"], bins=2)
    # a bare expression leaves out the row whose label is not a class
    kept = df.filter(pl.col("y") != "c").select(expr).item()
    assert df.select(expr).item() == kept
    with pytest.raises(pe.DataValidationError, match="classes"):
        df.eval.multiclass_calibration_error("y", "p", classes=["a", "b"])


# ---------------------------------------------------------------------------------------
# Brier decomposition
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", ["continuous", "tied"])
def test_murphy_decomposition_over_distinct_scores(weighted: bool, kind: str) -> None:
    df = data(13, kind=kind)
    weight = "w" if weighted else None
    got = df.eval.brier_decomposition("y", "p", weight=weight)
    brier = df.eval.brier("y", "p", weight=weight)
    assert got["brier"] == pytest.approx(brier, rel=1e-12, abs=1e-12)
    identity = got["reliability"] - got["resolution"] + got["uncertainty"]
    assert abs(identity - brier) <= 1e-12
    assert got["within_bin_variance"] == 0.0 and got["within_bin_covariance"] == 0.0
    y, p, w = arrays(df, weighted)
    for key, value in np_murphy(y, p, np.ones(len(y)) if w is None else w).items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bins", [1, 5, 10])
def test_binned_decomposition_closes_with_the_within_bin_terms(
    weighted: bool, bins: int, collect: Callable[..., pl.DataFrame]
) -> None:
    df = data(17, kind="edges")
    weight = "w" if weighted else None
    expr = pe.brier_decomposition("y", "p", bins=bins, weight=weight)
    got = collect(df.lazy().select(expr)).item()
    brier = df.eval.brier("y", "p", weight=weight)
    assert got["brier"] == pytest.approx(brier, rel=1e-12)
    identity = (
        got["reliability"]
        - got["resolution"]
        + got["uncertainty"]
        + got["within_bin_variance"]
        - got["within_bin_covariance"]
    )
    assert abs(identity - brier) <= 1e-12
    y, p, w = arrays(df, weighted)
    for key, value in np_stephenson(y, p, np.ones(len(y)) if w is None else w, bins).items():
        assert got[key] == pytest.approx(value, rel=1e-10, abs=1e-12), key
    by = df.eval.brier_decomposition("y", "p", bins=bins, weight=weight, by="g")
    grouped = collect(df.lazy().group_by("g").agg(expr).sort("g")).unnest("brier_decomposition")
    assert_frame_equal(by, grouped, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


# ---------------------------------------------------------------------------------------
# Calibration slope and intercept (BAD_INPUTS 63)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", ["continuous", "tied", "extremes"])
def test_recalibration_equals_a_binomial_glm(
    weighted: bool, kind: str, collect: Callable[..., pl.DataFrame]
) -> None:
    df = data(19, kind="tied" if kind == "tied" else "continuous")
    if kind == "extremes":  # scores of exactly 0 and 1, clipped as log loss clips them
        df = df.with_columns(
            p=pl.when(pl.int_range(pl.len()) % 50 == 0)
            .then(pl.lit(1.0))
            .when(pl.int_range(pl.len()) % 50 == 1)
            .then(pl.lit(0.0))
            .otherwise(pl.col("p"))
        )
    weight = "w" if weighted else None
    exprs = [
        pe.calibration_slope("y", "p", weight=weight),
        pe.calibration_intercept("y", "p", weight=weight),
    ]
    y, p, w = arrays(df, weighted)
    want = sm_recalibration(y, p, w)
    got = collect(df.lazy().select(exprs)).row(0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
    grouped = collect(df.lazy().group_by("g").agg(exprs).sort("g"))
    for g, slope, intercept in grouped.iter_rows():
        yg, pg, wg = arrays(df.filter(pl.col("g") == g), weighted)
        np.testing.assert_allclose((slope, intercept), sm_recalibration(yg, pg, wg), atol=1e-8)
    assert df.eval.calibration_slope("y", "p", weight=weight) == pytest.approx(want[0], abs=1e-8)
    assert df.eval.calibration_intercept("y", "p", weight=weight) == pytest.approx(
        want[1], abs=1e-8
    )


def test_recalibration_alone_is_the_fit_over_the_state() -> None:
    """The bare unweighted expression fits over the runs of equal (score, label), the
    planner over the threshold state's distinct scores: the same value, per group, with
    ties, scores outside [0, 1] (clipped), ±0.0, a string pos_label and a NaN group."""
    rng = np.random.default_rng(5)
    n = 900
    p = np.round(rng.uniform(-0.3, 1.3, n), 2)
    p[:5] = [0.0, -0.0, 1.0, -0.0, -1e-310]  # a subnormal: its key's bits are not a float
    y = np.where(rng.random(n) < np.clip(p, 0.05, 0.95), "b", "a")
    g = rng.integers(0, 3, n)
    p[(g == 2) & (np.arange(n) % 7 == 0)] = np.nan
    df = pl.DataFrame({"y": y, "p": p, "g": g})
    for name in ("calibration_slope", "calibration_intercept"):
        spec = REGISTRY[name].spec(label="y", score="p", pos_label="b")
        assert spec.alone is not None
        state = spec.finalize({"c": spec.states["c"].inline()})
        out = df.group_by("g").agg(spec.expr().alias("alone"), state.alias("state")).sort("g")
        for group, alone, fitted in out.iter_rows():
            if group == 2:
                assert np.isnan(alone) and np.isnan(fitted)
            else:
                assert alone == pytest.approx(fitted, rel=1e-12, abs=1e-12), (name, group)


def test_a_calibrated_model_has_slope_one_and_intercept_zero() -> None:
    rng = np.random.default_rng(23)
    p = rng.uniform(0.05, 0.95, 200_000)
    df = pl.DataFrame({"y": (rng.random(len(p)) < p).astype(int), "p": p})
    assert df.eval.calibration_slope("y", "p") == pytest.approx(1.0, abs=0.03)
    assert df.eval.calibration_intercept("y", "p") == pytest.approx(0.0, abs=0.03)


@pytest.mark.parametrize(
    ("y", "p", "slope_null", "intercept_null"),
    [
        ([1, 1, 1], [0.2, 0.5, 0.9], True, True),  # one class
        ([0, 0, 1, 1], [0.1, 0.2, 0.6, 0.9], True, False),  # separated
        ([0, 0, 1, 1], [0.1, 0.6, 0.6, 0.9], True, False),  # quasi-separated (a tie)
        ([1, 1, 0, 0], [0.1, 0.2, 0.6, 0.9], True, False),  # separated the other way
        ([0, 1, 0, 1], [0.4, 0.4, 0.4, 0.4], True, False),  # constant scores
    ],
    ids=["one-class", "separated", "quasi", "reversed", "constant"],
)
def test_no_maximum_likelihood_estimate_is_null(
    y: list[int], p: list[float], slope_null: bool, intercept_null: bool
) -> None:
    """BAD_INPUTS 63: null where no estimate exists, and the namespace says why."""
    df = pl.DataFrame({"y": y, "p": p})
    slope, intercept = df.select(
        pe.calibration_slope("y", "p"), pe.calibration_intercept("y", "p")
    ).row(0)
    assert (slope is None) == slope_null
    assert (intercept is None) == intercept_null
    if not intercept_null:  # the offset fixes the slope: the intercept's estimate exists
        want = sm_fit(np.array(y, dtype=float), np.array(p), None, slope=False)
        assert intercept == pytest.approx(want, abs=1e-8)
    with pytest.raises(pe.UndefinedMetricError, match="separate"):
        df.eval.calibration_slope("y", "p")
    two = pl.concat(
        [df.with_columns(g=pl.lit(1)), data(1, n=60).select("y", "p").with_columns(g=pl.lit(2))]
    )
    with pytest.warns(
        pe.UndefinedMetricWarning, match="calibration_slope is null for 1 of 2 groups"
    ):
        out = two.eval.calibration_slope("y", "p", by="g")
    assert out["calibration_slope"].null_count() == 1


def test_recalibration_reads_the_shared_threshold_state() -> None:
    """The fit needs only the distinct scores with their weighted labels: the state every
    sort-based binary metric shares (df.eval.binary computes it once)."""
    df = data(29, kind="tied")
    table = df.eval.binary(
        "y", "p", metrics=["auc", "calibration_slope", "calibration_intercept", "calibration_error"]
    )
    assert table["calibration_slope"].item() == pytest.approx(
        df.eval.calibration_slope("y", "p"), rel=1e-12
    )
    assert table["calibration_error"].item() == pytest.approx(
        df.eval.calibration_error("y", "p"), rel=1e-12
    )
