"""SPEC §8 bootstrap and paired bootstrap: determinism, the AUC kernel, resampling design,
undefined resamples, coverage. Oracles: numpy percentiles of the replicates, scikit-learn
``roc_auc_score`` with count weights, the binormal model's known AUC."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import binary_data
from scipy import stats
from sklearn.metrics import roc_auc_score

import polars_eval as pe
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.stats import bootstrap as B

COLUMNS = ["metric", "estimate", "lower", "upper", "std", "n_undefined"]


def data(n: int = 400, seed: int = 0) -> pl.DataFrame:
    df = binary_data(n, seed=seed, tied=True, groups=3)
    rng = np.random.default_rng(seed + 100)
    return df.with_columns(
        pl.Series("q", rng.integers(0, 40, n)),
        pl.Series("fw", rng.random(n) * 2.0),
    )


def test_same_seed_same_result_and_seed_matters() -> None:
    df = data()
    exprs = [pe.auc("y", "score"), pe.logloss("y", "score"), pe.recall("y", "score")]
    a = df.eval.bootstrap(exprs, n_resamples=120, seed=7, by="g")
    b = df.eval.bootstrap(exprs, n_resamples=120, seed=7, by="g")
    c = df.eval.bootstrap(exprs, n_resamples=120, seed=8, by="g")
    assert a.equals(b)
    assert not a.equals(c)
    assert a.columns == ["g", *COLUMNS]
    assert a["metric"].to_list() == ["auc", "logloss", "recall"] * 3


def test_independent_of_threads_chunks_and_partitioning(monkeypatch: pytest.MonkeyPatch) -> None:
    df = data()
    exprs = [pe.auc("y", "score", weight="w"), pe.brier("y", "score")]
    base = df.eval.bootstrap(exprs, n_resamples=60, seed=1, by="g", group="q")
    monkeypatch.setattr(B, "CHUNK_ROWS", 500)  # one resample per chunk
    monkeypatch.setattr(B, "_threads", lambda: 1)
    assert df.eval.bootstrap(exprs, n_resamples=60, seed=1, by="g", group="q").equals(base)
    monkeypatch.setattr(B, "CHUNK_ROWS", 10**9)  # one chunk; kernel blocks of 7 resamples
    monkeypatch.setattr(B, "BLOCK_CELLS", 7 * 400)
    assert df.eval.bootstrap(exprs, n_resamples=60, seed=1, by="g", group="q").equals(base)
    # a lazy frame made of partitions, collected on the streaming engine
    parts = pl.concat([df.slice(0, 150).lazy(), df.slice(150, 100).lazy(), df.slice(250).lazy()])
    lazy = parts.eval.bootstrap(exprs, n_resamples=60, seed=1, by="g", group="q")
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect(engine="streaming").equals(base)


def assert_kernels_equal_expression_path(
    df: pl.DataFrame, items: list[tuple[str, pl.Expr]], by: list[str], group: list[str], method: str
) -> None:
    """Every resample's values by the kernels = by the expressions on the repeated rows."""
    args = {"by": by, "group": group, "n_resamples": 25, "method": method, "seed": 3}
    fast, _ = B.replicates(df, items, **args)
    slow, _ = B.replicates(df, items, **args, fast=False)
    for name, _ in items:
        np.testing.assert_allclose(
            fast[name].to_numpy(), slow[name].to_numpy(), rtol=1e-12, atol=1e-14, err_msg=name
        )


@pytest.mark.parametrize("method", ["multinomial", "poisson"])
@pytest.mark.parametrize(("by", "group"), [([], []), (["g"], []), ([], ["q"]), (["g"], ["q"])])
def test_auc_kernel_equals_expression_path(method: str, by: list[str], group: list[str]) -> None:
    df = data(300, seed=2)
    items = B.named_items(
        [
            pe.auc("y", "score"),
            pe.gini("y", "score", weight="fw"),
            pe.auc("y", "score", weight="w").alias("auc_w"),
        ]
    )
    assert all(B.recognize(e) is not None for _, e in items)  # an alias is still an AUC
    assert_kernels_equal_expression_path(df, items, by, group, method)


def chi2_pvalue(observed: dict[tuple[int, ...], int], pmf: dict[tuple[int, ...], float]) -> float:
    """Pearson's chi-square p-value of the observed outcome counts against a pmf."""
    keys = sorted(pmf)
    assert set(observed) <= set(keys)
    freq = np.array([observed.get(k, 0) for k in keys], dtype=float)
    expected = np.array([pmf[k] for k in keys]) * freq.sum()
    return float(stats.chisquare(freq, expected * freq.sum() / expected.sum()).pvalue)


