"""Forecasting metrics (SPEC §6) against utilsforecast and brute force written here."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
import utilsforecast.losses as ufl
from polars.testing import assert_frame_equal

import polars_eval as pe
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricWarning,
)

METRICS = ["mae", "mse", "rmse", "bias", "mape", "smape", "wape", "mase", "rmsse"]


def make_data(
    n_series: int = 5, n_train: int = 24, horizon: int = 6, *, seed: int = 0
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Train and test frames in utilsforecast's column names (unique_id, ds, y)."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for s in range(n_series):
        level = 10.0 + 5 * s
        season = np.sin(np.arange(n_train + horizon) * 2 * np.pi / 4) * 3
        y = level + season + rng.normal(0, 1, n_train + horizon)
        for t in range(n_train):
            train.append((f"s{s}", t, y[t]))
        for t in range(n_train, n_train + horizon):
            f = y[t] + rng.normal(0.5, 1.5)
            test.append((f"s{s}", t, y[t], f, f - 2.0, f + 2.0, f - 1.3, f + 1.3))
    train_df = pl.DataFrame(train, schema=["unique_id", "ds", "y"], orient="row")
    test_df = pl.DataFrame(
        test, schema=["unique_id", "ds", "y", "f", "f-lo-80", "f-hi-80", "q10", "q90"], orient="row"
    )
    return train_df, test_df


def uf(fn, test: pl.DataFrame, **kwargs) -> dict[str, float]:
    out = fn(test, **kwargs)
    return dict(zip(out["unique_id"].to_list(), out["f"].to_list(), strict=True))


def per_series(test: pl.DataFrame, train: pl.DataFrame, season: int = 4, **kwargs) -> pl.DataFrame:
    return test.eval.forecast(
        "y",
        "f",
        series="unique_id",
        time="ds",
        train=train,
        season_length=season,
        per_series=True,
        **kwargs,
    )


@pytest.mark.parametrize("season", [1, 4])
def test_against_utilsforecast(season: int) -> None:
    train, test = make_data(seed=season)
    test = test.with_columns(  # one zero actual: skipped by both in MAPE
        pl.when((pl.col("unique_id") == "s1") & (pl.col("ds") == 25)).then(0.0).otherwise(pl.col("y")).alias("y")
    )  # fmt: skip
    ours = per_series(test, train, season=season)
    got = {m: dict(zip(ours["unique_id"], ours[m], strict=True)) for m in ours.columns[2:]}
    models = ["f"]
    expected = {
        "mae": uf(ufl.mae, test, models=models),
        "mse": uf(ufl.mse, test, models=models),
        "rmse": uf(ufl.rmse, test, models=models),
        "bias": uf(ufl.bias, test, models=models),
        # utilsforecast's MAPE is NaN for a series with a zero actual; ours skips that row,
        # i.e. equals utilsforecast's on the frame without it
        "mape": uf(ufl.mape, test.filter(pl.col("y") != 0.0), models=models),
        "mase": uf(ufl.mase, test, models=models, seasonality=season, train_df=train),
        "rmsse": uf(ufl.rmsse, test, models=models, seasonality=season, train_df=train),
    }
    for name, values in expected.items():
        for sid, value in values.items():
            assert got[name][sid] == pytest.approx(value, rel=1e-10), (name, sid)
    # utilsforecast's SMAPE omits the factor 2 (range [0, 1]); ours is in [0, 2] (SPEC §2)
    for sid, value in uf(ufl.smape, test, models=models).items():
        assert got["smape"][sid] == pytest.approx(2 * value, rel=1e-10)
    assert got["zero_actuals"]["s1"] == 1
    assert math.isnan(uf(ufl.mape, test, models=models)["s1"])


def test_pinball_and_coverage_against_utilsforecast() -> None:
    train, test = make_data(seed=3)
    out = test.eval.forecast(
        "y",
        "f",
        series="unique_id",
        time="ds",
        quantiles={0.1: "q10", 0.9: "q90"},
        interval=("f-lo-80", "f-hi-80"),
        per_series=True,
    )
    q10 = ufl.quantile_loss(test, models={"f": "q10"}, q=0.1)
    q90 = ufl.quantile_loss(test, models={"f": "q90"}, q=0.9)
    cov = ufl.coverage(test, models=["f"], level=80)
    assert np.allclose(out["pinball_0.1"], q10["f"])
    assert np.allclose(out["pinball_0.9"], q90["f"])
    assert np.allclose(out["coverage"], cov["f"])
    # the expressions, per series
    expr = (
        test.group_by("unique_id")
        .agg(pe.pinball_loss("y", "q90", quantile=0.9), pe.coverage("y", "f-lo-80", "f-hi-80"))
        .sort("unique_id")
    )
    assert np.allclose(expr["pinball_loss"], q90["f"])
    assert np.allclose(expr["coverage"], cov["f"])


def test_pinball_median_is_half_mae() -> None:
    _, test = make_data(seed=4)
    a = test.select(pe.pinball_loss("y", "f", quantile=0.5)).item()
    assert a == pytest.approx(test.eval.mae("y", "f") / 2)
    with pytest.raises(InvalidParameterError, match="quantile"):
        pe.pinball_loss("y", "f", quantile=1.0)


def test_across_series_mean_and_pooled() -> None:
    train, test = make_data(seed=5)
    summary = test.eval.forecast(
        "y", "f", series="unique_id", time="ds", train=train, season_length=4
    )
    per = per_series(test, train)
    for m in METRICS:
        assert summary[m].item() == pytest.approx(per[m].mean()), m
    y, f = test["y"].to_numpy(), test["f"].to_numpy()
    e = y - f
    assert summary["mae_pooled"].item() == pytest.approx(np.mean(np.abs(e)))
    assert summary["rmse_pooled"].item() == pytest.approx(math.sqrt(np.mean(e**2)))
    assert summary["bias_pooled"].item() == pytest.approx(np.mean(f - y))
    assert summary["wape_pooled"].item() == pytest.approx(np.sum(np.abs(e)) / np.sum(np.abs(y)))
    assert summary["smape_pooled"].item() == pytest.approx(
        np.mean(2 * np.abs(e) / (np.abs(y) + np.abs(f)))
    )
    scale = pe.seasonal_scale(train, series="unique_id", time="ds", actual="y", season_length=4)
    joined = test.join(scale, on="unique_id")
    pooled_mase = np.mean(np.abs(e) / joined["mase_scale"].to_numpy())
    assert summary["mase_pooled"].item() == pytest.approx(pooled_mase)
    assert joined.select(pe.mase("y", "f", "mase_scale")).item() == pytest.approx(pooled_mase)
    assert summary["n_series"].item() == 5 and summary["n"].item() == test.height


def test_pooled_scaled_errors_weighted_with_undefined_scales() -> None:
    # brute force per row: the scale of its series (numpy naive errors on train), rows of a
    # series with no positive scale (constant, or absent from train) left out
    train, test = make_data(n_series=4, seed=25)
    train = train.with_columns(
        pl.when(pl.col("unique_id") == "s0").then(3.0).otherwise(pl.col("y")).alias("y")
    ).filter(pl.col("unique_id") != "s3")
    test = test.with_columns(w=pl.int_range(pl.len()).mod(3).cast(pl.Float64) + 0.5)
    mase_s, rmsse_s = {}, {}
    for (sid,), part in train.sort("ds").group_by("unique_id"):
        d = part["y"].to_numpy()[4:] - part["y"].to_numpy()[:-4]
        mase_s[sid], rmsse_s[sid] = np.mean(np.abs(d)), np.mean(d**2)
    rows = test.to_dicts()
    ok = [r for r in rows if mase_s.get(r["unique_id"], 0.0) > 0.0]
    assert {r["unique_id"] for r in ok} == {"s1", "s2"}
    w = np.array([r["w"] for r in ok])
    e = np.array([r["y"] - r["f"] for r in ok])
    ms = np.array([mase_s[r["unique_id"]] for r in ok])
    rs = np.array([rmsse_s[r["unique_id"]] for r in ok])
    out = test.eval.forecast(
        "y", "f", series="unique_id", time="ds", train=train, season_length=4, weight="w",
        metrics=["mase", "rmsse", "msse"],
    )  # fmt: skip
    assert out["mase_pooled"].item() == pytest.approx(np.sum(w * np.abs(e) / ms) / w.sum())
    assert out["msse_pooled"].item() == pytest.approx(np.sum(w * e**2 / rs) / w.sum())
    assert out["rmsse_pooled"].item() == pytest.approx(math.sqrt(np.sum(w * e**2 / rs) / w.sum()))


def test_per_series_equals_regression_expressions(collect) -> None:
    train, test = make_data(seed=6)
    lazy = test.lazy().eval.forecast("y", "f", series="unique_id", time="ds", per_series=True)
    ours = collect(lazy)
    exprs = [
        getattr(pe, m)("y", "f") for m in ("mae", "mse", "rmse", "bias", "mape", "smape", "wape")
    ]
    expected = test.group_by("unique_id").agg(exprs).sort("unique_id")
    for c in expected.columns[1:]:
        assert np.allclose(ours[c], expected[c]), c
    eager = test.eval.forecast("y", "f", series="unique_id", time="ds", per_series=True)
    assert_frame_equal(eager, ours, check_exact=False, rel_tol=1e-12)


def test_by_groups_equal_separate_frames() -> None:
    train, test = make_data(seed=7)
    test = test.with_columns((pl.col("unique_id").str.slice(1).cast(pl.Int64) % 2).alias("grp"))
    out = test.eval.forecast(
        "y", "f", series="unique_id", time="ds", train=train, season_length=4, by="grp"
    )
    assert out["grp"].to_list() == [0, 1]
    for g in (0, 1):
        single = test.filter(pl.col("grp") == g).eval.forecast(
            "y", "f", series="unique_id", time="ds", train=train, season_length=4
        )
        row = out.filter(pl.col("grp") == g).drop("grp")
        assert np.allclose(row.to_numpy(), single.to_numpy())


def test_weights() -> None:
    train, test = make_data(seed=8)
    rng = np.random.default_rng(0)
    test = test.with_columns(pl.Series("w", rng.integers(0, 4, test.height).astype(float)))
    out = test.eval.forecast("y", "f", series="unique_id", time="ds", weight="w", per_series=True)
    for sid, part in test.group_by("unique_id"):
        y, f, w = part["y"].to_numpy(), part["f"].to_numpy(), part["w"].to_numpy()
        row = out.filter(pl.col("unique_id") == sid[0]).row(0, named=True)
        assert row["mae"] == pytest.approx(np.average(np.abs(y - f), weights=w))
        assert row["bias"] == pytest.approx(np.average(f - y, weights=w))
        assert row["n"] == int((w > 0).sum())
    scale = pe.seasonal_scale(train, series="unique_id", time="ds", actual="y")
    joined = test.join(scale, on="unique_id")
    idx = np.repeat(np.arange(joined.height), joined["w"].cast(pl.Int64).to_numpy())
    rep = joined[idx]
    for m in ("mase", "rmsse"):
        col = f"{m}_scale"
        a = (
            joined.group_by("unique_id")
            .agg(getattr(pe, m)("y", "f", col, weight="w"))
            .sort("unique_id")
        )
        b = rep.group_by("unique_id").agg(getattr(pe, m)("y", "f", col)).sort("unique_id")
        assert np.allclose(a[m], b[m])


def test_lead_and_one_step_ahead() -> None:
    rng = np.random.default_rng(9)
    rows = []
    for s in ("a", "b"):
        for cutoff in range(4):
            for h in range(1, 4):
                y = float(rng.normal(10, 2))
                rows.append((s, cutoff, cutoff + h, y, y + float(rng.normal(0, h))))
    df = pl.DataFrame(rows, schema=["id", "cutoff", "t", "y", "f"], orient="row")
    by_lead = df.eval.forecast("y", "f", series="id", time="t", cutoff="cutoff", by="lead")
    assert by_lead["lead"].to_list() == [1, 2, 3]
    expected_lead = df.with_columns((pl.col("t") - pl.col("cutoff")).alias("lead"))
    for h in (1, 2, 3):
        part = expected_lead.filter(pl.col("lead") == h)
        assert by_lead.filter(pl.col("lead") == h)["mae_pooled"].item() == pytest.approx(
            part.eval.mae("y", "f")
        )
    one = df.eval.forecast("y", "f", series="id", time="t", cutoff="cutoff", lead=1)
    assert one["mae_pooled"].item() == pytest.approx(
        expected_lead.filter(pl.col("lead") == 1).eval.mae("y", "f")
    )
    per = df.eval.forecast(
        "y", "f", series="id", time="t", cutoff="cutoff", by="lead", per_series=True
    )
    assert per.columns[:2] == ["lead", "id"] and per.height == 6
    assert pe.with_lead(df, series="id", time="t", cutoff="cutoff")["lead"].equals(
        expected_lead["lead"]
    )
    with pytest.raises(InvalidParameterError, match="cutoff"):
        df.eval.forecast("y", "f", series="id", time="t", lead=1)


def test_duplicate_keys_error() -> None:  # BAD_INPUTS 29
    train, test = make_data(seed=10)
    dup = pl.concat([test, test.head(1)])
    with pytest.raises(
        DataValidationError,
        match=r"duplicate \(unique_id, ds\) rows: .*found 1 row.*e\.g\. \[\(unique_id='s0', ds=24\)\]",
    ):
        dup.eval.forecast("y", "f", series="unique_id", time="ds")
    with pytest.raises(DataValidationError, match="duplicate"):
        dup.lazy().eval.forecast("y", "f", series="unique_id", time="ds").collect()
    bad_train = pl.concat([train, train.head(1)])
    with pytest.raises(DataValidationError, match=r"train= frame has duplicate"):
        test.eval.forecast("y", "f", series="unique_id", time="ds", train=bad_train)
    # the key is (by groups, series, [cutoff,] time): several models or cutoffs are fine
    models = pl.concat([test.with_columns(pl.lit(m).alias("model")) for m in ("a", "b")])
    models.eval.forecast("y", "f", series="unique_id", time="ds", by="model")
    with pytest.raises(DataValidationError, match="duplicate"):
        models.eval.forecast("y", "f", series="unique_id", time="ds")
    two = pl.concat(
        [test.with_columns(pl.lit(0).alias("c")), test.with_columns(pl.lit(1).alias("c"))]
    )
    two.eval.forecast("y", "f", series="unique_id", time="ds", cutoff="c")


ORDERS = {
    "sorted": lambda df: df,
    "shuffled": lambda df: df.sample(fraction=1.0, shuffle=True, seed=7),
    "time-major": lambda df: df.sort("ds", "unique_id"),
    "series descending": lambda df: df.sort("unique_id", "ds", descending=[True, False]),
}


@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("lazy", [False, True])
def test_row_order_of_test_and_train_frames(order: str, lazy: bool) -> None:
    # the table takes fast paths on frames sorted by (series, time); any other row order
    # gives the same values: utilsforecast's, computed on the sorted frames
    train, test = make_data(n_series=6, seed=21)
    shuffle = ORDERS[order]
    t, tr = shuffle(test), shuffle(train)
    ours = per_series(t.lazy() if lazy else t, tr.lazy() if lazy else tr)
    if lazy:
        ours = ours.collect()
    got = {m: dict(zip(ours["unique_id"], ours[m], strict=True)) for m in ("mae", "mase", "rmsse")}
    expected = {
        "mae": uf(ufl.mae, test, models=["f"]),
        "mase": uf(ufl.mase, test, models=["f"], seasonality=4, train_df=train),
        "rmsse": uf(ufl.rmsse, test, models=["f"], seasonality=4, train_df=train),
    }
    for name, values in expected.items():
        for sid, value in values.items():
            assert got[name][sid] == pytest.approx(value, rel=1e-10), (name, sid)
    assert ours["unique_id"].to_list() == sorted(expected["mae"])
    # the single metric methods take the same keys
    keyed = (t.lazy() if lazy else t).eval.mase(
        "y", "f", train=tr, season_length=4, series="unique_id", time="ds", by="unique_id"
    )
    keyed = keyed.lazy().collect()
    for sid, value in zip(keyed["unique_id"], keyed["mase"], strict=True):
        assert value == pytest.approx(expected["mase"][sid], rel=1e-10), sid


@pytest.mark.parametrize("order", list(ORDERS))
def test_duplicate_keys_found_in_any_row_order(order: str) -> None:  # BAD_INPUTS 29
    train, test = make_data(n_series=4, seed=22)
    repeated = test.filter((pl.col("unique_id") == "s2") & (pl.col("ds") == 26))
    dup = ORDERS[order](pl.concat([test, repeated]).sort("unique_id", "ds"))
    message = (
        r"duplicate \(unique_id, ds\) rows: .*found 1 row.*e\.g\. \[\(unique_id='s2', ds=26\)\]"
    )
    for frame in (dup, dup.lazy()):
        with pytest.raises(DataValidationError, match=message):
            frame.eval.forecast("y", "f", series="unique_id", time="ds").lazy().collect()
        with pytest.raises(DataValidationError, match=message):
            frame.eval.mae("y", "f", series="unique_id", time="ds").lazy().collect()
    # the same key twice in the training frame, sorted or not
    bad_train = pl.concat([train, train.filter(pl.col("ds") == 5)]).sort("unique_id", "ds")
    train_message = r"train= frame has duplicate \(unique_id, ds\) rows: .*found 4 row"
    for tr in (bad_train, ORDERS[order](bad_train), bad_train.lazy()):
        with pytest.raises(DataValidationError, match=train_message):
            test.eval.forecast(
                "y", "f", series="unique_id", time="ds", train=tr, season_length=4
            ).lazy().collect()
        with pytest.raises(DataValidationError, match=train_message):
            test.eval.mase(
                "y", "f", series="unique_id", time="ds", train=tr, season_length=4
            ).lazy().collect()


def test_null_series_and_time_keys_in_the_duplicate_check() -> None:
    # a null key is a key as any other (as group_by takes it): distinct times are fine,
    # the same (null series, time) twice or the same (series, null time) twice is not
    _, test = make_data(n_series=3, seed=23)
    nulled = test.with_columns(
        pl.when(pl.col("unique_id") == "s0").then(None).otherwise(pl.col("unique_id")).alias("unique_id")
    )  # fmt: skip
    out = nulled.eval.forecast("y", "f", series="unique_id", time="ds", per_series=True)
    assert out["n"].to_list() == [6, 6, 6]
    twice = pl.concat([nulled, nulled.head(1)])
    with pytest.raises(DataValidationError, match=r"found 1 row.*\(unique_id=None, ds=24\)"):
        twice.eval.forecast("y", "f", series="unique_id", time="ds")
    no_time = test.with_columns(
        pl.when(pl.col("ds") >= 28).then(None).otherwise(pl.col("ds")).alias("ds")
    )
    with pytest.raises(DataValidationError, match=r"found 3 row.*\(unique_id='s0', ds=None\)"):
        no_time.eval.forecast("y", "f", series="unique_id", time="ds")


@pytest.mark.parametrize("order", list(ORDERS))
def test_seasonal_scale_in_any_row_order(order: str) -> None:
    # brute force: per series, the mean |y_t - y_(t-m)| and (y_t - y_(t-m))^2 over time
    train, _ = make_data(n_series=4, seed=24)
    train = train.with_columns(pl.col("ds") * 3)  # gaps in time: only the order counts
    expected = {}
    for (sid,), part in train.sort("ds").group_by("unique_id", maintain_order=True):
        y = part["y"].to_numpy()
        d = y[4:] - y[:-4]
        expected[sid] = (np.mean(np.abs(d)), np.mean(d**2), np.mean(y))
    for frame in (ORDERS[order](train), ORDERS[order](train).lazy()):
        out = pe.seasonal_scale(frame, series="unique_id", time="ds", actual="y", season_length=4)
        out = out.lazy().collect()
        got = {
            r["unique_id"]: (r["mase_scale"], r["rmsse_scale"], r["spis_scale"])
            for r in out.to_dicts()
        }
        assert got.keys() == expected.keys()
        for sid, values in expected.items():
            assert got[sid] == pytest.approx(values, rel=1e-12), sid


def test_zero_scale_and_short_training_series() -> None:  # BAD_INPUTS 27, 28
    train, test = make_data(n_series=3, seed=11)
    train = train.with_columns(
        pl.when(pl.col("unique_id") == "s0").then(7.0).otherwise(pl.col("y")).alias("y")
    ).filter((pl.col("unique_id") != "s1") | (pl.col("ds") < 3))
    with pytest.warns(UndefinedMetricWarning, match="mase is null for 2 of 3"):
        out = per_series(test, train, season=4)
    assert out["mase"].to_list()[:2] == [None, None]
    assert out["rmsse"].to_list()[:2] == [None, None]
    assert out["mase"][2] is not None
    summary = test.eval.forecast(
        "y", "f", series="unique_id", time="ds", train=train, season_length=4
    )
    assert summary["mase"].item() == pytest.approx(out["mase"][2])  # undefined series left out
    scale = pe.seasonal_scale(train, series="unique_id", time="ds", actual="y", season_length=4)
    assert scale.sort("unique_id")["mase_scale"].to_list()[:2] == [None, None]


def test_series_missing_from_train_is_null() -> None:
    train, test = make_data(n_series=2, seed=12)
    with pytest.warns(UndefinedMetricWarning):
        out = per_series(test, train.filter(pl.col("unique_id") == "s0"))
    assert out["mase"].to_list()[1] is None


def test_validation_errors() -> None:
    train, test = make_data(n_series=2, seed=13)
    nan = test.with_columns(
        pl.when(pl.col("ds") == 25).then(float("nan")).otherwise(pl.col("f")).alias("f")
    )
    with pytest.raises(DataValidationError, match='column "f".*NaN'):
        nan.eval.forecast("y", "f", series="unique_id", time="ds")
    with pytest.raises(DataValidationError, match='column "g".*not found'):
        test.eval.forecast("y", "g", series="unique_id", time="ds")
    with pytest.raises(DataValidationError, match='column "when"'):
        test.lazy().eval.forecast("y", "f", series="unique_id", time="when").collect()
    with pytest.raises(DataValidationError, match='column "y".*train'):
        test.eval.forecast("y", "f", series="unique_id", time="ds", train=train.drop("y"))
    with pytest.raises(InvalidParameterError, match="season_length"):
        test.eval.forecast("y", "f", series="unique_id", time="ds", season_length=0)
    with pytest.raises(InvalidParameterError, match="train"):
        test.eval.forecast("y", "f", series="unique_id", time="ds", train=train.to_pandas())


def test_float32_and_streaming(collect) -> None:
    train, test = make_data(seed=14)
    t32 = test.with_columns(pl.col("y", "f").cast(pl.Float32))
    tr32 = train.with_columns(pl.col("y").cast(pl.Float32))
    a = collect(
        t32.lazy().eval.forecast(
            "y", "f", series="unique_id", time="ds", train=tr32.lazy(), season_length=4
        )
    )
    b = test.with_columns(pl.col("y", "f").cast(pl.Float32).cast(pl.Float64)).eval.forecast(
        "y", "f", series="unique_id", time="ds",
        train=train.with_columns(pl.col("y").cast(pl.Float32).cast(pl.Float64)), season_length=4,
    )  # fmt: skip
    assert np.allclose(a.to_numpy().astype(float), b.to_numpy().astype(float), rtol=1e-9)


def test_registry() -> None:
    names = set(pe.metrics().filter(pl.col("task") == "forecast")["name"])
    assert {"mase", "rmsse", "pinball_loss", "coverage"} <= names


def test_zero_actuals_in_forecast() -> None:
    df = pl.DataFrame({"id": ["a"] * 3, "t": [1, 2, 3], "y": [0.0, 2.0, 0.0],
                       "f": [1.0, 3.0, 0.0], "w": [1.0, 1.0, 1.0]})  # fmt: skip
    out = df.eval.forecast("y", "f", series="id", time="t", per_series=True)
    assert out["mape"].item() == pytest.approx(0.5) and out["zero_actuals"].item() == 2
    strict = df.eval.forecast("y", "f", series="id", time="t", zero_actuals="inf")
    assert strict["mape"].item() == math.inf
    zero_w = df.with_columns(pl.Series("w", [0.0, 1.0, 1.0]))
    out = zero_w.eval.forecast("y", "f", series="id", time="t", weight="w", zero_actuals="inf")
    assert out["mape"].item() == pytest.approx(0.25)  # (0.5 + 0) / 2, the inf row weighs 0


def test_generated_namespace_methods() -> None:
    train, test = make_data(n_series=3, seed=15)
    by = test.eval.pinball_loss("y", "q90", quantile=0.9, by="unique_id")
    expected = ufl.quantile_loss(test, models={"f": "q90"}, q=0.9)
    assert np.allclose(by["pinball_loss"], expected["f"])
    joined = test.join(
        pe.seasonal_scale(train, series="unique_id", time="ds", actual="y"), on="unique_id"
    )
    per = joined.eval.mase("y", "f", "mase_scale", by="unique_id")
    mine = per_series(test, train, season=1)
    assert np.allclose(per["mase"], mine["mase"])
    cov = test.lazy().eval.coverage("y", "f-lo-80", "f-hi-80", by="unique_id").collect()
    assert np.allclose(cov["coverage"], ufl.coverage(test, models=["f"], level=80)["f"])


# ---------------------------------------------------------------------------------------
# SPEC §12: the rest of utilsforecast.losses, against utilsforecast
# ---------------------------------------------------------------------------------------

QCOLS = ["q10", "f", "q90"]
QS = [0.1, 0.5, 0.9]
SEASON = 4


def coverage_data(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """make_data plus a baseline forecast ``naive``, integer weights ``w`` and the scale
    columns of seasonal_scale joined (utilsforecast reads only its own columns)."""
    train, test = make_data(seed=seed)
    rng = np.random.default_rng(seed + 100)
    test = test.with_columns(
        naive=pl.col("y") + pl.Series(rng.normal(0.0, 2.0, test.height)),
        w=pl.Series(rng.integers(0, 4, test.height).astype(float)),
    )
    scale = pe.seasonal_scale(
        train, series="unique_id", time="ds", actual="y", season_length=SEASON
    )
    assert (test["y"] > 0).all() and (test["f"] > 0).all()  # the Tweedie domain
    return train, test.join(scale, on="unique_id")


# name -> (our expression, given the weight keyword; utilsforecast's per-series frame of
# (test, train) and its value column)
LOSSES: dict[str, tuple[Callable[..., pl.Expr], Callable[..., tuple[Any, str]]]] = {
    "msse": (
        lambda **kw: pe.msse("y", "f", "rmsse_scale", **kw),
        lambda t, tr: (ufl.msse(t, ["f"], SEASON, tr), "f"),
    ),
    "rmae": (
        lambda **kw: pe.rmae("y", "f", baseline="naive", **kw),
        lambda t, tr: (ufl.rmae(t, ["f"], baseline="naive"), "f"),
    ),
    "cfe": (lambda **kw: pe.cfe("y", "f", **kw), lambda t, tr: (ufl.cfe(t, ["f"]), "f")),
    "pis": (lambda **kw: pe.pis("y", "f", **kw), lambda t, tr: (ufl.pis(t, ["f"]), "f")),
    "spis": (
        lambda **kw: pe.spis("y", "f", "spis_scale", **kw),
        lambda t, tr: (ufl.spis(t, ["f"], tr), "f"),
    ),
    "linex": (
        lambda **kw: pe.linex("y", "f", a=0.5, **kw),
        lambda t, tr: (ufl.linex(t, ["f"], a=0.5), "f"),
    ),
    "tweedie_deviance": (
        lambda **kw: pe.tweedie_deviance("y", "f", **kw),  # power 1.5 by default, as theirs
        lambda t, tr: (ufl.tweedie_deviance(t, ["f"]), "f"),
    ),
    "scaled_quantile_loss": (
        lambda **kw: pe.scaled_quantile_loss("y", "q90", "mase_scale", quantile=0.9, **kw),
        lambda t, tr: (ufl.scaled_quantile_loss(t, {"m": "q90"}, SEASON, tr, q=0.9), "m"),
    ),
    "mqloss": (
        lambda **kw: pe.mqloss("y", QCOLS, quantiles=QS, **kw),
        lambda t, tr: (ufl.mqloss(t, {"m": QCOLS}, np.array(QS)), "m"),
    ),
    "scaled_mqloss": (
        lambda **kw: pe.scaled_mqloss("y", QCOLS, "mase_scale", quantiles=QS, **kw),
        lambda t, tr: (ufl.scaled_mqloss(t, {"m": QCOLS}, np.array(QS), SEASON, tr), "m"),
    ),
    "scaled_crps": (
        lambda **kw: pe.scaled_crps("y", QCOLS, quantiles=QS, **kw),
        lambda t, tr: (ufl.scaled_crps(t, {"m": QCOLS}, np.array(QS)), "m"),
    ),
    "calibration": (
        lambda **kw: pe.calibration("y", "q90", **kw),
        lambda t, tr: (ufl.calibration(t, {"m": "q90"}), "m"),
    ),
    "winkler": (
        lambda **kw: pe.winkler("y", "f-lo-80", "f-hi-80", alpha=0.2, **kw),
        lambda t, tr: (ufl.winkler_score(t, ["f"], level=80), "f"),
    ),
}


def uf_series(out: Any, column: str) -> dict[str, float]:
    out = pl.from_pandas(out) if not isinstance(out, pl.DataFrame) else out
    return dict(zip(out["unique_id"].to_list(), out[column].to_list(), strict=True))


def repeated(frame: pl.DataFrame, weight: str = "w") -> pl.DataFrame:
    """Each row repeated ``weight`` times (rows of weight 0 dropped)."""
    return frame[np.repeat(np.arange(frame.height), frame[weight].cast(pl.Int64).to_numpy())]


def test_every_utilsforecast_loss_is_here() -> None:
    """Every name of utilsforecast.losses has a counterpart: ours of the same name, or the
    one named in SPEC §12 (quantile_loss is pinball_loss, winkler_score winkler, nd wape)."""
    renamed = {"quantile_loss": "pinball_loss", "winkler_score": "winkler", "nd": "wape"}
    names = set(pe.metrics()["name"])
    missing = [n for n in ufl.__all__ if renamed.get(n, n) not in names]
    assert not missing
    forecast = set(pe.metrics().filter(pl.col("task") == "forecast")["name"])
    assert set(LOSSES) <= forecast


@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("weighted", [False, True])
def test_losses_against_utilsforecast(name: str, weighted: bool, collect) -> None:
    """Per series against utilsforecast (weights: utilsforecast on the rows repeated), on a
    LazyFrame on both engines equal to the eager frame."""
    ours_fn, theirs_fn = LOSSES[name]
    train, test = coverage_data(seed=21)
    expr = ours_fn(weight="w") if weighted else ours_fn()
    eager = test.group_by("unique_id").agg(expr).sort("unique_id")
    lazy = collect(test.lazy().group_by("unique_id").agg(expr).sort("unique_id"))
    assert_frame_equal(lazy, eager, check_exact=False, rel_tol=1e-12)
    out, column = theirs_fn(repeated(test) if weighted else test, train)
    expected = uf_series(out, column)
    got = dict(zip(eager["unique_id"].to_list(), eager[name].to_list(), strict=True))
    assert got.keys() == expected.keys()
    for sid, value in expected.items():
        assert got[sid] == pytest.approx(value, rel=1e-10, abs=1e-12), sid


@pytest.mark.parametrize("name", list(LOSSES))
def test_losses_per_series_equal_per_frame(name: str) -> None:
    ours_fn, _ = LOSSES[name]
    _, test = coverage_data(seed=22)
    for weighted in (False, True):
        expr = ours_fn(weight="w") if weighted else ours_fn()
        grouped = test.group_by("unique_id").agg(expr)
        for sid, value in grouped.iter_rows():
            alone = test.filter(pl.col("unique_id") == sid).select(expr).item()
            assert alone == pytest.approx(value, rel=1e-12), (sid, weighted)


@pytest.mark.parametrize("name", list(LOSSES))
def test_losses_weights_are_repetitions(name: str) -> None:
    """The whole frame (every series pooled): weighted = the rows repeated, weight 0 = the
    row removed."""
    ours_fn, _ = LOSSES[name]
    _, test = coverage_data(seed=23)
    weighted = test.select(ours_fn(weight="w")).item()
    assert weighted == pytest.approx(repeated(test).select(ours_fn()).item(), rel=1e-12)
    kept = test.filter(pl.col("w") > 0).select(ours_fn(weight="w")).item()
    assert weighted == pytest.approx(kept, rel=1e-12)


def test_scaled_losses_take_train_on_the_namespace() -> None:
    """train= and season_length= give the scale (SPEC §6), as a joined scale column does."""
    train, test = coverage_data(seed=24)
    plain = test.drop("mase_scale", "rmsse_scale", "spis_scale", "n_train")
    calls = {
        "msse": (("y", "f"), {}),
        "spis": (("y", "f"), {}),
        "scaled_quantile_loss": (("y", "q90"), {"quantile": 0.9}),
        "scaled_mqloss": (("y", QCOLS), {"quantiles": QS}),
    }
    for name, (args, options) in calls.items():
        keyed = getattr(plain.eval, name)(
            *args, train=train, season_length=SEASON, time="ds", by="unique_id", **options
        )
        column = LOSSES[name][0]()
        expected = test.group_by("unique_id").agg(column).sort("unique_id")
        assert_frame_equal(keyed, expected, check_exact=False, rel_tol=1e-12)
    # without by: every series pooled (the mean of every row's scaled error), lazily
    lazy = plain.lazy().eval.msse(
        "y", "f", train=train.lazy(), season_length=SEASON, series="unique_id", time="ds"
    )
    pooled = test.select(pe.msse("y", "f", "rmsse_scale")).item()
    assert lazy.collect().item() == pytest.approx(pooled, rel=1e-12)


@pytest.mark.parametrize("power", [0.0, 1.0, 1.2, 2.0, 3.0])
def test_tweedie_deviance_powers(power: float) -> None:
    _, test = coverage_data(seed=25)
    got = test.group_by("unique_id").agg(pe.tweedie_deviance("y", "f", power=power))
    expected = uf_series(ufl.tweedie_deviance(test, ["f"], power=power), "f")
    for sid, value in got.iter_rows():
        assert value == pytest.approx(expected[sid], rel=1e-10)
    # the same deviance as the regression metric (checked against scikit-learn)
    assert test.eval.tweedie_deviance("y", "f", power=power) == pytest.approx(
        test.eval.mean_tweedie_deviance("y", "f", power=power), rel=1e-12
    )


def test_linex_negative_a_and_bad_options() -> None:
    _, test = coverage_data(seed=26)
    got = test.group_by("unique_id").agg(pe.linex("y", "f", a=-1.0))
    expected = uf_series(ufl.linex(test, ["f"], a=-1.0), "f")
    for sid, value in got.iter_rows():
        assert value == pytest.approx(expected[sid], rel=1e-10)
    with pytest.raises(InvalidParameterError, match="a must be non-zero"):
        pe.linex("y", "f", a=0)
    for power in (-1.0, 0.5):
        with pytest.raises(InvalidParameterError, match="power must be 0 or >= 1"):
            pe.tweedie_deviance("y", "f", power=power)
    with pytest.raises(InvalidParameterError, match="alpha"):
        pe.winkler("y", "lo", "hi", alpha=1.0)
    with pytest.raises(InvalidParameterError, match="quantile"):
        pe.scaled_quantile_loss("y", "q", "s", quantile=0.0)


def test_multi_quantile_arguments() -> None:
    _, test = coverage_data(seed=27)
    base = test.select(pe.mqloss("y", QCOLS, quantiles=QS)).item()
    # the pairs, not the order, matter; numpy arrays and expressions are accepted
    shuffled = pe.mqloss("y", [pl.col("q90"), "q10", "f"], quantiles=np.array([0.9, 0.1, 0.5]))
    assert test.select(shuffled).item() == pytest.approx(base, rel=1e-12)
    # one quantile: the pinball loss
    one = test.select(pe.mqloss("y", ["q90"], quantiles=[0.9])).item()
    assert one == pytest.approx(test.select(pe.pinball_loss("y", "q90", quantile=0.9)).item())
    with pytest.raises(InvalidParameterError, match="2 columns and 3 quantiles"):
        pe.mqloss("y", ["q10", "q90"], quantiles=QS)
    with pytest.raises(InvalidParameterError, match="list of columns"):
        pe.scaled_crps("y", "q10", quantiles=[0.1])
    with pytest.raises(InvalidParameterError, match="at least one column"):
        pe.mqloss("y", [], quantiles=[])
    with pytest.raises(InvalidParameterError, match=r"each quantile must be a number in \(0, 1\)"):
        pe.scaled_mqloss("y", ["q10", "q90"], "s", quantiles=[0.1, 90])
    with pytest.raises(InvalidParameterError, match="list of numbers"):
        pe.mqloss("y", ["q10"], quantiles=0.1)  # type: ignore[arg-type]
    # a null in any quantile column leaves the row out
    holed = test.with_columns(pl.when(pl.col("ds") == 25).then(None).otherwise("q10").alias("q10"))
    assert holed.select(pe.mqloss("y", QCOLS, quantiles=QS)).item() == pytest.approx(
        holed.filter(pl.col("ds") != 25).select(pe.mqloss("y", QCOLS, quantiles=QS)).item()
    )
    # the namespace validates every quantile column
    nan = test.with_columns(
        pl.when(pl.col("ds") == 25).then(float("nan")).otherwise("q90").alias("q90")
    )
    with pytest.raises(DataValidationError, match='column "q90".*NaN'):
        nan.eval.mqloss("y", QCOLS, quantiles=QS)
    with pytest.raises(DataValidationError, match='column "q50".*not found'):
        test.eval.scaled_crps("y", ["q10", "q50"], quantiles=[0.1, 0.5])


def test_domain_checks_on_the_namespace() -> None:
    _, test = coverage_data(seed=28)
    crossed = test.with_columns(
        pl.when(pl.col("ds") == 25).then(pl.col("f-lo-80") - 1.0).otherwise("f-hi-80").alias("hi")
    )
    with pytest.raises(
        DataValidationError, match='column "hi" must not be below "f-lo-80".*5 rows'
    ):
        crossed.eval.winkler("y", "f-lo-80", "hi", alpha=0.2)
    with pytest.raises(DataValidationError, match='column "hi"'):
        crossed.lazy().eval.winkler("y", "f-lo-80", "hi", alpha=0.2).collect()
    negative = test.with_columns(pl.when(pl.col("ds") == 25).then(-1.0).otherwise("y").alias("y"))
    with pytest.raises(DataValidationError, match='column "y" must hold values >= 0'):
        negative.eval.tweedie_deviance("y", "f", power=1.5)
    with pytest.raises(DataValidationError, match='column "f" must hold values > 0'):
        test.with_columns(f=pl.col("f") - 100.0).eval.tweedie_deviance("y", "f", power=1.0)
    negative.eval.tweedie_deviance("y", "f", power=0.0)  # squared error: any value


def test_undefined_and_nan() -> None:
    df = pl.DataFrame({"id": ["a", "a", "b", "b"], "y": [1.0, 2.0, 0.0, 0.0],
                       "f": [1.5, 2.5, 1.0, 1.0], "naive": [1.0, 2.0, 1.0, 1.0],
                       "lo": [0.0, 0.0, 0.0, 0.0], "hi": [3.0, 3.0, 3.0, 3.0]})  # fmt: skip
    out = (
        df.group_by("id")
        .agg(
            pe.rmae("y", "f", "naive"),  # a: the baseline is perfect
            pe.scaled_crps("y", ["lo", "hi"], quantiles=[0.1, 0.9]),  # b: all actuals 0
            pe.cfe("y", "f", weight=pl.col("y")),  # b: every weight 0
        )
        .sort("id")
    )
    assert out["rmae"].to_list() == [None, pytest.approx(1.0)]
    assert out["scaled_crps"][1] is None and out["scaled_crps"][0] is not None
    assert out["cfe"].to_list() == [pytest.approx(1.5), None]
    with pytest.raises(pe.UndefinedMetricError, match="rmae is undefined.*baseline"):
        df.filter(pl.col("id") == "a").eval.rmae("y", "f", "naive")
    with pytest.warns(UndefinedMetricWarning, match="scaled_crps is null for 1 of 2"):
        df.eval.scaled_crps("y", ["lo", "hi"], quantiles=[0.1, 0.9], by="id")
    with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate for cfe"):
        df.clear().eval.cfe("y", "f")
    # a NaN input gives NaN in the bare expression, comparisons included
    nan = df.with_columns(pl.when(pl.col("y") == 2.0).then(float("nan")).otherwise("y").alias("y"))
    exprs = [
        pe.calibration("y", "hi"),
        pe.winkler("y", "lo", "hi", alpha=0.2),
        pe.mqloss("y", ["lo", "hi"], quantiles=[0.1, 0.9]),
        pe.scaled_crps("y", ["lo", "hi"], quantiles=[0.1, 0.9]),
        pe.scaled_quantile_loss("y", "hi", pl.lit(1.0), quantile=0.9),
        pe.cfe("y", "f"),
        pe.pis("y", "f"),
        pe.linex("y", "f"),
        pe.rmae("y", "f", "naive"),
    ]
    row = nan.select(exprs).row(0)
    assert all(math.isnan(v) for v in row), row


def test_spis_scale_is_the_mean_training_actual() -> None:
    train, _ = make_data(n_series=3, seed=29)
    train = train.with_columns(
        pl.when(pl.col("unique_id") == "s0").then(-pl.col("y")).otherwise("y").alias("y")
    )
    scale = pe.seasonal_scale(train, series="unique_id", time="ds", actual="y").sort("unique_id")
    means = train.group_by("unique_id").agg(pl.col("y").mean()).sort("unique_id")["y"]
    assert scale["spis_scale"][0] is None  # a negative mean demand: no scale
    assert np.allclose(scale["spis_scale"][1:].to_numpy(), means[1:].to_numpy(), rtol=1e-12)


def test_forecast_table_metrics_selects_registered_metrics() -> None:
    """metrics= (SPEC §12): any registered metric of the actual and the forecast, per series
    equal to the expression per series, pooled equal to the expression over every row."""
    rng = np.random.default_rng(4)
    n = 300
    df = pl.DataFrame(
        {
            "id": rng.integers(0, 6, n),
            "t": np.arange(n),
            "y": rng.gamma(2.0, 2.0, n) + 0.5,
            "f": rng.gamma(2.0, 2.0, n) + 0.5,
            "w": rng.integers(0, 3, n).astype(float),
        }
    )
    chosen = ["linex", "mae", "mean_poisson_deviance"]
    per = df.eval.forecast("y", "f", series="id", time="t", weight="w", metrics=chosen,
                           per_series=True)  # fmt: skip
    want = df.group_by("id").agg(
        pe.linex("y", "f", weight="w"),
        pe.mae("y", "f", weight="w"),
        pe.mean_poisson_deviance("y", "f", weight="w"),
    )
    got = per.select("id", *chosen).sort("id")
    assert_frame_equal(got, want.sort("id"), check_dtypes=False, rel_tol=1e-12)
    pooled = df.eval.forecast("y", "f", series="id", time="t", weight="w", metrics=chosen)
    assert pooled.columns[:5] == ["n_series", "n", *chosen]
    overall = df.select(pe.linex("y", "f", weight="w")).item()
    assert pooled["linex_pooled"].item() == pytest.approx(overall, rel=1e-12)
    assert pooled["mae"].item() == pytest.approx(want["mae"].mean(), rel=1e-12)
    with pytest.raises(pe.InvalidParameterError, match="msse needs train="):
        df.eval.forecast("y", "f", series="id", time="t", metrics=["msse"])
    with pytest.raises(pe.InvalidParameterError, match="medae is an order statistic"):
        df.eval.forecast("y", "f", series="id", time="t", metrics=["medae"])
    with pytest.raises(pe.InvalidParameterError, match="winkler needs lower="):
        df.eval.forecast("y", "f", series="id", time="t", metrics=["winkler"])


def test_no_rows_message_names_only_the_callers_columns() -> None:
    """The scale that train= joins in is an internal column: the "no rows" error names the
    caller's columns only."""
    df = pl.DataFrame(
        {"s": ["a"] * 3, "t": [1, 2, 3], "y": [None] * 3, "f": [1.0, 2.0, 3.0]},
        schema_overrides={"y": pl.Float64},
    )
    train = pl.DataFrame({"s": ["a"] * 3, "t": [-2, -1, 0], "y": [1.0, 2.0, 4.0]})
    with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate for mase") as info:
        df.eval.mase("y", "f", series="s", time="t", train=train)
    assert "__pe" not in str(info.value)
    assert '"y" or "f"' in str(info.value)


