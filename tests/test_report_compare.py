"""The comparison section of a report (SPEC §14 item 6, §9): ``df.eval.report`` with several
systems, and ``--compare ... --report`` on the command line.

Oracles: ``df.eval.compare`` for the table (the section is exactly its output), and the
per-unit values computed independently — scikit-learn's ``ndcg_score`` query by query,
numpy's per-series MAE and per-row Brier score, pytrec_eval's per-query NDCG for
``trec`` — for the differences drawn; the Vega-Lite schema and headless Chromium for the
page.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from polars.testing import assert_frame_equal
from sklearn.metrics import ndcg_score

import polars_eval as pe
from polars_eval import cli
from polars_eval.report import compare as C

pytest.importorskip("altair")
pytest.importorskip("vl_convert")

NQ, ND = 40, 10


def runs(seed: int = 0) -> pl.DataFrame:
    """40 queries of 10 documents (each with a relevant one) scored by three systems."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(NQ), ND)
    rel = rng.integers(0, 3, NQ * ND)
    rel[::ND] = np.maximum(rel[::ND], 1)
    noise = rng.random((3, NQ * ND))
    return pl.DataFrame(
        {
            "q": q,
            "doc": np.tile(np.arange(ND), NQ),
            "rel": rel,
            "bm25": noise[0] + 0.1 * rel,
            "dense": noise[1] + 0.5 * rel,
            "hybrid": noise[2] + 0.3 * rel,
            "market": np.where(q % 2 == 0, "de", "fr"),
        }
    )


ARGS = {"relevance": "rel", "query": "q", "gain": "linear", "metrics": ["ndcg@10", "mrr"]}


@pytest.fixture(scope="module")
def df() -> pl.DataFrame:
    return runs()


@pytest.fixture(scope="module")
def report(df: pl.DataFrame) -> pe.Report:
    return df.eval.report("ranking", score=["bm25", "dense", "hybrid"], by="market", **ARGS)


def sklearn_ndcg(df: pl.DataFrame, score: str) -> dict[int, float]:
    """NDCG@10 of each query (linear gains, tied scores averaged), by scikit-learn."""
    out = {}
    for (q,), part in df.group_by("q"):
        rel = part["rel"].to_numpy()[None, :]
        out[q] = float(ndcg_score(rel, part[score].to_numpy()[None, :], k=10))
    return out


def test_table_is_compare_and_report_is_the_baseline(df: pl.DataFrame, report: pe.Report) -> None:
    compare = df.eval.compare("ranking", score=["bm25", "dense", "hybrid"], **ARGS)
    assert_frame_equal(report.tables["compare"], compare)
    assert report.inputs["score"] == "bm25"
    alone = df.eval.report("ranking", score="bm25", by="market", relevance="rel", query="q",
                           gain="linear")  # fmt: skip
    assert_frame_equal(report.tables["summary"], alone.tables["summary"])
    assert_frame_equal(report.tables["segments"], alone.tables["segments"])
    assert report.options["systems"] == "bm25 (baseline), dense, hybrid"
    assert report.sections["compare"]["baseline"] == "bm25"


def test_per_query_differences_equal_sklearn(df: pl.DataFrame, report: pe.Report) -> None:
    units = report.tables["compare_units"]
    assert units.columns == ["metric", "system", "q", "value", "baseline_value", "difference"]
    base = sklearn_ndcg(df, "bm25")
    for system in ("dense", "hybrid"):
        theirs = sklearn_ndcg(df, system)
        ours = units.filter((pl.col("metric") == "ndcg@10") & (pl.col("system") == system))
        assert ours.height == NQ
        expected = {q: theirs[q] - base[q] for q in base}
        got = dict(zip(ours["q"].to_list(), ours["difference"].to_list(), strict=True))
        assert got == pytest.approx(expected, abs=1e-12)
        # sorted, as drawn
        assert ours["difference"].to_list() == pytest.approx(sorted(expected.values()), abs=1e-12)
        row = report.tables["compare"].filter(
            (pl.col("metric") == "ndcg@10") & (pl.col("system") == system)
        )
        d = np.array(list(expected.values()))
        assert row["wins"].item() == int((d > 1e-12).sum())
        assert row["losses"].item() == int((d < -1e-12).sum())
        assert row["difference"].item() == pytest.approx(d.mean(), abs=1e-12)


