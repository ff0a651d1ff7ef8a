"""polars_eval: model evaluation native to Polars.

Every metric is a Polars expression (``pe.auc("label", "score")``) usable in ``select``,
``group_by().agg()``, ``over()`` and on lazy frames with the streaming engine; importing
the package registers the ``.eval`` namespace on ``pl.DataFrame`` and ``pl.LazyFrame``.
"""

from __future__ import annotations

from polars_eval import namespace as _namespace
from polars_eval._registry import MetricInfo, metrics
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    PolarsEvalError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)
from polars_eval.families.binary import (
    LOGLOSS_EPS,
    accuracy,
    auc,
    average_precision,
    balanced_accuracy,
    best_threshold,
    brier,
    calibration_table,
    cohen_kappa,
    confusion_matrix,
    ece,
    f1,
    f_beta,
    fdr,
    fnr,
    fpr,
    fpr_at_recall,
    gain_table,
    gini,
    ks,
    logloss,
    lorenz_curve,
    max_accuracy,
    max_f1,
    max_f_beta,
    max_mcc,
    mcc,
    npv,
    pr_auc,
    pr_curve,
    precision,
    precision_at_recall,
    precision_at_volume,
    recall,
    recall_at_fpr,
    recall_at_precision,
    roc_curve,
    specificity,
    threshold_table,
)
from polars_eval.scale import Evaluation

__version__ = "0.1.0"

__all__ = [
    "LOGLOSS_EPS",
    "DataValidationError",
    "Evaluation",
    "InvalidParameterError",
    "MetricInfo",
    "PolarsEvalError",
    "UndefinedMetricError",
    "UndefinedMetricWarning",
    "accuracy",
    "auc",
    "average_precision",
    "balanced_accuracy",
    "best_threshold",
    "brier",
    "calibration_table",
    "cohen_kappa",
    "confusion_matrix",
    "ece",
    "f1",
    "f_beta",
    "fdr",
    "fnr",
    "fpr",
    "fpr_at_recall",
    "gain_table",
    "gini",
    "ks",
    "logloss",
    "lorenz_curve",
    "max_accuracy",
    "max_f1",
    "max_f_beta",
    "max_mcc",
    "mcc",
    "metrics",
    "npv",
    "pr_auc",
    "pr_curve",
    "precision",
    "precision_at_recall",
    "precision_at_volume",
    "recall",
    "recall_at_fpr",
    "recall_at_precision",
    "roc_curve",
    "specificity",
    "threshold_table",
]

# Families added by later modules register here as they land (ranking, regression, ...).
from polars_eval import _families  # noqa: E402,F401  (imports every family module)

__all__ += _families.EXPORTS

EvalNamespace = _namespace.install()

del annotations  # bound by `from __future__ import annotations`; not part of the API


def __dir__() -> list[str]:
    """The public names (``dir(pe)``): functions, classes, constants and subpackages."""
    return sorted({name for name in globals() if not name.startswith("_")} | {"__version__"})


def __getattr__(name: str) -> object:
    # ``pe.spark`` (``pe.spark.evaluate``) is loaded on first use; pyspark only when it runs
    if name == "spark":
        from polars_eval.scale import spark

        return spark
    raise AttributeError(f"module 'polars_eval' has no attribute {name!r}")
