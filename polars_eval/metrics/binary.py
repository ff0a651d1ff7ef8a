"""Binary classification metrics (SPEC §3).

Labels are 0/1 (int, float or bool), or any values with ``pos_label=``. Scores are
probabilities or any real score; a row is predicted positive when ``score >= threshold``.
Every function returns one Polars aggregation expression aliased to the metric's name,
usable in ``select``, ``group_by().agg()`` and ``over()``.

Two kinds of state:

* threshold metrics sum weighted confusion counts (tp, fp, tn, fn) in one pass and
  finalize them with a formula: the counts merge across partitions by addition;
* threshold-free metrics, curves and tables finalize the sorted state of
  :mod:`polars_eval.metrics._curve` (one sort per group, shared by ``df.eval.binary``).

Undefined values (one class present, 0/0) are null, never 0 or NaN; NaN scores give NaN.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import polars as pl

from polars_eval._core.registry import register
from polars_eval._core.spec import MetricSpec, State, nan_or, weighted_mean
from polars_eval._exprs import (
    F64,
    NAN,
    binary_label,
    indicator,
    masked_weight,
    not_null,
    safe_div,
    to_expr,
    to_float,
    weight_expr,
)
from polars_eval._params import (
    check_beta,
    check_choice,
    check_fraction,
    check_number,
    check_positive_int,
)
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics import _sorted_keys as kernels
from polars_eval.metrics._curve import (
    Curve,
    prev,
    sorted_keys_batch,
    sorted_keys_metric,
    sorted_spec,
    thresholds,
)
from polars_eval.metrics._threshold_docs import (
    EXAMPLES,
    PARAMETERS,
    THRESHOLD_DOC,
    THRESHOLD_INFO,
    example,
    threshold_doc,
)

LOGLOSS_EPS = float(np.finfo(np.float64).eps)
"""Probabilities are clipped to [eps, 1 - eps] in :func:`logloss`; eps = 2.220446049250313e-16,
the machine epsilon of float64 (as scikit-learn's ``log_loss`` for float64 input)."""

ORDER_INPUTS = {"label": "binary_label", "score": "score", "weight": "weight"}
PROBA_INPUTS = {"label": "binary_label", "score": "proba", "weight": "weight"}
THRESHOLD_INPUTS = {
    "label": "binary_label",
    "score": "score",
    "pred": "binary_pred",
    "weight": "weight",
}
ONE_CLASS = "needs both classes present"


# ---------------------------------------------------------------------------------------
# Threshold-free metrics: finalize steps over the sorted state
# ---------------------------------------------------------------------------------------


def _auc(c: Curve) -> pl.Expr:
    tp, fp = c.tp, c.fp
    area = ((fp - prev(fp)) * (tp + prev(tp))).sum() / 2.0
    return c.guard(area / (c.P * c.N))


def _average_precision(c: Curve) -> pl.Expr:
    tp, fp = c.tp, c.fp
    return c.guard(((tp - prev(tp)) * tp / (tp + fp)).sum() / c.P)


def _pr_auc(c: Curve) -> pl.Expr:
    tp, fp = c.tp, c.fp
    precision = tp / (tp + fp)
    recall = tp / c.P
    return c.guard(((precision + prev(precision, 1.0)) / 2.0 * (recall - prev(recall))).sum())


def _ks(c: Curve) -> pl.Expr:
    return c.guard((c.tp / c.P - c.fp / c.N).abs().max())


def _accuracy_points(c: Curve) -> pl.Expr:
    return (c.tp + c.N - c.fp) / (c.P + c.N)


def _f_beta_points(c: Curve, beta: float) -> pl.Expr:
    b2 = beta * beta
    tp = c.tp
    return (1.0 + b2) * tp / ((1.0 + b2) * tp + b2 * (c.P - tp) + c.fp)


def _mcc_parts(c: Curve) -> tuple[pl.Expr, pl.Expr]:
    """The numerator and denominator of MCC at each point (MCC is defined where den > 0)."""
    tp, fp = c.tp, c.fp
    fn, tn = c.P - tp, c.N - fp
    den = ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)).sqrt()
    return tp * tn - fp * fn, den


def _mcc_points(c: Curve) -> pl.Expr:
    num, den = _mcc_parts(c)
    return pl.when(den > 0.0).then(num / den).otherwise(None)


def _max_mcc(c: Curve) -> pl.Expr:
    """With fn = P − tp and tn = N − fp, MCC's numerator tp·tn − fp·fn is P·N·(TPR − FPR)
    and its squared denominator P·N·q·(T − q), q = tp + fp the predicted positives, T =
    P + N: the maximum of (TPR − FPR) / √(q (T − q)) over the points where q (T − q) > 0,
    times √(P N). A third of the full-length passes of :func:`_mcc_parts` (1e6 points),
    and no sum of products (which Polars fuses, and then cannot find a ``struct.eval``
    field)."""
    q = c.tp + c.fp
    spread = q * (c.P + c.N - q)
    # a filter of the defined points: cheaper than a when/then, and than letting 0/0 = NaN
    # through to the max (Polars' max over floats holding a NaN takes a slower path)
    best = ((c.tp / c.P - c.fp / c.N) / spread.sqrt()).filter(spread > 0.0).max()
    return c.guard(best * (c.P * c.N).sqrt())


def _points(c: Curve, metric: str, beta: float) -> pl.Expr:
    if metric == "accuracy":
        return _accuracy_points(c)
    if metric == "mcc":
        return _mcc_points(c)
    return _f_beta_points(c, 1.0 if metric == "f1" else beta)


