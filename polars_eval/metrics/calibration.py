"""Calibration of predicted probabilities (SPEC §15).

* :func:`calibration_error`: the expected (``norm="l1"``), root-mean-square (``"l2"``)
  and maximum (``"max"``) calibration error over scikit-learn ``calibration_curve``'s
  bins, uniform or quantile (:mod:`._calibration`); :func:`polars_eval.ece` is its l1
  form over 10 uniform bins.
* :func:`multiclass_calibration_error`: top-label or class-wise.
* :func:`brier_decomposition`: Murphy's reliability, resolution and uncertainty.
* :func:`calibration_slope`, :func:`calibration_intercept`: logistic recalibration by
  maximum likelihood.

States (SPEC §10): uniform bins keep weighted sums per non-empty bin (at most ``bins``
entries per group, merged by adding the sums of a bin); quantile bins, the Brier
decomposition over distinct scores and the recalibration fits keep the threshold state of
the sort-based binary metrics (one point per distinct score with its weighted positives
and negatives, merged exactly per score; the one sort ``df.eval.binary`` shares). The
numpy passes (the recalibration fits, the multiclass per-bin counts: :mod:`._bin_sums`)
get every group of a query in one call and run in chunks, in two threads on large data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from polars_eval._core.registry import register
from polars_eval._core.spec import MetricSpec, State
from polars_eval._exprs import F64, NAN, binary_label, safe_div, to_float
from polars_eval._params import check_choice, check_positive_int
from polars_eval._typing import IntoExpr, Proba
from polars_eval.metrics._bin_sums import (
    BIN_STATE_DTYPE,
    bin_sums,
    in_chunks,
    rows_of,
    top_label_sums,
)
from polars_eval.metrics._calibration import (
    SUMS,
    bin_state,
    error_of_list,
    per_bin,
    quantile_finalizers,
    table_of_bins,
)
from polars_eval.metrics._curve import (
    Curve,
    finalize_struct,
    finalize_struct_one,
    prev,
    sorted_keys_batch,
    sorted_keys_metric,
    thresholds,
    unweighted_rows,
)
from polars_eval.metrics._sorted_keys import (
    GROUP_ROWS,
    Blocks,
    Ece,
    sorted_parts,
)
from polars_eval.metrics._sorted_keys import _points as block_points
from polars_eval.metrics._sorted_keys import alone as alone_kernel
from polars_eval.metrics.binary import LOGLOSS_EPS, PROBA_INPUTS
from polars_eval.metrics.multiclass import (
    PROBA_INPUTS as CLASS_PROBA_INPUTS,
)
from polars_eval.metrics.multiclass import (
    ProbaInputs,
    check_classes,
    class_dtype,
    class_lit,
    data_checks,
    proba_inputs,
)


# The binary reliability table and ECE (moved from metrics/binary.py: one family module
# under 2,000 lines). They stay registered first, in binary's registration order.
def _calibration_starts(c: Curve, bins: int) -> pl.Expr:
    """The first stage of :func:`calibration_list`: at most ``bins`` + 1 points.

    The points are in descending score order (a NaN score first), so each bin's points
    are one stretch: bin b (``numpy.searchsorted(edges[1:-1], t)``) starts after the
    points above its upper edge, a count that a binary search of the edges finds. Only
    the ``bins`` starts are gathered; the one pass over every point is the reverse
    cumulative sum of score·weight (four times cheaper than computing each point's bin
    and filtering a struct of every point).
    """
    inner = np.linspace(0.0, 1.0, bins + 1)[1:-1]
    total = c.tp + c.fp
    # the points above each inner edge, from the highest edge down (a NaN score is above)
    above_edge = c.threshold.search_sorted(
        pl.lit(pl.Series(inner[::-1].tolist(), dtype=F64)), side="left", descending=True
    ).cast(pl.Int64)
    start = pl.concat([pl.lit(0, dtype=pl.Int64), above_edge])
    end = pl.concat([above_edge, c.tp.len().cast(pl.Int64)])
    bin_id = pl.int_range(bins - 1, -1, -1, dtype=pl.Int64)
    first = start.filter(start < end)  # the bins with points, highest first
    before = (first - 1).clip(lower_bound=0)

    def prev_at(value: pl.Expr) -> pl.Expr:  # prev(value) at the first points
        return pl.when(first > 0).then(value.gather(before)).otherwise(0.0)

    sw_below = (c.threshold * (total - prev(total))).cum_sum(reverse=True)
    starts = pl.struct(
        bin=bin_id.filter(start < end),
        above=prev_at(total),
        pos_above=prev_at(c.tp),
        sw_below=sw_below.gather(first),
    )
    totals = pl.struct(
        bin=pl.lit(-1, dtype=pl.Int64),
        above=total.last(),
        pos_above=c.tp.last(),
        sw_below=pl.lit(0.0, dtype=F64),
    )
    return pl.concat([starts, totals])


def _calibration_bins(starts: pl.Expr, bins: int) -> pl.Expr:
    """The second stage of :func:`calibration_list`: the table from the first's points."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    bin_id, above, pos_above, sw_below = (
        starts.struct.field(f) for f in ("bin", "above", "pos_above", "sw_below")
    )
    count = above.shift(-1) - above
    index = bin_id.clip(lower_bound=0)
    per_bin = pl.struct(
        bin=bin_id + 1,
        lower=pl.lit(pl.Series(edges[:-1].tolist(), dtype=F64)).gather(index),
        upper=pl.lit(pl.Series(edges[1:].tolist(), dtype=F64)).gather(index),
        mean_score=(sw_below - sw_below.shift(-1)) / count,
        positive_rate=(pos_above.shift(-1) - pos_above) / count,
        count=count,
    )
    # the totals row (bin -1) only closes the last bin; an empty state has no bin
    return per_bin.filter(bin_id >= 0).reverse()


def calibration_list(state: pl.Expr, bins: int) -> pl.Expr:
    """The reliability table as ``List[Struct]`` from a threshold state (empty bins omitted).

    One pass over the distinct scores (descending) keeps only the first score of each bin,
    with the weight and positives above it and the score·weight of it and every score
    below (a reverse cumulative sum); each bin's sums are then differences of these over
    at most ``bins`` + 1 rows (a last row holds the totals). Every field is computed in
    one struct filtered once: inside ``list.eval`` nothing is shared between expressions.
    Bin edges as scikit-learn's uniform ``calibration_curve``: bin =
    ``numpy.searchsorted(edges[1:-1], p)``; a NaN score falls in the last bin, whose mean
    is then NaN.
    """
    starts = state.list.eval(_calibration_starts(Curve(), bins))
    return starts.list.eval(_calibration_bins(pl.element(), bins))


