"""The contract of SPEC §5–§8 where the code had differed (issue 13, family-level part).

Oracles: utilsforecast, scikit-learn, pytrec_eval, YDF's documentation and hand-worked
values; never our own output.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import utilsforecast.losses as ufl
from scipy import stats
from sklearn import metrics as skm

import polars_eval as pe
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.stats.bootstrap import make_design

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


# ---------------------------------------------------------------------------------------
# §8: pe.wilson on counts and on a column of hits; ci="bootstrap" options; paired bootstrap
# ---------------------------------------------------------------------------------------


def wilson_by_hand(k: float, n: float, z: float = 1.959963984540054) -> tuple[float, ...]:
    """Wilson (1927): the roots in p of (p̂ − p)² = z² p (1 − p) / n."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return p, max(centre - half, 0.0), min(centre + half, 1.0)


# Newcombe (1998), Statistics in Medicine 17:857-872, table II, method 3 (score, no CC)
NEWCOMBE = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize(("k", "n", "lower", "upper"), NEWCOMBE)
def test_wilson_counts_published_values(k: int, n: int, lower: float, upper: float) -> None:
    ci = pe.wilson(k, n)
    assert isinstance(ci, pe.Interval)
    assert ci.value == pytest.approx(k / n, rel=1e-15)
    assert (round(ci.lower, 4), round(ci.upper, 4)) == (lower, upper)


