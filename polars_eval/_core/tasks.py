"""The tasks (SPEC §3–§7): the one list every other layer reads.

A :class:`Task` says what a task's data is (its data arguments and key columns), whether
its scalar metrics take bootstrap intervals, and where its task-level pieces live: the
report builder and the CLI sub-command, named as ``"module:attribute"`` and imported on
first use (the engine does not import the layers built on it). A task with keys may also
name ``metric_method``: the factory of the namespace method of each scalar metric of
``metric_tasks`` (``df.eval.ndcg(..., query=)`` averages over queries, ``df.eval.mae(...,
series=, time=)`` reads the forecast keys); every other metric's method is the generic one. The namespace's task
methods, the CLI, the report's task list, ``pe.Evaluation`` and the interval machinery
all iterate over :data:`TASKS`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Task:
    """One evaluation task."""

    name: str
    description: str
    data_args: tuple[str, ...]
    keys: tuple[str, ...] = ()
    bootstrap: bool = True
    # where the task's methods, report builder and CLI sub-command live; unnamed, where
    # the layout puts them (:meth:`__post_init__`)
    methods: str = ""
    report: str = ""
    cli: str = ""
    metric_method: str = ""
    metric_tasks: tuple[str, ...] = ()
    # ``pe.Evaluation``'s definition of the task (SPEC §10): its column arguments, those
    # required, the options its state keeps (their defaults: the task method's) and the
    # roles of the columns of the rows it keeps (checked batch by batch)
    columns: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    roles: Mapping[str, str] = field(default_factory=dict)
    # the column arguments a ``train=`` frame holds (the task method takes one)
    train: tuple[str, ...] = ()
    # ``pe.Evaluation``'s hooks (``"module:function"``, as above): ``evaluation(d,
    # trained)`` gives, for a definition ``d``, the bounded state it keeps (a table whose
    # states merge, the bins table, the forecast state; None: it keeps the rows) and the
    # checks of a batch (None: the roles above); ``request(d)`` the task method's
    # arguments for its ``metrics=`` and whether the names then select the columns
    evaluation: str = ""
    request: str = ""
    # the task method on a LazyFrame whose table keeps sorted scores or bins, run as a
    # bounded ``pe.Evaluation`` in chunks (SPEC §10: the state, not the rows)
    bounded: str = ""

    def __post_init__(self) -> None:
        """The pieces the task leaves unnamed, where the layout puts them: the methods in
        ``tasks/<name>.py`` (class ``<Name>Methods``), the report builder in
        ``report/tables.py`` (``build_<name>``), the sub-command in ``cli/<name>.py``."""
        where = {
            "methods": f"polars_eval.tasks.{self.name}:{self.name.capitalize()}Methods",
            "report": f"polars_eval.report.tables:build_{self.name}",
            "cli": f"polars_eval.cli.{self.name}:command",
        }
        for what, default in where.items():
            if not getattr(self, what):
                object.__setattr__(self, what, default)

    def load(self, what: str) -> Any:
        """The object a ``"module:attribute"`` field of this task names."""
        module, _, attribute = getattr(self, what).partition(":")
        return getattr(importlib.import_module(module), attribute)

    @property
    def method(self) -> Any:
        """The task method (``df.eval.<task>``), unbound."""
        return getattr(self.load("methods"), self.name)

    def defaults(self) -> dict[str, Any]:
        """Each of :attr:`options` with its default, as the task method declares it."""
        parameters = inspect.signature(self.method).parameters
        return {name: parameters[name].default for name in self.options}


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            "binary",
            "binary classification",
            ("label", "score"),
            columns=("label", "score"),
            required=("label", "score"),
            options=("pos_label", "threshold", "probability", "baseline"),
            roles={"label": "binary_label", "score": "score"},
            evaluation="polars_eval.tasks._binary_bins:evaluation_state",
            bounded="polars_eval.scale.bounded:run_binary",
        ),
        Task(
            "regression",
            "regression",
            ("actual", "pred"),
            columns=("actual", "pred"),
            required=("actual", "pred"),
            options=("zero_actuals", "baseline"),
            roles={"actual": "numeric", "pred": "numeric"},
            evaluation="polars_eval.tasks.regression:evaluation_state",
        ),
        Task(
            "multiclass",
            "multiclass classification",
            ("label",),
            columns=("label", "pred", "proba"),
            required=("label",),
            options=("classes", "k", "multi_class", "weights", "adjusted", "baseline"),
            roles={"label": "key", "pred": "key", "proba": "proba"},
            evaluation="polars_eval.tasks.multiclass:evaluation_state",
            request="polars_eval.tasks.multiclass:evaluation_request",
        ),
        Task(
            "forecast",
            "forecast",
            ("actual", "forecast"),
            keys=("series", "time", "cutoff"),
            metric_method="polars_eval.tasks.forecast:keyed_method",
            metric_tasks=("regression", "forecast"),
            columns=("actual", "forecast", "series", "time"),
            required=("actual", "forecast", "series", "time"),
            options=("season_length", "zero_actuals", "quantiles", "interval"),
            roles={"actual": "numeric", "forecast": "numeric", "series": "key", "time": "key"},
            train=("series", "time", "actual"),
            evaluation="polars_eval.scale.forecast_state:evaluation_state",
            request="polars_eval.scale.forecast_state:evaluation_request",
        ),
        Task(
            "ranking",
            "ranking",
            ("relevance", "score"),
            keys=("query", "item"),
            bootstrap=False,
            metric_method="polars_eval.tasks.ranking:metric_method",
            metric_tasks=("ranking",),
            columns=("relevance", "score", "query", "item"),
            required=("relevance", "score", "query"),
            options=("k", "gain", "ties", "min_relevance", "no_relevant", "max_relevance")
            + ("unscored", "baseline"),
            roles={"relevance": "relevance", "score": "score", "query": "key", "item": "key"},
            request="polars_eval.tasks.ranking:evaluation_request",
        ),
    )
}
"""Every task, in the order the docs list them."""
