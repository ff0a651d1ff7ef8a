"""Multiclass metrics (SPEC §4) against scikit-learn, brute force and the literature.

Oracles: scikit-learn (``precision_recall_fscore_support`` with ``zero_division=np.nan``,
``accuracy_score``, ``confusion_matrix``, ``log_loss``, ``roc_auc_score(multi_class="ovr")``,
``matthews_corrcoef``, ``cohen_kappa_score``, ``top_k_accuracy_score``), a brute-force
expectation over tie orders for top-k accuracy, and the worked micro/macro example of
the literature. Oracle tests run on both engines (fixture ``collect``), weighted and not,
with int, str and categorical labels, and with tied probabilities.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from sklearn import metrics as skm

import polars_eval as pe

Collect = Callable[[pl.LazyFrame], pl.DataFrame]
K = 4
N = 160
AVERAGES = ["micro", "macro", "weighted"]


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------


def class_values(kind: str, k: int = K) -> list[Any]:
    return [f"c{i}" for i in range(k)] if kind in ("str", "cat") else list(range(10, 10 + k))


def mc_data(
    n: int = N,
    *,
    seed: int = 0,
    kind: str = "int",
    tied: bool = False,
    groups: int = 0,
    k: int = K,
) -> tuple[pl.DataFrame, list[Any]]:
    """Labels, a noisy prediction, probabilities (List column and one column per class),
    integer weights 0..3 (zero weights always present), optional groups."""
    rng = np.random.default_rng(seed)
    classes = class_values(kind, k)
    y = rng.integers(0, k, n)
    if tied:  # probabilities on a grid of tenths: many ties inside rows and across rows
        counts = rng.multinomial(10, np.ones(k) / k, size=n)
        proba = counts / 10.0
    else:
        logits = rng.normal(size=(n, k))
        logits[np.arange(n), y] += 1.0
        proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    yhat = np.where(rng.random(n) < 0.5, y, rng.integers(0, k, n))
    data: dict[str, Any] = {
        "y": [classes[i] for i in y],
        "yhat": [classes[i] for i in yhat],
        "w": rng.integers(0, 4, n).astype(np.float64),
        "p": proba.tolist(),
    }
    data.update({f"p{i}": proba[:, i] for i in range(k)})
    if groups:
        data["g"] = rng.integers(0, groups, n)
    df = pl.DataFrame(data)
    if kind == "cat":
        df = df.with_columns(pl.col("y", "yhat").cast(pl.Categorical))
    return df, classes


def cols(k: int = K) -> list[str]:
    return [f"p{i}" for i in range(k)]


def np_inputs(df: pl.DataFrame, weighted: bool) -> tuple[np.ndarray, np.ndarray, Any, Any]:
    y = np.asarray(df["y"].cast(pl.String).to_list() if df["y"].dtype != pl.Int64 else df["y"])
    yhat = np.asarray(
        df["yhat"].cast(pl.String).to_list() if df["yhat"].dtype != pl.Int64 else df["yhat"]
    )
    proba = df.select(cols(len([c for c in df.columns if c[0] == "p" and c[1:].isdigit()])))
    w = df["w"].to_numpy() if weighted else None
    return y, yhat, proba.to_numpy(), w


def same(a: Any, b: Any, tol: float = 1e-9) -> bool:
    a_missing = a is None or (isinstance(a, float) and math.isnan(a))
    b_missing = b is None or (isinstance(b, float) and math.isnan(b))
    if a_missing or b_missing:
        return a_missing and b_missing
    return math.isclose(float(a), float(b), rel_tol=tol, abs_tol=tol)


def assert_same(got: Any, want: Any, tol: float = 1e-9) -> None:
    assert same(got, want, tol), f"got {got!r}, expected {want!r}"


# ---------------------------------------------------------------------------------------
# prediction metrics vs scikit-learn
# ---------------------------------------------------------------------------------------

PRF = {
    "multiclass_precision": 0,
    "multiclass_recall": 1,
    "multiclass_f1": 2,
}


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("with_classes", [False, True])
def test_precision_recall_f1_match_sklearn(
    kind: str, weighted: bool, with_classes: bool, collect: Collect
) -> None:
    df, classes = mc_data(kind=kind, seed=1)
    y, yhat, _, w = np_inputs(df, weighted)
    cls = classes if with_classes else None
    weight = "w" if weighted else None
    exprs = [
        getattr(pe, name)("y", "yhat", average=avg, classes=cls, weight=weight).alias(
            f"{name}_{avg}"
        )
        for name in PRF
        for avg in AVERAGES
    ]
    exprs.append(
        pe.multiclass_f_beta("y", "yhat", beta=0.5, average="macro", classes=cls, weight=weight)
    )
    got = collect(df.lazy().select(exprs)).row(0, named=True)
    for avg in AVERAGES:
        want = skm.precision_recall_fscore_support(
            y, yhat, average=avg, sample_weight=w, zero_division=np.nan
        )
        for name, i in PRF.items():
            assert_same(got[f"{name}_{avg}"], want[i])
    f_half = skm.fbeta_score(
        y, yhat, beta=0.5, average="macro", sample_weight=w, zero_division=np.nan
    )
    assert_same(got["multiclass_f_beta"], f_half)


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
def test_accuracy_mcc_kappa_match_sklearn(kind: str, weighted: bool, collect: Collect) -> None:
    df, classes = mc_data(kind=kind, seed=2)
    y, yhat, _, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    for cls in (None, classes):
        got = collect(
            df.lazy().select(
                pe.multiclass_accuracy("y", "yhat", classes=cls, weight=weight),
                pe.multiclass_mcc("y", "yhat", classes=cls, weight=weight),
                pe.multiclass_cohen_kappa("y", "yhat", classes=cls, weight=weight),
            )
        ).row(0, named=True)
        assert_same(got["multiclass_accuracy"], skm.accuracy_score(y, yhat, sample_weight=w))
        assert_same(got["multiclass_mcc"], skm.matthews_corrcoef(y, yhat, sample_weight=w))
        assert_same(got["multiclass_cohen_kappa"], skm.cohen_kappa_score(y, yhat, sample_weight=w))


@pytest.mark.parametrize("weighted", [False, True])
def test_per_class_struct_and_table_match_sklearn(weighted: bool) -> None:
    df, classes = mc_data(kind="str", seed=3)
    y, yhat, _, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    want = skm.precision_recall_fscore_support(
        y, yhat, labels=classes, average=None, sample_weight=w, zero_division=np.nan
    )
    for name, i in PRF.items():
        struct = df.select(
            getattr(pe, name)("y", "yhat", average=None, classes=classes, weight=weight)
        ).item()
        assert list(struct) == [str(c) for c in classes]
        for c, value in zip(classes, want[i], strict=True):
            assert_same(struct[str(c)], value)
        table = getattr(df.eval, name)("y", "yhat", average=None, weight=weight)
        assert table.columns == ["class", name, "support"]
        assert table["class"].to_list() == sorted(classes)
        for c, value, support in zip(classes, want[i], want[3], strict=True):
            row = table.filter(pl.col("class") == c).row(0, named=True)
            assert_same(row[name], value)
            if not weighted:
                assert_same(row["support"], support)


def test_per_class_namespace_with_classes_keeps_their_order() -> None:
    df, classes = mc_data(kind="int", seed=3)
    order = classes[::-1]
    table = df.eval.multiclass_recall("y", "yhat", average=None, classes=order)
    assert table["class"].to_list() == order


def test_worked_example_micro_and_macro_precision() -> None:
    """Two confusion tables (TP1=12, FP1=9, FN1=3; TP2=50, FP2=23, FN2=9): micro precision
    65.96 %, macro precision 62.82 % (Sokolova & Lapalme's micro/macro example)."""
    cells = {
        ("1", "1"): 12,
        ("x", "1"): 9,
        ("1", "x"): 3,
        ("2", "2"): 50,
        ("x", "2"): 23,
        ("2", "x"): 9,
    }
    rows = [(y, p) for (y, p), n in cells.items() for _ in range(n)]
    df = pl.DataFrame(rows, schema=["y", "yhat"], orient="row")
    per_class = df.select(
        pe.multiclass_precision("y", "yhat", average=None, classes=["1", "2", "x"]),
        pe.multiclass_recall("y", "yhat", average=None, classes=["1", "2", "x"]),
    ).row(0)
    precision, recall = per_class
    assert round((precision["1"] + precision["2"]) / 2 * 100, 2) == 62.82
    # micro over the two classes: Σ TP / Σ (TP + FP) = 62 / 94
    micro = df.filter(pl.col("yhat") != "x").eval.multiclass_precision("y", "yhat", average="micro")
    assert round(micro * 100, 2) == 65.96
    assert_same(recall["1"], 12 / 15)
    assert_same(recall["2"], 50 / 59)


@pytest.mark.parametrize("weighted", [False, True])
def test_confusion_matrix_matches_sklearn(weighted: bool, collect: Collect) -> None:
    df, classes = mc_data(kind="str", seed=4)
    y, yhat, _, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    want = skm.confusion_matrix(y, yhat, labels=classes, sample_weight=w)
    table = df.eval.multiclass_confusion_matrix("y", "yhat", weight=weight)
    assert table.columns == ["truth", *[f"predicted_{c}" for c in classes]]
    assert table["truth"].to_list() == classes
    np.testing.assert_allclose(table.drop("truth").to_numpy(), want)
    lazy = collect(
        df.lazy().eval.multiclass_confusion_matrix("y", "yhat", weight=weight, classes=classes)
    )
    assert lazy.equals(table)
    cells = collect(df.lazy().select(pe.multiclass_confusion_matrix("y", "yhat", weight=weight)))
    long = cells.explode("multiclass_confusion_matrix").unnest("multiclass_confusion_matrix")
    assert long["weight"].sum() == pytest.approx(want.sum())
    assert (long["weight"] > 0).all()


def test_confusion_matrix_fills_absent_classes_and_groups() -> None:
    df, classes = mc_data(kind="int", seed=5, groups=3)
    extra = classes + [99]
    table = df.eval.multiclass_confusion_matrix("y", "yhat", classes=extra, by="g")
    assert table.height == 3 * len(extra)
    for g in range(3):
        part = df.filter(pl.col("g") == g)
        want = skm.confusion_matrix(part["y"], part["yhat"], labels=extra)
        got = table.filter(pl.col("g") == g).drop("g", "truth").to_numpy()
        np.testing.assert_allclose(got, want)


def test_confusion_matrix_on_lazy_frame_needs_classes() -> None:
    df, _ = mc_data()
    with pytest.raises(pe.InvalidParameterError, match="classes="):
        df.lazy().eval.multiclass_confusion_matrix("y", "yhat")


# ---------------------------------------------------------------------------------------
# probability metrics vs scikit-learn
# ---------------------------------------------------------------------------------------


def proba_forms(df: pl.DataFrame, k: int = K) -> dict[str, Any]:
    return {
        "list": "p",
        "array": pl.col("p").cast(pl.Array(pl.Float64, k)),
        "columns": cols(k),
    }


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tied", [False, True])
def test_proba_metrics_match_sklearn(
    kind: str, weighted: bool, tied: bool, collect: Collect
) -> None:
    df, classes = mc_data(kind=kind, seed=6, tied=tied)
    y, _, proba, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    want = {
        "multiclass_logloss": skm.log_loss(y, proba, labels=classes, sample_weight=w),
        **{
            f"auc_{avg}": skm.roc_auc_score(
                y, proba, multi_class="ovr", average=avg, labels=classes, sample_weight=w
            )
            for avg in AVERAGES
        },
    }
    if not tied:  # scikit-learn breaks ties by class index; we count expected hits
        for k in (1, 2, 3):
            want[f"top_{k}"] = skm.top_k_accuracy_score(
                y, proba, k=k, labels=classes, sample_weight=w
            )
    for form in proba_forms(df).values():
        exprs = [pe.multiclass_logloss("y", form, classes=classes, weight=weight)]
        exprs += [
            pe.multiclass_auc("y", form, average=avg, classes=classes, weight=weight).alias(
                f"auc_{avg}"
            )
            for avg in AVERAGES
        ]
        exprs += [
            pe.top_k_accuracy("y", form, k=k, classes=classes, weight=weight).alias(f"top_{k}")
            for k in (1, 2, 3)
        ]
        got = collect(df.lazy().select(exprs)).row(0, named=True)
        for name, value in want.items():
            assert_same(got[name], value)


def brute_top_k(y: np.ndarray, proba: np.ndarray, k: int, w: np.ndarray) -> float:
    """Expected top-k hit over every order of the tied classes of each row (brute force)."""
    hits = []
    for label, row in zip(y, proba, strict=True):
        orders = []
        for perm in itertools.permutations(range(len(row))):
            ranked = sorted(perm, key=lambda c: -row[c])  # stable: ties keep perm's order
            orders.append(label in ranked[:k])
        hits.append(np.mean(orders))
    return float(np.sum(np.asarray(hits) * w) / np.sum(w))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_with_ties_is_the_expected_hit_rate(k: int) -> None:
    df, classes = mc_data(n=40, kind="int", seed=7, tied=True)
    y = df["y"].to_numpy() - 10
    proba = df.select(cols()).to_numpy()
    w = df["w"].to_numpy()
    got = df.select(pe.top_k_accuracy("y", "p", k=k, classes=classes, weight="w")).item()
    assert_same(got, brute_top_k(y, proba, k, w))


def test_auc_class_absent_from_truth_is_left_out_of_macro() -> None:
    df, classes = mc_data(kind="int", seed=8)
    df = df.filter(pl.col("y") != classes[1])
    y = df["y"].to_numpy()
    proba = df.select(cols()).to_numpy()
    present = [i for i, c in enumerate(classes) if c != classes[1]]
    per_class = [skm.roc_auc_score(y == classes[i], proba[:, i]) for i in present]
    supports = [np.sum(y == classes[i]) for i in present]
    got_macro = df.eval.multiclass_auc("y", "p", classes=classes)
    got_weighted = df.eval.multiclass_auc("y", "p", classes=classes, average="weighted")
    assert_same(got_macro, np.mean(per_class))
    assert_same(got_weighted, np.average(per_class, weights=supports))


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_ovr_auc_of_many_rows_matches_sklearn(tied: bool, weighted: bool) -> None:
    # n x K keys past the threaded kernel's threshold and several tie-search chunks
    df, classes = mc_data(n=70_000, kind="int", seed=21, tied=tied)
    y, _, proba, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    got = df.eval.multiclass("y", proba=cols(), classes=classes, weight=weight)
    for avg in AVERAGES:
        want = skm.roc_auc_score(
            y, proba, multi_class="ovr", average=avg, labels=classes, sample_weight=w
        )
        assert_same(got[f"multiclass_auc_{avg}"].item(), want)


def test_auc_negative_zero_probability_is_zero() -> None:
    df, classes = mc_data(kind="int", seed=22, tied=True)
    assert (df.select(pl.col(cols()) == 0.0).to_numpy()).any()
    signed = df.with_columns(
        pl.when(pl.col(c) == 0.0).then(-0.0).otherwise(pl.col(c)).alias(c) for c in cols()
    )
    y, _, proba, _ = np_inputs(df, False)
    for avg in AVERAGES:
        want = skm.roc_auc_score(y, proba, multi_class="ovr", average=avg, labels=classes)
        for frame in (df, signed):
            got = frame.select(pe.multiclass_auc("y", cols(), average=avg, classes=classes))
            assert_same(got.item(), want)


def test_auc_negative_probability_gives_nan_in_bare_expressions() -> None:
    df, classes = mc_data(kind="int", seed=23)
    df = df.with_columns(p1=pl.when(pl.int_range(pl.len()) == 5).then(-0.25).otherwise("p1"))
    for avg in AVERAGES:
        for weight in (None, "w"):
            got = df.select(
                pe.multiclass_auc("y", cols(), average=avg, classes=classes, weight=weight)
            )
            assert math.isnan(got.item()), (avg, weight)


def test_float32_probabilities_equal_float64() -> None:
    df, classes = mc_data(kind="int", seed=9)
    df32 = df.with_columns(pl.col(cols()).cast(pl.Float32), pl.col("p").cast(pl.List(pl.Float32)))
    for form in ("p", cols()):
        for fn in (pe.multiclass_logloss, pe.multiclass_auc, pe.top_k_accuracy):
            a = df.select(fn("y", form, classes=classes)).item()
            b = df32.select(fn("y", form, classes=classes)).item()
            assert abs(a - b) < 1e-6


# ---------------------------------------------------------------------------------------
# groups, engines, weights, invariances
# ---------------------------------------------------------------------------------------


def test_per_group_equals_per_frame(collect: Collect) -> None:
    df, classes = mc_data(n=300, kind="str", seed=10, groups=3)
    table = collect(
        df.lazy().eval.multiclass("y", pred="yhat", proba="p", classes=classes, weight="w", by="g")
    )
    assert table["g"].to_list() == [0, 1, 2]
    for g in range(3):
        part = df.filter(pl.col("g") == g)
        one = part.eval.multiclass("y", pred="yhat", proba="p", classes=classes, weight="w")
        row = table.filter(pl.col("g") == g).drop("g")
        for name in one.columns:
            assert_same(row[name].item(), one[name].item())


def test_task_table_equals_the_single_metrics() -> None:
    df, classes = mc_data(kind="cat", seed=11)
    table = df.eval.multiclass("y", pred="yhat", proba=cols(), classes=classes, weight="w", k=3)
    row = table.row(0, named=True)
    kw: dict[str, Any] = {"classes": classes, "weight": "w"}
    assert_same(row["multiclass_accuracy"], df.eval.multiclass_accuracy("y", "yhat", **kw))
    for name in PRF:
        for avg in AVERAGES:
            want = getattr(df.eval, name)("y", "yhat", average=avg, **kw)
            assert_same(row[f"{name}_{avg}"], want)
    assert_same(row["multiclass_mcc"], df.eval.multiclass_mcc("y", "yhat", **kw))
    assert_same(row["multiclass_cohen_kappa"], df.eval.multiclass_cohen_kappa("y", "yhat", **kw))
    assert_same(row["multiclass_logloss"], df.eval.multiclass_logloss("y", cols(), **kw))
    assert_same(row["top_k_accuracy"], df.eval.top_k_accuracy("y", cols(), k=3, **kw))
    for avg in AVERAGES:
        assert_same(
            row[f"multiclass_auc_{avg}"], df.eval.multiclass_auc("y", "p", average=avg, **kw)
        )


def test_task_table_without_pred_uses_the_argmax() -> None:
    df, classes = mc_data(kind="int", seed=12, tied=True)
    proba = df.select(cols()).to_numpy()
    argmax = np.asarray(classes)[proba.argmax(axis=1)]  # numpy: first maximum, as ours
    y = df["y"].to_numpy()
    table = df.eval.multiclass("y", proba="p", classes=classes)
    assert_same(table["multiclass_accuracy"].item(), skm.accuracy_score(y, argmax))
    assert_same(
        table["multiclass_f1_macro"].item(),
        skm.f1_score(y, argmax, average="macro", zero_division=np.nan),
    )
    assert_same(
        df.select(pe.multiclass_mcc("y", proba="p", classes=classes)).item(),
        skm.matthews_corrcoef(y, argmax),
    )


def test_baseline_is_the_constant_predictor() -> None:
    df, classes = mc_data(kind="int", seed=13)
    df = df.filter(pl.col("y") != classes[3]).vstack(
        df.filter(pl.col("y") == classes[0])
    )  # distinct class frequencies, one class absent
    y = df["y"].to_numpy()
    n = len(y)
    freq = np.array([np.mean(y == c) for c in classes])
    majority = classes[int(np.argmax(freq))]
    const_pred = np.full(n, majority)
    const_proba = np.tile(freq, (n, 1))
    table = df.eval.multiclass("y", pred="yhat", proba="p", classes=classes, baseline=True)
    row = table.row(0, named=True)
    assert_same(row["multiclass_accuracy_baseline"], skm.accuracy_score(y, const_pred))
    for name, i in PRF.items():
        for avg in AVERAGES:
            want = skm.precision_recall_fscore_support(
                y, const_pred, average=avg, zero_division=np.nan
            )[i]
            assert_same(row[f"{name}_{avg}_baseline"], want)
    assert row["multiclass_mcc_baseline"] is None
    assert_same(row["multiclass_cohen_kappa_baseline"], 0.0)
    entropy = -sum(f * math.log(f) for f in freq if f > 0)
    assert_same(row["multiclass_logloss_baseline"], entropy)
    assert_same(row["multiclass_auc_macro_baseline"], 0.5)
    assert_same(row["multiclass_auc_weighted_baseline"], 0.5)
    assert_same(
        row["multiclass_auc_micro_baseline"],
        skm.roc_auc_score(y, const_proba, multi_class="ovr", average="micro", labels=classes),
    )
    assert_same(
        row["top_k_accuracy_baseline"],
        skm.top_k_accuracy_score(y, const_proba, k=2, labels=classes),
    )


def test_integer_weights_equal_repeated_rows() -> None:
    df, classes = mc_data(n=60, kind="str", seed=14)
    repeated = df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64)).explode()).drop_nulls("y")
    a = df.eval.multiclass("y", pred="yhat", proba="p", classes=classes, weight="w")
    b = repeated.eval.multiclass("y", pred="yhat", proba="p", classes=classes)
    for name in a.columns:
        assert_same(a[name].item(), b[name].item(), tol=1e-9)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40))
