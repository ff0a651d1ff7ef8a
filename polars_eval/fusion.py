"""Rank fusion: several runs of the same queries combined into one (SPEC §14 "Fusion").

``pe.fuse(runs, method="rrf", norm=None, weights=None, k=60)`` combines TREC-style runs
(``query``, ``doc``, ``score``, as :func:`polars_eval.read_trec_run` gives them) with
ranx's methods and normalizations, under ranx's names and definitions (Bassani 2022,
``ranx.fuse``), as Polars expressions: window functions over each (run, query) for the
normalizations and ranks, one ``group_by(query, doc)`` for the fusion. Lazy on
LazyFrames.

Definitions, per query q, for a run r that retrieved n_r documents, and the candidates
C_q (the documents any run retrieved for q; n_c = |C_q|):

* ranks: a run's documents in trec_eval's order, score descending then document id
  descending (SPEC §7; ties are never broken by input order, SPEC §2); rank 1 is the top;
* ``norm`` (per (run, query); ε = 1e-9 as ranx): ``"min-max"`` (s − min) / max(max − min,
  ε) (a query whose scores are all equal gives 0, BAD_INPUTS row 60), ``"max"`` s /
  max(max, ε), ``"sum"`` (s − min) / max(Σs − n_r·min, ε), ``"zmuv"`` (s − mean) /
  max(sd, ε) (population sd; 0 where every score is equal, where ranx gives its rounding
  noise divided by ε), ``"rank"`` 1 − (rank − 1) / n_r, ``"borda"`` 1 − (rank − 1) / n_c, and every candidate the run did not retrieve gets 0.5 − (n_r − 1) / (2 n_c)
  (so with ``"borda"`` every run holds every candidate);
* ``method`` over the runs that hold the document (its normalized values v_r):
  ``"sum"`` (CombSUM, Fox & Shaw 1993) Σ v_r, ``"wsum"`` Σ w_r v_r (``weights=``, one per
  run), ``"mnz"`` (CombMNZ) Σ v_r × (number of runs holding it), ``"anz"`` (CombANZ)
  Σ v_r / (that number), ``"max"``, ``"min"``, ``"med"`` (the median, the mean of the two
  middle values for an even count), ``"rrf"`` (reciprocal rank fusion, Cormack et al.
  2009) Σ 1 / (k + rank_r) — ranks of the normalized values, which the monotone
  normalizations leave as they are; with ``"borda"`` the documents a run did not
  retrieve rank after its own, by document id descending.

Where this differs from ranx: ranx breaks score ties by its input order (ours: document
id descending, whatever the order; give ranx its runs in that order to compare); ranx
refuses runs whose query sets differ (here a query missing from a run is an empty
ranking of that run); ranx's CombMAX / CombMIN read a missing document as −1e9 / 1e9 (here
the maximum and minimum over the runs holding it: the same unless a score passes ±1e9);
ranx's RRF after Borda normalization ranks in the order of a Python set (here: by the
normalized value, document id descending on ties).

References
----------
Fox & Shaw (1993), "Combination of Multiple Searches", TREC-2. Cormack, Clarke &
Büttcher (2009), "Reciprocal rank fusion outperforms Condorcet and individual rank
learning methods", SIGIR. Bassani (2022), "ranx: A Blazing-Fast Python Library for
Ranking Evaluation and Comparison", ECIR; ranx.fuse and ranx.normalization (v0.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from polars_eval._exprs import F64
from polars_eval.exceptions import DataValidationError, InvalidParameterError

__all__ = ["fuse"]

METHODS = ("rrf", "sum", "mnz", "max", "min", "med", "anz", "wsum")
"""The fusion methods (ranx's names)."""
NORMS = ("min-max", "max", "sum", "zmuv", "rank", "borda")
"""The normalizations (ranx's names); ``None``: the scores as they are."""
EPS = 1e-9
"""The smallest denominator of a normalization (ranx's)."""

SYS, BIT, VALUE, RANK = "__pe_run", "__pe_bit", "__pe_v", "__pe_rank"
N_ROWS, N_RUNS, BITS, BAD, TOP = "__pe_n", "__pe_runs", "__pe_bits", "__pe_bad", "__pe_top"
MAX_BITS = 62
"""Up to this many runs, the runs holding a document are a bit set (a duplicate (query,
doc) of one run shows as fewer bits than rows); beyond, a distinct count."""


def _check_options(method: Any, norm: Any, k: Any) -> float:
    if method not in METHODS:
        raise InvalidParameterError(f"method must be one of {list(METHODS)!r}; got {method!r}")
    if norm is not None and norm not in NORMS:
        raise InvalidParameterError(f"norm must be None or one of {list(NORMS)!r}; got {norm!r}")
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k < 0:
        raise InvalidParameterError(f"k must be a finite number >= 0; got {k!r}")
    return float(k)


def _check_weights(weights: Any, method: str, n_runs: int | None) -> Any:
    """The weights of ``wsum``: a list of one finite number per run (or, for one frame
    with a system column, a mapping system -> weight)."""
    if method != "wsum":
        if weights is not None:
            raise InvalidParameterError(
                f"weights= is for method='wsum' (a weighted sum); got method={method!r}"
            )
        return None
    if weights is None:
        raise InvalidParameterError("method='wsum' needs weights=: one weight per run")
    if isinstance(weights, Mapping):
        if n_runs is not None:
            raise InvalidParameterError(
                "weights= as a mapping names the systems of one frame with a system column; "
                "for a list of runs give a list of weights, one per run, in their order"
            )
        values = list(weights.values())
    elif isinstance(weights, (list, tuple)):
        if n_runs is None:
            raise InvalidParameterError(
                "for one frame with a system column give weights= as a mapping "
                "{system: weight} (the systems have no order of their own)"
            )
        values = list(weights)
        if len(values) != n_runs:
            raise InvalidParameterError(
                f"weights= must hold one weight per run: {n_runs} runs, got {len(values)} weights"
            )
    else:
        raise InvalidParameterError(
            f"weights= must be a list of numbers (or a mapping system -> weight); got {weights!r}"
        )
    for w in values:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
            raise InvalidParameterError(f"weights= must hold finite numbers; got {w!r}")
    return weights


def _columns(frame: Any, where: str, names: Sequence[str]) -> pl.LazyFrame:
    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            f"{where} must be a polars DataFrame or LazyFrame; got {type(frame).__name__}"
        )
    lf = frame.lazy()
    schema = lf.collect_schema()
    for name in names:
        if name not in schema:
            available = ", ".join(list(schema)[:12])
            raise DataValidationError(
                f'column "{name}" not found in {where}; available columns: {available}'
            )
    return lf


