"""Intervals over units (SPEC §14 "Units"): ``ci="t"`` and ``ci="bootstrap"`` on the
ranking and forecast methods, ``pe.Evaluation.compute``, the spill and ``pe.trec_eval``.

Oracles: the per-query values of pytrec_eval (trec_eval) and the per-series values of
utilsforecast, turned into intervals by ``scipy.stats.t.interval`` and
``scipy.stats.bootstrap``; a brute-force loop over the queries where pytrec_eval has no
measure.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import utilsforecast.losses as ufl
from scipy import stats

import polars_eval as pe

LEVELS = (0.9, 0.95)


def t_interval(values: np.ndarray, level: float) -> tuple[float, float, float]:
    """scipy's Student interval of the mean of ``values`` (the oracle)."""
    mean = float(np.mean(values))
    lo, hi = stats.t.interval(level, len(values) - 1, loc=mean, scale=stats.sem(values))
    return mean, float(lo), float(hi)


def assert_close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Same columns, same values to 1e-12 (sums over units in another order), same nulls."""
    assert got.columns == want.columns
    for name in want.columns:
        if want[name].dtype.is_float():
            assert got[name].to_list() == pytest.approx(want[name].to_list(), rel=1e-12), name
        else:
            assert got[name].to_list() == want[name].to_list(), name


def search_log(n_queries: int = 30, depth: int = 10, *, seed: int = 0) -> pl.DataFrame:
    """A query log with distinct scores (no ties: pytrec_eval's order is ours), graded
    relevance, three queries without a relevant item and two markets."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(n_queries), depth)
    rel = rng.integers(0, 3, q.size) * (rng.random(q.size) < 0.5)
    rel[np.isin(q, [3, 11, 17])] = 0
    return pl.DataFrame(
        {
            "q": [f"q{i:02d}" for i in q],
            "doc": [f"d{i}" for i in range(q.size)],
            "rel": rel,
            "s": rng.permutation(q.size).astype(np.float64) / q.size,
            "mkt": np.where(q % 3 == 0, "de", "fr"),
        }
    )


def trec_per_query(df: pl.DataFrame, measure: str) -> dict[str, float]:
    """pytrec_eval's value of ``measure`` per query (every query of the log)."""
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q, doc, rel, s in df.select("q", "doc", "rel", "s").iter_rows():
        qrels.setdefault(q, {})[doc] = int(rel)
        run.setdefault(q, {})[doc] = float(s)
    out = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    return {q: values[measure] for q, values in out.items()}


# the ranking method, its table column and pytrec_eval's measure
RANKING = [
    ("ndcg", {"k": 5, "gain": "linear"}, "ndcg@5", "ndcg_cut_5"),
    ("precision_at_k", {"k": 5}, "precision@5", "P_5"),
    ("mrr", {}, "mrr", "recip_rank"),
    ("map", {}, "map", "map"),
]


def relevant_queries(df: pl.DataFrame) -> set[str]:
    return set(df.filter(pl.col("rel") >= 1)["q"].unique().to_list())


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("method", "options", "column", "measure"), RANKING)
def test_ranking_t_equals_scipy_on_trec_eval_per_query(level, method, options, column, measure):
    df = search_log()
    keep = relevant_queries(df)  # a query with no relevant item is left out
    values = np.array([v for q, v in trec_per_query(df, measure).items() if q in keep])
    want = t_interval(values, level)
    got = getattr(df.eval, method)("rel", "s", query="q", ci="t", level=level, **options)
    assert isinstance(got, pe.Interval)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    # the task table: the same interval, and the count of queries left out says so
    k = options.get("k")
    table = df.eval.ranking(
        "rel", "s", query="q", k=[k] if k else [None], gain="linear", ci="t", level=level,
        metrics=[method if method != "precision_at_k" else "precision"],
    )  # fmt: skip
    assert table.row(0, named=True)["n_excluded"] == 30 - len(keep) >= 3
    assert table.row(0, named=True)["n_queries"] == 30
    row = table.row(0, named=True)
    assert (row[column], row[f"{column}_lower"], row[f"{column}_upper"]) == pytest.approx(
        want, rel=1e-12, abs=1e-12
    )
    assert table.columns[2:] == [column, f"{column}_lower", f"{column}_upper"]


