"""pe.Evaluation("forecast"): a state bounded by the series, exact across partitions.

The state keeps per (by groups, series) the metrics' sums and the runs of times seen
(SPEC §10); merged states must equal ``df.eval.forecast`` on the concatenated rows to
1e-12, a (series, time) key seen twice anywhere is the task's duplicate-key error, and the
state of a lake read stretch by stretch stays one metric row and one run per series.
"""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_evaluation import assert_same, partitions

import polars_eval as pe
import polars_eval.scale.evaluation as evaluation
from polars_eval.scale.evaluation import DEF, PART
from polars_eval.scale.forecast_state import HI, LO, STEP

TIMES = ("t", "d", "ts", "s")  # integer, date (weekly), datetime (3-hourly), string


def whole(seed: int, n_series: int = 15, length: int = 40) -> pl.DataFrame:
    """Every day of every series: some zero actuals, quantile and interval columns,
    weights, a region, and the time as an integer ``t``, a date ``d``, a datetime ``ts``
    and a string ``s``."""
    rng = np.random.default_rng(seed)
    n = n_series * length
    return pl.DataFrame(
        {
            "sid": np.repeat(np.arange(n_series), length),
            "t": np.tile(np.arange(length), n_series),
            "y": np.round(rng.gamma(2.0, 5.0, n), 1),
            "f": rng.gamma(2.0, 5.0, n),
            "w": rng.random(n),
        }
    ).with_columns(
        region=pl.col("sid") % 3,
        y=pl.when(pl.col("t") % 11 == 5).then(0.0).otherwise(pl.col("y")),
        q10=pl.col("f") * 0.7,
        q90=pl.col("f") * 1.3,
        d=pl.date(2021, 1, 4) + pl.duration(weeks=pl.col("t")),
        ts=pl.datetime(2021, 1, 1) + pl.duration(hours=3 * pl.col("t")),
        s=pl.format("day{}", pl.col("t").cast(pl.String).str.zfill(3)),
    )


def frames(seed: int, n_series: int = 15, length: int = 40) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Test rows from day 24 (one in ten missing) and training rows before."""
    frame = whole(seed, n_series, length)
    train = frame.filter(pl.col("t") < 24)
    test = frame.filter(pl.col("t") >= 24)
    kept = np.random.default_rng(seed + 1).random(test.height) > 0.1
    return test.filter(pl.Series(kept)), train


def keywords(time: str, train: pl.DataFrame, weight: str | None) -> dict:
    return {
        "series": "sid",
        "time": time,
        "train": train.select("sid", time, "y"),
        "season_length": 2,
        "weight": weight,
        "quantiles": {0.1: "q10", 0.9: "q90"},
        "interval": ("q10", "q90"),
    }


def evaluation_of(by: str | None = "region", **kw) -> pe.Evaluation:
    return pe.Evaluation("forecast", actual="y", forecast="f", by=by, **kw)


def runs(ev: pe.Evaluation) -> pl.DataFrame:
    """The runs of times of an evaluation's state."""
    return ev.state.filter(pl.col(PART) == "states", pl.col(LO).is_not_null())


def run_times(ev: pe.Evaluation) -> dict[int, list[int]]:
    """The integer times the runs of the state hold, per series."""
    out: dict[int, list[int]] = {}
    for sid, lo, hi, step in runs(ev).select("sid", LO, HI, STEP).iter_rows():
        out.setdefault(sid, []).extend(range(lo, hi + 1, step) if step else [lo])
    return {k: sorted(v) for k, v in out.items()}


@pytest.mark.parametrize("time", TIMES)
@pytest.mark.parametrize("weight", [None, "w"])
def test_rows_dealt_to_partitions_equal_the_task_method(time, weight, tmp_path):
    test, train = frames(1)
    kw = keywords(time, train, weight)
    want = test.eval.forecast("y", "f", by="region", **kw)
    total = evaluation_of(**kw)
    for i, part in enumerate(partitions(test, 6, seed=2)):
        path = tmp_path / f"state{i}.parquet"
        evaluation_of(**kw).update(part).state.write_parquet(path)
        total.merge(pe.Evaluation.from_state(pl.read_parquet(path)))
    assert_same(total.compute(), want)


