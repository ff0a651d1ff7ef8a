"""The ``.eval`` methods of SPEC §8: bootstrap, paired bootstrap, McNemar and DeLong."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import polars as pl

from polars_eval._core.planner import normalize_by
from polars_eval._core.table import Checks, Output, Query, Stage, Table, run
from polars_eval.stats import bootstrap as _boot
from polars_eval.stats import compare as _compare
from polars_eval.tasks._methods import frame_method

COMPARE_INPUTS = {"label": "binary_label", "score_1": "score", "score_2": "score"}


def _comparison(
    frame: pl.DataFrame | pl.LazyFrame,
    expr: pl.Expr,
    args: dict[str, Any],
    by: Any,
    validate: bool,
    undefined: dict[str, str],
) -> Any:
    name = expr.meta.output_name()
    by_cols = normalize_by(by)

    def unnest(lf: pl.LazyFrame) -> pl.LazyFrame:
        return lf.unnest(name)

    table = Table(
        Query([expr]),
        Checks(COMPARE_INPUTS, args, validate),
        Output(undefined),
        by=by_cols,
        stage=Stage(unnest),
    )
    result = run(table, frame)
    if isinstance(result, pl.LazyFrame) or by_cols:
        return result
    return result.row(0, named=True)


def _comparison_method(
    function: Callable[..., pl.Expr], doc: str, undefined: dict[str, str] | None = None
) -> Any:
    """The namespace method of a comparison expression ``function(label, score_1,
    score_2, ...)`` (McNemar's, DeLong's): the function's arguments, in its order and with
    its defaults, then ``by=`` and ``validate=``; ``undefined`` names the fields that may
    be undefined, with why."""
    sig = inspect.signature(function)

    def method(self: Any, *args: Any, by: Any = None, validate: bool = True, **kwargs: Any) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        checked = {k: bound.arguments[k] for k in ("label", "score_1", "score_2", "pos_label")}
        expr = function(*bound.args, **bound.kwargs)
        return _comparison(self._frame, expr, checked, by, validate, undefined or {})

    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *sig.parameters.values(),
        inspect.Parameter("by", keyword, default=None, annotation="str | Sequence[str] | None"),
        inspect.Parameter("validate", keyword, default=True, annotation="bool"),
    ]
    method.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=params, return_annotation="dict[str, Any] | pl.DataFrame | pl.LazyFrame"
    )
    method.__name__ = method.__qualname__ = function.__name__
    method.__doc__ = doc
    return method


class StatsMethods:
    """Bootstrap intervals and model comparisons on the ``.eval`` namespace."""

    _frame: pl.DataFrame | pl.LazyFrame

    bootstrap = frame_method(_boot.bootstrap)
    paired_bootstrap = frame_method(_compare.paired_bootstrap)

    mcnemar = _comparison_method(
        _compare.mcnemar,
        """One-sided exact McNemar test of model 1 against model 2 (see ``pe.mcnemar``).

        Returns a dict ``{wins_1, wins_2, p_value}`` without ``by``; a DataFrame with those
        columns per group with ``by`` (a LazyFrame on a LazyFrame).

        Examples
        --------
        Model 1 is right on every row, model 2 wrong on three of them (rows 1, 3 and 5) and
        never alone right: the p-value is P(X ≥ 3) for X ~ Binomial(3, 1/2), 1/8:

        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1, 0], "m1": [0.9, 0.8, 0.1, 0.2, 0.7, 0.1],
        ...                    "m2": [0.1, 0.8, 0.9, 0.3, 0.2, 0.1]})
        >>> df.eval.mcnemar("y", "m1", "m2")
        {'wins_1': 3, 'wins_2': 0, 'p_value': 0.125}
        """,
    )
    delong = _comparison_method(
        _compare.delong,
        """DeLong's test of AUC(score_1) − AUC(score_2) on the same rows (see ``pe.delong``).

        Returns a dict ``{auc_1, auc_2, difference, lower, upper, z, p_value}`` without
        ``by``; a DataFrame with those columns per group with ``by`` (a LazyFrame on a
        LazyFrame). Raises without ``by`` when undefined (fewer than 2 rows of a class).

        Examples
        --------
        Model 1 ranks perfectly (AUC 1), model 2 gets 3 of 4 pairs; the variance of the
        difference from the components is 0.125 (worked out in ``pe.delong``):

        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [1, 1, 0, 0], "m1": [0.9, 0.8, 0.3, 0.1],
        ...                    "m2": [0.9, 0.2, 0.3, 0.1]})
        >>> out = df.eval.delong("y", "m1", "m2")
        >>> out["auc_1"], out["auc_2"], round(out["z"], 4)
        (1.0, 0.75, 0.7071)
        """,
        undefined={"difference": "needs at least 2 rows of each class"},
    )
