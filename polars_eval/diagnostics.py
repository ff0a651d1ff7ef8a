"""Model diagnostics (SPEC §5): AIC, BIC, variance inflation factors and Cook's distance.

The code is :mod:`polars_eval.metrics.diagnostics` (a floor below the task tables that
use it: ``df.eval.vif``, ``df.eval.cooks_distance``); this module keeps the public path.
"""

from polars_eval.metrics.diagnostics import aic, bic, cooks_frame, vif_frame

__all__ = ["aic", "bic", "cooks_frame", "vif_frame"]
