"""TREC interop (SPEC §7) against trec_eval, through pytrec-eval-terrier; the preference
and judgment-group measures, which pytrec_eval does not carry, against trec_eval's own test
output and its definitions (m_prefs_*.c, form_prefs_counts.c, m_*_avgjg.c) in loops."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import pytrec_eval

import polars_eval as pe
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.io import _trec_prefs as tp
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


@pytest.mark.parametrize("retrieved", [True, False], ids=["retrieved", "unretrieved"])
@pytest.mark.parametrize("complete", [False, True], ids=["", "complete"])
def test_document_judged_twice_in_the_qrels_is_an_error(
    tmp_path: Path, retrieved: bool, complete: bool
) -> None:
    """trec_eval stops on a document judged twice for a query ("duplicate docs"); counted
    twice, it would add a relevant document that does not exist (num_rel 3, map 2/3)."""
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 2.0 x\n1 Q0 b 2 1.0 x\n")
    qrels = tmp_path / "qrels.txt"
    twice = "a" if retrieved else "c"
    qrels.write_text(f"1 0 a 1\n1 0 b 0\n1 0 {twice} 1\n1 0 c 1\n")
    if not retrieved:
        qrels.write_text("1 0 a 1\n1 0 b 0\n1 0 c 1\n1 0 c 1\n")
    with pytest.raises(DataValidationError, match=f'document "{twice}" .* query "1" in the qrels'):
        pe.trec_eval(run, qrels, ["map", "num_rel"], complete_queries=complete)
    frame = pe.read_trec_qrels(qrels).collect()
    with pytest.raises(DataValidationError, match=f'document "{twice}" .* query "1" in the qrels'):
        pe.trec_eval(pe.read_trec_run(run).collect(), frame, ["map"])


def test_document_twice_in_the_qrels_of_a_query_only_there_with_complete(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 a 1 2.0 x\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n2 0 d 1\n2 0 d 1\n")
    assert pe.trec_eval(run, qrels, ["num_rel"]).item(0, "num_rel") == 1  # query 2 not evaluated
    with pytest.raises(DataValidationError, match='document "d" .* query "2" in the qrels'):
        pe.trec_eval(run, qrels, ["num_rel"], complete_queries=True)


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
        # BAD_INPUTS 47: a NaN score is no number either (Polars' cast reads "nan" as NaN)
        ("run", "1 Q0 a 1 2.5 x\n1 Q0 b 2 nan x\n", r"run.txt, line 2: the score .* 'nan'"),
        ("run", "1 Q0 a 1 NaN x\n", r"run.txt, line 1: the score .* a number; found 'NaN'"),
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


# ---------------------------------------------------------------------------------------
# Preference judgments (-R prefs, qrels_prefs), judgment groups (-R qrels_jg), -N
# ---------------------------------------------------------------------------------------

PREFS = list(tp.MEASURES)


def _prefs_test_file() -> str:
    """trec_eval's test/prefs.test (stored as test/prefs.comment.test, with comments),
    line for line: 24 queries named after what they exercise (EC: one sub-group, PA:
    several; noRet, noPrf, noRel: nothing retrieved, no preference, nothing relevant)."""
    lines = [
        "# A comment",
        "1.EC.AB  F:Ret,C:Not   F:RnkdLst2digits  FR940303-1-00022        1",
        "1.EC.AB  F:Ret,C:Not   F:RnkdLst2digits  FBIS4-39881             0",
        "2.EC.A    0\t       0\t\t FR940303-1-00022        1",
        "2.EC.A    0\t       0\t\t CR93E-10505#37 \t\t 0",
    ]
    fr, fb, cr, cr2 = "FR940303-1-00022", "FBIS4-39881", "CR93E-10505", "CR93E-1282"
    for query, group, sub, doc, level in [
        ("3.EC.B", 0, 0, cr, 1), ("3.EC.B", 0, 0, fr, 0),
        ("4.EC.noRet", 0, 0, cr, 0), ("4.EC.noRet", 0, 0, cr2, 1),
        ("5.EC.noPrf", 0, 0, fr, 1), ("5.EC.noPrf", 0, 0, fb, 1),
        ("6.EC.noRel", 0, 0, fr, 0), ("6.EC.noRel", 0, 0, fb, 0),
        ("7.EC.no", 0, 0, fb, 1),
    ]:  # fmt: skip
        lines.append(f"{query} {group} {sub} {doc} {level}")
    for query, docs, levels in [
        ("11.PA=1", (fr, fb), (1, 0)),
        ("12.PA=2", (fr, cr), (1, 0)),
        ("13.PA=3", (cr, fr), (1, 0)),
        ("14.PA=4", (cr, cr2), (0, 1)),
        ("15.PA=5", (fr, fb), (1, 1)),
        ("16.PA=6", (fr, fb), (0, 0)),
        ("17.PA=7", (fb,), (1,)),
    ]:  # fmt: skip  (the same judgments in sub-groups 0 and 1)
        lines += [
            f"{query} 0 {s} {d} {lv}" for s in (0, 1) for d, lv in zip(docs, levels, strict=True)
        ]
    eleven = "FBIS4-45333 FBIS4-41839 FBIS3-25940 FBIS4-55845 FBIS4-40452 FBIS4-2356 "
    eleven = (eleven + "FBIS4-42757 CR93E-1952 CR93E-2191 CR93E-2473 CR93E-3103").split()
    cb, c3l = (1, 0, 0, 1, 0, 1, 1, 1, 0, 1, 0), (4, 0, 0, 2, 0, 1, 1, 4, 0, 1, 0)
    cml = (9, 8, 7, 6, 5, 5.5, 6.5, 8, 7, 6, 3)
    four = ["FBIS4-45333", "FBIS4-41839", "FBIS3-25940", "CR93E-2473"]
    mg = {0: (0, 1, 0, 5), 1: (4, 6, 6, 5), 2: (9, 8, 7, 5)}

    def add(query: str, group: object, sub: int, docs: list[str], levels: tuple) -> None:
        lines.extend(f"{query} {group} {sub} {d} {lv}" for d, lv in zip(docs, levels, strict=True))

    for kind in ("EC", "PA"):
        base = 21 if kind == "EC" else 31
        for i, (tag, levels) in enumerate((("cb", cb), ("c3l", c3l), ("cml", cml))):
            add(f"{base + i}.{kind}.{tag}", 0, 0, eleven, levels)
            if kind == "PA":  # a second sub-group: the first two documents again
                add(f"{base + i}.PA.{tag}", 0, 1, eleven[:2], levels[:2])
    for query in ("24.EC.mg", "34.PA.mg", "35.PA.mgmx"):
        for group, levels in mg.items():
            add(query, group, 0, four, levels)
    for group, levels in mg.items():
        add("34.PA.mg", group, 1, four[:2], levels[:2])
    add("35.PA.mgmx", 0, 1, four[:2], mg[0][:2])
    tran = [
        "FBIS4-45333",
        "FBIS4-41839",
        "FBIS3-25940",
        "FBIS4-55845",
        "CR93E-10279",
        "CR93E-10505",
    ]
    add("40.PA.tran", 0, 0, tran, (5, 9, 4, 3, 6, 0))
    add("40.PA.tran", 0, 1, ["FBIS3-25940", "FBIS4-40452", "CR93E-1282"], (7, 6, 1))
    return "\n".join(lines) + "\n"


# The scores of the judged documents in trec_eval's test/prefs.results.test: query 301 of
# test/results.test (run tag STANDARD, which out.test.prefs prints as runid) under each
# query id. The preference measures see only the judged documents, so these are all the
# run needs; the CR93E documents are not retrieved.
PREFS_RUN_SCORES = {
    "FR940303-1-00022": 2.918622, "FBIS4-45333": 2.277421, "FBIS4-41839": 2.170714,
    "FBIS3-25940": 2.164362, "FBIS4-55845": 2.162241, "FBIS4-40452": 2.153299,
    "FBIS4-2356": 2.136141, "FBIS4-42757": 2.114265, "FBIS4-39881": 1.887065,
}  # fmt: skip

# trec_eval's test/out.test.prefs (trec_eval -m all_prefs -q -R prefs), the 14 measures
# of each query in trec_eval's order (PREFS), printed to 4 decimals.
OUT_TEST_PREFS = """
1.EC.AB 1 1 1 1 1 1 1 1 1 1 1 1 1 1
2.EC.A 1 1 0 1 1 1 1 0 0 0 1 1 1 1
3.EC.B 1 0 0 0 0 0 0 0 0 0 0 0 0 0
4.EC.noRet 1 0 0 0 0 0 0 0 0 0 0 0 0 0
5.EC.noPrf 0 0 0 0 0 0 1 0 0 0 1 0 0 0
6.EC.noRel 0 0 0 0 0 0 0 0 0 0 0 0 0 0
7.EC.no 0 0 0 0 0 0 1 0 0 0 1 0 0 0
11.PA=1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
12.PA=2 1 1 0 1 1 1 1 0 0 0 1 1 1 1
13.PA=3 1 0 0 0 0 0 0 0 0 0 0 0 0 0
14.PA=4 1 0 0 0 0 0 0 0 0 0 0 0 0 0
15.PA=5 0 0 0 0 0 0 1 0 0 0 1 0 0 0
16.PA=6 0 0 0 0 0 0 0 0 0 0 0 0 0 0
17.PA=7 0 0 0 0 0 0 1 0 0 0 1 0 0 0
21.EC.cb 30 12 4 .4000 .4000 .4000 .4444 .3333 .3333 .3333 .4444 .4615 .4615 .4615
22.EC.c3l 41 19 9 .4634 .4634 .4634 .4894 .5294 .5294 .5294 .5652 .5278 .5278 .5278
23.EC.cml 52 31 17 .5962 .5962 .5962 .6243 .8095 .8095 .8095 .6735 .6739 .6739 .6739
24.EC.mg 16 9 4 .5625 .5833 .5333 .5616 .5714 .6111 .5000 .4810 .5625 .5833 .5333
31.PA.cb 30 12 4 .4000 .4000 .4000 .4444 .3333 .3333 .3333 .4444 .4615 .4615 .4615
32.PA.c3l 41 19 9 .4634 .4634 .4634 .4894 .5294 .5294 .5294 .5652 .5278 .5278 .5278
33.PA.cml 52 31 17 .5962 .5962 .5962 .6243 .8095 .8095 .8095 .6735 .6739 .6739 .6739
34.PA.mg 16 9 4 .5625 .5833 .5333 .5616 .5714 .6111 .5000 .6476 .5625 .5833 .5333
35.PA.mgmx 16 9 4 .5625 .5833 .5333 .5616 .5714 .6111 .5000 .6476 .5625 .5833 .5333
40.PA.tran 24 17 8 .7083 .7083 .7083 .7121 .8889 .8889 .8889 .7500 .7727 .7727 .7727
all 326 172 82 .3881 .3907 .3845 .5630 .3312 .3361 .3222 .5789 .4078 .4104 .4041
"""


def _prefs_test_inputs(tmp_path: Path) -> tuple[Path, Path]:
    prefs_path, run_path = tmp_path / "prefs.test", tmp_path / "prefs.results.test"
    text = _prefs_test_file()
    prefs_path.write_text(text)
    queries = sorted({line.split()[0] for line in text.splitlines() if line[:1] != "#"})
    with run_path.open("w") as f:
        for query in queries:
            for i, (doc, score) in enumerate(PREFS_RUN_SCORES.items()):
                f.write(f"{query}\tQ0\t{doc}\t{i + 1}\t{score}\tSTANDARD\n")
    return run_path, prefs_path


def test_prefs_measures_agree_with_trec_eval_test_output(tmp_path: Path) -> None:
    """Every preference measure on trec_eval's own test (test/prefs.test against its
    prefs.results.test), per query and the summary, against test/out.test.prefs (4
    decimals). pytrec_eval does not carry the preference measures. Exercises one and
    several sub-groups, transitive preferences, several judgment groups that disagree,
    documents never retrieved, and both of prefs_avgjg_Rnonrel's recomputations."""
    run_path, prefs_path = _prefs_test_inputs(tmp_path)
    expected = {
        line.split()[0]: [float(v) for v in line.split()[1:]]
        for line in OUT_TEST_PREFS.strip().splitlines()
    }
    got = pe.trec_eval(run_path, prefs_path, PREFS, per_query=True, rel_format="prefs")
    assert sorted(got["query"].to_list()) == sorted(q for q in expected if q != "all")
    for row in got.iter_rows(named=True):
        want = expected[row["query"]]
        for name, value in zip(PREFS, want, strict=True):
            assert row[name] == pytest.approx(value, abs=5e-5), (row["query"], name)
    summary = pe.trec_eval(run_path, prefs_path, ["runid", "num_q", *PREFS], rel_format="prefs")
    assert summary["runid"].item() == "STANDARD" and summary["num_q"].item() == 24
    for name, value in zip(PREFS, expected["all"], strict=True):
        assert summary[name].item() == pytest.approx(value, abs=5e-5), name
    assert summary["prefs_num_prefs_poss"].dtype == pl.Int64  # a count, summed
    # the default measures of -R prefs are these; the CLI entry point agrees
    assert pe.trec_eval(run_path, prefs_path, rel_format="prefs").equals(summary.drop("runid"))
    cli = trec_cli(run_path, prefs_path, PREFS, True, rel_format="prefs")
    assert cli.equals(got)


