"""Population stability of a score (SPEC §13 "Stability"): ``df.eval.psi``.

The population stability index compares the distribution of a score in the evaluated
frame (the *current* rows) with a *reference* sample, over bins cut at the reference's
quantiles. Its state is one weighted count per bin (sums), so it runs per group, per time
window and over a lake as every other metric: counted once per ``every`` step and merged
per window (:mod:`polars_eval._core.windows`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from polars_eval._core.planner import normalize_by
from polars_eval._core.spec import MetricSpec, State
from polars_eval._core.table import Checks, Output, Specs, Table, run
from polars_eval._core.windows import grouping
from polars_eval._exprs import not_null, to_float, weight_expr
from polars_eval._typing import IntoExpr
from polars_eval._validate import column_problems
from polars_eval.exceptions import DataValidationError, InvalidParameterError

EMPTY_SHARE = 1e-4
"""A bin's share of 0 is taken as this (the logarithm of 0 is not defined)."""
INPUTS: dict[str, Any] = {"score": "score", "weight": "weight"}


def reference_bins(
    reference: pl.DataFrame | pl.LazyFrame, score: str, bins: int
) -> tuple[list[float], list[float]]:
    """The bin edges (the reference's quantiles at i/bins, i = 1 … bins − 1, linear
    interpolation) and the reference's share of each bin (right-closed bins)."""
    if not isinstance(reference, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            f"reference must be a polars DataFrame or LazyFrame; got {type(reference).__name__}"
        )
    schema = reference.collect_schema()
    problems = column_problems(schema, {"score": score}, {"score": "score"})
    if problems:
        raise DataValidationError("reference=: " + problems[0])
    s = pl.col(score).cast(pl.Float64)
    kept = reference.lazy().select(s.drop_nulls().alias(score))
    stats = kept.select(
        pl.len().alias("n"),
        (~s.is_finite()).sum().alias("bad"),
        s.min().alias("min"),
        s.max().alias("max"),
        *(s.quantile(i / bins, interpolation="linear").alias(f"q{i}") for i in range(1, bins)),
    ).collect()
    n, bad, low, high = (stats.item(0, c) for c in ("n", "bad", "min", "max"))
    if n == 0:
        raise DataValidationError(
            f'reference=: column "{score}" has no rows (every score null, or no row): no bins'
        )
    if bad:
        raise DataValidationError(
            f'reference=: column "{score}" must hold finite scores; found {bad} rows with NaN or ±inf'
        )
    if low == high:
        raise DataValidationError(
            f'reference=: column "{score}" holds a constant score ({low!r}): constant score: no bins'
        )
    edges = [float(stats.item(0, f"q{i}")) for i in range(1, bins)]
    counts = kept.select(bin_of(pl.col(score), edges).alias("b")).group_by("b").len().collect()
    per_bin = dict(zip(counts["b"].to_list(), counts["len"].to_list(), strict=True))
    shares = [per_bin.get(i, 0) / n for i in range(bins)]
    return edges, shares


def bin_of(score: pl.Expr, edges: list[float]) -> pl.Expr:
    """The bin of each score: the number of edges below it (right-closed bins: the first
    (−∞, e₁], the last (e_{bins−1}, ∞)); null for a null score."""
    x = score.cast(pl.Float64)
    return pl.sum_horizontal([(x > e).cast(pl.Int32) for e in edges]).cast(pl.Int32).alias("bin")


def psi_spec(
    score: IntoExpr, edges: list[float], shares: list[float], weight: IntoExpr | None
) -> MetricSpec:
    """PSI = Σᵢ (aᵢ − rᵢ) ln(aᵢ / rᵢ) as a spec: the current rows' weighted count per bin
    (sums) against the reference shares ``shares``, a share of 0 taken as 1e-4."""
    x, w = to_float(score), weight_expr(weight)
    used = not_null(x, w)
    weight_used = pl.when(used).then(w).otherwise(0.0)
    b = bin_of(x, edges)
    states = {"w": State(weight_used)}
    for i in range(len(shares)):
        states[f"c{i}"] = State(pl.when(b == i).then(weight_used).otherwise(0.0))

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        total = s["w"]
        terms = []
        for i, r in enumerate(shares):
            a = s[f"c{i}"] / total
            a = pl.when(a == 0.0).then(EMPTY_SHARE).otherwise(a)
            ref = r if r > 0.0 else EMPTY_SHARE
            terms.append((a - ref) * (a / ref).log())
        return pl.when(total > 0.0).then(pl.sum_horizontal(terms))

    return MetricSpec(states, finalize)