def test_charts_draw_the_sorted_differences(report: pe.Report) -> None:
    assert C.chart_metrics(report) == ["ndcg@10", "mrr"]
    chart = report.charts["compare"]
    chart.to_dict(validate=True)
    data = chart.data
    units = report.tables["compare_units"]
    assert_frame_equal(data.drop("rank"), units)  # 40 queries: nothing thinned
    for (_, _), part in data.group_by("metric", "system"):
        assert part["rank"].to_list() == list(range(1, NQ + 1))
        assert part["difference"].is_sorted()
    spec = chart.to_dict()
    assert len(spec["hconcat"]) == 2  # one panel per metric
    wtl = report.charts["compare_wtl"]
    wtl.to_dict(validate=True)
    counts = wtl.data.filter(pl.col("outcome") == "wins").sort("metric", "system")
    expected = report.tables["compare"].sort("metric", "system")
    assert counts["units"].to_list() == expected["wins"].to_list()
    svgs = report.svgs()
    for name in C.CHARTS:
        assert svgs[name].startswith("<svg") and "<path" in svgs[name]


def test_page_has_the_comparison_section(report: pe.Report) -> None:
    page = report.html()
    found = re.search(r'<section id="pe-compare">(.*?)</section>', page, re.S)
    assert found is not None
    section = found.group(1)
    assert section.count("<tr>") == report.tables["compare"].height + 1
    for name in C.CHARTS:
        assert f'data-chart="{name}"' in section  # in the section, not the grid
    grid = re.search(r'<section id="pe-charts">(.*?)</section>', page, re.S)
    assert grid is not None and 'data-chart="compare' not in grid.group(1)
    dense = report.tables["compare"].filter(pl.col("system") == "dense").row(0, named=True)
    assert dense["p_adjusted"] < 0.05 and "better ▲" in section
    assert f"{dense['wins']} / {dense['ties']} / {dense['losses']}" in section
    assert "Full curves and chart data" in page and "<code>compare_units</code>" in page


def test_long_form_and_named_baseline(df: pl.DataFrame) -> None:
    long = df.unpivot(
        index=["q", "doc", "rel"], on=["bm25", "dense", "hybrid"], variable_name="run",
        value_name="score",
    )  # fmt: skip
    rep = long.eval.report("ranking", score="score", system="run", baseline="dense",
                           test="sign", correction="bh", **ARGS)  # fmt: skip
    expected = long.eval.compare("ranking", score="score", system="run", baseline="dense",
                                 test="sign", correction="bh", **ARGS)  # fmt: skip
    assert_frame_equal(rep.tables["compare"], expected)
    alone = df.eval.report("ranking", score="dense", relevance="rel", query="q", gain="linear")
    assert_frame_equal(rep.tables["summary"], alone.tables["summary"])
    assert rep.counts["rows"] == df.height  # the baseline's rows only
    base, dense = sklearn_ndcg(df, "bm25"), sklearn_ndcg(df, "dense")
    units = rep.tables["compare_units"].filter(
        (pl.col("metric") == "ndcg@10") & (pl.col("system") == "bm25")
    )
    assert units["difference"].to_list() == pytest.approx(
        sorted(base[q] - dense[q] for q in base), abs=1e-12
    )
    assert "sign test" in rep.html()


