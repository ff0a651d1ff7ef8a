"""df.eval.psi (SPEC §13 "Stability") against numpy's computation of the definition, and
BAD_INPUTS row 55."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import polars_eval  # noqa: F401
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from tests.test_windows import dynamic_windows

ROW = "__row"


def numpy_psi(
    current: np.ndarray, reference: np.ndarray, bins: int, weight: np.ndarray | None = None
) -> float:
    """The definition: edges at the reference's quantiles i/bins (numpy's linear
    interpolation), right-closed bins, shares of 0 taken as 1e-4."""
    edges = np.quantile(reference, [i / bins for i in range(1, bins)])
    ref_bin = np.searchsorted(edges, reference, side="left")  # edges strictly below
    cur_bin = np.searchsorted(edges, current, side="left")
    r = np.bincount(ref_bin, minlength=bins) / len(reference)
    w = np.ones(len(current)) if weight is None else weight
    a = np.bincount(cur_bin, weights=w, minlength=bins) / w.sum()
    a, r = np.where(a == 0, 1e-4, a), np.where(r == 0, 1e-4, r)
    return float(np.sum((a - r) * np.log(a / r)))


def data(seed: int, n: int = 500) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    reference = pl.DataFrame({"s": np.round(rng.normal(size=n), 2)})
    start = dt.datetime(2024, 5, 1)
    current = pl.DataFrame(
        {
            "s": np.round(rng.normal(0.3, 1.2, size=n), 2),
            "w": rng.integers(0, 3, n).astype(float),
            "seg": rng.choice(["a", "b"], n),
            "ts": [start + dt.timedelta(hours=int(h)) for h in rng.integers(0, 24 * 10, n)],
        }
    )
    return current, reference


@pytest.mark.parametrize("bins", [2, 5, 10, 20])
@pytest.mark.parametrize("weighted", [False, True])
def test_psi_equals_the_definition(bins, weighted):
    current, reference = data(1)
    w = "w" if weighted else None
    got = current.eval.psi("s", reference=reference, bins=bins, weight=w)
    expected = numpy_psi(
        current["s"].to_numpy(),
        reference["s"].to_numpy(),
        bins,
        current["w"].to_numpy() if weighted else None,
    )
    assert got == pytest.approx(expected, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    ref=st.lists(st.integers(0, 6), min_size=2, max_size=40),
    cur=st.lists(st.integers(-2, 8), min_size=1, max_size=40),
    bins=st.integers(2, 8),
)
def test_psi_with_heavy_ties_equals_the_definition(ref, cur, bins):
    from hypothesis import assume

    assume(len(set(ref)) > 1)
    reference = pl.DataFrame({"s": ref}, schema={"s": pl.Int64})
    current = pl.DataFrame({"s": cur}, schema={"s": pl.Int64})
    got = current.eval.psi("s", reference=reference, bins=bins)
    assert got == pytest.approx(
        numpy_psi(np.array(cur, float), np.array(ref, float), bins), abs=1e-9
    )


def test_psi_per_group_and_per_window_and_lazy():
    current, reference = data(2)
    by_seg = current.eval.psi("s", reference=reference, by="seg")
    assert by_seg.columns == ["seg", "psi"]
    for seg, value in by_seg.iter_rows():
        part = current.filter(pl.col("seg") == seg)
        assert value == pytest.approx(
            numpy_psi(part["s"].to_numpy(), reference["s"].to_numpy(), 10), abs=1e-12
        )
    out = current.eval.psi("s", reference=reference, by="seg", time="ts", every="1d", period="3d")
    windows = dynamic_windows(current, ["seg"], every="1d", period="3d")
    assert out.columns == ["seg", "ts", "window_end", "psi"]
    assert (
        out.select("seg", "ts", "window_end").rows()
        == windows.select("seg", "ts", "_upper_boundary").rows()
    )
    for value, rows in zip(out["psi"].to_list(), windows[ROW].to_list(), strict=True):
        expected = numpy_psi(current[rows]["s"].to_numpy(), reference["s"].to_numpy(), 10)
        assert value == pytest.approx(expected, abs=1e-12)
    lazy = current.lazy().eval.psi(
        "s", reference=reference.lazy(), by="seg", time="ts", every="1d", period="3d"
    )
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect().equals(out)


# -- BAD_INPUTS row 55 ---------------------------------------------------------------


def test_empty_or_constant_reference_is_an_error():
    current, reference = data(3)
    with pytest.raises(DataValidationError, match='reference=: column "s" has no rows'):
        current.eval.psi("s", reference=reference.head(0))
    with pytest.raises(DataValidationError, match='reference=: column "s" has no rows'):
        current.eval.psi("s", reference=reference.with_columns(pl.lit(None, pl.Float64).alias("s")))
    with pytest.raises(DataValidationError, match="constant score: no bins"):
        current.eval.psi("s", reference=reference.with_columns(pl.lit(0.5).alias("s")))
    lazy = current.lazy().eval.psi("s", reference=reference.head(0))
    with pytest.raises(DataValidationError, match="no rows"):
        lazy.collect()
    with pytest.raises(
        DataValidationError, match='reference=: column "score" \\(argument score=\\) not found'
    ):
        current.rename({"s": "score"}).eval.psi("score", reference=reference)
    with pytest.raises(InvalidParameterError, match="bins must be an integer >= 2"):
        current.eval.psi("s", reference=reference, bins=1)


def test_a_window_with_no_rows_has_no_row():
    current, reference = data(4)
    # two days of rows with a gap of three days between them
    gap = current.filter(pl.col("ts") < dt.datetime(2024, 5, 2)).vstack(
        current.filter(pl.col("ts") >= dt.datetime(2024, 5, 6))
    )
    out = gap.eval.psi("s", reference=reference, time="ts", every="1d")
    days = out["ts"].dt.day().to_list()
    assert 2 not in days and 3 not in days and 4 not in days and 5 not in days
    assert out["psi"].null_count() == 0
