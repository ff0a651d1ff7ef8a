"""Reports (SPEC §9): tables from the metric layer, charts drawn from them, offline HTML.

Oracles: the metric layer's own namespace methods (a report must show exactly what they
return), brute-force row counts, and headless Chromium for the rendered page.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import oracles as O
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import polars_eval as pe
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.report import charts as C
from polars_eval.report.html import scope_svg, summary_rows
from polars_eval.report.tables import ALL, SEGMENT

pytest.importorskip("altair")
pytest.importorskip("vl_convert")


def binary_frame(n: int = 300, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.round(np.clip(rng.random(n) * 0.7 + 0.3 * y * rng.random(n), 0, 1), 2)
    df = pl.DataFrame(
        {
            "y": y,
            "p": score,
            "w": rng.integers(0, 4, n).astype(np.float64),
            "seg": rng.choice(["north", "south", "east", "west"], n),
        }
    )
    # a few rows skipped for a null input
    return df.with_columns(
        pl.when(pl.int_range(pl.len()) % 37 == 5).then(None).otherwise(pl.col("p")).alias("p")
    )


@pytest.fixture(scope="module")
def df() -> pl.DataFrame:
    return binary_frame()


@pytest.fixture(scope="module")
def report(df: pl.DataFrame) -> pe.Report:
    return df.eval.report("binary", label="y", score="p", by="seg", weight="w")


@pytest.fixture(scope="module")
def page(report: pe.Report) -> str:
    return report.html()


# ---------------------------------------------------------------------------------------
# Tables: exactly what the metric layer returns
# ---------------------------------------------------------------------------------------


def test_tables_are_the_metric_layer(df: pl.DataFrame, report: pe.Report) -> None:
    ev, kw = df.eval, {"weight": "w"}
    t = report.tables
    summary = ev.binary("y", "p", **kw)
    # the report adds the intervals (by default) after the metric layer's columns
    assert t["summary"].columns[: summary.width] == summary.columns
    assert_frame_equal(t["summary"].select(summary.columns), summary)
    assert_frame_equal(t["roc_curve"], ev.roc_curve("y", "p", **kw))
    assert_frame_equal(t["pr_curve"], ev.pr_curve("y", "p", **kw))
    assert_frame_equal(t["lorenz_curve"], ev.lorenz_curve("y", "p", **kw))
    assert_frame_equal(t["gain_table"], ev.gain_table("y", "p", bins=10, **kw))
    assert_frame_equal(t["calibration_table"], ev.calibration_table("y", "p", bins=10, **kw))
    assert_frame_equal(
        t["calibration_table_quantile"],
        ev.calibration_table("y", "p", bins=10, strategy="quantile", **kw),
    )
    assert_frame_equal(t["threshold_table"], ev.threshold_table("y", "p", n_thresholds=500, **kw))
    assert_frame_equal(t["roc_curve_by"], ev.roc_curve("y", "p", by="seg", **kw))
    assert_frame_equal(t["pr_curve_by"], ev.pr_curve("y", "p", by="seg", **kw))
    by_seg = ev.binary("y", "p", by="seg", **kw)
    assert t["segments"]["auc_lower"].null_count() == 0
    assert_frame_equal(
        t["segments"].select(by_seg.columns), by_seg.sort("auc"), check_row_order=True
    )


def test_calibration_section_is_the_metric_layer(df: pl.DataFrame, report: pe.Report) -> None:
    """SPEC §15: errors over both bin strategies, slope and intercept, as the metric
    functions give them, in a section of the page."""
    table = report.tables["calibration"]
    ev, kw = df.eval, {"weight": "w"}
    for metric, bins, value in table.iter_rows():
        if bins is None:
            want = getattr(ev, metric)("y", "p", **kw)
        else:
            norm = {"ece": "l1", "rmsce": "l2", "mce": "max"}[metric]
            want = ev.calibration_error("y", "p", bins=10, norm=norm, strategy=bins, **kw)
        assert value == pytest.approx(want, rel=1e-12, abs=1e-12), (metric, bins)
    assert table["metric"].to_list() == [
        *["ece", "rmsce", "mce"] * 2,
        "calibration_slope",
        "calibration_intercept",
    ]
    section = report.html().split('id="pe-calibration"')[1].split("</section>")[0]
    assert "calibration_slope" in section and "quantile" in section


def test_segments_worst_first_and_counts(df: pl.DataFrame, report: pe.Report) -> None:
    seg = report.tables["segments"]
    auc = seg["auc"].to_list()
    assert auc == sorted(auc)
    # brute force row counts per segment
    for row in seg.iter_rows(named=True):
        part = df.filter(pl.col("seg") == row["seg"])
        nulls = sum(p is None for p in part["p"].to_list())
        zero = sum(
            1
            for p, w in zip(part["p"].to_list(), part["w"].to_list(), strict=True)
            if p is not None and w == 0
        )
        assert (row["rows"], row["rows_null"], row["rows_zero_weight"]) == (
            part.height,
            nulls,
            zero,
        )
        assert row["rows_used"] == part.height - nulls - zero
    # per segment == the report of that segment alone
    one = seg.row(0, named=True)
    alone = df.filter(pl.col("seg") == one["seg"]).eval.report(
        "binary", label="y", score="p", weight="w"
    )
    assert alone.tables["summary"]["auc"].item() == pytest.approx(one["auc"], abs=1e-12)


def test_data_counts(df: pl.DataFrame, report: pe.Report) -> None:
    c = report.counts
    p, w, y = df["p"].to_list(), df["w"].to_list(), df["y"].to_list()
    used = [(yi, wi) for yi, pi, wi in zip(y, p, w, strict=True) if pi is not None and wi > 0]
    assert c["rows"] == df.height
    assert c["rows_null"] == sum(pi is None for pi in p)
    assert c["rows_used"] == len(used)
    assert c["positives"] == pytest.approx(sum(wi for yi, wi in used if yi == 1))
    assert c["negatives"] == pytest.approx(sum(wi for yi, wi in used if yi == 0))


def test_lazy_equals_eager(df: pl.DataFrame, report: pe.Report) -> None:
    lazy = df.lazy().eval.report("binary", label="y", score="p", by="seg", weight="w")
    assert set(lazy.tables) == set(report.tables)
    for name, table in report.tables.items():
        assert_frame_equal(lazy.tables[name], table)


# ---------------------------------------------------------------------------------------
# Charts: drawn from those tables only, and every one renders
# ---------------------------------------------------------------------------------------

EXPECTED_BINARY = [
    "roc",
    "pr",
    "gain",
    "lift",
    "ks",
    "lorenz",
    "calibration",
    "threshold",
    "segments",
]


def _curve_part(data: pl.DataFrame, segment: str, columns: list[str]) -> pl.DataFrame:
    return data.filter(pl.col(SEGMENT) == segment).sort(C.ORDER).select(columns)


def test_chart_data_equals_tables(report: pe.Report) -> None:
    charts, t = report.charts, report.tables
    assert list(charts) == EXPECTED_BINARY
    for name, table in (("roc", "roc_curve"), ("pr", "pr_curve")):
        data = charts[name].data
        cols = t[table].columns
        assert_frame_equal(_curve_part(data, ALL, cols), t[table])
        for seg in t["segments"]["seg"]:
            expected = t[f"{table}_by"].filter(pl.col("seg") == seg).select(cols)
            assert_frame_equal(_curve_part(data, seg, cols), expected)
    assert_frame_equal(charts["gain"].data, t["gain_table"])
    assert_frame_equal(charts["lift"].data, t["gain_table"])
    calibration = charts["calibration"].data  # both bin strategies, one line each
    assert_frame_equal(calibration.filter(bins="uniform").drop("bins"), t["calibration_table"])
    assert_frame_equal(
        calibration.filter(bins="quantile").drop("bins"), t["calibration_table_quantile"]
    )
    assert_frame_equal(charts["lorenz"].data.drop(C.ORDER), t["lorenz_curve"])
    assert_frame_equal(charts["threshold"].data.drop(C.ORDER), t["threshold_table"])
    roc_finite = t["roc_curve"].filter(pl.col("threshold").is_finite())
    assert_frame_equal(charts["ks"].data.drop(C.ORDER), roc_finite)
    seg_data = charts["segments"].data.drop(SEGMENT)
    assert_frame_equal(seg_data, t["segments"])


def test_ks_marker_is_the_summary_ks(report: pe.Report) -> None:
    rule = report.charts["ks"].layer[1].data
    gap = abs(rule["tpr"][0] - rule["fpr"][0])
    assert gap == pytest.approx(report.tables["summary"]["ks"].item(), abs=1e-12)


def test_every_chart_renders(report: pe.Report) -> None:
    svgs = report.svgs()
    assert set(svgs) == set(EXPECTED_BINARY)
    for name, svg in svgs.items():
        assert svg.startswith("<svg"), name
        assert "<path" in svg, name
    for chart in report.charts.values():
        chart.to_dict(validate=True)  # a valid Vega-Lite spec
    # curves are drawn: the ROC has one line per segment and one for all rows
    assert report.charts["roc"].to_dict()["layer"][1]["mark"]["type"] == "line"


def test_downsampled_charts_keep_metric_rows() -> None:
    rng = np.random.default_rng(3)
    n = 3000
    y = rng.integers(0, 2, n)
    frame = pl.DataFrame({"y": y, "p": rng.random(n) * 0.8 + 0.2 * y, "g": rng.integers(0, 3, n)})
    rep = frame.eval.report("binary", label="y", score="p", by="g", max_points=60)
    roc = rep.tables["roc_curve"]
    assert roc.height > 60
    data = rep.charts["roc"].data
    for _, part in data.group_by(SEGMENT):
        assert part.height <= 60
    whole = _curve_part(data, ALL, roc.columns)
    assert whole.row(0) == roc.row(0) and whole.row(-1) == roc.row(-1)
    # every drawn point is a point of the metric layer's curve, in its order
    joined = whole.with_row_index("k").join(roc.with_row_index("src"), on=roc.columns)
    assert joined.height == whole.height
    assert joined["src"].is_sorted()
    assert rep.tables["threshold_table"].height <= 60
    assert "60 of its" in rep.captions["roc"]
    assert "svg" in rep.html()


@given(
    n=st.integers(1, 400),
    max_points=st.integers(2, 50),
    seed=st.integers(0, 2**16),
    by_rank=st.booleans(),
)
def test_downsample_properties(n: int, max_points: int, seed: int, by_rank: bool) -> None:
    rng = np.random.default_rng(seed)
    x = np.sort(rng.random(n))
    table = pl.DataFrame({"x": x, "y": np.cumsum(rng.random(n)), "g": rng.integers(0, 3, n)})
    table = table.with_columns(pl.int_range(pl.len()).alias("i"))
    out = C.downsample(table, ["x", "y"], max_points, group="g", by_rank=by_rank)
    for (g,), part in table.group_by("g"):
        kept = out.filter(pl.col("g") == g)
        assert kept.height <= max_points
        assert kept["i"].is_sorted()
        assert set(kept["i"]) <= set(part["i"])
        assert kept["i"][0] == part["i"][0] and kept["i"][-1] == part["i"][-1]
        if part.height <= max_points:
            assert kept.height == part.height


# ---------------------------------------------------------------------------------------
# One sort for the whole report: its tables are the metric layer's, its curves thinned
# ---------------------------------------------------------------------------------------


def tied_frame(n: int = 2000, seed: int = 5) -> pl.DataFrame:
    """Scores on a coarse grid (many ties), fractional weights, a null segment key, a
    segment of one class and rows skipped for a null or a zero weight."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    seg = rng.choice(["a", "b", "c", None], n).astype(object)
    seg[:40] = "one class"
    y[:40] = 1
    return pl.DataFrame(
        {
            "y": y,
            "p": np.round(np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0.0, 1.0), 2),
            "w": rng.choice([0.0, 0.5, 1.25, 3.0], n),
            "seg": seg,
        },
        schema_overrides={"seg": pl.String},
    ).with_columns(pl.when(pl.int_range(pl.len()) % 53 == 7).then(None).otherwise("p").alias("p"))


