"""Metrics over time windows (SPEC §13): the windows are group_by_dynamic's, each window's
values are its rows evaluated on their own (scikit-learn, and the task method on the
window's rows), and the bad inputs of BAD_INPUTS row 52."""

from __future__ import annotations

import datetime as dt
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricWarning,
)

ROW = "__row"


def frame(n: int, *, seed: int = 0, days: int = 40, kind: str = "datetime") -> pl.DataFrame:
    """Rows in random order over ``days`` days: a binary task (y, p), a regression task
    (a, f), weights, two segments, and a time column of the given kind."""
    rng = np.random.default_rng(seed)
    seconds = rng.integers(0, days * 86400, n)
    y = rng.integers(0, 2, n)
    data = {
        "y": y,
        "p": np.round(rng.random(n) * 0.6 + 0.4 * y * rng.random(n), 2),  # ties
        "a": rng.gamma(2.0, size=n),
        "w": rng.integers(0, 4, n).astype(np.float64),
        "seg": rng.choice(["north", "south"], n),
        "ch": rng.choice(["web", "app", "shop"], n),
    }
    df = pl.DataFrame(data).with_columns(f=pl.col("a") * np.exp(rng.normal(size=n) * 0.3))
    start = dt.datetime(2024, 1, 1)
    if kind in ("datetime", "tz"):
        ts = pl.Series([start + dt.timedelta(seconds=int(s)) for s in seconds])
        if kind == "tz":  # across the change to summer time (2024-03-31)
            ts = ts.dt.offset_by("60d").dt.replace_time_zone("Europe/Paris", non_existent="null")
    elif kind == "date":
        ts = pl.Series([(start + dt.timedelta(seconds=int(s))).date() for s in seconds])
    else:
        ts = pl.Series(seconds // 3600, dtype=pl.Int64)  # hours
    return df.with_columns(ts=ts)


def dynamic_windows(df: pl.DataFrame, by: list[str], **opts) -> pl.DataFrame:
    """group_by_dynamic itself: each window's bounds and its rows (the row numbers)."""
    every = opts["every"]
    kwargs = {k: f"{v}i" if isinstance(v, int) else v for k, v in opts.items() if v is not None}
    return (
        df.with_row_index(ROW)
        .sort([*by, "ts"])
        .group_by_dynamic(
            "ts",
            **kwargs,
            closed="left",
            label="left",
            start_by="window",
            group_by=by or None,
            include_boundaries=True,
        )
        .agg(pl.col(ROW))
        .sort([*by, "ts"])
        .with_columns(pl.col("_upper_boundary").cast(df.schema["ts"]))
        if every
        else None
    )


CASES = [
    ("datetime", {"every": "1d"}),
    ("datetime", {"every": "1d", "period": "7d"}),
    ("datetime", {"every": "6h", "period": "1d", "offset": "2h"}),
    ("datetime", {"every": "1d", "offset": "-30h"}),
    ("datetime", {"every": "1w", "period": "2w"}),
    ("datetime", {"every": "1mo"}),
    ("datetime", {"every": "1mo", "offset": "5d"}),
    ("date", {"every": "1d", "period": "3d"}),
    ("date", {"every": "1w", "offset": "2d"}),
    ("date", {"every": "1mo", "period": "2mo"}),
    ("int", {"every": 24, "period": 72, "offset": 5}),
    ("int", {"every": 10}),
    ("tz", {"every": "1d", "period": "3d"}),
    ("tz", {"every": "1d", "offset": "3h"}),
    ("tz", {"every": "1w", "period": "2w"}),
]


@pytest.mark.parametrize(("kind", "opts"), CASES)
@pytest.mark.parametrize("by", [[], ["seg"]])
def test_windows_are_group_by_dynamic_windows(kind, opts, by):
    df = frame(600, seed=len(str(opts)), kind=kind).drop_nulls("ts")
    expected = dynamic_windows(df, by, **opts)
    out = df.eval.binary(
        "y", "p", metrics=["accuracy", "logloss"], by=by or None, time="ts", **opts
    )
    assert out.columns == [*by, "ts", "window_end", "accuracy", "logloss"]
    assert (
        out.select(*by, "ts", "window_end").rows()
        == expected.select(*by, "ts", "_upper_boundary").rows()
    )
    assert out.schema["ts"] == df.schema["ts"] == out.schema["window_end"]


IGNORE_UNDEFINED = pytest.mark.filterwarnings(
    "ignore::polars_eval.exceptions.UndefinedMetricWarning"
)


@IGNORE_UNDEFINED
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(("kind", "opts"), [CASES[1], CASES[2], CASES[6], CASES[10]])
def test_binary_windows_equal_scikit_learn_per_window(kind, opts, weighted):
    df = frame(500, seed=3, kind=kind, days=15)
    w = "w" if weighted else None
    out = df.eval.binary(
        "y",
        "p",
        weight=w,
        by="seg",
        time="ts",
        metrics=["auc", "average_precision", "logloss", "brier", "accuracy"],
        **opts,
    )
    windows = dynamic_windows(df, ["seg"], **opts)
    assert out.height == windows.height
    for got, rows in zip(out.iter_rows(named=True), windows[ROW].to_list(), strict=True):
        part = df[rows]
        y, p = part["y"].to_numpy(), part["p"].to_numpy()
        sw = part["w"].to_numpy() if weighted else None
        keep = sw > 0 if weighted else np.ones(len(y), bool)
        y, p, sw = y[keep], p[keep], (sw[keep] if weighted else None)
        if not len(y):  # every weight 0: nothing to evaluate
            assert got["logloss"] is None and got["auc"] is None
            continue
        assert got["logloss"] == pytest.approx(
            skm.log_loss(y, p, sample_weight=sw, labels=[0, 1]), abs=1e-12
        )
        assert got["brier"] == pytest.approx(
            skm.brier_score_loss(y, p, sample_weight=sw), abs=1e-12
        )
        assert got["accuracy"] == pytest.approx(
            skm.accuracy_score(y, p >= 0.5, sample_weight=sw), abs=1e-12
        )
        if len(set(y)) == 2:
            assert got["auc"] == pytest.approx(skm.roc_auc_score(y, p, sample_weight=sw), abs=1e-12)
            ap = skm.average_precision_score(y, p, sample_weight=sw)
            assert got["average_precision"] == pytest.approx(ap, abs=1e-12)
        else:
            assert got["auc"] is None


def _alone(df: pl.DataFrame, windows: pl.DataFrame, run) -> pl.DataFrame:
    """Each window's rows evaluated on their own by ``run`` (one row each), stacked."""
    parts = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for rows in windows[ROW].to_list():
            parts.append(run(df[rows]))
    return pl.concat(parts, how="vertical_relaxed")


def assert_close(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    assert got.columns == expected.columns
    for name in got.columns:
        a, b = got[name], expected[name]
        if a.dtype.is_float():
            assert a.is_null().to_list() == b.is_null().to_list(), name
            np.testing.assert_allclose(
                a.drop_nulls().to_numpy(),
                b.drop_nulls().to_numpy(),
                rtol=1e-12,
                atol=1e-12,
                err_msg=name,
            )
        else:
            assert a.to_list() == b.to_list(), name


@pytest.mark.parametrize("bins", [None, 20])
def test_binary_table_per_window_equals_the_window_alone(bins):
    df = frame(600, seed=5, days=15)
    opts = {"every": "1d", "period": "5d"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        out = df.eval.binary("y", "p", weight="w", by="seg", time="ts", bins=bins, **opts)
    windows = dynamic_windows(df, ["seg"], **opts)
    alone = _alone(df, windows, lambda part: part.eval.binary("y", "p", weight="w", bins=bins))
    assert_close(out.drop("seg", "ts", "window_end"), alone)


def test_regression_per_window_equals_scikit_learn_and_the_window_alone():
    df = frame(400, seed=6, days=8)
    opts = {"every": "1d", "period": "4d", "offset": "3h"}
    out = df.eval.regression("a", "f", weight="w", by="seg", time="ts", **opts)
    windows = dynamic_windows(df, ["seg"], **opts)
    alone = _alone(df, windows, lambda part: part.eval.regression("a", "f", weight="w"))
    assert_close(out.drop("seg", "ts", "window_end"), alone)
    for got, rows in zip(out.iter_rows(named=True), windows[ROW].to_list(), strict=True):
        part = df[rows].filter(pl.col("w") > 0)
        a, f, sw = (part[c].to_numpy() for c in ("a", "f", "w"))
        assert got["mse"] == pytest.approx(
            skm.mean_squared_error(a, f, sample_weight=sw), abs=1e-12
        )
        assert got["mae"] == pytest.approx(
            skm.mean_absolute_error(a, f, sample_weight=sw), abs=1e-12
        )
        assert got["r2"] == pytest.approx(skm.r2_score(a, f, sample_weight=sw), abs=1e-10)


def test_regression_median_per_window_unweighted():
    df = frame(500, seed=7)
    out = df.eval.regression(
        "a", "f", time="ts", every="1d", period="3d", metrics=["medae", "spearman"]
    )
    windows = dynamic_windows(df, [], every="1d", period="3d")
    for got, rows in zip(out.iter_rows(named=True), windows[ROW].to_list(), strict=True):
        a, f = df[rows]["a"].to_numpy(), df[rows]["f"].to_numpy()
        assert got["medae"] == pytest.approx(skm.median_absolute_error(a, f), abs=1e-12)


@IGNORE_UNDEFINED
def test_metric_methods_take_windows():
    df = frame(600, seed=8)
    opts = {"every": "1d", "period": "3d"}
    windows = dynamic_windows(df, [], **opts)
    auc = df.eval.auc("y", "p", time="ts", **opts)
    assert auc.columns == ["ts", "window_end", "auc"]
    for got, rows in zip(auc["auc"].to_list(), windows[ROW].to_list(), strict=True):
        assert got == pytest.approx(skm.roc_auc_score(df[rows]["y"], df[rows]["p"]), abs=1e-12)
    mae = df.eval.mae("a", "f", by="seg", time="ts", every="1w")
    expected = dynamic_windows(df, ["seg"], every="1w")
    for got, rows in zip(mae["mae"].to_list(), expected[ROW].to_list(), strict=True):
        assert got == pytest.approx(
            skm.mean_absolute_error(df[rows]["a"], df[rows]["f"]), abs=1e-12
        )


@IGNORE_UNDEFINED
def test_lazy_streaming_and_unsorted_rows_give_the_same_windows():
    df = frame(500, seed=9)
    opts = {"time": "ts", "every": "1d", "period": "2d", "by": "seg"}
    eager = df.eval.binary("y", "p", **opts)
    lazy = df.lazy().eval.binary("y", "p", **opts)
    assert isinstance(lazy, pl.LazyFrame)
    for engine in ("in-memory", "streaming"):
        assert_close(lazy.collect(engine=engine), eager)
    assert_close(df.reverse().eval.binary("y", "p", **opts), eager)


def test_undefined_window_is_null_with_one_warning():
    df = pl.DataFrame(
        {
            "ts": [dt.date(2024, 1, 1)] * 3 + [dt.date(2024, 1, 2)] * 2,
            "y": [0, 1, 1, 1, 1],
            "p": [0.1, 0.9, 0.4, 0.3, 0.8],
        }
    )
    with pytest.warns(UndefinedMetricWarning, match="auc is null for 1 of 2 groups") as record:
        out = df.eval.binary("y", "p", metrics=["auc"], time="ts", every="1d")
    assert len(record) == 1
    assert out["auc"].to_list() == [1.0, None]


# -- BAD_INPUTS row 52 ---------------------------------------------------------------


def test_time_column_of_strings_is_an_error_naming_it():
    df = frame(50).with_columns(pl.col("ts").cast(pl.String))
    with pytest.raises(
        DataValidationError, match='column "ts" .*time=.* Date, Datetime or integer'
    ):
        df.eval.binary("y", "p", time="ts", every="1d")
    with pytest.raises(DataValidationError, match='column "nope" \\(argument time=\\) not found'):
        df.eval.binary("y", "p", time="nope", every="1d")


def test_rows_of_null_time_are_ignored():
    df = frame(300, seed=11)
    nulled = df.with_columns(
        pl.when(pl.col("a") > 2.0).then(None).otherwise(pl.col("ts")).alias("ts")
    )
    out = nulled.eval.binary("y", "p", metrics=["auc", "logloss"], time="ts", every="1w")
    kept = nulled.filter(pl.col("ts").is_not_null())
    assert_close(out, kept.eval.binary("y", "p", metrics=["auc", "logloss"], time="ts", every="1w"))
    windows = dynamic_windows(kept, [], every="1w")
    assert out.height == windows.height


@pytest.mark.parametrize(
    ("opts", "match"),
    [
        ({"every": "yesterday"}, "every='yesterday' is not a duration"),
        ({"every": "0d"}, "every must be a positive duration"),
        ({"every": "-1d"}, "every must be a positive duration"),
        ({"every": "1d", "period": "36h"}, "period='36h' must be a whole multiple of every='1d'"),
        ({"every": "1mo", "period": "30d"}, "whole multiple"),
        ({"every": "1d", "period": "0d"}, "period must be a positive duration"),
        ({"every": "1d", "offset": "soon"}, "offset='soon' is not a duration"),
        ({"every": 3}, "give every as a duration"),
        ({"every": "12h", "time": "day"}, "not a whole number of days"),
        ({"every": "6h", "time": "paris"}, "time-zone-aware column"),
    ],
)
def test_bad_window_parameters(opts, match):
    df = frame(30).with_columns(
        day=pl.col("ts").dt.date(), paris=pl.col("ts").dt.replace_time_zone("Europe/Paris")
    )
    opts = {"time": "ts", **opts}
    with pytest.raises(InvalidParameterError, match=match):
        df.eval.binary("y", "p", **opts)


@pytest.mark.parametrize(
    ("kind", "method", "opts", "match"),
    [
        ("datetime", "binary", {"every": "1d"}, "every= needs time="),
        ("datetime", "binary", {"time": "ts"}, "needs every="),
        ("datetime", "auc", {"period": "2d"}, "period= needs every="),
        ("int", "binary", {"time": "ts", "every": "1d"}, "give every as an int"),
    ],
)
def test_every_without_time_and_time_without_every(kind, method, opts, match):
    with pytest.raises(InvalidParameterError, match=match):
        getattr(frame(30, kind=kind).eval, method)("y", "p", **opts)


def test_baseline_with_windows_is_refused():
    with pytest.raises(InvalidParameterError, match="baseline=True is not available"):
        frame(30).eval.binary("y", "p", baseline=True, time="ts", every="1d")


@settings(max_examples=25)
@given(
    every=st.integers(1, 30),
    k=st.integers(1, 4),
    offset=st.integers(-40, 40),
    seed=st.integers(0, 1000),
)
def test_integer_windows_match_group_by_dynamic(every, k, offset, seed):
    rng = np.random.default_rng(seed)
    n = 60
    df = pl.DataFrame(
        {
            "ts": rng.integers(-100, 100, n),
            "a": rng.gamma(2.0, size=n),
            "f": rng.normal(size=n),
            "seg": rng.integers(0, 2, n),
        }
    )
    opts = {"every": every, "period": every * k, "offset": offset}
    out = df.eval.regression("a", "f", metrics=["mse"], by="seg", time="ts", **opts)
    windows = dynamic_windows(df, ["seg"], **opts)
    assert (
        out.select("seg", "ts", "window_end").rows()
        == windows.select("seg", "ts", "_upper_boundary").rows()
    )
    for got, rows in zip(out["mse"].to_list(), windows[ROW].to_list(), strict=True):
        part = df[rows]
        assert got == pytest.approx(skm.mean_squared_error(part["a"], part["f"]), abs=1e-12)


@IGNORE_UNDEFINED
@pytest.mark.parametrize("proba", [False, True])
def test_multiclass_per_window_equals_the_window_alone(proba):
    rng = np.random.default_rng(12)
    n = 400
    df = frame(n, seed=12, days=6).with_columns(
        yc=pl.Series(rng.choice(["a", "b", "c"], n)),
        pc=pl.Series(rng.choice(["a", "b", "c"], n)),
    )
    args = {"pred": "pc", "weight": "w", "baseline": True}
    if proba:
        p = np.round(rng.dirichlet(np.ones(3), n), 6)
        p[:, 2] = 1.0 - p[:, 0] - p[:, 1]
        df = df.with_columns(pa=p[:, 0], pb=p[:, 1], pz=p[:, 2])
        args = {
            "proba": ["pa", "pb", "pz"],
            "classes": ["a", "b", "c"],
            "weight": "w",
            "baseline": True,
        }
    opts = {"every": "1d", "period": "2d"}
    out = df.eval.multiclass("yc", **args, by="seg", time="ts", **opts)
    windows = dynamic_windows(df, ["seg"], **opts)
    alone = _alone(df, windows, lambda part: part.eval.multiclass("yc", **args))
    assert_close(out.drop("seg", "ts", "window_end"), alone)


# -- slices: grouping sets, rollup, min_rows ------------------------------------------------


def _grouping(out: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return out.filter(pl.col("grouping") == ",".join(keys))


@IGNORE_UNDEFINED
@pytest.mark.parametrize("task", ["binary", "regression"])
def test_each_grouping_equals_by_on_it(task):
    df = frame(600, seed=13).with_columns(
        pl.when(pl.col("a") > 3.0).then(None).otherwise(pl.col("ch")).alias("ch")  # null keys
    )
    run = (
        (lambda **kw: df.eval.binary("y", "p", weight="w", **kw))
        if task == "binary"
        else (lambda **kw: df.eval.regression("a", "f", weight="w", **kw))
    )
    sets = [["ch"], [], ["seg", "ch"], ["seg"]]
    out = run(grouping_sets=sets)
    assert out.columns[:3] == ["ch", "seg", "grouping"]
    assert out["grouping"].unique(maintain_order=True).to_list() == ["ch", "", "seg,ch", "seg"]
    for keys in sets:
        part = _grouping(out, keys)
        for absent in {"seg", "ch"} - set(keys):
            assert part[absent].null_count() == part.height
        expected = run(by=keys) if keys else run()
        assert_close(part.select(expected.columns), expected)


@IGNORE_UNDEFINED
def test_rollup_is_its_prefixes_all_rows_first_and_combines_with_windows():
    df = frame(500, seed=14, days=10)
    out = df.eval.binary("y", "p", rollup=["seg", "ch"], time="ts", every="1d", period="3d")
    assert out.columns[:5] == ["seg", "ch", "grouping", "ts", "window_end"]
    assert out["grouping"].unique(maintain_order=True).to_list() == ["", "seg", "seg,ch"]
    for keys in ([], ["seg"], ["seg", "ch"]):
        expected = df.eval.binary("y", "p", by=keys or None, time="ts", every="1d", period="3d")
        assert_close(_grouping(out, keys).select(expected.columns), expected)
    lazy = df.lazy().eval.binary("y", "p", rollup=["seg", "ch"], time="ts", every="1d", period="3d")
    assert_close(lazy.collect(engine="streaming"), out)


def test_min_rows_nulls_small_slices_in_one_warning():
    df = frame(300, seed=15).with_columns(
        pl.when(pl.col("a") > 4.0).then(pl.lit("rare")).otherwise(pl.col("ch")).alias("ch")
    )
    counts = df.group_by("ch").len()
    rare = counts.filter(pl.col("ch") == "rare")["len"].item()
    assert 0 < rare < 30
    with pytest.warns(UndefinedMetricWarning, match="1 of 5 slices have fewer than min_rows=30"):
        out = df.eval.regression("a", "f", rollup=["ch"], min_rows=30, metrics=["mae", "rmse"])
    assert _grouping(out, ["ch"]).filter(pl.col("ch") == "rare")["mae"].to_list() == [None]
    full = df.eval.regression("a", "f", by="ch", metrics=["mae", "rmse"])
    big = _grouping(out, ["ch"]).filter(pl.col("ch") != "rare").select(full.columns)
    assert_close(big, full.filter(pl.col("ch") != "rare"))
    with pytest.warns(UndefinedMetricWarning, match="min_rows"):
        by_out = df.eval.regression("a", "f", by="ch", min_rows=30, metrics=["mae"])
    assert by_out.columns == ["ch", "mae", "zero_actuals"]
    assert by_out.filter(pl.col("ch") == "rare").row(0)[1:] == (None, 0)  # a count stays


def test_bad_grouping_sets():
    df = frame(50)
    with pytest.raises(
        DataValidationError, match='column "region" \\(argument grouping_sets=\\) not found'
    ):
        df.eval.binary("y", "p", grouping_sets=[[], ["region"]])
    with pytest.raises(InvalidParameterError, match="the grouping \\['seg'\\] is given twice"):
        df.eval.binary("y", "p", grouping_sets=[["seg"], [], ["seg"]])
    with pytest.raises(InvalidParameterError, match="by= and grouping_sets= both given"):
        df.eval.binary("y", "p", by="seg", grouping_sets=[["seg"]])
    with pytest.raises(InvalidParameterError, match="by= and rollup= both given"):
        df.eval.regression("a", "f", by="seg", rollup=["seg"])
    with pytest.raises(InvalidParameterError, match="min_rows must be a positive integer"):
        df.eval.binary("y", "p", by="seg", min_rows=0)


# -- ranking: queries per window --------------------------------------------------------------


def search_log(n_queries: int, *, seed: int) -> pl.DataFrame:
    """Queries of 2-8 items at one time each (a day among 10), graded 0/1, two markets."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        when = dt.datetime(2024, 3, 1) + dt.timedelta(seconds=int(rng.integers(0, 10 * 86400)))
        market = str(rng.choice(["us", "uk"]))
        for item in range(int(rng.integers(2, 9))):
            rows.append((q, item, int(rng.random() < 0.3), float(rng.random()), when, market))
    return pl.DataFrame(rows, schema=["q", "doc", "rel", "s", "ts", "market"], orient="row")


@IGNORE_UNDEFINED
def test_ranking_windows_equal_pytrec_eval_and_the_window_alone():
    import pytrec_eval

    df = search_log(120, seed=16)
    opts = {"every": "1d", "period": "3d"}
    out = df.eval.ranking("rel", "s", query="q", item="doc", k=[5], by="market", time="ts", **opts)
    windows = dynamic_windows(df, ["market"], **opts)
    alone = _alone(
        df, windows, lambda part: part.eval.ranking("rel", "s", query="q", item="doc", k=[5])
    )
    assert_close(out.drop("market", "ts", "window_end"), alone)
    for got, rows in zip(out.iter_rows(named=True), windows[ROW].to_list(), strict=True):
        part = df[rows]
        qrels = {str(q): {} for q in part["q"].unique()}
        run = {str(q): {} for q in part["q"].unique()}
        for q, d, r, s in part.select("q", "doc", "rel", "s").iter_rows():
            qrels[str(q)][str(d)] = r
            run[str(q)][str(d)] = s
        res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "recip_rank"}).evaluate(run)
        judged = [q for q in qrels if any(qrels[q].values())]  # queries with a relevant item
        assert got["n_queries"] == len(qrels)
        assert got["n_excluded"] == len(qrels) - len(judged)
        if judged:
            assert got["ndcg"] == pytest.approx(
                np.mean([res[q]["ndcg"] for q in judged]), abs=1e-12
            )
            assert got["mrr"] == pytest.approx(
                np.mean([res[q]["recip_rank"] for q in judged]), abs=1e-12
            )


def test_ranking_metric_method_per_window_and_rollup():
    df = search_log(80, seed=17)
    ndcg = df.eval.ndcg("rel", "s", query="q", k=5, time="ts", every="2d")
    windows = dynamic_windows(df, [], every="2d")
    assert ndcg.columns == ["ts", "window_end", "ndcg"]
    for got, rows in zip(ndcg["ndcg"].to_list(), windows[ROW].to_list(), strict=True):
        part = df[rows]
        expected = part.eval.ndcg("rel", "s", query="q", k=5) if part["rel"].sum() else None
        assert got == pytest.approx(expected, abs=1e-12) if expected is not None else got is None
    out = df.eval.ranking("rel", "s", query="q", k=[3], rollup=["market"], metrics=["ndcg", "mrr"])
    for keys in ([], ["market"]):
        expected = df.eval.ranking(
            "rel", "s", query="q", k=[3], by=keys or None, metrics=["ndcg", "mrr"]
        )
        assert_close(_grouping(out, keys).select(expected.columns), expected)


def test_a_query_split_across_steps_is_an_error():
    df = search_log(20, seed=18).with_columns(
        pl.when(pl.col("doc") == 0)
        .then(pl.col("ts") + dt.timedelta(days=3))
        .otherwise(pl.col("ts"))
        .alias("ts")
    )
    with pytest.raises(
        DataValidationError, match="20 units \\(queries\\) have rows in more than one"
    ):
        df.eval.ranking("rel", "s", query="q", time="ts", every="1d")


# -- forecast: series per window --------------------------------------------------------------


def panel(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Six daily series over 30 days in two regions (rows shuffled) and their training
    history (20 earlier days)."""
    rng = np.random.default_rng(seed)
    rows, train = [], []
    for s in range(6):
        for t in range(-20, 30):
            day = dt.date(2024, 1, 1) + dt.timedelta(days=t)
            y = float(rng.gamma(3.0))
            if t < 0:
                train.append((f"s{s}", day, y))
            elif rng.random() < 0.85:  # some days missing
                rows.append((f"s{s}", day, y, y * float(np.exp(rng.normal() * 0.3)), "AB"[s % 2]))
    df = pl.DataFrame(rows, schema=["id", "t", "y", "f", "reg"], orient="row")
    return df.sample(fraction=1.0, shuffle=True, seed=seed), pl.DataFrame(
        train, schema=["id", "t", "y"], orient="row"
    )


@IGNORE_UNDEFINED
@pytest.mark.parametrize("per_series", [False, True])
def test_forecast_windows_equal_the_window_alone(per_series):
    df, train = panel(19)
    opts = {"every": "1w", "period": "2w", "offset": "2d"}
    args = {
        "series": "id",
        "time": "t",
        "train": train,
        "season_length": 7,
        "per_series": per_series,
    }
    out = df.eval.forecast("y", "f", by="reg", **args, **opts)
    windows = dynamic_windows(df.rename({"t": "ts"}), ["reg"], **opts)
    assert (
        out.select("reg", "t", "window_end").unique(maintain_order=True).rows()
        == windows.select("reg", "ts", "_upper_boundary").rows()
    )
    alone = _alone(df, windows, lambda part: part.eval.forecast("y", "f", **args))
    got = out.drop("reg", "t", "window_end")
    if per_series:
        got = got.drop("id")
        alone = alone.drop("id")
    assert_close(got, alone)
    rollup = df.eval.forecast("y", "f", rollup=["reg"], **args, **opts)
    for keys in ([], ["reg"]):
        expected = df.eval.forecast("y", "f", by=keys or None, **args, **opts)
        assert_close(_grouping(rollup, keys).select(expected.columns), expected)


def test_forecast_metric_method_per_window():
    df, _ = panel(20)
    out = df.eval.mae("y", "f", time="t", every="1w", by="reg")
    windows = dynamic_windows(df.rename({"t": "ts"}), ["reg"], every="1w")
    for got, rows in zip(out["mae"].to_list(), windows[ROW].to_list(), strict=True):
        part = df[rows]
        assert got == pytest.approx(skm.mean_absolute_error(part["y"], part["f"]), abs=1e-12)


@IGNORE_UNDEFINED
@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_both_merges_of_the_threshold_state_give_the_window_alone(monkeypatch, dense, weighted):
    """The threshold state of each window from dense arrays or from its sorted points
    (``_core/windows.cumulative_windows`` picks by size): the same values."""
    from polars_eval._core import windows as w

    monkeypatch.setattr(w, "_dense_is_cheaper", lambda *args: dense)
    noise = pl.Series(np.random.default_rng(1).random(500) * 1e-3)
    df = frame(500, seed=36, days=8).with_columns(pl.col("p") + noise)  # continuous
    opts = {"every": "12h", "period": "2d", "offset": "5h"}
    kw = {
        "weight": "w" if weighted else None,
        "metrics": ["auc", "average_precision", "ks", "max_f1"],
    }
    out = df.eval.binary("y", "p", by="seg", time="ts", **kw, **opts)
    windows = dynamic_windows(df, ["seg"], **opts)
    alone = _alone(df, windows, lambda part: part.eval.binary("y", "p", **kw))
    assert_close(out.drop("seg", "ts", "window_end"), alone)
