"""BAD_INPUTS.md, row by row: every one of its 51 rows has a test that does what it says.

A row is covered by a case here (``@case(row, "what")``, test id ``row_NN_what``) or by the
tests named in :data:`COVERED_ELSEWHERE`, which already exercise exactly that row and assert
what it says (the error type, the message naming the column / file / line / key, the null,
the warning, the value). :func:`test_every_row_is_covered` fails on a row with neither, or on
a reference to a test that does not exist. The cases here take the rows that apply to
several families across all five (binary, multiclass, regression, ranking, forecast);
oracles are scikit-learn, pytrec_eval (trec_eval) and values worked by hand.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import math
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal
from sklearn import metrics as skm

import polars_eval as pe
from polars_eval import cli
from polars_eval.io import files

ROWS = 51
"""The rows of BAD_INPUTS.md (1..51)."""

TESTS = Path(__file__).resolve().parent

COVERED_ELSEWHERE: dict[int, tuple[str, ...]] = {
    7: (
        "tests/test_lake.py::test_schema_drift_is_a_clear_validation_error",
        "tests/test_lake.py::test_missing_column_in_one_file_is_an_error",
        "tests/test_cli_inputs.py::test_lake_type_change_names_column_files_and_types",
        "tests/test_cli_inputs.py::test_lake_column_only_in_some_files",
    ),
    8: ("tests/test_binary_bad_inputs.py::test_row8_text_labels_need_pos_label",),
    9: (
        "tests/test_binary_bad_inputs.py::test_row9_bool_int_float_labels_are_accepted",
        "tests/test_binary_bad_inputs.py::test_row9_pos_label_on_integer_labels",
    ),
    10: (
        "tests/test_binary_bad_inputs.py::test_row10_labels_outside_01",
        "tests/test_binary_bad_inputs.py::test_error_row_count_is_exact_without_by",
    ),
    11: (
        "tests/test_binary_bad_inputs.py::test_row11_one_class_is_null",
        "tests/test_binary_bad_inputs.py::test_row11_one_class_group_is_null_with_one_warning",
    ),
    12: (
        "tests/test_binary_bad_inputs.py::test_row12_tied_pair_counts_half",
        "tests/test_binary_bad_inputs.py::test_row12_curves_do_not_depend_on_the_order_of_tied_rows",
    ),
    13: ("tests/test_binary_bad_inputs.py::test_row13_probability_outside_01",),
    14: ("tests/test_binary_bad_inputs.py::test_row14_logloss_clips_exact_zero_and_one",),
    15: ("tests/test_multiclass.py::test_row15_rows_not_summing_to_one_are_an_error",),
    16: ("tests/test_multiclass.py::test_row16_label_or_prediction_not_in_classes_is_an_error",),
    17: (
        "tests/test_multiclass.py::test_row17_class_absent_from_truth_and_predictions_is_left_out_of_averages",
        "tests/test_multiclass.py::test_auc_class_absent_from_truth_is_left_out_of_macro",
    ),
    18: (
        "tests/test_binary_bad_inputs.py::test_row18_zero_over_zero_is_null",
        "tests/test_multiclass.py::test_row18_row19_undefined_values_are_null",
    ),
    19: (
        "tests/test_binary_bad_inputs.py::test_row19_constant_side_mcc_kappa_null",
        "tests/test_edges.py::test_kappa_with_one_constant_side_is_sklearns_zero",
        "tests/test_edges.py::test_kappa_is_null_only_when_chance_agreement_is_one",
    ),
    20: (
        "tests/test_binary_bad_inputs.py::test_row20_score_equal_to_threshold_is_positive_everywhere",
    ),
    21: ("tests/test_regression.py::test_zero_actuals",),
    22: ("tests/test_regression.py::test_smape_both_zero",),
    24: ("tests/test_regression.py::test_constant_and_one_row",),
    25: ("tests/test_regression.py::test_large_offset_no_cancellation",),
    27: ("tests/test_forecast.py::test_zero_scale_and_short_training_series",),
    28: ("tests/test_forecast.py::test_zero_scale_and_short_training_series",),
    29: (
        "tests/test_contract.py::test_duplicate_series_time_names_the_key_and_time",
        "tests/test_forecast.py::test_duplicate_keys_error",
    ),
    30: (
        "tests/test_ranking.py::test_k_validation_at_build_time",
        "tests/test_multiclass.py::test_row30_invalid_options_raise_at_build_time",
    ),
    31: ("tests/test_ranking.py::test_k_larger_than_list_precision_divides_by_k",),
    34: (
        "tests/test_ranking.py::test_duplicated_item_names_query_and_item",
        "tests/test_trec.py::test_duplicate_document_is_an_error",
    ),
    36: (
        "tests/test_binary_bad_inputs.py::test_row36_zero_and_negative_scores_are_ranked",
        "tests/test_ranking.py::test_negative_and_zero_scores_are_ranked",
    ),
    39: (
        "tests/test_common.py::test_integer_weights_equal_repeated_rows",
        "tests/test_binary_bad_inputs.py::test_row39_integer_weights_equal_repeated_rows",
        "tests/test_ranking.py::test_query_weights_are_repetition",
    ),
    40: (
        "tests/test_binary_bad_inputs.py::test_row40_boolean_inputs_are_cast_before_summing",
        "tests/test_binary_bad_inputs.py::test_row40_pred_is_cast_before_summing",
        "tests/test_edges.py::test_binary_confusion_counts_are_integers_unweighted",
        "tests/test_counts.py::test_validation_counts_cast_before_summing",
        "tests/test_counts.py::test_no_sum_of_flags_is_cast_after_summing",
    ),
    41: (
        "tests/test_binary_bad_inputs.py::test_row41_float32_inputs_equal_float64",
        "tests/test_multiclass.py::test_float32_probabilities_equal_float64",
        "tests/test_regression.py::test_float32_equals_float64",
        "tests/test_ranking.py::test_float32_equals_float64",
        "tests/test_forecast.py::test_float32_and_streaming",
    ),
    42: (
        "tests/test_binary_bad_inputs.py::test_row42_low_precision_scores_tie_and_are_not_downcast",
    ),
    43: ("tests/test_stats_bootstrap.py::test_undefined_resamples_dropped_and_counted",),
    44: ("tests/test_stats.py::test_wilson_matches_scipy",),
    45: ("tests/test_stats_bootstrap.py::test_independent_of_threads_chunks_and_partitioning",),
    46: ("tests/test_cli_inputs.py::test_row_46_one_line_exit_2",),
    47: (
        "tests/test_cli_inputs.py::test_row_47_trec_files_one_line_exit_2",
        "tests/test_contract.py::test_trec_readers_still_reject_malformed_lines",
        "tests/test_contract.py::test_trec_readers_skip_comments_and_ignore_extra_fields",
    ),
    48: (
        "tests/test_cli_inputs.py::test_repeated_csv_column_is_an_error_naming_file_and_column",
        "tests/test_cli_inputs.py::test_csv_line_with_wrong_field_count_names_file_and_line",
    ),
    50: (
        "tests/test_edges.py::test_array_proba_namespace_equals_list_column",
        "tests/test_edges.py::test_array_proba_of_wrong_width_gets_the_list_error",
    ),
    51: (
        "tests/test_edges.py::test_median_and_rank_metrics_on_an_empty_frame_with_groups",
        "tests/test_edges.py::test_median_and_rank_metrics_on_groups_emptied_by_nulls_or_zero_weights",
    ),
}
"""Rows whose tests live in another file: row -> the tests ("path::function")."""


@dataclass(frozen=True)
class Case:
    row: int
    what: str
    run: Callable[[], None]

    @property
    def id(self) -> str:
        return f"row_{self.row:02d}_{self.what}"


CASES: list[Case] = []


def case(row: int, what: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Register the decorated function as the case of BAD_INPUTS row ``row``."""

    def register(fn: Callable[[], None]) -> Callable[[], None]:
        CASES.append(Case(row, what, fn))
        return fn

    return register


