"""Evaluation at scale: mergeable states over batches, partitions and lakes (SPEC §10)."""

from polars_eval.scale.evaluation import Evaluation, score_bin

__all__ = ["Evaluation", "score_bin"]
