"""The command line's shared machinery: argument plumbing, input scanning, the progress
bar, the tables it prints and writes, the task evaluation and the report."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import polars as pl

import polars_eval as pe
from polars_eval._core import registry as _registry
from polars_eval.cli import windows as _windows
from polars_eval.cli._base import CliError as CliError
from polars_eval.cli._base import _expand, _format_of, repeated
from polars_eval.cli._base import scan as scan
from polars_eval.io import files

PROG = "polars-eval"


EXIT_BAD_INPUT = 2


EXIT_INTERNAL = 1


FORMATS = ("table", "json", "csv", "parquet")


INPUT_FORMATS = files.INPUT_FORMATS


OUTPUT_FORMATS = {
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "table",
}


REPORT_SUFFIXES = (".html", ".htm")


PROGRESS_AFTER_S = 2.0


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors become one-line :class:`CliError`."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def add_command(
    sub: Any, name: str, help: str, description: str, epilog: str
) -> argparse.ArgumentParser:
    """The parser of one sub-command, with the help layout every command shares."""
    return sub.add_parser(
        name, help=help, description=description, epilog=epilog, formatter_class=_formatter
    )


def _split(values: Sequence[str] | None) -> list[str]:
    """Repeated and comma-separated option values as one list: ``--by a,b --by c``."""
    out: list[str] = []
    for value in values or []:
        out += [part.strip() for part in value.split(",") if part.strip()]
    return out


def _add_common(p: argparse.ArgumentParser, task: str) -> None:
    """Options shared by every task command: input, grouping, output."""
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="input files, globs ('lake/**/*.parquet') or directories; "
        "parquet, CSV/TSV or NDJSON by extension. The files must have the same columns "
        "with the same types; numeric types may differ (Int32/Int64/Float32 ...: read as "
        "their common type)",
    )
    p.add_argument("--weight", metavar="COL", help="column of row weights (>= 0)")
    repeated(
        p,
        "--by",
        "COL[,COL]",
        "evaluate per group of these columns (repeat or separate with commas)",
    )
    repeated(
        p,
        "--metrics",
        "NAME[,NAME]",
        "evaluate only these metrics (names as pe.metrics() lists them; a metric "
        "gives each of its columns: averages, cutoffs)",
    )
    intervals = _interval_methods(task)
    if intervals:
        p.add_argument(
            "--ci",
            choices=intervals,
            metavar="METHOD",
            help=f"add confidence intervals ({', '.join(intervals)}) to the metrics that "
            "offer that method: columns <metric>_lower and <metric>_upper",
        )
        p.add_argument(
            "--level", type=float, default=0.95, help="confidence level of --ci (default 0.95)"
        )
        if "bootstrap" in intervals:
            p.add_argument(
                "--resamples",
                type=int,
                default=1000,
                metavar="N",
                help="bootstrap resamples of --ci bootstrap (default 1000)",
            )
            p.add_argument(
                "--seed", type=int, default=0, help="bootstrap seed of --ci bootstrap (default 0)"
            )
    p.add_argument(
        "--input-format",
        choices=("parquet", "csv", "tsv", "ndjson"),
        help="read every input in this format instead of guessing from the extension",
    )
    p.add_argument(
        "--no-validate",
        dest="validate",
        action="store_false",
        help="skip the row checks (labels, NaN, negative weights); faster, no safety net",
    )
    _add_output(p)
    p.add_argument(
        "--report", metavar="FILE.html", help="also write an HTML report of the evaluation"
    )
    _windows.add_options(p, task)


def _add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="output format (default: from the --output extension, else table)",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write the result to FILE instead of stdout"
    )


class Progress:
    """A progress line on stderr: the stage, a bar with the share done and the time left.

    With a ``total`` (rows from the parquet files' metadata, reports to write ...) the line
    is ``polars-eval: reading [#####.....] 52% · 10.4M/20.0M rows · 0:07 left``; without
    one it is the stage and the elapsed time. Work is counted with :meth:`add`, or, for
    rows, by :meth:`count_rows`, which passes a LazyFrame's batches through a counter as
    the streaming engine reads them. Made by :func:`progress`, which shows it only on a
    terminal and only for work that lasts over ``PROGRESS_AFTER_S``; elsewhere it counts
    nothing and writes nothing.
    """

    def __init__(
        self, what: str, total: int | None = None, unit: str = "rows", stream: Any = None
    ) -> None:
        self.what = what
        self.total = total if total and total > 0 else None
        self.unit = unit
        self.stream = stream  # None: not a terminal, nothing is counted or shown
        self.active = stream is not None
        self.done = 0
        self.start = time.perf_counter()
        self._lock = threading.Lock()
        self._shown = 0  # the length of the line on screen
        self._ascii = "utf" not in (getattr(stream, "encoding", None) or "").lower()

    def add(self, n: int = 1) -> None:
        """Count ``n`` more units done."""
        with self._lock:
            self.done += n

    def draw(self) -> None:
        """Redraw the line in place."""
        if self.stream is None:
            return
        with self._lock:
            text = self.line(max(20, _terminal_width() - 1), ascii_only=self._ascii)
            self._write("\r" + text + " " * max(0, self._shown - len(text)))
            self._shown = len(text)

    def say(self, message: str) -> None:
        """Print ``polars-eval: <message>`` on stderr, above the progress line if shown."""
        with self._lock:
            if self._shown:
                self._write("\r" + " " * self._shown + "\r")
                self._shown = 0
        _say(message)

    def finish(self, failed: bool) -> None:
        """Replace the line by ``<what>: done in 3.2 s`` (wipe it if the work failed)."""
        with self._lock:
            if not self._shown:
                return
            end = "" if failed else f"{PROG}: {self.what}: done in {self.elapsed():.1f} s"
            pad = " " * max(0, self._shown - len(end))
            self._write("\r" + end + pad + ("\r" if failed else "\n"))
            self._shown = 0

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def count_rows(self, lf: pl.LazyFrame, columns: Sequence[str]) -> pl.LazyFrame:
        """``lf``'s ``columns``, counted here as the engine reads them (on a terminal only).

        Only ``columns`` are read (a projection through a Python batch function would
        otherwise read them all); filters are still pushed down to the scan.
        """
        if not self.active:
            return lf
        narrow = lf.select(list(columns))

        def count(batch: pl.DataFrame) -> pl.DataFrame:
            self.add(batch.height)
            return batch

        return narrow.map_batches(
            count, schema=narrow.collect_schema(), streamable=True, predicate_pushdown=True
        )

    def line(self, width: int, *, ascii_only: bool = False) -> str:
        """The progress line, at most ``width`` characters."""
        elapsed = self.elapsed()
        head = f"{PROG}: {self.what}"
        done, total = self.done, self.total
        if total is None or done > total:  # no total, or the input is read more than once
            read = f", {_human(done)} {self.unit} read" if done else ""
            return f"{head}{read}... {elapsed:.0f} s"[:width]
        share = done / total
        tail = f" {share:4.0%} · {_human(done)}/{_human(total)} {self.unit}"
        if done == total:
            tail += f" · all read, computing... {elapsed:.0f} s"
        elif done and elapsed >= 1.0:
            tail += f" · {_clock(elapsed * (total - done) / done)} left"
        else:
            tail += f" · {elapsed:.0f} s"
        room = width - len(head) - len(tail) - 3
        if room < 5:
            return f"{head}{tail}"[:width]
        size = min(30, room)
        full = int(size * share)
        fill, empty = ("#", "-") if ascii_only else ("\u2588", "\u2591")
        return f"{head} [{fill * full}{empty * (size - full)}]{tail}"


def _human(n: float) -> str:
    """A count in 4 characters or so: 950, 12.4k, 3.1M, 2.0B."""
    for factor, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= factor:
            return f"{n / factor:.1f}{suffix}"
    return f"{n:.0f}"


def _clock(seconds: float) -> str:
    """Seconds as m:ss (or h:mm:ss)."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _on_terminal(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", None) and stream.isatty())