def _areas(pairs: list[tuple[int, int]], njr: int) -> list[int]:
    """[ful_ret, poss_ret, ful_imp, poss_imp, notoccur] of preferences (a, b) between docid
    ranks, a preferred, as form_prefs_counts.c's add_ec_pref_to_jg counts them."""
    ful_ret = poss_ret = ful_imp = poss_imp = notocc = 0
    for a, b in pairs:
        if a < b:
            if b < njr:
                ful_ret += 1
            elif a < njr:
                ful_imp += 1
            else:
                notocc += 1
        elif a < njr:
            poss_ret += 1
        elif b < njr:
            poss_imp += 1
        else:
            notocc += 1
    return [ful_ret, poss_ret + ful_ret, ful_imp, poss_imp + ful_imp, notocc]


def _rnonrel_loops(jg: dict, njr: int, nj: int, ret_only: bool) -> float:
    """m_prefs_avgjg_Rnonrel.c / _ret.c for one judgment group, as loops over its
    classes (EC) or its preference array (PA)."""
    fr, pr, fi, pi, no = _areas(jg["pairs"], njr)
    num_rel = sum(jg["rel"].values())
    num_rel_ret = sum(v for d, v in jg["rel"].items() if d < njr)
    num_nonrel = sum(jg["nonrel"].values())
    num_nonrel_ret = sum(v for d, v in jg["nonrel"].items() if d < njr)
    big_r, big_n = (num_rel_ret, num_nonrel_ret) if ret_only else (num_rel, num_nonrel)
    if big_r >= big_n:
        ful = fr + (0 if ret_only else fi) + num_rel_ret * (big_r - big_n)
        poss = pr + (0 if ret_only else pi + no) + num_rel * (big_r - big_n)
    elif "ecs" in jg:
        ecs = jg["ecs"]
        kept = ecs[-1][:big_r]
        if ret_only:
            kept = [b for b in kept if b < njr]
        ful = poss = 0
        for e1 in range(len(ecs)):
            firsts = [a for a in ecs[e1] if a < njr] if ret_only else ecs[e1]
            for e2 in range(e1 + 1, len(ecs) - 1):
                seconds = [b for b in ecs[e2] if b < njr] if ret_only else ecs[e2]
                for a in firsts:
                    for b in seconds:
                        hit = a < b and (ret_only or a < njr)
                        ful, poss = ful + hit, poss + (not hit)
            for a in firsts:
                for b in kept:
                    hit = a < b and (ret_only or a < njr)
                    ful, poss = ful + hit, poss + (not hit)
        poss += ful
    else:
        seen, first = 0, njr if ret_only else nj
        for i in range(njr if ret_only else nj):
            if jg["level"].get(i) == 0.0:
                seen += 1
                if seen == num_rel + 1:
                    first = i
                    break
        kept_pairs = [
            (a, b)
            for a, b in jg["pairs"]
            if not any(x >= first and jg["level"].get(x) == 0.0 for x in (a, b))
        ]
        fr, pr, fi, pi, no = _areas(kept_pairs, njr)
        ful, poss = (fr, pr) if ret_only else (fr + fi, pr + pi + no)
    return ful / poss if poss else float("nan")