def test_row_order_does_not_matter(seed: int, n: int) -> None:
    df, classes = mc_data(n=n, kind="int", seed=seed, tied=True)
    assume(df["w"].sum() > 0)  # all weights 0: no row to evaluate, an error (BAD_INPUTS 49)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = df.eval.multiclass("y", pred="yhat", proba="p", classes=classes, weight="w")
        b = shuffled.eval.multiclass("y", pred="yhat", proba="p", classes=classes, weight="w")
    for name in a.columns:
        assert_same(a[name].item(), b[name].item(), tol=1e-9)


# ---------------------------------------------------------------------------------------
# bad and edge inputs (BAD_INPUTS.md rows)
# ---------------------------------------------------------------------------------------


def small() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "y": ["a", "b", "c", "a", "b"],
            "yhat": ["a", "b", "a", "a", "c"],
            "p": [
                [0.7, 0.2, 0.1],
                [0.2, 0.5, 0.3],
                [0.4, 0.3, 0.3],
                [0.6, 0.3, 0.1],
                [0.1, 0.3, 0.6],
            ],
            "w": [1.0, 2.0, 1.0, 1.0, 1.0],
        }
    )


ABC = ["a", "b", "c"]


def test_row15_rows_not_summing_to_one_are_an_error() -> None:
    df = small().with_columns(
        pl.when(pl.int_range(pl.len()) == 1)
        .then(pl.lit([0.2, 0.5, 0.31]))
        .otherwise(pl.col("p"))
        .alias("p")
    )
    with pytest.raises(pe.DataValidationError, match=r'column "p".*summing to 1.*1 rows'):
        df.eval.multiclass_logloss("y", "p", classes=ABC)
    cols_df = df.select("y", *[pl.col("p").list.get(i).alias(f"q{i}") for i in range(3)])
    with pytest.raises(pe.DataValidationError, match="q0, q1, q2.*summing to 1"):
        cols_df.eval.multiclass_auc("y", ["q0", "q1", "q2"], classes=ABC)
    lazy = df.lazy().eval.top_k_accuracy("y", "p", classes=ABC)
    with pytest.raises(pe.DataValidationError, match="summing to 1"):
        lazy.collect()
    # within the tolerance: accepted, nothing renormalised
    ok = small().with_columns(pl.col("p").list.eval(pl.element() + 1e-8))
    assert ok.eval.multiclass_logloss("y", "p", classes=ABC) > 0