def _union(
    runs: Any, query: str, doc: str, score: str, system: str
) -> tuple[pl.LazyFrame, int | None, pl.LazyFrame | None, bool]:
    """Every run's rows stacked with its run number (``SYS``, from 0) and, for a list of
    runs, its bit; the number of runs (None for one frame with a system column: known at
    collect), the table of systems (that case) and whether any input is lazy."""
    keep = [pl.col(query), pl.col(doc), pl.col(score).cast(F64)]
    if isinstance(runs, (pl.DataFrame, pl.LazyFrame)):
        lf = _columns(runs, "the runs frame", [query, doc, score, system])
        systems = (
            lf.select(pl.col(system).drop_nulls().unique().sort())
            .with_row_index(SYS)
            .with_columns(pl.col(SYS).cast(pl.Int64))
        )
        rows = lf.select(pl.col(system), *keep).join(systems, on=system, how="inner")
        return rows, None, systems, isinstance(runs, pl.LazyFrame)
    named = _named(runs)
    if len(named) < 2:
        raise InvalidParameterError(f"fusion combines at least 2 runs; got {len(named)}")
    frames = []
    for i, (name, run) in enumerate(named):
        lf = _columns(run, name, [query, doc, score])
        bit = [pl.lit(1 << i, pl.UInt64).alias(BIT)] if len(named) <= MAX_BITS else []
        frames.append(lf.select(*keep, pl.lit(i, pl.Int64).alias(SYS), *bit))
    lazy = any(isinstance(run, pl.LazyFrame) for _, run in named)
    return pl.concat(frames, how="vertical_relaxed"), len(named), None, lazy


def _named(runs: Any) -> list[tuple[str, Any]]:
    """The runs of a list (``run 0``, ``run 1`` ...) or of a mapping name -> run (the
    names then in messages), in order."""
    if isinstance(runs, Mapping):
        return [(f'run "{name}"', run) for name, run in runs.items()]
    if isinstance(runs, (list, tuple)):
        return [(f"run {i}", run) for i, run in enumerate(runs)]
    raise InvalidParameterError(
        "runs must be a list of run frames (query, doc, score), a mapping name -> run, or "
        f"one frame with a system column; got {type(runs).__name__}"
    )