def _measures_in_loops(groups: list[dict], counts: list[list[int]], njr: int) -> dict:
    """The m_prefs_*.c formulas over a query's judgment groups and its counts array."""
    nj = len(counts)
    areas = [g["areas"] for g in groups]
    fr, pr, fi, pi, no = (sum(a[i] for a in areas) for i in range(5))

    def ratio(f: float, p: float) -> float:
        return f / p if p else 0.0

    def avg(parts: list[tuple[int, int]]) -> float:
        total = sum(f / p for f, p in parts if p)
        return total / len(groups) if total > 0 else 0.0

    def rnonrel(ret_only: bool) -> float:
        total = sum(_rnonrel_loops(g, njr, nj, ret_only) for g in groups)
        return total / len(groups) if total > 0 else 0.0  # NaN (0/0) gives 0

    def pair(lo: int) -> float:  # pairs (i < j) with i retrieved and j < lo
        total, n = 0.0, 0
        for i in range(nj):
            for j in range(i + 1, nj):
                if counts[i][j] or counts[j][i]:
                    if i < njr and j < lo:
                        total += counts[i][j] / (counts[i][j] + counts[j][i])
                        n += 1
                    elif lo == nj + 1:  # prefs_pair counts every pair
                        n += 1
        return total / n if n else 0.0

    return {
        "prefs_num_prefs_poss": pr + pi + no,
        "prefs_num_prefs_ful": fr + fi,
        "prefs_num_prefs_ful_ret": fr,
        "prefs_simp": ratio(fr + fi, pr + pi + no),
        "prefs_pair": pair(nj + 1),
        "prefs_avgjg": avg([(f + f2, p + p2 + n) for f, p, f2, p2, n in areas]),
        "prefs_avgjg_Rnonrel": rnonrel(False),
        "prefs_simp_ret": ratio(fr, pr),
        "prefs_pair_ret": pair(njr),
        "prefs_avgjg_ret": avg([(f, p) for f, p, _, _, _ in areas]),
        "prefs_avgjg_Rnonrel_ret": rnonrel(True),
        "prefs_simp_imp": ratio(fr + fi, pr + pi),
        "prefs_pair_imp": pair(nj),
        "prefs_avgjg_imp": avg([(f + f2, p + p2) for f, p, f2, p2, _ in areas]),
    }


