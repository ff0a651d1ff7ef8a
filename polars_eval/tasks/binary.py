"""Binary-classification methods of the ``.eval`` namespace that are more than one metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.planner import normalize_by
from polars_eval._core.registry import MetricInfo
from polars_eval._core.spec import MetricSpec
from polars_eval._core.table import Checks, Output, Specs, Table, kept, run
from polars_eval._core.tasks import TASKS
from polars_eval._core.windows import BASELINE_NOT_MERGEABLE, Grouping, grouped_method
from polars_eval._exprs import binary_label, not_null, to_float, weight_expr
from polars_eval._typing import IntoExpr
from polars_eval.exceptions import InvalidParameterError
from polars_eval.metrics import binary as b
from polars_eval.metrics._curve import score_bin

BASELINE = "_baseline"
EXACT_WHEN_BINNED = frozenset(_registry.declared("exact_binned"))
"""The metrics that ``bins=`` leaves exact (sums); the others run over the bins."""


def binned_representative(score: pl.Expr, bins: int, *, probability: bool) -> pl.Expr:
    """The score of a row's bin in binned mode (``pe.Evaluation(..., bins=N)``): the
    bin's centre (b + ½)/N for probabilities, the bin's number for other scores (the
    order is all that counts)."""
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
        raise InvalidParameterError(f"bins must be an integer >= 2; got {bins!r}")
    return bin_score(score_bin(score, bins, probability=probability), bins, probability=probability)


def bin_score(b: pl.Expr, bins: int, *, probability: bool) -> pl.Expr:
    """The score of bin ``b`` (:func:`binned_representative`), as Float64."""
    binned = b.cast(pl.Float64)
    return (binned + 0.5) / bins if probability else binned


def constant_predictor(
    label: IntoExpr, score: IntoExpr, weight: IntoExpr | None, pos_label: Any
) -> tuple[pl.Expr, pl.Expr]:
    """The best constant predictor of a binary task: (score, hard prediction) columns.

    The score is the group's (weighted) positive rate: its AUC is 0.5 and its logloss the
    entropy of the labels. The hard prediction is the majority class, so the threshold
    metrics give the accuracy of the majority class (YDF's "default metrics", SPEC §8).
    Both are null where the row is ignored.
    """
    y, s, w = binary_label(label, pos_label), to_float(score), weight_expr(weight)
    valid = not_null(y, s, w)
    rate = pl.when(valid).then(w * y).sum() / pl.when(valid).then(w).sum()
    majority = (rate >= 0.5).cast(pl.Float64)
    # 0 + the group's scalar, not when(valid).then(scalar): over a group_by of no groups
    # Polars (2.1) types that broadcast as Null and a later float operation fails on it
    zero = pl.when(valid).then(0.0)
    return zero + rate, zero + majority


def summary_infos(
    probability: bool, metrics: str | Sequence[str] | None = None
) -> list[MetricInfo]:
    """The metrics of ``df.eval.binary``: the summary metrics (without the probability ones
    when the scores are not probabilities), or the binary metrics named in ``metrics=``."""
    infos = _registry.select("binary", metrics, probability=probability)
    if not probability:
        needs = [i.name for i in infos if i.inputs.get("score") == "proba"]
        if needs:
            raise InvalidParameterError(
                f"{needs[0]} needs probabilities: it cannot be computed with probability=False"
            )
    return infos


def _summary_specs(
    infos: list[MetricInfo],
    label: IntoExpr,
    score: IntoExpr,
    weight: IntoExpr | None,
    pos_label: Any,
    threshold: float,
    suffix: str,
    pred: pl.Expr | None = None,
    bins: int | None = None,
    probability: bool = True,
) -> dict[str, MetricSpec]:
    """The spec of each summary metric (name + suffix); with ``pred`` (the baseline's hard
    prediction) the threshold metrics read it instead of ``score >= threshold``; with
    ``bins`` the sort-based ones read the score's bin (:func:`binned_representative`, as
    ``pe.Evaluation(..., bins=N)``), the sums stay exact."""
    binned = (
        score
        if bins is None
        else binned_representative(to_float(score), bins, probability=probability)
    )
    out: dict[str, MetricSpec] = {}
    for info in infos:
        name = info.name
        if pred is not None and name == "max_accuracy":
            # a constant predictor's best accuracy is its majority-class accuracy (its
            # score has one threshold only: "all positive")
            states = b.confusion_states(
                label, None, pred=pred, threshold=threshold, weight=weight, pos_label=pos_label
            )
            spec = b.counts_spec(states, b.THRESHOLD_FORMULAS["accuracy"])
        else:
            takes_pred = pred is not None and "pred" in info.signature.parameters
            exact = name in EXACT_WHEN_BINNED
            available = {
                "label": label,
                "score": None if takes_pred else (score if exact else binned),
                "pred": pred if takes_pred else None,
                "threshold": threshold,
                "weight": weight,
                "pos_label": pos_label,
            }
            spec = _registry.bind(info, available)
        out[name + suffix] = spec
    return out


@kept
def binary_table(a: Mapping[str, Any]) -> Table:
    """The table of ``df.eval.binary`` from the arguments of
    :meth:`BinaryMethods.binary` by name (``grouping`` among them; see
    :func:`~polars_eval._core.table.arguments`): the summary metrics' specs (and the
    baseline's), the binary roles and the metrics' data checks."""
    label, score, weight, pos_label = a["label"], a["score"], a["weight"], a["pos_label"]
    threshold, probability, baseline = a["threshold"], a["probability"], a["baseline"]
    grouping, validate = a.get("grouping"), a["validate"]
    if grouping is not None and baseline:
        raise InvalidParameterError(BASELINE_NOT_MERGEABLE)
    infos = summary_infos(probability, a["metrics"])
    specs = _summary_specs(
        infos,
        label,
        score,
        weight,
        pos_label,
        threshold,
        "",
        bins=a["bins"],
        probability=probability,
    )
    if baseline:
        constant, majority = constant_predictor(label, score, weight, pos_label)
        specs |= _summary_specs(
            infos, label, constant, weight, pos_label, threshold, BASELINE, pred=majority
        )
    return Table(
        Specs(specs, one_group=True),
        Checks(
            b.PROBA_INPUTS if probability else b.ORDER_INPUTS,
            {"label": label, "score": score, "weight": weight, "pos_label": pos_label},
            validate,
            _registry.data_checks(infos, {"label": label, "score": score}) if validate else [],
        ),
        Output({info.name: info.undefined or "no defined value" for info in infos}, strict=False),
        by=normalize_by(a["by"]),
        grouping=grouping,
    )


class BinaryMethods:
    """``df.eval.binary``: every binary summary metric in one wide row per group."""

    _frame: pl.DataFrame | pl.LazyFrame

    @grouped_method
    def binary(
        self,
        label: IntoExpr,
        score: IntoExpr,
        *,
        weight: IntoExpr | None = None,
        pos_label: Any = None,
        threshold: float = 0.5,
        probability: bool = True,
        baseline: bool = False,
        bins: int | None = None,
        metrics: str | Sequence[str] | None = None,
        by: str | list[str] | None = None,
        validate: bool = True,
        grouping: Grouping | None = None,
    ) -> Any:
        """All binary summary metrics of the registry, one wide row per group.

        The rows are sorted by score once per group; every threshold-free metric (AUC,
        PR-AUC, AP, KS, max-over-threshold metrics, ECE) is finalized from that one sorted
        state, and the threshold metrics (at ``threshold``) from one pass of weighted
        confusion counts. ``probability=False`` (scores that are not probabilities) leaves
        out logloss, Brier and ECE and accepts any finite score. ``baseline=True`` adds
        ``<metric>_baseline`` columns: the same metrics for the best constant predictor, the
        group's positive rate as score (AUC 0.5, logloss = entropy of the labels) and the
        majority class as hard prediction (accuracy of the majority class). Undefined values
        are null and reported in one warning; without ``by``, an input with no row to evaluate
        (empty, or every row null or of weight 0) is an ``UndefinedMetricError``, as for a
        single metric.

        ``metrics=`` chooses the columns instead: any registered binary metric of one value,
        in the order given, the ones outside the default table included (``["auc",
        "jaccard", "hinge_loss"]``); a metric that needs an option the table does not take
        (``partial_auc``'s ``max_fpr=``) is an error that says so.

        ``bins=N`` (column names only) evaluates in binned mode, as ``pe.Evaluation(...,
        bins=N)``: the sort-based metrics over N score bins (SPEC §10: memory bounded by
        the groups and bins, the AUC off by at most half the weighted share of
        (positive, negative) pairs that share a bin), log loss, Brier score and the
        threshold metrics exact; on a LazyFrame the bins are counted with the streaming
        engine at ``collect()``.

        ``time=``, ``every=`` (``period=``, ``offset=``) evaluate per time window, and
        ``grouping_sets=`` / ``rollup=`` (``min_rows=``) per slice, from states merged
        (SPEC §13; see :mod:`polars_eval._core.windows`); ``baseline=True`` is not
        available with them (the constant predictor is a function of each group's rows).

        Returns a one-row DataFrame without ``by`` (a LazyFrame on a LazyFrame).

        Examples
        --------
        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1], "p": [0.9, 0.3, 0.6, 0.2, 0.5]})
        >>> out = df.eval.binary("y", "p", baseline=True)
        >>> out.select(pl.col("auc", "accuracy", "f1", "auc_baseline", "accuracy_baseline").round(4))
        shape: (1, 5)
        ┌────────┬──────────┬────────┬──────────────┬───────────────────┐
        │ auc    ┆ accuracy ┆ f1     ┆ auc_baseline ┆ accuracy_baseline │
        │ ---    ┆ ---      ┆ ---    ┆ ---          ┆ ---               │
        │ f64    ┆ f64      ┆ f64    ┆ f64          ┆ f64               │
        ╞════════╪══════════╪════════╪══════════════╪═══════════════════╡
        │ 0.6667 ┆ 0.6      ┆ 0.6667 ┆ 0.5          ┆ 0.6               │
        └────────┴──────────┴────────┴──────────────┴───────────────────┘
        """
        arguments = dict(locals())  # every argument by name (the first statement)
        del arguments["self"]
        table = binary_table(arguments)
        lazy = isinstance(self._frame, pl.LazyFrame) and validate
        if bins is None and not (lazy and (grouping is None or grouping.windows is not None)):
            return run(table, self._frame)
        # bins=, or a LazyFrame whose table may keep sorted scores: a bounded evaluation
        return TASKS["binary"].load("bounded")(self._frame, table, arguments)