# issue 25 item 1: by= naming the series column (SPEC §6)


@pytest.mark.parametrize("lazy", [False, True])
def test_by_series_gives_one_row_per_series(lazy: bool) -> None:
    """``by="unique_id"`` without ``series=`` takes the series key from the by column
    present in ``train`` (as the MASE method does): one row per series, utilsforecast's
    values; ``series=`` naming the by column too gives the same table."""
    train, test = make_data(seed=3)
    frame = test.lazy() if lazy else test
    common = {"time": "ds", "train": train, "season_length": 4}
    tables = [
        frame.eval.forecast("y", "f", by="unique_id", **common),
        frame.eval.forecast("y", "f", series="unique_id", by="unique_id", **common),
    ]
    expected = {
        "mae": uf(ufl.mae, test, models=["f"]),
        "mase": uf(ufl.mase, test, models=["f"], seasonality=4, train_df=train),
        "rmsse": uf(ufl.rmsse, test, models=["f"], seasonality=4, train_df=train),
    }
    for table in tables:
        out = table.collect() if lazy else table
        assert out.get_column("unique_id").to_list() == sorted(expected["mae"])
        assert out.get_column("n_series").to_list() == [1] * len(expected["mae"])
        for name, values in expected.items():
            got = dict(zip(out["unique_id"], out[name], strict=True))
            pooled = dict(zip(out["unique_id"], out[name + "_pooled"], strict=True))
            for sid, value in values.items():
                assert got[sid] == pytest.approx(value, rel=1e-10), (name, sid)
                assert pooled[sid] == pytest.approx(value, rel=1e-10), (name, sid)
    per = test.eval.forecast("y", "f", by="unique_id", per_series=True, **common)
    assert per.columns[:3] == ["unique_id", "n", "mae"]
    assert per.height == len(expected["mae"])
    # the by column that is not in train is a group, the one in train the series
    two = pl.concat([test.with_columns(pl.lit(m).alias("model")) for m in ("a", "b")])
    out = two.eval.forecast("y", "f", by=["model", "unique_id"], **common)
    assert out.height == 2 * len(expected["mae"])
    assert out.filter(pl.col("model") == "b")["mase"].to_list() == pytest.approx(
        [expected["mase"][s] for s in sorted(expected["mase"])], rel=1e-10
    )


