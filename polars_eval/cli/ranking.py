"""``polars-eval ranking``: the ranking table of a query log (SPEC §7, §9)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_eval.cli import compare
from polars_eval.cli._base import repeated
from polars_eval.cli._common import (
    CliError,
    _add_baseline,
    _add_common,
    _split,
    add_command,
    evaluate,
)

EPILOG = """\
Every ranking metric (NDCG, DCG, precision, recall, hit rate, MAP, MRR, CG ...) at every
cutoff -k, as the mean over queries, in one row per group of queries (or one row per
query with --per-query). Columns are named <metric>@<k>.

examples:
  polars-eval ranking clicks.parquet --query query_id --relevance rel --score score
  polars-eval ranking 'logs/*.parquet' --query qid --relevance grade --score s -k 5,10 --by market
  polars-eval ranking log.csv --query qid --relevance rel --score s -k 10 --per-query -o q.csv
  polars-eval ranking runs.parquet --query qid --relevance rel --score bm25 --compare dense,hybrid \
      --metrics ndcg@10,map --test randomization --gate
  polars-eval ranking runs.parquet --query qid --relevance rel --score bm25 --compare dense \
      --metrics ndcg@10,map --report compare.html
"""


def _cutoffs(values: Sequence[str] | None) -> list[int | None] | None:
    if not values:
        return None
    out: list[int | None] = []
    for value in _split(values):
        if value.lower() in ("all", "none"):
            out.append(None)
            continue
        try:
            out.append(int(value))
        except ValueError:
            raise CliError(f"-k {value!r} is not an integer cutoff (or 'all')") from None
    return out


HELP = "ranking: NDCG, MAP, MRR, precision@k ... over query logs"
DESCRIPTION = "Evaluate rankings stored one row per (query, item)."


def command(sub: Any) -> None:
    p = add_command(sub, "ranking", HELP, DESCRIPTION, EPILOG)
    p.add_argument(
        "--query", required=True, action="append", metavar="COL[,COL]", help="query id column(s)"
    )
    p.add_argument("--relevance", required=True, metavar="COL", help="column of relevance grades")
    p.add_argument("--score", required=True, metavar="COL", help="column of model scores")
    repeated(p, "-k", "K[,K]", "cutoffs, e.g. -k 1,5,10 ('all' = the whole list; default 1,5,10)")
    p.add_argument(
        "--ties",
        choices=("average", "first"),
        help="tied scores: expected value over their orders (default) or input order",
    )
    p.add_argument("--gain", choices=("exp2", "linear"), help="DCG gain (default exp2)")
    p.add_argument("--min-relevance", type=float, help="relevance >= this is relevant (default 1)")
    p.add_argument(
        "--no-relevant-zero",
        dest="no_relevant",
        action="store_const",
        const="zero",
        help="count queries with no relevant item as 0 (default: leave them out)",
    )
    p.add_argument("--item", metavar="COL", help="item id column (checks for duplicated items)")
    p.add_argument("--per-query", action="store_true", default=None, help="one row per query")
    _add_baseline(p)
    _add_common(p, "ranking")
    compare.add_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    query = _split(args.query)

    def options(lf: pl.LazyFrame) -> dict[str, Any]:
        return {
            "query": query[0] if len(query) == 1 else query,
            "k": _cutoffs(args.k),
            "weight": args.weight,
            **{
                name: getattr(args, name)
                for name in (
                    "ties",
                    "gain",
                    "min_relevance",
                    "no_relevant",
                    "item",
                    "per_query",
                    "baseline",
                )
            },
        }

    extra = [*query, args.item, args.weight]
    if args.compare:
        return compare.run_task(args, "ranking", (args.relevance, args.score), 1, options, extra)
    return evaluate(args, "ranking", (args.relevance, args.score), options, extra)