@pytest.mark.parametrize("time", ["t", "d"])
def test_without_by_and_without_train(time):
    test, _ = frames(3)
    want = test.eval.forecast("y", "f", series="sid", time=time)
    total = evaluation_of(by=None, series="sid", time=time)
    for part in partitions(test, 4, seed=4):
        total.merge(evaluation_of(by=None, series="sid", time=time).update(part))
    assert_same(total.compute(), want)


def test_a_lake_read_stretch_by_stretch_keeps_one_run_per_series(tmp_path, monkeypatch):
    frame = whole(5, n_series=12, length=60)
    train = frame.filter(pl.col("t") < 24)
    test = frame.filter(pl.col("t") >= 24)  # no day missing: every series one stretch
    for i, lo in enumerate(range(24, 60, 9)):  # a file per stretch of days, every series
        test.filter(pl.col("t").is_between(lo, lo + 8)).write_parquet(tmp_path / f"{i}.parquet")
    monkeypatch.setattr(evaluation, "_CHUNK_ROWS", 50)  # chunks cut series and stretches
    monkeypatch.setattr(evaluation, "_MERGE_EVERY", 3)
    kw = keywords("d", train, "w")
    ev = evaluation_of(**kw).update(pl.scan_parquet(tmp_path / "*.parquet"))
    assert_same(ev.compute(), test.eval.forecast("y", "f", by="region", **kw))
    state = ev.state.filter(pl.col(PART) == "states")
    assert state.height == 2 * 12  # a metric row and a run per series, whatever the rows
    assert runs(ev).get_column(STEP).to_list() == [7] * 12  # days


def test_interleaved_partitions_keep_their_keys_then_compact():
    test = whole(6, n_series=5, length=60).filter(pl.col("t") >= 24)  # days 24..59
    kw = {"series": "sid", "time": "t"}
    parts = partitions(test, 4, seed=7)
    total = evaluation_of(**kw)
    sizes = []
    for part in parts:
        total.merge(evaluation_of(**kw).update(part))
        sizes.append(runs(total).height)
    assert sizes[0] > 5  # one partition: a series' days with gaps, several runs each
    assert sizes[-1] == 5  # every day of every series: one run each
    assert run_times(total) == {s: list(range(24, 60)) for s in range(5)}
    assert_same(total.compute(), test.eval.forecast("y", "f", by="region", **kw))


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 40), st.integers(0, 3)),
        min_size=1,
        max_size=60,
    ),
    step=st.sampled_from([1, 3, 7]),
)
def test_runs_hold_exactly_the_times_and_catch_every_repeated_key(keys, step):
    """Series ``s`` at time ``step * t`` in partition ``p``: the state's runs are the
    distinct times, and a key repeated anywhere is the duplicate-key error."""
    rng = np.random.default_rng(len(keys))
    frame = pl.DataFrame(
        {
            "sid": [k[0] for k in keys],
            "t": [step * k[1] for k in keys],
            "part": [k[2] for k in keys],
            "y": rng.normal(10.0, 2.0, len(keys)),
            "f": rng.normal(10.0, 2.0, len(keys)),
        }
    )
    kw = {"series": "sid", "time": "t"}
    total = evaluation_of(by=None, **kw)
    for p in range(4):
        total.merge(evaluation_of(by=None, **kw).update(frame.filter(pl.col("part") == p)))
    distinct = frame.group_by("sid").agg(pl.col("t").unique().sort())
    assert run_times(total) == dict(distinct.iter_rows())
    repeated = frame.select(pl.struct("sid", "t").is_duplicated().any()).item()
    if repeated:
        with pytest.raises(pe.DataValidationError, match=r"duplicate \(sid, t\) rows"):
            total.compute()
    else:
        assume(frame.height > 1)
        assert_same(total.compute(), frame.eval.forecast("y", "f", **kw))


def test_a_key_repeated_within_one_batch():
    test, _ = frames(8)
    ev = evaluation_of(series="sid", time="t").update(pl.concat([test, test.slice(3, 2)]))
    key = test.slice(3, 1)
    sid, t = key["sid"].item(), key["t"].item()
    with pytest.raises(pe.DataValidationError) as err:
        ev.compute()
    assert "duplicate (sid, t) rows" in str(err.value)
    assert "found 2 row(s)" in str(err.value)
    assert f"sid={sid}, t={t}" in str(err.value)