def _normalized(norm: str | None, s: pl.Expr, within: list[str]) -> pl.Expr:
    """The normalized score of each row of a run (per (run, query): ``within``)."""
    if norm is None:
        return s
    lo, hi, n = s.min().over(within), s.max().over(within), pl.len().over(within)
    if norm == "min-max":
        return (s - lo) / pl.max_horizontal(hi - lo, pl.lit(EPS))
    if norm == "max":
        return s / pl.max_horizontal(hi, pl.lit(EPS))
    if norm == "sum":
        return (s - lo) / pl.max_horizontal(s.sum().over(within) - lo * n, pl.lit(EPS))
    if norm == "zmuv":  # equal scores: exactly 0 (their mean's rounding is no signal)
        spread = s.std(ddof=0).over(within)
        z = (s - s.mean().over(within)) / pl.max_horizontal(spread, pl.lit(EPS))
        return pl.when(hi > lo).then(z).otherwise(0.0)
    assert norm == "rank"
    return 1.0 - (pl.col(RANK) - 1.0) / n


def _borda(
    rows: pl.LazyFrame, query: str, doc: str, score: str, runs: pl.LazyFrame
) -> pl.LazyFrame:
    """Every candidate of a query in every run, with its Borda value: 1 − (rank − 1) / n_c
    where the run retrieved it, 0.5 − (n_r − 1) / (2 n_c) where it did not (ranx's
    borda_norm), and its rank (those it did not retrieve after its own, by doc id)."""
    candidates = rows.select(query, doc).unique()
    kept = rows.drop([c for c in runs.collect_schema().names() if c != SYS])
    full = candidates.join(runs, how="cross").join(
        kept, on=[SYS, query, doc], how="left", nulls_equal=True
    )
    within = [SYS, query]
    held = pl.col(score).is_not_null()
    n_c = pl.len().over(within).cast(F64)
    n_r = held.sum().over(within).cast(F64)
    value = (
        pl.when(held)
        .then(1.0 - (pl.col(RANK) - 1.0) / n_c)
        .otherwise(0.5 - (n_r - 1.0) / (2.0 * n_c))
    )
    ranked = full.with_columns(_rank(pl.col(score).fill_null(-math.inf), doc, within))
    return ranked.with_columns(value.alias(VALUE))


def _rank(s: pl.Expr, doc: str, within: list[str]) -> pl.Expr:
    """The rank of each document in its run for the query: score descending, then document
    id descending (trec_eval's order)."""
    return (
        pl.struct(s.alias("s"), pl.col(doc).alias("d"))
        .rank("ordinal", descending=True)
        .over(within)
        .alias(RANK)
    )


def _fused(method: str, k: float, weight: pl.Expr | None) -> pl.Expr:
    v, n = pl.col(VALUE), pl.len()
    if method == "rrf":
        return (1.0 / (k + pl.col(RANK).cast(F64))).sum()
    if method == "sum":
        return v.sum()
    if method == "wsum":
        assert weight is not None
        return (v * weight).sum()
    if method == "mnz":
        return v.sum() * n
    if method == "anz":
        return v.sum() / n
    if method == "max":
        return v.max()
    if method == "min":
        return v.min()
    assert method == "med"
    return v.median()


