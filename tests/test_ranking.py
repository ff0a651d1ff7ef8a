"""Ranking metrics (SPEC §7) against brute force, scikit-learn and worked examples."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_eval as pe
from polars_eval._core.registry import REGISTRY
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)

# ---------------------------------------------------------------------------------------
# Brute force: the metric of one ranked list (ties already broken), then the mean over
# every order of the tied items (what ties="average" promises)
# ---------------------------------------------------------------------------------------


def _gain(r: float, gain: str) -> float:
    return 2.0**r - 1.0 if gain == "exp2" else r


def brute_one(name: str, rels: list[float], k: int | None, *, extra_rel: list[float] = (), **o):
    """One ranked list ``rels`` (rank order); ``extra_rel`` = relevant items never ranked."""
    min_rel = o.get("min_relevance", 1.0)
    gain = o.get("gain", "exp2")
    cut = len(rels) if k is None else k
    top = rels[:cut]
    y = [r >= min_rel for r in rels]
    every = list(rels) + list(extra_rel)
    n_rel = sum(r >= min_rel for r in every)
    if n_rel == 0:
        return None
    if name == "dcg":
        return sum(_gain(r, gain) / math.log2(i + 2) for i, r in enumerate(top))
    if name == "ndcg":
        ideal = sorted(every, reverse=True)[:cut]
        idcg = sum(_gain(r, gain) / math.log2(i + 2) for i, r in enumerate(ideal))
        return brute_one("dcg", rels, k, extra_rel=extra_rel, **o) / idcg
    if name == "cg":
        return float(sum(top))
    if name == "precision_at_k":
        return sum(y[:cut]) / (k if k is not None else max(len(rels), 1))
    if name == "recall_at_k":
        return sum(y[:cut]) / n_rel
    if name == "hit_rate_at_k":
        return float(any(y[:cut]))
    if name in ("reciprocal_rank", "mrr"):
        for i, flag in enumerate(y[:cut]):
            if flag:
                return 1.0 / (i + 1)
        return 0.0
    if name in ("ap_at_k", "map"):
        total, hits = 0.0, 0
        for i, flag in enumerate(y[:cut]):
            if flag:
                hits += 1
                total += hits / (i + 1)
        den = n_rel if o.get("denominator", "all") == "all" or k is None else min(k, n_rel)
        return total / den
    if name == "err":
        g = o.get("max_relevance", 4.0)
        p, total = 1.0, 0.0
        for i, r in enumerate(top):
            stop = (2.0 ** min(r, g) - 1.0) / 2.0**g
            total += p * stop / (i + 1)
            p *= 1.0 - stop
        return total
    if name == "r_precision":
        return sum(y[:n_rel]) / n_rel
    if name == "f1_at_k":
        size = k if k is not None else len(rels)
        return 2.0 * sum(y[:cut]) / (size + n_rel)
    if name in ("fallout_at_k", "bpref"):
        n_nonrel = sum(r < min_rel for r in every)
        if name == "fallout_at_k":
            return sum(not flag for flag in y[:cut]) / n_nonrel if n_nonrel else None
        # trec_eval's bpref (m_bpref.c): each relevant item adds 1 - min(n, R) / min(N, R)
        total, above = 0.0, 0
        for flag in y:
            if not flag:
                above += 1
            else:
                total += 1.0 - min(above, n_rel) / min(n_nonrel, n_rel) if above else 1.0
        return total / n_rel
    if name in ("rbp", "rbp_residual"):
        p = o.get("p", 0.8)
        if name == "rbp":
            return (1 - p) * sum(p**i for i, flag in enumerate(y[:cut]) if flag)
        return p ** len(top)  # no unjudged item here: the weight beyond the list
    if name == "ap_11pt":
        hits, pts = 0, []
        for i, flag in enumerate(y):
            hits += flag
            pts.append((hits / n_rel, hits / (i + 1)))
        levels = [
            max([p for rc, p in pts if rc >= lv / 10 - 1e-12], default=0.0) for lv in range(11)
        ]
        return sum(levels) / 11
    raise AssertionError(name)


def brute_average(name: str, rels: list[float], scores: list[float], k: int | None, **o):
    """Mean of the metric over every order consistent with the scores (ties permuted)."""
    n = len(rels)
    values = []
    for perm in itertools.permutations(range(n)):
        s = [scores[i] for i in perm]
        if any(s[i] < s[i + 1] for i in range(n - 1)):
            continue
        values.append(brute_one(name, [rels[i] for i in perm], k, **o))
    if values[0] is None:
        return None
    return float(np.mean(values))


def brute_first(name: str, rels: list[float], scores: list[float], k: int | None, **o):
    order = sorted(range(len(rels)), key=lambda i: -scores[i])  # stable: input order
    return brute_one(name, [rels[i] for i in order], k, **o)


AVERAGE_METRICS = {info.name: info.fn for info in REGISTRY.values() if info.task == "ranking"}
"""Every registered ranking metric (each needs its brute force in ``brute_one``)."""
WHOLE_LIST = ("ap_11pt", "r_precision", "bpref")
"""Metrics without a cutoff (11-point AP, R-precision, bpref): over the whole list."""


def _cut(name: str, k: int | None) -> dict:
    """The cutoff argument of a metric (none for the whole-list metrics)."""
    return {} if name in WHOLE_LIST else {"k": k}


def _query(seed: int, n: int, levels: int = 3, grades: int = 4) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    rels = rng.integers(0, grades, n).astype(float).tolist()
    scores = rng.integers(0, levels, n).astype(float).tolist()
    return rels, scores


def _value(fn, rels, scores, **kw):
    return pl.DataFrame({"r": rels, "s": scores}).select(fn("r", "s", **kw)).item()


@pytest.mark.parametrize(
    ("name", "k"),
    [(n, k) for n in sorted(AVERAGE_METRICS) for k in (1, 2, 4, None) if n not in WHOLE_LIST]
    + [(n, None) for n in WHOLE_LIST],
)
def test_ties_average_equals_mean_over_permutations(name: str, k: int | None) -> None:
    fn = AVERAGE_METRICS[name]
    for seed in range(12):
        rels, scores = _query(seed, 6)
        kw = _cut(name, k)
        expected = brute_average(name, rels, scores, k)
        got = _value(fn, rels, scores, **kw)
        if expected is None:
            assert got is None
        else:
            assert got == pytest.approx(expected, abs=1e-12), (seed, rels, scores)


@pytest.mark.parametrize("ties", ["average", "first"])
def test_many_queries_in_one_group_by_equal_brute_force(ties: str) -> None:
    """Many short queries with tie blocks across every cutoff, in one group_by: the engine
    reads only the top of each list for the cutoff metrics and MRR (leading_rows), so each
    query's value is checked against the brute force of that query alone."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(0, 6, 40)
    q = np.repeat(np.arange(len(sizes)), sizes)
    df = pl.DataFrame(
        {
            "q": q,
            "rel": rng.integers(0, 3, len(q)) * (rng.random(len(q)) < 0.5),
            "s": rng.integers(0, 3, len(q)).astype(float),
        }
    )
    names = ["ndcg", "dcg", "precision_at_k", "recall_at_k", "hit_rate_at_k", "ap_at_k"]
    names += ["cg", "f1_at_k", "fallout_at_k", "rbp", "rbp_residual", "reciprocal_rank", "mrr"]
    brute = brute_average if ties == "average" else brute_first
    for k in (1, 3, None):
        exprs = [AVERAGE_METRICS[n]("rel", "s", k=k, ties=ties).alias(n) for n in names]
        exprs.append(pe.mrr("rel", "s", ties=ties, min_relevance=2).alias("mrr2"))
        got = df.group_by("q").agg(exprs)
        for row in got.iter_rows(named=True):
            part = df.filter(pl.col("q") == row["q"])
            rels, scores = part["rel"].cast(float).to_list(), part["s"].to_list()
            for name in [*names, "mrr2"]:
                if name == "mrr2":  # no cutoff: the rows up to the first relevant block
                    expected = brute("mrr", rels, scores, None, min_relevance=2)
                else:
                    expected = brute(name, rels, scores, k)
                assert row[name] == (None if expected is None else pytest.approx(expected)), (
                    k,
                    name,
                    rels,
                    scores,
                )


