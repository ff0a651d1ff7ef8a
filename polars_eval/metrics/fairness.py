"""Group-fairness facts (SPEC §15): ``selection_rate`` and what the fairness tables read.

``selection_rate`` is a binary metric of the registry: the (weighted) share of rows
predicted positive. With ``label=`` its states are the confusion counts of the threshold
metrics (:func:`polars_eval.metrics.binary.confusion_states`), so in
``df.eval.fairness`` it shares one pass of weighted counts with the true and false
positive rates and the accuracy.

The names the fairness tables use are fairlearn's: ``true_positive_rate`` is our
``recall``, ``false_positive_rate`` our ``fpr`` (declared as ``aliases=`` where those
metrics are registered, in :mod:`polars_eval.metrics.binary`). This module says which
metrics a fairness table shows by default and which rates each fairness measure compares;
the engine that evaluates them is :mod:`polars_eval.fairness`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from polars_eval._core.registry import register
from polars_eval._core.spec import MetricSpec, State, nan_or
from polars_eval._exprs import F64, not_null, safe_div, to_float, weight_expr
from polars_eval._params import check_number
from polars_eval._typing import IntoExpr
from polars_eval.metrics.binary import confusion_states

__all__ = ["DEFAULT_METRICS", "MEASURES", "selection_rate"]

DEFAULT_METRICS = ("selection_rate", "true_positive_rate", "false_positive_rate", "accuracy")
"""The columns of ``df.eval.fairness`` without ``metrics=`` (fairlearn's names)."""

MEASURES: Mapping[str, tuple[str, ...]] = {
    "demographic_parity": ("selection_rate",),
    "equalized_odds": ("true_positive_rate", "false_positive_rate"),
    "equal_opportunity": ("true_positive_rate",),
}
"""The rates each fairness measure compares across groups (fairlearn 0.15's definitions):
``<measure>_difference`` and ``<measure>_ratio`` are the disparity of that rate;
equalized odds combines its two rates' disparities with ``agg=``."""


@register(
    task="binary",
    inputs={"score": "score", "label": "binary_label", "weight": "weight"},
    higher_is_better=None,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined="empty group",
)
def selection_rate(
    score: IntoExpr,
    threshold: float = 0.5,
    *,
    label: IntoExpr | None = None,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Selection rate: the weighted share of rows predicted positive.

    Σ w·[score ≥ threshold] / Σ w, as fairlearn's ``selection_rate`` (the mean of the
    hard predictions, which ignores the truth). Rows with a null score or weight are
    ignored; with ``label=`` rows with a null label are too, and the state is the
    confusion counts of the threshold metrics: (TP + FP) / (TP + FP + TN + FN), computed
    once with them in a task table or ``df.eval.fairness``. Null for an empty group; NaN
    if a score is NaN. Hard 0/1 predictions work as scores with the default threshold.

    Parameters
    ----------
    score
        Scores or probabilities (or hard 0/1 predictions).
    threshold
        Scores at or above it are selected (default 0.5).
    label
        Optional 0/1 truth: rows where it is null are left out (the fairness tables pass
        it, so that every rate of a group is over the same rows).
    weight
        Row weights (zero ignores a row).
    pos_label
        The value of ``label`` that marks the positive class.

    References
    ----------
    Fairlearn ``fairlearn.metrics.selection_rate``; Barocas, Hardt & Narayanan (2023),
    *Fairness and Machine Learning*, ch. 3 (demographic parity compares it across groups).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"g": ["a", "a", "b", "b", "b"], "p": [0.9, 0.3, 0.6, 0.7, 0.2]})
    >>> df.eval.selection_rate("p")
    0.6
    >>> df.group_by("g", maintain_order=True).agg(pe.selection_rate("p", 0.65))
    shape: (2, 2)
    ┌─────┬────────────────┐
    │ g   ┆ selection_rate │
    │ --- ┆ ---            │
    │ str ┆ f64            │
    ╞═════╪════════════════╡
    │ a   ┆ 0.5            │
    │ b   ┆ 0.333333       │
    └─────┴────────────────┘
    """
    if label is not None:
        states = confusion_states(
            label, score, pred=None, threshold=threshold, weight=weight, pos_label=pos_label
        )

        def from_counts(c: Mapping[str, pl.Expr]) -> pl.Expr:
            selected = c["tp"] + c["fp"]
            rate = safe_div(selected, selected + c["tn"] + c["fn"])
            return nan_or(c["nan"], rate.cast(F64))

        return MetricSpec(states, from_counts)
    check_number("threshold", threshold)
    raw, w = to_float(score), weight_expr(weight)
    valid = not_null(raw, w)

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        return nan_or(s["nan"], safe_div(s["selected"], s["w"]).cast(F64))

    return MetricSpec(
        {
            "selected": State(pl.when(valid).then(w * (raw >= threshold).cast(F64))),
            "w": State(pl.when(valid).then(w)),
            "nan": State(raw.is_nan() & valid, "max"),
        },
        finalize,
    )
