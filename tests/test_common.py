"""Registry-driven checks that every metric must pass (as scikit-learn's test_common).

Nothing here lists metrics by hand: each test iterates ``polars_eval._core.registry.REGISTRY``.
A task joins by adding a :class:`Case` to ``CASES``: a data generator and the column
each input role maps to (plus values for options that have no default). Metrics of tasks
without a case are left out of these tests (``test_every_task_has_a_case`` says which).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pytest
from conftest import binary_data
from polars.testing import assert_frame_equal

import polars_eval as pe
from polars_eval._core.registry import REGISTRY, MetricInfo


@dataclass(frozen=True)
class Case:
    """How to feed a task's metrics: data, role -> column, options without defaults."""

    make: Callable[[int, bool], pl.DataFrame]  # (seed, tied) -> frame with a "w" weight column
    columns: Mapping[str, str]  # input role -> column name
    options: Mapping[str, Any] = field(default_factory=dict)  # required option -> value
    group: str = "g"  # a grouping column of the frame


CASES: dict[str, Case] = {
    "binary": Case(
        make=lambda seed, tied: binary_data(120, seed=seed, tied=tied, groups=3),
        columns={"binary_label": "y", "score": "score", "proba": "score", "weight": "w"},
        options={"beta": 2.0, "recall": 0.5, "precision": 0.6, "volume": 0.3, "fpr": 0.2},
    ),
}

METRICS = [info for info in REGISTRY.values() if info.task in CASES]
IDS = [info.name for info in METRICS]
SEEDS = [(0, False), (1, True), (2, True)]


def arguments(info: MetricInfo, case: Case, *, weighted: bool = True) -> dict[str, Any]:
    """Keyword arguments for a metric: its data columns by role, and the required options."""
    args: dict[str, Any] = {}
    for name, role in info.inputs.items():
        if role == "weight" and not weighted:
            continue
        if role in case.columns:
            args[name] = case.columns[role]
    for name, param in info.signature.parameters.items():
        if name in args or param.default is not inspect.Parameter.empty:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        assert name in case.options, (
            f"metric {info.name!r}: give a value for its option {name!r} in CASES[{info.task!r}]"
        )
        args[name] = case.options[name]
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
    """Metrics of tasks without a Case are not covered here: name them (not an error)."""
    uncovered = sorted({info.task for info in REGISTRY.values()} - set(CASES))
    assert METRICS, "no registered metric is covered by test_common"
    if uncovered:
        pytest.skip(f"tasks without a Case in tests/test_common.py: {uncovered}")


@metric_param
def test_registry_entry_is_consistent(info: MetricInfo) -> None:
    params = info.signature.parameters
    assert set(info.inputs) <= set(params)
    assert info.kind in ("scalar", "struct", "curve")
    if info.kind == "scalar":
        assert info.lower is None or info.upper is None or info.lower < info.upper
    if info.kind in ("struct", "curve"):
        assert info.fields, "a struct or curve metric lists its fields"
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


SIGNATURE_PARAMS = [pytest.param(info, id=info.name, marks=[]) for info in METRICS]


@pytest.mark.parametrize("info", SIGNATURE_PARAMS)
def test_namespace_method_matches_the_function(info: MetricInfo) -> None:
    method = getattr(pe.EvalNamespace, info.name)
    got = inspect.signature(method)
    want = list(info.signature.parameters.values())
    params = list(got.parameters.values())
    assert params[0].name == "self"
    assert params[1 : 1 + len(want)] == want
    extra = {p.name: p for p in params[1 + len(want) :]}
    expected_extra = ["by", "validate"] + (["ci", "level"] if info.intervals else [])
    if "bootstrap" in info.intervals:  # ci="bootstrap" options (SPEC §8)
        expected_extra += ["n_resamples", "seed", "method"]
    assert sorted(extra) == sorted(expected_extra)
    assert extra["by"].default is None and extra["by"].kind is inspect.Parameter.KEYWORD_ONLY
    assert extra["validate"].default is True


@metric_param
def test_namespace_equals_expression(info: MetricInfo) -> None:
    df = frame(info, 0, True)
    args = arguments(info, CASES[info.task])
    want = as_python(df.select(info.fn(**args)))
    got = getattr(df.eval, info.name)(**args)
    if info.kind == "scalar":
        assert close(got, want, 1e-12)
    elif info.kind == "curve":
        assert isinstance(got, pl.DataFrame)
        assert tuple(got.columns) == info.fields
        assert close(got.to_dicts(), want, 1e-12)
    lazy = getattr(df.lazy().eval, info.name)(**args)
    assert isinstance(lazy, pl.LazyFrame)


@metric_param
def test_namespace_by_equals_group_by(info: MetricInfo) -> None:
    case = CASES[info.task]
    df = frame(info, 1, False)
    args = arguments(info, case)
    got = getattr(df.eval, info.name)(**args, by=case.group)
    assert got.columns[0] == case.group
    assert got[case.group].to_list() == sorted(got[case.group].to_list())
    agg = df.group_by(case.group).agg(info.fn(**args)).sort(case.group)
    if info.kind == "scalar":
        assert_frame_equal(got, agg, rel_tol=1e-12)
    elif info.kind == "struct":
        assert_frame_equal(got, agg.unnest(info.name), rel_tol=1e-12)
    else:
        assert_frame_equal(got, agg.explode(info.name).unnest(info.name), rel_tol=1e-12)
