"""TREC interop (SPEC §7): read run and qrels files, evaluate as trec_eval does.

File formats (whitespace separated, one record a line; blank lines and comment lines,
whose first non-blank character is ``#``, are skipped, as trec_eval skips them):

* run: ``query  Q0  doc  rank  score  run_tag`` (6 fields; the rank is kept but, as in
  trec_eval, never used: the order is score descending, then doc id descending; fields
  after the run tag are ignored, as trec_eval ignores them);
* qrels: ``query  iteration  doc  relevance`` (4 fields, integer relevance; fields after
  the relevance are ignored).

Malformed lines (too few fields, a score or relevance that is not a number) raise
:class:`~polars_eval.DataValidationError` naming the file and the line, at collect time
(the readers are lazy).

:func:`trec_eval` follows trec_eval's conventions: only queries present in both the run
and the qrels are evaluated and averaged; retrieved documents without a judgment are not
relevant; judged relevant documents never retrieved count in the recall, AP, R-precision
and ideal-DCG denominators; a query without relevant documents scores 0; a document
repeated within one query of the run is an error. A document is relevant when its
relevance is >= 1 (trec_eval's default ``-l 1``); the gain of ``ndcg`` is the relevance
itself (linear). Negative relevance grades count as 0: trec_eval reads them as documents
of the judged pool left unjudged (its ``RELVALUE_UNJUDGED``), which every measure offered
here scores as not relevant. Where trec_eval's versions differ (how ``iprec_at_recall``
and ``11pt_avg`` turn a recall level into a number of relevant documents), trec_eval 10's
rule applies by default and ``convention="9"`` gives 9.x's (which pytrec_eval follows).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from polars_eval._exprs import F64
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.metrics.ranking import engine as rk

__all__ = ["read_trec_qrels", "read_trec_run", "trec_eval"]

RUN_COLUMNS = ("query", "q0", "doc", "rank", "score", "run")
QRELS_COLUMNS = ("query", "iteration", "doc", "relevance")

DEFAULT_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
CUTOFF_MEASURES = {
    "P": DEFAULT_CUTOFFS,
    "recall": DEFAULT_CUTOFFS,
    "ndcg_cut": DEFAULT_CUTOFFS,
    "map_cut": DEFAULT_CUTOFFS,
    "success": (1, 5, 10),
}
PLAIN_MEASURES = (
    "map",
    "ndcg",
    "recip_rank",
    "Rprec",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "set_P",
    "set_recall",
    "set_F",
    "11pt_avg",
    "iprec_at_recall",
    "gm_map",
)
COUNT_MEASURES = ("num_ret", "num_rel", "num_rel_ret")
DEFAULT_MEASURES = (
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "Rprec",
    "recip_rank",
    "P.5",
    "P.10",
    "ndcg",
    "ndcg_cut.10",
)

PathLike = str | os.PathLike[str]


# ---------------------------------------------------------------------------------------
# Readers
# ---------------------------------------------------------------------------------------


def _scan_lines(path: PathLike, what: str) -> pl.LazyFrame:
    text = os.fspath(path)
    if not any(ch in text for ch in "*?[") and not Path(text).is_file():
        raise DataValidationError(f"TREC {what} file {text!r} not found")
    return pl.scan_csv(
        text,
        has_header=False,
        separator="\x1f",
        quote_char=None,
        new_columns=["line"],
        schema={"line": pl.String},
    ).with_row_index("line_no", offset=1)


def _parser(path: str, what: str, columns: tuple[str, ...], numeric: dict[str, Any]) -> Any:
    """A batch function: split each line on whitespace, cast, raise on the first bad line.

    As trec_eval reads its files: blank lines and comment lines (``#`` as the first
    non-blank character) are skipped, and fields after the ``n`` expected ones are ignored
    (trec_eval ignores what follows the run tag). Fast path: tabs become spaces and a
    line with exactly ``n - 1`` single spaces is split on them; any other line (runs of
    blanks, extra fields, too few fields) is split again with a regular expression, and is
    an error if it has fewer than ``n`` fields.
    """
    n = len(columns)
    layout = " ".join(columns)

    def parse(df: pl.DataFrame) -> pl.DataFrame:
        line = pl.col("line")
        norm = line.str.replace_all("\t", " ", literal=True).str.strip_chars()
        df = df.with_columns(norm.alias("norm")).filter(
            (pl.col("norm").str.len_bytes() > 0) & ~pl.col("norm").str.starts_with("#")
        )
        fast = pl.col("norm").str.count_matches(" ", literal=True) == n - 1
        df = df.with_columns(fast.alias("fast"))
        parts = df.select(
            pl.col("norm").str.split_exact(" ", n - 1).struct.rename_fields(list(columns))
        ).unnest("norm")
        if not df.get_column("fast").all():
            slow = df.get_column("norm").str.extract_all(r"\S+")
            lengths = slow.list.len()
            bad = df.with_columns(lengths.alias("n")).filter(~pl.col("fast") & (pl.col("n") < n))
            if bad.height:
                row = bad.row(0, named=True)
                raise DataValidationError(
                    f"{path}, line {row['line_no']}: a TREC {what} line has {n} fields "
                    f"({layout}); found {row['n']}: {row['line'].strip()!r}"
                )
            redo = pl.DataFrame(
                {col: slow.list.get(i, null_on_oob=True) for i, col in enumerate(columns)}
            )
            keep = df.get_column("fast")
            parts = parts.select(
                pl.when(pl.lit(keep)).then(pl.col(c)).otherwise(pl.lit(redo.get_column(c))).alias(c)
                for c in columns
            )
        for col, (dtype, kind) in numeric.items():
            cast = parts.get_column(col).cast(dtype, strict=False)
            bad_mask = cast.is_null() & parts.get_column(col).is_not_null()
            if bad_mask.any():
                i = int(bad_mask.arg_max() or 0)
                raise DataValidationError(
                    f"{path}, line {df.get_column('line_no')[i]}: the {col} of a TREC {what} "
                    f"line must be {kind}; found {parts.get_column(col)[i]!r}"
                )
            parts = parts.with_columns(cast.alias(col))
        return parts

    return parse


def read_trec_run(path: PathLike) -> pl.LazyFrame:
    """Scan a TREC run file: columns query, q0, doc (str), rank (Int64), score (Float64), run.

    Fields are separated by any whitespace; blank lines and ``#`` comment lines are
    skipped and fields after the sixth ignored, as trec_eval does. Lazy: the file is read,
    and malformed lines reported (naming the file and the line), at collect time. A rank
    that is not an integer is read as null (trec_eval never uses it).

    Examples
    --------
    >>> import tempfile, os
    >>> import polars_eval as pe
    >>> path = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("q1 Q0 d1 1 2.5 bm25\\nq1 Q0 d2 2 1.5 bm25\\n")
    >>> pe.read_trec_run(path).collect().select("query", "doc", "score").rows()
    [('q1', 'd1', 2.5), ('q1', 'd2', 1.5)]
    """
    lines = _scan_lines(path, "run")
    parse = _parser(os.fspath(path), "run", RUN_COLUMNS, {"score": (F64, "a number")})
    schema = {
        "query": pl.String,
        "q0": pl.String,
        "doc": pl.String,
        "rank": pl.String,
        "score": F64,
        "run": pl.String,
    }
    return lines.map_batches(parse, schema=schema, streamable=True).with_columns(
        pl.col("rank").cast(pl.Int64, strict=False)
    )


def read_trec_qrels(path: PathLike) -> pl.LazyFrame:
    """Scan a TREC qrels file: columns query, iteration, doc (str), relevance (Int64).

    Lazy, like :func:`read_trec_run`; ``#`` comment lines and blank lines are skipped and
    fields after the fourth ignored. Negative relevance grades are kept as read: trec_eval
    treats such a document as in the pool but unjudged, and :func:`trec_eval` counts it as
    not relevant, with gain 0, as trec_eval does in every measure offered here. (The
    ``.eval`` ranking methods refuse negative relevance: BAD_INPUTS row 35.)

    Examples
    --------
    >>> import tempfile, os
    >>> import polars_eval as pe
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("q1 0 d1 2\\nq1 0 d3 0\\n")
    >>> pe.read_trec_qrels(path).collect().select("query", "doc", "relevance").rows()
    [('q1', 'd1', 2), ('q1', 'd3', 0)]
    """
    lines = _scan_lines(path, "qrels")
    parse = _parser(
        os.fspath(path), "qrels", QRELS_COLUMNS, {"relevance": (pl.Int64, "an integer")}
    )
    schema = {"query": pl.String, "iteration": pl.String, "doc": pl.String, "relevance": pl.Int64}
    return lines.map_batches(parse, schema=schema, streamable=True)


# ---------------------------------------------------------------------------------------
# trec_eval
# ---------------------------------------------------------------------------------------


def parse_measures(measures: Iterable[str]) -> list[tuple[str, int | None, str]]:
    """trec_eval measure names -> (measure, cutoff, output column) in order, no duplicates.

    Accepts ``"map"``, ``"P.5"``, ``"P.5,10"``, ``"P_5"`` and ``"P"`` (trec_eval's default
    cutoffs). Output columns use trec_eval's printed names (``P_5``, ``ndcg_cut_10``).
    """
    if isinstance(measures, str):
        measures = [measures]
    out: dict[str, tuple[str, int | None, str]] = {}
    for raw in measures:
        text = str(raw).strip()
        match = re.fullmatch(r"(11pt_avg|[A-Za-z_]+?)(?:[._]([0-9][0-9,]*))?", text)
        if match is None:
            raise InvalidParameterError(f"unknown trec_eval measure {raw!r}")
        name, cuts = match.group(1), match.group(2)
        if name in CUTOFF_MEASURES:
            values = [int(c) for c in cuts.split(",") if c] if cuts else list(CUTOFF_MEASURES[name])
            for cut in values:
                if cut <= 0:
                    raise InvalidParameterError(f"trec_eval cutoffs must be positive; got {raw!r}")
                out.setdefault(f"{name}_{cut}", (name, cut, f"{name}_{cut}"))
        elif name == "iprec_at_recall" and cuts is None:
            for level in range(11):
                col = f"iprec_at_recall_{level / 10:.2f}"
                out.setdefault(col, (name, level, col))
        elif name in PLAIN_MEASURES and cuts is None:
            out.setdefault(name, (name, None, name))
        else:
            known = ", ".join([*PLAIN_MEASURES, *CUTOFF_MEASURES])
            raise InvalidParameterError(
                f"unknown or unsupported trec_eval measure {raw!r}; supported: {known}"
            )
    return list(out.values())


def _as_lazy(data: Any, reader: Any, needed: Sequence[str], what: str) -> pl.LazyFrame:
    if isinstance(data, (str, os.PathLike)):
        return reader(data)
    if isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        lf = data.lazy()
        schema = lf.collect_schema()
        missing = [c for c in needed if c not in schema]
        if missing:
            raise DataValidationError(
                f'the TREC {what} frame needs columns {list(needed)}; column "{missing[0]}" not found'
            )
        return lf
    raise InvalidParameterError(
        f"the TREC {what} must be a path or a polars DataFrame/LazyFrame; got {type(data).__name__}"
    )


SPEC_OF = {
    "map": ("ap_at_k", False),
    "map_cut": ("ap_at_k", True),
    "ndcg": ("ndcg", False),
    "ndcg_cut": ("ndcg", True),
    "P": ("precision_at_k", True),
    "recall": ("recall_at_k", True),
    "success": ("hit_rate_at_k", True),
    "recip_rank": ("reciprocal_rank", False),
    "Rprec": ("r_precision", False),
    "11pt_avg": ("ap_11pt", False),
    "iprec_at_recall": ("iprec_at_recall", True),
    "gm_map": ("ap_at_k", False),
}
"""trec_eval measure -> (ranking metric, whether the cutoff applies)."""


CONVENTIONS = {"10": "trec10", "9": "trec"}
"""trec_eval version -> how recall levels become ranks (iprec_at_recall, 11pt_avg):
10: lround(level · R); 9.x (and pytrec_eval): (long) (level · R + 0.9)."""


def _specs(measures: list[tuple[str, int | None, str]], flavor: str) -> list[rk.Spec]:
    specs = []
    for name, cut, col in measures:
        if name in SPEC_OF:
            metric, with_cut = SPEC_OF[name]
            specs.append(
                rk.Spec(col, metric, k=cut if with_cut else None, gain="linear", flavor=flavor)
            )
    return specs


def _convention(convention: Any) -> str:
    key = str(convention) if isinstance(convention, (str, int)) else None
    if isinstance(convention, bool) or key not in CONVENTIONS:
        raise InvalidParameterError(
            f'convention must be "10" (trec_eval 10, the default) or "9" (trec_eval 9.x, '
            f"as pytrec_eval); got {convention!r}"
        )
    return CONVENTIONS[key]


def _set_measures(measures: list[tuple[str, int | None, str]]) -> list[pl.Expr]:
    ret, rel, rel_ret = (pl.col(c).cast(F64) for c in COUNT_MEASURES)
    set_p = pl.when(ret > 0).then(rel_ret / ret).otherwise(0.0)
    set_r = pl.when(rel > 0).then(rel_ret / rel).otherwise(0.0)
    set_f = pl.when(set_p + set_r > 0).then(2.0 * set_p * set_r / (set_p + set_r)).otherwise(0.0)
    formulas = {"set_P": set_p, "set_recall": set_r, "set_F": set_f}
    return [formulas[name].alias(col) for name, _, col in measures if name in formulas]


MIN_GEO_MEAN = 1e-5
"""trec_eval's floor under a per-query AP before its logarithm (gm_map)."""


