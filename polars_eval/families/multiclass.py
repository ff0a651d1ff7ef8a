"""Multiclass classification metrics (SPEC §4).

The task is never inferred from the data: every function carries the ``multiclass_``
prefix (``top_k_accuracy`` is multiclass by nature). Inputs:

* ``label``: a column of class ids (int, str or categorical);
* ``pred``: a column of predicted class ids, and/or
* ``proba``: predicted probabilities, either one ``List``/``Array`` column (one entry per
  class, in the order of ``classes=``) or a list of columns (one per class, in the order
  of ``classes=``).

When ``classes=`` is required (a lazy expression cannot look at the data to learn the
classes, so it must be told whenever the classes shape the *output* or the *inputs*):

* always with ``proba=`` (it names the class of each probability; a prediction derived
  from ``proba`` is its argmax, the first class of ``classes`` among ties);
* with ``average=None`` (per class): the fields of the result struct are the classes;
* nowhere else. The averaged precision / recall / F, accuracy, MCC, kappa and the
  confusion matrix learn the classes from the data of each group (one sort of the label
  and prediction columns); with ``classes=`` they instead use one pass per class, which is
  faster for a few classes.

With ``classes=``, a bare expression ignores the rows whose label (or prediction) is not
in ``classes``; the namespace layer raises an error naming the column and the classes.

State + finalize: the prediction metrics reduce to one *class state* per group, a list of
``{class, support, predicted, correct}`` weighted counts (a class present in the truth or
in the predictions has one entry; counts merge across partitions by addition), and each
metric is a formula over that list. Probability metrics are weighted means (log loss,
top-k accuracy) or sorts per class (one-vs-rest AUC: two sorts of a UInt64 key per class,
unweighted; a sort of the score with a signed weight, weighted).

Undefined values are null, never 0: a per-class 0/0 is null and is left out of the
macro / weighted averages (as scikit-learn's ``zero_division=np.nan``); a class absent
from both the truth and the predictions of a group is not part of its averages (as
scikit-learn's default ``labels`` = the classes present); MCC with a constant truth or
prediction is null; kappa only when the chance agreement is 1. A NaN probability in a
used row gives NaN (a negative one NaN for the AUC); the namespace raises instead.

Polars evaluates a sub-expression again wherever it is referenced, so the builders
below take the prepared inputs (:class:`PredInputs`, :class:`ProbaInputs`) and the
namespace's ``df.eval.multiclass`` computes the row-level parts shared by many metrics
(used-row weights, argmax, true-class probability) once, as columns, before aggregating.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_eval._core.registry import register
from polars_eval._exprs import (
    F64,
    NAN,
    drop_null_rows,
    nan_guard,
    not_null,
    safe_div,
    to_expr,
    to_float,
    weight_expr,
)
from polars_eval._params import check_beta, check_choice, check_positive_int
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics.binary import LOGLOSS_EPS

__all__ = [
    "multiclass_accuracy",
    "multiclass_auc",
    "multiclass_cohen_kappa",
    "multiclass_confusion_matrix",
    "multiclass_f1",
    "multiclass_f_beta",
    "multiclass_logloss",
    "multiclass_mcc",
    "multiclass_precision",
    "multiclass_recall",
    "top_k_accuracy",
]

Proba = IntoExpr | Sequence[IntoExpr]

PRED_INPUTS = {"label": "key", "pred": "key", "proba": "proba", "weight": "weight"}
PROBA_INPUTS = {"label": "key", "proba": "proba", "weight": "weight"}
AVERAGES = ("micro", "macro", "weighted", None)
AUC_AVERAGES = ("micro", "macro", "weighted")


# ---------------------------------------------------------------------------------------
# Inputs: classes, probabilities, predictions
# ---------------------------------------------------------------------------------------


def check_classes(classes: Any, *, required: str | None = None) -> list[Any] | None:
    """``classes`` as a list of distinct ints, strings or floats (``required`` says why)."""
    if classes is None:
        if required is not None:
            raise InvalidParameterError(f"classes= is required {required}")
        return None
    if isinstance(classes, (str, bytes)) or not isinstance(classes, Sequence | pl.Series):
        raise InvalidParameterError(
            f"classes must be a list of class ids; got {type(classes).__name__}"
        )
    values = list(classes)
    if len(values) < 2:
        raise InvalidParameterError(f"classes must hold at least 2 classes; got {values!r}")
    if any(v is None or isinstance(v, bool) for v in values) or not all(
        isinstance(v, (int, str, float)) for v in values
    ):
        raise InvalidParameterError(
            f"classes must hold ints or strings (no None, no bools); got {values!r}"
        )
    if len(set(values)) != len(values):
        raise InvalidParameterError(f"classes must be distinct; got {values!r}")
    kinds = {str if isinstance(v, str) else float if isinstance(v, float) else int for v in values}
    if len(kinds) > 1:
        raise InvalidParameterError(f"classes must all be of one type; got {values!r}")
    return values


def class_dtype(classes: Sequence[Any]) -> pl.DataType:
    """The dtype of the class keys of a ``classes`` list (Int64, Float64 or String)."""
    return pl.Series(list(classes)).dtype


def class_lit(value: Any, dtype: pl.DataType) -> pl.Expr:
    return pl.lit(value, dtype=dtype)


def proba_list(proba: IntoExpr) -> pl.Expr:
    """A ``List`` or ``Array`` probability column as ``List(Float64)``.

    The cast is not strict: Polars (2.1) rejects a strict ``Array`` to ``List`` cast
    evaluated inside ``when/then`` (the rows masked out count as failed conversions), and
    ``.arr.to_list()`` would need the dtype, which an expression does not know. Numeric
    inner values convert the same either way; the namespace rejects a non-numeric inner
    dtype before anything runs.
    """
    return to_expr(proba).cast(pl.List(F64), strict=False)


def proba_columns(proba: Proba, k: int) -> list[pl.Expr]:
    """The ``k`` probability columns as Float64 expressions, whatever the input form."""
    if isinstance(proba, (str, pl.Expr)):
        as_list = proba_list(proba)
        return [as_list.list.get(i, null_on_oob=True) for i in range(k)]
    if isinstance(proba, Sequence):
        cols = list(proba)
        if len(cols) != k:
            raise InvalidParameterError(
                f"proba= holds {len(cols)} columns but classes= names {k} classes; "
                "give one probability column per class, in the order of classes"
            )
        return [to_float(c) for c in cols]
    raise InvalidParameterError(
        "proba must be a List/Array column (name or expression) or a list of columns; "
        f"got {type(proba).__name__}"
    )


def first_max(probs: Sequence[pl.Expr]) -> list[pl.Expr]:
    """Per class, whether it is the argmax of the row (the first class among ties).

    Class k wins when its probability is above every earlier one and at least every later
    one: two horizontal maxima per class, no row-wise list (``concat_list`` + ``arg_max``
    costs far more in Polars than horizontal maxima).
    """
    out = []
    for i, p in enumerate(probs):
        cond = pl.lit(True)
        if i > 0:
            cond = cond & (p > pl.max_horizontal(probs[:i]))
        if i < len(probs) - 1:
            cond = cond & (p >= pl.max_horizontal(probs[i + 1 :]))
        out.append(cond)
    return out


def argmax_pred(probs: Sequence[pl.Expr], classes: Sequence[Any]) -> pl.Expr:
    """The class of the largest probability (the first of ``classes`` among ties).

    Null when a probability of the row is null.
    """
    dtype = class_dtype(classes)
    index = pl.sum_horizontal(
        [is_max.cast(pl.Int64) * i for i, is_max in enumerate(first_max(probs))]
    )
    index = pl.when(not_null(*probs)).then(index).otherwise(None)
    if list(classes) == list(range(len(classes))):
        return index.cast(dtype)
    return index.replace_strict(list(range(len(classes))), list(classes), return_dtype=dtype)


@dataclass
class PredInputs:
    """The prediction side, built once: label, predicted class, weight of the used rows.

    ``weight`` is null on the rows a metric ignores (a null input; with ``classes``, a
    label or prediction outside them), so every sum skips them without a filter.
    ``indicators`` (with ``classes``) are the per-class [prediction = k] columns.
    ``probs`` are the probabilities the prediction came from (for the NaN guard).
    """

    label: pl.Expr
    yhat: pl.Expr
    weight: pl.Expr
    classes: list[Any] | None
    indicators: list[pl.Expr] | None
    probs: list[pl.Expr]


def pred_inputs(
    label: IntoExpr,
    pred: IntoExpr | None,
    proba: Proba | None,
    classes: list[Any] | None,
    weight: IntoExpr | None,
) -> PredInputs:
    """Prediction-side inputs from ``pred=`` (class ids) or ``proba=`` (argmax)."""
    if pred is not None and proba is not None:
        raise InvalidParameterError("give exactly one of pred= (class ids) or proba=, not both")
    y, w = to_expr(label), weight_expr(weight)
    if pred is not None:
        yhat = to_expr(pred)
        valid = not_null(y, yhat, w)
        indicators = None
        probs: list[pl.Expr] = []
        if classes is not None:
            dtype = class_dtype(classes)
            valid = valid & y.is_in(classes) & yhat.is_in(classes)
            indicators = [yhat == class_lit(c, dtype) for c in classes]
    else:
        if proba is None:
            raise InvalidParameterError("give pred= (class ids) or proba= (class probabilities)")
        classes = check_classes(classes, required="to read predictions from proba=")
        assert classes is not None
        probs = proba_columns(proba, len(classes))
        yhat = argmax_pred(probs, classes)
        indicators = first_max(probs)
        valid = not_null(y, w, *probs) & y.is_in(classes)
    return PredInputs(
        label=y,
        yhat=yhat,
        weight=pl.when(valid).then(w).otherwise(None),
        classes=classes,
        indicators=indicators,
        probs=probs,
    )


# ---------------------------------------------------------------------------------------
# The class state: {class, support, predicted, correct} per class
# ---------------------------------------------------------------------------------------


def class_state(inputs: PredInputs) -> pl.Expr:
    """The class state of a group: a ``List[Struct{class, support, predicted, correct}]``.

    ``support`` = weighted rows of the class in the truth, ``predicted`` = in the
    predictions, ``correct`` = both. Without ``classes``: the classes present in the truth
    or the predictions, sorted, from one sort of the label and prediction columns
    appended. With ``classes``: every class of the list, in its order, one pass each.
    """
    w, classes = inputs.weight, inputs.classes
    if classes is not None:
        assert inputs.indicators is not None
        dtype = class_dtype(classes)
        entries = []
        for c, is_pred in zip(classes, inputs.indicators, strict=True):
            is_t = (inputs.label == class_lit(c, dtype)).cast(F64)
            is_p = is_pred.cast(F64)
            entries.append(
                pl.struct(
                    class_lit(c, dtype).alias("class"),
                    (w * is_t).sum().alias("support"),
                    (w * is_p).sum().alias("predicted"),
                    (w * is_t * is_p).sum().alias("correct"),
                )
            )
        return pl.concat_list(entries)
    y, yhat, w = drop_null_rows(inputs.label, inputs.yhat, weight=w, drop_zero_weight=True)
    zero = w * 0.0
    key = y.append(yhat)
    rows = pl.struct(
        key.alias("class"),
        w.append(zero).alias("support"),
        zero.append(w).alias("predicted"),
        (w * (y == yhat).cast(F64)).append(zero).alias("correct"),
    ).sort_by(key)
    e = pl.element()
    k = e.struct.field("class")
    end = (k != k.shift(-1)).fill_null(True)

    def block(name: str) -> pl.Expr:
        cum = e.struct.field(name).cum_sum().filter(end)
        return (cum - cum.shift(1).fill_null(0.0)).alias(name)

    return rows.implode().list.eval(
        pl.struct(
            k.filter(end).alias("class"), block("support"), block("predicted"), block("correct")
        )
    )


class _State:
    """Fields of the class state, inside ``list.eval`` (vectors over the classes)."""

    def __init__(self) -> None:
        e = pl.element()
        self.t = e.struct.field("support")
        self.p = e.struct.field("predicted")
        self.c = e.struct.field("correct")


def finalize_state(state: pl.Expr, body: Callable[[Any], pl.Expr]) -> pl.Expr:
    """A scalar from the class state: ``body`` gets the fields ``t``, ``p``, ``c``."""
    return state.list.eval(body(_State())).list.first().cast(F64)


# per-class formulas, over any expressions t (support), p (predicted), c (correct)


def _precision_k(t: pl.Expr, p: pl.Expr, c: pl.Expr, beta: float) -> pl.Expr:
    return safe_div(c, p)


def _recall_k(t: pl.Expr, p: pl.Expr, c: pl.Expr, beta: float) -> pl.Expr:
    return safe_div(c, t)


def _f_beta_k(t: pl.Expr, p: pl.Expr, c: pl.Expr, beta: float) -> pl.Expr:
    b2 = beta * beta
    return safe_div((1.0 + b2) * c, (1.0 + b2) * c + b2 * (t - c) + (p - c))


PER_CLASS = {"precision": _precision_k, "recall": _recall_k, "f_beta": _f_beta_k}


def averaged(metric: str, average: str, beta: float = 1.0) -> Callable[[Any], pl.Expr]:
    """The finalize body of precision / recall / F-beta with a micro/macro/weighted average."""
    per_class = PER_CLASS[metric]

    def body(s: Any) -> pl.Expr:
        if average == "micro":
            return per_class(s.t.sum(), s.p.sum(), s.c.sum(), beta)
        values = per_class(s.t, s.p, s.c, beta)
        if average == "macro":
            return values.mean()
        defined = values.is_not_null()
        return safe_div((values * s.t).sum(), s.t.filter(defined).sum())

    return body


def _accuracy_body(s: Any) -> pl.Expr:
    return safe_div(s.c.sum(), s.t.sum())


ZERO_TOL = 1e-12
"""A variance term below ``ZERO_TOL · s²`` is a constant side: the weighted class counts
are sums in different orders, so an exact 0 can come out as a rounding residue."""


def _mcc_body(s: Any) -> pl.Expr:
    n = s.t.sum()
    cov_tp = s.c.sum() * n - (s.t * s.p).sum()
    cov_pp = n * n - (s.p * s.p).sum()
    cov_tt = n * n - (s.t * s.t).sum()
    tol = ZERO_TOL * n * n
    return (
        pl.when((cov_pp > tol) & (cov_tt > tol))
        .then(cov_tp / (cov_pp * cov_tt).sqrt())
        .otherwise(None)
    )


def _kappa_body(s: Any) -> pl.Expr:
    n = s.t.sum()
    chance = (s.t * s.p).sum()
    den = n * n - chance
    value = (s.c.sum() * n - chance) / den
    return pl.when(den > ZERO_TOL * n * n).then(value).otherwise(None)


STATE_FINALIZE: dict[str, Callable[[Any], pl.Expr]] = {
    "accuracy": _accuracy_body,
    "mcc": _mcc_body,
    "cohen_kappa": _kappa_body,
}


def _guard(result: pl.Expr, probs: Sequence[pl.Expr]) -> pl.Expr:
    return nan_guard(result, *probs) if probs else result


# ---------------------------------------------------------------------------------------
# Prediction metrics
# ---------------------------------------------------------------------------------------


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="empty group",
)
def multiclass_accuracy(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Multiclass accuracy: the weighted share of rows whose predicted class is the label.

    Σ w [ŷ = y] / Σ w. Equal to the micro-averaged precision, recall and F1 (every row
    has exactly one true and one predicted class). Give ``pred=`` (class ids) or
    ``proba=`` with ``classes=`` (the prediction is then the argmax). Null for an empty
    group.

    References
    ----------
    scikit-learn ``accuracy_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": ["a", "b", "c", "a"], "yhat": ["a", "c", "c", "b"], "w": [3, 1, 0, 0]})
    >>> df.eval.multiclass_accuracy("y", "yhat")
    0.5
    >>> df.select(pe.multiclass_accuracy("y", "yhat", weight="w")).item()
    0.75
    """
    return accuracy_expr(pred_inputs(label, pred, proba, check_classes(classes), weight))


