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
from polars_eval.exceptions import InvalidParameterError


class EvalBase:
    """State shared by the mixins: the frame the namespace was opened on."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame


def _make_method(info: MetricInfo) -> Any:
    sig = info.signature

    @functools.wraps(info.fn)
    def method(
        self: EvalBase,
        *args: Any,
        by: Any = None,
        validate: bool = True,
        ci: str | None = None,
        level: float = 0.95,
        n_resamples: int | None = None,
        seed: int | None = None,
        method: str | None = None,
        **kwargs: Any,
    ) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        boot = {
            k: v
            for k, v in (("n_resamples", n_resamples), ("seed", seed), ("method", method))
            if v is not None
        }
        if boot and ci != "bootstrap":
            raise InvalidParameterError(
                f"the bootstrap options ({', '.join(f'{k}=' for k in boot)}) need "
                f"ci='bootstrap'; got ci={ci!r}"
            )
        if ci is None:
            return run_metric(self._frame, info, dict(bound.arguments), by=by, validate=validate)
        if ci not in info.intervals:
            known = ", ".join(info.intervals) or "none"
            raise InvalidParameterError(
                f"ci={ci!r} is not available for {info.name}; available: {known}"
            )
        from polars_eval.stats import run_interval  # the stats family owns the intervals

        return run_interval(
            self._frame,
            info,
            dict(bound.arguments),
            by=by,
            validate=validate,
            method=ci,
            level=level,
            **{"resampling" if k == "method" else k: v for k, v in boot.items()},
        )

    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *sig.parameters.values(),
    ]
    params += [
        inspect.Parameter("by", keyword, default=None),
        inspect.Parameter("validate", keyword, default=True),
    ]
    if info.intervals:
        params += [
            inspect.Parameter("ci", keyword, default=None),
            inspect.Parameter("level", keyword, default=0.95),
        ]
    if "bootstrap" in info.intervals:  # ci="bootstrap" options (None: 1000, 0, "multinomial")
        params += [
            inspect.Parameter("n_resamples", keyword, default=None),
            inspect.Parameter("seed", keyword, default=None),
            inspect.Parameter("method", keyword, default=None),
        ]
    # inspect.signature stops unwrapping at __signature__: the method shows by=, validate= (and
    # ci=, level=, with the bootstrap's n_resamples=, seed=, method=)
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
