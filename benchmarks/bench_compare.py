"""Benchmark: comparing systems (issue 23, SPEC §14) — ``df.eval.compare`` against
``ranx.compare`` on the same DataFrame.

Data: ``--systems`` systems × ``--queries`` queries × ``--docs`` documents (one wide frame:
``qid``, ``doc``, ``rel`` graded 0-2 with a relevant document in every query, and one
continuous score column per system, so no ties). Metrics NDCG@10 (linear gain, ranx's
``ndcg``) and MAP, the paired t-test of every system against the first. Measured in one
run, medians of ``--repeat``:

* ours: ``df.eval.compare("ranking", "rel", score=[...], query="qid", metrics=["ndcg@10",
  "map"], gain="linear")`` from the Polars DataFrame;
* ranx end-to-end from the same DataFrame: ``Qrels.from_df`` and one ``Run.from_df`` per
  system (through pandas, as ranx takes it), then ``ranx.compare(..., stat_test="student")``;
  warm: the first call (numba's compilation) is not timed;
* ranx's ``compare`` alone on the prebuilt Qrels/Runs (its own floor: what is left when
  the data already sits in ranx's dicts);
* the plain-Polars floor: per system one ``group_by`` with one sort per query (NDCG@10 and
  AP, ties ignored) and ``scipy.stats.ttest_rel`` of the per-query values.

The p-values of ours and ranx's must agree (checked, printed). Usage:
``python benchmarks/bench_compare.py --queries 20000 --docs 50 --systems 4``
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np
import polars as pl
from bench_ranking import _object_ids, timed  # the same helpers as the ranking benchmark

import polars_eval  # noqa: F401  (the .eval namespace)

METRICS = ["ndcg@10", "map"]


def make_data(queries: int, docs: int, systems: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = queries * docs
    rel = rng.choice(3, size=n, p=[0.8, 0.15, 0.05])
    rel[::docs] = np.maximum(rel[::docs], 1)  # every query has a relevant document
    data: dict[str, Any] = {
        "qid": np.repeat(np.arange(queries, dtype=np.int64), docs),
        "doc": np.tile(np.arange(docs, dtype=np.int64), queries),
        "rel": rel.astype(np.int64),
    }
    for i in range(systems):  # close in quality: p-values far from 0 (checked against ranx)
        data[f"s{i}"] = rng.random(n) + (0.3 + 0.0015 * i) * rel
    return pl.DataFrame(data)


def ours(df: pl.DataFrame, systems: list[str]) -> pl.DataFrame:
    return df.eval.compare(
        "ranking", "rel", score=systems, query="qid", metrics=METRICS, gain="linear",
        correction=None,
    )  # fmt: skip


def ranx_objects(df: pl.DataFrame, systems: list[str]) -> tuple[Any, list[Any]]:
    from ranx import Qrels, Run

    ids = df.select(
        pl.col("qid").cast(pl.String).alias("q_id"), pl.col("doc").cast(pl.String).alias("doc_id")
    )
    judged = pl.concat([ids, df.select(pl.col("rel").alias("score"))], how="horizontal")
    qrels = Qrels.from_df(_object_ids(judged.filter(pl.col("score") > 0).to_pandas()))
    runs = []
    for s in systems:
        frame = pl.concat([ids, df.select(pl.col(s).alias("score"))], how="horizontal")
        runs.append(Run.from_df(_object_ids(frame.to_pandas()), name=s))
    return qrels, runs


def ranx_compare(qrels: Any, runs: list[Any]) -> Any:
    from ranx import compare

    return compare(qrels, runs, METRICS, stat_test="student", max_p=0.05)


def ranx_end_to_end(df: pl.DataFrame, systems: list[str]) -> Any:
    return ranx_compare(*ranx_objects(df, systems))


def plain_polars_floor(df: pl.DataFrame, systems: list[str]) -> dict[tuple[str, str], float]:
    """Per system NDCG@10 (linear gain) and AP per query with one sort per query, ties
    ignored, then scipy's paired t-test: what a Polars user writes by hand."""
    from scipy import stats

    per = {}
    for s in systems:
        rs = pl.col("rel").sort_by(s, descending=True).cast(pl.Float64)
        y = (rs >= 1).cast(pl.Float64)
        pos = pl.int_range(1, pl.len() + 1)
        top = pl.int_range(2, pl.len().clip(upper_bound=10) + 2).log(2)
        dcg = (rs.head(10) / top).sum()
        idcg = (pl.col("rel").cast(pl.Float64).top_k(10).sort(descending=True) / top).sum()
        per[s] = (
            df.group_by("qid")
            .agg(
                (dcg / idcg).alias("ndcg@10"),
                ((y.cum_sum() / pos * y).sum() / y.sum()).alias("map"),
            )
            .sort("qid")
        )
    out = {}
    for s in systems[1:]:
        for m in METRICS:
            out[(s, m)] = stats.ttest_rel(
                per[s][m].to_numpy(), per[systems[0]][m].to_numpy()
            ).pvalue
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=20_000)
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--systems", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    df = make_data(args.queries, args.docs, args.systems)
    systems = [f"s{i}" for i in range(args.systems)]
    load = os.getloadavg()
    print(
        f"{args.systems} systems x {args.queries} queries x {args.docs} docs = {df.height} rows "
        f"per system; nproc {os.cpu_count()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    ranx_end_to_end(df.head(args.docs * 50), systems)  # numba's compilation, not timed

    t_ours, table = timed(lambda: ours(df, systems), args.repeat)
    t_ranx, report = timed(lambda: ranx_end_to_end(df, systems), args.repeat)
    objects = ranx_objects(df, systems)
    t_ranx_alone, _ = timed(lambda: ranx_compare(*objects), args.repeat)
    t_floor, floor = timed(lambda: plain_polars_floor(df, systems), args.repeat)

    theirs = report.to_dict()
    worst = 0.0
    for row in table.iter_rows(named=True):
        p_ranx = float(theirs[row["system"]]["comparisons"][systems[0]][row["metric"]])
        worst = max(worst, abs(row["p_value"] - p_ranx) / max(p_ranx, 1e-300))
        worst = max(
            worst, abs(row["p_value"] - floor[(row["system"], row["metric"])]) / max(p_ranx, 1e-300)
        )
    shown = ", ".join(f"{p:.3g}" for p in table["p_value"])
    print(f"p-values (ours): {shown}")
    print(f"p-values: max relative difference ours vs ranx (and the floor) {worst:.1e}")
    assert worst < 1e-6, "the p-values differ"
    print(f"{'':42s}{'seconds':>9s}{'ranx e2e / this':>17s}")
    for name, t in (
        ("ours: df.eval.compare", t_ours),
        ("ranx: from the DataFrame (warm)", t_ranx),
        ("ranx: compare alone (prebuilt Qrels/Runs)", t_ranx_alone),
        ("plain Polars + scipy floor (ties ignored)", t_floor),
    ):
        print(f"{name:42s}{t:9.3f}{t_ranx / t:16.2f}x")
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