def fuse(
    runs: Any,
    method: str = "rrf",
    norm: str | None = None,
    weights: Sequence[float] | Mapping[Any, float] | None = None,
    k: float = 60,
    *,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    system: str = "system",
    validate: bool = True,
) -> pl.DataFrame | pl.LazyFrame:
    """Fuse several runs of the same queries into one run (ranx's methods and norms).

    Parameters
    ----------
    runs : list of DataFrame or LazyFrame, mapping name -> frame, or one frame
        The runs, each with the columns ``query``, ``doc`` and ``score`` (as
        :func:`polars_eval.read_trec_run` reads them; other columns are ignored), at least
        two (a mapping names them in messages); or one frame with a ``system`` column
        naming the run of each row. A row with a null query, doc, score (or system) is
        ignored.
    method : {"rrf", "sum", "mnz", "max", "min", "med", "anz", "wsum"}, default "rrf"
        How the runs' (normalized) scores of a document combine; see the module.
    norm : {None, "min-max", "max", "sum", "zmuv", "rank", "borda"}, default None
        The normalization of each run's scores per query, before fusion (ranx's default
        is "min-max"; none here, as SPEC §14 writes it).
    weights : list of float, or mapping system -> weight
        ``method="wsum"`` only: one weight per run, in the order of ``runs`` (a mapping
        system -> weight for one frame with a system column).
    k : float, default 60
        RRF's constant: a document at rank r of a run adds 1 / (k + r).
    query, doc, score, system : str
        The column names.
    validate : bool, default True
        Check the scores: NaN or ±inf is an error naming the run (a null is ignored).
        A document repeated within a query of one run is an error either way.

    Returns
    -------
    pl.DataFrame or pl.LazyFrame
        ``query``, ``doc``, ``score`` (Float64): one row per (query, document) of any
        run, sorted by query, then score descending (ties: document id descending); a
        LazyFrame when any run is one, checked (and raising) at ``collect()``.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> bm25 = pl.DataFrame({"query": "q1", "doc": ["a", "b", "c"], "score": [10.0, 8.0, 2.0]})
    >>> dense = pl.DataFrame({"query": "q1", "doc": ["c", "a"], "score": [0.9, 0.5]})
    >>> pe.fuse([bm25, dense], method="sum", norm="min-max")  # ties: doc id descending
    shape: (3, 3)
    ┌───────┬─────┬───────┐
    │ query ┆ doc ┆ score │
    │ ---   ┆ --- ┆ ---   │
    │ str   ┆ str ┆ f64   │
    ╞═══════╪═════╪═══════╡
    │ q1    ┆ c   ┆ 1.0   │
    │ q1    ┆ a   ┆ 1.0   │
    │ q1    ┆ b   ┆ 0.75  │
    └───────┴─────┴───────┘
    >>> pe.fuse([bm25, dense], k=1).with_columns(pl.col("score").round(4))  # 1/(1 + rank)
    shape: (3, 3)
    ┌───────┬─────┬────────┐
    │ query ┆ doc ┆ score  │
    │ ---   ┆ --- ┆ ---    │
    │ str   ┆ str ┆ f64    │
    ╞═══════╪═════╪════════╡
    │ q1    ┆ a   ┆ 0.8333 │
    │ q1    ┆ c   ┆ 0.75   │
    │ q1    ┆ b   ┆ 0.3333 │
    └───────┴─────┴────────┘
    """
    rk = _check_options(method, norm, k)
    for name, value in (("query", query), ("doc", doc), ("score", score), ("system", system)):
        if not isinstance(value, str):
            raise InvalidParameterError(f"{name}= takes a column name; got {value!r}")
    rows, n_runs, systems, lazy = _union(runs, query, doc, score, system)
    weights = _check_weights(weights, method, n_runs)
    rows = rows.filter(pl.all_horizontal(pl.col(query, doc, score).is_not_null()))
    within = [SYS, query]
    if norm == "borda":
        runs_table = (
            pl.LazyFrame({SYS: list(range(n_runs or 0))}, schema={SYS: pl.Int64})
            if systems is None
            else systems
        )
        rows = _borda(rows.drop(BIT, strict=False), query, doc, score, runs_table)
    else:
        if method == "rrf" or norm == "rank":
            rows = rows.with_columns(_rank(pl.col(score), doc, within))
        if method != "rrf":  # RRF reads the ranks, which a monotone normalization keeps
            rows = rows.with_columns(_normalized(norm, pl.col(score), within).alias(VALUE))
    weight = None
    if weights is not None:
        if n_runs is not None:
            weight = pl.col(SYS).replace_strict(dict(enumerate(weights)), return_dtype=F64)
        else:
            weight = pl.col(system).replace_strict(dict(weights), default=None, return_dtype=F64)
    aggs = [_fused(method, rk, weight).cast(F64).alias(score), pl.len().alias(N_ROWS)]
    if n_runs is not None and n_runs <= MAX_BITS and norm != "borda":
        aggs.append(pl.col(BIT).sum().bitwise_count_ones().alias(N_RUNS))
    else:
        aggs.append(pl.col(SYS).n_unique().alias(N_RUNS))
    if systems is not None:
        aggs.append(pl.col(SYS).max().alias(TOP))
    if validate:
        aggs.append((~pl.col(score).is_finite()).any().alias(BAD))
    if weight is not None and systems is not None:
        aggs.append(weight.is_null().any().alias("__pe_unweighted"))
    fused = rows.group_by(query, doc).agg(aggs)
    source = _raw(runs, query, doc, score, system)

    def check(df: pl.DataFrame) -> pl.DataFrame:
        _raise_for_problems(df, source, n_runs, weights, query, doc, score, system)
        return df.select(query, doc, score)

    out_schema = fused.collect_schema()
    fused = fused.map_batches(
        check, schema=pl.Schema({c: out_schema[c] for c in (query, doc, score)})
    )
    # sorted by query, then score and doc id descending: each query's documents sorted in
    # their group, the queries then (2.4x faster than one sort on the three keys at 2.6e6
    # rows: small sorts, and the string comparisons of the query key only between queries)
    ordered = pl.col(doc, score).sort_by([score, doc], descending=True)
    fused = fused.group_by(query).agg(ordered).sort(query).explode([doc, score])
    if lazy:
        return fused
    try:
        return fused.collect()
    except pl.exceptions.PolarsError as error:  # our error, raised inside the check
        inner = error.__cause__ or error.__context__
        if isinstance(inner, (DataValidationError, InvalidParameterError)):
            raise inner from None
        raise


