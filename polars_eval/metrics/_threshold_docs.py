"""The help of the threshold metrics of :mod:`polars_eval.metrics.binary` (accuracy,
precision, ... made by one factory): each one's summary, formula, reference, direction,
bounds, undefined case and doctest example, as data the factory writes into its docstring
and registration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PARAMETERS = """label
        0/1 or boolean truth (any values with ``pos_label=``).
    score
        Scores or probabilities; give either ``score`` or ``pred``.
    pred
        Hard 0/1 predictions, instead of ``score``.
    threshold
        Scores at or above it are positive (default 0.5).
    weight
        Row weights (zero ignores a row).
    pos_label
        The value of ``label`` that marks the positive class."""
"""The numpy-style entries of the parameters every metric at a threshold takes (the
signature of :func:`polars_eval.accuracy`): ``{parameters}`` in a docstring."""

EXAMPLE = """Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({{"y": [1, 1, 0, 0, 1], "p": [0.9, 0.3, 0.6, 0.2, 0.5]}})
    >>> round(df.eval.{name}("y", "p"), 6)
    {value}"""
"""The doctest a binary metric's help opens with: the frame of :data:`EXAMPLES` and the
metric's value on it (``{examples}`` in a docstring; more lines may follow it)."""


def example(name: str, value: str) -> str:
    """The Examples section of :data:`EXAMPLE` for metric ``name`` whose value is ``value``."""
    return EXAMPLE.format(name=name, value=value)


