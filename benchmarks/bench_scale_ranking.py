"""A ranking query log beyond memory (SPEC §10, issue 12): the spilled ``pe.Evaluation``.

Writes a plain parquet lake of a query log, file by file (the writer never holds the
lake): ``rows / 100`` queries × 100 items, columns ``q`` (Int64), ``rel`` (Int8, graded
0–4, one query in 20 with no relevant item) and ``s`` (Float32). Each file holds half
the items of 100,000 queries; the other half sits in a file written half a lake later,
so every query is split across two files. Then, each run in a fresh process:

* ``spill``: ``pe.Evaluation("ranking", ..., metrics=["ndcg@10", "map", "mrr"],
  spill=dir).update(pl.scan_parquet(lake))`` then ``compute()``: the rows streamed into
  hash buckets of whole queries on disk, evaluated one bucket at a time;
* ``in memory`` (``--in-memory``, for comparison where it fits):
  ``pl.read_parquet(lake).eval.ranking(..., k=None, metrics=[...])``.

    python benchmarks/bench_scale_ranking.py --rows 1e8 1e9 --dir /tmp/pe_rank
    python benchmarks/bench_scale_ranking.py --rows 1e8 --segments 100 --in-memory

``--segments N`` adds ``seg`` (Int16) = (query id // 3) modulo N, so every file holds queries of
every segment (issue 27's layout), and evaluates by it.

Prints seconds (update and compute apart), peak resident MiB and, with ``--in-memory``,
the largest difference between the two results. Lakes and spill directories are deleted
afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from _harness import machine_line, run_child  # noqa: E402

ITEMS = 100
QUERIES_PER_FILE = 100_000
METRICS = ["ndcg@10", "map", "mrr"]


def write_query_log(root: Path, rows: int, seed: int = 0, segments: int = 0) -> Path:
    """A lake of ``rows // 100`` queries × 100 items, written one file at a time; with
    ``segments``, a column ``seg`` (Int16) = (query id // 3) modulo ``segments``: every file
    holds queries of every segment."""
    lake = root / (f"querylog_{rows:.0e}" + (f"_seg{segments}" if segments else ""))
    done = lake / "_done"
    if done.exists():
        return lake
    lake.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    queries = rows // ITEMS
    blocks = max(1, queries // QUERIES_PER_FILE)
    half = ITEMS // 2
    grades = np.array([0, 1, 2, 3, 4], dtype=np.int8)
    for part in range(2):  # the first half of every query's items, then the second
        for block in range(blocks):
            start, stop = block * queries // blocks, (block + 1) * queries // blocks
            q = np.repeat(np.arange(start, stop, dtype=np.int64), half)
            rel = rng.choice(grades, q.size, p=[0.8, 0.1, 0.06, 0.03, 0.01])
            rel[q % 20 == 0] = 0  # queries without a relevant item
            s = (0.3 * rel + rng.standard_normal(q.size)).astype(np.float32)
            frame = pl.DataFrame({"q": q, "rel": rel, "s": s})
            if segments:
                frame = frame.with_columns(seg=(pl.col("q") // 3 % segments).cast(pl.Int16))
            frame.write_parquet(lake / f"part-{part * blocks + block:05d}.parquet")
    done.touch()
    return lake


SPILL = """
import json, time, polars as pl, polars_eval as pe
t0 = time.perf_counter()
ev = pe.Evaluation('ranking', relevance='rel', score='s', query='q', metrics={metrics!r},
                   spill={spill!r}{buckets}{by})
ev.update(pl.scan_parquet('{lake}/*.parquet'))
t1 = time.perf_counter()
out = ev.compute({ci})
t2 = time.perf_counter()
json.dump({{'update_s': t1 - t0, 'compute_s': t2 - t1, 'buckets': ev._spill.buckets,
           'result': out.to_dicts()}}, open({report!r}, 'w'))
"""

IN_MEMORY = """
import json, polars as pl, polars_eval as pe
out = pl.read_parquet('{lake}/*.parquet').eval.ranking('rel', 's', query='q', k=None,
                                                       metrics={metrics!r}{by})
json.dump({{'result': out.to_dicts()}}, open({report!r}, 'w'))
"""


def du(path: Path) -> float:
    """Size on disk of a directory tree (GiB)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**30


def _gap(a: float | None, b: float | None) -> float:
    """|a - b|; 0 for two nulls (a segment whose queries have no relevant item)."""
    if a is None or b is None:
        return 0.0 if a is b else float("inf")
    return abs(a - b)


def run(code: str, report: Path) -> tuple[dict[str, float], dict]:
    timing = run_child(code, timeout=4 * 3600)
    return timing, json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=float, default=[1e7])
    parser.add_argument("--dir", default=os.environ.get("TMPDIR", "/tmp") + "/pe_rank")
    parser.add_argument("--buckets", type=int, default=None, help="spill_buckets= (default: K)")
    parser.add_argument("--in-memory", action="store_true", help="also df.eval.ranking in memory")
    parser.add_argument("--keep", action="store_true", help="keep the lakes")
    parser.add_argument(
        "--segments",
        type=int,
        default=0,
        help="add seg = (query id // 3) %% N (every file holds every segment); evaluate by it",
    )
    parser.add_argument(
        "--ci",
        choices=["t"],
        default=None,
        help="run the spill twice, without and with compute(ci=...) (issue 23: <= 10%% more)",
    )
    args = parser.parse_args()
    root = Path(args.dir)
    print(machine_line())
    for rows in args.rows:
        lake = write_query_log(root, int(rows), segments=args.segments)
        by = ", by='seg'" if args.segments else ""
        print(
            f"\n{int(rows):.0e} rows ({int(rows) // ITEMS:.0e} queries × {ITEMS} items), "
            f"lake {du(lake):.2f} GiB in {len(list(lake.glob('*.parquet')))} files"
        )
        with tempfile.TemporaryDirectory(dir=root) as scratch:
            spill_dir = Path(scratch) / "spill"
            report = Path(scratch) / "report.json"
            buckets = "" if args.buckets is None else f", spill_buckets={args.buckets}"
            for ci in [None, args.ci] if args.ci else [None]:
                code = SPILL.format(
                    metrics=["n_queries", "n_excluded", *METRICS],
                    spill=str(spill_dir),
                    buckets=buckets,
                    lake=lake,
                    report=str(report),
                    by=by,
                    ci="" if ci is None else f"ci={ci!r}",
                )
                timing, spilled = run(code, report)
                print(
                    f"  spill{'' if ci is None else f' ci={ci!r}'} ({spilled['buckets']} "
                    f"buckets, {du(spill_dir):.2f} GiB on disk): {timing['seconds']:8.1f} s "
                    f"(update {spilled['update_s']:.1f} s, compute {spilled['compute_s']:.1f} "
                    f"s; CPU {timing['cpu_s']:.1f} s)  peak {timing['peak_mib']:8.0f} MiB"
                )
                print(f"    {spilled['result'][0]}" + (" (the first segment)" if by else ""))
                shutil.rmtree(spill_dir, ignore_errors=True)
            if args.in_memory:
                code = IN_MEMORY.format(metrics=METRICS, lake=lake, report=str(report), by=by)
                timing, memory = run(code, report)
                pairs = list(zip(spilled["result"], memory["result"], strict=True))
                diff = max(_gap(a[m], b[m]) for a, b in pairs for m in METRICS)
                same = all(a[c] == b[c] for a, b in pairs for c in ("n_queries", "n_excluded"))
                print(
                    f"  in memory: {timing['seconds']:8.1f} s  peak "
                    f"{timing['peak_mib']:8.0f} MiB  (largest difference {diff:.1e}, "
                    f"counts {'equal' if same else 'DIFFER'})"
                )
        if not args.keep:
            shutil.rmtree(lake, ignore_errors=True)


if __name__ == "__main__":
    main()
