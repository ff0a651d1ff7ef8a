"""The metrics whose states are bounded stream (SPEC §10, issue 12 item 3).

Their expressions, and the namespace's task tables over them, are aggregations that
Polars' streaming engine runs in one pass: no node of the streaming plan falls back to
the in-memory engine (which holds every row of a group, so a lake's memory grows with
its rows). Collected with the streaming engine, in small morsels so that the engine
merges the partial states of many of them, they equal the eager values: with weights,
per group, with a NaN, with an empty group. The one-pass co-moments (about the
unweighted means, shifted to the weighted ones) are checked against exact rational
arithmetic and merged over random partitions with hypothesis.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polars_eval as pe
from polars_eval._core.spec import moments
from polars_eval.metrics.regression import zero_actual_count

REGRESSION = ["r2", "r2_pearson", "pearson", "explained_variance", "mse", "mape", "wape"]
REGRESSION_TABLE = [
    *REGRESSION,
    "rmse",
    "mae",
    "max_error",
    "bias",
    "rmsle",
    "msle",
    "rmspe",
    "smape",
]
BINARY_TABLE = ["logloss", "brier", "accuracy", "precision", "recall", "f1", "mcc", "cohen_kappa"]


def exprs(weight: str | None) -> dict[str, pl.Expr]:
    """Every expression whose state this change made streamable, by name."""
    y, p = "y", "p"
    out = {name: getattr(pe, name)(y, p, weight=weight) for name in REGRESSION}
    out["d2_tweedie"] = pe.d2_tweedie(y, p, weight=weight, power=0.0)
    out["zero_actuals"] = zero_actual_count(y, p, weight=weight)
    for name in ("logloss", "brier", "hinge_loss"):
        out[name] = getattr(pe, name)("label", "s", weight=weight)
    for name in ("mcc", "f1", "cohen_kappa"):  # finalized over one packed struct
        out[name] = getattr(pe, name)("label", "s", threshold=0.5, weight=weight)
    out["multiclass_mcc"] = pe.multiclass_mcc("k", pred="kp", classes=[0, 1, 2], weight=weight)
    return out


def frame(n: int = 3000, seed: int = 0) -> pl.DataFrame:
    """Groups a, b, c and an empty group e (every row null or of weight 0); a few nulls and
    zero weights; an offset on the regression target (1e4) that cancellation would show."""
    rng = np.random.default_rng(seed)
    y = rng.gamma(2.0, 10.0, n) + 1e4
    y[rng.random(n) < 0.05] = 0.0
    s = rng.random(n)
    df = pl.DataFrame(
        {
            "g": rng.choice(["a", "b", "c"], n),
            "y": y,
            "p": np.abs(y + rng.normal(0.0, 5.0, n)),
            "w": rng.random(n) * (rng.random(n) > 0.05),
            "label": (rng.random(n) < s).astype(np.int64),
            "s": s,
            "k": rng.integers(0, 3, n),
            "kp": rng.integers(0, 3, n),
        }
    ).with_columns(
        p=pl.when(pl.int_range(pl.len()) % 97 == 3).then(None).otherwise(pl.col("p")),
        s=pl.when(pl.int_range(pl.len()) % 89 == 5).then(None).otherwise(pl.col("s")),
    )
    empty = df.head(7).with_columns(g=pl.lit("e"), p=None, s=None, kp=None, w=0.0)
    return pl.concat([df, empty])


def lake(df: pl.DataFrame, root: Path, files: int = 5) -> pl.LazyFrame:
    """``df`` as a few parquet files, scanned."""
    root.mkdir(parents=True, exist_ok=True)
    size = -(-df.height // files)
    for i in range(files):
        df.slice(i * size, size).write_parquet(root / f"part-{i}.parquet")
    return pl.scan_parquet(root / "*.parquet")


def in_memory_nodes(lf: pl.LazyFrame) -> list[str]:
    """The nodes of the streaming plan of ``lf`` that fall back to the in-memory engine,
    but for the namespace's last step (its checks and warnings on the small result)."""
    graph = lf.show_graph(engine="streaming", plan_stage="physical", raw_output=True, show=False)
    assert isinstance(graph, str)
    nodes = re.findall(r'\[label="(.*?)"(?:,style=filled,fillcolor="([^"]+)")?\];', graph, re.S)
    assert nodes, graph
    return [
        label
        for label, colour in nodes
        if colour == "0.0 0.3 1.0" and label != "in-memory-map\\nOPAQUE_PYTHON"
    ]


def collect_streaming(lf: pl.LazyFrame) -> pl.DataFrame:
    """Collected with the streaming engine in morsels of 64 rows: many partial states."""
    with pl.Config(streaming_chunk_size=64):
        return lf.collect(engine="streaming")


