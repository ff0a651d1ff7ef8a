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
  and prediction columns); with ``classes=`` they are weighted sums per class instead
  (faster, and merged by addition).

With ``classes=``, a bare expression ignores the rows whose label (or prediction) is not
in ``classes``; the namespace layer raises an error naming the column and the classes.

State + finalize: every metric is a :class:`~polars_eval._core.spec.MetricSpec`.

* The prediction metrics (accuracy, precision / recall / F, MCC, kappa) are formulas over
  the *class vector* of a group, ``{class, support, predicted, correct}`` weighted counts
  per class (:func:`class_counts`, :func:`over_classes`). With ``classes=`` its states are
  3·K weighted sums (per class: in the truth, in the predictions, both), merged by
  addition; without, the classes come from the data, so the state is the used rows
  (label, prediction, weight), merged by concatenation, and the vector one sort of them.
* The confusion matrix: K × K weighted sums with ``classes=`` (the used rows without).
* Balanced accuracy and Jaccard: formulas over the class vector; the weighted kappa: the
  class vector and one more weighted sum (the distance between the positions of the true
  and the predicted class; without ``classes=``, from the used rows).
* Log loss, Brier score, hinge loss and top-k accuracy: weighted sums (and a NaN flag, a
  maximum).
* The one-vs-rest AUC: the used rows (class index, the K probabilities, weight), sorted
  in one numpy kernel (``ovr_auc`` in ``metrics/_multiclass_auc.py``: UInt64 keys of
  each probability and its one-vs-rest label, one sort of a class's n keys per class,
  one of all n × K keys for the micro average, in threads; weighted: arg-sorts); the
  one-vs-one AUC: the same rows, two sorts per pair of classes (``ovo_auc``).