def test_without_series_or_by_the_frame_is_one_series() -> None:
    """Neither ``series=`` nor ``by=``: the frame is one series (as the metric methods);
    several series sharing a time key are then a duplicate-key error suggesting series=."""
    train, test = make_data(seed=4)
    one = test.filter(pl.col("unique_id") == "s2")
    one_train = train.filter(pl.col("unique_id") == "s2")
    out = one.eval.forecast("y", "f", time="ds", train=one_train, season_length=4)
    ref = per_series(one, one_train)
    for name in METRICS:
        assert out[name].item() == pytest.approx(ref[name].item(), rel=1e-12), name
    assert out["n_series"].item() == 1
    assert one.eval.forecast("y", "f", time="ds", per_series=True).columns[:2] == ["n", "mae"]
    with pytest.raises(DataValidationError, match=r"duplicate \(ds\) rows.*series="):
        test.eval.forecast("y", "f", time="ds")
    with pytest.raises(DataValidationError, match=r"duplicate \(ds\) rows.*series="):
        test.lazy().eval.forecast("y", "f", time="ds").collect()
    with pytest.raises(DataValidationError, match=r"duplicate \(ds\) rows.*series="):
        test.eval.mae("y", "f", time="ds")
    # cutoffs: several series sharing a (cutoff, time) key, by lead
    two = pl.concat([test.with_columns(pl.lit(c).alias("c")) for c in (0, 1)])
    with pytest.raises(DataValidationError, match=r"duplicate \(c, ds\) rows.*series="):
        two.eval.forecast("y", "f", time="ds", cutoff="c", by="lead")
    # an explicit series= gets no hint: the key itself is repeated
    with pytest.raises(DataValidationError, match=r"e\.g\. \[\(unique_id='s0', ds=24\)\]$"):
        pl.concat([test, test.head(1)]).eval.forecast("y", "f", series="unique_id", time="ds")
