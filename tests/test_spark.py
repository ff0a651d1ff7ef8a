"""pe.spark.evaluate (SPEC §10): inside Spark (local mode), the one-machine numbers.

Every task is run through Spark on data whose rows are dealt round-robin across
partitions (so a group, a query and a series are split), and compared with
``pe.Evaluation`` and the task method on the same rows (exact mode: to 1e-12).

Spark needs pyspark (in the ``test`` extra) and a Java runtime (.ci/run installs one when
missing). A Spark test that cannot start fails; it never skips.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from conftest import multiclass_frame

import polars_eval as pe
from polars_eval.scale import spark as pe_spark

pytestmark = pytest.mark.filterwarnings(
    # pyspark's own notice about pandas 3 (our code does not use pandas)
    "ignore:PySpark does not yet fully support pandas:FutureWarning"
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def spark():
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "PYTHONPATH")}
    # the executors' Python is this one, importing this checkout's polars_eval
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved["PYTHONPATH"]]))
    try:
        from pyspark.sql import SparkSession

        session = (
            SparkSession.builder.master("local[2]")
            .appName("polars_eval-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "3")
            .config("spark.default.parallelism", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
    except Exception as err:  # no pyspark, no Java: Spark cannot start, and the test fails
        pytest.fail(f"Spark cannot start in local mode: {type(err).__name__}: {err}")
    yield session
    session.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(params=["arrow_rdd", "map_in_arrow"])
def path(request, monkeypatch):
    """Both ways the rows reach Python: Spark's JVM Arrow batches as an RDD (classic
    DataFrames), and mapInArrow (the fallback, e.g. for Spark Connect)."""
    if request.param == "map_in_arrow":
        monkeypatch.setattr(pe_spark, "_arrow_rdd", lambda df: None)
    return request.param


def to_spark(session, df: pl.DataFrame, partitions: int = 3):
    """``df`` as a Spark DataFrame, its rows dealt round-robin across ``partitions``."""
    return session.createDataFrame(df.to_arrow()).repartition(partitions)


def assert_same(got: pl.DataFrame, want: pl.DataFrame, tol: float = 1e-12) -> None:
    """Same columns and types, same groups in order, floats equal to ``tol``, same nulls."""
    assert got.columns == want.columns
    assert got.dtypes == want.dtypes
    assert got.height == want.height
    for name in want.columns:
        a, b = got[name], want[name]
        if b.dtype.is_float():
            x, y = a.to_numpy(), b.to_numpy()
            assert np.array_equal(np.isnan(x), np.isnan(y)), name
            ok = np.isnan(x) | (np.abs(x - y) <= tol * np.maximum(1.0, np.abs(y)))
            assert ok.all(), (name, x[~ok], y[~ok])
        else:
            assert a.to_list() == b.to_list(), name


def F_expr(sql: str):
    from pyspark.sql import functions as F

    return F.expr(sql)


def one_machine(df: pl.DataFrame, task: str, **kw) -> pl.DataFrame:
    return pe.Evaluation(task, **kw).update(df).compute()


def binary_frame(seed: int, n: int = 2000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "seg": rng.choice(["a", "b", "c", "d"], n),
            "y": y,
            "p": np.round(np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1), 2),  # ties
            "w": rng.integers(0, 4, n).astype(float),  # zero weights too
        }
    )


# -- every task equals one machine ---------------------------------------------------------


@pytest.mark.parametrize(("weight", "by"), [(None, None), ("w", "seg")])
def test_binary_exact_equals_one_machine(spark, path, weight, by):
    df = binary_frame(1)
    kw = {"label": "y", "score": "p", "weight": weight, "by": by}
    got = pe.spark.evaluate(to_spark(spark, df), "binary", **kw)
    assert_same(got, one_machine(df, "binary", **kw))
    # and the task method on all rows, independently of pe.Evaluation
    assert_same(got, df.eval.binary("y", "p", weight=weight, by=by))


@pytest.mark.parametrize("partitions", [1, 2, 7])
def test_binary_partitions_and_empty_partitions(spark, path, partitions):
    """Input partitions that are empty, with distinct scores, with ties (one of each kind of
    state), groups split across them; 1, 2 or 7 finalizing partitions (some empty)."""
    df = mixed_frame(21)
    parts = [df.head(600).rows(), [], df.tail(600).rows(), []]  # one list per partition
    rdd = spark.sparkContext.parallelize(parts, len(parts)).flatMap(lambda rows: rows)
    sdf = spark.createDataFrame(rdd, "seg string, y long, p double, w double")
    assert sdf.rdd.glom().map(len).collect() == [600, 0, 600, 0]
    kw = {"label": "y", "score": "p", "weight": "w", "by": "seg"}
    got = pe.spark.evaluate(sdf, "binary", partitions=partitions, **kw)
    assert_same(got, one_machine(df, "binary", **kw))
    kw = {"label": "y", "score": "p", "metrics": ["auc", "ks"]}  # one partition finalizes
    got = pe.spark.evaluate(sdf, "binary", partitions=partitions, **kw)
    assert_same(got, one_machine(df, "binary", **kw))


def test_classic_dataframes_take_the_jvm_arrow_path(spark):
    sdf = to_spark(spark, binary_frame(12))
    arrow = pe_spark._arrow_rdd(sdf.select("seg", "y", "p"))
    assert arrow is not None
    rdd, schema = arrow
    assert schema.names == ["seg", "y", "p"]
    assert sum(pa.ipc.read_record_batch(m, schema).num_rows for m in rdd.collect()) == 2000


class _WithoutArrowBatches:
    """A JVM Dataset whose private ``toArrowBatchRdd`` is gone (another Spark version)."""

    def __init__(self, jdf):
        self._jdf = jdf

    def __getattr__(self, name):
        if name == "toArrowBatchRdd":
            from py4j.protocol import Py4JError

            raise Py4JError(f"{name} does not exist in the JVM")
        return getattr(self._jdf, name)


def test_without_the_private_jvm_api_the_rows_take_mapinarrow(spark, monkeypatch):
    """No ``_jdf`` (Spark Connect), or a JVM without ``toArrowBatchRdd``: no RDD path, and
    ``evaluate`` runs through mapInArrow with the same result."""
    sdf = to_spark(spark, binary_frame(17))

    class Connect:  # a DataFrame without a JVM Dataset
        sparkSession = spark
        schema = sdf.schema

    assert pe_spark._arrow_rdd(Connect()) is None
    selected = sdf.select("seg", "y", "p")
    selected._jdf = _WithoutArrowBatches(selected._jdf)
    assert pe_spark._arrow_rdd(selected) is None

    seen = []
    original = pe_spark._arrow_rdd

    def without_api(df):
        df._jdf = _WithoutArrowBatches(df._jdf)
        seen.append(original(df))
        return seen[-1]

    monkeypatch.setattr(pe_spark, "_arrow_rdd", without_api)
    df = binary_frame(17)
    kw = {"label": "y", "score": "p", "weight": "w", "by": "seg"}
    got = pe.spark.evaluate(to_spark(spark, df), "binary", **kw)
    assert seen == [None]
    assert_same(got, one_machine(df, "binary", **kw))


def test_large_string_batches(spark, path):
    """``spark.sql.execution.arrow.useLargeVarTypes``: the JVM writes large strings, read as
    such."""
    df = binary_frame(18)
    kw = {"label": "y", "score": "p", "by": "seg", "metrics": ["auc", "logloss"]}
    spark.conf.set("spark.sql.execution.arrow.useLargeVarTypes", "true")
    try:
        got = pe.spark.evaluate(to_spark(spark, df), "binary", **kw)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.useLargeVarTypes")
    assert_same(got, one_machine(df, "binary", **kw))


def test_dates_and_timestamps_as_groups(spark, path):
    import datetime as dt

    df = binary_frame(16).with_columns(
        day=pl.date(2024, 1, 1) + pl.duration(days=pl.int_range(pl.len()) % 3),
        at=pl.datetime(2024, 1, 1, time_zone="UTC") + pl.duration(hours=pl.int_range(pl.len()) % 4),
    )
    kw = {"label": "y", "score": "p", "metrics": ["auc", "brier"]}
    for by in (["day"], ["at", "seg"]):
        got = pe.spark.evaluate(to_spark(spark, df), "binary", by=by, **kw)
        assert_same(got, one_machine(df, "binary", by=by, **kw))
    assert got["at"].dtype == pl.Datetime("us", "UTC")
    assert got["at"][0] == dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def test_partitions_must_be_a_positive_integer(spark):
    sdf = to_spark(spark, binary_frame(12))
    for bad in (0, -1, 2.0, True):
        with pytest.raises(pe.InvalidParameterError, match="partitions"):
            pe.spark.evaluate(sdf, "binary", label="y", score="p", by="seg", partitions=bad)


def test_binary_metrics_selection_equals_sklearn(spark):
    from sklearn.metrics import log_loss, roc_auc_score

    df = binary_frame(2)
    got = pe.spark.evaluate(
        to_spark(spark, df),
        "binary",
        label="y",
        score="p",
        weight="w",
        by="seg",
        metrics=["auc", "logloss"],
    )
    assert got.columns == ["seg", "auc", "logloss"]
    for seg, auc, ll in got.iter_rows():
        part = df.filter(pl.col("seg") == seg)
        w = part["w"].to_numpy()
        assert auc == pytest.approx(roc_auc_score(part["y"], part["p"], sample_weight=w), abs=1e-12)
        assert ll == pytest.approx(log_loss(part["y"], part["p"], sample_weight=w), abs=1e-12)


def test_binary_binned_equals_one_machine(spark, path):
    rng = np.random.default_rng(3)
    n = 3000
    df = pl.DataFrame(
        {"seg": rng.integers(0, 3, n), "y": rng.integers(0, 2, n), "s": rng.normal(size=n)}
    )
    kw = {"label": "y", "score": "s", "by": "seg", "bins": 16, "probability": False}
    got = pe.spark.evaluate(to_spark(spark, df), "binary", **kw)
    assert_same(got, one_machine(df, "binary", **kw))


def test_regression_equals_one_machine(spark):
    rng = np.random.default_rng(4)
    n = 1500
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 3, n),
            "y": np.round(rng.normal(50, 8, n), 1),
            "p": np.round(rng.normal(50, 8, n), 1),
            "w": rng.random(n),
        }
    )
    kw = {"actual": "y", "pred": "p", "weight": "w", "by": "g"}
    got = pe.spark.evaluate(to_spark(spark, df), "regression", **kw)
    assert_same(got, one_machine(df, "regression", **kw))
    assert_same(got, df.eval.regression("y", "p", weight="w", by="g"))


@pytest.mark.parametrize("by", [None, "g"])
def test_metric_states_equal_one_machine(spark, path, by):
    """Definitions kept as the metrics' states (co-moments, sums, extrema) through Spark."""
    rng = np.random.default_rng(14)
    n = 1500
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 3, n),
            "y": rng.gamma(2.0, 3.0, n),
            "p": rng.gamma(2.0, 3.0, n),
            "w": rng.random(n),
        }
    )
    metrics = ["mse", "r2", "pearson", "max_error", "mape", "zero_actuals"]
    kw = {"actual": "y", "pred": "p", "weight": "w", "by": by, "metrics": metrics}
    got = pe.spark.evaluate(to_spark(spark, df), "regression", **kw)
    assert_same(got, one_machine(df, "regression", **kw))
    assert pe.Evaluation("regression", **kw).update(df).state["__pe_part"][-1] == "states"
    mc = multiclass_frame(1200, seed=15)
    kw = {"label": "y", "pred": "pred", "classes": ["a", "b", "c"], "weight": "w", "by": by}
    got = pe.spark.evaluate(to_spark(spark, mc), "multiclass", **kw)
    assert_same(got, one_machine(mc, "multiclass", **kw))


