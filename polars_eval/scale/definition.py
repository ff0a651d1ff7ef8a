"""The definition of a ``pe.Evaluation``: what its state is of (SPEC §10).

A :class:`Definition` names the task, its column arguments and options (their defaults
the task method's: :class:`~polars_eval._core.tasks.Task`), the ``by`` keys of the state,
``metrics=``, the weight, ``bins=`` and the windows. Two evaluations merge only under
equal definitions; the definition travels as JSON in the first row of the state frame
and in a spill directory's manifest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from polars_eval._core.table import arguments
from polars_eval._core.tasks import TASKS, Task
from polars_eval.exceptions import InvalidParameterError

STATE_VERSION = 3
"""The format version of a state frame; a state of a newer version is refused, and one
of version 1 (distinct rows for every task) where this version keeps the specs' states.
Version 3: the forecast state per series (versions 1 and 2 kept its rows, which are read
and turned into it)."""


def names(value: Any) -> list[str]:
    """The column names of a column argument (a name or a list of names)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InvalidParameterError(
        "pe.Evaluation takes column names (str, or a list of str for several columns); "
        f"got {value!r}"
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True)
class Definition:
    """What an evaluation's state is of (see the module's docstring)."""

    task: str
    columns: Mapping[str, Any]
    options: Mapping[str, Any]
    by: tuple[str, ...]
    metrics: tuple[str, ...] | None
    weight: str | None
    bins: int | None
    windows: Mapping[str, Any] | None = None  # time, every, offset (SPEC §13)

    @property
    def spec(self) -> Task:
        """The task (its columns, options, method and hooks)."""
        return TASKS[self.task]

    def arguments(self, **extra: Any) -> dict[str, Any]:
        """The task method's arguments for this definition (its defaults filled in)."""
        given = {**self.columns, **self.options, "weight": self.weight}
        return arguments(self.spec.method, **{**given, "by": list(self.by) or None, **extra})

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": STATE_VERSION,
                "task": self.task,
                "columns": dict(self.columns),
                "options": _jsonable(dict(self.options)),
                "by": list(self.by),
                "metrics": None if self.metrics is None else list(self.metrics),
                "weight": self.weight,
                "bins": self.bins,
                "windows": None if self.windows is None else dict(self.windows),
            },
            sort_keys=True,
        )

    @staticmethod
    def from_json(text: str) -> Definition:
        raw = json.loads(text)
        version = raw.get("version")
        if not isinstance(version, int) or version > STATE_VERSION:
            raise InvalidParameterError(
                f"this state was written by a newer polars_eval (state format version "
                f"{version!r}; this version reads up to {STATE_VERSION}): upgrade polars_eval"
            )
        options = dict(raw["options"])
        if isinstance(options.get("quantiles"), Mapping):  # JSON keys are strings
            options["quantiles"] = {float(q): c for q, c in options["quantiles"].items()}
        for key in ("interval", "k"):
            if isinstance(options.get(key), list):
                options[key] = tuple(options[key])
        return Definition(
            task=raw["task"],
            columns=raw["columns"],
            options=options,
            by=tuple(raw["by"]),
            metrics=None if raw["metrics"] is None else tuple(raw["metrics"]),
            weight=raw["weight"],
            bins=raw["bins"],
            windows=raw.get("windows"),
        )

    def differences(self, other: Definition) -> list[str]:
        mine, theirs = json.loads(self.to_json()), json.loads(other.to_json())
        return [
            f"{key}: {mine[key]!r} vs {theirs[key]!r}"
            for key in sorted(mine)
            if mine[key] != theirs[key]
        ]
