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
    # the preference and judgment-group measures need other qrels formats
    with pytest.raises(InvalidParameterError, match="prefs_simp"):
        pe.trec_eval(run, qrels, ["prefs_simp"])


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


# ---------------------------------------------------------------------------------------
# trec_eval 10's further measures, parameter forms and flags
# ---------------------------------------------------------------------------------------

TREC10_MEASURES = [
    "bpref",
    "gm_bpref",
    "infAP",
    "binG",
    "G",
    "ndcg_rel",
    "Rndcg",
    "Rprec_mult",
    "relative_P",
    "set_relative_P",
    "set_map",
    "num_nonrel_judged_ret",
    "utility",
]


def c_oracle(
    run: pl.DataFrame,
    qrels: pl.DataFrame,
    measure: str,
    relevance_level: int = 1,
    judged_only: bool = False,
) -> dict:
    """trec_eval through pytrec_eval's C evaluator, one measure at a time: its Python
    wrapper accepts neither gain maps nor negative parameters, and its C layer hands one
    measure's parameters to every measure whose name it prefixes (ndcg.1=0 to ndcg_rel)."""
    qd: dict = {}
    for q, d, r in qrels.iter_rows():
        qd.setdefault(q, {})[d] = r
    rd: dict = {}
    for q, d, s in run.select("query", "doc", "score").iter_rows():
        rd.setdefault(q, {})[d] = s
    evaluator = pytrec_eval._RelevanceEvaluator(
        query_relevance=qd,
        measures={measure},
        relevance_level=relevance_level,
        judged_docs_only_flag=judged_only,
    )
    return evaluator.evaluate(rd)


def _compare(got: pl.DataFrame, expected: dict, base: str) -> int:
    """Every value of ``got`` (per query) equals trec_eval's, the column named as trec_eval
    10 prints it, pytrec_eval's key as trec_eval 9 did (no parameters for gain maps)."""
    assert sorted(got["query"].to_list()) == sorted(expected)
    n = 0
    for row in got.iter_rows(named=True):
        ref = expected[row.pop("query")]
        for name, value in row.items():
            key = name if name in ref else base
            assert value == pytest.approx(ref[key], abs=1e-9, nan_ok=True), (name, ref[key], value)
            n += 1
    return n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_trec_eval_10_measures_agree_with_trec_eval(seed: int) -> None:
    run, qrels = generate(seed)
    compared = 0
    for measure in TREC10_MEASURES:
        got = pe.trec_eval(run, qrels, [measure], per_query=True, convention="9")
        compared += _compare(got, c_oracle(run, qrels, measure), measure)
    assert compared > 400


PARAMETER_FORMS = [
    "ndcg.1=0,2=1",
    "ndcg.0=1",
    "ndcg.1=3,2=3,4=0",
    "G.2=5,4=1",
    "ndcg_rel.0=1,3=7",
    "Rndcg.1=3,2=3",
    "Rndcg.4=10",
    "iprec_at_recall.0.33,0.5,0.77",
    "11pt_avg.0.2,0.5,0.8",
    "Rprec_mult.0.5,1.5",
    "utility.2,-1,0.5,0",
    "set_F.0.5",
    "P.2.5,7",
    "relative_P.3,8",
    "ndcg_cut.3.9",
    "map_cut.4",
    "success.2",
    "recall.7",
]


@pytest.mark.parametrize("measure", PARAMETER_FORMS)
def test_parameter_forms_agree_with_trec_eval(measure: str) -> None:
    """Gain maps, real cutoffs and parameters, non-integer cutoffs (truncated: P.2.5 is
    P_2), each against trec_eval on three runs."""
    base = measure.split(".")[0]
    for seed in (0, 1, 2):
        run, qrels = generate(seed)
        got = pe.trec_eval(run, qrels, [measure], per_query=True, convention="9")
        assert _compare(got, c_oracle(run, qrels, measure), base) > 0
    names = pe.trec_eval(run, qrels, [measure]).columns[1:]
    expected = {
        "ndcg.1=0,2=1": ["ndcg_1=0,2=1"],
        "P.2.5,7": ["P_2", "P_7"],
        "iprec_at_recall.0.33,0.5,0.77": [
            "iprec_at_recall_0.33",
            "iprec_at_recall_0.50",
            "iprec_at_recall_0.77",
        ],
        "utility.2,-1,0.5,0": ["utility_2,-1,0.5,0"],
        "Rprec_mult.0.5,1.5": ["Rprec_mult_0.50", "Rprec_mult_1.50"],
    }.get(measure)
    if expected is not None:  # trec_eval 10's printed names
        assert names == expected


