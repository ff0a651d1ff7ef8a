"""``polars-eval psi``: the population stability index of a score against a reference
(SPEC §13 "Stability")."""

from __future__ import annotations

import argparse
from typing import Any

from polars_eval.cli._base import repeated
from polars_eval.cli._common import (
    _add_output,
    _split,
    add_command,
    collect,
    progress,
    reading,
    scan,
    write_output,
)
from polars_eval.cli.windows import _duration

EPILOG = """\
PSI = sum over bins of (current share - reference share) * ln(current / reference), the
bins cut at the reference's quantiles (--bins, default 10), a share of 0 taken as 1e-4.

examples:
  polars-eval psi today.parquet --reference training.parquet --score p
  polars-eval psi 'lake/**/*.parquet' --reference train.parquet --score p --by region
  polars-eval psi scores.parquet --reference train.parquet --score p --time day --every 1d
"""


HELP = "population stability index of a score against a reference sample"
DESCRIPTION = "The population stability index of a score (SPEC §13)."


def command(sub: Any) -> None:
    p = add_command(sub, "psi", HELP, DESCRIPTION, EPILOG)
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="the current rows: files, globs or directories"
    )
    p.add_argument(
        "--reference",
        required=True,
        action="append",
        metavar="PATH",
        help="the reference rows (repeat for several)",
    )
    p.add_argument("--score", required=True, metavar="COL", help="the score column (in both)")
    p.add_argument(
        "--bins",
        type=int,
        default=10,
        metavar="N",
        help="bins at the reference's quantiles (default 10)",
    )
    p.add_argument("--weight", metavar="COL", help="column of weights of the current rows")
    repeated(p, "--by", "COL[,COL]", "one PSI per group of these columns")
    p.add_argument("--time", metavar="COL", help="with --every: one PSI per time window")
    p.add_argument(
        "--every", metavar="DURATION", help='the step of the windows ("1d", "1w", "1mo")'
    )
    p.add_argument("--period", metavar="DURATION", help="window length, a multiple of --every")
    p.add_argument("--offset", metavar="DURATION", help="shift the windows' grid")
    p.add_argument(
        "--input-format",
        choices=("parquet", "csv", "tsv", "ndjson"),
        help="read every input in this format instead of guessing from the extension",
    )
    p.add_argument(
        "--no-validate", dest="validate", action="store_false", help="skip the row checks"
    )
    _add_output(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    by = _split(args.by)
    columns = [c for c in [args.score, args.weight, *by, args.time] if c is not None]
    with reading([*args.paths, *args.reference]):
        current = scan(args.paths, args.input_format, columns)
        reference = scan(args.reference, args.input_format, [args.score])
        with progress("evaluating"):
            result = current.eval.psi(
                args.score,
                reference=reference,
                bins=args.bins,
                by=by or None,
                time=args.time,
                every=_duration(args.every),
                period=_duration(args.period),
                offset=_duration(args.offset),
                weight=args.weight,
                validate=args.validate,
            )
            table = collect(result)
    keys = [*by, *([args.time, "window_end"] if args.every is not None else [])]
    write_output(table, keys, args.format, args.output)
    return 0
