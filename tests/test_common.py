"""Registry-driven checks that every metric must pass (as scikit-learn's test_common).

Nothing here lists metrics by hand: each test iterates ``polars_eval._core.registry.REGISTRY``.
Every task has a :class:`Case` in ``CASES``: a data generator and the column each input
argument or role maps to (plus values for options that have no default); a task without
one fails ``test_every_task_has_a_case``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import binary_data
from polars.testing import assert_frame_equal

import polars_eval as pe
from polars_eval._core.registry import REGISTRY, MetricInfo
from polars_eval.tasks import forecast as forecast_task


@dataclass(frozen=True)
class Case:
    """How to feed a task's metrics: data, role -> column, options without defaults."""

    make: Callable[[int, bool], pl.DataFrame]  # (seed, tied) -> frame with a "w" weight column
    columns: Mapping[str, Any]  # input argument or role -> column name (argument first)
    options: Mapping[str, Any] = field(default_factory=dict)  # required option -> value
    group: str = "g"  # a grouping column of the frame
    # namespace-only key arguments (ranking's query=): the namespace value is the mean over
    # the keys of the expression's value per key (SPEC §7)
    keys: Mapping[str, str] = field(default_factory=dict)


def regression_data(seed: int, tied: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = 120
    y = rng.gamma(2.0, 2.0, n) + 0.2  # positive: inside every regression metric's domain
    p = np.abs(y + rng.normal(0.0, 1.0, n)) + 0.1
    if tied:
        y, p = np.round(y) + 0.5, np.round(p) + 0.5
    scale = rng.gamma(2.0, 1.0, n)
    return pl.DataFrame(
        {
            "y": y,
            "p": p,
            "sc": scale,
            "lo": p - 1.0,
            "hi": p + rng.gamma(2.0, 1.0, n),
            "w": rng.integers(0, 4, n).astype(float),
            "g": rng.integers(0, 3, n),
        }
    )


def multiclass_data(seed: int, tied: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = 150
    y = rng.integers(0, 3, n)
    proba = rng.dirichlet([1.0, 1.0, 1.0], n)
    if tied:
        proba = np.round(proba, 1)
        proba[:, 2] = 1.0 - proba[:, 0] - proba[:, 1]
        proba = np.clip(proba, 0.0, 1.0)
        proba = proba / proba.sum(axis=1, keepdims=True)
    pred = np.where(rng.random(n) < 0.6, y, rng.integers(0, 3, n))
    return pl.DataFrame(
        {
            "y": y,
            "yp": pred,
            **{f"p{k}": proba[:, k] for k in range(3)},
            "w": rng.integers(0, 4, n).astype(float),
            "g": rng.integers(0, 3, n),
        }
    )


def ranking_data(seed: int, tied: bool) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = 160
    score = rng.random(n)
    return pl.DataFrame(
        {
            "rel": rng.integers(0, 4, n) * (rng.random(n) < 0.5),
            "s": np.round(score, 1) if tied else score,
            "w": rng.integers(0, 4, n).astype(float),
            "q": (q := rng.integers(0, 8, n)),
            "g": q % 3,  # every query in one group
        }
    )


CASES: dict[str, Case] = {
    "binary": Case(
        make=lambda seed, tied: binary_data(120, seed=seed, tied=tied, groups=3),
        columns={"binary_label": "y", "score": "score", "proba": "score", "weight": "w"},
        options={
            "beta": 2.0,
            "recall": 0.5,
            "precision": 0.6,
            "volume": 0.3,
            "fpr": 0.2,
            "max_fpr": 0.3,
        },
    ),
    "regression": Case(
        make=regression_data,
        columns={"actual": "y", "pred": "p", "weight": "w"},
    ),
    "forecast": Case(
        make=regression_data,
        columns={
            "actual": "y",
            "forecast": "p",
            "quantile_pred": "p",
            "scale": "sc",
            "lower": "lo",
            "upper": "hi",
            "baseline": "hi",
            "quantile_preds": ["lo", "p", "hi"],
            "weight": "w",
        },
        options={"quantile": 0.3, "quantiles": [0.1, 0.5, 0.9], "alpha": 0.2},
    ),
    "multiclass": Case(
        make=multiclass_data,
        columns={
            "label": "y",
            "pred": "yp",
            "proba": ["p0", "p1", "p2"],
            "score": ["p0", "p1", "p2"],  # decision scores (multiclass_hinge_loss)
            "weight": "w",
        },
        options={"classes": [0, 1, 2], "beta": 2.0},
    ),
    "ranking": Case(
        make=ranking_data,
        columns={"relevance": "rel", "score": "s"},
        group="q",
        keys={"query": "q"},
    ),
}

METRICS = [info for info in REGISTRY.values() if info.task in CASES]
IDS = [info.name for info in METRICS]
SEEDS = [(0, False), (1, True), (2, True)]


def arguments(info: MetricInfo, case: Case, *, weighted: bool = True) -> dict[str, Any]:
    """Keyword arguments for a metric: its data columns by role, and the required options."""
    args: dict[str, Any] = {}
    params = info.signature.parameters
    optional_data = False  # of inputs that default to None, only the first (score= / pred=)
    for name, role in info.inputs.items():
        if role == "weight" and not weighted:
            continue
        if role != "weight" and params[name].default is None:
            if optional_data:
                continue
            optional_data = True
        column = case.columns.get(name, case.columns.get(role))
        if column is not None:
            args[name] = column
    for name, param in info.signature.parameters.items():
        if name in args or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if name in case.options:  # the Case's value, for optional options too (classes=)
            args[name] = case.options[name]
            continue
        assert param.default is not inspect.Parameter.empty, (
            f"metric {info.name!r}: give a value for its option {name!r} in CASES[{info.task!r}]"
        )
    return args


def build(info: MetricInfo, *, weighted: bool = True, **override: Any) -> pl.Expr:
    case = CASES[info.task]
    return info.fn(**{**arguments(info, case, weighted=weighted), **override})


def frame(info: MetricInfo, seed: int = 0, tied: bool = False) -> pl.DataFrame:
    return CASES[info.task].make(seed, tied)


def as_python(df: pl.DataFrame) -> Any:
    return df.to_series().to_list()[0]


def close(a: Any, b: Any, tol: float = 1e-9) -> bool:
    """Deep comparison of values, lists and dicts; None == None, NaN == NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return a == b


metric_param = pytest.mark.parametrize("info", METRICS, ids=IDS)


def test_every_task_has_a_case() -> None:
    """Every task has a Case: a metric of a task without one would go untested here."""
    uncovered = sorted({info.task for info in REGISTRY.values()} - set(CASES))
    assert not uncovered, f"tasks without a Case in tests/test_common.py: {uncovered}"


@metric_param
def test_registry_entry_is_consistent(info: MetricInfo) -> None:
    params = info.signature.parameters
    assert set(info.inputs) <= set(params)
    assert info.kind in ("scalar", "struct", "curve")
    if info.kind == "scalar":
        assert info.lower is None or info.upper is None or info.lower < info.upper
    if info.kind in ("struct", "curve"):
        assert info.fields, "a struct or curve metric lists its fields"
    # exported as pe.<name>, except ranking's "map": pe.map would shadow Python's map on a
    # star import (its expression is pe.ap_at_k(..., k=None); df.eval.map exists)
    if info.name != "map":
        assert getattr(pe, info.name) is info.fn, "every metric is exported as pe.<name>"
        assert info.name in pe.__all__
    assert info.description, "a one-line docstring summary"
    names = pe.metrics()["name"].to_list()
    assert names.count(info.name) == 1


@metric_param
def test_output_is_aliased_and_typed(info: MetricInfo) -> None:
    expr = build(info)
    assert isinstance(expr, pl.Expr)
    assert expr.meta.output_name() == info.name
    out = frame(info).select(expr)
    assert out.columns == [info.name]
    assert out.height == 1
    dtype = out.schema[info.name]
    if info.kind == "scalar":
        assert dtype == pl.Float64
    elif info.kind == "struct":
        assert isinstance(dtype, pl.Struct)
        assert tuple(f.name for f in dtype.fields) == info.fields
    else:
        assert isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct)
        assert tuple(f.name for f in dtype.inner.fields) == info.fields


@metric_param
@pytest.mark.parametrize("seed,tied", SEEDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_scalar_within_registered_bounds(
    info: MetricInfo, seed: int, tied: bool, weighted: bool
) -> None:
    if info.kind != "scalar":
        pytest.skip("bounds apply to scalar metrics")
    df = frame(info, seed, tied)
    values = df.group_by(CASES[info.task].group).agg(build(info, weighted=weighted))[info.name]
    values = values.append(df.select(build(info, weighted=weighted)).to_series())
    for v in values.drop_nulls().to_list():
        assert not math.isnan(v)
        if info.lower is not None:
            assert v >= info.lower - 1e-12, (info.name, v)
        if info.upper is not None:
            assert v <= info.upper + 1e-12, (info.name, v)


@metric_param
@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_lazy_equals_eager(info: MetricInfo, engine: str) -> None:
    df = frame(info, 1, True)
    expr = build(info)
    eager = df.select(expr)
    lazy = df.lazy().select(expr).collect(engine=engine)  # type: ignore[call-overload]
    assert close(as_python(lazy), as_python(eager), 1e-12)
    group = CASES[info.task].group
    eager_g = df.group_by(group).agg(expr).sort(group)
    lazy_g = df.lazy().group_by(group).agg(expr).sort(group).collect(engine=engine)  # type: ignore[call-overload]
    assert close(lazy_g.to_dicts(), eager_g.to_dicts(), 1e-12)


@metric_param
def test_single_group_equals_global(info: MetricInfo) -> None:
    df = frame(info, 2, True)
    expr = build(info)
    whole = as_python(df.select(expr))
    grouped = df.with_columns(__k=pl.lit(1)).group_by("__k").agg(expr).drop("__k")
    assert close(as_python(grouped), whole, 1e-12)
    over = df.select(expr.over(pl.lit(1)).first())  # window over one partition
    assert close(as_python(over), whole, 1e-12)


@metric_param
def test_row_order_does_not_matter(info: MetricInfo) -> None:
    df = frame(info, 1, True)
    expr = build(info)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=7)
    assert close(as_python(shuffled.select(expr)), as_python(df.select(expr)), 1e-9)


@metric_param
def test_integer_weights_equal_repeated_rows(info: MetricInfo) -> None:
    if "weight" not in info.inputs.values():
        pytest.skip("no weight input")
    if info.extra.get("per_row"):
        pytest.skip("a per-row view: a repeated row is one more point, a weight is not")
    df = frame(info, 3, True)
    repeated = df.select(pl.all().repeat_by(pl.col("w").cast(pl.Int64))).explode(pl.all())
    a = as_python(df.select(build(info)))
    b = as_python(repeated.select(build(info, weighted=False)))
    assert close(a, b, 1e-9)


@metric_param
def test_zero_weight_equals_row_removed(info: MetricInfo) -> None:
    if "weight" not in info.inputs.values():
        pytest.skip("no weight input")
    df = frame(info, 4, False)
    a = as_python(df.select(build(info)))
    b = as_python(df.filter(pl.col("w") != 0).select(build(info)))
    assert close(a, b, 1e-12)


@metric_param
def test_empty_frame_gives_null_not_an_error(info: MetricInfo) -> None:
    df = frame(info).head(0)
    value = as_python(df.select(build(info)))
    if info.kind == "scalar":
        assert value is None
    elif info.kind == "struct":
        assert value is None or all(v is None or v == 0 for v in value.values())
    else:
        assert value is None or isinstance(value, list)


@metric_param
def test_namespace_method_matches_the_function(info: MetricInfo) -> None:
    method = getattr(pe.EvalNamespace, info.name)
    got = inspect.signature(method)
    want = list(info.signature.parameters.values())
    if info.name == "map":  # MAP is AP over the whole list (trec_eval's map)
        want = [p.replace(default=None) if p.name == "k" else p for p in want]
    # the forecast keys on the scalar metrics of regression and forecasting (SPEC §6)
    keyed = info.task in forecast_task.KEY_TASKS and info.kind == "scalar"
    scaled = info.name in forecast_task.TRAIN_SCALED  # scale= or train= (a training frame)
    if scaled:
        want = [p.replace(default=None) if p.name == "scale" else p for p in want]
    params = list(got.parameters.values())
    assert params[0].name == "self"
    assert params[1 : 1 + len(want)] == want
    extra = {p.name: p for p in params[1 + len(want) :]}
    expected_extra = ["by", "validate"] + (["ci", "level"] if info.intervals else [])
    if "bootstrap" in info.intervals:  # ci="bootstrap" options (SPEC §8)
        expected_extra += ["n_resamples", "seed", "method"]
    if keyed:
        expected_extra += ["series", "time", "cutoff", "lead"]
    if scaled:
        expected_extra += ["train", "season_length"]
    if info.task == "ranking":  # per query, then the mean over queries (SPEC §7), with its
        # interval over queries (SPEC §14)
        expected_extra += ["query", "item", "weight", "per_query", "ci", "level"]
        expected_extra += ["n_resamples", "seed"]
    assert sorted(extra) == sorted(expected_extra)
    assert got.return_annotation != "pl.Expr"  # the method returns values, not expressions
    assert extra["by"].default is None and extra["by"].kind is inspect.Parameter.KEYWORD_ONLY
    assert extra["validate"].default is True


def _pivoted(long: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The multiclass confusion cells in the namespace's wide form (SPEC §4): one row per
    true class, a ``predicted_<class>`` column per predicted class, absent cells 0."""
    wide = long.pivot(on="predicted", index=[*by, "truth"], values="weight", sort_columns=True)
    wide = wide.rename({c: f"predicted_{c}" for c in wide.columns if c not in (*by, "truth")})
    return wide.fill_null(0).sort([*by, "truth"])


def _per_key_mean(df: pl.DataFrame, info: MetricInfo, args: dict[str, Any], by: list[str]) -> Any:
    """The namespace value of a keyed task: the mean over keys of the value per key."""
    keys = list(CASES[info.task].keys.values())
    per_key = df.group_by([*by, *keys]).agg(info.fn(**args))
    if not by:
        return per_key.select(pl.col(info.name).mean()).item()
    return per_key.group_by(by).agg(pl.col(info.name).mean()).sort(by)


@metric_param
def test_namespace_equals_expression(info: MetricInfo) -> None:
    case = CASES[info.task]
    df = frame(info, 0, True)
    args = arguments(info, case)
    got = getattr(df.eval, info.name)(**args, **case.keys)
    lazy = getattr(df.lazy().eval, info.name)(**args, **case.keys)
    assert isinstance(lazy, pl.LazyFrame)
    want = as_python(df.select(info.fn(**args)))
    if case.keys:
        assert close(got, _per_key_mean(df, info, args, []), 1e-12)
    elif info.kind == "scalar":
        assert close(got, want, 1e-12)
    elif info.kind == "struct":
        to_python = info.extra.get("to_python")
        if to_python is not None:
            assert_frame_equal(got, to_python(want))
        else:
            assert close(got, want, 1e-12)
    elif info.name == "multiclass_confusion_matrix":
        assert_frame_equal(got, _pivoted(pl.DataFrame(want), []))
    else:
        assert isinstance(got, pl.DataFrame)
        assert tuple(got.columns) == info.fields
        assert close(got.to_dicts(), want, 1e-12)


@metric_param
def test_namespace_by_equals_group_by(info: MetricInfo) -> None:
    case = CASES[info.task]
    df = frame(info, 1, False)
    args = arguments(info, case)
    by = "g" if case.keys else case.group
    got = getattr(df.eval, info.name)(**args, **case.keys, by=by)
    assert got.columns[0] == by
    assert got[by].to_list() == sorted(got[by].to_list())
    agg = df.group_by(case.group).agg(info.fn(**args)).sort(case.group)
    if case.keys:
        assert_frame_equal(got, _per_key_mean(df, info, args, [by]), rel_tol=1e-12)
    elif info.name == "multiclass_confusion_matrix":
        long = agg.explode(info.name).unnest(info.name)
        assert_frame_equal(got, _pivoted(long, [by]))
    elif info.kind == "scalar":
        assert_frame_equal(got, agg, rel_tol=1e-12)
    elif info.kind == "struct":
        assert_frame_equal(got, agg.unnest(info.name), rel_tol=1e-12)
    else:
        assert_frame_equal(got, agg.explode(info.name).unnest(info.name), rel_tol=1e-12)
