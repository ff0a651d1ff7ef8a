"""pe.Evaluation with windows (SPEC §13 "Appending", BAD_INPUTS row 53): one state per
(group, step); appended, merged and round-tripped states give the one-pass windows."""

from __future__ import annotations

import datetime as dt
import warnings

import polars as pl
import pytest

import polars_eval as pe
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from tests.test_windows import assert_close, frame, search_log

IGNORE_UNDEFINED = pytest.mark.filterwarnings(
    "ignore::polars_eval.exceptions.UndefinedMetricWarning"
)

TASKS = {
    # the specs' states (sums, co-moments) per step
    "sums": ("binary", {"label": "y", "score": "p", "metrics": ["logloss", "brier", "accuracy"]}),
    # exact sort-based metrics: the distinct rows per step
    "sorted": ("binary", {"label": "y", "score": "p", "metrics": ["auc", "logloss"]}),
    # binned: the specs' states, the scores counted in bins per step
    "binned": ("binary", {"label": "y", "score": "p", "bins": 40}),
    "regression": ("regression", {"actual": "a", "pred": "f"}),
    "regression_sums": ("regression", {"actual": "a", "pred": "f", "metrics": ["mse", "r2"]}),
}


def _method(df: pl.DataFrame, task: str, kw: dict, **opts) -> pl.DataFrame:
    kw = dict(kw)
    args = (
        [kw.pop("label"), kw.pop("score")]
        if task == "binary"
        else [kw.pop("actual"), kw.pop("pred")]
    )
    return getattr(df.eval, task)(*args, **kw, **opts)


def same(got: pl.DataFrame, expected: pl.DataFrame) -> None:
    """The evaluation's table equals the task method's (its columns: ``metrics=`` keeps
    only the metrics named)."""
    assert_close(got, expected.select(got.columns))


def _days(df: pl.DataFrame) -> list[pl.DataFrame]:
    """The frame's rows one day at a time, the days in reverse order."""
    with_day = df.with_columns(__d=pl.col("ts").dt.date())
    return [part.drop("__d") for _, part in sorted(with_day.group_by("__d"), reverse=True)]


@IGNORE_UNDEFINED
@pytest.mark.parametrize("case", list(TASKS))
def test_appended_merged_and_round_tripped_equal_one_pass(case, tmp_path):
    task, kw = TASKS[case]
    df = frame(1200, seed=21, days=12)
    one_pass = _method(df, task, kw, weight="w", by="seg", time="ts", every="1d", period="4d")
    ev = pe.Evaluation(task, by="seg", weight="w", time="ts", every="1d", **kw)
    for part in _days(df):  # every day once, newest first
        ev.update(part)
    same(ev.compute(period="4d"), one_pass)
    per_step = _method(df, task, kw, weight="w", by="seg", time="ts", every="1d")
    same(ev.compute(), per_step)
    # halves of each day in two evaluations (a day seen again merges), merged, saved, read
    a = pe.Evaluation(task, by="seg", weight="w", time="ts", every="1d", **kw)
    b = pe.Evaluation(task, by="seg", weight="w", time="ts", every="1d", **kw)
    a.update(df[::2])
    b.update(df[1::2].lazy())
    a.update(df.head(0))
    a.merge(b)
    path = tmp_path / "state.parquet"
    a.state.write_parquet(path)
    back = pe.Evaluation.from_state(pl.read_parquet(path))
    same(back.compute(period="4d"), one_pass)
    same(
        back.compute(period="2d"),
        _method(df, task, kw, weight="w", by="seg", time="ts", every="1d", period="2d"),
    )


@IGNORE_UNDEFINED
def test_a_day_seen_again_merges_into_its_state():
    df = frame(600, seed=22, days=5)
    ev = pe.Evaluation("binary", label="y", score="p", metrics=["logloss"], time="ts", every="1d")
    first, second = df.head(300), df.tail(300)
    ev.update(first).update(second)
    assert ev.state.filter(pl.col("__pe_part") == "states").height == 5  # one per day
    same(ev.compute(), df.eval.binary("y", "p", metrics=["logloss"], time="ts", every="1d"))


@IGNORE_UNDEFINED
def test_appending_a_day_touches_that_day_only():
    df = frame(800, seed=23, days=8)
    days = _days(df)[::-1]
    ev = pe.Evaluation(
        "regression", actual="a", pred="f", metrics=["mse", "mae"], time="ts", every="1d"
    )
    for part in days[:-1]:
        ev.update(part)
    before = ev.state
    ev.update(days[-1])
    after = ev.state
    new_day = days[-1]["ts"].dt.truncate("1d").max()
    unchanged = after.filter(pl.col("ts") != new_day)
    assert (
        unchanged.select(pl.exclude("__pe_def"))
        .sort("ts")
        .equals(
            before.filter(pl.col("__pe_part") != "def").select(pl.exclude("__pe_def")).sort("ts")
        )
    )


