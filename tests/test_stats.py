"""SPEC §8: closed-form intervals, run_interval (ci=), McNemar and DeLong.

Oracles: scipy (binomtest, chi2, norm), scikit-learn (roc_auc_score, confusion_matrix),
and textbook formulas / an O(n²) DeLong written out here.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import polars as pl
import pytest
from conftest import binary_data
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import confusion_matrix, roc_auc_score

import polars_eval as pe
from polars_eval._core.registry import REGISTRY
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)
from polars_eval.stats import Interval, run_interval

LEVELS = [0.8, 0.95, 0.99]


def unnest(df: pl.DataFrame, name: str) -> tuple[float, float, float]:
    row = df.get_column(name).item()
    return row["value"], row["lower"], row["upper"]


# ---------------------------------------------------------------------------------------
# Wilson
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("k", "n"), [(0, 10), (10, 10), (3, 7), (1, 1), (50, 200), (0, 1)])
def test_wilson_matches_scipy(k: int, n: int, level: float) -> None:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    value, lower, upper = unnest(
        pl.DataFrame({"k": [k], "n": [n]}).select(pe.wilson("k", "n", level=level)), "wilson"
    )
    assert value == pytest.approx(k / n)
    assert lower == pytest.approx(ci.low, abs=1e-12)
    assert upper == pytest.approx(ci.high, abs=1e-12)
    # BAD_INPUTS #44: a proper interval inside [0, 1] at 0 and n successes
    assert 0.0 <= lower <= value <= upper <= 1.0
    assert lower < upper


def test_wilson_rowwise_and_zero_total() -> None:
    df = pl.DataFrame({"k": [1, 0, None], "n": [4, 0, 3]})
    out = df.select(pe.wilson("k", "n")).unnest("wilson")
    ci = stats.binomtest(1, 4).proportion_ci(method="wilson")
    assert out.row(0) == pytest.approx((0.25, ci.low, ci.high))
    assert out.row(1) == (None, None, None)
    assert out.row(2) == (None, None, None)


@pytest.mark.parametrize(
    "metric", ["accuracy", "precision", "recall", "specificity", "fpr", "fnr", "fdr", "npv"]
)
def test_proportion_ci_matches_scipy(metric: str, engine: str) -> None:
    df = binary_data(300, seed=3, tied=True)
    y, pred = df["y"].to_numpy(), (df["score"].to_numpy() >= 0.5).astype(int)
    tn, fp, fn, tp = confusion_matrix(y, pred, labels=[0, 1]).ravel()
    k, n = {
        "accuracy": (tp + tn, tp + tn + fp + fn),
        "precision": (tp, tp + fp),
        "recall": (tp, tp + fn),
        "specificity": (tn, tn + fp),
        "fpr": (fp, fp + tn),
        "fnr": (fn, fn + tp),
        "fdr": (fp, fp + tp),
        "npv": (tn, tn + fn),
    }[metric]
    ci = stats.binomtest(int(k), int(n)).proportion_ci(method="wilson")
    out = df.lazy().select(pe.proportion_ci(metric, "y", "score")).collect(engine=engine)  # type: ignore[call-overload]
    assert unnest(out, metric) == pytest.approx((k / n, ci.low, ci.high), abs=1e-12)
    # the value is the registered metric's value
    assert unnest(out, metric)[0] == pytest.approx(
        df.select(REGISTRY[metric].fn("y", "score")).item()
    )


def test_proportion_ci_integer_weights_equal_repetition() -> None:
    df = binary_data(200, seed=4)
    repeated = df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode())
    a = df.select(pe.proportion_ci("recall", "y", "score", weight="w", threshold=0.4))
    b = repeated.select(pe.proportion_ci("recall", "y", "score", threshold=0.4))
    assert unnest(a, "recall") == pytest.approx(unnest(b, "recall"), abs=1e-12)


def test_proportion_ci_pred_and_nan() -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 1], "hard": [1, 0, 0, 1], "s": [0.9, float("nan"), 0.2, 0.7]})
    value, *_ = unnest(df.select(pe.proportion_ci("accuracy", "y", pred="hard")), "accuracy")
    assert value == 0.75
    value, lower, upper = unnest(df.select(pe.proportion_ci("accuracy", "y", "s")), "accuracy")
    assert math.isnan(value)
    with pytest.raises(InvalidParameterError, match="metric must be one of"):
        pe.proportion_ci("f1", "y", "s")
    with pytest.raises(InvalidParameterError, match="level"):
        pe.proportion_ci("recall", "y", "s", level=1.0)


# ---------------------------------------------------------------------------------------
# Hanley–McNeil, logistic PR-AUC, chi-square RMSE: recomputed from the published formulas
# ---------------------------------------------------------------------------------------


def hanley_mcneil_by_hand(a: float, n1: float, n2: float, level: float) -> tuple[float, float]:
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    se = math.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n2 - 1) * (q2 - a * a)) / (n1 * n2))
    z = stats.norm.ppf(0.5 + level / 2)
    return max(0.0, a - z * se), min(1.0, a + z * se)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("tied", [False, True])
def test_hanley_mcneil_formula(level: float, tied: bool, engine: str) -> None:
    df = binary_data(250, seed=5, tied=tied)
    y, s, w = df["y"].to_numpy(), df["score"].to_numpy(), df["w"].to_numpy()
    out = df.lazy().select(pe.hanley_mcneil("y", "score", level=level)).collect(engine=engine)  # type: ignore[call-overload]
    a = roc_auc_score(y, s)
    lo, hi = hanley_mcneil_by_hand(a, y.sum(), (1 - y).sum(), level)
    assert unnest(out, "auc") == pytest.approx((a, lo, hi), abs=1e-12)
    # weighted: n1, n2 are the weighted class totals (frequency weights)
    out = df.select(pe.hanley_mcneil("y", "score", weight="w", level=level))
    a = roc_auc_score(y, s, sample_weight=w)
    lo, hi = hanley_mcneil_by_hand(a, (w * y).sum(), (w * (1 - y)).sum(), level)
    assert unnest(out, "auc") == pytest.approx((a, lo, hi), abs=1e-12)


def test_hanley_mcneil_one_class_is_null() -> None:
    df = pl.DataFrame({"y": [1, 1, 1], "p": [0.2, 0.5, 0.9]})
    assert unnest(df.select(pe.hanley_mcneil("y", "p")), "auc") == (None, None, None)


def test_pr_auc_logistic_formula(engine: str) -> None:
    df = binary_data(300, seed=6, tied=True)
    out = df.lazy().select(pe.pr_auc_logistic("y", "score", level=0.9)).collect(engine=engine)  # type: ignore[call-overload]
    theta = df.select(pe.pr_auc("y", "score")).item()
    n = df["y"].sum()
    eta, tau = math.log(theta / (1 - theta)), 1 / math.sqrt(n * theta * (1 - theta))
    z = stats.norm.ppf(0.95)
    expit = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert unnest(out, "pr_auc") == pytest.approx(
        (theta, expit(eta - z * tau), expit(eta + z * tau)), abs=1e-12
    )


def test_pr_auc_logistic_perfect_ranking_degenerates_to_the_value() -> None:
    df = pl.DataFrame({"y": [1, 1, 0, 0], "p": [0.9, 0.8, 0.2, 0.1]})
    assert unnest(df.select(pe.pr_auc_logistic("y", "p")), "pr_auc") == (1.0, 1.0, 1.0)


@pytest.mark.parametrize("level", LEVELS)
def test_rmse_chi2_formula(level: float, engine: str) -> None:
    rng = np.random.default_rng(7)
    a = rng.normal(size=120)
    p = a + rng.normal(scale=0.5, size=120)
    w = rng.integers(0, 4, 120).astype(float)
    df = pl.DataFrame({"a": a, "p": p, "w": w, "p32": p.astype(np.float32)})
    out = df.lazy().select(pe.rmse_chi2("a", "p", level=level)).collect(engine=engine)  # type: ignore[call-overload]
    rmse, n = math.sqrt(np.mean((p - a) ** 2)), len(a)
    alpha = 1 - level
    lo = rmse * math.sqrt(n / stats.chi2.ppf(1 - alpha / 2, n))
    hi = rmse * math.sqrt(n / stats.chi2.ppf(alpha / 2, n))
    assert unnest(out, "rmse") == pytest.approx((rmse, lo, hi), rel=1e-12)
    # the registered rmse with ci="chi2" gives the same interval
    reg = run_interval(
        df,
        REGISTRY["rmse"],
        {"actual": "a", "pred": "p", "weight": None},
        by=None,
        validate=True,
        method="chi2",
        level=level,
    )
    assert tuple(reg) == pytest.approx((rmse, lo, hi), rel=1e-12)
    # integer weights = repetition
    rep = df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode())
    assert unnest(df.select(pe.rmse_chi2("a", "p", weight="w")), "rmse") == pytest.approx(
        unnest(rep.select(pe.rmse_chi2("a", "p")), "rmse"), rel=1e-12
    )
    # float32 == float64
    assert unnest(df.select(pe.rmse_chi2("a", "p32")), "rmse") == pytest.approx(
        unnest(df.select(pe.rmse_chi2("a", pl.col("p").cast(pl.Float32).cast(pl.Float64))), "rmse"),
        rel=1e-6,
    )


def test_rmse_chi2_per_group_and_empty() -> None:
    df = pl.DataFrame(
        {"g": [1, 1, 1, 2, 2], "a": [0.0, 1.0, 2.0, 0.0, 0.0], "p": [1.0, 1.0, 1.0, 3.0, None]}
    )
    out = df.group_by("g", maintain_order=True).agg(pe.rmse_chi2("a", "p")).unnest("rmse")
    for g, a, p in [(1, [0.0, 1.0, 2.0], [1.0, 1.0, 1.0]), (2, [0.0], [3.0])]:
        alone = pl.DataFrame({"a": a, "p": p}).select(pe.rmse_chi2("a", "p")).unnest("rmse")
        assert out.filter(pl.col("g") == g).drop("g").row(0) == pytest.approx(alone.row(0))
    empty = pl.DataFrame({"a": [None], "p": [1.0]}, schema={"a": pl.Float64, "p": pl.Float64})
    assert empty.select(pe.rmse_chi2("a", "p")).unnest("rmse").row(0) == (None, None, None)


def test_interval_dispatch() -> None:
    df = binary_data(100, seed=8)
    a = df.select(pe.interval("auc", "y", "score")).unnest("auc")
    b = df.select(pe.hanley_mcneil("y", "score")).unnest("auc")
    assert a.equals(b)
    a = df.select(pe.interval(pe.recall, "y", "score", threshold=0.3, level=0.9)).unnest("recall")
    b = df.select(pe.proportion_ci("recall", "y", "score", threshold=0.3, level=0.9)).unnest(
        "recall"
    )
    assert a.equals(b)
    with pytest.raises(InvalidParameterError, match="no closed-form"):
        pe.interval("logloss", "y", "score")
    with pytest.raises(InvalidParameterError, match="method must be one of"):
        pe.interval("auc", "y", "score", method="wilson")


@given(
    k=st.integers(0, 60),
    extra=st.integers(0, 60),
    level=st.floats(0.5, 0.999),
)
def test_wilson_properties(k: int, extra: int, level: float) -> None:
    n = k + extra
    assume(n > 0)
    value, lower, upper = unnest(
        pl.DataFrame({"k": [k], "n": [n]}).select(pe.wilson("k", "n", level=level)), "wilson"
    )
    assert 0.0 <= lower <= value + 1e-12 <= upper + 2e-12 <= 1.0 + 2e-12
    # symmetric: k successes <-> n - k failures
    v2, l2, u2 = unnest(
        pl.DataFrame({"k": [n - k], "n": [n]}).select(pe.wilson("k", "n", level=level)), "wilson"
    )
    assert (l2, u2) == pytest.approx((1 - upper, 1 - lower), abs=1e-12)


# ---------------------------------------------------------------------------------------
# run_interval: the namespace's ci= (SPEC §8 result shapes)
# ---------------------------------------------------------------------------------------


def auc_args() -> dict[str, object]:
    return {"label": "y", "score": "score", "weight": None, "pos_label": None}


def test_run_interval_shapes() -> None:
    df = binary_data(300, seed=9, groups=3)
    info = REGISTRY["auc"]
    whole = run_interval(df, info, auc_args(), by=None, validate=True, method="hanley", level=0.95)
    assert isinstance(whole, Interval)
    assert isinstance(whole, pe.Interval)
    expected = unnest(df.select(pe.hanley_mcneil("y", "score")), "auc")
    assert tuple(whole) == pytest.approx(expected)
    grouped = run_interval(df, info, auc_args(), by="g", validate=True, method="hanley", level=0.95)
    assert grouped.columns == ["g", "auc", "auc_lower", "auc_upper"]
    assert grouped["g"].to_list() == [0, 1, 2]
    for g in range(3):
        alone = run_interval(
            df.filter(pl.col("g") == g),
            info,
            auc_args(),
            by=None,
            validate=True,
            method="hanley",
            level=0.95,
        )
        assert grouped.row(g)[1:] == pytest.approx(tuple(alone))
    lazy = run_interval(
        df.lazy(), info, auc_args(), by="g", validate=True, method="hanley", level=0.95
    )
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect(engine="streaming").equals(grouped)


def test_run_interval_wilson_and_bootstrap() -> None:
    df = binary_data(200, seed=10, groups=2)
    info = REGISTRY["precision"]
    args = dict(label="y", score="score", pred=None, threshold=0.5, weight="w", pos_label=None)
    got = run_interval(df, info, args, by=None, validate=True, method="wilson", level=0.9)
    expected = unnest(
        df.select(pe.proportion_ci("precision", "y", "score", weight="w", level=0.9)), "precision"
    )
    assert tuple(got) == pytest.approx(expected)
    boot = run_interval(df, info, args, by="g", validate=True, method="bootstrap", level=0.9)
    assert boot.columns == ["g", "precision", "precision_lower", "precision_upper"]
    direct = df.group_by("g").agg(pe.precision("y", "score", weight="w")).sort("g")
    assert boot["precision"].to_list() == pytest.approx(direct["precision"].to_list())
    assert (boot["precision_lower"] < boot["precision"]).all()
    assert (boot["precision"] < boot["precision_upper"]).all()
    lazy = run_interval(df.lazy(), info, args, by="g", validate=True, method="bootstrap", level=0.9)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(boot)


def test_run_interval_errors() -> None:
    df = binary_data(50, seed=11)
    info = REGISTRY["auc"]
    with pytest.raises(InvalidParameterError, match="ci must be one of"):
        run_interval(df, info, auc_args(), by=None, validate=True, method="wilson", level=0.95)
    with pytest.raises(InvalidParameterError, match="level"):
        run_interval(df, info, auc_args(), by=None, validate=True, method="hanley", level=95)
    one_class = df.with_columns(pl.lit(1).alias("y"))
    for method in ("hanley", "bootstrap"):
        with pytest.raises(UndefinedMetricError, match="auc is undefined"):
            run_interval(
                one_class, info, auc_args(), by=None, validate=True, method=method, level=0.95
            )
    bad = df.with_columns(
        pl.when(pl.int_range(pl.len()) == 3)
        .then(float("nan"))
        .otherwise(pl.col("score"))
        .alias("score")
    )
    for method in ("hanley", "bootstrap"):
        with pytest.raises(DataValidationError, match='column "score"'):
            run_interval(bad, info, auc_args(), by=None, validate=True, method=method, level=0.95)
        lazy = run_interval(
            bad.lazy(), info, auc_args(), by=None, validate=True, method=method, level=0.95
        )
        with pytest.raises(DataValidationError, match='column "score"'):
            lazy.collect()
    grouped = pl.concat(
        [df.with_columns(g=pl.lit(0)), one_class.with_columns(g=pl.lit(1))], how="vertical_relaxed"
    )
    with pytest.warns(UndefinedMetricWarning, match="1 of 2 groups"):
        out = run_interval(
            grouped, info, auc_args(), by="g", validate=True, method="hanley", level=0.95
        )
    assert out.row(1)[1:] == (None, None, None)


def test_registry_declares_intervals() -> None:
    assert REGISTRY["auc"].intervals == ("hanley", "bootstrap")
    assert REGISTRY["pr_auc"].intervals == ("logistic", "bootstrap")
    for name in ("accuracy", "precision", "recall", "specificity"):
        assert REGISTRY[name].intervals[0] == "wilson"
    assert "bootstrap" in REGISTRY["logloss"].intervals
    assert REGISTRY["rmse"].intervals == ("chi2", "bootstrap")
    assert "Interval" in pe.__all__ and "run_interval" not in pe.__all__
    table = pe.metrics().filter(pl.col("name") == "auc")
    assert table["intervals"].to_list() == [["hanley", "bootstrap"]]


def test_namespace_ci_keyword() -> None:
    df = binary_data(200, seed=12, groups=2)
    method = type(df.eval).auc
    assert "ci" in inspect.signature(method).parameters
    got = df.eval.auc("y", "score", ci="hanley", level=0.9)
    assert isinstance(got, pe.Interval)
    assert tuple(got) == pytest.approx(
        unnest(df.select(pe.hanley_mcneil("y", "score", level=0.9)), "auc")
    )
    out = df.eval.recall("y", "score", ci="wilson", by="g")
    assert out.columns == ["g", "recall", "recall_lower", "recall_upper"]
    lazy = df.lazy().eval.pr_auc("y", "score", ci="logistic", by="g")
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect(engine="streaming").columns == [
        "g",
        "pr_auc",
        "pr_auc_lower",
        "pr_auc_upper",
    ]
    boot = df.eval.logloss("y", "score", ci="bootstrap")
    assert boot.lower < boot.value < boot.upper
    assert boot.value == pytest.approx(df.eval.logloss("y", "score"))
    with pytest.raises(InvalidParameterError, match="hanley"):
        df.eval.auc("y", "score", ci="wilson")
    reg = pl.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "p": [0.5, 1.0, 2.5, 2.5]})
    if "ci" in inspect.signature(type(reg.eval).rmse).parameters:
        got = reg.eval.rmse("a", "p", ci="chi2")
        assert tuple(got) == pytest.approx(unnest(reg.select(pe.rmse_chi2("a", "p")), "rmse"))


# ---------------------------------------------------------------------------------------
# McNemar
# ---------------------------------------------------------------------------------------


def mcnemar_oracle(
    y: np.ndarray, s1: np.ndarray, s2: np.ndarray, t1: float, t2: float
) -> tuple[int, int, float]:
    r1 = (s1 >= t1).astype(int) == y
    r2 = (s2 >= t2).astype(int) == y
    b, c = int((r1 & ~r2).sum()), int((~r1 & r2).sum())
    p = 1.0 if b + c == 0 else stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue
    return b, c, p


def two_models(n: int, seed: int, groups: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s1 = np.clip(0.5 * y + rng.normal(0.25, 0.3, n), 0, 1)
    s2 = np.clip(0.3 * y + rng.normal(0.35, 0.3, n), 0, 1)
    data = {"y": y, "s1": np.round(s1, 2), "s2": np.round(s2, 2)}
    if groups:
        data["g"] = rng.integers(0, groups, n)
    return pl.DataFrame(data)


@pytest.mark.parametrize(("t1", "t2"), [(0.5, 0.5), (0.3, 0.6)])
def test_mcnemar_matches_scipy(t1: float, t2: float, engine: str) -> None:
    df = two_models(400, seed=13, groups=3)
    y, s1, s2 = (df[c].to_numpy() for c in ("y", "s1", "s2"))
    got = df.eval.mcnemar("y", "s1", "s2", threshold_1=t1, threshold_2=t2)
    b, c, p = mcnemar_oracle(y, s1, s2, t1, t2)
    assert (got["wins_1"], got["wins_2"]) == (b, c)
    assert got["p_value"] == pytest.approx(p, rel=1e-12)
    swapped = df.eval.mcnemar("y", "s2", "s1", threshold_1=t2, threshold_2=t1)
    assert (swapped["wins_1"], swapped["wins_2"]) == (c, b)
    per = (
        df.lazy()
        .eval.mcnemar("y", "s1", "s2", threshold_1=t1, threshold_2=t2, by="g")
        .collect(engine=engine)
    )  # type: ignore[call-overload]
    assert per.columns == ["g", "wins_1", "wins_2", "p_value"]
    for g in range(3):
        part = df.filter(pl.col("g") == g)
        b, c, p = mcnemar_oracle(*(part[x].to_numpy() for x in ("y", "s1", "s2")), t1, t2)
        assert per.row(g)[1:] == pytest.approx((b, c, p), rel=1e-12)


def test_mcnemar_edges() -> None:
    df = pl.DataFrame({"y": [1, 0, 1, None], "a": [0.9, 0.1, 0.2, 0.5], "b": [0.9, 0.1, 0.2, 0.5]})
    assert df.eval.mcnemar("y", "a", "b") == {"wins_1": 0, "wins_2": 0, "p_value": 1.0}
    bad = df.with_columns(pl.lit(2).alias("y"))
    with pytest.raises(DataValidationError, match='column "y"'):
        bad.eval.mcnemar("y", "a", "b")
    nan = df.with_columns(pl.Series("a", [0.9, float("nan"), 0.2, 0.5]))
    with pytest.raises(DataValidationError, match='column "a"'):
        nan.eval.mcnemar("y", "a", "b")
    assert math.isnan(nan.select(pe.mcnemar("y", "a", "b")).item()["p_value"])
    with pytest.raises(InvalidParameterError, match="threshold_1"):
        pe.mcnemar("y", "a", "b", threshold_1=float("nan"))


# ---------------------------------------------------------------------------------------
# DeLong: against the O(n^2) textbook form (DeLong, DeLong & Clarke-Pearson 1988)
# ---------------------------------------------------------------------------------------


def delong_textbook(
    y: np.ndarray, s1: np.ndarray, s2: np.ndarray, level: float = 0.95
) -> dict[str, float]:
    pos, neg = y == 1, y == 0
    m, n = pos.sum(), neg.sum()
    v10, v01, aucs = [], [], []
    for s in (s1, s2):
        x, z = s[pos], s[neg]
        psi = (x[:, None] > z[None, :]).astype(float) + 0.5 * (x[:, None] == z[None, :])
        aucs.append(psi.mean())
        v10.append(psi.mean(axis=1))
        v01.append(psi.mean(axis=0))
    s10 = np.cov(np.vstack(v10))
    s01 = np.cov(np.vstack(v01))
    s = s10 / m + s01 / n
    var = s[0, 0] + s[1, 1] - 2 * s[0, 1]
    diff = aucs[0] - aucs[1]
    z = diff / math.sqrt(var)
    q = stats.norm.ppf(0.5 + level / 2)
    return {
        "auc_1": aucs[0],
        "auc_2": aucs[1],
        "difference": diff,
        "lower": diff - q * math.sqrt(var),
        "upper": diff + q * math.sqrt(var),
        "z": z,
        "p_value": 2 * stats.norm.sf(abs(z)),
    }


@pytest.mark.parametrize("seed", [14, 15])
def test_delong_matches_textbook(seed: int, engine: str) -> None:
    df = two_models(300, seed=seed, groups=2)  # rounded scores: many ties
    y, s1, s2 = (df[c].to_numpy() for c in ("y", "s1", "s2"))
    got = df.eval.delong("y", "s1", "s2", level=0.9)
    expected = delong_textbook(y, s1, s2, level=0.9)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got["auc_1"] == pytest.approx(roc_auc_score(y, s1))
    per = df.lazy().eval.delong("y", "s1", "s2", level=0.9, by="g").collect(engine=engine)  # type: ignore[call-overload]
    assert per.columns == ["g", *pe.stats.compare.DELONG_FIELDS]
    for g in range(2):
        part = df.filter(pl.col("g") == g)
        expected = delong_textbook(*(part[c].to_numpy() for c in ("y", "s1", "s2")), level=0.9)
        assert per.row(g, named=True) == pytest.approx({"g": g, **expected}, rel=1e-9)


def test_delong_float32_and_row_order() -> None:
    df = two_models(200, seed=16)
    base = df.eval.delong("y", "s1", "s2")
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=1).eval.delong("y", "s1", "s2")
    assert shuffled == pytest.approx(base, rel=1e-9)
    f32 = df.with_columns(pl.col("s1", "s2").cast(pl.Float32)).eval.delong("y", "s1", "s2")
    assert f32 == pytest.approx(base, rel=1e-6)


def test_delong_edges() -> None:
    df = pl.DataFrame({"y": [1, 1, 0, 0], "a": [0.9, 0.8, 0.3, 0.1]})
    same = df.eval.delong("y", "a", "a")
    assert same["difference"] == 0.0 and same["z"] is None and same["p_value"] is None
    one = pl.DataFrame({"y": [1, 0, 0], "a": [0.9, 0.3, 0.1], "b": [0.2, 0.3, 0.1]})
    with pytest.raises(UndefinedMetricError, match="at least 2 rows"):
        one.eval.delong("y", "a", "b")
    grouped = pl.concat(
        [df.with_columns(b=pl.col("a") * 0.5, g=pl.lit(0)), one.with_columns(g=pl.lit(1))],
        how="vertical_relaxed",
    )
    with pytest.warns(UndefinedMetricWarning):
        out = grouped.eval.delong("y", "a", "b", by="g")
    assert out.row(1)[1:] == (None,) * 7
    with pytest.raises(DataValidationError, match='column "zz"'):
        df.eval.delong("y", "a", "zz")


def test_delong_agrees_with_bootstrap_roughly() -> None:
    df = two_models(600, seed=17)
    d = df.eval.delong("y", "s1", "s2")
    pb = df.eval.paired_bootstrap("auc", "s1", "s2", label="y", n_resamples=300, seed=3)
    assert pb["difference"].item() == pytest.approx(d["difference"], rel=1e-12)
    assert pb["std"].item() == pytest.approx((d["upper"] - d["lower"]) / (2 * 1.959964), rel=0.25)


def test_no_warnings_from_stats_namespace() -> None:
    df = two_models(100, seed=18)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df.eval.delong("y", "s1", "s2")
        df.eval.mcnemar("y", "s1", "s2")


@settings(max_examples=20)
@given(seed=st.integers(0, 10_000))
def test_delong_antisymmetric(seed: int) -> None:
    df = two_models(60, seed=seed)
    assume(df["y"].n_unique() == 2 and min(df["y"].sum(), 60 - df["y"].sum()) >= 2)
    a = df.eval.delong("y", "s1", "s2")
    b = df.eval.delong("y", "s2", "s1")
    assert b["difference"] == pytest.approx(-a["difference"], abs=1e-12)
    assert (b["lower"], b["upper"]) == pytest.approx((-a["upper"], -a["lower"]), abs=1e-12)
    if a["p_value"] is not None:
        assert b["p_value"] == pytest.approx(a["p_value"], rel=1e-9)
