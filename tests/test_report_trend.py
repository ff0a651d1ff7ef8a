"""The trend section of a report (SPEC §13 "Report"): ``df.eval.report(..., time=, every=)``.

Oracles: the windowed task method itself (the section's table must be exactly what one
call returns), scikit-learn on each window's rows, the Hanley–McNeil and chi-square
formulas written out with numpy/scipy over each window's rows, ``df.eval.psi`` and the
PSI definition in numpy (``tests/test_psi.py``), the Vega-Lite schema for the chart, and
headless Chromium for the page.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats as sps
from sklearn import metrics as skm

import polars_eval as pe
from polars_eval import cli
from polars_eval.report import trend as T
from polars_eval.report.tables import SEGMENT
from tests.test_psi import numpy_psi
from tests.test_windows import ROW, dynamic_windows, frame

pytest.importorskip("altair")
pytest.importorskip("vl_convert")

OPTS = {"time": "ts", "every": "1d", "period": "3d"}
BINARY_KEYS = ["auc", "pr_auc", "ks", "logloss", "brier"]
IGNORE_UNDEFINED = pytest.mark.filterwarnings(
    "ignore::polars_eval.exceptions.UndefinedMetricWarning"
)


def data(n: int = 900, seed: int = 40) -> pl.DataFrame:
    """Rows over 8 days, three segments of unequal size ("c" the largest)."""
    df = frame(n, seed=seed, days=8)
    rng = np.random.default_rng(seed)
    return df.with_columns(region=pl.Series(rng.choice(["a", "b", "c"], n, p=[0.2, 0.3, 0.5])))


@pytest.fixture(scope="module")
def df() -> pl.DataFrame:
    return data()


@pytest.fixture(scope="module")
def reference(df: pl.DataFrame) -> pl.DataFrame:
    rng = np.random.default_rng(1)
    return pl.DataFrame({"p": np.round(rng.random(400) * 0.8, 2)})


@pytest.fixture(scope="module")
def report(df: pl.DataFrame, reference: pl.DataFrame) -> pe.Report:
    return df.eval.report(
        "binary", label="y", score="p", weight="w", by="region", reference=reference, **OPTS
    )


def _windows_of(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    return dynamic_windows(df, by, every=OPTS["every"], period=OPTS["period"])


@IGNORE_UNDEFINED
def test_trend_table_is_one_call_of_the_windowed_task_method(
    df: pl.DataFrame, report: pe.Report
) -> None:
    expected = df.eval.binary(
        "y", "p", weight="w", metrics=BINARY_KEYS, grouping_sets=[[], ["region"]], **OPTS
    )
    table = report.tables["trend"]
    assert_frame_equal(table.select(expected.columns), expected)
    assert table.columns == ["region", "grouping", "ts", "window_end", "auc", "auc_lower"] + [
        "auc_upper", "pr_auc", "pr_auc_lower", "pr_auc_upper", "ks", "logloss", "brier",
    ]  # fmt: skip
    assert table.columns.index("auc_lower") == table.columns.index("auc") + 1
    # each grouping equals by= on it (SPEC §13), so all rows are the plain windows
    whole = df.eval.binary("y", "p", weight="w", metrics=BINARY_KEYS, **OPTS)
    assert_frame_equal(
        table.filter(pl.col("grouping") == "").select(whole.columns), whole, check_exact=False
    )
    assert report.options["every"] == "1d" and report.options["period"] == "3d"


def test_values_per_window_equal_scikit_learn(df: pl.DataFrame, report: pe.Report) -> None:
    table = report.tables["trend"].filter(pl.col("grouping") == "region")
    windows = _windows_of(df, ["region"])
    assert (
        table.select("region", "ts", "window_end").rows()
        == windows.select("region", "ts", "_upper_boundary").rows()
    )
    for i in (0, 4, table.height - 1):
        got = table.row(i, named=True)
        part = df[windows[ROW][i].to_list()].filter(pl.col("w") > 0)
        y, p, w = (part[c].to_numpy() for c in ("y", "p", "w"))
        assert got["auc"] == pytest.approx(skm.roc_auc_score(y, p, sample_weight=w), abs=1e-12)
        assert got["logloss"] == pytest.approx(skm.log_loss(y, p, sample_weight=w), abs=1e-12)
        assert got["brier"] == pytest.approx(skm.brier_score_loss(y, p, sample_weight=w), abs=1e-12)
        fpr, tpr, _ = skm.roc_curve(y, p, sample_weight=w)
        assert got["ks"] == pytest.approx(np.max(tpr - fpr), abs=1e-12)


def test_auc_bands_are_hanley_mcneil_of_each_window(df: pl.DataFrame, report: pe.Report) -> None:
    """Hanley & McNeil (1982) written out over each window's rows: the counts merged from
    the steps give the same bounds as the window's rows on their own."""
    table = report.tables["trend"].filter(pl.col("grouping") == "")
    windows = _windows_of(df, [])
    z = sps.norm.ppf(0.975)
    for i in (0, 3, table.height - 1):
        got = table.row(i, named=True)
        part = df[windows[ROW][i].to_list()]
        y, p, w = (part[c].to_numpy() for c in ("y", "p", "w"))
        a = skm.roc_auc_score(y, p, sample_weight=w)
        n1, n2 = w[y == 1].sum(), w[y == 0].sum()
        q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
        se = np.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n2 - 1) * (q2 - a * a)) / (n1 * n2))
        assert got["auc_lower"] == pytest.approx(max(0.0, a - z * se), abs=1e-12)
        assert got["auc_upper"] == pytest.approx(min(1.0, a + z * se), abs=1e-12)
        logit = part.select(pe.pr_auc_logistic("y", "p", weight="w").struct.unnest()).row(0)
        assert (got["pr_auc"], got["pr_auc_lower"], got["pr_auc_upper"]) == pytest.approx(
            logit, abs=1e-12
        )