@IGNORE_UNDEFINED
def test_ranking_and_multiclass_evaluations_per_window():
    log = search_log(90, seed=24)
    ev = pe.Evaluation(
        "ranking", relevance="rel", score="s", query="q", k=(3,), by="market", time="ts", every="1d"
    )
    for _, part in log.group_by("market"):
        ev.update(part)
    expected = log.eval.ranking(
        "rel", "s", query="q", k=[3], by="market", time="ts", every="1d", period="3d"
    )
    same(ev.compute(period="3d"), expected)
    df = frame(500, seed=25, days=6).with_columns(
        yc=pl.col("ch"), pc=pl.when(pl.col("p") > 0.5).then(pl.col("ch")).otherwise(pl.lit("web"))
    )
    mc = pe.Evaluation(
        "multiclass", label="yc", pred="pc", classes=["app", "shop", "web"], time="ts", every="1d"
    )
    mc.update(df.head(250)).update(df.tail(250))
    expected = df.eval.multiclass(
        "yc", pred="pc", classes=["app", "shop", "web"], time="ts", every="1d", period="2d"
    )
    same(mc.compute(period="2d"), expected)


@IGNORE_UNDEFINED
def test_compute_grouping_sets_and_min_rows_from_the_state():
    df = frame(900, seed=26, days=6)
    kw = {"label": "y", "score": "p", "metrics": ["logloss", "accuracy"]}
    ev = pe.Evaluation("binary", by=["seg", "ch"], time="ts", every="1d", **kw)
    ev.update(df)
    got = ev.compute(period="3d", rollup=["seg", "ch"])
    expected = df.eval.binary(
        "y",
        "p",
        metrics=["logloss", "accuracy"],
        rollup=["seg", "ch"],
        time="ts",
        every="1d",
        period="3d",
    )
    same(got, expected)
    plain = pe.Evaluation("binary", by=["seg", "ch"], **kw).update(df)
    same(
        plain.compute(grouping_sets=[["ch"], []]),
        df.eval.binary("y", "p", metrics=["logloss", "accuracy"], grouping_sets=[["ch"], []]),
    )
    with pytest.warns(pe.UndefinedMetricWarning, match="min_rows=100"):
        small = ev.compute(min_rows=100)
    assert small["logloss"].null_count() == small.height
    with pytest.raises(InvalidParameterError, match='grouping key "region" is not among by'):
        ev.compute(rollup=["region"])


# -- BAD_INPUTS row 53 -----------------------------------------------------------------------


def test_merging_another_every_is_an_error():
    a = pe.Evaluation("binary", label="y", score="p", time="ts", every="1d")
    b = pe.Evaluation("binary", label="y", score="p", time="ts", every="1w")
    with pytest.raises(InvalidParameterError, match="different definitions: .*windows"):
        a.merge(b)
    c = pe.Evaluation("binary", label="y", score="p")
    with pytest.raises(InvalidParameterError, match="different definitions"):
        a.merge(c)


def test_bad_window_options_of_an_evaluation():
    with pytest.raises(InvalidParameterError, match="every= needs time="):
        pe.Evaluation("binary", label="y", score="p", every="1d")
    with pytest.raises(InvalidParameterError, match="needs every="):
        pe.Evaluation("binary", label="y", score="p", time="ts")
    with pytest.raises(InvalidParameterError, match="is not a duration"):
        pe.Evaluation("binary", label="y", score="p", time="ts", every="daily")
    ev = pe.Evaluation("binary", label="y", score="p", time="ts", every="1d")
    with pytest.raises(InvalidParameterError, match="whole multiple"):
        ev.compute(period="36h")
    with pytest.raises(DataValidationError, match='column "ts" .*Date, Datetime or integer'):
        ev.update(frame(20).with_columns(pl.col("ts").cast(pl.String)))
    with pytest.raises(InvalidParameterError, match="period= needs an evaluation with windows"):
        pe.Evaluation("binary", label="y", score="p").compute(period="2d")


def test_rows_of_null_time_are_ignored_by_the_evaluation():
    df = frame(300, seed=27, days=4).with_columns(
        pl.when(pl.col("a") > 2.5).then(None).otherwise(pl.col("ts")).alias("ts")
    )
    ev = pe.Evaluation("binary", label="y", score="p", metrics=["logloss"], time="ts", every="1d")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ev.update(df).compute()
    assert_close(got, df.eval.binary("y", "p", metrics=["logloss"], time="ts", every="1d"))
    assert got["ts"].null_count() == 0 and got["ts"].min() == dt.datetime(2024, 1, 1)


@IGNORE_UNDEFINED
def test_forecast_evaluation_per_window():
    from tests.test_windows import panel

    df, train = panel(28)
    kw = {"actual": "y", "forecast": "f", "series": "id", "time": "t", "season_length": 7}
    ev = pe.Evaluation("forecast", by="reg", train=train, every="1w", **kw)
    ev.update(df.head(60)).update(df.tail(df.height - 60))
    expected = df.eval.forecast(
        "y",
        "f",
        series="id",
        time="t",
        train=train,
        season_length=7,
        by="reg",
        every="1w",
        period="2w",
    )
    same(ev.compute(period="2w"), expected)
    back = pe.Evaluation.from_state(ev.state)
    same(back.compute(period="2w"), expected)
