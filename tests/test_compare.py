"""SPEC §14 ``df.eval.compare``: paired tests of several systems on the same units.

Oracles: pytrec_eval (per-query NDCG@10 and AP), scipy (``ttest_rel`` with its confidence
interval, ``wilcoxon``, ``binomtest``, ``bootstrap``), statsmodels (``multipletests``),
the exact permutation distribution enumerated here, numpy formulas of per-row losses,
and ``df.eval.paired_bootstrap`` / ``pe.delong`` for the metrics of all rows.
BAD_INPUTS rows 56-58.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from scipy import stats
from statsmodels.stats.multitest import multipletests

import polars_eval as pe
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.stats import systems as S

COLUMNS = [
    "metric", "system", "baseline", "value", "baseline_value", "difference", "lower",
    "upper", "p_value", "p_adjusted", "wins", "ties", "losses", "n_units",
]  # fmt: skip


def runs(nq: int = 40, nd: int = 12, seed: int = 0, systems: int = 3) -> pl.DataFrame:
    """Queries of nd documents, binary relevance, continuous scores of `systems` systems of
    increasing quality (no ties: trec_eval's order is the score's)."""
    rng = np.random.default_rng(seed)
    rel = (rng.random(nq * nd) < 0.3).astype(np.int64)
    data = {
        "q": np.repeat(np.arange(nq), nd),
        "doc": np.tile(np.arange(nd), nq),
        "rel": rel,
    }
    for i in range(systems):
        data[f"s{i}"] = rng.random(nq * nd) + 0.25 * i * rel
    return pl.DataFrame(data)


def trec_per_query(df: pl.DataFrame, score: str, measure: str) -> dict[str, float]:
    qrels = {str(q): {} for q in df["q"].unique()}
    run = {str(q): {} for q in df["q"].unique()}
    for q, d, r, s in df.select("q", "doc", "rel", score).iter_rows():
        qrels[str(q)][str(d)] = int(r)
        run[str(q)][str(d)] = float(s)
    ev = pytrec_eval.RelevanceEvaluator(
        qrels, {measure.split("_cut")[0] + ("_cut" if "_cut" in measure else "")}
    )
    return {q: v[measure] for q, v in ev.evaluate(run).items()}


def paired(
    df: pl.DataFrame, sys_score: str, base_score: str, measure: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per-query values of two systems by pytrec_eval, queries with a relevant item only
    (ours leave the others undefined)."""
    has_rel = df.group_by("q").agg(pl.col("rel").max()).filter(pl.col("rel") > 0)
    queries = sorted(str(q) for q in has_rel["q"])
    a = trec_per_query(df, sys_score, measure)
    b = trec_per_query(df, base_score, measure)
    return np.array([a[q] for q in queries]), np.array([b[q] for q in queries])


def row(out: pl.DataFrame, metric: str, system: str) -> dict:
    return out.filter((pl.col("metric") == metric) & (pl.col("system") == system)).row(
        0, named=True
    )