Undefined values are null, never 0: a per-class 0/0 is null and is left out of the
macro / weighted averages (as scikit-learn's ``zero_division=np.nan``); a class absent
from both the truth and the predictions of a group is not part of its averages (as
scikit-learn's default ``labels`` = the classes present); MCC with a constant truth or
prediction is null; kappa only when the chance agreement is 1. A NaN probability in a
used row gives NaN (a negative one NaN for the AUC); the namespace raises instead.

The namespace's data checks (labels and predictions in ``classes=``, probability rows of
K values in [0, 1] summing to 1) are the ``check=`` hook of each metric
(``data_checks`` in ``metrics/_multiclass_checks.py``, with the check of ``classes=``);
``average=None`` and the confusion matrix are tables in the namespace (the ``namespace=``
hook: the expression to evaluate and the table it makes).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from polars_eval._core.registry import register
from polars_eval._core.spec import MetricSpec, State, nan_or
from polars_eval._exprs import (
    F64,
    NAN,
    not_null,
    safe_div,
    to_expr,
    to_float,
    weight_expr,
)
from polars_eval._params import check_beta, check_choice, check_positive_int
from polars_eval._typing import IntoExpr, Proba
from polars_eval._validate import is_textual
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics._multiclass_auc import AUC_AVERAGES, ovo_auc, ovr_auc
from polars_eval.metrics._multiclass_checks import (
    check_classes,
    data_checks,
    proba_list,
)
from polars_eval.metrics.binary import LOGLOSS_EPS

PRED_INPUTS = {"label": "key", "pred": "key", "proba": "class_proba", "weight": "weight"}
PROBA_INPUTS = {"label": "key", "proba": "class_proba", "weight": "weight"}
AVERAGES = ("micro", "macro", "weighted", None)


# ---------------------------------------------------------------------------------------
# Inputs: classes, probabilities, predictions
# ---------------------------------------------------------------------------------------


def class_dtype(classes: Sequence[Any]) -> pl.DataType:
    """The dtype of the class keys of a ``classes`` list (Int64, Float64 or String)."""
    return pl.Series(list(classes)).dtype


def class_lit(value: Any, dtype: pl.DataType) -> pl.Expr:
    return pl.lit(value, dtype=dtype)


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


def shared_columns(
    label: IntoExpr,
    pred: IntoExpr | None,
    proba: Proba | None,
    classes: list[Any] | None,
    weight: IntoExpr | None,
) -> tuple[list[list[pl.Expr]], PredInputs, ProbaInputs | None]:
    """Inputs of many metrics at once (the task table) whose row-level parts are columns.

    Polars evaluates a repeated sub-expression again at each reference, so the parts that
    many states read (the probabilities of a List column, the weight of the used rows,
    the argmax, the true-class probability) are computed once: returned as stages of
    columns for the planner (``Plan.columns``), with the prediction side (``pred=``, else
    the argmax of ``proba=``; no NaN guard: the namespace checks the rows) and the
    probability side reading them.
    """
    stages: list[list[pl.Expr]] = [[], []]
    probs: Proba | None = proba
    if isinstance(proba, (str, pl.Expr)):  # a List/Array column: one column per class
        assert classes is not None
        parts = proba_columns(proba, len(classes))
        stages[0] = [p.alias(f"__pe_mc_p{i}") for i, p in enumerate(parts)]
        probs = [pl.col(f"__pe_mc_p{i}") for i in range(len(classes))]
    side = pred_inputs(label, pred, None if pred is not None else probs, classes, weight)
    stages[1].append(side.weight.alias("__pe_mc_w"))
    yhat = side.yhat
    if pred is None:  # the argmax, once (its class indicators are then comparisons)
        stages[1].append(side.yhat.alias("__pe_mc_yhat"))
        yhat = pl.col("__pe_mc_yhat")
    indicators = None
    if classes is not None:
        dtype = class_dtype(classes)
        indicators = [yhat == class_lit(c, dtype) for c in classes]
    pred_side = PredInputs(side.label, yhat, pl.col("__pe_mc_w"), classes, indicators, [])
    if probs is None:
        return stages, pred_side, None
    assert classes is not None
    p = proba_inputs(label, probs, classes, weight)
    stages[1] += [p.keep.alias("__pe_mc_keep"), p.true_proba.alias("__pe_mc_pt")]
    keep, pt = pl.col("__pe_mc_keep"), pl.col("__pe_mc_pt")
    proba_side = ProbaInputs(p.label, p.probs, p.weight, keep, pt, p.classes, p.weighted)
    return stages, pred_side, proba_side


# ---------------------------------------------------------------------------------------
# The class vector: {class, support, predicted, correct} per class
# ---------------------------------------------------------------------------------------

States = Mapping[str, pl.Expr]
Body = Callable[[Any], pl.Expr]


@dataclass(frozen=True)
class ClassCounts:
    """The weighted class counts of a group as states, and how to read the class vector.

    ``vector`` turns the states (inline aggregations, state columns or merged states) into
    a ``List[Struct{class, support, predicted, correct}]``: ``support`` = weighted rows of
    the class in the truth, ``predicted`` = in the predictions, ``correct`` = both.
    """

    states: dict[str, State]
    vector: Callable[[States], pl.Expr]


def class_counts(inputs: PredInputs) -> ClassCounts:
    """The class counts of the used rows (weight not null, see :class:`PredInputs`).

    With ``classes``: 3·K weighted sums, the vector lists every class of the list in its
    order. Without: the used rows themselves (label, prediction, weight; merged by
    concatenation), the vector lists the classes present in the truth or the
    predictions, sorted, from one sort of the label and prediction columns appended.
    """
    w, classes = inputs.weight, inputs.classes
    if classes is None:
        return ClassCounts(_used_rows(inputs, w), _vector_of_rows)
    assert inputs.indicators is not None
    dtype = class_dtype(classes)
    states: dict[str, State] = {}
    for i, (c, is_p) in enumerate(zip(classes, inputs.indicators, strict=True)):
        # the weight where the row counts, null elsewhere (a sum skips it): a third of the
        # passes of the weight times Float64 indicators
        is_t = inputs.label == class_lit(c, dtype)
        states[f"t{i}"] = State(pl.when(is_t).then(w))
        states[f"p{i}"] = State(pl.when(is_p).then(w))
        states[f"c{i}"] = State(pl.when(is_t & is_p).then(w))

    def vector(s: States) -> pl.Expr:
        return pl.concat_list(
            [
                pl.struct(
                    class_lit(c, dtype).alias("class"),
                    s[f"t{i}"].alias("support"),
                    s[f"p{i}"].alias("predicted"),
                    s[f"c{i}"].alias("correct"),
                )
                for i, c in enumerate(classes)
            ]
        )

    return ClassCounts(states, vector)


def _used_rows(inputs: PredInputs, w: pl.Expr) -> dict[str, State]:
    """The used rows (weight not null and not 0) as three ``rows`` states: label ``y``,
    prediction ``yhat`` and weight ``w`` (aligned: merged by concatenation alike)."""
    used = inputs.weight.is_not_null() & (inputs.weight != 0.0)
    columns = {"y": inputs.label, "yhat": inputs.yhat, "w": w}
    return {name: State(expr.filter(used), "rows") for name, expr in columns.items()}


def _vector_of_rows(s: States, *, ranked: bool = False) -> pl.Expr:
    """The class vector of the used rows (:func:`_used_rows`): one sort of the label and
    prediction columns appended, then the weighted counts of each run of equal classes.

    ``ranked``: sorted by the dense rank of the classes instead, so that the order is that
    of :meth:`pl.Expr.rank` in every context (Polars 2.1 sorts an appended Categorical by
    its physical order inside ``group_by`` and lexically outside it; ``rank`` is lexical
    in both) when the positions of the classes matter (the weighted kappa)."""
    y, yhat, w = s["y"], s["yhat"], s["w"]
    zero = w * 0.0
    key = y.append(yhat)
    if ranked:
        key = key.rank("dense")
    stacked = pl.struct(
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

    return stacked.implode().list.eval(
        pl.struct(
            k.filter(end).alias("class"), block("support"), block("predicted"), block("correct")
        )
    )


class _Fields:
    """Fields of the class vector, inside ``list.eval`` (vectors over the classes)."""

    def __init__(self) -> None:
        e = pl.element()
        self.t = e.struct.field("support")
        self.p = e.struct.field("predicted")
        self.c = e.struct.field("correct")


def over_classes(vector: pl.Expr, body: Body) -> pl.Expr:
    """A scalar from the class vector: ``body`` gets the fields ``t``, ``p``, ``c``."""
    return vector.list.eval(body(_Fields())).list.first().cast(F64)


# per-class formulas, over any expressions t (support), p (predicted), c (correct)


def _precision_k(t: pl.Expr, p: pl.Expr, c: pl.Expr, beta: float) -> pl.Expr:
    return safe_div(c, p)


def _recall_k(t: pl.Expr, p: pl.Expr, c: pl.Expr, beta: float) -> pl.Expr:
    return safe_div(c, t)


def _f_beta_k(t: pl.Expr, p: pl.Expr, c: pl.Expr, beta: float) -> pl.Expr:
    b2 = beta * beta
    return safe_div((1.0 + b2) * c, (1.0 + b2) * c + b2 * (t - c) + (p - c))


def _jaccard_k(t: pl.Expr, p: pl.Expr, c: pl.Expr, beta: float) -> pl.Expr:
    return safe_div(c, t + p - c)


PER_CLASS = {
    "precision": _precision_k,
    "recall": _recall_k,
    "f_beta": _f_beta_k,
    "jaccard": _jaccard_k,
}


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


CLASS_FORMULAS: dict[str, Body] = {
    "accuracy": _accuracy_body,
    "mcc": _mcc_body,
    "cohen_kappa": _kappa_body,
}


def table_formulas(name: str, *, adjusted: bool = False) -> dict[str, Body]:
    """The task table's columns of a prediction metric: column -> formula over the vector
    (precision / recall / F1 / Jaccard give one column per average, ``<name>_micro`` ...;
    ``adjusted`` is balanced accuracy's). Empty for a metric that is not a formula of the
    class vector alone (F-beta needs its ``beta``, the weighted kappa one more state)."""
    short = name.removeprefix("multiclass_")
    if short == "balanced_accuracy":
        return {name: _balanced_accuracy_body(adjusted)}
    if short in CLASS_FORMULAS:
        return {name: CLASS_FORMULAS[short]}
    metric = {"precision": "precision", "recall": "recall", "f1": "f_beta"}.get(short, short)
    if metric not in PER_CLASS or short == "f_beta":
        return {}
    return {f"{name}_{avg}": averaged(metric, avg) for avg in ("micro", "macro", "weighted")}


def _nan_state(probs: Sequence[pl.Expr]) -> State:
    """Whether a row of the group holds a NaN probability (a prediction read from them)."""
    return State(pl.any_horizontal([p.is_nan() for p in probs]), "max")


def class_metric(inputs: PredInputs, body: Body) -> MetricSpec:
    """A formula over the class vector as a spec (NaN when the predictions come from
    probabilities and one of them is NaN)."""
    counts = class_counts(inputs)
    states = dict(counts.states)
    if inputs.probs:
        states["nan"] = _nan_state(inputs.probs)

    def finalize(s: States) -> pl.Expr:
        value = over_classes(counts.vector(s), body)
        return nan_or(s["nan"], value) if inputs.probs else value

    return MetricSpec(states, finalize)


# ---------------------------------------------------------------------------------------
# Prediction metrics
# ---------------------------------------------------------------------------------------


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
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
) -> MetricSpec:
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
    inputs = pred_inputs(label, pred, proba, check_classes(classes), weight)
    if inputs.classes is not None:  # the class vector (states shared with the others)
        return class_metric(inputs, _accuracy_body)
    w = inputs.weight
    states = {"w": State(w), "correct": State(w * (inputs.label == inputs.yhat).cast(F64))}
    finalize = lambda s: safe_div(s["correct"], s["w"]).cast(F64)  # noqa: E731
    return MetricSpec(states, finalize, extra={"row_mean": True})


def _prf(
    metric: str,
    label: IntoExpr,
    pred: IntoExpr | None,
    proba: Proba | None,
    average: Any,
    classes: Sequence[Any] | None,
    weight: IntoExpr | None,
    beta: float = 1.0,
) -> MetricSpec:
    check_choice("average", average, AVERAGES)
    classes = (
        check_classes(
            classes, required="with average=None (the classes name the fields of the result)"
        )
        if average is None
        else check_classes(classes)
    )
    inputs = pred_inputs(label, pred, proba, classes, weight)
    if average is not None:
        return class_metric(inputs, averaged(metric, average, beta))
    assert classes is not None
    counts = class_counts(inputs)
    states = dict(counts.states)
    if inputs.probs:
        states["nan"] = _nan_state(inputs.probs)
    per_class = PER_CLASS[metric]
    fields = [str(c) for c in classes]

    def finalize(s: States) -> pl.Expr:
        f = _Fields()
        values = counts.vector(s).list.eval(per_class(f.t, f.p, f.c, beta).cast(F64))
        if inputs.probs:  # NaN probabilities: every field NaN (null where undefined)
            values = values * pl.when(s["nan"]).then(NAN).otherwise(1.0)
        return values.list.to_struct(fields=fields)

    return MetricSpec(states, finalize)


Present = Callable[[Any, list[str]], Any]


def _per_class_table(metric: str, name: str) -> Callable[[Mapping[str, Any]], Any]:
    """The namespace form of ``average=None``: a table, one row per class with its
    ``support`` (the classes of ``classes=`` in their order, else those of the data)."""

    def form(args: Mapping[str, Any]) -> tuple[pl.Expr, Present] | None:
        if args["average"] is not None:
            return None
        beta = float(args.get("beta", 1.0))
        if "beta" in args:
            check_beta(args["beta"])
        label, pred, proba, weight = (args[k] for k in ("label", "pred", "proba", "weight"))
        _prf(metric, label, pred, proba, "micro", args["classes"], weight)  # option checks
        inputs = pred_inputs(label, pred, proba, check_classes(args["classes"]), weight)
        counts = class_counts(inputs)
        vector = MetricSpec(counts.states, counts.vector).expr()
        per_class = PER_CLASS[metric]

        def present(result: Any, by: list[str]) -> Any:
            t, p, c = pl.col("support"), pl.col("predicted"), pl.col("correct")
            return result.with_columns(per_class(t, p, c, beta).cast(F64).alias(name)).select(
                *by, "class", name, "support"
            )

        return vector, present

    return form


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="no class with a prediction (0/0)",
    namespace=_per_class_table("precision", "multiclass_precision"),
    report_per_class=1,  # a column of the multiclass report's per-class table
)
def multiclass_precision(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    average: str | None = "macro",
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    return _prf("precision", label, pred, proba, average, classes, weight)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="no class with a true row (0/0)",
    namespace=_per_class_table("recall", "multiclass_recall"),
    report_per_class=2,  # a column of the multiclass report's per-class table
)
def multiclass_recall(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    average: str | None = "macro",
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    return _prf("recall", label, pred, proba, average, classes, weight)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="empty group (0/0)",
    namespace=_per_class_table("f_beta", "multiclass_f1"),
    report_per_class=3,  # a column of the multiclass report's per-class table
)
def multiclass_f1(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    average: str | None = "macro",
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    return _prf("f_beta", label, pred, proba, average, classes, weight)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined="empty group (0/0)",
    namespace=_per_class_table("f_beta", "multiclass_f_beta"),
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
) -> MetricSpec:
    check_beta(beta)
    return _prf("f_beta", label, pred, proba, average, classes, weight, float(beta))


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined="empty group (0/0)",
    namespace=_per_class_table("jaccard", "multiclass_jaccard"),
)
def multiclass_jaccard(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    average: str | None = "macro",
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Multiclass Jaccard index (intersection over union), micro / macro / weighted / per class.

    Per class k (one-vs-rest, weighted counts): Jₖ = TPₖ / (TPₖ + FPₖ + FNₖ), the rows
    of the class in the truth and in the predictions over the rows in either; null for a
    class absent from both. ``average``:

    * ``"micro"``: Σ TP / Σ (TP + FP + FN) over the classes;
    * ``"macro"`` (default): the unweighted mean over the classes present in the truth or
      in the predictions of the group;
    * ``"weighted"``: the mean weighted by each class's support (weighted count in the
      truth) over the same classes;
    * ``None``: the value of every class of ``classes=`` (required by the expression) as a
      struct with one field per class (named ``str(class)``); the namespace returns a
      table, one row per class with its ``support``.

    The same as scikit-learn's ``jaccard_score``, except for a class of ``classes=``
    absent from both sides: scikit-learn (``labels=``) counts it as ``zero_division``
    (0), here it is null and left out of the averages. Give ``pred=`` (class ids) or
    ``proba=`` with ``classes=`` (the argmax is the prediction).

    References
    ----------
    Jaccard, P. (1912). The distribution of the flora in the alpine zone. New Phytologist
    11(2), 37-50. scikit-learn ``jaccard_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
    >>> round(df.eval.multiclass_jaccard("y", "yhat"), 6)  # (1/3 + 2/3 + 0/2) / 3
    0.333333
    >>> df.select(pe.multiclass_jaccard("y", "yhat", average="micro")).item()  # 3 / (3 + 2 + 2)
    0.42857142857142855
    """
    return _prf("jaccard", label, pred, proba, average, classes, weight)


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
    check=data_checks,
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
) -> MetricSpec:
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
    return class_metric(pred_inputs(label, pred, proba, check_classes(classes), weight), _mcc_body)


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
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
    weights: str | None = None,
) -> MetricSpec:
    """Cohen's kappa between the true and the predicted class, unweighted or weighted.

    κ = (p_o − p_e) / (1 − p_e), with p_o = c / s the weighted agreement and
    p_e = Σ tₖpₖ / s² the chance agreement (tₖ, pₖ: weighted counts of class k in the
    truth and the prediction). Null when p_e = 1 (truth and prediction the same constant);
    a constant truth with a varying prediction gives a defined value (≤ 0), as
    scikit-learn and the binary :func:`polars_eval.cohen_kappa`.

    ``weights="linear"`` or ``"quadratic"`` gives the weighted kappa of ordered classes:
    κ_w = 1 − Σᵢⱼ dᵢⱼ Oᵢⱼ / Σᵢⱼ dᵢⱼ Eᵢⱼ, with O the weighted confusion matrix,
    Eᵢⱼ = tᵢpⱼ / s its expectation under independence and dᵢⱼ = |i − j| or (i − j)² the
    distance between the positions i and j of two classes: their order in ``classes=``,
    else the sorted order of the classes present in the truth or the predictions of the
    group (a class absent from both then takes no position). Null when Σ dᵢⱼ Eᵢⱼ = 0. As
    scikit-learn's ``cohen_kappa_score(weights=..., labels=classes)``; the quadratic
    weighted kappa is the QWK of rating tasks.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement 20(1), 37-46. Cohen, J. (1968). Weighted kappa. Psychological
    Bulletin 70(4), 213-220. scikit-learn ``cohen_kappa_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
    >>> round(df.eval.multiclass_cohen_kappa("y", "yhat"), 6)  # (3/5 − 10/25) / (1 − 10/25)
    0.333333
    >>> kappa = pe.multiclass_cohen_kappa("y", "yhat", weights="linear")
    >>> round(df.select(kappa).item(), 6)  # 1 − s Σ dO / Σ d tᵢpⱼ = 1 − 5 · 3 / 17
    0.117647
    """
    check_choice("weights", weights, KAPPA_WEIGHTS)
    inputs = pred_inputs(label, pred, proba, check_classes(classes), weight)
    if weights is None:
        return class_metric(inputs, _kappa_body)
    return weighted_kappa_spec(inputs, weights)


KAPPA_WEIGHTS = (None, "linear", "quadratic")


def _position_distance(power: int, i: pl.Expr, j: pl.Expr) -> pl.Expr:
    """|i − j| (power 1) or (i − j)² (power 2)."""
    return (i - j).abs() if power == 1 else (i - j) ** 2


def _expected_ratio(power: int) -> Body:
    """Over the class vector (in the class order): s / Σᵢⱼ dᵢⱼ tᵢ pⱼ, null when the sum
    is 0 (below rounding residue). Σᵢ dᵢⱼ tᵢ for every j from cumulative sums:
    j·T≤ⱼ − S≤ⱼ + (S − S≤ⱼ) − j·(T − T≤ⱼ) (linear), Q − 2jS + j²T (quadratic), with T,
    S, Q the sums of tᵢ, i·tᵢ, i²·tᵢ."""

    def body(f: Any) -> pl.Expr:
        j = pl.int_range(f.t.len()).cast(F64)
        total = f.t.sum()
        first = (j * f.t).sum()
        if power == 1:
            t_le, s_le = f.t.cum_sum(), (j * f.t).cum_sum()
            spread = j * t_le - s_le + (first - s_le) - j * (total - t_le)
        else:
            spread = (j * j * f.t).sum() - 2.0 * j * first + j * j * total
        expected = (f.p * spread).sum()
        return pl.when(expected > ZERO_TOL * total * total).then(total / expected)

    return body


def weighted_kappa_spec(inputs: PredInputs, weights: str) -> MetricSpec:
    """The ``"linear"`` or ``"quadratic"`` weighted kappa of prediction-side inputs."""
    return _weighted_kappa(inputs, 1 if weights == "linear" else 2)


def _weighted_kappa(inputs: PredInputs, power: int) -> MetricSpec:
    """The linear (power 1) or quadratic (power 2) weighted kappa: the class vector (for
    the expected disagreement) and the observed one, Σ w d(position of y, of ŷ): one more
    weighted sum with ``classes=``, else from the used rows (the positions are the dense
    ranks of the classes present in the group)."""
    counts = class_counts(inputs)
    states = dict(counts.states)
    if inputs.probs:
        states["nan"] = _nan_state(inputs.probs)
    if inputs.classes is not None:
        assert inputs.indicators is not None
        dtype = class_dtype(inputs.classes)
        at_y = pl.sum_horizontal(
            [
                (inputs.label == class_lit(c, dtype)).cast(F64) * i
                for i, c in enumerate(inputs.classes)
            ]
        )
        at_p = pl.sum_horizontal([p.cast(F64) * i for i, p in enumerate(inputs.indicators)])
        states["disagree"] = State(inputs.weight * _position_distance(power, at_y, at_p))

    def observed(s: States) -> pl.Expr:
        if inputs.classes is not None:
            return s["disagree"]
        y, w = s["y"], s["w"]
        rank = y.append(s["yhat"]).rank("dense").cast(F64)
        at_y, at_p = rank.slice(0, y.len()), rank.slice(y.len())
        return (w * _position_distance(power, at_y, at_p)).sum()

    def finalize(s: States) -> pl.Expr:
        vector = counts.vector(s) if inputs.classes is not None else _vector_of_rows(s, ranked=True)
        ratio = over_classes(vector, _expected_ratio(power))
        value = 1.0 - observed(s) * ratio
        return nan_or(s["nan"], value) if inputs.probs else value

    return MetricSpec(states, finalize)


def _balanced_accuracy_body(adjusted: bool) -> Body:
    """The mean recall over the classes present in the truth; adjusted: rescaled so that
    chance (1 / the number of those classes) scores 0."""

    def body(s: Any) -> pl.Expr:
        score = safe_div(s.c, s.t).mean()
        if not adjusted:
            return score
        chance = 1.0 / (s.t > 0.0).cast(F64).sum()
        return safe_div(score - chance, 1.0 - chance)

    return body


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined="no class with a true row (0/0)",
)
def multiclass_balanced_accuracy(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
    adjusted: bool = False,
) -> MetricSpec:
    """Multiclass balanced accuracy: the mean over the classes of their recall.

    (1 / K') Σₖ TPₖ / (TPₖ + FNₖ) over the K' classes present in the truth of the group
    (weighted counts; a class only predicted is left out), the macro recall
    (:func:`multiclass_recall`). ``adjusted=True`` rescales it so that chance scores 0 and
    a perfect prediction 1: (BA − 1/K') / (1 − 1/K'), in [−1/(K' − 1), 1] (the registered
    range [0, 1] is that of the default; null with one class present). As scikit-learn's
    ``balanced_accuracy_score``. Give ``pred=`` (class ids) or ``proba=`` with
    ``classes=`` (the argmax is the prediction). Null for an empty group.

    References
    ----------
    Brodersen, K. H., Ong, C. S., Stephan, K. E. & Buhmann, J. M. (2010). The balanced
    accuracy and its posterior distribution. ICPR 2010, 3121-3124.
    scikit-learn ``balanced_accuracy_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
    >>> df.eval.multiclass_balanced_accuracy("y", "yhat")  # (1/2 + 2/2 + 0/1) / 3
    0.5
    >>> df.select(pe.multiclass_balanced_accuracy("y", "yhat", adjusted=True)).item()
    0.25
    """
    if not isinstance(adjusted, bool):
        raise InvalidParameterError(f"adjusted must be True or False; got {adjusted!r}")
    inputs = pred_inputs(label, pred, proba, check_classes(classes), weight)
    return class_metric(inputs, _balanced_accuracy_body(adjusted))


CONFUSION_FIELDS = ("truth", "predicted", "weight")


@register(
    task="multiclass",
    inputs=PRED_INPUTS,
    check=data_checks,
    kind="curve",
    summary=False,
    fields=CONFUSION_FIELDS,
    namespace=lambda args: (multiclass_confusion_matrix(**args), _square_table(args["classes"])),
)
def multiclass_confusion_matrix(
    label: IntoExpr,
    pred: IntoExpr | None = None,
    *,
    proba: Proba | None = None,
    classes: Sequence[Any] | None = None,
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Weighted multiclass confusion matrix, rows = truth, columns = prediction.

    The expression gives the non-empty cells in long form, a
    ``List[Struct{truth, predicted, weight}]`` sorted by truth then prediction (cells of
    zero weight are absent): K × K weighted sums with ``classes=`` (the cells then name
    the classes with the dtype of ``classes``), one sort per group of the label and
    prediction columns without. ``weight`` is the row count (Int64)
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
    integer = weight is None  # row counts: summed as integers
    if inputs.classes is None:
        w = inputs.weight.cast(pl.Int64) if integer else inputs.weight
        return MetricSpec(_used_rows(inputs, w), _cells_of_rows)
    assert inputs.indicators is not None
    classes = inputs.classes
    dtype = class_dtype(classes)
    is_true = [inputs.label == class_lit(c, dtype) for c in classes]
    states = {}
    for i, t in enumerate(is_true):
        for j, p in enumerate(inputs.indicators):
            if integer:
                states[f"n{i}_{j}"] = State((inputs.weight.is_not_null() & t & p).cast(pl.Int64))
            else:
                states[f"n{i}_{j}"] = State(inputs.weight * (t & p).cast(F64))
    order = sorted(range(len(classes)), key=lambda i: classes[i])

    def finalize(s: States) -> pl.Expr:
        cells = pl.concat_list(
            [
                pl.struct(
                    class_lit(classes[i], dtype).alias("truth"),
                    class_lit(classes[j], dtype).alias("predicted"),
                    s[f"n{i}_{j}"].alias("weight"),
                )
                for i in order
                for j in order
            ]
        )
        e = pl.element()
        return cells.list.eval(e.filter(e.struct.field("weight") != 0))

    return MetricSpec(states, finalize)


def _cells_of_rows(s: States) -> pl.Expr:
    """The non-empty cells of the used rows (:func:`_used_rows`), from one sort."""
    y, yh, w = s["y"], s["yhat"], s["w"]
    cells = pl.struct(y.alias("truth"), yh.alias("predicted"), w.alias("weight")).sort_by([y, yh])
    e = pl.element()
    t, p = e.struct.field("truth"), e.struct.field("predicted")
    end = ((t != t.shift(-1)) | (p != p.shift(-1))).fill_null(True)
    cum = e.struct.field("weight").cum_sum().filter(end)
    return cells.implode().list.eval(
        pl.struct(
            t.filter(end).alias("truth"),
            p.filter(end).alias("predicted"),
            (cum - cum.shift(1).fill_null(0)).alias("weight"),
        )
    )


def _square_table(classes: Any) -> Present:
    """The namespace form of the confusion matrix: the long cells (by..., truth,
    predicted, weight) as the square table, zeros filled; the classes of ``classes=``,
    else those of the data (read from the result: a LazyFrame needs ``classes=``)."""
    given = check_classes(classes)

    def present(long: Any, by: list[str]) -> Any:
        if given is not None:
            return _confusion_table(long, given, by)
        if isinstance(long, pl.LazyFrame):
            raise InvalidParameterError(
                "classes= is required for the confusion table of a LazyFrame "
                "(its columns must be known before collect)"
            )
        truth, predicted = long.get_column("truth"), long.get_column("predicted")
        if is_textual(truth.dtype):
            common: pl.DataType = pl.String
        elif truth.dtype.is_integer() and predicted.dtype.is_integer():
            common = pl.Int64
        else:
            common = pl.Float64
        seen = pl.concat([truth.cast(common), predicted.cast(common)])
        return _confusion_table(long, seen.drop_nulls().unique().sort().to_list(), by)

    return present


def _confusion_table(long: Any, classes: list[Any], by: list[str]) -> Any:
    """The long cells (by..., truth, predicted, weight) as the square table, zeros filled."""
    dtype = class_dtype(classes)
    lf = long.lazy().with_columns(pl.col("truth", "predicted").cast(dtype))
    columns = [f"predicted_{c}" for c in classes]
    pivot = lf.group_by(*by, "truth").agg(
        pl.col("weight").filter(pl.col("predicted") == class_lit(c, dtype)).sum().alias(col)
        for c, col in zip(classes, columns, strict=True)
    )
    grid = pl.LazyFrame(
        {"truth": pl.Series(classes, dtype=dtype), "__pe_order": range(len(classes))}
    )
    if by:
        grid = lf.select(by).unique().join(grid, how="cross")
    table = (
        grid.join(pivot, on=[*by, "truth"], how="left", nulls_equal=True)
        .with_columns(pl.col(columns).fill_null(0))
        .sort([*by, "__pe_order"], nulls_last=True)
        .select(*by, "truth", *columns)
    )
    return table if isinstance(long, pl.LazyFrame) else table.collect()


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
    keep = not_null(y, *probs) & y.is_in(list(classes))
    if weight is not None:  # (no test of the literal weight 1)
        keep = keep & w.is_not_null() & (w != 0.0)
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
    check=data_checks,
    higher_is_better=False,
    lower=0.0,
    upper=None,
    undefined="empty group",
    summary={"multiclass": {"proba": True}},  # with proba= only
)
def multiclass_logloss(
    label: IntoExpr,
    proba: Proba,
    *,
    classes: Sequence[Any],
    weight: IntoExpr | None = None,
) -> MetricSpec:
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
    return logloss_spec(proba_inputs(label, proba, classes, weight))


def _proba_states(inputs: ProbaInputs) -> dict[str, State]:
    """The weight of the used rows, and whether one of them holds a NaN probability."""
    has_nan = pl.any_horizontal([p.is_nan() for p in inputs.probs]) & inputs.keep
    return {"w": State(pl.when(inputs.keep).then(inputs.weight)), "nan": State(has_nan, "max")}


def _weighted_mean(inputs: ProbaInputs, term: pl.Expr) -> MetricSpec:
    """Σ w·term / Σ w over the used rows; NaN when one of them holds a NaN probability.
    Unweighted, the bare expression is the mean of the term over the used rows (two
    aggregations, not three)."""
    states = _proba_states(inputs)
    states["sum"] = State(states["w"].value * term)
    spec = MetricSpec(
        states,
        lambda s: nan_or(s["nan"], safe_div(s["sum"], s["w"]).cast(F64)),
        extra={"row_mean": True},
    )
    if inputs.weighted:
        return spec
    mean = pl.when(inputs.keep).then(term).mean().cast(F64)
    return replace(spec, alone=nan_or(states["nan"].value.any(), mean))


def logloss_spec(inputs: ProbaInputs) -> MetricSpec:
    """Log loss from probability-side inputs."""
    return _weighted_mean(inputs, -inputs.true_proba.clip(LOGLOSS_EPS, 1.0 - LOGLOSS_EPS).log())


def top_k_hits(inputs: ProbaInputs, k: int) -> pl.Expr:
    """Per row, the chance that the true class is among the k most probable.

    With g classes strictly more probable than the true one and e classes (itself
    included) exactly as probable, a random order of the ties puts it in the top k with
    probability clip((k − g) / e, 0, 1).

    The row's label and probabilities are packed into one struct, the true class's
    probability (a K-branch ``when``) added to it once, and the 2K comparisons read it
    as a field: written inline, Polars evaluates the ``when`` again at each of the 2K
    comparisons (1e6 rows, 5 classes: 2.5x one sort, against 1x packed). Row-level
    struct operations, so the aggregation over the rows still streams.
    """
    names = [f"p{i}" for i in range(len(inputs.probs))]
    row = pl.struct(
        inputs.label.alias("y"), *(p.alias(f"p{i}") for i, p in enumerate(inputs.probs))
    )
    probs = [pl.field(n) for n in names]
    with_pt = row.struct.with_fields(pt=true_class_proba(pl.field("y"), probs, inputs.classes))
    pt = pl.field("pt")
    # counted as booleans (a UInt32 sum), cast once: a Float64 cast per class costs 4x
    greater = pl.sum_horizontal([p > pt for p in probs]).cast(F64)
    equal = pl.sum_horizontal([p == pt for p in probs]).cast(F64)
    return with_pt.struct.eval(h=((k - greater) / equal).clip(0.0, 1.0)).struct.field("h")


@register(
    task="multiclass",
    inputs=PROBA_INPUTS,
    check=data_checks,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="empty group",
    summary={"multiclass": {"proba": True}},  # with proba= only
)
def top_k_accuracy(
    label: IntoExpr,
    proba: Proba,
    *,
    k: int = 2,
    classes: Sequence[Any],
    weight: IntoExpr | None = None,
) -> MetricSpec:
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
    return top_k_spec(proba_inputs(label, proba, classes, weight), k)


def top_k_spec(inputs: ProbaInputs, k: int) -> MetricSpec:
    """Top-k accuracy from probability-side inputs."""
    return _weighted_mean(inputs, top_k_hits(inputs, k))


@register(
    task="multiclass",
    inputs=PROBA_INPUTS,
    check=data_checks,
    higher_is_better=False,
    lower=0.0,
    upper=2.0,
    summary=False,
    undefined="empty group",
)
def multiclass_brier(
    label: IntoExpr,
    proba: Proba,
    *,
    classes: Sequence[Any],
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Multiclass Brier score: the weighted mean over rows of Σₖ (pₖ − [y = k])².

    Brier's original definition, the squared distance between the probability row and the
    one-hot truth, in [0, 2] (it is not halved: for two classes it is twice the binary
    :func:`polars_eval.brier`). As scikit-learn's ``brier_score_loss`` with
    ``labels=classes`` on K > 2 classes (``scale_by_half="auto"`` keeps [0, 2] there).
    ``classes=`` is required (the class of each probability). Null for an empty group;
    NaN if a used row holds a NaN probability (the namespace raises instead).

    References
    ----------
    Brier, G. W. (1950). Verification of forecasts expressed in terms of probability.
    Monthly Weather Review 78(1), 1-3. scikit-learn ``brier_score_loss``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": ["a", "b"], "p": [[0.5, 0.25, 0.25], [0.5, 0.25, 0.25]]})
    >>> df.eval.multiclass_brier("y", "p", classes=["a", "b", "c"])  # (0.375 + 0.875) / 2
    0.625
    """
    classes = check_classes(classes, required="to know the class of each probability")
    assert classes is not None
    return brier_spec(proba_inputs(label, proba, classes, weight))


def brier_spec(inputs: ProbaInputs) -> MetricSpec:
    """The multiclass Brier score from probability-side inputs."""
    dtype = class_dtype(inputs.classes)
    hits = [(inputs.label == class_lit(c, dtype)).cast(F64) for c in inputs.classes]
    squares = [(p - hit) ** 2 for p, hit in zip(inputs.probs, hits, strict=True)]
    return _weighted_mean(inputs, pl.sum_horizontal(squares))


SCORE_INPUTS = {"label": "key", "score": "class_score", "weight": "weight"}


@register(
    task="multiclass",
    inputs=SCORE_INPUTS,
    check=data_checks,
    higher_is_better=False,
    lower=0.0,
    upper=None,
    summary=False,
    undefined="empty group",
)
def multiclass_hinge_loss(
    label: IntoExpr,
    score: Proba,
    *,
    classes: Sequence[Any],
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Multiclass hinge loss (Crammer-Singer): the weighted mean of max(0, 1 − s_y + maxₖ≠ᵧ sₖ).

    ``score`` holds a real decision score per class (e.g. an SVM's ``decision_function``
    or logits; probabilities are scores too), in the same forms as ``proba=`` elsewhere:
    one ``List``/``Array`` column or one column per class, in the order of ``classes=``
    (required). The margin of a row is the score of its true class minus the largest
    score of the other classes. As scikit-learn's ``hinge_loss(labels=classes)`` on K > 2
    classes with the columns in the sorted order of the labels (for two classes
    scikit-learn takes one binary decision value d instead; with d = s₁ − s₀ the two
    agree). The namespace checks that every row holds K finite scores, of any sign and
    sum. Null for an empty group; NaN if a used row holds a NaN score.

    References
    ----------
    Crammer, K. & Singer, Y. (2001). On the algorithmic implementation of multiclass
    kernel-based vector machines. JMLR 2, 265-292. scikit-learn ``hinge_loss``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": ["a", "b"], "s": [[2.0, 0.5, -1.0], [0.5, 0.25, 0.0]]})
    >>> df.eval.multiclass_hinge_loss("y", "s", classes=["a", "b", "c"])  # (0 + 1.25) / 2
    0.625
    """
    classes = check_classes(classes, required="to know the class of each score")
    assert classes is not None
    return hinge_spec(proba_inputs(label, score, classes, weight))


def hinge_spec(inputs: ProbaInputs) -> MetricSpec:
    """The Crammer-Singer hinge loss from score-side inputs (:func:`proba_inputs`)."""
    dtype = class_dtype(inputs.classes)
    others = pl.max_horizontal(
        [
            pl.when(inputs.label != class_lit(c, dtype)).then(s)
            for c, s in zip(inputs.classes, inputs.probs, strict=True)
        ]
    )
    return _weighted_mean(inputs, (1.0 - inputs.true_proba + others).clip(lower_bound=0.0))


# the one-vs-rest AUC: the used rows, sorted per class in one numpy kernel

AUC_DTYPE = pl.Struct({average: F64 for average in AUC_AVERAGES})


def class_index(y: pl.Expr, classes: Sequence[Any]) -> pl.Expr:
    """The position of each row's label in ``classes`` (Int32; null for another label)."""
    dtype = class_dtype(classes)
    expr: Any = pl
    for i, c in enumerate(classes):
        expr = expr.when(y == class_lit(c, dtype)).then(pl.lit(i, dtype=pl.Int32))
    return expr.otherwise(pl.lit(None, dtype=pl.Int32))


def auc_spec(inputs: ProbaInputs, *, per_class: bool = True, micro: bool = True) -> MetricSpec:
    """The one-vs-rest AUCs of a group as a struct ``{micro, macro, weighted}``.

    The state is the used rows: ``y`` (the class index), ``p0`` … (the probabilities)
    and, weighted, ``w``; :func:`ovr_auc` computes the macro and weighted averages
    (``per_class``) and the micro average (``micro``) from them.
    """
    k = len(inputs.classes)
    fields = [class_index(inputs.label, inputs.classes).alias("y")]
    fields += [p.alias(f"p{i}") for i, p in enumerate(inputs.probs)]
    if inputs.weighted:
        fields.append(inputs.weight.alias("w"))
    rows = State(pl.struct(fields).filter(inputs.keep), "rows")
    kernel = functools.partial(
        ovr_auc, k=k, weighted=inputs.weighted, per_class=per_class, micro=micro
    )

    def finalize(s: States) -> pl.Expr:
        return s["rows"].map_batches(kernel, return_dtype=AUC_DTYPE, returns_scalar=True)

    return MetricSpec({"rows": rows}, finalize)


def ovo_auc_spec(inputs: ProbaInputs, average: str) -> MetricSpec:
    """Hand & Till's one-vs-one AUC of a group, ``"macro"`` or ``"weighted"``: the used
    rows as in :func:`auc_spec`, then :func:`ovo_auc` over them."""
    fields = [class_index(inputs.label, inputs.classes).alias("y")]
    fields += [p.alias(f"p{i}") for i, p in enumerate(inputs.probs)]
    if inputs.weighted:
        fields.append(inputs.weight.alias("w"))
    rows = State(pl.struct(fields).filter(inputs.keep), "rows")
    kernel = functools.partial(
        ovo_auc, k=len(inputs.classes), weighted=inputs.weighted, average=average
    )

    def finalize(s: States) -> pl.Expr:
        return s["rows"].map_batches(kernel, return_dtype=F64, returns_scalar=True)

    return MetricSpec({"rows": rows}, finalize)


@register(
    task="multiclass",
    inputs=PROBA_INPUTS,
    check=data_checks,
    higher_is_better=True,
    lower=0.0,
    upper=1.0,
    undefined="no class with both a positive and a negative row (ovo: fewer than two classes)",
    summary={"multiclass": {"proba": True}},  # with proba= only
)
def multiclass_auc(
    label: IntoExpr,
    proba: Proba,
    *,
    average: str = "macro",
    multi_class: str = "ovr",
    classes: Sequence[Any],
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """ROC AUC of multiclass probabilities, one-vs-rest (micro / macro / weighted) or one-vs-one.

    For each class k, the binary AUC of [y = k] against the probability of k (trapezoid
    rule, tied scores count ½, weighted rows). ``average``:

    * ``"macro"`` (default): the mean over the classes whose AUC is defined (a class
      absent from the truth of the group, or the only class present, is left out);
    * ``"weighted"``: the mean weighted by each class's support, over the same classes;
    * ``"micro"``: one binary AUC over the n × K one-hot labels and probabilities.

    Same as scikit-learn's ``roc_auc_score(multi_class="ovr", average=...)`` when every
    class is present. One sort per class (a UInt64 key of its probability and the label;
    weighted: an arg-sort), one more of the n × K keys for ``"micro"``.
    ``classes=`` is required.

    ``multi_class="ovo"``: Hand & Till's M, over the pairs of classes present in the truth
    of the group. For a pair (a, b), on the rows of class a or b only, the mean of the
    AUC of [y = a] against the probability of a and of [y = b] against the probability
    of b; ``"macro"``: the mean over the pairs, ``"weighted"``: the mean weighted by the
    (weighted) number of rows of each pair; ``"micro"`` is not defined. Null with fewer
    than two classes present. As scikit-learn's ``roc_auc_score(multi_class="ovo")``,
    which takes no sample weights (here the weights count as repeated rows). Two sorts
    per pair of classes.

    References
    ----------
    Fawcett, T. (2006). An introduction to ROC analysis. Pattern Recognition Letters 27(8),
    §9 (one-vs-rest "class reference formulation"). Hand, D. J. & Till, R. J. (2001). A
    simple generalisation of the area under the ROC curve for multiple class
    classification problems. Machine Learning 45(2), 171-186. scikit-learn
    ``roc_auc_score``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": ["a", "b", "c", "a"],
    ...                    "p": [[0.6, 0.2, 0.2], [0.3, 0.4, 0.3], [0.5, 0.1, 0.4], [0.2, 0.5, 0.3]]})
    >>> round(df.eval.multiclass_auc("y", "p", classes=["a", "b", "c"]), 6)  # (1/2 + 2/3 + 1) / 3
    0.722222
    >>> ovo = pe.multiclass_auc("y", "p", multi_class="ovo", classes=["a", "b", "c"])
    >>> round(df.select(ovo).item(), 6)  # pairs ab (1/2), ac (3/4), bc (1)
    0.75
    """
    check_choice("average", average, AUC_AVERAGES)
    check_choice("multi_class", multi_class, ("ovr", "ovo"))
    if multi_class == "ovo" and average == "micro":
        raise InvalidParameterError(
            'average="micro" is not defined for multi_class="ovo"; use "macro" or "weighted"'
        )
    classes = check_classes(classes, required="to know the class of each probability")
    assert classes is not None
    inputs = proba_inputs(label, proba, classes, weight)
    if multi_class == "ovo":
        return ovo_auc_spec(inputs, average)
    parts = auc_spec(inputs, per_class=average != "micro", micro=average == "micro")
    return MetricSpec(parts.states, lambda s: parts.finalize(s).struct.field(average))