def threshold_doc(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Fill ``{parameters}`` (:data:`PARAMETERS`) and ``{examples}`` (:func:`example` with
    the value of :data:`EXAMPLES`) in the docstring of a metric written by hand that takes
    the parameters of a threshold metric (and more)."""
    fn.__doc__ = (fn.__doc__ or "").format(
        parameters=PARAMETERS, examples=example(fn.__name__, EXAMPLES[fn.__name__][0])
    )
    return fn


THRESHOLD_DOC = """{summary}

    {formula} Weighted counts; a row is predicted positive when ``score >= threshold``
    (or ``pred == 1`` when hard predictions are given with ``pred=``). {undefined}

    Parameters
    ----------
    {parameters}

    References
    ----------
    {reference}

    {examples}
    >>> df.select(pe.{name}("y", "p", threshold=0.25).round(6)).item()
    {example_t}
    """

THRESHOLD_INFO: dict[str, tuple[str, str, str, bool, float, float | None, str]] = {
    # name: (summary, formula, reference, higher_is_better, lower, upper, undefined)
    "accuracy": (
        "Accuracy: the weighted share of correct predictions.",
        "(TP + TN) / (TP + FP + TN + FN).",
        "scikit-learn ``accuracy_score``.",
        True,
        0.0,
        1.0,
        "empty group",
    ),
    "balanced_accuracy": (
        "Balanced accuracy: the mean of recall and specificity.",
        "(TPR + TNR) / 2.",
        "Brodersen et al. (2010), The balanced accuracy and its posterior distribution. ICPR.",
        True,
        0.0,
        1.0,
        "needs both classes present",
    ),
    "precision": (
        "Precision (positive predictive value).",
        "TP / (TP + FP).",
        "scikit-learn ``precision_score``.",
        True,
        0.0,
        1.0,
        "no row predicted positive (0/0)",
    ),
    "recall": (
        "Recall (sensitivity, true positive rate).",
        "TP / (TP + FN).",
        "scikit-learn ``recall_score``.",
        True,
        0.0,
        1.0,
        "no positive row (0/0)",
    ),
    "specificity": (
        "Specificity (true negative rate).",
        "TN / (TN + FP).",
        "Fawcett (2006), An introduction to ROC analysis.",
        True,
        0.0,
        1.0,
        "no negative row (0/0)",
    ),
    "fpr": (
        "False positive rate (fall-out).",
        "FP / (FP + TN).",
        "Fawcett (2006), An introduction to ROC analysis.",
        False,
        0.0,
        1.0,
        "no negative row (0/0)",
    ),
    "fnr": (
        "False negative rate (miss rate).",
        "FN / (FN + TP).",
        "Fawcett (2006), An introduction to ROC analysis.",
        False,
        0.0,
        1.0,
        "no positive row (0/0)",
    ),
    "fdr": (
        "False discovery rate.",
        "FP / (FP + TP).",
        "Benjamini & Hochberg (1995).",
        False,
        0.0,
        1.0,
        "no row predicted positive (0/0)",
    ),
    "npv": (
        "Negative predictive value.",
        "TN / (TN + FN).",
        "Altman & Bland (1994), Diagnostic tests 2: predictive values. BMJ.",
        True,
        0.0,
        1.0,
        "no row predicted negative (0/0)",
    ),
    "f1": (
        "F1 score, the harmonic mean of precision and recall.",
        "2 TP / (2 TP + FP + FN).",
        "scikit-learn ``f1_score``; van Rijsbergen (1979), Information Retrieval.",
        True,
        0.0,
        1.0,
        "no positive row and no positive prediction (0/0)",
    ),
    "mcc": (
        "Matthews correlation coefficient.",
        "(TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)).",
        "Matthews (1975); Chicco & Jurman (2020). scikit-learn returns 0 where we return null.",
        True,
        -1.0,
        1.0,
        "a constant truth or prediction (a zero factor)",
    ),
    "cohen_kappa": (
        "Cohen's kappa between truth and prediction.",
        "(p_o − p_e) / (1 − p_e).",
        "Cohen (1960). scikit-learn ``cohen_kappa_score``.",
        True,
        -1.0,
        1.0,
        "chance agreement p_e = 1 (a constant truth and prediction)",
    ),
    "jaccard": (
        "Jaccard index (critical success index) of the positive class.",
        "TP / (TP + FP + FN).",
        "Jaccard, P. (1912), The distribution of the flora in the alpine zone. New Phytologist "
        "11(2). scikit-learn ``jaccard_score`` (which returns 0 with a warning where we return "
        "null).",
        True,
        0.0,
        1.0,
        "no positive row and no positive prediction (0/0)",
    ),
    "youden_j": (
        "Youden's J statistic (informedness): sensitivity + specificity − 1.",
        "TP / (TP + FN) + TN / (TN + FP) − 1, equal to scikit-learn's "
        "``balanced_accuracy_score(adjusted=True)``.",
        "Youden, W. J. (1950). Index for rating diagnostic tests. Cancer 3(1).",
        True,
        -1.0,
        1.0,
        "needs both classes present",
    ),
    "positive_likelihood_ratio": (
        "Positive likelihood ratio LR+: sensitivity / (1 − specificity).",
        "TPR / FPR = TP (TN + FP) / (FP (TP + FN)).",
        "Brenner, H. & Gefeller, O. (1997). Variation of sensitivity, specificity, likelihood "
        "ratios and predictive values with disease prevalence. Statistics in Medicine 16(9). "
        "scikit-learn ``class_likelihood_ratios`` (NaN with a warning where we return null).",
        True,
        0.0,
        None,
        "no positive row, or no false positive (division by 0)",
    ),
    "negative_likelihood_ratio": (
        "Negative likelihood ratio LR−: (1 − sensitivity) / specificity.",
        "FNR / TNR = FN (TN + FP) / (TN (TP + FN)).",
        "Brenner, H. & Gefeller, O. (1997). Variation of sensitivity, specificity, likelihood "
        "ratios and predictive values with disease prevalence. Statistics in Medicine 16(9). "
        "scikit-learn ``class_likelihood_ratios`` (NaN with a warning where we return null).",
        False,
        0.0,
        None,
        "no positive row, or no true negative (division by 0)",
    ),
}

EXAMPLES = {
    # the frame of EXAMPLE, y = [1, 1, 0, 0, 1], p = [0.9, 0.3, 0.6, 0.2, 0.5]; at 0.5: tp=2 fp=1 tn=1 fn=1; at 0.25: tp=3 fp=1 tn=1 fn=0
    "accuracy": ("0.6", "0.8"),
    "balanced_accuracy": ("0.583333", "0.75"),
    "precision": ("0.666667", "0.75"),
    "recall": ("0.666667", "1.0"),
    "specificity": ("0.5", "0.5"),
    "fpr": ("0.5", "0.5"),
    "fnr": ("0.333333", "0.0"),
    "fdr": ("0.333333", "0.25"),
    "npv": ("0.5", "1.0"),
    "f1": ("0.666667", "0.857143"),
    "mcc": ("0.166667", "0.612372"),
    "cohen_kappa": ("0.166667", "0.545455"),
    "jaccard": ("0.5", "0.75"),
    "youden_j": ("0.166667", "0.5"),
    "positive_likelihood_ratio": ("1.333333", "2.0"),
    "negative_likelihood_ratio": ("0.666667", "0.0"),
}