def test_row16_label_or_prediction_not_in_classes_is_an_error() -> None:
    with pytest.raises(pe.DataValidationError, match=r'column "y".*not in classes.*c'):
        small().eval.multiclass_accuracy("y", "yhat", classes=["a", "b"])
    with pytest.raises(pe.DataValidationError, match=r'column "yhat".*not in classes'):
        small().with_columns(pl.col("yhat").replace("c", "z")).eval.multiclass_precision(
            "y", "yhat", classes=ABC
        )
    with pytest.raises(pe.DataValidationError, match='column "y"'):
        small().eval.multiclass_logloss("y", "p", classes=["a", "b", "d"])
    with pytest.raises(pe.DataValidationError, match='column "y" .*String.*ints'):
        small().eval.multiclass_accuracy("y", "yhat", classes=[1, 2, 3])
    # a bare expression ignores such rows
    got = small().select(pe.multiclass_accuracy("y", "yhat", classes=["a", "b"])).item()
    assert_same(got, 1.0)  # rows 2 (label c) and 4 (prediction c) are ignored


def test_validate_false_skips_the_row_checks_not_the_schema_problems() -> None:
    # rows outside classes= are ignored (as by the bare expression), not an error
    assert_same(
        small().eval.multiclass_accuracy("y", "yhat", classes=["a", "b"], validate=False), 1.0
    )
    # a dtype that cannot hold the classes is an error whatever validate says
    for validate in (True, False):
        with pytest.raises(pe.DataValidationError, match='column "y" .*String.*ints'):
            small().eval.multiclass_accuracy("y", "yhat", classes=[1, 2, 3], validate=validate)
        with pytest.raises(pe.DataValidationError, match='column "yhat".*List or Array'):
            small().eval.multiclass("y", proba="yhat", classes=ABC, validate=validate)


def test_proba_column_problems_name_the_column() -> None:
    with pytest.raises(
        pe.DataValidationError, match=r'column "p".*4 probabilities per row.*5 rows'
    ):
        small().eval.multiclass_logloss("y", "p", classes=["a", "b", "c", "d"])
    nan = small().with_columns(
        pl.col("p").list.eval(pl.element() / pl.element().sum() * float("nan"))
    )
    with pytest.raises(pe.DataValidationError, match=r'column "p".*NaN'):
        nan.eval.multiclass_auc("y", "p", classes=ABC)
    outside = small().with_columns(pl.lit([1.2, -0.1, -0.1]).alias("p"))
    with pytest.raises(pe.DataValidationError, match=r"\[0, 1\]"):
        outside.eval.multiclass_logloss("y", "p", classes=ABC)
    with pytest.raises(pe.DataValidationError, match=r'column "y".*List or Array'):
        small().eval.multiclass_logloss("yhat", "y", classes=ABC)
    with pytest.raises(pe.DataValidationError, match='"nope".*not found'):
        small().eval.multiclass_logloss("y", "nope", classes=ABC)
    with pytest.raises(pe.DataValidationError, match='"nope".*not found'):
        small().eval.multiclass("y", pred="nope")
    with pytest.raises(pe.DataValidationError, match='"w".*negative'):
        small().with_columns(w=-pl.col("w")).eval.multiclass_accuracy("y", "yhat", weight="w")


def test_row2_nan_probabilities_give_nan_in_bare_expressions() -> None:
    df = small().select("y", *[pl.col("p").list.get(i).alias(f"q{i}") for i in range(3)])
    df = df.with_columns(q0=pl.when(pl.int_range(pl.len()) == 2).then(float("nan")).otherwise("q0"))
    q = ["q0", "q1", "q2"]
    out = df.select(
        pe.multiclass_logloss("y", q, classes=ABC),
        pe.multiclass_auc("y", q, classes=ABC),
        pe.multiclass_auc("y", q, classes=ABC, average="micro").alias("micro"),
        pe.top_k_accuracy("y", q, classes=ABC),
        pe.multiclass_accuracy("y", proba=q, classes=ABC),
    ).row(0)
    assert all(isinstance(v, float) and math.isnan(v) for v in out), out


