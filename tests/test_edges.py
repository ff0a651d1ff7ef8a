"""Contract edges of the binary, multiclass and regression families (issue 13).

SPEC §2 (integer counts, undefined values, messages) and BAD_INPUTS.md rows 19 and
49-51. Oracles: scikit-learn, scipy and hand-worked values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from sklearn import metrics as skm

import polars_eval as pe

Collect = Callable[[pl.LazyFrame], pl.DataFrame]


def binary_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "y": [1, 0, 1, 0, 1, 0, 1, 0, 1],
            "score": [0.9, 0.8, 0.7, 0.3, 0.6, 0.1, 0.35, 0.5, 0.2],
            "w": [1.0, 2.0, 1.0, 1.0, 3.0, 1.0, 1.0, 2.0, 0.5],
            "g": ["a", "a", "a", "a", "b", "b", "b", "b", "b"],
        }
    )


# ---------------------------------------------------------------------------------------
# SPEC §2: unweighted confusion counts are integers, weighted ones Float64
# ---------------------------------------------------------------------------------------


def _sk_counts(y: Any, s: Any, w: Any = None) -> dict[str, Any]:
    yhat = (np.asarray(s) >= 0.5).astype(int)
    cm = skm.confusion_matrix(np.asarray(y), yhat, labels=[0, 1], sample_weight=w)
    tn, fp, fn, tp = cm.ravel().tolist()
    return {"tp": tp, "fp": fp, "tn": tn, "fn": fn}


def test_binary_confusion_counts_are_integers_unweighted(collect: Collect) -> None:
    df = binary_frame()
    out = collect(df.lazy().select(pe.confusion_matrix("y", "score")))
    dtype = out.schema["confusion_matrix"]
    assert isinstance(dtype, pl.Struct)
    assert {f.name: f.dtype for f in dtype.fields} == dict.fromkeys(
        ("tp", "fp", "tn", "fn"), pl.Int64
    )
    got = out.item()
    want = _sk_counts(df["y"], df["score"])
    assert got == want
    assert all(isinstance(v, int) for v in got.values())


def test_binary_confusion_counts_with_pred_and_groups_are_integers(collect: Collect) -> None:
    df = binary_frame().with_columns(hard=(pl.col("score") >= 0.5).cast(pl.Int8))
    out = collect(df.lazy().group_by("g").agg(pe.confusion_matrix("y", pred="hard")).sort("g"))
    for g, counts in zip(out["g"], out["confusion_matrix"], strict=True):
        part = df.filter(pl.col("g") == g)
        assert counts == _sk_counts(part["y"], part["score"])
        assert all(isinstance(v, int) for v in counts.values())


def test_binary_confusion_counts_weighted_stay_float(collect: Collect) -> None:
    df = binary_frame()
    out = collect(df.lazy().select(pe.confusion_matrix("y", "score", weight="w")))
    dtype = out.schema["confusion_matrix"]
    assert isinstance(dtype, pl.Struct)
    assert all(f.dtype == pl.Float64 for f in dtype.fields)
    assert out.item() == pytest.approx(_sk_counts(df["y"], df["score"], df["w"].to_numpy()))


def test_binary_confusion_table_dtypes() -> None:
    df = binary_frame()
    table = df.eval.confusion_matrix("y", "score")
    assert table.schema["predicted_0"] == pl.Int64
    assert table.schema["predicted_1"] == pl.Int64
    want = skm.confusion_matrix(df["y"], (df["score"] >= 0.5).cast(pl.Int64), labels=[0, 1])
    np.testing.assert_array_equal(table.drop("truth").to_numpy(), want)
    by = df.eval.confusion_matrix("y", "score", by="g")
    assert [by.schema[k] for k in ("tp", "fp", "tn", "fn")] == [pl.Int64] * 4
    weighted = df.eval.confusion_matrix("y", "score", weight="w")
    assert weighted.schema["predicted_0"] == pl.Float64


def test_binary_confusion_counts_nan_score_is_null_unweighted() -> None:
    """An integer count cannot be NaN: a used NaN score makes the counts null (never a
    number that counted NaN as positive)."""
    df = pl.DataFrame({"y": [1, 0], "score": [float("nan"), 0.2]})
    assert df.select(pe.confusion_matrix("y", "score")).item() == dict.fromkeys(
        ("tp", "fp", "tn", "fn")
    )


def test_multiclass_confusion_counts_are_integers_unweighted(collect: Collect) -> None:
    y = [0, 1, 2, 2, 1, 0, 2]
    yhat = [0, 2, 2, 1, 1, 0, 0]
    w = [1.0, 2.0, 0.5, 1.0, 1.0, 3.0, 1.0]
    df = pl.DataFrame({"y": y, "yhat": yhat, "w": w})
    cells = collect(df.lazy().select(pe.multiclass_confusion_matrix("y", "yhat")))
    inner = cells.schema["multiclass_confusion_matrix"].inner  # type: ignore[attr-defined]
    assert dict(inner.to_schema())["weight"] == pl.Int64
    table = df.eval.multiclass_confusion_matrix("y", "yhat")
    assert all(table.schema[c] == pl.Int64 for c in table.columns)
    np.testing.assert_array_equal(table.drop("truth").to_numpy(), skm.confusion_matrix(y, yhat))
    weighted = df.eval.multiclass_confusion_matrix("y", "yhat", weight="w")
    assert all(weighted.schema[c] == pl.Float64 for c in weighted.columns if c != "truth")
    np.testing.assert_allclose(
        weighted.drop("truth").to_numpy(), skm.confusion_matrix(y, yhat, sample_weight=w)
    )


# ---------------------------------------------------------------------------------------
# BAD_INPUTS row 50: multiclass proba as a pl.Array column
# ---------------------------------------------------------------------------------------

CLASSES = ["a", "b", "c"]


def array_frame(n: int = 60, seed: int = 3) -> pl.DataFrame:
    """Labels, a group, weights and probabilities stored in an ``Array(Float64, 3)`` column
    (a real Array column, not a cast inside the expression), with a null row."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), y] += 1.0
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    rows: list[Any] = proba.tolist()
    rows[5] = None
    return pl.DataFrame(
        {
            "y": [CLASSES[i] for i in y],
            "g": rng.integers(0, 2, n),
            "w": rng.integers(1, 4, n).astype(np.float64),
            "p": rows,
        },
        schema={"y": pl.String, "g": pl.Int64, "w": pl.Float64, "p": pl.Array(pl.Float64, 3)},
    )