def test_multiclass_equals_one_machine(spark):
    df = multiclass_frame(1200, seed=5)
    kw = {
        "label": "y",
        "pred": "pred",
        "proba": ["pa", "pb", "pc"],
        "classes": ["a", "b", "c"],
        "weight": "w",
        "by": "g",
    }
    got = pe.spark.evaluate(to_spark(spark, df), "multiclass", **kw)
    assert_same(got, one_machine(df, "multiclass", **kw))


def test_forecast_series_split_across_partitions(spark):
    rng = np.random.default_rng(6)
    n_series, length = 10, 30
    frame = pl.DataFrame(
        {
            "sid": np.repeat(np.arange(n_series), length),
            "t": np.tile(np.arange(length), n_series),
            "y": rng.normal(20, 3, n_series * length),
            "f": rng.normal(20, 3, n_series * length),
            "w": rng.random(n_series * length),
        }
    ).with_columns(region=pl.col("sid") % 2)
    train = frame.filter(pl.col("t") < 20).select("sid", "t", "y")
    test = frame.filter(pl.col("t") >= 20)
    kw = {
        "actual": "y",
        "forecast": "f",
        "series": "sid",
        "time": "t",
        "train": train,
        "season_length": 3,
        "weight": "w",
        "by": "region",
    }
    got = pe.spark.evaluate(to_spark(spark, test, partitions=4), "forecast", **kw)
    assert_same(got, one_machine(test, "forecast", **kw))
    kw.pop("by")
    want = test.eval.forecast(
        "y", "f", **{k: v for k, v in kw.items() if k not in ("actual", "forecast")}
    )
    assert_same(pe.spark.evaluate(to_spark(spark, test, partitions=4), "forecast", **kw), want)


