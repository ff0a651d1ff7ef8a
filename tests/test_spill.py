"""pe.Evaluation("ranking", ..., spill=dir): the state on disk equals df.eval.ranking on all rows."""

from __future__ import annotations

import json
import os

import numpy as np
import polars as pl
import pytest
from test_evaluation import assert_same, partitions

import polars_eval as pe
from polars_eval.scale import spill


def query_log(seed: int, n: int = 3000, queries: int = 150) -> pl.DataFrame:
    """Queries of varied length in three markets, scores with many ties, a query weight,
    a few queries without a relevant item."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, queries, n)
    rel = rng.integers(0, 4, n)
    rel[q % 17 == 0] = 0  # no relevant item: excluded from the means
    return pl.DataFrame(
        {
            "mkt": q % 3,
            "q": q,
            "rel": rel,
            "s": rng.integers(0, 6, n).astype(float),
            "w": ((q * 7919) % 5 + 0.5).astype(float),  # one weight per query
        }
    ).with_row_index("doc")


def ranking(**options: object) -> dict[str, object]:
    return {"relevance": "rel", "score": "s", "query": "q", **options}


def table(df: pl.DataFrame, **options: object) -> pl.DataFrame:
    args = ranking(**options)
    return df.eval.ranking(args.pop("relevance"), args.pop("score"), **args)


def spilled(path: os.PathLike[str], parts: list[pl.DataFrame], **options: object):
    ev = pe.Evaluation("ranking", spill=path, **ranking(**options))
    for part in parts:
        ev.update(part)
    return ev


@pytest.mark.parametrize("item", [None, "doc"])
@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("by", [None, "mkt"])
def test_queries_split_across_updates_equal_the_whole(tmp_path, item, weight, by):
    df = query_log(1)
    options = {"item": item, "weight": weight, "by": by, "k": [3, None]}
    want = table(df, **options)
    parts = partitions(df, 5, seed=2)  # rows, not queries: every query is split
    ev = spilled(tmp_path / "spill", parts, spill_buckets=4, **options)
    got = ev.compute()
    assert got["n_excluded"].sum() > 0  # queries without a relevant item counted apart
    assert_same(got, want)


def test_queries_split_across_files_of_a_lake(tmp_path):
    df = query_log(3)
    lake = tmp_path / "lake"
    lake.mkdir()
    for i, part in enumerate(partitions(df, 6, seed=4)):
        part.write_parquet(lake / f"part-{i}.parquet")
    ev = pe.Evaluation("ranking", spill=tmp_path / "spill", by="mkt", **ranking(item="doc"))
    ev.update(pl.scan_parquet(lake / "*.parquet"))
    assert ev._spill is not None and ev._spill.buckets == 1  # 3000 rows: one bucket
    assert_same(ev.compute(), table(df, item="doc", by="mkt"))


def test_buckets_from_the_row_count_and_oversized_buckets_in_slices(tmp_path, monkeypatch):
    monkeypatch.setattr(spill, "BUCKET_ROWS", 400)
    df = query_log(5)
    first, rest = df.head(1200), df.tail(df.height - 1200)
    ev = spilled(tmp_path / "spill", [first, rest.lazy()], by="mkt", weight="w")
    assert ev._spill is not None and ev._spill.buckets == 3  # 1200 rows / 400
    files = ev._spill.files()
    assert len(files) == 3
    frames = list(ev._spill.frames(["q"]))
    assert len(frames) > 3  # the later rows made buckets larger: read in slices
    assert max(f.height for f in frames) < 1000
    seen = pl.concat([f.select("q").unique() for f in frames])
    assert seen["q"].is_unique().all()  # slices of whole queries
    assert not [p for p in (tmp_path / "spill").iterdir() if p.name.startswith("_slices")]
    assert_same(ev.compute(), table(df, by="mkt", weight="w"))


@pytest.mark.parametrize("buckets", [1, 500])
def test_one_bucket_and_more_buckets_than_queries(tmp_path, buckets):
    df = query_log(7, n=600, queries=40)
    ev = spilled(tmp_path / "spill", partitions(df, 3, seed=8), by="mkt", spill_buckets=buckets)
    assert ev._spill is not None
    used = len(ev._spill.files())  # 40 queries in 500 buckets: a few may share one
    assert used == 1 if buckets == 1 else 30 < used <= df["q"].n_unique()
    assert_same(ev.compute(), table(df, by="mkt"))


def test_query_keys_of_other_dtypes_meet_in_one_bucket(tmp_path):
    df = query_log(9).with_columns(day=pl.col("q") % 4)
    a, b = df.head(1500), df.tail(1500)
    a = a.with_columns(pl.col("q").cast(pl.Int32), pl.col("day").cast(pl.String))
    b = b.with_columns(
        pl.col("q").cast(pl.Float64), pl.col("day").cast(pl.String).cast(pl.Categorical)
    )
    options = {"query": ["day", "q"], "item": "doc", "spill_buckets": 16}
    ev = spilled(tmp_path / "spill", [a, b], **options)
    whole = df.with_columns(pl.col("day").cast(pl.String))
    assert_same(ev.compute(), table(whole, query=["day", "q"], item="doc"))


def test_metrics_selection_computes_those_columns(tmp_path):
    df = query_log(11)
    metrics = ["ndcg@10", "map", "mrr", "n_queries"]
    ev = spilled(tmp_path / "spill", [df], by="mkt", metrics=metrics)
    want = table(df, by="mkt", k=[10, None]).select("mkt", *metrics)
    assert_same(ev.compute(), want)
    request = spill.table_request(ev._def)
    assert request["k"] is None and request["metrics"] == ["ndcg@10", "map", "mrr"]
    memory = pe.Evaluation("ranking", by="mkt", metrics=metrics, **ranking()).update(df)
    assert_same(memory.compute(), want)


def test_merge_of_two_spilled_evaluations(tmp_path):
    df = query_log(13)
    parts = partitions(df, 4, seed=14)
    options = {"item": "doc", "weight": "w", "by": "mkt"}
    a = spilled(tmp_path / "a", parts[:2], spill_buckets=3, **options)
    b = spilled(tmp_path / "b", parts[2:3], spill_buckets=3, **options)
    c = spilled(tmp_path / "c", parts[3:], spill_buckets=5, **options)  # other buckets
    a.merge(pe.Evaluation.from_spill(tmp_path / "b")).merge(c)
    assert_same(a.compute(), table(df, **options))
    assert_same(b.compute(), table(parts[2], **options))  # the merged one is unchanged
    assert_same(pe.Evaluation.from_spill(tmp_path / "a").compute(), table(df, **options))


@pytest.mark.parametrize("item", [None, "doc"])
def test_merge_with_an_in_memory_evaluation_and_state(tmp_path, item):
    df = query_log(15)
    parts = partitions(df, 3, seed=16)
    options = {"item": item, "by": "mkt"}
    disk = spilled(tmp_path / "spill", parts[:1], **options)
    memory = pe.Evaluation("ranking", **ranking(**options)).update(parts[1])
    disk.merge(memory)  # in-memory rows (counted per distinct row without item) to disk
    other = pe.Evaluation("ranking", **ranking(**options)).update(parts[2])
    other.merge(disk)  # and back
    assert_same(disk.compute(), table(pl.concat(parts[:2]), **options))
    assert_same(other.compute(), table(df, **options))
    state = disk.state  # every row, read back into memory
    restored = pe.Evaluation.from_state(state)
    assert_same(restored.compute(), table(pl.concat(parts[:2]), **options))


def test_empty_spill_is_undefined_as_the_task_method(tmp_path):
    ev = pe.Evaluation("ranking", spill=tmp_path / "spill", **ranking())
    with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate"):
        ev.compute()
    ev.update(query_log(17).head(0))
    assert not ev._spill.files() and ev._spill.buckets is None  # K waits for rows
    grouped = pe.Evaluation("ranking", spill=tmp_path / "by", by="mkt", **ranking())
    assert grouped.compute().height == 0


def test_no_relevant_item_anywhere_is_undefined_as_the_task_method(tmp_path):
    df = query_log(19).with_columns(rel=pl.lit(0))
    ev = spilled(tmp_path / "spill", [df], metrics=["ndcg@10"])
    with pytest.warns(pe.UndefinedMetricWarning, match="ndcg@10 is undefined"):
        got = ev.compute()
    assert got["ndcg@10"].to_list() == [None]
    weightless = spilled(tmp_path / "zero", [df.with_columns(w=pl.lit(0.0))], weight="w")
    with pytest.raises(pe.UndefinedMetricError, match='weight 0 in "w"'):
        weightless.compute()


def test_a_non_empty_directory_is_refused(tmp_path):
    (tmp_path / "data.csv").write_text("a\n1\n")
    with pytest.raises(pe.InvalidParameterError, match="is not empty"):
        pe.Evaluation("ranking", spill=tmp_path, **ranking())
    spilled(tmp_path / "spill", [query_log(21)])
    with pytest.raises(pe.InvalidParameterError, match="from_spill"):
        pe.Evaluation("ranking", spill=tmp_path / "spill", **ranking())
    with pytest.raises(pe.InvalidParameterError, match="is a file"):
        pe.Evaluation("ranking", spill=tmp_path / "data.csv", **ranking())
    with pytest.raises(pe.InvalidParameterError, match="not the directory of a spilled"):
        pe.Evaluation.from_spill(tmp_path)


def test_arguments_refused_by_name(tmp_path):
    with pytest.raises(pe.InvalidParameterError, match="spill= is available for the ranking"):
        pe.Evaluation("binary", label="y", score="p", spill=tmp_path / "s")
    with pytest.raises(pe.InvalidParameterError, match="spill_buckets= needs spill="):
        pe.Evaluation("ranking", spill_buckets=4, **ranking())
    with pytest.raises(pe.InvalidParameterError, match="spill_buckets must be an integer"):
        pe.Evaluation("ranking", spill=tmp_path / "s", spill_buckets=0, **ranking())


def test_merge_refuses_another_definition(tmp_path):
    a = spilled(tmp_path / "a", [query_log(23)], k=[3])
    b = spilled(tmp_path / "b", [query_log(24)], k=[5])
    with pytest.raises(pe.InvalidParameterError, match=r"options: .*\[3\].* vs .*\[5\]"):
        a.merge(b)
    memory = pe.Evaluation("ranking", **ranking(item="doc"))
    with pytest.raises(pe.InvalidParameterError, match="columns"):
        memory.merge(a)


def test_bad_batch_raises_and_leaves_the_spill_unchanged(tmp_path):
    df = query_log(25)
    ev = spilled(tmp_path / "spill", [df.head(1000)], weight="w")
    before = sorted(p.name for files in ev._spill.files().values() for p in files)
    with pytest.raises(pe.DataValidationError, match='"w"'):
        ev.update(df.tail(100).with_columns(w=pl.lit(-1.0)))
    with pytest.raises(pe.DataValidationError, match='"rel"'):
        ev.update(df.tail(100).drop("rel"))
    after = sorted(p.name for files in ev._spill.files().values() for p in files)
    assert after == before
    assert [p.name for p in (tmp_path / "spill").iterdir() if p.name.startswith("_staging")] == []
    assert_same(ev.compute(), table(df.head(1000), weight="w"))


def test_duplicate_item_across_updates_is_an_error_at_compute(tmp_path):
    df = query_log(27)
    ev = spilled(tmp_path / "spill", [df.head(10), df.head(1)], item="doc", spill_buckets=3)
    with pytest.raises(pe.DataValidationError, match="doc"):
        ev.compute()


def test_spill_of_a_newer_format_or_another_hash_is_refused(tmp_path):
    spilled(tmp_path / "spill", [query_log(29)])
    manifest = tmp_path / "spill" / spill.MANIFEST
    raw = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**raw, "hash_probe": raw["hash_probe"] + 1}))
    with pytest.raises(pe.InvalidParameterError, match="hash"):
        pe.Evaluation.from_spill(tmp_path / "spill")
    manifest.write_text(json.dumps({**raw, "version": spill.SPILL_VERSION + 1}))
    with pytest.raises(pe.InvalidParameterError, match="newer polars_eval"):
        pe.Evaluation.from_spill(tmp_path / "spill")