@pytest.mark.parametrize("time", TIMES)
def test_a_key_repeated_across_partitions_names_it(time):
    test, _ = frames(9)
    ev = evaluation_of(series="sid", time=time).update(test.head(30))
    other = evaluation_of(series="sid", time=time).update(test.slice(29, 10))  # row 29 twice
    ev.merge(pe.Evaluation.from_state(other.state))
    repeated = test.row(29, named=True)
    shown = f"'{repeated[time]}'" if time == "s" else str(repeated[time])
    with pytest.raises(pe.DataValidationError, match="found 1 row") as err:
        ev.compute()
    assert f"sid={repeated['sid']}, {time}={shown}" in str(err.value)


def test_null_times_count_as_one_key():
    test, _ = frames(10)
    one = test.with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise("t").alias("t")
    )
    kw = {"series": "sid", "time": "t"}
    ev = evaluation_of(**kw).update(one)
    assert_same(ev.compute(), one.eval.forecast("y", "f", by="region", **kw))
    ev.update(one.slice(3, 1))  # the same series with a null time again
    with pytest.raises(pe.DataValidationError, match=r"duplicate \(sid, t\).*t=None"):
        ev.compute()


def test_registered_metrics_are_the_task_methods_metrics():
    test, train = frames(11)
    kw = {"series": "sid", "time": "t", "train": train.select("sid", "t", "y"), "season_length": 2}
    metrics = ["mae", "msse", "rmsse", "spis"]  # spis: the scale joined onto the rows
    want = test.eval.forecast("y", "f", by="region", metrics=metrics, **kw)
    total = evaluation_of(metrics=metrics, **kw)
    for part in partitions(test, 3, seed=12):
        total.merge(evaluation_of(metrics=metrics, **kw).update(part))
    assert_same(total.compute(), want.select("region", *metrics))
    columns = ["n_series", "mae_pooled"]  # not metric names: columns of the default table
    ev = evaluation_of(metrics=columns, **kw).update(test)
    want = test.eval.forecast("y", "f", by="region", **kw).select("region", *columns)
    assert_same(ev.compute(), want)


def test_different_definitions_refuse_to_merge():
    test, train = frames(13)
    base = keywords("t", train, None)
    ev = evaluation_of(**base).update(test)
    for change, named in [
        ({"season_length": 3}, "season_length"),
        ({"train": train.select("sid", "t", "y").head(50)}, "train"),
        ({"time": "d", "train": train.select("sid", "d", "y")}, "columns"),
        ({"weight": "w"}, "weight"),
    ]:
        other = evaluation_of(**{**base, **change})
        with pytest.raises(pe.InvalidParameterError, match=named):
            ev.merge(other)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("f", pl.lit("x"), '"f"'),
        ("q10", pl.lit("x"), '"q10"'),
        ("w", pl.lit(-1.0), '"w"'),
    ],
)
def test_bad_rows_are_refused_at_update(column, value, message):
    test, train = frames(14)
    kw = keywords("t", train, "w")
    ev = evaluation_of(**kw).update(test.head(40))
    before = ev.state
    with pytest.raises(pe.DataValidationError, match=message):
        ev.update(test.with_columns(value.alias(column)))
    assert ev.state.equals(before)  # the state is unchanged


def test_missing_interval_column_and_bad_batch_type():
    test, train = frames(15)
    ev = evaluation_of(**keywords("t", train, None))
    with pytest.raises(pe.DataValidationError, match='"q90"'):
        ev.update(test.drop("q90"))
    with pytest.raises(pe.InvalidParameterError, match="DataFrame or LazyFrame"):
        ev.update({"y": [1.0]})