@IGNORE_UNDEFINED
def test_regression_trend_with_chi_square_bands(df: pl.DataFrame) -> None:
    rep = df.eval.report("regression", actual="a", pred="f", by="seg", level=0.9, **OPTS)
    table = rep.tables["trend"]
    expected = df.eval.regression(
        "a", "f", metrics=["rmse", "mae", "bias", "r2", "mape"],
        grouping_sets=[[], ["seg"]], **OPTS,
    )  # fmt: skip
    values = [c for c in table.columns if not c.endswith(("_lower", "_upper"))]
    assert values == ["seg", "grouping", "ts", "window_end", "rmse", "mae", "bias", "r2", "mape"]
    assert_frame_equal(table.select(values), expected.select(values))
    assert [c for c in table.columns if c.endswith("_upper")] == ["rmse_upper"]
    windows = _windows_of(df, ["seg"])
    rows = table.filter(pl.col("grouping") == "seg")
    for i in (0, rows.height - 1):
        got = rows.row(i, named=True)
        part = df[windows[ROW][i].to_list()]
        a, f = part["a"].to_numpy(), part["f"].to_numpy()
        rmse = np.sqrt(skm.mean_squared_error(a, f))
        assert got["rmse"] == pytest.approx(rmse, abs=1e-12)
        assert got["r2"] == pytest.approx(skm.r2_score(a, f), abs=1e-12)
        n = len(a)  # the NIST interval for a standard deviation, n degrees of freedom
        lower = rmse * np.sqrt(n / sps.chi2.ppf(0.95, n))
        upper = rmse * np.sqrt(n / sps.chi2.ppf(0.05, n))
        assert (got["rmse_lower"], got["rmse_upper"]) == pytest.approx((lower, upper), rel=1e-12)


@IGNORE_UNDEFINED
def test_without_intervals_no_bands(df: pl.DataFrame) -> None:
    rep = df.eval.report("binary", label="y", score="p", ci=None, **OPTS)
    table = rep.tables["trend"]
    assert table.columns == ["ts", "window_end", *BINARY_KEYS]
    assert "grouping" not in table.columns  # without by: the windows of all rows
    spec = rep.charts["trend"].to_dict()
    assert all(len(panel["layer"]) == 1 for panel in spec["concat"])  # a line, no band
    assert "intervals" not in rep.captions["trend"]