AUC_FINALIZE = {
    "auc": _auc,
    "gini": lambda c: 2.0 * _auc(c) - 1.0,
    "pr_auc": _pr_auc,
    "average_precision": _average_precision,
    "ks": _ks,
    "max_accuracy": lambda c: c.guard(_accuracy_points(c).max()),
    "max_f1": lambda c: c.guard(_f_beta_points(c, 1.0).max()),
    "max_mcc": _max_mcc,
}
"""Finalize steps of the sort-based summary metrics, by name (used by ``df.eval.binary``)."""


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=ONE_CLASS,
    intervals=("hanley",),
    auc_kernel=True,  # the bootstrap resamples it with its Mann–Whitney kernel
)
def auc(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    bins: int | None = None,
) -> MetricSpec:
    """Area under the ROC curve, by the trapezoid rule (no convex hull).

    AUC = Σ (FP_i − FP_{i−1})(TP_i + TP_{i−1}) / (2 P N) over the distinct thresholds in
    descending order, with weighted counts. A tied (positive, negative) pair counts ½,
    exactly the Mann–Whitney U statistic divided by P·N.

    Null when a class is absent (or the group is empty); NaN if a score is NaN.

    ``bins=N`` counts the scores in N equal bins of [0, 1] (probabilities) and treats the
    scores of a bin as tied: memory and time bounded by the bins, and the AUC off by at
    most half the weighted share of (positive, negative) pairs that share a bin (SPEC §10;
    :func:`polars_eval.metrics._curve.score_bin`). For a score on another scale, pass a
    monotone map of it into [0, 1], e.g. ``1 / (1 + (-pl.col("s")).exp())``.

    References
    ----------
    Fawcett, T. (2006). An introduction to ROC analysis. Pattern Recognition Letters 27(8).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"seg": ["a", "a", "a", "b", "b", "b"], "y": [0, 1, 1, 0, 1, 0],
    ...                    "p": [0.1, 0.8, 0.4, 0.5, 0.5, 0.2]})
    >>> round(df.eval.auc("y", "p"), 6)
    0.833333
    >>> df.group_by("seg", maintain_order=True).agg(pe.auc("y", "p"))
    shape: (2, 2)
    ┌─────┬──────┐
    │ seg ┆ auc  │
    │ --- ┆ ---  │
    │ str ┆ f64  │
    ╞═════╪══════╡
    │ a   ┆ 1.0  │
    │ b   ┆ 0.75 │
    └─────┴──────┘
    """
    return sorted_spec(
        thresholds(label, score, weight, pos_label, bins),
        _auc,
        alone=sorted_keys_metric(label, score, weight, pos_label, bins, kernels.auc),
        batch=sorted_keys_batch(label, score, weight, pos_label, bins, kernels.Auc),
    )


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    higher_is_better=True,
    lower=-1.0,
    upper=1.0,
    undefined=ONE_CLASS,
    auc_kernel=True,  # the bootstrap resamples it with its Mann–Whitney kernel
)
def gini(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    bins: int | None = None,
) -> MetricSpec:
    """Gini coefficient (Somers' D of the score), 2·AUC − 1.

    ``bins=N`` counts the scores in N equal bins of [0, 1] (probabilities) and treats the
    scores of a bin as tied: memory and time bounded by the bins, and the AUC off by at
    most half the weighted share of (positive, negative) pairs that share a bin (SPEC §10;
    :func:`polars_eval.metrics._curve.score_bin`). For a score on another scale, pass a
    monotone map of it into [0, 1], e.g. ``1 / (1 + (-pl.col("s")).exp())``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.5]}).select(pe.gini("y", "p")).item()
    0.5
    """
    auc_alone = sorted_keys_metric(label, score, weight, pos_label, bins, kernels.auc)
    return sorted_spec(
        thresholds(label, score, weight, pos_label, bins),
        AUC_FINALIZE["gini"],
        alone=None if auc_alone is None else (auc_alone - 0.5) / 0.5,
        batch=sorted_keys_batch(label, score, weight, pos_label, bins, kernels.Gini),
    )


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=ONE_CLASS,
    intervals=("logistic",),
)
def pr_auc(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    bins: int | None = None,
) -> MetricSpec:
    """Area under the precision–recall curve by the lower trapezoid rule (as YDF).

    Points are the distinct thresholds in descending order, preceded by the empty
    prediction (recall 0, precision 1); consecutive points are joined by straight lines:
    Σ (prec_{i−1} + prec_i)/2 · (rec_i − rec_{i−1}).

    ``bins=N`` counts the scores in N equal bins of [0, 1] (probabilities) and treats the
    scores of a bin as tied: memory and time bounded by the bins, and the AUC off by at
    most half the weighted share of (positive, negative) pairs that share a bin (SPEC §10;
    :func:`polars_eval.metrics._curve.score_bin`). For a score on another scale, pass a
    monotone map of it into [0, 1], e.g. ``1 / (1 + (-pl.col("s")).exp())``.

    References
    ----------
    Boyd, K., Eng, K. H., Page, C. D. (2013). Area under the precision-recall curve: point
    estimates and confidence intervals. ECML PKDD. YDF ``metric.cc`` (computePrAuc).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0, 1], "p": [0.1, 0.8, 0.4, 0.4, 0.9]})
    >>> round(df.eval.pr_auc("y", "p"), 6)
    0.958333
    """
    return sorted_spec(
        thresholds(label, score, weight, pos_label, bins),
        _pr_auc,
        alone=sorted_keys_metric(label, score, weight, pos_label, bins, kernels.pr_auc),
        batch=sorted_keys_batch(label, score, weight, pos_label, bins, kernels.PrAuc),
    )


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=ONE_CLASS,
)
def average_precision(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    bins: int | None = None,
) -> MetricSpec:
    """Average precision, the step-rule area under the PR curve (as scikit-learn).

    AP = Σ (R_i − R_{i−1}) P_i over the distinct thresholds in descending order.

    ``bins=N`` counts the scores in N equal bins of [0, 1] (probabilities) and treats the
    scores of a bin as tied: memory and time bounded by the bins, and the AUC off by at
    most half the weighted share of (positive, negative) pairs that share a bin (SPEC §10;
    :func:`polars_eval.metrics._curve.score_bin`). For a score on another scale, pass a
    monotone map of it into [0, 1], e.g. ``1 / (1 + (-pl.col("s")).exp())``.

    References
    ----------
    scikit-learn ``average_precision_score``; Manning, Raghavan, Schütze (2008),
    Introduction to Information Retrieval, §8.4.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 1, 1, 0, 1], "p": [0.1, 0.8, 0.4, 0.4, 0.9]})
    >>> round(df.eval.average_precision("y", "p"), 6)
    0.916667
    """
    return sorted_spec(
        thresholds(label, score, weight, pos_label, bins),
        _average_precision,
        alone=sorted_keys_metric(label, score, weight, pos_label, bins, kernels.average_precision),
        batch=sorted_keys_batch(label, score, weight, pos_label, bins, kernels.AveragePrecision),
    )


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=ONE_CLASS,
)
def ks(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    bins: int | None = None,
) -> MetricSpec:
    """Kolmogorov–Smirnov statistic: max over thresholds of |TPR − FPR|.

    ``bins=N`` counts the scores in N equal bins of [0, 1] (probabilities) and treats the
    scores of a bin as tied: memory and time bounded by the bins, and the AUC off by at
    most half the weighted share of (positive, negative) pairs that share a bin (SPEC §10;
    :func:`polars_eval.metrics._curve.score_bin`). For a score on another scale, pass a
    monotone map of it into [0, 1], e.g. ``1 / (1 + (-pl.col("s")).exp())``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.6, 0.4, 0.9]}).select(pe.ks("y", "p")).item()
    0.5
    """
    return sorted_spec(
        thresholds(label, score, weight, pos_label, bins),
        _ks,
        alone=sorted_keys_metric(label, score, weight, pos_label, bins, kernels.alone(kernels.Ks)),
        batch=sorted_keys_batch(label, score, weight, pos_label, bins, kernels.Ks),
    )


def _partial_auc(c: Curve, max_fpr: float, standardized: bool) -> pl.Expr:
    """The ROC area over FPR in [0, max_fpr]: the trapezoids of the points left of max_fpr
    and of the segment that crosses it, cut at max_fpr by linear interpolation.

    In counts: the k points with FP < C = max_fpr·N (FP grows along the curve: a binary
    search) add Σ (FP − FP₀)(TP + TP₀), the segment from point k−1 (or the origin) to point
    k (FP ≥ C) adds (C − FP_a)(TP_a + TP_cut), over 2·P·N. Only the first k + 1 points
    are read."""
    cut = max_fpr * c.N
    k = c.fp.search_sorted(cut, side="left").first()
    fp, tp = c.fp.head(k + 1), c.tp.head(k + 1)  # the last: the first point at or past C
    fp0, tp0 = prev(fp), prev(tp)
    full = ((fp - fp0) * (tp + tp0)).head(k).sum()
    fa, ta, fb, tb = fp0.last(), tp0.last(), fp.last(), tp.last()
    t_cut = ta + (tb - ta) * (cut - fa) / (fb - fa)  # fb > fa: fa < C <= fb
    # a horizontal sum: Polars fuses ``a + b * c``, and then cannot find a ``struct.eval``
    # field
    area = pl.sum_horizontal(full, (cut - fa) * (ta + t_cut)) / (2.0 * c.P * c.N)
    if standardized and max_fpr < 1.0:
        min_area = 0.5 * max_fpr * max_fpr
        area = 0.5 * (1.0 + (area - min_area) / (max_fpr - min_area))
    return c.guard(area)


