"""The multiclass task table of the ``.eval`` namespace (SPEC §4): ``df.eval.multiclass``.

The single-metric methods are generated from the registry (``namespace.py``): their data
checks are the metrics' ``check=`` hook and their tables (``average=None``, the
confusion matrix) the ``namespace=`` hook (``metrics/multiclass.py``). The task table
plans the specs of its metrics (the summary metrics, or those named in ``metrics=``) in
one query (``_core.planner``): the class vector that every prediction metric reads (3·K
weighted sums with ``classes=``; balanced accuracy and Jaccard are formulas of it too, the
weighted kappa adds one sum), the one-vs-rest AUCs (one kernel over the used rows for the
three averages; one-vs-one: one per average), log loss, Brier score, hinge loss and top-k
accuracy (sums sharing their weight and NaN states). A registered multiclass metric
without such a form is its own spec, bound to the table's arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.planner import normalize_by
from polars_eval._core.registry import MetricInfo
from polars_eval._core.spec import MetricSpec
from polars_eval._core.table import Checks, Output, Specs, Table, run
from polars_eval._core.windows import Grouping, grouped_method
from polars_eval._exprs import F64
from polars_eval._params import check_choice, check_positive_int
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


def _brier_constant(s: Any) -> pl.Expr:
    """Brier score of the class frequencies f as probabilities: 1 − Σ fₖ² (null when empty)."""
    n = s.t.sum()
    f = s.t / n
    return pl.when(n > 0.0).then(1.0 - (f * f).sum())


def _hinge_constant(s: Any) -> pl.Expr:
    """Hinge loss of the class frequencies f as scores: the mean over the rows of
    max(0, 1 − f_y + maxₖ≠ᵧ fₖ), the largest other frequency being the second largest for
    the class of the largest alone, the largest for every other (null when empty)."""
    n = s.t.sum()
    f = s.t / n
    top = f.max()
    alone = (f == top) & ((f == top).sum() == 1)
    others = pl.when(alone).then(f.filter(f < top).max()).otherwise(top)
    loss = (1.0 - f + others).clip(lower_bound=0.0)
    return pl.when(n > 0.0).then((s.t * loss).sum() / n)


# ---------------------------------------------------------------------------------------
# The table's metrics and their columns
# ---------------------------------------------------------------------------------------

Final = Callable[[str], pl.Expr]
"""The finalized value of a planned spec, by its key."""
Column = Callable[[Final], pl.Expr]
"""A table column from the finalized specs."""


def summary_infos(metrics: str | Sequence[str] | None, probabilities: bool) -> list[MetricInfo]:
    """The metrics of ``df.eval.multiclass``: the summary metrics (the prediction metrics
    only without probabilities), or the multiclass metrics named in ``metrics=``; a metric
    of probabilities named without ``proba=`` is an error that says so."""
    infos = _registry.select("multiclass", metrics, proba=probabilities)
    if not probabilities:
        needs = [info.name for info in infos if "pred" not in info.inputs]
        if needs:
            raise InvalidParameterError(
                f"{needs[0]} needs proba= (one probability or score per class, in the order "
                "of classes=), which this call does not give"
            )
    return infos


def check_options(multi_class: Any, weights: Any, adjusted: Any) -> None:
    """The options of the table's metrics: the AUC's ``multi_class``, Cohen's kappa's
    ``weights`` (not the row weights, ``weight=``) and balanced accuracy's ``adjusted``."""
    check_choice("multi_class", multi_class, ("ovr", "ovo"))
    if not (weights is None or isinstance(weights, str)) or weights not in m.KAPPA_WEIGHTS:
        raise InvalidParameterError(
            "weights must be one of None, 'linear', 'quadratic' (the weighting of Cohen's "
            f"kappa; the row weights are weight=); got {weights!r}"
        )
    if not isinstance(adjusted, bool):
        raise InvalidParameterError(f"adjusted must be True or False; got {adjusted!r}")


def bind(info: MetricInfo, args: Mapping[str, Any], options: Mapping[str, Any]) -> MetricSpec:
    """The spec of a metric bound to the table's arguments and options (its option
    checks; an option it needs that the table does not take is an error naming it). A
    prediction metric reads ``pred=`` when given, else the argmax of ``proba=``; the hinge
    loss reads ``proba=`` as its decision scores."""
    available = {**args, **options, "score": args["proba"]}
    if "pred" in info.inputs and args["pred"] is not None:
        available["proba"] = None
    return _registry.bind(info, available)