@pytest.mark.filterwarnings("ignore::polars_eval.UndefinedMetricWarning")
def test_report_tables_equal_the_metric_methods() -> None:
    df = tied_frame()
    rep = df.eval.report("binary", label="y", score="p", by="seg", weight="w")
    seg, t, kw = rep.tables["segments"], rep.tables, {"weight": "w"}
    by_key = seg.sort("seg", nulls_last=True)
    auc = df.eval.auc("y", "p", by="seg", **kw)
    assert by_key["seg"].to_list() == auc["seg"].to_list()
    got, want = by_key["auc"].to_list(), auc["auc"].to_list()
    assert [v is None for v in got] == [v is None for v in want]
    assert [v for v in got if v is not None] == pytest.approx(
        [v for v in want if v is not None], rel=1e-12, nan_ok=True
    )
    assert t["summary"]["auc"].item() == pytest.approx(df.eval.auc("y", "p", **kw), rel=1e-12)
    for name in ("pr_auc", "average_precision", "ks", "max_mcc", "ece", "logloss", "f1"):
        one = getattr(df.eval, name)("y", "p", by="seg", **kw)
        got, want = by_key[name].to_list(), one[name].to_list()
        assert [v is None for v in got] == [v is None for v in want], name
        assert [v for v in got if v is not None] == pytest.approx(
            [v for v in want if v is not None], rel=1e-12
        ), name
    assert by_key.filter(pl.col("seg") == "one class")["auc"].item() is None
    # outside oracle: scikit-learn's AUC of each segment (rows with a null score dropped)
    for key, part in df.filter(pl.col("p").is_not_null() & (pl.col("w") > 0)).group_by("seg"):
        row = seg.filter(pl.col("seg").eq_missing(key[0]))
        if part["y"].n_unique() == 2:
            expected = O.sk_auc(part["y"].to_numpy(), part["p"].to_numpy(), part["w"].to_numpy())
            assert row["auc"].item() == pytest.approx(expected, rel=1e-12)
    # the curves, read from report.tables when asked for, are the namespace's
    for name in ("roc_curve", "pr_curve"):
        assert_frame_equal(t[f"{name}_by"], getattr(df.eval, name)("y", "p", by="seg", **kw))
        assert_frame_equal(t[name], getattr(df.eval, name)("y", "p", **kw))
    assert_frame_equal(t["lorenz_curve"], df.eval.lorenz_curve("y", "p", **kw))