def _log_measures(measures: list[tuple[str, int | None, str]]) -> list[pl.Expr]:
    """gm_map per query: log(max(AP, 1e-5)), as trec_eval prints it (Robertson 2006)."""
    return [
        pl.col(col).clip(lower_bound=MIN_GEO_MEAN).log().alias(col)
        for name, _, col in measures
        if name == "gm_map"
    ]


def _raise_duplicate(joined: pl.LazyFrame, queries: pl.Series) -> None:
    """Name the first repeated (query, document) pair (an error, as in trec_eval)."""
    dups = (
        joined.filter(pl.col("query").is_in(queries.implode()))
        .group_by("query", "doc")
        .len()
        .filter(pl.col("len") > 1)
        .sort("query", "doc")
        .collect()
    )
    query, doc = dups.row(0)[:2]
    raise DataValidationError(
        f'document "{doc}" appears more than once for query "{query}" in the run (or in the '
        f"qrels); {queries.len()} queries have repeated documents (trec_eval stops too)"
    )


def trec_eval(
    run: Any,
    qrels: Any,
    metrics: Iterable[str] = DEFAULT_MEASURES,
    *,
    per_query: bool = False,
    convention: str = "10",
) -> pl.DataFrame:
    """Evaluate a TREC run against qrels as trec_eval does (measure names as trec_eval's).

    ``run`` and ``qrels`` are paths (read with :func:`read_trec_run` /
    :func:`read_trec_qrels`) or frames with columns query, doc, score and query, doc,
    relevance. ``metrics`` are trec_eval measure names: ``map``, ``map_cut.k``, ``ndcg``,
    ``ndcg_cut.k``, ``P.k``, ``recall.k``, ``success.k``, ``recip_rank``, ``Rprec``,
    ``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``, ``set_P``, ``set_recall``,
    ``set_F``, ``11pt_avg``, ``iprec_at_recall`` (11 columns, ``iprec_at_recall_0.00`` ..
    ``iprec_at_recall_1.00``), ``gm_map`` (per query log(max(AP, 1e-5)), the summary its
    geometric mean, as trec_eval) (``P.5,10`` gives two; ``P`` alone trec_eval's default
    cutoffs).

    ``convention`` is the trec_eval version whose rules apply where versions differ:
    ``"10"`` (default) or ``"9"`` (trec_eval 9.x, which pytrec_eval follows). They differ
    in ``iprec_at_recall`` and ``11pt_avg`` only, in how a recall level p becomes a number
    of relevant documents with R relevant in all: trec_eval 10 takes ``lround(p·R)``
    (half away from zero), 9.x ``(long) (p·R + 0.9)``. With R = 4 at p = 0.6 (2.4): 10
    reads the interpolated precision from the 2nd relevant document on, 9.x from the 3rd
    (floor(3.3)); with R = 3 at p = 0.1 (0.3): 10 rounds to 0 relevant documents (the best
    precision at any rank), 9.x to 1.

    Returns one row (the mean over the queries present in both inputs; ``num_ret``,
    ``num_rel``, ``num_rel_ret`` are summed, as trec_eval's ``all`` line), or with
    ``per_query=True`` one row per query, sorted by query. Columns are named as trec_eval
    prints them (``P_5``, ``ndcg_cut_10``). Conventions: see the module docstring.

    References
    ----------
    trec_eval, https://github.com/usnistgov/trec_eval (versions 10.0 and 9.0.8).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> run = pl.DataFrame({"query": ["1", "1", "1"], "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["1", "1", "1"], "doc": ["b", "c", "z"], "relevance": [1, 0, 1]})
    >>> pe.trec_eval(run, qrels, ["map", "P.2", "recip_rank"])
    shape: (1, 4)
    ┌───────┬──────┬─────┬────────────┐
    │ num_q ┆ map  ┆ P_2 ┆ recip_rank │
    │ ---   ┆ ---  ┆ --- ┆ ---        │
    │ i64   ┆ f64  ┆ f64 ┆ f64        │
    ╞═══════╪══════╪═════╪════════════╡
    │ 1     ┆ 0.25 ┆ 0.5 ┆ 0.5        │
    └───────┴──────┴─────┴────────────┘
    """
    measures = parse_measures(metrics)
    if not measures:
        raise InvalidParameterError("metrics must name at least one trec_eval measure")
    flavor = _convention(convention)
    run_lf = _as_lazy(run, read_trec_run, ("query", "doc", "score"), "run").select(
        pl.col("query").cast(pl.String),
        pl.col("doc").cast(pl.String),
        pl.col("score").cast(F64),
    )
    qrels_lf = _as_lazy(qrels, read_trec_qrels, ("query", "doc", "relevance"), "qrels").select(
        pl.col("query").cast(pl.String),
        pl.col("doc").cast(pl.String),
        pl.col("relevance").cast(F64).clip(lower_bound=0.0),
    )
    specs = _specs(measures, flavor)
    # Retrieved documents get their judgment from a left join (unjudged = not relevant);
    # what the unretrieved judged documents add (the relevant count, the ideal DCG) comes
    # from the qrels grouped alone. The inner join of the two per-query frames keeps the
    # queries present in both inputs, as trec_eval.
    qrels_lf = qrels_lf.collect().lazy()  # read once, used twice
    joined = run_lf.join(qrels_lf, on=["query", "doc"], how="left")
    relevance = pl.col("relevance").fill_null(0.0)
    run_side = joined.group_by("query").agg(
        rk.query_state(relevance, "score", ties="first", tiebreak="doc"),
        pl.col("score").is_not_null().sum().cast(F64).alias(rk.NRET),
        (pl.col("score").is_nan().any() | relevance.is_nan().any()).alias(rk.HASNAN),
        pl.len().cast(pl.Int64).alias("num_ret"),
        (relevance >= 1.0).sum().cast(pl.Int64).alias("num_rel_ret"),
        (pl.col("doc").n_unique() < pl.len()).alias("__pe_dup"),
    )
    judged = pl.col("relevance")
    qrels_side = qrels_lf.group_by("query").agg(
        (judged >= 1.0).sum().cast(F64).alias(rk.NREL),
        (judged >= 1.0).sum().cast(pl.Int64).alias("num_rel"),
        *rk.ideal_aggs(judged, specs),
    )
    # collected here: the readers' parsing (a Python batch function) runs once
    grouped = run_side.join(qrels_side, on="query", how="inner").sort("query").collect()
    # the relevant items and the ideal DCG come from the qrels (__pe_R, __pe_ideal)
    values = rk.evaluate(
        grouped, specs, ties="first", unscored="ignore", min_relevance=1.0, no_relevant="zero"
    )
    per = pl.concat(
        [grouped.select("query", *COUNT_MEASURES, "__pe_dup"), values], how="horizontal"
    ).with_columns(*_set_measures(measures), *_log_measures(measures))
    if per.get_column("__pe_dup").any():
        _raise_duplicate(joined, per.filter("__pe_dup").get_column("query"))
    columns = [col for name, _, col in measures if name != "num_q"]
    if per_query:
        return per.select("query", *columns)
    aggs: list[pl.Expr] = []
    for name, _, col in measures:
        if name == "num_q":
            aggs.append(pl.len().cast(pl.Int64).alias("num_q"))
        elif name in COUNT_MEASURES:
            aggs.append(pl.col(col).sum().cast(pl.Int64))
        elif name == "gm_map":  # per query the log of AP; the summary its geometric mean
            aggs.append(pl.col(col).mean().exp().cast(F64))
        else:
            aggs.append(pl.col(col).mean().cast(F64))
    if not any(name == "num_q" for name, _, _ in measures):
        aggs.insert(0, pl.len().cast(pl.Int64).alias("num_q"))
    return per.select(aggs)


def trec_cli(
    run_path: PathLike,
    qrels_path: PathLike,
    metrics: Sequence[str] | None = None,
    per_query: bool = False,
    convention: str = "10",
) -> pl.DataFrame:
    """The ``polars-eval trec RUN QRELS [-m measure ...] [-q]`` command: :func:`trec_eval` on two files.

    ``metrics`` None or empty uses :data:`DEFAULT_MEASURES`. Errors are
    :class:`~polars_eval.DataValidationError` (bad file, malformed line, duplicate
    document) or :class:`~polars_eval.InvalidParameterError` (unknown measure), each with a
    one-line message for the CLI to print.
    """
    chosen = list(metrics) if metrics else list(DEFAULT_MEASURES)
    try:
        return trec_eval(
            read_trec_run(run_path),
            read_trec_qrels(qrels_path),
            chosen,
            per_query=per_query,
            convention=convention,
        )
    except pl.exceptions.PolarsError as error:
        # a DataValidationError raised inside a batch function reaches us wrapped
        inner = error.__cause__ or error.__context__
        if isinstance(inner, DataValidationError):
            raise inner from None
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise DataValidationError(message) from None