def test_ranking_t_brute_force_loop_for_err_and_cg():
    """Metrics pytrec_eval lacks: the per-query values from a loop of per-query calls."""
    df = search_log(seed=4)
    for method, options in (("err", {"k": 5}), ("cg", {"k": 3}), ("rbp", {"p": 0.7})):
        fn = getattr(df.eval, method)
        values = []
        for q in df["q"].unique().sort():
            part = df.filter(pl.col("q") == q)
            if part["rel"].max() >= 1:
                values.append(getattr(part.eval, method)("rel", "s", query="q", **options))
        want = t_interval(np.array(values), 0.95)
        got = fn("rel", "s", query="q", ci="t", **options)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), method


def test_per_group_equals_per_frame_and_lazy_equals_eager(engine):
    df = search_log(seed=1)
    for ci in ("t", "bootstrap"):
        kw = {"query": "q", "k": [3, None], "ci": ci, "metrics": ["ndcg", "map", "mrr"]}
        grouped = df.eval.ranking("rel", "s", by="mkt", **kw)
        lazy = df.lazy().eval.ranking("rel", "s", by="mkt", **kw)
        assert isinstance(lazy, pl.LazyFrame)
        assert_close(lazy.collect(engine=engine), grouped)
        for row in grouped.iter_rows(named=True):
            alone = df.filter(pl.col("mkt") == row["mkt"]).eval.ranking("rel", "s", **kw)
            got = {k: v for k, v in row.items() if k != "mkt"}
            assert got == pytest.approx(alone.row(0, named=True), rel=1e-12), ci
        single = df.eval.ndcg("rel", "s", query="q", k=3, by="mkt", ci=ci)
        assert single.columns == ["mkt", "ndcg", "ndcg_lower", "ndcg_upper"]
        assert single["ndcg_lower"].to_list() == pytest.approx(grouped["ndcg@3_lower"].to_list())


def test_row_order_does_not_change_the_interval():
    df = search_log(seed=2)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=5)
    for ci in ("t", "bootstrap"):
        a = df.eval.map("rel", "s", query="q", ci=ci)
        b = shuffled.eval.map("rel", "s", query="q", ci=ci)
        assert a == pytest.approx(b, rel=1e-12)


def test_integer_query_weights_equal_repeated_queries():
    df = search_log(seed=3)
    weights = pl.DataFrame({"q": df["q"].unique().sort()}).with_columns(
        w=pl.int_range(pl.len()) % 3  # 0, 1, 2: a weight 0 drops the query
    )
    weighted = df.join(weights, on="q")
    repeated = pl.concat(
        weighted.filter(pl.col("w") >= i).with_columns(pl.col("q") + f"#{i}") for i in (1, 2)
    )
    got = weighted.eval.ndcg("rel", "s", query="q", k=5, weight="w", ci="t")
    want = repeated.eval.ndcg("rel", "s", query="q", k=5, ci="t")
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("by", [None, "mkt"])
def test_evaluation_partitions_merge_to_the_whole(by):
    df = search_log(seed=6).with_columns(part=pl.int_range(pl.len()) % 4)  # queries split
    kw = {"relevance": "rel", "score": "s", "query": "q", "k": [5], "by": by}
    parts = [
        pe.Evaluation("ranking", **kw).update(df.filter(pl.col("part") == i)) for i in range(4)
    ]
    merged = parts[0]
    for other in parts[1:]:
        merged.merge(pe.Evaluation.from_state(other.state))
    for ci in ("t", "bootstrap"):
        want = df.eval.ranking("rel", "s", query="q", k=[5], by=by, ci=ci)
        assert_close(merged.compute(ci=ci), want)


def test_spilled_evaluation_gives_the_interval():
    df = search_log(seed=7).with_columns(part=pl.int_range(pl.len()) % 3)
    with tempfile.TemporaryDirectory() as tmp:
        ev = pe.Evaluation(
            "ranking", relevance="rel", score="s", query="q", k=[5], by="mkt",
            spill=Path(tmp) / "spill", spill_buckets=3,
        )  # fmt: skip
        for i in range(3):
            ev.update(df.filter(pl.col("part") == i))
        for ci in ("t", "bootstrap"):
            want = df.eval.ranking("rel", "s", query="q", k=[5], by="mkt", ci=ci)
            got = ev.compute(ci=ci, level=0.9) if ci == "t" else ev.compute(ci=ci)
            if ci == "t":
                want = df.eval.ranking("rel", "s", query="q", k=[5], by="mkt", ci=ci, level=0.9)
            assert_close(got, want)