def outcomes(total: int, units: int) -> list[tuple[int, ...]]:
    """Every count vector of ``units`` non-negative counts summing to ``total``."""
    if units == 1:
        return [(total,)]
    return [(k, *rest) for k in range(total + 1) for rest in outcomes(total - k, units - 1)]


def test_multinomial_counts_have_the_multinomial_distribution() -> None:
    # the classical bootstrap: n draws with replacement = multinomial(n, 1/n each); oracle:
    # scipy's multinomial pmf over every possible count vector
    df = pl.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]})
    design, _, _ = B.make_design(df, [], [], "multinomial", 9)
    seen = Counter(tuple(int(c) for c in design.counts(r)) for r in range(6000))
    pmf = {k: stats.multinomial.pmf(k, 4, [0.25] * 4) for k in outcomes(4, 4)}
    assert chi2_pvalue(seen, pmf) > 0.001
    # by=: n_g draws within every stratum, independently (strata of 2 and 3 rows, mixed)
    df = pl.DataFrame({"g": [1, 0, 1, 0, 1]})
    design, stratum, _ = B.make_design(df, ["g"], [], "multinomial", 9)
    draws = np.stack([design.counts(r) for r in range(6000)])
    for g, size in ((0, 2), (1, 3)):
        part = Counter(tuple(int(c) for c in row) for row in draws[:, stratum == g])
        pmf = {k: stats.multinomial.pmf(k, size, [1 / size] * size) for k in outcomes(size, size)}
        assert chi2_pvalue(part, pmf) > 0.001
    # n = 60: every count is Binomial(60, 1/60)
    design, _, _ = B.make_design(pl.DataFrame({"x": np.zeros(60)}), [], [], "multinomial", 3)
    values = np.concatenate([design.counts(r) for r in range(400)]).astype(int)
    observed = Counter((min(int(v), 5),) for v in values)
    binom = stats.binom(60, 1 / 60)
    pmf = {(k,): binom.pmf(k) for k in range(5)} | {(5,): binom.sf(4)}
    assert chi2_pvalue(observed, pmf) > 0.001


def test_count_generator_is_seeded_per_resample() -> None:
    df = data(200, seed=4)
    design, _, _ = B.make_design(df, [], [], "multinomial", 9)
    again, _, _ = B.make_design(df, [], [], "multinomial", 9)
    other, _, _ = B.make_design(df, [], [], "multinomial", 10)
    for r in range(4):
        np.testing.assert_array_equal(design.counts(r), again.counts(r))
        assert design.counts(r).sum() == 200
        assert not np.array_equal(design.counts(r), other.counts(r))
    block = design.unit_counts_block(range(2, 5))
    np.testing.assert_array_equal(block, np.stack([design.counts(r) for r in range(2, 5)]))
    # by=: n_g draws within every stratum g; poisson: counts of mean one
    design, stratum, _ = B.make_design(df, ["g"], [], "multinomial", 9)
    sizes = np.bincount(stratum)
    for r in range(40):
        np.testing.assert_array_equal(np.bincount(stratum, weights=design.counts(r)), sizes)
    design, _, _ = B.make_design(df, [], [], "poisson", 9)
    assert design.unit_counts_block(range(50)).mean() == pytest.approx(1.0, abs=0.02)


def test_to_multinomial_removes_a_uniform_subset_and_adds_uniform_draws() -> None:
    # counts (40, 40) cut to 2 draws: the 2 kept of the 80 are a uniform subset, so the
    # first unit keeps a hypergeometric number of them (removing nearly all draws is the
    # slow extreme of the rejection sampler: 40 keeps the test at seconds, 255 took minutes)
    rng = np.random.default_rng(0)
    kept = Counter()
    for _ in range(3000):
        counts = np.array([40, 40], dtype=np.uint8)
        out = B.to_multinomial(rng, counts, np.array([0]), np.array([2]))
        assert out.sum() == 2
        kept[(int(out[0]),)] += 1
    hyper = stats.hypergeom(80, 40, 2)
    assert chi2_pvalue(kept, {(k,): hyper.pmf(k) for k in range(3)}) > 0.001
    # two strata at once: one too many draws (remove 7), one too few (add 2)
    counts = np.array([5, 4, 0, 0, 1], dtype=np.uint8)
    out = B.to_multinomial(rng, counts, np.array([0, 2]), np.array([2, 3]))
    assert out[:2].sum() == 2 and out[2:].sum() == 3 and out[4] >= 1
    # a count past 255 (possible, if never seen) leaves uint8
    out = B._add_at(np.array([250, 3], dtype=np.uint8), np.zeros(10, dtype=np.int64))
    assert out.tolist() == [260, 3] and out.dtype == np.int64


