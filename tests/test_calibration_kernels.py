"""The numpy paths of the calibration metrics (issue 26): the slope and intercept fitted
over the rows (collapsed to distinct scores when they are tied, every group in one call)
and the uniform-bin states counted per bin (``polars_eval.metrics._bin_sums``); against
statsmodels' binomial GLM, numpy's ``searchsorted`` and scikit-learn's bins."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_calibration import np_multiclass, sm_fit

import polars_eval as pe
from polars_eval._core.registry import REGISTRY
from polars_eval.metrics._bin_sums import _values, rows_of, top_label_sums, uniform_bins
from polars_eval.metrics.calibration import COLLAPSE_SAMPLE

EDGE_BINS = [1, 2, 3, 7, 10, 15, 100, 1000]


def searchsorted_bins(p: np.ndarray, bins: int) -> np.ndarray:
    """scikit-learn ``calibration_curve``'s uniform bin of each score."""
    return np.searchsorted(np.linspace(0.0, 1.0, bins + 1)[1:-1], p)


@pytest.mark.parametrize("bins", EDGE_BINS)
def test_uniform_bins_on_and_beside_every_edge(bins: int) -> None:
    """A score on an edge is in the bin below, one ulp above it in the bin above; the
    ends, outside [0, 1], ±0.0, subnormals, infinities and NaN (the last bin)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    p = np.concatenate(
        [
            edges,
            np.nextafter(edges, np.inf),
            np.nextafter(edges, -np.inf),
            np.arange(bins + 1) / bins,  # k/bins itself, not always linspace's edge
            [-0.0, 5e-324, 1e-310, -1e-310, -0.5, 1.5, np.inf, -np.inf, 1e300, np.nan],
        ]
    )
    got = uniform_bins(p, bins)
    want = searchsorted_bins(p, bins)
    want[np.isnan(p)] = bins - 1
    np.testing.assert_array_equal(got, want)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=True), min_size=1, max_size=50),
    st.sampled_from(EDGE_BINS),
)
def test_uniform_bins_is_searchsorted(values: list[float], bins: int) -> None:
    p = np.array(values)
    np.testing.assert_array_equal(uniform_bins(p, bins), searchsorted_bins(p, bins))


def recalibration_frame(n: int, groups: int, *, seed: int, decimals: int | None) -> pl.DataFrame:
    """Miscalibrated scores (tied when rounded), integer weights with zeros, groups."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < p**1.5).astype(np.int64)
    if decimals is not None:
        p = np.round(p, decimals)
    return pl.DataFrame(
        {"y": y, "p": p, "w": rng.integers(0, 3, n).astype(float), "g": np.arange(n) % groups}
    )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("decimals", [None, 2])
def test_large_groups_fitted_over_rows_or_distinct_scores(
    weighted: bool, decimals: int | None, collect: Callable[..., pl.DataFrame]
) -> None:
    """Two groups of 40,000 rows (large enough that tied scores are collapsed group by
    group, and that distinct scores are fitted in chunks in two threads): the bare
    expression per group = the planner's fit over the threshold state = statsmodels, and
    the whole frame alike."""
    df = recalibration_frame(80_000, 2, seed=41, decimals=decimals)
    weight = "w" if weighted else None
    exprs = [
        pe.calibration_slope("y", "p", weight=weight).alias("slope"),
        pe.calibration_intercept("y", "p", weight=weight).alias("intercept"),
    ]
    alone = collect(df.lazy().group_by("g").agg(exprs).sort("g"))
    planned = df.eval.binary(
        "y", "p", weight=weight, metrics=["calibration_slope", "calibration_intercept"], by="g"
    ).sort("g")
    for g, slope, intercept in alone.iter_rows():
        part = df.filter(pl.col("g") == g)
        w = part["w"].to_numpy() if weighted else None
        y, p = part["y"].to_numpy().astype(float), part["p"].to_numpy()
        assert slope == pytest.approx(sm_fit(y, p, w, slope=True), abs=1e-8)
        assert intercept == pytest.approx(sm_fit(y, p, w, slope=False), abs=1e-8)
    assert alone["slope"].to_list() == pytest.approx(
        planned["calibration_slope"].to_list(), rel=1e-12
    )
    assert alone["intercept"].to_list() == pytest.approx(
        planned["calibration_intercept"].to_list(), rel=1e-12
    )
    whole = collect(df.lazy().select(exprs)).row(0)
    w = df["w"].to_numpy() if weighted else None
    y, p = df["y"].to_numpy().astype(float), df["p"].to_numpy()
    assert whole == pytest.approx(
        (sm_fit(y, p, w, slope=True), sm_fit(y, p, w, slope=False)), abs=1e-8
    )


