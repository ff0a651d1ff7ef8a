"""pe.Evaluation (SPEC §10): merged partition states equal the task method on all rows."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from conftest import multiclass_frame
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import polars_eval as pe
from polars_eval.scale.evaluation import DEF, PART, score_bin


def assert_same(got: pl.DataFrame, want: pl.DataFrame, tol: float = 1e-12) -> None:
    """Same columns, same keys, floats equal to ``tol`` (relative and absolute), same nulls."""
    assert got.columns == want.columns
    assert got.height == want.height
    for name in want.columns:
        a, b = got[name], want[name]
        if a.dtype.is_float() or b.dtype.is_float():
            x = a.cast(pl.Float64).to_numpy()
            y = b.cast(pl.Float64).to_numpy()
            assert np.array_equal(np.isnan(x), np.isnan(y)), name
            ok = np.isnan(x) | (np.abs(x - y) <= tol * np.maximum(1.0, np.abs(y)))
            assert ok.all(), (name, x[~ok], y[~ok])
        else:
            assert a.to_list() == b.to_list(), name


def partitions(df: pl.DataFrame, n: int, seed: int) -> list[pl.DataFrame]:
    """``df`` shuffled and cut into ``n`` disjoint random parts (some may be empty)."""
    rng = np.random.default_rng(seed)
    part = rng.integers(0, n, df.height)
    return [df.filter(pl.Series(part == i)) for i in range(n)]


def merged(make: callable, parts: list[pl.DataFrame]) -> pe.Evaluation:
    """One evaluation per part, merged, after a parquet round trip of each state."""
    total = make()
    for part in parts:
        ev = make().update(part)
        total.merge(pe.Evaluation.from_state(ev.state))
    return total


def binary_frame(seed: int, n: int = 3000) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "seg": rng.choice(["a", "b", "c"], n),
            "y": y,
            "p": np.round(np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1), 2),  # ties
            "w": rng.integers(0, 4, n).astype(float),  # zero weights too
        }
    )


@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("by", [None, "seg"])
def test_binary_partitions_equal_whole(weight, by):
    df = binary_frame(1)
    want = df.eval.binary("y", "p", weight=weight, by=by)

    def make():
        return pe.Evaluation("binary", label="y", score="p", weight=weight, by=by)

    assert_same(merged(make, partitions(df, 5, seed=2)).compute(), want)


def test_binary_update_batches_lazy_and_arrow(tmp_path):
    df = binary_frame(3)
    want = df.eval.binary("y", "p", by="seg", weight="w")
    ev = pe.Evaluation("binary", label="y", score="p", by="seg", weight="w")
    parts = partitions(df, 3, seed=4)
    ev.update(parts[0]).update(parts[1].lazy()).update(parts[2].to_arrow())
    assert_same(ev.compute(), want)
    path = tmp_path / "state.parquet"
    parts[0].write_parquet(tmp_path / "lake.parquet")
    lake = pe.Evaluation("binary", label="y", score="p", by="seg", weight="w")
    lake.update(pl.scan_parquet(tmp_path / "lake.parquet"))
    lake.state.write_parquet(path)
    back = pe.Evaluation.from_state(pl.read_parquet(path))
    back.update(parts[1]).update(parts[2])
    assert_same(back.compute(), want)


def test_binary_state_is_bounded_by_distinct_scores():
    df = binary_frame(5, n=20000)  # scores at 2 decimals: at most 101 per (group, label)
    ev = pe.Evaluation("binary", label="y", score="p", by="seg").update(df)
    assert ev.state.height <= 1 + 3 * 2 * 101


def test_binary_metrics_selection_and_pos_label():
    df = binary_frame(6).with_columns(
        lab=pl.when(pl.col("y") == 1).then(pl.lit("bad")).otherwise(pl.lit("good"))
    )
    ev = pe.Evaluation(
        "binary", label="lab", score="p", pos_label="bad", metrics=["auc", "logloss", "ks"]
    ).update(df)
    got = ev.compute()
    assert got.columns == ["auc", "logloss", "ks"]
    assert got["auc"].item() == pytest.approx(df.eval.auc("y", "p"), abs=1e-12)
    assert got["logloss"].item() == pytest.approx(df.eval.logloss("y", "p"), abs=1e-12)


@pytest.mark.parametrize("weight", [None, "w"])
def test_regression_partitions_equal_whole(weight):
    rng = np.random.default_rng(7)
    n = 2000
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 3, n),
            "y": np.round(rng.normal(50, 8, n), 1),
            "p": np.round(rng.normal(50, 8, n), 1),
            "w": rng.random(n),
        }
    )
    want = df.eval.regression("y", "p", weight=weight, by="g")

    def make():
        return pe.Evaluation("regression", actual="y", pred="p", weight=weight, by="g")

    assert_same(merged(make, partitions(df, 4, seed=8)).compute(), want)


@pytest.mark.parametrize("weight", [None, "w"])
def test_multiclass_partitions_equal_whole(weight):
    df = multiclass_frame(1500, seed=9)
    args = {"pred": "pred", "proba": ["pa", "pb", "pc"], "classes": ["a", "b", "c"]}
    want = df.eval.multiclass("y", weight=weight, by="g", **args)

    def make():
        return pe.Evaluation("multiclass", label="y", weight=weight, by="g", **args)

    assert_same(merged(make, partitions(df, 4, seed=10)).compute(), want)


def ranking_frame(seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = 3000
    q = rng.integers(0, 150, n)
    return pl.DataFrame(
        {
            "mkt": q % 3,
            "q": q,
            "rel": rng.integers(0, 4, n),
            "s": rng.integers(0, 6, n).astype(float),  # many ties within a query
        }
    ).with_row_index("doc")


@pytest.mark.parametrize("item", [None, "doc"])
def test_ranking_queries_split_across_partitions(item):
    df = ranking_frame(11)
    want = df.eval.ranking("rel", "s", query="q", item=item, by="mkt", k=[3, None])

    def make():
        return pe.Evaluation(
            "ranking", relevance="rel", score="s", query="q", item=item, by="mkt", k=[3, None]
        )

    parts = partitions(df, 4, seed=12)  # rows, not queries: queries are split
    assert_same(merged(make, parts).compute(), want)


def test_ranking_duplicate_item_across_partitions_is_an_error():
    df = ranking_frame(13)
    ev = pe.Evaluation("ranking", relevance="rel", score="s", query="q", item="doc")
    ev.update(df.head(10)).update(df.head(1))
    with pytest.raises(pe.DataValidationError, match="doc"):
        ev.compute()


def forecast_frames(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    n_series, length = 12, 36
    frame = pl.DataFrame(
        {
            "sid": np.repeat(np.arange(n_series), length),
            "t": np.tile(np.arange(length), n_series),
            "y": rng.normal(20, 3, n_series * length),
            "f": rng.normal(20, 3, n_series * length),
            "w": rng.random(n_series * length),
        }
    ).with_columns(region=pl.col("sid") % 2)
    train = frame.filter(pl.col("t") < 24).select("sid", "t", "y")
    return frame.filter(pl.col("t") >= 24), train


@pytest.mark.parametrize("weight", [None, "w"])
def test_forecast_series_split_across_partitions(weight):
    test, train = forecast_frames(14)
    kw = {"series": "sid", "time": "t", "train": train, "season_length": 3, "weight": weight}
    want = test.eval.forecast("y", "f", by="region", **kw)

    def make():
        return pe.Evaluation("forecast", actual="y", forecast="f", by="region", **kw)

    assert_same(merged(make, partitions(test, 5, seed=15)).compute(), want)


def test_forecast_duplicate_key_across_partitions_is_an_error():
    test, _ = forecast_frames(16)
    ev = pe.Evaluation("forecast", actual="y", forecast="f", series="sid", time="t")
    ev.update(test).update(test.head(1))
    with pytest.raises(pe.DataValidationError, match="sid"):
        ev.compute()


# -- binned mode ------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    scores=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=60),
    labels=st.lists(st.integers(0, 1), min_size=2, max_size=60),
    bins=st.integers(2, 50),
)
def test_binned_auc_within_the_documented_bound(scores, labels, bins):
    n = min(len(scores), len(labels))
    y = np.array(labels[:n])
    assume(0 < y.sum() < n)
    df = pl.DataFrame({"y": y, "p": scores[:n]})
    exact = df.eval.auc("y", "p")
    ev = pe.Evaluation("binary", label="y", score="p", bins=bins, metrics=["auc"])
    binned = ev.update(df).compute()
    # bound: half the share of (positive, negative) pairs that share a bin
    b = np.minimum(np.floor(np.array(scores[:n]) * bins), bins - 1)
    shared = sum(((b == k) & (y == 1)).sum() * ((b == k) & (y == 0)).sum() for k in set(b))
    bound = shared / (2.0 * y.sum() * (n - y.sum()))
    assert abs(binned["auc"].item() - exact) <= bound + 1e-12


def test_binned_one_pass_metrics_are_exact():
    df = binary_frame(17).with_columns(p=pl.col("p") * 0.999 + 0.0004)  # not on bin edges
    exact = df.eval.binary("y", "p", weight="w", threshold=0.37, by="seg")
    binned = (
        pe.Evaluation("binary", label="y", score="p", weight="w", threshold=0.37, bins=8, by="seg")
        .update(df)
        .compute()
    )
    for name in ["logloss", "brier", "accuracy", "precision", "recall", "f1", "mcc"]:
        assert_same(binned.select("seg", name), exact.select("seg", name))
    assert binned.columns == exact.columns


def test_binned_state_is_bounded_by_bins_not_rows():
    rng = np.random.default_rng(18)
    df = pl.DataFrame({"y": rng.integers(0, 2, 50000), "s": rng.normal(size=50000)})
    ev = pe.Evaluation("binary", label="y", score="s", probability=False, bins=64).update(df)
    assert ev.state.height <= 1 + 2 * 64 * 2
    auc = ev.compute()["auc"].item()
    assert abs(auc - df.eval.auc("y", "s")) < 0.01


def test_score_bin_needs_no_min_max_pass():
    s = pl.Series([-1e9, -3.0, 0.0, 3.0, 1e9])
    bins = pl.select(score_bin(pl.lit(s), 10, probability=False)).to_series().to_list()
    assert bins == sorted(bins) and bins[0] == 0 and bins[-1] == 9
    p = pl.Series([0.0, 0.05, 0.5, 0.99, 1.0])
    assert pl.select(score_bin(pl.lit(p), 10, probability=True)).to_series().to_list() == [
        0,
        0,
        5,
        9,
        9,
    ]


# -- bad input --------------------------------------------------------------------------


def test_merge_refuses_another_definition_naming_the_difference():
    a = pe.Evaluation("binary", label="y", score="p")
    b = pe.Evaluation("binary", label="y", score="p", threshold=0.3)
    with pytest.raises(pe.InvalidParameterError, match="threshold"):
        a.merge(b)
    c = pe.Evaluation("binary", label="y", score="p", bins=10)
    with pytest.raises(pe.InvalidParameterError, match="bins"):
        a.merge(c)
    d = pe.Evaluation("regression", actual="y", pred="p")
    with pytest.raises(pe.InvalidParameterError, match="task"):
        a.merge(d)


def test_state_of_a_newer_version_is_refused():
    state = pe.Evaluation("binary", label="y", score="p").update(binary_frame(19)).state
    raw = json.loads(state.filter(pl.col(PART) == "def")[DEF].item())
    raw["version"] = 99
    newer = state.with_columns(
        pl.when(pl.col(PART) == "def").then(pl.lit(json.dumps(raw))).alias(DEF)
    )
    with pytest.raises(pe.InvalidParameterError, match="newer polars_eval"):
        pe.Evaluation.from_state(newer)
    with pytest.raises(pe.InvalidParameterError, match="from_state"):
        pe.Evaluation.from_state(pl.DataFrame({"a": [1]}))


def test_bad_batch_raises_and_leaves_the_state_unchanged():
    df = binary_frame(20)
    ev = pe.Evaluation("binary", label="y", score="p", weight="w").update(df)
    before = ev.state
    bad = df.head(5).with_columns(w=pl.lit(-1.0))
    with pytest.raises(pe.DataValidationError, match='"w"'):
        ev.update(bad)
    with pytest.raises(pe.DataValidationError, match='"p"'):
        ev.update(df.drop("p"))
    assert ev.state.equals(before)


def test_binned_mode_validates_at_update():
    df = pl.DataFrame({"y": [0, 1, 1], "p": [0.2, math.nan, 0.7]})
    ev = pe.Evaluation("binary", label="y", score="p", bins=10)
    with pytest.raises(pe.DataValidationError, match='"p"'):
        ev.update(df)


def test_options_refused_by_name():
    with pytest.raises(pe.InvalidParameterError, match="task must be one of"):
        pe.Evaluation("clustering", label="y")
    with pytest.raises(pe.InvalidParameterError, match="scor"):
        pe.Evaluation("binary", label="y", scor="p")
    with pytest.raises(pe.InvalidParameterError, match="needs the column"):
        pe.Evaluation("binary", label="y")
    with pytest.raises(pe.InvalidParameterError, match="bins"):
        pe.Evaluation("regression", actual="y", pred="p", bins=10)
    with pytest.raises(pe.InvalidParameterError, match="ties"):
        pe.Evaluation("ranking", relevance="r", score="s", query="q", ties="first")
    with pytest.raises(pe.InvalidParameterError, match="cutoff"):
        pe.Evaluation("forecast", actual="y", forecast="f", series="s", time="t", cutoff="c")
    with pytest.raises(pe.InvalidParameterError, match="column names"):
        pe.Evaluation("binary", label=pl.col("y"), score="p")


def test_empty_evaluation_is_undefined_as_the_task_method():
    ev = pe.Evaluation("binary", label="y", score="p")
    with pytest.raises(ValueError, match="no rows to evaluate"):
        ev.compute()
    ev = pe.Evaluation("binary", label="y", score="p", by="seg")
    assert ev.compute().height == 0


def test_arrow_table_input():
    df = binary_frame(21)
    ev = pe.Evaluation("binary", label="y", score="p").update(pa.Table.from_pandas(df.to_pandas()))
    assert ev.compute()["auc"].item() == pytest.approx(df.eval.auc("y", "p"), abs=1e-12)


@pytest.mark.parametrize("name", ["auc", "gini", "pr_auc", "average_precision", "ks"])
def test_expression_bins_equal_the_binned_evaluation(name):
    df = binary_frame(22).with_columns(p=pl.col("p") * 0.97 + 0.011)
    by_expr = df.group_by("seg").agg(getattr(pe, name)("y", "p", weight="w", bins=16)).sort("seg")
    ev = pe.Evaluation("binary", label="y", score="p", weight="w", by="seg", bins=16)
    want = ev.update(df).compute().select("seg", name)
    assert_same(by_expr, want)
    assert df.eval.auc("y", "p", bins=16) == pytest.approx(
        df.select(pe.auc("y", "p", bins=16)).item(), abs=1e-12
    )


def test_expression_bins_refuse_a_bad_count():
    with pytest.raises(pe.InvalidParameterError, match="bins"):
        pe.auc("y", "p", bins=1)


@pytest.mark.parametrize("by", [None, "seg"])
def test_task_method_bins_equal_the_binned_evaluation_lazy_and_eager(by):
    df = binary_frame(23)
    ev = pe.Evaluation("binary", label="y", score="p", weight="w", by=by, bins=20)
    want = ev.update(df).compute()
    assert_same(df.eval.binary("y", "p", weight="w", by=by, bins=20), want)
    lazy = df.lazy().eval.binary("y", "p", weight="w", by=by, bins=20)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect_schema() == want.schema
    assert_same(lazy.collect(engine="streaming"), want)
