"""``polars-eval binary``: the binary-classification table of a file (SPEC §3, §9)."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from polars_eval.cli import compare
from polars_eval.cli._common import (
    CliError,
    _add_baseline,
    _add_common,
    _coerce_pos_label,
    _formatter,
    evaluate,
)

EPILOG = """\
Every binary summary metric (AUC, Gini, PR-AUC, average precision, KS, logloss, Brier,
ECE, and the threshold metrics at --threshold) in one row per group.

examples:
  polars-eval binary scores.parquet --label defaulted --score pd_score
  polars-eval binary 'lake/**/*.parquet' --label y --score p --by segment
  polars-eval binary a.csv b.csv --label y --score p --weight w --format json -o out.json
  polars-eval binary scores.ndjson --label outcome --score p --pos-label churned
  polars-eval binary scores.parquet --label y --score margin --no-proba --metrics auc,ks
  polars-eval binary 'lake/**/*.parquet' --label y --score p --by segment --bins 1000
  polars-eval binary scores.parquet --label y --score old --compare new --metrics logloss,accuracy
  polars-eval binary scores.parquet --label y --score old --compare new --metrics auc --test bootstrap
"""


def command(sub: Any) -> None:
    p = sub.add_parser(
        "binary",
        help="binary classification: AUC, logloss, KS, threshold metrics ...",
        description="Evaluate binary-classification scores.",
        epilog=EPILOG,
        formatter_class=_formatter,
    )
    p.add_argument("--label", required=True, metavar="COL", help="column of 0/1 labels")
    p.add_argument(
        "--score", required=True, metavar="COL", help="column of scores or probabilities"
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        metavar="T",
        help="score >= threshold is predicted positive (default 0.5)",
    )
    p.add_argument(
        "--pos-label", metavar="VALUE", help="the positive class of a string/categorical label"
    )
    p.add_argument(
        "--no-proba",
        dest="probability",
        action="store_false",
        help="scores are not probabilities: leave out logloss, Brier and ECE",
    )
    p.add_argument(
        "--bins",
        type=int,
        metavar="N",
        help="binned mode (SPEC §10): the sort-based metrics over N score bins, memory "
        "bounded by the groups and bins (AUC within half the share of pairs sharing a bin); "
        "logloss, Brier and the threshold metrics stay exact",
    )
    _add_baseline(p, "binary")
    _add_common(p, "binary")
    compare.add_options(p, unit=True)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.bins is not None and (getattr(args, "ci", None) or getattr(args, "report", None)):
        raise CliError("--bins works without --ci and --report (they read the rows themselves)")

    def options(lf: pl.LazyFrame) -> dict[str, Any]:
        return {
            "weight": args.weight,
            "pos_label": _coerce_pos_label(lf, args.label, args.pos_label),
            "threshold": args.threshold,
            "probability": args.probability,
            "baseline": getattr(args, "baseline", None),
            "bins": args.bins,
        }

    if args.compare:
        return compare.run_task(args, "binary", (args.label, args.score), 1, options, [args.weight])
    return evaluate(args, "binary", (args.label, args.score), options, [args.weight])
