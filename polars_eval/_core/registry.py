"""The metric registry: the single source of truth about every metric (SPEC §1.3).

Each public metric function is registered once with :func:`register`, which declares
everything the library knows about it: its task, input roles, direction, bounds, the
reason it can be undefined, its interval methods and, for a metric written as a
:class:`~polars_eval._core.spec.MetricSpec`, the spec. The ``.eval`` namespace methods,
the task-level methods (``df.eval.binary`` ...), the CLI, the reports, ``pe.metrics()``
and the registry-driven tests all read this table; nothing lists metrics by hand.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import polars as pl

from polars_eval._core.origin import recording
from polars_eval._core.spec import MetricSpec
from polars_eval._core.tasks import TASKS
from polars_eval._typing import Role
from polars_eval.exceptions import InvalidParameterError

Kind = Literal["scalar", "struct", "curve"]

F = TypeVar("F", bound=Callable[..., pl.Expr])


@dataclass
class MetricInfo:
    """What the library knows about one metric."""

    name: str
    task: str
    fn: Callable[..., pl.Expr]
    inputs: Mapping[str, Role]
    kind: Kind = "scalar"
    higher_is_better: bool | None = None
    lower: float | None = None
    upper: float | None = None
    # its default tables, as declared (``summary=`` at :func:`register`; read by
    # :func:`default_table` only)
    summary: bool | Mapping[str, Any] = True
    undefined: str = ""
    fields: tuple[str, ...] = ()
    intervals: tuple[str, ...] = ()
    # the spec builder (same arguments as ``fn``) of a metric written as a MetricSpec
    spec: Callable[..., MetricSpec] | None = None
    # data checks beyond the input roles (the arguments -> a list of _validate.Check)
    check: Callable[[Mapping[str, Any]], list[Any]] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def description(self) -> str:
        doc = inspect.getdoc(self.fn) or ""
        return doc.splitlines()[0] if doc else ""

    @property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.fn)


REGISTRY: dict[str, MetricInfo] = {}


def _tables(
    key: str, task: str, summary: bool | Mapping[str, Any]
) -> dict[str, tuple[int | None, dict[str, Any]]]:
    """A ``summary=`` declaration -> {table (a task): (place or None, conditions)}; a
    declaration it cannot read is an error at registration."""
    if summary is True:
        return {task: (None, {})}
    if summary is False:
        return {}
    if not isinstance(summary, Mapping):
        raise RuntimeError(f"metric {key!r}: summary= must be a bool or a mapping")
    out: dict[str, tuple[int | None, dict[str, Any]]] = {}
    for table, entry in summary.items():
        if table not in TASKS:
            raise RuntimeError(f"metric {key!r}: summary= names {table!r}, not a task")
        if entry is True:
            out[table] = (None, {})
        elif isinstance(entry, int) and not isinstance(entry, bool):
            out[table] = (entry, {})
        elif isinstance(entry, Mapping) and isinstance(entry.get("place", 0), int):
            conditions = dict(entry)
            place = conditions.pop("place", None)
            out[table] = (place, conditions)
        else:
            raise RuntimeError(
                f"metric {key!r}: summary={{{table!r}: {entry!r}}} must be True, a place "
                "(an int) or a mapping of the table's options"
            )
    return out


def _holds(conditions: Mapping[str, Any], options: Mapping[str, Any]) -> bool:
    """Whether the table's ``options`` meet a membership's ``conditions``: ``True`` asks
    for an option given (not None, not False), any other value for that value; an option
    not passed does not narrow."""
    for option, wanted in conditions.items():
        if option not in options:
            continue
        given = options[option]
        if wanted is True:
            if given is None or given is False:
                return False
        elif not (type(given) is type(wanted) and given == wanted):
            return False
    return True


def register(
    *,
    task: str,
    inputs: Mapping[str, Role],
    kind: Kind = "scalar",
    higher_is_better: bool | None = None,
    lower: float | None = None,
    upper: float | None = None,
    summary: bool | Mapping[str, Any] = True,
    undefined: str = "",
    fields: tuple[str, ...] = (),
    name: str | None = None,
    intervals: tuple[str, ...] = (),
    check: Callable[[Mapping[str, Any]], list[Any]] | None = None,
    **extra: Any,
) -> Callable[[Callable[..., Any]], Any]:
    """Register a metric function (decorator). ``inputs`` maps argument names to roles.

    The function returns either the metric's expression or its :class:`MetricSpec`; for a
    spec, the public function (what the decorator returns) is the spec's one expression,
    aliased to the metric's name, and the registry keeps the spec builder for the planner
    and for merging states. ``intervals`` lists the closed-form interval methods; every
    scalar metric of a task with bootstrap intervals also gets ``"bootstrap"``. ``check``
    adds data checks that the input roles cannot say (a domain that depends on an option).

    ``summary`` declares the default tables the metric is in (``df.eval.<task>(...)``
    without ``metrics=``), read by :func:`default_table` alone: ``True`` (its task's, in
    registration order), ``False`` (none: computed when ``metrics=`` names it), or a
    mapping from a task to ``True``, a place (an int: the table lists its metrics by
    place, as ``df.eval.forecast`` does, whose errors are registered as regression
    metrics) or a mapping of the table's options under which the metric is in
    (``{"ties": "first"}``; ``True`` for an option given; a ``"place"`` key too).
    """

    def decorator(fn: Callable[..., Any]) -> Any:
        key = name or fn.__name__
        if key in REGISTRY:
            raise RuntimeError(f"metric {key!r} registered twice")
        params = inspect.signature(fn).parameters
        missing = [arg for arg in inputs if arg not in params]
        if missing:
            raise RuntimeError(
                f"metric {key!r}: inputs {missing} are not parameters of {fn.__name__}"
            )
        spec_fn = None
        public = fn
        if inspect.signature(fn).return_annotation in ("MetricSpec", MetricSpec):
            spec_fn = fn

            @functools.wraps(fn)
            def public(*args: Any, **kwargs: Any) -> pl.Expr:
                return fn(*args, **kwargs).expr().alias(key)

            public.__signature__ = inspect.signature(fn).replace(  # type: ignore[attr-defined]
                return_annotation="pl.Expr"
            )
        public = recording(public, key, inputs)  # the bootstrap knows what it built
        tables = _tables(key, task, summary)
        if tables and (kind != "scalar" or spec_fn is None):
            raise RuntimeError(f"metric {key!r}: only a scalar spec metric is in a default table")
        methods = tuple(intervals)
        if kind == "scalar" and TASKS[task].bootstrap:
            methods += ("bootstrap",)
        REGISTRY[key] = MetricInfo(
            name=key,
            task=task,
            fn=public,
            inputs=dict(inputs),
            kind=kind,
            higher_is_better=higher_is_better,
            lower=lower,
            upper=upper,
            summary=summary,
            undefined=undefined,
            fields=fields,
            intervals=methods,
            spec=spec_fn,
            check=check,
            extra=extra,
        )
        return public

    return decorator


def get(name: str) -> MetricInfo:
    """The registry entry of ``name``; a clear error for an unknown metric."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise KeyError(f"unknown metric {name!r}; known metrics: {known}") from None