def assert_frames_close(got: pl.DataFrame, want: pl.DataFrame, tol: float = 1e-12) -> None:
    assert got.columns == want.columns
    assert got.height == want.height
    for a, b in zip(got.iter_rows(), want.iter_rows(), strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(x, float) and isinstance(y, float):
                assert (math.isnan(x) and math.isnan(y)) or math.isclose(
                    x, y, rel_tol=tol, abs_tol=tol
                ), (a, b)
            else:
                assert x == y, (a, b)


@pytest.mark.parametrize("weight", [None, "w"])
def test_expressions_stream_and_equal_eager(tmp_path: Path, weight: str | None) -> None:
    df = frame()
    lf = lake(df, tmp_path)
    for name, expr in exprs(weight).items():
        query = lf.group_by("g").agg(expr).sort("g")
        assert in_memory_nodes(query) == [], name
        assert in_memory_nodes(lf.select(expr)) == [], name
        want = df.group_by("g").agg(expr).sort("g")
        assert_frames_close(collect_streaming(query), want)
        assert_frames_close(collect_streaming(lf.select(expr)), df.select(expr))
        assert want.filter(g="e")[name].item() in (None, 0), name  # the empty group


def test_expressions_with_nan_stream_to_nan(tmp_path: Path) -> None:
    first_b = (pl.col("g") == "b") & (pl.int_range(pl.len()).over("g") == 0)
    df = frame().with_columns(
        p=pl.when(first_b).then(float("nan")).otherwise(pl.col("p")),
        s=pl.when(first_b).then(float("nan")).otherwise(pl.col("s")),
    )
    lf = lake(df, tmp_path)
    for weight in (None, "w"):
        for name, expr in exprs(weight).items():
            got = collect_streaming(lf.group_by("g").agg(expr).sort("g"))
            want = df.group_by("g").agg(expr).sort("g")
            assert_frames_close(got, want)
            if name not in ("zero_actuals", "multiclass_mcc"):
                assert math.isnan(got.filter(g="b")[name].item()), (name, weight)


@pytest.mark.parametrize("by", ["g", None])
@pytest.mark.parametrize("weight", [None, "w"])
def test_task_tables_stream_and_equal_eager(tmp_path: Path, by: str | None, weight: str | None):
    df = frame(seed=1)
    lf = lake(df, tmp_path)
    tables: dict[str, Callable[[pl.DataFrame | pl.LazyFrame], object]] = {
        "regression": lambda f: f.eval.regression(
            "y", "p", weight=weight, by=by, metrics=REGRESSION_TABLE
        ),
        "binary": lambda f: f.eval.binary("label", "s", weight=weight, by=by, metrics=BINARY_TABLE),
        "multiclass": lambda f: f.eval.multiclass(
            "k", pred="kp", classes=[0, 1, 2], weight=weight, by=by
        ),
    }
    for task, table in tables.items():
        query = table(lf)
        assert isinstance(query, pl.LazyFrame)
        assert in_memory_nodes(query) == [], task
        with pytest.warns(pe.UndefinedMetricWarning) if by else _no_warning():
            got = collect_streaming(query)
        with pytest.warns(pe.UndefinedMetricWarning) if by else _no_warning():
            want = table(df)
        assert isinstance(want, pl.DataFrame)
        assert_frames_close(got, want)


class _no_warning:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_lazy_update_of_a_lake_is_one_streaming_query(tmp_path: Path, monkeypatch) -> None:
    from polars_eval.scale import evaluation

    queries: list[pl.LazyFrame] = []
    batch_rows = evaluation.Evaluation._batch_rows

    def kept(self: evaluation.Evaluation, lf: pl.LazyFrame) -> pl.LazyFrame:
        queries.append(batch_rows(self, lf))
        return queries[-1]

    monkeypatch.setattr(evaluation.Evaluation, "_batch_rows", kept)
    df = frame(seed=2)
    lf = lake(df, tmp_path)
    kw = {"weight": "w", "by": "g", "metrics": REGRESSION_TABLE}
    ev = pe.Evaluation("regression", actual="y", pred="p", **kw)
    with pl.Config(streaming_chunk_size=64):
        ev.update(lf)
    assert len(queries) == 1
    assert in_memory_nodes(queries[0]) == []
    assert ev.state.height == 1 + 4  # the definition row, one row per group
    with pytest.warns(pe.UndefinedMetricWarning):
        want = df.eval.regression("y", "p", **kw)
    with pytest.warns(pe.UndefinedMetricWarning):
        got = ev.compute()
    assert_frames_close(got, want.select(got.columns))


# -- the one-pass co-moments ---------------------------------------------------------------


def exact_moments(w: list[float], x: list[float], y: list[float]) -> dict[str, float]:
    """The weighted count, means and centred co-moments in rational arithmetic."""
    fw, fx, fy = ([Fraction(v) for v in col] for col in (w, x, y))
    total = sum(fw, Fraction(0))
    mx = sum((a * b for a, b in zip(fw, fx, strict=True)), Fraction(0)) / total
    my = sum((a * b for a, b in zip(fw, fy, strict=True)), Fraction(0)) / total

    def co(u: list[Fraction], mu: Fraction, v: list[Fraction], mv: Fraction) -> float:
        terms = (a * (b - mu) * (c - mv) for a, b, c in zip(fw, u, v, strict=True))
        return float(sum(terms, Fraction(0)))

    return {
        "w": float(total),
        "mx": float(mx),
        "my": float(my),
        "sxx": co(fx, mx, fx, mx),
        "syy": co(fy, my, fy, my),
        "sxy": co(fx, mx, fy, my),
    }


def assert_moments_close(got: dict, want: dict, offset: float, spread: float, n: int) -> None:
    """Within the rounding bound of the one-pass form: linear in offset / spread (the
    raw sums Σ w x² − (Σ w x)² / W would lose (offset / spread)², far outside it)."""
    eps = 2.0**-52
    rel = 64 * eps * n * (1.0 + abs(offset) / spread)
    scale = want["w"] * spread**2
    for key in ("sxx", "syy", "sxy"):
        assert abs(got[key] - want[key]) <= rel * scale, (key, got, want)
    for key in ("mx", "my"):
        assert abs(got[key] - want[key]) <= 8 * eps * n * (abs(offset) + spread), (key, got)
    assert math.isclose(got["w"], want["w"], rel_tol=1e-13)


@st.composite
def samples(draw: st.DrawFn) -> tuple[pl.DataFrame, float, float]:
    n = draw(st.integers(2, 40))
    offset = draw(st.sampled_from([0.0, -3.0, 1e3, 1e6, -1e8]))
    spread = draw(st.sampled_from([1e-3, 1.0, 50.0]))
    unit = st.floats(-1.0, 1.0, allow_nan=False)
    x = [offset + spread * v for v in draw(st.lists(unit, min_size=n, max_size=n))]
    y = [offset / 2 + spread * v for v in draw(st.lists(unit, min_size=n, max_size=n))]
    weights = st.one_of(st.just(1.0), st.floats(0.0, 10.0), st.sampled_from([0.0, 1e-3, 1e3]))
    w = draw(st.lists(weights, min_size=n, max_size=n))
    part = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    df = pl.DataFrame({"w": w, "x": x, "y": y, "part": part})
    return df, offset, spread


@settings(max_examples=80, deadline=None)
@given(samples())
def test_moments_one_pass_and_merged_equal_exact(sample) -> None:
    df, offset, spread = sample
    state = moments(pl.col("w"), pl.col("x"), pl.col("y"))
    whole = df.select(state.aggregate().alias("m")).unnest("m").row(0, named=True)
    parts = df.group_by("part").agg(state.aggregate().alias("m"))
    merged = parts.select(state.merged(pl.col("m")).alias("m")).unnest("m").row(0, named=True)
    streamed = collect_streaming(
        df.lazy().group_by("part").agg(state.aggregate().alias("m"))
    ).select(state.merged(pl.col("m")).alias("m"))
    results = (whole, merged, streamed.unnest("m").row(0, named=True))
    if df["w"].sum() == 0.0:  # no weight: no means, zero moments
        for got in results:
            assert got["w"] == 0.0 and got["mx"] is None and got["sxx"] == 0.0
    else:
        want = exact_moments(df["w"].to_list(), df["x"].to_list(), df["y"].to_list())
        for got in results:
            assert_moments_close(got, want, offset, spread, df.height)


def test_moments_on_a_large_offset_beat_the_raw_sums() -> None:
    """The bound above fails the raw-sums formula (the test can fail)."""
    rng = np.random.default_rng(5)
    n, offset = 400, 1e7
    x = offset + rng.normal(0.0, 1.0, n)
    w = rng.random(n) * 5.0
    df = pl.DataFrame({"w": w, "x": x, "y": x})
    want = exact_moments(w.tolist(), x.tolist(), x.tolist())
    got = df.select(moments(pl.col("w"), pl.col("x"), pl.col("y")).aggregate().alias("m"))
    assert_moments_close(got.unnest("m").row(0, named=True), want, offset, 1.0, n)
    raw = float((w * x * x).sum() - (w * x).sum() ** 2 / w.sum())
    with pytest.raises(AssertionError):
        assert_moments_close({**want, "sxx": raw}, want, offset, 1.0, n)