def sklearn_auc_per_stratum(
    y: np.ndarray, s: np.ndarray, w: np.ndarray, stratum: np.ndarray, n_strata: int
) -> list[float]:
    """scikit-learn's weighted AUC in every stratum (NaN where one class has no mass)."""
    out = []
    for g in range(n_strata):
        keep = (stratum == g) & (w > 0)
        if len(np.unique(y[keep])) < 2:
            out.append(math.nan)
        else:
            out.append(roc_auc_score(y[keep], s[keep], sample_weight=w[keep]))
    return out


@pytest.mark.parametrize("method", ["multinomial", "poisson"])
@pytest.mark.parametrize(("by", "group"), [([], []), (["g"], []), (["g"], ["q"])])
@pytest.mark.parametrize("scores", ["tied", "distinct"])
@pytest.mark.parametrize("weight", [None, "fw"])
def test_every_resample_matches_sklearn_with_count_weights(
    method: str, by: list[str], group: list[str], scores: str, weight: str | None
) -> None:
    # the kernel's AUC of resample r = scikit-learn's AUC with sample_weight = the counts
    # the count generator draws for r (times the row weights)
    p2 = np.round(np.random.default_rng(2).random(240), 2)  # a second model, some ties
    df = data(240, seed=4).with_columns(p2=pl.Series(p2) + pl.col("y") * 0.1)
    if scores == "distinct":  # distinct scores but three positive-negative ties
        score, g = np.random.default_rng(1).random(240), df["g"].to_numpy().copy()
        pos, neg = np.flatnonzero(df["y"] == 1)[:3], np.flatnonzero(df["y"] == 0)[:3]
        score[pos], g[pos] = score[neg], g[neg]
        df = df.with_columns(pl.Series("score", score), pl.Series("g", g))
    items = B.named_items([pe.auc("y", "score", weight=weight), pe.auc("y", "p2").alias("p2")])
    design, kernels, stratum, _ = B.resampling(
        df, items, by=by, group=group, method=method, seed=11
    )
    kernel = kernels["auc"]
    assert (kernel.bin_of is not None) == (scores == "tied" and weight is None)
    assert (kernel.unit_bin is not None) == (kernel.bin_of is not None and not group)
    assert kernel.ties
    reps, _ = B.replicates(df, items, by=by, group=group, n_resamples=12, method=method, seed=11)
    y, s, s2 = df["y"].to_numpy(), df["score"].to_numpy(), df["p2"].to_numpy()
    w = np.ones(df.height) if weight is None else df[weight].to_numpy()
    for name, score, weights in (("auc", s, w), ("p2", s2, np.ones(df.height))):
        got = reps[name].to_numpy().reshape(12, design.n_strata)
        for r in range(12):
            counts = design.counts(r)
            expected = sklearn_auc_per_stratum(y, score, weights * counts, stratum, len(got[r]))
            np.testing.assert_allclose(got[r], expected, rtol=1e-12)


def state_data(n: int = 300, seed: int = 2) -> pl.DataFrame:
    """``data`` with a regression pair and a null score every 17th row."""
    df = data(n, seed=seed).with_columns(a=pl.col("score") * 3, b=pl.col("fw"))
    every_17th = pl.int_range(pl.len()) % 17 == 0
    return df.with_columns(pl.when(every_17th).then(None).otherwise(pl.col("score")).alias("score"))


STATE_METRICS = [
    pe.logloss("y", "score"),
    pe.brier("y", "score", weight="fw"),
    pe.accuracy("y", "score"),
    pe.mcc("y", "score", weight="w"),
    pe.f1("y", "score"),
    pe.max_error("a", "b"),  # a maximum with many values
    pe.mse("a", "b", weight="fw"),
]


@pytest.mark.parametrize("method", ["multinomial", "poisson"])
@pytest.mark.parametrize(("by", "group"), [([], []), (["g"], []), ([], ["q"]), (["g"], ["q"])])
def test_state_kernel_equals_expression_path(method: str, by: list[str], group: list[str]) -> None:
    df = state_data()
    items = B.named_items(STATE_METRICS)
    _, kernels, _, _ = B.resampling(df, items, by=by, group=group, method=method, seed=3)
    assert {name for name, k in kernels.items() if isinstance(k, B.StateKernel)} == {
        name for name, _ in items
    }
    assert_kernels_equal_expression_path(df, items, by, group, method)


def curve_metrics() -> list[pl.Expr]:
    """Built in the test: an unweighted sort-based metric runs a Python function, so its
    expression has no serialized digest, and the bootstrap knows it only while it is one
    of the last ``origin.PENDING_SIZE`` metric calls (a module-level list is older than
    the hundreds of expressions the tests before this one build)."""
    return [
        pe.average_precision("y", "score"),
        pe.pr_auc("y", "score", weight="fw"),
        pe.ks("y", "score", weight="w"),
        pe.max_f1("y", "score"),
        pe.max_mcc("y", "score", weight="fw"),
        pe.max_accuracy("y", "score"),
        pe.ece("y", "score"),
    ]