# ---------------------------------------------------------------------------------------
# The t-test against scipy and pytrec_eval's per-query values
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_t_test_equals_ttest_rel_of_trec_eval_per_query_values(level: float) -> None:
    df = runs()
    out = df.eval.compare(
        "ranking", "rel", score=["s0", "s1", "s2"], query="q", metrics=["ndcg@10", "map"],
        level=level, correction=None,
    )  # fmt: skip
    assert out.columns == COLUMNS
    assert out.select("metric", "system").rows() == [
        ("ndcg@10", "s1"),
        ("ndcg@10", "s2"),
        ("map", "s1"),
        ("map", "s2"),
    ]
    for metric, measure in (("ndcg@10", "ndcg_cut_10"), ("map", "map")):
        for system in ("s1", "s2"):
            a, b = paired(df, system, "s0", measure)
            r = row(out, metric, system)
            res = stats.ttest_rel(a, b)
            ci = res.confidence_interval(level)
            assert r["p_value"] == pytest.approx(res.pvalue, rel=1e-9, abs=1e-15)
            assert r["p_adjusted"] == r["p_value"]
            assert (r["lower"], r["upper"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
            assert r["value"] == pytest.approx(a.mean(), rel=1e-12)
            assert r["baseline_value"] == pytest.approx(b.mean(), rel=1e-12)
            assert r["difference"] == pytest.approx((a - b).mean(), abs=1e-12)
            assert r["n_units"] == a.size
            assert (r["wins"], r["ties"], r["losses"]) == (
                int(np.sum(a > b + 1e-12)),
                int(np.sum(np.abs(a - b) <= 1e-12)),
                int(np.sum(a < b - 1e-12)),
            )
            assert r["baseline"] == "s0"


def test_values_are_the_task_tables() -> None:
    df = runs(seed=1)
    out = df.eval.compare(
        "ranking", "rel", score=["s0", "s1"], query="q", metrics=["ndcg@5", "mrr"]
    )
    for system, name in (("s1", "value"), ("s0", "baseline_value")):
        table = df.eval.ranking("rel", system, query="q", k=[5, None], metrics=["ndcg@5", "mrr"])
        assert row(out, "ndcg@5", "s1")[name] == pytest.approx(table["ndcg@5"].item(), rel=1e-12)
        assert row(out, "mrr", "s1")[name] == pytest.approx(table["mrr"].item(), rel=1e-12)


def test_default_metrics_are_the_table_columns() -> None:
    df = runs(nq=10, seed=2)
    out = df.eval.compare("ranking", "rel", score=["s0", "s1"], query="q")
    table = df.eval.ranking("rel", "s0", query="q")
    metrics = [c for c in table.columns if c not in ("n_queries", "n_excluded")]
    assert out["metric"].to_list() == metrics


# ---------------------------------------------------------------------------------------
# The other tests
# ---------------------------------------------------------------------------------------


def unit_frame(d_a: np.ndarray, d_b: np.ndarray) -> pl.DataFrame:
    """A regression frame whose per-row squared errors are d_a and d_b (actual 0)."""
    return pl.DataFrame({"y": np.zeros(d_a.size), "a": np.sqrt(d_a), "b": np.sqrt(d_b)})


def test_wilcoxon_and_sign_equal_scipy() -> None:
    rng = np.random.default_rng(3)
    ea, eb = rng.random(60), rng.random(60) * 0.8
    eb[:5] = ea[:5]  # ties
    df = unit_frame(ea, eb)
    d = eb - ea
    w = df.eval.compare("regression", "y", pred=["a", "b"], metrics=["mse"], test="wilcoxon")
    assert w["p_value"].item() == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-12)
    s = df.eval.compare("regression", "y", pred=["a", "b"], metrics=["mse"], test="sign")
    up, down = int(np.sum(d > 0)), int(np.sum(d < 0))
    assert s["p_value"].item() == pytest.approx(stats.binomtest(up, up + down).pvalue, rel=1e-12)
    # mse: lower is better, so a lower squared error is a win
    assert s.select("wins", "ties", "losses").row(0) == (down, 5, up)


@pytest.mark.parametrize("n", [5, 9, 12])
def test_randomization_p_matches_the_exact_permutation_distribution(n: int) -> None:
    rng = np.random.default_rng(n)
    ea = rng.random(n)
    eb = ea + rng.normal(0.15, 0.3, n) ** 2 - 0.05
    eb = np.abs(eb)
    df = unit_frame(ea, eb)
    d = eb - ea
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
    flipped = np.abs(signs @ d)
    exact = float(np.mean(flipped >= abs(d.sum()) - 1e-12))
    resamples = 20_000
    out = df.eval.compare(
        "regression",
        "y",
        pred=["a", "b"],
        metrics=["mse"],
        test="randomization",
        n_resamples=resamples,
    )
    p = out["p_value"].item()
    sd = np.sqrt(exact * (1 - exact) / resamples)
    assert abs(p - exact) <= 5 * sd + 2 / resamples
    # the formula: p = (1 + b) / (1 + n_resamples)
    b = p * (1 + resamples) - 1
    assert b == pytest.approx(round(b), abs=1e-6)


def test_bootstrap_matches_scipy_percentile_bootstrap() -> None:
    rng = np.random.default_rng(4)
    ea, eb = rng.random(80), rng.random(80) * 0.9
    df = unit_frame(ea, eb)
    d = eb - ea
    out = df.eval.compare(
        "regression", "y", pred=["a", "b"], metrics=["mse"], test="bootstrap", n_resamples=20_000
    )
    ref = stats.bootstrap((d,), np.mean, method="percentile", n_resamples=20_000, rng=1)
    spread = d.std() / np.sqrt(d.size)
    assert out["lower"].item() == pytest.approx(ref.confidence_interval.low, abs=0.05 * spread)
    assert out["upper"].item() == pytest.approx(ref.confidence_interval.high, abs=0.05 * spread)
    # p: twice the smaller tail of the bootstrap distribution, about the normal one
    normal = 2 * stats.norm.sf(abs(d.mean()) / spread)
    assert out["p_value"].item() == pytest.approx(normal, abs=0.02)
    # randomization, wilcoxon and sign take the same interval (documented)
    for test in ("randomization", "wilcoxon", "sign"):
        other = df.eval.compare(
            "regression", "y", pred=["a", "b"], metrics=["mse"], test=test, n_resamples=20_000
        )
        assert other.select("lower", "upper").row(0) == out.select("lower", "upper").row(0)


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_same_seed_same_result_other_seed_differs(test: str) -> None:
    df = runs(nq=30, seed=5)
    kw = {"score": ["s0", "s1", "s2"], "query": "q", "metrics": ["ndcg@10"], "test": test,
          "n_resamples": 500}  # fmt: skip
    a = df.eval.compare("ranking", "rel", seed=3, **kw)
    assert_frame_equal(a, df.eval.compare("ranking", "rel", seed=3, **kw))
    c = df.eval.compare("ranking", "rel", seed=4, **kw)
    assert a["lower"].to_list() != c["lower"].to_list()


SCRIPT = """
import sys, polars as pl, polars_eval as pe
df = pl.read_parquet(sys.argv[1])
out = pl.concat([
    df.eval.compare("ranking", "rel", score=["s0", "s1", "s2"], query="q",
                    metrics=["ndcg@10", "map"], test=t, n_resamples=1000, seed=11)
    for t in ("randomization", "bootstrap", "t")
])
out.write_parquet(sys.argv[2])
"""


def test_reproducible_whatever_the_thread_count(tmp_path: Path) -> None:
    src = tmp_path / "runs.parquet"
    runs(nq=40, seed=6).write_parquet(src)
    results = []
    for threads in ("1", "2"):
        env = {**os.environ, "POLARS_MAX_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
               "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}  # fmt: skip
        dst = tmp_path / f"out{threads}.parquet"
        subprocess.run([sys.executable, "-c", SCRIPT, str(src), str(dst)], env=env, check=True)
        results.append(pl.read_parquet(dst))
    # the per-query values may differ in their last bit between runs (the engine's sums):
    # p-values and wins are counts, the bounds equal to rounding
    a, b = results
    assert a.select("p_value", "wins", "ties", "losses", "n_units").equals(
        b.select("p_value", "wins", "ties", "losses", "n_units")
    )
    assert_frame_equal(a, b, rel_tol=1e-12, abs_tol=1e-14)


# ---------------------------------------------------------------------------------------
# Corrections
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ours", "theirs"), [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh")]
)
def test_corrections_equal_statsmodels(ours: str, theirs: str) -> None:
    df = runs(nq=25, seed=7, systems=6).with_columns(pl.col("q").mod(2).alias("half"))
    scores = [f"s{i}" for i in range(6)]
    out = df.eval.compare(
        "ranking",
        "rel",
        score=scores,
        query="q",
        metrics=["ndcg@10", "map"],
        correction=ours,
        by="half",
    )
    assert out.columns == ["half", *COLUMNS]
    families = 0
    for (_, _), part in out.group_by(["half", "metric"]):
        expected = multipletests(part["p_value"].to_numpy(), method=theirs)[1]
        np.testing.assert_allclose(part["p_adjusted"].to_numpy(), expected, rtol=1e-12)
        families += 1
    assert families == 4
    assert out.height == 2 * 2 * 5


