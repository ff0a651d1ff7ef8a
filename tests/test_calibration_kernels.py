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
from test_calibration import multiclass_data, np_multiclass, sm_fit

import polars_eval as pe
from polars_eval._core.registry import REGISTRY
from polars_eval.metrics._bin_sums import (
    _values,
    decode_signed,
    rows_of,
    signed_bin_sums,
    uniform_bins,
)
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


@pytest.mark.parametrize("method", ["top_label", "classwise"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_bins_per_group_and_empty_groups(method: str, weighted: bool) -> None:
    """Counted per bin for many groups at once: each group equals the definition on its
    rows; a group without a usable row is null; merging partitions keeps the value."""
    df = multiclass_data(11, n=3_000).with_columns(g=pl.int_range(pl.len()) % 7)
    df = df.with_columns(y=pl.when(pl.col("g") == 6).then(9).otherwise(pl.col("y")))  # unknown
    weight = "w" if weighted else None
    expr = pe.multiclass_calibration_error(
        "y", "proba", classes=[0, 1, 2, 3], bins=12, norm="l2", method=method, weight=weight
    )
    out = df.group_by("g").agg(expr).sort("g")
    for g, value in out.iter_rows():
        if g == 6:
            assert value is None
            continue
        part = df.filter(pl.col("g") == g)
        if weighted:
            part = part.filter(pl.col("w") > 0)
        w = part["w"].to_numpy() if weighted else None
        want = np_multiclass(
            part["y"].to_numpy(), np.asarray(part["proba"].to_list()), w, 12, "l2", method
        )
        assert value == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_signed_keys_decode_to_the_scores() -> None:
    """The top-label keys of negatives (−p − TINY) give back p exactly in the per-bin
    score sums, for p = 0, subnormals and the normals where subtracting TINY is exact or
    a tie; positives, NaN (a positive, the last bin) and the weights alike."""
    tiny = 5e-324
    near = np.array([0.0, tiny, 1e-310, 2.0**-1022, 3 * 2.0**-1022, 2.0**-1021, 2.0**-1020])
    p = np.concatenate([near, np.nextafter(near, 1.0), [1e-300, 0.3, 0.5, 0.7, 1.0]])
    p = np.concatenate([p, p])
    positive = np.arange(len(p)) % 2 == 0
    key = np.where(positive, p, -p - tiny)
    w = np.arange(1.0, len(p) + 1.0)
    bins = 4
    state = signed_bin_sums(pl.Series([{"k": key.tolist(), "w": w.tolist()}]), bins=bins)
    ids = np.searchsorted(np.linspace(0.0, 1.0, bins + 1)[1:-1], p)
    want_w = np.bincount(ids, weights=w, minlength=bins)
    want_y = np.bincount(ids, weights=w * positive, minlength=bins)
    want_p = np.bincount(ids, weights=w * p, minlength=bins)
    got = pl.DataFrame(state.explode().struct.unnest())
    used = np.flatnonzero(want_w > 0)
    assert got["b"].to_list() == used.tolist()
    assert got["w"].to_list() == want_w[used].tolist()
    assert got["y"].to_list() == want_y[used].tolist()
    assert got["p"].to_list() == want_p[used].tolist()
    nan = signed_bin_sums(pl.Series([{"k": [0.2, float("nan"), -0.9]}]), bins=bins)
    last = nan.explode().struct.unnest()
    assert last["b"].to_list() == [0, 3] and last["y"].to_list() == [1.0, 1.0]
    assert np.isnan(last["p"][1])


def test_signed_key_decoding_is_exact() -> None:
    """A negative's key k decodes to −k − TINY bit for bit, around every power of two
    where subtracting TINY changes a number, is a tie, or does not."""
    tiny = 5e-324
    powers = 2.0 ** np.arange(-1074, -1000, dtype=float)
    p = np.concatenate([[0.0], powers, np.nextafter(powers, 1.0), np.nextafter(powers, 0.0)])
    key = -p - tiny
    positive, decoded = decode_signed(np.concatenate([key, p, [np.nan]]))
    assert positive.tolist() == [False] * len(p) + [True] * (len(p) + 1)
    np.testing.assert_array_equal(decoded[: len(p)], -key - tiny)  # as the sorted keys
    np.testing.assert_array_equal(decoded[len(p) : -1], p)
    assert np.isnan(decoded[-1])


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
