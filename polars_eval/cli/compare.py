"""``--compare`` on the task commands and ``polars-eval trec`` (SPEC §14): the compare table.

``polars-eval ranking FILES --score bm25 --compare dense,hybrid ...`` gives
``df.eval.compare("ranking", ..., score=["bm25", "dense", "hybrid"])`` (the ``--score``
column is the baseline); ``polars-eval trec RUN QRELS --compare RUN2 RUN3`` compares
trec_eval's per-query measures of the runs (RUN the baseline). ``--gate`` then exits 1
when a system is significantly worse than the baseline on some metric. ``--report
FILE.html`` writes the baseline's report with the comparison section
(:mod:`polars_eval.report.compare`); its table is the one printed (without ``--by``: the
same computation).
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from polars_eval.cli._base import repeated
from polars_eval.cli._common import (
    PROG,
    CliError,
    _materialize,
    _needed,
    _say,
    _split,
    collect,
    progress,
    reading,
    scan,
    write_output,
)
from polars_eval.stats import compare_tasks, systems

EXIT_GATE = 1
"""The exit status of a failed ``--gate``."""
NOT_WITH_COMPARE = ("ci", "per_query", "baseline", "weight", "bins")
"""Options of a task command that do not apply to its compare table."""


def _has(p: argparse.ArgumentParser, option: str) -> bool:
    return option in p._option_string_actions  # argparse keeps no public lookup


def add_options(p: argparse.ArgumentParser, *, trec: bool = False, unit: bool = False) -> None:
    """The compare options (after the command's own: ``--level``, ``--resamples`` and
    ``--seed`` are shared with ``--ci`` where the command has them); ``unit``: the
    ``--unit`` of a task whose units are rows by default."""
    if trec:
        p.add_argument(
            "--compare",
            nargs="+",
            metavar="RUN",
            help="compare RUN (the baseline) with these runs, query by query: the compare table",
        )
    else:
        repeated(
            p,
            "--compare",
            "COL[,COL]",
            "compare the scored column (the baseline) with these columns of other systems, "
            "unit by unit: the compare table",
        )
    if unit:
        repeated(
            p,
            "--unit",
            "COL[,COL]",
            "--compare: the units are the groups of these columns (default: the rows)",
        )
    p.add_argument(
        "--test",
        choices=[t for t in systems.TESTS if t != "delong"],
        default="t",
        help="paired test of --compare (default t)",
    )
    p.add_argument(
        "--correction",
        choices=("holm", "bonferroni", "bh", "none"),
        default="holm",
        help="multiple-comparison correction of --compare, per metric (default holm)",
    )
    p.add_argument(
        "--missing",
        choices=("zero", "drop"),
        help="--compare: a unit some system lacks scores 0 there (zero), or only the units every "
        "system has count (drop); default: an error",
    )
    p.add_argument(
        "--gate",
        action="store_true",
        help="--compare: exit 1 when a system is significantly worse than the baseline "
        "(adjusted p < 1 - level, the difference in the worse direction) on any metric",
    )
    if not _has(p, "--level"):
        p.add_argument("--level", type=float, default=0.95, help="confidence level (default 0.95)")
    if _has(p, "--resamples"):  # --ci bootstrap's: its default (1000) marked as a default
        action = p._option_string_actions["--resamples"]
        if action.default is not None:  # (None: each takes its own default)
            action.default = _Default(action.default)
    else:
        p.add_argument(
            "--resamples",
            type=int,
            metavar="N",
            help="resamples of the randomization and bootstrap tests (default 10000)",
        )
    if not _has(p, "--seed"):
        p.add_argument("--seed", type=int, default=0, help="seed of the resampled tests")


class _Default(int):
    """A default of ``--resamples`` left as is: ``--compare`` then takes its own."""


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    resamples = args.resamples
    return {
        "test": args.test,
        "correction": None if args.correction == "none" else args.correction,
        "level": args.level,
        "n_resamples": 10_000
        if resamples is None or isinstance(resamples, _Default)
        else resamples,
        "seed": 0 if args.seed is None else args.seed,
        "missing": args.missing,
    }


def gate(table: pl.DataFrame, level: float, task: str, by: Sequence[str] = ()) -> int:
    """Exit status of ``--gate``: 1 (each failure on one line of stderr) when a system is
    significantly worse than the baseline on a metric (trec: ``task="trec"``), else 0."""
    if task == "trec":
        from polars_eval.io.trec import COUNT_MEASURES

        # every trec_eval measure is better higher, but the counts (num_ret ...)
        metrics = table.get_column("metric").unique().to_list()
        directions = {m: None if m in COUNT_MEASURES else True for m in metrics}
    else:
        directions = compare_tasks.metric_directions(task, table)
    failed = systems.gate_failures(table, level, directions)
    for row in failed.iter_rows(named=True):
        group = ", ".join(f"{b}={row[b]!r}" for b in by)
        print(
            f"{PROG}: gate: system {row['system']!r} is significantly worse than "
            f"{row['baseline']!r} on {row['metric']}"
            + (f" ({group})" if group else "")
            + f": difference {row['difference']:.6g}, adjusted p {row['p_adjusted']:.3g}",
            file=sys.stderr,
        )
    return EXIT_GATE if failed.height else 0


def run_task(
    args: argparse.Namespace,
    task: str,
    inputs: tuple[Any, ...],
    system: int,
    options: Callable[[pl.LazyFrame], dict[str, Any]],
    extra_columns: Sequence[Any] = (),
) -> int:
    """``--compare`` on a task command: the systems are ``inputs[system]`` (the baseline)
    and the ``--compare`` columns."""
    for name in NOT_WITH_COMPARE:
        if getattr(args, name, None) not in (None, False):
            raise CliError(f"--{name.replace('_', '-')} does not apply to --compare")
    others = _split(args.compare)
    systems_ = [inputs[system], *others]
    by = _split(args.by)
    unit = _split(getattr(args, "unit", None))
    chosen = _split(args.metrics)  # checked by compare (ranking: "ndcg@10" or -k)
    columns = [*inputs, *others, *extra_columns, *by, *unit]
    with reading(args.paths):
        lf = scan(args.paths, args.input_format, _needed(*columns))
        opts = {k: v for k, v in options(lf).items() if v is not None and k not in NOT_WITH_COMPARE}
        if task == "ranking" and opts.get("k") is None:
            opts.pop("k", None)
        data = [systems_ if i == system else value for i, value in enumerate(inputs)]
        source: pl.DataFrame | pl.LazyFrame = lf
        report = None
        if args.report:  # the report's passes and the table's: the columns read once
            source = _materialize(lf, _needed(*columns))
            with progress("comparing and reporting"):
                report = source.eval.report(
                    task, **dict(zip(_arg_names(task), data, strict=False)), by=by or None,
                    metrics=chosen or None, unit=unit or None, validate=args.validate,
                    **_settings(args), **opts,
                )  # fmt: skip
        if report is not None and not by:
            table = report.tables["compare"]  # the same call: df.eval.compare over every unit
        else:
            with progress("comparing"):
                table = collect(
                    source.eval.compare(
                        task,
                        *data,
                        by=by or None,
                        metrics=chosen or None,
                        unit=unit or None,
                        validate=args.validate,
                        **_settings(args),
                        **opts,
                    )  # fmt: skip
                )
    write_output(table, by, args.format, args.output)
    if report is not None:
        save_report(report, args.report)
    return gate(table, args.level, task, by) if args.gate else 0


def _arg_names(task: str) -> list[str]:
    """The names of ``df.eval.<task>``'s column arguments, in order (those the report takes
    by name)."""
    import polars_eval as pe

    method = getattr(pe.EvalNamespace, task)
    return [
        p.name
        for p in inspect.signature(method).parameters.values()
        if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.name != "self"
    ]


def save_report(report: Any, path: str) -> None:
    """Write the report to ``path`` and say where."""
    with progress("writing the report"):
        report.to_html(path)
    _say(f"report written to {Path(path).resolve()}")


def run_trec(args: argparse.Namespace, measures: list[str], flags: dict[str, Any]) -> int:
    """``polars-eval trec RUN QRELS --compare RUN2 ...``: trec_eval's per-query measures of
    each run, compared query by query (RUN the baseline)."""
    from polars_eval.io.trec import COUNT_MEASURES, INFO_MEASURES, trec_cli

    if args.per_query:
        raise CliError("--per-query does not apply to --compare")
    paths = [args.run, *args.compare]
    for path in [*paths, args.qrels]:
        if not Path(path).is_file():
            raise CliError(f"file not found: {path!r}")
    if len(set(paths)) < len(paths):
        raise CliError("a run is given twice to --compare")
    parts = []
    with progress("evaluating the runs"), reading([*paths, args.qrels]):
        for path in paths:
            table = trec_cli(path, args.qrels, measures, True, **flags)
            parts.append(table.with_columns(pl.lit(path).alias("system")))
    per_query = pl.concat(parts, how="vertical_relaxed")
    metrics = [c for c in per_query.columns if c not in ("query", "system", *INFO_MEASURES)]
    directions = {m: None if m in COUNT_MEASURES else True for m in metrics}
    settings = _settings(args)
    table, units = compare_tasks.values_units(
        per_query, system="system", units=["query"], metrics=metrics, directions=directions,
        unit_name="queries", differences=bool(args.report), **settings,
    )  # fmt: skip
    write_output(table, [], args.format, args.output)
    if args.report:
        from polars_eval.report.compare import attach

        with progress("reporting"):
            report = trec_report(args, flags)
            attach(
                report, table, units, systems=paths, baseline=args.run, directions=directions,
                test=settings["test"], correction=settings["correction"], level=args.level,
                unit_name="queries",
                notes=["The comparison's measures are trec_eval's (as printed); the rest of "
                       f"the report is the ranking report of {args.run} joined to "
                       f"{args.qrels} (tied scores averaged, exponential gains)."],
            )  # fmt: skip
        save_report(report, args.report)
    return gate(table, args.level, "trec") if args.gate else 0


REPORT_FLAGS = ("max_docs", "complete_queries", "collection_size", "zscores")
"""trec_eval options that the ranking report of a run (``trec --report``) does not take."""


def check_trec_report(flags: dict[str, Any]) -> None:
    """The trec_eval options that ``--report`` cannot honour: a one-line error before any
    work."""
    if flags.get("rel_format", "qrels") != "qrels":
        raise CliError("--report reads qrels (-R qrels): the ranking report needs graded judgments")
    unused = [f for f in REPORT_FLAGS if flags.get(f) is not None]
    if unused:
        raise CliError(f"--report works without --{unused[0].replace('_', '-')}")


def trec_report(args: argparse.Namespace, flags: dict[str, Any]) -> Any:
    """``polars-eval trec RUN QRELS --report FILE``: the ranking report of RUN joined to
    QRELS (a document not judged has relevance 0, a negative grade counts as 0, as
    trec_eval reads them; ``-J`` keeps the judged documents only; ``-l`` sets the lowest
    relevant grade)."""
    import polars_eval as pe

    check_trec_report(flags)
    run = pe.read_trec_run(args.run).select("query", "doc", "score")
    qrels = pe.read_trec_qrels(args.qrels).select("query", "doc", "relevance")
    how = "inner" if flags.get("judged_only") else "left"
    judged = run.join(qrels, on=["query", "doc"], how=how).with_columns(
        pl.col("relevance").fill_null(0).clip(lower_bound=0)
    )
    options = {"min_relevance": flags["min_relevance"]} if "min_relevance" in flags else {}
    return judged.collect().eval.report(
        "ranking", relevance="relevance", score="score", query="query", item="doc", **options
    )
