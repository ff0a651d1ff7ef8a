"""``polars-eval fuse``: several TREC runs fused into one (SPEC §14, :func:`polars_eval.fuse`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import polars as pl

from polars_eval.cli import _common
from polars_eval.cli._base import repeated
from polars_eval.cli._common import CliError, _split, add_command, reading

EPILOG = """\
Fuse TREC run files (query Q0 doc rank score tag) into one TREC run, with ranx's methods
and normalizations (per query): rrf (reciprocal rank fusion, 1/(k + rank) summed), sum
(CombSUM), mnz (CombMNZ), anz (CombANZ), max, min, med, wsum (--weights, one per run).
Ranks: score descending, then document id descending (trec_eval's order).

examples:
  polars-eval fuse bm25.txt dense.txt -o fused.txt
  polars-eval fuse bm25.txt dense.txt splade.txt --method sum --norm min-max -o fused.txt
  polars-eval fuse bm25.txt dense.txt --method wsum --norm zmuv --weights 0.3,0.7
"""


HELP = "fuse TREC runs into one (RRF, CombSUM, CombMNZ ...)"
DESCRIPTION = "Fuse several TREC runs of the same queries into one TREC run."


def command(sub: Any) -> None:
    from polars_eval.fusion import METHODS, NORMS

    p = add_command(sub, "fuse", HELP, DESCRIPTION, EPILOG)
    p.add_argument("paths", nargs="+", metavar="RUN", help="TREC run files (at least two)")
    p.add_argument("--method", choices=METHODS, default="rrf", help="fusion method (default rrf)")
    p.add_argument("--norm", choices=NORMS, help="normalize each run's scores per query first")
    p.add_argument("-k", type=float, default=60.0, help="RRF's constant k (default 60)")
    repeated(p, "--weights", "W[,W]", "wsum: one weight per run, in order")
    p.add_argument("--tag", default="fused", help="the run tag written (default 'fused')")
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write the fused run to FILE instead of stdout"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from polars_eval.fusion import fuse
    from polars_eval.io.trec import read_trec_run

    for path in args.paths:
        if not Path(path).is_file():
            raise CliError(f"file not found: {path!r}")
    weights = None
    if args.weights:
        try:
            weights = [float(w) for w in _split(args.weights)]
        except ValueError:
            raise CliError(
                f"--weights takes numbers separated by commas; got {args.weights}"
            ) from None
    if any(ch.isspace() for ch in args.tag) or not args.tag:
        raise CliError(f"--tag must be one word (a TREC run tag); got {args.tag!r}")
    k = int(args.k) if float(args.k).is_integer() else args.k
    runs: Any = [read_trec_run(path) for path in args.paths]
    if len(set(args.paths)) == len(args.paths):  # named by their files in messages
        runs = dict(zip(args.paths, runs, strict=True))
    with _common.progress("fusing"), reading(args.paths):
        fused = fuse(
            runs,
            method=args.method,
            norm=args.norm,
            weights=weights,
            k=k,
        )
        table = trec_lines(fused, args.tag).collect()  # in order: ranks follow the sort
    text = table.write_csv(separator=" ", include_header=False, float_precision=None)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def trec_lines(fused: pl.LazyFrame, tag: str) -> pl.LazyFrame:
    """A fused run (sorted by query, then score descending) as TREC run lines: query, Q0,
    doc, rank (1 = top, per query), score, tag."""
    return fused.select(
        "query",
        pl.lit("Q0").alias("q0"),
        "doc",
        pl.int_range(1, pl.len() + 1).over("query").alias("rank"),
        "score",
        pl.lit(tag).alias("tag"),
    )