def _partial_auc_keys(b: kernels.Blocks, max_fpr: float, standardized: bool) -> float | None:
    """:func:`_partial_auc` of unweighted rows from the tie blocks of their sorted keys
    (the bare expression, :func:`sorted_keys_metric`): the same trapezoids, in exact
    integer counts, from the blocks' cumulative positives and negatives, read chunk by
    chunk up to the first block at or past the cut C = max_fpr·N; the chunks after it
    are not computed. A plain loop, not an accumulator of ``kernels.together``: with
    1,000 groups, the objects of that pass cost more than a small group's sort."""
    b.count()  # N, for the cut, before the first chunk
    if not b.defined():
        return None
    cut = max_fpr * b.N
    full, last = 0, 0.0  # 2 x the area of the whole trapezoids (exact); the cut segment
    fp0 = tp0 = 0  # the point before the chunk (or the origin)
    for tp, rows, _, _ in b.chunks():
        fp = rows - tp
        k = int(np.searchsorted(fp, cut, side="left"))  # the points with FP < C
        if k:
            widths = np.diff(fp[:k], prepend=fp0)
            heights = tp[:k] + np.concatenate(([tp0], tp[: k - 1]))
            full += int(np.dot(widths, heights))
        if k < len(fp):
            fa, ta = (int(fp[k - 1]), int(tp[k - 1])) if k else (fp0, tp0)
            fb, tb = int(fp[k]), int(tp[k])
            t_cut = ta + (tb - ta) * (cut - fa) / (fb - fa)  # fb > fa: fa < C <= fb
            last = (cut - fa) * (ta + t_cut)
            break
        fp0, tp0 = int(fp[-1]), int(tp[-1])
    area = (float(full) + last) / (2.0 * b.P * b.N)
    if standardized and max_fpr < 1.0:
        min_area = 0.5 * max_fpr * max_fpr
        area = 0.5 * (1.0 + (area - min_area) / (max_fpr - min_area))
    return area


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined=ONE_CLASS,
)
def partial_auc(
    label: IntoExpr,
    score: IntoExpr,
    *,
    max_fpr: float,
    standardized: bool = True,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Partial area under the ROC curve up to a false positive rate, McClish-standardized.

    The area A under the ROC curve (trapezoids, as :func:`auc`) over FPR ∈ [0, m], m =
    ``max_fpr`` in (0, 1], the curve cut at m by linear interpolation between the two
    points around it. With ``standardized=True`` (the default, as scikit-learn's
    ``roc_auc_score(max_fpr=m)``) McClish's correction maps it to [0, 1] with 0.5 for a
    random score on that range: ½ (1 + (A − m²/2) / (m − m²/2)); ``standardized=False``
    gives A itself, in [0, m]. At m = 1 both are the AUC. Weighted counts, tied scores one
    threshold. Null when a class is absent; NaN if a score is NaN.

    References
    ----------
    McClish, D. K. (1989). Analyzing a portion of the ROC curve. Medical Decision Making
    9(3). scikit-learn ``roc_auc_score`` (``max_fpr``).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> round(df.eval.partial_auc("y", "p", max_fpr=0.5), 6)
    0.666667
    >>> df.select(pe.partial_auc("y", "p", max_fpr=0.5, standardized=False)).item()
    0.25
    """
    check_fraction("max_fpr", max_fpr, low_open=True)
    if not isinstance(standardized, bool):
        raise InvalidParameterError(f"standardized must be True or False; got {standardized!r}")
    m = float(max_fpr)

    def body(c: Curve) -> pl.Expr:
        return _partial_auc(c, m, standardized)

    # unweighted: one numpy sort of a key per row, as pe.auc (a third of the time of a
    # Polars sort of a key per row and its runs); weighted: the threshold state
    def kernel(b: kernels.Blocks) -> float | None:
        return _partial_auc_keys(b, m, standardized)

    return sorted_spec(
        thresholds(label, score, weight, pos_label),
        body,
        alone=sorted_keys_metric(label, score, weight, pos_label, None, kernel),
    )


# ---------------------------------------------------------------------------------------
# Probability metrics: one pass of weighted sums
# ---------------------------------------------------------------------------------------


@register(
    task="binary",
    inputs=PROBA_INPUTS,
    higher_is_better=False,
    lower=0.0,
    upper=None,
    undefined="empty group",
    exact_binned=True,  # a sum over rows, exact on binned scores
    summary={"binary": {"probability": True}},  # with probability=True only
)
def logloss(
    label: IntoExpr, score: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> MetricSpec:
    """Log loss (binary cross-entropy) of predicted probabilities, in nats.

    −Σ w (y ln p + (1 − y) ln(1 − p)) / Σ w, with p clipped to [eps, 1 − eps] and
    eps = 2.22e-16 (:data:`LOGLOSS_EPS`, float64 machine epsilon, as scikit-learn).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 0], "p": [0.5, 0.5]})
    >>> round(df.eval.logloss("y", "p"), 6)
    0.693147
    """
    y, p = binary_label(label, pos_label), to_float(score)
    w = masked_weight(y, p, weight=weight)
    pc = p.clip(LOGLOSS_EPS, 1.0 - LOGLOSS_EPS)
    # the probability of the row's own class, pc or 1 − pc, exactly (y is 0 or 1): one
    # logarithm per row, where y ln pc + (1 − y) ln(1 − pc) takes two (each ~12 ns a row
    # in Polars) for the same term
    own = (1.0 - y) + (2.0 * y - 1.0) * pc
    return weighted_mean(-own.log(), w, unweighted=weight is None)


@register(
    task="binary",
    inputs=PROBA_INPUTS,
    higher_is_better=False,
    lower=0.0,
    upper=1.0,
    undefined="empty group",
    exact_binned=True,  # a sum over rows, exact on binned scores
    summary={"binary": {"probability": True}},  # with probability=True only
)
def brier(
    label: IntoExpr, score: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> MetricSpec:
    """Brier score: the weighted mean of (p − y)².

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> pl.DataFrame({"y": [1, 0], "p": [0.8, 0.4]}).select(pe.brier("y", "p")).item()
    0.1
    """
    y, p = binary_label(label, pos_label), to_float(score)
    return weighted_mean(
        (p - y) ** 2, masked_weight(y, p, weight=weight), unweighted=weight is None
    )


# ---------------------------------------------------------------------------------------
# Threshold metrics: weighted confusion counts, then a formula
# ---------------------------------------------------------------------------------------


def _hard_prediction(
    label: IntoExpr,
    score: IntoExpr | None,
    pred: IntoExpr | None,
    threshold: float,
    pos_label: Any,
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """The 0/1 label, the raw score (or ``pred``) and the 0/1 prediction, as Float64."""
    if (score is None) == (pred is None):
        raise InvalidParameterError(
            "give exactly one of score= (with threshold=) or pred= (hard 0/1 predictions)"
        )
    check_number("threshold", threshold)
    y = binary_label(label, pos_label)
    raw = to_float(pred if pred is not None else score)  # type: ignore[arg-type]
    yhat = raw if pred is not None else indicator(raw >= threshold)  # 0 where raw is null
    return y, raw, yhat


def confusion_states(
    label: IntoExpr,
    score: IntoExpr | None,
    *,
    pred: IntoExpr | None,
    threshold: float,
    weight: IntoExpr | None,
    pos_label: Any,
) -> dict[str, State]:
    """The states of every threshold metric: the weighted confusion counts ``tp``, ``fp``,
    ``tn``, ``fn`` (summed) and ``nan`` (whether a used score/prediction is NaN).

    The prediction is ``pred`` (hard 0/1) if given, else ``score >= threshold``. ``NaN >= t``
    is true in Polars: the finalize step turns the metric into NaN rather than let NaN be
    positive.
    """
    y, raw, yhat = _hard_prediction(label, score, pred, threshold, pos_label)
    if weight is None:
        # counts of booleans (1.0 where true, summed): a third fewer passes than the
        # products of the 0/1 floats, the same sums
        valid = not_null(y, raw)
        positive = to_expr(label) == (1 if pos_label is None else pos_label)  # no cast
        predicted = raw == 1.0 if pred is not None else raw >= threshold

        def count(flags: pl.Expr) -> State:
            return State(indicator(valid & flags))

        return {
            "tp": count(positive & predicted),
            "fp": count(~positive & predicted),
            "tn": count(~positive & ~predicted),
            "fn": count(positive & ~predicted),
            "nan": State(raw.is_nan() & valid, "max"),
        }
    w = weight_expr(weight)
    valid = not_null(y, raw, w)

    def total(expr: pl.Expr) -> State:
        return State(pl.when(valid).then(w * expr))

    return {
        "tp": total(y * yhat),
        "fp": total((1.0 - y) * yhat),
        "tn": total((1.0 - y) * (1.0 - yhat)),
        "fn": total(y * (1.0 - yhat)),
        "nan": State(raw.is_nan() & valid, "max"),
    }


def counts_spec(states: dict[str, State], formula: Any, *, row_mean: bool = False) -> MetricSpec:
    """A threshold metric: ``formula`` over the confusion counts of :func:`confusion_states`
    (``row_mean``: the formula is a mean over rows, as accuracy)."""
    extra = {"row_mean": True} if row_mean else {}
    return MetricSpec(states, lambda c: nan_or(c["nan"], formula(c).cast(F64)), extra=extra)


def _precision(c: dict[str, pl.Expr]) -> pl.Expr:
    return safe_div(c["tp"], c["tp"] + c["fp"])


def _recall(c: dict[str, pl.Expr]) -> pl.Expr:
    return safe_div(c["tp"], c["tp"] + c["fn"])


def _specificity(c: dict[str, pl.Expr]) -> pl.Expr:
    return safe_div(c["tn"], c["tn"] + c["fp"])


def _f_beta(c: dict[str, pl.Expr], beta: float) -> pl.Expr:
    b2 = beta * beta
    return safe_div((1.0 + b2) * c["tp"], (1.0 + b2) * c["tp"] + b2 * c["fn"] + c["fp"])


def _mcc(c: dict[str, pl.Expr]) -> pl.Expr:
    tp, fp, tn, fn = c["tp"], c["fp"], c["tn"], c["fn"]
    den = ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)).sqrt()
    return safe_div(tp * tn - fp * fn, den)


def _kappa(c: dict[str, pl.Expr]) -> pl.Expr:
    tp, fp, tn, fn = c["tp"], c["fp"], c["tn"], c["fn"]
    total = tp + fp + tn + fn
    po = safe_div(tp + tn, total)
    pe_ = safe_div((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp), total * total)
    return safe_div(po - pe_, 1.0 - pe_)


THRESHOLD_FORMULAS: dict[str, Any] = {
    "accuracy": lambda c: safe_div(c["tp"] + c["tn"], c["tp"] + c["fp"] + c["tn"] + c["fn"]),
    "balanced_accuracy": lambda c: (_recall(c) + _specificity(c)) / 2.0,
    "precision": _precision,
    "recall": _recall,
    "specificity": _specificity,
    "fpr": lambda c: safe_div(c["fp"], c["fp"] + c["tn"]),
    "fnr": lambda c: safe_div(c["fn"], c["fn"] + c["tp"]),
    "fdr": lambda c: safe_div(c["fp"], c["fp"] + c["tp"]),
    "npv": lambda c: safe_div(c["tn"], c["tn"] + c["fn"]),
    "f1": lambda c: _f_beta(c, 1.0),
    "mcc": _mcc,
    "cohen_kappa": _kappa,
    "jaccard": lambda c: safe_div(c["tp"], c["tp"] + c["fp"] + c["fn"]),
    "youden_j": lambda c: _recall(c) + _specificity(c) - 1.0,
    "positive_likelihood_ratio": lambda c: safe_div(
        c["tp"] * (c["tn"] + c["fp"]), c["fp"] * (c["tp"] + c["fn"])
    ),
    "negative_likelihood_ratio": lambda c: safe_div(
        c["fn"] * (c["tn"] + c["fp"]), c["tn"] * (c["tp"] + c["fn"])
    ),
}
"""Finalize steps of the threshold metrics over the confusion counts, by name."""


def _from_counts(
    name: str,
    label: IntoExpr,
    score: IntoExpr | None,
    pred: IntoExpr | None,
    threshold: float,
    weight: IntoExpr | None,
    pos_label: Any,
) -> MetricSpec:
    states = confusion_states(
        label, score, pred=pred, threshold=threshold, weight=weight, pos_label=pos_label
    )
    spec = counts_spec(states, THRESHOLD_FORMULAS[name], row_mean=name == "accuracy")
    if weight is not None or name not in THRESHOLD_ALONE:
        return spec
    return replace(spec, alone=_threshold_alone(name, label, score, pred, threshold, pos_label))


# The unweighted threshold metrics whose counts ratio is the share of rows meeting a
# condition among the rows meeting another: the bare expression is Polars' mean of that
# boolean where the other holds (three or four column operations, about the plain
# expression's cost; the counts' states cost five sums of several operations each).
# (y, ŷ) -> (among which rows, the boolean whose mean is the metric)
THRESHOLD_ALONE: dict[str, Any] = {
    "accuracy": lambda y, p: (None, y == p),
    "precision": lambda y, p: (p, y),
    "recall": lambda y, p: (y, p),
    "specificity": lambda y, p: (~y, ~p),
    "fpr": lambda y, p: (~y, p),
    "fnr": lambda y, p: (y, ~p),
    "fdr": lambda y, p: (p, ~y),
    "npv": lambda y, p: (~p, ~y),
    "jaccard": lambda y, p: (y | p, y & p),
    "f1": lambda y, p: (y | p, y & p),  # F1 = 2J / (1 + J), J the Jaccard index
}


def _threshold_alone(
    name: str,
    label: IntoExpr,
    score: IntoExpr | None,
    pred: IntoExpr | None,
    threshold: float,
    pos_label: Any,
) -> pl.Expr:
    """The bare expression of an unweighted threshold metric of :data:`THRESHOLD_ALONE`:
    the label and the prediction as booleans (null where the input is), the rows with a
    null left out by the mean, NaN when a used score is NaN."""
    raw = to_float(pred if pred is not None else score)  # type: ignore[arg-type]
    p = raw == 1.0 if pred is not None else raw >= threshold
    labels = to_expr(label)
    y = labels == (1 if pos_label is None else pos_label)  # no cast: 3x cheaper
    among, value = THRESHOLD_ALONE[name](y, p)
    share = (value if among is None else pl.when(among).then(value)).mean()
    if name == "f1":
        share = 2.0 * share / (1.0 + share)
    return nan_or((raw.is_nan() & labels.is_not_null()).any(), share)


def _make_threshold_metric(name: str, *, in_summary: bool = True) -> Any:
    summary, formula, reference, hib, lo, hi, undefined = THRESHOLD_INFO[name]

    def metric(
        label: IntoExpr,
        score: IntoExpr | None = None,
        *,
        pred: IntoExpr | None = None,
        threshold: float = 0.5,
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> MetricSpec:
        return _from_counts(name, label, score, pred, threshold, weight, pos_label)

    metric.__name__ = metric.__qualname__ = name
    metric.__module__ = __name__
    value, example_t = EXAMPLES[name]
    metric.__doc__ = THRESHOLD_DOC.format(
        summary=summary,
        formula=formula,
        reference=reference,
        parameters=PARAMETERS,
        examples=example(name, value),
        name=name,
        example_t=example_t,
        undefined=f"Null when undefined: {undefined}.",
    )
    return register(
        task="binary",
        inputs=THRESHOLD_INPUTS,
        higher_is_better=hib,
        lower=lo,
        upper=hi,
        summary=in_summary,
        undefined=undefined,
        intervals=("wilson",) if name in PROPORTIONS else (),
        **({"proportion": PROPORTIONS[name]} if name in PROPORTIONS else {}),
        aliases=ALIASES.get(name, ()),
        exact_binned=True,  # confusion counts at a threshold: binned scores keep them exact
    )(metric)


PROPORTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # metric: (confusion counts in the numerator, confusion counts in the denominator)
    "accuracy": (("tp", "tn"), ("tp", "fp", "tn", "fn")),
    "precision": (("tp",), ("tp", "fp")),
    "recall": (("tp",), ("tp", "fn")),
    "specificity": (("tn",), ("tn", "fp")),
    "fpr": (("fp",), ("fp", "tn")),
    "fnr": (("fn",), ("fn", "tp")),
    "fdr": (("fp",), ("fp", "tp")),
    "npv": (("tn",), ("tn", "fn")),
}
"""The proportions, with a Wilson score interval (``ci="wilson"``, SPEC §8)."""

ALIASES = {
    "recall": ("true_positive_rate",),
    "fpr": ("false_positive_rate",),
    "specificity": ("true_negative_rate",),
    "fnr": ("false_negative_rate",),
}
"""Other names of a metric, fairlearn's (``metrics=`` of ``df.eval.fairness`` takes them;
:func:`polars_eval._core.registry.aliases`)."""

accuracy = _make_threshold_metric("accuracy")


@register(
    task="binary",
    inputs=THRESHOLD_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined=THRESHOLD_INFO["balanced_accuracy"][6],
    exact_binned=True,  # confusion counts at a threshold: binned scores keep them exact
)
@threshold_doc
def balanced_accuracy(
    label: IntoExpr,
    score: IntoExpr | None = None,
    *,
    pred: IntoExpr | None = None,
    threshold: float = 0.5,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    adjusted: bool = False,
) -> MetricSpec:
    """Balanced accuracy: the mean of recall and specificity.

    (TPR + TNR) / 2. Weighted counts; a row is predicted positive when
    ``score >= threshold`` (or ``pred == 1`` when hard predictions are given with
    ``pred=``). ``adjusted=True`` rescales it so that chance scores 0 and a perfect
    prediction 1, as scikit-learn's ``balanced_accuracy_score(adjusted=True)``:
    (BA − 1/2) / (1 − 1/2) = TPR + TNR − 1 (Youden's J, :func:`youden_j`), in [−1, 1]
    (the registered range [0, 1] is that of the default). Null when undefined: needs
    both classes present.

    Parameters
    ----------
    {parameters}
    adjusted
        Rescale for chance: 2 · BA − 1.

    References
    ----------
    Brodersen et al. (2010), The balanced accuracy and its posterior distribution. ICPR.
    scikit-learn ``balanced_accuracy_score``.

    {examples}
    >>> df.select(pe.balanced_accuracy("y", "p", threshold=0.25).round(6)).item()
    0.75
    >>> round(df.eval.balanced_accuracy("y", "p", adjusted=True), 6)
    0.166667
    """
    if not isinstance(adjusted, bool):
        raise InvalidParameterError(f"adjusted must be True or False; got {adjusted!r}")
    states = confusion_states(
        label, score, pred=pred, threshold=threshold, weight=weight, pos_label=pos_label
    )
    name = "youden_j" if adjusted else "balanced_accuracy"
    return counts_spec(states, THRESHOLD_FORMULAS[name])


precision = _make_threshold_metric("precision")
recall = _make_threshold_metric("recall")
specificity = _make_threshold_metric("specificity")
fpr = _make_threshold_metric("fpr")
fnr = _make_threshold_metric("fnr")
fdr = _make_threshold_metric("fdr")
npv = _make_threshold_metric("npv")
f1 = _make_threshold_metric("f1")
mcc = _make_threshold_metric("mcc")
cohen_kappa = _make_threshold_metric("cohen_kappa")
jaccard = _make_threshold_metric("jaccard", in_summary=False)
youden_j = _make_threshold_metric("youden_j", in_summary=False)
positive_likelihood_ratio = _make_threshold_metric("positive_likelihood_ratio", in_summary=False)
negative_likelihood_ratio = _make_threshold_metric("negative_likelihood_ratio", in_summary=False)


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    higher_is_better=False,
    lower=0.0,
    summary=False,
    undefined="empty group",
)
def hinge_loss(
    label: IntoExpr, score: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> MetricSpec:
    """Hinge loss of a decision score: the weighted mean of max(0, 1 − t · s), t = ±1.

    The label is mapped to t = +1 (positive) or −1 (negative) and ``score`` is a real
    decision value (e.g. an SVM margin), not a probability: Σ w max(0, 1 − t s) / Σ w.
    As scikit-learn's binary ``hinge_loss``, except on data with one class only, where
    scikit-learn maps that class to −1 whatever it is and we keep t = +1 for positives.
    Null on an empty group; NaN if a score is NaN.

    References
    ----------
    Crammer, K. & Singer, Y. (2001). On the algorithmic implementation of multiclass
    kernel-based vector machines. JMLR 2. scikit-learn ``hinge_loss``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 0, 1, 0], "margin": [2.0, -0.5, 0.5, 1.0]})
    >>> df.eval.hinge_loss("y", "margin")
    0.75
    """
    y, s = binary_label(label, pos_label), to_float(score)
    term = (1.0 - (2.0 * y - 1.0) * s).clip(lower_bound=0.0)
    return weighted_mean(term, masked_weight(y, s, weight=weight), unweighted=weight is None)


@register(
    task="binary",
    inputs=THRESHOLD_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined="no positive row and no positive prediction (0/0)",
)
def f_beta(
    label: IntoExpr,
    score: IntoExpr | None = None,
    *,
    beta: float,
    pred: IntoExpr | None = None,
    threshold: float = 0.5,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """F-beta score: (1 + β²) TP / ((1 + β²) TP + β² FN + FP).

    β > 1 weighs recall higher, β < 1 precision. Null for 0/0.

    References
    ----------
    van Rijsbergen (1979), Information Retrieval; scikit-learn ``fbeta_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1], "p": [0.9, 0.3, 0.6, 0.2, 0.5]})
    >>> round(df.eval.f_beta("y", "p", beta=2.0), 6)
    0.666667
    """
    check_beta(beta)
    states = confusion_states(
        label, score, pred=pred, threshold=threshold, weight=weight, pos_label=pos_label
    )
    b = float(beta)
    return counts_spec(states, lambda c: _f_beta(c, b))


@register(
    task="binary",
    inputs=THRESHOLD_INPUTS,
    kind="struct",
    summary=False,
    fields=("tp", "fp", "tn", "fn"),
    to_python=lambda counts: confusion_table(counts),
)
def confusion_matrix(
    label: IntoExpr,
    score: IntoExpr | None = None,
    *,
    pred: IntoExpr | None = None,
    threshold: float = 0.5,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Confusion counts as a struct ``{tp, fp, tn, fn}``.

    Unweighted, the counts are row counts (Int64, summed as integers: exact at any size);
    with ``weight=`` they are weighted counts (Float64). A NaN score among the used rows
    makes every count NaN when weighted, null when unweighted (an integer cannot be NaN).
    The namespace without ``by`` returns the 2×2 table, rows = truth, columns = prediction
    (as scikit-learn's ``confusion_matrix``); with ``by`` one row per group with the counts.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1], "p": [0.9, 0.3, 0.6, 0.2, 0.5],
    ...                    "w": [1.0, 0.5, 2.0, 1.0, 1.0]})
    >>> df.select(pe.confusion_matrix("y", "p")).item()
    {'tp': 2, 'fp': 1, 'tn': 1, 'fn': 1}
    >>> df.select(pe.confusion_matrix("y", "p", weight="w")).item()
    {'tp': 2.0, 'fp': 2.0, 'tn': 1.0, 'fn': 0.5}
    >>> df.eval.confusion_matrix("y", "p")
    shape: (2, 3)
    ┌───────┬─────────────┬─────────────┐
    │ truth ┆ predicted_0 ┆ predicted_1 │
    │ ---   ┆ ---         ┆ ---         │
    │ i64   ┆ i64         ┆ i64         │
    ╞═══════╪═════════════╪═════════════╡
    │ 0     ┆ 1           ┆ 1           │
    │ 1     ┆ 1           ┆ 2           │
    └───────┴─────────────┴─────────────┘
    """
    names = ("tp", "fp", "tn", "fn")
    if weight is None:
        states = _integer_counts(label, score, pred, threshold, pos_label)
        return MetricSpec(
            states,
            lambda c: pl.struct(
                **{
                    k: pl.when(c["nan"]).then(pl.lit(None, dtype=pl.Int64)).otherwise(c[k])
                    for k in names
                }
            ),
        )
    states = confusion_states(
        label, score, pred=pred, threshold=threshold, weight=weight, pos_label=pos_label
    )
    return MetricSpec(states, lambda c: pl.struct(**{k: nan_or(c["nan"], c[k]) for k in names}))