LEADING = ["ndcg", "dcg", "precision_at_k", "recall_at_k", "hit_rate_at_k", "ap_at_k", "cg"]
LEADING += ["f1_at_k", "fallout_at_k", "rbp", "rbp_residual", "reciprocal_rank", "mrr"]
"""The expressions whose state holds only the top of each list (``engine.leading_state``):
with a cutoff k, and MRR / reciprocal rank without one."""


def _leading_exprs(o: dict) -> list[pl.Expr]:
    """Each LEADING expression with the options of ``o`` it takes (MRR / reciprocal rank
    also without a cutoff)."""
    exprs = []
    for name in LEADING:
        params = REGISTRY[name].signature.parameters
        kw = {key: value for key, value in o.items() if key in params}
        exprs.append(AVERAGE_METRICS[name]("rel", "s", **kw).alias(name))
        if name in ("mrr", "reciprocal_rank"):
            exprs.append(AVERAGE_METRICS[name]("rel", "s", **{**kw, "k": None}).alias(name + "_"))
    return exprs


_GRADE = st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0, None, None, float("nan")])
_SCORE = st.sampled_from([0.0, 1.0, 1.0, 2.0, None, float("nan"), float("inf")])


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.lists(st.tuples(_GRADE, _SCORE), max_size=9), min_size=1, max_size=4),
    st.fixed_dictionaries(
        {
            "k": st.sampled_from([1, 2, 3, 30]),
            "ties": st.sampled_from(["average", "first"]),
            "unscored": st.sampled_from(["ignore", "unretrieved"]),
            "unjudged": st.sampled_from(["ignore", "nonrelevant"]),
            "no_relevant": st.sampled_from([None, "zero"]),
            "min_relevance": st.sampled_from([1, 2]),
            "gain": st.sampled_from(["exp2", "linear"]),
            "log_base": st.sampled_from([2.0, 10.0]),
            "denominator": st.sampled_from(["all", "min_k"]),
            "p": st.sampled_from([0.8, 0.5]),
        }
    ),
)
def test_leading_state_equals_the_whole_list(queries, options) -> None:
    """The expressions reading the top of each list hold only its rows scored at least a
    threshold, with the query's counts on the side: every option, ties, null and NaN
    scores and grades, k beyond the list, queries without a relevant item or a row; the
    values are the whole sorted list's, per group = per frame, lazy = eager."""
    from polars_eval.metrics import ranking as rk_metrics
    from polars_eval.metrics.ranking import engine

    rows = [(q, r, s) for q, query in enumerate(queries) for r, s in query]
    assume(rows)
    df = pl.DataFrame(
        rows, schema={"q": pl.Int64, "rel": pl.Float64, "s": pl.Float64}, orient="row"
    )
    exprs = _leading_exprs(options)
    got = df.group_by("q").agg(exprs).sort("q")
    with pytest.MonkeyPatch.context() as patch:  # every row, sorted (query_state)
        whole = lambda r, s, specs, **o: engine.query_state(r, s, ties=o["ties"])  # noqa: E731
        patch.setattr(rk_metrics, "leading_state", whole)
        expected = df.group_by("q").agg(_leading_exprs(options)).sort("q")
    assert_frame_equal(got, expected, abs_tol=1e-12, check_exact=False)
    lazy = df.lazy().group_by("q").agg(exprs).sort("q").collect()
    assert_frame_equal(lazy, got)
    for q in got["q"]:
        one = df.filter(pl.col("q") == q).select(exprs)
        assert_frame_equal(one, got.filter(pl.col("q") == q).drop("q"))


def test_nan_in_one_query_leaves_the_others() -> None:
    """A NaN grade makes its own query's value NaN, never that of the queries evaluated
    after it in the same aggregation (the engine's sums run over every query at once)."""
    df = pl.DataFrame(
        {"q": [1, 1, 0, 0, 0], "rel": [0.0, np.nan, 2.0, 0.0, 1.0], "s": [1.0, 0.0, 3, 2, 2]}
    )
    exprs = [fn("rel", "s", **_cut(name, 2)).alias(name) for name, fn in AVERAGE_METRICS.items()]
    got = df.group_by("q", maintain_order=True).agg(exprs)
    assert all(math.isnan(x) for x in got.row(0)[1:])
    alone = df.filter(pl.col("q") == 0).select(exprs)
    assert_frame_equal(got.filter(pl.col("q") == 0).drop("q"), alone)
    assert not any(math.isnan(x) for x in alone.row(0) if x is not None)


def test_leading_state_holds_the_top_tie_blocks() -> None:
    """NDCG@2's state holds the rows down to the tie block at rank 2 (whole), MRR's down to
    the block of its first relevant item; AP over the whole list holds every row."""
    from polars_eval.metrics.ranking import engine

    df = pl.DataFrame({"rel": [0, 1, 0, 2, 0, 1, 0], "s": [9.0, 8, 7, 7, 7, 1, 0]})
    o = {"ties": "average", "unscored": "ignore", "min_relevance": 1.0, "unjudged": "ignore"}

    def held(spec: engine.Spec) -> list[float]:
        state = df.select(engine.leading_state("rel", "s", [spec], **o)).to_series()
        rows = state.struct.field(engine.ST) if state.dtype == pl.Struct else state
        return rows.explode().struct.field("s").to_list()

    assert held(engine.Spec("ndcg", "ndcg", k=2)) == [9.0, 8.0]
    assert held(engine.Spec("ndcg", "ndcg", k=3)) == [9.0, 8.0, 7.0, 7.0, 7.0]
    assert held(engine.Spec("mrr", "mrr")) == [9.0, 8.0]
    assert len(held(engine.Spec("ap", "ap_at_k", k=None))) == df.height
    # ties="first" with a tiebreak: the head of the whole list's order (query_state)
    first = {**o, "ties": "first"}
    tied = df.with_columns(doc=pl.Series([3, 1, 2, 6, 4, 5, 0]))
    whole = tied.select(engine.query_state("rel", "s", ties="first", tiebreak="doc"))
    spec = engine.Spec("ndcg", "ndcg", k=3)
    lead = tied.select(engine.leading_state("rel", "s", [spec], tiebreak="doc", **first))
    rows = lead.to_series().struct.field(engine.ST).explode()
    assert rows.to_list() == whole.to_series().explode().head(5).to_list()
    assert rows.struct.field("r").to_list() == [0.0, 1.0, 2.0, 0.0, 0.0]  # docs 6, 4, 2 at 7


@pytest.mark.parametrize("name", ["ndcg", "dcg", "ap_at_k", "hit_rate_at_k", "mrr", "err"])
def test_ties_average_options(name: str) -> None:
    fn = AVERAGE_METRICS[name]
    for seed in range(6):
        rels, scores = _query(100 + seed, 6, levels=2, grades=5)
        kw: dict = {"k": 3, "min_relevance": 2}
        if name in ("ndcg", "dcg"):
            kw["gain"] = "linear"
        if name == "ap_at_k":
            kw["denominator"] = "min_k"
        if name == "err":
            kw["max_relevance"] = 3.0
        expected = brute_average(name, rels, scores, **kw)
        got = _value(fn, rels, scores, **kw)
        assert got == (None if expected is None else pytest.approx(expected, abs=1e-12))


