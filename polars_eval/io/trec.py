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
relevance is >= 1 (trec_eval's default ``-l 1``, ``min_relevance=``); the gain of
``ndcg`` is the relevance itself (linear) unless a gain map says otherwise. A document of
the qrels with a negative relevance is pooled but unjudged (trec_eval's
``RELVALUE_UNJUDGED``): not relevant, like a document absent from the qrels, and neither
counts as judged non-relevant (``bpref``, ``num_nonrel_judged_ret``); ``infAP`` tells the
two apart (unjudged documents of the pool count in its estimate, the others are
skipped). In the ranking engine both are rows with a null relevance, ranked
(``unjudged="nonrelevant"``). Where trec_eval's versions differ (how ``iprec_at_recall``
and ``11pt_avg`` turn a recall level into a number of relevant documents), trec_eval 10's
rule applies by default and ``convention="9"`` gives 9.x's (which pytrec_eval follows).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_eval._exprs import F64
from polars_eval._params import check_positive_int
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.io import _trec_measures as tm
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
    "relative_P": DEFAULT_CUTOFFS,
}
"""Measures with integer cutoffs (trec_eval's long cutoffs), and their defaults."""
RECALL_LEVELS = tuple(i / 10.0 for i in range(11))
LEVEL_MEASURES = {
    "iprec_at_recall": RECALL_LEVELS,
    "Rprec_mult": tuple(i / 10.0 for i in range(2, 21, 2)),
}
"""Measures with real cutoffs, one column each (``iprec_at_recall_0.25``), and defaults."""
PARAM_MEASURES = {
    "11pt_avg": RECALL_LEVELS,
    "utility": (1.0, -1.0, 0.0, 0.0),
    "set_F": (1.0,),
    "relstring": (10.0,),
}
"""Measures with real parameters (one column), and their defaults."""
GAIN_MEASURES = ("ndcg", "dcg", "ideal_dcg", "ndcg_rel", "Rndcg", "G", "rbp")
"""Measures taking a gain map, ``level=gain`` pairs (``ndcg.1=0,2=3``; rbp also ``p=``)."""
PLAIN_MEASURES = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "infAP",
    "gm_bpref",
    "binG",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "num_nonrel_judged_ret",
    "yaap",
    "rbp_resid",
)
"""Measures without parameters."""
MEASURE_NAMES = (
    *PLAIN_MEASURES,
    *CUTOFF_MEASURES,
    *LEVEL_MEASURES,
    *PARAM_MEASURES,
    *GAIN_MEASURES,
)
"""Every trec_eval 10 measure :func:`trec_eval` offers."""
COUNT_MEASURES = ("num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret")
"""Summed over queries in the summary (trec_eval's ``all`` line), not averaged."""
GEOMETRIC_MEASURES = ("gm_map", "gm_bpref")
"""Per query log(max(value, 1e-5)); the summary is the geometric mean."""
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


@dataclass(frozen=True)
class Measure:
    """One output column of :func:`trec_eval`: a trec_eval measure with its parameters."""

    name: str
    column: str  # as trec_eval prints it
    cut: int | None = None  # an integer cutoff; iprec_at_recall: the index of its level
    params: tuple[float, ...] | None = None  # real cutoffs or parameters (None: defaults)
    pairs: tuple[tuple[int, float], ...] = ()  # a gain map


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _numbers(raw: str, text: str) -> list[float]:
    values = text.split(",")
    if not all(_NUMBER.fullmatch(v.strip()) for v in values):
        raise InvalidParameterError(
            f"trec_eval measure {raw!r}: parameters must be comma-separated numbers; got {text!r}"
        )
    return [float(v) for v in values]


def _cutoffs(raw: str, text: str) -> list[int]:
    """Integer cutoffs as trec_eval reads them (atol: ``2.5`` is 2), each positive."""
    cuts = [int(v) for v in _numbers(raw, text)]
    if min(cuts) <= 0:
        raise InvalidParameterError(f"trec_eval cutoffs must be positive; got {raw!r}")
    return cuts


