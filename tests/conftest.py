"""Shared fixtures: engines, hypothesis profiles, small data generators."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, settings

import polars_eval  # noqa: F401  (registers the .eval namespace)

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(params=["in-memory", "streaming"])
def engine(request: pytest.FixtureRequest) -> str:
    """Both Polars engines: every oracle test runs on each."""
    return str(request.param)


@pytest.fixture
def collect(engine: str) -> Callable[[pl.LazyFrame], pl.DataFrame]:
    """Collect a LazyFrame on the engine of the test's parameter."""

    def run(lf: pl.LazyFrame) -> pl.DataFrame:
        return lf.collect(engine=engine)  # type: ignore[arg-type]

    return run


def binary_data(n: int, *, seed: int = 0, tied: bool = False, groups: int = 0) -> pl.DataFrame:
    """Labels, scores (continuous or heavily tied), integer weights and optional groups."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = rng.random(n) * 0.7 + 0.3 * y * rng.random(n)
    if tied:
        score = np.round(score, 1)
    data = {"y": y, "score": score, "w": rng.integers(0, 4, n).astype(np.float64)}
    if groups:
        data["g"] = rng.integers(0, groups, n)
    return pl.DataFrame(data)


def multiclass_frame(n: int, *, seed: int) -> pl.DataFrame:
    """Three classes a/b/c: labels, probabilities at 6 decimals (rows sum to 1), the argmax
    prediction, fractional weights and two groups."""
    rng = np.random.default_rng(seed)
    proba = np.round(rng.dirichlet(np.ones(3), n), 6)
    proba[:, 2] = 1.0 - proba[:, 0] - proba[:, 1]
    return pl.DataFrame(
        {
            "g": rng.integers(0, 2, n),
            "y": rng.choice(["a", "b", "c"], n),
            "pa": proba[:, 0],
            "pb": proba[:, 1],
            "pc": proba[:, 2],
            "w": rng.random(n),
        }
    ).with_columns(
        pred=pl.concat_list("pa", "pb", "pc")
        .list.arg_max()
        .replace_strict({0: "a", 1: "b", 2: "c"})
    )


@pytest.fixture
def make_binary() -> Callable[..., pl.DataFrame]:
    return binary_data