@given(
    n=st.integers(0, 300),
    points=st.integers(2, 40),
    seed=st.integers(0, 2**16),
)
def test_thin_keeps_end_points_and_exact_points(n: int, points: int, seed: int) -> None:
    from polars_eval.report._states import thin

    values = np.random.default_rng(seed).random(n).tolist()
    kept = pl.select(thin(pl.lit(pl.Series([values])), points)).to_series()[0].to_list()
    assert len(kept) <= points
    if n <= points - 1:
        assert kept == values  # short curves are kept whole
    if n:
        assert kept[0] == values[0] and kept[-1] == values[-1]
    # a subsequence of the curve: its points, exact, in their order
    it = iter(values)
    assert all(any(v == w for w in it) for v in kept)


def test_thinned_chart_curves_are_subsets_of_the_full_curves() -> None:
    rng = np.random.default_rng(11)
    n = 20_000
    y = rng.integers(0, 2, n)
    frame = pl.DataFrame(
        {"y": y, "p": rng.random(n) * 0.7 + 0.3 * y * rng.random(n), "g": rng.integers(0, 4, n)}
    )
    rep = frame.eval.report("binary", label="y", score="p", by="g", max_points=50)
    cap = C.PRE_THIN * 50
    for name in ("roc_curve", "pr_curve", "lorenz_curve"):
        full, thinned = rep.tables[name], rep.curve_table(name)
        assert full.height > cap >= thinned.height - 1  # the ROC may add its KS point
        assert rep.curve_length(name) == full.height
        assert thinned.row(0) == full.row(0) and thinned.row(-1) == full.row(-1)
        joined = thinned.with_row_index("k").join(full.with_row_index("src"), on=full.columns)
        assert joined.height == thinned.height and joined["src"].is_sorted()
    labels = ["0", "3"]
    by_curve = rep.curve_table("roc_curve_by", labels)
    assert set(by_curve[SEGMENT]) == set(labels)
    for label in labels:
        part = by_curve.filter(pl.col(SEGMENT) == label).drop(SEGMENT)
        full = rep.tables["roc_curve_by"].filter(pl.col("g") == int(label)).drop("g")
        assert part.height <= cap
        assert part.row(0) == full.row(0) and part.row(-1) == full.row(-1)
        assert part.join(full, on=full.columns).height == part.height
    # the KS point of the full curve is among the thinned points: the chart marks it
    roc = rep.tables["roc_curve"].filter(pl.col("threshold").is_finite())
    gap = (pl.col("tpr") - pl.col("fpr")).abs()
    best = roc.filter(gap == gap.max()).head(1)
    assert best.join(rep.curve_table("roc_curve"), on=roc.columns).height == 1
    rule = rep.charts["ks"].layer[1].data
    assert rule.row(0) == best.row(0)
    assert rep.charts["roc"].data.group_by(SEGMENT).len()["len"].max() <= 50


@pytest.mark.parametrize("tied", [True, False])
def test_thinned_state_gives_the_thinned_curve(tied: bool) -> None:
    """The charts thin the state, then finalize: exactly the points ``thin`` keeps of the
    finalized curve (and the ROC curve's KS point), per list and over exploded points."""
    from polars_eval._core.registry import REGISTRY
    from polars_eval.metrics._curve import threshold_state
    from polars_eval.report._states import ks_point, thin, thin_state

    rng = np.random.default_rng(3)
    n = 3000
    score = rng.random(n)
    frame = pl.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "p": np.round(score, 2) if tied else score,
            "w": rng.choice([0.5, 1.0, 2.0], n),
            "g": rng.integers(0, 3, n),
        }
    )
    states = frame.group_by("g").agg(threshold_state("y", "p", "w").alias("c")).sort("g")
    one = frame.select(threshold_state("y", "p", "w").alias("c"))
    for name, offset in (("roc_curve", 1), ("pr_curve", 0), ("lorenz_curve", 1)):
        spec = REGISTRY[name].spec(label="y", score="p", weight="w", pos_label=None)
        curve = lambda state, spec=spec: spec.finalize({"c": state})  # noqa: E731
        ks = name == "roc_curve"
        for points in (2, 7, 50, 5000):
            keep = ks_point() if ks else None
            want = states.select(thin(curve(pl.col("c")), points, keep).alias("x"))
            got = states.select(curve(thin_state(pl.col("c"), points, offset, ks)).alias("x"))
            assert got.equals(want), (name, points)
            want = one.select(thin(curve(pl.col("c")), points, keep).alias("x"))
            kept = (
                one.select(pl.col("c").explode())
                .select(thin_state(pl.col("c"), points, offset, ks, exploded=True))
                .select(pl.col("c").implode())
            )
            assert kept.select(curve(pl.col("c")).alias("x")).equals(want), (name, points)


def test_reading_whether_a_deferred_table_exists_does_not_compute_it() -> None:
    rep = tied_frame(300).eval.report("binary", label="y", score="p", by="seg", weight="w")
    assert "roc_curve_by" in rep.tables and "nothing" not in rep.tables
    assert callable(rep.tables._items["roc_curve_by"])  # still deferred
    assert rep.tables["roc_curve_by"].height > 0
    assert isinstance(rep.tables._items["roc_curve_by"], pl.DataFrame)