def _ece(table: pl.Expr) -> pl.Expr:
    """ECE from the points of a reliability table (a column of structs)."""
    count = table.struct.field("count")
    gap = (table.struct.field("positive_rate") - table.struct.field("mean_score")).abs()
    return safe_div((count * gap).sum(), count.sum())


def ece_from_state(state: pl.Expr, bins: int) -> pl.Expr:
    """ECE from a threshold state (NaN scores give NaN through the bin means)."""
    return ece_from_calibration(calibration_list(state, bins))


def calibration_one(points: pl.Expr, bins: int) -> pl.Expr:
    """:func:`calibration_list` over the points of one state as a column
    (``MetricSpec.one_group``): the pass over the points in columns, the bins in
    ``list.eval``."""
    starts = _calibration_starts(Curve(points), bins).implode()
    return starts.list.eval(_calibration_bins(pl.element(), bins))


def ece_one(points: pl.Expr, bins: int) -> pl.Expr:
    """:func:`ece_from_state` over the points of one state as a column."""
    return ece_from_calibration(calibration_one(points, bins))


def ece_from_calibration(table: pl.Expr) -> pl.Expr:
    """ECE from the reliability table of :func:`calibration_list` (one list per group)."""
    return table.list.eval(_ece(pl.element())).list.first().cast(F64)


@register(
    task="binary",
    inputs=PROBA_INPUTS,
    kind="curve",
    summary=False,
    fields=("bin", "lower", "upper", "mean_score", "positive_rate", "count"),
)
def calibration_table(
    label: IntoExpr,
    score: IntoExpr,
    *,
    bins: int = 10,
    strategy: str = "uniform",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Reliability table: ``bins`` probability bins, empty bins omitted.

    Per bin: its edges, the weighted mean score, the weighted positive rate and the
    weighted count. Bins as scikit-learn's ``calibration_curve``: ``strategy="uniform"``
    cuts [0, 1] into equal widths (the first bin is [0, 1/bins], the others (a, b]);
    ``strategy="quantile"`` at the scores' quantiles (``numpy.percentile`` of the scores at
    ``linspace(0, 1, bins + 1) * 100``, a weight counted as that many rows; the first bin
    [min, e₁], the others (a, b]; coinciding edges leave no empty bin). Either way
    (positive_rate, mean_score) of the non-empty bins are ``calibration_curve``'s
    (prob_true, prob_pred). The state is the threshold state of the sort-based metrics.

    References
    ----------
    Niculescu-Mizil & Caruana (2005), Predicting good probabilities with supervised learning. ICML.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.2, 0.7, 0.9]})
    >>> df.eval.calibration_table("y", "p", bins=2).select("bin", "mean_score", "positive_rate", "count")
    shape: (2, 4)
    ┌─────┬────────────┬───────────────┬───────┐
    │ bin ┆ mean_score ┆ positive_rate ┆ count │
    │ --- ┆ ---        ┆ ---           ┆ ---   │
    │ i64 ┆ f64        ┆ f64           ┆ f64   │
    ╞═════╪════════════╪═══════════════╪═══════╡
    │ 1   ┆ 0.15       ┆ 0.0           ┆ 2.0   │
    │ 2   ┆ 0.8        ┆ 1.0           ┆ 2.0   │
    └─────┴────────────┴───────────────┴───────┘
    """
    check_positive_int("bins", bins)
    check_choice("strategy", strategy, ("uniform", "quantile"))
    state = thresholds(label, score, weight, pos_label)
    if strategy == "quantile":
        per_bin, _ = quantile_finalizers(bins)
        return MetricSpec(
            {"c": state}, lambda s: per_bin(s["c"]).list.eval(table_of_bins(pl.element()))
        )
    return MetricSpec({"c": state}, lambda s: calibration_list(s["c"], bins))


_CALIBRATION_ERROR: dict[str, Any] = {
    "task": "binary",
    "inputs": PROBA_INPUTS,
    "higher_is_better": False,
    "lower": 0.0,
    "upper": 1.0,
    "undefined": "empty group",
}
"""What the binary calibration errors declare alike (``ece`` and ``calibration_error``)."""


@register(
    **_CALIBRATION_ERROR,
    summary={"binary": {"probability": True}},  # with probability=True only
)
def ece(
    label: IntoExpr,
    score: IntoExpr,
    *,
    bins: int = 10,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Expected calibration error over ``bins`` equal-width bins.

    ECE = Σ_b (n_b / n) |positive_rate_b − mean_score_b| with the bins of
    :func:`calibration_table`: ``pe.calibration_error(..., norm="l1", bins=bins)``, with
    ECE's own default of 10 bins (``calibration_error``'s is 15, SPEC §15). Computed from
    the threshold state that ``df.eval.binary`` shares between its sort-based metrics;
    ``calibration_error`` keeps per-bin sums instead (bounded by the bins).

    References
    ----------
    Naeini, Cooper, Hauskrecht (2015), Obtaining well calibrated probabilities using
    Bayesian binning. AAAI.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.1, 0.2, 0.7, 0.9]})
    >>> round(df.eval.ece("y", "p", bins=2), 6)
    0.175
    """
    check_positive_int("bins", bins)
    state = thresholds(label, score, weight, pos_label)
    part = partial(Ece, bins=bins)
    batch = sorted_keys_batch(label, score, weight, pos_label, None, part)
    return MetricSpec(
        {"c": state},
        lambda s: ece_from_state(s["c"], bins),
        extra={} if batch is None else {"batch": batch},
        one_group=lambda s: ece_one(s["c"], bins),
        # alone, unweighted: the bins from the sorted keys' chunks (no threshold state)
        alone=sorted_keys_metric(label, score, weight, pos_label, None, alone_kernel(part)),
    )


__all__ = [
    "brier_decomposition",
    "calibration_error",
    "calibration_intercept",
    "calibration_slope",
    "multiclass_calibration_error",
]

STRATEGIES = ("uniform", "quantile")
NORMS = ("l1", "l2", "max")
METHODS = ("top_label", "classwise")


def _check_bins_options(bins: Any, norm: str, strategy: str) -> None:
    check_positive_int("bins", bins)
    check_choice("norm", norm, NORMS)
    check_choice("strategy", strategy, STRATEGIES)