def test_forecast_series_and_lower_is_better() -> None:
    rng = np.random.default_rng(3)
    n_series, steps = 12, 8
    y = rng.normal(10, 2, n_series * steps)
    fc = pl.DataFrame(
        {
            "s": np.repeat(np.arange(n_series), steps),
            "t": np.tile(np.arange(steps), n_series),
            "y": y,
            "naive": y + rng.normal(0, 1.5, y.size),
            "model": y + rng.normal(0, 1.0, y.size),
        }
    )
    rep = fc.eval.report("forecast", actual="y", forecast=["naive", "model"], series="s",
                         time="t", metrics=["mae"], level=0.9)  # fmt: skip
    expected = fc.eval.compare("forecast", "y", forecast=["naive", "model"], series="s",
                               time="t", metrics=["mae"], level=0.9)  # fmt: skip
    assert_frame_equal(rep.tables["compare"], expected)
    e = fc.group_by("s").agg(
        (pl.col("model") - pl.col("y")).abs().mean().alias("m"),
        (pl.col("naive") - pl.col("y")).abs().mean().alias("n"),
    )
    d = (e["m"] - e["n"]).to_numpy()
    units = rep.tables["compare_units"]
    assert units["difference"].to_list() == pytest.approx(sorted(d), rel=1e-12)
    row = rep.tables["compare"].row(0, named=True)
    assert (row["wins"], row["losses"]) == (int((d < 0).sum()), int((d > 0).sum()))
    assert rep.sections["compare"]["directions"] == {"mae": False}
    assert "mae (lower is better)" in str(rep.charts["compare"].to_dict())


def test_binary_rows_as_units_and_thinned_chart() -> None:
    rng = np.random.default_rng(5)
    n = 3000
    y = rng.integers(0, 2, n)
    frame = pl.DataFrame(
        {
            "y": y,
            "p": np.clip(0.5 + 0.2 * (2 * y - 1) + rng.normal(0, 0.2, n), 0, 1),
            "q": np.clip(0.5 + 0.3 * (2 * y - 1) + rng.normal(0, 0.2, n), 0, 1),
        }
    )
    rep = frame.eval.report("binary", label="y", score=["p", "q"], metrics=["brier"],
                            max_points=100, ci=None)  # fmt: skip
    units = rep.tables["compare_units"]
    assert units.columns == ["metric", "system", "row", "value", "baseline_value", "difference"]
    d = (frame["q"] - frame["y"]) ** 2 - (frame["p"] - frame["y"]) ** 2
    by_row = units.sort("row")
    assert by_row["row"].to_list() == list(range(n))
    assert by_row["difference"].to_numpy() == pytest.approx(d.to_numpy(), abs=1e-12)
    data = rep.charts["compare"].data
    assert data.height == 100  # evenly thinned by rank, the first and last kept
    assert data["rank"][0] == 1 and data["rank"][-1] == n
    assert data["difference"].is_sorted()
    assert data["difference"][0] == units["difference"].min()


def test_auc_by_delong_has_no_per_unit_chart() -> None:
    frame = pl.DataFrame({"y": [0, 1, 0, 1, 1, 0, 1, 0], "a": [0.1, 0.8, 0.3, 0.6, 0.7, 0.4,
                                                              0.2, 0.5], "b": [0.2, 0.9, 0.1,
                                                              0.7, 0.4, 0.3, 0.8, 0.6]})  # fmt: skip
    rep = frame.eval.report("binary", label="y", score=["a", "b"], test="delong", ci=None)
    assert_frame_equal(
        rep.tables["compare"], frame.eval.compare("binary", "y", score=["a", "b"], test="delong")
    )
    assert "compare_units" not in rep.tables
    assert "compare" not in rep.charts and "compare_wtl" not in rep.charts
    assert 'id="pe-compare"' in rep.html()


