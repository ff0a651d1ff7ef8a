"""The ``.eval`` namespace on ``pl.DataFrame`` and ``pl.LazyFrame`` (SPEC §1.2).

Thin by design: every single-metric method is generated from the registry with the
signature of its metric function plus ``by=`` and ``validate=``, so the function, the
method and the docs can never disagree. Task-level and other special methods are written
out in mixins and composed here: one per task (``polars_eval/tasks/``, named by the task
list), the statistics' (``stats/methods.py``) and the report's (``report/methods.py``).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.registry import MetricInfo
from polars_eval._core.table import run_metric
from polars_eval._core.windows import grouping
from polars_eval.exceptions import InvalidParameterError
from polars_eval.tasks._methods import _RETURNS, method_doc


class EvalBase:
    """State shared by the mixins: the frame the namespace was opened on."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame


_NAMESPACE_OPTIONS = {
    "by": ("str | list[str] | None", None),
    "validate": ("bool", True),
    "ci": ("str | None", None),
    "level": ("float", 0.95),
    "n_resamples": ("int | None", None),
    "seed": ("int | None", None),
    "method": ("str | None", None),
    "time": ("str | None", None),
    "every": ("str | int | None", None),
    "period": ("str | int | None", None),
    "offset": ("str | int | None", None),
}
"""The arguments the namespace adds to a metric's own (by=, validate=, the intervals' and the
windows'): their types and defaults."""

_NAMESPACE_TYPES = {name: ann for name, (ann, _) in _NAMESPACE_OPTIONS.items()}


def _make_method(info: MetricInfo) -> Any:
    sig = info.signature
    # a metric with a method= of its own (multiclass_calibration_error) keeps it; its
    # bootstrap resamples rows by the default rule (no resampling method= to choose)
    own_method = "method" in sig.parameters

    @functools.wraps(info.fn)
    def method(self: EvalBase, *args: Any, **kwargs: Any) -> Any:
        o = {name: kwargs.pop(name, default) for name, (_, default) in _NAMESPACE_OPTIONS.items()}
        by, validate, ci, level = o["by"], o["validate"], o["ci"], o["level"]
        n_resamples, seed, method = o["n_resamples"], o["seed"], o["method"]
        if own_method:
            kwargs = {**kwargs, **({"method": method} if method is not None else {})}
            method = None
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
        windows = grouping(by, **{k: o[k] for k in ("time", "every", "period", "offset")})
        if windows is not None and ci is not None:
            raise InvalidParameterError(
                f"ci={ci!r} is not available with time=/every= (an interval per window)"
            )
        if ci is None:
            return run_metric(
                self._frame, info, dict(bound.arguments), by=by, validate=validate, grouping=windows
            )
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

    def keyword(name: str) -> inspect.Parameter:
        annotation, default = _NAMESPACE_OPTIONS[name]
        kind = inspect.Parameter.KEYWORD_ONLY
        return inspect.Parameter(name, kind, default=default, annotation=annotation)

    params = [
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *sig.parameters.values(),
        keyword("by"),
        keyword("validate"),
    ]
    if info.intervals:
        params += [keyword("ci"), keyword("level")]
    if "bootstrap" in info.intervals:  # ci="bootstrap" options (None: 1000, 0, "multinomial")
        params += [keyword("n_resamples"), keyword("seed")]
        if not own_method:
            params.append(keyword("method"))
    params += [keyword(name) for name in ("time", "every", "period", "offset")]  # SPEC §13
    # inspect.signature stops unwrapping at __signature__: the method shows by=, validate= (and
    # ci=, level=, with the bootstrap's n_resamples=, seed=, method=)
    method.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=params, return_annotation=_RETURNS[info.kind][0]
    )
    method.__doc__ = method_doc(info)
    return method


def _mixins() -> tuple[type, ...]:
    """The namespace's methods beyond single metrics: each task's (``df.eval.<task>`` ...,
    named by its entry in the task list), the statistics', fairness's and the report's."""
    from polars_eval._core.tasks import TASKS
    from polars_eval.fairness import FairnessMethods
    from polars_eval.report.methods import ReportMethods
    from polars_eval.stability import StabilityMethods
    from polars_eval.stats.compare_methods import CompareMethods
    from polars_eval.stats.methods import StatsMethods

    tasks = (task.load("methods") for task in TASKS.values())
    return (*tasks, StatsMethods, CompareMethods, FairnessMethods, ReportMethods, StabilityMethods)


