"""TREC interop (SPEC §7) against trec_eval, through pytrec-eval-terrier."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import pytrec_eval

import polars_eval as pe
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.io.trec import trec_cli

MEASURES = [
    "map",
    "map_cut.5,10",
    "ndcg",
    "ndcg_cut.5,10,20",
    "P.1,5,10,50",
    "recall.5,10,100",
    "recip_rank",
    "success.1,5",
    "Rprec",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "set_P",
    "set_recall",
    "set_F",
    "11pt_avg",
    "iprec_at_recall",
    "gm_map",
]


def generate(seed: int, n_queries: int = 30) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run with tied scores, unjudged documents, relevant documents never retrieved,
    graded (and some negative) relevance, queries only in the run and only in the qrels."""
    rng = np.random.default_rng(seed)
    run_rows, qrel_rows = [], []
    for q in range(n_queries):
        pool = rng.choice(80, size=40, replace=False)
        retrieved = pool[: int(rng.integers(0, 30))]
        judged = rng.choice(pool, size=int(rng.integers(0, 25)), replace=False)
        for d in retrieved:
            run_rows.append((f"q{q}", f"d{d}", float(np.round(rng.random() * 3, 1))))
        if q % 7 != 3:  # some queries only in the run
            grades = rng.choice([-1, 0, 0, 1, 2, 3, 4], size=len(judged))
            if q % 5 == 0:
                grades = np.zeros(len(judged), dtype=int)  # judged, none relevant
            qrel_rows += [(f"q{q}", f"d{d}", int(g)) for d, g in zip(judged, grades, strict=True)]
    for q in range(n_queries, n_queries + 3):  # queries only in the qrels
        qrel_rows.append((f"q{q}", "d1", 1))
    run = pl.DataFrame(run_rows, schema=["query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(qrel_rows, schema=["query", "doc", "relevance"], orient="row")
    return run, qrels


def oracle(run: pl.DataFrame, qrels: pl.DataFrame, measures: list[str]) -> dict:
    qd: dict = {}
    for q, d, r in qrels.iter_rows():
        qd.setdefault(q, {})[d] = r
    rd: dict = {}
    for q, d, s in run.iter_rows():
        rd.setdefault(q, {})[d] = s
    return pytrec_eval.RelevanceEvaluator(qd, set(measures)).evaluate(rd)


def write_files(tmp_path: Path, run: pl.DataFrame, qrels: pl.DataFrame) -> tuple[Path, Path]:
    run_path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    with run_path.open("w") as f:
        for i, (q, d, s) in enumerate(run.iter_rows()):
            f.write(f"{q} Q0 {d} {i + 1} {s!r} tag\n")
    with qrels_path.open("w") as f:
        for q, d, r in qrels.iter_rows():
            f.write(f"{q}\t0\t{d}  {r}\n")
    return run_path, qrels_path


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_per_query_agrees_with_trec_eval(seed: int) -> None:
    run, qrels = generate(seed)
    expected = oracle(run, qrels, MEASURES)
    # pytrec_eval follows trec_eval 9.x's recall-level rounding (iprec_at_recall, 11pt_avg)
    got = pe.trec_eval(run, qrels, MEASURES, per_query=True, convention="9")
    assert sorted(got["query"].to_list()) == sorted(expected)
    for row in got.iter_rows(named=True):
        ref = expected[row.pop("query")]
        for name, value in row.items():
            assert value == pytest.approx(ref[name], abs=1e-9), (name, ref[name], value)


def test_means_agree_with_trec_eval_from_files(tmp_path: Path) -> None:
    run, qrels = generate(5)
    run_path, qrels_path = write_files(tmp_path, run, qrels)
    expected = oracle(run, qrels, MEASURES)
    got = pe.trec_eval(
        pe.read_trec_run(run_path), pe.read_trec_qrels(qrels_path), MEASURES, convention="9"
    )
    assert got["num_q"].item() == len(expected)
    for name in got.columns:
        if name == "num_q":
            continue
        values = [ref[name] for ref in expected.values()]
        ref = sum(values) if name.startswith("num_") else float(np.mean(values))
        if name == "gm_map":  # per query log(AP); the summary is the geometric mean
            ref = float(np.exp(np.mean(values)))
        assert got[name].item() == pytest.approx(ref, abs=1e-9), name
    # same through the CLI entry point and through path arguments
    cli = trec_cli(str(run_path), str(qrels_path), MEASURES, False, convention="9")
    assert cli.equals(got)
    assert pe.trec_eval(run_path, qrels_path, MEASURES, convention="9").equals(got)


def test_tie_order_is_score_then_doc_descending() -> None:
    run = pl.DataFrame({"query": ["1"] * 3, "doc": ["a", "c", "b"], "score": [1.0, 1.0, 1.0]})
    qrels = pl.DataFrame({"query": ["1"], "doc": ["b"], "relevance": [1]})
    # order c, b, a -> the relevant b is second
    assert pe.trec_eval(run, qrels, ["recip_rank"])["recip_rank"].item() == 0.5


def test_default_and_bare_measures() -> None:
    run, qrels = generate(3, 8)
    got = pe.trec_eval(run, qrels)
    assert {"map", "P_5", "ndcg_cut_10", "recip_rank", "num_q"} <= set(got.columns)
    expanded = pe.trec_eval(run, qrels, ["P"])
    assert [c for c in expanded.columns if c != "num_q"] == [
        f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
    ]
    with pytest.raises(InvalidParameterError, match="bpref"):
        pe.trec_eval(run, qrels, ["bpref"])


def test_duplicate_document_is_an_error() -> None:
    run = pl.DataFrame({"query": ["1", "1", "1"], "doc": ["a", "b", "a"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["1"], "doc": ["a"], "relevance": [1]})
    with pytest.raises(
        DataValidationError, match='document "a" appears more than once for query "1"'
    ):
        pe.trec_eval(run, qrels, ["map"])


def test_readers_are_lazy_and_typed(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("1 Q0 a 1 2.5 x\n\n1\tQ0  b 2 -1e3 x\n")
    lf = pe.read_trec_run(path)
    assert isinstance(lf, pl.LazyFrame)
    df = lf.collect()
    assert df.schema["score"] == pl.Float64 and df.schema["rank"] == pl.Int64
    assert df["doc"].to_list() == ["a", "b"] and df["score"].to_list() == [2.5, -1000.0]
    streamed = pe.read_trec_run(path).collect(engine="streaming")
    assert streamed.equals(df)


@pytest.mark.parametrize(
    ("reader", "text", "message"),
    [
        ("run", "1 Q0 a 1 2.5 x\n1 Q0 b 2 x\n", r"run.txt, line 2: .* 6 fields .* found 5"),
        ("run", "1 Q0 a 1 2.5 x\n\n1 Q0 b 2 high x\n", r"run.txt, line 3: the score .* 'high'"),
        ("qrels", "1 0 a 1\n1 0 b\n", r"qrels.txt, line 2: .* 4 fields"),
        ("qrels", "1 0 a 1\n1 0 b yes\n", r"qrels.txt, line 2: the relevance .* 'yes'"),
    ],
)
def test_malformed_lines_name_file_and_line(
    tmp_path: Path, reader: str, text: str, message: str
) -> None:
    path = tmp_path / f"{reader}.txt"
    path.write_text(text)
    lf = pe.read_trec_run(path) if reader == "run" else pe.read_trec_qrels(path)
    with pytest.raises(Exception, match=message):
        lf.collect()
    run_path = path if reader == "run" else tmp_path / "ok_run.txt"
    qrels_path = path if reader == "qrels" else tmp_path / "ok_qrels.txt"
    run_path.parent.joinpath("ok_run.txt").write_text("1 Q0 a 1 1.0 x\n")
    qrels_path.parent.joinpath("ok_qrels.txt").write_text("1 0 a 1\n")
    with pytest.raises(DataValidationError, match=message):
        trec_cli(run_path, qrels_path, ["map"], False)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataValidationError, match="not found"):
        pe.read_trec_run(tmp_path / "nope.txt")