def test_cli_report_prints_the_same_table(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from polars_eval import cli

    df = tied_frame(600, seed=2)
    data = tmp_path / "scores.parquet"
    df.write_parquet(data)
    argv = ["binary", str(data), "--label", "y", "--score", "p", "--weight", "w", "--by", "seg"]
    tables, errs = [], []
    for extra in ([], ["--report", str(tmp_path / "r.html")]):
        out = tmp_path / f"out{len(extra)}.csv"
        assert cli.main([*argv, *extra, "-o", str(out)]) == 0
        tables.append(pl.read_csv(out))
        errs.append([x for x in capsys.readouterr().err.splitlines() if "warning" in x])
    assert_frame_equal(tables[0], tables[1], rel_tol=1e-12)
    # the segment without negatives is reported the same way, report or not
    assert any("auc" in line and "1 of 5 groups" in line for line in errs[0])
    assert errs[1] == errs[0]
    assert (tmp_path / "r.html").stat().st_size > 0


def _layer_marks(chart) -> list[str]:
    return [layer.mark if isinstance(layer.mark, str) else layer.mark.type for layer in chart.layer]


def test_segment_dots_draw_intervals(report: pe.Report) -> None:
    seg = report.tables["segments"]
    with_ci = seg.with_columns(
        (pl.col("auc") - 0.05).alias("auc_lower"), (pl.col("auc") + 0.05).alias("auc_upper")
    )
    tables = dict(report.tables, segments=with_ci)
    clone = object.__new__(type(report))
    clone.__dict__.update(report.__dict__, tables=tables, _charts=None, _svgs=None)
    chart, caption = C.segments_chart(clone)
    spec = chart.to_dict()
    whiskers = [layer for layer in spec["layer"] if "x2" in layer["encoding"]]
    assert [w["encoding"]["x"]["field"] for w in whiskers] == ["auc_lower"]
    assert whiskers[0]["encoding"]["x2"]["field"] == "auc_upper"
    assert "confidence interval" in caption
    assert "<svg" in C.to_svg(chart)


def seg_frame(n_segments: int, n: int, seed: int = 0) -> pl.DataFrame:
    """A binary frame with ``n_segments`` segments of different model quality."""
    rng = np.random.default_rng(seed)
    seg = rng.integers(0, n_segments, n)
    quality = rng.uniform(0.3, 1.5, n_segments)[seg]
    y = (rng.random(n) < 0.25).astype(np.int8)
    p = 1 / (1 + np.exp(-(-1.0 + quality * (2 * y - 1) + rng.normal(size=n))))
    names = np.array([f"region {i:03d} / a long segment name" for i in range(n_segments)])
    return pl.DataFrame({"y": y, "p": np.round(p, 3), "segment": names[seg]})


@pytest.fixture(scope="module")
def many() -> pe.Report:
    return seg_frame(100, 6_000).eval.report("binary", label="y", score="p", by="segment")


@pytest.fixture(scope="module")
def many_page(many: pe.Report) -> str:
    return many.html()


def test_many_segments_dots_scaled_to_the_data(many: pe.Report) -> None:
    seg = many.tables["segments"]
    chart, caption = C.segments_chart(many)
    spec = chart.to_dict()
    assert _layer_marks(chart) == ["rule", "point", "rule"]  # interval, value, all rows
    x = spec["layer"][1]["encoding"]["x"]
    low, high = x["scale"]["domain"]
    shown = seg.head(C.MAX_BARS)
    values = shown.select(pl.concat_list("auc", "auc_lower", "auc_upper")).explode("auc")
    lo, hi = values["auc"].min(), values["auc"].max()
    # the axis spans the values drawn, with a small margin, inside AUC's range [0, 1]
    assert max(0.0, lo - 0.06 * (hi - lo)) <= low <= lo and hi <= high <= min(
        1.0, hi + 0.06 * (hi - lo)
    )
    assert low > 0.2  # not from 0: a hundred AUCs of 0.5-0.9 must not look alike
    assert x["scale"]["zero"] is False
    assert f"the {C.MAX_BARS} worst of 100" in caption
    assert chart.data.height == C.MAX_BARS


def test_many_segments_table_fits(many: pe.Report, many_page: str) -> None:
    page = many_page
    section = page.split('id="pe-segments"')[1].split("</section>")[0]
    compact, full = section.split("<details>")
    rows = re.findall(r"<tr>(.*?)</tr>", compact.split("<tbody>")[1])
    assert len(rows) == 20
    seg = many.tables["segments"]
    # worst first, each key metric with its interval
    for row_html, row in zip(rows, seg.head(20).iter_rows(named=True), strict=True):
        assert row["segment"] in row_html
        assert f"{row['auc']:.4g}" in row_html
        assert f"{row['auc_lower']:.4g}–{row['auc_upper']:.4g}" in row_html
    head = re.findall(r"<th(?: [^>]*)?>(.*?)</th>", compact)
    assert head == ["segment", "rows_used", "positives", "auc", "pr_auc", "ks", "logloss", "brier"]
    assert "The 20 worst of 100 segments" in compact
    # the rest one click away: every column, the first 200 rows
    assert f"({seg.height} rows × {seg.width} columns)" in full
    assert full.count("<tr>") == seg.height + 1


def test_curve_legends_give_each_segment_its_value(report: pe.Report) -> None:
    svgs, seg = report.svgs(), report.tables["segments"]
    summary = report.tables["summary"]
    for name, metric, short in (("roc", "auc", "AUC"), ("pr", "average_precision", "AP")):
        assert f"all rows · {short} {summary[metric].item():.4g}" in svgs[name]
        for row in seg.iter_rows(named=True):
            assert f"{row['seg']} · {short} {row[metric]:.4g}" in svgs[name], (name, row)


def test_gain_starts_at_origin_and_short_labels_are_flat(report: pe.Report) -> None:
    gain = report.charts["gain"].to_dict()
    path = [layer for layer in gain["layer"] if layer["mark"]["type"] == "line"][1]
    values = gain["datasets"][path["data"]["name"]]
    table = report.tables["gain_table"]
    assert (values[0]["cum_pct_population"], values[0]["cum_pct_positives"]) == (0.0, 0.0)
    assert [v["cum_pct_positives"] for v in values[1:]] == table["cum_pct_positives"].to_list()
    lift = report.charts["lift"].to_dict()
    assert lift["layer"][0]["encoding"]["x"]["axis"]["labelAngle"] == 0
    for chart in report.charts.values():  # every chart is sized to fill its card
        spec = chart.to_dict()
        assert spec["autosize"] == {"type": "fit", "contains": "padding"}
        assert spec["width"] in (C.WIDTH, C.WIDE)


def test_notes_merge_repeated_reasons() -> None:
    from polars_eval.report.html import merge_notes

    why = "the query has no relevant item"
    cuts = (1, 2, 3, 5, 10, 20)
    names = [f"{m}@{k}" for m in ("ndcg", "dcg", "precision", "recall", "map") for k in cuts]
    note = "; ".join(f"{n} is null for 2 of 600 groups ({why})" for n in names)
    merged = merge_notes([note, "threshold table unavailable", "threshold table unavailable"])
    assert merged == [
        "30 metrics are null for 2 of 600 groups (the query has no relevant item): ndcg@1, "
        "ndcg@2, ndcg@3, ndcg@5, ndcg@10, ndcg@20, dcg@1, dcg@2 and 22 more",
        "threshold table unavailable (×2)",
    ]
    three = "; ".join(f"{n} is null for 2 of 600 groups ({why})" for n in names[:3])
    assert merge_notes([three]) == [
        "ndcg@1, ndcg@2 and ndcg@3 are null for 2 of 600 groups (the query has no relevant item)"
    ]
    # different counts are different facts
    assert merge_notes(["a is null for 1 of 3 groups (x); b is null for 2 of 3 groups (x)"]) == [
        "a is null for 1 of 3 groups (x)",
        "b is null for 2 of 3 groups (x)",
    ]
    many = "; ".join(f"m{i} is undefined on this data: one class" for i in range(20))
    assert merge_notes([many + " (reported as null)"]) == [
        "20 metrics are undefined on this data (one class), reported as null: "
        "m0, m1, m2, m3, m4, m5, m6, m7 and 12 more"
    ]


def test_descriptions_render_rst_literals() -> None:
    from polars_eval.report.html import desc_html

    assert desc_html("over ``bins`` bins, see :func:`pe.auc` & <x>") == (
        "over <code>bins</code> bins, see <code>pe.auc</code> &amp; &lt;x&gt;"
    )


# ---------------------------------------------------------------------------------------
# HTML: self-contained, offline, readable
# ---------------------------------------------------------------------------------------

EXTERNAL = re.compile(
    r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?(?:https?:)?//|@import""", re.I
)


def test_html_is_offline(page: str) -> None:
    assert "<script" not in page.lower()
    assert "<link" not in page.lower()
    assert "<iframe" not in page.lower()
    assert not EXTERNAL.search(page)


def test_html_has_every_section(report: pe.Report, page: str) -> None:
    for name in report.charts:
        figure = re.search(rf'<figure[^>]*data-chart="{name}"[^>]*>(.*?)</figure>', page, re.S)
        assert figure is not None and "<svg" in figure.group(1), name
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "duplicate ids across inline SVGs"
    assert f"{report.counts['rows']:,}" in page
    assert "skipped: null input" in page
    assert (
        page.index('id="pe-summary"')
        < page.index('id="pe-charts"')
        < page.index('id="pe-segments"')
    )


def test_repr_html_is_a_fragment(report: pe.Report) -> None:
    fragment = report._repr_html_()
    assert fragment.startswith('<div class="pe-report">')
    assert "<html" not in fragment and "<svg" in fragment


def test_to_html_writes_file(report: pe.Report, tmp_path: Path) -> None:
    path = report.to_html(tmp_path / "r.html")
    assert path.exists() and path.read_text(encoding="utf-8") == report.html()


def test_scope_svg_prefixes_references() -> None:
    svg = '<svg><clipPath id="clip1"/><g clip-path="url(#clip1)"/><use href="#clip1"/></svg>'
    out = scope_svg(svg, "pe-roc")
    assert 'id="pe-roc-clip1"' in out and "url(#pe-roc-clip1)" in out
    assert 'href="#pe-roc-clip1"' in out


def test_summary_rows_pairs_intervals_and_baselines() -> None:
    summary = pl.DataFrame(
        {"auc": [0.8], "auc_lower": [0.7], "auc_upper": [0.9], "auc_baseline": [0.5], "f1": [None]},
        schema_overrides={"f1": pl.Float64},
    )
    long = summary_rows(summary)
    assert long.columns == [
        "metric",
        "value",
        "lower",
        "upper",
        "baseline",
        "better",
        "description",
    ]
    assert long.row(0)[:6] == ("auc", 0.8, 0.7, 0.9, 0.5, "higher")
    assert long.row(1)[1] is None


def test_intervals_and_baselines(df: pl.DataFrame) -> None:
    from polars_eval._core.registry import REGISTRY
    from polars_eval.stats import run_interval

    # the closed-form intervals are on by default
    rep = df.eval.report("binary", label="y", score="p", by="seg", weight="w", baseline=True)
    explicit = df.eval.report(
        "binary", label="y", score="p", by="seg", weight="w", ci=True, baseline=True
    )
    assert_frame_equal(explicit.tables["segments"], rep.tables["segments"])
    summary, seg = rep.tables["summary"], rep.tables["segments"]
    base = df.eval.binary("y", "p", weight="w", baseline=True)
    assert_frame_equal(summary.select(base.columns), base)
    args = {"label": "y", "score": "p", "weight": "w", "pos_label": None}
    for name, method in (("auc", "hanley"), ("pr_auc", "logistic")):
        whole = run_interval(
            df, REGISTRY[name], args, by=None, validate=False, method=method, level=0.95
        )
        assert summary[f"{name}_lower"].item() == pytest.approx(whole.lower, abs=1e-12)
        assert summary[f"{name}_upper"].item() == pytest.approx(whole.upper, abs=1e-12)
        per = run_interval(
            df, REGISTRY[name], args, by="seg", validate=False, method=method, level=0.95
        )
        joined = seg.select("seg", f"{name}_lower", f"{name}_upper").join(per, on="seg")
        assert_frame_equal(
            joined.select(f"{name}_lower", f"{name}_upper"),
            joined.select(pl.col(f"{name}_lower_right"), pl.col(f"{name}_upper_right")).rename(
                lambda c: c.removesuffix("_right")
            ),
        )
    accuracy = run_interval(
        df,
        REGISTRY["accuracy"],
        {**args, "pred": None, "threshold": 0.5},
        by=None,
        validate=False,
        method="wilson",
        level=0.95,
    )
    assert summary["accuracy_lower"].item() == pytest.approx(accuracy.lower, abs=1e-12)
    assert seg.columns.index("auc_lower") == seg.columns.index("auc") + 1
    whisker = rep.charts["segments"].to_dict()["layer"][0]["encoding"]
    assert (whisker["x"]["field"], whisker["x2"]["field"]) == ("auc_lower", "auc_upper")
    page = rep.html()
    assert "<th>baseline</th>" in page and "<th>lower</th>" in page
    # ci=None leaves them out
    bare = df.eval.report("binary", label="y", score="p", by="seg", weight="w", ci=None)
    assert not [c for c in bare.tables["segments"].columns if c.endswith(("_lower", "_upper"))]
    assert "<th>lower</th>" not in bare.html().split('id="pe-summary"')[1].split("</section>")[0]
    with pytest.raises(InvalidParameterError, match="ci must be one of"):
        df.eval.report("binary", label="y", score="p", ci="astrology")


# ---------------------------------------------------------------------------------------
# Edge inputs
# ---------------------------------------------------------------------------------------


def test_one_class_gives_a_report_without_roc() -> None:
    frame = pl.DataFrame({"y": [0, 0, 0, 0], "p": [0.1, 0.5, 0.4, 0.9]})
    rep = frame.eval.report("binary", label="y", score="p")
    assert rep.tables["summary"]["auc"].item() is None
    assert "roc" not in rep.charts and "pr" not in rep.charts
    assert any("auc is undefined" in n for n in rep.notes)
    # one merged note for the metrics undefined for the same reason
    merged = r"<li>auc, gini, pr_auc, [^<]* are undefined on this data \([^<]*\), reported as null"
    assert len(re.findall(merged, rep.html())) == 1


def test_undefined_segment_is_counted() -> None:
    frame = pl.DataFrame(
        {"y": [0, 1, 0, 1, 0, 0], "p": [0.2, 0.8, 0.3, 0.6, 0.1, 0.4], "g": [1, 1, 1, 1, 2, 2]}
    )
    rep = frame.eval.report("binary", label="y", score="p", by="g")
    seg = rep.tables["segments"]
    assert seg["g"].to_list() == [1, 2]  # the undefined segment last
    assert seg["auc"][1] is None
    from polars_eval.report.html import _cards

    assert "segments with undefined auc" in _cards(rep)


def test_empty_frame_report_is_an_error() -> None:
    """BAD_INPUTS row 49: a task table of an empty input is an error without ``by``, so the
    report of an empty frame says there is nothing to evaluate (no all-null page)."""
    frame = pl.DataFrame({"y": [], "p": []}, schema={"y": pl.Int64, "p": pl.Float64})
    with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate"):
        frame.eval.report("binary", label="y", score="p")


def test_several_by_columns_and_null_keys() -> None:
    frame = pl.DataFrame(
        {
            "y": [0, 1, 1, 0, 1, 0, 1, 0],
            "p": [0.1, 0.8, 0.4, 0.5, 0.9, 0.3, 0.2, 0.6],
            "a": ["x", "x", "y", "y", "x", None, None, "x"],
            "b": [1, 1, 2, 2, 1, 2, 2, 1],
        }
    )
    rep = frame.eval.report("binary", label="y", score="p", by=["a", "b"])
    seg = rep.tables["segments"]
    # worst AUC first (0, 0, 1); the tie in key order, null keys last
    assert seg.select("a", "b").rows() == [("y", 2), (None, 2), ("x", 1)]
    assert seg["auc"].to_list() == [0.0, 0.0, 1.0]
    assert seg["rows"].to_list() == [2, 2, 4]
    labels = set(rep.charts["roc"].data[SEGMENT])
    assert labels == {ALL, "x / 1", "null / 2", "y / 2"}


def test_not_probabilities() -> None:
    frame = pl.DataFrame({"y": [0, 1, 0, 1, 1], "s": [-2.0, 3.0, 0.5, 1.5, -0.5]})
    rep = frame.eval.report("binary", label="y", score="s", probability=False, threshold=0.0)
    assert "calibration_table" not in rep.tables and "calibration" not in rep.charts
    assert "calibration" not in rep.tables and 'id="pe-calibration"' not in rep.html()
    assert "logloss" not in rep.tables["summary"].columns
    assert rep.tables["summary"]["auc"].item() == pytest.approx(5 / 6)
    assert "ks" in rep.charts


def test_string_labels_with_pos_label() -> None:
    frame = pl.DataFrame({"y": ["bad", "good", "bad", "good"], "p": [0.9, 0.2, 0.6, 0.4]})
    rep = frame.eval.report("binary", label="y", score="p", pos_label="bad")
    assert rep.tables["summary"]["auc"].item() == 1.0
    assert rep.counts["positives"] == 2.0


def test_validation_errors_name_the_column() -> None:
    frame = pl.DataFrame({"y": [0, 2, 1], "p": [0.1, 0.2, 0.3], "g": ["a", "a", "b"]})
    with pytest.raises(DataValidationError, match='"y"'):
        frame.eval.report("binary", label="y", score="p")
    with pytest.raises(DataValidationError, match='"nope"'):
        frame.eval.report("binary", label="y", score="nope")
    with pytest.raises(DataValidationError, match='"h"'):
        frame.eval.report("binary", label="y", score="p", by="h", validate=False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"task": "astrology", "label": "y", "score": "p"}, "report task must be one of"),
        ({"label": "y"}, "missing: score"),
        ({"label": "y", "score": "p", "colour": "red"}, "'colour'"),
        ({"label": "y", "score": "p", "max_points": 1}, "max_points"),
        ({"label": "y", "score": "p", "max_segments": 0}, "max_segments"),
    ],
)
def test_bad_options(kwargs: dict, match: str) -> None:
    frame = pl.DataFrame({"y": [0, 1], "p": [0.2, 0.7]})
    with pytest.raises(InvalidParameterError, match=match):
        frame.eval.report(**kwargs)


