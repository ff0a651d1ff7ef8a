"""Bad and edge inputs of binary metrics: every row of BAD_INPUTS.md that applies.

Each test names its row (``row N``). Errors are checked for their type (all are
ValueErrors) and for naming the column; lazy inputs raise at collect time; the caller's
frame is never modified.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import oracles as O
import polars as pl
import pytest

import polars_eval as pe

NAN = float("nan")
INF = float("inf")

ORDER_METRICS = ["auc", "pr_auc", "average_precision", "ks", "gini", "max_f1", "max_mcc"]
PROBA_METRICS = ["logloss", "brier", "ece"]
THRESHOLD_METRICS = ["accuracy", "precision", "recall", "f1", "mcc", "cohen_kappa", "npv"]
SCALARS = ORDER_METRICS + PROBA_METRICS + THRESHOLD_METRICS


def frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "y": [1, 0, 1, 0, 1, 0, 1, 0],
            "score": [0.9, 0.8, 0.7, 0.3, 0.6, 0.1, 0.35, 0.5],
            "w": [1.0, 2.0, 1.0, 1.0, 3.0, 1.0, 1.0, 2.0],
            "g": ["a", "a", "a", "a", "b", "b", "b", "b"],
        }
    )


def expr_values(df: pl.DataFrame, names: list[str], **kwargs: Any) -> dict[str, Any]:
    return df.select(getattr(pe, n)("y", "score", **kwargs) for n in names).row(0, named=True)


def is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def raises_naming(
    fn: Callable[[], Any], column: str, error: type[Exception] = pe.DataValidationError
) -> str:
    """Run ``fn``; it must raise ``error`` (a ValueError) whose message names ``column``."""
    with pytest.raises(error) as info:
        fn()
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert f'"{column}"' in message, message
    return message


def lazy_raises_naming(
    lf: pl.LazyFrame, method: str, column: str, *args: Any, **kwargs: Any
) -> None:
    """The namespace on a LazyFrame builds without error and raises at collect, on both engines."""
    out = getattr(lf.eval, method)(*args, **kwargs)
    assert isinstance(out, pl.LazyFrame)
    for engine in ("in-memory", "streaming"):
        raises_naming(lambda e=engine: out.collect(engine=e), column)


# row 1 -------------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["y", "score", "w"])
def test_row1_null_rows_are_ignored(column: str) -> None:
    df = frame()
    with_null = df.with_columns(
        pl.when(pl.int_range(pl.len()) == 2).then(None).otherwise(pl.col(column)).alias(column)
    )
    dropped = df.filter(pl.int_range(pl.len()) != 2)
    assert expr_values(with_null, SCALARS, weight="w") == pytest.approx(
        expr_values(dropped, SCALARS, weight="w")
    )
    assert with_null.eval.auc("y", "score", weight="w") == pytest.approx(
        dropped.eval.auc("y", "score", weight="w")
    )
    assert with_null.eval.roc_curve("y", "score", weight="w").equals(
        dropped.eval.roc_curve("y", "score", weight="w")
    )


def test_row1_null_prediction_is_ignored() -> None:
    df = frame().with_columns(hard=pl.Series([1, None, 1, 0, 1, 0, None, 1]))
    dropped = df.drop_nulls("hard")
    for name in THRESHOLD_METRICS:
        a = df.select(getattr(pe, name)("y", pred="hard")).item()
        b = dropped.select(getattr(pe, name)("y", pred="hard")).item()
        assert a == pytest.approx(b), name


# row 2 -------------------------------------------------------------------------------


def with_nan(column: str = "score") -> pl.DataFrame:
    return frame().with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(NAN).otherwise(pl.col(column)).alias(column)
    )


def test_row2_nan_score_gives_nan_in_expressions() -> None:
    got = expr_values(with_nan(), SCALARS, weight="w")
    for name, value in got.items():
        assert is_nan(value), f"{name}: {value!r} (NaN must never be a large score)"


def test_row2_nan_score_gives_nan_per_group_only_in_its_group() -> None:
    out = with_nan().group_by("g").agg(pe.auc("y", "score"), pe.f1("y", "score")).sort("g")
    assert is_nan(out["auc"][0]) and is_nan(out["f1"][0])
    assert not is_nan(out["auc"][1]) and not is_nan(out["f1"][1])


CURVES = [
    pytest.param(name)
    for name in ["roc_curve", "pr_curve", "threshold_table", "lorenz_curve", "gain_table"]
] + ["calibration_table"]


@pytest.mark.parametrize("name", CURVES)
def test_row2_nan_score_is_not_a_large_score_in_curves(name: str) -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 0], "score": [0.9, NAN, 0.4, 0.2]})
    got = df.select(getattr(pe, name)("y", "score")).item().to_list()
    # today: the NaN row is the first (highest) threshold, with finite counts and rates
    fields = [v for p in got for k, v in p.items() if k not in ("threshold", "min_score", "bin")]
    assert any(is_nan(v) for v in fields), got  # NaN in -> NaN out


@pytest.mark.parametrize("name", ["auc", "logloss", "f1", "roc_curve", "pr_auc"])
def test_row2_nan_score_is_an_error_in_the_namespace(name: str) -> None:
    df = with_nan()
    message = raises_naming(lambda: getattr(df.eval, name)("y", "score"), "score")
    assert "NaN" in message and "1 rows" in message
    lazy_raises_naming(df.lazy(), name, "score", "y", "score")


def test_row2_nan_weight_is_an_error() -> None:
    df = with_nan("w")
    raises_naming(lambda: df.eval.auc("y", "score", weight="w"), "w")


# row 3 -------------------------------------------------------------------------------


def test_row3_inf_scores_are_an_error_in_the_namespace() -> None:
    df = frame().with_columns(score=pl.Series([INF, 0.8, 0.7, -INF, 0.6, 0.1, 0.35, 0.5]))
    raises_naming(lambda: df.eval.auc("y", "score"), "score")
    lazy_raises_naming(df.lazy(), "auc", "score", "y", "score")


def test_row3_inf_scores_are_ranked_by_a_bare_expression() -> None:
    raw = [INF, 0.8, 0.7, -INF, 0.6, 0.1, 0.35, 0.5]
    df = frame().with_columns(score=pl.Series(raw))
    finite = frame().with_columns(score=pl.Series([1e9, 0.8, 0.7, -1e9, 0.6, 0.1, 0.35, 0.5]))
    for name in ORDER_METRICS:
        a = df.select(getattr(pe, name)("y", "score")).item()
        b = finite.select(getattr(pe, name)("y", "score")).item()
        assert a == pytest.approx(b), name
    assert df.eval.auc("y", "score", validate=False) == pytest.approx(
        O.sk_auc(df["y"], np.clip(raw, -1e9, 1e9))
    )


# row 5 and 37 --------------------------------------------------------------------------

EMPTY = pl.DataFrame(schema={"y": pl.Int64, "score": pl.Float64, "w": pl.Float64, "g": pl.String})


@pytest.mark.parametrize(
    "df",
    [
        EMPTY,
        frame().with_columns(score=pl.lit(None, dtype=pl.Float64)),
        frame().with_columns(w=pl.lit(0.0)),
    ],
    ids=["empty", "all-null", "all-zero-weight"],
)
def test_row5_row37_empty_is_null_in_expressions(df: pl.DataFrame) -> None:
    got = expr_values(df, SCALARS, weight="w")
    assert all(v is None for v in got.values()), got


@pytest.mark.parametrize("name", ["auc", "logloss", "f1", "pr_auc", "max_mcc"])
def test_row5_empty_frame_raises_without_by(name: str) -> None:
    with pytest.raises(pe.UndefinedMetricError) as info:
        getattr(EMPTY.eval, name)("y", "score")
    assert isinstance(info.value, ValueError)
    assert name in str(info.value)
    lazy = getattr(EMPTY.lazy().eval, name)("y", "score")
    with pytest.raises(pe.UndefinedMetricError):
        lazy.collect()


@pytest.mark.parametrize("baseline", [False, True])
@pytest.mark.parametrize("validate", [True, False])
def test_row5_empty_frame_with_by_is_an_empty_table(baseline: bool, validate: bool) -> None:
    # the schema of a table over rows, no rows (baseline=True raised Polars' own error)
    kw = {"weight": "w", "by": "g", "baseline": baseline, "validate": validate}
    want = frame().eval.binary("y", "score", **kw).schema
    got = EMPTY.eval.binary("y", "score", **kw)
    assert got.height == 0
    assert got.schema == want
    assert EMPTY.lazy().eval.binary("y", "score", **kw).collect().schema == want


def test_row37_all_zero_weights_raise_without_by() -> None:
    df = frame().with_columns(w=pl.lit(0.0))
    with pytest.raises(pe.UndefinedMetricError):
        df.eval.auc("y", "score", weight="w")


def one_warning(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    mine = [w for w in caught if issubclass(w.category, pe.UndefinedMetricWarning)]
    others = [w for w in caught if not issubclass(w.category, pe.UndefinedMetricWarning)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    assert not others, [str(w.message) for w in others]
    return out, str(mine[0].message)


@pytest.mark.parametrize("name", ["auc", "logloss", "f1", "pr_auc", "ks", "recall"])
def test_row5_row37_emptied_group_is_null_with_one_warning(name: str) -> None:
    # group "b" is emptied by zero weights, group "c" by nulls
    df = pl.concat(
        [
            frame(),
            pl.DataFrame(
                {"y": [1, 0], "score": [None, None], "w": [1.0, 1.0], "g": ["c", "c"]},
                schema=frame().schema,
            ),
        ]
    ).with_columns(w=pl.when(pl.col("g") == "b").then(0.0).otherwise(pl.col("w")))
    out, message = one_warning(lambda: getattr(df.eval, name)("y", "score", weight="w", by="g"))
    assert out["g"].to_list() == ["a", "b", "c"]
    assert out[name][0] is not None
    assert out[name][1] is None and out[name][2] is None
    assert "2 of 3 groups" in message


def test_row5_lazy_grouped_warning_at_collect() -> None:
    df = frame().with_columns(w=pl.when(pl.col("g") == "b").then(0.0).otherwise(pl.col("w")))
    lazy = df.lazy().eval.auc("y", "score", weight="w", by="g")
    out, _ = one_warning(lambda: lazy.collect(engine="streaming"))
    assert out["auc"][1] is None


# row 6 -------------------------------------------------------------------------------


@pytest.mark.parametrize("arg", ["label", "score", "weight", "by"])
def test_row6_missing_column_names_it(arg: str) -> None:
    df = frame()
    args: dict[str, Any] = {"label": "y", "score": "score", "weight": "w", "by": None}
    args[arg] = "missing_col"
    call = lambda: df.eval.auc(  # noqa: E731
        args["label"], args["score"], weight=args["weight"], by=args["by"]
    )
    message = raises_naming(call, "missing_col")
    assert "not found" in message
    lazy = df.lazy().eval.auc(args["label"], args["score"], weight=args["weight"], by=args["by"])
    raises_naming(lazy.collect, "missing_col")


@pytest.mark.parametrize("column", ["score", "w"])
def test_row6_non_numeric_column_names_it(column: str) -> None:
    df = frame().with_columns(pl.col(column).cast(pl.String))
    raises_naming(lambda: df.eval.auc("y", "score", weight="w"), column)
    raises_naming(lambda: df.lazy().eval.auc("y", "score", weight="w").collect(), column)


def test_row6_metrics_in_one_agg_do_not_collide() -> None:
    out = (
        frame()
        .group_by("g")
        .agg(
            pe.auc("y", "score"),
            pe.pr_auc("y", "score"),
            pe.logloss("y", "score"),
            pe.f1("y", "score"),
        )
    )
    assert out.columns == ["g", "auc", "pr_auc", "logloss", "f1"]


def test_row6_same_metric_twice_needs_an_alias() -> None:
    # Polars itself refuses a duplicated output name; an alias resolves it
    with pytest.raises(pl.exceptions.DuplicateError):
        frame().select(pe.auc("y", "score"), pe.auc("y", "score", weight="w"))
    out = frame().select(pe.auc("y", "score"), pe.auc("y", "score", weight="w").alias("auc_w"))
    assert out.columns == ["auc", "auc_w"]


# row 8 and 9 ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_row8_text_labels_need_pos_label(dtype: pl.DataType) -> None:
    df = frame().with_columns(
        y=pl.when(pl.col("y") == 1).then(pl.lit("bad")).otherwise(pl.lit("good")).cast(dtype)
    )
    message = raises_naming(lambda: df.eval.auc("y", "score"), "y")
    assert "pos_label" in message
    raises_naming(lambda: df.lazy().eval.auc("y", "score").collect(), "y")
    want = frame().eval.auc("y", "score", weight="w")
    assert df.eval.auc("y", "score", weight="w", pos_label="bad") == pytest.approx(want)
    got = df.select(pe.f1("y", "score", pos_label="bad")).item()
    assert got == pytest.approx(frame().select(pe.f1("y", "score")).item())


@pytest.mark.parametrize("dtype", [pl.Boolean, pl.Int8, pl.UInt8, pl.Int64, pl.Float32, pl.Float64])
def test_row9_bool_int_float_labels_are_accepted(dtype: pl.DataType) -> None:
    base = frame()
    df = base.with_columns(pl.col("y").cast(dtype))
    names = SCALARS
    assert expr_values(df, names, weight="w") == pytest.approx(expr_values(base, names, weight="w"))
    assert df.eval.auc("y", "score") == pytest.approx(base.eval.auc("y", "score"))
    assert df.eval.f1("y", "score") == pytest.approx(base.eval.f1("y", "score"))


def test_row9_pos_label_on_integer_labels() -> None:
    df = frame().with_columns(y=pl.col("y") * 5 + 2)  # 7 = positive, 2 = negative
    want = frame().eval.auc("y", "score")
    assert df.eval.auc("y", "score", pos_label=7) == pytest.approx(want)


# row 10 ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [[2, 7, 2], [-1, -1, -1], [0.5, 0.5, 0.5]])
def test_row10_labels_outside_01(bad: list[Any]) -> None:
    df = frame().with_columns(pl.col("y").cast(pl.Float64))
    df = df.with_columns(y=pl.Series([bad[0], 0, bad[1], 0, bad[2], 0, 1, 0], dtype=pl.Float64))
    for name in ("auc", "logloss", "f1"):
        message = raises_naming(lambda n=name: getattr(df.eval, n)("y", "score"), "y")
        assert "3 rows" in message
        assert str(bad[0]).rstrip("0").rstrip(".") in message or repr(float(bad[0])) in message
    lazy_raises_naming(df.lazy(), "auc", "y", "y", "score")


def test_row10_hard_predictions_outside_01() -> None:
    df = frame().with_columns(hard=pl.Series([1, 0, 3, 0, 1, 0, 1, 0]))
    message = raises_naming(lambda: df.eval.f1("y", pred="hard"), "hard")
    assert "1 rows" in message


def test_validate_false_skips_checks() -> None:
    df = frame().with_columns(score=pl.Series([1.5, 0.8, 0.7, 0.3, 0.6, 0.1, 0.35, -0.5]))
    with pytest.raises(pe.DataValidationError):
        df.eval.brier("y", "score")
    got = df.eval.brier("y", "score", validate=False)
    assert got == pytest.approx(float(np.mean((df["score"] - df["y"]).to_numpy() ** 2)))


# row 11 ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [0, 1])
def test_row11_one_class_is_null(cls: int) -> None:
    df = frame().with_columns(y=pl.lit(cls))
    got = expr_values(df, ORDER_METRICS)
    assert all(v is None for v in got.values()), got
    for name in ["auc", "pr_auc", "average_precision", "ks"]:
        with pytest.raises(pe.UndefinedMetricError) as info:
            getattr(df.eval, name)("y", "score")
        assert "both classes" in str(info.value)
    # logloss and brier stay defined on one class
    assert df.eval.logloss("y", "score") == pytest.approx(O.sk_logloss(df["y"], df["score"]))


def test_row11_one_class_group_is_null_with_one_warning() -> None:
    df = frame().with_columns(y=pl.when(pl.col("g") == "b").then(1).otherwise(pl.col("y")))
    out, message = one_warning(lambda: df.eval.auc("y", "score", by="g"))
    assert out["auc"][1] is None and out["auc"][0] is not None
    assert "1 of 2 groups" in message


def test_row11_binary_table_warns_once_for_every_undefined_metric() -> None:
    df = frame().with_columns(y=pl.when(pl.col("g") == "b").then(1).otherwise(pl.col("y")))
    out, message = one_warning(lambda: df.eval.binary("y", "score", by="g"))
    assert out.filter(pl.col("g") == "b")["auc"].item() is None
    assert "auc" in message


# row 12 ------------------------------------------------------------------------------


def test_row12_tied_pair_counts_half() -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 0], "score": [0.5, 0.5, 0.9, 0.1]})
    assert df.eval.auc("y", "score") == pytest.approx(0.875)  # 3.5 of 4 pairs
    roc = df.eval.roc_curve("y", "score")
    assert roc["threshold"].to_list() == [INF, 0.9, 0.5, 0.1]  # one threshold per distinct score


@pytest.mark.parametrize("name", ["roc_curve", "pr_curve", "threshold_table", "lorenz_curve"])
def test_row12_curves_do_not_depend_on_the_order_of_tied_rows(name: str) -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 0, 1, 0], "score": [0.5, 0.5, 0.5, 0.5, 0.9, 0.1]})
    a = getattr(df.eval, name)("y", "score")
    b = getattr(df.reverse().eval, name)("y", "score")
    c = getattr(df.sort("y").eval, name)("y", "score")
    assert a.equals(b) and a.equals(c)


# row 13 and 14 ------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROBA_METRICS + ["calibration_table"])
@pytest.mark.parametrize("bad", [1.2, -0.1])
def test_row13_probability_outside_01(name: str, bad: float) -> None:
    df = frame().with_columns(score=pl.Series([bad, 0.8, 0.7, 0.3, 0.6, 0.1, 0.35, 0.5]))
    message = raises_naming(lambda: getattr(df.eval, name)("y", "score"), "score")
    assert "[0, 1]" in message and "1 rows" in message
    lazy_raises_naming(df.lazy(), name, "score", "y", "score")


def test_row13_order_metrics_accept_any_finite_score() -> None:
    df = frame().with_columns(score=pl.col("score") * 10 - 3)
    assert df.eval.auc("y", "score") == pytest.approx(O.sk_auc(df["y"], df["score"]))


def test_row14_logloss_clips_exact_zero_and_one() -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 0], "score": [0.0, 1.0, 1.0, 0.0]})
    got = df.eval.logloss("y", "score")
    eps = pe.LOGLOSS_EPS
    assert eps == np.finfo(np.float64).eps
    assert got == pytest.approx(-math.log(eps) / 2)
    assert math.isfinite(got)
    assert got == pytest.approx(O.sk_logloss(df["y"], df["score"]))


# row 18 and 19 ------------------------------------------------------------------------


def test_row18_zero_over_zero_is_null() -> None:
    # every score below the threshold: nothing predicted positive
    df = pl.DataFrame({"y": [1, 0, 0], "score": [0.1, 0.2, 0.3]})
    got = df.select(pe.precision("y", "score"), pe.fdr("y", "score"), pe.recall("y", "score"))
    assert got.row(0) == (None, None, 0.0)
    neg = pl.DataFrame({"y": [0, 0], "score": [0.1, 0.2]})
    got = neg.select(pe.recall("y", "score"), pe.f1("y", "score"), pe.fnr("y", "score"))
    assert got.row(0) == (None, None, None)
    with pytest.raises(pe.UndefinedMetricError):
        neg.eval.f1("y", "score")


def test_row19_constant_side_mcc_kappa_null() -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 0], "score": [0.9, 0.8, 0.7, 0.6]})  # all predicted 1
    got = df.select(pe.mcc("y", "score"), pe.cohen_kappa("y", "score"))
    assert got.row(0)[0] is None
    # kappa: p_e = 0.5 here, so kappa is defined and 0 (scikit-learn agrees)
    assert got.row(0)[1] == pytest.approx(O.sk_threshold("cohen_kappa", df["y"], df["score"]))
    const = pl.DataFrame({"y": [1, 1], "score": [0.9, 0.8]})  # constant truth and prediction
    got = const.select(pe.mcc("y", "score"), pe.cohen_kappa("y", "score"))
    assert got.row(0) == (None, None)


# row 20 ------------------------------------------------------------------------------


def test_row20_score_equal_to_threshold_is_positive_everywhere() -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 0], "score": [0.5, 0.5, 0.2, 0.7]})
    cm = df.select(pe.confusion_matrix("y", "score", threshold=0.5)).item()
    assert cm == {"tp": 1.0, "fp": 2.0, "tn": 0.0, "fn": 1.0}
    assert cm == O.sk_confusion(df["y"], df["score"], threshold=0.5)
    assert df.eval.recall("y", "score", threshold=0.5) == 0.5
    table = df.eval.threshold_table("y", "score").filter(pl.col("threshold") == 0.5)
    assert table.select("tp", "fp", "tn", "fn").row(0) == (1.0, 2.0, 0.0, 1.0)
    best = df.select(pe.best_threshold("y", "score", metric="accuracy")).item()
    at = df.eval.accuracy("y", "score", threshold=best["threshold"])
    assert at == pytest.approx(best["value"])


# row 36 ------------------------------------------------------------------------------


def test_row36_zero_and_negative_scores_are_ranked() -> None:
    df = frame().with_columns(score=pl.Series([0.0, -1.0, 2.0, -3.0, 0.0, -0.5, 5.0, -2.0]))
    assert df.eval.auc("y", "score") == pytest.approx(O.sk_auc(df["y"], df["score"]))
    assert df.eval.roc_curve("y", "score").height == 8  # inf + 7 distinct scores


# row 38 and 39 ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["auc", "logloss", "f1", "gain_table"])
def test_row38_negative_weight_names_the_weight_column(name: str) -> None:
    df = frame().with_columns(wt=pl.Series([1.0, -2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]))
    message = raises_naming(lambda: getattr(df.eval, name)("y", "score", weight="wt"), "wt")
    assert "negative" in message
    lazy_raises_naming(df.lazy(), name, "wt", "y", "score", weight="wt")


@pytest.mark.parametrize("dtype", [pl.Int64, pl.UInt32, pl.Int8, pl.Float32])
def test_row39_integer_weights_equal_repeated_rows(dtype: pl.DataType) -> None:
    df = frame().with_columns(pl.col("w").cast(dtype))
    repeated = (
        frame()
        .select(pl.col("y", "score").repeat_by(pl.col("w").cast(pl.Int64)))
        .explode("y", "score")
    )
    assert expr_values(df, SCALARS, weight="w") == pytest.approx(expr_values(repeated, SCALARS))


# row 40 ------------------------------------------------------------------------------


def _float_casts_before_sums(expr: pl.Expr, column: str) -> bool:
    """Every use of ``column`` in the expression is cast to Float64 first."""
    text = str(expr)
    uses = text.count(f'col("{column}")')
    casts = text.count(f'col("{column}").strict_cast(Float64)') + text.count(
        f'col("{column}").cast(Float64)'
    )
    return uses > 0 and uses == casts


@pytest.mark.parametrize("name", ["accuracy", "recall", "confusion_matrix", "logloss", "auc"])
def test_row40_boolean_inputs_are_cast_before_summing(name: str) -> None:
    """Polars sums booleans as UInt32 (wrapping past 2^32 rows): we cast to Float64 first."""
    expr = getattr(pe, name)("y", "score", weight="w")
    assert _float_casts_before_sums(expr, "y"), str(expr)[:400]
    assert _float_casts_before_sums(expr, "w"), str(expr)[:400]
    schema = {"y": pl.Boolean, "score": pl.Float64, "w": pl.UInt32}
    out = pl.LazyFrame(schema=schema).select(expr).collect_schema()
    dtype = out[name]
    if isinstance(dtype, pl.Struct):
        assert all(f.dtype == pl.Float64 for f in dtype.fields)
    else:
        assert dtype == pl.Float64


def test_row40_pred_is_cast_before_summing() -> None:
    expr = pe.accuracy("y", pred="hard")
    assert _float_casts_before_sums(expr, "hard")


# row 41 and 42 ------------------------------------------------------------------------


def test_row41_float32_inputs_equal_float64() -> None:
    base = frame().with_columns(pl.col("score", "w").cast(pl.Float32).cast(pl.Float64))
    f32 = base.with_columns(pl.col("score", "w", "y").cast(pl.Float32))
    a = expr_values(f32, SCALARS, weight="w")
    b = expr_values(base, SCALARS, weight="w")
    assert a == pytest.approx(b, rel=1e-6, abs=1e-6)
    assert all(isinstance(v, float) for v in a.values())
    assert f32.eval.roc_curve("y", "score").schema["threshold"] == pl.Float64


def test_row42_low_precision_scores_tie_and_are_not_downcast() -> None:
    close = pl.DataFrame({"y": [0, 1], "score": [0.5, 0.5 + 1e-12]})
    assert close.eval.auc("y", "score") == 1.0  # distinct in Float64: no rounding of ours
    tied = close.with_columns(pl.col("score").cast(pl.Float32))  # equal in Float32: a tie
    assert tied.eval.auc("y", "score") == 0.5


# the caller's frame ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda df: df.eval.auc("y", "score", weight="w"),
        lambda df: df.eval.binary("y", "score", weight="w", by="g"),
        lambda df: df.eval.roc_curve("y", "score", by="g"),
        lambda df: df.eval.confusion_matrix("y", "score"),
        lambda df: df.eval.auc("y", "score", weight="w", pos_label=1),
    ],
)
def test_caller_frame_is_not_modified(call: Callable[[pl.DataFrame], Any]) -> None:
    df = frame()
    before = df.clone()
    schema = dict(df.schema)
    call(df)
    assert df.equals(before)
    assert dict(df.schema) == schema


def test_caller_frame_is_not_modified_on_error() -> None:
    df = with_nan()
    before = df.clone()
    with pytest.raises(pe.DataValidationError):
        df.eval.auc("y", "score")
    assert df.equals(before, null_equal=True)


# option errors at build time -----------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: pe.gain_table("y", "score", bins=0),
        lambda: pe.calibration_table("y", "score", bins=-1),
        lambda: pe.threshold_table("y", "score", n_thresholds=0),
        lambda: pe.precision_at_recall("y", "score", recall=1.5),
        lambda: pe.recall_at_fpr("y", "score", fpr=-0.1),
        lambda: pe.f_beta("y", "score", beta=0.0),
        lambda: pe.best_threshold("y", "score", metric="auc"),
        lambda: pe.f1("y", "score", threshold=float("nan")),
        lambda: pe.f1("y", "score", pred="hard"),
        lambda: pe.f1("y"),
        lambda: pe.auc(1, "score"),  # type: ignore[arg-type]
    ],
)
def test_invalid_options_raise_at_build_time(build: Callable[[], Any]) -> None:
    with pytest.raises(pe.InvalidParameterError) as info:
        build()
    assert isinstance(info.value, ValueError)


# the error's row count and examples with by= ------------------------------------------------


@pytest.mark.parametrize("lazy", [False, True])
def test_error_row_count_and_examples_are_exact_with_by(lazy: bool) -> None:
    df = pl.DataFrame(
        {
            "g": [1, 1, 2, 2, 3, 3],
            "y": [1, 0, 1, 7, 1, 0],
            "score": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        }
    )
    call = (
        (lambda: df.lazy().eval.auc("y", "score", by="g").collect(engine="streaming"))
        if lazy
        else (lambda: df.eval.auc("y", "score", by="g"))
    )
    message = raises_naming(call, "y")
    assert "found 1 rows" in message, message
    assert message.endswith("e.g. [7]"), message


def test_error_row_count_is_exact_without_by() -> None:
    df = pl.DataFrame({"y": [1, 0, 1, 7, 2, 7], "score": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]})
    message = raises_naming(lambda: df.eval.auc("y", "score"), "y")
    assert "found 3 rows" in message and "e.g. [7, 2]" in message