def error_spec(
    label: IntoExpr,
    score: IntoExpr,
    weight: IntoExpr | None,
    pos_label: Any,
    bins: int,
    norm: str,
    strategy: str,
) -> MetricSpec:
    """The calibration error of binary rows: uniform bins over the per-bin sums, quantile
    bins over the threshold state."""
    if strategy == "uniform":
        y, p = binary_label(label, pos_label), to_float(score)
        state = bin_state(y, p, bins, weight=None if weight is None else to_float(weight))
        return MetricSpec({"b": state}, lambda s: error_of_list(s["b"], norm))
    of_state, of_points = quantile_finalizers(bins)
    return MetricSpec(
        {"c": thresholds(label, score, weight, pos_label)},
        lambda s: error_of_list(of_state(s["c"]), norm),
        one_group=lambda s: error_of_list(of_points(s["c"]), norm),
    )


@register(**_CALIBRATION_ERROR, summary=False)
def calibration_error(
    label: IntoExpr,
    score: IntoExpr,
    *,
    bins: int = 15,
    norm: str = "l1",
    strategy: str = "uniform",
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Calibration error of predicted probabilities over ``bins`` bins (ECE, RMSCE, MCE).

    Over the non-empty bins b, with n_b the weight of bin b, n the total, ȳ_b its
    (weighted) positive rate and p̄_b its mean score:

    * ``norm="l1"`` (expected calibration error): Σ_b (n_b / n)·|ȳ_b − p̄_b|;
    * ``norm="l2"`` (root-mean-square): (Σ_b (n_b / n)·(ȳ_b − p̄_b)²)^½;
    * ``norm="max"`` (maximum calibration error): max_b |ȳ_b − p̄_b|.

    Bins as scikit-learn's ``calibration_curve``: ``strategy="uniform"`` cuts [0, 1] at
    ``numpy.linspace(0, 1, bins + 1)``; ``strategy="quantile"`` at the scores' quantiles
    ``numpy.percentile(scores, numpy.linspace(0, 1, bins + 1) * 100)`` (a weight counts
    as that many rows). A score on an edge belongs to the bin below (bins right-closed,
    the first one closed). Quantile edges that coincide (fewer distinct scores than bins)
    merge the bins between them: an empty bin is left out, never a NaN.
    ``pe.ece(...)`` is ``norm="l1"`` over 10 uniform bins (its own default, kept).

    State (SPEC §10): uniform bins, the weighted count, positives and score sum of each
    non-empty bin (at most ``bins`` rows per group, merged by bin); quantile bins, the
    edges depend on every score, so the state is the threshold state of the sort-based
    metrics (one point per distinct score, merged exactly). Null for an empty group, NaN
    when a score is NaN (the namespace raises, and checks that scores lie in [0, 1]).

    References
    ----------
    Naeini, Cooper & Hauskrecht (2015), Obtaining well calibrated probabilities using
    Bayesian binning. AAAI. Guo, Pleiss, Sun & Weinberger (2017), On calibration of modern
    neural networks. ICML. scikit-learn ``calibration_curve``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 0, 1, 1], "p": [0.25, 0.25, 0.75, 0.5], "g": [1, 1, 2, 2]})
    >>> df.eval.calibration_error("y", "p", bins=2)  # 0.5 is in [0, 0.5]: gaps 0 and 0.25
    0.0625
    >>> df.eval.calibration_error("y", "p", bins=2, norm="max")
    0.25
    >>> df.eval.calibration_error("y", "p", bins=2, strategy="quantile")  # edges 0.25, 0.375, 0.75
    0.3125
    >>> df.group_by("g").agg(pe.calibration_error("y", "p", bins=2)).sort("g")
    shape: (2, 2)
    ┌─────┬───────────────────┐
    │ g   ┆ calibration_error │
    │ --- ┆ ---               │
    │ i64 ┆ f64               │
    ╞═════╪═══════════════════╡
    │ 1   ┆ 0.25              │
    │ 2   ┆ 0.375             │
    └─────┴───────────────────┘
    """
    _check_bins_options(bins, norm, strategy)
    return error_spec(label, score, weight, pos_label, bins, norm, strategy)


# ---------------------------------------------------------------------------------------
# Multiclass
# ---------------------------------------------------------------------------------------


@register(
    task="multiclass",
    inputs=CLASS_PROBA_INPUTS,
    check=data_checks,
    higher_is_better=False,
    lower=0.0,
    upper=1.0,
    summary=False,
    undefined="empty group",
)
def multiclass_calibration_error(
    label: IntoExpr,
    proba: Proba,
    *,
    classes: Sequence[Any],
    bins: int = 15,
    norm: str = "l1",
    method: str = "top_label",
    weight: IntoExpr | None = None,
) -> MetricSpec:
    """Multiclass calibration error over ``bins`` uniform bins: top-label or class-wise.

    ``method="top_label"``: the binary :func:`calibration_error` of the confidence (the
    largest probability of a row) against whether its class (the first of ``classes``
    among tied probabilities) is the label. ``method="classwise"``: the mean over the
    classes of ``classes`` of each class's one-vs-rest calibration error (label = k
    against the probability of k). ``norm`` as :func:`calibration_error`; bins uniform on
    [0, 1] as scikit-learn's ``calibration_curve``. ``classes=`` is required (the class
    of each probability); ``proba=`` is one List/Array column or one column per class.

    State: per class (class-wise) or for the confidence (top-label), the weighted count,
    positives and score sum of each non-empty bin, merged by bin (counted in numpy, one
    pass over the rows of every group: :mod:`._bin_sums`). Null for an empty group; NaN
    if a used row holds a NaN probability or (top-label) a negative confidence (the
    namespace checks the rows).

    References
    ----------
    Guo, Pleiss, Sun & Weinberger (2017), On calibration of modern neural networks. ICML
    (top-label). Kull et al. (2019), Beyond temperature scaling: obtaining well-calibrated
    multi-class probabilities with Dirichlet calibration. NeurIPS (class-wise ECE).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame(
    ...     {"y": [0, 1, 1, 0], "p": [[0.75, 0.25], [0.25, 0.75], [0.5, 0.5], [0.75, 0.25]]}
    ... )
    >>> df.eval.multiclass_calibration_error("y", "p", classes=[0, 1], bins=2)  # the tie: class 0
    0.3125
    >>> df.eval.multiclass_calibration_error("y", "p", classes=[0, 1], bins=2, method="classwise")
    0.1875
    """
    check_positive_int("bins", bins)
    check_choice("norm", norm, NORMS)
    check_choice("method", method, METHODS)
    checked = check_classes(classes, required="to know the class of each probability")
    assert checked is not None
    inputs = proba_inputs(label, proba, checked, weight)
    w = inputs.weight if inputs.weighted else None
    if method == "top_label":
        return MetricSpec(
            {"b": _counted_bin_state(_top_label_rows(inputs, checked), w, bins, top_label_sums)},
            lambda s: error_of_list(s["b"], norm),
        )
    dtype = class_dtype(checked)
    states = {
        f"b{i}": _counted_bin_state(
            {"y": pl.when(inputs.keep).then(inputs.label == class_lit(c, dtype)), "p": p},
            w,
            bins,
            bin_sums,
        )
        for i, (c, p) in enumerate(zip(checked, inputs.probs, strict=True))
    }

    def finalize(s: Mapping[str, pl.Expr]) -> pl.Expr:
        errors = [error_of_list(s[name], norm) for name in states]
        return (pl.sum_horizontal(errors, ignore_nulls=False) / len(errors)).cast(F64)

    return MetricSpec(states, finalize)


def _counted_bin_state(
    rows: Mapping[str, pl.Expr],
    weight: pl.Expr | None,
    bins: int,
    kernel: Callable[..., pl.Series],
) -> State:
    """The uniform-bin state of :func:`._calibration.bin_state` (per non-empty bin
    ``{b, w, y, p}``, merged by bin) of ``rows`` and ``weight``, one list of each per
    group, counted by ``kernel`` (:mod:`._bin_sums`, every group in one call): an
    aggregation has no ``group_by``, and the Polars form sorts each class's scores to read
    the sums at the bin ends."""
    lists = [e.implode().alias(name) for name, e in rows.items()]
    if weight is not None:
        lists.append(weight.implode().alias("w"))
    state = pl.struct(lists).map_batches(
        partial(kernel, bins=bins), return_dtype=BIN_STATE_DTYPE, is_elementwise=True
    )
    return State(state, "list", lambda column: per_bin(column.explode().drop_nulls(), SUMS))


def _top_label_rows(inputs: ProbaInputs, classes: Sequence[Any]) -> dict[str, pl.Expr]:
    """The rows of :func:`._bin_sums.top_label_sums`: the index of the row's label among
    ``classes`` (null for a row left out) and the K probabilities. The confidence and
    its class are computed there, in numpy with the bins: the row-wise argmax of K
    columns as a Polars expression took ~25–30 ms at 1e6 rows × 5 classes (a shared
    sub-expression is evaluated again at each reference, ``when`` chains in full),
    numpy's ~17 ms."""
    dtype = class_dtype(classes)
    index: Any = pl
    for i, c in enumerate(classes):
        index = index.when(inputs.label == class_lit(c, dtype)).then(pl.lit(i, dtype=pl.Int32))
    y = pl.when(inputs.keep).then(index.otherwise(None))
    return {"y": y, **{f"p{i}": p for i, p in enumerate(inputs.probs)}}


