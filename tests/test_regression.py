"""Regression metrics and diagnostics (SPEC §5) against scikit-learn, scipy, worked examples
of the literature and brute force written here."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import polars as pl
import pytest
import scipy.stats as ss
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from sklearn import metrics as skm

import polars_eval as pe
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)
from polars_eval.metrics import _rank_kernels
from polars_eval.metrics._rank_kernels import _inversions, _kendall_tau_b, _small_inversions
from polars_eval.metrics.regression import normal_quantile

SCALAR = [
    "mse",
    "rmse",
    "mae",
    "medae",
    "max_error",
    "bias",
    "r2",
    "r2_pearson",
    "pearson",
    "spearman",
    "kendall_tau",
    "explained_variance",
    "rmsle",
    "msle",
    "rmspe",
    "mape",
    "smape",
    "mer",
    "wape",
]


def reg_data(n: int, *, seed: int = 0, tied: bool = False, groups: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 2.0, n) + 0.5
    p = y + rng.normal(0.0, 1.0, n)
    p = np.abs(p) + 0.1
    if tied:
        y, p = np.round(y), np.round(p)
        y[y == 0] = 1.0
    data = {"y": y, "p": p, "w": rng.integers(0, 4, n).astype(np.float64)}
    if groups:
        data["g"] = rng.integers(0, groups, n)
    return pl.DataFrame(data)


def repeat(df: pl.DataFrame) -> pl.DataFrame:
    """Rows repeated by their integer weight (the oracle for weights)."""
    idx = np.repeat(np.arange(df.height), df.get_column("w").cast(pl.Int64).to_numpy())
    return df[idx]


def sk_oracle(name: str) -> Callable[..., float]:
    table: dict[str, Callable[..., float]] = {
        "mse": skm.mean_squared_error,
        "rmse": skm.root_mean_squared_error,
        "mae": skm.mean_absolute_error,
        "medae": skm.median_absolute_error,
        "r2": skm.r2_score,
        "explained_variance": skm.explained_variance_score,
        "msle": skm.mean_squared_log_error,
        "rmsle": skm.root_mean_squared_log_error,
        "mape": skm.mean_absolute_percentage_error,
    }
    return table[name]


SK_NAMES = ["mse", "rmse", "mae", "medae", "r2", "explained_variance", "msle", "rmsle", "mape"]


# ---------------------------------------------------------------------------------------
# Oracles
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SK_NAMES)
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_sklearn_oracle(name: str, tied: bool, weighted: bool, collect) -> None:
    df = reg_data(300, seed=1, tied=tied)
    y, p, w = (df.get_column(c).to_numpy() for c in ("y", "p", "w"))
    expected = sk_oracle(name)(y, p, sample_weight=w if weighted else None)
    fn = getattr(pe, name)
    got = collect(df.lazy().select(fn("y", "p", weight="w" if weighted else None))).item()
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_max_error_and_bias_oracle() -> None:
    df = reg_data(200, seed=2)
    y, p = df.get_column("y").to_numpy(), df.get_column("p").to_numpy()
    assert df.eval.max_error("y", "p") == pytest.approx(skm.max_error(y, p))
    assert df.eval.bias("y", "p") == pytest.approx(float(np.mean(p - y)))
    w = df.get_column("w").to_numpy()
    assert df.eval.max_error("y", "p", weight="w") == pytest.approx(
        float(np.abs(y - p)[w > 0].max())
    )


@pytest.mark.parametrize("tied", [False, True])
def test_scipy_correlations(tied: bool, collect) -> None:
    df = reg_data(400, seed=3, tied=tied)
    y, p = df.get_column("y").to_numpy(), df.get_column("p").to_numpy()
    out = collect(
        df.lazy().select(
            pe.pearson("y", "p"),
            pe.spearman("y", "p"),
            pe.kendall_tau("y", "p"),
            pe.r2_pearson("y", "p"),
        )
    ).row(0, named=True)
    assert out["pearson"] == pytest.approx(ss.pearsonr(y, p).statistic, rel=1e-10)
    assert out["r2_pearson"] == pytest.approx(ss.pearsonr(y, p).statistic ** 2, rel=1e-10)
    assert out["spearman"] == pytest.approx(ss.spearmanr(y, p).statistic, rel=1e-10)
    assert out["kendall_tau"] == pytest.approx(ss.kendalltau(y, p).statistic, rel=1e-10)


@pytest.mark.parametrize("tied", [False, True])
def test_correlations_weights_are_repetition(tied: bool) -> None:
    df = reg_data(150, seed=4, tied=tied)
    rep = repeat(df)
    y, p = rep.get_column("y").to_numpy(), rep.get_column("p").to_numpy()
    out = df.select(
        pe.pearson("y", "p", weight="w"),
        pe.spearman("y", "p", weight="w"),
        pe.kendall_tau("y", "p", weight="w"),
    ).row(0, named=True)
    assert out["pearson"] == pytest.approx(ss.pearsonr(y, p).statistic, rel=1e-10)
    assert out["spearman"] == pytest.approx(ss.spearmanr(y, p).statistic, rel=1e-10)
    assert out["kendall_tau"] == pytest.approx(ss.kendalltau(y, p).statistic, rel=1e-10)


def brute_inversions(y: np.ndarray, w: np.ndarray) -> float:
    total = 0.0
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
            if y[i] > y[j]:
                total += w[i] * w[j]
    return total


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64, 100, 300])
def test_inversion_count_brute_force(n: int) -> None:
    rng = np.random.default_rng(n)
    y = rng.integers(0, 5 if n < 100 else 50, n).astype(float)
    w = rng.integers(0, 4, n).astype(float)
    order = np.lexsort((np.arange(n), y))
    assert _inversions(order, None) == brute_inversions(y, np.ones(n))
    assert _inversions(order, w) == pytest.approx(brute_inversions(y, w))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=0, max_size=80),
    st.lists(st.integers(0, 3), min_size=80, max_size=80),
    st.integers(1, 9),
)
def test_inversion_count_levels_against_brute_force(
    values: list[int], weights: list[int], block: int
) -> None:
    # many ties; bottom blocks from 1 to 9 positions: every split level, the padding to
    # S·2^J positions and the direct comparisons inside the bottom blocks
    y = np.array(values, dtype=float)
    n = y.size
    w = np.array(weights[:n], dtype=float)
    order = np.lexsort((np.arange(n), y))  # positions by (value, position)
    saved = _rank_kernels.INVERSION_BLOCK, _rank_kernels.INVERSION_BLOCK_WEIGHTED
    try:
        _rank_kernels.INVERSION_BLOCK = _rank_kernels.INVERSION_BLOCK_WEIGHTED = block
        unweighted, weighted = _inversions(order, None), _inversions(order, w)
    finally:
        _rank_kernels.INVERSION_BLOCK, _rank_kernels.INVERSION_BLOCK_WEIGHTED = saved
    assert unweighted == brute_inversions(y, np.ones(n))
    assert isinstance(unweighted, int)
    assert weighted == pytest.approx(brute_inversions(y, w), abs=1e-9)


@pytest.mark.parametrize("size", [33, 50, 64])
def test_bottom_block_inversions_by_bit_masks(size: int) -> None:
    # 5,000 rows of at least 33: enough that the rows are counted with a bit mask each
    rng = np.random.default_rng(size)
    rows = np.argsort(rng.random((5000, size)), axis=1).astype(np.int32)
    assert rows.shape[0] * size * size > 1 << 22
    expected = sum(int((row[i] > row[i + 1 :]).sum()) for row in rows for i in range(size))
    assert _small_inversions(rows) == expected


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 3000),
    st.sampled_from([0, 1, 2, 5, 40, 1000]),
    st.sampled_from([0, 1, 3, 30, 700]),
    st.integers(0, 2**32 - 1),
)
def test_kendall_paths_against_scipy(n: int, x_values: int, y_values: int, seed: int) -> None:
    # 0 = continuous; few distinct values on both sides take the table of counts, the
    # others the inversion count with ties on one side, the other or both
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n) if x_values == 0 else rng.integers(0, x_values, n).astype(float)
    y = x + rng.normal(size=n) if y_values == 0 else rng.integers(0, y_values, n).astype(float)
    if y_values:
        y = np.where(rng.random(n) < 0.5, np.round(x), y)  # correlated, still tied
    expected = ss.kendalltau(x, y).statistic
    got = _kendall_tau_b(x, y, None)
    if np.isnan(expected):
        assert got is None
    else:
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-14)
    # integer weights = repeated rows
    w = rng.integers(1, 4, n)
    expected = ss.kendalltau(np.repeat(x, w), np.repeat(y, w)).statistic
    got = _kendall_tau_b(x, y, w.astype(float))
    if np.isnan(expected):
        assert got is None
    else:
        assert got == pytest.approx(expected, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize(
    "kind", ["continuous", "signed zeros and infinities", "close", "all close", "ties"]
)
def test_rank_order_paths_against_scipy(kind: str) -> None:
    # the packed-key sort behind Spearman's and Kendall's orders (``_sort_order``): values
    # that differ only in the low bits its positions replace ("close": a few such pairs
    # among 5,000 continuous values, re-sorted by value; "all close": every value, where
    # the argsort takes over), -0.0 next to 0.0, infinities, and many ties (the argsort)
    rng = np.random.default_rng(7)
    x = rng.normal(size=5000)
    if kind == "signed zeros and infinities":
        x[:30] = -0.0
        x[30:60] = 0.0
        x[60:70], x[70:80] = np.inf, -np.inf
    elif kind == "close":
        x[:40] = 1.0 + rng.integers(0, 6, 40) * 2.0**-52
    elif kind == "all close":
        x = 1e9 + rng.random(5000) * 1e-4
    elif kind == "ties":
        x = np.round(x, 1)
    y = -x + rng.normal(size=x.size) * 0.5
    np.testing.assert_array_equal(_rank_kernels._average_ranks(x), ss.rankdata(x))
    df = pl.DataFrame({"y": x, "p": y})
    got = df.select(pe.spearman("y", "p"), pe.kendall_tau("y", "p")).row(0)
    assert got[0] == pytest.approx(ss.spearmanr(x, y).statistic, rel=1e-12)
    assert got[1] == pytest.approx(ss.kendalltau(x, y).statistic, rel=1e-12)


def test_kendall_large_and_per_group(collect) -> None:
    df = reg_data(20_000, seed=5, tied=True, groups=3)
    y, p = df.get_column("y").to_numpy(), df.get_column("p").to_numpy()
    assert df.eval.kendall_tau("y", "p") == pytest.approx(ss.kendalltau(y, p).statistic)
    per = collect(df.lazy().group_by("g").agg(pe.kendall_tau("y", "p")).sort("g"))
    for g, value in per.iter_rows():
        part = df.filter(pl.col("g") == g)
        expected = ss.kendalltau(part.get_column("y"), part.get_column("p")).statistic
        assert value == pytest.approx(expected)


def test_worked_examples() -> None:
    # MSE of predictions (1, 4, 3) and (2, 3, 6) against actuals (2, 3, 4): 1 and 4/3
    df = pl.DataFrame({"y": [2, 3, 4], "a": [1, 4, 3], "b": [2, 3, 6]})
    assert df.eval.mse("y", "a") == pytest.approx(1.0)
    assert df.eval.mse("y", "b") == pytest.approx(4.0 / 3.0)
    # MAPE 216.67 % and SMAPE 80.95 % for actuals (0.01, 0.03), predictions (0.05, 0.04)
    df = pl.DataFrame({"y": [0.01, 0.03], "p": [0.05, 0.04]})
    assert df.eval.mape("y", "p") == pytest.approx(2.1667, abs=5e-5)
    assert df.eval.smape("y", "p") == pytest.approx(0.8095, abs=5e-5)


def test_percentage_errors_brute_force() -> None:
    df = reg_data(100, seed=6)
    y, p, w = (df.get_column(c).to_numpy() for c in ("y", "p", "w"))
    ape = np.abs(y - p) / np.abs(y)
    assert df.eval.mape("y", "p", weight="w") == pytest.approx(np.average(ape, weights=w))
    assert df.eval.rmspe("y", "p", weight="w") == pytest.approx(
        math.sqrt(np.average(ape**2, weights=w))
    )
    assert df.eval.mer("y", "p") == pytest.approx(float(np.median(ape)))
    rep = repeat(df)
    ape_rep = np.abs(rep["y"] - rep["p"]) / rep["y"].abs()
    assert df.eval.mer("y", "p", weight="w") == pytest.approx(float(np.median(ape_rep)))
    smape = 2 * np.abs(y - p) / (np.abs(y) + np.abs(p))
    assert df.eval.smape("y", "p", weight="w") == pytest.approx(np.average(smape, weights=w))
    assert df.eval.wape("y", "p", weight="w") == pytest.approx(
        np.sum(w * np.abs(y - p)) / np.sum(w * np.abs(y))
    )


def test_medae_weights_are_repetition() -> None:
    for seed in range(5):
        df = reg_data(31, seed=seed, tied=True)
        rep = repeat(df)
        expected = float(np.median(np.abs(rep["y"] - rep["p"])))
        assert df.eval.medae("y", "p", weight="w") == pytest.approx(expected)


# ---------------------------------------------------------------------------------------
# Conventions: groups, engines, dtypes, weights
# ---------------------------------------------------------------------------------------


def test_per_group_equals_per_frame(collect) -> None:
    df = reg_data(300, seed=7, groups=4)
    exprs = [getattr(pe, n)("y", "p", weight="w") for n in SCALAR]
    grouped = collect(df.lazy().group_by("g").agg(exprs).sort("g"))
    for row in grouped.iter_rows(named=True):
        single = df.filter(pl.col("g") == row["g"]).select(exprs).row(0, named=True)
        for name in SCALAR:
            assert row[name] == pytest.approx(single[name], rel=1e-12), name


def test_namespace_by_and_over() -> None:
    df = reg_data(120, seed=8, groups=3)
    by = df.eval.mae("y", "p", by="g")
    assert by.columns == ["g", "mae"]
    assert by.get_column("g").to_list() == [0, 1, 2]
    over = df.with_columns(pe.mae("y", "p").over("g").alias("m"))
    joined = over.join(by, on="g")
    assert np.allclose(joined["m"], joined["mae"])


def test_float32_equals_float64() -> None:
    df = reg_data(200, seed=9)
    df32 = df.with_columns(pl.col("y", "p").cast(pl.Float32))
    df64 = df32.with_columns(pl.col("y", "p").cast(pl.Float64))
    exprs = [getattr(pe, n)("y", "p", weight="w") for n in SCALAR]
    out32 = df32.select(exprs)
    a, b = out32.row(0), df64.select(exprs).row(0)
    assert a == pytest.approx(b, rel=1e-9)
    assert all(out32.schema[n] == pl.Float64 for n in SCALAR)


def test_zero_weight_is_removal_and_nulls_ignored() -> None:
    df = reg_data(60, seed=11)
    kept = df.filter(pl.col("w") > 0)
    nulls = df.with_columns(pl.when(pl.col("w") > 0).then(pl.col("p")).otherwise(None).alias("p"))
    for name in SCALAR:
        fn = getattr(pe, name)
        a = df.select(fn("y", "p", weight="w")).item()
        b = kept.select(fn("y", "p", weight="w")).item()
        c = nulls.select(fn("y", "p", weight="w")).item()
        assert a == pytest.approx(b, rel=1e-12), name
        assert a == pytest.approx(c, rel=1e-12), name


def test_integer_and_bool_inputs() -> None:
    df = pl.DataFrame({"y": [1, 2, 3, 4], "p": [1, 3, 2, 5]}, schema={"y": pl.Int8, "p": pl.UInt16})
    assert df.eval.mse("y", "p") == pytest.approx(0.75)
    assert df.eval.kendall_tau("y", "p") == pytest.approx(
        ss.kendalltau([1, 2, 3, 4], [1, 3, 2, 5]).statistic
    )


# ---------------------------------------------------------------------------------------
# Bad and edge inputs (BAD_INPUTS.md)
# ---------------------------------------------------------------------------------------


def test_nan_errors_in_namespace_and_nan_in_expression() -> None:  # row 2
    df = pl.DataFrame({"y": [1.0, 2.0, 3.0], "p": [1.0, float("nan"), 2.5]})
    for name in SCALAR:
        value = df.select(getattr(pe, name)("y", "p")).item()
        assert value is not None and math.isnan(value), name
    with pytest.raises(DataValidationError, match='column "p".*NaN'):
        df.eval.mae("y", "p")
    with pytest.raises(DataValidationError, match='column "p"'):
        df.lazy().eval.mae("y", "p").collect()


def test_inf_errors() -> None:  # row 4
    df = pl.DataFrame({"y": [1.0, float("inf")], "p": [1.0, 2.0]})
    with pytest.raises(DataValidationError, match='column "y".*inf'):
        df.eval.regression("y", "p")


def test_empty_and_all_zero_weights() -> None:  # rows 5, 37
    empty = pl.DataFrame({"y": [], "p": [], "w": []}, schema={c: pl.Float64 for c in "ypw"})
    zero = pl.DataFrame({"y": [1.0, 2.0], "p": [1.0, 3.0], "w": [0.0, 0.0]})
    for frame, weight in ((empty, None), (zero, "w")):
        out = frame.select([getattr(pe, n)("y", "p", weight=weight) for n in SCALAR])
        assert out.row(0) == tuple([None] * len(SCALAR))
        with pytest.raises(UndefinedMetricError):
            frame.eval.mae("y", "p", weight=weight)


def test_undefined_groups_warn_once() -> None:  # row 5 with by
    df = pl.DataFrame({"g": [1, 1, 2], "y": [1.0, 2.0, 3.0], "p": [1.0, 2.5, 3.0]})
    with pytest.warns(UndefinedMetricWarning, match="1 of 2 groups"):
        out = df.eval.r2("y", "p", by="g")
    assert out.get_column("r2").to_list()[1] is None


def test_missing_and_non_numeric_columns() -> None:  # row 6
    df = pl.DataFrame({"y": [1.0, 2.0], "p": ["a", "b"]})
    with pytest.raises(DataValidationError, match='column "p".*numeric'):
        df.eval.mae("y", "p")
    with pytest.raises(DataValidationError, match='column "q".*not found'):
        df.eval.mae("y", "q")


def test_zero_actuals() -> None:  # row 21
    df = pl.DataFrame({"y": [0.0, 1.0, 2.0, 0.0], "p": [1.0, 2.0, 3.0, 0.0]})
    assert df.eval.mape("y", "p") == pytest.approx((1.0 + 0.5) / 2)
    assert df.eval.rmspe("y", "p") == pytest.approx(math.sqrt((1.0 + 0.25) / 2))
    assert df.eval.mer("y", "p") == pytest.approx(0.75)
    assert df.eval.mape("y", "p", zero_actuals="inf") == math.inf
    assert df.eval.mer("y", "p", zero_actuals="inf") == pytest.approx(0.75)  # (0.5, 1, 0, inf)
    weighted = df.with_columns(pl.Series("w", [1.0, 1.0, 1.0, 0.0]))
    weighted = weighted.with_columns(pl.Series("p", [0.0, 2.0, 3.0, 9.0]))  # weight 0 row
    assert weighted.eval.mape("y", "p", weight="w", zero_actuals="inf") == pytest.approx(0.5)
    only = pl.DataFrame({"y": [0.0, 0.0], "p": [0.0, 0.0]})
    assert only.eval.mape("y", "p", zero_actuals="inf") == 0.0
    assert only.select(pe.mape("y", "p")).item() is None
    table = df.eval.regression("y", "p")
    assert table.get_column("zero_actuals").to_list() == [2]
    with pytest.raises(InvalidParameterError, match="zero_actuals"):
        pe.mape("y", "p", zero_actuals="zero")  # type: ignore[arg-type]


def test_smape_both_zero() -> None:  # row 22
    df = pl.DataFrame({"y": [0.0, 1.0], "p": [0.0, 3.0]})
    assert df.eval.smape("y", "p") == pytest.approx((0.0 + 1.0) / 2)


def test_log_errors_on_values_le_minus_one() -> None:  # row 23
    df = pl.DataFrame({"y": [0.5, -1.0], "p": [0.5, 0.2]})
    with pytest.raises(DataValidationError, match='column "y".*-1'):
        df.eval.rmsle("y", "p")
    with pytest.raises(DataValidationError, match='column "y"'):
        df.lazy().eval.msle("y", "p").collect()
    with pytest.warns(UndefinedMetricWarning, match="rmsle.*<= -1"):
        table = df.eval.regression("y", "p")  # the task table gives null instead
    assert table.get_column("rmsle").to_list() == [None]
    ok = pl.DataFrame({"y": [-0.5, 0.0], "p": [0.0, 1.0]})
    y, p = np.array([-0.5, 0.0]), np.array([0.0, 1.0])
    assert ok.eval.msle("y", "p") == pytest.approx(np.mean((np.log1p(p) - np.log1p(y)) ** 2))


def test_constant_and_one_row() -> None:  # rows 24, 26
    const = pl.DataFrame({"y": [2.0, 2.0, 2.0], "p": [1.0, 2.0, 3.0]})
    for name in ("r2", "explained_variance", "pearson", "spearman", "kendall_tau", "r2_pearson"):
        assert const.select(getattr(pe, name)("y", "p")).item() is None, name
    flat_pred = pl.DataFrame({"y": [1.0, 2.0, 3.0], "p": [2.0, 2.0, 2.0]})
    for name in ("pearson", "spearman", "kendall_tau"):
        assert flat_pred.select(getattr(pe, name)("y", "p")).item() is None, name
    one = pl.DataFrame({"y": [1.0], "p": [3.0]})
    assert one.eval.mse("y", "p") == 4.0
    assert one.select(pe.r2("y", "p"), pe.pearson("y", "p")).row(0) == (None, None)
    with pytest.raises(UndefinedMetricError, match="r2"):
        one.eval.r2("y", "p")


def test_large_offset_no_cancellation() -> None:  # row 25
    rng = np.random.default_rng(12)
    base = rng.normal(0.0, 1.0, 500)
    pred = base + rng.normal(0.0, 0.3, 500)
    df = pl.DataFrame({"y": base + 1e9, "p": pred + 1e9})
    r2 = skm.r2_score(base, pred)
    assert df.eval.r2("y", "p") == pytest.approx(r2, rel=1e-6)
    assert df.eval.pearson("y", "p") == pytest.approx(ss.pearsonr(base, pred).statistic, rel=1e-6)
    assert df.eval.explained_variance("y", "p") == pytest.approx(
        skm.explained_variance_score(base, pred), rel=1e-6
    )


def test_negative_weights() -> None:  # row 38
    df = pl.DataFrame({"y": [1.0, 2.0], "p": [1.0, 3.0], "wt": [1.0, -1.0]})
    with pytest.raises(DataValidationError, match='column "wt".*negative'):
        df.eval.mse("y", "p", weight="wt")


# ---------------------------------------------------------------------------------------
# Residual views
# ---------------------------------------------------------------------------------------


def test_residual_qq_against_scipy() -> None:
    df = reg_data(200, seed=13)
    r = (df["y"] - df["p"]).to_numpy()
    qq = df.eval.residual_qq("y", "p")
    n = len(r)
    z = np.sort((r - r.mean()) / r.std())
    theo = ss.norm.ppf((np.arange(1, n + 1) - 0.5) / n)
    assert np.allclose(qq["sample"].to_numpy(), z)
    assert np.allclose(qq["theoretical"].to_numpy(), theo, rtol=1e-8, atol=1e-8)
    assert np.allclose(qq["residual"].to_numpy(), np.sort(r))
    # the normal quantile approximation over the whole range
    p = np.concatenate(
        [np.linspace(1e-9, 0.03, 50), np.linspace(0.03, 0.97, 50), 1 - np.geomspace(1e-9, 0.03, 50)]
    )
    got = pl.DataFrame({"p": p}).select(normal_quantile(pl.col("p")))
    assert np.allclose(got.to_series().to_numpy(), ss.norm.ppf(p), rtol=2e-9, atol=1e-12)


def test_residual_qq_grouped_is_list_of_struct() -> None:
    df = reg_data(50, seed=14, groups=2)
    out = df.group_by("g").agg(pe.residual_qq("y", "p", weight="w"))
    assert out.schema["residual_qq"] == pl.List(
        pl.Struct({"theoretical": pl.Float64, "sample": pl.Float64, "residual": pl.Float64})
    )


@pytest.mark.parametrize("of", ["actual", "pred"])
def test_conditional_table_brute_force(of: str) -> None:
    df = reg_data(100, seed=15)  # distinct values: 10 bins of 10 rows
    table = df.eval.conditional_table("y", "p", of=of, bins=10)
    col = "y" if of == "actual" else "p"
    ordered = df.sort(col).with_columns((pl.int_range(pl.len()) // 10 + 1).alias("bin"))
    expected = (
        ordered.group_by("bin")
        .agg(
            pl.len().cast(pl.Float64).alias("count"),
            pl.col(col).min().alias("lower"),
            pl.col(col).max().alias("upper"),
            pl.col("y").mean().alias("mean_actual"),
            pl.col("p").mean().alias("mean_pred"),
            (pl.col("p") - pl.col("y")).mean().alias("bias"),
            (pl.col("y") - pl.col("p")).abs().mean().alias("mae"),
            ((pl.col("y") - pl.col("p")) ** 2).mean().sqrt().alias("rmse"),
        )
        .sort("bin")
    )
    assert table.height == 10
    for c in expected.columns:
        assert np.allclose(table[c].to_numpy(), expected[c].to_numpy()), c


def test_conditional_table_ties_and_options() -> None:
    df = pl.DataFrame({"y": [1.0, 1.0, 1.0, 2.0], "p": [1.0, 2.0, 3.0, 4.0]})
    table = df.eval.conditional_table("y", "p", bins=2)
    assert table["count"].to_list() == [3.0, 1.0]  # a tie block is never split
    with pytest.raises(InvalidParameterError, match="bins"):
        pe.conditional_table("y", "p", bins=0)
    with pytest.raises(InvalidParameterError, match="of"):
        pe.conditional_table("y", "p", of="residual")


# ---------------------------------------------------------------------------------------
# Task table
# ---------------------------------------------------------------------------------------


def test_regression_table_matches_single_metrics(collect) -> None:
    df = reg_data(200, seed=16, groups=3)
    table = collect(df.lazy().eval.regression("y", "p", weight="w", by="g"))
    for name in SCALAR:
        single = df.eval.__getattribute__(name)("y", "p", weight="w", by="g")
        assert np.allclose(table[name].to_numpy(), single[name].to_numpy()), name
    assert table.columns[: len(SCALAR) + 1] == ["g", *SCALAR]
    assert "zero_actuals" in table.columns


def test_regression_baseline() -> None:
    df = reg_data(120, seed=17, groups=2)
    table = df.eval.regression("y", "p", weight="w", by="g", baseline=True)
    for g, part in df.group_by("g"):
        mean = float(np.average(part["y"], weights=part["w"]))
        const = part.with_columns(pl.lit(mean).alias("c"))
        row = table.filter(pl.col("g") == g[0]).row(0, named=True)
        for name in ("mse", "rmse", "mae", "mape", "smape", "medae"):
            expected = const.select(getattr(pe, name)("y", "c", weight="w")).item()
            assert row[f"{name}_baseline"] == pytest.approx(expected), name
        assert row["r2_baseline"] == pytest.approx(0.0, abs=1e-12)
        assert "pearson_baseline" not in table.columns
    one = df.eval.regression("y", "p")
    assert one.height == 1 and "mse_baseline" not in one.columns


# ---------------------------------------------------------------------------------------
# Diagnostics
# ---------------------------------------------------------------------------------------


def hat_matrix(z: np.ndarray) -> np.ndarray:
    return z @ np.linalg.inv(z.T @ z) @ z.T


def test_vif_against_hat_matrix() -> None:
    rng = np.random.default_rng(18)
    n = 60
    a = rng.normal(size=n)
    b = a * 0.7 + rng.normal(size=n) * 0.5
    c = rng.normal(size=n) + b * 0.2
    df = pl.DataFrame({"a": a, "b": b, "c": c})
    out = df.eval.vif(["a", "b", "c"])
    x = np.column_stack([a, b, c])
    for j, name in enumerate(["a", "b", "c"]):
        others = np.column_stack([np.ones(n), np.delete(x, j, axis=1)])
        resid = x[:, j] - hat_matrix(others) @ x[:, j]
        r2 = 1 - resid @ resid / np.sum((x[:, j] - x[:, j].mean()) ** 2)
        assert out.filter(pl.col("feature") == name)["vif"].item() == pytest.approx(1 / (1 - r2))
    lazy = df.lazy().eval.vif(["a", "b", "c"])
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(out)


def test_cooks_distance_against_hat_matrix() -> None:
    rng = np.random.default_rng(19)
    n = 40
    x = rng.normal(size=(n, 2))
    y = 1 + x @ np.array([2.0, -1.0]) + rng.normal(size=n)
    y[5] += 8  # an influential point
    df = pl.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "y": y})
    out = df.eval.cooks_distance(["x1", "x2"], "y")
    z = np.column_stack([np.ones(n), x])
    h = hat_matrix(z)
    e = y - h @ y
    p = z.shape[1]
    s2 = e @ e / (n - p)
    lev = np.diag(h)
    d = e**2 / (p * s2) * lev / (1 - lev) ** 2
    assert np.allclose(out["leverage"].to_numpy(), lev)
    assert np.allclose(out["residual"].to_numpy(), e)
    assert np.allclose(out["cooks_distance"].to_numpy(), d)
    assert int(out["cooks_distance"].arg_max()) == 5
    # a null row is left out of the fit and gets nulls
    with_null = df.with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col("x1")).alias("x1")
    )
    out2 = with_null.eval.cooks_distance(["x1", "x2"], "y")
    assert out2.height == n and out2["cooks_distance"][3] is None


def test_singular_designs() -> None:
    df = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [2.0, 4.0, 6.0, 8.0, 10.0],
                       "c": [1.0, 0.0, 1.0, 0.0, 2.0], "k": [3.0] * 5, "y": [1.0, 3.0, 2.0, 5.0, 4.0]})  # fmt: skip
    with pytest.raises(DataValidationError, match=r"singular.*'a', 'b'"):
        df.eval.vif(["a", "b", "c"])
    with pytest.raises(DataValidationError, match=r"singular.*'a', 'b'"):
        df.eval.cooks_distance(["a", "b"], "y")
    with pytest.raises(DataValidationError, match='column "k" is constant'):
        df.eval.vif(["a", "k"])
    with pytest.raises(DataValidationError, match="singular"):
        df.eval.cooks_distance(["a", "k"], "y")
    with pytest.raises(DataValidationError, match='column "zz"'):
        df.eval.vif(["a", "zz"])
    with pytest.raises(DataValidationError, match="more rows"):
        df.head(2).eval.vif(["a", "c"])


def test_aic_bic() -> None:
    # a Gaussian linear model fitted by least squares: ln L = -n/2 (ln(2π RSS/n) + 1)
    rng = np.random.default_rng(20)
    n = 50
    x = rng.normal(size=n)
    y = 2 * x + rng.normal(size=n)
    z = np.column_stack([np.ones(n), x])
    rss = float(np.sum((y - hat_matrix(z) @ y) ** 2))
    ll = -n / 2 * (math.log(2 * math.pi * rss / n) + 1)
    k = 3  # intercept, slope, variance
    assert pe.aic(ll, k) == pytest.approx(2 * k - 2 * ll)
    assert pe.bic(ll, k, n) == pytest.approx(k * math.log(n) - 2 * ll)
    with pytest.raises(InvalidParameterError, match="k"):
        pe.aic(ll, 0)
    with pytest.raises(InvalidParameterError, match="log_likelihood"):
        pe.bic(float("nan"), 1, 10)


# ---------------------------------------------------------------------------------------
# Registry and properties
# ---------------------------------------------------------------------------------------


def test_registry_entries() -> None:
    table = pe.metrics().filter(pl.col("task") == "regression")
    names = set(table["name"])
    assert set(SCALAR) | {"residual_qq", "conditional_table"} <= names
    roles = pe.metrics().filter(pl.col("name") == "rmsle")["inputs"].item().to_list()
    assert roles == ["actual", "pred", "weight"]


finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=2, max_size=30), st.randoms())
def test_row_order_invariance(rows: list[tuple[float, float]], rnd) -> None:
    df = pl.DataFrame(rows, schema=["y", "p"], orient="row")
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=rnd.randint(0, 1000))
    names = ["mse", "mae", "medae", "r2", "pearson", "spearman", "kendall_tau", "smape", "wape"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = df.select([getattr(pe, n)("y", "p") for n in names]).row(0)
        b = shuffled.select([getattr(pe, n)("y", "p") for n in names]).row(0)
    for x, y in zip(a, b, strict=True):
        if x is None:
            assert y is None
        else:
            assert x == pytest.approx(y, rel=1e-9, abs=1e-9)


@settings(max_examples=12, deadline=None)
@given(
    st.lists(st.tuples(finite, finite), min_size=3, max_size=30),
    st.floats(0.5, 4),
    st.integers(-100, 100),
)
def test_rank_correlations_monotone_invariance(
    rows: list[tuple[float, float]], a: float, b: int
) -> None:
    df = pl.DataFrame(rows, schema=["y", "p"], orient="row").with_columns(
        (pl.col("p") * a + b).alias("q")
    )
    same_ranks = df.select((pl.col("p").rank("dense") == pl.col("q").rank("dense")).all()).item()
    for name in ("spearman", "kendall_tau"):
        fn = getattr(pe, name)
        x, y = df.select(fn("y", "p")).item(), df.select(fn("y", "q")).item()
        if same_ranks:
            assert (x is None and y is None) or x == pytest.approx(y, abs=1e-12)


def test_nan_in_a_row_ignored_for_null() -> None:  # rows 1 + 2: a null row is ignored first
    df = pl.DataFrame({"y": [1.0, 2.0, 3.0, float("nan"), 0.0], "p": [1.5, 2.0, 2.0, None, None]})
    clean = df.head(3)
    for name in SCALAR:
        for kwargs in ({}, {"zero_actuals": "inf"}) if name in ("mape", "rmspe", "mer") else ({},):
            fn = getattr(pe, name)
            got = df.select(fn("y", "p", **kwargs)).item()
            assert got == pytest.approx(clean.select(fn("y", "p", **kwargs)).item()), name


def test_diagnostics_streaming_equals_eager() -> None:
    rng = np.random.default_rng(21)
    df = pl.DataFrame(
        {"a": rng.normal(size=3000), "b": rng.normal(size=3000), "y": rng.normal(size=3000)}
    )
    lazy = df.lazy().eval.cooks_distance(["a", "b"], "y").collect(engine="streaming")
    assert np.allclose(
        lazy["cooks_distance"], df.eval.cooks_distance(["a", "b"], "y")["cooks_distance"]
    )
    assert (
        df.lazy().eval.vif(["a", "b"]).collect(engine="streaming").equals(df.eval.vif(["a", "b"]))
    )


# ---------------------------------------------------------------------------------------
# Tweedie deviances (SPEC §12), against scikit-learn
# ---------------------------------------------------------------------------------------

def _case_id(value: object) -> str:
    """A parameter's test id, the same in every process (an oracle's ``repr`` holds its
    address, which differs between pytest-xdist workers)."""
    return "oracle" if callable(value) else str(value)[:28]


DEVIANCES = [
    ("mean_poisson_deviance", {}, lambda y, p, w: skm.mean_poisson_deviance(y, p, sample_weight=w)),
    ("mean_gamma_deviance", {}, lambda y, p, w: skm.mean_gamma_deviance(y, p, sample_weight=w)),
    *(
        (
            "mean_tweedie_deviance",
            {"power": power},
            lambda y, p, w, power=power: skm.mean_tweedie_deviance(
                y, p, sample_weight=w, power=power
            ),
        )
        for power in (-1.5, 0.0, 1.0, 1.5, 2.0, 3.0)
    ),
]


@pytest.mark.parametrize(("name", "options", "oracle"), DEVIANCES, ids=_case_id)
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_deviances_against_sklearn(name, options, oracle, tied, weighted, collect) -> None:
    # a prediction of at least 0.5: every deviance's domain (rounding can make it 0)
    df = reg_data(300, seed=4, tied=tied, groups=3).with_columns(pl.col("p").clip(0.5))
    fn = getattr(pe, name)
    weight = "w" if weighted else None
    got = collect(df.lazy().select(fn("y", "p", weight=weight, **options))).item()
    y, p, w = (df.get_column(c).to_numpy() for c in ("y", "p", "w"))
    assert got == pytest.approx(oracle(y, p, w if weighted else None), rel=1e-9)
    # per group = per frame of the group, and the namespace equals the expression
    by = df.eval.__getattribute__(name)("y", "p", weight=weight, by="g", **options)
    for g, value in by.iter_rows():
        part = df.filter(pl.col("g") == g)
        y, p, w = (part.get_column(c).to_numpy() for c in ("y", "p", "w"))
        assert value == pytest.approx(oracle(y, p, w if weighted else None), rel=1e-9)


def test_poisson_deviance_zero_actual_and_domains() -> None:
    # a zero actual is in the Poisson domain (0·ln 0 = 0), not in the Gamma one
    df = pl.DataFrame({"y": [0.0, 1.0, 3.0], "p": [0.5, 1.5, 2.0]})
    expected = skm.mean_poisson_deviance([0.0, 1.0, 3.0], [0.5, 1.5, 2.0])
    assert df.eval.mean_poisson_deviance("y", "p") == pytest.approx(expected, rel=1e-12)
    with pytest.raises(
        DataValidationError, match=r'column "y" must hold values > 0 for mean_gamma'
    ):
        df.eval.mean_gamma_deviance("y", "p")
    bad = pl.DataFrame({"y": [1.0, 2.0], "pred": [0.0, -1.0]})
    with pytest.raises(DataValidationError, match=r'column "pred" must hold values > 0.*2 rows'):
        bad.eval.mean_poisson_deviance("y", "pred")
    negative = pl.DataFrame({"y": [-1.0, 2.0], "p": [1.0, 1.0]})
    with pytest.raises(DataValidationError, match=r'column "y" must hold values >= 0'):
        negative.eval.mean_tweedie_deviance("y", "p", power=1.5)
    # power 0 is the MSE and takes any real values; power < 0 needs a positive prediction
    assert negative.eval.mean_tweedie_deviance("y", "p", power=0) == pytest.approx(2.5)
    assert negative.eval.mean_tweedie_deviance("y", "p", power=-1.0) == pytest.approx(
        skm.mean_tweedie_deviance([-1.0, 2.0], [1.0, 1.0], power=-1.0), rel=1e-12
    )


@pytest.mark.parametrize("power", [0.5, "1", None, float("nan")])
def test_tweedie_power_is_checked(power: object) -> None:
    with pytest.raises(InvalidParameterError, match="power must be"):
        pe.mean_tweedie_deviance("y", "p", power=power)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# D² scores (SPEC §12), against scikit-learn
# ---------------------------------------------------------------------------------------

D2 = [
    ("d2_absolute_error", {}, lambda y, p, w: skm.d2_absolute_error_score(y, p, sample_weight=w)),
    *(
        (
            "d2_pinball",
            {"alpha": alpha},
            lambda y, p, w, alpha=alpha: skm.d2_pinball_score(y, p, sample_weight=w, alpha=alpha),
        )
        for alpha in (0.1, 0.25, 0.5, 0.9, 0.95)
    ),
    *(
        (
            "d2_tweedie",
            {"power": power},
            lambda y, p, w, power=power: skm.d2_tweedie_score(y, p, sample_weight=w, power=power),
        )
        for power in (-1.5, 0.0, 1.0, 1.5, 2.0, 3.0)
    ),
]


@pytest.mark.parametrize(("name", "options", "oracle"), D2, ids=_case_id)
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_d2_scores_against_sklearn(name, options, oracle, tied, weighted, collect) -> None:
    # tied: integer actuals and integer weights, so the weighted quantiles often fall exactly
    # on a cumulative weight (scikit-learn then averages two values)
    df = reg_data(300, seed=6, tied=tied, groups=3).with_columns(pl.col("p").clip(0.5))
    fn = getattr(pe, name)
    weight = "w" if weighted else None
    got = collect(df.lazy().select(fn("y", "p", weight=weight, **options))).item()
    y, p, w = (df.get_column(c).to_numpy() for c in ("y", "p", "w"))
    assert got == pytest.approx(oracle(y, p, w if weighted else None), rel=1e-9)
    # per group = per frame of the group, lazily on the engine and through the namespace
    expr = fn("y", "p", weight=weight, **options)
    grouped = collect(df.lazy().group_by("g").agg(expr).sort("g"))
    by = getattr(df.eval, name)("y", "p", weight=weight, by="g", **options)
    assert grouped["g"].to_list() == by["g"].to_list()
    assert grouped[name].to_list() == pytest.approx(by[name].to_list(), rel=1e-12)
    for g, value in by.iter_rows():
        part = df.filter(pl.col("g") == g)
        y, p, w = (part.get_column(c).to_numpy() for c in ("y", "p", "w"))
        assert value == pytest.approx(oracle(y, p, w if weighted else None), rel=1e-9)


@settings(max_examples=60)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 3)), min_size=2, max_size=12
    ),
    alpha=st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9]),
)
def test_d2_pinball_small_tied_data_against_sklearn(rows, alpha) -> None:
    # heavy ties and integer weights: the weighted quantile sits on a cumulative weight often
    y, p, w = (np.array(c, dtype=np.float64) for c in zip(*rows, strict=True))
    kept = w > 0
    assume(kept.sum() >= 2 and np.unique(y[kept]).size > 1)
    df = pl.DataFrame({"y": y, "p": p, "w": w})
    got = df.select(pe.d2_pinball("y", "p", weight="w", alpha=alpha)).item()
    assert got == pytest.approx(skm.d2_pinball_score(y, p, sample_weight=w, alpha=alpha), rel=1e-9)


def test_d2_undefined_is_null_and_nan_is_nan() -> None:
    constant = pl.DataFrame({"y": [2.0, 2.0, 2.0], "p": [1.0, 2.0, 3.0]})
    one_row = pl.DataFrame({"y": [2.0], "p": [1.0]})
    perfect_constant = pl.DataFrame({"y": [2.0, 2.0], "p": [2.0, 2.0]})
    calls = [pe.d2_absolute_error("y", "p"), pe.d2_pinball("y", "p", alpha=0.8)]
    calls += [pe.d2_tweedie("y", "p", power=pw).alias(f"tweedie_{pw}") for pw in (0, 1, 1.5, 2)]
    for frame in (constant, one_row, perfect_constant, constant.head(0)):
        # scikit-learn: 0.0 or 1.0 for a constant actual (force_finite), NaN below two rows
        assert all(v is None for v in frame.select(calls).row(0)), frame
    with pytest.raises(UndefinedMetricError, match="d2_tweedie is undefined.*non-constant"):
        constant.eval.d2_tweedie("y", "p")
    nan = pl.DataFrame({"y": [1.0, float("nan"), 3.0], "p": [1.0, 2.0, 2.0]})
    assert all(math.isnan(v) for v in nan.select(calls).row(0))
    # power < 0: a mean of the actual <= 0 is outside the prediction's domain
    negative = pl.DataFrame({"y": [-3.0, 1.0], "p": [1.0, 2.0]})
    assert negative.select(pe.d2_tweedie("y", "p", power=-1.5)).item() is None


def test_d2_zero_weight_rows_and_domains() -> None:
    df = reg_data(60, seed=8, tied=True).with_columns(pl.col("p").clip(0.5))
    kept = df.filter(pl.col("w") > 0)
    for fn in (pe.d2_absolute_error, pe.d2_pinball, pe.d2_tweedie):
        a = df.select(fn("y", "p", weight="w")).item()
        assert a == pytest.approx(kept.select(fn("y", "p", weight="w")).item(), rel=1e-12)
    bad = pl.DataFrame({"y": [0.0, 1.0, 2.0], "pred": [1.0, 1.0, 0.0]})
    with pytest.raises(
        DataValidationError, match=r'column "y" must hold values > 0 for d2_tweedie'
    ):
        bad.eval.d2_tweedie("y", "pred", power=2)
    with pytest.raises(DataValidationError, match=r'column "pred" must hold values > 0'):
        bad.eval.d2_tweedie("y", "pred", power=1)
    # zero actuals are in the domain for 1 <= power < 2 (0·ln 0 = 0, 0^(2-p) = 0)
    y, pr, w = (
        [0.0, 0.0, 1.0, 3.0, 2.0, 0.0],
        [0.5, 1.0, 1.5, 2.0, 2.5, 0.2],
        [1.0, 2.0, 0.0, 3.0, 1.0, 1.0],
    )
    zeros = pl.DataFrame({"y": y, "p": pr, "w": w})
    for power in (1.0, 1.5):
        assert zeros.eval.d2_tweedie("y", "p", weight="w", power=power) == pytest.approx(
            skm.d2_tweedie_score(y, pr, sample_weight=w, power=power), rel=1e-12
        )
    # power 0 (R²) and the pinball scores take any real values
    assert bad.eval.d2_tweedie("y", "pred") == pytest.approx(skm.r2_score([0, 1, 2], [1, 1, 0]))
    assert bad.eval.d2_absolute_error("y", "pred") == pytest.approx(
        skm.d2_absolute_error_score([0, 1, 2], [1, 1, 0])
    )
    with pytest.raises(InvalidParameterError, match=r"alpha must be a number in \(0, 1\)"):
        pe.d2_pinball("y", "p", alpha=1.0)
    with pytest.raises(InvalidParameterError, match="power must be"):
        pe.d2_tweedie("y", "p", power=0.5)


# pinball_loss is registered once, under "forecast", and is a plain regression metric too
@pytest.mark.parametrize("quantile", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("weighted", [False, True])
def test_pinball_loss_on_a_plain_frame(quantile, weighted, collect) -> None:
    df = reg_data(200, seed=9, tied=True, groups=3)
    weight = "w" if weighted else None
    y, p, w = (df.get_column(c).to_numpy() for c in ("y", "p", "w"))
    want = skm.mean_pinball_loss(y, p, alpha=quantile, sample_weight=w if weighted else None)
    assert df.eval.pinball_loss("y", "p", quantile=quantile, weight=weight) == pytest.approx(
        want, rel=1e-12
    )
    lazy = df.lazy().eval.pinball_loss("y", "p", quantile=quantile, weight=weight)
    assert collect(lazy).item() == pytest.approx(want, rel=1e-12)
    by = df.eval.pinball_loss("y", "p", quantile=quantile, weight=weight, by="g")
    for g, value in by.iter_rows():
        part = df.filter(pl.col("g") == g)
        y, p, w = (part.get_column(c).to_numpy() for c in ("y", "p", "w"))
        want = skm.mean_pinball_loss(y, p, alpha=quantile, sample_weight=w if weighted else None)
        assert value == pytest.approx(want, rel=1e-12)


def test_regression_table_metrics_selects_any_registered_metric() -> None:
    df = reg_data(200, seed=6, groups=3)
    chosen = ["mean_poisson_deviance", "rmse", "d2_tweedie"]
    got = df.eval.regression("y", "p", weight="w", by="g", metrics=chosen)
    assert got.columns == ["g", *chosen, "zero_actuals"]
    for name in chosen:
        want = getattr(df.eval, name)("y", "p", weight="w", by="g")
        assert_frame_equal(got.select("g", name), want, rel_tol=1e-12)
    # a chosen metric's own data check runs in the table too
    zeros = df.with_columns(pl.col("y").clip(upper_bound=1.0) - 1.0)
    with pytest.raises(DataValidationError, match='column "y" must hold values > 0'):
        zeros.eval.regression("y", "p", metrics=["mean_gamma_deviance"])
    with pytest.raises(InvalidParameterError, match="d2_pinball|not a regression metric"):
        df.eval.regression("y", "p", metrics=["residual_qq"])
