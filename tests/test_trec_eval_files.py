"""``pe.trec_eval`` and ``polars-eval trec`` on trec_eval's own test files (SPEC §7).

The inputs and the expected outputs are trec_eval's (``tests/data/trec_eval/``, see its
README): ``-m all_trec -q`` with ``-c`` (complete queries), ``-M``, ``-J`` and ``-Z``, as
trec_eval 10.0 and 9.0.8 print them, to 4 decimals. Every printed line is compared, per
query and the ``all`` line, through the Python API and through the CLI.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import polars_eval as pe
from polars_eval import cli
from polars_eval.exceptions import DataValidationError, InvalidParameterError

DATA = Path(__file__).resolve().parent / "data" / "trec_eval"
QRELS = DATA / "qrels.test"
ZSCORES = DATA / "zscores_file"

# output file -> (run file, trec_eval's flags as pe.trec_eval's options)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "out.test.aq": ("results.test", {}),
    "out.test.aqZ": ("results.test", {"zscores": ZSCORES}),
    "out.test.aqc": ("results.trunc", {"complete_queries": True}),
    "out.test.aqcM": ("results.trunc", {"complete_queries": True, "max_docs": 100}),
    "out.test.aqcJ": ("results.trunc", {"complete_queries": True, "judged_only": True}),
    "out.test.aqc.v9.0.8": ("results.trunc", {"complete_queries": True, "convention": "9"}),
    "out.test.aqcM.v9.0.8": (
        "results.trunc",
        {"complete_queries": True, "max_docs": 100, "convention": "9"},
    ),
    "out.test.aqcJ.v9.0.8": (
        "results.trunc",
        {"complete_queries": True, "judged_only": True, "convention": "9"},
    ),
}
CLI_FLAGS = {"complete_queries": "-c", "judged_only": "-J", "max_docs": "-M", "zscores": "-Z"}


def read_output(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    """trec_eval's ``measure  query  value`` lines: the measures in order, and query ->
    measure -> the printed value (``all``: the summary)."""
    names: list[str] = []
    values: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        name, query, value = line.split()
        if name not in names:
            names.append(name)
        values.setdefault(query, {})[name] = value.strip("'")  # 9.0.8 quotes relstring
    return names, values


def agrees(got: Any, printed: str) -> bool:
    """A value equals trec_eval's, printed with 4 decimals (``-nan``: NaN; JSON: null)."""
    if isinstance(got, str):
        return got == printed
    if printed.lstrip("-") == "nan":
        return got is None or math.isnan(got)
    return got is not None and abs(got - float(printed)) <= 5.0001e-5


def check(per: dict[str, dict[str, Any]], summary: dict[str, Any], path: Path) -> int:
    """Every line of trec_eval's output ``path`` against our values per query and the
    summary; returns how many lines were compared."""
    _, expected = read_output(path)
    ours = set(per)
    theirs = set(expected) - {"all"}
    # 9.0.8 prints no line for a query absent from the run (-c); 10.0 prints every query
    assert theirs <= ours if path.name.endswith("v9.0.8") else theirs == ours
    n = 0
    for query, printed in expected.items():
        row = summary if query == "all" else per[query]
        for name, value in printed.items():
            if name == "runid" and query == "all":
                continue  # our summary's runid is the run's tag, as trec_eval's
            assert agrees(row[name], value), (path.name, query, name, value, row[name])
            n += 1
    return n


def _run(path: str) -> Path:
    return DATA / path


def requested(names: list[str], options: dict[str, Any]) -> list[str]:
    """The measures to ask for: trec_eval's printed names (-Z prints ``Zmap``)."""
    if "zscores" in options:
        names = [n.removeprefix("Z") for n in names]
    return [n for n in names if n not in ("runid", "num_q")]


