"""``polars-eval regression``: the regression table of a file (SPEC §5, §9)."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from polars_eval.cli import compare
from polars_eval.cli._common import (
    _add_baseline,
    _add_common,
    add_command,
    evaluate,
)

EPILOG = """\
Every regression summary metric (MSE, RMSE, MAE, R², MAPE, SMAPE, WAPE, correlations ...)
in one row per group, plus the number of rows whose actual is 0 (skipped by the
percentage errors unless --zero-actuals inf).

examples:
  polars-eval regression prices.parquet --actual price --pred predicted_price
  polars-eval regression 'lake/**/*.parquet' --actual y --pred yhat --by region --format json
  polars-eval regression sales.csv --actual units --pred forecast --weight w --metrics mae,wape
  polars-eval regression sales.csv --actual units --pred old --compare new --unit store --gate
"""


HELP = "regression: RMSE, MAE, R², MAPE ..."
DESCRIPTION = "Evaluate numeric predictions against actual values."


def command(sub: Any) -> None:
    p = add_command(sub, "regression", HELP, DESCRIPTION, EPILOG)
    p.add_argument("--actual", required=True, metavar="COL", help="column of actual values")
    p.add_argument("--pred", required=True, metavar="COL", help="column of predictions")
    p.add_argument(
        "--zero-actuals",
        choices=("skip", "inf"),
        help="percentage errors on rows whose actual is 0: skip them (default) or inf",
    )
    _add_baseline(p)
    _add_common(p, "regression")
    compare.add_options(p, unit=True)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    def options(lf: pl.LazyFrame) -> dict[str, Any]:
        return {
            "weight": args.weight,
            "zero_actuals": args.zero_actuals,
            "baseline": args.baseline,
        }

    if args.compare:
        return compare.run_task(
            args, "regression", (args.actual, args.pred), 1, options, [args.weight]
        )
    return evaluate(args, "regression", (args.actual, args.pred), options, [args.weight])