def _of_spec(key: str) -> Column:
    return lambda final: final(key)


def _of_field(key: str, name: str) -> Column:
    return lambda final: final(key).struct.field(name)


def _of_vector(body: m.Body, *, majority: bool = False) -> Column:
    """``body`` over the class vector; ``majority``: over that of the constant predictor."""

    def column(final: Final) -> pl.Expr:
        vector = final(VECTOR)
        return m.over_classes(_baseline_vector(vector) if majority else vector, body)

    return column


def _proba_form(name: str, side: m.ProbaInputs, k: int) -> tuple[MetricSpec, m.Body] | None:
    """A metric of the probabilities over the table's shared probability side, and its value
    for the constant predictor (the class frequencies as probabilities) over the vector."""
    if name == "multiclass_logloss":
        return m.logloss_spec(side), _entropy
    if name == "top_k_accuracy":
        return m.top_k_spec(side, k), _top_k_constant(k)
    if name == "multiclass_brier":
        return m.brier_spec(side), _brier_constant
    if name == "multiclass_hinge_loss":
        return m.hinge_spec(side), _hinge_constant
    return None


@dataclass
class _Table:
    """The specs to plan, and each column of the table: its value, its constant
    predictor's value (``baseline=True``) and why it may be undefined."""

    pred_side: m.PredInputs
    proba_side: m.ProbaInputs | None
    options: Mapping[str, Any]
    specs: dict[str, MetricSpec] = field(default_factory=dict)
    values: dict[str, Column] = field(default_factory=dict)
    constants: dict[str, Column] = field(default_factory=dict)
    undefined: dict[str, str] = field(default_factory=dict)

    def add(self, info: MetricInfo, spec: MetricSpec) -> None:
        """The columns of one metric (``spec``: bound to the table's arguments, for a
        metric that is not a formula of the shared class vector or probability side)."""
        name, o = info.name, self.options
        columns: dict[str, tuple[Column, Column | None]] = {}
        formulas = m.table_formulas(name, adjusted=o["adjusted"])
        if name == "multiclass_cohen_kappa" and o["weights"] is not None:
            # the constant predictor's weighted kappa is 0 (null) where the unweighted one is
            self.specs[name] = m.weighted_kappa_spec(self.pred_side, o["weights"])
            constant = _of_vector(m.CLASS_FORMULAS["cohen_kappa"], majority=True)
            columns[name] = (_of_spec(name), constant)
        elif formulas:
            for column, body in formulas.items():
                columns[column] = (_of_vector(body), _of_vector(body, majority=True))
        elif name == "multiclass_auc" and self.proba_side is not None:
            if o["multi_class"] == "ovr":
                self.specs[AUCS] = m.auc_spec(self.proba_side)
                for avg in ("macro", "weighted", "micro"):
                    body = _micro_auc_constant if avg == "micro" else _auc_constant
                    columns[f"{name}_{avg}"] = (_of_field(AUCS, avg), _of_vector(body))
            else:  # one-vs-one: no micro average
                for avg in ("macro", "weighted"):
                    self.specs[f"{name}_{avg}"] = m.ovo_auc_spec(self.proba_side, avg)
                    columns[f"{name}_{avg}"] = (
                        _of_spec(f"{name}_{avg}"),
                        _of_vector(_auc_constant),
                    )
        elif self.proba_side is not None and (form := _proba_form(name, self.proba_side, o["k"])):
            self.specs[name], constant_body = form
            columns[name] = (_of_spec(name), _of_vector(constant_body))
        else:  # its own spec (no constant-predictor form)
            self.specs[name] = spec
            columns[name] = (_of_spec(name), None)
        for column, (value, constant) in columns.items():
            self.values[column] = value
            if constant is not None:
                self.constants[column] = constant
            self.undefined[column] = info.undefined or "no defined value"