def _sk_proba(df: pl.DataFrame, weighted: bool) -> dict[str, float]:
    used = df.filter(pl.col("p").is_not_null())
    y = used["y"].to_list()
    proba = np.array(used["p"].to_list())
    w = used["w"].to_numpy() if weighted else None
    top1 = proba.argmax(axis=1)
    return {
        "multiclass_logloss": skm.log_loss(y, proba, labels=CLASSES, sample_weight=w),
        "top_k_accuracy": skm.top_k_accuracy_score(y, proba, k=2, labels=CLASSES, sample_weight=w),
        "multiclass_auc": skm.roc_auc_score(
            y, proba, multi_class="ovr", labels=CLASSES, sample_weight=w
        ),
        "multiclass_accuracy": skm.accuracy_score(y, [CLASSES[i] for i in top1], sample_weight=w),
    }


@pytest.mark.parametrize("weighted", [False, True])
def test_array_proba_bare_expressions_match_sklearn(weighted: bool, collect: Collect) -> None:
    df = array_frame()
    weight = "w" if weighted else None
    exprs = [
        pe.multiclass_logloss("y", "p", classes=CLASSES, weight=weight),
        pe.top_k_accuracy("y", "p", k=2, classes=CLASSES, weight=weight),
        pe.multiclass_auc("y", "p", classes=CLASSES, weight=weight),
        pe.multiclass_accuracy("y", proba="p", classes=CLASSES, weight=weight),
    ]
    got = collect(df.lazy().select(exprs)).row(0, named=True)
    assert got == pytest.approx(_sk_proba(df, weighted), rel=1e-12)
    per_group = collect(df.lazy().group_by("g").agg(exprs).sort("g"))
    for row in per_group.iter_rows(named=True):
        part = df.filter(pl.col("g") == row.pop("g"))
        assert row == pytest.approx(_sk_proba(part, weighted), rel=1e-12)


def test_array_proba_namespace_equals_list_column() -> None:
    df = array_frame()
    as_list = df.with_columns(pl.col("p").arr.to_list())
    want = _sk_proba(df, weighted=True)
    ns = df.eval
    assert ns.multiclass_logloss("y", "p", classes=CLASSES, weight="w") == pytest.approx(
        want["multiclass_logloss"], rel=1e-12
    )
    assert ns.top_k_accuracy("y", "p", classes=CLASSES, weight="w") == pytest.approx(
        want["top_k_accuracy"], rel=1e-12
    )
    table = ns.multiclass("y", proba="p", classes=CLASSES, weight="w", by="g")
    assert_frame_equal_approx(
        table, as_list.eval.multiclass("y", proba="p", classes=CLASSES, weight="w", by="g")
    )
    lazy = df.lazy().eval.multiclass("y", proba="p", classes=CLASSES, weight="w").collect()
    assert lazy["multiclass_logloss"].item() == pytest.approx(want["multiclass_logloss"], rel=1e-12)