# ---------------------------------------------------------------------------------------
# Brier decomposition
# ---------------------------------------------------------------------------------------

DECOMPOSITION = (
    "brier",
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
)


def _decomposition(
    n: pl.Expr,
    positives: pl.Expr,
    brier_sum: pl.Expr,
    rel: pl.Expr,
    res: pl.Expr,
    wbv: pl.Expr,
    wbc: pl.Expr,
    nan: pl.Expr,
) -> pl.Expr:
    """The struct of :data:`DECOMPOSITION` from the sums over the bins (``rel``, ``res``,
    ``wbv``, ``wbc`` before the division by the total weight ``n``)."""
    rate = positives / n
    values = {
        "brier": brier_sum / n,
        "reliability": rel / n,
        "resolution": res / n,
        "uncertainty": rate * (1.0 - rate),
        "within_bin_variance": wbv / n,
        "within_bin_covariance": wbc / n,
    }
    return pl.struct(
        **{
            k: pl.when(nan).then(pl.lit(NAN, dtype=F64)).when(n > 0.0).then(v.cast(F64))
            for k, v in values.items()
        }
    )


def _over_scores(c: Curve) -> pl.Expr:
    """Murphy's decomposition over the distinct scores of one threshold state."""
    t = c.threshold
    count = c.tp + c.fp - prev(c.tp + c.fp)
    pos = c.tp - prev(c.tp)
    n = c.P + c.N
    rate = c.P / n
    return _decomposition(
        n,
        c.P,
        (count * t * t - 2.0 * t * pos + pos).sum(),
        ((count * t - pos) ** 2 / count).sum(),
        ((pos - count * rate) ** 2 / count).sum(),
        pl.lit(0.0, dtype=F64),
        pl.lit(0.0, dtype=F64),
        c.has_nan,
    )


def _over_bins(e: pl.Expr) -> pl.Expr:
    """The decomposition with the within-bin terms over per-bin sums (a column of
    ``{w, y, p, pp, yp}``)."""
    w, y, p, pp, yp = (e.struct.field(f) for f in ("w", "y", "p", "pp", "yp"))
    n = w.sum()
    rate = y.sum() / n
    return _decomposition(
        n,
        y.sum(),
        (pp - 2.0 * yp + y).sum(),
        ((p - y) ** 2 / w).sum(),
        ((y - w * rate) ** 2 / w).sum(),
        (pp - p * p / w).sum(),
        2.0 * (yp - y * p / w).sum(),
        p.is_nan().any(),
    )


