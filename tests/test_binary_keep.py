"""States kept by a table (``Specs.keep``: the report's threshold state and confusion
counts) and tables kept by their arguments (``_core.table.kept``).

A kept state is the state the metric layer aggregates, point for point, and keeping it
changes no other column. Oracles: the state's own aggregation over the rows (per group,
the group's rows) and scikit-learn for the confusion counts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import confusion_matrix
from test_sorted_keys import small_chunks

import polars_eval  # noqa: F401 (the namespace)
from polars_eval._core.registry import REGISTRY
from polars_eval._core.table import arguments, run
from polars_eval.metrics._curve import thresholds
from polars_eval.metrics.binary import confusion_states
from polars_eval.tasks.binary import BinaryMethods, binary_table


def _frame() -> pl.DataFrame:
    rng = np.random.default_rng(3)
    n = 200
    return pl.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "s": np.round(rng.random(n), 2),
            "g": rng.integers(0, 4, n),
        }
    ).with_columns(s=pl.when(pl.int_range(pl.len()) == 7).then(None).otherwise("s"))


@pytest.mark.parametrize("by", [None, "g"])
@pytest.mark.parametrize("chunk", [1, 3, 1 << 15])
def test_kept_state_is_the_metric_layers_state(by: str | None, chunk: int) -> None:
    df = _frame()
    base = binary_table(arguments(BinaryMethods.binary, label="y", score="s", by=by))
    state = thresholds("y", "s", None)
    kept = replace(base, query=replace(base.query, keep={"state": state}))
    with small_chunks(chunk):
        got, plain = run(kept, df), run(base, df)
    keys = [by] if by else []
    agg = state.aggregate().alias("state")
    want = df.group_by(keys).agg(agg).sort(keys) if keys else df.select(agg)
    assert got["state"].to_list() == want["state"].to_list()
    # the other columns unchanged (finalized from the kept state rather than in the
    # numpy batch: equal to rounding)
    assert got.drop("state").columns == plain.columns
    for name in plain.columns:
        a, b = got[name].to_list(), plain[name].to_list()
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15, nan_ok=True), name


@pytest.mark.parametrize("weight", [None, "w"])
def test_kept_confusion_counts_are_sklearns(weight: str | None) -> None:
    df = _frame().with_columns(w=pl.int_range(pl.len()) % 3 + 0.5).drop_nulls()
    base = binary_table(arguments(BinaryMethods.binary, label="y", score="s", weight=weight))
    states = confusion_states("y", "s", pred=None, threshold=0.5, weight=weight, pos_label=None)
    kept = replace(base, query=replace(base.query, keep=states))
    got = run(kept, df).row(0, named=True)
    w = None if weight is None else df["w"].to_numpy()
    tn, fp, fn, tp = confusion_matrix(
        df["y"].to_numpy(), (df["s"].to_numpy() >= 0.5).astype(int), sample_weight=w
    ).ravel()
    for name, want in {"tp": tp, "fp": fp, "tn": tn, "fn": fn}.items():
        assert got[name] == pytest.approx(want, rel=1e-12), name
    assert got["nan"] is False or got["nan"] == 0


def test_a_table_is_kept_by_plain_arguments_only() -> None:
    a = arguments(BinaryMethods.binary, label="y", score="s")
    assert binary_table(a) is binary_table(dict(a))
    assert binary_table(a) is not binary_table({**a, "threshold": 0.3})
    # True and 1 are equal keys, not equal arguments
    assert binary_table({**a, "validate": True}) is not binary_table({**a, "validate": 1})
    expr = {**a, "score": pl.col("s")}  # an expression: never kept
    assert binary_table(expr) is not binary_table(expr)


def test_a_metric_registered_later_is_seen_by_a_kept_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    df = _frame().drop_nulls()
    before = df.eval.binary("y", "s")
    assert "auc_again" not in before.columns
    # a copy of AUC's entry under a new name, in the default table
    again = dataclasses.replace(REGISTRY["auc"], name="auc_again")
    monkeypatch.setitem(REGISTRY, "auc_again", again)
    after = df.eval.binary("y", "s")  # the same arguments: the default table's metrics
    assert after["auc_again"].item() == before["auc"].item()
