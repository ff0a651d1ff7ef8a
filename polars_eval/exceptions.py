"""Errors and warnings raised by polars_eval."""

from __future__ import annotations


class PolarsEvalError(Exception):
    """Base class of every error raised by polars_eval."""


class InvalidParameterError(PolarsEvalError, ValueError):
    """An option passed to a metric is invalid (raised when the expression is built)."""


class DataValidationError(PolarsEvalError, ValueError):
    """The data does not fit the metric: wrong labels, NaN, negative weights, missing columns."""


class UndefinedMetricError(PolarsEvalError, ValueError):
    """The metric has no value on this data (one class, empty frame, constant target...)."""


class ExecutorImportError(PolarsEvalError, ImportError):
    """The workers of a distributed engine (Spark's executors) cannot import polars_eval."""


class UndefinedMetricWarning(UserWarning):
    """Some groups of a grouped evaluation have an undefined (null) metric."""
