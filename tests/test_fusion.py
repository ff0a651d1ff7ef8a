"""``pe.fuse`` (SPEC §14 "Fusion") against ``ranx.fuse`` and BAD_INPUTS row 60."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

import polars_eval as pe
from polars_eval.fusion import METHODS, NORMS

# ranx's numba functions warn while they compile (a cast inside ranx)
pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast from uint64 to int64:Warning")

WEIGHTS = [0.5, 1.5, -0.25]


def random_runs(seed: int = 0, n_queries: int = 6, n_runs: int = 3) -> list[pl.DataFrame]:
    """Runs over the same queries (ranx needs them), each a random subset of a pool of 15
    documents per query (documents missing from some runs), scores at one decimal (ties),
    one run with negative scores, one query whose scores are all equal in one run."""
    rng = np.random.default_rng(seed)
    runs = []
    for r in range(n_runs):
        rows = []
        for q in range(n_queries):
            docs = rng.choice(15, size=rng.integers(1, 13), replace=False)  # <= 12 (see below)
            scores = np.round(rng.normal(2.0 - 2.5 * (r == 1), 1.0, docs.size), 1)
            if q == 2 and r == 0:
                scores[:] = 0.7
            rows += [(f"q{q}", f"d{d:02d}", float(s)) for d, s in zip(docs, scores, strict=True)]
        runs.append(pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row"))
    return runs


def ranx_run(frame: pl.DataFrame):
    """A ranx Run whose documents come in trec_eval's order (score descending, doc id
    descending): ranx breaks ties by that input order (its numba argsort is an insertion
    sort, stable, on lists of up to 15), ours by doc id descending."""
    from ranx import Run

    ordered = frame.sort(["query", "score", "doc"], descending=[False, True, True])
    run: dict[str, dict[str, float]] = {}
    for q, d, s in ordered.iter_rows():
        run.setdefault(q, {})[d] = s
    return Run(run)


def ranx_fused(runs: list[pl.DataFrame], method: str, norm: str | None) -> dict:
    from ranx import fuse

    params = {"weights": WEIGHTS[: len(runs)]} if method == "wsum" else {}
    out = fuse([ranx_run(r) for r in runs], norm=norm, method=method, params=params)
    return {q: dict(docs) for q, docs in out.to_dict().items()}


def as_dict(frame: pl.DataFrame) -> dict:
    out: dict[str, dict[str, float]] = {}
    for q, d, s in frame.iter_rows():
        out.setdefault(q, {})[d] = s
    return out


def assert_same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for q in want:
        assert got[q].keys() == want[q].keys(), q
        for d, value in want[q].items():
            assert math.isclose(got[q][d], value, rel_tol=1e-9, abs_tol=1e-9), (q, d)


def test_ranx_keeps_tied_documents_in_input_order():
    """The premise of ``ranx_run``: ranx's ranks of tied scores follow its input order."""
    from ranx import Run, fuse

    a = Run({"q": {"x": 1.0, "y": 1.0, "z": 1.0, "w": 2.0}})
    b = Run({"q": {"z": 1.0}})
    ranks = fuse([a, b], norm=None, method="rrf", params={"k": 0}).to_dict()["q"]
    assert ranks["w"] == 1.0 and ranks["x"] == 1 / 2 and ranks["y"] == 1 / 3


NON_BORDA_RRF = [
    (m, n) for m, n in itertools.product(METHODS, (None, *NORMS)) if (m, n) != ("rrf", "borda")
]


@pytest.mark.parametrize(("method", "norm"), NON_BORDA_RRF)
def test_equals_ranx(method, norm):
    runs = random_runs(seed=len(method) + 3 * len(norm or ""))
    if norm == "zmuv":  # equal scores: ours exactly 0, ranx's (x - mean) / 1e-9 rounding noise
        runs = [r.filter(pl.col("query") != "q2") for r in runs]
    weights = WEIGHTS if method == "wsum" else None
    got = pe.fuse(runs, method=method, norm=norm, weights=weights)
    assert got.columns == ["query", "doc", "score"] and got.schema["score"] == pl.Float64
    assert_same(as_dict(got), ranx_fused(runs, method, norm))
    # sorted by query, then score descending, then doc descending
    order = got.sort(["query", "score", "doc"], descending=[False, True, True])
    assert got.equals(order)


def brute_borda_rrf(runs: list[pl.DataFrame], k: float) -> dict:
    """RRF after Borda normalization by its definition (written out, a loop per query):
    a run's documents ranked by score then doc id descending, the candidates it did not
    retrieve after them by doc id descending."""
    out: dict[str, dict[str, float]] = {}
    queries = sorted(set().union(*(set(r["query"].to_list()) for r in runs)))
    for q in queries:
        lists = [
            sorted(r.filter(pl.col("query") == q).select("doc", "score").rows(), key=lambda x: (-x[1], [-ord(c) for c in x[0]]))
            for r in runs
        ]  # fmt: skip
        candidates = sorted({d for ranking in lists for d, _ in ranking})
        for ranking in lists:
            held = [d for d, _ in ranking]
            order = held + sorted(set(candidates) - set(held), reverse=True)
            for rank, d in enumerate(order, start=1):
                out.setdefault(q, {}).setdefault(d, 0.0)
                out[q][d] += 1.0 / (k + rank)
    return out


