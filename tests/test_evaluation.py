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


def with_version(state: pl.DataFrame, version: int) -> pl.DataFrame:
    """``state`` with the format version of its definition row replaced."""
    raw = json.loads(state.filter(pl.col(PART) == "def")[DEF].item())
    raw["version"] = version
    return state.with_columns(
        pl.when(pl.col(PART) == "def").then(pl.lit(json.dumps(raw))).alias(DEF)
    )


def test_state_of_a_newer_version_is_refused():
    state = pe.Evaluation("binary", label="y", score="p").update(binary_frame(19)).state
    newer = with_version(state, 99)
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


# -- the specs' states (binary, regression, multiclass tables) ---------------------------

# the regression table without its order statistics (medae, spearman, kendall_tau, mer:
# their state is the rows), a deviance with its data check, and the zero-actual count
REGRESSION_STATE_METRICS = [
    "mse",
    "rmse",
    "mae",
    "max_error",
    "bias",
    "r2",
    "r2_pearson",
    "pearson",
    "explained_variance",
    "rmsle",
    "msle",
    "rmspe",
    "mape",
    "smape",
    "wape",
    "mean_poisson_deviance",
    "zero_actuals",
]
# binary metrics of one pass (sums): the sort-based ones (AUC, KS ...) keep distinct rows
BINARY_STATE_METRICS = [
    "logloss",
    "brier",
    "accuracy",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "mcc",
    "cohen_kappa",
    "jaccard",
    "youden_j",
    "positive_likelihood_ratio",
    "hinge_loss",
]
MULTICLASS_ARGS = {"pred": "pred", "proba": ["pa", "pb", "pc"], "classes": ["a", "b", "c"]}


def regression_frame(seed: int, n: int = 1500, *, tied: bool) -> pl.DataFrame:
    """Positive targets with some zeros, ties when ``tied``, zero weights, 3 groups."""
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 3.0, n)
    p = np.abs(y + rng.normal(0.0, 2.0, n)) + 0.01
    if tied:
        y, p = np.round(y), np.round(p) + 1.0
    y[rng.random(n) < 0.05] = 0.0
    w = rng.integers(0, 4, n).astype(float) * rng.random(n)
    return pl.DataFrame({"g": rng.integers(0, 3, n), "y": y, "p": p, "w": w})


def parquet_merged(make: callable, parts: list[pl.DataFrame], tmp_path) -> pe.Evaluation:
    """One evaluation per part, each state written to parquet and read back, merged."""
    total = make()
    for i, part in enumerate(parts):
        path = tmp_path / f"state{i}.parquet"
        make().update(part).state.write_parquet(path)
        total.merge(pe.Evaluation.from_state(pl.read_parquet(path)))
    return total


def assert_states_kept(ev: pe.Evaluation, groups: int) -> None:
    """The state is the specs' states: one row per group, not the rows."""
    state = ev.state
    assert set(state[PART].to_list()) == {"def", "states"}
    assert state.height == 1 + groups


SEEDS = [(30, 2, True), (31, 5, False), (32, 7, True)]


@pytest.mark.parametrize(("seed", "n_parts", "tied"), SEEDS)
@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("by", [None, "g"])
def test_regression_states_partitions_equal_whole(tmp_path, seed, n_parts, tied, weight, by):
    df = regression_frame(seed, tied=tied)
    metrics = [m for m in REGRESSION_STATE_METRICS if m != "zero_actuals"]
    want = df.eval.regression("y", "p", weight=weight, by=by, metrics=metrics)
    want = want.select(*([by] if by else []), *REGRESSION_STATE_METRICS)

    def make():
        return pe.Evaluation(
            "regression", actual="y", pred="p", weight=weight, by=by,
            metrics=REGRESSION_STATE_METRICS,
        )  # fmt: skip

    ev = parquet_merged(make, partitions(df, n_parts, seed=seed + 100), tmp_path)
    assert_states_kept(ev, 3 if by else 1)
    assert_same(ev.compute(), want)