def test_all_items_tied_closed_forms() -> None:
    # one relevant among n tied items: E[1/rank] = H_n / n; hit@k = k/n; AP = H_n / n
    n = 7
    rels = [1.0] + [0.0] * (n - 1)
    scores = [0.0] * n
    harmonic = sum(1 / i for i in range(1, n + 1))
    assert _value(pe.mrr, rels, scores) == pytest.approx(harmonic / n, abs=1e-14)
    assert _value(pe.hit_rate_at_k, rels, scores, k=3) == pytest.approx(3 / n, abs=1e-14)
    assert _value(pe.ap_at_k, rels, scores, k=None) == pytest.approx(harmonic / n, abs=1e-14)


@pytest.mark.parametrize("name", sorted(AVERAGE_METRICS))
@pytest.mark.parametrize("k", [2, None])
def test_ties_first_keeps_input_order(name: str, k: int | None) -> None:
    fn = AVERAGE_METRICS[name]
    for seed in range(8):
        rels, scores = _query(200 + seed, 7)
        kw = _cut(name, k)
        expected = brute_first(name, rels, scores, None if name in WHOLE_LIST else k)
        got = _value(fn, rels, scores, ties="first", **kw)
        assert got == (None if expected is None else pytest.approx(expected, abs=1e-12))


# ---------------------------------------------------------------------------------------
# Outside oracles and worked examples
# ---------------------------------------------------------------------------------------


def test_ndcg_matches_sklearn_with_ties() -> None:
    from sklearn.metrics import ndcg_score

    rng = np.random.default_rng(5)
    for _ in range(5):
        n = int(rng.integers(2, 15))
        rel = rng.integers(0, 4, n).astype(float)
        if rel.sum() == 0:
            rel[0] = 1
        score = np.round(rng.random(n), 1)
        for k in (1, 5, None):
            expected = ndcg_score([rel], [score], k=k)
            got = _value(pe.ndcg, rel.tolist(), score.tolist(), k=k, gain="linear")
            assert got == pytest.approx(expected, abs=1e-12)


def test_ndcg_matches_ydf_with_ties() -> None:
    import ydf

    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(40), 10)
    rel = rng.integers(0, 5, groups.size).astype(float)
    score = np.round(rng.random(groups.size), 1)  # many ties
    for k in (1, 5):
        evaluation = ydf.evaluate_predictions(
            score, rel, ydf.Task.RANKING, ranking_groups=groups.astype(str), ndcg_truncation=k
        )
        df = pl.DataFrame({"q": groups, "rel": rel, "s": score})
        got = df.eval.ndcg("rel", "s", query="q", k=k)
        assert got == pytest.approx(evaluation.ndcg, abs=1e-6)  # YDF reports float32


def test_ap_worked_example() -> None:
    # true items {a,b,c,d,e,k}; predicted [a, f, d, e, g] -> (1 + 2/3 + 3/4) / 6
    df = pl.DataFrame(
        {
            "item": ["a", "f", "d", "e", "g", "b", "c", "k"],
            "rel": [1, 0, 1, 1, 0, 1, 1, 1],
            "s": [5.0, 4.0, 3.0, 2.0, 1.0, None, None, None],
        }
    )
    got = df.select(pe.ap_at_k("rel", "s", k=None, unscored="unretrieved")).item()
    assert got == pytest.approx((1 + 2 / 3 + 3 / 4) / 6, abs=1e-15)
    # denominator min(k, R) with k = 5: (1 + 2/3 + 3/4) / 5
    got = df.select(pe.ap_at_k("rel", "s", k=5, denominator="min_k", unscored="unretrieved")).item()
    assert got == pytest.approx((1 + 2 / 3 + 3 / 4) / 5, abs=1e-15)
    # unscored rows ignored by default: R = 3 -> (1 + 2/3 + 3/4) / 3
    assert df.select(pe.ap_at_k("rel", "s", k=None)).item() == pytest.approx(
        (1 + 2 / 3 + 3 / 4) / 3
    )


def test_dcg_wikipedia_example() -> None:
    df = pl.DataFrame({"rel": [3, 2, 3, 0, 1, 2], "s": [6, 5, 4, 3, 2, 1]})
    assert df.select(pe.dcg("rel", "s", k=None, gain="linear")).item() == pytest.approx(
        6.861, abs=5e-4
    )
    # two judged items (relevance 3 and 2) never ranked: ideal DCG@6 = 8.740
    unranked = pl.DataFrame({"rel": [3, 2], "s": [None, None]}, schema=df.schema)
    full = pl.concat([df, unranked])
    got = full.select(pe.ndcg("rel", "s", k=6, gain="linear", unscored="unretrieved")).item()
    assert got == pytest.approx(0.785, abs=5e-4)


def test_r_precision_worked_example() -> None:
    # relevant at ranks 1, 3 and 5, one more never ranked: R = 4, top 4 hold 2 -> 2/4;
    # the unranked row ignored: R = 3, top 3 hold 2 -> 2/3
    df = pl.DataFrame({"rel": [1, 0, 1, 0, 1, 1], "s": [6.0, 5.0, 4.0, 3.0, 2.0, None]})
    assert df.select(pe.r_precision("rel", "s", unscored="unretrieved")).item() == 0.5
    assert df.select(pe.r_precision("rel", "s")).item() == pytest.approx(2 / 3, abs=1e-15)
    # a list shorter than R still divides by R: 1 relevant ranked of 3 relevant
    short = pl.DataFrame({"rel": [1, 0, 2, 1], "s": [2.0, 1.0, None, None]})
    got = short.select(pe.r_precision("rel", "s", unscored="unretrieved")).item()
    assert got == pytest.approx(1 / 3, abs=1e-15)
    # the two top items tied, one relevant, R = 1: half the orders put it first
    tied = pl.DataFrame({"rel": [0, 1, 0], "s": [5.0, 5.0, 1.0]})
    assert tied.select(pe.r_precision("rel", "s")).item() == 0.5
    assert tied.select(pe.r_precision("rel", "s", ties="first")).item() == 0.0