def assert_frame_equal_approx(a: pl.DataFrame, b: pl.DataFrame) -> None:
    from polars.testing import assert_frame_equal

    assert_frame_equal(a, b, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda f: f.eval.multiclass_logloss("y", "p", classes=["a", "b", "c", "d"]),
        lambda f: f.eval.top_k_accuracy("y", "p", classes=["a", "b", "c", "d"]),
        lambda f: f.eval.multiclass_auc("y", "p", classes=["a", "b", "c", "d"]),
        lambda f: f.eval.multiclass("y", proba="p", classes=["a", "b", "c", "d"]),
        lambda f: (
            f.lazy().eval.multiclass_logloss("y", "p", classes=["a", "b", "c", "d"]).collect()
        ),
    ],
)
def test_array_proba_of_wrong_width_gets_the_list_error(call: Callable[[Any], Any]) -> None:
    df = array_frame()
    with pytest.raises(pe.DataValidationError) as as_array:
        call(df)
    with pytest.raises(pe.DataValidationError) as as_list:
        call(df.with_columns(pl.col("p").arr.to_list()))
    message = str(as_array.value)
    assert message == str(as_list.value)
    assert 'column "p" must hold 4 probabilities per row' in message
    assert "59 rows of another length, e.g. [3]" in message  # the null row is ignored


# ---------------------------------------------------------------------------------------
# BAD_INPUTS row 51: empty groups for the median- and rank-based regression metrics
# ---------------------------------------------------------------------------------------

MEDIAN_RANK = ["medae", "mer", "spearman", "kendall_tau"]


def _regression_frame() -> pl.DataFrame:
    """Group "a" is ordinary; "b" is emptied by nulls; "c" by zero weights."""
    return pl.DataFrame(
        {
            "g": ["a"] * 5 + ["b"] * 2 + ["c"] * 2,
            "y": [1.0, 2.0, 4.0, 8.0, 5.0, None, 3.0, 1.0, 2.0],
            "p": [1.5, 2.0, 3.0, 10.0, 4.0, 2.0, None, 1.0, 3.0],
            "w": [1.0, 2.0, 1.0, 1.0, 3.0, 1.0, 1.0, 0.0, 0.0],
        }
    )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", MEDIAN_RANK)
def test_median_and_rank_metrics_on_an_empty_frame_with_groups(
    name: str, weighted: bool, collect: Collect
) -> None:
    empty = _regression_frame().clear()
    expr = getattr(pe, name)("y", "p", weight="w" if weighted else None)
    eager = empty.group_by("g").agg(expr)  # raised InvalidOperationError (cum_sum on Null)
    assert eager.schema == pl.Schema({"g": pl.String, name: pl.Float64})
    assert eager.height == 0
    assert collect(empty.lazy().group_by("g").agg(expr)).height == 0
    assert empty.select(expr).item() is None
    assert empty.eval.regression("y", "p", by="g").height == 0


@pytest.mark.parametrize("name", MEDIAN_RANK)
def test_median_and_rank_metrics_on_groups_emptied_by_nulls_or_zero_weights(
    name: str, collect: Collect
) -> None:
    from scipy import stats

    df = _regression_frame()
    expr = getattr(pe, name)("y", "p", weight="w")
    got = dict(collect(df.lazy().group_by("g").agg(expr)).sort("g").iter_rows())
    assert got["b"] is None and got["c"] is None
    a = df.filter(pl.col("g") == "a")
    y, p, w = (a[c].to_numpy() for c in ("y", "p", "w"))
    reps = w.astype(int)  # integer weights = repeated rows
    yr, pr = np.repeat(y, reps), np.repeat(p, reps)
    want = {
        "medae": float(np.median(np.abs(yr - pr))),
        "mer": float(np.median(np.abs(yr - pr) / np.abs(yr))),
        "spearman": stats.spearmanr(yr, pr).statistic,
        "kendall_tau": stats.kendalltau(yr, pr).statistic,
    }[name]
    assert got["a"] == pytest.approx(want, rel=1e-12)
    with pytest.warns(pe.UndefinedMetricWarning, match="2 of 3 groups"):
        by = getattr(df.eval, name)("y", "p", weight="w", by="g")
    assert by[name].to_list()[1:] == [None, None]


def test_residual_qq_on_an_empty_frame_with_groups() -> None:
    empty = _regression_frame().clear()
    out = empty.group_by("g").agg(pe.residual_qq("y", "p"))  # raised on the same helper
    assert out.height == 0