@pytest.mark.parametrize(("seed", "n_parts", "tied"), SEEDS)
@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("by", [None, "seg"])
def test_binary_states_partitions_equal_whole(tmp_path, seed, n_parts, tied, weight, by):
    df = binary_frame(seed)
    if not tied:
        rng = np.random.default_rng(seed)
        df = df.with_columns(p=pl.Series(rng.random(df.height)))
    kw = {"weight": weight, "by": by, "threshold": 0.4, "metrics": BINARY_STATE_METRICS}
    want = df.eval.binary("y", "p", **kw)

    def make():
        return pe.Evaluation("binary", label="y", score="p", **kw)

    ev = parquet_merged(make, partitions(df, n_parts, seed=seed + 100), tmp_path)
    assert_states_kept(ev, 3 if by else 1)
    assert_same(ev.compute(), want)


@pytest.mark.parametrize(("seed", "n_parts", "tied"), SEEDS)
@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("baseline", [False, True])
def test_multiclass_states_partitions_equal_whole(tmp_path, seed, n_parts, tied, weight, baseline):
    df = multiclass_frame(1200, seed=seed).with_columns(
        w=pl.when(pl.int_range(pl.len()) % 9 == 0).then(0.0).otherwise(pl.col("w"))
    )
    if tied:  # probabilities on a grid of quarters (ties within and across rows)
        q = pl.col("pa", "pb").round(0) / 4.0
        df = df.with_columns(q).with_columns(pc=1.0 - pl.col("pa") - pl.col("pb"))
    want = df.eval.multiclass("y", weight=weight, by="g", baseline=baseline, **MULTICLASS_ARGS)
    # pred= alone: every column; with proba=: the metrics other than the AUCs (rows)
    metrics = [c for c in want.columns if c != "g" and not c.startswith("multiclass_auc")]

    def make_pred():
        args = {"pred": "pred", "classes": ["a", "b", "c"]}
        return pe.Evaluation(
            "multiclass", label="y", weight=weight, by="g", baseline=baseline, **args
        )

    def make_proba():
        return pe.Evaluation(
            "multiclass", label="y", weight=weight, by="g", baseline=baseline,
            metrics=metrics, **MULTICLASS_ARGS,
        )  # fmt: skip

    parts = partitions(df, n_parts, seed=seed + 100)
    only_pred = df.eval.multiclass(
        "y", pred="pred", classes=["a", "b", "c"], weight=weight, by="g", baseline=baseline
    )
    for make, expected in ((make_pred, only_pred), (make_proba, want.select("g", *metrics))):
        ev = parquet_merged(make, parts, tmp_path)
        assert_states_kept(ev, 2)
        assert_same(ev.compute(), expected)


def test_states_do_not_grow_with_the_rows():
    rng = np.random.default_rng(33)
    n = 200_000
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 4, n),
            "y": rng.normal(size=n),  # continuous: as many distinct rows as rows
            "p": rng.normal(size=n),
        }
    )
    ev = pe.Evaluation("regression", actual="y", pred="p", by="g", metrics=["rmse", "r2"])
    for part in partitions(df, 4, seed=34):
        ev.update(part.lazy())
    assert ev.state.height == 1 + 4
    want = df.eval.regression("y", "p", by="g", metrics=["rmse", "r2"])
    assert_same(ev.compute(), want.select("g", "rmse", "r2"))


def test_order_statistics_and_baselines_keep_the_distinct_rows():
    df = regression_frame(35, n=300, tied=True)
    for kw in ({"metrics": ["mse", "medae"]}, {"baseline": True}, {}):
        ev = pe.Evaluation("regression", actual="y", pred="p", by="g", **kw).update(df)
        assert set(ev.state[PART].to_list()) == {"def", "rows"}
    for kw in ({"baseline": True, "metrics": ["logloss"]}, {"metrics": ["logloss", "auc"]}, {}):
        ev = pe.Evaluation("binary", label="y", score="p", **kw).update(binary_frame(36))
        assert set(ev.state[PART].to_list()) == {"def", "rows"}
    ev = pe.Evaluation("multiclass", label="y", pred="pred").update(multiclass_frame(50, seed=37))
    assert set(ev.state[PART].to_list()) == {"def", "rows"}


