"""Binary-classification methods of the ``.eval`` namespace that are more than one metric."""

from __future__ import annotations

from typing import Any

import polars as pl

from polars_eval import _registry
from polars_eval._run import Plan, execute, normalize_by
from polars_eval._typing import IntoExpr
from polars_eval.families import binary as b
from polars_eval.families._curve import finalize, threshold_state

STATE = "__pe_state"
COUNTS = "__pe_counts"


class BinaryMethods:
    """``df.eval.binary``: every binary summary metric in one wide row per group."""

    _frame: pl.DataFrame | pl.LazyFrame

    def binary(
        self,
        label: IntoExpr,
        score: IntoExpr,
        *,
        weight: IntoExpr | None = None,
        pos_label: Any = None,
        threshold: float = 0.5,
        probability: bool = True,
        by: str | list[str] | None = None,
        validate: bool = True,
    ) -> Any:
        """All binary summary metrics of the registry, one wide row per group.

        The rows are sorted by score once per group; every threshold-free metric (AUC,
        PR-AUC, AP, KS, max-over-threshold metrics, ECE) is finalized from that one sorted
        state, and the threshold metrics (at ``threshold``) from one pass of weighted
        confusion counts. ``probability=False`` (scores that are not probabilities) leaves
        out logloss, Brier and ECE and accepts any finite score. Undefined values are null
        and reported in one warning.

        Returns a one-row DataFrame without ``by`` (a LazyFrame on a LazyFrame).

        Examples
        --------
        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"y": [1, 1, 0, 0, 1], "p": [0.9, 0.3, 0.6, 0.2, 0.5]})
        >>> df.eval.binary("y", "p").select(pl.col("auc", "accuracy", "f1").round(4))
        shape: (1, 3)
        ┌────────┬──────────┬────────┐
        │ auc    ┆ accuracy ┆ f1     │
        │ ---    ┆ ---      ┆ ---    │
        │ f64    ┆ f64      ┆ f64    │
        ╞════════╪══════════╪════════╡
        │ 0.6667 ┆ 0.6      ┆ 0.6667 │
        └────────┴──────────┴────────┘
        """
        infos = [
            info
            for info in _registry.by_task("binary")
            if info.summary
            and info.kind == "scalar"
            and (probability or info.inputs.get("score") != "proba")
        ]
        sorted_names = {
            info.name for info in infos if info.name in b.AUC_FINALIZE or info.name == "ece"
        }
        counts = b.confusion_state(
            label, score, pred=None, threshold=threshold, weight=weight, pos_label=pos_label
        )
        first: list[pl.Expr] = [
            threshold_state(label, score, weight, pos_label).alias(STATE),
            counts.alias(COUNTS),
        ]
        for info in infos:
            if info.name not in sorted_names and info.name not in b.THRESHOLD_FORMULAS:
                first.append(info.fn(label, score, weight=weight, pos_label=pos_label))
        finalizers = [
            (
                finalize(pl.col(STATE), b.AUC_FINALIZE[name])
                if name in b.AUC_FINALIZE
                else b.ece_from_state(pl.col(STATE), 10)
            ).alias(name)
            for name in sorted_names
        ]
        finalizers += [
            b.finalize_counts(pl.col(COUNTS), b.THRESHOLD_FORMULAS[info.name]).alias(info.name)
            for info in infos
            if info.name in b.THRESHOLD_FORMULAS
        ]
        by_cols = normalize_by(by)
        order = by_cols + [info.name for info in infos]

        def second(lf: pl.LazyFrame) -> pl.LazyFrame:
            return lf.with_columns(finalizers).select(order)

        plan = Plan(
            exprs=first,
            inputs=b.PROBA_INPUTS if probability else b.ORDER_INPUTS,
            args={"label": label, "score": score, "weight": weight, "pos_label": pos_label},
            by=by_cols,
            validate=validate,
            undefined={info.name: info.undefined or "no defined value" for info in infos},
            strict=False,
            then=second,
        )
        return execute(self._frame, plan)
