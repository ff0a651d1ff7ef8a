"""Benchmark: ranking metrics over a query log (issues 3 and 11, SPEC §7, §11).

Data: ``--rows`` rows = rows/``--items`` queries x ``--items`` items, graded relevance 0-4,
scores rounded to 3 decimals (so ties occur). Measured on the same data in one run:

* ours: NDCG@10 + MAP + MRR with ties="average" through ``df.eval.ranking`` (one sort per
  query, flat engine), through three namespace calls, and through the per-query expressions
  in ``group_by().agg`` (the same engine: one sort and one evaluation per expression);
* ours on a LazyFrame scanned from a parquet lake with the streaming engine;
* ranx end-to-end from the DataFrame (building Qrels/Run included; numba warmed up first);
* pytrec_eval end-to-end from the DataFrame (building its dicts included);
* polars-ds NDCG@10 alone;
* the plain-Polars floor: one ``group_by`` with one sort per query, ties ignored;
* ``pe.trec_eval`` on a run file of min(rows, 1e6) lines against pytrec_eval including
  file parsing.

Peak memory: ``--memory`` runs each of ours (``df.eval.ranking`` and the expressions) /
the floor / ranx in a child process and reports its peak RSS above the RSS after building
the data, against the input columns' size.

Usage: ``python benchmarks/bench_ranking.py --rows 1000000``
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

import polars_eval as pe


def make_data(rows: int, items: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n_queries = max(rows // items, 1)
    n = n_queries * items
    rel = rng.choice(5, size=n, p=[0.7, 0.12, 0.09, 0.06, 0.03])
    score = np.round(rng.random(n) + 0.05 * rel, 3)
    return pl.DataFrame(
        {
            "qid": np.repeat(np.arange(n_queries, dtype=np.int64), items),
            "item": np.tile(np.arange(items, dtype=np.int64), n_queries),
            "rel": rel.astype(np.int64),
            "score": score,
        }
    )


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


# ---------------------------------------------------------------------------------------
# The contenders
# ---------------------------------------------------------------------------------------


def ours_ranking(df: pl.DataFrame | pl.LazyFrame, engine: str = "in-memory") -> Any:
    out = df.eval.ranking("rel", "score", query="qid", k=None, metrics=["ndcg@10", "map", "mrr"])
    if isinstance(out, pl.LazyFrame):
        out = out.collect(engine=engine)  # type: ignore[arg-type]
    return out.select("ndcg@10", "map", "mrr").row(0)


def ours_namespace(df: pl.DataFrame) -> Any:
    return (
        df.eval.ndcg("rel", "score", query="qid", k=10),
        df.eval.map("rel", "score", query="qid"),
        df.eval.mrr("rel", "score", query="qid"),
    )


def ours_expressions(df: pl.DataFrame) -> Any:
    per = df.group_by("qid").agg(
        pe.ndcg("rel", "score", k=10), pe.ap_at_k("rel", "score", k=None), pe.mrr("rel", "score")
    )
    return per.select(pl.col("ndcg", "ap_at_k", "mrr").mean()).row(0)


def plain_polars_floor(df: pl.DataFrame) -> Any:
    """NDCG@10 + AP + RR with one sort per query, ties ignored: what a Polars user writes."""
    rs = pl.col("rel").sort_by("score", descending=True).cast(pl.Float64)
    y = (rs >= 1).cast(pl.Float64)
    pos = pl.int_range(1, pl.len() + 1)
    top = pl.int_range(2, pl.len().clip(upper_bound=10) + 2).log(2)
    dcg = ((2.0 ** rs.head(10) - 1.0) / top).sum()
    idcg = ((2.0 ** pl.col("rel").cast(pl.Float64).top_k(10) - 1.0) / top).sum()
    per = df.group_by("qid").agg(
        (dcg / idcg).alias("ndcg"),
        ((y.cum_sum() / pos * y).sum() / y.sum()).alias("ap"),
        (1.0 / (y.arg_max() + 1)).alias("rr"),
    )
    return per.select(pl.col("ndcg", "ap", "rr").mean()).row(0)


def _object_ids(frame: Any) -> Any:
    # ranx asserts numpy object dtype for the id columns (pandas may give "str")
    for col in ("q_id", "doc_id"):
        frame[col] = frame[col].astype(object)
    return frame


def ranx_end_to_end(df: pl.DataFrame) -> Any:
    from ranx import Qrels, Run, evaluate

    pdf = df.select(
        pl.col("qid").cast(pl.String).alias("q_id"),
        pl.col("item").cast(pl.String).alias("doc_id"),
        pl.col("rel"),
        pl.col("score"),
    )
    judged = pdf.filter(pl.col("rel") > 0).select("q_id", "doc_id", pl.col("rel").alias("score"))
    qrels = Qrels.from_df(_object_ids(judged.to_pandas()))
    run = Run.from_df(_object_ids(pdf.select("q_id", "doc_id", "score").to_pandas()))
    return evaluate(qrels, run, ["ndcg@10", "map", "mrr"])


def pytrec_end_to_end(df: pl.DataFrame) -> Any:
    import pytrec_eval

    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q, d, r, s in df.select(
        pl.col("qid").cast(pl.String), pl.col("item").cast(pl.String), "rel", "score"
    ).iter_rows():
        run.setdefault(q, {})[d] = s
        qrels.setdefault(q, {})[d] = r
    res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recip_rank"}).evaluate(run)
    keys = ("ndcg_cut_10", "map", "recip_rank")
    return tuple(float(np.mean([v[k] for v in res.values()])) for k in keys)


def polars_ds_ndcg(df: pl.DataFrame) -> Any:
    import polars_ds as pds

    per = df.group_by("qid").agg(pds.query_ndcg_score("rel", "score", k=10).alias("ndcg"))
    return per["ndcg"].mean()


def write_trec_files(df: pl.DataFrame, directory: str) -> tuple[str, str]:
    run_path = os.path.join(directory, "run.txt")
    qrels_path = os.path.join(directory, "qrels.txt")
    lines = df.select(
        pl.format(
            "q{} Q0 d{} {} {} bench",
            "qid",
            "item",
            pl.int_range(1, pl.len() + 1).over("qid"),
            "score",
        )
    )
    lines.write_csv(run_path, include_header=False, quote_style="never")
    df.filter(pl.col("rel") > 0).select(pl.format("q{} 0 d{} {}", "qid", "item", "rel")).write_csv(
        qrels_path, include_header=False, quote_style="never"
    )
    return run_path, qrels_path


def ours_trec(run_path: str, qrels_path: str) -> Any:
    return pe.trec_eval(run_path, qrels_path, ["ndcg_cut.10", "map", "recip_rank"]).row(0)


def pytrec_files(run_path: str, qrels_path: str) -> Any:
    import pytrec_eval

    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map", "recip_rank"}).evaluate(run)
    return float(np.mean([v["map"] for v in res.values()]))


# ---------------------------------------------------------------------------------------
# Peak memory, in a child process
# ---------------------------------------------------------------------------------------


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(which: str, rows: int, items: int) -> None:
    fn = {
        "ours": ours_ranking,
        "expressions": ours_expressions,
        "ranx": ranx_end_to_end,
        "floor": plain_polars_floor,
    }[which]
    fn(make_data(2000, items))  # imports and compilation, outside the measure
    df = make_data(rows, items)
    input_mb = df.select("qid", "rel", "score").estimated_size("mb")
    try:  # reset the peak-RSS counter (Linux), so the peak is this call's
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    before = _status_mb("VmRSS")
    fn(df)
    peak = _status_mb("VmHWM")
    print(f"{peak - before:.1f} {input_mb:.1f}")


def measure_memory(which: str, rows: int, items: int) -> str:
    out = subprocess.run(
        [sys.executable, __file__, "--child", which, "--rows", str(rows), "--items", str(items)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return f"failed: {out.stderr.strip().splitlines()[-1:]}"
    extra, input_mb = (float(x) for x in out.stdout.split())
    return f"peak +{extra:.0f} MB over {input_mb:.0f} MB of input columns ({extra / input_mb:.1f}x)"


# ---------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], help="contenders to skip")
    parser.add_argument("--memory", action="store_true", help="also measure peak memory")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.rows, args.items)
        return

    df = make_data(args.rows, args.items)
    print(
        f"{df.height:,} rows, {df['qid'].n_unique():,} queries x {args.items} items, "
        f"polars {pl.__version__}, {os.cpu_count()} cores; median of {args.repeat}; "
        f"polars_eval from {os.path.dirname(os.path.dirname(pe.__file__))}"
    )
    results: dict[str, float] = {}
    values: dict[str, Any] = {}

    def run(name: str, fn: Callable[[], Any], repeat: int | None = None) -> None:
        if name.split(" ")[0].rstrip(":") in args.skip:
            return
        try:
            seconds, out = timed(fn, repeat or args.repeat)
        except Exception as error:  # noqa: BLE001 - a peer that fails is reported, not fatal
            print(f"  {name:<44}   failed: {type(error).__name__}: {str(error)[:80]}")
            return
        results[name] = seconds
        values[name] = out
        print(f"  {name:<44} {seconds:8.3f} s   {out}", flush=True)

    run("floor: plain polars group_by (ties ignored)", lambda: plain_polars_floor(df))
    run("ours: df.eval.ranking (ndcg@10, map, mrr)", lambda: ours_ranking(df))
    run("ours: 3 namespace calls", lambda: ours_namespace(df))
    with tempfile.TemporaryDirectory() as tmp:
        lake = os.path.join(tmp, "lake")
        os.makedirs(lake)
        n_parts = 8
        df.with_columns((pl.col("qid") % n_parts).alias("part")).write_parquet(
            lake, partition_by="part"
        )
        scan = pl.scan_parquet(os.path.join(lake, "**", "*.parquet"))
        run("ours: parquet lake, streaming", lambda: ours_ranking(scan, "streaming"))
    run("ours: group_by().agg(expressions)", lambda: ours_expressions(df))
    run("polars_ds: ndcg@10 only", lambda: polars_ds_ndcg(df))
    if "ranx" not in args.skip and importlib.util.find_spec("ranx") is not None:
        ranx_end_to_end(df.head(2000))  # numba compilation, not timed
    run("ranx: end-to-end from the DataFrame", lambda: ranx_end_to_end(df), repeat=1)
    run("pytrec_eval: end-to-end from the DataFrame", lambda: pytrec_end_to_end(df), repeat=1)

    trec_rows = min(args.rows, 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        run_path, qrels_path = write_trec_files(df.head(trec_rows), tmp)
        run(f"ours: pe.trec_eval on {trec_rows:,} lines", lambda: ours_trec(run_path, qrels_path))
        run(
            f"pytrec_eval: parse + evaluate {trec_rows:,} lines",
            lambda: pytrec_files(run_path, qrels_path),
            repeat=1,
        )

    ours = results.get("ours: df.eval.ranking (ndcg@10, map, mrr)")
    if ours:
        print("\nratios (time / ours: df.eval.ranking):")
        for name, seconds in results.items():
            print(f"  {name:<44} {seconds / ours:8.2f}x")
    lake_time = results.get("ours: parquet lake, streaming")
    if ours and lake_time:
        print(f"  streaming lake / in-memory: {lake_time / ours:.2f}x")
    floor = results.get("floor: plain polars group_by (ties ignored)")
    expressions = results.get("ours: group_by().agg(expressions)")
    if floor and ours:
        print(f"  df.eval.ranking / floor: {ours / floor:.2f}x")
    if floor and expressions:
        print(f"  group_by().agg(expressions) / floor: {expressions / floor:.2f}x")
    for peer in ("ranx: end-to-end", "pytrec_eval: end-to-end"):
        seconds = [v for k, v in results.items() if k.startswith(peer)]
        if expressions and seconds:
            print(f"  {peer} / group_by().agg(expressions): {seconds[0] / expressions:.2f}x")
    trec_ours = [v for k, v in results.items() if k.startswith("ours: pe.trec_eval")]
    trec_peer = [v for k, v in results.items() if k.startswith("pytrec_eval: parse")]
    if trec_ours and trec_peer:
        print(f"  pytrec_eval files / pe.trec_eval: {trec_peer[0] / trec_ours[0]:.2f}x")
    if args.memory:
        print("\npeak memory:")
        print(f"  ours: {measure_memory('ours', args.rows, args.items)}")
        print(f"  expressions: {measure_memory('expressions', args.rows, args.items)}")
        print(f"  floor: {measure_memory('floor', args.rows, args.items)}")
        if "ranx" not in args.skip:
            print(f"  ranx: {measure_memory('ranx', args.rows, args.items)}")


if __name__ == "__main__":
    main()
