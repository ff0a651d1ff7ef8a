"""Model diagnostics (SPEC §5): AIC, BIC, variance inflation factors and Cook's distance.

Linear algebra on collected data with numpy, not metric expressions: a VIF or a Cook's
distance needs the whole design matrix of the features (least squares fits, hat values),
which no aggregation expression of Polars computes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from polars_eval._exprs import F64
from polars_eval._params import check_count, check_real
from polars_eval.exceptions import DataValidationError, InvalidParameterError

__all__ = ["aic", "bic"]


def aic(log_likelihood: float, k: int) -> float:
    """Akaike information criterion, AIC = 2k − 2 ln L̂.

    ``log_likelihood`` is the maximised log-likelihood ln L̂ of a fitted model, ``k`` its
    number of estimated parameters. Lower is better.

    References
    ----------
    Akaike, H. (1974). A new look at the statistical model identification. IEEE
    Transactions on Automatic Control 19(6).

    Examples
    --------
    >>> import polars_eval as pe
    >>> pe.aic(-10.0, 3)
    26.0
    """
    ll = check_real("log_likelihood", log_likelihood)
    kk = check_count("k", k)
    return 2.0 * kk - 2.0 * ll


def bic(log_likelihood: float, k: int, n: int) -> float:
    """Bayesian information criterion, BIC = k ln n − 2 ln L̂ (n observations).

    References
    ----------
    Schwarz, G. (1978). Estimating the dimension of a model. Annals of Statistics 6(2).

    Examples
    --------
    >>> import polars_eval as pe
    >>> round(pe.bic(-10.0, 2, 20), 10)  # 2 ln 20 + 20
    25.9914645471
    """
    ll = check_real("log_likelihood", log_likelihood)
    kk = check_count("k", k)
    nn = check_count("n", n)
    return kk * math.log(nn) - 2.0 * ll


def _design(frame: pl.DataFrame, features: Sequence[str]) -> np.ndarray:
    """The features as a float matrix (rows with a null dropped by the caller)."""
    return frame.select([pl.col(c).cast(F64) for c in features]).to_numpy()


def _check_finite(frame: pl.DataFrame, columns: Sequence[str]) -> None:
    for c in columns:
        s = frame.get_column(c).cast(F64)
        bad = s.filter(~s.is_finite())
        if bad.len():
            shown = ", ".join(repr(v) for v in bad.head(3).to_list())
            raise DataValidationError(
                f'column "{c}" must hold finite numbers; found {bad.len()} rows with NaN or ±inf, e.g. [{shown}]'
            )


def _collinear_message(features: Sequence[str], x: np.ndarray) -> str:
    """Name the features involved in an exact linear dependence (a null-space vector)."""
    centred = x - x.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    v = vt[-1]
    involved = [f for f, c in zip(features, v, strict=True) if abs(c) > 1e-6]
    return (
        "singular design: the features are linearly dependent (with the intercept); "
        f"involved: {involved}"
    )


def _rank_tol(x: np.ndarray) -> float:
    s = np.linalg.svd(x, compute_uv=False)
    return float(s.max() * max(x.shape) * np.finfo(np.float64).eps) if s.size else 0.0


def vif_frame(frame: pl.DataFrame, features: Sequence[str]) -> pl.DataFrame:
    """Variance inflation factors of ``features`` (see ``df.eval.vif``)."""
    features = list(features)
    if len(features) < 2:
        raise InvalidParameterError("vif needs at least two features")
    data = frame.select(features).drop_nulls()
    _check_finite(data, features)
    x = _design(data, features)
    n = x.shape[0]
    if n <= len(features):
        raise DataValidationError(
            f"vif needs more rows than features; got {n} complete rows for {len(features)} features"
        )
    for j, f in enumerate(features):
        if np.ptp(x[:, j]) == 0.0:
            raise DataValidationError(
                f'column "{f}" is constant: its VIF is undefined (it is collinear with the intercept)'
            )
    centred = x - x.mean(axis=0)
    z = centred / np.sqrt((centred**2).sum(axis=0))  # unit columns: Z'Z is the correlation matrix
    s = np.linalg.svd(z, compute_uv=False)
    if s.min() <= s.max() * len(features) * np.finfo(np.float64).eps * max(n, 1) ** 0.5:
        raise DataValidationError(_collinear_message(features, x))
    # VIF_j = 1 / (1 − R²_j) = j-th diagonal element of the inverse correlation matrix
    inverse = np.linalg.inv(z.T @ z)
    return pl.DataFrame(
        {"feature": features, "vif": np.diag(inverse).astype(np.float64)},
        schema={"feature": pl.String, "vif": F64},
    )


def cooks_frame(frame: pl.DataFrame, features: Sequence[str], target: str) -> pl.DataFrame:
    """Residual, leverage and Cook's distance of every row (see ``df.eval.cooks_distance``)."""
    features = list(features)
    if not features:
        raise InvalidParameterError("cooks_distance needs at least one feature")
    cols = [*features, target]
    data = frame.select(cols).with_row_index("row")
    complete = data.drop_nulls(cols)
    _check_finite(complete, cols)
    x = _design(complete, features)
    y = complete.get_column(target).cast(F64).to_numpy()
    n = x.shape[0]
    design = np.column_stack([np.ones(n), x])
    k = design.shape[1]
    if n <= k:
        raise DataValidationError(
            f"cooks_distance needs more complete rows than parameters; got {n} rows for {k} parameters"
        )
    q, r = np.linalg.qr(design)
    diag = np.abs(np.diag(r))
    if diag.min() <= _rank_tol(design):
        raise DataValidationError(_collinear_message(features, x))
    beta = np.linalg.solve(r, q.T @ y)
    residual = y - design @ beta
    leverage = (q * q).sum(axis=1)  # diagonal of the hat matrix H = Q Qᵀ
    s2 = float(residual @ residual) / (n - k)
    with np.errstate(divide="ignore", invalid="ignore"):
        cooks = residual**2 / (k * s2) * leverage / (1.0 - leverage) ** 2
    cooks = np.where(np.isfinite(cooks), cooks, np.nan) if s2 > 0 else np.full(n, np.nan)
    values = pl.DataFrame(
        {
            "row": complete.get_column("row"),
            "residual": residual,
            "leverage": leverage,
            "cooks_distance": cooks,
        }
    ).with_columns(pl.col("cooks_distance").fill_nan(None))
    return data.select("row").join(values, on="row", how="left")