def test_adjust_leaves_null_p_values_out_of_the_family() -> None:
    p = np.array([0.01, np.nan, 0.04, 0.03])
    expected = multipletests(p[~np.isnan(p)], method="holm")[1]
    got = S.adjust(p, "holm")
    assert np.isnan(got[1])
    np.testing.assert_allclose(got[~np.isnan(p)], expected)
    np.testing.assert_array_equal(S.adjust(p, None), p)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12),
    st.sampled_from(["holm", "bonferroni", "bh"]),
)
def test_adjust_equals_statsmodels_property(p: list[float], method: str) -> None:
    theirs = {"bh": "fdr_bh"}.get(method, method)
    np.testing.assert_allclose(
        S.adjust(np.array(p), method), multipletests(p, method=theirs)[1], rtol=1e-12, atol=1e-15
    )


# ---------------------------------------------------------------------------------------
# Forms, groups, laziness, tasks
# ---------------------------------------------------------------------------------------


def to_long(df: pl.DataFrame, scores: list[str], keep: list[str]) -> pl.DataFrame:
    return pl.concat(
        [df.select(*keep, pl.col(s).alias("score"), pl.lit(s).alias("model")) for s in scores]
    )


def test_long_form_equals_wide_form_and_baseline_named() -> None:
    df = runs(nq=30, seed=8)
    kw = {"query": "q", "metrics": ["ndcg@10", "map"], "baseline": "s1"}
    wide = df.eval.compare("ranking", "rel", score=["s0", "s1", "s2"], **kw)
    long = to_long(df, ["s0", "s1", "s2"], ["q", "doc", "rel"])
    got = long.eval.compare("ranking", "rel", "score", system="model", **kw)
    assert_frame_equal(got, wide, rel_tol=1e-12)
    assert got["system"].to_list() == ["s0", "s2", "s0", "s2"]
    assert set(got["baseline"]) == {"s1"}
    # rows in any order: the systems in their order of first appearance
    shuffled = long.sample(fraction=1.0, shuffle=True, seed=1)
    got = shuffled.eval.compare("ranking", "rel", "score", system="model", **kw)
    order = shuffled["model"].unique(maintain_order=True).to_list()
    assert got["system"].to_list() == [s for s in order if s != "s1"] * 2
    assert_frame_equal(got.sort("metric", "system"), wide.sort("metric", "system"), rel_tol=1e-12)


