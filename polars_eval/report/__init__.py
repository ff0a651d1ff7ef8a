"""Evaluation reports (SPEC §9): tables from the metric layer, Altair charts, one HTML file.

``df.eval.report(task=..., label=..., score=...)`` returns a :class:`Report`. Its tables
need nothing beyond polars; its charts and HTML need the optional extra ``plot``
(altair and vl-convert-python), imported only when a chart is drawn.
"""

from __future__ import annotations

from polars_eval.report._report import Report

__all__ = ["Report"]