# ---------------------------------------------------------------------------------------
# Messages: no rows to evaluate (BAD_INPUTS rows 5, 37, 49)
# ---------------------------------------------------------------------------------------

EMPTY_CASES = {
    "empty": (lambda df: df.clear(), "the input has no rows"),
    "zero-weights": (
        lambda df: df.with_columns(w=pl.lit(0.0)),
        'all 9 rows have weight 0 in "w"',
    ),
    "nulls-and-zero-weights": (
        lambda df: df.with_columns(w=pl.when(pl.int_range(pl.len()) < 4).then(None).otherwise(0.0)),
        'of 9 rows, 4 have a null in "y", "score" or "w" and 5 have weight 0 in "w"',
    ),
}


@pytest.mark.parametrize("case", list(EMPTY_CASES))
@pytest.mark.parametrize("name", ["auc", "average_precision", "recall", "logloss", "ks"])
def test_single_binary_metric_without_rows_says_no_rows(case: str, name: str) -> None:
    make, why = EMPTY_CASES[case]
    df = make(binary_frame())
    with pytest.raises(pe.UndefinedMetricError) as info:  # was "needs both classes present"
        getattr(df.eval, name)("y", "score", weight="w")
    assert str(info.value) == f"no rows to evaluate for {name}: {why}"
    with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate"):
        getattr(df.lazy().eval, name)("y", "score", weight="w").collect()


def test_rows_with_one_class_keep_their_own_reason() -> None:
    one_class = binary_frame().with_columns(y=pl.lit(1))
    with pytest.raises(pe.UndefinedMetricError, match="needs both classes present"):
        one_class.eval.auc("y", "score")


@pytest.mark.parametrize("case", list(EMPTY_CASES))
def test_task_tables_without_rows_raise_without_by(case: str) -> None:
    """Row 49: as a single metric, never an all-null row (nor only a warning)."""
    make, why = EMPTY_CASES[case]
    df = make(binary_frame()).with_columns(
        yhat=pl.col("y"), q=pl.concat_list(1.0 - pl.col("score"), pl.col("score"))
    )
    calls = {
        "binary": lambda f: f.eval.binary("y", "score", weight="w"),
        "regression": lambda f: f.eval.regression("y", "score", weight="w"),
        "multiclass": lambda f: f.eval.multiclass("y", pred="yhat", weight="w"),
        "multiclass_proba": lambda f: f.eval.multiclass("y", proba="q", classes=[0, 1], weight="w"),
    }
    for task, call in calls.items():
        with pytest.raises(pe.UndefinedMetricError) as info:
            call(df)
        assert isinstance(info.value, ValueError)
        message = str(info.value)
        assert message.startswith("no rows to evaluate: "), (task, message)
        assert message.split(": ", 1)[1].startswith(why.split(" in ")[0]), (task, message)
        with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate"):
            call(df.lazy()).collect()


def test_task_tables_of_an_empty_frame_with_by_are_empty() -> None:
    empty = binary_frame().clear()
    assert empty.eval.binary("y", "score", by="g").height == 0
    assert empty.eval.regression("y", "score", by="g").height == 0


def test_task_table_with_rows_but_undefined_values_still_only_warns() -> None:
    one_class = binary_frame().with_columns(y=pl.lit(1))
    with pytest.warns(pe.UndefinedMetricWarning, match="needs both classes present"):
        out = one_class.eval.binary("y", "score")
    assert out["auc"].item() is None
    assert out["accuracy"].item() == pytest.approx(
        skm.accuracy_score(one_class["y"], one_class["score"] >= 0.5)
    )


def test_multiclass_and_regression_single_metrics_say_no_rows() -> None:
    df = pl.DataFrame({"y": [1.0, 2.0], "p": [1.0, 3.0], "w": [0.0, 0.0]})
    with pytest.raises(
        pe.UndefinedMetricError,
        match=r'^no rows to evaluate for r2: all 2 rows have weight 0 in "w"$',
    ):
        df.eval.r2("y", "p", weight="w")
    with pytest.raises(
        pe.UndefinedMetricError,
        match="^no rows to evaluate for multiclass_f1: the input has no rows$",
    ):
        df.clear().eval.multiclass_f1("y", "p")


# ---------------------------------------------------------------------------------------
# Messages: pos_label not among the labels
# ---------------------------------------------------------------------------------------


def _string_labels() -> pl.DataFrame:
    return binary_frame().with_columns(y=pl.col("y").replace_strict({1: "Y", 0: "N"}))