def test_states_report_undefined_values_as_the_task_method():
    df = regression_frame(38, n=60, tied=False).with_columns(
        # group 2: one row of weight > 0 (r2 undefined there); a log metric out of domain
        w=pl.when((pl.col("g") == 2) & (pl.int_range(pl.len()) > 5)).then(0.0).otherwise(1.0),
        p=pl.when(pl.int_range(pl.len()) == 0).then(-3.0).otherwise(pl.col("p")),
    )
    metrics = ["mse", "r2", "msle"]
    kw = {"weight": "w", "by": "g", "metrics": metrics}
    with pytest.warns(pe.UndefinedMetricWarning) as want_warnings:
        want = df.eval.regression("y", "p", **kw)
    ev = pe.Evaluation("regression", actual="y", pred="p", **kw)
    with pytest.warns(pe.UndefinedMetricWarning) as got_warnings:
        got = ev.update(df).compute()
    assert_same(got, want.select("g", *metrics))
    assert [str(w.message) for w in got_warnings] == [str(w.message) for w in want_warnings]


@pytest.mark.parametrize("task", ["regression", "binary"])
def test_states_without_a_usable_row_raise_as_the_task_method(task):
    df = regression_frame(39, n=20, tied=True).with_columns(
        y=pl.when(pl.col("g") == 0).then(None).otherwise((pl.col("y") > 3).cast(pl.Float64)),
        w=pl.when(pl.col("g") == 0).then(pl.col("w")).otherwise(0.0),
        p=pl.col("p") / (pl.col("p").max() + 1.0),
    )
    if task == "regression":
        method = df.eval.regression
        ev = pe.Evaluation(task, actual="y", pred="p", weight="w", metrics=["mse", "r2"])
    else:
        method = df.eval.binary
        ev = pe.Evaluation(task, label="y", score="p", weight="w", metrics=["f1", "logloss"])
    with pytest.raises(pe.UndefinedMetricError) as want:
        method("y", "p", weight="w", metrics=["mse", "r2"] if task == "regression" else None)
    with pytest.raises(pe.UndefinedMetricError) as got:
        ev.update(df).compute()
    assert str(got.value) == str(want.value)
    assert "weight 0" in str(got.value)


def test_states_validate_at_update_as_the_task_method():
    ev = pe.Evaluation("regression", actual="y", pred="p", metrics=["mean_poisson_deviance"])
    bad = pl.DataFrame({"y": [1.0, 2.0], "p": [0.5, -1.0]})
    with pytest.raises(pe.DataValidationError) as want:
        bad.eval.regression("y", "p", metrics=["mean_poisson_deviance"])
    with pytest.raises(pe.DataValidationError) as got:
        ev.update(bad)
    assert str(got.value) == str(want.value)
    ev = pe.Evaluation("multiclass", label="y", pred="pred", classes=["a", "b"])
    with pytest.raises(pe.DataValidationError, match='"y"'):
        ev.update(pl.DataFrame({"y": ["a", "z"], "pred": ["a", "b"]}))
    assert ev.state.height == 1  # the bad batch left nothing


def test_refusing_to_merge_names_the_difference_of_state_definitions():
    def make(**kw):
        return pe.Evaluation("regression", actual="y", pred="p", metrics=["mse"], **kw)

    cases = [
        (make(), pe.Evaluation("regression", actual="y", pred="p", metrics=["mae"]), "metrics"),
        (make(), make(weight="w"), "weight"),
        (make(), make(by="g"), "by"),
        (make(), make(zero_actuals="inf"), "zero_actuals"),
        (make(), pe.Evaluation("regression", actual="y", pred="q", metrics=["mse"]), "pred"),
    ]
    df = regression_frame(40, n=50, tied=True).with_columns(q=pl.col("p"))
    for a, b, what in cases:
        a.update(df)
        b = pe.Evaluation.from_state(b.update(df).state)
        with pytest.raises(pe.InvalidParameterError, match=what):
            a.merge(b)