def test_by_group_equals_the_group_alone_and_lazy_equals_eager() -> None:
    df = runs(nq=40, seed=9).with_columns((pl.col("q") % 3).alias("g"))
    kw = {"score": ["s0", "s1", "s2"], "query": "q", "metrics": ["ndcg@10"], "test": "bootstrap",
          "n_resamples": 300}  # fmt: skip
    out = df.eval.compare("ranking", "rel", by="g", **kw)
    for g in range(3):
        alone = df.filter(pl.col("g") == g).eval.compare("ranking", "rel", **kw)
        assert_frame_equal(out.filter(pl.col("g") == g).drop("g"), alone, rel_tol=1e-12)
    lazy = df.lazy().eval.compare("ranking", "rel", by="g", **kw)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect_schema() == out.schema
    assert_frame_equal(lazy.collect(), out, rel_tol=1e-12)


def test_forecast_units_are_series_and_lower_is_better() -> None:
    rng = np.random.default_rng(10)
    ids, t = np.repeat(np.arange(15), 10), np.tile(np.arange(10), 15)
    y = rng.random(150) * 10
    df = pl.DataFrame({"id": ids, "t": t, "y": y, "f1": y + rng.normal(0, 1, 150),
                       "f2": y + rng.normal(0, 2, 150)})  # fmt: skip
    out = df.eval.compare("forecast", "y", forecast=["f1", "f2"], series="id", time="t",
                          metrics=["mae", "rmse", "bias"])  # fmt: skip
    per = {f: df.eval.forecast("y", f, series="id", time="t", per_series=True, metrics=["mae", "bias"]).sort("id")
           for f in ("f1", "f2")}  # fmt: skip
    a, b = per["f2"]["mae"].to_numpy(), per["f1"]["mae"].to_numpy()
    r = row(out, "mae", "f2")
    assert r["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)
    assert (r["wins"], r["losses"]) == (int(np.sum(a < b)), int(np.sum(a > b)))  # lower is better
    assert r["n_units"] == 15
    bias = row(out, "bias", "f2")  # no better direction: no wins nor losses
    assert bias["wins"] is None and bias["losses"] is None and bias["ties"] == 0


def test_binary_rows_losses_and_accuracy_per_row() -> None:
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 300)
    p1 = np.clip(rng.random(300) * 0.7 + 0.3 * y, 0.01, 0.99)
    p2 = np.clip(rng.random(300) * 0.6 + 0.4 * y, 0.01, 0.99)
    df = pl.DataFrame({"y": y, "p1": p1, "p2": p2})
    out = df.eval.compare("binary", "y", score=["p1", "p2"])
    assert out["metric"].to_list() == ["logloss", "brier", "accuracy"]  # the means over rows
    loss = lambda p: -(y * np.log(p) + (1 - y) * np.log(1 - p))  # noqa: E731
    for metric, per_row in (
        ("logloss", loss),
        ("brier", lambda p: (p - y) ** 2),
        ("accuracy", lambda p: ((p >= 0.5) == (y == 1)).astype(float)),
    ):
        a, b = per_row(p2), per_row(p1)
        r = row(out, metric, "p2")
        assert r["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)
        assert r["value"] == pytest.approx(a.mean(), rel=1e-12)
        assert r["n_units"] == 300
    r = row(out, "accuracy", "p2")
    right1, right2 = (p1 >= 0.5) == (y == 1), (p2 >= 0.5) == (y == 1)
    assert (r["wins"], r["losses"]) == (
        int(np.sum(right2 & ~right1)),
        int(np.sum(right1 & ~right2)),
    )


def test_binary_auc_by_bootstrap_equals_paired_bootstrap_and_delong() -> None:
    df = pl.DataFrame(
        {"y": [0, 1] * 100} | {"a": np.random.default_rng(12).random(200),
                               "b": np.random.default_rng(13).random(200) * 0.5 + np.tile([0, 0.5], 100)}
    )  # fmt: skip
    out = df.eval.compare("binary", "y", score=["a", "b"], metrics=["auc", "logloss"],
                          test="bootstrap", n_resamples=400, seed=5)  # fmt: skip
    ref = df.eval.paired_bootstrap(pe.auc("y", "b"), pe.auc("y", "a"), n_resamples=400, seed=5)
    r = row(out, "auc", "b")
    assert r["difference"] == pytest.approx(ref["difference"].item(), rel=1e-12)
    assert (r["lower"], r["upper"], r["p_value"]) == pytest.approx(
        (ref["lower"].item(), ref["upper"].item(), ref["p_value"].item()), rel=1e-12
    )
    assert r["wins"] is None and r["n_units"] == 200
    dl = df.eval.compare("binary", "y", score=["a", "b"], test="delong")
    ref = df.eval.delong("y", "b", "a")
    got = dl.row(0, named=True)
    assert got["metric"] == "auc"
    for ours, theirs in (("value", "auc_1"), ("baseline_value", "auc_2"), ("difference", "difference"),
                         ("lower", "lower"), ("upper", "upper"), ("p_value", "p_value")):  # fmt: skip
        assert got[ours] == pytest.approx(ref[theirs], rel=1e-12)


def test_unit_column_groups_and_long_form() -> None:
    rng = np.random.default_rng(14)
    n = 600
    y = rng.integers(0, 2, n)
    df = pl.DataFrame({"y": y, "u": rng.integers(0, 25, n), "a": rng.random(n),
                       "b": rng.random(n) * 0.6 + 0.4 * y})  # fmt: skip
    out = df.eval.compare("binary", "y", score=["a", "b"], unit="u", metrics=["auc", "f1"])
    per = {
        s: df.eval.binary("y", s, by="u", metrics=["auc"]).sort("u")["auc"].to_numpy() for s in "ab"
    }
    assert row(out, "auc", "b")["p_value"] == pytest.approx(
        stats.ttest_rel(per["b"], per["a"]).pvalue, rel=1e-9
    )
    long = to_long(df, ["a", "b"], ["y", "u"])
    assert_frame_equal(long.eval.compare("binary", "y", "score", system="model", unit="u",
                                         metrics=["auc", "f1"]), out, rel_tol=1e-12)  # fmt: skip


def test_multiclass_rows() -> None:
    rng = np.random.default_rng(15)
    y = rng.integers(0, 3, 200)
    m1 = np.where(rng.random(200) < 0.6, y, rng.integers(0, 3, 200))
    m2 = np.where(rng.random(200) < 0.8, y, rng.integers(0, 3, 200))
    df = pl.DataFrame({"y": y, "m1": m1, "m2": m2})
    out = df.eval.compare("multiclass", "y", pred=["m1", "m2"])
    assert out["metric"].to_list() == ["multiclass_accuracy"]
    a, b = (m2 == y).astype(float), (m1 == y).astype(float)
    assert out["p_value"].item() == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)