def test_bad_inputs(df: pl.DataFrame) -> None:
    with pytest.raises(pe.InvalidParameterError, match="names 1 system; compare needs at least"):
        df.eval.report("ranking", score=["bm25"], relevance="rel", query="q")
    with pytest.raises(pe.InvalidParameterError, match="baseline 'colbert' is not one of"):
        df.eval.report("ranking", score=["bm25", "dense"], baseline="colbert", **ARGS)
    with pytest.raises(pe.DataValidationError, match="holds 1 system: compare needs at least"):
        df.with_columns(run=pl.lit("x")).eval.report(
            "ranking", score="bm25", system="run", relevance="rel", query="q"
        )
    with pytest.raises(pe.InvalidParameterError, match="test= is an option of a comparison"):
        df.eval.report("ranking", score="bm25", relevance="rel", query="q", test="sign")
    with pytest.raises(pe.InvalidParameterError, match="baseline= is an option of a comparison"):
        df.eval.report("ranking", score="bm25", relevance="rel", query="q", baseline="dense")
    with pytest.raises(pe.InvalidParameterError, match="correction must be one of"):
        df.eval.report("ranking", score=["bm25", "dense"], correction="sidak", **ARGS)
    # the caller's frame is not modified, and a bool baseline= keeps its meaning
    before = df.clone()
    rep = df.eval.report("ranking", score=["bm25", "dense"], baseline=True, **ARGS)
    assert "ndcg@10_baseline" in rep.tables["summary"].columns
    assert rep.sections["compare"]["baseline"] == "bm25"
    assert_frame_equal(df, before)