def test_a_version_1_state_of_a_states_task_is_refused():
    ev = pe.Evaluation("binary", label="y", score="p", metrics=["logloss"])
    state = ev.update(binary_frame(41)).state
    with pytest.raises(pe.InvalidParameterError, match="older polars_eval"):
        pe.Evaluation.from_state(with_version(state, 1))
    # a task that keeps its rows reads a version-1 state as before
    state = pe.Evaluation("binary", label="y", score="p", bins=8).update(binary_frame(41)).state
    assert pe.Evaluation.from_state(with_version(state, 1)).state.height == state.height


def test_states_evaluation_that_saw_no_rows():
    ev = pe.Evaluation("multiclass", label="y", pred="pred", classes=["a", "b"], by="g")
    got = ev.compute()
    want = (
        pl.DataFrame({"g": [0], "y": ["a"], "pred": ["a"]}, schema_overrides={"g": pl.Float64})
        .head(0)
        .eval.multiclass("y", pred="pred", classes=["a", "b"], by="g")
    )
    assert got.schema == want.schema and got.height == 0
    ev = pe.Evaluation("regression", actual="y", pred="p", metrics=["mse"])
    with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate"):
        ev.compute()
    ev.update(pl.DataFrame({"y": [], "p": []}, schema={"y": pl.Float64, "p": pl.Float64}))
    with pytest.raises(pe.UndefinedMetricError, match="the input has no rows"):
        ev.compute()


def test_lazy_update_in_morsels_equals_the_whole(monkeypatch, tmp_path):
    from polars_eval.scale import evaluation

    calls = []
    batch_rows = evaluation.Evaluation._batch_rows

    def counted(self, lf):
        calls.append(1)
        return batch_rows(self, lf)

    monkeypatch.setattr(evaluation.Evaluation, "_batch_rows", counted)
    df = binary_frame(42)
    df.write_parquet(tmp_path / "lake.parquet")
    lake = pl.scan_parquet(tmp_path / "lake.parquet")
    kw = {"weight": "w", "by": "seg", "metrics": BINARY_STATE_METRICS}
    with pl.Config(streaming_chunk_size=100):  # 3000 rows: many morsels, states merged
        ev = pe.Evaluation("binary", label="y", score="p", **kw).update(lake)
    assert len(calls) == 1  # one streaming query over the lake
    assert_states_kept(ev, 3)
    assert_same(ev.compute(), df.eval.binary("y", "p", **kw))
    # bad rows in several morsels: counted over all, as the task method counts them
    bad = df.with_columns(
        w=pl.when(pl.int_range(pl.len()) % 700 == 5).then(-1.0).otherwise(pl.col("w"))
    )
    with pytest.raises(pe.DataValidationError) as want:
        bad.eval.binary("y", "p", **kw)
    ev = pe.Evaluation("binary", label="y", score="p", **kw)
    with pytest.raises(pe.DataValidationError) as got, pl.Config(streaming_chunk_size=100):
        ev.update(bad.lazy())
    assert str(got.value) == str(want.value)
    assert "found 5 negative rows" in str(got.value)
    assert ev.state.height == 1


def test_arrow_table_with_a_repeated_column_name_is_named() -> None:
    """BAD_INPUTS 6/48: an Arrow table may repeat a column name (a DataFrame cannot); the
    error is ours and names the column, never Polars' DuplicateError."""
    names = ["y", "p", "p"]
    table = pa.table(
        [pa.array([1, 0, 1]), pa.array([0.2, 0.3, 0.9]), pa.array([0.9, 0.1, 0.5])], names=names
    )
    ev = pe.Evaluation("binary", label="y", score="p", metrics=["auc"])
    with pytest.raises(pe.DataValidationError, match='column "p" appears 2 times'):
        ev.update(table)
    assert table.column_names == names