@pytest.mark.parametrize("item", [None, "doc"])
def test_ranking_queries_split_across_partitions(spark, path, item):
    rng = np.random.default_rng(7)
    n = 2000
    q = rng.integers(0, 120, n)
    df = pl.DataFrame(
        {
            "mkt": q % 3,
            "q": q,
            "rel": rng.integers(0, 4, n),
            "s": rng.integers(0, 6, n).astype(float),  # many ties within a query
        }
    ).with_row_index("doc")
    df = df.with_columns(pl.col("doc").cast(pl.Int64))
    kw = {"relevance": "rel", "score": "s", "query": "q", "item": item, "by": "mkt", "k": [3, None]}
    got = pe.spark.evaluate(to_spark(spark, df, partitions=4), "ranking", **kw)
    assert_same(got, one_machine(df, "ranking", **kw))
    want = df.eval.ranking("rel", "s", query="q", item=item, by="mkt", k=[3, None])
    assert_same(got, want)


# -- warnings, empty data --------------------------------------------------------------


def test_undefined_values_warn_as_one_machine(spark, path):
    df = binary_frame(8).with_columns(
        # segments "a" and "c" hold one class only: their AUC is undefined
        y=pl.when(pl.col("seg").is_in(["a", "c"])).then(0).otherwise(pl.col("y"))
    )
    kw = {"label": "y", "score": "p", "by": "seg", "metrics": ["auc", "logloss"]}
    with pytest.warns(pe.UndefinedMetricWarning) as want_warnings:
        want = one_machine(df, "binary", **kw)
    with pytest.warns(pe.UndefinedMetricWarning) as got_warnings:
        got = pe.spark.evaluate(to_spark(spark, df), "binary", **kw)
    assert_same(got, want)
    ours = [str(w.message) for w in got_warnings if w.category is pe.UndefinedMetricWarning]
    assert ours == [str(w.message) for w in want_warnings]
    assert ours == ["auc is null for 2 of 4 groups (needs both classes present)"]


