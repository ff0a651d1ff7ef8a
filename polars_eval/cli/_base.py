"""What every command-line module reads, below the shared machinery of ``_common``: the
command line's own error, the scan of the input files and the form of a repeated option."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import polars as pl

from polars_eval.exceptions import PolarsEvalError
from polars_eval.io import files

INPUT_FORMATS = files.INPUT_FORMATS


class CliError(Exception):
    """A user error detected by the command line itself (bad option, missing file...)."""


def _expand(pattern: str) -> list[str]:
    """The files one command-line path names (a file, a glob or a directory)."""
    try:
        return files.expand(pattern)
    except FileNotFoundError as error:
        raise CliError(str(error)) from None


def _format_of(path: str, forced: str | None) -> str:
    try:
        return files.format_of(path, forced)
    except PolarsEvalError:
        known = ", ".join(INPUT_FORMATS)
        raise CliError(
            f"cannot tell the format of {path!r} from its extension (known: {known}); "
            "use --input-format"
        ) from None


def scan(
    paths: Sequence[str], input_format: str | None = None, columns: Sequence[str] | None = None
) -> pl.LazyFrame:
    """One LazyFrame over every input file; only the files' structure is read here.

    :func:`polars_eval.io.files.scan` checks the files before the query is built: a CSV
    line with too few or too many fields, a repeated CSV column name, a column that some
    files lack or whose type changes between files (Float64 here, String there) are
    errors naming the file and the line or the column. Numeric types that differ
    between files (Int32 and Int64, Float32 and Float64, integers and floats) are read
    as their common type. Parquet files are scanned with hive partitioning (``key=value``
    directories become columns). ``columns``: the columns the evaluation needs; other
    columns that drift between files are left out instead of being an error.
    """
    names: list[str] = []
    for pattern in paths:
        for file in _expand(pattern):
            _format_of(file, input_format)
            names.append(file)
    try:
        return files.scan(names, input_format=input_format, columns=columns)
    except FileNotFoundError as error:  # a file removed meanwhile: not "file: file not found"
        raise CliError(str(error)) from None


def repeated(p: argparse.ArgumentParser, flag: str, metavar: str, help: str) -> None:
    """An option given once or more (``action="append"``; a ``COL[,COL]`` value is split
    at its commas where it is read)."""
    p.add_argument(flag, action="append", metavar=metavar, help=help)
