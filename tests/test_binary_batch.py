"""The sort-based metrics of ``df.eval.binary`` over unweighted rows, computed together in
one numpy pass over the sorted keys (``_core/table.Batch``, ``metrics/_sorted_keys.together``)
instead of a threshold state and a finalizer each.

Held against scikit-learn and brute-force recounts, against the same metrics through the
threshold state (a weight column of ones takes the Polars path), per group against per
frame, lazily against eagerly, on continuous, tied, signed, NaN, one-class, one-row and
all-null data. The chunks of the pass are shrunk in one test so that every accumulator
carries its sums and maxima across chunk ends.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import oracles as O
import polars as pl
import pytest
from conftest import binary_data

import polars_eval as pe
from polars_eval.metrics import _sorted_keys

SORTED = ["auc", "gini", "pr_auc", "average_precision", "ks", "max_accuracy", "max_f1", "max_mcc"]


def same(a: Any, b: Any, tol: float = 1e-12) -> bool:
    """Equal to ``tol``, or both null, or both NaN."""
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def frame(case: str, n: int = 400, seed: int = 3) -> pl.DataFrame:
    df = binary_data(n, seed=seed, tied=case == "tied", groups=4)
    if case == "signed":
        rng = np.random.default_rng(seed)
        df = df.with_columns(score=pl.Series(np.round(rng.normal(0, 2, n), 1)))
    if case == "nan score":
        df = df.with_columns(
            score=pl.when(pl.int_range(pl.len()) == 7).then(float("nan")).otherwise("score")
        )
    if case == "one class":
        df = df.with_columns(y=pl.lit(1))
    if case == "one row":
        df = df.head(1)
    if case == "nulls":
        df = df.with_columns(
            y=pl.when(pl.int_range(pl.len()) % 5 == 0).then(None).otherwise("y"),
            score=pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise("score"),
        )
    if case == "all null":
        df = df.with_columns(score=pl.lit(None, dtype=pl.Float64))
    return df


CASES = ["continuous", "tied", "signed", "nan score", "one class", "one row", "nulls", "all null"]


def table(df: Any, weight: str | None, by: str | None = None) -> Any:
    scores = df.lazy().select(pl.col("score").min()).collect().item()
    return df.eval.binary(
        "y", "score", weight=weight, by=by, validate=False, probability=not scores or scores >= 0
    )


@pytest.mark.filterwarnings("ignore::polars_eval.UndefinedMetricWarning")
@pytest.mark.parametrize("case", CASES)
def test_batch_equals_the_threshold_state_path(case: str) -> None:
    """Unweighted (the numpy pass) and with a weight column of ones (the threshold state
    and its Polars finalizers): the same values, per frame and per group, lazily too."""
    df = frame(case).with_columns(one=pl.lit(1.0))
    for by in (None, "g"):
        if case == "all null" and by is None:
            continue  # no row to evaluate: an error, as for every table (test_bad_inputs)
        got = table(df, None, by)
        lazy = table(df.lazy(), None, by).collect()  # one query: the numpy pass inside
        want = table(df, "one", by)
        assert got.columns == want.columns == lazy.columns
        for name in got.columns:
            for a, b, c in zip(got[name], want[name], lazy[name], strict=True):
                assert same(a, b) and same(a, c), (case, by, name, a, b, c)


@pytest.mark.parametrize("tied", [False, True])
def test_batch_vs_sklearn_and_brute_force(tied: bool) -> None:
    df = frame("tied" if tied else "continuous", n=600, seed=11)
    out = df.eval.binary("y", "score", by="g")
    for row in out.iter_rows(named=True):
        part = df.filter(pl.col("g") == row["g"])
        y, s = part["y"].to_numpy(), part["score"].to_numpy()
        assert same(row["auc"], O.sk_auc(y, s))
        assert same(row["gini"], 2.0 * O.sk_auc(y, s) - 1.0)
        assert same(row["average_precision"], O.sk_average_precision(y, s))
        assert same(row["pr_auc"], O.brute_pr_auc(y, s))
        assert same(row["ks"], O.brute_ks(y, s))
        for name in ("accuracy", "f1", "mcc"):
            assert same(row[f"max_{name}"], O.brute_max(name, y, s)), name
        assert same(row["ece"], O.brute_ece(y, s, None, 10))


def test_batch_per_group_equals_per_frame() -> None:
    df = frame("tied", n=900, seed=5)
    grouped = df.eval.binary("y", "score", by="g")
    for row in grouped.iter_rows(named=True):
        alone = df.filter(pl.col("g") == row["g"]).eval.binary("y", "score").row(0, named=True)
        for name, value in alone.items():
            assert same(row[name], value), (name, row[name], value)


@pytest.mark.parametrize("tied", [False, True])
def test_accumulators_carry_across_chunks(monkeypatch: pytest.MonkeyPatch, tied: bool) -> None:
    """Chunks of 8 keys: every sum, maximum and bin total carries over many chunk ends
    (a tie block never splits: a chunk ends at a block's end)."""
    df = frame("tied" if tied else "signed", n=500, seed=2)
    s = pl.col("score")
    df = df.with_columns(score=((s - s.min()) / (s.max() - s.min())).round(3))
    want = df.eval.binary("y", "score")
    monkeypatch.setattr(_sorted_keys, "_CHUNK", 8)
    got = df.eval.binary("y", "score")
    for name in want.columns:
        assert same(got[name].item(), want[name].item()), name
    y, s = df["y"].to_numpy(), df["score"].to_numpy()
    assert same(got["auc"].item(), O.sk_auc(y, s))
    assert same(got["max_mcc"].item(), O.brute_max("mcc", y, s))
    assert same(got["ece"].item(), O.brute_ece(y, s, None, 10))


def test_bare_metrics_read_the_same_accumulators() -> None:
    """``pe.average_precision`` / ``pe.pr_auc`` alone and the table's columns: one code."""
    df = frame("continuous", n=300)
    out = df.eval.binary("y", "score", metrics=["average_precision", "pr_auc"])
    alone = df.select(pe.average_precision("y", "score"), pe.pr_auc("y", "score"))
    assert out.equals(alone)


def test_baseline_columns_take_their_own_batch() -> None:
    """The baseline's constant score is other rows: a batch of its own (AUC 0.5)."""
    df = frame("continuous", n=300)
    out = df.eval.binary("y", "score", baseline=True)
    assert out["auc_baseline"].item() == 0.5
    with_state = df.with_columns(one=pl.lit(1.0)).eval.binary(
        "y", "score", weight="one", baseline=True
    )
    for name in out.columns:
        assert same(out[name].item(), with_state[name].item()), name


@pytest.mark.parametrize("bins", [1, 7, 10])
def test_ece_of_scores_on_and_beside_every_bin_edge(bins: int) -> None:
    """The batch's ECE bins its blocks by ``searchsorted`` of the inner edges, as
    scikit-learn's ``calibration_curve`` bins its rows: scores on each edge of
    ``linspace(0, 1, bins + 1)`` and one ulp either side of it."""
    edges = np.linspace(0.0, 1.0, 11 if bins == 10 else bins + 1)
    s = np.concatenate([edges, np.nextafter(edges, 2.0), np.nextafter(edges, -1.0)]).clip(0, 1)
    s = np.concatenate([s, s, [0.3, 0.7]])
    y = np.random.default_rng(bins).integers(0, 2, len(s))
    df = pl.DataFrame({"y": y, "score": s})
    got = df.select(pe.ece("y", "score", bins=bins)).item()  # the bare expression
    table_value = df.eval.binary("y", "score", metrics=["ece"]).item() if bins == 10 else got
    assert same(got, O.brute_ece(y, s, None, bins))
    assert same(table_value, O.brute_ece(y, s, None, bins))