def test_empty_dataframe_is_what_one_machine_says(spark, path):
    df = binary_frame(9).head(0)
    got = pe.spark.evaluate(to_spark(spark, df), "binary", label="y", score="p", by="seg")
    assert_same(got, pe.Evaluation("binary", label="y", score="p", by="seg").compute())
    with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate"):
        pe.spark.evaluate(to_spark(spark, df), "binary", label="y", score="p")


# -- bad input: our errors, not a JVM stack trace ------------------------------------------


def test_wrong_spark_type_is_our_validation_error(spark):
    df = binary_frame(10).with_columns(pl.col("p").cast(pl.String))
    with pytest.raises(pe.DataValidationError, match='"p"'):
        pe.spark.evaluate(to_spark(spark, df), "binary", label="y", score="p")
    with pytest.raises(pe.DataValidationError, match='"score_x"'):
        pe.spark.evaluate(to_spark(spark, df), "binary", label="y", score="score_x")
    with pytest.raises(pe.DataValidationError, match='"seg"'):
        pe.spark.evaluate(
            to_spark(spark, df.drop("seg")), "regression", actual="y", pred="w", by="seg"
        )


def test_spark_types_without_a_polars_form_are_our_validation_errors(spark):
    sdf = to_spark(spark, binary_frame(19))
    kw = {"label": "y", "score": "p"}
    for column, sql in (
        ("p", "array(p)"),  # a list of scores
        ("p", "map('a', p)"),
        ("p", "named_struct('a', p)"),
        ("y", "cast(y as string)"),
        ("p", "make_interval(0, 0, 0, 0, 0, 0, p)"),  # an interval: no Arrow form
    ):
        bad = sdf.withColumn(column, F_expr(sql))
        with pytest.raises(pe.DataValidationError, match=f'"{column}"'):
            pe.spark.evaluate(bad, "binary", **kw)