def prefs_oracle(
    run: list[tuple[str, str, float]],
    prefs: list[tuple[str, str, str, str, float]],
    max_docs: int | None = None,
    complete: bool = False,
) -> dict[str, dict[str, float]]:
    """trec_eval's form_prefs_counts.c and m_prefs_*.c transcribed as plain loops: docid
    ranks (retrieved judged documents by score descending, document id ascending, cut to
    max_docs; the others by id), equivalence classes or a transitively closed preference
    array per judgment group, the five areas, and each measure's formula."""
    queries = {p[0] for p in prefs}
    if not complete:
        queries &= {r[0] for r in run}
    out = {}
    for q in sorted(queries):
        lines = [p[1:] for p in prefs if p[0] == q]
        ranked = sorted(((d, s) for qq, d, s in run if qq == q), key=lambda t: (-t[1], t[0]))
        ranked = ranked[:max_docs] if max_docs else ranked
        judged = {line[2] for line in lines}
        docid = {d: i for i, d in enumerate(d for d, _ in ranked if d in judged)}
        njr = len(docid)
        for d in sorted(judged - set(docid)):
            docid[d] = len(docid)
        nj = len(docid)
        counts = [[0] * nj for _ in range(nj)]
        groups = []
        for g in sorted({line[0] for line in lines}):
            gl = [(s, docid[d], lv) for gg, s, d, lv in lines if gg == g]
            subs = sorted({s for s, _, _ in gl})
            if len(subs) == 1:
                levels = sorted({lv for _, _, lv in gl}, reverse=True)
                ecs = [sorted(d for _, d, lv in gl if lv == level) for level in levels]
                pairs = [
                    (a, b)
                    for i in range(len(ecs))
                    for j in range(i + 1, len(ecs))
                    for a in ecs[i]
                    for b in ecs[j]
                ]
                rel = {d: lv > 0 for _, d, lv in gl}
                jg = {
                    "ecs": ecs,
                    "pairs": pairs,
                    "rel": rel,
                    "nonrel": {d: not r for d, r in rel.items()},
                }
            else:
                pa = {(a, b) for s, a, la in gl for t, b, lb in gl if s == t and la > lb}
                nodes = sorted({d for _, d, _ in gl})
                for k in nodes:  # Floyd-Warshall closure
                    for i in nodes:
                        for j in nodes:
                            if (i, k) in pa and (k, j) in pa:
                                pa.add((i, j))
                level = {}
                for _, d, lv in sorted(gl, key=lambda t: (t[0], -t[2], t[1])):
                    level[d] = lv  # the last line in trec_eval's order wins
                jg = {
                    "pairs": sorted((a, b) for a, b in pa if a != b),
                    "level": level,
                    "rel": {d: v > 0 for d, v in level.items()},
                    "nonrel": {d: v == 0 for d, v in level.items()},
                }
            for a, b in jg["pairs"]:
                counts[a][b] += 1
            jg["areas"] = _areas(jg["pairs"], njr)
            groups.append(jg)
        out[q] = _measures_in_loops(groups, counts, njr)
    return out


def random_prefs(
    seed: int, n_queries: int = 12
) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, str, str, float]]]:
    """A run (tied scores, documents never judged) and preference judgments: per query 1
    to 3 judgment groups, each one sub-group (levels possibly 0 or negative) or several
    sub-groups drawing documents of one hidden order (consistent, as trec_eval requires),
    some documents in several groups, some judged documents never retrieved, a few
    queries only in the judgments."""
    rng = np.random.default_rng(seed)
    run, prefs = [], []
    for q in range(n_queries):
        docs = [f"d{i:02d}" for i in rng.choice(30, size=14, replace=False)]
        if q % 6 != 5:  # some queries only in the judgments
            for d in rng.choice(docs, size=int(rng.integers(1, 14)), replace=False):
                run.append((f"q{q}", str(d), float(rng.integers(0, 6)) / 2))
        for g in range(int(rng.integers(1, 4))):
            pool = rng.choice(docs, size=int(rng.integers(2, 9)), replace=False)
            hidden = dict(
                zip(pool, rng.choice([0, 0, 0, 1, 2, 3, 1.5], size=len(pool)), strict=True)
            )
            n_sub = int(rng.integers(1, 4))
            if n_sub == 1:
                for d, level in hidden.items():
                    level = -1.0 if level == 0 and rng.random() < 0.2 else level
                    prefs.append((f"q{q}", f"u{g}", "s", str(d), float(level)))
                continue
            for s in range(n_sub):  # each sub-group: some documents, levels scaled
                scale = float(rng.choice([0.5, 1.0, 3.0]))
                picked = rng.choice(pool, size=int(rng.integers(2, len(pool) + 1)), replace=False)
                for d in picked:
                    prefs.append((f"q{q}", f"u{g}", f"s{s}", str(d), hidden[d] * scale))
    return run, prefs