def _integer_counts(
    label: IntoExpr,
    score: IntoExpr | None,
    pred: IntoExpr | None,
    threshold: float,
    pos_label: Any,
) -> dict[str, State]:
    """Unweighted confusion counts as Int64 sums (cast per row, so a count never wraps),
    and whether a used score is NaN (the counts are then null)."""
    y, raw, yhat = _hard_prediction(label, score, pred, threshold, pos_label)
    valid = not_null(y, raw)
    cells = {
        "tp": (y == 1.0) & (yhat == 1.0),
        "fp": (y == 0.0) & (yhat == 1.0),
        "tn": (y == 0.0) & (yhat == 0.0),
        "fn": (y == 1.0) & (yhat == 0.0),
    }
    states = {k: State((valid & cell).fill_null(False).cast(pl.Int64)) for k, cell in cells.items()}
    return {**states, "nan": State(raw.is_nan() & valid, "max")}


def confusion_table(counts: dict[str, Any]) -> pl.DataFrame:
    """The 2×2 confusion table (rows = truth, columns = prediction) from a counts dict.

    Int64 cells for row counts, Float64 for weighted counts (as the counts dict holds).
    """
    weighted = any(isinstance(v, float) for v in counts.values())
    dtype = F64 if weighted else pl.Int64
    return pl.DataFrame(
        {
            "truth": [0, 1],
            "predicted_0": [counts["tn"], counts["fn"]],
            "predicted_1": [counts["fp"], counts["tp"]],
        },
        schema={"truth": pl.Int64, "predicted_0": dtype, "predicted_1": dtype},
    )


