"""Intervals over units: the mean of per-query or per-series values (SPEC §14 "Units").

The code is :mod:`polars_eval._core.units`, a floor below the task tables that run it
(ranking's mean over queries, forecast's over series); this module keeps the path.
"""

from polars_eval._core.units import (
    BOOTSTRAP_CELLS,
    DEN,
    METHODS,
    NUM,
    OPTIONS,
    SQ,
    UnitCI,
    bootstrap_bounds,
    check_no_per_unit,
    interval_names,
    ordered,
    unit_bootstrap,
    unit_ci,
    unit_means,
    unit_sums,
    with_bootstrap,
)

__all__ = [
    "BOOTSTRAP_CELLS",
    "DEN",
    "METHODS",
    "NUM",
    "OPTIONS",
    "SQ",
    "UnitCI",
    "bootstrap_bounds",
    "check_no_per_unit",
    "interval_names",
    "ordered",
    "unit_bootstrap",
    "unit_ci",
    "unit_means",
    "unit_sums",
    "with_bootstrap",
]