def test_weight_note_and_without_the_plot_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    frame = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "p": [1.1, 2.3, 2.6, 4.4, 5.2],
                          "r": [0.8, 2.1, 3.1, 4.1, 4.7], "w": [1.0, 2.0, 1.0, 1.0, 2.0]})  # fmt: skip
    monkeypatch.setitem(sys.modules, "altair", None)
    rep = frame.eval.report("regression", actual="a", pred=["p", "r"], weight="w",
                            metrics=["mse"])  # fmt: skip
    assert any("weighs every unit alike" in n for n in rep.notes)
    page = rep.to_html(tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="pe-compare"' in page and "<svg" not in page
    assert page.count("polars-eval[plot]") == 1  # the one line of the charts section
    d = (frame["r"] - frame["a"]) ** 2 - (frame["p"] - frame["a"]) ** 2
    assert rep.tables["compare_units"]["difference"].to_list() == pytest.approx(
        sorted(d.to_list()), abs=1e-12
    )


def test_page_in_headless_chromium(report: pe.Report, tmp_path: Path) -> None:
    """Offline, no console message, both charts drawn in the section, and at 1280 pixels
    the section widens nothing (the measurements of the report tests)."""
    import json

    from tests.test_report import MEASURE, _chromium, _open

    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed: the browser test of the section did not run")
    html = tmp_path / "compare.html"
    html.write_text(report.html().replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom, console, requests = _open(browser, html, tmp_path)
    assert requests == [] and console == []
    section = re.search(r'<section id="pe-compare">(.*?)</section>', dom, re.S)
    assert section is not None
    for name in C.CHARTS:
        figure = re.search(
            rf'<figure[^>]*data-chart="{name}"[^>]*>(.*?)</figure>', section.group(1), re.S
        )
        assert figure is not None and "<path" in figure.group(1), name
    found = re.search(r'<pre id="pe-measure">(.*?)</pre>', dom, re.S)
    assert found is not None
    m = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert m["page"] <= 1280
    assert [c["name"] for c in m["charts"]] == list(report.charts)
    for c in m["charts"]:
        assert c["marks"] > 0 and abs(c["svg"] - c["inner"]) <= 2, c
    for t in m["tables"]:
        assert t["left"] >= 0 and t["right"] <= 1280, t


# ---------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_ranking_compare_report(
    df: pl.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.parquet"
    df.write_parquet(path)
    target = tmp_path / "r.html"
    base = ["ranking", path, "--query", "q", "--relevance", "rel", "--score", "bm25",
            "--compare", "dense,hybrid", "--gain", "linear", "--metrics", "ndcg@10,mrr",
            "--format", "csv"]  # fmt: skip
    code, out, err = _cli(capsys, *base, "--report", target)
    assert code == 0, err
    printed = pl.read_csv(out.encode())
    expected = df.eval.compare("ranking", score=["bm25", "dense", "hybrid"], **ARGS)
    assert_frame_equal(printed, expected, check_dtypes=False)
    page = target.read_text(encoding="utf-8")
    assert 'id="pe-compare"' in page and 'data-chart="compare"' in page
    # with --by: the table by market, the report's section over every query
    code, out, err = _cli(capsys, *base, "--by", "market", "--report", target)
    assert code == 0, err
    assert pl.read_csv(out.encode())["market"].unique().sort().to_list() == ["de", "fr"]
    assert 'id="pe-segments"' in target.read_text(encoding="utf-8")


@pytest.fixture
def trec_files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(1)
    rel = {(q, d): int(rng.random() < 0.3) for q in range(20) for d in range(10)}
    for q in range(20):
        rel[(q, 0)] = 1
    paths = {"qrels": tmp_path / "qrels.txt"}
    paths["qrels"].write_text("".join(f"q{q} 0 d{d} {r}\n" for (q, d), r in rel.items()))
    for name, boost in (("bm25", 0.0), ("dense", 0.5)):
        lines = [f"q{q} Q0 d{d} 0 {rng.random() + boost * r:.6f} {name}\n"
                 for (q, d), r in rel.items()]  # fmt: skip
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("".join(lines))
    return paths


def test_cli_trec_compare_report(
    trec_files: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from polars_eval.cli import compare as cc

    written: list[pe.Report] = []
    save = cc.save_report
    monkeypatch.setattr(cc, "save_report", lambda rep, path: (written.append(rep), save(rep, path)))
    target = tmp_path / "t.html"
    code, out, err = _cli(capsys, "trec", trec_files["bm25"], trec_files["qrels"], "--compare",
                          trec_files["dense"], "-m", "ndcg_cut.10", "--format", "csv",
                          "--report", target)  # fmt: skip
    assert code == 0, err
    printed = pl.read_csv(out.encode())
    (rep,) = written
    assert_frame_equal(rep.tables["compare"], printed, check_dtypes=False)
    with open(trec_files["qrels"]) as f:
        qrels = pytrec_eval.parse_qrel(f)
    ndcg = {}
    for name in ("bm25", "dense"):
        with open(trec_files[name]) as f:
            run = pytrec_eval.parse_run(f)
        per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
        ndcg[name] = {q: v["ndcg_cut_10"] for q, v in per.items()}
    units = rep.tables["compare_units"]
    got = dict(zip(units["query"].to_list(), units["difference"].to_list(), strict=True))
    assert got == pytest.approx({q: ndcg["dense"][q] - ndcg["bm25"][q] for q in ndcg["bm25"]},
                                abs=1e-9)  # fmt: skip
    assert units["difference"].is_sorted()
    # the rest of the page: the ranking report of the baseline run joined to the qrels
    assert rep.inputs["score"] == "score" and rep.counts["n_queries"] == 20
    page = target.read_text(encoding="utf-8")
    section = re.search(r'<section id="pe-compare">(.*?)</section>', page, re.S)
    assert section is not None and 'data-chart="compare"' in section.group(1)
    assert f"{printed['wins'][0]} / {printed['ties'][0]} / {printed['losses'][0]}" in page
    # without --compare: the run's report alone; trec_eval options it cannot honour: errors
    code, _, err = _cli(capsys, "trec", trec_files["bm25"], trec_files["qrels"], "--report",
                        target)  # fmt: skip
    assert code == 0, err
    assert 'id="pe-compare"' not in target.read_text(encoding="utf-8")
    code, _, err = _cli(capsys, "trec", trec_files["bm25"], trec_files["qrels"], "-c",
                        "--report", target)  # fmt: skip
    assert code == 2 and "--report works without --complete-queries" in err