def test_separation_of_many_unsorted_rows() -> None:
    """More rows than the sample that can prove the classes overlap: separated and
    quasi-separated scores give no slope; one positive below the negatives, off the
    sample's rows, gives statsmodels' slope."""
    n = 20_000
    rng = np.random.default_rng(7)
    p = rng.uniform(0.05, 0.95, n)
    y = (p > 0.5).astype(np.int64)
    tie = p.copy()
    tie[np.flatnonzero(y == 1)[0]] = tie[y == 0].max()  # a positive on the top negative
    overlap = p.copy()
    step = n // COLLAPSE_SAMPLE  # the stride of the sample that may prove an overlap
    between = next(i for i in np.flatnonzero(y == 1) if i % step)  # not a sampled row
    overlap[between] = 0.01
    for scores, separated in ((p, True), (tie, True), (overlap, False)):
        df = pl.DataFrame({"y": y, "p": scores})
        slope = df.select(pe.calibration_slope("y", "p")).item()
        if separated:
            assert slope is None
        else:
            assert slope == pytest.approx(
                sm_fit(y.astype(float), scores, None, slope=True), abs=1e-8
            )
        spec = REGISTRY["calibration_slope"].spec(label="y", score="p")
        fitted = df.select(spec.finalize({"c": spec.states["c"].inline()})).item()
        assert fitted == (None if separated else pytest.approx(slope, rel=1e-12))


def test_rows_left_out_of_the_fit() -> None:
    """Rows with a null label, score or weight, or a weight of 0, are left out (a NaN
    score of weight 0 too); a NaN score that is used gives NaN, per group."""
    df = recalibration_frame(600, 3, seed=3, decimals=None).with_columns(w=pl.col("w") + 1.0)
    dirty = pl.concat(
        [
            df,
            pl.DataFrame(
                {
                    "y": [None, 1, 0, 1, 0],
                    "p": [0.3, None, 0.6, float("nan"), float("nan")],
                    "w": [1.0, 1.0, None, 0.0, 2.0],
                    "g": [0, 1, 2, 0, 2],
                },
                schema=df.schema,
            ),
        ]
    )
    for name in ("calibration_slope", "calibration_intercept"):
        for weight in (None, "w"):
            expr = getattr(pe, name)("y", "p", weight=weight)
            clean = df.group_by("g").agg(expr).sort("g")[name].to_list()
            got = dirty.group_by("g").agg(expr).sort("g")[name].to_list()
            if weight is None:  # the NaN scores are used: groups 0 and 2 are NaN
                assert np.isnan(got[0]) and np.isnan(got[2])
                assert got[1] == pytest.approx(clean[1], rel=1e-12)
            else:  # the NaN of weight 0 is left out, the one of weight 2 is not
                assert got[0] == pytest.approx(clean[0], rel=1e-12) and np.isnan(got[2])
                assert got[1] == pytest.approx(clean[1], rel=1e-12)


@pytest.fixture(scope="module")
def many_rows() -> tuple[pl.DataFrame, np.ndarray]:
    """140,000 rows (more than a chunk: two threads), 7 groups, the last of unknown
    labels; the probabilities as columns and as an array."""
    rng = np.random.default_rng(11)
    n = 140_000
    logits = rng.normal(size=(n, 4))
    y = rng.integers(0, 4, n)
    logits[np.arange(n), y] += 1.2
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    g = np.arange(n) % 7
    df = pl.DataFrame(
        {
            "y": np.where(g == 6, 9, y),
            **{f"p{k}": proba[:, k] for k in range(4)},
            "w": rng.integers(0, 4, n).astype(float),
            "g": g,
        }
    )
    return df, proba


