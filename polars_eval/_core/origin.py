"""Where a metric expression came from: a record kept when a registered metric builds one.

The bootstrap evaluates a registered metric by a numpy kernel when it knows which metric an
expression is and with which arguments it was built (``stats/bootstrap.py``). Rather than
guessing that from the expression, every call of a registered metric function (the
``@register`` wrapper, :func:`recording`) records its expression's structure — the
serialized plan with every alias undone, so ``pe.auc("y", "p").alias("model_a")`` is still
``auc`` — together with the metric's name and the arguments of the call bound to their
parameter names (keyword arguments in any order, positional ones named). :func:`origin`
looks an expression up. An expression that no registered call built (your own
``pl.col("y").mean()``, a hand-written look-alike of a metric) is not found.

The record is bounded (:data:`RECORD_SIZE` expressions, the least recently built or looked
up dropped first): an expression built long before it is bootstrapped, after many others,
is no longer known and takes the bootstrap's expression path (slower, the same values).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

RECORD_SIZE = 4096
"""How many built expressions the record remembers."""

_RECORD: OrderedDict[bytes, dict[str, dict[str, Any]]] = OrderedDict()
_LOCK = threading.Lock()


def structure(expr: pl.Expr) -> bytes | None:
    """A digest of an expression's structure with its aliases undone (None: not serializable,
    such as an expression over a Python function)."""
    try:
        plan = expr.meta.undo_aliases().meta.serialize(format="binary")
    except Exception:  # noqa: BLE001 - an expression Polars cannot serialize is not recorded
        return None
    return hashlib.blake2b(plan, digest_size=16).digest()


def _column_name(value: Any) -> Any:
    """A bare column expression (``pl.col("y")``) as its name; other values unchanged."""
    if isinstance(value, pl.Expr) and value.meta.is_column():
        return value.meta.output_name()
    return value


def _is_column(value: Any) -> bool:
    """A column argument the record keeps: a name, or a list of names (one per class)."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


def remember(name: str, expr: pl.Expr, args: Mapping[str, Any]) -> None:
    """Record that ``expr`` is the metric ``name`` built with ``args``."""
    key = structure(expr)
    if key is None:
        return
    with _LOCK:
        entry = _RECORD.setdefault(key, {})
        entry[name] = dict(args)
        _RECORD.move_to_end(key)
        while len(_RECORD) > RECORD_SIZE:
            _RECORD.popitem(last=False)


def origin(expr: pl.Expr) -> tuple[str, dict[str, Any]] | None:
    """The registered metric and the arguments ``expr`` was built with, or None.

    Two metrics built into the same structure (aliases of one formula) are told apart by
    the expression's output name when it is one of them; otherwise the last built wins.
    """
    key = structure(expr)
    if key is None:
        return None
    with _LOCK:
        entry = _RECORD.get(key)
        if entry is None:
            return None
        _RECORD.move_to_end(key)
        try:
            name = expr.meta.output_name()
        except Exception:  # noqa: BLE001 - no single output name: any entry fits
            name = None
        if name not in entry:
            name = next(reversed(entry))
        return name, dict(entry[name])


def recording(fn: Callable[..., pl.Expr], name: str, inputs: Mapping[str, Any]) -> Any:
    """``fn`` (a registered metric's public function) recording every expression it builds.

    The arguments are bound to their parameter names; None values (an unset ``weight=``)
    are left out and a bare column expression becomes its name. A call whose column
    arguments (``inputs``) are not all column names is not recorded: the bootstrap's
    kernels and checks read columns by name.
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> pl.Expr:
        expr = fn(*args, **kwargs)
        bound = signature.bind(*args, **kwargs).arguments
        values = {k: _column_name(v) for k, v in bound.items() if v is not None}
        if all(_is_column(values[k]) for k in inputs if k in values):
            remember(name, expr, values)
        return expr

    # ``__wrapped__`` stays the registered function (a spec builder for a spec metric)
    wrapper.__wrapped__ = getattr(fn, "__wrapped__", fn)  # type: ignore[attr-defined]
    return wrapper