# ---------------------------------------------------------------------------------------
# Best over thresholds (as H2O Driverless AI)
# ---------------------------------------------------------------------------------------

MAX_KERNELS = {
    "max_accuracy": kernels.MaxAccuracy,
    "max_f1": kernels.MaxF1,
    "max_mcc": kernels.MaxMcc,
}
"""The accumulators of the maximum metrics over the sorted keys (:func:`sorted_keys_batch`)."""

_MAX_DOC = """Maximum {what} over all thresholds (every distinct score).

    A row is positive when ``score >= threshold``; the candidate thresholds are the distinct
    scores (as H2O). Null when a class is absent. See :func:`best_threshold` for the
    threshold that attains it.

    References
    ----------
    H2O Driverless AI, "Scorers": max accuracy, max F1, max MCC.

    {examples}
    """


def _make_max_metric(name: str, what: str, lo: float, value: str) -> Any:
    def metric(
        label: IntoExpr, score: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
    ) -> MetricSpec:
        part = MAX_KERNELS[name]
        alone = sorted_keys_metric(label, score, weight, pos_label, None, kernels.alone(part))
        batch = sorted_keys_batch(label, score, weight, pos_label, None, part)
        return sorted_spec(
            thresholds(label, score, weight, pos_label),
            AUC_FINALIZE[name],
            alone=alone,
            batch=batch,
        )

    metric.__name__ = metric.__qualname__ = name
    metric.__module__ = __name__
    metric.__doc__ = _MAX_DOC.format(what=what, examples=example(name, value))
    return register(
        task="binary",
        inputs=ORDER_INPUTS,
        higher_is_better=True,
        lower=lo,
        upper=1.0,
        undefined=ONE_CLASS,
    )(metric)


