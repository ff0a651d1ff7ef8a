"""Merged partition states equal the whole (SPEC §10), for every metric written as a spec.

For each registered metric with a :class:`~polars_eval._core.spec.MetricSpec`, the rows are
split into random disjoint partitions (some empty in a group, a group missing from a
partition), each partition's states are computed apart (``planner.state_frame``), the
stacked states are merged and finalized (``planner.merge_states``), and the result must
equal the metric's expression over the whole frame to 1e-12, with and without weights, on
tied and untied data, per group and for the whole frame.
"""

from __future__ import annotations

import inspect
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
COLUMNS: dict[str, dict[str, Any]] = {
    "regression": {"actual": "y", "pred": "p", "weight": "w"},
    "binary": {"label": "y", "score": "s", "weight": "w"},
    "forecast": {
        "actual": "y",
        "forecast": "p",
        "quantile_pred": "p",
        "quantile_preds": ["lo", "p", "hi"],
        "baseline": "lo",
        "scale": "sc",
        "lower": "lo",
        "upper": "hi",
        "weight": "w",
    },
    "ranking": {"relevance": "rel", "score": "s"},
    "multiclass": {
        "label": "label",
        "pred": "yhat",
        "proba": "proba",
        "score": "proba",
        "weight": "w",
    },
}
# per task, inputs that exclude one another: a metric gets the first of them it takes
ALTERNATIVES: dict[str, tuple[str, ...]] = {"multiclass": ("pred", "proba")}
# per task, options given to every metric that takes them (required or not)
TASK_OPTIONS: dict[str, dict[str, Any]] = {"multiclass": {"classes": ["a", "b", "c", "d"]}}
# values of the options that have no default
OPTIONS = {
    "beta": 2.0,
    "recall": 0.5,
    "precision": 0.6,
    "volume": 0.3,
    "fpr": 0.2,
    "quantile": 0.3,
    "quantiles": [0.2, 0.5, 0.9],
    "alpha": 0.2,
    "max_fpr": 0.3,
}

SPECS = [info for info in REGISTRY.values() if info.spec is not None]


def _regression(rng: np.random.Generator, n: int, tied: bool) -> pl.DataFrame:
    y = rng.gamma(2.0, 3.0, n)
    p = y + rng.normal(0.0, 2.0, n).clip(-y + 0.01)
    if tied:
        y, p = np.round(y), np.round(p)
    y[rng.random(n) < 0.05] = 0.0
    return pl.DataFrame({"y": y, "p": p})


def _binary(rng: np.random.Generator, n: int, tied: bool) -> pl.DataFrame:
    y = rng.integers(0, 2, n)
    s = rng.random(n) * 0.7 + 0.3 * y * rng.random(n)
    return pl.DataFrame({"y": y, "s": np.round(s, 1) if tied else s})


def _forecast(rng: np.random.Generator, n: int, tied: bool) -> pl.DataFrame:
    frame = _regression(rng, n, tied)
    scale = rng.gamma(2.0, 1.0, n)
    scale[rng.random(n) < 0.1] = 0.0  # rows without a positive scale are left out
    return frame.with_columns(
        sc=pl.Series(scale),
        lo=pl.col("p") - 2.0,
        hi=pl.col("p") + pl.Series(rng.gamma(2.0, 1.0, n)),
    )


def _ranking(rng: np.random.Generator, n: int, tied: bool) -> pl.DataFrame:
    """Graded relevance and scores (the group "g" is the query, split across partitions);
    some rows with a null score or relevance."""
    rel = rng.choice(4, size=n, p=[0.6, 0.2, 0.1, 0.1]).astype(float)
    s = rng.random(n) + 0.1 * rel
    if tied:
        s = np.round(s, 1)
    frame = pl.DataFrame({"rel": rel, "s": s})
    return frame.with_columns(
        pl.when(pl.int_range(pl.len()) % 17 == 3).then(None).otherwise(pl.col("s")).alias("s"),
        pl.when(pl.int_range(pl.len()) % 23 == 5).then(None).otherwise(pl.col("rel")).alias("rel"),
    )


def _multiclass(rng: np.random.Generator, n: int, tied: bool) -> pl.DataFrame:
    classes = np.array(TASK_OPTIONS["multiclass"]["classes"])
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
    "binary": _binary,
    "forecast": _forecast,
    "ranking": _ranking,
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
    args: dict[str, Any] = {
        arg: columns[arg]
        for arg in info.inputs
        if arg in columns and (weighted or info.inputs[arg] != "weight")
    }
    alternatives = [arg for arg in ALTERNATIVES.get(info.task, ()) if arg in args]
    for arg in alternatives[1:]:
        del args[arg]
    params = info.signature.parameters
    for name, param in params.items():
        if param.default is inspect.Parameter.empty and name not in args and name in OPTIONS:
            args[name] = OPTIONS[name]
    args.update({k: v for k, v in TASK_OPTIONS.get(info.task, {}).items() if k in params})
    return args


def _close(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert_frame_equal(a, b, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_every_metric_is_a_spec() -> None:
    """SPEC §10: every registered metric is a state and a finalize (so every one is in the
    merge invariance below), the tables and curves included."""
    assert [info.name for info in REGISTRY.values() if info.spec is None] == []
    names = {i.name for i in SPECS}
    assert {"confusion_matrix", "residual_qq", "conditional_table", "roc_curve"} <= names
    assert len(SPECS) == len(REGISTRY) > 100


@pytest.mark.parametrize("info", SPECS, ids=[i.name for i in SPECS])
@pytest.mark.parametrize(
    ("seed", "tied", "weighted"), [(0, False, True), (1, True, True), (2, True, False)]
)
def test_merged_partition_states_equal_the_whole(
    info: MetricInfo, seed: int, tied: bool, weighted: bool
) -> None:
    frame = _frame(info.task, seed, tied)
    if info.check is not None and info.task in ("regression", "forecast"):  # the deviances
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
    if info.kind == "scalar":
        value = total.item()
        assert value is None or isinstance(value, float) and not math.isnan(value)
