"""The ``polars-eval`` command line (SPEC §9).

One command per task (``binary``, ``regression``, ``multiclass``, ``forecast``,
``ranking``; read from the task list), plus ``trec``, ``fuse`` and ``demo``. Input files (parquet, CSV, NDJSON; paths, globs or directories) are scanned
lazily and evaluated through the ``.eval`` namespace of the LazyFrame, so the command line
gives exactly the numbers of the Python API.

Input files are checked before any work (:func:`polars_eval.io.files.scan`): a CSV line
with too few or too many fields, a repeated column name, files that disagree on a
column (missing, or another type: numeric types may differ, they are read as their
common type), and output paths that cannot be written are errors naming the file.
Bad input never shows a traceback: the command prints one line starting with
``polars-eval: error:`` on stderr and exits with status 2.
"""

from polars_eval.cli._common import (
    CliError,
    Progress,
    _clock,
    one_line,
    progress,
    render_table,
)
from polars_eval.cli.main import _shorten, build_parser, main, native_stderr_filtered

__all__ = [
    "CliError",
    "Progress",
    "_clock",
    "_shorten",
    "build_parser",
    "main",
    "native_stderr_filtered",
    "one_line",
    "progress",
    "render_table",
]