def table_specs(
    args: Mapping[str, Any],
    options: Mapping[str, Any],
    metrics: str | Sequence[str] | None,
    baseline: bool,
) -> tuple[list[list[pl.Expr]], _Table]:
    """The task table's specs and columns (:class:`_Table`) for the column arguments
    ``args`` (label, pred, proba, classes — checked —, weight) and the metrics' options,
    with the stages of row columns their states read (the parts many states share,
    computed once). ``pe.Evaluation`` keeps the same specs' states."""
    check_options(options["multi_class"], options["weights"], options["adjusted"])
    infos = summary_infos(metrics, args["proba"] is not None)
    bound = {info.name: bind(info, args, options) for info in infos}
    stages, pred_side, proba_side = m.shared_columns(
        args["label"], args["pred"], args["proba"], args["classes"], args["weight"]
    )
    table = _Table(pred_side, proba_side, options)
    if baseline or any("pred" in info.inputs for info in infos):
        counts = m.class_counts(pred_side)
        table.specs[VECTOR] = MetricSpec(counts.states, counts.vector)
    for info in infos:
        table.add(info, bound[info.name])
    return stages, table


def table_columns(table: _Table, final: Mapping[str, pl.Expr], baseline: bool) -> list[pl.Expr]:
    """The table's columns (and ``<metric>_baseline`` ones) over the finalized value of
    each of its specs (``final``, by spec name)."""
    finals = [value(final.__getitem__).alias(name) for name, value in table.values.items()]
    if baseline:
        finals += [
            table.constants[name](final.__getitem__).alias(f"{name}_baseline")
            for name in table.values
            if name in table.constants
        ]
    return finals


def multiclass_table(a: Mapping[str, Any]) -> Table:
    """The table of ``df.eval.multiclass`` from the arguments of
    :meth:`MulticlassMethods.multiclass` by name (``grouping`` among them; see
    :func:`~polars_eval._core.table.arguments`): the specs of :func:`table_specs`, their
    columns, the row columns they share, the class-id roles and the multiclass data
    checks."""
    pred, proba, classes, baseline = a["pred"], a["proba"], a["classes"], a["baseline"]
    cls = m.check_classes(classes)
    k = 2 if a["k"] is None else a["k"]  # None: the default (as a CLI without -k passes it)
    if pred is None and proba is None:
        raise InvalidParameterError("give pred= (class ids) and/or proba= (probabilities)")
    if proba is not None:
        cls = m.check_classes(classes, required="with proba= (the class of each probability)")
        check_positive_int("k", k)
    args = {
        "label": a["label"],
        "pred": pred,
        "proba": proba,
        "classes": cls,
        "weight": a["weight"],
    }
    options = {"k": k, "multi_class": a["multi_class"], "weights": a["weights"]}
    stages, table = table_specs(
        args, {**options, "adjusted": a["adjusted"]}, a["metrics"], baseline
    )

    def columns(values: Mapping[str, pl.Expr]) -> list[pl.Expr]:
        return table_columns(table, values, baseline)

    return Table(
        Specs(table.specs, columns, stages=stages, columns_first=True),
        Checks(m.PRED_INPUTS, args, a["validate"], m.data_checks(args)),
        Output(table.undefined, strict=False),
        by=normalize_by(a["by"]),
        grouping=a.get("grouping"),
        # Polars' default (streaming) plan of this query, whose AUC state is the rows,
        # costs a third more CPU than the in-memory engine's (1e6 rows, 10 classes)
        engine="in-memory",
    )