@register(
    task="binary",
    inputs=PROBA_INPUTS,
    kind="struct",
    summary=False,
    fields=DECOMPOSITION,
)
def brier_decomposition(
    label: IntoExpr,
    score: IntoExpr,
    *,
    bins: int | None = None,
    weight: IntoExpr | None = None,
    pos_label: Any = None,
) -> MetricSpec:
    """Murphy's decomposition of the Brier score: reliability, resolution, uncertainty.

    With n the total weight, ȳ the positive rate and, per forecast group k, n_k its
    weight, f_k its (mean) score and ō_k its positive rate: reliability = Σ_k n_k (f_k −
    ō_k)² / n, resolution = Σ_k n_k (ō_k − ȳ)² / n, uncertainty = ȳ(1 − ȳ).

    ``bins=None`` (default): the groups are the distinct scores, and brier = reliability
    − resolution + uncertainty exactly (Murphy 1973); the within-bin fields are 0.
    ``bins=N``: the groups are N uniform bins on [0, 1] (``calibration_curve``'s), f_k
    the bin's mean score, and two more terms close the identity (Stephenson, Coelho &
    Jolliffe 2008): within_bin_variance = Σ_k Σ_{i∈k} w_i (p_i − f_k)² / n and
    within_bin_covariance = 2 Σ_k Σ_{i∈k} w_i (y_i − ō_k)(p_i − f_k) / n, with brier =
    reliability − resolution + uncertainty + within_bin_variance − within_bin_covariance.

    State: the threshold state (one point per distinct score, ``bins=None``) or per bin
    Σw, Σw·y, Σw·p, Σw·p², Σw·y·p. A struct; every field null for an empty group, NaN when
    a score is NaN.

    References
    ----------
    Murphy, A. H. (1973). A new vector partition of the probability score. Journal of
    Applied Meteorology 12(4). Stephenson, Coelho & Jolliffe (2008). Two extra components
    in the Brier score decomposition. Weather and Forecasting 23(4).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame({"y": [0, 1, 1, 1], "p": [0.5, 0.5, 1.0, 1.0]})
    >>> df.eval.brier_decomposition("y", "p")  # doctest: +NORMALIZE_WHITESPACE
    {'brier': 0.125, 'reliability': 0.0, 'resolution': 0.0625, 'uncertainty': 0.1875,
     'within_bin_variance': 0.0, 'within_bin_covariance': 0.0}
    """
    check_positive_int("bins", bins, allow_none=True)
    if bins is None:
        return MetricSpec(
            {"c": thresholds(label, score, weight, pos_label)},
            lambda s: finalize_struct(s["c"], _over_scores),
            one_group=lambda s: finalize_struct_one(s["c"], _over_scores),
        )
    y, p = binary_label(label, pos_label), to_float(score)
    w = None if weight is None else to_float(weight)
    state = bin_state(y, p, bins, weight=w, second=True)
    return MetricSpec(
        {"b": state}, lambda s: s["b"].list.eval(_over_bins(pl.element())).list.first()
    )


# ---------------------------------------------------------------------------------------
# Logistic recalibration: slope and intercept
# ---------------------------------------------------------------------------------------

NO_FIT = (
    "needs both classes present, and for the slope scores that do not separate them "
    "(no maximum-likelihood estimate otherwise)"
)
MAX_ITERATIONS = 100
CHUNK = 1 << 17  # the points of a fit computed together (their temporaries in cache)
TOLERANCE = 1e-12
PREDICTED = 1e-15  # the next step Newton's quadratic convergence predicts, relative


