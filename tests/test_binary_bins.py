"""The binned binary table (``bins=N``) through the table layer, and ``pe.Evaluation``
built from the tasks' hooks (issue 21 item 3).

The bins table partitions, merges and finalizes as any table; its exact columns (log
loss, Brier score, the threshold metrics) equal scikit-learn on the rows, its
sort-based ones scikit-learn on the bins' scores.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from sklearn.metrics import (
    accuracy_score,
    brier_score_loss,
    f1_score,
    log_loss,
    matthews_corrcoef,
    roc_auc_score,
)

import polars_eval as pe
from polars_eval._core.table import arguments
from polars_eval.scale.binned import Binned
from polars_eval.tasks._binary_bins import bins_table
from polars_eval.tasks.binary import BinaryMethods

BINS = 12


def frame(seed: int, n: int = 900) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 0.0, 1.0)
    return pl.DataFrame(
        {"g": rng.integers(0, 3, n), "y": y, "p": p, "w": rng.choice([0.5, 1.0, 2.0], n)}
    )


def table(weight: str | None, threshold: float = 0.5):  # noqa: ANN201
    a = arguments(
        BinaryMethods.binary, label="y", score="p", weight=weight, by=["g"], bins=BINS,
        threshold=threshold,
    )  # fmt: skip
    return bins_table(a)


@pytest.mark.parametrize("weight", [None, "w"])
def test_bins_table_partitions_merges_and_finalizes_as_the_evaluation(weight):
    df = frame(1)
    t = table(weight)
    parts = [t.partition(part).collect() for part in (df.head(400), df.tail(500))]
    merged = t.merge(pl.concat(parts))
    got = t.finalize(merged)
    kw = {"weight": weight, "by": "g", "bins": BINS}
    want = pe.Evaluation("binary", label="y", score="p", **kw).update(df).compute()
    assert_frame_equal(got, want, rel_tol=1e-12)
    assert_frame_equal(df.eval.binary("y", "p", **kw), want, rel_tol=1e-12)
    # the packed-key reduction gives the table's own partition
    fast = Binned(t, df.schema)
    rows = fast.unpack(fast.reduce([fast.rows(df.lazy()).collect()]))
    keys = ["g", "__pe_y", "__pe_bin", "__pe_above"]
    plain = t.partition(df).collect()
    assert_frame_equal(rows.sort(keys), plain.sort(keys), rel_tol=1e-12)


@pytest.mark.parametrize("threshold", [0.5, 0.37])
def test_binned_columns_equal_scikit_learn(threshold):
    df = frame(2)
    t = table("w", threshold)
    out = t.finalize(t.merge(t.partition(df).collect()))
    for (g,), part in df.group_by(["g"]):
        row = out.filter(pl.col("g") == g)
        y, p, w = part["y"].to_numpy(), part["p"].to_numpy(), part["w"].to_numpy()
        hard = (p >= threshold).astype(int)
        rep = (np.minimum(np.floor(p * BINS), BINS - 1) + 0.5) / BINS  # the bin's centre
        want = {
            "logloss": log_loss(y, p, sample_weight=w),
            "brier": brier_score_loss(y, p, sample_weight=w),
            "accuracy": accuracy_score(y, hard, sample_weight=w),
            "f1": f1_score(y, hard, sample_weight=w),
            "mcc": matthews_corrcoef(y, hard, sample_weight=w),
            "auc": roc_auc_score(y, rep, sample_weight=w),
        }
        for name, value in want.items():
            assert row[name].item() == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_multiclass_rows_take_a_list_of_probabilities():
    # the rows kept (the AUCs' state) are checked by the task table's roles: one List
    # column of class probabilities is valid, as for the task method
    rng = np.random.default_rng(3)
    n = 240
    df = pl.DataFrame(
        {
            "g": rng.integers(0, 2, n),
            "y": rng.integers(0, 3, n),
            "pr": rng.dirichlet([1.0, 1.0, 1.0], n).tolist(),
        }
    )
    kw = {"label": "y", "proba": "pr", "classes": [0, 1, 2], "by": "g"}
    ev = pe.Evaluation("multiclass", **kw)
    ev.update(df.head(100)).update(df.tail(140))
    want = df.eval.multiclass("y", proba="pr", classes=[0, 1, 2], by="g")
    assert_frame_equal(ev.compute(), want, rel_tol=1e-12)


def test_tasks_import_nothing_from_the_scale_layer():
    root = Path(pe.__file__).parent / "tasks"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("polars_eval.scale"), path.name