def test_bootstrap_is_reproducible_and_near_scipy():
    df = search_log(60, seed=8)
    a = df.eval.ndcg("rel", "s", query="q", k=5, ci="bootstrap", n_resamples=4000, seed=3)
    b = df.eval.ndcg("rel", "s", query="q", k=5, ci="bootstrap", n_resamples=4000, seed=3)
    c = df.eval.ndcg("rel", "s", query="q", k=5, ci="bootstrap", n_resamples=4000, seed=4)
    # the bounds: the same draws; the mean: a sum over queries in Polars' order (to 1 ulp)
    assert (a.lower, a.upper) == (b.lower, b.upper) != (c.lower, c.upper)
    assert a.value == pytest.approx(b.value, rel=1e-14)
    with pytest.warns(pe.UndefinedMetricWarning, match="no relevant item"):
        per = df.eval.ndcg("rel", "s", query="q", k=5, per_query=True)["ndcg"].drop_nulls()
    ref = stats.bootstrap(
        (per.to_numpy(),), np.mean, n_resamples=20_000, method="percentile",
        rng=np.random.default_rng(0),
    ).confidence_interval  # fmt: skip
    assert a.value == pytest.approx(per.mean(), rel=1e-12)
    # two Monte Carlo estimates of the same percentiles
    assert a.lower == pytest.approx(ref.low, abs=0.01)
    assert a.upper == pytest.approx(ref.high, abs=0.01)
    assert a.lower < a.value < a.upper


def test_undefined_units_and_groups():
    df = search_log(seed=9)
    # a market with one query that has a relevant item: a value, no interval
    one = df.filter(pl.col("q").is_in(["q00", "q03"])).with_columns(mkt=pl.lit("x"))
    none = df.filter(pl.col("q") == "q11").with_columns(mkt=pl.lit("y"))  # no relevant item
    frame = pl.concat([df, one, none.with_columns(pl.col("q") + "y")])
    frame = frame.with_columns(pl.col("q") + pl.col("mkt"))
    with pytest.warns(pe.UndefinedMetricWarning, match="1 of 4 groups"):
        out = frame.eval.ndcg("rel", "s", query="q", by="mkt", ci="t")
    rows = {r["mkt"]: r for r in out.iter_rows(named=True)}
    assert rows["x"]["ndcg"] is not None and rows["x"]["ndcg_lower"] is None
    assert rows["y"]["ndcg"] is None and rows["y"]["ndcg_upper"] is None
    with pytest.raises(pe.UndefinedMetricError):
        none.eval.ndcg("rel", "s", query="q", ci="t")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        boot = one.eval.ndcg("rel", "s", query="q", ci="bootstrap")
    assert boot.lower == boot.upper == boot.value  # one unit: every resample is that unit


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"ci": "normal"}, "ci must be one of"),
        ({"ci": "t", "level": 1.5}, "level"),
        ({"ci": "t", "n_resamples": 10}, "n_resamples"),
        ({"ci": "bootstrap", "n_resamples": 0}, "n_resamples"),
        ({"ci": "bootstrap", "seed": -1}, "seed"),
        ({"ci": "t", "per_query": True}, "per_query"),
        ({"seed": 1}, "ci='bootstrap'"),
    ],
)
def test_bad_options(kwargs, needle):
    df = search_log()
    with pytest.raises(pe.InvalidParameterError, match=needle):
        df.eval.ndcg("rel", "s", query="q", **kwargs)
    with pytest.raises(pe.InvalidParameterError, match=needle):
        df.eval.ranking("rel", "s", query="q", **kwargs)


def test_evaluation_of_a_task_without_units_refuses_ci():
    ev = pe.Evaluation("binary", label="y", score="p").update(
        pl.DataFrame({"y": [0, 1, 1], "p": [0.1, 0.7, 0.4]})
    )
    with pytest.raises(pe.InvalidParameterError, match="no units"):
        ev.compute(ci="t")


# -- forecasting: the unit is the series ---------------------------------------------------