def _points(states: pl.Series) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct scores of a column of threshold states, flattened: (groups, group of
    each point, score, positive weight, negative weight). Read through Arrow (a
    DataFrame round trip costs more than a small group's fit)."""
    lists = states.to_arrow()
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    g = np.asarray(pc.list_parent_indices(lists), dtype=np.int64)
    values = pc.list_flatten(lists)
    t, tp, fp = (
        np.asarray(values.field(name).to_numpy(zero_copy_only=False), dtype=np.float64)
        for name in ("t", "tp", "fp")
    )
    first = np.ones(len(g), dtype=bool)
    first[1:] = g[1:] != g[:-1]
    pos = tp - np.where(first, 0.0, np.roll(tp, 1))
    neg = fp - np.where(first, 0.0, np.roll(fp, 1))
    return len(states), g, t, pos, neg


class _Groups:
    """The group of each point of the fit (``g``, non-decreasing: every caller's points
    are in group order) and the reductions per group: over each group's stretch with
    ``ufunc.reduceat`` (~15x cheaper than ``bincount`` with weights, ~30x than
    ``ufunc.at``), for one group a plain reduction (``einsum`` for a sum of products: one
    pass, no temporary; not ``np.dot``, whose BLAS threads wait for a busy core)."""

    def __init__(self, g: np.ndarray, groups: int) -> None:
        self.g, self.groups = g, groups
        if groups > 1:
            change = np.flatnonzero(g[1:] != g[:-1]) + 1
            self.starts = np.concatenate([np.zeros(min(len(g), 1), np.int64), change])
            self.present = g[self.starts]

    def reduce(self, fn: np.ufunc, values: np.ndarray, empty: float) -> np.ndarray:
        """``fn`` over each group's values (``empty`` for a group without points)."""
        if self.groups == 1:
            return np.array([fn.reduce(values) if len(values) else empty])
        out = np.full(self.groups, empty, dtype=values.dtype)
        if len(values):
            out[self.present] = fn.reduceat(values, self.starts)
        return out

    def sum(self, values: np.ndarray) -> np.ndarray:
        return self.reduce(np.add, values, 0.0)

    def count(self, flags: np.ndarray) -> np.ndarray:
        """The true flags per group."""
        if self.groups == 1:
            return np.array([np.count_nonzero(flags)])
        out = np.zeros(self.groups, dtype=np.int64)
        if len(flags):
            out[self.present] = np.add.reduceat(flags, self.starts, dtype=np.int64)
        return out

    def dot(self, values: np.ndarray, other: np.ndarray) -> np.ndarray:
        """Σ values·other per group."""
        if self.groups == 1:
            return np.array([np.einsum("i,i", values, other)])
        return self.sum(values * other)

    def of_points(self, per_group: np.ndarray) -> np.ndarray | float:
        """A value per group at each point (one group: the scalar, no gather)."""
        return per_group[0] if self.groups == 1 else per_group[self.g]

    def chunks(self) -> list[tuple[slice, _Groups]]:
        """The points in consecutive chunks of about :data:`CHUNK` (whole groups), each
        with its groups (every group counted: a group outside the chunk sums to 0)."""
        n = len(self.g)
        if self.groups == 1:
            return [(slice(a, min(a + CHUNK, n)), self) for a in range(0, n, CHUNK)]
        if n == 0:
            return []
        # each chunk from the last group start at or below a multiple of CHUNK
        at = np.searchsorted(self.starts, np.arange(0, n, CHUNK), side="right") - 1
        cuts = np.unique(self.starts[at])
        ends = [*cuts[1:].tolist(), n]
        return [
            (slice(a, z), _Groups(self.g[a:z], self.groups))
            for a, z in zip(cuts.tolist(), ends, strict=True)
        ]

    def keep(self, kept: np.ndarray, *columns: np.ndarray | None) -> tuple[Any, ...]:
        """These groups and ``columns`` (None stays None) restricted to the points of the
        groups ``kept`` (no copy when every group is)."""
        if kept.all():
            return (self, *columns)
        if self.groups == 1:
            return (_Groups(self.g[:0], 1), *(None if c is None else c[:0] for c in columns))
        rows = kept[self.g]
        kept_columns = (None if c is None else c[rows] for c in columns)
        return (_Groups(self.g[rows], self.groups), *kept_columns)


def _log_likelihood(
    grp: _Groups, eta: np.ndarray, pos: np.ndarray, neg: np.ndarray | None
) -> np.ndarray:
    """Σ pos·ln σ(η) + neg·ln(1 − σ(η)) per group, without overflow: ln(1 − σ(η)) =
    ln σ(η) − η, one ``logaddexp`` (``neg`` None: rows, ``pos`` whether each is
    positive)."""
    if neg is None:
        return grp.sum(-(np.logaddexp(0.0, -eta) + np.where(pos, 0.0, eta)))
    return grp.sum(-((pos + neg) * np.logaddexp(0.0, -eta) + neg * eta))


def _recalibrate(states: pl.Series, *, slope: bool) -> pl.Series:
    """:func:`_fit` over the points of a column of threshold states, one value per group."""
    return _fit(*_points(states), slope=slope)


def _fit(
    groups: int,
    g: np.ndarray,
    t: np.ndarray,
    pos: np.ndarray,
    neg: np.ndarray | None,
    *,
    slope: bool,
) -> pl.Series:
    """The maximum-likelihood logistic recalibration of each group's points (group,
    score, positive weight, negative weight; a score may repeat, the points of a group
    together, in group order; ``neg`` None: every point one row, ``pos`` whether it is
    positive): logit P(y = 1) = a + b·x with x = logit(p) (``slope``: b; else b = 1 and
    a).

    Vectorised Newton–Raphson over every group at once (numpy: the 2 × 2 score equations
    are sums per group, :class:`_Groups`; a Polars expression would have to unroll the
    iterations), from a = 0, b = 1, with step halving while the log-likelihood falls,
    until every step is below 1e-12 (relative) or, once Newton's convergence is
    quadratic (a step below 1% of the one before, s ≤ s₀/100), the next step it
    predicts, s³/s₀², is below 1e-15; at most 100 iterations. The points of a group that
    stops are dropped from the next iterations. A group is null when it has one class
    only, when no estimate exists (the slope of separated scores: every positive's score
    ≥ every negative's, or ≤), or without convergence; NaN when a score is NaN.
    """
    grp = _Groups(g, groups)
    has_nan = grp.reduce(np.logical_or, np.isnan(t), False)
    if neg is None:
        fit = (grp.count(pos) > 0) & (grp.count(~pos) > 0) & ~has_nan
    else:
        fit = (grp.sum(pos) > 0) & (grp.sum(neg) > 0) & ~has_nan
    grp, t, pos, neg = grp.keep(fit, t, pos, neg)
    p, z = _transform(grp, t, slope=slope)
    if slope:
        fit &= ~_separated(grp, z, pos, neg)
    # m = pos + neg, None when every point weighs 1 (then q = σ: no product per point)
    m = None if neg is None else pos + neg
    if m is not None and bool((m == 1.0).all()):
        m = None
    a, b = np.zeros(groups), np.ones(groups)
    active = fit.copy()
    grp, p, z, pos, neg, m = grp.keep(active, p, z, pos, neg, m)
    loglik, fresh = np.zeros(groups), np.zeros(groups, dtype=bool)  # computed when needed
    before = np.full(groups, np.nan)  # the step before, per group (none yet: NaN)
    for iteration in range(MAX_ITERATIONS):
        if not active.any():
            break
        points = (p, z, pos, m)
        sums = _moments(grp, points, a, b, first=iteration == 0, slope=slope)
        with np.errstate(divide="ignore", invalid="ignore"):
            if slope:
                ga, haa, gb, hab, hbb = sums
                det = haa * hbb - hab * hab
                da = (hbb * ga - hab * gb) / det
                db = (haa * gb - hab * ga) / det
            else:
                ga, haa = sums
                da, db = ga / haa, np.zeros(groups)
        bad = active & ~(np.isfinite(da) & np.isfinite(db))
        active &= ~bad
        fit &= ~bad
        da, db = np.where(active, da, 0.0), np.where(active, db, 0.0)
        # step halving: the largest of 1, 1/2, 1/4 ... that does not lower the
        # log-likelihood (a Newton step of a concave function rarely needs it; steps
        # below 0.1, near the maximum, are taken without the check), over the points of
        # the groups checked only (each group as if fitted alone)
        scale = np.ones(groups)
        checked = active & (np.maximum(np.abs(da), np.abs(db)) > 0.1)
        if checked.any():
            sub, x, poss, negs = grp.keep(checked, z, pos, neg)
            if not slope:
                x = -np.log(x)
            stale = checked & ~fresh  # stepped unchecked since their last check
            if stale.any():
                at = _log_likelihood(sub, sub.of_points(a) + sub.of_points(b) * x, poss, negs)
                loglik = np.where(stale, at, loglik)
            for _ in range(60):
                eta = sub.of_points(a + scale * da) + sub.of_points(b + scale * db) * x
                after = _log_likelihood(sub, eta, poss, negs)
                worse = checked & (after < loglik - 1e-13 * np.abs(loglik))
                if not worse.any():
                    break
                scale = np.where(worse, scale * 0.5, scale)
            loglik = np.where(checked, after, loglik)
        fresh = checked  # the log-likelihood known at the new (a, b)
        a, b = a + scale * da, b + scale * db
        step = np.maximum(np.abs(scale * da), np.abs(scale * db))
        size = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            quadratic = (step <= 0.01 * before) & (step**3 <= PREDICTED * size * before**2)
        moving = active & (step > TOLERANCE * size) & ~quadratic
        before = step
        if not np.array_equal(moving, active) and moving.any():  # the groups moving only
            grp, p, z, pos, neg, m = grp.keep(moving, p, z, pos, neg, m)
        active = moving
    fit &= ~active  # not converged
    value = pl.Series(np.where(has_nan, np.nan, b if slope else a), dtype=F64)
    return value.scatter(np.flatnonzero(~(fit | has_nan)), None)


def _in_chunks(fn: Callable[[slice, _Groups], Any], grp: _Groups) -> list[Any]:
    """``fn`` over the chunks of the points (:meth:`_Groups.chunks`), in order, in two
    threads from 65,536 points (:func:`._bin_sums.in_chunks`: the exp and log per point
    take most of a fit)."""
    return in_chunks(lambda c: fn(*c), grp.chunks(), len(grp.g))


def _transform(grp: _Groups, t: np.ndarray, *, slope: bool) -> tuple[np.ndarray, np.ndarray]:
    """The scores as the fit reads them: p = t clipped to [ε, 1 − ε] (t itself when it
    is), z = logit(p) (``slope``) or 1 / odds (σ(a + logit p) = 1 / (1 + e^−a / odds):
    no exp per point), chunk by chunk (:func:`_in_chunks`)."""
    inside = len(t) == 0 or (t.min() >= LOGLOSS_EPS and t.max() <= 1.0 - LOGLOSS_EPS)
    p = t if inside else np.empty_like(t)
    z = np.empty_like(t)

    def part(rows: slice, _: _Groups) -> None:
        pr, zr = p[rows], z[rows]
        if not inside:
            np.clip(t[rows], LOGLOSS_EPS, 1.0 - LOGLOSS_EPS, out=pr)
        np.subtract(1.0, pr, out=zr)
        if slope:  # 1 − p and the ratio within 2 ulp: |error of logit p| ~ 1e-16
            np.log(np.divide(pr, zr, out=zr), out=zr)
        else:
            np.divide(zr, pr, out=zr)

    _in_chunks(part, grp)
    return p, z


def _moments(
    grp: _Groups,
    points: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None],
    a: np.ndarray,
    b: np.ndarray,
    *,
    first: bool,
    slope: bool,
) -> list[np.ndarray]:
    """The score equations' sums per group at (a, b): Σr and Σv, with ``slope`` also
    Σr·x, Σv·x and Σv·x², where σ = σ(a + b·x), q = m·σ, v = q(1 − σ) and r = pos − q
    (``points``: p and z of :func:`_transform`, the positive weight, or whether each
    row is positive, and m, None when every point weighs 1). Chunk by chunk (:func:`_in_chunks`): a chunk's temporaries
    stay in cache, where whole arrays took a pass through memory per operation."""
    p, z, pos, m = points
    exp_a = np.exp(-a)

    def part(rows: slice, sub: _Groups) -> list[np.ndarray]:
        zr = z[rows]
        if first:  # a = 0, b = 1: σ(logit p) = p
            sigma = p[rows]
        else:
            if slope:
                sigma = np.multiply(zr, sub.of_points(-b))
                sigma -= sub.of_points(a)
                with np.errstate(over="ignore"):  # exp(−η) = inf: σ = 0
                    np.exp(sigma, out=sigma)
            else:
                sigma = np.multiply(zr, sub.of_points(exp_a))
            sigma += 1.0
            np.divide(1.0, sigma, out=sigma)  # (np.reciprocal: not vectorised, 2x slower)
        q = sigma if m is None else m[rows] * sigma
        v = np.multiply(q, sigma)
        np.subtract(q, v, out=v)
        r = np.subtract(pos[rows], q)
        if not slope:
            return [sub.sum(r), sub.sum(v)]
        sums = [sub.sum(r), sub.sum(v), sub.dot(r, zr)]
        vz = np.multiply(v, zr, out=v)  # v·x, and Σ v·x² as Σ (v·x)·x: no x² array
        return [*sums, sub.sum(vz), sub.dot(vz, zr)]

    parts = _in_chunks(part, grp)
    if not parts:
        return [np.zeros(grp.groups)] * (5 if slope else 2)
    return [functools.reduce(np.add, sums) for sums in zip(*parts, strict=True)]