max_accuracy = _make_max_metric("max_accuracy", "accuracy", 0.0, "0.8")
max_f1 = _make_max_metric("max_f1", "F1 score", 0.0, "0.857143")
max_mcc = _make_max_metric("max_mcc", "Matthews correlation coefficient", -1.0, "0.612372")


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined=ONE_CLASS,
)
def max_f_beta(
    label: IntoExpr,
    score: IntoExpr,
    *,
    beta: float,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Maximum F-beta over all thresholds (every distinct score), as H2O.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1], "p": [0.9, 0.3, 0.6, 0.2, 0.5]})
    >>> round(df.eval.max_f_beta("y", "p", beta=2.0), 6)
    0.9375
    """
    check_beta(beta)
    b = float(beta)
    # unweighted, the bare expression: one pass over the sorted keys (kernels.MaxFBeta)
    kernel = kernels.alone(partial(kernels.MaxFBeta, beta=b))
    return sorted_spec(
        thresholds(label, score, weight, pos_label),
        lambda c: c.guard(_f_beta_points(c, b).max()),
        alone=sorted_keys_metric(label, score, weight, pos_label, None, kernel),
    )


BEST_METRICS = ("accuracy", "f1", "f_beta", "mcc")


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    kind="struct",
    summary=False,
    fields=("threshold", "value"),
    undefined=ONE_CLASS,
)
def best_threshold(
    label: IntoExpr,
    score: IntoExpr,
    *,
    metric: str = "f1",
    beta: float = 1.0,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """The threshold that maximises ``metric`` and its value, as a struct ``{threshold, value}``.

    ``metric`` is one of "accuracy", "f1", "f_beta" (with ``beta=``), "mcc". The candidates
    are the distinct scores; on a tie the highest threshold wins. Null fields when a class
    is absent.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1], "p": [0.9, 0.3, 0.6, 0.2, 0.5]})
    >>> df.select(pe.best_threshold("y", "p", metric="accuracy")).item()
    {'threshold': 0.3, 'value': 0.8}
    """
    check_choice("metric", metric, BEST_METRICS)
    check_beta(beta)
    b = float(beta)

    def body(c: Curve) -> pl.Expr:
        values = _points(c, metric, b)
        best = values.arg_max()
        return pl.struct(
            threshold=c.guard(c.threshold.gather(best).first()),
            value=c.guard(values.gather(best).first()),
        )

    return sorted_spec(thresholds(label, score, weight, pos_label), body, "struct")


# ---------------------------------------------------------------------------------------
# Conservative X@Y (as YDF): no interpolation, the first point meeting the constraint
# ---------------------------------------------------------------------------------------


def _xy_points(c: Curve) -> dict[str, pl.Expr]:
    """The curve points with the empty prediction (tp = fp = 0, precision 1) prepended."""
    zero = pl.lit(0.0, dtype=F64)
    tp = pl.concat([zero, c.tp])
    fp = pl.concat([zero, c.fp])

    def rate(count: pl.Expr, total: pl.Expr) -> pl.Expr:
        # by a column of the total, not the scalar: Polars divides a column by a scalar
        # as a product with its reciprocal (49 / 49 = 0.9999999999999999), and a rate of
        # 1 must meet a constraint of 1 (recall=1.0)
        return count / (count * 0.0 + total)

    return {
        "recall": rate(tp, c.P),
        "fpr": rate(fp, c.N),
        "precision": pl.when(tp + fp > 0.0).then(tp / (tp + fp)).otherwise(1.0),
        "volume": rate(tp + fp, c.P + c.N),
    }


def _xy(constraint: str, target: str, op: str, value: float, first: bool) -> Any:
    def body(c: Curve) -> pl.Expr:
        pts = _xy_points(c)
        ok = pts[constraint] >= value if op == ">=" else pts[constraint] <= value
        chosen = pts[target].filter(ok)
        return c.guard(chosen.first() if first else chosen.last())

    return body


_XY_DOC = """{summary}

    Conservative and without interpolation, as YDF: over the curve points (the distinct
    thresholds, plus the empty prediction with precision 1), scanned {scan}, the
    {target} of the first point whose {constraint} is {op} the given value. Null when no
    point qualifies or a class is absent.

    References
    ----------
    YDF ``metric.cc`` (ComputeXAtYMetrics); Eban et al. (2017), Scalable learning of
    non-decomposable objectives. AISTATS.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [0, 1, 1, 0, 1], "p": [0.1, 0.8, 0.4, 0.4, 0.9]}})
    >>> round(df.eval.{name}("y", "p", {arg}), 6)
    {example}
    """


def _make_xy(
    name: str,
    arg: str,
    target: str,
    op: str,
    first: bool,
    hib: bool,
    summary: str,
    example: tuple[float, str],
) -> Any:
    def metric(
        label: IntoExpr,
        score: IntoExpr,
        value: float,
        *,
        weight: IntoExpr | None = None,
        pos_label: Any = None,
    ) -> MetricSpec:
        check_fraction(arg, value)
        body = _xy(arg, target, op, float(value), first)
        # alone, unweighted: one pass over the sorted keys' chunks (no threshold state)
        xy = partial(
            kernels.Xy, constraint=arg, target=target, op=op, value=float(value), first=first
        )
        alone = sorted_keys_metric(label, score, weight, pos_label, None, kernels.alone(xy))
        return sorted_spec(thresholds(label, score, weight, pos_label), body, alone=alone)

    # rename the constraint parameter (recall=, precision=, volume=, fpr=) for the signature
    import inspect

    sig = inspect.signature(metric)
    params = [p.replace(name=arg) if p.name == "value" else p for p in sig.parameters.values()]

    def wrapper(label: IntoExpr, score: IntoExpr, *args: Any, **kwargs: Any) -> MetricSpec:
        bound = wrapper.__signature__.bind(label, score, *args, **kwargs)  # type: ignore[attr-defined]
        bound.apply_defaults()
        a = dict(bound.arguments)
        return metric(a["label"], a["score"], a[arg], weight=a["weight"], pos_label=a["pos_label"])

    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__module__ = __name__
    scan = "from the highest threshold down" if first else "from the lowest threshold up"
    wrapper.__doc__ = _XY_DOC.format(
        summary=summary,
        scan=scan,
        target=target,
        constraint=arg,
        op="≥" if op == ">=" else "≤",
        name=name,
        arg=f"{arg}={example[0]}",
        example=example[1],
    )
    return register(
        task="binary",
        inputs=ORDER_INPUTS,
        higher_is_better=hib,
        lower=0.0,
        upper=1.0,
        summary=False,
        undefined=ONE_CLASS,
    )(wrapper)


precision_at_recall = _make_xy(
    "precision_at_recall",
    "recall",
    "precision",
    ">=",
    True,
    True,
    "Precision at the highest threshold reaching a recall.",
    (0.7, "0.75"),
)
precision_at_volume = _make_xy(
    "precision_at_volume",
    "volume",
    "precision",
    ">=",
    True,
    True,
    "Precision at the highest threshold flagging a share of the (weighted) rows.",
    (0.5, "0.75"),
)
recall_at_precision = _make_xy(
    "recall_at_precision",
    "precision",
    "recall",
    ">=",
    False,
    True,
    "Recall at the lowest threshold keeping a precision.",
    (0.8, "0.666667"),
)
recall_at_fpr = _make_xy(
    "recall_at_fpr",
    "fpr",
    "recall",
    "<=",
    False,
    True,
    "Recall at the lowest threshold keeping the false positive rate at most a value.",
    (0.5, "1.0"),
)
fpr_at_recall = _make_xy(
    "fpr_at_recall",
    "recall",
    "fpr",
    ">=",
    True,
    False,
    "False positive rate at the highest threshold reaching a recall.",
    (0.7, "0.5"),
)


# ---------------------------------------------------------------------------------------
# Curves and tables: List[Struct] per group (the namespace returns long DataFrames)
# ---------------------------------------------------------------------------------------


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    kind="curve",
    summary=False,
    fields=("threshold", "fpr", "tpr"),
)
def roc_curve(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    bins: int | None = None,
) -> MetricSpec:
    """ROC curve: one point per distinct threshold, descending, after the point (inf, 0, 0).

    Fields ``threshold``, ``fpr``, ``tpr`` (weighted). Unlike scikit-learn's default no
    collinear point is dropped (``drop_intermediate=False``). Rates are null when a class is
    absent.

    ``bins=N`` counts the scores in N equal bins of [0, 1] (probabilities) and treats the
    scores of a bin as tied: memory and time bounded by the bins, and the AUC off by at
    most half the weighted share of (positive, negative) pairs that share a bin (SPEC §10;
    :func:`polars_eval.metrics._curve.score_bin`). For a score on another scale, pass a
    monotone map of it into [0, 1], e.g. ``1 / (1 + (-pl.col("s")).exp())``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> df.eval.roc_curve("y", "p")
    shape: (5, 3)
    ┌───────────┬─────┬─────┐
    │ threshold ┆ fpr ┆ tpr │
    │ ---       ┆ --- ┆ --- │
    │ f64       ┆ f64 ┆ f64 │
    ╞═══════════╪═════╪═════╡
    │ inf       ┆ 0.0 ┆ 0.0 │
    │ 0.8       ┆ 0.0 ┆ 0.5 │
    │ 0.4       ┆ 0.5 ┆ 0.5 │
    │ 0.35      ┆ 0.5 ┆ 1.0 │
    │ 0.1       ┆ 1.0 ┆ 1.0 │
    └───────────┴─────┴─────┘
    """

    def body(c: Curve) -> pl.Expr:
        zero = pl.lit(0.0, dtype=F64)
        return c.nan_struct(
            threshold=pl.concat([pl.lit(float("inf"), dtype=F64), c.threshold]),
            fpr=safe_div(pl.concat([zero, c.fp]), c.N),
            tpr=safe_div(pl.concat([zero, c.tp]), c.P),
        )

    return sorted_spec(
        thresholds(label, score, weight, pos_label, bins),
        body,
        "list",
        alone=sorted_keys_metric(label, score, weight, pos_label, bins, None),
    )


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    kind="curve",
    summary=False,
    fields=("threshold", "fpr", "fnr"),
)
def det_curve(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Detection error tradeoff (DET) curve: false positive and false negative rates.

    The points of :func:`roc_curve` (the point (inf, 0, 0), then one per distinct
    threshold, descending) with FNR = 1 − TPR, kept as scikit-learn's ``det_curve`` keeps
    them: from the last point without a false positive to the first point without a
    false negative. Fields ``threshold``, ``fpr``, ``fnr`` (weighted), in descending
    threshold order (scikit-learn gives the same points in ascending order). Rates are null
    when a class is absent (scikit-learn raises).

    References
    ----------
    Martin, A., Doddington, G., Kamm, T., Ordowski, M. & Przybocki, M. (1997). The DET curve
    in assessment of detection task performance. Eurospeech. scikit-learn ``det_curve``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> df.eval.det_curve("y", "p")
    shape: (3, 3)
    ┌───────────┬─────┬─────┐
    │ threshold ┆ fpr ┆ fnr │
    │ ---       ┆ --- ┆ --- │
    │ f64       ┆ f64 ┆ f64 │
    ╞═══════════╪═════╪═════╡
    │ 0.8       ┆ 0.0 ┆ 0.5 │
    │ 0.4       ┆ 0.5 ┆ 0.5 │
    │ 0.35      ┆ 0.5 ┆ 0.0 │
    └───────────┴─────┴─────┘
    """

    def body(c: Curve) -> pl.Expr:
        zero = pl.lit(0.0, dtype=F64)
        tp, fp = pl.concat([zero, c.tp]), pl.concat([zero, c.fp])
        # fp and tp never decrease: keep from the last point with fp = 0 (its successor has
        # fp > 0) to the first with tp = P (its predecessor has tp < P)
        keep = (fp.shift(-1).fill_null(float("inf")) > 0.0) & (
            tp.shift(1).fill_null(float("-inf")) < c.P
        )
        return c.nan_struct(
            threshold=pl.concat([pl.lit(float("inf"), dtype=F64), c.threshold]).filter(keep),
            fpr=safe_div(fp, c.N).filter(keep),
            fnr=safe_div(c.P - tp, c.P).filter(keep),
        )

    return sorted_spec(thresholds(label, score, weight, pos_label), body, "list")


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    kind="curve",
    summary=False,
    fields=("threshold", "precision", "recall"),
)
def pr_curve(
    label: IntoExpr,
    score: IntoExpr,
    *,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
    bins: int | None = None,
) -> MetricSpec:
    """Precision–recall curve: one point per distinct threshold, in descending order.

    Fields ``threshold``, ``precision``, ``recall``. scikit-learn's ``precision_recall_curve``
    gives the same points in ascending order plus a final (precision 1, recall 0) point
    without a threshold. Recall is null without positives.

    ``bins=N`` counts the scores in N equal bins of [0, 1] (probabilities) and treats the
    scores of a bin as tied: memory and time bounded by the bins, and the AUC off by at
    most half the weighted share of (positive, negative) pairs that share a bin (SPEC §10;
    :func:`polars_eval.metrics._curve.score_bin`). For a score on another scale, pass a
    monotone map of it into [0, 1], e.g. ``1 / (1 + (-pl.col("s")).exp())``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> df.eval.pr_curve("y", "p")
    shape: (4, 3)
    ┌───────────┬───────────┬────────┐
    │ threshold ┆ precision ┆ recall │
    │ ---       ┆ ---       ┆ ---    │
    │ f64       ┆ f64       ┆ f64    │
    ╞═══════════╪═══════════╪════════╡
    │ 0.8       ┆ 1.0       ┆ 0.5    │
    │ 0.4       ┆ 0.5       ┆ 0.5    │
    │ 0.35      ┆ 0.666667  ┆ 1.0    │
    │ 0.1       ┆ 0.5       ┆ 1.0    │
    └───────────┴───────────┴────────┘
    """

    def body(c: Curve) -> pl.Expr:
        tp, fp = c.tp, c.fp
        return c.nan_struct(
            threshold=c.threshold, precision=tp / (tp + fp), recall=safe_div(tp, c.P)
        )

    return sorted_spec(thresholds(label, score, weight, pos_label, bins), body, "list")


