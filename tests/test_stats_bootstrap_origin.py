"""SPEC §8: the bootstrap knows a registered metric from the record its function keeps
(``polars_eval._core.origin``), not by guessing from the expression. Oracles: the arguments
of the call as written; the expression path (the metric on repeated rows) for the kernels."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from test_stats_bootstrap import assert_kernels_equal_expression_path, data

import polars_eval as pe
from polars_eval._core import origin
from polars_eval.exceptions import DataValidationError
from polars_eval.stats import bootstrap as B


def found(expr: pl.Expr) -> tuple[str, dict[str, object]] | None:
    item = B.recognize(expr)
    return None if item is None else (item.info.name, item.args)


def test_renamed_metric_is_recognised() -> None:
    assert found(pe.auc("y", "score").alias("model_a")) == (
        "auc",
        {"label": "y", "score": "score"},
    )
    assert found(pe.mse("y", "score", weight="w").alias("m").alias("n")) == (
        "mse",
        {"actual": "y", "pred": "score", "weight": "w"},
    )


def test_keyword_arguments_in_any_order_and_column_expressions() -> None:
    expected = ("logloss", {"label": "y", "score": "score", "weight": "w"})
    assert found(pe.logloss("y", "score", weight="w")) == expected
    assert found(pe.logloss(weight="w", score="score", label="y")) == expected
    assert found(pe.logloss(pl.col("y"), score=pl.col("score"), weight="w")) == expected


def test_options_are_part_of_the_record() -> None:
    assert found(pe.precision("y", "score", threshold=0.3)) == (
        "precision",
        {"label": "y", "score": "score", "threshold": 0.3},
    )
    assert found(pe.ece("y", "score", bins=5).alias("e")) == (
        "ece",
        {"label": "y", "score": "score", "bins": 5},
    )


def test_look_alikes_and_derived_expressions_are_not_mistaken() -> None:
    pe.mse("y", "score")  # built, so a record of mse exists
    by_hand = (pl.col("y") - pl.col("score")).pow(2).mean().alias("mse")
    assert found(by_hand) is None
    assert found(pl.col("y").mean().alias("auc")) is None
    assert found(pe.auc("y", "score") * 1.0) is None  # a metric inside a larger expression
    assert found(pe.auc("y", "score").round(3)) is None
    # a recorded call is found again, aliased or not; other columns were never built
    assert found(pe.auc("y", "score").meta.undo_aliases().alias("auc")) is not None
    assert found(pe.auc("y", "fw")) is not None
    rebuilt = pl.Expr.deserialize(
        pe.auc("y", "score").meta.serialize().replace(b"score", b"other"), format="binary"
    )
    assert found(rebuilt) is None


def test_expression_arguments_are_not_recorded() -> None:
    """A column argument given as a computed expression: the kernels read columns by name,
    so the call is not recorded and the bootstrap takes the expression path."""
    assert found(pe.auc(pl.col("y") > 0, "score")) is None
    assert found(pe.mse("y", pl.col("score") * 2)) is None


@pytest.fixture
def small_record(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record of 1 recent call and 2 digests, on copies (the module's own is kept)."""
    monkeypatch.setattr(origin, "_PENDING", origin._PENDING.copy())
    monkeypatch.setattr(origin, "_DIGESTS", origin._DIGESTS.copy())
    monkeypatch.setattr(origin, "PENDING_SIZE", 1)
    monkeypatch.setattr(origin, "RECORD_SIZE", 2)


@pytest.mark.usefixtures("small_record")
def test_older_calls_are_known_by_their_digest() -> None:
    auc = pe.auc("y", "score", weight="w").alias("model_a")
    pe.mse("y", "score")  # auc leaves the recent calls: kept as a digest
    assert found(auc) == ("auc", {"label": "y", "score": "score", "weight": "w"})
    assert found(pe.auc("y", "score", weight="w") * 1.0) is None
    assert found((pl.col("y") - pl.col("score")).pow(2).mean().alias("mse")) is None


@pytest.mark.usefixtures("small_record")
def test_forgotten_expression_takes_the_expression_path() -> None:
    df = data(200, seed=4)
    args = {"n_resamples": 40, "seed": 5}
    known = df.eval.bootstrap([pe.auc("y", "score"), pe.brier("y", "score")], **args)
    exprs = [pe.auc("y", "score"), pe.brier("y", "score")]
    for _ in range(3):  # three other calls push both out of the record
        pe.mse("y", "score"), pe.mae("y", "score"), pe.mape("y", "score")
    assert [found(e) for e in exprs] == [None, None]
    forgotten = df.eval.bootstrap(exprs, **args)
    for col in ["estimate", "lower", "upper", "std"]:
        np.testing.assert_allclose(forgotten[col], known[col], rtol=1e-12)


@pytest.mark.parametrize(("by", "group"), [([], []), (["g"], ["q"])])
def test_kernels_with_options_equal_expression_path(by: list[str], group: list[str]) -> None:
    df = data(300, seed=2).with_columns(
        lab=pl.when(pl.col("y") == 1).then(pl.lit("pos")).otherwise(pl.lit("neg"))
    )
    items = B.named_items(
        [
            pe.precision("y", "score", threshold=0.3),
            pe.f1("lab", "score", pos_label="pos").alias("f1_lab"),
            pe.ece("y", "score", bins=5),
            pe.average_precision("y", "score", weight="w"),
        ]
    )
    stratum = np.zeros(df.height, dtype=np.int64)
    kernels = [B._kernel_for(B.recognize(e), df, stratum, 1) for _, e in items]
    assert all(k is not None for k in kernels)
    assert_kernels_equal_expression_path(df, items, by, group, "multinomial")


def test_recognised_options_are_validated() -> None:
    df = data(100, seed=1).with_columns(lab=pl.col("y").replace_strict({0: "a", 1: "b"}))
    with pytest.raises(DataValidationError, match="pos_label"):
        df.eval.bootstrap(pe.f1("lab", "score", pos_label="c"), n_resamples=10)
