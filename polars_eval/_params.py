"""Every option check, in one place: an option is checked when the expression is built,
and a bad one is an ``InvalidParameterError`` naming it, before anything is collected
(STYLE.md "A metric, end to end")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from polars_eval.exceptions import InvalidParameterError


def check_positive_int(name: str, value: Any, *, allow_none: bool = False) -> None:
    """Raise unless ``value`` is a positive integer (or None when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidParameterError(f"{name} must be a positive integer; got {value!r}")


def check_fraction(
    name: str, value: Any, *, low_open: bool = False, high_open: bool = False
) -> None:
    """Raise unless ``value`` is a number in [0, 1] (ends optionally open)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        ok = (value > 0 if low_open else value >= 0) and (value < 1 if high_open else value <= 1)
    if not ok:
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise InvalidParameterError(f"{name} must be a number in {lo}0, 1{hi}; got {value!r}")


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise InvalidParameterError(f"{name} must be one of {list(choices)!r}; got {value!r}")


def check_number(name: str, value: Any) -> None:
    """Raise unless ``value`` is a finite real number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidParameterError(f"{name} must be a finite number; got {value!r}")


def check_beta(beta: Any) -> None:
    """Raise unless ``beta`` (of an F-beta score) is a positive finite number."""
    check_number("beta", beta)
    if beta <= 0:
        raise InvalidParameterError(f"beta must be positive; got {beta!r}")


def check_real(name: str, value: Any) -> float:
    """A finite real number (numpy scalars too), as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameterError(f"{name} must be a finite number; got {value!r}")
    if not math.isfinite(float(value)):
        raise InvalidParameterError(f"{name} must be a finite number; got {value!r}")
    return float(value)


def check_count(name: str, value: Any, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (numpy integers too), as an int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        if minimum == 1:
            raise InvalidParameterError(f"{name} must be a positive integer; got {value!r}")
        raise InvalidParameterError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_level(level: Any) -> None:
    """Raise unless ``level`` is a confidence level in (0, 1)."""
    check_fraction("level", level, low_open=True, high_open=True)


def check_alpha(alpha: Any) -> float:
    """A level or quantile strictly inside (0, 1), as a float."""
    check_fraction("alpha", alpha, low_open=True, high_open=True)
    return float(alpha)


def check_tweedie_power(power: Any, *, negative: bool = True, metric: str = "") -> float:
    """A Tweedie power: <= 0 or >= 1 (no Tweedie distribution has 0 < power < 1); with
    ``negative=False`` (utilsforecast's rule) 0 or >= 1."""
    check_number("power", power)
    if 0 < power < 1 or (power < 0 and not negative):
        allowed = "<= 0 or >= 1" if negative else "0 or >= 1"
        where = f" for {metric}" if metric else ""
        why = "" if negative else "; utilsforecast refuses power < 0"
        raise InvalidParameterError(
            f"power must be {allowed}{where} (no Tweedie distribution has 0 < power < 1{why}); "
            f"got {power!r}"
        )
    return float(power)


def check_column_names(name: str, columns: Sequence[Any]) -> list[str]:
    """The list of columns given to ``name=``, checked: each a column name (str), none
    named twice."""
    for col in columns:
        if not isinstance(col, str):
            raise InvalidParameterError(
                f"{name}= takes column names (str); got {type(col).__name__} {col!r}"
            )
    repeated = sorted({c for c in columns if list(columns).count(c) > 1})
    if repeated:
        raise InvalidParameterError(f'{name}= names the column "{repeated[0]}" twice')
    return list(columns)
