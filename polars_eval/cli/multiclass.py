"""``polars-eval multiclass``: the multiclass table of a file (SPEC §4, §9)."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from polars_eval.cli._base import repeated
from polars_eval.cli._common import (
    CliError,
    _add_baseline,
    _add_common,
    _split,
    _typed_like,
    add_command,
    evaluate,
)

EPILOG = """\
Every multiclass summary metric (accuracy; precision, recall and F1 micro, macro and
weighted; MCC; Cohen's kappa; and with probabilities log loss, one-vs-rest AUC and
top-k accuracy) in one row per group.

Probabilities are one List/Array column, or one column per class in the order of
--classes.

--metrics also reaches the multiclass metrics outside the default table
(multiclass_balanced_accuracy, multiclass_jaccard, multiclass_brier,
multiclass_hinge_loss; the hinge loss reads --proba as decision scores), and a metric
with averages gives each one (multiclass_jaccard: _micro, _macro, _weighted).

examples:
  polars-eval multiclass preds.parquet --label grade --pred predicted_grade
  polars-eval multiclass preds.parquet --label grade --proba p_a,p_b,p_c --classes A,B,C
  polars-eval multiclass 'lake/*.parquet' --label y --proba probs --classes 0,1,2 --by region
  polars-eval multiclass preds.parquet --label grade --proba p_a,p_b,p_c --classes A,B,C \\
      --metrics multiclass_auc,multiclass_brier,multiclass_cohen_kappa \\
      --multi-class ovo --kappa-weights quadratic
"""


HELP = "multiclass: accuracy, macro/micro F1, log loss, AUC ..."
DESCRIPTION = "Evaluate multiclass predictions and/or probabilities."


def command(sub: Any) -> None:
    p = add_command(sub, "multiclass", HELP, DESCRIPTION, EPILOG)
    p.add_argument("--label", required=True, metavar="COL", help="column of true class ids")
    p.add_argument("--pred", metavar="COL", help="column of predicted class ids")
    repeated(
        p,
        "--proba",
        "COL[,COL]",
        "probabilities: one List/Array column, or one column per class (in --classes order)",
    )
    repeated(p, "--classes", "C[,C]", "the class ids, in probability order")
    p.add_argument("-k", type=int, help="k of top_k_accuracy (default 2)")
    p.add_argument(
        "--multi-class",
        choices=("ovr", "ovo"),
        help="the AUC: one-vs-rest (default) or one-vs-one (Hand & Till; macro and weighted)",
    )
    p.add_argument(
        "--kappa-weights",
        choices=("linear", "quadratic"),
        help="Cohen's kappa weighted by the distance between the positions of the classes "
        "in --classes (default: unweighted)",
    )
    p.add_argument(
        "--adjusted",
        action="store_true",
        default=None,
        help="multiclass_balanced_accuracy adjusted for chance (chance scores 0)",
    )
    _add_baseline(p)
    _add_common(p, "multiclass")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    proba_cols = _split(args.proba)
    if args.pred is None and not proba_cols:
        raise CliError("give --pred, --proba or both (see 'polars-eval multiclass --help')")
    proba: Any = None
    if proba_cols:
        proba = proba_cols[0] if len(proba_cols) == 1 else proba_cols

    def options(lf: pl.LazyFrame) -> dict[str, Any]:
        classes = _split(args.classes)
        return {
            "pred": args.pred,
            "proba": proba,
            "classes": _typed_like(lf, args.label, classes, "--classes") if classes else None,
            "weight": args.weight,
            "k": args.k,
            "multi_class": args.multi_class,
            "weights": args.kappa_weights,
            "adjusted": args.adjusted,
            "baseline": args.baseline,
        }

    extra = [args.pred, proba_cols, args.weight]
    return evaluate(args, "multiclass", (args.label,), options, extra)