def _pairs(raw: str, name: str, text: str) -> tuple[tuple[int, float], tuple[float, ...]]:
    """A gain map ``level=gain,...`` (rbp: also ``p=persistence``) -> (pairs, (p,))."""
    pairs: dict[int, float] = {}
    persistence: tuple[float, ...] = ()
    for item in text.split(","):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not _NUMBER.fullmatch(value.strip()):
            raise InvalidParameterError(
                f"trec_eval measure {raw!r}: a gain map is level=gain pairs "
                f"('{name}.1=0,2=3'); got {item!r}"
            )
        if name == "rbp" and key == "p":
            persistence = (float(value),)
            rk.check_persistence(persistence[0])
            continue
        if not key.isdigit() or int(key) in pairs:
            raise InvalidParameterError(
                f"trec_eval measure {raw!r}: each level of a gain map is a distinct "
                f"non-negative integer; got {key!r}"
            )
        pairs[int(key)] = float(value)
    return tuple(pairs.items()), persistence


UNSUPPORTED = {
    **{
        name: "it reads preference judgments (trec_eval -R prefs / qrels_prefs)"
        for name in (
            "prefs_num_prefs_poss",
            "prefs_num_prefs_ful",
            "prefs_num_prefs_ful_ret",
            "prefs_simp",
            "prefs_pair",
            "prefs_avgjg",
            "prefs_avgjg_Rnonrel",
            "prefs_simp_ret",
            "prefs_pair_ret",
            "prefs_avgjg_ret",
            "prefs_avgjg_Rnonrel_ret",
            "prefs_simp_imp",
            "prefs_pair_imp",
            "prefs_avgjg_imp",
        )
    },
    **{
        name: "it reads judgment groups (trec_eval -R qrels_jg)"
        for name in ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
    },
}
"""trec_eval 10 measures not offered, and why: they need another qrels format."""


def _split(raw: str) -> tuple[str, str | None]:
    """A measure text -> (measure name, parameter text or None): ``P.5`` and ``P_5`` are P
    with 5; the longest measure name that the text starts with wins (``ndcg_cut_10``)."""
    if raw in MEASURE_NAMES:
        return raw, None
    base = raw.split(".")[0]
    if base in UNSUPPORTED:
        raise InvalidParameterError(
            f"trec_eval measure {base!r} is not supported: {UNSUPPORTED[base]}"
        )
    for name in sorted(MEASURE_NAMES, key=len, reverse=True):
        if raw.startswith(name) and raw[len(name) : len(name) + 1] in (".", "_"):
            rest = raw[len(name) + 1 :]
            numeric = rest[:1] in tuple("0123456789.+-")
            if rest and (raw[len(name)] == "." or numeric or name in GAIN_MEASURES):
                return name, rest
    known = ", ".join(MEASURE_NAMES)
    raise InvalidParameterError(
        f"unknown or unsupported trec_eval measure {raw!r}; supported: {known}"
    )


def parse_measures(measures: Iterable[str]) -> list[Measure]:
    """trec_eval measure names -> :class:`Measure` in order, no repeated column.

    Accepts every parameter form of trec_eval 10: ``P.5``, ``P.5,10``, ``P_5`` and ``P``
    (the default cutoffs; non-integer cutoffs are truncated, as trec_eval's ``atol``),
    ``iprec_at_recall.0.25,0.5`` and ``Rprec_mult.0.5`` (real cutoffs, one column each,
    ``iprec_at_recall_0.25``), ``11pt_avg.0.2,0.5,0.8``, ``utility.1,-2,0,0``,
    ``set_F.0.5``, ``relstring.20`` (parameters of one column, named with them:
    ``utility_1,-2,0,0``), and gain maps ``ndcg.1=0,2=3`` (``G``, ``ndcg_rel``, ``Rndcg``,
    ``dcg``, ``ideal_dcg``, ``rbp`` also ``p=0.95``). Columns use trec_eval's printed names.
    """
    if isinstance(measures, str):
        measures = [measures]
    out: dict[str, Measure] = {}

    def add(measure: Measure) -> None:
        out.setdefault(measure.column, measure)

    for raw in measures:
        text = str(raw).strip()
        name, rest = _split(text)
        if name in CUTOFF_MEASURES:
            cuts = _cutoffs(text, rest) if rest else list(CUTOFF_MEASURES[name])
            for cut in cuts:
                add(Measure(name, f"{name}_{cut}", cut=cut))
        elif name in LEVEL_MEASURES:
            values = _numbers(text, rest) if rest else list(LEVEL_MEASURES[name])
            columns = [f"{name}_{v:.2f}" for v in values]
            if len(set(columns)) < len(columns):
                raise InvalidParameterError(
                    f"trec_eval measure {text!r}: two levels print as the same column"
                )
            levels = None if rest is None and name == "iprec_at_recall" else tuple(values)
            for i, (value, column) in enumerate(zip(values, columns, strict=True)):
                if name == "iprec_at_recall":
                    add(Measure(name, column, cut=i, params=levels))
                else:
                    add(Measure(name, column, params=(value,)))
        elif name in PARAM_MEASURES:
            params = None if rest is None else tuple(_numbers(text, rest))
            expected = {"utility": 4, "set_F": 1, "relstring": 1}.get(name)
            if params is not None and expected is not None and len(params) != expected:
                raise InvalidParameterError(
                    f"trec_eval measure {text!r} takes {expected} parameter(s); got {len(params)}"
                )
            add(Measure(name, name if rest is None else f"{name}_{rest}", params=params))
        elif name in GAIN_MEASURES:
            pairs, persistence = _pairs(text, name, rest) if rest else ((), ())
            column = name if rest is None else f"{name}_{rest}"
            add(Measure(name, column, params=persistence or None, pairs=pairs))
        elif rest is None:
            add(Measure(name, name))
        else:
            raise InvalidParameterError(
                f"trec_eval measure {name!r} takes no parameters; got {text!r}"
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
    "relative_P": ("relative_precision", True),
    "recip_rank": ("reciprocal_rank", False),
    "Rprec": ("r_precision", False),
    "Rprec_mult": ("rprec_mult", False),
    "11pt_avg": ("ap_11pt", False),
    "iprec_at_recall": ("iprec_at_recall", True),
    "gm_map": ("ap_at_k", False),
    "bpref": ("bpref", False),
    "gm_bpref": ("bpref", False),
}
"""trec_eval measure -> (ranking metric, whether the cutoff applies): the measures of the
ranking engine (``ndcg`` without a gain map)."""