@pytest.mark.parametrize("method", ["multinomial", "poisson"])
@pytest.mark.parametrize(("by", "group"), [([], []), (["g"], []), ([], ["q"]), (["g"], ["q"])])
@pytest.mark.parametrize("scores", ["tied", "distinct"])
def test_curve_kernel_equals_expression_path(
    method: str, by: list[str], group: list[str], scores: str
) -> None:
    df = state_data()
    if scores == "distinct":
        df = df.with_columns(pl.col("score") + pl.Series(np.arange(300) * 1e-6))
    items = B.named_items(curve_metrics())
    _, kernels, _, _ = B.resampling(df, items, by=by, group=group, method=method, seed=3)
    assert all(isinstance(kernels.get(name), B.CurveKernel) for name, _ in items)
    assert all(k.singletons == (scores == "distinct") for k in kernels.values())  # type: ignore[union-attr]
    assert_kernels_equal_expression_path(df, items, by, group, method)


def test_curve_kernel_resamples_match_sklearn_with_count_weights() -> None:
    # average precision of resample r = scikit-learn's with sample_weight = the counts
    from sklearn.metrics import average_precision_score

    df = data(240, seed=6)
    items = B.named_items([pe.average_precision("y", "score", weight="fw")])
    design, _, stratum, _ = B.resampling(
        df, items, by=["g"], group=[], method="multinomial", seed=2
    )
    reps, _ = B.replicates(
        df, items, by=["g"], group=[], n_resamples=6, method="multinomial", seed=2
    )
    y, s, fw = (df[c].to_numpy() for c in ("y", "score", "fw"))
    for r in range(6):
        w = design.counts(r) * fw
        for g in range(design.n_strata):
            at = (stratum == g) & (w > 0)
            expected = average_precision_score(y[at], s[at], sample_weight=w[at])
            got = reps.filter(pl.col(B.R_COL) == r).row(g, named=True)["average_precision"]
            assert got == pytest.approx(expected, rel=1e-12)


def test_state_kernel_on_strata_left_empty() -> None:
    # Poisson counts can leave a one-row stratum out of a resample: no value there, as on
    # the repeated rows (where the group is absent)
    df = pl.DataFrame({"g": [0, 1, 2, 2], "y": [1, 0, 1, 0], "p": [0.9, 0.2, 0.6, 0.4]})
    items = B.named_items([pe.brier("y", "p"), pe.accuracy("y", "p")])
    args = {"by": ["g"], "group": [], "n_resamples": 40, "method": "poisson", "seed": 1}
    fast, _ = B.replicates(df, items, **args)
    slow, _ = B.replicates(df, items, **args, fast=False)
    for name in ("brier", "accuracy"):
        np.testing.assert_allclose(fast[name].to_numpy(), slow[name].to_numpy(), rtol=1e-12)
    assert fast["brier"].is_nan().sum() > 5


@pytest.mark.parametrize(("by", "group"), [([], []), (["g"], []), (["g"], ["q"])])
def test_state_kernel_resamples_match_sklearn_with_count_weights(
    by: list[str], group: list[str]
) -> None:
    # resample r of log loss, Brier and accuracy = scikit-learn's with sample_weight = the
    # counts the count generator draws for r (times the row weights)
    from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

    df = state_data(240, seed=5).with_columns(pl.col("score").fill_null(0.5))
    items = B.named_items(
        [pe.logloss("y", "score", weight="fw"), pe.brier("y", "score"), pe.accuracy("y", "score")]
    )
    design, _, stratum, _ = B.resampling(
        df, items, by=by, group=group, method="multinomial", seed=8
    )
    reps, _ = B.replicates(
        df, items, by=by, group=group, n_resamples=6, method="multinomial", seed=8
    )
    y, p, fw = (df[c].to_numpy() for c in ("y", "score", "fw"))
    for r in range(6):
        counts = design.counts(r).astype(float)
        for g in range(design.n_strata):
            at = (stratum == g) & (counts > 0)
            row = reps.filter(pl.col(B.R_COL) == r).row(g, named=True)
            w = counts[at]
            expected = {
                "logloss": log_loss(y[at], p[at], sample_weight=w * fw[at], labels=[0, 1]),
                "brier": brier_score_loss(y[at], p[at], sample_weight=w),
                "accuracy": accuracy_score(y[at], p[at] >= 0.5, sample_weight=w),
            }
            for name, value in expected.items():
                assert row[name] == pytest.approx(value, rel=1e-12), (name, r, g)