def test_rows_as_units_needs_a_mean_over_rows() -> None:
    df = pl.DataFrame({"y": [0, 1, 0, 1], "a": [0.1, 0.8, 0.3, 0.6], "b": [0.2, 0.9, 0.1, 0.7]})
    with pytest.raises(InvalidParameterError, match="auc is not a mean over rows.*delong"):
        df.eval.compare("binary", "y", score=["a", "b"], metrics=["auc"])
    with pytest.raises(InvalidParameterError, match="rmse is not a mean over rows"):
        df.eval.compare("regression", "y", pred=["a", "b"], metrics=["rmse"], test="wilcoxon")
    long = to_long(df, ["a", "b"], ["y"])
    with pytest.raises(InvalidParameterError, match="wide form"):
        long.eval.compare("binary", "y", "score", system="model")


# ---------------------------------------------------------------------------------------
# BAD_INPUTS rows 56-58
# ---------------------------------------------------------------------------------------


def test_bad_inputs_56_systems() -> None:
    df = runs(nq=5, seed=16)
    with pytest.raises(InvalidParameterError, match="one system"):
        df.eval.compare("ranking", "rel", score="s0", query="q")
    with pytest.raises(InvalidParameterError, match="at least two"):
        df.eval.compare("ranking", "rel", score=["s0"], query="q")
    with pytest.raises(DataValidationError, match='system "nope" is not a column'):
        df.eval.compare("ranking", "rel", score=["s0", "nope"], query="q")
    mixed = df.with_columns(pl.col("s1").cast(pl.Float32))
    with pytest.raises(DataValidationError, match='"s0" and "s1" have different dtypes'):
        mixed.eval.compare("ranking", "rel", score=["s0", "s1"], query="q")
    long = to_long(df, ["s0"], ["q", "doc", "rel"])
    with pytest.raises(DataValidationError, match='"model".*1 system'):
        long.eval.compare("ranking", "rel", "score", system="model", query="q")
    with pytest.raises(InvalidParameterError, match="baseline 'x' is not one of the systems"):
        df.eval.compare("ranking", "rel", score=["s0", "s1"], query="q", baseline="x")
    # a duplicate (query, item) row in one system of the long form
    long = to_long(df, ["s0", "s1"], ["q", "doc", "rel"])
    dup = pl.concat([long, long.filter((pl.col("model") == "s1") & (pl.col("q") == 2)).head(1)])
    with pytest.raises(DataValidationError, match='"doc".*repeat an item'):
        dup.eval.compare("ranking", "rel", "score", system="model", query="q", item="doc")
    fc = pl.DataFrame({"id": [1, 1, 2, 2], "t": [1, 1, 1, 2], "y": [1.0] * 4, "f": [1.0, 2.0, 3.0, 4.0],
                       "g": [2.0] * 4})  # fmt: skip
    with pytest.raises(DataValidationError, match="duplicate"):
        fc.eval.compare("forecast", "y", forecast=["f", "g"], series="id", time="t")