def _descending(x: np.ndarray) -> bool:
    return bool((x[1:] <= x[:-1]).all())


def _separated(grp: _Groups, x: np.ndarray, pos: np.ndarray, neg: np.ndarray | None) -> np.ndarray:
    """Per group: the scores separate the classes (every positive's score ≥ every
    negative's, or ≤ every negative's; constant scores included), so that the slope has no
    maximum-likelihood estimate (Albert & Anderson 1984). Every group has points of both
    classes (the caller's); ``neg`` None: rows, ``pos`` whether each is positive."""
    has_pos, has_neg = (pos, ~pos) if neg is None else (pos > 0, neg > 0)
    if grp.groups == 1 and len(x) > 1 and _descending(x[:64]) and _descending(x):
        # descending scores (the threshold state's): the ends of a class
        n = len(x) - 1
        first_pos, last_pos = np.argmax(has_pos), n - np.argmax(has_pos[::-1])
        first_neg, last_neg = np.argmax(has_neg), n - np.argmax(has_neg[::-1])
        return np.array([(x[last_pos] >= x[first_neg]) | (x[first_pos] <= x[last_neg])])
    if grp.groups == 1 and len(x) > 2 * COLLAPSE_SAMPLE:
        # a sample's positive below one of its negatives and another above one proves
        # the classes overlap (the extremes of all the points are further apart): the
        # four masked passes over the points are for the groups it does not decide
        step = len(x) // COLLAPSE_SAMPLE
        if not _separated(grp, x[::step], pos[::step], None if neg is None else neg[::step])[0]:
            return np.array([False])
    inf = np.inf
    min_pos = grp.reduce(np.minimum, np.where(has_pos, x, inf), inf)
    max_pos = grp.reduce(np.maximum, np.where(has_pos, x, -inf), -inf)
    min_neg = grp.reduce(np.minimum, np.where(has_neg, x, inf), inf)
    max_neg = grp.reduce(np.maximum, np.where(has_neg, x, -inf), -inf)
    return (min_pos >= max_neg) | (max_pos <= min_neg)


def recalibration(state: pl.Expr, *, slope: bool) -> pl.Expr:
    """The calibration slope (``slope``) or intercept of threshold states (a list per
    group): :func:`_recalibrate` over the column, one value per group."""
    kernel = functools.partial(_recalibrate, slope=slope)
    return state.map_batches(kernel, return_dtype=F64, returns_scalar=True)


# The bare expression: the fit over the rows themselves, every group in one call.

COLLAPSE_SAMPLE = 4096
"""The sampled scores (evenly spaced rows) that decide whether to collapse the rows."""


