"""The options of windows and slices on every task command (SPEC §13): ``--time``,
``--every``, ``--period``, ``--offset``, ``--rollup`` and ``--min-rows``; with
``--report``, ``--every`` adds the report's trend section and ``--reference`` its PSI."""

from __future__ import annotations

import argparse
from typing import Any

from polars_eval._core.windows import GROUPING, WINDOW_END
from polars_eval.cli._base import CliError, repeated, scan


def add_options(p: argparse.ArgumentParser, task: str) -> None:
    """Add the window and slice options to a task command (``--time`` is the forecast
    command's own column argument: its windows follow it)."""
    if task != "forecast":
        p.add_argument(
            "--time",
            metavar="COL",
            help="a Date, Datetime or integer column: with --every, one row per time window",
        )
    p.add_argument(
        "--every",
        metavar="DURATION",
        help='windows of this step over --time ("1d", "1w", "1mo"; an integer for an '
        "integer column): the time column holds each window's start, window_end its end",
    )
    p.add_argument(
        "--period",
        metavar="DURATION",
        help="window length, a multiple of --every (default: --every)",
    )
    p.add_argument("--offset", metavar="DURATION", help="shift the windows' grid (e.g. 6h)")
    p.add_argument(
        "--rollup",
        action="append",
        metavar="COL[,COL]",
        help="one table of every prefix of these columns, all rows first, with a "
        '"grouping" column (instead of --by)',
    )
    p.add_argument(
        "--min-rows", type=int, metavar="N", help="null metrics for a slice of fewer than N rows"
    )
    repeated(
        p,
        "--reference",
        "PATH",
        "with --report and --every: the PSI of the score per window against these rows "
        "(files, globs or directories; repeat for several)",
    )


def _duration(value: str | None) -> str | int | None:
    """A duration option: an integer for an integer time column, else the string."""
    if value is None:
        return None
    text = value.strip()
    return int(text) if text.lstrip("-").isdigit() else text


def options(
    args: argparse.Namespace, task: str, by: list[str]
) -> tuple[dict[str, Any], list[str], list[str]]:
    """The task method's options of the command line, the key columns of its result and
    the columns it reads."""
    rollup = [c.strip() for value in (args.rollup or []) for c in value.split(",") if c.strip()]
    time = getattr(args, "time", None)
    opts: dict[str, Any] = {}
    if args.every is not None or args.period is not None or args.offset is not None:
        opts.update(
            every=_duration(args.every),
            period=_duration(args.period),
            offset=_duration(args.offset),
        )
        if task != "forecast":
            opts["time"] = time
    elif time is not None and task != "forecast":
        opts["time"] = time  # the method says that it needs --every
    if rollup:
        opts["rollup"] = rollup
    if args.min_rows is not None:
        opts["min_rows"] = args.min_rows
    keys = [*by, *rollup, *([GROUPING] if rollup else [])]
    if opts.get("every") is not None and time is not None:
        keys += [time, WINDOW_END]
    columns = [*rollup, *([time] if time is not None else [])]
    return opts, keys, columns


def check_report(args: argparse.Namespace, grouped: dict[str, Any]) -> None:
    """``--report`` takes the windows (its trend section), not the slices; ``--reference``
    needs ``--report`` and ``--every``."""

    report = getattr(args, "report", None)
    if report and ("rollup" in grouped or "min_rows" in grouped):
        raise CliError(
            "--rollup and --min-rows work without --report (--every adds the report's trend "
            "section)"
        )
    if args.reference and not (report and args.every is not None):
        raise CliError("--reference adds the PSI per window to --report: give --report and --every")


def report_reference(args: argparse.Namespace) -> dict[str, Any]:
    """The report's ``reference=`` of ``--reference`` (scanned lazily), if given."""
    if not args.reference:
        return {}
    return {"reference": scan(args.reference, args.input_format)}
