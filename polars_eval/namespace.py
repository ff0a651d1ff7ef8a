"""The ``.eval`` namespace on ``pl.DataFrame`` and ``pl.LazyFrame`` (SPEC §1.2).

Thin by design: every single-metric method is generated from the registry with the
signature of its metric function plus ``by=`` and ``validate=``, so the function, the
method and the docs can never disagree. Task-level and other special methods are written
out in the family mixins (``polars_eval/_ns_*.py``) and composed here.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import polars as pl

from polars_eval import _registry
from polars_eval._registry import MetricInfo
from polars_eval._run import run_metric


class EvalBase:
    """State shared by the mixins: the frame the namespace was opened on."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame


def _make_method(info: MetricInfo) -> Any:
    sig = info.signature

    @functools.wraps(info.fn)
    def method(
        self: EvalBase, *args: Any, by: Any = None, validate: bool = True, **kwargs: Any
    ) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return run_metric(self._frame, info, dict(bound.arguments), by=by, validate=validate)

    params = [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *sig.parameters.values(),
    ]
    params += [
        inspect.Parameter("by", inspect.Parameter.KEYWORD_ONLY, default=None),
        inspect.Parameter("validate", inspect.Parameter.KEYWORD_ONLY, default=True),
    ]
    # inspect.signature stops unwrapping at __signature__: the method shows by= and validate=
    method.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return method


def _mixins() -> tuple[type, ...]:
    from polars_eval._ns_binary import BinaryMethods

    found: list[type] = [BinaryMethods]
    for module, cls in (
        ("polars_eval._ns_ranking", "RankingMethods"),
        ("polars_eval._ns_regression", "RegressionMethods"),
        ("polars_eval._ns_multiclass", "MulticlassMethods"),
        ("polars_eval._ns_forecast", "ForecastMethods"),
        ("polars_eval._ns_stats", "StatsMethods"),
        ("polars_eval._ns_report", "ReportMethods"),
    ):
        try:
            mod = __import__(module, fromlist=[cls])
        except ModuleNotFoundError as error:
            if error.name != module:
                raise
            continue
        found.append(getattr(mod, cls))
    return tuple(found)


def install() -> type:
    """Build the namespace class from the mixins and the registry, and register it."""
    namespace = type("EvalNamespace", (*_mixins(), EvalBase), {"__doc__": __doc__})
    for name, info in _registry.REGISTRY.items():
        if not hasattr(namespace, name):
            setattr(namespace, name, _make_method(info))
    pl.api.register_dataframe_namespace("eval")(namespace)
    pl.api.register_lazyframe_namespace("eval")(namespace)
    return namespace