def _collapse_pays(s: np.ndarray, groups: int) -> bool:
    """Whether to fit over the distinct scores (one numpy sort of a key per row, per
    group) rather than over the rows: when the groups are large (a sort per group; many
    small groups are fitted together, vectorised) and at least half the sampled rows
    repeat a sampled score (tied scores: far fewer points than rows; distinct scores:
    as many points as rows, and the sort would only add to the fit)."""
    if groups > 1 and len(s) < GROUP_ROWS * groups:
        return False
    sample = s[:: max(1, len(s) // COLLAPSE_SAMPLE)]
    return 2 * len(np.unique(sample)) <= len(sample)


def _distinct_points(
    groups: int, g: np.ndarray, positive: np.ndarray, s: np.ndarray
) -> tuple[np.ndarray, ...]:
    """The points (group, score, positives, negatives) of each group's distinct scores,
    as the threshold state holds them (:mod:`._sorted_keys`: the sorted keys' tie
    blocks, descending, NaN first)."""
    ends = np.cumsum(np.bincount(g, minlength=groups)).tolist() if groups > 1 else [len(s)]
    parts, a = [], 0
    for i, z in enumerate(ends):
        t, tp, fp = block_points(Blocks(sorted_parts(positive[a:z], s[a:z])), head=False)
        parts.append((np.full(len(t), i), t, np.diff(tp, prepend=0.0), np.diff(fp, prepend=0.0)))
        a = z
    return tuple(np.concatenate([part[k] for part in parts]) for k in range(4))


def _recalibrate_rows(lists: pl.Series, *, slope: bool) -> pl.Series:
    """:func:`_fit` over the rows of each group (``{y, s}`` with ``y`` whether the row is
    positive, or ``{y, s, w}`` with the 0/1 label and the weight: positive weight w·y,
    negative w·(1 − y), as the threshold state signs them), one value per group.

    The fit needs no order and no distinct scores: its sums over the rows are its sums
    over the points, so distinct scores are fitted as they come, without the sort that
    the threshold state costs; tied scores of an unweighted group are first collapsed to
    their distinct scores when that pays (:func:`_collapse_pays`)."""
    groups, g, arrays = rows_of(lists)
    if len(arrays) == 3:
        y, s, w = arrays
        signed = w * (2.0 * y - 1.0)
        pos, neg = np.maximum(signed, 0.0), np.maximum(-signed, 0.0)
        return _fit(groups, g, s, pos, neg, slope=slope)
    positive, s = arrays
    if _collapse_pays(s, groups):
        return _fit(groups, *_distinct_points(groups, g, positive, s), slope=slope)
    return _fit(groups, g, s, positive, None, slope=slope)


def _recalibration_spec(
    label: IntoExpr, score: IntoExpr, weight: IntoExpr | None, pos_label: Any, slope: bool
) -> MetricSpec:
    # alone: the rows of each group as lists, every group in one call (is_elementwise:
    # one value per list), fitted over the rows themselves (:func:`_recalibrate_rows`)
    if weight is None:
        rows = unweighted_rows(label, score, pos_label, None)
    else:
        rows = pl.struct(
            binary_label(label, pos_label).implode().alias("y"),
            to_float(score).implode().alias("s"),
            to_float(weight).implode().alias("w"),
        )
    kernel = functools.partial(_recalibrate_rows, slope=slope)
    return MetricSpec(
        {"c": thresholds(label, score, weight, pos_label)},
        lambda s: recalibration(s["c"], slope=slope),
        alone=rows.map_batches(kernel, return_dtype=F64, is_elementwise=True),
    )


_RECALIBRATION: dict[str, Any] = {
    "task": "binary",
    "inputs": PROBA_INPUTS,
    "higher_is_better": None,
    "summary": False,
    "undefined": NO_FIT,
}

_RECALIBRATION_DOC = """{summary}

    The logistic recalibration of the scores, fitted by maximum likelihood (weights as
    frequency weights): {model} with logit(p) = ln(p / (1 − p)). {meaning}
    Scores of exactly 0 or 1 are clipped to [ε, 1 − ε] with ε = 2.22e-16, as
    :func:`polars_eval.logloss` clips them. Equals a binomial GLM (statsmodels ``GLM(y,
    {design}, family=Binomial(){offset}, freq_weights=w)``).

    State: the threshold state of the sort-based binary metrics (one point per distinct
    score with its weighted positives and negatives: exact, merged per score); the fit is
    Newton–Raphson over those points in numpy, every group at once. The bare expression
    fits over the rows themselves instead (no state and no sort: the fit's sums over the
    rows are its sums over the points; tied unweighted scores are first collapsed to
    their distinct scores). Null {undefined}; NaN when a score is NaN.

    References
    ----------
    Cox, D. R. (1958). Two further applications of a model for binary regression.
    Biometrika 45(3/4). Van Calster et al. (2019). Calibration: the Achilles heel of
    predictive analytics. BMC Medicine 17.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> df = pl.DataFrame(
    ...     {{"y": [0, 1, 0, 1, 1, 0, 1, 1], "p": [0.2, 0.3, 0.5, 0.5, 0.8, 0.7, 0.4, 0.6]}}
    ... )
    >>> round(df.eval.{name}("y", "p"), 6)
    {example}
"""


@register(**_RECALIBRATION)
def calibration_slope(
    label: IntoExpr, score: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> MetricSpec:
    return _recalibration_spec(label, score, weight, pos_label, slope=True)


@register(**_RECALIBRATION)
def calibration_intercept(
    label: IntoExpr, score: IntoExpr, *, weight: IntoExpr | None = None, pos_label: Any = None
) -> MetricSpec:
    return _recalibration_spec(label, score, weight, pos_label, slope=False)


calibration_slope.__doc__ = _RECALIBRATION_DOC.format(
    summary="Calibration slope: b of the logistic recalibration logit P(y = 1) = a + b·logit(p).",
    model="logit P(y = 1) = a + b·logit(p)",
    meaning="b = 1 for calibrated scores; b < 1: too extreme (overfit), b > 1: too modest.",
    design="[1, logit(p)]",
    offset="",
    undefined=(
        "for one class only and for scores that separate the classes (every positive's "
        "score ≥ every negative's, or ≤; constant scores included): no estimate exists"
    ),
    name="calibration_slope",
    example="0.418908",
)
calibration_intercept.__doc__ = _RECALIBRATION_DOC.format(
    summary="Calibration intercept: a of logit P(y = 1) = a + logit(p) (calibration-in-the-large).",
    model="logit P(y = 1) = a + logit(p), the logit of the score an offset",
    meaning="a = 0 when the scores are right on average; a > 0: they are too low.",
    design="ones",
    offset=", offset=logit(p)",
    undefined="for one class only (then no estimate exists)",
    name="calibration_intercept",
    example="0.592419",
)