def _raw(runs: Any, query: str, doc: str, score: str, system: str) -> pl.LazyFrame:
    """Every row with its run's name (``SYS``: ``run i`` or the system), for messages."""
    if isinstance(runs, (pl.DataFrame, pl.LazyFrame)):
        return runs.lazy().select(pl.col(system).cast(pl.String).alias(SYS), query, doc, score)
    return pl.concat(
        [
            run.lazy().select(pl.lit(name).alias(SYS), query, doc, pl.col(score).cast(F64))
            for name, run in _named(runs)
        ],
        how="vertical_relaxed",
    )


def _raise_for_problems(
    df: pl.DataFrame,
    source: pl.LazyFrame,
    n_runs: int | None,
    weights: Any,
    query: str,
    doc: str,
    score: str,
    system: str,
) -> None:
    """The errors of BAD_INPUTS row 60 and SPEC §2, found in the fused aggregation: a
    document repeated within a query of one run, NaN or ±inf scores, a single system, a
    system without a weight."""
    if n_runs is None:
        found = int(df.get_column(TOP).max() or 0) + 1 if df.height else 0
        if found < 2:
            raise DataValidationError(
                f'column "{system}" holds {found} system(s); fusion combines at least 2 runs'
            )
    if df.height and (df.get_column(N_RUNS) < df.get_column(N_ROWS)).any():
        rows = source.filter(pl.col(score).is_not_null() & pl.col(query).is_not_null())
        repeats = (
            rows.group_by(SYS, query, doc)
            .agg(pl.len().alias("__pe_k"))
            .filter(pl.col("__pe_k") > 1)
            .sort(SYS, query, doc)
            .collect()
        )
        first = repeats.row(0, named=True)
        extra = int((repeats.get_column("__pe_k") - 1).sum())
        shown = ", ".join(
            f"({query}={r[query]!r}, {doc}={r[doc]!r})"
            for r in repeats.head(3).iter_rows(named=True)
        )
        where = f'system "{first[SYS]}"' if n_runs is None else first[SYS]
        raise DataValidationError(
            f"{where} has duplicate ({query}, {doc}) rows: a run ranks a document once per "
            f"query; found {extra} row(s) repeating another, e.g. [{shown}]"
        )
    if BAD in df.columns and df.get_column(BAD).any():
        bad = source.filter(~pl.col(score).is_finite()).collect()
        shown = ", ".join(repr(v) for v in bad.get_column(score).head(3).to_list())
        raise DataValidationError(
            f'column "{score}" must hold finite scores; {bad.get_column(SYS)[0]} has '
            f"{bad.height} row(s) with NaN or ±inf, e.g. [{shown}]"
        )
    if "__pe_unweighted" in df.columns and df.get_column("__pe_unweighted").any():
        names = source.select(pl.col(SYS).unique().sort()).collect().get_column(SYS).to_list()
        missing = [n for n in names if n not in {str(k) for k in weights}]
        raise InvalidParameterError(
            f"weights= must give a weight to every system; none for {missing[:5]}"
        )