class StabilityMethods:
    """``df.eval.psi``: the population stability index of a score."""

    _frame: pl.DataFrame | pl.LazyFrame

    def psi(
        self,
        score: str,
        *,
        reference: pl.DataFrame | pl.LazyFrame,
        bins: int = 10,
        by: str | list[str] | None = None,
        time: str | None = None,
        every: str | int | None = None,
        period: str | int | None = None,
        offset: str | int | None = None,
        weight: str | None = None,
        validate: bool = True,
    ) -> Any:
        """The population stability index (PSI) of ``score`` against a reference sample.

        The bin edges are the reference's quantiles at i/bins (i = 1 … bins − 1, linear
        interpolation, as ``numpy.quantile``); the bins are right-closed, the first
        (−∞, e₁], the last (e_{bins−1}, ∞). With aᵢ the current rows' (weighted) share of
        bin i and rᵢ the reference's share (a share of 0 taken as 1e-4):

        PSI = Σᵢ (aᵢ − rᵢ) ln(aᵢ / rᵢ)

        ``weight=`` weighs the current rows (the reference is a sample, unweighted). With
        ``by=``, one PSI per group of the current rows, each against the whole reference;
        with ``time=``/``every=`` (``period=``, ``offset=``), one per window of
        ``group_by_dynamic`` (SPEC §13: the counts per bin of each step merged per window),
        a window with no rows giving no row. The reference must hold rows (null scores
        are left out) and more than one score value: otherwise a ``DataValidationError``
        says so ("no rows" / "constant score: no bins"). Returns a float without ``by``
        and windows; a DataFrame with them; a LazyFrame on a LazyFrame (the reference is
        read at ``collect()``).

        References
        ----------
        Yurdakul, B. (2018). Statistical properties of population stability index.
        Western Michigan University. Siddiqi, N. (2006). Credit Risk Scorecards. Wiley.

        Examples
        --------
        Reference quartiles 2.75, 4.5, 6.25 (four bins of two rows); the current rows fill
        the first and last bin only: PSI = 2 · (0.5 − 0.25) ln 2 + 2 · (1e-4 − 0.25) ln(4e-4).

        >>> import polars as pl
        >>> import polars_eval as pe
        >>> ref = pl.DataFrame({"s": [1.0, 2, 3, 4, 5, 6, 7, 8]})
        >>> cur = pl.DataFrame({"s": [1.0, 2, 8, 9]})
        >>> round(cur.eval.psi("s", reference=ref, bins=4), 6)
        4.257032
        """
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
            raise InvalidParameterError(f"bins must be an integer >= 2; got {bins!r}")
        if not isinstance(score, str):
            raise InvalidParameterError(f"score must be a column name; got {score!r}")
        g = grouping(by, time=time, every=every, period=period, offset=offset)
        frame = self._frame
        if isinstance(frame, pl.LazyFrame):
            schema = _schema(frame, normalize_by(by), g)

            def run(_: pl.DataFrame) -> pl.DataFrame:
                return _psi(frame, score, reference, bins, by, weight, validate, g).collect(
                    engine="streaming"
                )

            return pl.LazyFrame({"__pe": [0]}).map_batches(run, schema=schema)
        out = _psi(frame, score, reference, bins, by, weight, validate, g).collect()
        if g is None and not normalize_by(by):
            value = out.item()
            return None if value is None else float(value)
        return out


def _psi(
    frame: pl.DataFrame | pl.LazyFrame,
    score: str,
    reference: pl.DataFrame | pl.LazyFrame,
    bins: int,
    by: Any,
    weight: str | None,
    validate: bool,
    g: Any,
) -> pl.LazyFrame:
    edges, shares = reference_bins(reference, score, bins)
    spec = psi_spec(score, edges, shares, weight)
    table = Table(
        Specs({"psi": spec}),
        Checks(INPUTS, {"score": score, "weight": weight}, validate),
        Output({"psi": "no current row with a score"}),
        by=normalize_by(by) if g is None else [],
        grouping=g,
    )
    out = run(table, frame.lazy())
    assert isinstance(out, pl.LazyFrame)
    return out


def _schema(frame: pl.LazyFrame, by: list[str], g: Any) -> pl.Schema:
    """The result's schema of ``df.eval.psi`` on a LazyFrame."""
    schema = frame.collect_schema()
    keys = g.out if g is not None else by
    out = {k: schema[k] for k in keys if k in schema}
    if g is not None and g.windows is not None:
        out["window_end"] = schema[g.windows.time]
    return pl.Schema({**out, "psi": pl.Float64})