def test_psi_per_window_is_df_eval_psi(
    df: pl.DataFrame, reference: pl.DataFrame, report: pe.Report
) -> None:
    psi = report.tables["psi"]
    assert_frame_equal(psi, df.eval.psi("p", reference=reference, weight="w", **OPTS))
    windows = _windows_of(df, [])
    part = df[windows[ROW][2].to_list()]
    expected = numpy_psi(part["p"].to_numpy(), reference["p"].to_numpy(), 10, part["w"].to_numpy())
    assert psi["psi"][2] == pytest.approx(expected, abs=1e-12)


def test_chart_lines_largest_segments_first_with_bands(report: pe.Report) -> None:
    chart = report.charts["trend"]
    chart.to_dict(validate=True)
    spec = chart.to_dict()
    panels = spec["concat"]
    assert [p["title"] for p in panels] == [*BINARY_KEYS, "PSI of all rows against the reference"]
    auc = panels[0]["layer"]
    assert auc[0]["mark"]["type"] == "area"
    assert auc[0]["encoding"]["y"]["field"] == "auc_lower"
    assert auc[0]["encoding"]["y2"]["field"] == "auc_upper"
    assert auc[1]["mark"]["type"] == "line" and auc[1]["encoding"]["y"]["field"] == "auc"
    sizes = report.tables["segments"].sort("rows_used", descending=True)["region"].to_list()
    assert auc[1]["encoding"]["color"]["scale"]["domain"] == ["all rows", *sizes]
    assert sizes[0] == "c"
    svg = report.svgs()["trend"]
    assert svg.startswith("<svg") and "<path" in svg
    assert "largest of 3 segments" in report.captions["trend"]


@IGNORE_UNDEFINED
def test_max_segments_caps_the_lines(df: pl.DataFrame) -> None:
    rep = df.eval.report("binary", label="y", score="p", by="region", max_segments=1, **OPTS)
    assert T.shown_segments(rep) == ["c"]  # the largest
    data = T._labelled(rep, rep.tables["trend"], T.shown_segments(rep))
    assert data[SEGMENT].unique(maintain_order=True).to_list() == ["all rows", "c"]
    assert rep.tables["trend"]["region"].drop_nulls().n_unique() == 3  # the table keeps all


def test_page_has_the_trend_section(report: pe.Report) -> None:
    page = report.html()
    found = re.search(r'<section id="pe-trend">(.*?)</section>', page, re.S)
    text = found.group(1) if found else ""
    assert "Windows of 3d every 1d over ts" in text
    # the latest window of each line (all rows and 3 segments), then the two full tables
    latest = text.split("<details>")[0]
    assert latest.count("<tr>") == 1 + 4
    assert "Every window" in text and "PSI per window" in text
    assert 'data-chart="trend"' in page
    assert page.index('id="pe-segments"') < page.index('id="pe-trend"')


def test_lazy_input_gives_the_same_tables(
    df: pl.DataFrame, reference: pl.DataFrame, report: pe.Report
) -> None:
    lazy = df.lazy().eval.report(
        "binary",
        label="y",
        score="p",
        weight="w",
        by="region",
        reference=reference.lazy(),
        **OPTS,
    )
    assert_frame_equal(lazy.tables["trend"], report.tables["trend"])
    assert_frame_equal(lazy.tables["psi"], report.tables["psi"])


@IGNORE_UNDEFINED
def test_rows_of_null_time_are_ignored(df: pl.DataFrame) -> None:
    holed = df.with_columns(
        pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise(pl.col("ts")).alias("ts")
    )
    rep = holed.eval.report("binary", label="y", score="p", ci=None, **OPTS)
    clean = holed.drop_nulls("ts").eval.binary("y", "p", metrics=BINARY_KEYS, **OPTS)
    assert_frame_equal(rep.tables["trend"], clean)