@contextlib.contextmanager
def progress(what: str, total: int | None = None, unit: str = "rows") -> Iterator[Progress]:
    """A :class:`Progress` shown on stderr (a terminal only) when ``what`` takes over ~2 s.

    The line is redrawn in place five times a second; at the end it becomes
    ``polars-eval: <what>: done in 3.2 s``, or is wiped if the work failed.
    """
    stream = sys.stderr
    if not _on_terminal(stream):
        yield Progress(what, total, unit)
        return
    meter = Progress(what, total, unit, stream)
    done = threading.Event()

    def tick() -> None:
        if done.wait(PROGRESS_AFTER_S):
            return
        while not done.is_set():
            meter.draw()
            done.wait(0.2)

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    failed = True
    try:
        yield meter
        failed = False
    finally:
        done.set()
        thread.join()
        meter.finish(failed)


def _terminal_width() -> int:
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def _parquet_rows(paths: Sequence[str], input_format: str | None) -> int | None:
    """The number of rows of the inputs, from the parquet metadata; None for other formats.

    Only the files' footers are read. Anything unexpected gives None (no share shown):
    the evaluation itself reports unreadable files.
    """
    try:
        files = [file for pattern in paths for file in _expand(pattern)]
        if not files or any(_format_of(f, input_format) != "parquet" for f in files):
            return None
        count = pl.scan_parquet(files, hive_partitioning=True).select(pl.len()).collect()
        return int(count.item())
    except Exception:
        return None