# ---------------------------------------------------------------------------------------
# The five families: a small frame each (groups "a" and "b"), a single metric, the task
# table and a bare expression
# ---------------------------------------------------------------------------------------

G = ["a"] * 5 + ["b"] * 3
ABC = ["a", "b", "c"]


@dataclass(frozen=True)
class Family:
    name: str
    data: dict[str, list[Any]]
    values: tuple[str, ...]  # the scores / predictions / targets
    single: Callable[..., Any]  # (frame, **kw) -> the namespace's single metric
    table: Callable[..., Any]  # (frame, **kw) -> the task method
    expr: Callable[..., pl.Expr]  # (**kw) -> the bare expression
    metric: str

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame({**self.data, "w": W, "g": G})


W = [1.0, 2.0, 1.0, 1.0, 3.0, 1.0, 2.0, 1.0]

FAMILIES = [
    Family(
        "binary",
        {"y": [1, 0, 1, 0, 1, 0, 1, 0], "s": [0.9, 0.8, 0.7, 0.3, 0.6, 0.1, 0.35, 0.5]},
        ("s",),
        lambda f, **kw: f.eval.auc("y", "s", **kw),
        lambda f, **kw: f.eval.binary("y", "s", **kw),
        lambda **kw: pe.auc("y", "s", **kw),
        "auc",
    ),
    Family(
        "multiclass",
        {
            "y": ["a", "b", "c", "a", "b", "c", "a", "b"],
            "p": [
                [0.7, 0.2, 0.1],
                [0.2, 0.5, 0.3],
                [0.4, 0.3, 0.3],
                [0.6, 0.3, 0.1],
                [0.1, 0.3, 0.6],
                [0.2, 0.2, 0.6],
                [0.5, 0.25, 0.25],
                [0.3, 0.4, 0.3],
            ],
        },
        ("p",),
        lambda f, **kw: f.eval.multiclass_logloss("y", "p", classes=ABC, **kw),
        lambda f, **kw: f.eval.multiclass("y", proba="p", classes=ABC, **kw),
        lambda **kw: pe.multiclass_logloss("y", "p", classes=ABC, **kw),
        "multiclass_logloss",
    ),
    Family(
        "regression",
        {
            "y": [1.0, 2.0, 4.0, 8.0, 5.0, 3.0, 7.0, 6.0],
            "p": [1.5, 2.0, 3.0, 10.0, 4.0, 3.5, 6.0, 6.5],
        },
        ("y", "p"),
        lambda f, **kw: f.eval.mae("y", "p", **kw),
        lambda f, **kw: f.eval.regression("y", "p", **kw),
        lambda **kw: pe.mae("y", "p", **kw),
        "mae",
    ),
    Family(
        "ranking",
        {
            "q": [1, 1, 1, 2, 2, 3, 3, 3],
            "rel": [2, 0, 1, 0, 1, 1, 0, 2],
            "s": [0.9, 0.8, 0.1, 0.5, 0.4, 0.3, 0.7, 0.2],
        },
        ("rel", "s"),
        lambda f, **kw: f.eval.ndcg("rel", "s", query="q", **kw),
        lambda f, **kw: f.eval.ranking("rel", "s", query="q", **kw),
        lambda **kw: pe.ndcg("rel", "s", **kw),  # the whole frame as one query
        "ndcg",
    ),
    Family(
        "forecast",
        {
            "id": ["a", "a", "a", "b", "b", "c", "c", "c"],
            "t": [1, 2, 3, 1, 2, 1, 2, 3],
            "y": [10.0, 12.0, 11.0, 4.0, 5.0, 7.0, 8.0, 6.0],
            "f": [11.0, 11.0, 11.5, 4.5, 6.0, 7.0, 7.0, 6.5],
        },
        ("y", "f"),
        lambda f, **kw: f.eval.mae("y", "f", series="id", time="t", **kw),
        lambda f, **kw: f.eval.forecast("y", "f", series="id", time="t", **kw),
        lambda **kw: pe.mae("y", "f", **kw),
        "mae",
    ),
]
FAMILY = {family.name: family for family in FAMILIES}


