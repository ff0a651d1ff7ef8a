"""Benchmark: rank fusion against ranx, and the cost of ``ci="t"`` (issue 23, SPEC §14).

Fusion data: ``--runs`` runs x ``--queries`` queries x ``--docs`` documents, each run's
documents of a query drawn from a pool of 1.5 x ``--docs`` candidates of that query (so the
runs overlap and every run misses some documents), ids from a corpus of 1e6; run 0's
scores at 2 decimals (ties, as BM25), the others continuous. Each tool runs in a child
process that reads the runs from parquet, builds its input (ranx: ``Run.from_df``; ours:
the DataFrames), fuses once to warm up (numba's compilation for ranx) and then times
``--repeat`` more calls (medians); the child's peak RSS is the tool's memory. The floor is
plain Polars: the runs stacked and one ``group_by(query, doc).agg(sum)``, unsorted.

``ci="t"`` data: ``--ci-rows`` rows of a query log (100 items per query, graded
relevance, scores at 3 decimals): ``df.eval.ranking(..., k=[10])`` with and without
``ci="t"`` (and ``ci="bootstrap"``, 1000 resamples, for reference), timed in one process
(medians of ``--repeat``) and each in a child for its peak RSS.

Usage: ``python benchmarks/bench_fusion.py --queries 2e4 --ci-rows 1e6``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_line, median_time  # noqa: E402

import polars_eval as pe  # noqa: E402

ROOT = str(Path(pe.__file__).resolve().parent.parent)


def make_runs(n_queries: int, docs: int, n_runs: int, seed: int = 0) -> list[pl.DataFrame]:
    rng = np.random.default_rng(seed)
    pool = int(docs * 1.5)
    candidates = rng.integers(0, 1_000_000, size=(n_queries, pool))
    runs = []
    for r in range(n_runs):
        # each run: `docs` distinct candidates per query (a random permutation's head)
        picks = np.argsort(rng.random((n_queries, pool)), axis=1)[:, :docs]
        doc = np.take_along_axis(candidates, picks, axis=1).ravel()
        score = rng.gamma(2.0, 3.0, doc.size) if r else np.round(rng.gamma(2.0, 3.0, doc.size), 2)
        frame = pl.DataFrame(
            {
                "query": pl.Series(np.repeat(np.arange(n_queries), docs)).cast(pl.String),
                "doc": pl.Series(doc).cast(pl.String),
                "score": score,
            }
        )
        runs.append(frame.unique(["query", "doc"], keep="first", maintain_order=True))
    return runs


VARIANTS = [("rrf", None), ("sum", "min-max")]

CHILD = """
import json, resource, sys, time, statistics
sys.path.insert(0, {root!r})
import polars as pl
paths, variants, repeat = {paths!r}, {variants!r}, {repeat}
start = time.perf_counter()
{body}
out = {{"setup": setup}}
for method, norm in variants:
    t = time.perf_counter(); fused(method, norm); first = time.perf_counter() - t
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fused(method, norm)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    out[f"{{method}},{{norm}}"] = {{"wall": statistics.median(walls), "cpu": statistics.median(cpus),
                                   "first": first}}
out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("RESULT", json.dumps(out))
"""

OURS = """
import polars_eval as pe
runs = [pl.read_parquet(p) for p in paths]
setup = time.perf_counter() - start
def fused(method, norm):
    return pe.fuse(runs, method=method, norm=norm)
"""

RANX = """
import warnings
warnings.filterwarnings("ignore")
from ranx import Run, fuse
runs = []
for p in paths:
    frame = pl.read_parquet(p).to_pandas()
    frame["query"] = frame["query"].astype(object)
    frame["doc"] = frame["doc"].astype(object)
    runs.append(Run.from_df(frame, q_id_col="query", doc_id_col="doc", score_col="score"))
setup = time.perf_counter() - start
def fused(method, norm):
    return fuse(runs, norm=norm, method=method)
"""

FLOOR = """
runs = [pl.read_parquet(p) for p in paths]
setup = time.perf_counter() - start
def fused(method, norm):  # the runs stacked, one group_by: no rank, no normalization, no sort
    return pl.concat(runs).lazy().group_by("query", "doc").agg(pl.col("score").sum()).collect()
