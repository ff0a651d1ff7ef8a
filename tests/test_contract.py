"""The contract of SPEC §5–§8 where the code had differed (issue 13, family-level part).

Oracles: utilsforecast, scikit-learn, pytrec_eval, YDF's documentation and hand-worked
values; never our own output.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np
import polars as pl
import pytest
import utilsforecast.losses as ufl
from sklearn import metrics as skm

import polars_eval as pe
from polars_eval.exceptions import DataValidationError, InvalidParameterError

# ---------------------------------------------------------------------------------------
# §6: the forecast keys on the single metric methods
# ---------------------------------------------------------------------------------------


def seasonal_data(seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Train and test frames in utilsforecast's column names (unique_id, ds, y, f)."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for s in range(4):
        y = 10.0 + 3 * s + 3 * np.sin(np.arange(30) * 2 * np.pi / 7) + rng.normal(0, 1, 30)
        train += [(f"s{s}", t, float(y[t])) for t in range(23)]
        test += [(f"s{s}", t, float(y[t]), float(y[t] + rng.normal(0.3, 1))) for t in range(23, 30)]
    return (
        pl.DataFrame(train, schema=["unique_id", "ds", "y"], orient="row"),
        pl.DataFrame(test, schema=["unique_id", "ds", "y", "f"], orient="row"),
    )


def by_id(frame: pl.DataFrame, column: str) -> dict[str, float]:
    return dict(zip(frame["unique_id"].to_list(), frame[column].to_list(), strict=True))


@pytest.mark.parametrize("name", ["mase", "rmsse"])
def test_scaled_metric_method_takes_train(name: str, collect: Callable) -> None:
    train, test = seasonal_data(1)
    want = by_id(getattr(ufl, name)(test, models=["f"], seasonality=7, train_df=train), "f")
    method = getattr(test.eval, name)
    # without series=: the series key is the by column present in train (SPEC §6)
    got = by_id(method("y", "f", train=train, season_length=7, time="ds", by="unique_id"), name)
    assert got == pytest.approx(want, rel=1e-12)
    lazy = getattr(test.lazy().eval, name)(
        "y", "f", train=train.lazy(), season_length=7, time="ds", by="unique_id"
    )
    assert isinstance(lazy, pl.LazyFrame)
    assert by_id(collect(lazy), name) == pytest.approx(want, rel=1e-12)
    # one series: the metric of that series alone
    one = test.filter(pl.col("unique_id") == "s2")
    value = getattr(one.eval, name)(
        "y", "f", train=train, season_length=7, time="ds", series="unique_id"
    )
    assert value == pytest.approx(want["s2"], rel=1e-12)


def test_mase_method_train_errors() -> None:
    train, test = seasonal_data(2)
    with pytest.raises(InvalidParameterError, match="scale= .*or train="):
        test.eval.mase("y", "f", time="ds", series="unique_id")
    with pytest.raises(InvalidParameterError, match="not both"):
        test.with_columns(s=pl.lit(1.0)).eval.mase(
            "y", "f", "s", train=train, time="ds", series="unique_id"
        )
    with pytest.raises(InvalidParameterError, match="time="):
        test.eval.mase("y", "f", train=train, by="unique_id")
    with pytest.raises(DataValidationError, match=r'column "ds" .*not found'):
        test.eval.mase("y", "f", train=train.drop("ds"), time="ds", by="unique_id")
    nan_train = train.with_columns(
        pl.when(pl.col("ds") == 3).then(float("nan")).otherwise(pl.col("y")).alias("y")
    )
    with pytest.raises(DataValidationError, match=r'"y" of the train= frame .*finite.*found 4'):
        test.eval.mase("y", "f", train=nan_train, season_length=7, time="ds", by="unique_id")
    with pytest.raises(DataValidationError, match=r"train= frame .*finite"):
        test.lazy().eval.mase(
            "y", "f", train=nan_train.lazy(), season_length=7, time="ds", by="unique_id"
        ).collect()
    dup_train = pl.concat([train, train.filter(pl.col("ds") == 5).head(1)])
    with pytest.raises(
        DataValidationError,
        match=r"train= frame has duplicate \(unique_id, ds\) rows.*\(unique_id='s0', ds=5\)",
    ):
        test.eval.mase("y", "f", train=dup_train, season_length=7, time="ds", by="unique_id")


def rolling_origin(seed: int = 0) -> pl.DataFrame:
    """Two series, four cutoffs, three steps ahead each: lead = t − cutoff."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in ("a", "b"):
        for cutoff in range(4):
            for h in (1, 2, 3):
                y = float(rng.normal(10, 2))
                rows.append((s, cutoff, cutoff + h, y, y + float(rng.normal(0, h))))
    return pl.DataFrame(
        rows, schema=["series", "cutoff", "time", "actual", "forecast"], orient="row"
    )


def sk_by(df: pl.DataFrame, keys: list[str], fn: Callable) -> dict[tuple, float]:
    out = {}
    for key, part in df.group_by(keys):
        out[key] = fn(part["actual"].to_numpy(), part["forecast"].to_numpy())
    return out