def test_r_precision_matches_trec_eval_rprec() -> None:
    """pytrec_eval's Rprec per query: judged relevant items never retrieved count in R."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(17)
    rows, qrels, run = [], {}, {}
    for q in range(40):
        n_docs = int(rng.integers(1, 30))
        for d in range(n_docs):
            rel = int(rng.choice([0, 0, 1, 2]))
            retrieved = rng.random() < 0.8
            score = float(rng.random()) if retrieved else None  # distinct: no ties
            rows.append((f"q{q}", f"d{d}", rel, score))
            qrels.setdefault(f"q{q}", {})[f"d{d}"] = rel
            if retrieved:
                run.setdefault(f"q{q}", {})[f"d{d}"] = score
    df = pl.DataFrame(rows, schema=["q", "doc", "rel", "s"], orient="row")
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"Rprec"}).evaluate(run)
    per = df.group_by("q").agg(pe.r_precision("rel", "s", unscored="unretrieved"))
    got = dict(per.iter_rows())
    compared = 0
    for q, ref in expected.items():
        if not any(r >= 1 for r in qrels[q].values()):
            assert got[q] is None  # trec_eval scores 0 there; we give null (no_relevant)
            continue
        assert got[q] == pytest.approx(ref["Rprec"], abs=1e-12), q
        compared += 1
    assert compared > 20
    # trec_eval averages over the queries of the run, those without a relevant item as 0
    ranked = df.filter(pl.col("q").is_in(list(run)))
    opts = {"query": "q", "unscored": "unretrieved", "no_relevant": "zero"}
    zero = ranked.eval.r_precision("rel", "s", **opts)
    table = ranked.eval.ranking("rel", "s", metrics=["r_precision"], **opts)
    assert table.columns == ["n_queries", "n_excluded", "r_precision"]
    assert table["r_precision"].item() == pytest.approx(zero, abs=1e-15)
    assert zero == pytest.approx(np.mean([v["Rprec"] for v in expected.values()]), abs=1e-12)


def test_dcg_log_base_matches_sklearn_with_ties() -> None:
    from sklearn.metrics import dcg_score, ndcg_score

    rng = np.random.default_rng(23)
    for _ in range(6):
        n = int(rng.integers(2, 15))
        rel = rng.integers(0, 4, n).astype(float)
        rel[0] = max(rel[0], 1.0)
        score = np.round(rng.random(n), 1)  # ties: scikit-learn averages them too
        for base in (2, 3.5, 10, math.e):
            for k in (1, 4, None):
                expected = dcg_score([rel], [score], k=k, log_base=base)
                got = _value(
                    pe.dcg, rel.tolist(), score.tolist(), k=k, gain="linear", log_base=base
                )
                assert got == pytest.approx(expected, rel=1e-12), (base, k)
                # NDCG does not depend on the base
                got = _value(
                    pe.ndcg, rel.tolist(), score.tolist(), k=k, gain="linear", log_base=base
                )
                assert got == pytest.approx(ndcg_score([rel], [score], k=k), abs=1e-12)
    # the default is unchanged: base 2
    assert _value(pe.dcg, [3, 2, 3, 0], [4, 3, 2, 1], k=None, gain="linear") == pytest.approx(
        3 + 2 / math.log2(3) + 3 / 2
    )
    with pytest.raises(InvalidParameterError, match="log_base"):
        pe.dcg("r", "s", log_base=1)


def _trec_frames(seed: int, n_queries: int = 40):
    """A run and qrels as pytrec_eval takes them, and the long frame of both (the qrels
    left-joined to the run, plus the judged documents never retrieved): retrieved
    documents without a judgment have a null relevance, judged ones never retrieved a null
    score. Distinct scores (trec_eval breaks ties by document id)."""
    rng = np.random.default_rng(seed)
    rows, qrels, run = [], {}, {}
    for q in range(n_queries):
        for d in range(int(rng.integers(1, 30))):
            judged = rng.random() < 0.75
            rel = int(rng.choice([0, 0, 0, 1, 2])) if judged else None
            retrieved = rng.random() < 0.8
            score = float(rng.random()) if retrieved else None
            if rel is None and score is None:
                continue
            rows.append((f"q{q}", f"d{d}", rel, score))
            if rel is not None:
                qrels.setdefault(f"q{q}", {})[f"d{d}"] = rel
            if score is not None:
                run.setdefault(f"q{q}", {})[f"d{d}"] = score
    df = pl.DataFrame(rows, schema=["q", "doc", "rel", "s"], orient="row")
    both = df.filter(pl.col("q").is_in(list(qrels)) & pl.col("q").is_in(list(run)))
    return both, qrels, run


@pytest.mark.parametrize("unjudged", ["ignore", "nonrelevant"])
def test_bpref_matches_trec_eval(unjudged: str) -> None:
    """pytrec_eval's bpref per query: only judged documents count (an unjudged retrieved
    one changes nothing, ignored or ranked); judged documents never retrieved count in R
    and in the judged non-relevant ones."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    df, qrels, run = _trec_frames(29)
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)
    opts = {"unscored": "unretrieved", "unjudged": unjudged}
    got = dict(df.group_by("q").agg(pe.bpref("rel", "s", **opts)).iter_rows())
    compared = 0
    for q, ref in expected.items():
        if not any(r >= 1 for r in qrels[q].values()):
            assert got[q] is None  # trec_eval: 0; the shared rule: null (no_relevant)
            continue
        assert got[q] == pytest.approx(ref["bpref"], abs=1e-12), q
        compared += 1
    assert compared > 20
    mean = df.eval.bpref("rel", "s", query="q", no_relevant="zero", **opts)
    assert mean == pytest.approx(np.mean([v["bpref"] for v in expected.values()]), abs=1e-12)
    table = df.eval.ranking("rel", "s", query="q", metrics=["bpref"], no_relevant="zero", **opts)
    assert table["bpref"].item() == pytest.approx(mean, abs=1e-15)