def test_rrf_after_borda_by_definition():
    runs = random_runs(seed=21)
    got = pe.fuse(runs, method="rrf", norm="borda", k=10)
    assert_same(as_dict(got), brute_borda_rrf(runs, 10.0))


def test_a_query_missing_from_a_run_is_an_empty_ranking():
    runs = random_runs(seed=5)
    runs[1] = runs[1].filter(pl.col("query") != "q3")
    got = as_dict(pe.fuse(runs, method="sum"))
    alone = [r.filter(pl.col("query") == "q3") for r in (runs[0], runs[2])]
    want = as_dict(pe.fuse(alone, method="sum"))
    assert got["q3"] == pytest.approx(want["q3"], rel=1e-12)
    # Borda: the run without the query gives its every candidate 0.5 + 1 / (2 n_c)
    borda = as_dict(pe.fuse(runs, method="sum", norm="borda"))["q3"]
    plain = as_dict(pe.fuse(alone, method="sum", norm="borda"))["q3"]
    n_c = len(plain)
    assert borda == pytest.approx({d: v + 0.5 + 1 / (2 * n_c) for d, v in plain.items()})


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_lazy_system_column_and_row_order(engine):
    runs = random_runs(seed=9)
    for method, norm in [("rrf", None), ("wsum", "zmuv"), ("med", "borda"), ("mnz", "rank")]:
        weights = WEIGHTS if method == "wsum" else None
        want = pe.fuse(runs, method=method, norm=norm, weights=weights)
        lazy = pe.fuse([r.lazy() for r in runs], method=method, norm=norm, weights=weights)
        assert isinstance(lazy, pl.LazyFrame)
        assert_same(as_dict(lazy.collect(engine=engine)), as_dict(want))
        names = ["bm25", "dense", "splade"]
        one = pl.concat(
            [r.with_columns(system=pl.lit(n)) for r, n in zip(runs, names, strict=True)]
        )
        one = one.sample(fraction=1.0, shuffle=True, seed=1)  # rows in any order
        mapping = dict(zip(names, WEIGHTS, strict=True)) if weights else None
        got = pe.fuse(one, method=method, norm=norm, weights=mapping)
        assert_same(as_dict(got), as_dict(want))
        assert got.select("query", "doc").equals(want.select("query", "doc"))


def test_trec_runs_read_from_files_fuse(tmp_path):
    runs = random_runs(seed=13, n_runs=2)
    paths = []
    for i, run in enumerate(runs):
        path = tmp_path / f"run{i}.txt"
        columns = [pl.lit("Q0").alias("q0"), pl.lit(0).alias("rank"), pl.lit(f"r{i}").alias("tag")]
        run.select("query", columns[0], "doc", columns[1], "score", columns[2]).write_csv(
            path, separator=" ", include_header=False
        )
        paths.append(path)
    lazy = pe.fuse([pe.read_trec_run(p) for p in paths], method="sum", norm="min-max")
    assert isinstance(lazy, pl.LazyFrame)
    assert_same(as_dict(lazy.collect()), as_dict(pe.fuse(runs, method="sum", norm="min-max")))


# -- BAD_INPUTS row 60 and other bad inputs --------------------------------------------------


def test_duplicate_documents_are_an_error_naming_the_run():
    runs = random_runs(seed=1)
    runs[1] = pl.concat([runs[1], runs[1].head(1)])
    q, d = runs[1].row(0)[:2]
    with pytest.raises(pe.DataValidationError, match=rf"run 1 has duplicate.*{q}.*{d}"):
        pe.fuse(runs)
    lazy = pe.fuse([r.lazy() for r in runs], method="sum", norm="borda")
    with pytest.raises(Exception, match="run 1 has duplicate") as info:
        lazy.collect()
    cause = info.value if isinstance(info.value, pe.DataValidationError) else info.value.__cause__
    assert isinstance(cause, pe.DataValidationError)
    one = pl.concat([r.with_columns(system=pl.lit(f"s{i}")) for i, r in enumerate(runs)])
    with pytest.raises(pe.DataValidationError, match='system "s1" has duplicate'):
        pe.fuse(one, method="max")


def test_a_single_run_is_an_error():
    runs = random_runs(seed=2)
    with pytest.raises(pe.InvalidParameterError, match="at least 2 runs; got 1"):
        pe.fuse(runs[:1])
    with pytest.raises(pe.DataValidationError, match='"system" holds 1 system'):
        pe.fuse(runs[0].with_columns(system=pl.lit("only")))