def test_row1_null_rows_are_ignored() -> None:
    df = small()
    nulls = pl.DataFrame(
        {
            "y": [None, "a", "b", "c"],
            "yhat": ["a", None, "b", "c"],
            "p": [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], None, [0.1, 0.8, 0.1]],
            "w": [1.0, 1.0, 1.0, None],
        },
        schema=df.schema,
    )
    with_nulls = pl.concat([df, nulls])
    # prediction metrics: the rows with a null label, prediction or weight are ignored
    # (the row with null probabilities counts: its label and prediction are there)
    pred_rows = pl.concat([df, nulls[2]])
    a = pred_rows.eval.multiclass("y", pred="yhat", classes=ABC, weight="w")
    b = with_nulls.eval.multiclass("y", pred="yhat", classes=ABC, weight="w")
    for name in a.columns:
        assert_same(a[name].item(), b[name].item())
    # probability metrics: the rows with a null label, probabilities or weight are ignored
    proba_rows = pl.concat([df, nulls[1]])
    a = proba_rows.eval.multiclass("y", proba="p", classes=ABC, weight="w")
    b = with_nulls.eval.multiclass("y", proba="p", classes=ABC, weight="w")
    for name in a.columns:
        assert_same(a[name].item(), b[name].item())


def test_row5_empty_is_null_raise_or_warn() -> None:
    empty = small().clear()
    assert empty.select(pe.multiclass_accuracy("y", "yhat")).item() is None
    assert empty.select(pe.multiclass_logloss("y", "p", classes=ABC)).item() is None
    assert empty.select(pe.multiclass_auc("y", "p", classes=ABC)).item() is None
    with pytest.raises(pe.UndefinedMetricError, match="multiclass_accuracy"):
        empty.eval.multiclass_accuracy("y", "yhat")
    zero = small().with_columns(w=pl.lit(0.0))
    with pytest.raises(pe.UndefinedMetricError):
        zero.eval.multiclass_f1("y", "yhat", weight="w")


def test_row18_row19_undefined_values_are_null() -> None:
    df = pl.DataFrame({"y": ["a", "a", "b", "b"], "yhat": ["a", "a", "a", "a"]})
    got = df.select(
        pe.multiclass_mcc("y", "yhat"),
        pe.multiclass_precision("y", "yhat", average=None, classes=["a", "b"]),
        pe.multiclass_cohen_kappa("y", "yhat"),
    ).row(0, named=True)
    assert got["multiclass_mcc"] is None  # constant prediction (sklearn: 0)
    assert got["multiclass_precision"] == {"a": 0.5, "b": None}  # b never predicted: 0/0
    assert_same(got["multiclass_cohen_kappa"], 0.0)  # defined, as sklearn
    same_constant = pl.DataFrame({"y": ["a", "a"], "yhat": ["a", "a"]})
    assert same_constant.select(pe.multiclass_cohen_kappa("y", "yhat")).item() is None
    with pytest.raises(pe.UndefinedMetricError, match="constant"):
        df.eval.multiclass_mcc("y", "yhat")
    groups = pl.DataFrame(
        {"y": ["a", "b", "a", "b"], "yhat": ["a", "b", "a", "a"], "g": [1, 1, 2, 2]}
    )
    with pytest.warns(pe.UndefinedMetricWarning, match="1 of 2 groups"):
        by = groups.eval.multiclass_mcc("y", "yhat", by="g")
    assert by["multiclass_mcc"].to_list() == [1.0, None]


def test_row30_invalid_options_raise_at_build_time() -> None:
    with pytest.raises(pe.InvalidParameterError, match="k must be a positive integer"):
        pe.top_k_accuracy("y", "p", k=0, classes=ABC)
    with pytest.raises(pe.InvalidParameterError, match="average"):
        pe.multiclass_precision("y", "yhat", average="samples")
    with pytest.raises(pe.InvalidParameterError, match="average"):
        pe.multiclass_auc("y", "p", average=None, classes=ABC)  # type: ignore[arg-type]
    with pytest.raises(pe.InvalidParameterError, match="classes= is required"):
        pe.multiclass_precision("y", "yhat", average=None)
    with pytest.raises(pe.InvalidParameterError, match="classes= is required"):
        pe.multiclass_accuracy("y", proba="p")
    with pytest.raises(pe.InvalidParameterError, match="distinct"):
        pe.multiclass_logloss("y", "p", classes=["a", "a"])
    with pytest.raises(pe.InvalidParameterError, match="3 columns but classes= names 2"):
        pe.multiclass_logloss("y", ["a", "b", "c"], classes=["a", "b"])
    with pytest.raises(pe.InvalidParameterError, match="beta"):
        pe.multiclass_f_beta("y", "yhat", beta=0.0)
    with pytest.raises(pe.InvalidParameterError, match="not both"):
        pe.multiclass_accuracy("y", "yhat", proba="p", classes=ABC)
    with pytest.raises(pe.InvalidParameterError, match="pred="):
        small().eval.multiclass("y")


def test_caller_frame_is_not_modified() -> None:
    df = small()
    before = df.clone()
    df.eval.multiclass("y", pred="yhat", proba="p", classes=ABC, weight="w", baseline=True)
    assert df.equals(before)


def test_registry_entries() -> None:
    table = pe.metrics().filter(pl.col("task") == "multiclass")
    names = set(table["name"])
    assert names == {
        "multiclass_accuracy",
        "multiclass_precision",
        "multiclass_recall",
        "multiclass_f1",
        "multiclass_f_beta",
        "multiclass_confusion_matrix",
        "multiclass_logloss",
        "multiclass_auc",
        "multiclass_mcc",
        "multiclass_cohen_kappa",
        "multiclass_balanced_accuracy",
        "multiclass_jaccard",
        "multiclass_brier",
        "multiclass_hinge_loss",
        "multiclass_calibration_error",
        "top_k_accuracy",
    }
    proba_side = {
        "multiclass_logloss",
        "multiclass_auc",
        "multiclass_brier",
        "multiclass_hinge_loss",
        "multiclass_calibration_error",
        "top_k_accuracy",
    }
    for name in names:
        kwargs: dict[str, Any] = {"classes": ABC} if name in proba_side else {}
        if name == "multiclass_f_beta":
            kwargs["beta"] = 1.0
        expr = getattr(pe, name)("y", "p" if name in proba_side else "yhat", **kwargs)
        assert expr.meta.output_name() == name


def test_namespace_signatures_are_the_function_plus_by_and_validate() -> None:
    """The methods are generated from the registry: the function's parameters, then by=
    and validate= (and ci=, level= and the bootstrap's options for the scalar metrics)."""
    import inspect

    ns = type(pl.DataFrame().eval)
    for name in pe.metrics().filter(pl.col("task") == "multiclass")["name"]:
        info = pe._core.registry.REGISTRY[name]
        fn = inspect.signature(getattr(pe, name))
        method = inspect.signature(getattr(ns, name))
        params = list(method.parameters.values())
        assert params[0].name == "self"
        n = len(fn.parameters)
        want = [(p.name, p.kind, p.default) for p in fn.parameters.values()]
        assert [(p.name, p.kind, p.default) for p in params[1 : n + 1]] == want, name
        extra = ["by", "validate"]
        if info.kind == "scalar":
            extra += ["ci", "level", "n_resamples", "seed"]
            if "method" not in fn.parameters:  # else the metric's own method= keeps the name
                extra.append("method")
        extra += ["time", "every", "period", "offset"]  # windows (SPEC §13)
        assert [p.name for p in params[n + 1 :]] == extra, name
        doc = getattr(ns, name).__doc__ or ""
        assert "by : str or list of str" in doc and "validate : bool" in doc, name


def test_namespace_bootstrap_interval() -> None:
    df, classes = mc_data(n=120, kind="int", seed=19)
    value = df.eval.multiclass_f1("y", "yhat", classes=classes)
    interval = df.eval.multiclass_f1(
        "y", "yhat", classes=classes, ci="bootstrap", n_resamples=200, seed=1
    )
    assert interval.value == value
    assert interval.lower < value < interval.upper
    # the bootstrap runs the metric's data checks too
    off = small().with_columns(pl.col("p").list.eval(pl.element() * 1.1))
    with pytest.raises(pe.DataValidationError, match=r'column "p".*summing to 1'):
        off.eval.multiclass_logloss("y", "p", classes=ABC, ci="bootstrap", n_resamples=20)


def test_row17_class_absent_from_truth_and_predictions_is_left_out_of_averages() -> None:
    df, classes = mc_data(kind="str", seed=15)
    extra = [*classes, "never"]
    for name in PRF:
        for avg in ("macro", "weighted"):
            a = getattr(df.eval, name)("y", "yhat", average=avg, classes=classes)
            b = getattr(df.eval, name)("y", "yhat", average=avg, classes=extra)
            assert_same(a, b)
    struct = df.select(pe.multiclass_f1("y", "yhat", average=None, classes=extra)).item()
    assert struct["never"] is None