def test_unjudged_nonrelevant_is_trec_evals_convention() -> None:
    """With unjudged="nonrelevant" and unscored="unretrieved", the long frame of a run
    left-joined to its qrels gives trec_eval's P, recall, ndcg_cut and map: unjudged
    retrieved documents keep their rank and are not relevant. F1 at k (ranx's f1) is the
    harmonic mean of pytrec_eval's P.k and recall.k."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    df, qrels, run = _trec_frames(31)
    measures = {"P.3,10", "recall.3,10", "ndcg_cut.5", "map"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    opts = {"unscored": "unretrieved", "unjudged": "nonrelevant", "no_relevant": "zero"}
    per = (
        df.group_by("q")
        .agg(
            pe.precision_at_k("rel", "s", k=3, **opts).alias("P_3"),
            pe.recall_at_k("rel", "s", k=10, **opts).alias("recall_10"),
            pe.ndcg("rel", "s", k=5, gain="linear", **opts).alias("ndcg_cut_5"),
            pe.ap_at_k("rel", "s", k=None, **opts).alias("map"),
            pe.f1_at_k("rel", "s", k=3, **opts).alias("f1_3"),
            pe.f1_at_k("rel", "s", k=10, **opts).alias("f1_10"),
        )
        .rows_by_key("q", named=True, unique=True)
    )
    for q, ref in expected.items():
        got = per[q]
        for name in ("P_3", "recall_10", "ndcg_cut_5", "map"):
            assert got[name] == pytest.approx(ref[name], abs=1e-12), (q, name)
        for k in (3, 10):
            p, r = ref[f"P_{k}"], ref[f"recall_{k}"]
            f1 = 2 * p * r / (p + r) if p + r else 0.0
            assert got[f"f1_{k}"] == pytest.approx(f1, abs=1e-12), (q, k)
    # ignored (the default), the unjudged documents are not ranked: a different P@3
    ignored = df.group_by("q").agg(pe.precision_at_k("rel", "s", k=3, unscored="unretrieved"))
    assert not np.allclose(
        ignored.sort("q")["precision_at_k"].to_numpy(),
        [expected[q]["P_3"] for q in sorted(ignored["q"])],
    )


def test_fallout_worked_example() -> None:
    # ranked [rel, unjudged, non-rel, rel, non-rel], one judged non-relevant never ranked:
    # non-relevant in the top 3 = 1 (the unjudged item is not judged non-relevant), judged
    # non-relevant = 3 with the unranked one
    df = pl.DataFrame(
        {"rel": [1, None, 0, 1, 0, 0], "s": [5.0, 4.0, 3.0, 2.0, 1.0, None]}, strict=False
    )
    opts = {"unscored": "unretrieved", "unjudged": "nonrelevant"}
    assert df.select(pe.fallout_at_k("rel", "s", k=3, **opts)).item() == pytest.approx(1 / 3)
    # unjudged ignored: the top 3 is [rel, non-rel, rel]
    assert df.select(pe.fallout_at_k("rel", "s", k=3, unscored="unretrieved")).item() == 1 / 3
    assert df.select(pe.fallout_at_k("rel", "s", k=4, unscored="unretrieved")).item() == 2 / 3
    # ranked items only: 2 judged non-relevant, both in the top 5
    assert df.select(pe.fallout_at_k("rel", "s", k=5)).item() == 1.0
    # no judged non-relevant item: null (0/0); tied, the expected count
    assert (
        pl.DataFrame({"rel": [1, 2], "s": [1, 2]}).select(pe.fallout_at_k("rel", "s")).item()
        is None
    )
    tied = pl.DataFrame({"rel": [1, 0, 0], "s": [1.0, 1.0, 1.0]})
    assert tied.select(pe.fallout_at_k("rel", "s", k=1)).item() == pytest.approx(1 / 3)


def test_rbp_worked_examples() -> None:
    """Hand-worked from Moffat & Zobel's definition (ranx is not installed here)."""
    # [rel, non-rel, rel, non-rel, rel], p = 0.8: 0.2 (1 + 0.64 + 0.4096) = 0.40992;
    # residual beyond the 5 items: 0.8^5 = 0.32768
    df = pl.DataFrame({"rel": [1, 0, 1, 0, 1], "s": [5.0, 4.0, 3.0, 2.0, 1.0]})
    assert df.select(pe.rbp("rel", "s")).item() == pytest.approx(0.40992, abs=1e-15)
    assert df.select(pe.rbp_residual("rel", "s")).item() == pytest.approx(0.32768, abs=1e-15)
    # a cutoff: the top 3 only, 0.2 (1 + 0.64) and 0.8^3
    assert df.select(pe.rbp("rel", "s", k=3)).item() == pytest.approx(0.328, abs=1e-15)
    assert df.select(pe.rbp_residual("rel", "s", k=3)).item() == pytest.approx(0.512, abs=1e-15)
    # p = 0.5 with an unjudged item at rank 2 and one at rank 4 (ranked):
    # RBP = 0.5 (1 + 0.25) = 0.625; residual = 0.5 (0.5 + 0.125) + 0.5^5 = 0.34375
    u = pl.DataFrame({"rel": [1, None, 1, None, 0], "s": [5.0, 4.0, 3.0, 2.0, 1.0]})
    opts = {"p": 0.5, "unjudged": "nonrelevant"}
    assert u.select(pe.rbp("rel", "s", **opts)).item() == 0.625
    assert u.select(pe.rbp_residual("rel", "s", **opts)).item() == 0.34375
    # the bounds hold: the RBP of any judgment of the unjudged items lies in between
    for fill in itertools.product([0, 1], repeat=2):
        judged = u.with_columns(pl.Series("rel", [1, fill[0], 1, fill[1], 0]))
        value = judged.select(pe.rbp("rel", "s", p=0.5)).item()
        assert 0.625 - 1e-15 <= value <= 0.625 + 0.34375 - 0.5**5 + 1e-15
    # two items tied at the top, one relevant: the mean of p^0 and p^1
    tied = pl.DataFrame({"rel": [0, 1], "s": [1.0, 1.0]})
    assert tied.select(pe.rbp("rel", "s", p=0.5)).item() == pytest.approx(0.5 * 0.75)
    # no relevant item: null, or with no_relevant="zero" 0 and the residual's own value
    none = pl.DataFrame({"rel": [0, None], "s": [2.0, 1.0]})
    assert none.select(pe.rbp("rel", "s")).item() is None
    zero = {"no_relevant": "zero", "unjudged": "nonrelevant", "p": 0.5}
    assert none.select(pe.rbp("rel", "s", **zero)).item() == 0.0
    assert none.select(pe.rbp_residual("rel", "s", **zero)).item() == 0.5 * 0.5 + 0.25
    with pytest.raises(InvalidParameterError, match="p must be"):
        pe.rbp("r", "s", p=1.0)


# ---------------------------------------------------------------------------------------
# Conventions: null / zero for queries without relevant items, NaN, nulls, dtypes
# ---------------------------------------------------------------------------------------


def _log(n_queries: int = 30, seed: int = 0, *, ties: bool = True) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, n_queries)
    q = np.repeat(np.arange(n_queries), sizes)
    n = len(q)
    score = rng.random(n)
    if ties:
        score = np.round(score, 1)
    return pl.DataFrame(
        {
            "q": q,
            "seg": q % 3,
            "item": np.arange(n),
            "rel": rng.integers(0, 3, n) * (rng.random(n) < 0.6),
            "s": score,
        }
    )


def test_no_relevant_item_is_null_and_excluded() -> None:
    df = pl.DataFrame({"q": [1, 1, 2, 2], "rel": [1, 0, 0, 0], "s": [0.2, 0.9, 0.5, 0.1]})
    per = df.group_by("q", maintain_order=True).agg(pe.mrr("rel", "s"))
    assert per["mrr"].to_list() == [0.5, None]
    assert df.eval.mrr("rel", "s", query="q") == 0.5
    assert df.eval.mrr("rel", "s", query="q", no_relevant="zero") == 0.25
    only_empty = df.filter(pl.col("q") == 2)
    with pytest.raises(UndefinedMetricError, match="no relevant item"):
        only_empty.eval.ndcg("rel", "s", query="q")
    wide = df.eval.ranking("rel", "s", query="q", k=[1])
    assert wide.select("n_queries", "n_excluded").row(0) == (2, 1)
    wide = df.eval.ranking("rel", "s", query="q", k=[1], no_relevant="zero")
    assert wide.select("n_queries", "n_excluded").row(0) == (2, 0)


def test_nan_gives_nan_and_null_rows_are_ignored() -> None:
    df = pl.DataFrame({"rel": [1, 0, 1], "s": [0.3, float("nan"), 0.1]})
    assert math.isnan(df.select(pe.ndcg("rel", "s")).item())
    with_nulls = pl.DataFrame({"rel": [1, None, 0, 1], "s": [0.9, 0.8, None, 0.1]})
    clean = pl.DataFrame({"rel": [1, 1], "s": [0.9, 0.1]})
    for fn in AVERAGE_METRICS.values():
        assert with_nulls.select(fn("rel", "s")).item() == clean.select(fn("rel", "s")).item()


def test_k_validation_at_build_time() -> None:
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InvalidParameterError, match="k must be a positive integer"):
            pe.ndcg("r", "s", k=bad)
    with pytest.raises(InvalidParameterError, match="ties"):
        pe.ndcg("r", "s", ties="random")
    with pytest.raises(InvalidParameterError, match="gain"):
        pe.dcg("r", "s", gain="cubic")
    with pytest.raises(InvalidParameterError, match="min_relevance"):
        pe.precision_at_k("r", "s", min_relevance=0)
    with pytest.raises(InvalidParameterError, match="denominator"):
        pe.ap_at_k("r", "s", denominator="R")


def test_k_larger_than_list_precision_divides_by_k() -> None:
    df = pl.DataFrame({"rel": [1, 0], "s": [2.0, 1.0]})
    assert df.select(pe.precision_at_k("rel", "s", k=10)).item() == 0.1
    assert df.select(pe.recall_at_k("rel", "s", k=10)).item() == 1.0
    assert df.select(pe.precision_at_k("rel", "s", k=None)).item() == 0.5


def test_negative_and_zero_scores_are_ranked() -> None:
    df = pl.DataFrame({"rel": [0, 1, 0], "s": [-1.0, 0.0, -5.0]})
    assert df.select(pe.mrr("rel", "s")).item() == 1.0


def test_float32_equals_float64() -> None:
    df = _log(20, 3, ties=False)
    f32 = df.with_columns(pl.col("s").cast(pl.Float32), pl.col("rel").cast(pl.Float32))
    f64 = df.with_columns(pl.col("s").cast(pl.Float32).cast(pl.Float64))
    a = f32.eval.ranking("rel", "s", query="q", k=[3, None])
    b = f64.eval.ranking("rel", "s", query="q", k=[3, None])
    for col in a.columns:
        assert a[col].item() == pytest.approx(b[col].item(), abs=1e-6)


