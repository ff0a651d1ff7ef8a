"""The fairness section of a binary report (SPEC §15): ``df.eval.report(..., sensitive=)``.

Oracles: the metric layer's own methods (the report's tables must be exactly what
``df.eval.fairness`` and ``df.eval.disparity`` return, intervals included), and the
Vega-Lite schema for the chart.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import polars_eval as pe
from polars_eval.report import fairness as F
from polars_eval.report.tables import SEGMENT

pytest.importorskip("altair")
pytest.importorskip("vl_convert")


def frame(n: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    sex = rng.choice(["female", "male"], n)
    p = np.clip(0.3 + 0.35 * y + 0.1 * (sex == "male") + rng.normal(0, 0.2, n), 0, 1).round(3)
    return pl.DataFrame(
        {
            "y": y,
            "p": p,
            "w": rng.integers(1, 4, n).astype(float),
            "sex": sex,
            "age": rng.choice(["<30", "30-50", "50+"], n),
        }
    )


@pytest.fixture(scope="module")
def df() -> pl.DataFrame:
    return frame()


@pytest.fixture(scope="module")
def report(df: pl.DataFrame) -> pe.Report:
    return df.eval.report("binary", label="y", score="p", weight="w", sensitive=["sex", "age"])


def test_tables_are_the_metric_layer(df: pl.DataFrame, report: pe.Report) -> None:
    kwargs = {"sensitive": ["sex", "age"], "weight": "w", "ci": "bootstrap"}
    assert_frame_equal(report.tables["fairness"], df.eval.fairness("y", "p", **kwargs))
    assert_frame_equal(report.tables["disparity"], df.eval.disparity("y", "p", **kwargs))
    assert report.options["sensitive"] == "sex, age"


def test_without_intervals(df: pl.DataFrame) -> None:
    rep = df.eval.report("binary", label="y", score="p", sensitive="sex", ci=None, threshold=0.6)
    assert_frame_equal(
        rep.tables["fairness"], df.eval.fairness("y", "p", sensitive="sex", threshold=0.6)
    )
    assert not any(c.endswith("_lower") for c in rep.tables["disparity"].columns)
    assert "Grey:" not in rep.html()


def test_chart_draws_every_metric_per_group(report: pe.Report) -> None:
    chart = report.charts["fairness"]
    chart.to_dict(validate=True)
    assert_frame_equal(chart.data.drop(SEGMENT), report.tables["fairness"])
    assert chart.data[SEGMENT].to_list()[:2] == ["female / 30-50", "female / 50+"]
    spec = chart.to_dict()
    assert len(spec["hconcat"]) == 4  # one panel per metric
    first = spec["hconcat"][0]["layer"]
    assert first[0]["mark"]["type"] == "rule"  # the interval
    assert first[0]["encoding"]["x"]["field"] == "selection_rate_lower"
    assert first[1]["encoding"]["x"]["field"] == "selection_rate"
    svg = report.svgs()["fairness"]
    assert svg.startswith("<svg") and "<path" in svg


def test_page_has_the_fairness_section(report: pe.Report) -> None:
    page = report.html()
    section = re.search(r'<section id="pe-fairness">(.*?)</section>', page, re.S)
    assert section is not None
    text = section.group(1)
    assert "Disparity between groups" in text
    assert text.count("<tr>") == report.tables["fairness"].height + 1 + 4 + 1
    assert 'data-chart="fairness"' in page
    assert page.index('id="pe-charts"') < page.index('id="pe-fairness"')
    rows = F.disparity_rows(report)
    assert rows["metric"].to_list() == list(pe.metrics.fairness.DEFAULT_METRICS)
    assert rows.columns == [
        "metric",
        "difference",
        "difference_lower",
        "difference_upper",
        "ratio",
        "ratio_lower",
        "ratio_upper",
    ]


def test_undefined_rates_become_notes() -> None:
    df = frame(300, seed=1).with_columns(
        pl.when(pl.col("age") == "50+").then(0).otherwise(pl.col("y")).alias("y")
    )
    rep = df.eval.report("binary", label="y", score="p", sensitive="age", ci=None)
    assert any("true_positive_rate is null for 1 of 3 groups" in n for n in rep.notes)
    assert (
        rep.tables["fairness"].filter(pl.col("age") == "50+")["true_positive_rate"].item() is None
    )


def test_lazy_input_and_bad_options(df: pl.DataFrame) -> None:
    lazy = df.lazy().eval.report("binary", label="y", score="p", sensitive="sex", ci=None)
    assert_frame_equal(lazy.tables["disparity"], df.eval.disparity("y", "p", sensitive="sex"))
    with pytest.raises(pe.DataValidationError, match='column "gender"'):
        df.eval.report("binary", label="y", score="p", sensitive="gender")
    reg = pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.5, 2.0, 2.5], "g": ["x", "y", "x"]})
    with pytest.raises(pe.InvalidParameterError, match="binary report"):
        reg.eval.report("regression", label="a", score="b", sensitive="g")