def test_wsum_needs_one_weight_per_run():
    runs = random_runs(seed=3)
    with pytest.raises(pe.InvalidParameterError, match="needs weights="):
        pe.fuse(runs, method="wsum")
    with pytest.raises(pe.InvalidParameterError, match="3 runs, got 2 weights"):
        pe.fuse(runs, method="wsum", weights=[1.0, 2.0])
    with pytest.raises(pe.InvalidParameterError, match="method='wsum'"):
        pe.fuse(runs, method="sum", weights=[1.0, 2.0, 3.0])
    with pytest.raises(pe.InvalidParameterError, match="finite"):
        pe.fuse(runs, method="wsum", weights=[1.0, math.nan, 3.0])
    one = pl.concat([r.with_columns(system=pl.lit(f"s{i}")) for i, r in enumerate(runs)])
    with pytest.raises(pe.InvalidParameterError, match="mapping"):
        pe.fuse(one, method="wsum", weights=[1.0, 2.0, 3.0])
    with pytest.raises(pe.InvalidParameterError, match=r"none for \['s2'\]"):
        pe.fuse(one, method="wsum", weights={"s0": 1.0, "s1": 2.0})


@pytest.mark.parametrize("norm", ["min-max", "zmuv", "sum"])
def test_a_constant_query_normalizes_to_zero(norm):
    a = pl.DataFrame({"query": ["q", "q", "r"], "doc": ["x", "y", "x"], "score": [0.7] * 3})
    b = pl.DataFrame({"query": ["q", "r"], "doc": ["x", "y"], "score": [5.0, 5.0]})
    got = pe.fuse([a, b], method="sum", norm=norm)
    assert got.get_column("score").is_nan().sum() == 0
    assert as_dict(got) == {"q": {"x": 0.0, "y": 0.0}, "r": {"x": 0.0, "y": 0.0}}


def test_bad_scores_options_and_columns():
    runs = random_runs(seed=4)
    bad = runs[2].with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(math.nan)
        .otherwise(pl.col("score"))
        .alias("score")
    )
    with pytest.raises(pe.DataValidationError, match=r'"score" must hold finite.*run 2.*nan'):
        pe.fuse([runs[0], runs[1], bad])
    nulls = runs[2].with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col("score")).alias("score")
    )
    kept = pe.fuse([runs[0], runs[1], nulls], method="sum")  # a null score: the row is ignored
    assert_same(as_dict(kept), as_dict(pe.fuse([runs[0], runs[1], runs[2].slice(1)], method="sum")))
    for kwargs, needle in (
        ({"method": "combsum"}, "method must be one of"),
        ({"norm": "minmax"}, "norm must be"),
        ({"k": -1}, "k must be"),
    ):
        with pytest.raises(pe.InvalidParameterError, match=needle):
            pe.fuse(runs, **kwargs)
    with pytest.raises(pe.DataValidationError, match='column "score" not found in run 1'):
        pe.fuse([runs[0], runs[1].rename({"score": "s"})])
    with pytest.raises(pe.InvalidParameterError, match="list of run frames"):
        pe.fuse("run.txt")
    # the caller's frames are not modified
    before = [r.clone() for r in runs]
    pe.fuse(runs, method="anz", norm="sum")
    assert all(a.equals(b) for a, b in zip(runs, before, strict=True))


# -- the command line ---------------------------------------------------------------------


def test_fuse_command_writes_the_fused_trec_run(tmp_path, capsys):
    from polars_eval import cli

    runs = random_runs(seed=17)
    paths = []
    for i, run in enumerate(runs):
        path = tmp_path / f"run{i}.txt"
        lines = [f"{q} Q0 {d} {j} {s!r} r{i}" for j, (q, d, s) in enumerate(run.iter_rows())]
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    out = tmp_path / "fused.txt"
    code = cli.main(["fuse", *paths, "--method", "wsum", "--norm", "min-max",
                     "--weights", ",".join(map(str, WEIGHTS)), "-o", str(out)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    written = pe.read_trec_run(out).collect()
    want = pe.fuse(runs, method="wsum", norm="min-max", weights=WEIGHTS)
    assert written.select("query", "doc").equals(want.select("query", "doc"))
    assert written["score"].to_list() == pytest.approx(want["score"].to_list(), rel=1e-15)
    ranks = written.select(pl.int_range(1, pl.len() + 1).over("query").alias("rank"))["rank"]
    assert written["rank"].to_list() == ranks.to_list()
    assert set(written["run"]) == {"fused"}
    capsys.readouterr()
    for argv, needle in (
        ([paths[0]], "at least 2 runs"),
        ([*paths, "--method", "wsum"], "weights"),
        ([paths[0], str(tmp_path / "none.txt")], "none.txt"),
    ):
        assert cli.main(["fuse", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("polars-eval: error:") and needle in err