def install() -> type:
    """Build the namespace class from the mixins and the registry, and register it."""
    from polars_eval._core.tasks import TASKS

    namespace = type("EvalNamespace", (*_mixins(), EvalBase), {"__doc__": __doc__})
    # a task with keys makes the methods of its metrics (mean over queries, forecast keys)
    keyed = {
        metric_task: task
        for task in TASKS.values()
        if task.metric_method
        for metric_task in task.metric_tasks
    }
    for name, info in _registry.REGISTRY.items():
        if hasattr(namespace, name):
            continue
        task = keyed.get(info.task) if info.kind == "scalar" else None
        if task is None:
            setattr(namespace, name, _make_method(info))
            continue
        # the task's factory wraps the generic method (or writes its own)
        method = task.load("metric_method")(info, _make_method(info))
        setattr(namespace, name, _typed(method, getattr(namespace, task.name)))
    pl.api.register_dataframe_namespace("eval")(namespace)
    pl.api.register_lazyframe_namespace("eval")(namespace)
    return namespace


def _typed(method: Any, task_method: Any) -> Any:
    """``method`` (a keyed metric method: ``query=``, ``series=`` ...) with the types of its
    arguments that have none: the namespace's (:data:`_NAMESPACE_TYPES`), else those of
    the same argument of its task's method (``df.eval.ranking``, ``df.eval.forecast``);
    ``| None`` added where the default is None."""
    task_params = inspect.signature(task_method).parameters
    sig = inspect.signature(method)
    params = []
    for p in sig.parameters.values():
        if p.annotation is p.empty and p.name != "self" and p.kind is p.KEYWORD_ONLY:
            source = task_params.get(p.name)
            ann = _NAMESPACE_TYPES.get(p.name, source.annotation if source else p.empty)
            if isinstance(ann, str) and p.default is None and "None" not in ann.split(" | "):
                ann += " | None"
            p = p.replace(annotation=ann)
        params.append(p)
    method.__signature__ = sig.replace(parameters=params)
    return method


_STUB_HEADER = '''"""Type stub of the ``.eval`` namespace, generated from the registry.

Do not edit: ``python -c 'import polars_eval.namespace as n; n.write_stub()'`` writes it
(a test checks that it is current).
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, overload

import polars as pl

from polars_eval._typing import IntoExpr, Proba, ZeroActuals
from polars_eval.stats.intervals import Interval
'''


def _stub_signature(name: str, sig: inspect.Signature) -> str:
    parts: list[str] = []
    star = False
    for p in sig.parameters.values():
        var = isinstance(p.annotation, str) and p.annotation or "Any"
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}: {var}")
            star = True
            continue
        if p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}: {var}")
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        ann = p.annotation
        text = p.name
        if p.name != "self":
            text += f": {ann if isinstance(ann, str) else 'Any'}" if ann is not p.empty else ": Any"
        if p.default is not p.empty:
            text += " = ..."
        parts.append(text)
    ret = sig.return_annotation
    ret_text = ret if isinstance(ret, str) and ret != "pl.Expr" else "Any"
    return f"    def {name}({', '.join(parts)}) -> {ret_text}: ..."


def render_stub() -> str:
    """The ``.pyi`` text of the namespace: ``EvalBase``, ``install`` and every method, each
    with its signature."""
    # importing this module imported the package first: the namespace is installed and
    # every family registered
    namespace = type(pl.DataFrame().eval)
    init = _stub_signature("__init__", inspect.signature(EvalBase.__init__))
    lines = [
        f"\nclass EvalBase:\n{init}\n",
        _stub_signature("install", inspect.signature(install)).strip() + "\n",
        "class EvalNamespace(EvalBase):",
    ]
    for name in sorted(dir(namespace)):
        member = getattr(namespace, name)
        if name.startswith("_") or not callable(member):
            continue
        # a method whose arguments depend on another (compare's on its task) gives overloads
        overloads = getattr(member, "__stub_overloads__", None)
        for sig in overloads(namespace) if overloads else [inspect.signature(member)]:
            lines += ["    @overload"] if overloads else []
            lines.append(_stub_signature(name, sig))
    return _STUB_HEADER + "\n".join(lines) + "\n"


def write_stub() -> None:
    """Write ``namespace.pyi`` beside this file (after a metric is added or changed)."""
    from pathlib import Path

    Path(__file__).with_suffix(".pyi").write_text(render_stub(), encoding="utf-8")
