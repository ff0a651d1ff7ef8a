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

DATA = Path(__file__).resolve().parent / "data" / "trec_eval"
QRELS = DATA / "qrels.test"
NOT_OFFERED = ("unj",)
"""Measures of trec_eval's output not compared yet."""

# output file -> (run file, trec_eval's flags as pe.trec_eval's options)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "out.test.aq": ("results.test", {}),
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
CLI_FLAGS = {"complete_queries": "-c", "judged_only": "-J"}


def read_output(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    """trec_eval's ``measure  query  value`` lines: the measures in order, and query ->
    measure -> the printed value (``all``: the summary)."""
    names: list[str] = []
    values: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        name, query, value = line.split()
        if name.startswith(NOT_OFFERED):
            continue
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


@pytest.mark.parametrize("name", list(CASES))
def test_api_agrees_with_trec_eval_test_outputs(name: str) -> None:
    run, options = CASES[name]
    measures, _ = read_output(DATA / name)
    per = pe.trec_eval(_run(run), QRELS, measures, per_query=True, **options)
    summary = pe.trec_eval(_run(run), QRELS, measures, **options)
    assert summary.height == 1
    by_query = {row.pop("query"): row for row in per.iter_rows(named=True)}
    assert check(by_query, summary.row(0, named=True), DATA / name) > 250


@pytest.mark.parametrize("name", ["out.test.aqc", "out.test.aqcM"])
def test_cli_agrees_with_trec_eval_test_outputs(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``polars-eval trec -c [-M 100] -q``: the same lines as trec_eval's (the CLI follows
    trec_eval 10)."""
    run, options = CASES[name]
    measures, _ = read_output(DATA / name)
    argv = ["trec", _run(run), QRELS, *(f"-m{m}" for m in measures), "--format", "json"]
    argv += [flag for option, flag in CLI_FLAGS.items() if options.get(option)]
    if "max_docs" in options:
        argv += ["-M", str(options["max_docs"])]
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