CONVENTIONS = {"10": "trec10", "9": "trec"}
"""trec_eval version -> how recall levels become ranks (iprec_at_recall, 11pt_avg):
10: lround(level · R); 9.x (and pytrec_eval): (long) (level · R + 0.9)."""


def _in_engine(m: Measure) -> bool:
    return m.name in SPEC_OF and not (m.name == "ndcg" and m.pairs)


def _specs(measures: list[Measure], flavor: str) -> list[rk.Spec]:
    specs = []
    for m in measures:
        if not _in_engine(m):
            continue
        metric, with_cut = SPEC_OF[m.name]
        extra: dict[str, Any] = {}
        if m.name in ("11pt_avg", "iprec_at_recall") and m.params is not None:
            extra["levels"] = m.params
        if m.name == "Rprec_mult":
            extra["multiple"] = m.params[0] if m.params else 1.0
        cut = m.cut if with_cut else None
        specs.append(rk.Spec(m.column, metric, k=cut, gain="linear", flavor=flavor, **extra))
    return specs


def _convention(convention: Any) -> str:
    key = str(convention) if isinstance(convention, (str, int)) else None
    if isinstance(convention, bool) or key not in CONVENTIONS:
        raise InvalidParameterError(
            f'convention must be "10" (trec_eval 10, the default) or "9" (trec_eval 9.x, '
            f"as pytrec_eval); got {convention!r}"
        )
    return CONVENTIONS[key]


def _count_measures(measures: list[Measure]) -> list[pl.Expr]:
    """The measures of the per-query counts (trec_eval's set measures, utility)."""
    ret, rel, rel_ret, nonrel_ret = (pl.col(c).cast(F64) for c in COUNT_MEASURES)
    set_p = pl.when(ret > 0).then(rel_ret / ret).otherwise(0.0)
    set_r = pl.when(rel > 0).then(rel_ret / rel).otherwise(0.0)
    out = []
    for m in measures:
        if m.name == "set_P":
            value = set_p
        elif m.name == "set_recall":
            value = set_r
        elif m.name == "set_F":  # (x + 1) P R / (x P + R), x = 1 by default
            x = m.params[0] if m.params else 1.0
            value = pl.when(set_p + set_r > 0).then((x + 1.0) * set_p * set_r / (x * set_p + set_r))
            value = value.otherwise(0.0)
        elif m.name == "set_map":  # rel_ret^2 / (ret rel)
            value = pl.when((ret > 0) & (rel > 0)).then(rel_ret * rel_ret / (ret * rel))
            value = value.otherwise(0.0)
        elif m.name == "set_relative_P":  # rel_ret / min(ret, rel)
            value = pl.when((ret > 0) & (rel > 0)).then(rel_ret / pl.min_horizontal(ret, rel))
            value = value.otherwise(0.0)
        elif m.name == "utility":  # p1 a + p2 b + p3 c + p4 d, no collection size (-N 0)
            p1, p2, p3, p4 = m.params or PARAM_MEASURES["utility"]
            value = p1 * rel_ret + p2 * (ret - rel_ret) + p3 * (rel - rel_ret)
            value = value + p4 * (rel_ret - ret - rel)
        else:
            continue
        out.append(value.cast(F64).alias(m.column))
    return out


