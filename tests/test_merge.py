"""Merged partition states equal the whole (SPEC §10), for every metric written as a spec.

For each registered metric with a :class:`~polars_eval._core.spec.MetricSpec`, the rows are
split into random disjoint partitions (some empty in a group, a group missing from a
partition), each partition's states are computed apart (``planner.state_frame``), the
stacked states are merged and finalized (``planner.merge_states``), and the result must
equal the metric's expression over the whole frame to 1e-12, with and without weights, on
tied and untied data, per group and for the whole frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from polars_eval._core import planner
from polars_eval._core.registry import REGISTRY, MetricInfo

# argument name -> column of the test frame, per task
COLUMNS: dict[str, dict[str, str]] = {
    "regression": {"actual": "y", "pred": "p", "weight": "w"},
    "multiclass": {"label": "label", "pred": "yhat", "proba": "proba", "weight": "w"},
}
# per task, inputs that exclude one another: a metric gets the first of them it takes
ALTERNATIVES: dict[str, tuple[str, ...]] = {"multiclass": ("pred", "proba")}
# per task, options the metrics need (given to the metrics that take them)
OPTIONS: dict[str, dict[str, Any]] = {"multiclass": {"classes": ["a", "b", "c", "d"], "beta": 2.0}}

SPECS = [info for info in REGISTRY.values() if info.spec is not None]


def _regression(rng: np.random.Generator, n: int, tied: bool) -> pl.DataFrame:
    y = rng.gamma(2.0, 3.0, n)
    p = y + rng.normal(0.0, 2.0, n).clip(-y + 0.01)
    if tied:
        y, p = np.round(y), np.round(p)
    y[rng.random(n) < 0.05] = 0.0
    return pl.DataFrame({"y": y, "p": p})


def _multiclass(rng: np.random.Generator, n: int, tied: bool) -> pl.DataFrame:
    classes = np.array(OPTIONS["multiclass"]["classes"])
    k = len(classes)
    y = rng.integers(0, k, n)
    if tied:  # probabilities on a grid of quarters: ties inside rows and across rows
        proba = rng.multinomial(4, np.ones(k) / k, size=n) / 4.0
    else:
        logits = rng.normal(size=(n, k))
        logits[np.arange(n), y] += 1.0
        proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    yhat = np.where(rng.random(n) < 0.5, y, rng.integers(0, k, n))
    return pl.DataFrame({"label": classes[y], "yhat": classes[yhat], "proba": proba.tolist()})


# task -> (rng, rows, tied) -> the input columns of COLUMNS[task]
DATA: dict[str, Callable[[np.random.Generator, int, bool], pl.DataFrame]] = {
    "regression": _regression,
    "multiclass": _multiclass,
}


def _frame(task: str, seed: int, tied: bool) -> pl.DataFrame:
    assert task in DATA, f"no test data for task {task!r}: add it to DATA in tests/test_merge.py"
    rng = np.random.default_rng(seed)
    n = 240
    frame = DATA[task](rng, n, tied)
    w = rng.integers(0, 4, n).astype(float)
    return frame.with_columns(
        pl.Series("w", w),
        pl.Series("g", rng.integers(0, 3, n)),
        pl.Series("part", rng.integers(0, 4, n)),
    ).with_columns(
        # group 2 has no row in partition 0
        part=pl.when((pl.col("g") == 2) & (pl.col("part") == 0)).then(1).otherwise(pl.col("part"))
    )


def _arguments(info: MetricInfo, weighted: bool) -> dict[str, Any]:
    columns = COLUMNS.get(info.task)
    assert columns is not None, f"metric {info.name!r}: no columns for task {info.task!r}"
    args = {
        arg: columns[arg]
        for arg in info.inputs
        if arg in columns and (weighted or info.inputs[arg] != "weight")
    }
    alternatives = [arg for arg in ALTERNATIVES.get(info.task, ()) if arg in args]
    for arg in alternatives[1:]:
        del args[arg]
    params = info.signature.parameters
    args.update({k: v for k, v in OPTIONS.get(info.task, {}).items() if k in params})
    return args


def _close(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert_frame_equal(a, b, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_some_metrics_are_specs() -> None:
    assert {"mse", "r2", "medae", "kendall_tau", "mean_poisson_deviance"} <= {i.name for i in SPECS}
    assert {"multiclass_f1", "multiclass_auc", "top_k_accuracy"} <= {i.name for i in SPECS}


@pytest.mark.parametrize("info", SPECS, ids=[i.name for i in SPECS])
@pytest.mark.parametrize(
    ("seed", "tied", "weighted"), [(0, False, True), (1, True, True), (2, True, False)]
)
def test_merged_partition_states_equal_the_whole(
    info: MetricInfo, seed: int, tied: bool, weighted: bool
) -> None:
    frame = _frame(info.task, seed, tied)
    if info.check is not None and info.task == "regression":  # the deviances: in their domain
        frame = frame.with_columns(pl.col("y", "p").clip(0.5))
    assert info.spec is not None
    spec = {info.name: info.spec(**_arguments(info, weighted))}
    whole = frame.group_by("g").agg(info.fn(**_arguments(info, weighted))).sort("g")
    parts = [frame.filter(pl.col("part") == k) for k in range(4)]
    stacked = pl.concat([planner.state_frame(part, spec, ["g"]).collect() for part in parts])
    merged = planner.merge_states(stacked.lazy(), spec, ["g"]).collect()
    _close(merged, whole)
    # without groups, and with the states of an empty partition among them
    total = frame.select(info.fn(**_arguments(info, weighted)))
    empty = planner.state_frame(frame.clear(), spec, []).collect()
    stacked = pl.concat([empty, *(planner.state_frame(part, spec, []).collect() for part in parts)])
    _close(planner.merge_states(stacked.lazy(), spec, []).collect(), total)
    value = total.item()
    if info.kind == "scalar":
        assert value is None or isinstance(value, float) and not math.isnan(value)
