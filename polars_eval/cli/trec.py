"""``polars-eval trec``: trec_eval on a TREC run and qrels file (SPEC §7, §9)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from polars_eval.cli import _common, compare
from polars_eval.cli._common import (
    CliError,
    _add_output,
    add_command,
    reading,
    write_output,
)

EPILOG = """\
Evaluate a TREC run file against a qrels file as trec_eval does (same measure names,
same conventions: unjudged documents are not relevant, queries only in the run are
skipped, ties ordered by score then document id descending).

  run:   query Q0 doc rank score tag     (whitespace separated, one line per document)
  qrels: query 0 doc relevance           (-R qrels, the default)
  prefs: query jg jsg doc level          (-R prefs: preference judgments)
         query jg doc level              (-R qrels_prefs: a qrels file read as preferences)
         query jg doc relevance          (-R qrels_jg: one set of judgments per group)

-R prefs / qrels_prefs offer the prefs_* measures, -R qrels_jg map_avgjg, P_avgjg and
Rprec_mult_avgjg (each format its own measures, as trec_eval; num_q and runid with all).
-N sets the collection size, read by the utility measure only.

examples:
  polars-eval trec run.txt qrels.txt
  polars-eval trec run.txt qrels.txt -m ndcg_cut.10 -m map -m P.5,10
  polars-eval trec run.txt qrels.txt -m ndcg_cut.10 --per-query --format csv -o per_query.csv
  polars-eval trec run.txt prefs.txt -R prefs -m prefs_simp -m prefs_pair
  polars-eval trec run.txt qrels.txt -m utility.1,-1,0,1 -N 500000
  polars-eval trec run.txt qrels.txt -m map -m unj.5,10 -q -Z zscores.txt
  polars-eval trec bm25.txt qrels.txt --compare dense.txt hybrid.txt -m ndcg_cut.10 -m map --gate
  polars-eval trec run.txt qrels.txt -m ndcg_cut.10 -m map --ci t --level 0.9
"""


HELP = "trec_eval on a TREC run and qrels file"
DESCRIPTION = "Evaluate a TREC run against qrels, as trec_eval."


def command(sub: Any) -> None:
    p = add_command(sub, "trec", HELP, DESCRIPTION, EPILOG)
    p.add_argument("run", metavar="RUN", help="TREC run file")
    p.add_argument(
        "qrels", metavar="QRELS", help="TREC qrels file (or preferences, judgment groups: -R)"
    )
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        metavar="MEASURE",
        help="trec_eval measure (repeat: -m map -m ndcg_cut.10); default: trec_eval's set",
    )
    p.add_argument(
        "-q", "--per-query", action="store_true", help="one row per query instead of the mean"
    )
    p.add_argument(
        "-M", "--max-docs", type=int, metavar="N", help="evaluate the top N documents per query"
    )
    p.add_argument(
        "-l",
        "--min-relevance",
        type=int,
        metavar="L",
        help="the lowest relevance grade counted as relevant (default 1)",
    )
    p.add_argument(
        "-c",
        "--complete-queries",
        action="store_true",
        help="average over every query of the qrels (missing from the run: 0)",
    )
    p.add_argument(
        "-J", "--judged-only", action="store_true", help="drop unjudged documents from the run"
    )
    p.add_argument(
        "-R",
        "--rel-format",
        choices=["qrels", "prefs", "qrels_prefs", "qrels_jg"],
        metavar="FORMAT",
        help="format of QRELS: qrels (default), prefs, qrels_prefs or qrels_jg",
    )
    p.add_argument(
        "-N",
        "--collection-size",
        type=int,
        metavar="N",
        help="number of documents in the collection (read by utility only; default 0)",
    )
    p.add_argument(
        "-Z",
        "--zscores",
        metavar="FILE",
        help="print z-scores: FILE holds 'query measure mean stddev' lines (trec_eval's -Z)",
    )
    p.add_argument(
        "--ci",
        choices=["t", "bootstrap"],
        metavar="METHOD",
        help="add intervals of the means over queries (t or bootstrap): columns "
        "<measure>_lower and <measure>_upper",
    )
    p.add_argument("--level", type=float, default=0.95, help="confidence level of --ci")
    p.add_argument(
        "--resamples", type=int, metavar="N", help="resamples of --ci bootstrap (default 1000)"
    )
    p.add_argument("--seed", type=int, help="seed of --ci bootstrap (default 0)")
    compare.add_options(p, trec=True)
    _add_output(p)
    p.add_argument(
        "--report",
        metavar="FILE.html",
        help="also write an HTML report: the ranking report of RUN joined to QRELS and, with "
        "--compare, the comparison section (the compare table of trec_eval's measures, the "
        "per-query differences sorted, wins, ties and losses)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from polars_eval.io.trec import trec_cli

    for path in (args.run, args.qrels, *([args.zscores] if args.zscores else [])):
        if not Path(path).is_file():
            raise CliError(f"file not found: {path!r}")
    measures = [m for m in (args.measure or []) if m.strip()]
    inputs = [args.run, args.qrels, *([args.zscores] if args.zscores else [])]
    flags = {
        "max_docs": args.max_docs,
        "min_relevance": args.min_relevance,
        "complete_queries": args.complete_queries or None,
        "judged_only": args.judged_only or None,
        "rel_format": args.rel_format,
        "collection_size": args.collection_size,
        "zscores": args.zscores,
    }
    flags = {k: v for k, v in flags.items() if v is not None}
    if args.report:
        compare.check_trec_report(flags)
    if args.compare:
        return compare.run_trec(args, measures, flags)
    flags |= {"ci": args.ci, "n_resamples": args.resamples, "seed": args.seed}
    if args.ci:
        flags["level"] = args.level
    with _common.progress("evaluating"), reading(inputs):
        table = trec_cli(
            args.run,
            args.qrels,
            measures,
            args.per_query,
            **flags,
        )
    write_output(table, [], args.format, args.output)
    if args.report:
        with _common.progress("reporting"):
            report = compare.trec_report(args, flags)
        compare.save_report(report, args.report)
    return 0