def test_repeated_training_keys_are_the_task_error():
    test, train = frames(16)
    doubled = pl.concat([train, train.head(1)]).select("sid", "t", "y")
    kw = {"series": "sid", "time": "t", "train": doubled}
    with pytest.raises(pe.DataValidationError, match="the train= frame has duplicate") as want:
        test.eval.forecast("y", "f", **kw)
    ev = evaluation_of(**kw).update(test)
    with pytest.raises(pe.DataValidationError, match="the train= frame has duplicate") as got:
        ev.compute()
    assert str(got.value) == str(want.value)


def test_a_state_of_the_rows_format_is_read():
    """A forecast state written before the bounded state (its rows) is read as states."""
    test, train = frames(17)
    kw = keywords("d", train, "w")
    ev = evaluation_of(**kw).update(test)
    state = ev.state
    head = state.filter(pl.col(PART) == "def").select(PART, DEF)
    raw = json.loads(head[DEF].item())
    head = head.with_columns(pl.lit(json.dumps({**raw, "version": 2})).alias(DEF))
    older = pl.concat(
        [
            head,
            test.select(ev._inputs()).with_columns(pl.lit("rows").alias(PART)),
            state.filter(pl.col(PART) == "train").select(PART, "sid", "d", "y"),
        ],
        how="diagonal_relaxed",
    )
    assert_same(pe.Evaluation.from_state(older).compute(), ev.compute())


def test_nothing_seen():
    with pytest.raises(pe.UndefinedMetricError, match="saw none"):
        evaluation_of(by=None, series="sid", time="t").compute()
    test, _ = frames(18)
    out = evaluation_of(series="sid", time="t").compute()
    want = test.eval.forecast("y", "f", by="region", series="sid", time="t")
    assert out.height == 0
    assert out.columns == want.columns


def test_dates_and_steps_of_the_runs():
    """Weekly dates are one run with a step of 7 days; a datetime series every 3 hours
    with a missing hour is cut there."""
    days = [dt.date(2021, 1, 4) + dt.timedelta(weeks=i) for i in range(10)]
    frame = pl.DataFrame({"sid": [1] * 10, "d": days, "y": [1.0] * 10, "f": [2.0] * 10})
    ev = evaluation_of(by=None, series="sid", time="d").update(frame)
    assert runs(ev).select(LO, HI, STEP).rows() == [(days[0], days[-1], 7)]
    hours = [dt.datetime(2021, 1, 1) + dt.timedelta(hours=3 * i) for i in (0, 1, 2, 3, 5, 6, 7)]
    frame = pl.DataFrame({"sid": [1] * 7, "ts": hours, "y": [1.0] * 7, "f": [2.0] * 7})
    ev = evaluation_of(by=None, series="sid", time="ts").update(frame)
    got = sorted(runs(ev).select(LO, HI).rows())
    assert got == [(hours[0], hours[3]), (hours[4], hours[6])]


@pytest.mark.parametrize("by", ["g", None])
def test_warnings_and_errors_are_the_task_methods(by):
    df = pl.DataFrame(
        {"g": [1, 1, 2, 2], "sid": [1, 1, 2, 2], "t": [1, 2, 1, 2], "y": [0.0, 0, 1, 2]}
    ).with_columns(f=pl.lit(1.0))
    kw = {"series": "sid", "time": "t", "by": by}
    with pytest.warns(pe.UndefinedMetricWarning) as want:
        expected = df.eval.forecast("y", "f", **kw) if by else None
        if by is None:
            df.filter(pl.col("g") == 1).eval.forecast("y", "f", **kw)
    with pytest.warns(pe.UndefinedMetricWarning) as got:
        ev = pe.Evaluation("forecast", actual="y", forecast="f", **kw)
        if by is None:
            ev.update(df.filter(pl.col("g") == 1)).compute()
        else:
            assert_same(ev.update(df).compute(), expected)
    assert [str(w.message) for w in got] == [str(w.message) for w in want]
    empty = df.with_columns(pl.lit(None, pl.Float64).alias("y"))
    with pytest.raises(pe.UndefinedMetricError) as want_error:
        empty.eval.forecast("y", "f", series="sid", time="t")
    with pytest.raises(pe.UndefinedMetricError) as got_error:
        pe.Evaluation("forecast", actual="y", forecast="f", series="sid", time="t").update(
            empty
        ).compute()
    assert str(got_error.value) == str(want_error.value)