MIN_GEO_MEAN = 1e-5
"""trec_eval's floor under a per-query value before its logarithm (gm_map, gm_bpref)."""


def _log_measures(measures: list[Measure]) -> list[pl.Expr]:
    """gm_map, gm_bpref per query: log(max(value, 1e-5)), as trec_eval prints them
    (Robertson 2006)."""
    return [
        pl.col(m.column).clip(lower_bound=MIN_GEO_MEAN).log().alias(m.column)
        for m in measures
        if m.name in GEOMETRIC_MEASURES
    ]


def _empty_rankings(measures: list[Measure], flavor: str) -> list[pl.Expr]:
    """trec_eval's values for a query with no document retrieved (``-J``, ``-c``): the
    interpolated precision at a level reached by 0 relevant documents is 0/0 (NaN, and so
    11pt_avg); ``utility`` of a query absent from the run (``-c``) is 0."""
    empty = pl.col("num_ret") == 0
    out = []
    for m in measures:
        if m.name in ("iprec_at_recall", "11pt_avg"):
            levels = m.params or RECALL_LEVELS
            mine = [levels[m.cut or 0]] if m.name == "iprec_at_recall" else list(levels)
            zero = pl.any_horizontal(rk.level_rank(x, pl.col(rk.NREL), flavor) == 0 for x in mine)
            nan = pl.lit(float("nan"), F64)
            out.append(pl.when(empty & zero).then(nan).otherwise(m.column).alias(m.column))
        elif m.name == "utility":
            out.append(pl.when(pl.col(MISSING)).then(0.0).otherwise(m.column).alias(m.column))
    return out


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


MISSING = "__pe_missing"
"""Per query: absent from the run (``complete_queries``)."""
GAINED = "__pe_gained"
"""Per query: the judged documents of positive gain (relevance >= 1)."""
CODES = "__pe_codes"
LEVELS = "__pe_levels"


def _numpy_measures(grouped: pl.DataFrame, measures: list[Measure], level: int) -> pl.DataFrame:
    """The measures computed per query in numpy (:mod:`._trec_measures`)."""
    requests = [
        tm.Request(m.column, m.name, m.pairs, m.params or ())
        for m in measures
        if m.name in tm.MEASURES and not _in_engine(m)
    ]
    if not requests:
        return pl.DataFrame()
    codes = [np.asarray(c if c is not None else [], dtype=np.int64) for c in grouped[CODES]]
    levels = [
        np.bincount(np.asarray(v if v is not None else [], dtype=np.int64), minlength=level + 1)
        for v in grouped[LEVELS]
    ]
    values = tm.evaluate(codes, levels, requests, level)
    return pl.DataFrame(
        {r.column: values[r.column] for r in requests},
        schema={r.column: pl.String if r.measure == "relstring" else F64 for r in requests},
    )


def _check_options(
    max_docs: Any, min_relevance: Any, complete_queries: Any, judged_only: Any
) -> None:
    if max_docs is not None:
        check_positive_int("max_docs", max_docs)
    check_positive_int("min_relevance", min_relevance)
    for name, value in (("complete_queries", complete_queries), ("judged_only", judged_only)):
        if not isinstance(value, bool):
            raise InvalidParameterError(f"{name} must be True or False; got {value!r}")


