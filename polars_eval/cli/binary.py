"""``polars-eval binary``: the binary-classification table of a file (SPEC §3, §9)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import polars as pl

from polars_eval.cli import compare
from polars_eval.cli._base import repeated
from polars_eval.cli._common import (
    CliError,
    _add_baseline,
    _add_common,
    _coerce_pos_label,
    _say,
    _split,
    add_command,
    evaluate,
    output_format,
    reading,
    render_table,
    scan,
)
from polars_eval.fairness import disparity_long

EPILOG = """\
Every binary summary metric (AUC, Gini, PR-AUC, average precision, KS, logloss, Brier,
ECE, and the threshold metrics at --threshold) in one row per group.

examples:
  polars-eval binary scores.parquet --label defaulted --score pd_score
  polars-eval binary 'lake/**/*.parquet' --label y --score p --by segment
  polars-eval binary a.csv b.csv --label y --score p --weight w --format json -o out.json
  polars-eval binary scores.ndjson --label outcome --score p --pos-label churned
  polars-eval binary scores.parquet --label y --score margin --no-proba --metrics auc,ks
  polars-eval binary 'lake/**/*.parquet' --label y --score p --by segment --bins 1000
  polars-eval binary scores.parquet --label y --score old --compare new --metrics logloss,accuracy
  polars-eval binary scores.parquet --label y --score old --compare new --metrics auc --test bootstrap
  polars-eval binary scores.parquet --label y --score p --sensitive sex,age_band
  polars-eval binary scores.parquet --label y --score p --by region --time day --every 1d \
      --period 30d --report trend.html --reference train.parquet

--sensitive adds two tables (SPEC §15): the metrics of every group of those columns
(selection rate, true and false positive rates, accuracy; df.eval.fairness) and their
differences and ratios between groups (df.eval.disparity), with bootstrap intervals
under --ci bootstrap. They are printed after the metric table; with -o FILE they are
written beside it, to FILE's name + .fairness / .disparity.
"""


HELP = "binary classification: AUC, logloss, KS, threshold metrics ..."
DESCRIPTION = "Evaluate binary-classification scores."


def command(sub: Any) -> None:
    p = add_command(sub, "binary", HELP, DESCRIPTION, EPILOG)
    p.add_argument("--label", required=True, metavar="COL", help="column of 0/1 labels")
    p.add_argument(
        "--score", required=True, metavar="COL", help="column of scores or probabilities"
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        metavar="T",
        help="score >= threshold is predicted positive (default 0.5)",
    )
    p.add_argument(
        "--pos-label", metavar="VALUE", help="the positive class of a string/categorical label"
    )
    p.add_argument(
        "--no-proba",
        dest="probability",
        action="store_false",
        help="scores are not probabilities: leave out logloss, Brier and ECE",
    )
    p.add_argument(
        "--bins",
        type=int,
        metavar="N",
        help="binned mode (SPEC §10): the sort-based metrics over N score bins, memory "
        "bounded by the groups and bins (AUC within half the share of pairs sharing a bin); "
        "logloss, Brier and the threshold metrics stay exact",
    )
    repeated(
        p,
        "--sensitive",
        "COL[,COL]",
        "add the fairness and disparity tables of the groups of these columns",
    )
    _add_baseline(p)
    _add_common(p, "binary")
    compare.add_options(p, unit=True)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.bins is not None and (getattr(args, "ci", None) or getattr(args, "report", None)):
        raise CliError("--bins works without --ci and --report (they read the rows themselves)")

    def options(lf: pl.LazyFrame) -> dict[str, Any]:
        return {
            "weight": args.weight,
            "pos_label": _coerce_pos_label(lf, args.label, args.pos_label),
            "threshold": args.threshold,
            "probability": args.probability,
            "baseline": args.baseline,
            "bins": args.bins,
        }

    if args.compare:
        return compare.run_task(args, "binary", (args.label, args.score), 1, options, [args.weight])
    sensitive = _split(args.sensitive)
    if sensitive and args.bins is not None:
        raise CliError("--sensitive works without --bins (the fairness tables are exact)")
    fmt = output_format(args.format, args.output)
    if sensitive and fmt in ("json", "csv") and not args.output:
        raise CliError(f"--sensitive with --format {fmt} writes three tables: give -o FILE")
    status = evaluate(
        args,
        "binary",
        (args.label, args.score),
        options,
        [args.weight, sensitive],
        {"sensitive": sensitive} if sensitive else None,
    )
    if sensitive:
        fairness_tables(args, sensitive, fmt)
    return status


def fairness_tables(args: argparse.Namespace, sensitive: list[str], fmt: str) -> None:
    """The fairness and disparity tables of ``--sensitive`` (SPEC §15), printed or written."""
    by = _split(args.by)
    bootstrap = getattr(args, "ci", None) == "bootstrap"
    with reading(args.paths):
        lf = scan(args.paths, args.input_format, [args.label, args.score, args.weight, *by])
        kwargs: dict[str, Any] = {
            "sensitive": sensitive,
            "threshold": args.threshold,
            "weight": args.weight,
            "pos_label": _coerce_pos_label(lf, args.label, args.pos_label),
            "by": by or None,
            "validate": args.validate,
        }
        if bootstrap:
            kwargs |= {"ci": "bootstrap", "level": args.level}
            kwargs |= {"n_resamples": args.resamples, "seed": args.seed}
        data = lf.collect() if bootstrap else lf
        tables = {
            "fairness": data.eval.fairness(args.label, args.score, **kwargs),
            "disparity": data.eval.disparity(args.label, args.score, **kwargs),
        }
        tables = {k: v.collect() if isinstance(v, pl.LazyFrame) else v for k, v in tables.items()}
    if not args.output:
        titles = {
            "fairness": f"per group of {', '.join(sensitive)}",
            "disparity": "disparity between the groups (max − min, min / max)",
        }
        shown = {**tables, "disparity": disparity_long(tables["disparity"], by)}
        for name, table in shown.items():
            keys = [*by, *sensitive] if name == "fairness" else [*by, "metric"]
            sys.stdout.write("\n" + render_table(table, keys, title=titles[name]) + "\n")
        sys.stdout.flush()
        return
    out = Path(args.output)
    for name, table in tables.items():
        path = out.with_name(f"{out.stem}.{name}{out.suffix}")
        _write(table, path, fmt)
        _say(f"{name} table written to {path}")


def _write(table: pl.DataFrame, path: Path, fmt: str) -> None:
    from polars_eval.cli._common import _json_ready

    try:
        if fmt == "parquet":
            table.write_parquet(path)
        elif fmt == "json":
            path.write_text(_json_ready(table).write_json() + "\n", encoding="utf-8")
        elif fmt == "csv":
            path.write_text(table.write_csv(), encoding="utf-8")
        else:
            keys = [c for c in table.columns if not table.schema[c].is_numeric()]
            path.write_text(render_table(table, keys) + "\n", encoding="utf-8")
    except OSError as error:
        raise CliError(f"cannot write {str(path)!r}: {error.strerror or error}") from error
