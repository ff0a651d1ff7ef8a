"""``--compare`` on the CLI (SPEC §14): the compare table of ``trec`` and the task commands,
``--gate``'s exit status, one-line errors.

Oracles: pytrec_eval's per-query measures with scipy's ``ttest_rel`` (trec), and the
Python API (``df.eval.compare``) for the task commands.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from polars.testing import assert_frame_equal
from scipy import stats
from statsmodels.stats.multitest import multipletests

from polars_eval import cli

ERROR = "polars-eval: error: "


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def _csv(out: str) -> pl.DataFrame:
    return pl.read_csv(io.StringIO(out))


@pytest.fixture
def trec_files(tmp_path: Path) -> dict[str, Path]:
    """qrels of 25 queries and three runs: bm25, dense (better), bad (worse)."""
    rng = np.random.default_rng(0)
    rel = {(q, d): int(rng.random() < 0.3) for q in range(25) for d in range(12)}
    rel[(0, 0)] = 1  # every query has a relevant document
    paths = {"qrels": tmp_path / "qrels.txt"}
    paths["qrels"].write_text("".join(f"q{q} 0 d{d} {r}\n" for (q, d), r in rel.items()))
    for name, boost in (("bm25", 0.0), ("dense", 0.6), ("bad", -0.5)):
        lines = []
        for (q, d), r in rel.items():
            lines.append(f"q{q} Q0 d{d} 0 {rng.random() + boost * r:.6f} {name}\n")
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("".join(lines))
    return paths


def _trec_per_query(qrels: Path, run: Path, measure: str) -> dict[str, float]:
    with open(qrels) as f:
        q = pytrec_eval.parse_qrel(f)
    with open(run) as f:
        r = pytrec_eval.parse_run(f)
    family = measure.rsplit("_", 1)[0] if "_cut_" in measure else measure
    out = pytrec_eval.RelevanceEvaluator(q, {family}).evaluate(r)
    return {query: values[measure] for query, values in out.items()}


def test_trec_compare_equals_ttest_of_trec_eval_per_query(
    trec_files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    p = trec_files
    code, out, err = _cli(
        capsys, "trec", p["bm25"], p["qrels"], "--compare", p["dense"], p["bad"],
        "-m", "ndcg_cut.10", "-m", "map", "--test", "t", "--correction", "holm", "--format", "csv",
    )  # fmt: skip
    assert code == 0, err
    table = _csv(out)
    assert table["metric"].to_list() == ["ndcg_cut_10", "ndcg_cut_10", "map", "map"]
    assert table["system"].to_list() == [str(p["dense"]), str(p["bad"])] * 2
    assert set(table["baseline"]) == {str(p["bm25"])}
    for metric in ("ndcg_cut_10", "map"):
        base = _trec_per_query(p["qrels"], p["bm25"], metric)
        queries = sorted(base)
        pvalues = []
        for name in ("dense", "bad"):
            other = _trec_per_query(p["qrels"], p[name], metric)
            a = np.array([other[q] for q in queries])
            b = np.array([base[q] for q in queries])
            row = table.filter((pl.col("metric") == metric) & (pl.col("system") == str(p[name])))
            res = stats.ttest_rel(a, b)
            assert row["p_value"].item() == pytest.approx(res.pvalue, rel=1e-6)
            assert row["difference"].item() == pytest.approx((a - b).mean(), abs=1e-9)
            assert row["n_units"].item() == len(queries)
            pvalues.append(res.pvalue)
        adjusted = multipletests(pvalues, method="holm")[1]
        got = table.filter(pl.col("metric") == metric)["p_adjusted"].to_numpy()
        np.testing.assert_allclose(got, adjusted, rtol=1e-6)


def test_trec_gate(trec_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    p = trec_files
    args = ["trec", p["bm25"], p["qrels"], "-m", "ndcg_cut.10", "-m", "map", "--gate"]
    code, out, err = _cli(capsys, *args, "--compare", p["dense"])
    assert code == 0 and err == ""  # better: the gate passes
    code, out, err = _cli(capsys, *args, "--compare", p["dense"], p["bad"])
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 2 and all(str(p["bad"]) in line for line in lines)
    assert "on ndcg_cut_10" in lines[0] and "on map" in lines[1]
    assert "significantly worse" in lines[0]
    # not significant at a level that demands p < 1e-12: passes
    code, _, _ = _cli(capsys, *args, "--compare", p["bad"], "--level", str(1 - 1e-12))
    assert code == 0


def test_trec_missing_queries(
    trec_files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = trec_files
    short = tmp_path / "short.txt"
    short.write_text("".join(line for line in p["dense"].read_text().splitlines(True)
                             if not line.startswith(("q3 ", "q7 "))))  # fmt: skip
    code, _, err = _cli(capsys, "trec", p["bm25"], p["qrels"], "--compare", short, "-m", "map")
    assert code == 2
    assert err.startswith(ERROR) and len(err.strip().splitlines()) == 1
    assert f"system '{short}' lacks 2 of the 25 queries" in err
    # trec_eval's -c: every qrels query, a missing one scores 0
    code, out, err = _cli(capsys, "trec", p["bm25"], p["qrels"], "--compare", short, "-m", "map",
                          "-c", "--format", "csv")  # fmt: skip
    assert code == 0, err
    assert _csv(out)["n_units"].item() == 25
    code, out, _ = _cli(capsys, "trec", p["bm25"], p["qrels"], "--compare", short, "-m", "map",
                        "--missing", "drop", "--format", "csv")  # fmt: skip
    assert _csv(out)["n_units"].item() == 23
    code, _, err = _cli(capsys, "trec", p["bm25"], p["qrels"], "--compare", tmp_path / "nope")
    assert code == 2 and "file not found" in err
    code, _, err = _cli(capsys, "trec", p["bm25"], p["qrels"], "--compare", p["dense"], "-q")
    assert code == 2 and "--per-query does not apply to --compare" in err


@pytest.fixture
def ranking_file(tmp_path: Path) -> tuple[pl.DataFrame, Path]:
    rng = np.random.default_rng(1)
    n = 30 * 8
    rel = rng.integers(0, 3, n)
    df = pl.DataFrame({"qid": np.repeat(np.arange(30), 8), "rel": rel, "g": np.repeat(np.arange(30) % 2, 8),
                       "a": rng.random(n), "b": rng.random(n) + 0.2 * rel, "c": rng.random(n) - 0.1 * rel})  # fmt: skip
    path = tmp_path / "runs.parquet"
    df.write_parquet(path)
    return df, path


def test_ranking_compare_equals_python(
    ranking_file: tuple[pl.DataFrame, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    df, path = ranking_file
    code, out, err = _cli(
        capsys, "ranking", path, "--query", "qid", "--relevance", "rel", "--score", "a",
        "--compare", "b,c", "--metrics", "ndcg@10,map", "--by", "g", "--test", "wilcoxon",
        "--correction", "bh", "--format", "csv",
    )  # fmt: skip
    assert code == 0, err
    expected = df.eval.compare("ranking", "rel", score=["a", "b", "c"], query="qid", by="g",
                               metrics=["ndcg@10", "map"], test="wilcoxon", correction="bh")  # fmt: skip
    assert_frame_equal(_csv(out), expected, check_dtypes=False, rel_tol=1e-9)
    code, _, err = _cli(capsys, "ranking", path, "--query", "qid", "--relevance", "rel", "--score", "a",
                        "--compare", "b,c", "--metrics", "ndcg@10", "--gate")  # fmt: skip
    assert code == 1 and "system 'c' is significantly worse than 'a' on ndcg@10" in err
    code, _, err = _cli(capsys, "ranking", path, "--query", "qid", "--relevance", "rel", "--score", "a",
                        "--compare", "b", "--per-query")  # fmt: skip
    assert code == 2 and "--per-query does not apply to --compare" in err


def test_forecast_binary_regression_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(2)
    n = 240
    y = rng.random(n) * 10
    label = rng.integers(0, 2, n)
    df = pl.DataFrame({"id": np.repeat(np.arange(12), 20), "t": np.tile(np.arange(20), 12), "y": y,
                       "f1": y + rng.normal(0, 1, n), "f2": y + rng.normal(0, 1.5, n), "label": label,
                       "p1": np.clip(rng.random(n) * 0.7 + 0.3 * label, 0, 1),
                       "p2": np.clip(rng.random(n) * 0.5 + 0.5 * label, 0, 1)})  # fmt: skip
    path = tmp_path / "d.parquet"
    df.write_parquet(path)
    code, out, err = _cli(capsys, "forecast", path, "--series", "id", "--time", "t", "--actual", "y",
                          "--forecast", "f1", "--compare", "f2", "--metrics", "mae,rmse", "--format", "csv")  # fmt: skip
    assert code == 0, err
    expected = df.eval.compare("forecast", "y", forecast=["f1", "f2"], series="id", time="t",
                               metrics=["mae", "rmse"])  # fmt: skip
    assert_frame_equal(_csv(out), expected, check_dtypes=False, rel_tol=1e-9)
    code, out, err = _cli(capsys, "binary", path, "--label", "label", "--score", "p1", "--compare", "p2",
                          "--test", "sign", "--format", "csv")  # fmt: skip
    assert code == 0, err
    expected = df.eval.compare("binary", "label", score=["p1", "p2"], test="sign")
    assert_frame_equal(_csv(out), expected, check_dtypes=False, rel_tol=1e-9)
    code, out, err = _cli(capsys, "regression", path, "--actual", "y", "--pred", "f1", "--compare", "f2",
                          "--unit", "id", "--metrics", "rmse,r2", "--format", "csv")  # fmt: skip
    assert code == 0, err
    expected = df.eval.compare(
        "regression", "y", pred=["f1", "f2"], unit="id", metrics=["rmse", "r2"]
    )
    assert_frame_equal(_csv(out), expected, check_dtypes=False, rel_tol=1e-9)
    code, _, err = _cli(capsys, "binary", path, "--label", "label", "--score", "p1", "--compare", "p2",
                        "--ci", "wilson")  # fmt: skip
    assert code == 2 and err == f"{ERROR}--ci does not apply to --compare\n"
    code, _, err = _cli(
        capsys, "binary", path, "--label", "label", "--score", "p1", "--compare", "nope"
    )
    assert code == 2 and 'system "nope" is not a column' in err


def test_gate_exit_status_in_a_subprocess(trec_files: dict[str, Path]) -> None:
    p = trec_files
    env = {**os.environ, "PYTHONWARNINGS": "", "POLARS_EVAL_DEBUG": ""}
    done = subprocess.run(
        [sys.executable, "-m", "polars_eval", "trec", str(p["bm25"]), str(p["qrels"]), "--compare",
         str(p["bad"]), "-m", "map", "--gate"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("polars-eval: gate: system")
    assert "map" in done.stdout