def test_row2_row3_nan_and_inf_in_probability_columns_are_errors() -> None:
    df, classes = mc_data(n=20, kind="int", seed=16)
    for bad in (float("nan"), float("inf")):
        broken = df.with_columns(p2=pl.when(pl.int_range(pl.len()) == 3).then(bad).otherwise("p2"))
        with pytest.raises(pe.DataValidationError, match='column "p2".*NaN or ±inf'):
            broken.eval.multiclass_auc("y", cols(), classes=classes)
        with pytest.raises(pe.DataValidationError, match='column "p2"'):
            broken.lazy().eval.multiclass("y", proba=cols(), classes=classes).collect()


MERGE_CASES = [
    ("multiclass_accuracy", {}),
    ("multiclass_accuracy", {"classes": None}),
    ("multiclass_recall", {"average": "micro"}),
    ("multiclass_recall", {"average": "weighted", "classes": None}),
    ("multiclass_precision", {"average": None}),
    ("multiclass_f1", {"average": "macro", "classes": None}),
    ("multiclass_f_beta", {"beta": 0.5, "average": None, "pred": None, "proba": "p"}),
    ("multiclass_mcc", {"classes": None}),
    ("multiclass_mcc", {"pred": None, "proba": "cols"}),
    ("multiclass_cohen_kappa", {}),
    ("multiclass_cohen_kappa", {"weights": "quadratic"}),
    ("multiclass_cohen_kappa", {"weights": "linear", "classes": None}),
    ("multiclass_cohen_kappa", {"weights": "linear", "pred": None, "proba": "cols"}),
    ("multiclass_confusion_matrix", {}),
    ("multiclass_confusion_matrix", {"classes": None}),
    ("multiclass_logloss", {"proba": "cols"}),
    ("top_k_accuracy", {"k": 3}),
    ("multiclass_auc", {"average": "micro"}),
    ("multiclass_auc", {"average": "weighted", "proba": "cols"}),
    ("multiclass_auc", {"multi_class": "ovo"}),
    ("multiclass_auc", {"multi_class": "ovo", "average": "weighted", "proba": "cols"}),
]