@contextlib.contextmanager
def reading(paths: Sequence[str]) -> Iterator[None]:
    """Name the input files in errors that Polars raises while reading them."""
    try:
        yield
    except (pl.exceptions.PolarsError, OSError) as error:
        shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
        raise CliError(f"{shown}: {one_line(error)}") from error


def collect(lf: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    """Collect with the streaming engine (bounded memory over large files)."""
    if isinstance(lf, pl.DataFrame):
        return lf
    return lf.collect(engine="streaming")


def _call(method: Callable[..., Any], *args: Any, strict: bool = True, **kwargs: Any) -> Any:
    """Call a namespace method with the keyword options it accepts.

    Options left at ``None`` are not passed (the method's default applies); an option the
    installed method does not take is an error naming it (``strict``) or left out.
    """
    params = inspect.signature(method).parameters
    has_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    passed: dict[str, Any] = {}
    for key, value in kwargs.items():
        if value is None:
            continue
        if key not in params and not has_var_kw:
            if not strict:
                continue
            raise CliError(f"option --{key.replace('_', '-')} is not supported by this command")
        passed[key] = value
    return method(*args, **passed)


def _coerce_pos_label(lf: pl.LazyFrame, label: str, pos_label: str | None) -> Any:
    """``--pos-label`` (a string on the command line) in the dtype of the label column."""
    if pos_label is None:
        return None
    dtype = lf.collect_schema().get(label)
    if dtype is None:
        return pos_label  # the missing column is reported by the evaluation
    if dtype == pl.Boolean:
        lowered = pos_label.lower()
        if lowered not in ("true", "false", "1", "0"):
            raise CliError(f"--pos-label {pos_label!r} is not a boolean (label column {label!r})")
        return lowered in ("true", "1")
    if dtype.is_integer():
        try:
            return int(pos_label)
        except ValueError:
            raise CliError(
                f"--pos-label {pos_label!r} is not an integer, as label column {label!r} ({dtype})"
            ) from None
    if dtype.is_float():
        try:
            return float(pos_label)
        except ValueError:
            raise CliError(
                f"--pos-label {pos_label!r} is not a number, as label column {label!r} ({dtype})"
            ) from None
    return pos_label


def _needed(*columns: Any) -> list[str]:
    out: list[str] = []
    for col in columns:
        if isinstance(col, str) and col not in out:
            out.append(col)
        elif isinstance(col, list):
            out += [c for c in col if isinstance(c, str) and c not in out]
    return out


def _materialize(lf: pl.LazyFrame, columns: list[str]) -> pl.DataFrame | pl.LazyFrame:
    """The input columns in memory, read once, when several passes need them."""
    schema = lf.collect_schema()
    missing = [c for c in columns if c not in schema]
    if missing:
        return lf  # the evaluation names the missing column
    return collect(lf.select(columns))


def _interval_methods(task: str) -> list[str]:
    """The ``--ci`` methods of a task: those of its table's own ``ci=`` (the intervals over
    queries or series of SPEC §14), else those its summary metrics register."""
    if "ci" in inspect.signature(getattr(pe.EvalNamespace, task)).parameters:
        from polars_eval.stats.units import METHODS

        return list(METHODS)
    methods = {m for name in _registry.default_table(task) for m in _registry.get(name).intervals}
    return sorted(methods)


def _metric_args(
    info: _registry.MetricInfo, inputs: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The full argument mapping of one metric function, from the task's inputs and options."""
    params = info.signature.parameters
    kw = {k: v for k, v in kwargs.items() if k in params and v is not None}
    if info.task == "multiclass":  # as the table binds them: pred= before the argmax of
        # proba=, and proba= as the hinge loss's decision scores
        if kw.get("pred") is not None:
            kw.pop("proba", None)
        if "score" in params and kwargs.get("proba") is not None:
            kw["score"] = kwargs["proba"]
    bound = info.signature.bind(*inputs, **kw)
    bound.apply_defaults()
    return dict(bound.arguments)


def _intervals(
    frame: pl.DataFrame | pl.LazyFrame,
    task: str,
    inputs: tuple[Any, ...],
    kwargs: dict[str, Any],
    by: list[str],
    metrics: Sequence[str],
    args: argparse.Namespace,
) -> pl.DataFrame:
    """Columns ``<metric>_lower``/``_upper`` for the ``metrics`` that offer ``args.ci``.

    The bootstrap draws its resamples once for all metrics (``df.eval.bootstrap``); the
    closed forms run one query per metric, as ``df.eval.<metric>(..., ci=...)`` does.
    """
    method: str = args.ci
    infos = [
        info
        for info in _registry.by_task(task)
        if info.name in metrics and info.kind == "scalar" and method in info.intervals
    ]
    if not infos:
        raise CliError(f"no {task} metric in the output offers --ci {method}")
    dummy = "__pe_cli_all"
    group = by or [dummy]
    data = frame.lazy()
    if not by:
        data = data.with_columns(pl.lit(0).alias(dummy))
    parts: list[pl.DataFrame] = []
    if method == "bootstrap":
        exprs = [info.fn(**_metric_args(info, inputs, kwargs)) for info in infos]
        long = collect(
            data.eval.bootstrap(
                exprs,
                n_resamples=args.resamples,
                level=args.level,
                seed=args.seed,
                by=group,
                validate=args.validate,
            )
        )
        for info in infos:
            parts.append(
                long.filter(pl.col("metric") == info.name).select(
                    *group,
                    pl.col("lower").alias(f"{info.name}_lower"),
                    pl.col("upper").alias(f"{info.name}_upper"),
                )
            )
    else:
        from polars_eval.stats import run_interval

        for info in infos:
            method_fn = getattr(data.eval, info.name)
            if "ci" in inspect.signature(method_fn).parameters:  # the namespace's ci= hook
                result = method_fn(
                    **_metric_args(info, inputs, kwargs),
                    ci=method,
                    level=args.level,
                    by=group,
                    validate=args.validate,
                )
            else:
                result = run_interval(
                    data,
                    info,
                    _metric_args(info, inputs, kwargs),
                    by=group,
                    validate=args.validate,
                    method=method,
                    level=args.level,
                )
            parts.append(
                collect(result).select(
                    *group, pl.col(f"{info.name}_lower"), pl.col(f"{info.name}_upper")
                )
            )
    out = parts[0]
    for part in parts[1:]:
        out = out.join(part, on=group, how="left", nulls_equal=True)
    return out.drop(dummy) if not by else out


def _with_intervals(table: pl.DataFrame, bounds: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Insert each ``<metric>_lower``/``_upper`` pair right after its metric column."""
    joined = (
        table.join(bounds, on=by, how="left", nulls_equal=True, maintain_order="left")
        if by
        else pl.concat([table, bounds], how="horizontal")
    )
    order: list[str] = []
    for col in table.columns:
        order.append(col)
        for suffix in ("_lower", "_upper"):
            if f"{col}{suffix}" in bounds.columns:
                order.append(f"{col}{suffix}")
    return joined.select(order)


AVERAGES = ("micro", "macro", "weighted")
COMPANIONS = ("_pooled", "_lower", "_upper", "_baseline")
"""Columns that come along with a metric's column: forecast's pooled value, the interval
(``--ci``) and the baseline (``--baseline``)."""


def _task_metrics(task: str) -> list[_registry.MetricInfo]:
    """The registered metrics ``--metrics`` may name for ``task`` (forecast tables take the
    regression metrics too)."""
    infos = _registry.by_task(task)
    return infos + (_registry.by_task("regression") if task == "forecast" else [])


def _stems(info: _registry.MetricInfo) -> set[str]:
    """The names a metric's columns start from: its name and its short name (ranking)."""
    return {info.name, *([info.extra["short"]] if "short" in info.extra else [])}


def check_metric_names(task: str, names: Sequence[str]) -> None:
    """``--metrics`` takes metric names, as ``pe.metrics()`` lists them for the task (SPEC
    §1.3: the CLI reads the registry), checked before any data is read. A column name (a
    cutoff, an average, a pooled value, an interval bound, a count) or an unknown name is
    an error that says what to pass instead."""
    infos = _task_metrics(task)
    scalar = [i for i in infos if i.kind == "scalar"]
    known = {i.name for i in scalar}
    available = f"{task} metrics: {', '.join(i.name for i in scalar)}"
    for name in names:
        if name in known:
            continue
        if any(i.name == name for i in infos):
            raise CliError(
                f"{name!r} is a curve or table, not a metric of one value: --metrics takes "
                f"{available}"
            )
        hint = _column_hint(name, scalar)
        if hint:
            raise CliError(f"{name!r} is a column, not a metric name: {hint}")
        raise CliError(f"unknown metric {name!r} for --metrics; {available}")


def _column_hint(name: str, scalar: Sequence[_registry.MetricInfo]) -> str:
    """What to pass to --metrics for a column name of a task table ("" if none)."""
    stem, at, cutoff = name.partition("@")
    for info in scalar:
        if at and stem in _stems(info):
            return f"pass --metrics {info.name} with -k {cutoff} (a metric gives each cutoff)"
    for info in scalar:
        if name in _stems(info):  # a short name that is not itself a metric name
            return f"pass --metrics {info.name} (its columns are named {name}, {name}@k)"
    for info in scalar:
        for suffix in (*(f"_{a}" for a in AVERAGES), *COMPANIONS):
            if name == info.name + suffix:
                if suffix in ("_lower", "_upper"):
                    return f"pass --metrics {info.name} with --ci (the interval comes along)"
                if suffix == "_baseline":
                    return f"pass --metrics {info.name} with --baseline"
                return f"pass --metrics {info.name} (it gives each of its columns)"
    return ""


def _select_metrics(table: pl.DataFrame, by: list[str], metrics: list[str]) -> pl.DataFrame:
    """The columns of the metrics named (checked by :func:`check_metric_names`): a metric
    gives its column, its cutoffs (ranking's ndcg, ndcg@10, under its short name:
    precision@5 for precision_at_k) or its averages (multiclass_jaccard_micro, ...), each
    with its pooled value, interval and baseline."""
    if not metrics:
        return table

    def columns_of(m: str) -> list[str]:
        info = _registry.REGISTRY.get(m)
        stems = _stems(info) if info is not None else {m}
        averages = {f"{m}_{a}" for a in AVERAGES}
        return [c for c in table.columns if c in stems or c.split("@")[0] in stems or c in averages]

    keep = [c for c in table.columns if c in by]
    for m in metrics:
        columns = columns_of(m)
        if not columns:  # a registered metric the table left out: say so, never drop it
            known = ", ".join(c for c in table.columns if c not in by)
            raise CliError(f"metric {m!r} is not in the table; its columns: {known}")
        for c in columns:
            keep += [c] + [f"{c}{s}" for s in COMPANIONS if f"{c}{s}" in table.columns]
    return table.select(list(dict.fromkeys(keep)))


def _table_config() -> pl.Config:
    return pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=65_000,  # one line per row: never wrap cells
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        fmt_str_lengths=60,
    )


TABLE_WIDTH = 100  # the width of printed tables when stdout is not a terminal (or $COLUMNS)


_COUNT_NAMES = {"count", "positives", "negatives", "tp", "fp", "tn", "fn", "support", "rows", "n"}


def _is_count(name: str) -> bool:
    """Whether a column holds counts by its name: ``count``, ``tp``, ``n_queries`` ..."""
    return (
        name in _COUNT_NAMES
        or name.startswith(("n_", "rows_", "predicted_"))
        or name.endswith(("_count", "_rows"))
    )


def _display(table: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The values as printed: 4 significant digits, counts as integers.

    Floats keep 4 significant digits (one decimal from 1,000 up; float noise such as
    1e-16 shows as 0). A float column of counts (by its name: ``count``, ``positives``,
    ``tp`` ..., ``n_*``) whose values are all whole numbers prints as integers:
    ``2000``, not ``2000.0``; weighted counts with fractions stay floats.
    """
    floats = [name for name, dtype in table.schema.items() if dtype.is_float() and name not in by]
    whole = set()
    if floats and table.height:
        counts = [c for c in floats if _is_count(c)]
        if counts:
            checks = table.select(
                (pl.col(c).is_null() | (pl.col(c).is_finite() & (pl.col(c) == pl.col(c).round(0))))
                .all()
                .alias(c)
                for c in counts
            ).row(0, named=True)
            whole = {c for c, ok in checks.items() if ok}
    return table.with_columns(
        pl.col(name).cast(pl.Int64)
        if name in whole
        else pl.when(pl.col(name).abs() >= 1000)
        .then(pl.col(name).round(1))
        .otherwise((pl.col(name) if name in P_VALUES else pl.col(name).round(12)).round_sig_figs(4))
        .alias(name)
        for name in floats
    )


P_VALUES = {"p_value", "p_adjusted"}
"""Columns whose tiny values are no float noise (a p-value of 1e-27 shows as such)."""


def _units(columns: Sequence[str]) -> list[list[str]]:
    """Columns in the groups that stay together: a metric, its interval and its baseline."""
    units: list[list[str]] = []
    for col in columns:
        base = next(
            (col[: -len(s)] for s in ("_lower", "_upper", "_baseline") if col.endswith(s)), None
        )
        if units and base is not None and base in units[-1]:
            units[-1].append(col)
        else:
            units.append([col])
    return units


def _fold(table: pl.DataFrame, by: list[str], width: int) -> list[pl.DataFrame]:
    """The table cut into tables at most ``width`` characters wide.

    Each part repeats the group columns and takes as many metric columns as fit, in
    order; a metric and its ``_lower``/``_upper``/``_baseline`` columns stay together.
    """
    keys = [c for c in table.columns if c in by]
    metrics = [c for c in table.columns if c not in by]
    if not metrics:
        return [table]

    def rendered(name: str) -> int:  # one column drawn alone: "│ name │" and its values
        return max(len(line) for line in str(table.select(name)).splitlines())

    # drawn together, columns share their borders: width = sum(alone - 1) + 1
    size = {c: rendered(c) - 1 for c in table.columns}
    units = _units(metrics)
    costs = [sum(size[c] for c in unit) for unit in units]

    def pack(budget: int) -> list[list[str]]:
        parts: list[list[str]] = [[]]
        used = 0
        for unit, cost in zip(units, costs, strict=True):
            if parts[-1] and used + cost > budget:
                parts.append([])
                used = 0
            parts[-1] += unit
            used += cost
        return parts

    budget = width - 1 - sum(size[k] for k in keys)
    parts = pack(budget)
    # as many parts as the width needs, of even widths: the smallest budget giving as few
    low, high = max(costs), max(budget, max(costs))
    while low < high:
        middle = (low + high) // 2
        if len(pack(middle)) <= len(parts):
            high = middle
        else:
            low = middle + 1
    return [table.select(keys + part) for part in pack(low)]


def render_table(
    table: pl.DataFrame, by: list[str], title: str | None = None, width: int | None = None
) -> str:
    """The text form of a result table, as printed by the ``table`` format.

    Always one row per group (the ``by`` columns first) and one column per metric, as
    the DataFrame is. A table wider than ``width`` (the terminal's width, else
    ``TABLE_WIDTH``) is printed as several tables one under the other, each repeating
    the group columns and holding the next metric columns that fit.
    """
    if width is None:
        import shutil

        width = shutil.get_terminal_size((TABLE_WIDTH, 24)).columns
    with _table_config():
        shown = _display(table, by)
        text = "\n\n".join(str(part) for part in _fold(shown, by, width))
    return f"{title}\n{text}" if title else text


def _json_ready(table: pl.DataFrame) -> pl.DataFrame:
    """NaN/inf (not JSON) as null; dates and other non-JSON types as strings."""
    exprs = []
    for name, dtype in table.schema.items():
        col = pl.col(name)
        if dtype.is_float():
            exprs.append(pl.when(col.is_finite()).then(col).otherwise(None).alias(name))
        elif dtype.is_temporal():
            exprs.append(col.cast(pl.String))
        else:
            exprs.append(col)
    return table.select(exprs)


def output_format(fmt: str | None, output: str | None) -> str:
    """The output format: ``--format``, else from the ``--output`` extension, else table.

    An ``--output`` extension that names no format is an error listing the formats, not
    a text table in ``out.xlsx``.
    """
    if fmt is None and output:
        fmt = OUTPUT_FORMATS.get(Path(output).suffix.lower())
        if fmt is None:
            known = ", ".join(f"{ext} ({name})" for ext, name in OUTPUT_FORMATS.items())
            raise CliError(
                f"cannot tell the output format of {output!r} from its extension; known: "
                f"{known}; or give --format {'|'.join(FORMATS)}"
            )
    fmt = fmt or "table"
    if fmt == "parquet" and not output:
        raise CliError("--format parquet needs --output FILE")
    return fmt


def _check_writable(option: str, path: str, inputs: Sequence[str]) -> None:
    """An output file the command can create or replace; an error naming it otherwise."""
    target = Path(path)
    where = f"cannot write {option} {path!r}"
    if target.is_dir():
        raise CliError(f"{where}: it is a directory; expected a file name")
    parent = target.parent
    if not parent.exists():
        raise CliError(f"{where}: directory {str(parent)!r} does not exist")
    if not parent.is_dir():
        raise CliError(f"{where}: {str(parent)!r} is not a directory")
    if target.exists():
        if not os.access(target, os.W_OK):
            raise CliError(f"{where}: the file is not writable (permission denied)")
        for name in inputs:
            with contextlib.suppress(OSError):
                if os.path.samefile(name, target):
                    raise CliError(f"{where}: it is an input file and would be overwritten")
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise CliError(f"{where}: directory {str(parent)!r} is not writable (permission denied)")


def check_outputs(args: argparse.Namespace) -> None:
    """Check the output options before any work: format, and that each path is writable.

    ``-o/--output`` and ``--report`` must name a file in an existing, writable directory
    (not an input file); the output extension must name a format (or give ``--format``)
    and the report's must be ``.html``, so that a long evaluation never fails at the end.
    """
    output = getattr(args, "output", None)
    report = getattr(args, "report", None)
    if getattr(args, "no_report", False):
        report = None
    inputs = [*getattr(args, "paths", []), *(getattr(args, "train", None) or [])]
    inputs += [getattr(args, name) for name in ("run", "qrels") if getattr(args, name, None)]
    if report is not None and Path(report).suffix.lower() not in REPORT_SUFFIXES:
        raise CliError(
            f"--report writes HTML: expected a file name ending in .html, got {report!r}"
        )
    for option, path in (("-o/--output", output), ("--report", report)):
        if path:
            _check_writable(option, path, inputs)
    if hasattr(args, "format"):
        output_format(args.format, output)
    if output and report and os.path.abspath(output) == os.path.abspath(report):
        raise CliError(f"-o/--output and --report name the same file {output!r}")


def write_output(table: pl.DataFrame, by: list[str], fmt: str | None, output: str | None) -> None:
    """Print or write the result in the requested format."""
    fmt = output_format(fmt, output)
    if fmt == "json":
        text = _json_ready(table).write_json() + "\n"
    elif fmt == "csv":
        text = table.write_csv()
    elif fmt == "table":
        text = render_table(table, by) + "\n"
    else:
        text = ""
    if output:
        try:
            if fmt == "parquet":
                table.write_parquet(output)
            else:
                Path(output).write_text(text, encoding="utf-8")
        except OSError as error:
            raise CliError(f"cannot write {output!r}: {error.strerror or error}") from error
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def write_report(frame: pl.DataFrame | pl.LazyFrame, path: str, **kwargs: Any) -> str:
    """Write ``frame.eval.report(**kwargs)`` to ``path``; the absolute path written."""
    report = build_report(frame, **kwargs)
    report.to_html(path)
    return str(Path(path).resolve())


def _report_intervals(args: argparse.Namespace) -> dict[str, Any]:
    """The report's intervals under ``--ci``: its closed forms, or also the bootstrap."""
    return {"ci": "bootstrap" if args.ci == "bootstrap" else "closed", "level": args.level}


def _report_shares_metrics(task: str, frame: Any) -> bool:
    """Whether the report of ``task`` computes the metric table on its way (the input in
    memory): then it is built first, and the table printed is the report's."""
    from polars_eval.report.tables import SHARES_METRICS

    return task in SHARES_METRICS and isinstance(frame, pl.DataFrame)


def build_report(frame: pl.DataFrame | pl.LazyFrame, **kwargs: Any) -> Any:
    """``frame.eval.report(**kwargs)`` with the options its task takes (tables computed)."""
    from polars_eval.report import tables

    task = str(kwargs.get("task"))
    # the report takes its task's own data arguments and options only
    allowed = set(getattr(tables, f"{task.upper()}_OPTIONS"))
    allowed |= {*tables.task_spec(task).data_args, "ci", "level"}
    params = inspect.signature(frame.eval.report).parameters
    kwargs = {k: v for k, v in kwargs.items() if k in params or k in allowed}
    return _call(frame.eval.report, strict=False, **kwargs)


def evaluate(
    args: argparse.Namespace,
    task: str,
    inputs: tuple[Any, ...],
    options: Callable[[pl.LazyFrame], dict[str, Any]],
    extra_columns: Sequence[Any] = (),
    report_options: dict[str, Any] | None = None,
) -> int:
    """Scan the inputs, run ``lf.eval.<task>(*inputs, **options)``, print, report.

    ``options`` builds the keyword options from the scanned frame (e.g. to give
    ``--pos-label`` the label column's dtype); options left at ``None`` keep the method's
    default. ``report_options`` go to the report only (binary ``sensitive``). With
    ``--ci`` or ``--report`` the needed columns are read once into memory.
    """
    by = _split(args.by)
    ci = getattr(args, "ci", None)
    report = getattr(args, "report", None)
    grouped, keys, window_columns = _windows.options(args, task, by)
    if grouped and ci:
        raise CliError("--every, --rollup and --min-rows work without --ci")
    _windows.check_report(args, grouped)
    chosen = _split(args.metrics)
    check_metric_names(task, chosen)
    method = getattr(pe.EvalNamespace, task)
    # the task table's own interval (over queries, series): computed with the table
    own_ci = ci if "ci" in inspect.signature(method).parameters else None
    names = [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.name != "self"
    ][: len(inputs)]
    with reading(args.paths):
        needed = _needed(*inputs, *extra_columns, by, window_columns)
        lf = scan(args.paths, args.input_format, needed)
        opts = options(lf) | grouped
        if own_ci:
            opts["ci"], opts["level"] = own_ci, args.level
            if own_ci == "bootstrap":
                opts["n_resamples"], opts["seed"] = args.resamples, args.seed
        schema = lf.collect_schema()
        missing = [c for c in needed if c not in schema]
        # the rows are counted only when every column the evaluation reads is known
        # (`--by lead` is derived from --cutoff); otherwise the error comes as it would
        countable = not [c for c in missing if not (task == "forecast" and c == "lead")]
        present = [c for c in needed if c in schema]
        total = _parquet_rows(args.paths, args.input_format) if _on_terminal(sys.stderr) else None
        frame: pl.DataFrame | pl.LazyFrame = lf
        if (ci and not own_ci) or report:  # several passes over the same columns: read them once
            with progress("reading the input", total) as meter:
                frame = _materialize(meter.count_rows(lf, needed) if not missing else lf, needed)
        if isinstance(frame, pl.DataFrame):
            total, present = frame.height, frame.columns
        report_args: dict[str, Any] = {
            "task": task,
            **dict(zip(names, inputs, strict=False)),
            **opts,
            **(_report_intervals(args) if ci else {}),
            **(report_options or {}),
            **_windows.report_reference(args),
        }
        # --metrics naming metrics outside the default table: the task method's metrics=
        # (ranking's names its columns at its cutoffs, map@10: without -k, the whole list)
        params = inspect.signature(method).parameters
        given = dict(zip(names, inputs, strict=False)) | opts
        if (
            chosen
            and "metrics" in params
            and "metrics" not in opts
            and not set(chosen) <= _default_columns(task, method, given)
        ):
            opts = {**opts, "metrics": chosen}
            if task == "ranking" and opts.get("k") is None:
                opts["k"] = [None]
        early = None  # the report, when it computes the metric table on its way
        with progress("evaluating", total) as meter:
            # (not with windows: the table printed is the windowed one)
            shares = not grouped and _report_shares_metrics(task, frame)
            if report and "metrics" not in opts and shares:
                early = build_report(frame, by=by or None, validate=args.validate, **report_args)
            if early is not None and early.metrics is not None:
                for note in early.metric_notes:  # the metric layer's warnings, as without
                    warnings.warn(note, pe.UndefinedMetricWarning, stacklevel=1)
                result = early.metrics
            else:
                source = meter.count_rows(frame.lazy(), present) if countable else frame.lazy()
                result = _call(
                    getattr(source.eval, task),
                    *inputs,
                    by=by or None,
                    validate=args.validate,
                    **opts,
                )
            table = _select_metrics(collect(result), keys, chosen)
        if ci and not own_ci:
            with progress(f"computing the intervals ({ci})"):
                metrics = [c for c in table.columns if c not in by]
                bounds = _intervals(frame, task, inputs, opts, by, metrics, args)
                table = _with_intervals(table, bounds, by)
    write_output(table, keys, args.format, args.output)
    if report:
        report_by = by
        if task == "forecast" and "lead" in by and "lead" not in frame.collect_schema():
            # `--by lead` groups by the lead the evaluation derives from --cutoff; the
            # frame has no such column, and the report has its own table by lead
            report_by = [b for b in by if b != "lead"]
        with progress("writing the report"), reading(args.paths):
            if early is not None:
                early.to_html(report)
                where = str(Path(report).resolve())
            else:
                where = write_report(frame, report, by=report_by or None, **report_args)
        _say(f"report written to {where}")
    return 0


def _default_columns(task: str, method: Any, given: dict[str, Any]) -> set[str]:
    """The metric names the default table of a call gives columns of (under their short
    names too: ranking's ``map``): the registry's default table under the call's options
    (the method's defaults for those left at None)."""
    params = inspect.signature(method).parameters
    options = {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}
    options |= {k: v for k, v in given.items() if v is not None}
    return {s for n in _registry.default_table(task, **options) for s in _stems(_registry.get(n))}


def _add_baseline(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--baseline",
        action="store_true",
        default=None,
        help="add <metric>_baseline: the value of the best constant predictor",
    )


def _typed_like(lf: pl.LazyFrame, column: str, values: list[str], option: str) -> list[Any]:
    """Command-line strings in the dtype of ``column`` (class ids given as text)."""
    dtype = lf.collect_schema().get(column)
    if dtype is None or not dtype.is_numeric():
        return list(values)
    kind = int if dtype.is_integer() else float
    try:
        return [kind(v) for v in values]
    except ValueError:
        raise CliError(
            f"{option} {','.join(values)!r}: column {column!r} holds numbers ({dtype})"
        ) from None


def _say(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)


def one_line(error: BaseException | str) -> str:
    """An error message on one line: Polars' hints and plan dumps are left out."""
    text = str(error).strip()
    if isinstance(error, pl.exceptions.PolarsError):
        text = text.split("\n\n")[0]
        for marker in ("Resolved plan until failure", "This error occurred with"):
            text = text.split(marker)[0]
    text = " ".join(text.split())
    if not text:
        text = type(error).__name__ if isinstance(error, BaseException) else "unknown error"
    if isinstance(error, FileNotFoundError) and "No such file" in text:
        text = f"file not found: {text.split(':', 1)[-1].strip()}"
    return text