def by_task(task: str) -> list[MetricInfo]:
    """The registered metrics of one task, in registration order."""
    return [info for info in REGISTRY.values() if info.task == task]


def declared(key: str) -> dict[str, Any]:
    """The metrics that declare ``key`` at ``@register`` (``train_scale=``, ``late_of=``
    ...) -> the value declared, in registration order."""
    return {name: info.extra[key] for name, info in REGISTRY.items() if key in info.extra}


def default_table(task: str, **options: Any) -> list[str]:
    """The metrics of the default table of ``task`` (``df.eval.<task>(...)`` without
    ``metrics=``), as declared ``summary=`` at :func:`register`: in their places, else in
    registration order. ``options`` are the table's (``probability=``, ``ties=``, ``train=``
    ...); a metric declared in only under some options is left out when they differ, and
    one not passed narrows nothing (without options: every metric the table may hold).
    The one place that decides membership: every task table, the report, ``pe.Evaluation``,
    the CLI and ``pe.metrics()`` read it.

    Examples
    --------
    >>> import polars_eval
    >>> default_table("forecast", train=None)
    ['mae', 'mse', 'rmse', 'bias', 'mape', 'smape', 'wape']
    >>> "ap_11pt" in default_table("ranking", ties="average")
    False
    """
    members = []
    for order, info in enumerate(REGISTRY.values()):
        entry = _tables(info.name, info.task, info.summary).get(task)
        if entry is not None and _holds(entry[1], options):
            members.append((entry[0], order, info.name))
    placed = {place is not None for place, _, _ in members}
    if len(placed) > 1:
        raise RuntimeError(f"the default table of {task!r}: some metrics declare a place, not all")
    return [name for *_, name in sorted(members, key=lambda m: (m[0] or 0, m[1]))]