def test_duplicated_spark_columns_are_our_validation_errors(spark):
    left = spark.createDataFrame([(1, 0, 0.2), (2, 1, 0.7)], "id int, y long, p double")
    right = spark.createDataFrame([(1, 0.3), (2, 0.9)], "id int, p double")
    joined = left.join(right, left.id == right.id)  # two columns "id", two columns "p"
    with pytest.raises(pe.DataValidationError, match='"p" appears more than once'):
        pe.spark.evaluate(joined, "binary", label="y", score="p")
    with pytest.raises(pe.DataValidationError, match='"id" appears more than once'):
        pe.spark.evaluate(joined.drop(right.p), "binary", label="y", score="p", by="id")
    got = pe.spark.evaluate(joined.drop(right.p), "binary", label="y", score="p")
    assert got["auc"].item() == 1.0


def test_decimal_scores_equal_one_machine(spark, path):
    df = binary_frame(20).with_columns(pl.col("p").cast(pl.Decimal(6, 2)))
    kw = {"label": "y", "score": "p", "by": "seg", "metrics": ["auc", "logloss", "ks"]}
    got = pe.spark.evaluate(to_spark(spark, df), "binary", **kw)
    assert_same(got, one_machine(df, "binary", **kw))


def test_bad_rows_inside_executors_are_our_errors(spark, path):
    df = binary_frame(11)
    negative = df.with_columns(w=pl.when(pl.col("seg") == "b").then(-1.0).otherwise(pl.col("w")))
    with pytest.raises(pe.DataValidationError, match='"w"') as raised:
        pe.spark.evaluate(to_spark(spark, negative), "binary", label="y", score="p", weight="w")
    assert "Traceback" not in str(raised.value) and "java" not in str(raised.value).lower()
    # a label outside {0, 1}: found at finalize (exact mode), on the executors
    three = df.with_columns(y=pl.when(pl.col("p") > 0.9).then(2).otherwise(pl.col("y")))
    with pytest.raises(pe.DataValidationError, match='"y"'):
        pe.spark.evaluate(to_spark(spark, three), "binary", label="y", score="p", by="seg")