@IGNORE_UNDEFINED
@pytest.mark.parametrize("task", ["multiclass", "ranking", "forecast"])
def test_other_tasks_have_a_trend(task: str) -> None:
    """Each task's key metrics per window: its own windowed table (no closed-form bands)."""
    from polars_eval import _demo

    if task == "multiclass":
        d = _demo.rating_grades(400).with_columns((pl.int_range(pl.len()) % 6).alias("t"))
        proba = [f"p_{g}" for g in _demo.GRADES]
        rep = d.eval.report(
            "multiclass", label="grade", pred="predicted_grade", proba=proba, by="sector",
            time="t", every=2,
        )  # fmt: skip
        classes = rep.tables["per_class"]["class"].to_list()
        expected = d.eval.multiclass(
            "grade", pred="predicted_grade", proba=proba, classes=classes, time="t", every=2,
            grouping_sets=[[], ["sector"]],
        )  # fmt: skip
    elif task == "ranking":
        d = _demo.search_log(60, 10)
        d = d.with_columns((pl.col("query_id").rank("dense") % 5).cast(pl.Int64).alias("day"))
        rep = d.eval.report(
            "ranking", relevance="relevance", score="score", query="query_id", by="market",
            time="day", every=1, period=2,
        )  # fmt: skip
        expected = d.eval.ranking(
            "relevance", "score", query="query_id", k=(1, 2, 3, 5, 10, 20), time="day",
            every=1, period=2, grouping_sets=[[], ["market"]],
        )  # fmt: skip
    else:
        history, d = _demo.branch_demand(4)
        opts = {"series": "branch", "time": "month", "cutoff": "cutoff", "train": history}
        rep = d.eval.report(
            "forecast", actual="applications", forecast="forecast", by="region", every="1mo",
            period="2mo", season_length=12, **opts,
        )  # fmt: skip
        expected = d.eval.forecast(
            "applications", "forecast", every="1mo", period="2mo", season_length=12,
            grouping_sets=[[], ["region"]], **opts,
        )  # fmt: skip
    table = rep.tables["trend"]
    names = T.key_metrics_of(table)
    assert names and set(names) <= set(rep.key_metrics)
    assert_frame_equal(table, expected.select(table.columns))
    assert not any(c.endswith("_lower") for c in table.columns)
    rep.charts["trend"].to_dict(validate=True)
    assert 'id="pe-trend"' in rep.html()


def test_bad_inputs(df: pl.DataFrame, reference: pl.DataFrame) -> None:
    """BAD_INPUTS rows 52 and 55 through the report, before any table is computed."""
    run = df.eval.report
    with pytest.raises(pe.InvalidParameterError, match="every= needs time="):
        run("binary", label="y", score="p", every="1d")
    with pytest.raises(pe.InvalidParameterError, match='time="ts" needs every='):
        run("binary", label="y", score="p", time="ts")
    with pytest.raises(pe.InvalidParameterError, match="whole multiple of every"):
        run("binary", label="y", score="p", time="ts", every="2d", period="3d")
    with pytest.raises(pe.InvalidParameterError, match="every must be a positive"):
        run("binary", label="y", score="p", time="ts", every="0d")
    with pytest.raises(pe.InvalidParameterError, match="is not a duration"):
        run("binary", label="y", score="p", time="ts", every="daily")
    strings = df.with_columns(pl.col("ts").cast(pl.String))
    with pytest.raises(pe.DataValidationError, match='column "ts"'):
        strings.eval.report("binary", label="y", score="p", time="ts", every="1d")
    with pytest.raises(pe.DataValidationError, match='column "day"'):
        run("binary", label="y", score="p", time="day", every="1d")
    with pytest.raises(pe.InvalidParameterError, match="reference= adds the PSI"):
        run("binary", label="y", score="p", reference=reference)
    with pytest.raises(pe.InvalidParameterError, match="reference must be a polars"):
        run("binary", label="y", score="p", reference={"p": [1.0]}, **OPTS)
    with pytest.raises(pe.DataValidationError, match="no rows"):
        run("binary", label="y", score="p", reference=reference.clear(), **OPTS)
    with pytest.raises(pe.DataValidationError, match="constant score: no bins"):
        run("binary", label="y", score="p", reference=pl.DataFrame({"p": [0.5] * 9}), **OPTS)
    grades = pl.DataFrame({"g": ["a", "b", "a", "b"], "h": ["a", "a", "b", "b"], "t": [1, 2, 3, 4]})
    with pytest.raises(pe.InvalidParameterError, match="one score column"):
        grades.eval.report("multiclass", label="g", pred="h", time="t", every=2, reference=grades)
    with pytest.raises(pe.InvalidParameterError, match="time= column and a by= column"):
        run("binary", label="y", score="p", by="ts", time="ts", every="1d")