def _prefs_frames(run: list, prefs: list) -> tuple[pl.DataFrame, pl.DataFrame]:
    return (
        pl.DataFrame(run, schema=["query", "doc", "score"], orient="row"),
        pl.DataFrame(prefs, schema=["query", "jg", "jsg", "doc", "relevance"], orient="row"),
    )


@pytest.mark.parametrize("seed", [0, 1, 3, 4])  # 4: an EC group recomputed for Rnonrel_ret
def test_prefs_measures_agree_with_the_definition_in_loops(seed: int) -> None:
    """Random judgments against :func:`prefs_oracle` (trec_eval's form_prefs_counts.c and
    m_prefs_*.c transcribed as loops), with -M and -c; the summary is the mean (counts:
    the sum) of the per-query values."""
    run, prefs = random_prefs(seed)
    run_df, prefs_df = _prefs_frames(run, prefs)
    for max_docs, complete in ((None, False), (4, False), (None, True)):
        expected = prefs_oracle(run, prefs, max_docs, complete)
        got = pe.trec_eval(
            run_df, prefs_df, PREFS, per_query=True, rel_format="prefs",
            max_docs=max_docs, complete_queries=complete,
        )  # fmt: skip
        assert got["query"].to_list() == sorted(expected)
        for row in got.iter_rows(named=True):
            want = expected[row["query"]]
            for name in PREFS:
                assert row[name] == pytest.approx(want[name], abs=1e-12), (row["query"], name)
        summary = pe.trec_eval(
            run_df, prefs_df, PREFS, rel_format="prefs", max_docs=max_docs,
            complete_queries=complete,
        )  # fmt: skip
        for name in PREFS:
            values = [v[name] for v in expected.values()]
            ref = sum(values) if name in tp.COUNTS else float(np.mean(values))
            assert summary[name].item() == pytest.approx(ref, abs=1e-12), name


def test_prefs_worked_example() -> None:
    """Two users (judgment groups) of one query, worked by hand from form_prefs_counts.c
    and m_prefs_*.c. The run ranks c, a (b not retrieved): docid ranks c 0, a 1, b 2.

    u1 judges a 2, b 1, c 0: a > b fulfilled by implication (only a retrieved), a > c
    failed among the retrieved, b > c failed by implication: fulfilled (ret, imp) = (0,
    1), possible (ret, imp, neither) = (1, 2, 0). u2 judges c 1, a 0: c > a fulfilled
    among the retrieved. Over both: 4 possible, 2 fulfilled, 1 among the retrieved."""
    run = pl.DataFrame({"query": "q", "doc": ["c", "a", "x"], "score": [3.0, 2.0, 1.0]})
    prefs = pl.DataFrame(
        {
            "query": "q",
            "jg": ["u1", "u1", "u1", "u2", "u2"],
            "jsg": "s",
            "doc": ["a", "b", "c", "c", "a"],
            "relevance": [2.0, 1.0, 0.0, 1.0, 0.0],
        }
    )
    got = pe.trec_eval(run, prefs, PREFS, per_query=True, rel_format="prefs").row(0, named=True)
    expected = {
        "prefs_num_prefs_poss": 4,
        "prefs_num_prefs_ful": 2,
        "prefs_num_prefs_ful_ret": 1,
        "prefs_simp": 2 / 4,
        # pairs (c, a): 1 of its 2 preferences fulfilled; (c, b): 0 of 1; (a, b): 1 of 1
        "prefs_pair": (1 / 2 + 0 + 1) / 3,
        "prefs_avgjg": (1 / 3 + 1 / 1) / 2,
        # u1: R = 2 relevant (a, b) >= N = 1: + R - N = 1 fulfilled per relevant retrieved
        # (a) and 1 possible per relevant: (1 + 1) / (3 + 2); u2: 1 / 1
        "prefs_avgjg_Rnonrel": (2 / 5 + 1) / 2,
        "prefs_simp_ret": 1 / 2,
        "prefs_pair_ret": 1 / 2,
        "prefs_avgjg_ret": (0 / 1 + 1 / 1) / 2,
        # u1 among the retrieved: R = 1 (a) >= N = 1 (c): 0 / 1; u2: 1 / 1
        "prefs_avgjg_Rnonrel_ret": (0 + 1) / 2,
        "prefs_simp_imp": (1 + 1) / (3 + 1),
        "prefs_pair_imp": (1 / 2 + 0 + 1) / 3,
        "prefs_avgjg_imp": (1 / 3 + 1) / 2,
    }
    for name, value in expected.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name


def test_prefs_sub_groups_are_closed_transitively() -> None:
    """A judgment group of two sub-groups, a > b in one and b > c in the other, also
    prefers a to c (form_prefs_counts.c adds transitive preferences); one sub-group
    alone holds only its own pairs. The run ranks b, a, c."""
    run = pl.DataFrame({"query": "q", "doc": ["b", "a", "c"], "score": [3.0, 2.0, 1.0]})
    prefs = pl.DataFrame(
        {
            "query": "q",
            "jg": "u",
            "jsg": ["s1", "s1", "s2", "s2"],
            "doc": ["a", "b", "b", "c"],
            "relevance": [2.0, 1.0, 5.0, 3.0],
        }
    )
    got = pe.trec_eval(run, prefs, PREFS, per_query=True, rel_format="prefs")
    # a > b failed (a below b), b > c and the transitive a > c fulfilled
    assert got["prefs_num_prefs_poss"].item() == 3
    assert got["prefs_simp"].item() == pytest.approx(2 / 3)
    alone = pe.trec_eval(run, prefs.filter(pl.col("jsg") == "s1"), PREFS, rel_format="prefs")
    assert alone["prefs_num_prefs_poss"].item() == 1 and alone["prefs_simp"].item() == 0.0