def _ranking_weights(df: pl.DataFrame) -> pl.DataFrame:
    """Ranking weights are query weights: one value per query."""
    return df.with_columns(w=pl.col("w").first().over("q")) if "q" in df.columns else df


def frame(name: str) -> pl.DataFrame:
    return _ranking_weights(FAMILY[name].frame())


def set_rows(df: pl.DataFrame, column: str, value: Any, rows: pl.Expr) -> pl.DataFrame:
    """``df`` with ``column`` set to ``value`` where ``rows`` holds (a list for a List column)."""
    dtype = df.schema[column]
    if isinstance(dtype, pl.List) and value is not None:
        new: pl.Expr = pl.lit([value] * 3, dtype=dtype)
    else:
        new = pl.lit(value, dtype=dtype if value is None else None)
    return df.with_columns(pl.when(rows).then(new).otherwise(pl.col(column)).alias(column))


def at(i: int) -> pl.Expr:
    return pl.int_range(pl.len()) == i


def in_group(g: str) -> pl.Expr:
    return pl.col("g") == g


def collect(value: Any) -> Any:
    return value.collect() if isinstance(value, pl.LazyFrame) else value


def one_warning(fn: Callable[[], Any]) -> tuple[Any, str]:
    """Run ``fn``: exactly one UndefinedMetricWarning, and no other warning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = collect(fn())
    mine = [str(w.message) for w in caught if issubclass(w.category, pe.UndefinedMetricWarning)]
    assert len(mine) == len(caught) == 1, [str(w.message) for w in caught]
    return out, mine[0]


def raises(error: type[Exception], fn: Callable[[], Any], *needles: str) -> str:
    """``fn`` raises ``error`` (a ValueError) whose message holds every needle."""
    with pytest.raises(error) as info:
        collect(fn())
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for needle in needles:
        assert needle in message, (needle, message)
    return message


# ---------------------------------------------------------------------------------------
# Row 1: a null in label, score, prediction or weight: the row is ignored
# ---------------------------------------------------------------------------------------


@case(1, "null_row_is_ignored_in_every_family")
def _row_01() -> None:
    for family in FAMILIES:
        df = frame(family.name)
        columns = [c for c in ("y", "rel", "s", "p", "f", "w") if c in family.data or c == "w"]
        dropped = df.filter(~at(2))
        want_single = family.single(dropped, weight="w")
        want_table = family.table(dropped, weight="w")
        for column in columns:
            nulled = set_rows(df, column, None, at(2))
            where = (family.name, column)
            assert family.single(nulled, weight="w") == pytest.approx(want_single), where
            got = family.table(nulled, weight="w")
            assert_frame_equal(got, want_table, check_exact=False, rel_tol=1e-12)
            lazy = collect(family.single(nulled.lazy(), weight="w"))
            assert lazy.item() == pytest.approx(want_single), where


# ---------------------------------------------------------------------------------------
# Row 2: NaN in scores / predictions / targets: an error in the namespace, NaN out of a
# bare expression (never a large score)
# ---------------------------------------------------------------------------------------


@case(2, "nan_is_an_error_in_the_namespace_and_nan_in_expressions")
def _row_02() -> None:
    nan = float("nan")
    for family in FAMILIES:
        for column in family.values:
            df = set_rows(frame(family.name), column, nan, at(3))
            for call in (family.single, family.table):
                for source in (df, df.lazy()):
                    raises(
                        pe.DataValidationError,
                        lambda c=call, s=source: c(s),
                        f'column "{column}"',
                        "NaN",
                        "found 1 rows",
                    )
            value = df.select(family.expr()).item()
            assert isinstance(value, float) and math.isnan(value), (family.name, column, value)
    # NaN is never a large score: at a threshold the metric is NaN, not a positive row
    df = set_rows(frame("binary"), "s", nan, at(3))
    got = df.select(pe.recall("y", "s"), pe.precision("y", "s"), pe.max_f1("y", "s")).row(0)
    assert all(math.isnan(v) for v in got), got


# ---------------------------------------------------------------------------------------
# Row 3: ±inf scores in order-only metrics: an error by default, ranked by bare expressions
# ---------------------------------------------------------------------------------------


@case(3, "inf_scores_error_by_default_ranked_by_expressions")
def _row_03() -> None:
    inf = float("inf")
    binary = frame("binary").with_columns(s=pl.Series([inf, 0.8, 0.7, -inf, 0.6, 0.1, 0.35, 0.5]))
    ranking = frame("ranking").with_columns(s=pl.Series([inf, 0.8, 0.1, -inf, 0.4, inf, 0.7, 0.2]))
    # the same order with finite stand-ins for ±inf
    finite = {
        "binary": binary.with_columns(pl.col("s").clip(-1e9, 1e9)),
        "ranking": ranking.with_columns(pl.col("s").clip(-1e9, 1e9)),
    }
    calls = {
        "auc": ("binary", lambda f, **kw: f.eval.auc("y", "s", **kw), pe.auc("y", "s")),
        "average_precision": (
            "binary",
            lambda f, **kw: f.eval.average_precision("y", "s", **kw),
            pe.average_precision("y", "s"),
        ),
        "ndcg": ("ranking", lambda f, **kw: f.eval.ndcg("rel", "s", query="q", **kw), None),
        "mrr": ("ranking", lambda f, **kw: f.eval.mrr("rel", "s", query="q", **kw), None),
    }
    for name, (family, call, expr) in calls.items():
        df = binary if family == "binary" else ranking
        for source in (df, df.lazy()):
            raises(
                pe.DataValidationError,
                lambda c=call, s=source: c(s),
                'column "s" must hold finite numbers',
                "±inf",
                "e.g. [inf, -inf]",
            )
        assert call(df, validate=False) == pytest.approx(call(finite[family])), name
        if expr is None:  # a per-query expression: by query
            expr = getattr(pe, name)("rel", "s")
            got = df.group_by("q").agg(expr).sort("q")
            assert_frame_equal(got, finite[family].group_by("q").agg(expr).sort("q"))
        else:
            assert df.select(expr).item() == pytest.approx(finite[family].select(expr).item())
    assert binary.eval.auc("y", "s", validate=False) == pytest.approx(
        skm.roc_auc_score(binary["y"], binary["s"].clip(-1e9, 1e9))
    )


# ---------------------------------------------------------------------------------------
# Row 4: ±inf in a regression target or prediction: an error
# ---------------------------------------------------------------------------------------


@case(4, "inf_in_regression_target_or_prediction_is_an_error")
def _row_04() -> None:
    for name in ("regression", "forecast"):
        family = FAMILY[name]
        for column in family.values:
            for value in (float("inf"), -float("inf")):
                df = set_rows(frame(name), column, value, at(1))
                shown = "inf" if value > 0 else "-inf"
                for call in (family.single, family.table):
                    for source in (df, df.lazy()):
                        raises(
                            pe.DataValidationError,
                            lambda c=call, s=source: c(s),
                            f'column "{column}" must hold finite numbers',
                            "found 1 rows",
                            f"e.g. [{shown}]",
                        )
    df = set_rows(frame("regression"), "p", float("inf"), at(1))
    for metric in ("rmse", "r2", "medae", "spearman", "rmsle"):
        raises(pe.DataValidationError, lambda m=metric: getattr(df.eval, m)("y", "p"), '"p"')


# ---------------------------------------------------------------------------------------
# Rows 5, 37, 49: no rows (empty, all null, all weight 0): null from an expression, an
# error without by, null and one warning for an emptied group with by
# ---------------------------------------------------------------------------------------


def _no_rows_without_by(family: Family, df: pl.DataFrame, why: str) -> None:
    """The single metric and the task table raise "no rows to evaluate", eager and lazy."""
    for source in (df, df.lazy()):
        raises(
            pe.UndefinedMetricError,
            lambda s=source: family.single(s, weight="w"),
            f"no rows to evaluate for {family.metric}: {why}",
        )
        message = raises(pe.UndefinedMetricError, lambda s=source: family.table(s, weight="w"), why)
        assert message.startswith(f"no rows to evaluate: {why}"), (family.name, message)


def _emptied_group_with_by(family: Family, df: pl.DataFrame) -> None:
    """Group "b" has no row to evaluate: null there, one warning, group "a" defined."""
    for call in (family.single, family.table):
        out, message = one_warning(lambda c=call: c(df, weight="w", by="g"))
        assert out["g"].to_list() == ["a", "b"], family.name
        column = out[family.metric]
        assert column[0] is not None and column[1] is None, (family.name, out)
        assert "of 2 groups" in message, message
        lazy, _ = one_warning(lambda c=call: c(df.lazy(), weight="w", by="g"))
        assert_frame_equal(lazy, out)


@case(5, "empty_or_all_null_is_null_error_or_one_warning")
def _row_05() -> None:
    for family in FAMILIES:
        empty = frame(family.name).clear()
        nulls = set_rows(frame(family.name), family.values[-1], None, pl.lit(True))
        for df in (empty, nulls):
            assert df.select(family.expr()).item() is None, family.name
        _no_rows_without_by(family, empty, "the input has no rows")
        _no_rows_without_by(family, nulls, "all 8 rows have a null in")
        emptied = set_rows(frame(family.name), family.values[-1], None, in_group("b"))
        _emptied_group_with_by(family, emptied)


@case(37, "all_weights_zero_as_an_empty_group")
def _row_37() -> None:
    for family in FAMILIES:
        zero = frame(family.name).with_columns(w=pl.lit(0.0))
        if family.name != "ranking":  # ranking weights are query weights (namespace only)
            assert zero.select(family.expr(weight="w")).item() is None, family.name
        _no_rows_without_by(family, zero, 'all 8 rows have weight 0 in "w"')
        emptied = frame(family.name).with_columns(
            w=pl.when(in_group("b")).then(0.0).otherwise(pl.col("w"))
        )
        _emptied_group_with_by(family, emptied)


NO_ROWS = "no rows to evaluate: the input has no rows; every metric is undefined"


@case(49, "task_method_on_an_empty_frame_raises_without_by")
def _row_49() -> None:
    for family in FAMILIES:
        empty = frame(family.name).clear()
        for source in (empty, empty.lazy()):
            message = raises(pe.UndefinedMetricError, lambda s=source, f=family: f.table(s))
            assert message == NO_ROWS, (family.name, message)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert collect(family.table(empty, by="g")).height == 0, family.name


COMMANDS = {
    "binary": ["--label", "y", "--score", "s"],
    "multiclass": ["--label", "y", "--proba", "p", "--classes", "a,b,c"],
    "regression": ["--actual", "y", "--pred", "p"],
    "ranking": ["--relevance", "rel", "--score", "s", "--query", "q"],
    "forecast": ["--actual", "y", "--forecast", "f", "--series", "id", "--time", "t"],
}


@case(49, "cli_on_an_empty_file_exits_2_with_one_line")
def _row_49_cli() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in COMMANDS.items():
            path = Path(tmp) / f"{name}.parquet"
            frame(name).clear().write_parquet(path)
            code, lines = _run_cli(name, str(path), *args, "--format", "json")
            assert code == 2, (name, lines)
            assert lines == [f"polars-eval: error: {NO_ROWS}"], (name, lines)


def _run_cli(*argv: str) -> tuple[int, list[str]]:
    """The command in this process: its exit code and its stderr lines (stdout must be empty)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    if code:
        assert out.getvalue() == "", out.getvalue()
    return code, err.getvalue().splitlines()