@IGNORE_UNDEFINED
def test_an_empty_window_has_no_row(df: pl.DataFrame, reference: pl.DataFrame) -> None:
    """Rows on days 0-1 and 5-7 only: no window (no row) for days 2-4 (BAD_INPUTS 55)."""
    gap = df.filter(~pl.col("ts").dt.day().is_in([3, 4, 5]))
    rep = gap.eval.report(
        "binary", label="y", score="p", every="1d", time="ts", reference=reference
    )
    days = rep.tables["trend"]["ts"].dt.day().to_list()
    assert days == [1, 2, 6, 7, 8] == rep.tables["psi"]["ts"].dt.day().to_list()


# ---------------------------------------------------------------------------------------
# The command line and the demo
# ---------------------------------------------------------------------------------------


@IGNORE_UNDEFINED
def test_cli_report_with_windows_and_reference(
    df: pl.DataFrame, reference: pl.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows, ref = tmp_path / "rows.parquet", tmp_path / "ref.parquet"
    df.write_parquet(rows)
    reference.write_parquet(ref)
    page, out = tmp_path / "out.html", tmp_path / "out.parquet"
    argv = ["binary", rows, "--label", "y", "--score", "p", "--weight", "w", "--by", "region"]
    argv += ["--time", "ts", "--every", "1d", "--period", "3d", "--report", page]
    argv += ["--reference", ref, "--metrics", "auc,logloss", "--format", "parquet", "-o", out]
    code = cli.main([str(a) for a in argv])
    assert code == 0, capsys.readouterr().err
    assert "report written to" in capsys.readouterr().err
    printed = df.eval.binary("y", "p", weight="w", by="region", metrics=["auc", "logloss"], **OPTS)
    assert_frame_equal(pl.read_parquet(out), printed)  # the printed table: the windowed one
    html = page.read_text()
    assert 'id="pe-trend"' in html and 'data-chart="trend"' in html and "PSI per window" in html
    bad = {
        "--reference adds the PSI": ["--reference", ref, "--report", page],
        "work without --report": ["--rollup", "region", "--time", "ts", "--every", "1d"],
    }
    for message, extra in bad.items():
        argv = ["binary", rows, "--label", "y", "--score", "p", *extra]
        if "--report" not in extra:
            argv += ["--report", page]
        assert cli.main([str(a) for a in argv]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_demo_report_has_the_trend_section(tmp_path: Path) -> None:
    from polars_eval import _demo
    from polars_eval.cli import demo

    data = {"credit_scoring": _demo.credit_scoring(3_000)}
    name, arguments = demo._demo_reports(data)["binary"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pe.UndefinedMetricWarning)
        rep = data[name].eval.report("binary", ci=None, **arguments)
    assert rep.tables["trend"].height > 0 and rep.tables["psi"].height > 0
    assert rep.options["time"] == "application_date"


# ---------------------------------------------------------------------------------------
# The page in headless Chromium
# ---------------------------------------------------------------------------------------


def test_trend_in_headless_chromium(report: pe.Report, tmp_path: Path) -> None:
    """No request, no console message, the page no wider than 1280 pixels, and the trend
    chart drawn with marks filling its card."""
    from tests.test_report import MEASURE, _chromium, _open

    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium): browser test skipped")
    html = tmp_path / "trend.html"
    html.write_text(report.html().replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom, console, requests = _open(browser, html, tmp_path)
    assert requests == [] and console == [], (requests, console)
    found = re.search(r'<pre id="pe-measure">(.*?)</pre>', dom, re.S)
    assert found is not None
    m = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert m["page"] <= 1280
    (chart,) = [c for c in m["charts"] if c["name"] == "trend"]
    assert chart["marks"] > 0 and abs(chart["svg"] - chart["inner"]) <= 2
    for t in m["tables"]:
        if t["section"] == "pe-trend":
            assert t["left"] >= 0 and t["right"] <= 1280, t