def test_wilson_counts_by_hand_and_scipy() -> None:
    ci = pe.wilson(37, 120)
    assert tuple(ci) == pytest.approx(wilson_by_hand(37, 120), rel=1e-12)
    ref = stats.binomtest(37, 120).proportion_ci(confidence_level=0.9, method="wilson")
    got = pe.wilson(37, 120, level=0.9)
    assert (got.lower, got.upper) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert tuple(pe.wilson(np.int64(120), 120.0))[1:] == pytest.approx(
        wilson_by_hand(120, 120)[1:], rel=1e-12
    )
    assert pe.wilson(2.5, 10.0).value == 0.25  # a weighted total


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((121, 120), InvalidParameterError, "0 <= successes <= n"),
        ((-1, 5), InvalidParameterError, "0 <= successes <= n"),
        ((float("nan"), 5), InvalidParameterError, "finite"),
        ((0, 0), pe.UndefinedMetricError, "n = 0"),
        ((3,), InvalidParameterError, "two counts"),
        ((True, 4), InvalidParameterError, "two counts"),
    ],
)
def test_wilson_bad_counts(args: tuple, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        pe.wilson(*args)
    with pytest.raises(InvalidParameterError, match="level"):
        pe.wilson(3, 10, level=1.5)


def test_wilson_of_a_hit_column(collect: Callable) -> None:
    df = pl.DataFrame(
        {
            "g": ["a"] * 6 + ["b"] * 5,
            "hit": [1, 0, 1, 1, None, 0, 0, 0, 1, 0, 0],
            "w": [1.0, 2.0, 0.0, 3.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        }
    )
    out = collect(df.lazy().group_by("g").agg(pe.wilson("hit")).sort("g").unnest("wilson"))
    assert out.columns == ["g", "value", "lower", "upper"]
    for row, (k, n) in zip(out.iter_rows(), [(3, 5), (1, 5)], strict=True):
        ref = stats.binomtest(k, n).proportion_ci(method="wilson")
        assert row[1:] == pytest.approx((k / n, ref.low, ref.high), rel=1e-12)
    # booleans, and weights as repeated rows (nulls ignored): a: 1·1 + 0·2 + 1·0 + 1·3 + 0·1
    as_bool = df.with_columns(pl.col("hit").cast(pl.Boolean))
    got = as_bool.filter(pl.col("g") == "a").select(pe.wilson("hit", weight="w")).item()
    assert (got["value"], got["lower"], got["upper"]) == pytest.approx(
        wilson_by_hand(4, 7), rel=1e-12
    )
    # a value other than 0/1 is not a hit: NaN, never a number
    bad = pl.DataFrame({"hit": [1, 0, 2]}).select(pe.wilson("hit")).item()
    assert all(math.isnan(v) for v in bad.values())
    with pytest.raises(InvalidParameterError, match="weight="):
        pe.wilson("k", "n", weight="w")


def manual_bootstrap(
    arrays: dict[str, np.ndarray], metric: Callable, n_resamples: int, seed: int
) -> np.ndarray:
    """The classical bootstrap on the rows the package draws: resample r repeats row i as
    many times as the count generator of (seed, r) says (n draws with replacement; the
    counts' multinomial distribution is tested in test_stats_bootstrap.py)."""
    n = len(next(iter(arrays.values())))
    rows = pl.DataFrame({"i": np.arange(n)})
    design, _, _ = make_design(rows, [], [], "multinomial", seed)
    out = []
    for r in range(n_resamples):
        idx = np.repeat(np.arange(n), design.counts(r))
        out.append(metric(**{k: v[idx] for k, v in arrays.items()}))
    return np.asarray(out)


def scored(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "y": y,
            "s1": np.clip(0.5 * y + rng.normal(0.25, 0.25, n), 0.01, 0.99),
            "s2": np.clip(0.3 * y + rng.normal(0.35, 0.3, n), 0.01, 0.99),
            "g": rng.integers(0, 2, n),
        }
    )


def test_ci_bootstrap_takes_seed_and_n_resamples() -> None:
    df = scored(150, 7)
    y, s = df["y"].to_numpy(), df["s1"].to_numpy()
    reps = manual_bootstrap({"y": y, "p": s}, lambda y, p: skm.log_loss(y, p), 120, 11)
    got = df.eval.logloss("y", "s1", ci="bootstrap", n_resamples=120, seed=11)
    assert isinstance(got, pe.Interval)
    assert got.value == pytest.approx(skm.log_loss(y, s), rel=1e-12)
    assert (got.lower, got.upper) == pytest.approx(
        (np.percentile(reps, 2.5), np.percentile(reps, 97.5)), rel=1e-10
    )
    other = df.eval.logloss("y", "s1", ci="bootstrap", n_resamples=120, seed=12)
    assert other.lower != got.lower
    # method= and level= reach the bootstrap; by= and lazy frames as every ci
    poisson = df.eval.auc("y", "s1", ci="bootstrap", n_resamples=80, seed=2, method="poisson")
    direct = df.eval.bootstrap(pe.auc("y", "s1"), n_resamples=80, seed=2, method="poisson")
    assert tuple(poisson) == pytest.approx(direct.select("estimate", "lower", "upper").row(0))
    lazy = df.lazy().eval.mae("y", "s1", ci="bootstrap", n_resamples=50, seed=1, by="g")
    assert lazy.collect().columns == ["g", "mae", "mae_lower", "mae_upper"]


def test_ci_bootstrap_option_errors() -> None:
    df = scored(50, 8)
    with pytest.raises(InvalidParameterError, match=r"\(seed=\) need ci='bootstrap'"):
        df.eval.auc("y", "s1", seed=3)
    with pytest.raises(InvalidParameterError, match="need ci='bootstrap'; got ci='hanley'"):
        df.eval.auc("y", "s1", ci="hanley", n_resamples=100)
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        df.eval.auc("y", "s1", ci="bootstrap", method="jackknife")
    with pytest.raises(InvalidParameterError, match="n_resamples"):
        df.eval.auc("y", "s1", ci="bootstrap", n_resamples=0)


def test_paired_bootstrap_of_two_metric_expressions() -> None:
    df = scored(200, 9)
    y, s1, s2 = (df[c].to_numpy() for c in ("y", "s1", "s2"))
    out = df.eval.paired_bootstrap(pe.auc("y", "s1"), pe.auc("y", "s2"), n_resamples=400, seed=3)
    row = out.row(0, named=True)
    assert row["estimate_1"] == pytest.approx(skm.roc_auc_score(y, s1), rel=1e-12)
    assert row["estimate_2"] == pytest.approx(skm.roc_auc_score(y, s2), rel=1e-12)

    def diff(y: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
        return skm.roc_auc_score(y, a) - skm.roc_auc_score(y, b)

    d = manual_bootstrap({"y": y, "a": s1, "b": s2}, diff, 400, 3)
    assert row["difference"] == pytest.approx(diff(y, s1, s2), rel=1e-12)
    assert (row["lower"], row["upper"]) == pytest.approx(
        (np.percentile(d, 2.5), np.percentile(d, 97.5)), rel=1e-9
    )
    assert row["std"] == pytest.approx(np.std(d, ddof=1), rel=1e-9)
    # any two metric expressions; a lazy frame gives a LazyFrame
    mixed = df.lazy().eval.paired_bootstrap(
        pe.brier("y", "s1"), pe.logloss("y", "s2"), n_resamples=30, seed=1, by="g"
    )
    assert mixed.collect()["g"].to_list() == [0, 1]
    with pytest.raises(InvalidParameterError, match="two metric expressions"):
        df.eval.paired_bootstrap(pe.auc("y", "s1"), "s2")
    with pytest.raises(InvalidParameterError, match="label apply"):
        df.eval.paired_bootstrap(pe.auc("y", "s1"), pe.auc("y", "s2"), label="y")


# ---------------------------------------------------------------------------------------
# §5: conditional_table(of="ground_truth" | "prediction" | "recall")
# ---------------------------------------------------------------------------------------


def test_conditional_views_and_aliases() -> None:
    rng = np.random.default_rng(21)
    df = pl.DataFrame({"y": rng.normal(size=60), "p": rng.normal(size=60)})
    truth = df.eval.conditional_table("y", "p", of="ground_truth", bins=6)
    assert truth.equals(df.eval.conditional_table("y", "p", of="actual", bins=6))
    assert truth.equals(df.eval.conditional_table("y", "p", bins=6))  # the default
    pred = df.eval.conditional_table("y", "p", of="prediction", bins=6)
    assert pred.equals(df.eval.conditional_table("y", "p", of="pred", bins=6))
    # bins of 10 rows by the conditioning value, by hand
    assert truth["lower"].to_list() == df["y"].sort().gather_every(10).to_list()
    assert pred["lower"].to_list() == df["p"].sort().gather_every(10).to_list()


@pytest.mark.parametrize("weighted", [False, True])
def test_conditional_recall_brute_force(weighted: bool) -> None:
    rng = np.random.default_rng(22)
    y = rng.normal(size=100)
    p = y + rng.normal(0, 0.4, 100)
    w = rng.integers(1, 4, 100).astype(float) if weighted else np.ones(100)
    df = pl.DataFrame({"y": y, "p": p, "w": w})
    table = df.eval.conditional_table("y", "p", of="recall", bins=5, weight="w")
    assert table.columns[:5] == ["bin", "lower", "upper", "count", "recall"]
    # the oracle: quantile bins of the actual by cumulative weight, the intervals
    # [cut_{b-1}, cut_b) with open outer ends, recall_b = share of the bin's weight whose
    # prediction lies in the bin's interval
    order = np.argsort(y)
    ys, ps, ws = y[order], p[order], w[order]
    before = np.concatenate([[0.0], np.cumsum(ws)[:-1]])
    b = np.minimum(np.floor(before / ws.sum() * 5), 4).astype(int)
    cuts = [ys[b == k].min() for k in range(1, 5)]
    edges = [-np.inf, *cuts, np.inf]
    for k in range(5):
        rows = b == k
        inside = (ps[rows] >= edges[k]) & (ps[rows] < edges[k + 1])
        want = (ws[rows] * inside).sum() / ws[rows].sum()
        row = table.row(k, named=True)
        assert row["bin"] == k + 1
        assert row["count"] == pytest.approx(ws[rows].sum())
        assert row["recall"] == pytest.approx(want, rel=1e-12)
        assert row["mae"] == pytest.approx(
            (ws[rows] * np.abs(ys[rows] - ps[rows])).sum() / ws[rows].sum(), rel=1e-12
        )


def test_conditional_recall_by_hand_and_groups() -> None:
    # actuals 1 1 | 2 5 ... bins=2 on four rows: bin 1 = {1, 1} (values < 2), bin 2 = {2, 5}
    df = pl.DataFrame(
        {
            "g": ["a"] * 4 + ["b"] * 2,
            "y": [1.0, 1.0, 2.0, 5.0, 0.0, 10.0],
            "p": [-3.0, 2.0, 1.9, 9.0, 0.0, 0.0],
        }
    )
    a = df.filter(pl.col("g") == "a").eval.conditional_table("y", "p", of="recall", bins=2)
    # bin 1: −3 in (−inf, 2) yes, 2.0 no → 0.5; bin 2: 1.9 no, 9 in [2, inf) yes → 0.5
    assert a.select("bin", "lower", "upper", "count", "recall").rows() == [
        (1, 1.0, 1.0, 2.0, 0.5),
        (2, 2.0, 5.0, 2.0, 0.5),
    ]
    out = df.group_by("g").agg(pe.conditional_table("y", "p", of="recall", bins=2)).sort("g")
    b = out.filter(pl.col("g") == "b").explode("conditional_table").unnest("conditional_table")
    assert b["recall"].to_list() == [1.0, 0.0]  # 0 → bin 1; 0 is below 10 → not bin 2
    nan = pl.DataFrame({"y": [1.0, 2.0], "p": [float("nan"), 2.0]})
    got = nan.select(pe.conditional_table("y", "p", of="recall", bins=2)).item()
    assert math.isnan(got[0]["recall"])  # NaN in, NaN out (the namespace refuses NaN)
    with pytest.raises(DataValidationError, match="NaN"):
        nan.eval.conditional_table("y", "p", of="recall", bins=2)
    with pytest.raises(InvalidParameterError, match="of"):
        pe.conditional_table("y", "p", of="precision")


# ---------------------------------------------------------------------------------------
# §7: map in pe.metrics(); whole-list ndcg, map and mrr in df.eval.ranking() by default
# ---------------------------------------------------------------------------------------


def test_map_is_listed_in_the_registry() -> None:
    table = pe.metrics().filter(pl.col("task") == "ranking")
    assert "map" in table["name"].to_list()
    row = table.filter(pl.col("name") == "map").row(0, named=True)
    assert row["higher_is_better"] is True and (row["lower"], row["upper"]) == (0.0, 1.0)
    assert not hasattr(pe, "map")  # never shadows Python's map on a star import
    assert "map" not in pe.__all__


def ranking_log(seed: int) -> pl.DataFrame:
    """Distinct scores, binary relevance, every query with a relevant item."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(12):
        n = int(rng.integers(4, 20))
        rel = rng.integers(0, 2, n)
        rel[int(rng.integers(0, n))] = 1
        for i, (r, s) in enumerate(zip(rel, rng.permutation(n), strict=True)):
            rows.append((f"q{q}", f"d{i}", int(r), float(s)))
    return pl.DataFrame(rows, schema=["q", "doc", "rel", "s"], orient="row")


def test_ranking_task_gives_whole_list_ndcg_map_mrr_by_default() -> None:
    import pytrec_eval

    df = ranking_log(31)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q, d, r, s in df.iter_rows():
        qrels.setdefault(q, {})[d] = r
        run.setdefault(q, {})[d] = s
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "map", "recip_rank"}).evaluate(run)
    want = {m: np.mean([v[m] for v in per_query.values()]) for m in ("ndcg", "map", "recip_rank")}
    out = df.eval.ranking("rel", "s", query="q")  # k=(1, 5, 10) by default
    assert {"ndcg", "ndcg@10", "map", "map@10", "mrr", "mrr@10"} <= set(out.columns)
    assert out.columns.index("ndcg") < out.columns.index("ndcg@1")
    assert out["ndcg"].item() == pytest.approx(want["ndcg"], rel=1e-12)
    assert out["map"].item() == pytest.approx(want["map"], rel=1e-12)
    assert out["mrr"].item() == pytest.approx(want["recip_rank"], rel=1e-12)
    assert df.eval.map("rel", "s", query="q") == pytest.approx(want["map"], rel=1e-12)
    # named metrics keep what they name; k=None is not doubled
    chosen = df.eval.ranking("rel", "s", query="q", metrics=["ndcg"], k=[3])
    assert chosen.columns == ["n_queries", "n_excluded", "ndcg@3"]
    whole = df.eval.ranking("rel", "s", query="q", k=[None, 3])
    assert whole.columns.count("ndcg") == 1 and "ndcg@3" in whole.columns


# ---------------------------------------------------------------------------------------
# §7: TREC files read as trec_eval reads them (# comments, fields past the last ignored)
# ---------------------------------------------------------------------------------------

CLEAN_RUN = "q1 Q0 d1 1 3.0 bm25\nq1 Q0 d2 2 2.0 bm25\nq1 Q0 d3 3 1.0 bm25\nq2 Q0 d1 1 0.5 bm25\n"
CLEAN_QRELS = "q1 0 d2 1\nq1 0 d3 2\nq1 0 d9 1\nq2 0 d1 0\nq2 0 d4 1\n"
# trec_eval's own test files carry both: comment lines, and run lines with a trailing field
COMMENTED_RUN = (
    "# run of a test, as trec_eval's test/ files\n"
    "q1 Q0 d1 1 3.0 bm25 extra\n"
    "   # an indented comment\n"
    "q1\tQ0\td2\t2\t2.0\tbm25\tx\ty\n"
    "\n"
    "q1 Q0 d3 3 1.0 bm25\n"
    "q2 Q0 d1 1 0.5 bm25 # a trailing note is a field past the sixth\n"
)
COMMENTED_QRELS = (
    "# qrels\nq1 0 d2 1 judged-by-a\nq1 0 d3 2\n#q1 0 d5 1\nq1 0 d9 1 x y\nq2 0 d1 0\nq2 0 d4 1\n"
)


def test_trec_readers_skip_comments_and_ignore_extra_fields(tmp_path: Path) -> None:
    files = {}
    for name, text in {
        "clean_run": CLEAN_RUN,
        "clean_qrels": CLEAN_QRELS,
        "run": COMMENTED_RUN,
        "qrels": COMMENTED_QRELS,
    }.items():
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text(text)
    run = pe.read_trec_run(files["run"]).collect()
    assert run.equals(pe.read_trec_run(files["clean_run"]).collect())
    assert run.columns == ["query", "q0", "doc", "rank", "score", "run"]
    streamed = pe.read_trec_qrels(files["qrels"]).collect(engine="streaming")
    assert streamed.equals(pe.read_trec_qrels(files["clean_qrels"]).collect())
    assert streamed["doc"].to_list() == ["d2", "d3", "d9", "d1", "d4"]  # "#q1 0 d5 1" skipped
    # trec_eval on the files agrees with trec_eval (pytrec_eval) on the clean content
    import pytrec_eval

    qrels = {"q1": {"d2": 1, "d3": 2, "d9": 1}, "q2": {"d1": 0, "d4": 1}}
    ranked = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d1": 0.5}}
    want = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(ranked)
    got = pe.trec_eval(files["run"], files["qrels"], metrics=["map", "ndcg"])
    assert got["map"].item() == pytest.approx(np.mean([v["map"] for v in want.values()]))
    assert got["ndcg"].item() == pytest.approx(np.mean([v["ndcg"] for v in want.values()]))


@pytest.mark.parametrize(
    ("reader", "text", "message"),
    [
        ("run", "# c\nq1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 r\n", r"run\.txt, line 3: .*6 fields.*found 5"),
        ("run", "q1 Q0 d1 1 high r extra\n", r"run\.txt, line 1: the score .*'high'"),
        ("qrels", "# c\n\nq1 0 d1\n", r"qrels\.txt, line 3: .*4 fields.*found 3"),
        ("qrels", "q1 0 d1 yes 1\n", r"qrels\.txt, line 1: the relevance .*'yes'"),
    ],
)
def test_trec_readers_still_reject_malformed_lines(
    tmp_path: Path, reader: str, text: str, message: str
) -> None:
    path = tmp_path / f"{reader}.txt"
    path.write_text(text)
    lf = pe.read_trec_run(path) if reader == "run" else pe.read_trec_qrels(path)
    with pytest.raises(DataValidationError, match=message):
        lf.collect()


# ---------------------------------------------------------------------------------------
# §7: trec_eval 10's recall-level rule by default, convention="9" for 9.x's
# ---------------------------------------------------------------------------------------


def two_queries() -> tuple[pl.DataFrame, pl.DataFrame]:
    """q1: 4 relevant, retrieved at ranks 1, 3, 6, 10 of 10; q2: 3 relevant, 2 of them
    retrieved, at ranks 2 and 3 of 4."""
    run = pl.DataFrame(
        {
            "query": ["q1"] * 10 + ["q2"] * 4,
            "doc": [f"a{i}" for i in range(1, 11)] + [f"b{i}" for i in range(1, 5)],
            "score": [float(20 - i) for i in range(10)] + [4.0, 3.0, 2.0, 1.0],
        }
    )
    qrels = pl.DataFrame(
        {
            "query": ["q1"] * 4 + ["q2"] * 3,
            "doc": ["a1", "a3", "a6", "a10", "b2", "b3", "b9"],
            "relevance": [1] * 7,
        }
    )
    return run, qrels


# Interpolated precision from the j-th relevant document on: q1 ip = [1, 1, 2/3, 1/2, 2/5]
# for j = 0..4 (j = 0: the best precision at any rank); q2 ip = [2/3, 2/3, 2/3, 0].
# trec_eval 10: j = lround(p·R); q1 (R = 4): p·R = 0, .4, .8, 1.2, 1.6, 2, 2.4, 2.8, 3.2,
# 3.6, 4 -> j = 0 0 1 1 2 2 2 3 3 4 4; q2 (R = 3): p·R = 0, .3, .6, .9, 1.2, 1.5, 1.8, 2.1,
# 2.4, 2.7, 3 -> j = 0 0 1 1 1 2 2 2 2 3 3.
# trec_eval 9.x: j = (long)(p·R + 0.9); q1 -> 0 1 1 2 2 2 3 3 4 4 4; q2 -> 0 1 1 1 2 2 2 2
# (2.0999999999999996 + 0.9 < 3 in doubles) 3 3 3.
IP10 = {
    "q1": [1, 1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 1 / 2, 1 / 2, 2 / 5, 2 / 5],
    "q2": [2 / 3] * 9 + [0, 0],
}
IP9 = {
    "q1": [1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 1 / 2, 1 / 2, 2 / 5, 2 / 5, 2 / 5],
    "q2": [2 / 3] * 8 + [0, 0, 0],
}
LEVELS = [f"iprec_at_recall_{i / 10:.2f}" for i in range(11)]


@pytest.mark.parametrize(("convention", "want"), [("10", IP10), ("9", IP9), (None, IP10)])
def test_iprec_at_recall_and_11pt_avg_by_hand(convention: str | None, want: dict) -> None:
    run, qrels = two_queries()
    options = {} if convention is None else {"convention": convention}
    got = pe.trec_eval(run, qrels, ["iprec_at_recall", "11pt_avg"], per_query=True, **options)
    for row in got.iter_rows(named=True):
        q = row["query"]
        assert [row[c] for c in LEVELS] == pytest.approx(want[q], abs=1e-12), q
        assert row["11pt_avg"] == pytest.approx(sum(want[q]) / 11, abs=1e-12)
    mean = pe.trec_eval(run, qrels, ["11pt_avg"], **options)["11pt_avg"].item()
    assert mean == pytest.approx((sum(want["q1"]) + sum(want["q2"])) / 22, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_convention_9_agrees_with_pytrec_eval(seed: int) -> None:
    import pytrec_eval

    rng = np.random.default_rng(seed)
    run_rows, qrel_rows = [], []
    for q in range(40):  # R from 1 to 12: every rounding case of the 11 levels
        n_rel = int(rng.integers(1, 13))
        docs = [f"d{i}" for i in range(40)]
        relevant = set(rng.choice(40, n_rel, replace=False).tolist())
        qrel_rows += [(f"q{q}", f"d{i}", 1) for i in sorted(relevant)]
        for i in rng.permutation(40)[: int(rng.integers(5, 40))]:
            run_rows.append((f"q{q}", docs[i], float(rng.random())))
    run = pl.DataFrame(run_rows, schema=["query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(qrel_rows, schema=["query", "doc", "relevance"], orient="row")
    qd: dict = {}
    for q, d, r in qrels.iter_rows():
        qd.setdefault(q, {})[d] = r
    rd: dict = {}
    for q, d, s in run.iter_rows():
        rd.setdefault(q, {})[d] = s
    want = pytrec_eval.RelevanceEvaluator(qd, {"iprec_at_recall", "11pt_avg"}).evaluate(rd)
    nine = pe.trec_eval(run, qrels, ["iprec_at_recall", "11pt_avg"], per_query=True, convention=9)
    ten = pe.trec_eval(run, qrels, ["iprec_at_recall", "11pt_avg"], per_query=True)
    differs = 0
    for r9, r10 in zip(nine.iter_rows(named=True), ten.iter_rows(named=True), strict=True):
        ref = want[r9["query"]]
        for col in [*LEVELS, "11pt_avg"]:
            assert r9[col] == pytest.approx(ref[col], abs=1e-12), (r9["query"], col)
        differs += r10["11pt_avg"] != pytest.approx(ref["11pt_avg"], abs=1e-12)
    assert differs > 0  # the two rules do differ on this data


def test_convention_option_is_checked() -> None:
    run, qrels = two_queries()
    for bad in ("8", "10.0", True, 9.0):
        with pytest.raises(InvalidParameterError, match="convention"):
            pe.trec_eval(run, qrels, ["map"], convention=bad)


def test_wilson_takes_n_as_spec_names_it() -> None:
    """SPEC §8: ``pe.wilson(successes, n, level=0.95)``; ``total=`` (its old name) still
    works, with a deprecation warning."""
    assert "n" in inspect.signature(pe.wilson).parameters
    by_name = pe.wilson(successes=81, n=263, level=0.9)
    assert by_name == pe.wilson(81, 263, level=0.9)
    frame = pl.DataFrame({"k": [8], "trials": [10]})
    assert (
        frame.select(pe.wilson("k", n="trials")).item()
        == frame.select(pe.wilson("k", "trials")).item()
    )
    with pytest.warns(DeprecationWarning, match="n="):
        assert pe.wilson(81, total=263, level=0.9) == by_name
    with pytest.raises(pe.InvalidParameterError, match="n= and total="):
        pe.wilson(81, 263, total=263)