# ---------------------------------------------------------------------------------------
# Row 6: missing column, duplicated column name, non-numeric score
# ---------------------------------------------------------------------------------------


@case(6, "missing_duplicated_or_non_numeric_column_is_named")
def _row_06() -> None:
    for family in FAMILIES:
        df = frame(family.name)
        for call in (family.single, family.table):
            for source in (df, df.lazy()):
                raises(
                    pe.DataValidationError,
                    lambda c=call, s=source, v=family.values[-1]: c(s.rename({v: "other"})),
                    f'column "{family.values[-1]}"',
                    "not found",
                )
                raises(
                    pe.DataValidationError,
                    lambda c=call, s=source: c(s, by="nope"),
                    'column "nope" (',  # (argument by=) or, with the forecast keys, (a key)
                    ") not found",
                )
                raises(
                    pe.DataValidationError,
                    lambda c=call, s=source: c(s, weight="nope"),
                    'column "nope" (argument weight=) not found',
                )
        if family.name != "multiclass":  # a proba column must be a List: its own message
            text = df.with_columns(pl.col(family.values[-1]).cast(pl.String))
            raises(
                pe.DataValidationError,
                lambda t=text, f=family: f.single(t),
                f'column "{family.values[-1]}"',
                "must be numeric",
                "got String",
            )
        text_weight = df.with_columns(pl.col("w").cast(pl.String))
        raises(
            pe.DataValidationError,
            lambda t=text_weight, f=family: f.single(t, weight="w"),
            'column "w" (argument weight=) must be numeric',
        )
    raises(
        pe.DataValidationError,
        lambda: frame("multiclass").eval.multiclass_logloss("y", "y", classes=ABC),
        'column "y"',
        "List or Array",
    )
    # a duplicated column name can only come from a file (a DataFrame refuses it); CSV in
    # row 48; parquet here
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dup.parquet"
        columns = [pa.array([1, 0, 1]), pa.array([0.2, 0.4, 0.9]), pa.array([0.5, 0.5, 0.5])]
        table = pa.table(columns, names=["y", "s", "s"])
        pq.write_table(table, path)
        raises(pe.DataValidationError, lambda: files.scan(path), "dup.parquet", "'s'")
        code, lines = _run_cli("binary", str(path), "--label", "y", "--score", "s")
        assert code == 2 and len(lines) == 1, lines
        assert "dup.parquet" in lines[0] and "'s'" in lines[0], lines