def test_state_kernel_falls_back_where_it_cannot_be_exact() -> None:
    # a NaN score (validate=False): 0 × NaN would be NaN, and NaN scores sort apart, so the
    # expression path runs; a metric over the rows (median) has no summed state
    df = state_data().with_columns(pl.col("score").fill_null(float("nan")))
    items = B.named_items(
        [
            pe.logloss("y", "score"),
            pe.ks("y", "score"),
            pe.medae("a", "b"),
            pe.mse("a", "b"),
        ]
    )
    _, kernels, _, _ = B.resampling(df, items, by=[], group=[], method="multinomial", seed=0)
    assert set(kernels) == {"mse"}
    out = df.eval.bootstrap([pe.logloss("y", "score")], n_resamples=10, validate=False)
    assert out["n_undefined"].item() == 10


def test_intervals_match_scipy_bootstrap_percentile() -> None:
    # scipy.stats.bootstrap(method="percentile", paired rows) with a brute-force statistic:
    # AUC as the Mann-Whitney U of midranks (ties: half credit), Brier as a mean; the two
    # bootstraps use different random draws, so the bounds agree within Monte-Carlo error
    rng = np.random.default_rng(7)
    n = 400
    y = rng.integers(0, 2, n)
    p = np.clip(np.round(rng.normal(0.4 + 0.2 * y, 0.2), 2), 0.0, 1.0)
    df = pl.DataFrame({"y": y, "p": p})

    def auc(y: np.ndarray, s: np.ndarray, axis: int = -1) -> np.ndarray:
        ranks = stats.rankdata(s, axis=axis)
        n1 = y.sum(axis=axis)
        u = (ranks * y).sum(axis=axis) - n1 * (n1 + 1) / 2.0
        return u / (n1 * (y.shape[axis] - n1))

    def brier(y: np.ndarray, s: np.ndarray, axis: int = -1) -> np.ndarray:
        return ((s - y) ** 2).mean(axis=axis)

    ours = df.eval.bootstrap([pe.auc("y", "p"), pe.brier("y", "p")], n_resamples=4000, seed=3)
    for name, statistic in (("auc", auc), ("brier", brier)):
        ref = stats.bootstrap(
            (y, p),
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=4000,
            method="percentile",
            rng=np.random.default_rng(11),
        )
        row = ours.filter(pl.col("metric") == name).row(0, named=True)
        assert row["estimate"] == pytest.approx(statistic(y, p), rel=1e-12)
        # the difference of the two bounds has a Monte-Carlo standard error of about 0.06 std: 0.3 std is 5 of it
        tol = 0.3 * row["std"]
        assert row["lower"] == pytest.approx(ref.confidence_interval.low, abs=tol)
        assert row["upper"] == pytest.approx(ref.confidence_interval.high, abs=tol)
        assert row["std"] == pytest.approx(ref.standard_error, rel=0.1)


def test_kernel_blocks_of_resamples() -> None:
    # a (resamples, rows) block gives each resample's own values
    df = data(150, seed=12)
    for by, weight in (([], None), (["g"], "fw")):
        items = B.named_items(pe.auc("y", "score", weight=weight))
        design, kernels, _, _ = B.resampling(
            df, items, by=by, group=[], method="multinomial", seed=2
        )
        kernel = kernels["auc"]
        block = kernel(design.unit_counts_block(range(6)))
        one = [kernel(design.unit_counts_block(range(r, r + 1))) for r in range(6)]
        np.testing.assert_array_equal(block, np.concatenate(one))


def test_percentiles_std_and_estimate_from_replicates() -> None:
    df = data(300, seed=5)
    exprs = [pe.auc("y", "score"), pe.mcc("y", "score")]
    out = df.eval.bootstrap(exprs, n_resamples=200, level=0.9, seed=2)
    reps, _ = B.replicates(
        df, B.named_items(exprs), by=[], group=[], n_resamples=200, method="multinomial", seed=2
    )
    for name in ("auc", "mcc"):
        v = reps[name].to_numpy()
        row = out.filter(pl.col("metric") == name).row(0, named=True)
        assert row["lower"] == pytest.approx(np.percentile(v, 5), rel=1e-12)
        assert row["upper"] == pytest.approx(np.percentile(v, 95), rel=1e-12)
        assert row["std"] == pytest.approx(np.std(v, ddof=1), rel=1e-12)
        assert row["n_undefined"] == 0
    assert out.row(0, named=True)["estimate"] == pytest.approx(df.eval.auc("y", "score"))