def forecast_data(n_series: int = 9, horizon: int = 7, *, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sid = np.repeat(np.arange(n_series), horizon)
    y = 10.0 + sid + rng.normal(0, 1, sid.size)
    return pl.DataFrame(
        {
            "unique_id": [f"s{i}" for i in sid],
            "ds": np.tile(np.arange(horizon), n_series),
            "y": y,
            "f": y + rng.normal(0.3, 1.0 + sid / 5, sid.size),
            "region": np.where(sid % 2 == 0, "n", "s"),
        }
    )


@pytest.mark.parametrize("level", LEVELS)
def test_forecast_t_equals_scipy_on_utilsforecast_per_series(level):
    df = forecast_data()
    for name, fn in (("mae", ufl.mae), ("rmse", ufl.rmse), ("bias", ufl.bias)):
        values = fn(df, models=["f"])["f"].to_numpy()
        want = t_interval(values, level)
        table = df.eval.forecast("y", "f", series="unique_id", time="ds", ci="t", level=level)
        row = table.row(0, named=True)
        got = (row[name], row[f"{name}_lower"], row[f"{name}_upper"])
        assert got == pytest.approx(want, rel=1e-12), name
        single = getattr(df.eval, name)(
            "y", "f", series="unique_id", time="ds", ci="t", level=level
        )
        assert single == pytest.approx(want, rel=1e-12), name
    assert "mae_pooled_lower" not in table.columns


def test_forecast_per_group_lazy_and_evaluation():
    df = forecast_data(seed=1)
    kw = {"series": "unique_id", "time": "ds", "by": "region"}
    for ci in ("t", "bootstrap"):
        table = df.eval.forecast("y", "f", ci=ci, **kw)
        assert_close(df.lazy().eval.forecast("y", "f", ci=ci, **kw).collect(), table)
        for row in table.iter_rows(named=True):
            alone = df.filter(pl.col("region") == row["region"]).eval.forecast(
                "y", "f", series="unique_id", time="ds", ci=ci
            )
            got = {k: v for k, v in row.items() if k != "region"}
            assert got == pytest.approx(alone.row(0, named=True), rel=1e-12)
        single = df.eval.mae("y", "f", ci=ci, **kw)
        assert single["mae_lower"].to_list() == pytest.approx(table["mae_lower"].to_list())
        # pe.Evaluation: partitions that split the series merge to the whole
        parts = [df.filter(pl.col("ds") % 3 == i) for i in range(3)]
        ev = pe.Evaluation("forecast", actual="y", forecast="f", **kw)
        for part in parts:
            ev.merge(pe.Evaluation("forecast", actual="y", forecast="f", **kw).update(part))
        assert_close(ev.compute(ci=ci), table)


def test_forecast_ci_needs_series_and_no_per_series():
    df = forecast_data()
    with pytest.raises(pe.InvalidParameterError, match="series="):
        df.eval.mae("y", "f", ci="t")
    with pytest.raises(pe.InvalidParameterError, match="per_series"):
        df.eval.forecast("y", "f", series="unique_id", time="ds", per_series=True, ci="t")
    # without series=, ci="bootstrap" is still the row bootstrap of SPEC §8
    row = df.eval.mae("y", "f", ci="bootstrap", n_resamples=50)
    assert row.value == pytest.approx(df.eval.mae("y", "f"), rel=1e-12)


# -- pe.trec_eval ---------------------------------------------------------------------------


def test_trec_eval_t_equals_scipy_on_pytrec_eval():
    df = search_log(seed=11)
    run = df.select("q", "doc", "s").rename({"q": "query", "s": "score"})
    qrels = df.select("q", "doc", "rel").rename({"q": "query", "rel": "relevance"})
    got = pe.trec_eval(run, qrels, ["map", "P.5", "num_ret", "gm_map"], ci="t", level=0.9)
    assert got.columns == [
        "num_q", "map", "map_lower", "map_upper", "P_5", "P_5_lower", "P_5_upper",
        "num_ret", "gm_map", "gm_map_lower", "gm_map_upper",
    ]  # fmt: skip
    row = got.row(0, named=True)
    for measure, column in (("map", "map"), ("P_5", "P_5")):
        # trec_eval's conventions: a query without relevant documents scores 0, kept
        values = np.array(list(trec_per_query(df, measure).values()))
        want = t_interval(values, 0.9)
        assert (row[column], row[f"{column}_lower"], row[f"{column}_upper"]) == pytest.approx(
            want, rel=1e-12, abs=1e-12
        )
    logs = np.log(np.maximum(np.array(list(trec_per_query(df, "map").values())), 1e-5))
    want = [math.exp(v) for v in t_interval(logs, 0.9)]
    assert (row["gm_map"], row["gm_map_lower"], row["gm_map_upper"]) == pytest.approx(want)
    boot = pe.trec_eval(run, qrels, ["map"], ci="bootstrap", seed=2)
    assert boot.columns == ["num_q", "map", "map_lower", "map_upper"]
    assert boot["map_lower"].item() < boot["map"].item() < boot["map_upper"].item()
    with pytest.raises(pe.InvalidParameterError, match="per_query"):
        pe.trec_eval(run, qrels, ["map"], ci="t", per_query=True)


# -- the command line -----------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    from polars_eval import cli

    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _same(records: list[dict], want: pl.DataFrame) -> None:
    assert list(records[0]) == want.columns
    assert_close(pl.DataFrame(records, schema=want.schema), want)


def test_cli_ci_on_ranking_forecast_and_trec(tmp_path, capsys):
    import json

    df = search_log(seed=12)
    df.write_parquet(tmp_path / "log.parquet")
    base = ["ranking", tmp_path / "log.parquet", "--query", "q", "--relevance", "rel",
            "--score", "s", "-k", "5", "--by", "mkt", "--format", "json"]  # fmt: skip
    code, out, err = _cli(capsys, *base, "--ci", "t", "--level", "0.9")
    assert code == 0, err
    _same(json.loads(out), df.eval.ranking("rel", "s", query="q", k=5, by="mkt", ci="t", level=0.9))
    code, out, err = _cli(capsys, *base, "--ci", "bootstrap", "--resamples", "50", "--seed", "2")
    assert code == 0, err
    want = df.eval.ranking(
        "rel", "s", query="q", k=5, by="mkt", ci="bootstrap", n_resamples=50, seed=2
    )
    _same(json.loads(out), want)

    fc = forecast_data(seed=2)
    fc.write_parquet(tmp_path / "fc.parquet")
    code, out, err = _cli(capsys, "forecast", tmp_path / "fc.parquet", "--actual", "y",
                          "--forecast", "f", "--series", "unique_id", "--time", "ds",
                          "--ci", "t", "--format", "json")  # fmt: skip
    assert code == 0, err
    _same(json.loads(out), fc.eval.forecast("y", "f", series="unique_id", time="ds", ci="t"))

    run = df.select("q", pl.lit("Q0").alias("q0"), "doc", pl.lit(1).alias("rank"), "s",
                    pl.lit("r").alias("tag"))  # fmt: skip
    run.write_csv(tmp_path / "run.txt", separator=" ", include_header=False)
    qrels = df.select("q", pl.lit(0).alias("it"), "doc", "rel")
    qrels.write_csv(tmp_path / "qrels.txt", separator=" ", include_header=False)
    code, out, err = _cli(capsys, "trec", tmp_path / "run.txt", tmp_path / "qrels.txt",
                          "-m", "map", "-m", "P.5", "--ci", "t", "--format", "json")  # fmt: skip
    assert code == 0, err
    want = pe.trec_eval(
        str(tmp_path / "run.txt"), str(tmp_path / "qrels.txt"), ["map", "P.5"], ci="t"
    )
    _same(json.loads(out), want)
    code, _, err = _cli(capsys, "trec", tmp_path / "run.txt", tmp_path / "qrels.txt",
                        "--ci", "t", "-q")  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and "per_query" in err


def test_evaluation_takes_the_interval_in_its_definition_too():
    df = search_log(seed=14)
    kw = {"relevance": "rel", "score": "s", "query": "q", "k": [5], "by": "mkt"}
    ev = pe.Evaluation("ranking", ci="t", level=0.9, **kw).update(df)
    want = df.eval.ranking("rel", "s", query="q", k=[5], by="mkt", ci="t", level=0.9)
    assert_close(pe.Evaluation.from_state(ev.state).compute(), want)
    assert_close(
        ev.compute(ci="bootstrap"),
        df.eval.ranking("rel", "s", query="q", k=[5], by="mkt", ci="bootstrap"),
    )
    plain = pe.Evaluation("ranking", **kw).update(df)
    assert "ci" not in plain.state.row(0, named=True)["__pe_def"]  # other definitions as before
    with pytest.raises(pe.InvalidParameterError, match="no units"):
        pe.Evaluation("regression", actual="a", pred="p", ci="t")
    with pytest.raises(pe.InvalidParameterError, match="ci must be one of"):
        pe.Evaluation("ranking", ci="z", **kw)
