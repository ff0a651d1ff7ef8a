"""The metrics, one module per task, each metric a registered spec; ``pe.metrics()`` lists them.

``polars_eval.metrics`` is both this package (``polars_eval.metrics.binary`` ...) and
callable: ``pe.metrics()`` returns every registered metric as a DataFrame (name, task,
kind, direction, range, inputs, intervals, description; see
:func:`polars_eval._core.registry.metrics`).
"""

from __future__ import annotations

import sys
import types

import polars as pl


class _CallableModule(types.ModuleType):
    """The package, callable as ``pe.metrics()``."""

    def __call__(self) -> pl.DataFrame:
        from polars_eval._core.registry import metrics

        return metrics()


sys.modules[__name__].__class__ = _CallableModule