@pytest.mark.parametrize(("name", "options"), MERGE_CASES)
@pytest.mark.parametrize("weighted", [False, True])
def test_states_of_partitions_merge_to_the_whole(
    name: str, options: dict[str, Any], weighted: bool
) -> None:
    """The states of disjoint partitions, merged, finalize to the value over all rows, for
    every state form: class sums (classes given) or the rows (classes learnt), per-class
    structs, predictions read from probabilities, the three AUC averages."""
    from polars_eval._core import planner
    from polars_eval._core.registry import REGISTRY

    df, classes = mc_data(n=300, kind="str", seed=17, tied=True, groups=2)
    df = df.with_columns(part=pl.Series(np.random.default_rng(0).integers(0, 4, df.height)))
    info = REGISTRY[name]
    args: dict[str, Any] = {"label": "y", "classes": classes, "weight": "w" if weighted else None}
    args["pred" if "pred" in info.inputs else "proba"] = "yhat" if "pred" in info.inputs else "p"
    args.update(options)
    if args.get("proba") == "cols":
        args["proba"] = cols()
    assert info.spec is not None
    spec = {name: info.spec(**args)}
    whole = df.group_by("g").agg(info.fn(**args)).sort("g")
    parts = [df.filter(pl.col("part") == i) for i in range(4)]
    stacked = pl.concat([planner.state_frame(part, spec, ["g"]).collect() for part in parts])
    merged = planner.merge_states(stacked.lazy(), spec, ["g"]).collect()
    assert_frame_equal(merged, whole, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_enum_labels_and_mixed_integer_dtypes() -> None:
    enum = pl.Enum(["a", "b", "c"])
    df = small().with_columns(pl.col("y", "yhat").cast(enum))
    y, yhat = small()["y"].to_list(), small()["yhat"].to_list()
    assert_same(
        df.eval.multiclass_f1("y", "yhat", classes=ABC),
        skm.f1_score(y, yhat, average="macro", zero_division=np.nan),
    )
    table = df.eval.multiclass_confusion_matrix("y", "yhat")
    np.testing.assert_allclose(table.drop("truth").to_numpy(), skm.confusion_matrix(y, yhat))
    ints = pl.DataFrame(
        {
            "y": pl.Series([1, 2, 3, 1], dtype=pl.Int32),
            "yhat": pl.Series([1, 3, 3, 2], dtype=pl.Int8),
        }
    )
    table = ints.eval.multiclass_confusion_matrix("y", "yhat")
    np.testing.assert_allclose(
        table.drop("truth").to_numpy(), skm.confusion_matrix([1, 2, 3, 1], [1, 3, 3, 2])
    )
    assert_same(
        ints.eval.multiclass_mcc("y", "yhat"), skm.matthews_corrcoef([1, 2, 3, 1], [1, 3, 3, 2])
    )


def test_row19_constant_side_with_fractional_weights_is_null_not_rounding_noise() -> None:
    rng = np.random.default_rng(18)
    n = 500
    df = pl.DataFrame(
        {"y": rng.integers(0, 3, n), "yhat": np.zeros(n, dtype=np.int64), "w": rng.random(n) * 0.1}
    )
    out = df.select(
        pe.multiclass_mcc("y", "yhat", weight="w"),
        pe.multiclass_cohen_kappa("y", "yhat", weight="w"),
    ).row(0)
    assert out[0] is None
    assert abs(out[1]) < 1e-12
    same = df.with_columns(y=pl.lit(0, dtype=pl.Int64))
    assert same.select(pe.multiclass_cohen_kappa("y", "yhat", weight="w")).item() is None


# ---------------------------------------------------------------------------------------
# SPEC §12 coverage: balanced accuracy, Jaccard, Brier, weighted kappa, hinge, OvO AUC
# ---------------------------------------------------------------------------------------


def assert_groups_equal_frames(df: pl.DataFrame, expr: pl.Expr, collect: Collect) -> None:
    """Per group (lazy, on the fixture's engine) = the same expression on each group's
    frame (eager), value by value."""
    name = expr.meta.output_name()
    grouped = collect(df.lazy().group_by("g").agg(expr).sort("g"))
    for g, value in zip(grouped["g"], grouped[name], strict=True):
        assert_same(value, df.filter(pl.col("g") == g).select(expr).item())


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("with_classes", [False, True])
def test_balanced_accuracy_matches_sklearn(
    kind: str, weighted: bool, with_classes: bool, collect: Collect
) -> None:
    df, classes = mc_data(kind=kind, seed=20, groups=3)
    y, yhat, _, w = np_inputs(df, weighted)
    kw: dict[str, Any] = {"classes": classes if with_classes else None}
    kw["weight"] = "w" if weighted else None
    exprs = [
        pe.multiclass_balanced_accuracy("y", "yhat", **kw),
        pe.multiclass_balanced_accuracy("y", "yhat", adjusted=True, **kw).alias("adjusted"),
    ]
    got = collect(df.lazy().select(exprs)).row(0)
    for value, adjusted in zip(got, (False, True), strict=True):
        want = skm.balanced_accuracy_score(y, yhat, sample_weight=w, adjusted=adjusted)
        assert_same(value, want)
    for expr in exprs:
        assert_groups_equal_frames(df, expr, collect)


def test_balanced_accuracy_leaves_out_classes_only_predicted() -> None:
    df = pl.DataFrame({"y": [0, 0, 1, 1], "yhat": [0, 2, 1, 2]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns about the class 2 (no true row)
        want = skm.balanced_accuracy_score(df["y"], df["yhat"])
    assert_same(df.eval.multiclass_balanced_accuracy("y", "yhat"), want)
    assert_same(want, 0.5)
    got = df.select(pe.multiclass_balanced_accuracy("y", "yhat", classes=[0, 1, 2, 3])).item()
    assert_same(got, 0.5)
    one = pl.DataFrame({"y": [1, 1], "yhat": [1, 0]})
    assert one.select(pe.multiclass_balanced_accuracy("y", "yhat", adjusted=True)).item() is None
    with pytest.raises(pe.InvalidParameterError, match="adjusted"):
        pe.multiclass_balanced_accuracy("y", "yhat", adjusted=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("with_classes", [False, True])
def test_jaccard_matches_sklearn(
    kind: str, weighted: bool, with_classes: bool, collect: Collect
) -> None:
    df, classes = mc_data(kind=kind, seed=21, groups=3)
    y, yhat, _, w = np_inputs(df, weighted)
    kw: dict[str, Any] = {"classes": classes if with_classes else None}
    kw["weight"] = "w" if weighted else None
    exprs = [pe.multiclass_jaccard("y", "yhat", average=avg, **kw).alias(avg) for avg in AVERAGES]
    got = collect(df.lazy().select(exprs)).row(0, named=True)
    for avg in AVERAGES:
        want = skm.jaccard_score(y, yhat, average=avg, sample_weight=w)  # no 0/0 class
        assert_same(got[avg], want)
    for expr in exprs:
        assert_groups_equal_frames(df, expr, collect)


@pytest.mark.parametrize("weighted", [False, True])
def test_jaccard_per_class_struct_and_table_match_sklearn(weighted: bool) -> None:
    df, classes = mc_data(kind="str", seed=22)
    df = df.filter(pl.col("y") != classes[2])  # a class only predicted
    extra = [*classes, "never"]  # and one absent from both sides: null
    y, yhat, _, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    want = skm.jaccard_score(y, yhat, labels=classes, average=None, sample_weight=w)
    struct = df.select(
        pe.multiclass_jaccard("y", "yhat", average=None, classes=extra, weight=weight)
    ).item()
    assert list(struct) == extra
    for c, value in zip(classes, want, strict=True):
        assert_same(struct[c], value)
    assert struct["never"] is None  # 0/0 (scikit-learn: zero_division, 0 by default)
    macro = df.select(pe.multiclass_jaccard("y", "yhat", classes=extra, weight=weight)).item()
    assert_same(macro, skm.jaccard_score(y, yhat, average="macro", sample_weight=w))
    table = df.eval.multiclass_jaccard("y", "yhat", average=None, weight=weight)
    assert table.columns == ["class", "multiclass_jaccard", "support"]
    assert table["class"].to_list() == classes
    for c, value in zip(classes, want, strict=False):
        assert_same(table.filter(pl.col("class") == c)["multiclass_jaccard"].item(), value)


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tied", [False, True])
def test_brier_matches_sklearn(kind: str, weighted: bool, tied: bool, collect: Collect) -> None:
    df, classes = mc_data(kind=kind, seed=23, tied=tied, groups=3)
    y, _, proba, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    # scikit-learn reads the columns in the sorted order of labels: classes are sorted here
    want = skm.brier_score_loss(y, proba, labels=classes, sample_weight=w)
    for form in proba_forms(df).values():
        expr = pe.multiclass_brier("y", form, classes=classes, weight=weight)
        assert_same(collect(df.lazy().select(expr)).item(), want)
        assert_groups_equal_frames(df, expr, collect)
    assert_same(df.eval.multiclass_brier("y", "p", classes=classes, weight=weight), want)


def test_brier_of_two_classes_is_twice_the_binary_brier() -> None:
    df, classes = mc_data(kind="int", seed=24, k=2)
    y, _, proba, w = np_inputs(df, True)
    got = df.select(pe.multiclass_brier("y", "p", classes=classes, weight="w")).item()
    # scale_by_half="auto" halves the binary case; False keeps Brier's [0, 2] definition
    want = skm.brier_score_loss(y, proba, labels=classes, sample_weight=w, scale_by_half=False)
    assert_same(got, want)
    binary = df.select(pe.brier(pl.col("y") == classes[1], "p1", weight="w")).item()
    assert_same(got, 2.0 * binary)


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_weighted_kappa_matches_sklearn(
    kind: str, weighted: bool, weights: str | None, collect: Collect
) -> None:
    df, classes = mc_data(kind=kind, seed=25, groups=3)
    y, yhat, _, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    order = [classes[i] for i in (2, 0, 3, 1)]  # the positions are those of classes=
    exprs = {
        "learnt": pe.multiclass_cohen_kappa("y", "yhat", weight=weight, weights=weights),
        "given": pe.multiclass_cohen_kappa(
            "y", "yhat", classes=order, weight=weight, weights=weights
        ),
        "argmax": pe.multiclass_cohen_kappa(  # one probability column per class of order
            "y",
            proba=[f"p{classes.index(c)}" for c in order],
            classes=order,
            weight=weight,
            weights=weights,
        ),
    }
    got = collect(df.lazy().select(e.alias(k) for k, e in exprs.items())).row(0, named=True)
    assert_same(got["learnt"], skm.cohen_kappa_score(y, yhat, weights=weights, sample_weight=w))
    want = skm.cohen_kappa_score(y, yhat, labels=order, weights=weights, sample_weight=w)
    assert_same(got["given"], want)
    proba = df.select(
        pl.col("p").list.get(classes.index(c)).alias(str(c)) for c in order
    ).to_numpy()
    argmax = np.asarray(order)[proba.argmax(axis=1)]
    if kind != "int":
        argmax = argmax.astype(str)
    want = skm.cohen_kappa_score(y, argmax, labels=order, weights=weights, sample_weight=w)
    assert_same(got["argmax"], want)
    for expr in exprs.values():
        assert_groups_equal_frames(df, expr, collect)


def test_weighted_kappa_positions_skip_classes_absent_from_the_data() -> None:
    """Without classes= the positions are those of the classes present (as scikit-learn
    without labels=); with them, an absent class still takes its place."""
    df = pl.DataFrame({"y": [0, 0, 2, 2, 4], "yhat": [0, 2, 2, 4, 0]})
    for weights in ("linear", "quadratic"):
        learnt = df.eval.multiclass_cohen_kappa("y", "yhat", weights=weights)
        assert_same(learnt, skm.cohen_kappa_score(df["y"], df["yhat"], weights=weights))
        given = df.eval.multiclass_cohen_kappa(
            "y", "yhat", classes=[0, 1, 2, 3, 4], weights=weights
        )
        want = skm.cohen_kappa_score(df["y"], df["yhat"], labels=[0, 1, 2, 3, 4], weights=weights)
        assert_same(given, want)
    constant = pl.DataFrame({"y": [1, 1], "yhat": [1, 1]})
    assert constant.select(pe.multiclass_cohen_kappa("y", "yhat", weights="linear")).item() is None
    with pytest.raises(pe.InvalidParameterError, match="weights must be one of"):
        pe.multiclass_cohen_kappa("y", "yhat", weights="cubic")


def with_scores(df: pl.DataFrame, seed: int, k: int = K) -> pl.DataFrame:
    """Decision scores per class (any sign, rows not summing to 1): a List column "s" and
    columns s0 ... (some scores tied within rows)."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=(df.height, k)) * 2.0, 1)
    return df.with_columns(
        pl.Series("s", scores.tolist()), *[pl.Series(f"s{i}", scores[:, i]) for i in range(k)]
    )


def scores_cols(k: int = K) -> list[str]:
    return [f"s{i}" for i in range(k)]


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
def test_hinge_loss_matches_sklearn(kind: str, weighted: bool, collect: Collect) -> None:
    df, classes = mc_data(kind=kind, seed=26, groups=3)
    df = with_scores(df, 26)
    y, _, _, w = np_inputs(df, weighted)
    weight = "w" if weighted else None
    scores = df.select(f"s{i}" for i in range(K)).to_numpy()
    # scikit-learn reads the columns in the sorted order of labels: classes are sorted here
    want = skm.hinge_loss(y, scores, labels=classes, sample_weight=w)
    forms = {
        "list": "s",
        "array": pl.col("s").cast(pl.Array(pl.Float64, K)),
        "columns": scores_cols(),
    }
    for form in forms.values():
        expr = pe.multiclass_hinge_loss("y", form, classes=classes, weight=weight)
        assert_same(collect(df.lazy().select(expr)).item(), want)
        assert_groups_equal_frames(df, expr, collect)
    # the namespace takes decision scores (negative, not summing to 1)
    assert_same(df.eval.multiclass_hinge_loss("y", "s", classes=classes, weight=weight), want)
    cols_value = df.eval.multiclass_hinge_loss("y", scores_cols(), classes=classes, weight=weight)
    assert_same(cols_value, want)
    proba = df.select(cols()).to_numpy()  # probabilities are scores too
    assert_same(
        df.select(pe.multiclass_hinge_loss("y", "p", classes=classes, weight=weight)).item(),
        skm.hinge_loss(y, proba, labels=classes, sample_weight=w),
    )


def test_hinge_loss_of_two_classes_is_the_binary_hinge_of_the_difference() -> None:
    df, classes = mc_data(kind="int", seed=27, k=2)
    df = with_scores(df, 27, k=2)
    got = df.select(pe.multiclass_hinge_loss("y", "s", classes=classes, weight="w")).item()
    diff = df["s1"] - df["s0"]
    want = skm.hinge_loss(df["y"], diff, labels=classes, sample_weight=df["w"])
    assert_same(got, want)
    margin = pl.col("s1") - pl.col("s0")
    binary = df.select(pe.hinge_loss(pl.col("y") == classes[1], margin, weight="w")).item()
    assert_same(got, binary)


def test_hinge_loss_checks_the_scores_not_as_probabilities() -> None:
    df, classes = mc_data(n=20, kind="int", seed=28)
    df = with_scores(df, 28)
    bad = df.with_columns(s1=pl.when(pl.int_range(pl.len()) == 3).then(np.inf).otherwise("s1"))
    with pytest.raises(pe.DataValidationError, match='column "s1".*NaN or ±inf'):
        bad.eval.multiclass_hinge_loss("y", scores_cols(), classes=classes)
    nan = df.with_columns(pl.col("s").list.eval(pl.element() * float("nan")))
    with pytest.raises(pe.DataValidationError, match='column "s".*NaN or ±inf'):
        nan.eval.multiclass_hinge_loss("y", "s", classes=classes)
    assert math.isnan(nan.select(pe.multiclass_hinge_loss("y", "s", classes=classes)).item())
    with pytest.raises(pe.DataValidationError, match=r'column "s".*5 scores per row'):
        df.eval.multiclass_hinge_loss("y", "s", classes=[*classes, 99])
    with pytest.raises(pe.DataValidationError, match=r'column "y" \(argument score=\).*List'):
        df.eval.multiclass_hinge_loss("yhat", "y", classes=classes)
    with pytest.raises(pe.DataValidationError, match='column "y".*not in classes'):
        df.eval.multiclass_hinge_loss("y", "s", classes=classes[::-1][:-1] + [0])
    with pytest.raises(pe.InvalidParameterError, match="classes= is required"):
        pe.multiclass_hinge_loss("y", "s", classes=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_ovo_auc_matches_sklearn(kind: str, tied: bool, average: str, collect: Collect) -> None:
    df, classes = mc_data(kind=kind, seed=29, tied=tied, groups=3)
    y, _, proba, _ = np_inputs(df, False)
    want = skm.roc_auc_score(y, proba, multi_class="ovo", average=average, labels=classes)
    for form in proba_forms(df).values():
        expr = pe.multiclass_auc("y", form, multi_class="ovo", average=average, classes=classes)
        assert_same(collect(df.lazy().select(expr)).item(), want)
        assert_groups_equal_frames(df, expr, collect)


@pytest.mark.parametrize("tied", [False, True])
@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_weighted_ovo_auc_is_sklearn_on_repeated_rows(
    tied: bool, average: str, collect: Collect
) -> None:
    """scikit-learn's one-vs-one AUC takes no sample weights: integer weights are the
    oracle's repeated rows (a zero weight removes the row)."""
    df, classes = mc_data(kind="str", seed=30, tied=tied, groups=3)
    expr = pe.multiclass_auc(
        "y", "p", multi_class="ovo", average=average, classes=classes, weight="w"
    )
    repeated = df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64))).explode(pl.all())
    y, _, proba, _ = np_inputs(repeated.drop_nulls("y"), False)
    want = skm.roc_auc_score(y, proba, multi_class="ovo", average=average, labels=classes)
    assert_same(collect(df.lazy().select(expr)).item(), want)
    assert_groups_equal_frames(df, expr, collect)
    assert_same(
        df.eval.multiclass_auc(
            "y", cols(), multi_class="ovo", average=average, classes=classes, weight="w"
        ),
        want,
    )


def test_ovo_auc_pairs_only_the_classes_present() -> None:
    df, classes = mc_data(kind="int", seed=31)
    df = df.filter(pl.col("y") != classes[2])
    y, _, proba, _ = np_inputs(df, False)
    for average in ("macro", "weighted"):
        want = skm.roc_auc_score(y, proba, multi_class="ovo", average=average, labels=classes)
        got = df.eval.multiclass_auc("y", "p", multi_class="ovo", average=average, classes=classes)
        assert_same(got, want)
    one = df.filter(pl.col("y") == classes[0])
    assert (
        one.select(pe.multiclass_auc("y", "p", multi_class="ovo", classes=classes)).item() is None
    )
    nan = df.with_columns(p0=pl.when(pl.int_range(pl.len()) == 0).then(np.nan).otherwise("p0"))
    got = nan.select(pe.multiclass_auc("y", cols(), multi_class="ovo", classes=classes)).item()
    assert math.isnan(got)
    with pytest.raises(pe.InvalidParameterError, match='"micro" is not defined'):
        pe.multiclass_auc("y", "p", multi_class="ovo", average="micro", classes=classes)
    with pytest.raises(pe.InvalidParameterError, match="multi_class must be one of"):
        pe.multiclass_auc("y", "p", multi_class="ovx", classes=classes)


# ---------------------------------------------------------------------------------------
# the task table's metrics= (SPEC §12 metrics outside the default table)
# ---------------------------------------------------------------------------------------

EXTRA = [
    "multiclass_balanced_accuracy",
    "multiclass_jaccard",
    "multiclass_brier",
    "multiclass_hinge_loss",
    "multiclass_cohen_kappa",
    "multiclass_auc",
]
OPTIONS = [
    {"multi_class": "ovr", "weights": None, "adjusted": False},
    {"multi_class": "ovo", "weights": "linear", "adjusted": True},
    {"multi_class": "ovo", "weights": "quadratic", "adjusted": False},
]


def repeated(df: pl.DataFrame) -> pl.DataFrame:
    """Each row repeated by its integer weight (a zero weight removes it)."""
    return df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64))).explode(pl.all())