def test_bad_inputs_57_missing_and_undefined_units() -> None:
    df = runs(nq=20, seed=17)
    long = to_long(df, ["s0", "s1", "s2"], ["q", "doc", "rel"])
    gone = long.filter(~((pl.col("model") == "s2") & pl.col("q").is_in([3, 7])))
    with pytest.raises(DataValidationError, match="system 's2' lacks 2 of the 20 queries"):
        gone.eval.compare("ranking", "rel", "score", system="model", query="q")
    kw = {"system": "model", "query": "q", "metrics": ["map"]}
    dropped = gone.eval.compare("ranking", "rel", "score", missing="drop", **kw)
    alone = long.filter(~pl.col("q").is_in([3, 7])).eval.compare("ranking", "rel", "score", **kw)
    assert_frame_equal(dropped, alone, rel_tol=1e-12)
    zero = gone.eval.compare("ranking", "rel", "score", missing="zero", **kw)
    per = long.eval.ranking(
        "rel", "score", query="q", by="model", per_query=True, k=None, metrics=["map"]
    )
    per = (
        per.with_columns(
            pl.when((pl.col("model") == "s2") & pl.col("q").is_in([3, 7]))
            .then(0.0)
            .otherwise(pl.col("map"))
            .alias("map")
        )
        .filter(pl.col("map").is_not_null())
        .sort("q")
    )
    a = per.filter(pl.col("model") == "s2")["map"].to_numpy()
    b = per.filter(pl.col("model") == "s0")["map"].to_numpy()
    assert row(zero, "map", "s2")["p_value"] == pytest.approx(
        stats.ttest_rel(a, b).pvalue, rel=1e-9
    )
    # a query undefined (no relevant item) for one system only: left out of that pair
    judged = long.with_columns(
        pl.when((pl.col("model") == "s1") & (pl.col("q") == 4))
        .then(0)
        .otherwise(pl.col("rel"))
        .alias("rel")
    )
    out = judged.eval.compare("ranking", "rel", "score", **kw)
    n_rel = df.group_by("q").agg(pl.col("rel").max()).filter(pl.col("rel") > 0).height
    assert row(out, "map", "s1")["n_units"] == n_rel - 1
    assert row(out, "map", "s2")["n_units"] == n_rel