@pytest.mark.parametrize(
    "call",
    [
        lambda f: f.eval.accuracy("y", "score", pos_label="yes"),  # was a silent 0.44
        lambda f: f.eval.auc("y", "score", pos_label="yes"),  # was "needs both classes"
        lambda f: f.eval.binary("y", "score", pos_label="yes"),
        lambda f: f.eval.binary("y", "score", pos_label="yes", by="g"),
        lambda f: f.lazy().eval.recall("y", "score", pos_label="yes").collect(),
        lambda f: f.with_columns(pl.col("y").cast(pl.Categorical)).eval.f1(
            "y", "score", pos_label="yes"
        ),
    ],
)
def test_pos_label_not_among_the_labels_is_an_error_listing_them(
    call: Callable[[pl.DataFrame], Any],
) -> None:
    # scikit-learn refuses it too: "pos_label=yes is not a valid label"
    df = _string_labels()
    with pytest.raises(ValueError, match="pos_label"):
        skm.recall_score(df["y"], np.where(df["score"] >= 0.5, "Y", "N"), pos_label="yes")
    with pytest.raises(pe.DataValidationError) as info:
        call(df)
    message = str(info.value)
    assert message.startswith("column \"y\" does not hold pos_label='yes' among its labels")
    assert message.endswith("e.g. [Y, N]"), message


def test_pos_label_of_the_wrong_type_is_an_error() -> None:
    with pytest.raises(
        pe.DataValidationError,
        match=r'pos_label=1 cannot be a label of column "y", which holds String',
    ):
        _string_labels().eval.auc("y", "score", pos_label=1)
    with pytest.raises(
        pe.DataValidationError,
        match=r"pos_label='Y' cannot be a label of column \"y\", which holds Int64",
    ):
        binary_frame().eval.auc("y", "score", pos_label="Y")


def test_pos_label_present_or_labels_of_one_value_are_fine() -> None:
    df = _string_labels()
    want = skm.roc_auc_score(df["y"] == "Y", df["score"])
    assert df.eval.auc("y", "score", pos_label="Y") == pytest.approx(want)
    numeric = binary_frame().with_columns(y=pl.col("y") + 1)  # labels {1, 2}
    assert numeric.eval.auc("y", "score", pos_label=2) == pytest.approx(want)
    with pytest.raises(pe.DataValidationError, match="pos_label=3"):
        numeric.eval.auc("y", "score", pos_label=3)
    negatives = df.filter(pl.col("y") == "N")  # one value: a group may lack positives
    assert negatives.eval.accuracy("y", "score", pos_label="Y") == pytest.approx(
        skm.accuracy_score(np.zeros(negatives.height), negatives["score"] >= 0.5)
    )


# ---------------------------------------------------------------------------------------
# Cohen's kappa with a constant side (BAD_INPUTS row 19, revised)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_kappa_with_one_constant_side_is_sklearns_zero(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    varying = rng.integers(0, 2, n)
    varying[:2] = [0, 1]
    constant = np.full(n, int(rng.integers(0, 2)))
    w = rng.random(n)
    for y, yhat in ((varying, constant), (constant, varying)):
        df = pl.DataFrame({"y": y, "h": yhat, "w": w})
        for weight in (None, "w"):
            sw = None if weight is None else w
            want = skm.cohen_kappa_score(y, yhat, sample_weight=sw)
            assert want == 0.0
            got = df.select(
                pe.cohen_kappa("y", pred="h", weight=weight),
                pe.multiclass_cohen_kappa("y", "h", weight=weight),
            ).row(0)
            assert got == pytest.approx((want, want), abs=1e-12)
            assert df.eval.cohen_kappa("y", pred="h", weight=weight) == pytest.approx(
                want, abs=1e-12
            )
            with pytest.warns(pe.UndefinedMetricWarning, match="mcc is undefined"):
                table = df.eval.binary("y", "h", weight=weight, probability=False)
            assert table["cohen_kappa"].item() == pytest.approx(want, abs=1e-12)


def test_kappa_is_null_only_when_chance_agreement_is_one() -> None:
    same = pl.DataFrame({"y": [1, 1, 1], "h": [1, 1, 1], "w": [0.1, 0.2, 0.7]})
    with np.errstate(invalid="ignore", divide="ignore"):
        want = skm.cohen_kappa_score(same["y"], same["h"], sample_weight=same["w"])
    assert np.isnan(want)  # scikit-learn: 0/0
    got = same.select(
        pe.cohen_kappa("y", pred="h", weight="w"), pe.multiclass_cohen_kappa("y", "h", weight="w")
    ).row(0)
    assert got == (None, None)
    with pytest.raises(pe.UndefinedMetricError, match="chance agreement"):
        same.eval.cohen_kappa("y", pred="h")