@pytest.mark.parametrize(
    ("name", "oracle"),
    [
        ("mae", skm.mean_absolute_error),
        ("rmse", skm.root_mean_squared_error),
        ("mape", skm.mean_absolute_percentage_error),
    ],
)
def test_metric_by_series_and_lead(name: str, oracle: Callable, collect: Callable) -> None:
    df = rolling_origin(3)
    with_lead = df.with_columns((pl.col("time") - pl.col("cutoff")).alias("lead"))
    method = getattr(df.eval, name)
    # the example of SPEC §6: by= names "lead" after cutoff=
    got = method("actual", "forecast", cutoff="cutoff", time="time", by=["series", "lead"])
    assert got.columns == ["series", "lead", name]
    assert got.height == 6
    want = sk_by(with_lead, ["series", "lead"], oracle)
    for s, h, v in got.rows():
        assert v == pytest.approx(want[(s, h)], rel=1e-12)
    # by lead across series (series= names the series), and lead= keeps one lead
    by_lead = method("actual", "forecast", series="series", cutoff="cutoff", time="time", by="lead")
    want_lead = sk_by(with_lead, ["lead"], oracle)
    assert by_lead["lead"].to_list() == [1, 2, 3]
    for h, v in by_lead.rows():
        assert v == pytest.approx(want_lead[(h,)], rel=1e-12)
    one = method("actual", "forecast", series="series", cutoff="cutoff", time="time", lead=1)
    assert one == pytest.approx(want_lead[(1,)], rel=1e-12)
    lazy = getattr(df.lazy().eval, name)(
        "actual", "forecast", cutoff="cutoff", time="time", by=["series", "lead"], lead=2
    )
    got2 = collect(lazy)
    assert got2["lead"].to_list() == [2, 2]
    for s, h, v in got2.rows():
        assert v == pytest.approx(want[(s, h)], rel=1e-12)


def test_forecast_keys_on_pinball_and_coverage() -> None:
    df = rolling_origin(4).with_columns(lo=pl.col("forecast") - 1.0, hi=pl.col("forecast") + 1.0)
    lead1 = df.filter(pl.col("time") - pl.col("cutoff") == 1)
    y, lo, hi = (lead1[c].to_numpy() for c in ("actual", "lo", "hi"))
    got = df.eval.coverage(
        "actual", "lo", "hi", series="series", cutoff="cutoff", time="time", lead=1
    )
    assert got == pytest.approx(np.mean((y >= lo) & (y <= hi)))
    pin = df.eval.pinball_loss(
        "actual", "hi", quantile=0.9, series="series", cutoff="cutoff", time="time", lead=1
    )
    assert pin == pytest.approx(skm.mean_pinball_loss(y, hi, alpha=0.9), rel=1e-12)


def test_forecast_key_errors() -> None:
    df = rolling_origin(5)
    with pytest.raises(InvalidParameterError, match="lead= needs cutoff="):
        df.eval.mae("actual", "forecast", series="series", time="time", lead=1)
    with pytest.raises(InvalidParameterError, match="time="):
        df.eval.mae("actual", "forecast", series="series", cutoff="cutoff", by="lead")
    with pytest.raises(InvalidParameterError, match="lead"):
        df.eval.mae("actual", "forecast", series="series", cutoff="cutoff", time="time", lead=0)
    with pytest.raises(DataValidationError, match=r'column "origin" \(a key\) not found'):
        df.eval.mae("actual", "forecast", series="series", cutoff="origin", time="time")
    # two series, but no series key: their rows repeat (cutoff, time) — an error naming
    # a repeated key with its time, never leads counted across series
    with pytest.raises(
        DataValidationError,
        match=r"duplicate \(cutoff, time\) rows: .*found 12 row.*\(cutoff=0, time=1\)",
    ):
        df.eval.mae("actual", "forecast", cutoff="cutoff", time="time", by="lead")
    with pytest.raises(DataValidationError, match=r"duplicate \(cutoff, time\) rows"):
        df.lazy().eval.mae("actual", "forecast", cutoff="cutoff", time="time", by="lead").collect()


def test_duplicate_series_time_names_the_key_and_time() -> None:  # BAD_INPUTS 29
    df = pl.DataFrame(
        {
            "id": ["a", "a", "b", "b", "b"],
            "t": [1, 2, 1, 2, 2],
            "y": [1.0, 2.0, 3.0, 4.0, 4.5],
            "f": [1.5, 2.0, 2.0, 4.0, 4.0],
        }
    )
    pattern = r"duplicate \(id, t\) rows: .*found 1 row.*e\.g\. \[\(id='b', t=2\)\]"
    with pytest.raises(DataValidationError, match=pattern):
        df.eval.mae("y", "f", series="id", time="t")
    with pytest.raises(DataValidationError, match=pattern):
        df.lazy().eval.rmse("y", "f", series="id", time="t", by="id").collect()
    with pytest.raises(DataValidationError, match=pattern):
        df.eval.forecast("y", "f", series="id", time="t")
    dated = df.with_columns(pl.date(2024, 1, pl.col("t")).alias("day"))
    with pytest.raises(DataValidationError, match=r"\(id='b', day=2024-01-02\)"):
        dated.eval.forecast("y", "f", series="id", time="day")
    # without the duplicate both run, and the keys change nothing in the value
    ok = df.head(4)
    assert ok.eval.mae("y", "f", series="id", time="t") == pytest.approx(
        skm.mean_absolute_error(ok["y"], ok["f"])
    )


def test_forecast_metric_methods_show_the_keys() -> None:
    for name in ("mae", "rmse", "mape", "wape", "bias", "mase", "rmsse", "pinball_loss"):
        params = inspect.signature(getattr(pe.EvalNamespace, name)).parameters
        assert {"series", "time", "cutoff", "lead", "by", "validate"} <= set(params), name
    mase = inspect.signature(pe.EvalNamespace.mase).parameters
    assert mase["scale"].default is None and mase["train"].default is None
    assert mase["season_length"].default == 1
    assert "train" not in inspect.signature(pe.EvalNamespace.mae).parameters
    assert "cutoff" not in inspect.signature(pe.EvalNamespace.auc).parameters