def test_arguments_refused_by_name(spark):
    with pytest.raises(pe.InvalidParameterError, match="pyspark DataFrame"):
        pe.spark.evaluate(binary_frame(12), "binary", label="y", score="p")
    sdf = to_spark(spark, binary_frame(12))
    with pytest.raises(pe.InvalidParameterError, match="scor"):
        pe.spark.evaluate(sdf, "binary", label="y", scor="p")
    with pytest.raises(pe.InvalidParameterError, match="train="):
        pe.spark.evaluate(
            sdf, "forecast", actual="y", forecast="p", series="seg", time="w", train=sdf
        )


# -- without Spark: the executor functions and the lazy import ------------------------------


def mixed_frame(seed: int, n: int = 1200) -> pl.DataFrame:
    """Rows whose first half has distinct scores, the second half scores at 1 decimal."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1)
    p[n // 2 :] = np.round(p[n // 2 :], 1)
    w = rng.integers(0, 4, n).astype(float)
    return pl.DataFrame(
        {"seg": rng.choice(["a", "b", "c", "d", "e"], n), "y": y, "p": p, "w": w}
    ).with_columns(w=pl.when(pl.int_range(pl.len()) % 97 == 5).then(None).otherwise("w"))


def run_executors(ev, partitions: list[pl.DataFrame], n: int) -> list[pl.DataFrame]:
    """The two executor functions as Spark runs them: blobs per input partition, routed by
    their target to ``n`` partitions, then each partition's table."""
    keys = pe_spark.partition_keys(n)
    routed: dict[int, list[pa.RecordBatch]] = {k: [] for k in keys}
    for part in partitions:
        for batch in pe_spark._partition_blobs(ev, keys, part.to_arrow().to_batches(128)):
            for key, blob in zip(batch.column(0).to_pylist(), batch.column(1), strict=True):
                routed[key].append(pa.RecordBatch.from_arrays([pa.array([blob.as_py()])], ["b"]))
    schema = dict(ev._batch_rows(partitions[0].head(0).lazy()).collect_schema())
    out = []
    for batches in routed.values():
        blobs = [pa.RecordBatch.from_arrays([b.column(0)], [pe_spark._BLOB]) for b in batches]
        for result in pe_spark._partition_results(ev, schema, blobs):
            out.append(pl.read_ipc(result.column(0)[0].as_py()))
    return out


@pytest.mark.parametrize("weight", ["w", None])
@pytest.mark.parametrize("n", [1, 3, 20])
def test_executor_functions_merge_chunks_partitions_and_targets(monkeypatch, n, weight):
    """Without Spark: chunks of several batches, a partition sending its rows as they are
    (distinct scores) and one sending its distinct rows (ties), groups split across both,
    n target partitions (some empty), with and without a weight column: each group
    finalized once, equal to one machine."""
    df = mixed_frame(13)
    monkeypatch.setattr(pe_spark, "_CHUNK_ROWS", 300)  # several chunks per partition
    kw = {"label": "y", "score": "p", "weight": weight, "by": "seg"}
    ev = pe.Evaluation("binary", **kw)
    first, second = df.head(600), df.tail(600)
    assert not pe_spark._few_distinct(ev, first.head(300))  # the rows, as they are
    assert pe_spark._few_distinct(ev, second.head(300))  # the distinct rows
    tables = run_executors(ev, [first, second], n)
    out = pl.concat(tables).sort("seg")
    assert out["seg"].to_list() == sorted(set(df["seg"]))  # each group in one partition only
    assert len(tables) <= min(n, 5)
    assert_same(out, one_machine(df, "binary", **kw))
    assert_same(out, df.eval.binary("y", "p", weight=weight, by="seg"))
    # only the rows as they are, from the first partition
    alone = pl.concat(run_executors(ev, [first], n)).sort("seg")
    assert_same(alone, one_machine(first, "binary", **kw))
    # and a subset of metrics, asked of the task method
    ev = pe.Evaluation("binary", metrics=["ks", "auc", "logloss"], **kw)
    out = pl.concat(run_executors(ev, [first, second], n)).sort("seg")
    assert out.columns == ["seg", "ks", "auc", "logloss"]
    assert_same(out, one_machine(df, "binary", metrics=["ks", "auc", "logloss"], **kw))


