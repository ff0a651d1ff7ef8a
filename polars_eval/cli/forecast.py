"""``polars-eval forecast``: the forecast table of a file (SPEC §6, §9)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_eval.cli import _common, compare
from polars_eval.cli._base import repeated
from polars_eval.cli._common import (
    CliError,
    _add_common,
    _split,
    add_command,
    evaluate,
    scan,
)

EPILOG = """\
Forecast accuracy of a long table (one row per series and time): MAE, RMSE, bias, MAPE,
SMAPE, WAPE as the mean over series (and pooled), MASE and RMSSE with --train, pinball
loss with --quantile, coverage with --interval; per series with --per-series.

examples:
  polars-eval forecast fc.parquet --series store --time date --actual sales --forecast yhat
  polars-eval forecast fc.parquet --series store --time date --actual sales --forecast yhat \\
      --train history.parquet --season-length 7 --per-series -o per_store.csv
  polars-eval forecast fc.parquet --series store --time date --actual sales --forecast yhat \\
      --cutoff made_on --by lead
  polars-eval forecast fc.parquet --series sku --time week --actual y --forecast q50 \\
      --quantile 0.1=q10 --quantile 0.9=q90 --interval q10,q90
  polars-eval forecast fc.parquet --series sku --time week --actual y --forecast ets \\
      --compare arima,prophet --metrics mae,rmse --gate
"""


def _quantiles(values: Sequence[str] | None) -> dict[float, str] | None:
    if not values:
        return None
    out: dict[float, str] = {}
    for value in _split(values):
        level, sep, column = value.partition("=")
        try:
            out[float(level)] = column
        except ValueError:
            sep = ""
        if not sep or not column:
            raise CliError(f"--quantile {value!r} must look like 0.9=COLUMN")
    return out


HELP = "forecasting: MASE, RMSSE, MAPE, pinball loss ... per series"
DESCRIPTION = "Evaluate forecasts stored in long format."


def command(sub: Any) -> None:
    p = add_command(sub, "forecast", HELP, DESCRIPTION, EPILOG)
    p.add_argument("--actual", required=True, metavar="COL", help="column of actual values")
    p.add_argument("--forecast", required=True, metavar="COL", help="column of forecasts")
    p.add_argument(
        "--series", required=True, action="append", metavar="COL[,COL]", help="series id column(s)"
    )
    p.add_argument("--time", required=True, metavar="COL", help="time column")
    repeated(
        p, "--train", "PATH", "history (same series, time and actual columns) for MASE and RMSSE"
    )
    p.add_argument(
        "--season-length", type=int, metavar="N", help="season of the naive scale (default 1)"
    )
    p.add_argument(
        "--cutoff", metavar="COL", help="when each forecast was made: adds the lead column"
    )
    p.add_argument("--lead", type=int, metavar="N", help="keep only forecasts N steps ahead")
    p.add_argument(
        "--zero-actuals",
        choices=("skip", "inf"),
        help="percentage errors on rows whose actual is 0: skip them (default) or inf",
    )
    repeated(
        p, "--quantile", "Q=COL", "a quantile forecast column, e.g. 0.9=q90 (repeat): pinball loss"
    )
    p.add_argument("--interval", metavar="LO,HI", help="columns of a prediction interval: coverage")
    p.add_argument("--per-series", action="store_true", default=None, help="one row per series")
    _add_common(p, "forecast")
    compare.add_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    series = _split(args.series)
    interval = _split([args.interval]) if args.interval else None
    if interval is not None and len(interval) != 2:
        raise CliError(f"--interval {args.interval!r} must name two columns: LO,HI")
    train = None
    if args.train:
        with _common.reading(args.train):
            train = scan(args.train, args.input_format)

    def options(lf: pl.LazyFrame) -> dict[str, Any]:
        return {
            "series": series[0] if len(series) == 1 else series,
            "time": args.time,
            "train": train,
            "season_length": args.season_length,
            "cutoff": args.cutoff,
            "lead": args.lead,
            "weight": args.weight,
            "zero_actuals": args.zero_actuals,
            "quantiles": _quantiles(args.quantile),
            "interval": tuple(interval) if interval else None,
            "per_series": args.per_series,
        }

    quantile_cols = list((_quantiles(args.quantile) or {}).values())
    extra = [*series, args.time, args.cutoff, args.weight, quantile_cols]
    extra += [interval or []]
    if args.compare:
        return compare.run_task(args, "forecast", (args.actual, args.forecast), 1, options, extra)
    return evaluate(args, "forecast", (args.actual, args.forecast), options, extra)