# ---------------------------------------------------------------------------------------
# Namespace
# ---------------------------------------------------------------------------------------


def test_namespace_mean_per_query_and_by(collect) -> None:
    df = _log()
    per = df.group_by("q").agg(pe.ndcg("rel", "s", k=5), pe.ap_at_k("rel", "s", k=None)).sort("q")
    expected = per["ndcg"].mean()
    assert df.eval.ndcg("rel", "s", query="q", k=5) == pytest.approx(expected, abs=1e-12)
    assert df.eval.map("rel", "s", query="q") == pytest.approx(per["ap_at_k"].mean(), abs=1e-12)
    with pytest.warns(UndefinedMetricWarning, match="null for"):
        got = df.eval.ndcg("rel", "s", query="q", k=5, per_query=True)
    assert got.columns == ["q", "ndcg"]
    # the namespace's flat engine and the list.eval expressions agree to rounding
    np.testing.assert_allclose(got["ndcg"].to_numpy(), per["ndcg"].to_numpy(), atol=1e-12)
    by_seg = df.eval.ndcg("rel", "s", query="q", k=5, by="seg")
    manual = (
        df.group_by("seg", "q")
        .agg(pe.ndcg("rel", "s", k=5))
        .group_by("seg")
        .agg(pl.col("ndcg").mean())
        .sort("seg")
    )
    assert by_seg.columns == ["seg", "ndcg"]
    np.testing.assert_allclose(by_seg["ndcg"].to_numpy(), manual["ndcg"].to_numpy(), atol=1e-12)
    lazy = collect(df.lazy().eval.ndcg("rel", "s", query="q", k=5, by="seg"))
    assert_frame_equal(lazy, by_seg, abs_tol=1e-12)


def test_ranking_table_streaming_equals_eager(collect) -> None:
    df = _log(40, 7)
    eager = df.eval.ranking("rel", "s", query="q", k=[1, 5, None], by="seg")
    lazy = collect(df.lazy().eval.ranking("rel", "s", query="q", k=[1, 5, None], by="seg"))
    assert_frame_equal(lazy, eager, abs_tol=1e-12)
    assert {"ndcg@1", "map@5", "mrr", "precision@5", "hit_rate@1", "cg@5", "n_excluded"} <= set(
        eager.columns
    )
    # each column equals its single-metric method
    single = df.eval.precision_at_k("rel", "s", query="q", k=5, by="seg")
    np.testing.assert_allclose(eager["precision@5"], single["precision_at_k"], atol=1e-15)


def test_ranking_table_ties_first_has_err_and_11pt() -> None:
    df = _log(10, 2)
    wide = df.eval.ranking("rel", "s", query="q", k=[3], ties="first")
    assert {"err@3", "ap_11pt"} <= set(wide.columns)
    per = df.group_by("q").agg(pe.err("rel", "s", k=3, ties="first"))
    assert wide["err@3"].item() == pytest.approx(per["err"].mean(), abs=1e-15)


def test_ranking_table_err_average_and_cutoff_entries() -> None:
    df = _log(30, 5)
    wide = df.eval.ranking(
        "rel", "s", query="q", k=None, metrics=["ndcg@3", "map", "err@2", "mrr", "ndcg@3"]
    )
    assert wide.columns == ["n_queries", "n_excluded", "ndcg@3", "map", "err@2", "mrr"]
    per = df.group_by("q").agg(
        pe.ndcg("rel", "s", k=3),
        pe.ap_at_k("rel", "s", k=None),
        pe.err("rel", "s", k=2),
        pe.mrr("rel", "s"),
    )
    for col, name in [("ndcg@3", "ndcg"), ("map", "ap_at_k"), ("err@2", "err"), ("mrr", "mrr")]:
        assert wide[col].item() == pytest.approx(per[name].mean(), abs=1e-12), col
    # a plain entry takes every cutoff of k
    both = df.eval.ranking("rel", "s", query="q", k=[2, None], metrics=["err", "ndcg@3"])
    assert both.columns == ["n_queries", "n_excluded", "err@2", "err", "ndcg@3"]
    assert both["err@2"].item() == pytest.approx(wide["err@2"].item(), abs=1e-15)
    for bad in ("ndcg@0", "ndcg@x", "ap_11pt@3"):
        with pytest.raises(InvalidParameterError, match="cutoff|unknown"):
            df.eval.ranking("rel", "s", query="q", metrics=[bad], ties="first")


@pytest.mark.parametrize("k", [10, None])
def test_err_large_tie_block_against_hypergeometric(k: int | None) -> None:
    """A block of 40 tied items (7 of grade 2, stop 3/16) after 4 untied ones.

    With one stop probability p in the block, the first t places of a random order hold J
    relevant items, J hypergeometric (scipy), so the chance that they do not stop the user
    is E[(1 - p)^J]; the place-t stop probability is the difference of consecutive ones.
    """
    from scipy.stats import hypergeom

    head = [4.0, 0.0, 1.0, 0.0]
    block = [2.0] * 7 + [0.0] * 33
    rng = np.random.default_rng(3)
    rng.shuffle(block)
    rels = head + block
    scores = [9.0, 8.0, 7.0, 6.0] + [1.0] * len(block)
    stop = [(2.0**r - 1.0) / 16.0 for r in head]
    reach = float(np.prod([1.0 - x for x in stop]))
    expected = sum(x * np.prod([1.0 - y for y in stop[:i]]) / (i + 1) for i, x in enumerate(stop))
    p, m = 3.0 / 16.0, len(block)
    not_stopped = [hypergeom(m, 7, t).expect(lambda j: (1.0 - p) ** j) for t in range(m + 1)]
    for t in range(1, m + 1):
        rank = 4 + t
        if k is None or rank <= k:
            expected += reach * (not_stopped[t - 1] - not_stopped[t]) / rank
    got = _value(pe.err, rels, scores, k=k)
    assert got == pytest.approx(expected, abs=1e-12)
    # the namespace's engine agrees
    frame = pl.DataFrame({"q": 1, "r": rels, "s": scores})
    assert frame.eval.err("r", "s", query="q", k=k) == pytest.approx(expected, abs=1e-12)


def test_baseline_is_all_items_tied() -> None:
    df = _log(15, 4)
    wide = df.eval.ranking("rel", "s", query="q", k=[5], baseline=True)
    constant = df.with_columns(pl.lit(1.0).alias("s"))
    base = constant.eval.ranking("rel", "s", query="q", k=[5])
    for col in ("ndcg@5", "map@5", "mrr@5", "precision@5"):
        assert wide[f"{col}_baseline"].item() == pytest.approx(base[col].item(), abs=1e-15)
    # the constant predictor is the average over random orders: below a good model here
    assert wide["ndcg@5_baseline"].item() < 1.0


def test_validation_errors_name_the_column() -> None:
    df = _log(5)
    with pytest.raises(DataValidationError, match='"nope"'):
        df.eval.ndcg("rel", "nope", query="q")
    with pytest.raises(DataValidationError, match='"qq"'):
        df.eval.ndcg("rel", "s", query="qq")
    with pytest.raises(DataValidationError, match='column "s" must hold finite'):
        df.with_columns(pl.lit(float("inf")).alias("s")).eval.ndcg("rel", "s", query="q")
    with pytest.raises(DataValidationError, match='column "rel" must hold relevance'):
        df.with_columns(pl.lit(-1).alias("rel")).eval.mrr("rel", "s", query="q")
    with pytest.raises(DataValidationError, match='column "s" .* numeric'):
        df.with_columns(pl.col("s").cast(pl.String)).eval.mrr("rel", "s", query="q")
    with pytest.raises(InvalidParameterError, match="query"):
        df.eval.ndcg("rel", "s", query=None)
    lazy = df.lazy().with_columns(pl.lit(-1).alias("rel")).eval.mrr("rel", "s", query="q")
    with pytest.raises(Exception, match="relevance grades"):
        lazy.collect()


