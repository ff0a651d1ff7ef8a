"""Benchmark: forecast metrics per series, and Kendall's tau (issues 4, 11).

1. MAE + RMSE + MAPE + SMAPE + MASE per series on long data (default 10,000 series x
   1,000 points = 1e7 rows; a training frame of 200 points per series for the MASE scale),
   season length 7:
   * polars_eval ``df.eval.forecast(per_series=True)`` (validated, and ``validate=False``;
     it also computes MSE, bias, WAPE and RMSSE),
   * polars_eval expressions: ``seasonal_scale`` + ``group_by(series).agg(pe.mae, ...)``,
   * utilsforecast ``evaluate`` on pandas and on polars,
   * the plain-Polars floor: one hand-written ``group_by`` (scale join included).
2. ``kendall_tau`` on 1e6 rows vs ``scipy.stats.kendalltau``; floor: one Polars sort.
   ``--kendall-data``: continuous, tied (about 25 distinct values a side) or decimals
   (about 1,000); ``--kendall-groups G``: per group (``group_by().agg``) against a scipy
   loop over the groups (sort by group and split included).

Usage: ``python benchmarks/bench_regression_forecast.py --rows 1e7 --kendall-rows 1e6``
(``--only kendall`` or ``--only forecast`` runs one part).
Prints the median of ``--repeat`` interleaved rounds and the ratio to ours.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import polars as pl

import polars_eval as pe

SEASON = 7
TRAIN_POINTS = 200


def timed(cases: list[tuple[str, Callable[[], Any]]], repeat: int) -> list[tuple[str, float]]:
    """The median seconds of each case over ``repeat`` rounds, the cases interleaved in each
    round (a shared machine's load drifts: every tool sees the same drift)."""
    times: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(repeat):
        for name, fn in cases:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return [(name, statistics.median(t)) for name, t in times.items()]


def forecast_data(rows: int, points: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    n_series = max(1, rows // points)
    rng = np.random.default_rng(seed)
    total = points + TRAIN_POINTS
    sid = np.repeat(np.arange(n_series), total)
    t = np.tile(np.arange(total), n_series)
    level = np.repeat(rng.uniform(10, 100, n_series), total)
    y = level + 5 * np.sin(t * 2 * np.pi / SEASON) + rng.normal(0, 2, n_series * total)
    frame = pl.DataFrame({"unique_id": sid, "ds": t, "y": y})
    train = frame.filter(pl.col("ds") < TRAIN_POINTS)
    test = frame.filter(pl.col("ds") >= TRAIN_POINTS).with_columns(
        (pl.col("y") + pl.Series(rng.normal(0.5, 3, n_series * points))).alias("f")
    )
    return train, test


def ours_table(test: pl.DataFrame, train: pl.DataFrame, validate: bool) -> pl.DataFrame:
    return test.eval.forecast(
        "y",
        "f",
        series="unique_id",
        time="ds",
        train=train,
        season_length=SEASON,
        per_series=True,
        validate=validate,
    )


def ours_exprs(test: pl.DataFrame, train: pl.DataFrame) -> pl.DataFrame:
    scale = pe.seasonal_scale(
        train.lazy(), series="unique_id", time="ds", actual="y", season_length=SEASON
    )
    return (
        test.lazy()
        .join(scale, on="unique_id", how="left")
        .group_by("unique_id")
        .agg(
            pe.mae("y", "f"),
            pe.rmse("y", "f"),
            pe.mape("y", "f"),
            pe.smape("y", "f"),
            pe.mase("y", "f", "mase_scale"),
        )
        .collect()
    )


def floor(test: pl.DataFrame, train: pl.DataFrame) -> pl.DataFrame:
    y, f = pl.col("y"), pl.col("f")
    scale = (
        train.lazy()
        .sort("unique_id", "ds")
        .group_by("unique_id")
        .agg((y - y.shift(SEASON)).abs().mean().alias("scale"))
    )
    e = (y - f).abs()
    return (
        test.lazy()
        .join(scale, on="unique_id", how="left")
        .group_by("unique_id")
        .agg(
            e.mean().alias("mae"),
            ((y - f) ** 2).mean().sqrt().alias("rmse"),
            (e / y.abs()).mean().alias("mape"),
            (2 * e / (y.abs() + f.abs())).mean().alias("smape"),
            (e.mean() / pl.col("scale").first()).alias("mase"),
        )
        .collect()
    )


def utilsforecast_eval(test: Any, train: Any) -> Any:
    from utilsforecast.evaluation import evaluate
    from utilsforecast.losses import mae, mape, mase, rmse, smape

    return evaluate(
        test,
        metrics=[mae, rmse, mape, smape, partial(mase, seasonality=SEASON)],
        models=["f"],
        train_df=train,
    )


def check_agreement(test: pl.DataFrame, train: pl.DataFrame) -> None:
    ours = ours_table(test, train, validate=True).sort("unique_id")
    theirs = pl.from_pandas(utilsforecast_eval(test.to_pandas(), train.to_pandas()))
    for metric, scale in (("mae", 1), ("rmse", 1), ("mape", 1), ("smape", 2), ("mase", 1)):
        ref = theirs.filter(pl.col("metric") == metric).sort("unique_id")["f"].to_numpy()
        assert np.allclose(ours[metric].to_numpy(), scale * ref, rtol=1e-8), metric


def bench_forecast(rows: int, points: int, repeat: int) -> list[tuple[str, float]]:
    train, test = forecast_data(rows, points)
    print(
        f"forecast: {test.height:,} test rows, {test['unique_id'].n_unique():,} series, "
        f"train {train.height:,} rows"
    )
    check_agreement(test.head(points * 20), train.filter(pl.col("unique_id") < 20))
    test_pd, train_pd = test.to_pandas(), train.to_pandas()
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("polars_eval df.eval.forecast", lambda: ours_table(test, train, True)),
        ("polars_eval df.eval.forecast validate=False", lambda: ours_table(test, train, False)),
        ("polars_eval expressions", lambda: ours_exprs(test, train)),
        ("utilsforecast (pandas)", lambda: utilsforecast_eval(test_pd, train_pd)),
        ("utilsforecast (polars)", lambda: utilsforecast_eval(test, train)),
        ("plain-Polars floor", lambda: floor(test, train)),
    ]
    return timed(cases, repeat)


def bench_kendall(rows: int, repeat: int, data: str, groups: int) -> list[tuple[str, float]]:
    import scipy.stats as ss

    rng = np.random.default_rng(1)
    x = rng.normal(size=rows)
    y = x + rng.normal(size=rows)
    if data == "tied":  # about 25 distinct values on each side
        x, y = np.round(x * 3), np.round(y * 3)
    elif data == "decimals":  # 2 decimals: about 1,000 distinct values on each side
        x, y = np.round(x, 2), np.round(y, 2)
    df = pl.DataFrame({"x": x, "y": y})
    label = f"kendall_tau: {rows:,} rows, {data}"
    if groups == 0:
        ours = df.eval.kendall_tau("x", "y")
        ref = ss.kendalltau(x, y).statistic
        assert abs(ours - ref) < 1e-9, (ours, ref)
        print(label)
        cases: list[tuple[str, Callable[[], Any]]] = [
            ("polars_eval kendall_tau", lambda: df.select(pe.kendall_tau("x", "y"))),
            ("scipy.stats.kendalltau", lambda: ss.kendalltau(x, y)),
            ("plain-Polars floor (one sort)", lambda: df.select(pl.col("x").sort())),
        ]
        return timed(cases, repeat)
    g = rng.integers(0, groups, rows)
    df = df.with_columns(g=g)

    def scipy_loop() -> list[float]:  # what a user writes without us: sort by group, split
        order = np.argsort(g, kind="stable")
        bounds = np.flatnonzero(np.diff(g[order])) + 1
        return [
            ss.kendalltau(a, b).statistic
            for a, b in zip(np.split(x[order], bounds), np.split(y[order], bounds), strict=True)
        ]

    ours = df.group_by("g").agg(pe.kendall_tau("x", "y")).sort("g").get_column("kendall_tau")
    assert np.allclose(ours.to_numpy(), scipy_loop(), rtol=0, atol=1e-9)
    print(f"{label}, {groups:,} groups")
    cases = [
        (
            "polars_eval kendall_tau per group",
            lambda: df.group_by("g").agg(pe.kendall_tau("x", "y")),
        ),
        ("scipy.stats.kendalltau loop", scipy_loop),
        ("plain-Polars floor (sort per group)", lambda: df.group_by("g").agg(pl.col("x").sort())),
    ]
    return timed(cases, repeat)


def report(results: list[tuple[str, float]]) -> None:
    ours = results[0][1]
    print(f"{'tool':<46}{'median s':>10}{'vs ours':>10}")
    for name, seconds in results:
        print(f"{name:<46}{seconds:>10.3f}{seconds / ours:>9.2f}x")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7, help="forecast test rows")
    parser.add_argument("--points", type=int, default=1000, help="test points per series")
    parser.add_argument("--kendall-rows", type=float, default=1e6)
    parser.add_argument(
        "--kendall-data", choices=["continuous", "tied", "decimals"], default="continuous"
    )
    parser.add_argument("--kendall-groups", type=int, default=0, help="0: one group")
    parser.add_argument("--only", choices=["forecast", "kendall"], default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"polars {pl.__version__}, threads {pl.thread_pool_size()}")
    if args.only != "kendall":
        report(bench_forecast(int(args.rows), args.points, args.repeat))
    if args.only != "forecast":
        k_rows = int(args.kendall_rows)
        report(bench_kendall(k_rows, args.repeat, args.kendall_data, args.kendall_groups))


if __name__ == "__main__":
    main()