@pytest.mark.parametrize(("level", "judged_only"), [(2, False), (3, False), (1, True), (2, True)])
def test_relevance_level_and_judged_only_flags(level: int, judged_only: bool) -> None:
    """min_relevance= is trec_eval's -l, judged_only= its -J, against pytrec_eval's
    relevance_level and judged_docs_only_flag; per query and the summary."""
    run, qrels = generate(4)
    measures = [*MEASURES, *TREC10_MEASURES, "ndcg.2=1"]
    kw = {"convention": "9", "min_relevance": level, "judged_only": judged_only}
    got = pe.trec_eval(run, qrels, measures, per_query=True, **kw)
    summary = pe.trec_eval(run, qrels, measures, **kw)
    for measure in measures:
        expected = c_oracle(run, qrels, measure, level, judged_only)
        columns = [c for c in pe.trec_eval(run, qrels, [measure], per_query=True).columns]
        _compare(got.select(columns), expected, measure.split(".")[0])
        for column in columns[1:]:
            key = column if column in next(iter(expected.values())) else measure.split(".")[0]
            values = [v[key] for v in expected.values()]
            ref = float(np.mean(values))
            if column.startswith("num_"):
                ref = sum(values)
            elif column.startswith("gm_"):
                ref = float(np.exp(np.mean(values)))
            assert summary[column].item() == pytest.approx(ref, abs=1e-9, nan_ok=True), column


def test_max_docs_is_the_run_cut_in_trec_order() -> None:
    """max_docs= is trec_eval's -M: the top documents of each query in trec_eval's order
    (score descending, then document id descending), as if the run held only those."""
    run, qrels = generate(6)
    top = (
        run.sort(["query", "score", "doc"], descending=[False, True, True])
        .with_columns(pl.int_range(pl.len()).over("query").alias("i"))
        .filter(pl.col("i") < 7)
        .drop("i")
    )
    measures = [*MEASURES, *TREC10_MEASURES]
    got = pe.trec_eval(run, qrels, measures, per_query=True, max_docs=7, convention="9")
    assert got["num_ret"].max() == 7
    for measure in measures:
        columns = pe.trec_eval(run, qrels, [measure], per_query=True).columns
        _compare(got.select(columns), c_oracle(top, qrels, measure), measure.split(".")[0])


def test_complete_queries_averages_over_every_qrels_query() -> None:
    """complete_queries= is trec_eval's -c: the qrels queries absent from the run are
    evaluated with an empty ranking (0, their relevant documents counted in num_rel)."""
    run, qrels = generate(7)
    measures = ["map", "P.5", "ndcg", "bpref", "num_rel", "num_ret", "gm_map", "Rndcg"]
    present = pe.trec_eval(run, qrels, measures, per_query=True)
    complete = pe.trec_eval(run, qrels, measures, per_query=True, complete_queries=True)
    judged = qrels["query"].unique().sort().to_list()
    assert complete["query"].to_list() == judged
    missing = complete.filter(~pl.col("query").is_in(run["query"].implode()))
    assert missing.height >= 3  # generate() adds three queries found only in the qrels
    assert present.height + missing.height == complete.height
    relevant = qrels.filter(pl.col("relevance") >= 1).group_by("query").len()
    expected_rel = dict(relevant.iter_rows())
    assert missing["num_rel"].to_list() == [expected_rel.get(q, 0) for q in missing["query"]]
    assert (
        missing.select("map", "P_5", "ndcg", "bpref", "Rndcg", "num_ret").sum_horizontal() == 0
    ).all()
    assert missing["gm_map"].to_list() == [pytest.approx(np.log(1e-5))] * missing.height
    summary = pe.trec_eval(run, qrels, measures, complete_queries=True)
    assert summary["num_q"].item() == len(judged)
    assert summary["map"].item() == pytest.approx(complete["map"].sum() / len(judged))
    assert summary["num_rel"].item() == int((qrels["relevance"] >= 1).sum())