def test_prefs_ties_break_by_document_id_ascending() -> None:
    """form_prefs_counts.c sorts equal scores by document id ascending (the ordinary
    measures, form_res_rels.c, descending): with a and b tied, a is ranked first."""
    run = pl.DataFrame({"query": "q", "doc": ["b", "a"], "score": [1.0, 1.0]})
    prefs = pl.DataFrame(
        {"query": "q", "jg": "u", "jsg": "s", "doc": ["a", "b"], "relevance": [1.0, 0.0]}
    )
    got = pe.trec_eval(run, prefs, ["prefs_simp"], rel_format="prefs")
    assert got["prefs_simp"].item() == 1.0
    qrels = pl.DataFrame({"query": "q", "doc": ["a", "b"], "relevance": [1, 0]})
    assert pe.trec_eval(run, qrels, ["recip_rank"])["recip_rank"].item() == 0.5


def test_qrels_prefs_reads_a_qrels_file_as_preferences(tmp_path: Path) -> None:
    """-R qrels_prefs (get_qrels_prefs.c): a qrels file whose iteration field is the
    judgment group, one sub-group, the relevance a real level; the same as the
    preference judgments written out so, and as :func:`prefs_oracle` on them."""
    run, qrels = generate(8, 10)
    qrels = qrels.with_columns(pl.col("query").hash().mod(2).cast(pl.String).alias("iteration"))
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} {it} {d} {r}\n" for q, d, r, it in qrels.iter_rows()))
    got = pe.trec_eval(run, path, PREFS, per_query=True, rel_format="qrels_prefs")
    prefs = qrels.select(
        "query", pl.col("iteration").alias("jg"), pl.lit("0").alias("jsg"), "doc",
        pl.col("relevance").cast(pl.Float64),
    )  # fmt: skip
    assert pe.trec_eval(run, prefs, PREFS, per_query=True, rel_format="prefs").equals(got)
    # a frame: the iteration column is the judgment group
    assert pe.trec_eval(run, qrels, PREFS, per_query=True, rel_format="qrels_prefs").equals(got)
    expected = prefs_oracle(list(run.iter_rows()), list(prefs.iter_rows()))
    for row in got.iter_rows(named=True):
        for name in PREFS:
            assert row[name] == pytest.approx(expected[row["query"]][name], abs=1e-12)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (  # a > b in one sub-group, b > a in another: an inconsistent judgment group
            [
                ("u", "s1", "a", 2.0),
                ("u", "s1", "b", 1.0),
                ("u", "s2", "b", 2.0),
                ("u", "s2", "a", 1.0),
            ],
            'documents "a" and "b" are each preferred to the other in judgment group "u"',
        ),
        (
            [
                ("u", "s1", "a", 0.0),
                ("u", "s1", "b", 1.0),
                ("u", "s2", "a", 2.0),
                ("u", "s2", "c", 1.0),
            ],
            'document "a" has both level 0 .* judgment group "u" of query "q"',
        ),
        (
            [("u", "s1", "a", 2.0), ("u", "s1", "a", 1.0), ("u", "s1", "b", 0.0)],
            'document "a" appears more than once in judgment sub-group "s1" of judgment group "u"',
        ),
        ([("u", "s1", "a", float("nan")), ("u", "s1", "b", 1.0)], 'column "relevance" .* NaN'),
        ([("u", None, "a", 1.0), ("u", "s1", "b", 1.0)], 'column "jsg" .* 1 null'),
    ],
)
def test_inconsistent_preferences_are_errors(rows: list, message: str) -> None:
    run = pl.DataFrame({"query": "q", "doc": ["a", "b"], "score": [2.0, 1.0]})
    prefs = pl.DataFrame(
        [("q", *r) for r in rows], schema=["query", "jg", "jsg", "doc", "relevance"], orient="row"
    )
    with pytest.raises(DataValidationError, match=message):
        pe.trec_eval(run, prefs, ["prefs_simp"], rel_format="prefs")


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("prefs", "q u s a 1\nq u s b\n", r"prefs.txt, line 2: .* 5 fields .* found 4"),
        ("prefs", "q u s a 1\nq u s b 1 x\n", r"prefs.txt, line 2: .* 5 fields .* found 6"),
        (
            "prefs",
            "q u s a 1\n# note\nq u s b high\n",
            r"prefs.txt, line 3: the relevance .* 'high'",
        ),
        ("qrels_prefs", "q 0 a 1\nq 0 b\n", r"prefs.txt, line 2: .* 4 fields .* found 3"),
        ("qrels_prefs", "q 0 a 1\nq 0 b 1 x\n", r"prefs.txt, line 2: .* found 5"),
        ("qrels_prefs", "q 0 a x\n", r"prefs.txt, line 1: the relevance .* 'x'"),
        (
            "qrels_jg",
            "q u a 1\nq u b 1.5\n",
            r"prefs.txt, line 2: the relevance .* integer; found '1.5'",
        ),
        ("qrels_jg", "q u a\n", r"prefs.txt, line 1: .* 4 fields .* found 3"),
        ("qrels_jg", "q u a 1 x\n", r"prefs.txt, line 1: .* found 5"),
    ],
)
def test_malformed_judgment_lines_name_file_and_line(
    tmp_path: Path, fmt: str, text: str, message: str
) -> None:
    """The preference and judgment-group readers, strict as trec_eval's get_prefs.c,
    get_qrels_prefs.c and get_qrels_jg.c: another number of fields is malformed."""
    path = tmp_path / "prefs.txt"
    path.write_text(text)
    reader = {"prefs": pe.read_trec_prefs, "qrels_jg": pe.read_trec_qrels_jg}.get(fmt)
    if reader is not None:
        with pytest.raises(Exception, match=message):
            reader(path).collect()
    run_path = tmp_path / "run.txt"
    run_path.write_text("q Q0 a 1 1.0 x\n")
    with pytest.raises(DataValidationError, match=message):
        trec_cli(run_path, path, None, False, rel_format=fmt)


