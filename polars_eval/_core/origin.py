"""Where a metric expression came from: a record kept when a registered metric builds one.

The bootstrap evaluates a registered metric by a numpy kernel when it knows which metric an
expression is and with which arguments it was built (``stats/bootstrap.py``). Rather than
guessing that from the expression, every call of a registered metric function (the
``@register`` wrapper, :func:`recording`) records the expression it built together with
the metric's name and the arguments of the call bound to their parameter names (keyword
arguments in any order, positional ones named). :func:`origin` looks an expression up:
among the recorded expressions over the same columns, one structurally equal to it
(``Expr.meta.eq``) once every alias is undone, so ``pe.auc("y", "p").alias("model_a")``
is still ``auc``. An expression that no registered call built (your own
``pl.col("y").mean()``, a metric inside a larger expression) is not found.

Building costs only the look-up of the expression's columns: the last
:data:`PENDING_SIZE` calls keep their expression (the same metric built again with the
same arguments counts once), and :func:`origin` compares those over the same columns,
the ones named like the expression first. An older call is kept as a digest of its
serialized plan with the aliases undone (computed once, when it leaves the recent calls;
:data:`RECORD_SIZE` of them, the least recently built or found dropped first), which
:func:`origin` then matches by the digest of the expression. An expression built long
before it is bootstrapped, after many thousand others, is no longer known and takes the
bootstrap's expression path (slower, the same values).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

PENDING_SIZE = 256
"""How many recent calls keep their expression (about 6 MB for 256 ROC AUCs)."""
RECORD_SIZE = 4096
"""How many older calls the record remembers by the digest of their expression."""


@dataclass
class _Built:
    """One recorded call: the metric, its arguments, the expression and its columns."""

    name: str
    args: dict[str, Any]
    expr: pl.Expr
    roots: frozenset[str]
    base: pl.Expr | None = None  # the expression with its aliases undone, on first need

    def unaliased(self) -> pl.Expr:
        if self.base is None:
            self.base = self.expr.meta.undo_aliases()
        return self.base


_PENDING: OrderedDict[tuple[str, str], _Built] = OrderedDict()
_DIGESTS: OrderedDict[bytes, dict[str, dict[str, Any]]] = OrderedDict()
_LOCK = threading.Lock()


def _roots(expr: pl.Expr) -> frozenset[str] | None:
    """The columns an expression reads (None: not a single expression)."""
    try:
        return frozenset(expr.meta.root_names())
    except Exception:  # noqa: BLE001 - an expression Polars cannot inspect is not recorded
        return None


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


def _digest(expr: pl.Expr) -> bytes | None:
    """A digest of an expression's plan with its aliases undone (None: not serializable,
    such as an expression over a Python function Polars cannot pickle)."""
    try:
        plan = expr.meta.undo_aliases().meta.serialize(format="binary")
    except Exception:  # noqa: BLE001 - such an expression is known while it is recent only
        return None
    return hashlib.blake2b(plan, digest_size=16).digest()


def _call_key(name: str, args: Mapping[str, Any]) -> tuple[str, str]:
    return name, repr(sorted(args.items()))


def remember(name: str, expr: pl.Expr, args: Mapping[str, Any]) -> None:
    """Record that ``expr`` is the metric ``name`` built with ``args``."""
    roots = _roots(expr)
    if roots is None:
        return
    key = _call_key(name, args)
    older = []
    with _LOCK:
        _PENDING[key] = _Built(name, dict(args), expr, roots)
        _PENDING.move_to_end(key)
        while len(_PENDING) > PENDING_SIZE:
            older.append(_PENDING.popitem(last=False)[1])
    for built in older:  # outside the lock: a serialization can take milliseconds
        digest = _digest(built.expr)
        if digest is None:
            continue
        with _LOCK:
            _DIGESTS.setdefault(digest, {})[built.name] = built.args
            _DIGESTS.move_to_end(digest)
            while len(_DIGESTS) > RECORD_SIZE:
                _DIGESTS.popitem(last=False)


def origin(expr: pl.Expr) -> tuple[str, dict[str, Any]] | None:
    """The registered metric and the arguments ``expr`` was built with, or None."""
    roots = _roots(expr)
    if roots is None:
        return None
    try:
        name: str | None = expr.meta.output_name()
    except Exception:  # noqa: BLE001 - no single output name
        name = None
    with _LOCK:  # the newest first; then those named like the expression first
        candidates = [b for b in reversed(_PENDING.values()) if b.roots == roots]
    candidates.sort(key=lambda b: b.name != name)
    found = next((b for b in candidates if expr.meta.eq(b.expr)), None)
    if found is None and candidates:
        base = expr.meta.undo_aliases()
        found = next((b for b in candidates if base.meta.eq(b.unaliased())), None)
    if found is not None:
        with _LOCK:
            key = _call_key(found.name, found.args)
            if key in _PENDING:
                _PENDING.move_to_end(key)
        return found.name, dict(found.args)
    digest = _digest(expr)
    if digest is None:
        return None
    with _LOCK:
        entry = _DIGESTS.get(digest)
        if entry is None:
            return None
        _DIGESTS.move_to_end(digest)
        known = name if name in entry else next(reversed(entry))
        return known, dict(entry[known])


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