def test_multinomial_keeps_stratum_sizes_and_groups_whole() -> None:
    df = data(200, seed=6)
    sizes = df.group_by("g").len().sort("g")["len"].to_list()
    reps, _ = B.replicates(
        df, [("n", pl.len())], by=["g"], group=[], n_resamples=30, method="multinomial", seed=0
    )
    for g, size in enumerate(sizes):
        assert set(reps.filter(pl.col("g") == g)["n"].to_list()) == {size}
    # group=: whole queries are drawn; with 5 rows per query the resample size is kept
    q = pl.DataFrame({"q": np.repeat(np.arange(20), 5), "x": np.arange(100.0)})
    whole = (pl.col("q").unique_counts() % 5 == 0).all().cast(pl.Float64)
    items = [("n", pl.len()), ("whole", whole), ("distinct", pl.col("q").n_unique())]
    reps, _ = B.replicates(
        q, items, by=[], group=["q"], n_resamples=30, method="multinomial", seed=0
    )
    assert set(reps["n"].to_list()) == {100}
    assert set(reps["whole"].to_list()) == {1.0}
    assert reps["distinct"].max() < 20


def test_poisson_counts_average_one() -> None:
    df = data(400, seed=7)
    reps, _ = B.replicates(
        df, [("n", pl.len())], by=[], group=[], n_resamples=200, method="poisson", seed=0
    )
    assert reps["n"].mean() == pytest.approx(400, rel=0.01)
    assert reps["n"].n_unique() > 10


def test_undefined_resamples_dropped_and_counted() -> None:
    # BAD_INPUTS #43: a resample with one class has no AUC
    df = pl.DataFrame({"y": [1, 0, 0, 0, 0, 0], "p": [0.9, 0.1, 0.5, 0.3, 0.2, 0.4]})
    out = df.eval.bootstrap(pe.auc("y", "p"), n_resamples=300, seed=0)
    reps, _ = B.replicates(
        df,
        B.named_items(pe.auc("y", "p")),
        by=[],
        group=[],
        n_resamples=300,
        method="multinomial",
        seed=0,
    )
    v = reps["auc"].to_numpy()
    defined = v[~np.isnan(v)]
    row = out.row(0, named=True)
    # P(the positive row is never drawn) = (5/6)^6 = 0.33
    assert row["n_undefined"] == 300 - len(defined) > 50
    assert row["lower"] == pytest.approx(np.percentile(defined, 2.5))
    assert row["estimate"] == 1.0


def test_group_resampling_matches_manual_cluster_bootstrap() -> None:
    df = data(150, seed=8)
    design, _, _ = B.make_design(df, [], ["q"], "multinomial", 4)
    keys = np.sort(df["q"].unique().to_numpy())
    reps, _ = B.replicates(
        df,
        B.named_items(pe.auc("y", "score")),
        by=[],
        group=["q"],
        n_resamples=5,
        method="multinomial",
        seed=4,
    )
    for r in range(5):
        unit_counts = design.unit_counts(r)  # one count per query, in sorted key order
        assert unit_counts.sum() == len(keys)
        per_row = unit_counts[np.searchsorted(keys, df["q"].to_numpy())]
        expected = roc_auc_score(df["y"], df["score"], sample_weight=per_row)
        assert reps["auc"][r] == pytest.approx(expected, rel=1e-12)


def test_any_expression_and_lazy_errors() -> None:
    df = data(100, seed=9)
    out = df.eval.bootstrap(
        [pl.col("score").mean().alias("m"), pe.brier("y", "score")], n_resamples=50
    )
    assert out["metric"].to_list() == ["m", "brier"]
    assert out.row(0, named=True)["estimate"] == pytest.approx(df["score"].mean())
    bad = df.with_columns(pl.when(pl.col("y") == 1).then(2).otherwise(0).alias("y"))
    with pytest.raises(DataValidationError, match='column "y"'):
        bad.eval.bootstrap(pe.auc("y", "score"), n_resamples=10)
    lazy = bad.lazy().eval.bootstrap(pe.auc("y", "score"), n_resamples=10)
    with pytest.raises(DataValidationError, match='column "y"'):
        lazy.collect()
    with pytest.raises(DataValidationError, match='column "nope"'):
        df.eval.bootstrap(pe.auc("y", "nope"), n_resamples=10)
    # validate=False skips the checks (the NaN score then gives a NaN estimate)
    nan = df.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(float("nan"))
        .otherwise(pl.col("score"))
        .alias("score")
    )
    with pytest.raises(DataValidationError, match='column "score"'):
        nan.eval.bootstrap(pe.auc("y", "score"), n_resamples=10)
    got = nan.eval.bootstrap(pe.auc("y", "score"), n_resamples=10, validate=False)
    assert math.isnan(got["estimate"].item()) and got["n_undefined"].item() == 10


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_resamples": 0}, "n_resamples"),
        ({"level": 1.5}, "level"),
        ({"seed": -1}, "seed"),
        ({"method": "jackknife"}, "method"),
    ],
)
def test_bad_options(kwargs: dict[str, object], match: str) -> None:
    df = data(50)
    with pytest.raises(InvalidParameterError, match=match):
        df.eval.bootstrap(pe.auc("y", "score"), **kwargs)  # type: ignore[arg-type]


