"""SPEC §14 ``df.eval.dm_test``: the Diebold–Mariano test as R's ``forecast::dm.test``.

Oracles: a numpy transcription of ``dm.test``'s formula (below), and the worked example of
the ``dieboldmariano`` package's README (also real-statistics.com's). BAD_INPUTS row 59.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats

from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricWarning,
)


def r_dm_test(
    e1: np.ndarray, e2: np.ndarray, h: int = 1, power: float = 2, alternative: str = "two.sided"
) -> tuple[float, float]:
    """forecast::dm.test, transcribed: d, acf(type="covariance", lag.max=h-1), the variance
    of the mean with denominator length(d), the HLN factor, Student's t with n - 1 df; h = 1
    again when the variance is not positive."""
    d = np.abs(e1) ** power - np.abs(e2) ** power
    n = d.size
    dc = d - d.mean()
    acf = np.array([np.sum(dc[: n - k] * dc[k:]) / n for k in range(h)])
    d_var = (acf[0] + 2 * acf[1:].sum()) / n
    if d_var <= 0:
        if h == 1:
            raise ZeroDivisionError("Variance of DM statistic is zero")
        return r_dm_test(e1, e2, 1, power, alternative)
    k = np.sqrt((n + 1 - 2 * h + (h / n) * (h - 1)) / n)
    stat = d.mean() / np.sqrt(d_var) * k
    if alternative == "two.sided":
        p = 2 * stats.t.cdf(-abs(stat), df=n - 1)
    elif alternative == "less":
        p = stats.t.cdf(stat, df=n - 1)
    else:
        p = stats.t.sf(stat, df=n - 1)
    return float(stat), float(p)


def test_published_worked_example() -> None:
    # dieboldmariano (PyPI) README: T, F, G -> (-2.2229922805746782, 0.04515565862099125)
    df = pl.DataFrame({"t": [1, 2, 3, 4, 5], "y": [10, 20, 30, 40, 50],
                       "f": [11, 21, 29, 42, 53], "g": [13, 26, 24, 40, 59]})  # fmt: skip
    out = df.eval.dm_test("y", "f", "g", time="t", alternative="less")
    assert out["statistic"] == pytest.approx(-2.2229922805746782, rel=1e-12)
    assert out["p_value"] == pytest.approx(0.04515565862099125, rel=1e-10)
    assert out["n"] == 5


@pytest.mark.parametrize("h", [1, 2, 3, 5])
@pytest.mark.parametrize("power", [1, 2, 1.5])
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_equals_the_transcription_of_dm_test(h: int, power: float, alternative: str) -> None:
    rng = np.random.default_rng(h * 10 + int(power * 2))
    n = 40
    y = np.cumsum(rng.normal(0, 1, n))
    f1 = y + rng.normal(0, 1, n)
    f2 = y + np.convolve(rng.normal(0.2, 1.2, n + 2), [1, 0.6, 0.3], "valid")  # correlated errors
    df = pl.DataFrame({"t": np.arange(n), "y": y, "f1": f1, "f2": f2}).sample(
        fraction=1.0, shuffle=True, seed=h
    )
    out = df.eval.dm_test("y", "f1", "f2", time="t", h=h, power=power, alternative=alternative)
    r_alt = {"two-sided": "two.sided"}.get(alternative, alternative)
    stat, p = r_dm_test(y - f1, y - f2, h, power, r_alt)
    assert out["statistic"] == pytest.approx(stat, rel=1e-10)
    assert out["p_value"] == pytest.approx(p, rel=1e-9, abs=1e-15)


def test_negative_variance_falls_back_to_h_1() -> None:
    n = 12
    e1 = np.where(np.arange(n) % 2 == 0, 2.0, 0.5) + np.linspace(0, 0.1, n)  # alternating
    e2 = np.ones(n)
    d = e1**2 - e2**2
    dc = d - d.mean()
    assert np.sum(dc * dc) + 2 * np.sum(dc[:-1] * dc[1:]) < 0  # the h = 2 variance
    df = pl.DataFrame({"t": np.arange(n), "y": np.zeros(n), "f1": e1, "f2": e2})
    out = df.eval.dm_test("y", "f1", "f2", time="t", h=2)
    assert (out["statistic"], out["p_value"]) == pytest.approx(r_dm_test(-e1, -e2, 1), rel=1e-10)


def test_by_series_equals_each_series_and_lazy_equals_eager() -> None:
    rng = np.random.default_rng(7)
    parts = []
    for s in range(4):
        y = rng.normal(0, 1, 30)
        parts.append(pl.DataFrame({"id": s, "t": np.arange(30), "y": y, "a": y + rng.normal(0, 1, 30),
                                   "b": y + rng.normal(0, 1.3, 30)}))  # fmt: skip
    df = pl.concat(parts).sample(fraction=1.0, shuffle=True, seed=2)
    out = df.eval.dm_test("y", "a", "b", time="t", h=2, by="id")
    assert out.columns == ["id", "statistic", "p_value", "n"]
    assert out["id"].to_list() == [0, 1, 2, 3]
    for s in range(4):
        alone = df.filter(pl.col("id") == s).eval.dm_test("y", "a", "b", time="t", h=2)
        row = out.filter(pl.col("id") == s).row(0, named=True)
        assert row["statistic"] == pytest.approx(alone["statistic"], rel=1e-12)
        assert row["p_value"] == pytest.approx(alone["p_value"], rel=1e-12)
    lazy = df.lazy().eval.dm_test("y", "a", "b", time="t", h=2, by="id")
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(), out)


def test_bad_inputs_59() -> None:
    df = pl.DataFrame({"t": [1, 2, 3, 4], "y": [1.0, 2.0, 3.0, 4.0], "a": [1.5, 2.5, 2.0, 4.5],
                       "b": [1.0, 2.2, 3.9, 3.0]})  # fmt: skip
    with pytest.raises(DataValidationError, match="at least h \\+ 2 = 5 time points.*found 4"):
        df.eval.dm_test("y", "a", "b", time="t", h=3)
    assert df.eval.dm_test("y", "a", "b", time="t", h=2)["n"] == 4
    gap = df.with_columns(pl.when(pl.col("t") == 3).then(None).otherwise(pl.col("b")).alias("b"))
    with pytest.raises(
        DataValidationError, match='column "t" must hold the same time points.*1 rows.*time 3'
    ):
        gap.eval.dm_test("y", "a", "b", time="t")
    with pytest.raises(DataValidationError, match="at collect|same time points"):
        gap.lazy().eval.dm_test("y", "a", "b", time="t").collect()
    dup = pl.concat([df, df.head(1)])
    with pytest.raises(DataValidationError, match="repeat a time point"):
        dup.eval.dm_test("y", "a", "b", time="t")
    constant = df.with_columns((pl.col("y") + 1).alias("a"), (pl.col("y") + 2).alias("b"))
    with pytest.warns(UndefinedMetricWarning):
        out = constant.eval.dm_test("y", "a", "b", time="t")
    assert out["statistic"] is None and out["p_value"] is None
    with pytest.raises(DataValidationError, match='column "when"'):
        df.eval.dm_test("y", "a", "b", time="when")
    with pytest.raises(DataValidationError, match="NaN"):
        df.with_columns(pl.lit(float("nan")).alias("a")).eval.dm_test("y", "a", "b", time="t")
    for bad, match in (
        ({"h": 0}, "h"),
        ({"power": -1}, "power"),
        ({"alternative": "two.sided"}, "alternative"),
    ):
        with pytest.raises(InvalidParameterError, match=match):
            df.eval.dm_test("y", "a", "b", time="t", **bad)