def test_duplicated_item_names_query_and_item() -> None:
    df = pl.DataFrame(
        {"q": [1, 1, 2, 2], "item": ["a", "b", "c", "c"], "rel": [1, 0, 1, 0], "s": [1, 2, 3, 4]}
    )
    with pytest.raises(DataValidationError, match='"item" must not repeat.*query 2 item c'):
        df.eval.ndcg("rel", "s", query="q", item="item")
    with pytest.raises(DataValidationError, match="query 2 item c"):
        df.eval.ranking("rel", "s", query="q", item="item")
    assert df.eval.ndcg("rel", "s", query="q", item="item", validate=False) is not None


def test_empty_frame() -> None:
    df = pl.DataFrame(schema={"q": pl.Int64, "rel": pl.Int64, "s": pl.Float64})
    with pytest.raises(UndefinedMetricError):
        df.eval.ndcg("rel", "s", query="q")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = df.with_columns(seg=pl.col("q")).eval.ndcg("rel", "s", query="q", by="seg")
    assert out.height == 0


def test_registry_entries() -> None:
    table = pe.metrics().filter(pl.col("task") == "ranking")
    assert {
        "ndcg",
        "dcg",
        "precision_at_k",
        "recall_at_k",
        "hit_rate_at_k",
        "ap_at_k",
        "ap_11pt",
        "mrr",
        "reciprocal_rank",
        "err",
        "cg",
        "r_precision",
    } <= set(table["name"])
    # the method takes query= and the metric's own options
    import inspect

    params = inspect.signature(pl.DataFrame({"a": [1]}).eval.ndcg).parameters
    assert {"query", "per_query", "by", "item", "validate", "k", "ties"} <= set(params)


# ---------------------------------------------------------------------------------------
# Invariances
# ---------------------------------------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), min_size=1, max_size=12),
    st.randoms(use_true_random=False),
    st.sampled_from([1, 3, None]),
)
def test_ties_average_is_independent_of_row_order(rows, rnd, k) -> None:
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    a = pl.DataFrame(rows, schema=["rel", "s"], orient="row")
    b = pl.DataFrame(shuffled, schema=["rel", "s"], orient="row")
    exprs = [fn("rel", "s", **_cut(name, k)) for name, fn in AVERAGE_METRICS.items()]
    ra, rb = a.select(exprs).row(0), b.select(exprs).row(0)
    for x, y in zip(ra, rb, strict=True):
        assert (x is None and y is None) or x == pytest.approx(y, abs=1e-12)


# ---------------------------------------------------------------------------------------
# The namespace against the per-query expressions, for every registered ranking metric
# ---------------------------------------------------------------------------------------


def _engine_log() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    sizes = rng.integers(0, 12, 120)
    q = np.repeat(np.arange(len(sizes)), sizes)
    n = len(q)
    return pl.DataFrame(
        {
            "q": q,
            "rel": rng.integers(0, 4, n) * (rng.random(n) < 0.5),
            "s": np.where(np.arange(n) % 13 == 0, np.nan, np.round(rng.random(n), 1)),
        }
    ).with_columns(pl.col("s").fill_nan(None))


def _option_sets(info, ties: str, unscored: str) -> list[dict]:
    """Options for a metric: each cutoff, then every option it takes set off its default."""
    params = info.signature.parameters
    base = {"ties": ties, "unscored": unscored}
    if "k" not in params:
        sets = [base]
    else:
        sets = [{**base, "k": k} for k in (1, 3, None)]
    other = {
        "gain": "linear",
        "denominator": "min_k",
        "max_relevance": 3.0,
        "log_base": 10.0,
        "p": 0.5,
        "unjudged": "nonrelevant",
    }
    changed = {name: value for name, value in other.items() if name in params}
    sets.append({**sets[-1], **changed, "min_relevance": 2, "no_relevant": "zero"})
    return sets


@pytest.mark.parametrize("ties", ["average", "first"])
@pytest.mark.parametrize("unscored", ["ignore", "unretrieved"])
def test_namespace_equals_expressions(ties: str, unscored: str) -> None:
    """df.eval.<metric>(per_query=True) and df.eval.ranking(per_query=True) give, for every
    registered ranking metric and option, the metric's expression in group_by(query)."""
    df = _engine_log()
    metrics = [info for info in REGISTRY.values() if info.task == "ranking"]
    assert {"ndcg", "map", "err", "ap_11pt", "r_precision"} <= {i.name for i in metrics}
    exprs, expected_cols = [], []
    for info in metrics:
        for options in _option_sets(info, ties, unscored):
            expected = df.group_by("q").agg(info.fn("rel", "s", **options)).sort("q")
            method = getattr(df.eval, info.name)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                got = method("rel", "s", query="q", per_query=True, **options).sort("q")
            assert_frame_equal(got, expected, abs_tol=1e-12, check_exact=False)
            if info.name != "map" and len(options) <= 3:  # the table's (map: ap_at_k's)
                short = info.extra.get("short", info.name)
                col = short + ("" if options.get("k") is None else f"@{options['k']}")
                exprs.append(info.fn("rel", "s", **options).alias(col))
                expected_cols.append(col)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = df.eval.ranking(
            "rel",
            "s",
            query="q",
            k=[1, 3, None],
            ties=ties,
            unscored=unscored,
            metrics=sorted({c.partition("@")[0] for c in expected_cols}),
            per_query=True,
        )
    assert sorted(table.columns) == sorted(["q", *expected_cols])
    expected = df.group_by("q").agg(exprs).sort("q")
    assert_frame_equal(table.sort("q").select(expected.columns), expected, abs_tol=1e-12)


def test_expressions_lazy_streaming_and_over(collect) -> None:
    """The expressions in a lazy group_by (each engine) and inside over() give the eager values."""
    df = _log(60, 21)
    exprs = [fn("rel", "s", **_cut(name, 3)) for name, fn in AVERAGE_METRICS.items()]
    eager = df.group_by("q").agg(exprs).sort("q")
    lazy = collect(df.lazy().group_by("q").agg(exprs)).sort("q")
    assert_frame_equal(lazy, eager, abs_tol=1e-12)
    over = df.select("q", pe.ndcg("rel", "s", k=3).over("q")).unique("q").sort("q")
    np.testing.assert_allclose(over["ndcg"], eager["ndcg"], atol=1e-12)


def test_ranking_per_query_baseline_and_unretrieved(collect) -> None:
    df = _log(25, 9).with_columns(
        pl.when(pl.col("item") % 7 == 0).then(None).otherwise(pl.col("s")).alias("s")
    )
    opts = {"query": "q", "k": [2, None], "unscored": "unretrieved", "baseline": True}
    with pytest.warns(UndefinedMetricWarning):
        per = df.eval.ranking("rel", "s", per_query=True, **opts)
    exprs = [
        pe.ndcg("rel", "s", k=2, unscored="unretrieved").alias("ndcg@2"),
        pe.recall_at_k("rel", "s", k=None, unscored="unretrieved").alias("recall"),
        pe.ndcg("rel", pl.col("s") * 0.0, k=2, unscored="unretrieved").alias("ndcg@2_baseline"),
        pe.mrr("rel", pl.col("s") * 0.0, unscored="unretrieved").alias("mrr_baseline"),
    ]
    expected = df.group_by("q").agg(exprs).sort("q")
    assert_frame_equal(per.select(expected.columns), expected, abs_tol=1e-12)
    lazy = collect(df.lazy().eval.ranking("rel", "s", by="seg", **opts))
    eager = df.eval.ranking("rel", "s", by="seg", **opts)
    assert_frame_equal(lazy, eager, abs_tol=1e-12)


