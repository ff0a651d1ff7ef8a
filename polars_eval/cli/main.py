"""``polars-eval``'s entry point: parse, run, and turn every error into one line on stderr."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence

import polars as pl

import polars_eval as pe
from polars_eval._core.tasks import TASKS
from polars_eval.cli import demo, fuse, psi, trec
from polars_eval.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    PROG,
    CliError,
    _formatter,
    _Parser,
    check_outputs,
    one_line,
)
from polars_eval.exceptions import PolarsEvalError


def build_parser() -> argparse.ArgumentParser:
    """The ``polars-eval`` argument parser, with one sub-command per available task."""
    parser = _Parser(
        prog=PROG,
        formatter_class=_formatter,
        description="Model evaluation native to Polars: evaluate predictions stored in "
        "parquet, CSV or NDJSON files.",
        epilog=_MAIN_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {pe.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for task in TASKS.values():
        task.load("cli")(sub)
    trec.command(sub)
    fuse.command(sub)
    psi.command(sub)
    demo.command(sub)
    return parser


_MAIN_EPILOG = """\
examples:
  polars-eval demo
  polars-eval binary scores.parquet --label y --score p
  polars-eval binary 'lake/**/*.parquet' --label y --score p --by segment --format json

Run 'polars-eval COMMAND --help' for the options of one command.
Bad input prints one line 'polars-eval: error: ...' on stderr and exits with status 2.
"""


_USER_ERRORS: tuple[type[BaseException], ...] = (
    CliError,
    PolarsEvalError,
    ValueError,
    KeyError,
    OSError,
    pl.exceptions.PolarsError,
    pl.exceptions.PanicException,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 2 bad input, 1 internal error)."""
    with native_stderr_filtered(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            parser = build_parser()
            args = parser.parse_args(argv)
            if args.command is None:
                parser.print_help(sys.stderr)
                return EXIT_BAD_INPUT
            check_outputs(args)
            status: int = args.handler(args)
        except BrokenPipeError:
            # the reader (e.g. `head`) closed the pipe: not an error of ours
            with contextlib.suppress(OSError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            return 0
        except KeyboardInterrupt:
            print(f"\n{PROG}: interrupted", file=sys.stderr)
            return 130
        except _USER_ERRORS as error:
            _warn(caught)
            print(f"{PROG}: error: {one_line(error)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except Exception as error:  # a bug of ours: still one line, unless asked
            if os.environ.get("POLARS_EVAL_DEBUG"):
                raise
            _warn(caught)
            print(
                f"{PROG}: error: internal error {type(error).__name__}: {one_line(error)} "
                "(set POLARS_EVAL_DEBUG=1 for the traceback)",
                file=sys.stderr,
            )
            return EXIT_INTERNAL
        _warn(caught)
    return status


_PANIC = re.compile(r"^thread '.*' (\(\d+\) )?panicked at ")


def _without_panics(text: str) -> str:
    """Native stderr output less Rust's panic reports (``thread '...' panicked at`` up to
    its closing ``note: ...`` line or the next report)."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        if _PANIC.match(line):
            skipping = True
            while kept and not kept[-1].strip():
                kept.pop()  # the blank line Rust puts before the report
            continue
        if skipping:
            if line.startswith("note: "):
                skipping = False
            continue
        kept.append(line)
    return "".join(kept)


@contextlib.contextmanager
def native_stderr_filtered() -> Iterator[None]:
    """Keep panic reports that native code writes to stderr off the user's screen.

    When a streaming query fails (say, a CSV line with an extra field), a worker thread of
    Polars' engine now and then (about 2 runs in 150) prints a Rust panic with a backtrace
    ("joined on cancelled task") to file descriptor 2 while the error itself still comes
    back to Python as an exception. The command's output must be its one error line, so
    while it runs, file descriptor 2 is a temporary file and ``sys.stderr`` writes to a
    copy of the real stderr; afterwards, what native code wrote is passed on, less the
    panic reports. A panic that is the error itself still reaches the user as the
    one-line message of its ``PanicException``. ``POLARS_EVAL_DEBUG=1`` turns this off.
    """
    if os.environ.get("POLARS_EVAL_DEBUG"):
        yield
        return
    python_stderr = sys.stderr
    try:
        python_stderr.flush()
        writes_fd2 = python_stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):  # captured (pytest), closed ...
        writes_fd2 = False
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    sink = tempfile.TemporaryFile()
    if writes_fd2:
        sys.stderr = open(  # noqa: SIM115 - closed below
            os.dup(saved),
            "w",
            encoding=getattr(python_stderr, "encoding", None) or "utf-8",
            errors="backslashreplace",
            buffering=1,
        )
    os.dup2(sink.fileno(), 2)
    try:
        yield
    finally:
        if writes_fd2:
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        if writes_fd2:
            sys.stderr.close()
            sys.stderr = python_stderr
        sink.seek(0)
        native = _without_panics(sink.read().decode("utf-8", errors="replace"))
        sink.close()
        if native.strip():
            python_stderr.write(native)
            python_stderr.flush()


_NULL_GROUPS = re.compile(
    r"^(?P<name>.+?) is null for (?P<n>\d+) of (?P<m>\d+) groups \((?P<why>.*)\)$"
)


def _shorten(text: str) -> str:
    """Merge "x is null for 2 of 600 groups (why); y is null for ..." into one clause per
    distinct count and reason, naming at most 6 metrics."""
    parts = text.split("; ")
    merged: dict[tuple[str, str, str], list[str]] = {}
    for part in parts:
        match = _NULL_GROUPS.match(part)
        if match is None:
            return text
        merged.setdefault((match["n"], match["m"], match["why"]), []).append(match["name"])
    clauses = []
    for (n, m, why), names in merged.items():
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        verb = "is" if len(names) == 1 else "are"
        clauses.append(f"{shown} {verb} null for {n} of {m} groups ({why})")
    return "; ".join(clauses)


def _warn(caught: list[warnings.WarningMessage]) -> None:
    seen: set[str] = set()
    for w in caught:
        text = _shorten(one_line(str(w.message)))
        if text not in seen:
            seen.add(text)
            print(f"{PROG}: warning: {text}", file=sys.stderr)
    caught.clear()
