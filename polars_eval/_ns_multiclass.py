"""Multiclass methods of the ``.eval`` namespace (SPEC §4).

Every multiclass metric has an explicit method here (rather than the generated one)
because multiclass inputs need checks the role table cannot express: labels and
predictions inside ``classes=``, probability columns given as one ``List``/``Array``
column, and probability rows summing to 1 (tolerance 1e-6). ``df.eval.multiclass``
evaluates every summary metric of the registry in one wide row per group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.planner import Plan, _deferred, execute, normalize_by
from polars_eval._core.registry import Role
from polars_eval._exprs import F64, column_name, to_expr
from polars_eval._params import check_positive_int
from polars_eval._typing import IntoExpr
from polars_eval._validate import Check, column_problems
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.families import multiclass as m

STATE = "__pe_state"
SUM_TOLERANCE = 1e-6
"""Probability rows must sum to 1 within this tolerance (SPEC §2); nothing is renormalised."""

Frame = pl.DataFrame | pl.LazyFrame


# ---------------------------------------------------------------------------------------
# Validation of multiclass inputs
# ---------------------------------------------------------------------------------------


def _is_textual(dtype: pl.DataType) -> bool:
    return dtype == pl.String or isinstance(dtype, (pl.Categorical, pl.Enum))


def _dtype_of(item: IntoExpr, schema: Mapping[str, pl.DataType]) -> pl.DataType | None:
    """The dtype of a column argument, None when it cannot be resolved (missing column)."""
    if isinstance(item, str):
        return schema.get(item)
    try:
        return pl.LazyFrame(schema=schema).select(item).collect_schema().dtypes()[0]
    except Exception:  # noqa: BLE001 - the query reports it
        return None


def _class_checks(
    arg: str,
    item: IntoExpr,
    classes: list[Any],
    schema: Mapping[str, pl.DataType],
    problems: list[str],
) -> list[Check]:
    dtype = _dtype_of(item, schema)
    if dtype is None:
        return []
    name = column_name(item)
    textual = isinstance(classes[0], str)
    if _is_textual(dtype) != textual or not (_is_textual(dtype) or dtype.is_numeric()):
        problems.append(
            f'column "{name}" (argument {arg}=) holds {dtype} values but classes= holds '
            f"{type(classes[0]).__name__}s: {classes!r}"
        )
        return []
    expr = to_expr(item)
    return [
        Check(
            name,
            expr.is_not_null() & ~expr.is_in(classes),
            expr,
            f"holds classes that are not in classes={classes!r}; found {{n}} rows",
        )
    ]


def _proba_checks(
    proba: m.Proba, k: int, schema: Mapping[str, pl.DataType], problems: list[str]
) -> list[Check]:
    """Length, finiteness and range of a List/Array column, and row sums = 1 for any form."""
    if isinstance(proba, (str, pl.Expr)):
        name = column_name(proba)
        dtype = _dtype_of(proba, schema)
        if dtype is None:
            return []
        if not isinstance(dtype, (pl.List, pl.Array)) or not (
            dtype.inner.is_numeric()  # type: ignore[union-attr]
        ):
            problems.append(
                f'column "{name}" (argument proba=) must be a List or Array of probabilities '
                f"(one per class of classes=); got {dtype}"
            )
            return []
        values = m.proba_list(proba)
        e = pl.element()
        length = values.list.len()
        complete = values.is_not_null() & (length == k) & ~values.list.eval(e.is_null()).list.any()
        finite = complete & values.list.eval(e.is_finite()).list.all()
        return [
            Check(
                name,
                values.is_not_null() & (length != k),
                length,
                f"must hold {k} probabilities per row (one per class of classes=); "
                "found {n} rows of another length",
            ),
            Check(
                name,
                complete & ~finite,
                values.list.sum(),
                "must hold finite numbers; found {n} rows with NaN or ±inf (row sums shown)",
            ),
            Check(
                name,
                finite & values.list.eval((e < 0.0) | (e > 1.0)).list.any(),
                values.list.min(),
                "must hold probabilities in [0, 1]; found {n} rows with values outside "
                "(row minima shown)",
            ),
            Check(
                name,
                finite & ((values.list.sum() - 1.0).abs() > SUM_TOLERANCE),
                values.list.sum(),
                f"must hold probability rows summing to 1 (tolerance {SUM_TOLERANCE:g}); "
                "found {n} rows that do not (row sums shown)",
            ),
        ]
    cols = [to_expr(c).cast(F64) for c in proba]
    names = ", ".join(column_name(c) for c in proba)
    total = pl.sum_horizontal(cols)
    finite = pl.all_horizontal([c.is_finite() for c in cols]).fill_null(False)
    return [
        Check(
            names,
            finite & ((total - 1.0).abs() > SUM_TOLERANCE),
            total,
            f"(argument proba=) must hold probability rows summing to 1 (tolerance "
            f"{SUM_TOLERANCE:g}); found {{n}} rows that do not (row sums shown)",
        )
    ]


def _inputs(
    frame: Frame,
    *,
    label: IntoExpr,
    pred: IntoExpr | None,
    proba: m.Proba | None,
    classes: list[Any] | None,
    weight: IntoExpr | None,
    validate: bool,
    by: Sequence[str] = (),
) -> tuple[dict[str, Role], dict[str, Any], list[Check], list[str]]:
    """Roles and arguments for the Plan, the extra row checks, and schema problems."""
    schema = frame.lazy().collect_schema()
    inputs: dict[str, Role] = {"label": "key", "weight": "weight"}
    args: dict[str, Any] = {"label": label, "weight": weight}
    checks: list[Check] = []
    problems: list[str] = []
    if pred is not None:
        inputs["pred"] = "key"
        args["pred"] = pred
    if proba is not None:
        list_column = isinstance(proba, (str, pl.Expr))
        inputs["proba"] = "key" if list_column else "proba"
        args["proba"] = proba if list_column else list(proba)
    if classes is not None:
        checks += _class_checks("label", label, classes, schema, problems)
        if pred is not None:
            checks += _class_checks("pred", pred, classes, schema, problems)
        if proba is not None:
            checks += _proba_checks(proba, len(classes), schema, problems)
    by_problems = [f'column "{b}" (argument by=) not found' for b in by if b not in schema]
    problems = column_problems(schema, args, inputs) + by_problems + problems
    return inputs, args, (checks if validate else []), problems


def _execute(frame: Frame, plan: Plan | None, problems: list[str]) -> pl.DataFrame | pl.LazyFrame:
    if problems or plan is None:
        error = DataValidationError(problems[0])
        if isinstance(frame, pl.LazyFrame):
            return _deferred(error)
        raise error
    return execute(frame, plan)


def _scalar_result(result: pl.DataFrame | pl.LazyFrame, by_cols: list[str]) -> Any:
    if isinstance(result, pl.LazyFrame) or by_cols:
        return result
    return result.item()


# ---------------------------------------------------------------------------------------
# Per-class tables (average=None) and the confusion table
# ---------------------------------------------------------------------------------------


def _per_class_table(
    result: pl.DataFrame | pl.LazyFrame, name: str, metric: str, beta: float, by_cols: list[str]
) -> pl.DataFrame | pl.LazyFrame:
    per_class = m.PER_CLASS[metric]
    t, p, c = pl.col("support"), pl.col("predicted"), pl.col("correct")
    return (
        result.explode(STATE)
        .unnest(STATE)
        .with_columns(per_class(t, p, c, beta).cast(F64).alias(name))
        .select(*by_cols, "class", name, "support")
    )


def _confusion_table(
    long: pl.DataFrame | pl.LazyFrame, classes: list[Any], by_cols: list[str]
) -> pl.DataFrame | pl.LazyFrame:
    """The long cells (by..., truth, predicted, weight) as the square table, zeros filled."""
    dtype = m.class_dtype(classes)
    lf = long.lazy().with_columns(pl.col("truth", "predicted").cast(dtype))
    columns = [f"predicted_{c}" for c in classes]
    pivot = lf.group_by(*by_cols, "truth").agg(
        pl.col("weight").filter(pl.col("predicted") == m.class_lit(c, dtype)).sum().alias(col)
        for c, col in zip(classes, columns, strict=True)
    )
    grid = pl.LazyFrame(
        {"truth": pl.Series(classes, dtype=dtype), "__pe_order": range(len(classes))}
    )
    if by_cols:
        grid = lf.select(by_cols).unique().join(grid, how="cross")
    table = (
        grid.join(pivot, on=[*by_cols, "truth"], how="left", nulls_equal=True)
        .with_columns(pl.col(columns).fill_null(0))
        .sort([*by_cols, "__pe_order"], nulls_last=True)
        .select(*by_cols, "truth", *columns)
    )
    return table if isinstance(long, pl.LazyFrame) else table.collect()


# ---------------------------------------------------------------------------------------
# Task-level table: the formulas of every summary metric over shared states
# ---------------------------------------------------------------------------------------


def _baseline_state(state: pl.Expr) -> pl.Expr:
    """The class state of the constant predictor: every row predicted the majority class.

    Majority = largest weighted support, the first in the state's class order among ties.
    """
    e = pl.element()
    t = e.struct.field("support")
    top = (t == t.max()) & ((t == t.max()).cum_sum() == 1)
    return state.list.eval(
        pl.struct(
            e.struct.field("class").alias("class"),
            t.alias("support"),
            pl.when(top).then(t.sum()).otherwise(0.0).alias("predicted"),
            pl.when(top).then(t).otherwise(0.0).alias("correct"),
        )
    )


def _state_formulas(name: str) -> dict[str, Callable[[Any], pl.Expr]]:
    """Finalize bodies over the class state, by output column, for one registry entry."""
    if name in ("multiclass_accuracy",):
        return {name: m.STATE_FINALIZE["accuracy"]}
    if name in ("multiclass_mcc",):
        return {name: m.STATE_FINALIZE["mcc"]}
    if name in ("multiclass_cohen_kappa",):
        return {name: m.STATE_FINALIZE["cohen_kappa"]}
    metric = {"multiclass_precision": "precision", "multiclass_recall": "recall"}.get(
        name, "f_beta"
    )
    return {f"{name}_{avg}": m.averaged(metric, avg) for avg in ("micro", "macro", "weighted")}


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


class MulticlassMethods:
    """Explicit multiclass methods: validated inputs, per-class tables, the task table."""

    _frame: pl.DataFrame | pl.LazyFrame

    # -- helpers ---------------------------------------------------------------------

    def _scalar(
        self,
        name: str,
        expr: pl.Expr,
        *,
        label: IntoExpr,
        pred: IntoExpr | None,
        proba: m.Proba | None,
        classes: list[Any] | None,
        weight: IntoExpr | None,
        by: Any,
        validate: bool,
    ) -> Any:
        inputs, args, checks, problems = _inputs(
            self._frame,
            label=label,
            pred=pred,
            proba=proba,
            classes=classes,
            weight=weight,
            validate=validate,
            by=normalize_by(by),
        )
        by_cols = normalize_by(by)
        info = _registry.get(name)
        plan = Plan(
            exprs=[expr],
            inputs=inputs,
            args=args,
            by=by_cols,
            validate=validate,
            undefined={name: info.undefined or "no defined value"},
            extra_checks=checks,
        )
        return _scalar_result(_execute(self._frame, plan, problems), by_cols)

    def _prf_method(
        self,
        name: str,
        metric: str,
        label: IntoExpr,
        pred: IntoExpr | None,
        proba: m.Proba | None,
        average: str | None,
        classes: Sequence[Any] | None,
        weight: IntoExpr | None,
        by: Any,
        validate: bool,
        beta: float = 1.0,
    ) -> Any:
        fn = _registry.get(name).fn
        kwargs: dict[str, Any] = {"proba": proba, "weight": weight}
        if name == "multiclass_f_beta":
            kwargs["beta"] = beta
        if average is not None:
            expr = fn(label, pred, average=average, classes=classes, **kwargs)
            return self._scalar(
                name,
                expr,
                label=label,
                pred=pred,
                proba=proba,
                classes=m.check_classes(classes),
                weight=weight,
                by=by,
                validate=validate,
            )
        # average=None: a table, one row per class; the classes are learnt from the data
        # unless given (then every class of the list, in its order)
        fn(label, pred, average="micro", classes=classes, **kwargs)  # option checks
        cls = m.check_classes(classes)
        inputs, args, checks, problems = _inputs(
            self._frame,
            label=label,
            pred=pred,
            proba=proba,
            classes=cls,
            weight=weight,
            validate=validate,
            by=normalize_by(by),
        )
        by_cols = normalize_by(by)
        plan = Plan(
            exprs=[m.class_state(m.pred_inputs(label, pred, proba, cls, weight)).alias(STATE)],
            inputs=inputs,
            args=args,
            by=by_cols,
            validate=validate,
            extra_checks=checks,
        )
        result = _execute(self._frame, plan, problems)
        return _per_class_table(result, name, metric, beta, by_cols)

    # -- single metrics ----------------------------------------------------------------

    def multiclass_accuracy(
        self,
        label: IntoExpr,
        pred: IntoExpr | None = None,
        *,
        proba: m.Proba | None = None,
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        expr = m.multiclass_accuracy(label, pred, proba=proba, classes=classes, weight=weight)
        return self._scalar(
            "multiclass_accuracy",
            expr,
            label=label,
            pred=pred,
            proba=proba,
            classes=m.check_classes(classes),
            weight=weight,
            by=by,
            validate=validate,
        )

    def multiclass_precision(
        self,
        label: IntoExpr,
        pred: IntoExpr | None = None,
        *,
        proba: m.Proba | None = None,
        average: str | None = "macro",
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        return self._prf_method(
            "multiclass_precision",
            "precision",
            label,
            pred,
            proba,
            average,
            classes,
            weight,
            by,
            validate,
        )

    def multiclass_recall(
        self,
        label: IntoExpr,
        pred: IntoExpr | None = None,
        *,
        proba: m.Proba | None = None,
        average: str | None = "macro",
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        return self._prf_method(
            "multiclass_recall",
            "recall",
            label,
            pred,
            proba,
            average,
            classes,
            weight,
            by,
            validate,
        )

    def multiclass_f1(
        self,
        label: IntoExpr,
        pred: IntoExpr | None = None,
        *,
        proba: m.Proba | None = None,
        average: str | None = "macro",
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        return self._prf_method(
            "multiclass_f1", "f_beta", label, pred, proba, average, classes, weight, by, validate
        )

    def multiclass_f_beta(
        self,
        label: IntoExpr,
        pred: IntoExpr | None = None,
        *,
        beta: float,
        proba: m.Proba | None = None,
        average: str | None = "macro",
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        return self._prf_method(
            "multiclass_f_beta",
            "f_beta",
            label,
            pred,
            proba,
            average,
            classes,
            weight,
            by,
            validate,
            beta=beta,
        )

    def multiclass_mcc(
        self,
        label: IntoExpr,
        pred: IntoExpr | None = None,
        *,
        proba: m.Proba | None = None,
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        expr = m.multiclass_mcc(label, pred, proba=proba, classes=classes, weight=weight)
        return self._scalar(
            "multiclass_mcc",
            expr,
            label=label,
            pred=pred,
            proba=proba,
            classes=m.check_classes(classes),
            weight=weight,
            by=by,
            validate=validate,
        )

    def multiclass_cohen_kappa(
        self,
        label: IntoExpr,
        pred: IntoExpr | None = None,
        *,
        proba: m.Proba | None = None,
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        expr = m.multiclass_cohen_kappa(label, pred, proba=proba, classes=classes, weight=weight)
        return self._scalar(
            "multiclass_cohen_kappa",
            expr,
            label=label,
            pred=pred,
            proba=proba,
            classes=m.check_classes(classes),
            weight=weight,
            by=by,
            validate=validate,
        )

    def multiclass_logloss(
        self,
        label: IntoExpr,
        proba: m.Proba,
        *,
        classes: Sequence[Any],
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        expr = m.multiclass_logloss(label, proba, classes=classes, weight=weight)
        return self._scalar(
            "multiclass_logloss",
            expr,
            label=label,
            pred=None,
            proba=proba,
            classes=m.check_classes(classes),
            weight=weight,
            by=by,
            validate=validate,
        )

    def multiclass_auc(
        self,
        label: IntoExpr,
        proba: m.Proba,
        *,
        average: str = "macro",
        classes: Sequence[Any],
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        expr = m.multiclass_auc(label, proba, average=average, classes=classes, weight=weight)
        return self._scalar(
            "multiclass_auc",
            expr,
            label=label,
            pred=None,
            proba=proba,
            classes=m.check_classes(classes),
            weight=weight,
            by=by,
            validate=validate,
        )

    def top_k_accuracy(
        self,
        label: IntoExpr,
        proba: m.Proba,
        *,
        k: int = 2,
        classes: Sequence[Any],
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        expr = m.top_k_accuracy(label, proba, k=k, classes=classes, weight=weight)
        return self._scalar(
            "top_k_accuracy",
            expr,
            label=label,
            pred=None,
            proba=proba,
            classes=m.check_classes(classes),
            weight=weight,
            by=by,
            validate=validate,
        )

    def multiclass_confusion_matrix(
        self,
        label: IntoExpr,
        pred: IntoExpr | None = None,
        *,
        proba: m.Proba | None = None,
        classes: Sequence[Any] | None = None,
        weight: IntoExpr | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        expr = m.multiclass_confusion_matrix(
            label, pred, proba=proba, classes=classes, weight=weight
        )
        cls = m.check_classes(classes)
        if cls is None and isinstance(self._frame, pl.LazyFrame):
            raise InvalidParameterError(
                "classes= is required for the confusion table of a LazyFrame "
                "(its columns must be known before collect)"
            )
        inputs, args, checks, problems = _inputs(
            self._frame,
            label=label,
            pred=pred,
            proba=proba,
            classes=cls,
            weight=weight,
            validate=validate,
            by=normalize_by(by),
        )
        by_cols = normalize_by(by)
        name = "multiclass_confusion_matrix"
        plan = Plan(
            exprs=[expr],
            inputs=inputs,
            args=args,
            by=by_cols,
            validate=validate,
            extra_checks=checks,
            curves=[name],
        )
        long = _execute(self._frame, plan, problems)
        if cls is None:
            assert isinstance(long, pl.DataFrame)
            truth, predicted = long.get_column("truth"), long.get_column("predicted")
            if _is_textual(truth.dtype):
                common: pl.DataType = pl.String
            elif truth.dtype.is_integer() and predicted.dtype.is_integer():
                common = pl.Int64
            else:
                common = pl.Float64
            seen = pl.concat([truth.cast(common), predicted.cast(common)])
            cls = seen.drop_nulls().unique().sort().to_list()
        return _confusion_table(long, cls, by_cols)

    # -- the task table ------------------------------------------------------------------

    def multiclass(
        self,
        label: IntoExpr,
        *,
        pred: IntoExpr | None = None,
        proba: m.Proba | None = None,
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
        by_cols = normalize_by(by)
        inputs, args, checks, problems = _inputs(
            self._frame,
            label=label,
            pred=pred,
            proba=proba,
            classes=cls,
            weight=weight,
            validate=validate,
            by=normalize_by(by),
        )
        if problems:
            return _execute(self._frame, None, problems)
        # Polars does not share repeated sub-expressions, so the row-level parts used by
        # many metrics (weights of the used rows, the argmax, the true-class probability)
        # are computed once as columns before the aggregation.
        frame, pred_side, proba_side = _prepare(self._frame, label, pred, proba, cls, weight)
        infos = [
            info
            for info in _registry.by_task("multiclass")
            if info.summary and info.kind == "scalar"
        ]
        first: list[pl.Expr] = [m.class_state(pred_side).alias(STATE)]
        state_cols: dict[str, Callable[[Any], pl.Expr]] = {}
        later: dict[str, pl.Expr] = {}
        names: list[str] = []
        proba_baselines: dict[str, Callable[[Any], pl.Expr]] = {}
        for info in infos:
            if info.inputs.get("pred") is not None:
                formulas = _state_formulas(info.name)
                state_cols.update(formulas)
                names += list(formulas)
                continue
            if proba_side is None:
                continue
            if info.name == "multiclass_auc":
                per_class, micro = m.auc_parts(proba_side, micro=True)
                assert micro is not None
                first += [per_class.alias(AUCS), micro.cast(F64).alias("multiclass_auc_micro")]
                for avg in ("macro", "weighted"):
                    later[f"multiclass_auc_{avg}"] = m.combine_aucs(pl.col(AUCS), avg)
                    proba_baselines[f"multiclass_auc_{avg}"] = _auc_constant
                proba_baselines["multiclass_auc_micro"] = _micro_auc_constant
                names += ["multiclass_auc_macro", "multiclass_auc_weighted", "multiclass_auc_micro"]
            elif info.name == "top_k_accuracy":
                first.append(m.top_k_expr(proba_side, k).alias(info.name))
                names.append(info.name)
                proba_baselines[info.name] = _top_k_constant(k)
            elif info.name == "multiclass_logloss":
                first.append(m.logloss_expr(proba_side).alias(info.name))
                names.append(info.name)
                proba_baselines[info.name] = _entropy
        order = by_cols + names + ([f"{n}_baseline" for n in names] if baseline else [])

        def second(lf: pl.LazyFrame) -> pl.LazyFrame:
            s = pl.col(STATE)
            cols = [m.finalize_state(s, fn).alias(n) for n, fn in state_cols.items()]
            cols += [expr.alias(n) for n, expr in later.items()]
            if baseline:
                b = _baseline_state(s)
                cols += [
                    m.finalize_state(b, fn).alias(f"{n}_baseline") for n, fn in state_cols.items()
                ]
                cols += [
                    m.finalize_state(s, fn).alias(f"{n}_baseline")
                    for n, fn in proba_baselines.items()
                ]
            return lf.with_columns(cols).select(order)

        undefined = {}
        for n in names:
            base = next((i for i in infos if n == i.name or n.startswith(i.name + "_")), None)
            undefined[n] = (base.undefined if base is not None else "") or "no defined value"
        plan = Plan(
            exprs=first,
            inputs=inputs,
            args=args,
            by=by_cols,
            validate=validate,
            undefined=undefined,
            strict=False,
            then=second,
            extra_checks=checks,
        )
        return _execute(frame, plan, problems)


AUCS = "__pe_aucs"


def _prepare(
    frame: Frame,
    label: IntoExpr,
    pred: IntoExpr | None,
    proba: m.Proba | None,
    classes: list[Any] | None,
    weight: IntoExpr | None,
) -> tuple[Frame, m.PredInputs, m.ProbaInputs | None]:
    """The frame with the shared row-level columns added, and inputs that read them."""
    y = to_expr(label)
    raw = m.pred_inputs(label, pred, None if pred is not None else proba, classes, weight)
    columns: dict[str, pl.Expr] = {"__pe_mc_w": raw.weight}
    yhat = to_expr(pred) if pred is not None else pl.col("__pe_mc_yhat")
    if pred is None:
        columns["__pe_mc_yhat"] = raw.yhat
    indicators = None
    if classes is not None:
        dtype = m.class_dtype(classes)
        indicators = [yhat == m.class_lit(c, dtype) for c in classes]
    pred_side = m.PredInputs(
        label=y,
        yhat=yhat,
        weight=pl.col("__pe_mc_w"),
        classes=classes,
        indicators=indicators,
        probs=[],
    )
    proba_side = None
    if proba is not None:
        assert classes is not None
        p = m.proba_inputs(label, proba, classes, weight)
        probs = p.probs
        if isinstance(proba, (str, pl.Expr)):
            columns.update({f"__pe_mc_p{i}": e for i, e in enumerate(p.probs)})
            probs = [pl.col(f"__pe_mc_p{i}") for i in range(len(classes))]
        columns["__pe_mc_keep"] = p.keep
        columns["__pe_mc_pt"] = p.true_proba
        proba_side = m.ProbaInputs(
            label=y,
            probs=probs,
            weight=p.weight,
            keep=pl.col("__pe_mc_keep"),
            true_proba=pl.col("__pe_mc_pt"),
            classes=classes,
            weighted=p.weighted,
        )
    return frame.with_columns(**columns), pred_side, proba_side


def _namespace_doc(name: str) -> str:
    """The metric function's docstring without its examples, plus the namespace shapes."""
    doc = _registry.get(name).fn.__doc__ or ""
    head = doc.split("\n    Examples\n")[0].rstrip()
    return (
        f"{head}\n\n    Namespace form of :func:`polars_eval.{name}` with ``by=`` and "
        "``validate=``: a float without ``by`` (a table for the confusion matrix and for "
        "``average=None``: one row per class, with ``support``), a DataFrame with ``by`` "
        "(a LazyFrame on a LazyFrame). Labels or predictions outside ``classes=``, "
        "probability rows not summing to 1 (tolerance 1e-6) or of the wrong length, NaN/inf "
        "and negative weights are errors naming the column.\n"
    )


for _name in (
    "multiclass_accuracy",
    "multiclass_precision",
    "multiclass_recall",
    "multiclass_f1",
    "multiclass_f_beta",
    "multiclass_mcc",
    "multiclass_cohen_kappa",
    "multiclass_logloss",
    "multiclass_auc",
    "top_k_accuracy",
    "multiclass_confusion_matrix",
):
    getattr(MulticlassMethods, _name).__doc__ = _namespace_doc(_name)