def test_bad_expressions() -> None:
    df = data(50)
    with pytest.raises(InvalidParameterError, match="distinct"):
        df.eval.bootstrap([pe.auc("y", "score"), pe.auc("y", "w")])
    with pytest.raises(InvalidParameterError, match="at least one"):
        df.eval.bootstrap([])
    with pytest.raises(InvalidParameterError, match="polars expressions"):
        df.eval.bootstrap(["auc"])  # type: ignore[list-item]


def test_empty_group_with_by() -> None:
    df = pl.DataFrame({"g": [0, 0, 0, 0, 1], "y": [1, 0, 1, 0, 1], "p": [0.9, 0.2, 0.6, 0.4, 0.5]})
    out = df.eval.bootstrap(pe.auc("y", "p"), n_resamples=20, by="g")
    assert out.row(1, named=True) == {
        "g": 1,
        "metric": "auc",
        "estimate": None,
        "lower": None,
        "upper": None,
        "std": None,
        "n_undefined": 20,
    }


# ---------------------------------------------------------------------------------------
# paired bootstrap
# ---------------------------------------------------------------------------------------


def two_models(n: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pl.DataFrame(
        {
            "y": y,
            "good": y + rng.normal(0, 0.6, n),
            "bad": y + rng.normal(0, 1.5, n),
            "g": rng.integers(0, 2, n),
        }
    )


def test_paired_bootstrap_shares_resamples() -> None:
    df = two_models(300, seed=1)
    out = df.eval.paired_bootstrap(
        pe.auc, "good", "bad", label="y", n_resamples=150, seed=5, by="g"
    )
    assert out.columns == [
        "g",
        "estimate_1",
        "estimate_2",
        "difference",
        "lower",
        "upper",
        "std",
        "p_value",
        "n_undefined",
    ]
    reps, _ = B.replicates(
        df,
        [("a", pe.auc("y", "good")), ("b", pe.auc("y", "bad"))],
        by=["g"],
        group=[],
        n_resamples=150,
        method="multinomial",
        seed=5,
    )
    for g in (0, 1):
        part = reps.filter(pl.col("g") == g)
        d = (part["a"] - part["b"]).to_numpy()
        row = out.filter(pl.col("g") == g).row(0, named=True)
        assert row["lower"] == pytest.approx(np.percentile(d, 2.5), rel=1e-12)
        assert row["std"] == pytest.approx(np.std(d, ddof=1), rel=1e-12)
        assert row["p_value"] == pytest.approx(min(1.0, 2 * min((d <= 0).mean(), (d >= 0).mean())))
        sub = df.filter(pl.col("g") == g)
        assert row["estimate_1"] == pytest.approx(roc_auc_score(sub["y"], sub["good"]))
    assert (out["p_value"] < 0.05).all()


def test_paired_bootstrap_same_model_and_callable() -> None:
    df = two_models(100, seed=2)
    out = df.eval.paired_bootstrap("logloss", "y", "y", n_resamples=20, label=pl.col("y"))
    assert out.row(0, named=True)["difference"] == 0.0
    out = df.eval.paired_bootstrap(lambda s: pe.auc("y", s), "good", "good", n_resamples=20)
    row = out.row(0, named=True)
    assert (row["lower"], row["upper"], row["std"], row["p_value"]) == (0.0, 0.0, 0.0, 1.0)
    with pytest.raises(InvalidParameterError, match="unknown metric"):
        df.eval.paired_bootstrap("nope", "good", "bad", label="y")
    lazy = df.lazy().eval.paired_bootstrap("auc", "good", "bad", label="y", n_resamples=20, by="g")
    assert lazy.collect().equals(
        df.eval.paired_bootstrap("auc", "good", "bad", label="y", n_resamples=20, by="g")
    )


# ---------------------------------------------------------------------------------------
# coverage on the binormal model: true AUC = Φ(d / √2)
# ---------------------------------------------------------------------------------------


def coverage(n_sims: int, n_rows: int, n_resamples: int) -> float:
    d = 1.0
    true_auc = stats.norm.cdf(d / math.sqrt(2.0))
    rng = np.random.default_rng(2024)
    frames = []
    for sim in range(n_sims):
        y = rng.integers(0, 2, n_rows)
        frames.append(pl.DataFrame({"sim": sim, "y": y, "s": rng.normal(d * y, 1.0)}))
    out = pl.concat(frames).eval.bootstrap(
        pe.auc("y", "s"), n_resamples=n_resamples, by="sim", seed=1
    )
    hit = (pl.col("lower") <= true_auc) & (pl.col("upper") >= true_auc)
    return float(out.select(hit.mean()).item())


def test_coverage_small() -> None:
    # 60 simulations: the binomial 99.9 % band around 0.95 is about [0.82, 1]
    assert coverage(60, 150, 300) >= 0.82


@pytest.mark.slow
def test_coverage_of_95_interval() -> None:
    assert 0.92 <= coverage(300, 300, 1000) <= 0.98


def test_validation_of_recognised_metrics_and_generic_path() -> None:
    df = data(120, seed=10)
    neg = df.with_columns((pl.col("w") - 2.0).alias("w"))
    with pytest.raises(DataValidationError, match='column "w"'):
        neg.eval.bootstrap(pe.auc("y", "score", weight="w"), n_resamples=10)
    # string labels with pos_label= are not recognised by the AUC kernel: expression path
    lab = df.with_columns(
        pl.when(pl.col("y") == 1).then(pl.lit("yes")).otherwise(pl.lit("no")).alias("lab")
    )
    a = lab.eval.bootstrap(pe.auc("lab", "score", pos_label="yes"), n_resamples=40, seed=3)
    b = df.eval.bootstrap(pe.auc("y", "score"), n_resamples=40, seed=3)
    assert a.drop("metric").row(0) == pytest.approx(b.drop("metric").row(0), rel=1e-12)
    # float32 scores give the same intervals
    f32 = df.with_columns(pl.col("score").cast(pl.Float32))
    c = f32.eval.bootstrap(pe.auc("y", "score"), n_resamples=40, seed=3)
    d = df.with_columns(pl.col("score").cast(pl.Float32).cast(pl.Float64)).eval.bootstrap(
        pe.auc("y", "score"), n_resamples=40, seed=3
    )
    assert c.equals(d)


def test_poisson_sampler_distribution() -> None:
    counts = B.poisson_counts(np.random.default_rng(0), 400_000)
    assert counts.dtype == np.uint8
    observed = Counter((min(int(c), 6),) for c in counts)
    pmf = {(k,): stats.poisson.pmf(k, 1.0) for k in range(6)} | {(6,): stats.poisson.sf(5, 1.0)}
    assert chi2_pvalue(observed, pmf) > 0.001
    assert counts.mean() == pytest.approx(1.0, abs=0.01)
    # the buckets that straddle a CDF value take the fine path: counts on both sides
    assert set(np.unique(counts)) >= {0, 1, 2, 3, 4, 5, 6}


def test_null_by_and_group_keys() -> None:
    df = data(200, seed=11).with_columns(
        pl.when(pl.col("g") == 2).then(None).otherwise(pl.col("g")).alias("g"),
        pl.when(pl.col("q") < 3).then(None).otherwise(pl.col("q")).alias("q"),
    )
    out = df.eval.bootstrap(pe.auc("y", "score"), n_resamples=30, by="g", group="q")
    assert out["g"].to_list() == [0, 1, None]
    assert out["n_undefined"].to_list() == [0, 0, 0]
    alone = df.filter(pl.col("g").is_null()).eval.auc("y", "score")
    assert out["estimate"][2] == pytest.approx(alone)


def test_empty_frame() -> None:
    df = pl.DataFrame(schema={"y": pl.Int64, "p": pl.Float64, "g": pl.Int64})
    out = df.eval.bootstrap([pe.auc("y", "p"), pe.brier("y", "p")], n_resamples=5)
    assert out["n_undefined"].to_list() == [5, 5]
    assert out["estimate"].null_count() == 2
    assert df.eval.bootstrap(pe.auc("y", "p"), n_resamples=5, by="g").height == 0
    paired = df.eval.paired_bootstrap("auc", "p", "p", label="y", n_resamples=5)
    assert paired.row(0, named=True)["p_value"] is None


SCRIPT = """
import sys
import numpy as np, polars as pl, polars_eval as pe
rng = np.random.default_rng(0)
y = rng.integers(0, 2, 3000)
df = pl.DataFrame({"y": y, "p": rng.random(3000) * 0.5 + 0.3 * y, "w": rng.random(3000),
                   "g": rng.integers(0, 3, 3000)})
out = df.eval.bootstrap([pe.logloss("y", "p", weight="w"), pe.auc("y", "p", weight="w")],
                        n_resamples=30, by="g", seed=4)
out.write_ipc(sys.argv[1])
"""


def test_same_result_on_one_polars_thread(tmp_path: Path) -> None:
    # SPEC §2: the same seed gives the same result on any number of threads
    import os
    import subprocess
    import sys

    path = str(tmp_path / "one.arrow")
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    subprocess.run([sys.executable, "-c", SCRIPT, path], check=True, env=env)
    namespace: dict[str, object] = {}
    exec(SCRIPT.replace("out.write_ipc(sys.argv[1])", ""), namespace)  # noqa: S102
    assert pl.read_ipc(path).equals(namespace["out"])
