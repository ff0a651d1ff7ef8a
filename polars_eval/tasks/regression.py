"""Regression methods of the ``.eval`` namespace that are more than one metric:
``df.eval.regression`` (every summary metric, one wide row per group), and the model
diagnostics ``df.eval.vif`` and ``df.eval.cooks_distance`` (numpy linear algebra)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.planner import normalize_by
from polars_eval._core.registry import MetricInfo
from polars_eval._core.spec import MetricSpec, State
from polars_eval._core.table import Checks, Output, Specs, Table, run
from polars_eval._core.windows import BASELINE_NOT_MERGEABLE, Grouping, grouped_method
from polars_eval._exprs import to_float, weight_expr
from polars_eval._params import check_choice
from polars_eval._typing import IntoExpr, ZeroActuals
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.metrics import diagnostics
from polars_eval.metrics import regression as r

NUMERIC_INPUTS = {"actual": "numeric", "pred": "numeric", "weight": "weight"}
"""Correlations with a constant prediction are undefined: no baseline column for them."""
ZERO = "__pe_zero"  # the state of ``zero_actuals`` (a count)


def regression_specs(
    infos: Sequence[MetricInfo],
    actual: IntoExpr,
    pred: IntoExpr,
    *,
    weight: IntoExpr | None,
    zero_actuals: str,
    suffix: str = "",
    skip: Sequence[str] = (),
) -> dict[str, MetricSpec]:
    """The spec of each metric of ``infos``, by name + suffix.

    MSLE / RMSLE are null (not an error) when some actual or prediction is <= -1, so that
    one table works on any numeric target.
    """
    out: dict[str, MetricSpec] = {}
    y, p = to_float(actual), to_float(pred)
    out_of_domain = State((y <= -1.0) | (p <= -1.0), "max")
    available = {"actual": actual, "pred": pred, "weight": weight, "zero_actuals": zero_actuals}
    for info in infos:
        if info.name in skip:
            continue
        spec = _registry.bind(info, available)
        if _log_domain(info):
            spec = spec.null_when(out_of_domain)
        out[info.name + suffix] = spec
    return out


def _log_domain(info: _registry.MetricInfo) -> bool:
    """A metric of logarithmic errors (its inputs registered with the role ``positive``):
    null where some actual or prediction is <= -1."""
    return "positive" in info.inputs.values()


def regression_table(a: Mapping[str, Any]) -> Table:
    """The table of ``df.eval.regression`` from the arguments of
    :meth:`RegressionMethods.regression` by name (``grouping`` among them; see
    :func:`~polars_eval._core.table.arguments`): the summary metrics' specs (and the
    baseline's), the count of zero actuals, the numeric roles and the metrics' data
    checks."""
    actual, pred, weight, zero_actuals = a["actual"], a["pred"], a["weight"], a["zero_actuals"]
    baseline, grouping, validate = a["baseline"], a.get("grouping"), a["validate"]
    check_choice("zero_actuals", zero_actuals, r.ZERO_ACTUAL_OPTIONS)
    if not isinstance(baseline, bool):
        raise InvalidParameterError(f"baseline must be True or False; got {baseline!r}")
    if grouping is not None and baseline:
        raise InvalidParameterError(BASELINE_NOT_MERGEABLE)
    infos = _registry.select("regression", a["metrics"])
    specs = regression_specs(infos, actual, pred, weight=weight, zero_actuals=zero_actuals)
    names = list(specs)
    # the rank correlations over the same rows in one numpy call: each side sorted once
    planned, rank_fields = r.shared_ranks(specs)
    undefined = {info.name: info.undefined or "no defined value" for info in infos}
    for info in filter(_log_domain, infos):
        undefined[info.name] = "some actual or prediction is <= -1, or the group is empty"
    baseline_specs: dict[str, MetricSpec] = {}
    if baseline:
        y = to_float(actual)
        w = weight_expr(weight)
        used = y.is_not_null() & to_float(pred).is_not_null() & w.is_not_null()
        mean = (y * w).filter(used).sum() / w.filter(used).sum()
        constant = pl.when(used).then(mean).otherwise(None)
        baseline_specs = regression_specs(
            infos,
            actual,
            constant,
            weight=weight,
            zero_actuals=zero_actuals,
            suffix="_baseline",
            skip=tuple(i.name for i in infos if i.extra.get("baseline", True) is False),
        )
    # the count as a state of its own column (the name pe.Evaluation's states keep)
    count = r.zero_actual_count(actual, pred, weight=weight).alias(ZERO)

    def value(values: Mapping[str, pl.Expr], name: str) -> pl.Expr:
        if name in rank_fields:
            joint, field = rank_fields[name]
            return values[joint].struct.field(field)
        return values[name]

    def columns(values: Mapping[str, pl.Expr]) -> list[pl.Expr]:
        return [
            *(value(values, name).alias(name) for name in names),
            values[ZERO].alias("zero_actuals"),
            *(values[name].alias(name) for name in baseline_specs),
        ]

    return Table(
        Specs({**planned, **baseline_specs}, columns, sums=[count]),
        Checks(
            NUMERIC_INPUTS,
            {"actual": actual, "pred": pred, "weight": weight},
            validate,
            _registry.data_checks(infos, {"actual": actual, "pred": pred}) if validate else [],
        ),
        Output(undefined, strict=False),
        by=normalize_by(a["by"]),
        grouping=grouping,
        # a DataFrame's query in-memory: Polars' default (streaming) plan runs the
        # order statistics (medians, ranks) 1.3-4x slower and shares no common
        # subexpression of the metrics (1e6 rows: the table 1.2x faster)
        engine="in-memory",
    )


class RegressionMethods:
    """``df.eval.regression``, ``df.eval.vif``, ``df.eval.cooks_distance``."""

    _frame: pl.DataFrame | pl.LazyFrame

    @grouped_method
    def regression(
        self,
        actual: IntoExpr,
        pred: IntoExpr,
        *,
        weight: IntoExpr | None = None,
        zero_actuals: ZeroActuals = "skip",
        baseline: bool = False,
        metrics: str | Sequence[str] | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
        grouping: Grouping | None = None,
    ) -> Any:
        """Every regression summary metric of the registry, one wide row per group.

        Columns: the metrics (``mse``, ``rmse``, ``mae``, ... ``wape``), then
        ``zero_actuals``: the number of rows whose actual is 0, which the percentage errors
        (MAPE, RMSPE, MER) skip under ``zero_actuals="skip"``. MSLE / RMSLE are null when
        some value is <= -1 (the single-metric methods raise instead). With
        ``baseline=True``, ``<metric>_baseline`` columns give each metric of the best
        constant predictor, the (weighted) mean of the actual in the group (SPEC §8; R² of
        the baseline is 0; correlations have no baseline). Undefined values are null and
        reported in one warning; without ``by``, an input with no row to evaluate (empty, or
        every row null or of weight 0) is an ``UndefinedMetricError``, as for a single metric.
        ``metrics=`` chooses the metric columns instead: any registered regression metric of
        one value, in the order given (``["rmse", "mean_poisson_deviance", "d2_tweedie"]``;
        options a metric needs beyond the table's are an error that says so).
        ``time=``, ``every=`` (``period=``, ``offset=``) evaluate per time window, and
        ``grouping_sets=`` / ``rollup=`` (``min_rows=``) per slice, from merged states (SPEC
        §13, :mod:`polars_eval._core.windows`; not with ``baseline=True``).

        Returns a one-row DataFrame without ``by`` (a LazyFrame on a LazyFrame).

        Examples
        --------
        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [2, 3, 4] * 2, "p": [1, 4, 3, 2, 3, 6], "m": ["a"] * 3 + ["b"] * 3})
        >>> df.eval.regression("y", "p", by="m", baseline=True).select(
        ...     "m", "mse", "mae", "mse_baseline"
        ... ).with_columns(pl.selectors.float().round(4))
        shape: (2, 4)
        ┌─────┬────────┬────────┬──────────────┐
        │ m   ┆ mse    ┆ mae    ┆ mse_baseline │
        │ --- ┆ ---    ┆ ---    ┆ ---          │
        │ str ┆ f64    ┆ f64    ┆ f64          │
        ╞═════╪════════╪════════╪══════════════╡
        │ a   ┆ 1.0    ┆ 1.0    ┆ 0.6667       │
        │ b   ┆ 1.3333 ┆ 0.6667 ┆ 0.6667       │
        └─────┴────────┴────────┴──────────────┘
        """
        arguments = dict(locals())  # every argument by name (the first statement)
        del arguments["self"]
        return run(regression_table(arguments), self._frame)

    def vif(self, features: Sequence[str]) -> Any:
        """Variance inflation factor of each feature: VIF_j = 1 / (1 − R²_j).

        R²_j is the R² of the least-squares regression of feature j on the other features
        and an intercept; VIF_j is computed as the j-th diagonal element of the inverse of
        the features' correlation matrix (numpy). Rows with a null in any feature are
        dropped. A constant feature or an exactly collinear set of features is a
        ``DataValidationError`` naming the columns involved. Returns a DataFrame
        ``{feature, vif}`` (a LazyFrame on a LazyFrame).

        References
        ----------
        Belsley, Kuh & Welsch (1980). Regression Diagnostics. Wiley.

        Examples
        --------
        Two features with correlation 1/2, so VIF = 1 / (1 − 1/4) = 4/3 for both.

        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"a": [1.0, -1.0, 0.0, 0.0], "b": [1.0, 0.0, -1.0, 0.0]})
        >>> df.eval.vif(["a", "b"]).with_columns(pl.col("vif").round(6))
        shape: (2, 2)
        ┌─────────┬──────────┐
        │ feature ┆ vif      │
        │ ---     ┆ ---      │
        │ str     ┆ f64      │
        ╞═════════╪══════════╡
        │ a       ┆ 1.333333 │
        │ b       ┆ 1.333333 │
        └─────────┴──────────┘
        """
        features = _feature_list(features)
        _check_columns(self._frame, features)

        def compute(df: pl.DataFrame) -> pl.DataFrame:
            return diagnostics.vif_frame(df, features)

        return _run_numpy(self._frame, features, compute, {"feature": pl.String, "vif": pl.Float64})

    def cooks_distance(self, features: Sequence[str], target: str) -> Any:
        """Cook's distance of every row for the least-squares fit target ~ 1 + features.

        D_i = e_i² / (p s²) · h_ii / (1 − h_ii)², with e the residuals, h_ii the leverages
        (diagonal of the hat matrix, from a QR decomposition), p the number of parameters
        (features + intercept) and s² = Σ e² / (n − p). Returns one row per input row, in
        order: ``row`` (its index), ``residual``, ``leverage``, ``cooks_distance`` — null for
        rows with a null input (left out of the fit) and where h_ii = 1. A singular design
        is a ``DataValidationError`` naming the collinear features.

        References
        ----------
        Cook, R. D. (1977). Detection of influential observation in linear regression.
        Technometrics 19(1).

        Examples
        --------
        The fit is y = −0.4 + 1.6 x; leverages 1/4 + (x − 1.5)² / 5; s² = 1.2 / 2.

        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "y": [0.0, 1.0, 2.0, 5.0]})
        >>> df.eval.cooks_distance(["x"], "y").with_columns(pl.selectors.float().round(4))
        shape: (4, 4)
        ┌─────┬──────────┬──────────┬────────────────┐
        │ row ┆ residual ┆ leverage ┆ cooks_distance │
        │ --- ┆ ---      ┆ ---      ┆ ---            │
        │ u32 ┆ f64      ┆ f64      ┆ f64            │
        ╞═════╪══════════╪══════════╪════════════════╡
        │ 0   ┆ 0.4      ┆ 0.7      ┆ 1.037          │
        │ 1   ┆ -0.2     ┆ 0.3      ┆ 0.0204         │
        │ 2   ┆ -0.8     ┆ 0.3      ┆ 0.3265         │
        │ 3   ┆ 0.6      ┆ 0.7      ┆ 2.3333         │
        └─────┴──────────┴──────────┴────────────────┘
        """
        features = _feature_list(features)
        if not isinstance(target, str):
            raise InvalidParameterError(f"target must be a column name; got {target!r}")
        _check_columns(self._frame, [*features, target])

        def compute(df: pl.DataFrame) -> pl.DataFrame:
            return diagnostics.cooks_frame(df, features, target)

        schema = {
            "row": pl.UInt32,
            "residual": pl.Float64,
            "leverage": pl.Float64,
            "cooks_distance": pl.Float64,
        }
        return _run_numpy(self._frame, [*features, target], compute, schema)


def _feature_list(features: Any) -> list[str]:
    if isinstance(features, str):
        features = [features]
    features = list(features)
    if not features or not all(isinstance(f, str) for f in features):
        raise InvalidParameterError(f"features must be a list of column names; got {features!r}")
    if len(set(features)) != len(features):
        raise InvalidParameterError(f"features hold a column twice: {features!r}")
    return features


def _check_columns(frame: pl.DataFrame | pl.LazyFrame, columns: Sequence[str]) -> None:
    schema = frame.collect_schema()
    for c in columns:
        if c not in schema:
            available = ", ".join(list(schema)[:12])
            raise DataValidationError(f'column "{c}" not found; available columns: {available}')
        dtype = schema[c]
        if not (dtype.is_numeric() or dtype == pl.Boolean):
            raise DataValidationError(f'column "{c}" must be numeric or boolean; got {dtype}')


def _run_numpy(
    frame: pl.DataFrame | pl.LazyFrame,
    columns: Sequence[str],
    compute: Any,
    schema: dict[str, pl.DataType],
) -> Any:
    if isinstance(frame, pl.LazyFrame):
        return frame.select(columns).map_batches(compute, schema=schema)
    return compute(frame.select(columns))


def evaluation_state(d: Any, trained: bool) -> tuple[Table | None, Checks]:
    """What ``pe.Evaluation`` keeps for a regression definition ``d`` (the task's hook,
    :class:`~polars_eval._core.tasks.Task`): the table where its states are bounded,
    else None: the rows (the order statistics; the baseline's mean, a function of each
    group's rows). ``metrics=`` names columns: ``zero_actuals`` is the table's count."""
    baseline = d.options["baseline"]
    names = None if d.metrics is None else [n for n in d.metrics if n != "zero_actuals"]
    table = regression_table(d.arguments(metrics=None if baseline else names))
    if not baseline and table.bounded:
        return table, table.checks
    return None, Checks(table.checks.inputs, table.checks.args)
