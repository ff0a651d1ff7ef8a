"""The multiclass task table of the ``.eval`` namespace (SPEC §4): ``df.eval.multiclass``.

The single-metric methods are generated from the registry (``namespace.py``): their data
checks are the metrics' ``check=`` hook and their tables (``average=None``, the
confusion matrix) the ``namespace=`` hook (``metrics/multiclass.py``). The task table
plans the specs of every summary metric in one query (``_core.planner``): the class
vector that every prediction metric reads (3·K weighted sums with ``classes=``), the
one-vs-rest AUCs (one kernel over the used rows for the three averages), log loss and
top-k accuracy (sums sharing their weight and NaN states).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.planner import Plan, execute, normalize_by, plan_specs
from polars_eval._core.spec import MetricSpec
from polars_eval._exprs import F64
from polars_eval._params import check_positive_int
from polars_eval._typing import IntoExpr, Proba
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics import multiclass as m

VECTOR = "__pe_classes"
AUCS = "__pe_aucs"


# ---------------------------------------------------------------------------------------
# The constant predictor (baseline=True), over the class vector
# ---------------------------------------------------------------------------------------


def _baseline_vector(vector: pl.Expr) -> pl.Expr:
    """The class vector of the constant predictor: every row predicted the majority class.

    Majority = largest weighted support, the first in the vector's class order among ties.
    """
    e = pl.element()
    t = e.struct.field("support")
    top = (t == t.max()) & ((t == t.max()).cum_sum() == 1)
    return vector.list.eval(
        pl.struct(
            e.struct.field("class").alias("class"),
            t.alias("support"),
            pl.when(top).then(t.sum()).otherwise(0.0).alias("predicted"),
            pl.when(top).then(t).otherwise(0.0).alias("correct"),
        )
    )


def _entropy(s: Any) -> pl.Expr:
    f = s.t.filter(s.t > 0.0) / s.t.sum()
    return -(f * f.log()).sum()


def _top_k_constant(k: int) -> Callable[[Any], pl.Expr]:
    def body(s: Any) -> pl.Expr:
        greater = s.t.rank("min", descending=True).cast(F64) - 1.0
        equal = s.t.rank("max", descending=True).cast(F64) - greater
        hits = ((k - greater) / equal).clip(0.0, 1.0)
        return (s.t * hits).sum() / s.t.sum()

    return body


def _auc_constant(s: Any) -> pl.Expr:
    """Macro/weighted AUC of a constant score: 0.5 where some class has both sides."""
    n = s.t.sum()
    return pl.when(((s.t > 0.0) & (s.t < n)).any()).then(0.5).otherwise(None)


def _micro_auc_constant(s: Any) -> pl.Expr:
    """Micro AUC of the class frequencies as probabilities (n × K one-hot pairs).

    Column k scores every row f_k = t_k / n: t_k positive and n − t_k negative entries at
    that score; the trapezoid AUC of these K points (equal frequencies tie).
    """
    n = s.t.sum()
    score = s.t.sort()
    pos = s.t.sort_by(s.t)
    neg = (n - s.t).sort_by(s.t)
    end = (score != score.shift(-1)).fill_null(True)
    cum_pos, cum_neg = pos.cum_sum().filter(end), neg.cum_sum().filter(end)
    below = cum_neg.shift(1).fill_null(0.0)
    block_pos = cum_pos - cum_pos.shift(1).fill_null(0.0)
    area = (block_pos * (below + (cum_neg - below) / 2.0)).sum()
    total_neg = neg.sum()
    return pl.when((n > 0.0) & (total_neg > 0.0)).then(area / (n * total_neg)).otherwise(None)


def table_specs(
    label: IntoExpr,
    pred: IntoExpr | None,
    proba: Proba | None,
    classes: list[Any] | None,
    weight: IntoExpr | None,
    k: int,
    *,
    aucs: bool = True,
) -> tuple[list[list[pl.Expr]], dict[str, MetricSpec]]:
    """The specs of the task table (the class vector; with ``proba``: the one-vs-rest AUCs
    unless ``aucs=False``, log loss, top-k accuracy) and the stages of row columns their
    states read (the parts that many states share, computed once)."""
    stages, pred_side, proba_side = m.shared_columns(label, pred, proba, classes, weight)
    counts = m.class_counts(pred_side)
    specs = {VECTOR: MetricSpec(counts.states, counts.vector)}
    if proba_side is not None:
        if aucs:
            specs[AUCS] = m.auc_spec(proba_side)
        specs["multiclass_logloss"] = m.logloss_spec(proba_side)
        specs["top_k_accuracy"] = m.top_k_spec(proba_side, k)
    return stages, specs


def table_columns(
    final: Mapping[str, pl.Expr], *, k: int, baseline: bool
) -> tuple[list[pl.Expr], dict[str, str]]:
    """The task table's columns (and ``<metric>_baseline`` ones) over the value of each
    spec of :func:`table_specs` (``final``, by spec name), and why each may be undefined.
    The probability metrics come when their specs are in ``final``."""
    vector = final[VECTOR]
    columns: dict[str, pl.Expr] = {}
    constant: dict[str, pl.Expr] = {}  # the same metric of the constant predictor
    undefined: dict[str, str] = {}
    for info in _registry.by_task("multiclass"):
        if not info.summary or info.kind != "scalar":
            continue
        if "pred" in info.inputs:
            for name, body in m.table_formulas(info.name).items():
                columns[name] = m.over_classes(vector, body)
                constant[name] = m.over_classes(_baseline_vector(vector), body)
        elif info.name == "multiclass_auc":
            if AUCS not in final:
                continue
            for avg in ("macro", "weighted", "micro"):
                columns[f"{info.name}_{avg}"] = final[AUCS].struct.field(avg)
                body = _micro_auc_constant if avg == "micro" else _auc_constant
                constant[f"{info.name}_{avg}"] = m.over_classes(vector, body)
        elif info.name in final:
            columns[info.name] = final[info.name]
            body = _entropy if info.name == "multiclass_logloss" else _top_k_constant(k)
            constant[info.name] = m.over_classes(vector, body)
        for name in columns:
            undefined.setdefault(name, info.undefined or "no defined value")
    finals = [e.alias(name) for name, e in columns.items()]
    if baseline:
        finals += [constant[name].alias(f"{name}_baseline") for name in columns]
    return finals, undefined


class MulticlassMethods:
    """``df.eval.multiclass``: every summary metric of the task, one wide row per group."""

    _frame: pl.DataFrame | pl.LazyFrame

    def multiclass(
        self,
        label: IntoExpr,
        *,
        pred: IntoExpr | None = None,
        proba: Proba | None = None,
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        k: int = 2,
        baseline: bool = False,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        """Every multiclass summary metric of the registry, one wide row per group.

        With ``pred=`` (class ids): accuracy, precision / recall / F1 each micro, macro and
        weighted (columns ``multiclass_precision_micro`` ...), MCC and Cohen's kappa, all
        finalized from one class state per group. With ``proba=`` (and ``classes=``,
        required): log loss, one-vs-rest AUC macro / weighted / micro
        (``multiclass_auc_macro`` ...) and ``top_k_accuracy`` (top ``k``); without
        ``pred=`` the prediction metrics use the argmax of ``proba`` (the first class of
        ``classes`` among ties). Undefined values are null and reported in one warning;
        without ``by``, an input with no row to evaluate (empty, or every row null or of weight
        0) is an ``UndefinedMetricError``, as for a single metric.

        ``baseline=True`` adds ``<metric>_baseline``: each metric of the best constant
        predictor of the group (SPEC §8, as YDF): the majority class as the prediction
        (the first class among ties) and the class frequencies as the probabilities
        (log loss = entropy of the labels, AUC 0.5 for macro / weighted).

        ``classes=`` is required with ``proba=``; with ``pred=`` alone it is optional (the
        classes are then learnt from each group's data). Returns a one-row DataFrame
        without ``by`` (a LazyFrame on a LazyFrame).

        Examples
        --------
        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [0, 0, 1, 1, 2], "yhat": [0, 1, 1, 1, 0]})
        >>> df.eval.multiclass("y", pred="yhat").select(
        ...     pl.col("multiclass_accuracy", "multiclass_recall_macro", "multiclass_mcc").round(4)
        ... )
        shape: (1, 3)
        ┌─────────────────────┬─────────────────────────┬────────────────┐
        │ multiclass_accuracy ┆ multiclass_recall_macro ┆ multiclass_mcc │
        │ ---                 ┆ ---                     ┆ ---            │
        │ f64                 ┆ f64                     ┆ f64            │
        ╞═════════════════════╪═════════════════════════╪════════════════╡
        │ 0.6                 ┆ 0.5                     ┆ 0.3608         │
        └─────────────────────┴─────────────────────────┴────────────────┘
        """
        cls = m.check_classes(classes)
        k = 2 if k is None else k  # None: the default (as a CLI without -k passes it)
        if pred is None and proba is None:
            raise InvalidParameterError("give pred= (class ids) and/or proba= (probabilities)")
        if proba is not None:
            cls = m.check_classes(classes, required="with proba= (the class of each probability)")
            check_positive_int("k", k)
        args = {"label": label, "pred": pred, "proba": proba, "classes": cls, "weight": weight}
        stages, specs = table_specs(label, pred, proba, cls, weight, k)
        planned = plan_specs(specs, columns_first=True)
        # each spec's value over the state columns (the rows specs: their column)
        final = {
            name: pl.col(name)
            if spec.has_rows
            else spec.finalize({state: pl.col(c) for state, c in planned.columns[name].items()})
            for name, spec in specs.items()
        }
        finals, undefined = table_columns(final, k=k, baseline=baseline)
        plan = Plan(
            exprs=planned.aggs,
            finalize=finals,
            columns=[*stages, planned.row_columns],
            inputs=m.PRED_INPUTS,
            args=args,
            by=normalize_by(by),
            validate=validate,
            undefined=undefined,
            strict=False,
            extra_checks=m.data_checks(args),
        )
        return execute(self._frame, plan)
