"""The docstring of a generated namespace method (``df.eval.<metric>``), shared by the
namespace (:mod:`polars_eval.namespace`, which generates the method of every registered
metric) and the task methods that write their own (ranking's mean over queries): a floor
below both, so that a task does not import the namespace built on it. Also the method of a
function of the frame (:func:`frame_method`), for the statistics' methods."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from polars_eval._core.registry import MetricInfo

_RETURNS = {
    "scalar": (
        "float | pl.DataFrame | pl.LazyFrame",
        "float\n    Without ``by`` on a DataFrame: the value (``pe.UndefinedMetricError`` when it is\n"
        "    undefined on the data).\n"
        "pl.DataFrame\n    With ``by``: the group columns and ``{name}``, one row per group, sorted\n"
        "    by the keys (null for undefined groups, reported in one warning).\n"
        "pl.LazyFrame\n    On a LazyFrame: the same, computed (and validated) at ``collect()``.",
    ),
    "struct": (
        "Any | pl.DataFrame | pl.LazyFrame",
        "value\n    Without ``by`` on a DataFrame: the value as Python objects.\n"
        "pl.DataFrame\n    With ``by``: the group columns and the value's fields, one row per\n"
        "    group.\n"
        "pl.LazyFrame\n    On a LazyFrame: the same, computed (and validated) at ``collect()``.",
    ),
    "curve": (
        "pl.DataFrame | pl.LazyFrame",
        "pl.DataFrame\n    One row per point (with ``by``, the group columns first).\n"
        "pl.LazyFrame\n    On a LazyFrame: the same, computed (and validated) at ``collect()``.",
    ),
}

_NAMESPACE_PARAMS = """by : str or list of str, optional
    Group columns: one result per group instead of one for the frame.
validate : bool, default True
    Check the rows first (SPEC §2): labels in the task's domain, probabilities in
    [0, 1], no NaN or ±inf, no negative weight; a clear ``pe.DataValidationError``
    naming the column otherwise. ``False`` skips the checks.
time, every, period, offset : optional
    Windows (SPEC §13): one value per window of ``group_by_dynamic(time, every=,
    period=, offset=, closed="left", label="left", start_by="window", group_by=by)``
    that holds rows, as a table (the time column holds the window's start,
    ``window_end`` its end), merged from one state per ``every`` step."""

_CI_PARAMS = """ci : {{{methods}}}, optional
    Add a confidence interval: the result becomes ``pe.Interval(value, lower, upper)``
    (columns ``{name}``, ``{name}_lower``, ``{name}_upper`` with ``by``).
level : float, default 0.95
    The interval's confidence level.{bootstrap}"""


def method_doc(
    info: MetricInfo,
    params: str = _NAMESPACE_PARAMS,
    returns: str | None = None,
    form: str = "evaluated on the frame",
) -> str:
    """The docstring of a namespace method: the metric's, with the namespace's arguments
    and return values (the metric's own ``Returns`` describe the expression). A task with
    keys passes its own ``params``, ``returns`` and a line on the ``form``."""
    doc = inspect.getdoc(info.fn) or ""
    summary, _, body = doc.partition("\n")
    if info.intervals:
        bootstrap = (
            '\nn_resamples, seed, method : optional\n    With ``ci="bootstrap"``: the number of'
            ' resamples (1000), the seed (0) and\n    ``"multinomial"`` or ``"poisson"``'
            " resampling."
            if "bootstrap" in info.intervals
            else ""
        )
        params += "\n" + _CI_PARAMS.format(
            methods=", ".join(repr(m) for m in info.intervals),
            name=info.name,
            bootstrap=bootstrap,
        )
    returns = returns or _RETURNS[info.kind][1].format(name=info.name)
    return (
        f"{summary}\n\n"
        f"The ``.eval`` form of :func:`polars_eval.{info.fn.__name__}`: the same arguments,\n"
        f"{form}.\n\n"
        f"Namespace parameters\n--------------------\n{params}\n\n"
        f"Returns\n-------\n{returns}\n"
        f"{body}"
    )


def frame_method(function: Callable[..., Any]) -> Any:
    """The namespace method of ``function(frame, ...)``: ``df.eval.<name>(...)`` calls it on
    the namespace's frame. The method has the function's signature (``self`` in place of
    the frame) and docstring, so that the two cannot disagree."""

    @functools.wraps(function)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return function(self._frame, *args, **kwargs)

    sig = inspect.signature(function)
    _, *params = sig.parameters.values()
    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    method.__signature__ = sig.replace(parameters=[self_param, *params])  # type: ignore[attr-defined]
    return method