@pytest.mark.parametrize("method", ["top_label", "classwise"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_bins_per_group_and_empty_groups(
    many_rows: tuple[pl.DataFrame, np.ndarray], method: str, weighted: bool
) -> None:
    """Counted per bin for many groups at once and for the whole frame: each equals the
    definition on its rows; a group without a usable row is null."""
    df, proba = many_rows
    weight = "w" if weighted else None
    expr = pe.multiclass_calibration_error(
        "y",
        ["p0", "p1", "p2", "p3"],
        classes=[0, 1, 2, 3],
        bins=12,
        norm="l2",
        method=method,
        weight=weight,
    )

    def want(rows: np.ndarray) -> float:
        if weighted:
            rows = rows & (df["w"].to_numpy() > 0)
        w = df["w"].to_numpy()[rows] if weighted else None
        return np_multiclass(df["y"].to_numpy()[rows], proba[rows], w, 12, "l2", method)

    g = df["g"].to_numpy()
    out = df.group_by("g").agg(expr).sort("g")
    for group, value in out.iter_rows():
        if group == 6:
            assert value is None
        else:
            assert value == pytest.approx(want(g == group), rel=1e-12, abs=1e-12)
    assert df.select(expr).item() == pytest.approx(want(g != 6), rel=1e-12, abs=1e-12)


def test_top_label_sums_on_ties_zeros_and_bad_rows() -> None:
    """The per-bin sums of the top label: the confidence on the edges, ties (the first
    class of the largest probability), −0.0 and 0 (bin 0), weights; a NaN probability
    or a negative confidence is a positive of NaN score in the last bin."""
    proba = np.array(
        [
            [0.25, 0.25, 0.5],
            [0.5, 0.5, 0.0],  # a tie: class 0
            [0.25, 0.75, 0.0],
            [0.0, 0.0, 0.0],  # confidence 0, class 0
            [-0.0, -0.0, -0.0],
            [1.0 / 3, 1.0 / 3, 1.0 / 3],
            [0.1, 0.45, 0.45],  # a tie: class 1
        ]
    )
    y = np.array([2, 1, 1, 0, 1, 2, 2])
    w = np.arange(1.0, len(y) + 1.0)
    bins = 4
    fields = {"y": y.tolist(), **{f"p{k}": proba[:, k].tolist() for k in range(3)}}
    state = top_label_sums(pl.Series([{**fields, "w": w.tolist()}]), bins=bins)
    conf, correct = proba.max(axis=1), (proba.argmax(axis=1) == y).astype(float)
    ids = np.searchsorted(np.linspace(0.0, 1.0, bins + 1)[1:-1], conf)
    want = [np.bincount(ids, weights=x, minlength=bins) for x in (w, w * correct, w * conf)]
    got = state.explode().struct.unnest()
    used = np.flatnonzero(want[0] > 0)
    assert got["b"].to_list() == used.tolist()
    for name, values in zip("wyp", want, strict=True):
        assert got[name].to_list() == values[used].tolist(), name
    bad = {"y": [0, 1, 0], "p0": [0.2, float("nan"), -0.5], "p1": [0.8, 0.1, -0.25]}
    last = top_label_sums(pl.Series([bad]), bins=bins).explode().struct.unnest()
    assert last["b"].to_list() == [3] and last["w"].to_list() == [3.0]
    assert last["y"].to_list() == [2.0] and np.isnan(last["p"][0])  # 0.8 wrong, 2 bad


@pytest.mark.parametrize("dtype", [pl.Boolean, pl.Float64, pl.Int32])
def test_rows_read_from_arrow_at_any_offset(dtype: pl.DataType) -> None:
    """The rows of a slice (an Arrow offset inside a byte of the bitmaps), with and
    without nulls, read as Polars holds them (an integer column as Float64)."""
    rng = np.random.default_rng(2)
    values = rng.integers(0, 2, 100) if dtype == pl.Boolean else rng.integers(-5, 5, 100)
    full = pl.Series("y", values).cast(dtype)
    nulls = full.scatter([0, 9, 10, 50, 99], None)
    for series in (full, nulls):
        for start, length in ((0, 100), (3, 60), (9, 1), (13, 0), (17, 83)):
            part = series.slice(start, length)
            lists = pl.select(pl.struct(pl.lit(part).implode().alias("y"))).to_series()
            groups, g, (got,) = rows_of(lists)
            kept = part.drop_nulls()
            assert groups == 1 and len(g) == len(kept)
            want = kept.to_numpy() if dtype == pl.Boolean else kept.cast(pl.Float64).to_numpy()
            np.testing.assert_array_equal(got, want)
            values, valid = _values(part)  # the slice itself: its Arrow offset
            mask = np.ones(length, bool) if valid is None else valid
            np.testing.assert_array_equal(mask, part.is_not_null().to_numpy())
            np.testing.assert_array_equal(values[mask], want)


@pytest.mark.parametrize("weighted", [False, True])
def test_each_group_is_fitted_as_alone(weighted: bool) -> None:
    """Groups fitted together (steps halved where they would lower a group's
    likelihood, checked per group) give each group's own fit: badly miscalibrated
    groups (far from the start a = 0, b = 1), a calibrated one, a small one, one with a
    single class (null)."""
    rng = np.random.default_rng(13)
    parts = []
    for g, (n, power, shift) in enumerate(
        [(3000, 4.0, 0.0), (2000, 0.3, 0.2), (5000, 1.0, 0.0), (40, 1.0, 0.0), (30, 1.0, 9.0)]
    ):
        p = rng.uniform(0.01, 0.99, n)
        y = (rng.random(n) < np.clip(p**power + shift, 0, 1)).astype(np.int64)
        parts.append(pl.DataFrame({"y": y, "p": p, "w": rng.integers(1, 4, n) * 1.0, "g": g}))
    df = pl.concat(parts)
    weight = "w" if weighted else None
    for name in ("calibration_slope", "calibration_intercept"):
        expr = getattr(pe, name)("y", "p", weight=weight)
        grouped = df.group_by("g").agg(expr).sort("g")[name].to_list()
        alone = [df.filter(pl.col("g") == g).select(expr).item() for g in range(5)]
        assert grouped[4] is None and alone[4] is None
        assert grouped[:4] == pytest.approx(alone[:4], rel=1e-12), name