def ranked(key: str) -> tuple[str, ...]:
    """The metrics that declare a place ``key=`` at ``@register`` (``at_k_chart=2`` ...),
    in the order of the places."""
    return tuple(name for _, name in sorted((v, n) for n, v in declared(key).items()))


def aliases(task: str) -> dict[str, MetricInfo]:
    """Other names of the metrics of ``task`` (declared ``aliases=`` at ``@register``, e.g.
    fairlearn's ``true_positive_rate`` for ``recall``) -> the metric."""
    return {alias: info for info in by_task(task) for alias in info.extra.get("aliases", ())}


def select(task: str, metrics: str | Sequence[str] | None, **options: Any) -> list[MetricInfo]:
    """The metrics a task method evaluates: its default table under ``options``
    (:func:`default_table`), or the scalar metrics of the task named in ``metrics=`` (any
    registered one, in that order)."""
    if metrics is None:
        return [REGISTRY[name] for name in default_table(task, **options)]
    names = [metrics] if isinstance(metrics, str) else list(metrics)
    known = [i.name for i in by_task(task) if i.kind == "scalar" and i.spec is not None]
    for name in names:
        if not isinstance(name, str) or name not in known:
            raise InvalidParameterError(
                f"metrics: {name!r} is not a {task} metric of one value; "
                f"available: {', '.join(known)}"
            )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InvalidParameterError(f"metrics: {repeated[0]!r} is named twice")
    return [REGISTRY[name] for name in names]


def bind(info: MetricInfo, available: Mapping[str, Any]) -> MetricSpec:
    """The spec of ``info`` with the arguments it takes among ``available`` (a task
    method's inputs and options); an option it needs and the task does not give is an
    error naming it."""
    assert info.spec is not None
    params = info.signature.parameters
    missing = [
        name
        for name, p in params.items()
        if p.default is inspect.Parameter.empty and name not in available
    ]
    if missing:
        options = ", ".join(f"{m}=" for m in missing)
        raise InvalidParameterError(
            f"{info.name} needs {options}, which the task table does not take: "
            f"use df.eval.{info.name}(...) or pe.{info.name}(...)"
        )
    return info.spec(**{k: v for k, v in available.items() if k in params})


def data_checks(infos: Sequence[MetricInfo], available: Mapping[str, Any]) -> list[Any]:
    """The data checks beyond the input roles (``check=`` hooks) of ``infos``, for their
    arguments among ``available`` (their defaults for the rest)."""
    out: list[Any] = []
    for info in infos:
        if info.check is None:
            continue
        params = info.signature.parameters
        args = {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}
        args.update({k: v for k, v in available.items() if k in params})
        out.extend(info.check(args))
    return out


def metrics() -> pl.DataFrame:
    """Every registered metric as a DataFrame: name, task, kind, direction, range, inputs.

    Examples
    --------
    >>> import polars_eval as pe
    >>> table = pe.metrics()
    >>> table.filter(pl.col("name") == "auc").select("name", "task", "higher_is_better").row(0)
    ('auc', 'binary', True)
    """
    in_tables = {name for task in TASKS for name in default_table(task)}
    rows = [
        {
            "name": info.name,
            "task": info.task,
            "kind": info.kind,
            "higher_is_better": info.higher_is_better,
            "lower": None if info.lower is None else float(info.lower),
            "upper": None if info.upper is None else float(info.upper),
            "inputs": list(info.inputs),
            "in_summary": info.name in in_tables,
            "intervals": list(info.intervals),
            "description": info.description,
        }
        for info in REGISTRY.values()
    ]
    schema = {
        "name": pl.String,
        "task": pl.String,
        "kind": pl.String,
        "higher_is_better": pl.Boolean,
        "lower": pl.Float64,
        "upper": pl.Float64,
        "inputs": pl.List(pl.String),
        "in_summary": pl.Boolean,
        "intervals": pl.List(pl.String),
        "description": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)