def sk_table(df: pl.DataFrame, classes: list[Any], weighted: bool, o: dict[str, Any]) -> dict:
    """The table's columns of EXTRA by scikit-learn (the one-vs-one AUC, which takes no
    sample weights, on the rows repeated by their integer weights)."""
    y, yhat, proba, w = np_inputs(df, weighted)
    want = {
        "multiclass_balanced_accuracy": skm.balanced_accuracy_score(
            y, yhat, sample_weight=w, adjusted=o["adjusted"]
        ),
        **{
            f"multiclass_jaccard_{avg}": skm.jaccard_score(y, yhat, average=avg, sample_weight=w)
            for avg in AVERAGES
        },
        # scikit-learn reads the columns in the sorted order of labels: classes are sorted
        "multiclass_brier": skm.brier_score_loss(y, proba, labels=classes, sample_weight=w),
        "multiclass_hinge_loss": skm.hinge_loss(y, proba, labels=classes, sample_weight=w),
        "multiclass_cohen_kappa": skm.cohen_kappa_score(
            y, yhat, labels=classes, weights=o["weights"], sample_weight=w
        ),
    }
    if o["multi_class"] == "ovr":
        for avg in ("macro", "weighted", "micro"):  # the table's order
            want[f"multiclass_auc_{avg}"] = skm.roc_auc_score(
                y, proba, multi_class="ovr", average=avg, labels=classes, sample_weight=w
            )
    else:
        y_rep, _, proba_rep, _ = np_inputs(repeated(df) if weighted else df, False)
        for avg in ("macro", "weighted"):
            want[f"multiclass_auc_{avg}"] = skm.roc_auc_score(
                y_rep, proba_rep, multi_class="ovo", average=avg, labels=classes
            )
    return want