@pytest.mark.parametrize("missing", ["altair", "vl_convert"])
def test_report_without_the_plot_extra(
    missing: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    frame = pl.DataFrame(
        {"y": [0, 1, 1, 0, 1, 0], "p": [0.2, 0.7, 0.4, 0.5, 0.9, 0.1], "g": list("aabbab")}
    )
    # the package is not importable: Python raises ModuleNotFoundError on import
    monkeypatch.setitem(sys.modules, missing, None)
    rep = frame.eval.report("binary", label="y", score="p", by="g")
    assert rep.tables["summary"]["auc"].item() == pytest.approx(8 / 9)
    if missing == "altair":
        with pytest.raises(ModuleNotFoundError, match=r"pip install 'polars-eval\[plot\]'"):
            _ = rep.charts
    with pytest.raises(ModuleNotFoundError, match="plot"):
        rep.svgs()
    # the page still comes out: every table, and one line saying how to add the charts
    path = rep.to_html(tmp_path / "r.html")
    page = path.read_text(encoding="utf-8")
    assert "<svg" not in page
    assert page.count("pip install &#x27;polars-eval[plot]&#x27;") == 1
    for section in ("pe-counts", "pe-summary", "pe-segments", "pe-tables"):
        assert f'id="{section}"' in page, section
    assert "Gain and lift table" in page
    fragment = rep._repr_html_()
    assert "polars-eval[plot]" in fragment and 'id="pe-summary"' in fragment


def test_cli_report_without_the_plot_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from polars_eval import cli

    data = tmp_path / "scores.parquet"
    binary_frame(80).write_parquet(data)
    monkeypatch.setitem(sys.modules, "altair", None)
    target = tmp_path / "out.html"
    argv = ["binary", str(data), "--label", "y", "--score", "p", "--by", "seg"]
    code = cli.main([*argv, "--report", str(target)])
    _, err = capsys.readouterr()
    assert code == 0, err
    page = target.read_text(encoding="utf-8")
    assert 'id="pe-segments"' in page and "polars-eval[plot]" in page


# ---------------------------------------------------------------------------------------
# Regression (when that family is installed)
# ---------------------------------------------------------------------------------------


def test_regression_report() -> None:
    rng = np.random.default_rng(1)
    n = 800
    x = rng.normal(size=n)
    frame = pl.DataFrame(
        {"y": 20 + 2 * x + rng.normal(size=n), "p": 20 + 2 * x, "g": rng.choice(["a", "b"], n)}
    )
    rep = frame.eval.report("regression", actual="y", pred="p", by="g", max_points=100)
    t = rep.tables
    summary = frame.eval.regression("y", "p")
    assert_frame_equal(t["summary"].select(summary.columns), summary)
    # on by default: the chi-square interval of RMSE, as polars_eval.stats gives it
    from polars_eval._core.registry import REGISTRY
    from polars_eval.stats import run_interval

    rmse = run_interval(
        frame,
        REGISTRY["rmse"],
        {"actual": "y", "pred": "p", "weight": None},
        by=None,
        validate=False,
        method=REGISTRY["rmse"].intervals[0],
        level=0.95,
    )
    assert t["summary"]["rmse_lower"].item() == pytest.approx(rmse.lower, rel=1e-12)
    assert_frame_equal(t["residual_qq"], frame.eval.residual_qq("y", "p"))
    assert_frame_equal(
        t["conditional_pred"], frame.eval.conditional_table("y", "p", of="pred", bins=10)
    )
    assert t["segments"]["rmse"].is_sorted(descending=True)
    charts = rep.charts
    assert list(charts) == [
        "residual_hist",
        "residual_qq",
        "conditional_actual",
        "conditional_pred",
        "segments",
    ]
    qq = charts["residual_qq"].data
    assert qq.height == 100
    assert qq.join(t["residual_qq"], on=qq.columns).height == 100
    # QQ: both axes the same interval, symmetric around 0, every point inside
    enc = charts["residual_qq"].to_dict()["layer"][1]["encoding"]
    assert enc["x"]["scale"]["domain"] == enc["y"]["scale"]["domain"]
    low, high = enc["x"]["scale"]["domain"]
    assert (
        low == -high
        and high
        >= t["residual_qq"]
        .select(pl.max_horizontal(pl.col("theoretical", "sample").abs().max()))
        .item()
    )
    # the histogram counts every row (not the 100 drawn QQ points), by prediction − actual
    hist = charts["residual_hist"].data
    error = (frame["p"] - frame["y"]).to_numpy()
    assert hist["rows"].sum() == n
    for start, end, rows in hist.iter_rows():
        assert rows == int(((error >= start) & (error < end)).sum()), (start, end)
    step = hist["end"][0] - hist["start"][0]
    middle = ((hist["start"] + hist["end"]) / 2 * hist["rows"]).sum() / n
    assert abs(middle - t["summary"]["bias"].item()) <= step / 2  # the sign of bias
    assert_frame_equal(charts["conditional_actual"].data, t["conditional_actual"])
    # the generic names work too
    same = frame.eval.report("regression", label="y", score="p")
    assert_frame_equal(same.tables["summary"], t["summary"])
    assert all(svg.startswith("<svg") for svg in rep.svgs().values())


def test_multiclass_report() -> None:
    rng = np.random.default_rng(5)
    n = 300
    classes = ["bird", "cat", "dog"]
    y = rng.choice(classes, n)
    pred = np.where(rng.random(n) < 0.7, y, rng.choice(classes, n))
    proba = rng.dirichlet([1.0, 1.0, 1.0], n)
    frame = pl.DataFrame(
        {"y": y, "p": pred, "g": rng.integers(0, 3, n)}
        | {f"p_{c}": proba[:, i] for i, c in enumerate(classes)}
    )
    prob_cols = [f"p_{c}" for c in classes]
    both = frame.eval.report("multiclass", label="y", pred="p", proba=prob_cols, classes=classes)
    assert_frame_equal(
        both.tables["summary"],
        frame.eval.multiclass("y", pred="p", proba=prob_cols, classes=classes),
    )
    assert "multiclass_logloss" in both.tables["summary"].columns
    rep = frame.eval.report("multiclass", label="y", pred="p", by="g")
    t = rep.tables
    ev = frame.eval
    assert_frame_equal(t["summary"], ev.multiclass("y", pred="p", classes=classes))
    assert_frame_equal(
        t["confusion_matrix"], ev.multiclass_confusion_matrix("y", "p", classes=classes)
    )
    f1 = ev.multiclass_f1("y", pred="p", average=None, classes=classes)
    assert t["per_class"]["f1"].to_list() == f1["multiclass_f1"].to_list()
    assert t["per_class"]["class"].to_list() == classes
    assert t["segments"]["multiclass_accuracy"].is_sorted()
    assert list(rep.charts) == ["confusion", "per_class", "segments"]
    assert_frame_equal(rep.charts["confusion"].data, t["confusion_matrix"])
    assert_frame_equal(
        rep.charts["per_class"].data, t["per_class"].with_columns(pl.col("class").cast(pl.String))
    )
    # score= is taken as the prediction; a LazyFrame gives the same tables
    lazy = frame.lazy().eval.report("multiclass", label="y", score="p")
    assert_frame_equal(lazy.tables["summary"], t["summary"])
    page = rep.html()
    assert not EXTERNAL.search(page) and page.count("<svg") == 3
    assert "↑ higher" in page.split("multiclass_f1_macro")[1][:200]


def test_ranking_report() -> None:
    rng = np.random.default_rng(2)
    nq, m = 40, 8
    q = np.repeat(np.arange(nq), m)
    rel = rng.integers(0, 3, nq * m) * (rng.random(nq * m) < 0.5)
    frame = pl.DataFrame({"q": q, "rel": rel, "s": rel + rng.normal(0, 1.5, nq * m), "g": q % 2})
    rep = frame.eval.report("ranking", relevance="rel", score="s", query="q", by="g", k=[1, 5, 10])
    t = rep.tables
    assert_frame_equal(t["summary"], frame.eval.ranking("rel", "s", query="q", k=[1, 5, 10]))
    assert rep.primary == "ndcg@10"
    # the long table is the summary's <metric>@<k> columns, reshaped
    row = t["summary"].row(0, named=True)
    for metric, k, value in t["at_k"].iter_rows():
        assert value == row[f"{metric}@{k}"]
    assert t["segments"]["ndcg@10"].is_sorted()
    charts = rep.charts
    assert list(charts) == ["at_k", "per_query", "segments"]
    at_k = charts["at_k"].data
    assert set(at_k["metric"]) <= set(C.AT_K_METRICS)
    assert_frame_equal(at_k, t["at_k"].filter(pl.col("metric").is_in(C.AT_K_METRICS)))
    assert_frame_equal(charts["per_query"].data, t["per_query"])
    page = rep.html()
    assert not EXTERNAL.search(page) and "<script" not in page
    assert page.count("<svg") == len(charts)


def test_forecast_report() -> None:
    rng = np.random.default_rng(4)
    rows = []
    for sid in range(8):
        for cutoff in range(3):
            for h in range(1, 5):
                t_ = cutoff + h
                y = 10.0 + sid + np.sin(t_)
                f = y + rng.normal(0, 0.3 * h * (1 + sid % 3))
                rows.append((f"s{sid}", cutoff, t_, y, f, f - 0.5 * h, f + 0.5 * h, sid % 2))
    schema = ["id", "cutoff", "t", "y", "f", "lo", "hi", "grp"]
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    opts = {"series": "id", "time": "t", "cutoff": "cutoff"}
    rep = frame.eval.report("forecast", actual="y", forecast="f", by="grp", **opts)
    t = rep.tables
    assert_frame_equal(t["summary"], frame.eval.forecast("y", "f", **opts))
    assert_frame_equal(t["by_lead"], frame.eval.forecast("y", "f", by="lead", **opts))
    assert t["by_lead"]["lead"].to_list() == [1, 2, 3, 4]
    assert t["per_series"]["mae"].is_sorted(descending=True)
    assert list(rep.charts) == ["series", "lead", "segments"]
    assert_frame_equal(rep.charts["lead"].data, t["by_lead"])
    # the sample: the 3 series of worst and the 3 of best MAE (brute force), all their rows
    mae = sorted(
        (float(np.mean(np.abs(part["y"].to_numpy() - part["f"].to_numpy()))), sid)
        for (sid,), part in frame.group_by("id")
    )
    chosen = [sid for _, sid in mae[-3:][::-1]] + [sid for _, sid in mae[:3][::-1]]
    sample = t["series_sample"]
    assert sample["id"].unique(maintain_order=True).to_list() == chosen
    expected = frame.filter(pl.col("id").is_in(chosen)).select(
        "id", pl.col("t").alias("time"), "cutoff", pl.col("y").alias("actual"),
        pl.col("f").alias("forecast"),
    )  # fmt: skip
    assert_frame_equal(sample.drop("part"), expected, check_row_order=False)
    page = rep.html()
    assert not EXTERNAL.search(page) and page.count("<svg") == 3
    assert page.count("<code>&lt;metric&gt;_pooled</code> is the metric over all rows") == 2
    assert 'class="pe-chart pe-wide" id="pe-chart-series"' in page
    with pytest.raises(InvalidParameterError, match="series="):
        frame.eval.report("forecast", actual="y", forecast="f", time="t")


def test_forecast_report_intervals_and_leads() -> None:
    rows = []
    for sid in range(3):
        for cutoff in range(2):
            for h in range(1, 4):
                y = 10.0 + sid + h
                # inside the interval [f - 1, f + 1] at lead 1 only
                f = y + (0.5 if h == 1 else 2.0)
                rows.append((f"s{sid}", cutoff, cutoff + h, y, f, f - 1.0, f + 1.0))
    frame = pl.DataFrame(rows, schema=["id", "cutoff", "t", "y", "f", "lo", "hi"], orient="row")
    opts = {"series": "id", "time": "t", "cutoff": "cutoff", "interval": ("lo", "hi")}
    rep = frame.eval.report("forecast", actual="y", forecast="f", **opts)
    assert list(rep.charts) == ["series", "lead", "coverage"]
    cover = rep.charts["coverage"].to_dict()
    values = cover["datasets"][cover["layer"][0]["data"]["name"]]
    assert [(v["lead"], v["coverage"]) for v in values] == [(1, 1.0), (2, 0.0), (3, 0.0)]
    assert rep.tables["summary"]["coverage"].item() == pytest.approx(1 / 3)
    sample = rep.tables["series_sample"]
    assert_frame_equal(
        sample.select("lower", "upper"),
        sample.select(
            (pl.col("forecast") - 1).alias("lower"), (pl.col("forecast") + 1).alias("upper")
        ),
    )
    assert "band: the forecast interval" in rep.captions["series"]
    # by="lead": the lead the metric layer adds with cutoff=
    by_lead = frame.eval.report("forecast", actual="y", forecast="f", by="lead", **opts)
    seg = by_lead.tables["segments"]
    assert seg["lead"].to_list() == [2, 3, 1] or seg["lead"].to_list() == [3, 2, 1]
    assert seg.filter(pl.col("lead") == 1)["mae"].item() == pytest.approx(0.5)
    assert seg.filter(pl.col("lead") == 2)["coverage"].item() == 0.0
    assert "lead" not in frame.columns


# ---------------------------------------------------------------------------------------
# End to end: the page in headless Chromium
# ---------------------------------------------------------------------------------------


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _open(browser: str, html: Path, out: Path) -> tuple[str, list[str], list[str]]:
    """DOM after load, console messages, and the URLs the page itself requested."""
    netlog = out / "net.json"
    shot = out / "report.png"
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
        "--hide-scrollbars",
        # nothing may leave the machine: every host name fails to resolve
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={out / 'profile'}",
        f"--log-net-log={netlog}",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,2400",
        f"--screenshot={shot}",
        "--dump-dom",
        html.resolve().as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    log = json.loads(netlog.read_text())
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    requests = [
        e["params"]["url"]
        for e in log["events"]
        if names.get(e["type"]) == "URL_REQUEST_START_JOB"
        and "file://" in str(e.get("params", {}).get("network_isolation_key", ""))
        and not e["params"]["url"].startswith(("file:", "data:"))
    ]
    return done.stdout, console, requests


def test_report_in_headless_chromium(
    report: pe.Report, page: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip(
            "chromium is not installed (apt-get install chromium): the end-to-end browser "
            "test of the HTML report did not run"
        )
    out = tmp_path_factory.mktemp("chromium")
    html = out / "report.html"
    html.write_text(page, encoding="utf-8")
    # a control page proves the request and console checks can fail
    control = out / "control.html"
    control.write_text(
        '<img src="http://example.invalid/x.png"><script>console.error("boom")</script>'
    )
    _, console, requests = _open(browser, control, out / "c")
    assert requests == ["http://example.invalid/x.png"]
    assert any("boom" in line for line in console)

    dom, console, requests = _open(browser, html, out)
    assert requests == [], f"the report requested {requests}"
    assert console == [], console
    for name in report.charts:
        figure = re.search(rf'<figure[^>]*data-chart="{name}"[^>]*>(.*?)</figure>', dom, re.S)
        assert figure is not None, f"chart {name} missing from the rendered page"
        assert "<svg" in figure.group(1) and "<path" in figure.group(1), name
    shot = out / "report.png"
    assert shot.exists() and shot.stat().st_size > 10_000
    print(f"screenshot of the report: {shot}")


# the measurements a page makes of itself in the browser (run at the end of <body>, with
# every <details> opened): its width, each table's box and each chart's drawn marks
MEASURE = """<script>
for (const d of document.querySelectorAll("details")) d.open = true;
const out = {page: document.documentElement.scrollWidth, tables: [], charts: []};
for (const t of document.querySelectorAll("table")) {
  const box = t.parentElement, r = box.getBoundingClientRect();
  out.tables.push({section: (t.closest("section") || {}).id || "", scroll:
    box.classList.contains("pe-scroll"), table: t.getBoundingClientRect().width,
    box: r.width, left: r.left, right: r.right});
}
for (const f of document.querySelectorAll("figure[data-chart]")) {
  const svg = f.querySelector("svg");
  let drawn = 0;
  if (svg) for (const m of svg.querySelectorAll(
      ".role-mark path, .role-mark rect, .role-mark circle, .role-mark line, .role-mark text")) {
    const b = m.getBBox();
    if (b.width > 0 || b.height > 0) drawn++;
  }
  const inner = f.clientWidth - parseFloat(getComputedStyle(f).paddingLeft)
    - parseFloat(getComputedStyle(f).paddingRight);
  out.charts.push({name: f.dataset.chart, marks: drawn, inner: inner,
    svg: svg ? svg.getBoundingClientRect().width : 0});
}
const pre = document.createElement("pre");
pre.id = "pe-measure";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def _layout_pages() -> dict[str, pe.Report]:
    """One small report of each task but binary."""
    from polars_eval import _demo

    pages = {}
    pages["regression"] = _demo.property_valuations(600).eval.report(
        "regression", actual="sale_price", pred="predicted_price", by="region"
    )
    pages["multiclass"] = _demo.rating_grades(600).eval.report(
        "multiclass", label="grade", pred="predicted_grade", by="sector",
        proba=[f"p_{g}" for g in _demo.GRADES], classes=list(_demo.GRADES),
    )  # fmt: skip
    history, forecasts = _demo.branch_demand(7)
    pages["forecast"] = forecasts.eval.report(
        "forecast", actual="applications", forecast="forecast", series="branch",
        time="month", cutoff="cutoff", train=history, interval=("lo80", "hi80"),
        by="region",
    )  # fmt: skip
    pages["ranking"] = _demo.search_log(60, 10).eval.report(
        "ranking", relevance="relevance", score="score", query="query_id", by="market"
    )
    return pages


def test_layout_in_headless_chromium(many: pe.Report, many_page: str, tmp_path: Path) -> None:
    """At 1280 pixels no table widens the page and every chart fills its card with marks:
    a binary report of 100 long-named segments and a report of each other task."""
    browser = _chromium()
    if browser is None:
        pytest.skip(
            "chromium is not installed (apt-get install chromium): the browser layout test "
            "of the HTML reports did not run"
        )

    def measure(name: str, page: str) -> dict:
        html = tmp_path / f"{name}.html"
        html.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
        dom, console, _ = _open(browser, html, tmp_path / name)
        assert console == [], (name, console)
        found = re.search(r'<pre id="pe-measure">(.*?)</pre>', dom, re.S)
        assert found is not None, f"{name}: the page did not measure itself"
        return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))

    # a control proves the width check can fail: the full segment table (50 columns)
    # outside its scroll box widens the page
    control = measure("control", many_page.replace('class="pe-scroll"', 'class="pe-x"'))
    assert control["page"] > 1280
    pages = {"binary-100": (many, many_page)}
    pages.update((name, (rep, rep.html())) for name, rep in _layout_pages().items())
    for name, (rep, page) in pages.items():
        m = measure(name, page)
        assert m["page"] <= 1280, f"{name}: the page is {m['page']} pixels wide"
        assert len(m["tables"]) >= 3
        for t in m["tables"]:
            assert t["left"] >= 0 and t["right"] <= 1280, (name, t)
            if not t["scroll"]:  # outside a scroll box a table fits its box, all columns seen
                assert t["table"] <= t["box"] + 1, (name, t)
        assert [c["name"] for c in m["charts"]] == list(rep.charts), name
        for c in m["charts"]:
            assert c["marks"] > 0, f"{name}: chart {c['name']} has no drawn mark"
            assert abs(c["svg"] - c["inner"]) <= 2, (name, c)  # it fills its card