@pytest.mark.parametrize("weight", ["w", None])
def test_executor_functions_rows_of_another_task(weight):
    """Regression with its order statistics (a state of rows): rows sent as they are
    (continuous values, with or without a weight column) finalized by ``compute()``."""
    rng = np.random.default_rng(22)
    n = 900
    df = pl.DataFrame(
        {"g": rng.integers(0, 3, n), "y": rng.gamma(2.0, 3.0, n), "p": rng.gamma(2.0, 3.0, n)}
    ).with_columns(w=pl.lit(rng.random(n)))
    kw = {"actual": "y", "pred": "p", "weight": weight, "by": "g"}
    ev = pe.Evaluation("regression", **kw)
    assert ev._table is None and not pe_spark._few_distinct(ev, df)
    out = pl.concat(run_executors(ev, [df.head(400), df.tail(500)], 2)).sort("g")
    assert_same(out, one_machine(df, "regression", **kw))


def test_blobs_carry_integers_narrowed_and_exact():
    frame = pl.DataFrame(
        {
            "a": pl.Series([-300, 0, 300], dtype=pl.Int64),
            "b": pl.Series([0, 7, 200], dtype=pl.UInt32),
            "c": pl.Series([-(2**40), 0, 2**40], dtype=pl.Int64),
            "d": pl.Series([None, None, None], dtype=pl.Int64),
            "e": pl.Series([1, 0, None], dtype=pl.Int64),
            "f": [0.5, 1.5, 2.5],
        }
    )
    narrowed = pe_spark._narrowed(frame)
    assert narrowed.dtypes == [pl.Int16, pl.UInt8, pl.Int64, pl.Int64, pl.Int8, pl.Float64]
    assert narrowed.cast(dict(frame.schema)).equals(frame)
    assert pe_spark._narrowed(frame.head(0)).schema == frame.schema


def test_partition_keys_land_in_their_partitions(spark):
    from pyspark.sql import functions as F

    values = [-(2**31), -7, -1, 0, 1, 2, 42, 1000, 2**31 - 1]
    hashed = spark.createDataFrame([(v,) for v in values], "v int").select(F.hash("v"))
    assert [r[0] for r in hashed.collect()] == [pe_spark._murmur3_int(v) for v in values]
    for n in (1, 2, 3, 7, 16):
        keys = pe_spark.partition_keys(n)
        frame = spark.createDataFrame([(k, i) for i, k in enumerate(keys)], "k int, i int")
        placed = frame.repartition(n, F.col("k")).select("i", F.spark_partition_id().alias("at"))
        assert sorted((r["i"], r["at"]) for r in placed.collect()) == [(i, i) for i in range(n)]