"""


def child(body: str, paths: list[str], repeat: int) -> dict:
    code = CHILD.format(root=ROOT, paths=paths, variants=VARIANTS, repeat=repeat, body=body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def bench_fusion(args: argparse.Namespace) -> None:
    n_queries = int(args.queries)
    runs = make_runs(n_queries, args.docs, args.runs)
    rows = sum(r.height for r in runs)
    print(
        f"\n## Fusion: {args.runs} runs x {n_queries:,} queries x {args.docs} docs ({rows:,} rows)"
    )
    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, run in enumerate(runs):
            paths.append(str(Path(tmp) / f"run{i}.parquet"))
            run.write_parquet(paths[-1])
        ours = child(OURS, paths, args.repeat)
        floor = child(FLOOR, paths, args.repeat)
        ranx = None if args.skip_ranx else child(RANX, paths, args.repeat)
    print("| method, norm | ours wall / CPU s | ranx warm wall / CPU s | ranx / ours (wall, CPU) "
          "| floor wall / CPU s |")  # fmt: skip
    print("|---|---|---|---|---|")
    for method, norm in VARIANTS:
        key = f"{method},{norm}"
        o, f = ours[key], floor[key]
        r = ranx[key] if ranx else None
        r_cell = f"{r['wall']:.2f} / {r['cpu']:.2f}" if r else "-"
        ratio = f"{r['wall'] / o['wall']:.2f}x, {r['cpu'] / o['cpu']:.2f}x" if r else "-"
        print(f"| {method}, {norm} | {o['wall']:.2f} / {o['cpu']:.2f} | {r_cell} | {ratio} | "
              f"{f['wall']:.2f} / {f['cpu']:.2f} |")  # fmt: skip
    memory = f"ours {ours['peak_mib']:.0f} MiB, floor {floor['peak_mib']:.0f} MiB"
    if ranx:
        memory += (f", ranx {ranx['peak_mib']:.0f} MiB (ours / ranx = "
                   f"{ours['peak_mib'] / ranx['peak_mib']:.2f}); ranx built its Runs in "
                   f"{ranx['setup']:.0f} s")  # fmt: skip
    print(f"\nPeak RSS of each child (data read, every variant run): {memory}")


def query_log(rows: int, items: int = 100, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = max(rows // items, 1) * items
    rel = rng.choice(5, size=n, p=[0.7, 0.12, 0.09, 0.06, 0.03])
    return pl.DataFrame(
        {
            "qid": np.repeat(np.arange(n // items, dtype=np.int64), items),
            "rel": rel,
            "score": np.round(rng.random(n) + 0.05 * rel, 3),
        }
    )


CI_CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
import polars as pl, polars_eval as pe
df = pl.read_parquet({path!r})
with open("/proc/self/status") as f:
    base = next(int(x.split()[1]) for x in f if x.startswith("VmRSS:")) / 1024
df.eval.ranking("rel", "score", query="qid", k=[10], **{kwargs!r})
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("RESULT", json.dumps({{"peak_mib": peak, "above_data_mib": peak - base}}))
"""


def bench_ci(args: argparse.Namespace) -> None:
    df = query_log(int(args.ci_rows))
    print(f"\n## ci='t' on df.eval.ranking: {df.height:,} rows, {df['qid'].n_unique():,} queries")
    print(machine_line())
    variants = {"no ci": {}, "ci='t'": {"ci": "t"}, "ci='bootstrap'": {"ci": "bootstrap"}}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "log.parquet")
        df.write_parquet(path)
        timings: dict[str, list[float]] = {}
        for kwargs in variants.values():  # warm up (scipy's import for the t quantile)
            df.head(1000).eval.ranking("rel", "score", query="qid", k=[10], **kwargs)
        for _ in range(2):  # alternate, twice: the medians of all
            for name, kwargs in variants.items():

                def run(kwargs: dict = kwargs) -> object:
                    return df.eval.ranking("rel", "score", query="qid", k=[10], **kwargs)

                timings.setdefault(name, []).append(median_time(run, args.repeat))
        print("| variant | seconds (median) | vs no ci | child peak MiB | above the data MiB |")
        print("|---|---|---|---|---|")
        base = float(np.median(timings["no ci"]))
        for name, kwargs in variants.items():
            code = CI_CHILD.format(root=ROOT, path=path, kwargs=kwargs)
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            mem = json.loads(
                next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))[7:]
            )
            seconds = float(np.median(timings[name]))
            print(f"| {name} | {seconds:.3f} | {seconds / base:.3f}x | {mem['peak_mib']:.0f} | "
                  f"{mem['above_data_mib']:.0f} |", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=float, default=2e4)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ci-rows", type=float, default=1e6)
    parser.add_argument("--skip-ranx", action="store_true")
    parser.add_argument("--only", choices=["fusion", "ci"])
    args = parser.parse_args()
    started = time.perf_counter()
    if args.only != "ci":
        bench_fusion(args)
    if args.only != "fusion":
        bench_ci(args)
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