def test_judgment_readers_skip_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "prefs.txt"
    path.write_text("# users\nq\tu  s a 2\n\n  q u s a#1 0.5\n")
    assert pe.read_trec_prefs(path).collect().rows() == [
        ("q", "u", "s", "a", 2.0),
        ("q", "u", "s", "a#1", 0.5),
    ]
    path.write_text("# groups\nq u a 1\n\nq v a 0\n")
    assert pe.read_trec_qrels_jg(path).collect().rows() == [("q", "u", "a", 1), ("q", "v", "a", 0)]


def random_qrels_jg(seed: int, n_queries: int = 15) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run and judgment groups: 1 to 3 users per query, each judging its own sample
    of documents with grades 0 to 3 (some -1: pooled, unjudged)."""
    run, _ = generate(seed, n_queries)
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries + 2):
        for u in range(int(rng.integers(1, 4))):
            for d in rng.choice(80, size=int(rng.integers(1, 20)), replace=False):
                rows.append((f"q{q}", f"user{u}", f"d{d}", int(rng.choice([-1, 0, 0, 1, 2, 3]))))
    return run, pl.DataFrame(rows, schema=["query", "jg", "doc", "relevance"], orient="row")


JG_CHECKED = ["map_avgjg", "P_avgjg.1,5,10", "Rprec_mult_avgjg"]


def jg_oracle(
    run: pl.DataFrame, jg: pl.DataFrame, level: int = 1, judged_only: bool = False
) -> dict[str, dict[str, float]]:
    """m_map_avgjg.c, m_P_avgjg.c, m_Rprec_mult_avgjg.c: trec_eval's map, P and
    Rprec_mult of each judgment group's qrels (pytrec_eval, which does not carry the
    avgjg measures themselves), averaged over the groups of the query."""
    out: dict[str, dict[str, list[float]]] = {}
    for (q, _), part in jg.group_by("query", "jg"):
        ranking = run.filter(pl.col("query") == q)
        if ranking.is_empty():
            continue
        qrels = part.select("query", "doc", "relevance")
        values = out.setdefault(str(q), {})
        for measure in ("map", "P.1,5,10", "Rprec_mult"):
            for key, value in c_oracle(ranking, qrels, measure, level, judged_only)[q].items():
                values.setdefault(key, []).append(value)
    return {q: {k: float(np.mean(v)) for k, v in m.items()} for q, m in out.items()}


@pytest.mark.parametrize(
    ("seed", "level", "judged_only", "max_docs"),
    [
        (0, 1, False, None),
        (1, 2, False, None),
        (2, 1, True, None),
        (3, 1, False, 6),
        (4, 2, True, 6),
    ],
)
def test_judgment_group_measures_agree_with_trec_eval(
    seed: int, level: int, judged_only: bool, max_docs: int | None
) -> None:
    """map_avgjg, P_avgjg and Rprec_mult_avgjg per query and in the summary, with -l,
    -J and -M, against :func:`jg_oracle`."""
    run, jg = random_qrels_jg(seed)
    top = run
    if max_docs is not None:  # -M: the top documents in trec_eval's order
        top = run.sort(["query", "score", "doc"], descending=[False, True, True]).filter(
            pl.int_range(pl.len()).over("query") < max_docs
        )
    expected = jg_oracle(top, jg, level, judged_only)
    kw = {"min_relevance": level, "judged_only": judged_only, "max_docs": max_docs}
    got = pe.trec_eval(run, jg, JG_CHECKED, per_query=True, rel_format="qrels_jg", **kw)
    assert got["query"].to_list() == sorted(expected)
    assert got.width == 1 + 1 + 3 + 10
    for row in got.iter_rows(named=True):
        ref = expected[row.pop("query")]
        for name, value in row.items():
            key = name.replace("_avgjg", "")
            assert value == pytest.approx(ref[key], abs=1e-12), (name, value, ref[key])
    summary = pe.trec_eval(run, jg, JG_CHECKED, rel_format="qrels_jg", **kw)
    for name in got.columns[1:]:
        values = [v[name.replace("_avgjg", "")] for v in expected.values()]
        assert summary[name].item() == pytest.approx(float(np.mean(values)), abs=1e-12)


def test_judgment_groups_complete_queries_and_duplicates(tmp_path: Path) -> None:
    """-c evaluates the judgment groups' queries absent from the run with an empty
    ranking (0, counted in the mean); a document judged twice by one group is an error,
    as in get_qrels_jg.c; a path is read with :func:`read_trec_qrels_jg`."""
    run, jg = random_qrels_jg(5)
    present = pe.trec_eval(run, jg, JG_CHECKED, per_query=True, rel_format="qrels_jg")
    complete = pe.trec_eval(
        run, jg, JG_CHECKED, per_query=True, rel_format="qrels_jg", complete_queries=True
    )
    assert complete["query"].to_list() == sorted(jg["query"].unique().to_list())
    missing = complete.filter(~pl.col("query").is_in(run["query"].implode()))
    assert missing.height >= 2 and present.height + missing.height == complete.height
    assert (missing.drop("query").sum_horizontal() == 0).all()
    path = tmp_path / "qrels_jg.txt"
    path.write_text("".join(f"{q} {g} {d} {r}\n" for q, g, d, r in jg.iter_rows()))
    from_file = pe.trec_eval(run, path, JG_CHECKED, per_query=True, rel_format="qrels_jg")
    assert from_file.equals(present)
    twice = pl.concat([jg, jg.head(1)])
    with pytest.raises(DataValidationError, match="appears more than once in judgment group"):
        pe.trec_eval(run, twice, ["map_avgjg"], rel_format="qrels_jg")


def test_each_measure_reads_its_judgments_format() -> None:
    run, qrels = generate(3, 8)
    run_df, prefs = _prefs_frames(*random_prefs(0, 4))
    for measures, fmt, message in [
        (["map"], "prefs", "reads relevance judgments: rel_format='qrels'"),
        (["prefs_simp"], "qrels_jg", "reads preference judgments"),
        (["map_avgjg"], "qrels_prefs", "reads judgment groups: rel_format='qrels_jg'"),
        (["P_avgjg.5"], "qrels", "reads judgment groups"),
    ]:
        with pytest.raises(InvalidParameterError, match=message):
            pe.trec_eval(run, qrels, measures, rel_format=fmt)
    for bad in ({"rel_format": "prefz"}, {"rel_format": None}, {"collection_size": -1},
                {"collection_size": True}, {"collection_size": 2.5}):  # fmt: skip
        with pytest.raises(InvalidParameterError):
            pe.trec_eval(run, qrels, ["map"], **bad)
    # num_q and runid read no judgments: offered with every format
    got = pe.trec_eval(run_df, prefs, ["num_q", "runid", "prefs_simp"], rel_format="prefs")
    assert got.columns == ["num_q", "runid", "prefs_simp"] and got["runid"].item() is None


def test_collection_size_enters_utility_only() -> None:
    """collection_size is trec_eval's -N: utility.a,b,c,d adds d·N to each query
    (m_utility.c: d·(N + rel_ret - ret - rel), the counts from pytrec_eval); no other
    measure reads it."""
    run, qrels = generate(9)
    counts = oracle(run, qrels, ["num_ret", "num_rel", "num_rel_ret"])
    measures = ["utility.2,-1,0.5,0.25", "utility", "map", "ndcg", "P.5", "bpref"]
    base = pe.trec_eval(run, qrels, measures, per_query=True)
    sized = pe.trec_eval(run, qrels, measures, per_query=True, collection_size=100_000)
    for row in sized.iter_rows(named=True):
        c = counts[row["query"]]
        ret, rel, rel_ret = c["num_ret"], c["num_rel"], c["num_rel_ret"]
        want = 2 * rel_ret - (ret - rel_ret) + 0.5 * (rel - rel_ret)
        want += 0.25 * (100_000 + rel_ret - ret - rel)
        assert row["utility_2,-1,0.5,0.25"] == pytest.approx(want, abs=1e-9)
    assert sized.select("map", "ndcg", "P_5", "bpref").equals(
        base.select("map", "ndcg", "P_5", "bpref")
    )
    # the default utility (1, -1, 0, 0) has d = 0: unchanged
    assert sized["utility"].equals(base["utility"])


def test_max_docs_cuts_before_judged_only_drops() -> None:
    """-M then -J, as form_res_rels.c: the top documents of the run are kept first, and
    the unjudged ones among them dropped (not the top judged documents)."""
    run, qrels = generate(10)
    top = run.sort(["query", "score", "doc"], descending=[False, True, True]).filter(
        pl.int_range(pl.len()).over("query") < 6
    )
    got = pe.trec_eval(
        run, qrels, MEASURES, per_query=True, max_docs=6, judged_only=True, convention="9"
    )
    compared = 0
    for measure in MEASURES:
        columns = pe.trec_eval(run, qrels, [measure], per_query=True).columns
        compared += _compare(
            got.select(columns), c_oracle(top, qrels, measure, 1, True), measure.split(".")[0]
        )
    assert compared > 100


def test_cli_rel_format_and_collection_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """polars-eval trec -R FORMAT -N SIZE equals the Python API."""
    from polars_eval import cli

    run_path, prefs_path = _prefs_test_inputs(tmp_path)
    for argv, kwargs in [
        (["-R", "prefs", "-m", "prefs_simp", "-m", "prefs_pair_imp", "-q"],
         {"metrics": ["prefs_simp", "prefs_pair_imp"], "rel_format": "prefs", "per_query": True}),
        (["-R", "prefs"], {"rel_format": "prefs"}),
    ]:  # fmt: skip
        code = cli.main(["trec", str(run_path), str(prefs_path), *argv, "--format", "json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        expected = pe.trec_eval(run_path, prefs_path, **kwargs)
        assert _close(json.loads(out), expected)
    run, qrels = generate(2, 6)
    r, q = write_files(tmp_path, run, qrels)
    code = cli.main(
        ["trec", str(r), str(q), "-m", "utility.1,-1,0,1", "-N", "5000", "--format", "json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    expected = pe.trec_eval(r, q, ["utility.1,-1,0,1"], collection_size=5000)
    assert _close(json.loads(out), expected)
    code = cli.main(["trec", str(r), str(q), "-R", "prefs", "-m", "map"])
    _, err = capsys.readouterr()
    assert code == 2 and "reads relevance judgments" in err


def _close(rows: list[dict], expected: pl.DataFrame) -> bool:
    assert len(rows) == expected.height
    for row, want in zip(rows, expected.iter_rows(named=True), strict=True):
        for name, value in want.items():
            if isinstance(value, float):
                assert row[name] == pytest.approx(value, rel=1e-12), name
            else:
                assert row[name] == value, name
    return True