TABLE_FIELDS = (
    "threshold",
    "tp",
    "fp",
    "tn",
    "fn",
    "tpr",
    "fpr",
    "precision",
    "recall",
    "specificity",
    "f1",
    "accuracy",
    "mcc",
)


@register(task="binary", inputs=ORDER_INPUTS, kind="curve", summary=False, fields=TABLE_FIELDS)
def threshold_table(
    label: IntoExpr,
    score: IntoExpr,
    *,
    n_thresholds: int | None = None,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Confusion counts and derived rates at every distinct threshold, descending.

    With ``n_thresholds=q`` only q thresholds are kept: for j = 1..q the highest threshold
    whose (weighted) share of rows predicted positive reaches j/q — the score quantiles,
    never splitting tied scores. Fields: threshold, tp, fp, tn, fn, tpr, fpr, precision,
    recall, specificity, f1, accuracy, mcc (rates null where 0/0).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> df.eval.threshold_table("y", "p").select("threshold", "tp", "fp", "tn", "fn", "f1")
    shape: (4, 6)
    ┌───────────┬─────┬─────┬─────┬─────┬──────────┐
    │ threshold ┆ tp  ┆ fp  ┆ tn  ┆ fn  ┆ f1       │
    │ ---       ┆ --- ┆ --- ┆ --- ┆ --- ┆ ---      │
    │ f64       ┆ f64 ┆ f64 ┆ f64 ┆ f64 ┆ f64      │
    ╞═══════════╪═════╪═════╪═════╪═════╪══════════╡
    │ 0.8       ┆ 1.0 ┆ 0.0 ┆ 2.0 ┆ 1.0 ┆ 0.666667 │
    │ 0.4       ┆ 1.0 ┆ 1.0 ┆ 1.0 ┆ 1.0 ┆ 0.5      │
    │ 0.35      ┆ 2.0 ┆ 1.0 ┆ 1.0 ┆ 0.0 ┆ 0.8      │
    │ 0.1       ┆ 2.0 ┆ 2.0 ┆ 0.0 ┆ 0.0 ┆ 0.666667 │
    └───────────┴─────┴─────┴─────┴─────┴──────────┘
    """
    check_positive_int("n_thresholds", n_thresholds, allow_none=True)
    state = thresholds(label, score, weight, pos_label)
    if n_thresholds is None:
        return sorted_spec(state, _threshold_rows, "list")
    # The q thresholds are chosen first, over the curve's volume alone; the table is then
    # computed over those q points only (the whole table of a long curve is 13 columns
    # as long as the state, built to be thrown away).
    q = n_thresholds

    def chosen(points: pl.Expr) -> pl.Expr:
        c = Curve(points)
        volume = (c.tp + c.fp) / (c.P + c.N)
        targets = pl.Series([j / q for j in range(1, q + 1)])
        # a tiny tolerance so that j/q computed in floating point still reaches the last row
        index = volume.search_sorted(pl.lit(targets) - 1e-12, side="left").unique(
            maintain_order=True
        )
        # an index equal to the length (targets past the last point, or an empty group) is
        # dropped; the chosen points carry their curve's totals and NaN flag
        return pl.struct(
            point=points.gather(index.filter(index < c.tp.len())), P=c.P, N=c.N, nan=c.has_nan
        )

    rows = _threshold_rows(_ChosenPoints()).unique(maintain_order=True)
    return MetricSpec(
        {"c": state},
        lambda s: s["c"].list.eval(chosen(pl.element())).list.eval(rows),
        one_group=lambda s: chosen(s["c"]).implode().list.eval(rows),
    )


def _threshold_rows(c: Curve) -> pl.Expr:
    """The rows of :func:`threshold_table`, one per point of ``c``."""
    tp, fp = c.tp, c.fp
    fn, tn = c.P - tp, c.N - fp
    counts = {"tp": tp, "fp": fp, "tn": tn, "fn": fn}
    return c.nan_struct(
        threshold=c.threshold,
        tp=tp,
        fp=fp,
        tn=tn,
        fn=fn,
        tpr=safe_div(tp, c.P),
        fpr=safe_div(fp, c.N),
        precision=_precision(counts),
        recall=_recall(counts),
        specificity=_specificity(counts),
        f1=_f_beta(counts, 1.0),
        accuracy=safe_div(tp + tn, c.P + c.N),
        mcc=_mcc(counts),
    )


class _ChosenPoints(Curve):
    """A :class:`Curve` over some points of a curve, each a struct ``{point, P, N, nan}``
    that carries its curve's totals and NaN flag (the ``chosen`` stage of
    :func:`threshold_table`)."""

    def __init__(self) -> None:
        e = pl.element()
        super().__init__(e.struct.field("point"))
        self.P = e.struct.field("P")
        self.N = e.struct.field("N")
        self._nan = e.struct.field("nan").any()

    @property
    def has_nan(self) -> pl.Expr:
        return self._nan


@register(
    task="binary",
    inputs=ORDER_INPUTS,
    kind="curve",
    summary=False,
    fields=("threshold", "population", "positives"),
)
def lorenz_curve(
    label: IntoExpr, score: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> MetricSpec:
    """Lorenz (cumulative accuracy profile) curve: share of positives captured vs share of rows.

    Rows sorted by score, descending; one point per distinct threshold after (0, 0):
    ``population`` = weighted share of rows with score ≥ threshold, ``positives`` = share of
    all positives among them. The area between it and the diagonal is the accuracy ratio.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.4, 0.35, 0.8]})
    >>> df.eval.lorenz_curve("y", "p")["positives"].to_list()
    [0.0, 0.5, 0.5, 1.0, 1.0]
    """

    def body(c: Curve) -> pl.Expr:
        zero = pl.lit(0.0, dtype=F64)
        return c.nan_struct(
            threshold=pl.concat([pl.lit(float("inf"), dtype=F64), c.threshold]),
            population=pl.concat([zero, (c.tp + c.fp) / (c.P + c.N)]),
            positives=safe_div(pl.concat([zero, c.tp]), c.P),
        )

    return sorted_spec(thresholds(label, score, weight, pos_label), body, "list")


GAIN_FIELDS = (
    "bin",
    "min_score",
    "count",
    "positives",
    "negatives",
    "positive_rate",
    "pct_positives",
    "cum_pct_positives",
    "cum_pct_population",
    "lift",
    "cum_lift",
    "ks",
)


@register(task="binary", inputs=ORDER_INPUTS, kind="curve", summary=False, fields=GAIN_FIELDS)
def gain_table(
    label: IntoExpr,
    score: IntoExpr,
    *,
    bins: int = 10,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Gain / lift table by score quantile (deciles by default), highest scores first.

    Rows sorted by score descending are cut into ``bins`` groups of equal weighted size;
    a block of tied scores is never split (it goes to the bin where it starts), so bins can
    be uneven or missing on heavily tied scores. Per bin: count, positives, negatives,
    positive_rate, pct_positives (share of all positives), cum_pct_positives,
    cum_pct_population, lift (bin positive rate / overall rate), cum_lift and
    ks = cum_pct_positives − cum_pct_negatives. All shares are fractions.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [1, 1, 0, 1, 0, 0], "p": [0.9, 0.8, 0.7, 0.4, 0.3, 0.1]})
    >>> df.eval.gain_table("y", "p", bins=3).select("bin", "count", "positives", "lift", "cum_lift")
    shape: (3, 5)
    ┌─────┬───────┬───────────┬──────┬──────────┐
    │ bin ┆ count ┆ positives ┆ lift ┆ cum_lift │
    │ --- ┆ ---   ┆ ---       ┆ ---  ┆ ---      │
    │ i64 ┆ f64   ┆ f64       ┆ f64  ┆ f64      │
    ╞═════╪═══════╪═══════════╪══════╪══════════╡
    │ 1   ┆ 2.0   ┆ 2.0       ┆ 2.0  ┆ 2.0      │
    │ 2   ┆ 2.0   ┆ 1.0       ┆ 1.0  ┆ 1.5      │
    │ 3   ┆ 2.0   ┆ 0.0       ┆ 0.0  ┆ 1.0      │
    └─────┴───────┴───────────┴──────┴──────────┘
    """
    check_positive_int("bins", bins)

    # Two stages: (1) the last threshold of each bin, with the NaN flag; (2) the bin table.
    def ends(points: pl.Expr) -> pl.Expr:
        c = Curve(points)
        before = prev(c.tp + c.fp)  # weight of the rows above the tie block
        # a point's bin is floor(scaled) (clipped to the bins), and scaled grows along the
        # points (descending scores): bin b ends before the first point with scaled >= b + 1,
        # found by a binary search for each bin instead of a bin computed for every point
        scaled = before / (c.P + c.N) * bins
        steps = pl.lit(pl.Series(range(1, bins), dtype=F64))
        below = scaled.search_sorted(steps, side="left").cast(pl.Int64)
        start = pl.concat([pl.lit(0, dtype=pl.Int64), below])
        end = pl.concat([below, c.tp.len().cast(pl.Int64)])
        nonempty = start < end
        return pl.struct(
            bin=pl.int_range(bins, dtype=pl.Int64).filter(nonempty),
            point=points.gather((end - 1).filter(nonempty)),
            nan=c.has_nan,
        )

    e = pl.element()
    point = e.struct.field("point")
    cum_pos, cum_neg = point.struct.field("tp"), point.struct.field("fp")
    n_pos, n_neg = cum_pos.last(), cum_neg.last()
    pos = cum_pos - prev(cum_pos)
    neg = cum_neg - prev(cum_neg)
    count = pos + neg
    cum_count = cum_pos + cum_neg
    rate = n_pos / (n_pos + n_neg)
    fields = {
        "min_score": point.struct.field("t"),
        "count": count,
        "positives": pos,
        "negatives": neg,
        "positive_rate": pos / count,
        "pct_positives": safe_div(pos, n_pos),
        "cum_pct_positives": safe_div(cum_pos, n_pos),
        "cum_pct_population": cum_count / (n_pos + n_neg),
        "lift": safe_div(pos / count, rate),
        "cum_lift": safe_div(cum_pos / cum_count, rate),
        "ks": safe_div(cum_pos, n_pos) - safe_div(cum_neg, n_neg),
    }
    has_nan = e.struct.field("nan").any()
    table = pl.struct(
        bin=e.struct.field("bin") + 1,
        **{
            k: pl.when(has_nan).then(pl.lit(NAN, dtype=F64)).otherwise(v) for k, v in fields.items()
        },
    )
    state = thresholds(label, score, weight, pos_label)
    return MetricSpec(
        {"c": state},
        lambda s: s["c"].list.eval(ends(pl.element())).list.eval(table),
        one_group=lambda s: ends(s["c"]).implode().list.eval(table),
    )