@pytest.mark.parametrize("test", ["t", "randomization", "bootstrap", "wilcoxon", "sign"])
def test_bad_inputs_58_identical_systems(test: str) -> None:
    df = runs(nq=15, seed=18).with_columns(pl.col("s1").alias("copy"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from scipy on the way
        out = df.eval.compare("ranking", "rel", score=["s1", "copy"], query="q",
                              metrics=["ndcg@10", "map"], test=test, n_resamples=200)  # fmt: skip
    assert out["p_value"].to_list() == [1.0, 1.0]
    assert out["p_adjusted"].to_list() == [1.0, 1.0]
    assert out["lower"].to_list() == [0.0, 0.0] and out["upper"].to_list() == [0.0, 0.0]
    assert out["difference"].to_list() == [0.0, 0.0]
    assert out["wins"].to_list() == [0, 0] and out["losses"].to_list() == [0, 0]


def test_options_checked() -> None:
    df = runs(nq=4, seed=19)
    kw = {"score": ["s0", "s1"], "query": "q"}
    for bad, match in (
        ({"test": "z"}, "test"), ({"correction": "fdr"}, "correction"), ({"level": 1.5}, "level"),
        ({"n_resamples": 0}, "n_resamples"), ({"seed": -1}, "seed"), ({"missing": "fill"}, "missing"),
        ({"weight": "rel"}, "weight"), ({"bogus": 1}, "unexpected option 'bogus'"),
        ({"unit": "doc"}, "unit= is not for ranking"), ({"test": "delong"}, "delong"),
    ):  # fmt: skip
        with pytest.raises(InvalidParameterError, match=match):
            df.eval.compare("ranking", "rel", **kw, **bad)
    with pytest.raises(InvalidParameterError, match="task"):
        df.eval.compare("clustering", "rel", **kw)
    with pytest.raises(InvalidParameterError, match="query= is required"):
        df.eval.compare("ranking", "rel", score=["s0", "s1"])
    with pytest.raises(
        InvalidParameterError, match="by= column 'system' is a column of the compare"
    ):
        df.with_columns(pl.lit("x").alias("system")).eval.compare(
            "ranking", "rel", by="system", **kw
        )


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=3, max_size=15),
    st.sampled_from(["t", "wilcoxon", "sign", "randomization", "bootstrap"]),
)
def test_swapping_the_baseline_mirrors_the_row(pairs: list[tuple[int, int]], test: str) -> None:
    a = np.array([p[0] for p in pairs], dtype=float)
    b = np.array([p[1] for p in pairs], dtype=float)
    assume(np.any(a != b))
    df = pl.DataFrame({"y": np.zeros(a.size), "a": a, "b": b})
    kw = {"metrics": ["mae"], "test": test, "n_resamples": 300}
    ab = df.eval.compare("regression", "y", pred=["a", "b"], **kw).row(0, named=True)
    ba = df.eval.compare("regression", "y", pred=["b", "a"], **kw).row(0, named=True)
    assert ab["difference"] == pytest.approx(-ba["difference"], abs=1e-12)
    assert (ab["wins"], ab["ties"], ab["losses"]) == (ba["losses"], ba["ties"], ba["wins"])
    if test != "bootstrap":  # the bootstrap's tails swap with the sign: same p, by symmetry
        assert ab["p_value"] == pytest.approx(ba["p_value"], rel=1e-9)
    assert ab["lower"] == pytest.approx(-ba["upper"], abs=1e-9)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=3)
    again = shuffled.eval.compare("regression", "y", pred=["a", "b"], **{**kw, "test": "t"})
    ref = df.eval.compare("regression", "y", pred=["a", "b"], **{**kw, "test": "t"})
    assert_frame_equal(again, ref, rel_tol=1e-9)