# ---------------------------------------------------------------------------------------
# Row 23: values <= -1 in MSLE / RMSLE: an error
# ---------------------------------------------------------------------------------------


@case(23, "values_at_or_below_minus_one_in_log_errors")
def _row_23() -> None:
    for column in ("y", "p"):
        for bad in (-1.0, -3.5):
            df = set_rows(frame("regression"), column, bad, at(4))
            for name in ("msle", "rmsle"):
                for source in (df, df.lazy()):
                    raises(
                        pe.DataValidationError,
                        lambda n=name, s=source: getattr(s.eval, n)("y", "p"),
                        f'column "{column}" must hold values > -1',
                        "found 1 rows <= -1",
                        f"e.g. [{bad}]",
                    )
    ok = frame("regression").with_columns(y=pl.lit(-0.5), p=pl.col("p") - 1.0)  # > -1: fine
    assert ok.eval.msle("y", "p") == pytest.approx(
        skm.mean_squared_error(np.log1p(ok["y"]), np.log1p(ok["p"]))
    )


# ---------------------------------------------------------------------------------------
# Row 26: one row: metrics that need two (R², correlations) are null; the others defined
# ---------------------------------------------------------------------------------------


@case(26, "one_row_needs_two_for_r2_and_correlations")
def _row_26() -> None:
    one = pl.DataFrame({"y": [3.0], "p": [5.0]})
    need_two = ["r2", "explained_variance", "pearson", "spearman", "kendall_tau", "r2_pearson"]
    got = one.select(getattr(pe, n)("y", "p") for n in need_two).row(0, named=True)
    assert got == dict.fromkeys(need_two), got
    for name in need_two:
        raises(pe.UndefinedMetricError, lambda n=name: getattr(one.eval, n)("y", "p"), name)
    y, p = [3.0], [5.0]
    defined = {
        "mse": skm.mean_squared_error(y, p),
        "rmse": skm.root_mean_squared_error(y, p),
        "mae": skm.mean_absolute_error(y, p),
        "medae": skm.median_absolute_error(y, p),
        "max_error": skm.max_error(y, p),
        "mape": skm.mean_absolute_percentage_error(y, p),
        "bias": 2.0,
    }
    for name, want in defined.items():
        assert getattr(one.eval, name)("y", "p") == pytest.approx(want), name


