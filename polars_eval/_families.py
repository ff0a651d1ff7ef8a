"""Imports the optional metric family modules and collects their public names.

Each family module lists its public functions in ``__all__``; they become attributes of
the ``polars_eval`` package. A family not yet written is simply absent.
"""

from __future__ import annotations

import importlib
import sys

FAMILIES = (
    "polars_eval.families.ranking",
    "polars_eval.families.regression",
    "polars_eval.families.forecast",
    "polars_eval.families.multiclass",
    "polars_eval.stats",
    "polars_eval.io.trec",
    "polars_eval.report",
)

EXPORTS: list[str] = []

_package = sys.modules["polars_eval"]
for _name in FAMILIES:
    try:
        _module = importlib.import_module(_name)
    except ModuleNotFoundError as _error:
        if _error.name is not None and _name.startswith(_error.name):
            continue
        raise
    for _attr in getattr(_module, "__all__", []):
        setattr(_package, _attr, getattr(_module, _attr))
        EXPORTS.append(_attr)