def test_query_weights_are_repetition() -> None:
    df = _log(12, 5)
    weights = pl.DataFrame({"q": np.arange(12), "w": [0, 1, 2, 3] * 3})
    weighted = df.join(weights, on="q")
    got = weighted.eval.ranking("rel", "s", query="q", k=[3], weight="w")
    # integer query weights = repeating each query that many times
    repeated = pl.concat(
        [
            weighted.filter(pl.col("w") >= r).with_columns(pl.col("q") + 1000 * r)
            for r in range(1, 4)
        ]
    )
    expected = repeated.eval.ranking("rel", "s", query="q", k=[3])
    for col in ("ndcg@3", "map@3", "mrr@3", "precision@3"):
        assert got[col].item() == pytest.approx(expected[col].item(), abs=1e-12)
    single = weighted.eval.ndcg("rel", "s", query="q", k=3, weight="w")
    assert single == pytest.approx(expected["ndcg@3"].item(), abs=1e-12)
    bad = weighted.with_columns(pl.int_range(pl.len()).cast(pl.Float64).alias("w"))
    with pytest.raises(DataValidationError, match='"w" must hold one weight per query'):
        bad.eval.ndcg("rel", "s", query="q", weight="w")
    zero = weighted.with_columns(pl.lit(0.0).alias("w"))
    with pytest.raises(UndefinedMetricError):  # all weights zero: as an empty frame
        zero.eval.ndcg("rel", "s", query="q", weight="w")
    negative = weighted.with_columns(pl.lit(-1.0).alias("w"))
    with pytest.raises(DataValidationError, match='"w" must hold non-negative'):
        negative.eval.ndcg("rel", "s", query="q", weight="w")


def test_multi_column_query_and_expression_inputs() -> None:
    df = _log(20, 6).with_columns((pl.col("q") // 2).alias("a"), (pl.col("q") % 2).alias("b"))
    by_two = df.eval.ranking("rel", pl.col("s") * 2.0, query=["a", "b"], k=[3])
    by_one = df.eval.ranking("rel", "s", query="q", k=[3])
    assert_frame_equal(by_two, by_one, abs_tol=1e-12)
    per = df.eval.mrr("rel", "s", query=["a", "b"], per_query=True, no_relevant="zero")
    assert per.columns == ["a", "b", "mrr"] and per.height == 20
    with pytest.raises(InvalidParameterError, match="unknown ranking metric"):
        df.eval.ranking("rel", "s", query="q", metrics=["nope"])
    # 11-point AP: in the default table with ties="first"; with "average" when named
    assert "ap_11pt" not in df.eval.ranking("rel", "s", query="q").columns
    assert "ap_11pt" in df.eval.ranking("rel", "s", query="q", ties="first").columns
    named = df.eval.ranking("rel", "s", query="q", metrics=["ap_11pt"], k=None)
    mean = df.group_by("q").agg(pe.ap_11pt("rel", "s"))["ap_11pt"].mean()
    assert named["ap_11pt"].item() == pytest.approx(mean, abs=1e-12)


def test_long_frames_are_evaluated_in_slices_of_queries(monkeypatch) -> None:
    from polars_eval.tasks import ranking as ranking_task

    df = _log(60, 12)
    kw = {"query": "q", "k": [2, None], "by": "seg", "baseline": True}
    per = {"query": "q", "per_query": True, "no_relevant": "zero"}
    whole = df.eval.ranking("rel", "s", **kw)
    per_query = df.eval.ndcg("rel", "s", **per)
    monkeypatch.setattr(ranking_task, "PARTITION_ROWS", 50)
    assert df.height > 3 * 50
    assert_frame_equal(df.eval.ranking("rel", "s", **kw), whole, abs_tol=1e-12)
    assert_frame_equal(df.eval.ndcg("rel", "s", **per), per_query)
    bad = df.with_columns(pl.when(pl.col("item") == 3).then(np.nan).otherwise("s").alias("s"))
    with pytest.raises(DataValidationError, match='"s"'):
        bad.eval.ranking("rel", "s", **kw)


def test_bare_expressions_rank_infinite_scores() -> None:
    # BAD_INPUTS 3: the namespace rejects ±inf scores; a bare expression ranks them
    inf = float("inf")
    df = pl.DataFrame({"rel": [0, 2, 0, 1], "s": [inf, 1.0, -inf, inf]})
    finite = pl.DataFrame({"rel": [0, 2, 0, 1], "s": [9.0, 1.0, -9.0, 9.0]})
    for name, fn in AVERAGE_METRICS.items():
        expr = fn("rel", "s", **_cut(name, 3))
        assert df.select(expr).item() == pytest.approx(finite.select(expr).item(), abs=1e-15)


def test_ranking_table_options_of_the_new_metrics() -> None:
    """df.eval.ranking passes p=, log_base= and unjudged= to every metric it computes; the
    §12 metrics come when named."""
    df = _log(30, 13).with_columns(
        pl.when(pl.col("item") % 5 == 0).then(None).otherwise(pl.col("rel")).alias("rel")
    )
    opts = {"p": 0.5, "unjudged": "nonrelevant"}
    default = df.eval.ranking("rel", "s", query="q", k=[3])
    assert not {"f1@3", "fallout@3", "rbp@3", "rbp_residual@3", "bpref"} & set(default.columns)
    names = ["f1", "fallout", "bpref", "rbp", "rbp_residual", "dcg", "precision"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = df.eval.ranking(
            "rel", "s", query="q", k=[3, None], metrics=names, log_base=10.0, per_query=True, **opts
        )
    exprs = [
        pe.f1_at_k("rel", "s", k=3, **{"unjudged": "nonrelevant"}).alias("f1@3"),
        pe.fallout_at_k("rel", "s", k=None, unjudged="nonrelevant").alias("fallout"),
        pe.bpref("rel", "s", unjudged="nonrelevant").alias("bpref"),
        pe.rbp("rel", "s", k=3, **opts).alias("rbp@3"),
        pe.rbp_residual("rel", "s", k=None, **opts).alias("rbp_residual"),
        pe.dcg("rel", "s", k=3, log_base=10.0, unjudged="nonrelevant").alias("dcg@3"),
        pe.precision_at_k("rel", "s", k=None, unjudged="nonrelevant").alias("precision"),
    ]
    expected = df.group_by("q").agg(exprs).sort("q")
    assert_frame_equal(table.sort("q").select(expected.columns), expected, abs_tol=1e-12)
    with pytest.raises(InvalidParameterError, match="log_base"):
        df.eval.ranking("rel", "s", query="q", log_base=0.5)


def test_null_weight_row_is_not_an_unjudged_item() -> None:
    """A row with a null query weight is ignored (BAD_INPUTS row 1), also with
    unjudged="nonrelevant" (it does not become an unjudged ranked item)."""
    df = pl.DataFrame({"q": 1, "rel": [1, 0, 1], "s": [1.0, 3.0, 2.0], "w": [1.0, 1.0, None]})
    opts = {"query": "q", "p": 0.5, "unjudged": "nonrelevant"}
    got = df.eval.rbp("rel", "s", weight="w", **opts)
    assert got == df.head(2).eval.rbp("rel", "s", **opts) == 0.5 * 0.5
    assert df.eval.rbp_residual("rel", "s", weight="w", **opts) == 0.25