def test_trec_eval_10_only_measures_worked_example() -> None:
    """yaap, rbp, rbp_resid, dcg, ideal_dcg, relstring, runid (trec_eval 10, not in
    pytrec_eval), worked by hand from trec_eval's source (m_<name>.c).

    Ranking (score descending, then document id descending): e (unjudged: -1 in the
    qrels), d (level 2), c (outside the qrels), b (level 0), a (level 1); the qrels also
    judge z (level 3) and y (level 0). R = 3 (levels 1, 2, 3)."""
    run = pl.DataFrame(
        {"query": "q", "doc": ["a", "b", "c", "d", "e"], "score": [1.0, 2.0, 3.0, 4.0, 4.0]}
    ).with_columns(run=pl.lit("bm25"))
    qrels = pl.DataFrame(
        {"query": "q", "doc": ["a", "b", "d", "e", "y", "z"], "relevance": [1, 0, 2, -1, 0, 3]}
    )
    measures = ["yaap", "rbp", "rbp.p=0.5", "rbp_resid", "dcg", "ideal_dcg", "relstring"]
    got = pe.trec_eval(run, qrels, [*measures, "runid", "relstring.3"], per_query=True).row(
        0, named=True
    )
    log2 = np.log2
    # yaap: relevant at ranks 2 and 5, S = 1/2 + 2/5; log((1 + S) / (1 + R - S))
    s = 1 / 2 + 2 / 5
    assert got["yaap"] == pytest.approx(np.log((1 + s) / (1 + 3 - s)), abs=1e-12)
    # rbp: gains = levels 0..3, scaled to [0, 1] by 3: d 2/3 at rank 2, a 1/3 at rank 5
    assert got["rbp"] == pytest.approx(0.1 * (2 / 3 * 0.9 + 1 / 3 * 0.9**4), abs=1e-12)
    assert got["rbp_p=0.5"] == pytest.approx(0.5 * (2 / 3 * 0.5 + 1 / 3 * 0.5**4), abs=1e-12)
    # rbp_resid (p = 0.9): unjudged at ranks 1 (e) and 3 (c), 5 documents
    assert got["rbp_resid"] == pytest.approx(0.9**5 + 0.1 * (1 + 0.9**2), abs=1e-12)
    # dcg with gains = levels; the ideal: 3, 2, 1 at ranks 1..3
    assert got["dcg"] == pytest.approx(2 / log2(3) + 1 / log2(6), abs=1e-12)
    assert got["ideal_dcg"] == pytest.approx(3 + 2 / log2(3) + 1 / 2, abs=1e-12)
    assert got["relstring"] == ".2-01" and got["relstring_3"] == ".2-"
    assert got["runid"] == "bm25"
    summary = pe.trec_eval(run, qrels, ["runid", "relstring", "yaap"])
    assert summary.columns == ["num_q", "runid", "yaap"]  # relstring: per query only


def test_measure_names_and_parameters_are_checked() -> None:
    run, qrels = generate(3, 8)
    for bad, message in [
        ("P.0", "positive"),
        ("P.x", "numbers"),
        ("utility.1,2", "4 parameter"),
        ("ndcg.1", "level=gain"),
        ("ndcg.a=1", "non-negative integer"),
        ("map.5", "no parameters"),
        ("iprec_at_recall.0.331,0.333", "same column"),
        ("rbp.p=1.5", "p must be"),
        ("P_avgjg", "judgment groups"),
        ("prefs_simp", "preference judgments"),
        ("P_x", "unknown"),
    ]:
        with pytest.raises(InvalidParameterError, match=message):
            pe.trec_eval(run, qrels, [bad])
    for bad_option in ({"max_docs": 0}, {"min_relevance": 0}, {"complete_queries": 1}):
        with pytest.raises(InvalidParameterError):
            pe.trec_eval(run, qrels, ["map"], **bad_option)
