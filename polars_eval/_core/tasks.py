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
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Task:
    """One evaluation task."""

    name: str
    description: str
    data_args: tuple[str, ...]
    keys: tuple[str, ...] = ()
    bootstrap: bool = True
    methods: str = ""
    report: str = ""
    cli: str = ""
    metric_method: str = ""
    metric_tasks: tuple[str, ...] = ()

    def load(self, what: str) -> Any:
        """The object a ``"module:attribute"`` field of this task names."""
        module, _, attribute = getattr(self, what).partition(":")
        return getattr(importlib.import_module(module), attribute)


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            "binary",
            "binary classification",
            ("label", "score"),
            methods="polars_eval.tasks.binary:BinaryMethods",
            report="polars_eval.report.tables:build_binary",
            cli="polars_eval.cli.binary:command",
        ),
        Task(
            "regression",
            "regression",
            ("actual", "pred"),
            methods="polars_eval.tasks.regression:RegressionMethods",
            report="polars_eval.report.tables:build_regression",
            cli="polars_eval.cli.regression:command",
        ),
        Task(
            "multiclass",
            "multiclass classification",
            ("label",),
            methods="polars_eval.tasks.multiclass:MulticlassMethods",
            report="polars_eval.report.tables:build_multiclass",
            cli="polars_eval.cli.multiclass:command",
        ),
        Task(
            "forecast",
            "forecast",
            ("actual", "forecast"),
            keys=("series", "time", "cutoff"),
            methods="polars_eval.tasks.forecast:ForecastMethods",
            report="polars_eval.report.tables:build_forecast",
            cli="polars_eval.cli.forecast:command",
            metric_method="polars_eval.tasks.forecast:keyed_method",
            metric_tasks=("regression", "forecast"),
        ),
        Task(
            "ranking",
            "ranking",
            ("relevance", "score"),
            keys=("query", "item"),
            bootstrap=False,
            methods="polars_eval.tasks.ranking:RankingMethods",
            report="polars_eval.report.tables:build_ranking",
            cli="polars_eval.cli.ranking:command",
            metric_method="polars_eval.tasks.ranking:metric_method",
            metric_tasks=("ranking",),
        ),
    )
}
"""Every task, in the order the docs list them."""