@pytest.mark.parametrize("kind", ["int", "str", "cat"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("options", OPTIONS, ids=["ovr", "ovo-linear-adjusted", "ovo-quadratic"])
def test_table_metrics_match_sklearn(
    kind: str, weighted: bool, options: dict[str, Any], collect: Collect
) -> None:
    df, classes = mc_data(kind=kind, seed=40)
    weight = "w" if weighted else None
    want = sk_table(df, classes, weighted, options)
    for form in proba_forms(df).values():
        lazy = df.lazy().eval.multiclass(
            "y", pred="yhat", proba=form, classes=classes, weight=weight, metrics=EXTRA, **options
        )
        got = collect(lazy)
        assert got.columns == list(want)
        for name, value in got.row(0, named=True).items():
            assert_same(value, want[name])


def test_table_metrics_equal_the_single_metrics() -> None:
    """Without classes= (learnt per group from pred=) and with the prediction read from
    the argmax of proba=: each column is the metric's own expression."""
    df, classes = mc_data(kind="str", seed=41)
    kw: dict[str, Any] = {"weight": "w"}
    table = df.eval.multiclass(
        "y", pred="yhat", metrics=EXTRA[:2] + ["multiclass_cohen_kappa"], weights="quadratic", **kw
    )
    row = table.row(0, named=True)
    assert_same(
        row["multiclass_balanced_accuracy"], df.eval.multiclass_balanced_accuracy("y", "yhat", **kw)
    )
    for avg in AVERAGES:
        want = df.eval.multiclass_jaccard("y", "yhat", average=avg, **kw)
        assert_same(row[f"multiclass_jaccard_{avg}"], want)
    want = df.eval.multiclass_cohen_kappa("y", "yhat", weights="quadratic", **kw)
    assert_same(row["multiclass_cohen_kappa"], want)
    y, _, proba, w = np_inputs(df, True)
    argmax = np.asarray(classes)[proba.argmax(axis=1)]  # numpy: first maximum, as ours
    table = df.eval.multiclass(
        "y", proba="p", classes=classes, metrics=EXTRA[:2], adjusted=True, **kw
    )
    want = skm.balanced_accuracy_score(y, argmax, sample_weight=w, adjusted=True)
    assert_same(table["multiclass_balanced_accuracy"].item(), want)
    want = skm.jaccard_score(y, argmax, average="weighted", sample_weight=w)
    assert_same(table["multiclass_jaccard_weighted"].item(), want)


@pytest.mark.parametrize("options", OPTIONS[:2], ids=["ovr", "ovo-linear-adjusted"])
def test_table_metrics_per_group_equal_per_frame(options: dict[str, Any], collect: Collect) -> None:
    df, classes = mc_data(n=300, kind="cat", seed=42, groups=3)
    kw: dict[str, Any] = {"pred": "yhat", "proba": "p", "classes": classes, "weight": "w"}
    kw |= {"metrics": EXTRA, "baseline": True, **options}
    lazy = df.lazy().eval.multiclass("y", by="g", **kw)
    assert isinstance(lazy, pl.LazyFrame)
    table = collect(lazy)
    assert table["g"].to_list() == [0, 1, 2]
    assert_frame_equal(table, df.eval.multiclass("y", by="g", **kw), rel_tol=1e-12)
    for g in range(3):
        one = df.filter(pl.col("g") == g).eval.multiclass("y", **kw)
        row = table.filter(pl.col("g") == g).drop("g")
        assert row.columns == one.columns
        for name in one.columns:
            assert_same(row[name].item(), one[name].item())


def test_default_metrics_named_give_the_default_table() -> None:
    df, classes = mc_data(kind="int", seed=43, groups=2)
    kw: dict[str, Any] = {"pred": "yhat", "proba": "p", "classes": classes, "weight": "w"}
    default = df.eval.multiclass("y", by="g", baseline=True, **kw)
    names = [
        "multiclass_accuracy",
        "multiclass_precision",
        "multiclass_recall",
        "multiclass_f1",
        "multiclass_mcc",
        "multiclass_cohen_kappa",
        "multiclass_logloss",
        "top_k_accuracy",
        "multiclass_auc",
    ]
    named = df.eval.multiclass("y", by="g", baseline=True, metrics=names, **kw)
    assert_frame_equal(named, default)
    one = df.eval.multiclass("y", metrics="multiclass_brier", **kw)
    assert one.columns == ["multiclass_brier"]
    reordered = df.eval.multiclass("y", metrics=["multiclass_mcc", "multiclass_accuracy"], **kw)
    assert reordered.columns == ["multiclass_mcc", "multiclass_accuracy"]


def test_table_metrics_baseline_is_the_constant_predictor() -> None:
    df, classes = mc_data(kind="int", seed=44)
    df = df.filter(pl.col("y") != classes[3]).vstack(df.filter(pl.col("y") == classes[0]))
    y = df["y"].to_numpy()
    n = len(y)
    freq = np.array([np.mean(y == c) for c in classes])
    const_pred = np.full(n, classes[int(np.argmax(freq))])
    const_proba = np.tile(freq, (n, 1))
    kw: dict[str, Any] = {"pred": "yhat", "proba": "p", "classes": classes, "baseline": True}
    for options in OPTIONS:
        row = df.eval.multiclass("y", metrics=EXTRA, **kw, **options).row(0, named=True)
        want = skm.balanced_accuracy_score(y, const_pred, adjusted=options["adjusted"])
        assert_same(row["multiclass_balanced_accuracy_baseline"], want)
        for avg in AVERAGES:  # every class present in the truth: no 0/0
            want = skm.jaccard_score(y, const_pred, average=avg)
            assert_same(row[f"multiclass_jaccard_{avg}_baseline"], want)
        want = skm.brier_score_loss(y, const_proba, labels=classes)
        assert_same(row["multiclass_brier_baseline"], want)
        assert_same(
            row["multiclass_hinge_loss_baseline"], skm.hinge_loss(y, const_proba, labels=classes)
        )
        want = skm.cohen_kappa_score(y, const_pred, labels=classes, weights=options["weights"])
        assert_same(row["multiclass_cohen_kappa_baseline"], want)
        # macro / weighted over the classes present (scikit-learn: nan for an absent one)
        present = [i for i, c in enumerate(classes) if c in set(y)]
        kept = const_proba[:, present] / const_proba[:, present].sum(axis=1, keepdims=True)
        for avg in ("macro", "weighted"):
            want = skm.roc_auc_score(
                y,
                kept,
                multi_class=options["multi_class"],
                average=avg,
                labels=[classes[i] for i in present],
            )
            assert_same(row[f"multiclass_auc_{avg}_baseline"], want)
        if options["multi_class"] == "ovr":
            want = skm.roc_auc_score(
                y, const_proba, multi_class="ovr", average="micro", labels=classes
            )
            assert_same(row["multiclass_auc_micro_baseline"], want)
        if options["multi_class"] == "ovo":
            assert "multiclass_auc_micro" not in row


def test_table_metrics_errors() -> None:
    df, classes = mc_data(n=40, kind="int", seed=45)
    with pytest.raises(pe.InvalidParameterError, match="multiclass_brier needs proba="):
        df.eval.multiclass("y", pred="yhat", metrics=["multiclass_jaccard", "multiclass_brier"])
    with pytest.raises(pe.InvalidParameterError, match="multiclass_hinge_loss needs proba="):
        df.eval.multiclass("y", pred="yhat", metrics="multiclass_hinge_loss")
    with pytest.raises(pe.InvalidParameterError, match="multiclass_f_beta needs beta="):
        df.eval.multiclass("y", pred="yhat", metrics=["multiclass_f_beta"])
    for name in ("multiclass_nope", "auc", "multiclass_confusion_matrix"):
        with pytest.raises(pe.InvalidParameterError, match=f"'{name}' is not a multiclass metric"):
            df.eval.multiclass("y", pred="yhat", metrics=[name])
    with pytest.raises(pe.InvalidParameterError, match="named twice"):
        df.eval.multiclass("y", pred="yhat", metrics=["multiclass_mcc", "multiclass_mcc"])
    with pytest.raises(pe.InvalidParameterError, match="multi_class must be one of"):
        df.eval.multiclass("y", pred="yhat", multi_class="ovx")
    with pytest.raises(pe.InvalidParameterError, match="the row weights are weight="):
        df.eval.multiclass("y", pred="yhat", weights="w")  # type: ignore[arg-type]
    with pytest.raises(pe.InvalidParameterError, match="adjusted must be True or False"):
        df.eval.multiclass("y", pred="yhat", adjusted=1)  # type: ignore[arg-type]


def test_a_registered_metric_without_a_table_form_is_bound_to_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new multiclass metric needs nothing but its registration to be in metrics=: its
    spec is bound to the table's arguments (no baseline column without a constant form)."""
    from polars_eval._core import registry
    from polars_eval._core.spec import MetricSpec
    from polars_eval.metrics import multiclass as m

    def multiclass_f2(
        label: Any,
        pred: Any = None,
        *,
        proba: Any = None,
        classes: Any = None,
        weight: Any = None,
    ) -> MetricSpec:
        spec = registry.get("multiclass_f_beta").spec
        assert spec is not None
        return spec(label, pred, beta=2.0, proba=proba, classes=classes, weight=weight)

    info = registry.MetricInfo(
        "multiclass_f2", "multiclass", multiclass_f2, m.PRED_INPUTS, spec=multiclass_f2
    )
    monkeypatch.setitem(registry.REGISTRY, "multiclass_f2", info)
    df, classes = mc_data(kind="str", seed=46, groups=2)
    y, yhat, _, w = np_inputs(df, True)
    table = df.eval.multiclass(
        "y", pred="yhat", weight="w", metrics=["multiclass_f2", "multiclass_mcc"], baseline=True
    )
    assert table.columns == ["multiclass_f2", "multiclass_mcc", "multiclass_mcc_baseline"]
    want = skm.fbeta_score(y, yhat, beta=2.0, average="macro", sample_weight=w)
    assert_same(table["multiclass_f2"].item(), want)
    by = df.lazy().eval.multiclass("y", pred="yhat", weight="w", metrics="multiclass_f2", by="g")
    for g, value in by.collect().iter_rows():
        part = df.filter(pl.col("g") == g)
        assert_same(value, part.eval.multiclass_f_beta("y", "yhat", beta=2.0, weight="w"))


def test_evaluation_passes_metrics_to_the_table() -> None:
    """pe.Evaluation("multiclass", metrics=[registered names]) computes the table's
    metrics= (the ones outside the default table included) over merged partitions; names
    of default columns still select them."""
    df, classes = mc_data(n=300, kind="str", seed=47, groups=3)
    columns: dict[str, Any] = {"label": "y", "pred": "yhat", "proba": cols(), "classes": classes}
    options: dict[str, Any] = {"multi_class": "ovo", "weights": "linear", "adjusted": True}
    ev = pe.Evaluation("multiclass", by="g", weight="w", metrics=EXTRA, **columns, **options)
    other = pe.Evaluation("multiclass", by="g", weight="w", metrics=EXTRA, **columns, **options)
    ev.update(df.head(120)).merge(other.update(df.tail(180)))
    want = df.eval.multiclass(
        "y", pred="yhat", proba=cols(), classes=classes, weight="w", by="g", metrics=EXTRA,
        **options,
    )  # fmt: skip
    assert_frame_equal(ev.compute(), want, rel_tol=1e-12)
    picked = pe.Evaluation(
        "multiclass", metrics=["multiclass_accuracy", "multiclass_f1_macro"], **columns
    ).update(df)
    assert picked.compute().columns == ["multiclass_accuracy", "multiclass_f1_macro"]


@pytest.mark.parametrize("column", ["y", "yhat"])
def test_nan_class_ids_are_an_error_in_the_namespace(column: str) -> None:
    """BAD_INPUTS 2: a NaN label or prediction (a float class column) is an error naming
    the column, never a wrong class counted silently (it gave 2/3 here)."""
    df = pl.DataFrame({"y": [0.0, 1.0, 2.0], "yhat": [0.0, 1.0, 2.0]})
    df = df.with_columns(
        pl.when(pl.int_range(3) == 1).then(float("nan")).otherwise(pl.col(column)).alias(column)
    )
    before = df.clone()
    for call in (
        lambda f: f.eval.multiclass_accuracy("y", "yhat"),
        lambda f: f.eval.multiclass_f1("y", "yhat", average="macro"),
        lambda f: f.eval.multiclass("y", pred="yhat"),
        lambda f: f.lazy().eval.multiclass_accuracy("y", "yhat").collect(),
    ):
        with pytest.raises(
            pe.DataValidationError,
            match=f'column "{column}" must hold finite class ids; found 1 rows',
        ):
            call(df)
    assert df.eval.multiclass_accuracy("y", "yhat", validate=False) is not None
    assert_frame_equal(df, before)