class MulticlassMethods:
    """``df.eval.multiclass``: every summary metric of the task, one wide row per group."""

    _frame: pl.DataFrame | pl.LazyFrame

    @grouped_method
    def multiclass(
        self,
        label: IntoExpr,
        *,
        pred: IntoExpr | None = None,
        proba: Proba | None = None,
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        k: int = 2,
        multi_class: str = "ovr",
        weights: str | None = None,
        adjusted: bool = False,
        baseline: bool = False,
        metrics: str | Sequence[str] | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
        grouping: Grouping | None = None,
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

        ``metrics=`` chooses the metrics instead: any registered multiclass metric of one
        value, in the order given, the ones outside the default table included
        (``["multiclass_auc", "multiclass_balanced_accuracy", "multiclass_jaccard",
        "multiclass_brier", "multiclass_hinge_loss"]``). A metric with an ``average`` gives
        its columns as above (Jaccard: ``multiclass_jaccard_micro`` ...). The hinge loss
        reads ``proba=`` as its decision scores (the table checks them as probabilities:
        for raw scores use ``df.eval.multiclass_hinge_loss``). A metric of probabilities
        without ``proba=``, or one that needs an option the table does not take
        (``multiclass_f_beta``'s ``beta=``), is an error that says so. Options of the
        metrics: ``multi_class="ovo"`` makes the AUC columns Hand & Till's one-vs-one AUC
        (macro and weighted; no micro), ``weights="linear"`` or ``"quadratic"`` makes
        ``multiclass_cohen_kappa`` the weighted kappa (the kappa's weighting; the row
        weights are ``weight=``), ``adjusted=True`` adjusts
        ``multiclass_balanced_accuracy`` for chance.

        ``baseline=True`` adds ``<metric>_baseline``: each metric of the best constant
        predictor of the group (SPEC §8, as YDF): the majority class as the prediction
        (the first class among ties) and the class frequencies as the probabilities
        (log loss = entropy of the labels, AUC 0.5 for macro / weighted, one-vs-one alike,
        Brier score 1 − Σ fₖ², hinge loss of the frequencies as scores, balanced accuracy
        1 / the classes present, kappa 0, weighted or not). Every registered multiclass
        metric has its baseline; a metric registered later without a constant-predictor
        form here gets no baseline column.

        ``classes=`` is required with ``proba=``; with ``pred=`` alone it is optional (the
        classes are then learnt from each group's data). Returns a one-row DataFrame
        without ``by`` (a LazyFrame on a LazyFrame).

        ``time=``, ``every=`` (``period=``, ``offset=``) evaluate per time window, and
        ``grouping_sets=`` / ``rollup=`` (``min_rows=``) per slice, from merged states (SPEC
        §13, :mod:`polars_eval._core.windows`; the baseline too: it reads the class vector).

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
        >>> df.eval.multiclass(
        ...     "y", pred="yhat", metrics=["multiclass_balanced_accuracy", "multiclass_cohen_kappa"],
        ...     adjusted=True, weights="linear",
        ... ).with_columns(pl.all().round(4))
        shape: (1, 2)
        ┌──────────────────────────────┬────────────────────────┐
        │ multiclass_balanced_accuracy ┆ multiclass_cohen_kappa │
        │ ---                          ┆ ---                    │
        │ f64                          ┆ f64                    │
        ╞══════════════════════════════╪════════════════════════╡
        │ 0.25                         ┆ 0.1176                 │
        └──────────────────────────────┴────────────────────────┘
        """
        arguments = dict(locals())  # every argument by name (the first statement)
        del arguments["self"]
        return run(multiclass_table(arguments), self._frame)


def evaluation_state(d: Any, trained: bool) -> tuple[Table | None, Checks]:
    """What ``pe.Evaluation`` keeps for a multiclass definition ``d`` (the task's hook,
    :class:`~polars_eval._core.tasks.Task`): with ``classes=``, the table where its states
    are bounded (not the AUCs, whose state is the rows); else None: the rows (classes
    learnt from each group's rows, or the task method's error). ``metrics=`` may name
    columns: the states kept are those of the metrics behind them."""
    a = d.arguments()
    if a["classes"] is None or (a["pred"] is None and a["proba"] is None):
        args = {key: a[key] for key in (*m.PRED_INPUTS, "classes")}
        return None, Checks(m.PRED_INPUTS, args)
    table = multiclass_table({**a, "metrics": _behind(d.metrics)})
    if table.bounded:
        return table, table.checks
    return None, Checks(table.checks.inputs, table.checks.args)


def _behind(names: Sequence[str] | None) -> list[str] | None:
    """The registered metrics behind ``metrics=``: the names themselves when every one is
    registered, else the metrics whose columns they name (``multiclass_f1_macro`` is a
    column of ``multiclass_f1``; None: the task's defaults)."""
    if names is None:
        return None
    infos = _registry.by_task("multiclass")
    if set(names) <= {info.name for info in infos}:
        return list(names)
    return [
        info.name
        for info in infos
        if any(n == info.name or n.startswith(info.name + "_") for n in names)
    ] or None


def evaluation_request(d: Any) -> tuple[dict[str, Any], bool]:
    """``pe.Evaluation``'s ``metrics=`` as the task method's (the task's hook): the names
    when every one is a registered multiclass metric (the method's columns then stand);
    otherwise the whole table, whose columns the names select."""
    names = d.metrics
    if names is not None and set(names) <= {i.name for i in _registry.by_task("multiclass")}:
        return {"metrics": list(names)}, False
    return {}, True