def accuracy_expr(inputs: PredInputs) -> pl.Expr:
    """Accuracy from prediction-side inputs (one pass, no class state needed)."""
    w = inputs.weight
    value = safe_div((w * (inputs.label == inputs.yhat).cast(F64)).sum(), w.sum())
    return _guard(value, inputs.probs).cast(F64).alias("multiclass_accuracy")


def _prf(
    name: str,
    metric: str,
    label: IntoExpr,
    pred: IntoExpr | None,
    proba: Proba | None,
    average: Any,
    classes: Sequence[Any] | None,
    weight: IntoExpr | None,
    beta: float = 1.0,
) -> pl.Expr:
    check_choice("average", average, AVERAGES)
    classes = (
        check_classes(
            classes, required="with average=None (the classes name the fields of the result)"
        )
        if average is None
        else check_classes(classes)
    )
    inputs = pred_inputs(label, pred, proba, classes, weight)
    probs = inputs.probs
    if average is None:
        assert classes is not None
        e = pl.element()
        t, p, c = (e.struct.field(f) for f in ("support", "predicted", "correct"))
        values = class_state(inputs).list.eval(PER_CLASS[metric](t, p, c, beta).cast(F64))
        if probs:  # NaN probabilities: every field NaN (null where undefined)
            has_nan = pl.any_horizontal([q.is_nan().any() for q in probs])
            values = values * pl.when(has_nan).then(NAN).otherwise(1.0)
        return values.list.to_struct(fields=[str(c) for c in classes]).alias(name)
    value = finalize_state(class_state(inputs), averaged(metric, average, beta))
    return _guard(value, probs).cast(F64).alias(name)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="no class with a prediction (0/0)",
)
def multiclass_precision(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    average: str | None = "macro",
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    return _prf("multiclass_precision", "precision", label, pred, proba, average, classes, weight)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="no class with a true row (0/0)",
)
def multiclass_recall(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    average: str | None = "macro",
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    return _prf("multiclass_recall", "recall", label, pred, proba, average, classes, weight)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="empty group (0/0)",
)
def multiclass_f1(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    average: str | None = "macro",
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    return _prf("multiclass_f1", "f_beta", label, pred, proba, average, classes, weight)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined="empty group (0/0)",
)
def multiclass_f_beta(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    beta: float,
    proba: Proba | None = None,
    average: str | None = "macro",
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    check_beta(beta)
    return _prf(
        "multiclass_f_beta", "f_beta", label, pred, proba, average, classes, weight, float(beta)
    )


def _doc_prf(fn: Any, summary: str, formula: str, micro: str, extra: str) -> None:
    fn.__doc__ = f"""{summary}

    Per class k (one-vs-rest, weighted counts): {formula}. ``average``:

    * ``"micro"``: the formula over the counts summed over the classes ({micro});
    * ``"macro"`` (default): the unweighted mean over the classes present in the truth or
      in the predictions of the group, leaving out the classes whose value is 0/0 (null);
    * ``"weighted"``: the mean weighted by each class's support (weighted count in the
      truth) over the same classes;
    * ``None``: the value of every class of ``classes=`` (required by the expression) as a
      struct with one field per class (named ``str(class)``); the namespace returns a
      table, one row per class with its ``support`` (the classes of ``classes=`` in their
      order, else the classes present in the truth or predictions, sorted).

    The same as scikit-learn's ``precision_recall_fscore_support`` with
    ``zero_division=np.nan``. Give ``pred=`` (class ids) or ``proba=`` with ``classes=``
    (the argmax is the prediction).{extra}

    References
    ----------
    Sokolova, M. & Lapalme, G. (2009). A systematic analysis of performance measures for
    classification tasks. Information Processing & Management 45(4), 427-437.
    scikit-learn ``precision_recall_fscore_support``.
    """


_doc_prf(
    multiclass_precision,
    "Multiclass precision (positive predictive value), micro / macro / weighted / per class.",
    "TPₖ / (TPₖ + FPₖ), null when the class is never predicted",
    "Σ TP / Σ (TP + FP)",
    """

    Examples
    --------
    The two confusion tables of the literature, TP₁ = 12, FP₁ = 9, FN₁ = 3 and
    TP₂ = 50, FP₂ = 23, FN₂ = 9 (a third class "x" takes the other side of each error):
    micro precision = 62 / 94 = 65.96 %, macro = (12/21 + 50/73) / 2 = 62.82 %.

    >>> import polars as pl
    >>> import polars_eval as pe
    >>> cells = {("1", "1"): 12, ("x", "1"): 9, ("1", "x"): 3,
    ...          ("2", "2"): 50, ("x", "2"): 23, ("2", "x"): 9}
    >>> df = pl.DataFrame(
    ...     [(y, p) for (y, p), n in cells.items() for _ in range(n)], schema=["y", "yhat"], orient="row"
    ... )
    >>> per_class = df.eval.multiclass_precision("y", "yhat", average=None)
    >>> per_class.filter(pl.col("class") != "x").select("class", pl.col("multiclass_precision").round(4))
    shape: (2, 2)
    ┌───────┬──────────────────────┐
    │ class ┆ multiclass_precision │
    │ ---   ┆ ---                  │
    │ str   ┆ f64                  │
    ╞═══════╪══════════════════════╡
    │ 1     ┆ 0.5714               │
    │ 2     ┆ 0.6849               │
    └───────┴──────────────────────┘
    >>> round(df.filter(pl.col("yhat") != "x").eval.multiclass_precision("y", "yhat", average="micro"), 4)
    0.6596
    >>> df.select(pe.multiclass_precision("y", "yhat", average=None, classes=["1", "2", "x"])).item()
    {'1': 0.5714285714285714, '2': 0.684931506849315, 'x': 0.0}
    """,
)
_doc_prf(
    multiclass_recall,
    "Multiclass recall (sensitivity), micro / macro / weighted / per class.",
    "TPₖ / (TPₖ + FNₖ), null when the class is absent from the truth",
    "Σ TP / Σ (TP + FN), the accuracy",
    """ The macro recall is the balanced accuracy.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
    >>> df.eval.multiclass_recall("y", "yhat")  # (1/2 + 2/2 + 0/1) / 3
    0.5
    >>> df.select(pe.multiclass_recall("y", "yhat", average="weighted")).item()  # 3 / 5
    0.6
    """,
)
_doc_prf(
    multiclass_f1,
    "Multiclass F1 score, micro / macro / weighted / per class.",
    "2 TPₖ / (2 TPₖ + FPₖ + FNₖ), null only for a class absent from truth and predictions",
    "the accuracy",
    """

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
    >>> round(df.eval.multiclass_f1("y", "yhat"), 6)  # (2/4 + 4/5 + 0/2) / 3
    0.433333
    """,
)
_doc_prf(
    multiclass_f_beta,
    "Multiclass F-beta score, micro / macro / weighted / per class.",
    "(1 + β²) TPₖ / ((1 + β²) TPₖ + β² FNₖ + FPₖ)",
    "the accuracy",
    """ β > 1 weighs recall higher, β < 1 precision.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
    >>> round(df.eval.multiclass_f_beta("y", "yhat", beta=2.0), 6)  # (5/10 + 10/11 + 0) / 3
    0.469697
    """,
)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    higher_is_better=True,
    lower=-1.0,
    upper=1.0,
    undefined="a constant truth or prediction",
)
def multiclass_mcc(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Multiclass Matthews correlation coefficient (Gorodkin's R_K statistic).

    With s the total weight, c the weight of correct rows, tₖ and pₖ the weighted counts
    of class k in the truth and in the predictions:
    MCC = (c·s − Σ tₖpₖ) / sqrt((s² − Σ pₖ²)(s² − Σ tₖ²)).
    Null when the truth or the prediction is constant (a zero factor; scikit-learn
    returns 0 there).

    References
    ----------
    Gorodkin, J. (2004). Comparing two K-category assignments by a K-category correlation
    coefficient. Computational Biology and Chemistry 28(5), 367-374.
    scikit-learn ``matthews_corrcoef``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
    >>> round(df.eval.multiclass_mcc("y", "yhat"), 6)  # (3·5 − 10) / sqrt((25 − 13)(25 − 9))
    0.360844
    """
    return _state_metric("multiclass_mcc", "mcc", label, pred, proba, classes, weight)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    higher_is_better=True,
    lower=-1.0,
    upper=1.0,
    undefined="chance agreement p_e = 1 (truth and prediction constant and equal)",
)
def multiclass_cohen_kappa(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Cohen's kappa between the true and the predicted class.

    κ = (p_o − p_e) / (1 − p_e), with p_o = c / s the weighted agreement and
    p_e = Σ tₖpₖ / s² the chance agreement (tₖ, pₖ: weighted counts of class k in the
    truth and the prediction). Null when p_e = 1 (truth and prediction the same constant);
    a constant truth with a varying prediction gives a defined value (≤ 0), as
    scikit-learn and the binary :func:`polars_eval.cohen_kappa`.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement 20(1), 37-46. scikit-learn ``cohen_kappa_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
    >>> round(df.eval.multiclass_cohen_kappa("y", "yhat"), 6)  # (3/5 − 10/25) / (1 − 10/25)
    0.333333
    """
    return _state_metric(
        "multiclass_cohen_kappa", "cohen_kappa", label, pred, proba, classes, weight
    )


def _state_metric(
    name: str,
    body: str,
    label: IntoExpr,
    pred: IntoExpr | None,
    proba: Proba | None,
    classes: Sequence[Any] | None,
    weight: IntoExpr | None,
) -> pl.Expr:
    inputs = pred_inputs(label, pred, proba, check_classes(classes), weight)
    value = finalize_state(class_state(inputs), STATE_FINALIZE[body])
    return _guard(value, inputs.probs).cast(F64).alias(name)


CONFUSION_FIELDS = ("truth", "predicted", "weight")


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    kind="curve",
    summary=False,
    fields=CONFUSION_FIELDS,
)
def multiclass_confusion_matrix(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Weighted multiclass confusion matrix, rows = truth, columns = prediction.

    The expression gives the non-empty cells in long form, a
    ``List[Struct{truth, predicted, weight}]`` sorted by truth then prediction (one sort
    per group; cells of zero weight are absent). ``weight`` is the row count (Int64)
    without ``weight=``, the weighted count (Float64) with it. The namespace returns the square table:
    a ``truth`` column and one column ``predicted_<class>`` per class (in the order of
    ``classes=``, else sorted), zeros filled in, as scikit-learn's ``confusion_matrix``.
    With ``by`` the table has one row per group and true class. On a LazyFrame the
    namespace needs ``classes=`` (the columns must be known before collect).

    References
    ----------
    scikit-learn ``confusion_matrix``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": ["a", "a", "b", "c"], "yhat": ["a", "b", "b", "a"], "w": [1, 2, 1, 1]})
    >>> df.select(pe.multiclass_confusion_matrix("y", "yhat", weight="w")).item().to_list()
    [{'truth': 'a', 'predicted': 'a', 'weight': 1.0}, {'truth': 'a', 'predicted': 'b', 'weight': 2.0}, {'truth': 'b', 'predicted': 'b', 'weight': 1.0}, {'truth': 'c', 'predicted': 'a', 'weight': 1.0}]
    >>> df.eval.multiclass_confusion_matrix("y", "yhat", weight="w")
    shape: (3, 4)
    ┌───────┬─────────────┬─────────────┬─────────────┐
    │ truth ┆ predicted_a ┆ predicted_b ┆ predicted_c │
    │ ---   ┆ ---         ┆ ---         ┆ ---         │
    │ str   ┆ f64         ┆ f64         ┆ f64         │
    ╞═══════╪═════════════╪═════════════╪═════════════╡
    │ a     ┆ 1.0         ┆ 2.0         ┆ 0.0         │
    │ b     ┆ 0.0         ┆ 1.0         ┆ 0.0         │
    │ c     ┆ 1.0         ┆ 0.0         ┆ 0.0         │
    └───────┴─────────────┴─────────────┴─────────────┘
    """
    inputs = pred_inputs(label, pred, proba, check_classes(classes), weight)
    y, yh, w = drop_null_rows(
        inputs.label, inputs.yhat, weight=inputs.weight, drop_zero_weight=True
    )
    if weight is None:  # row counts: summed as integers
        w = w.cast(pl.Int64)
    cells = pl.struct(y.alias("truth"), yh.alias("predicted"), w.alias("weight")).sort_by([y, yh])
    e = pl.element()
    t, p = e.struct.field("truth"), e.struct.field("predicted")
    end = ((t != t.shift(-1)) | (p != p.shift(-1))).fill_null(True)
    cum = e.struct.field("weight").cum_sum().filter(end)
    return (
        cells.implode()
        .list.eval(
            pl.struct(
                t.filter(end).alias("truth"),
                p.filter(end).alias("predicted"),
                (cum - cum.shift(1).fill_null(0)).alias("weight"),
            )
        )
        .alias("multiclass_confusion_matrix")
    )


# ---------------------------------------------------------------------------------------
# Probability metrics
# ---------------------------------------------------------------------------------------


@dataclass
class ProbaInputs:
    """The probability side, built once: label, K probabilities, weight, used rows.

    ``keep`` marks the rows a metric uses (no null input, weight not 0, label in
    ``classes``); ``true_proba`` is the probability of each row's true class.
    """

    label: pl.Expr
    probs: list[pl.Expr]
    weight: pl.Expr
    keep: pl.Expr
    true_proba: pl.Expr
    classes: list[Any]
    weighted: bool


def true_class_proba(y: pl.Expr, probs: Sequence[pl.Expr], classes: Sequence[Any]) -> pl.Expr:
    """The probability given to the true class of each row (null for an unknown label)."""
    dtype = class_dtype(classes)
    expr: Any = pl
    for p, c in zip(probs, classes, strict=True):
        expr = expr.when(y == class_lit(c, dtype)).then(p)
    return expr.otherwise(pl.lit(None, dtype=F64))


def proba_inputs(
    label: IntoExpr, proba: Proba, classes: Sequence[Any], weight: IntoExpr | None
) -> ProbaInputs:
    """Probability-side inputs from a List/Array column or a list of columns."""
    probs = proba_columns(proba, len(classes))
    y = to_expr(label)
    w = weight_expr(weight)
    keep = not_null(y, w, *probs) & (w != 0.0) & y.is_in(list(classes))
    return ProbaInputs(
        label=y,
        probs=probs,
        weight=w,
        keep=keep,
        true_proba=true_class_proba(y, probs, classes),
        classes=list(classes),
        weighted=weight is not None,
    )


@register(
    task="multiclass",
    inputs=PROBA_INPUTS,
    higher_is_better=False,
    lower=0.0,
    upper=None,
    undefined="empty group",
)
def multiclass_logloss(
    label: IntoExpr,
    proba: Proba,
    *,
    classes: Sequence[Any],
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Multiclass log loss (cross-entropy) in nats: −Σ w ln p_{y} / Σ w.

    p_y is the probability of the true class, clipped to [eps, 1 − eps] with
    eps = 2.22e-16 (:data:`polars_eval.LOGLOSS_EPS`, as scikit-learn's ``log_loss``).
    ``classes=`` is required (the class of each probability). The namespace checks
    that every row sums to 1 (tolerance 1e-6); nothing is renormalised.

    References
    ----------
    Bishop, C. M. (2006). Pattern Recognition and Machine Learning, §4.3.4.
    scikit-learn ``log_loss``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": ["a", "b"], "p": [[0.5, 0.25, 0.25], [0.5, 0.25, 0.25]]})
    >>> round(df.eval.multiclass_logloss("y", "p", classes=["a", "b", "c"]), 6)  # (ln 2 + ln 4) / 2
    1.039721
    """
    classes = check_classes(classes, required="to know the class of each probability")
    assert classes is not None
    return logloss_expr(proba_inputs(label, proba, classes, weight))


def logloss_expr(inputs: ProbaInputs) -> pl.Expr:
    """Log loss from probability-side inputs."""
    w = pl.when(inputs.keep).then(inputs.weight).otherwise(None)
    p = inputs.true_proba.clip(LOGLOSS_EPS, 1.0 - LOGLOSS_EPS)
    value = safe_div((-w * p.log()).sum(), w.sum())
    return _proba_nan_guard(value, inputs).cast(F64).alias("multiclass_logloss")


def _proba_nan_guard(value: pl.Expr, inputs: ProbaInputs) -> pl.Expr:
    """NaN when a used row holds a NaN probability (of any class), else ``value``."""
    has_nan = (pl.any_horizontal([p.is_nan() for p in inputs.probs]) & inputs.keep).any()
    return pl.when(has_nan).then(pl.lit(NAN, dtype=F64)).otherwise(value)


def top_k_hits(pt: pl.Expr, probs: Sequence[pl.Expr], k: int) -> pl.Expr:
    """Per row, the chance that the true class (probability ``pt``) is among the k most probable.

    With g classes strictly more probable than the true one and e classes (itself
    included) exactly as probable, a random order of the ties puts it in the top k with
    probability clip((k − g) / e, 0, 1).
    """
    greater = pl.sum_horizontal([(p > pt).cast(F64) for p in probs])
    equal = pl.sum_horizontal([(p == pt).cast(F64) for p in probs])
    return ((k - greater) / equal).clip(0.0, 1.0)


@register(
    task="multiclass",
    inputs=PROBA_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="empty group",
)
def top_k_accuracy(
    label: IntoExpr,
    proba: Proba,
    *,
    k: int = 2,
    classes: Sequence[Any],
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """Top-k accuracy: the weighted share of rows whose true class is among the k most probable.

    Ties at the k-th place are not broken by class order: a row whose true class ties
    with others counts the probability that a random order of the tied classes puts it
    in the top k, clip((k − g) / e, 0, 1), with g the classes strictly more probable and
    e the classes exactly as probable (itself included). Without ties this is
    scikit-learn's ``top_k_accuracy_score`` (which breaks ties by class index).
    ``classes=`` is required.

    References
    ----------
    scikit-learn ``top_k_accuracy_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 1, 2], "p": [[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.5, 0.3, 0.2]]})
    >>> round(df.eval.top_k_accuracy("y", "p", k=2, classes=[0, 1, 2]), 6)
    0.666667
    >>> df.select(pe.top_k_accuracy("y", "p", k=1, classes=[0, 1, 2])).item() * 3
    1.0
    """
    check_positive_int("k", k)
    classes = check_classes(classes, required="to know the class of each probability")
    assert classes is not None
    return top_k_expr(proba_inputs(label, proba, classes, weight), k)


def top_k_expr(inputs: ProbaInputs, k: int) -> pl.Expr:
    """Top-k accuracy from probability-side inputs (NaN if a used row holds a NaN)."""
    w = pl.when(inputs.keep).then(inputs.weight).otherwise(None)
    hits = top_k_hits(inputs.true_proba, inputs.probs, k)
    value = safe_div((w * hits).sum(), w.sum())
    return _proba_nan_guard(value, inputs).cast(F64).alias("top_k_accuracy")


def _sort_keys(positives_first: bool) -> Callable[[pl.Series], pl.Series]:
    """UInt64 keys that sort as the score, ties broken by the label bit.

    For a score x ≥ 0 the IEEE-754 bits read as an unsigned integer are in the order of
    x, with the top bit clear, so ``bits << 1 | label_bit`` loses nothing. numpy is used
    because Polars cannot reinterpret float bits, and because Polars sorts one UInt64
    column several times faster than it sorts a score carrying a label column along.
    """

    def keys(rows: pl.Series) -> pl.Series:
        score = rows.struct.field("s").cast(pl.Float64).to_numpy() + 0.0  # -0.0 -> +0.0
        label = rows.struct.field("p").to_numpy().astype(np.uint64)
        bit = np.uint64(1) - label if positives_first else label
        return pl.Series(
            (np.ascontiguousarray(score).view(np.uint64) << np.uint64(1)) | bit,
            dtype=pl.UInt64,
        )

    return keys


def _sum_of_positive_positions(positive: pl.Expr, score: pl.Expr, positives_first: bool) -> pl.Expr:
    """Σ of the 0-based positions of the positives in the rows sorted by score, ties
    ordered negatives first (or positives first)."""
    key = pl.struct(score.alias("s"), positive.alias("p")).map_batches(
        _sort_keys(positives_first), return_dtype=pl.UInt64, is_elementwise=True
    )
    is_positive = (key.sort() & 1) == (0 if positives_first else 1)
    return is_positive.arg_true().cast(F64).sum()


def _binary_auc(
    positive: pl.Expr,
    score: pl.Expr,
    w: pl.Expr | None,
    *,
    counts: tuple[pl.Expr, pl.Expr] | None = None,
    guard: bool = True,
) -> pl.Expr:
    """ROC AUC of one boolean column against probabilities, on rows already filtered.

    Unweighted: the Mann-Whitney count. With the rows sorted by score and the ties
    ordered negatives first, Σ (position of each positive) − P(P − 1)/2 counts the
    negatives at or below each positive; ordered positives first, strictly below; their
    mean counts a tie ½: U, and AUC = U / (P·N). Each order is one sort of a UInt64 key
    (:func:`_sort_keys`), no arg-sort. Weighted: the rows sorted by score with a signed
    weight (+w positive, −w negative; rows of zero weight are already dropped), then per
    tie block b with positive mass Aᵦ and negative mass Bᵦ,
    AUC = Σ Aᵦ (N below b + Bᵦ / 2) / (P·N). NaN if a score is NaN or negative (not a
    probability); null unless both classes are present. ``counts`` (P, N) and
    ``guard=False`` let a caller that knows them skip re-reading the inputs.
    """
    if w is None:
        if counts is None:
            npos, nneg = positive.cast(F64).sum(), (~positive).cast(F64).sum()
        else:
            npos, nneg = counts
        positions = _sum_of_positive_positions(positive, score, False) + (
            _sum_of_positive_positions(positive, score, True)
        )
        u = positions / 2.0 - npos * (npos - 1.0) / 2.0
        value = pl.when((npos > 0.0) & (nneg > 0.0)).then(u / (npos * nneg)).otherwise(None)
        if not guard:
            return value.cast(F64)
        bad = score.is_nan().any() | (score < 0.0).any()
        return pl.when(bad).then(pl.lit(NAN, dtype=F64)).otherwise(value).cast(F64)
    signed = w * (2.0 * positive.cast(F64) - 1.0)
    rows = pl.struct(score.alias("s"), signed.alias("sw")).sort_by(score).implode()
    e = pl.element()
    s, sw = e.struct.field("s"), e.struct.field("sw")
    pos, neg = sw.clip(lower_bound=0.0), (-sw).clip(lower_bound=0.0)
    end = (s != s.shift(-1)).fill_null(True)
    cum_pos, cum_neg = pos.cum_sum().filter(end), neg.cum_sum().filter(end)
    below = cum_neg.shift(1).fill_null(0.0)
    block_pos = cum_pos - cum_pos.shift(1).fill_null(0.0)
    area = (block_pos * (below + (cum_neg - below) / 2.0)).sum()
    total_pos, total_neg = pos.sum(), neg.sum()
    body = (
        pl.when(s.is_nan().any())
        .then(pl.lit(NAN, dtype=F64))
        .when((total_pos > 0.0) & (total_neg > 0.0))
        .then(area / (total_pos * total_neg))
        .otherwise(pl.lit(None, dtype=F64))
    )
    return rows.list.eval(body).list.first().cast(F64)


def auc_parts(inputs: ProbaInputs, *, micro: bool = True) -> tuple[pl.Expr, pl.Expr | None]:
    """The per-class one-vs-rest AUCs with their supports, and the micro AUC.

    The per-class part is one ``List[Struct{auc, support}]`` (K entries), so that the
    averages read each AUC from a materialised list instead of sorting again.
    """
    keep = inputs.keep
    w = inputs.weight.filter(keep)
    wgt = w if inputs.weighted else None
    dtype = class_dtype(inputs.classes)
    positives = [(inputs.label == class_lit(c, dtype)).filter(keep) for c in inputs.classes]
    scores = [p.filter(keep) for p in inputs.probs]
    per_class = pl.concat_list(
        [
            pl.struct(
                _binary_auc(pos, score, wgt).alias("auc"),
                ((w * pos.cast(F64)).sum() if inputs.weighted else pos.cast(F64).sum()).alias(
                    "support"
                ),
            )
            for pos, score in zip(positives, scores, strict=True)
        ]
    )
    micro_auc = _micro_auc(inputs) if micro else None
    return per_class, micro_auc


def _micro_auc(inputs: ProbaInputs) -> pl.Expr:
    """Micro-averaged one-vs-rest AUC: one binary AUC over the n × K (row, class) pairs.

    The K probability columns are appended (n·K scores) with their one-hot labels; there
    are n positives and n(K − 1) negatives (weighted: each pair carries its row's weight).
    """
    keep = inputs.keep
    dtype = class_dtype(inputs.classes)
    w = inputs.weight.filter(keep)
    pos_all = score_all = w_all = None
    for c, p in zip(inputs.classes, inputs.probs, strict=True):
        pos = (inputs.label == class_lit(c, dtype)).filter(keep)
        score = p.filter(keep)
        pos_all = pos if pos_all is None else pos_all.append(pos)
        score_all = score if score_all is None else score_all.append(score)
        w_all = w if w_all is None else w_all.append(w)
    assert pos_all is not None and score_all is not None
    if inputs.weighted:
        return _binary_auc(pos_all, score_all, w_all)
    n = keep.cast(F64).sum()
    counts = (n, n * float(len(inputs.classes) - 1))
    value = _binary_auc(pos_all, score_all, None, counts=counts, guard=False)
    negative = (pl.any_horizontal([p < 0.0 for p in inputs.probs]) & keep).any()
    return _proba_nan_guard(pl.when(negative).then(NAN).otherwise(value), inputs)


def combine_aucs(per_class: pl.Expr, average: str) -> pl.Expr:
    """Macro (mean of the defined AUCs) or weighted (by support) average; NaN propagates."""
    e = pl.element()
    auc, support = e.struct.field("auc"), e.struct.field("support")
    if average == "macro":
        body = auc.mean()
    else:
        body = safe_div((auc * support).sum(), support.filter(auc.is_not_null()).sum())
    return per_class.list.eval(body).list.first().cast(F64)


@register(
    task="multiclass",
    inputs=PROBA_INPUTS,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="no class with both a positive and a negative row",
)
def multiclass_auc(
    label: IntoExpr,
    proba: Proba,
    *,
    average: str = "macro",
    classes: Sequence[Any],
    weight: IntoExpr | None = None,
) -> pl.Expr:
    """One-vs-rest ROC AUC of multiclass probabilities, micro / macro / weighted.

    For each class k, the binary AUC of [y = k] against the probability of k (trapezoid
    rule, tied scores count ½, weighted rows). ``average``:

    * ``"macro"`` (default): the mean over the classes whose AUC is defined (a class
      absent from the truth of the group, or the only class present, is left out);
    * ``"weighted"``: the mean weighted by each class's support, over the same classes;
    * ``"micro"``: one binary AUC over the n × K one-hot labels and probabilities.

    Same as scikit-learn's ``roc_auc_score(multi_class="ovr", average=...)`` when every
    class is present. One sort per class (the rank of its probability column), one more
    of the n × K values for ``"micro"``. ``classes=`` is required.

    References
    ----------
    Fawcett, T. (2006). An introduction to ROC analysis. Pattern Recognition Letters 27(8),
    §9 (one-vs-rest "class reference formulation"). scikit-learn ``roc_auc_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": ["a", "b", "c", "a"],
    ...                    "p": [[0.6, 0.2, 0.2], [0.3, 0.4, 0.3], [0.5, 0.1, 0.4], [0.2, 0.5, 0.3]]})
    >>> round(df.eval.multiclass_auc("y", "p", classes=["a", "b", "c"]), 6)  # (1/2 + 2/3 + 1) / 3
    0.722222
    """
    check_choice("average", average, AUC_AVERAGES)
    classes = check_classes(classes, required="to know the class of each probability")
    assert classes is not None
    per_class, micro = auc_parts(
        proba_inputs(label, proba, classes, weight), micro=average == "micro"
    )
    value = micro if average == "micro" else combine_aucs(per_class, average)
    assert value is not None
    return value.cast(F64).alias("multiclass_auc")