def trec_eval(
    run: Any,
    qrels: Any,
    metrics: Iterable[str] = DEFAULT_MEASURES,
    *,
    per_query: bool = False,
    convention: str = "10",
    max_docs: int | None = None,
    min_relevance: int = 1,
    complete_queries: bool = False,
    judged_only: bool = False,
) -> pl.DataFrame:
    """Evaluate a TREC run against qrels as trec_eval does (measure names as trec_eval's).

    ``run`` and ``qrels`` are paths (read with :func:`read_trec_run` /
    :func:`read_trec_qrels`) or frames with columns query, doc, score (and optionally
    run, the run tag, for ``runid``) and query, doc, relevance. ``metrics`` are trec_eval
    10 measure names with their parameter forms (:func:`parse_measures`):

    * ranked: ``map``, ``map_cut.k``, ``ndcg``, ``ndcg_cut.k``, ``P.k``, ``recall.k``,
      ``success.k``, ``relative_P.k``, ``recip_rank``, ``Rprec``, ``Rprec_mult.x``
      (precision at rank (long) (x·R + 0.9)), ``11pt_avg`` (its recall levels as
      parameters), ``iprec_at_recall`` (11 columns ``iprec_at_recall_0.00`` ..
      ``iprec_at_recall_1.00``, or the levels given), ``bpref``, ``infAP`` (documents with
      a negative relevance in the qrels are pooled-but-unjudged), ``binG``, ``G``,
      ``ndcg_rel``, ``Rndcg``, ``dcg``, ``ideal_dcg`` (a gain map ``ndcg.1=0,2=3``: gains
      of the relevance levels, the others keep their level as gain), ``yaap``, ``rbp``
      (``rbp.p=0.95``; gains scaled to [0, 1]), ``rbp_resid`` (p = 0.9);
    * sets: ``num_ret``, ``num_rel``, ``num_rel_ret``, ``num_nonrel_judged_ret``,
      ``set_P``, ``set_recall``, ``set_F`` (``set_F.x``: (x + 1) P R / (x P + R)),
      ``set_map``, ``set_relative_P``, ``utility`` (``utility.a,b,c,d``; the collection
      size of trec_eval's ``-N`` is 0);
    * geometric means: ``gm_map``, ``gm_bpref`` (per query log(max(value, 1e-5)), the
      summary their geometric mean, as trec_eval);
    * informational: ``num_q``, ``runid`` (the run tag), ``relstring`` (per query: the
      relevance of the top 10 documents, one character each).

    ``P.5,10`` gives two columns; ``P`` alone trec_eval's default cutoffs.

    ``convention`` is the trec_eval version whose rules apply where versions differ:
    ``"10"`` (default) or ``"9"`` (trec_eval 9.x, which pytrec_eval follows). They differ
    in ``iprec_at_recall`` and ``11pt_avg`` only, in how a recall level p becomes a number
    of relevant documents with R relevant in all: trec_eval 10 takes ``lround(p·R)``
    (half away from zero), 9.x ``(long) (p·R + 0.9)``. With R = 4 at p = 0.6 (2.4): 10
    reads the interpolated precision from the 2nd relevant document on, 9.x from the 3rd
    (floor(3.3)); with R = 3 at p = 0.1 (0.3): 10 rounds to 0 relevant documents (the best
    precision at any rank), 9.x to 1.

    trec_eval's flags that change results: ``max_docs`` (``-M``: only the top documents
    of each query, in trec_eval's order), ``min_relevance`` (``-l``: the relevance level
    of a relevant document, a positive integer), ``complete_queries`` (``-c``: every query
    of the qrels is evaluated, those absent from the run with an empty ranking, so they
    score 0 and count in the means and sums), ``judged_only`` (``-J``: the documents
    without a judgment are dropped from the ranking before it is evaluated).

    Returns one row (the mean over the queries evaluated; the ``num_*`` counts summed, as
    trec_eval's ``all`` line; ``relstring`` left out), or with ``per_query=True`` one row
    per query, sorted by query. Columns are named as trec_eval prints them (``P_5``,
    ``ndcg_cut_10``, ``Rprec_mult_0.50``, ``ndcg_1=0,2=3``). Conventions: see the module
    docstring.

    Where trec_eval's own code misbehaves we do not follow it: gain maps whose gains
    differ by less than 1 (trec_eval's sort of the gains truncates their difference to an
    integer, which can misorder them in the ideal ranking); ``rbp``'s scaling of the gains
    (trec_eval reads uninitialised minimum and maximum, and takes ``p=`` as a gain of
    level 0 too).

    References
    ----------
    trec_eval, https://github.com/usnistgov/trec_eval (versions 10.0 and 9.0.8).

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> run = pl.DataFrame({"query": ["1", "1", "1"], "doc": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query": ["1", "1", "1"], "doc": ["b", "c", "z"], "relevance": [1, 0, 1]})
    >>> pe.trec_eval(run, qrels, ["map", "P.2", "recip_rank", "bpref"])
    shape: (1, 5)
    ┌───────┬──────┬─────┬────────────┬───────┐
    │ num_q ┆ map  ┆ P_2 ┆ recip_rank ┆ bpref │
    │ ---   ┆ ---  ┆ --- ┆ ---        ┆ ---   │
    │ i64   ┆ f64  ┆ f64 ┆ f64        ┆ f64   │
    ╞═══════╪══════╪═════╪════════════╪═══════╡
    │ 1     ┆ 0.25 ┆ 0.5 ┆ 0.5        ┆ 0.5   │
    └───────┴──────┴─────┴────────────┴───────┘
    """
    measures = parse_measures(metrics)
    if not measures:
        raise InvalidParameterError("metrics must name at least one trec_eval measure")
    flavor = _convention(convention)
    _check_options(max_docs, min_relevance, complete_queries, judged_only)
    level = int(min_relevance)
    run_lf = _as_lazy(run, read_trec_run, ("query", "doc", "score"), "run")
    tagged = "run" in run_lf.collect_schema()
    run_lf = run_lf.select(
        pl.col("query").cast(pl.String),
        pl.col("doc").cast(pl.String),
        pl.col("score").cast(F64),
        *([pl.col("run").cast(pl.String)] if tagged else []),
    )
    qrels_lf = _as_lazy(qrels, read_trec_qrels, ("query", "doc", "relevance"), "qrels").select(
        pl.col("query").cast(pl.String),
        pl.col("doc").cast(pl.String),
        pl.col("relevance").cast(F64),
    )
    specs = _specs(measures, flavor)
    names = {m.name for m in measures}
    codes_needed = any(m.name in tm.MEASURES and not _in_engine(m) for m in measures)
    # Retrieved documents get their judgment from a left join; what the unretrieved judged
    # documents add (the relevant count, the judged non-relevant count, the ideal DCG)
    # comes from the qrels grouped alone. The inner join of the two per-query frames keeps
    # the queries present in both inputs, as trec_eval (-c: every query of the qrels).
    qrels_lf = qrels_lf.collect().lazy()  # read once, used twice
    joined = run_lf.join(qrels_lf, on=["query", "doc"], how="left")
    rel = pl.col("relevance")
    # trec_eval's relevance code: the level of a judged document, -1 outside the qrels,
    # -2 in the qrels with a negative relevance (pooled but unjudged)
    code = pl.when(rel.is_null()).then(tm.NONPOOL).when(rel < 0).then(tm.UNJUDGED)
    code = code.otherwise(rel).cast(pl.Int64)
    if judged_only:
        joined = joined.filter(rel >= 0)
    if max_docs is not None:
        order = pl.int_range(pl.len()).over("query")
        joined = joined.sort(["query", "score", "doc"], descending=[False, True, True])
        joined = joined.filter(order < max_docs)
    judged = pl.when(rel >= 0).then(rel)  # unjudged documents: null, ranked as not relevant
    aggs = [
        rk.query_state(judged, "score", ties="first", tiebreak="doc"),
        pl.col("score").is_not_null().sum().cast(F64).alias(rk.NRET),
        (pl.col("score").is_nan().any() | rel.is_nan().any()).alias(rk.HASNAN),
        pl.len().cast(pl.Int64).alias("num_ret"),
        (rel >= level).sum().cast(pl.Int64).alias("num_rel_ret"),
        ((rel >= 0) & (rel < level)).sum().cast(pl.Int64).alias("num_nonrel_judged_ret"),
        (pl.col("doc").n_unique() < pl.len()).alias("__pe_dup"),
    ]
    if codes_needed:
        trec_order = [pl.col("score"), pl.col("doc")]
        aggs.append(code.sort_by(trec_order, descending=True).implode().alias(CODES))
    if "runid" in names:
        aggs.append((pl.col("run").first() if tagged else pl.lit(None, pl.String)).alias("runid"))
    run_side = joined.group_by("query").agg(aggs)
    if judged_only:  # a query of the run whose documents are all unjudged: an empty ranking
        run_side = run_lf.select("query").unique().join(run_side, on="query", how="left")
    qrels_side = qrels_lf.group_by("query").agg(
        (rel >= level).sum().cast(F64).alias(rk.NREL),
        (rel >= 1).sum().cast(F64).alias(GAINED),
        (rel >= level).sum().cast(pl.Int64).alias("num_rel"),
        ((rel >= 0) & (rel < level)).sum().cast(F64).alias(rk.NNONREL),
        *rk.ideal_aggs(rel.clip(lower_bound=0.0), specs),
        *([rel.filter(rel >= 0).cast(pl.Int64).alias(LEVELS)] if codes_needed else []),
    )
    # collected here: the readers' parsing (a Python batch function) runs once
    if complete_queries:  # the queries of the qrels, those absent from the run empty
        grouped = qrels_side.join(run_side, on="query", how="left")
    else:
        grouped = run_side.join(qrels_side, on="query", how="inner")
    grouped = grouped.with_columns(  # a query with an empty ranking (-c, -J)
        pl.col("num_ret").is_null().alias(MISSING),
        pl.col(rk.NRET).fill_null(0.0),
        pl.col(rk.HASNAN, "__pe_dup").fill_null(False),
        pl.col("num_ret", "num_rel_ret", "num_nonrel_judged_ret").fill_null(0),
    )
    grouped = grouped.sort("query").collect()
    # the relevant items, the judged non-relevant ones and the ideal DCG come from the qrels
    options: dict[str, Any] = {
        "ties": "first",
        "unscored": "ignore",
        "min_relevance": float(level),
        "no_relevant": "zero",
        "unjudged": "nonrelevant",
    }
    gained = [spec for spec in specs if spec.metric == "ndcg"]
    if level == 1 or not gained:
        values = rk.evaluate(grouped, specs, **options)
    else:  # NDCG's gains do not depend on -l: it is 0 only without a document of gain > 0
        rest = [spec for spec in specs if spec.metric != "ndcg"]
        parts = [
            rk.evaluate(grouped.with_columns(pl.col(GAINED).alias(rk.NREL)), gained, **options)
        ]
        if rest:
            parts.append(rk.evaluate(grouped, rest, **options))
        values = pl.concat(parts, how="horizontal").select(spec.out for spec in specs)
    counts = ["query", *COUNT_MEASURES, "__pe_dup", MISSING, rk.NREL]
    counts += ["runid"] if "runid" in names else []
    computed = _numpy_measures(grouped, measures, level)
    per = pl.concat(
        [grouped.select(counts), values, *([computed] if computed.width else [])],
        how="horizontal",
    ).with_columns(*_count_measures(measures), *_log_measures(measures))
    per = per.with_columns(_empty_rankings(measures, flavor))
    if per.get_column("__pe_dup").any():
        _raise_duplicate(joined, per.filter("__pe_dup").get_column("query"))
    columns = [m.column for m in measures if m.name != "num_q"]
    if per_query:
        return per.select("query", *columns)
    aggs = []
    for m in measures:
        if m.name == "num_q":
            aggs.append(pl.len().cast(pl.Int64).alias("num_q"))
        elif m.name in COUNT_MEASURES:
            aggs.append(pl.col(m.column).sum().cast(pl.Int64))
        elif m.name in GEOMETRIC_MEASURES:  # per query a logarithm; the geometric mean
            aggs.append(pl.col(m.column).mean().exp().cast(F64))
        elif m.name == "runid":
            aggs.append(pl.col(m.column).drop_nulls().first())
        elif m.name != "relstring":  # per query only, as trec_eval prints it
            aggs.append(pl.col(m.column).mean().cast(F64))
    if "num_q" not in names:
        aggs.insert(0, pl.len().cast(pl.Int64).alias("num_q"))
    return per.select(aggs)


def trec_cli(
    run_path: PathLike,
    qrels_path: PathLike,
    metrics: Sequence[str] | None = None,
    per_query: bool = False,
    convention: str = "10",
    **flags: Any,
) -> pl.DataFrame:
    """The ``polars-eval trec RUN QRELS [-m measure ...] [-q]`` command: :func:`trec_eval` on two files.

    ``metrics`` None or empty uses :data:`DEFAULT_MEASURES`; ``flags`` are trec_eval's
    (``max_docs``, ``min_relevance``, ``complete_queries``, ``judged_only``). Errors are
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
            **flags,
        )
    except pl.exceptions.PolarsError as error:
        # a DataValidationError raised inside a batch function reaches us wrapped
        inner = error.__cause__ or error.__context__
        if isinstance(inner, DataValidationError):
            raise inner from None
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise DataValidationError(message) from None