@pytest.mark.parametrize("name", list(CASES))
def test_api_agrees_with_trec_eval_test_outputs(name: str) -> None:
    run, options = CASES[name]
    measures = requested(read_output(DATA / name)[0], options)
    per = pe.trec_eval(_run(run), QRELS, measures, per_query=True, **options)
    summary = pe.trec_eval(_run(run), QRELS, measures, **options)
    assert summary.height == 1
    by_query = {row.pop("query"): row for row in per.iter_rows(named=True)}
    assert check(by_query, summary.row(0, named=True), DATA / name) > 250


@pytest.mark.parametrize("name", ["out.test.aqc", "out.test.aqcM", "out.test.aqZ"])
def test_cli_agrees_with_trec_eval_test_outputs(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``polars-eval trec -q`` with ``-c``, ``-M 100``, ``-Z``: the same lines as
    trec_eval's (the CLI follows trec_eval 10)."""
    run, options = CASES[name]
    measures = requested(read_output(DATA / name)[0], options)
    argv = ["trec", _run(run), QRELS, *(f"-m{m}" for m in measures), "--format", "json"]
    for option, value in options.items():
        argv += [CLI_FLAGS[option]] if value is True else [CLI_FLAGS[option], value]
    outputs = []
    for extra in (["-q"], []):
        code = cli.main([str(a) for a in (*argv, *extra)])
        out, err = capsys.readouterr()
        assert code == 0, err
        outputs.append(json.loads(out))
    per = {row.pop("query"): row for row in outputs[0]}
    (summary,) = outputs[1]
    assert check(per, summary, DATA / name) > 250


def test_complete_queries_missing_query_worked_example() -> None:
    """-c: query 302 of qrels.test is absent from results.trunc. trec_eval 10.0 ranks one
    document outside the qrels for it, so the interpolated precision at recall 0 is 0/1 = 0
    (0/0 = NaN with -J, which drops that document); 9.0.8 never evaluates it, so it adds 0
    to the mean. A query of the run left with no document by -J is 0/0 in both."""
    run = _run("results.trunc")
    measures = ["iprec_at_recall.0", "11pt_avg"]

    def value(**options: Any) -> list[float]:
        per = pe.trec_eval(run, QRELS, measures, per_query=True, complete_queries=True, **options)
        return per.filter(pl.col("query") == "302").row(0)[1:]

    assert value() == (0.0, 0.0)
    assert value(convention="9") == (0.0, 0.0)
    assert value(convention="9", judged_only=True) == (0.0, 0.0)
    assert all(math.isnan(v) for v in value(judged_only=True))
    unjudged = pl.DataFrame({"query": ["302"], "doc": ["not-judged"], "score": [1.0]})
    for convention in ("9", "10"):
        emptied = pe.trec_eval(
            unjudged, QRELS, measures, per_query=True, judged_only=True, convention=convention
        )
        assert all(math.isnan(v) for v in emptied.row(0)[1:])


def test_unj_worked_example() -> None:
    """unj (trec_eval 10, m_unjudged.c): the share of the top k documents outside the
    qrels or judged with a negative relevance (pooled but unjudged); a shorter ranking
    counts as filled with judged documents: 15 documents, 4 unjudged, gives unj_20 =
    4 / 20. Ranked by score: j0 .. j14, u0 .. u3 unjudged at ranks 2, 3, 8, 15."""
    judged = [f"j{i}" for i in range(11)]
    docs = [judged[0], "u0", "u1", *judged[1:5], "u2", *judged[5:11], "u3"]
    run = pl.DataFrame({"query": "q", "doc": docs, "score": [15.0 - i for i in range(15)]})
    qrels = pl.DataFrame(
        {"query": "q", "doc": [*judged, "u3"], "relevance": [1, 0] * 5 + [1, -1]}
    )  # u3: in the qrels with a negative relevance
    got = pe.trec_eval(run, qrels, ["unj", "unj.1,3,15"]).row(0, named=True)
    expected = {"unj_5": 2 / 5, "unj_10": 3 / 10, "unj_20": 4 / 20}
    expected |= {"unj_1": 0.0, "unj_3": 2 / 3, "unj_15": 4 / 15}
    assert {k: got[k] for k in expected} == pytest.approx(expected, abs=1e-15)
    # -J drops the unjudged documents; -M 5 keeps the top 5; -c: a missing query is 0
    assert pe.trec_eval(run, qrels, ["unj.5"], judged_only=True)["unj_5"].item() == 0.0
    assert pe.trec_eval(run, qrels, ["unj.20"], max_docs=5)["unj_20"].item() == 2 / 20
    other = pl.DataFrame({"query": "r", "doc": "j0", "relevance": 1})
    complete = pe.trec_eval(
        run, pl.concat([qrels, other]), ["unj.5"], per_query=True, complete_queries=True
    )
    assert complete["unj_5"].to_list() == [0.4, 0.0]
    with pytest.raises(InvalidParameterError, match="cutoffs must be positive"):
        pe.trec_eval(run, qrels, ["unj.0"])


def test_zscores_worked_example(tmp_path: Path) -> None:
    """-Z (convert_zscores.c): (value - mean) / stddev per query and measure; a standard
    deviation of 0 gives 0 at the mean and -1000000 elsewhere, as a pair the file lacks;
    the summary averages (sums, for counts) the z-scores."""
    run = pl.DataFrame({"query": ["1", "1", "2"], "doc": ["a", "b", "a"], "score": [2.0, 1.0, 1.0]})
    qrels = pl.DataFrame({"query": ["1", "2"], "doc": ["b", "a"], "relevance": [1, 1]})
    # P_1: query 1 0.0, query 2 1.0; recip_rank 0.5 and 1.0; num_ret 2 and 1
    path = tmp_path / "zscores.txt"
    path.write_text(
        "1 P_1 0.5 0.25\n2 P_1 0.5 0.25\n"  # -2 and 2
        "1 recip_rank 0.5 0\n2 recip_rank 0.5 0\n"  # the mean: 0; not: missing
        "1 num_ret 1 0.5\n"  # 2; query 2 lacks it
    )
    measures = ["P.1", "recip_rank", "num_ret", "map"]
    per = pe.trec_eval(run, qrels, measures, per_query=True, zscores=path)
    assert per.columns == ["query", "ZP_1", "Zrecip_rank", "Znum_ret", "Zmap"]
    missing = -1_000_000.0
    assert per.rows() == [("1", -2.0, 0.0, 2.0, missing), ("2", 2.0, missing, missing, missing)]
    summary = pe.trec_eval(run, qrels, ["num_q", *measures], zscores=path)
    assert summary.row(0) == (2, 0.0, missing / 2, 2.0 + missing, missing)
    frame = pl.read_csv(path, separator=" ", has_header=False, new_columns=["query", "measure", "mean", "stddev"], schema_overrides={"query": pl.String})  # fmt: skip
    assert pe.trec_eval(run, qrels, measures, per_query=True, zscores=frame).equals(per)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1 P_1 0.5\n", r"zscores.txt, line 1: a TREC zscores line has 4 fields"),
        ("1 P_1 0.5 0.2 9\n", r"line 1: a TREC zscores line has 4 fields .* found 5"),
        ("1 P_1 0.5 0.2\n1 P_1 x 0.2\n", r"line 2: the mean of a TREC zscores line must be"),
        ("1 P_1 0.5 0.2\n1 P_1 0.4 0.2\n", r'measure "P_1" of query "1" more than once'),
    ],
)
def test_malformed_zscores(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "zscores.txt"
    path.write_text(text)
    run = pl.DataFrame({"query": "1", "doc": "a", "score": 1.0})
    qrels = pl.DataFrame({"query": "1", "doc": "a", "relevance": 1})
    with pytest.raises(DataValidationError, match=message):
        pe.trec_eval(run, qrels, ["P.1"], zscores=path)
    with pytest.raises(DataValidationError, match="zscores file .* not found"):
        pe.trec_eval(run, qrels, ["P.1"], zscores=tmp_path / "none.txt")
    with pytest.raises(InvalidParameterError, match="zscores must be a path"):
        pe.trec_eval(run, qrels, ["P.1"], zscores=3)