# ---------------------------------------------------------------------------------------
# Rows 32, 33, 35: ranking against trec_eval (pytrec_eval) and by hand
# ---------------------------------------------------------------------------------------


def _pytrec(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], measures: set[str]):
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def _trec_frames(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    r = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    j = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    return (
        pl.DataFrame(r, schema=["query", "doc", "score"], orient="row"),
        pl.DataFrame(j, schema=["query", "doc", "relevance"], orient="row"),
    )


@case(32, "query_without_relevant_item_is_null_and_left_out")
def _row_32() -> None:
    # q1: the relevant item at rank 2 (RR 1/2); q2: nothing relevant
    df = pl.DataFrame(
        {"q": [1, 1, 2, 2], "rel": [0, 1, 0, 0], "s": [0.9, 0.5, 0.8, 0.1]},
    )
    per, message = one_warning(lambda: df.eval.mrr("rel", "s", query="q", per_query=True))
    assert per["mrr"].to_list() == [0.5, None]
    assert "mrr is null for 1 of 2 groups (the query has no relevant item" in message
    assert df.eval.mrr("rel", "s", query="q") == 0.5  # q2 left out of the mean
    assert df.eval.mrr("rel", "s", query="q", no_relevant="zero") == 0.25
    table = df.eval.ranking("rel", "s", query="q", k=[1])
    assert table.select("n_queries", "n_excluded", "mrr").row(0) == (2, 1, 0.5)
    only = df.filter(pl.col("q") == 2)
    raises(pe.UndefinedMetricError, lambda: only.eval.mrr("rel", "s", query="q"), "no relevant")
    # pe.trec_eval as trec_eval: such a query scores 0 and counts in the mean
    qrels = {"q1": {"a": 0, "b": 1}, "q2": {"c": 0, "d": 0}}
    run = {"q1": {"a": 0.9, "b": 0.5}, "q2": {"c": 0.8, "d": 0.1}}
    measures = {"recip_rank", "map", "ndcg", "P.1"}
    want = _pytrec(qrels, run, measures)
    r, j = _trec_frames(qrels, run)
    got = pe.trec_eval(r, j, metrics=["recip_rank", "map", "ndcg", "P.1"], per_query=True)
    for row in got.iter_rows(named=True):
        q = row.pop("query")
        assert row == pytest.approx({k: want[q][k] for k in row}, abs=1e-12), q
    mean = pe.trec_eval(r, j, metrics=["recip_rank"])
    assert mean["recip_rank"].item() == pytest.approx(0.25)


@case(33, "relevant_items_never_scored_count_in_the_denominators")
def _row_33() -> None:
    # relevant b (grade 2) and d (grade 1) are judged but never retrieved
    qrels = {"q1": {"a": 1, "b": 2, "c": 0, "d": 1}, "q2": {"x": 1, "y": 3}}
    run = {"q1": {"a": 0.9, "c": 0.8, "e": 0.1}, "q2": {"y": 0.7, "z": 0.2}}
    want = _pytrec(qrels, run, {"recall.5", "map", "ndcg", "num_rel"})
    r, j = _trec_frames(qrels, run)
    got = pe.trec_eval(r, j, metrics=["recall.5", "map", "ndcg", "num_rel"], per_query=True)
    for row in got.iter_rows(named=True):
        q = row.pop("query")
        assert row == pytest.approx({k: want[q][k] for k in row}, abs=1e-12), q
    assert want["q1"]["recall_5"] == pytest.approx(1 / 3)  # a of {a, b, d}
    # the namespace: unjudged = not relevant, unscored (null score) = relevant, unretrieved
    joined = (
        j.join(r, on=["query", "doc"], how="full", coalesce=True)
        .with_columns(pl.col("relevance").fill_null(0))
        .sort("query", "doc")
    )
    per = joined.eval.ranking(
        "relevance",
        "score",
        query="query",
        k=[5, None],
        gain="linear",
        unscored="unretrieved",
        metrics=["recall", "map", "ndcg"],
        per_query=True,
    )
    for row in per.iter_rows(named=True):
        q = row["query"]
        assert row["recall@5"] == pytest.approx(want[q]["recall_5"], abs=1e-12), q
        assert row["map"] == pytest.approx(want[q]["map"], abs=1e-12), q
        assert row["ndcg"] == pytest.approx(want[q]["ndcg"], abs=1e-12), q


@case(35, "negative_relevance_is_an_error_and_unjudged_in_trec")
def _row_35() -> None:
    df = frame("ranking").with_columns(rel=pl.Series([2, -1, 1, 0, 1, -2, 0, 2]))
    for call in (FAMILY["ranking"].single, FAMILY["ranking"].table):
        for source in (df, df.lazy()):
            raises(
                pe.DataValidationError,
                lambda c=call, s=source: c(s),
                'column "rel" must hold relevance grades >= 0',
                "found 2 negative rows",
                "e.g. [-1, -2]",
            )
    # trec_eval reads a negative grade as a judged-pool document left unjudged: for every
    # measure pe.trec_eval offers that is not relevant, with gain 0
    qrels = {"q1": {"a": 1, "b": -1, "c": 0, "d": 2}}
    run = {"q1": {"b": 3.0, "a": 2.0, "c": 1.0}}
    measures = {"map", "ndcg", "P.2", "recall.5", "num_rel", "num_rel_ret"}
    want = _pytrec(qrels, run, measures)["q1"]
    r, j = _trec_frames(qrels, run)
    got = pe.trec_eval(
        r, j, metrics=["map", "ndcg", "P.2", "recall.5", "num_rel", "num_rel_ret"], per_query=True
    ).row(0, named=True)
    got.pop("query")
    assert got == pytest.approx({k: want[k] for k in got}, abs=1e-12)
    doc = pe.read_trec_qrels.__doc__ or ""
    assert "negative relevance" in doc.lower() and "unjudged" in doc, doc


# ---------------------------------------------------------------------------------------
# Row 38: negative weights: an error naming the weight column
# ---------------------------------------------------------------------------------------


@case(38, "negative_weight_names_the_weight_column")
def _row_38() -> None:
    for family in FAMILIES:
        # the last query / series / row gets weight -2.5 (3 rows)
        df = frame(family.name).with_columns(
            wt=pl.when(in_group("b")).then(-2.5).otherwise(pl.col("w"))
        )
        for call in (family.single, family.table):
            for source in (df, df.lazy()):
                for by in (None, "g"):
                    raises(
                        pe.DataValidationError,
                        lambda c=call, s=source, b=by: c(s, weight="wt", by=b),
                        'column "wt" must hold non-negative weights',
                        "found 3 negative rows",
                        "e.g. [-2.5]",
                    )


# ---------------------------------------------------------------------------------------
# The table of rows
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad_input", CASES, ids=[c.id for c in CASES])
def test_bad_input(bad_input: Case) -> None:
    bad_input.run()


@functools.cache
def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def test_every_row_is_covered() -> None:
    here = {c.row for c in CASES}
    elsewhere = set(COVERED_ELSEWHERE)
    missing = [row for row in range(1, ROWS + 1) if row not in here | elsewhere]
    assert not missing, f"BAD_INPUTS rows without a test: {missing}"
    assert here | elsewhere <= set(range(1, ROWS + 1))
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "two cases share an id"
    for row, refs in COVERED_ELSEWHERE.items():
        assert refs, row
        for ref in refs:
            path, _, name = ref.partition("::")
            file = TESTS.parent / path
            assert path.startswith("tests/test_") and file.is_file(), (row, ref)
            assert name.startswith("test_") and name in _functions(file), (row, ref)