def test_importing_polars_eval_does_not_import_pyspark():
    import subprocess

    code = (
        "import sys, polars_eval as pe; assert 'pyspark' not in sys.modules; "
        "pe.spark.evaluate; assert 'pyspark' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_executor_errors_are_found_in_the_spark_message():
    def failing(_):
        raise pe.DataValidationError('column "w" must hold weights >= 0;\nfound -1')
        yield  # pragma: no cover

    wrapped = pe_spark._ours(failing)
    with pytest.raises(RuntimeError) as raised:
        list(wrapped(None))
    text = f"org.apache.spark.api.python.PythonException: Traceback ...\n{raised.value}\n\tat org"
    ours = pe_spark._our_error(Exception(text))
    assert type(ours) is pe.DataValidationError
    assert str(ours) == 'column "w" must hold weights >= 0;\nfound -1'
    assert pe_spark._our_error(Exception("java.lang.OutOfMemoryError")) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pe_spark._warn_again([[], []], 0)  # nothing caught: nothing warned


HIDE_POLARS_EVAL = '''import sys


class _Hide:
    """A Python without polars_eval: every import of it fails, as on such an executor."""

    def find_spec(self, name, path=None, target=None):
        if name == "polars_eval" or name.startswith("polars_eval."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Hide())
'''


def test_executors_without_polars_eval_are_one_clear_error(spark, monkeypatch, tmp_path):
    """Spark's workers run a Python that cannot import polars_eval (here: this Python, the
    package hidden by a sitecustomize; as a worker Python other than the driver's, or an
    executor without the package): one error saying so and how to fix it, not the
    workers' traceback."""
    (tmp_path / "sitecustomize.py").write_text(HIDE_POLARS_EVAL)
    worker = tmp_path / "python"
    worker.write_text(
        f'#!/bin/sh\nPYTHONPATH="{tmp_path}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec "{sys.executable}" "$@"\n'
    )
    worker.chmod(0o755)
    # the workers' Python of the jobs started from now on (PYSPARK_PYTHON, read when the
    # session started, set it for the others)
    monkeypatch.setattr(spark.sparkContext, "pythonExec", str(worker))
    df = to_spark(spark, pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.6, 0.3]}), 2)
    with pytest.raises(pe.exceptions.ExecutorImportError) as raised:
        pe.spark.evaluate(df, "binary", label="y", score="p")
    message = str(raised.value)
    assert len(message.splitlines()) == 1
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    for needle in ("executors' Python cannot import polars_eval", "install polars-eval",
                   "PYSPARK_PYTHON", "spark.pyspark.python", sys.executable):  # fmt: skip
        assert needle in message, needle
    assert isinstance(raised.value, ImportError)


def test_executor_import_errors_are_found_in_the_spark_message():
    """The message of either path (the RDD's Py4J error, mapInArrow's PythonException);
    a module outside polars_eval's runtime is no such error."""
    for module in ("polars_eval", "polars_eval.scale.spark", "polars", "pyarrow"):
        text = (
            "pyspark.errors.exceptions.captured.PythonException:\n  An exception was thrown "
            f"from the Python worker.\nTraceback ...\nModuleNotFoundError: No module named "
            f"'{module}'\n\tat org.apache.spark"
        )
        error = pe_spark._missing_on_executors(Exception(text))
        assert isinstance(error, pe.exceptions.ExecutorImportError)
        assert f"cannot import {module} " in str(error)
    other = "ModuleNotFoundError: No module named 'sklearn'"
    assert pe_spark._missing_on_executors(Exception(other)) is None
    assert pe_spark._missing_on_executors(Exception("java.lang.OutOfMemoryError")) is None


def test_intervals_over_units_equal_one_machine(spark):
    """SPEC §14: ci= on the ranking and forecast tasks, every group finalized whole."""
    rng = np.random.default_rng(11)
    n = 1500
    q = rng.integers(0, 90, n)
    df = pl.DataFrame(
        {"mkt": q % 3, "q": q, "rel": rng.integers(0, 3, n), "s": rng.random(n).round(2)}
    )
    kw = {"relevance": "rel", "score": "s", "query": "q", "by": "mkt", "k": [3]}
    got = pe.spark.evaluate(to_spark(spark, df, partitions=4), "ranking", ci="t", **kw)
    assert_same(got, pe.Evaluation("ranking", **kw).update(df).compute(ci="t"))
    frame = pl.DataFrame(
        {"sid": np.repeat(np.arange(8), 12), "t": np.tile(np.arange(12), 8),
         "y": rng.normal(20, 3, 96), "f": rng.normal(20, 3, 96)}
    )  # fmt: skip
    kw = {"actual": "y", "forecast": "f", "series": "sid", "time": "t"}
    got = pe.spark.evaluate(to_spark(spark, frame, partitions=3), "forecast", ci="bootstrap", **kw)
    assert_same(got, frame.eval.forecast("y", "f", series="sid", time="t", ci="bootstrap"))
    with pytest.raises(pe.InvalidParameterError, match="no units"):
        pe.spark.evaluate(to_spark(spark, frame), "regression", actual="y", pred="f", ci="t")
