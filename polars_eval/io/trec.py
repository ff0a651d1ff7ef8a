"""TREC interop (SPEC §7): read run and qrels files, evaluate as trec_eval does.

File formats (whitespace separated, one record a line; blank lines and comment lines,
whose first non-blank character is ``#``, are skipped, as trec_eval skips them):

* run: ``query  Q0  doc  rank  score  run_tag`` (6 fields; the rank is kept but, as in
  trec_eval, never used: the order is score descending, then doc id descending; fields
  after the run tag are ignored, as trec_eval ignores them);
* qrels: ``query  iteration  doc  relevance`` (4 fields, integer relevance; fields after
  the relevance are ignored);
* preferences (trec_eval's ``-R prefs``, get_prefs.c): ``query  jg  jsg  doc  level``
  (exactly 5 fields, a real level): within a judgment sub-group (jsg) a document of a
  higher level is preferred to every document of a lower one; a judgment group (jg) is
  one user's consistent partial order, its sub-groups closed transitively; level 0 means
  non-relevant. ``-R qrels_prefs`` reads a qrels file so (exactly 4 fields, the iteration
  field as the judgment group, one sub-group, a real level);
* judgment groups (``-R qrels_jg``, get_qrels_jg.c): ``query  jg  doc  relevance``
  (exactly 4 fields, integer relevance), one set of relevance judgments per group (user).

Malformed lines (too few fields, a score or relevance that is not a number, ``nan``
included, and for the preference and judgment-group files, which trec_eval reads
strictly, too many fields) raise :class:`~polars_eval.DataValidationError` naming the file
and the line, at collect time (the readers are lazy).

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

The preference measures (``prefs_*``) and the judgment-group ones (``map_avgjg``,
``P_avgjg``, ``Rprec_mult_avgjg``) read their own judgment files (``rel_format=``, trec_eval's
``-R``): see :mod:`._trec_prefs` and :func:`trec_eval`.
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

from polars_eval._core import registry as _registry
from polars_eval._exprs import F64, count_true
from polars_eval._params import check_count, check_positive_int
from polars_eval.exceptions import DataValidationError, InvalidParameterError
from polars_eval.io import _trec_measures as tm
from polars_eval.io import _trec_prefs as tp
from polars_eval.metrics.ranking import engine as rk
from polars_eval.stats import units

__all__ = ["read_trec_prefs", "read_trec_qrels", "read_trec_qrels_jg", "read_trec_run", "trec_eval"]

RUN_COLUMNS = ("query", "q0", "doc", "rank", "score", "run")
QRELS_COLUMNS = ("query", "iteration", "doc", "relevance")
PREFS_COLUMNS = ("query", "jg", "jsg", "doc", "relevance")
JG_COLUMNS = ("query", "jg", "doc", "relevance")
ZSCORE_COLUMNS = ("query", "measure", "mean", "stddev")

DEFAULT_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
CUTOFF_MEASURES = {
    "P": DEFAULT_CUTOFFS,
    "recall": DEFAULT_CUTOFFS,
    "ndcg_cut": DEFAULT_CUTOFFS,
    "map_cut": DEFAULT_CUTOFFS,
    "success": (1, 5, 10),
    "relative_P": DEFAULT_CUTOFFS,
    "P_avgjg": DEFAULT_CUTOFFS,
    "unj": (5, 10, 20),
}
"""Measures with integer cutoffs (trec_eval's long cutoffs), and their defaults."""
RECALL_LEVELS = tuple(i / 10.0 for i in range(11))
LEVEL_MEASURES = {
    "iprec_at_recall": RECALL_LEVELS,
    "Rprec_mult": tuple(i / 10.0 for i in range(2, 21, 2)),
    "Rprec_mult_avgjg": tuple(i / 10.0 for i in range(2, 21, 2)),
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
    "map_avgjg",
    *tp.MEASURES,
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
SUMMED = (*COUNT_MEASURES, *tp.COUNTS)
"""Every measure whose summary is the sum over queries."""
JG_MEASURES = {"map_avgjg": "map", "P_avgjg": "P", "Rprec_mult_avgjg": "Rprec_mult"}
"""The judgment-group measures (``-R qrels_jg``) and the measure each averages over the
groups of a query (m_map_avgjg.c, m_P_avgjg.c, m_Rprec_mult_avgjg.c)."""
INFO_MEASURES = ("num_q", "runid")
"""Measures that read no judgments: offered with every ``rel_format``."""
REL_FORMATS = ("qrels", "prefs", "qrels_prefs", "qrels_jg")
"""trec_eval's ``-R`` formats of the judgments file."""
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
FORMAT_DEFAULTS = {
    "qrels": DEFAULT_MEASURES,
    "prefs": ("num_q", *tp.MEASURES),
    "qrels_prefs": ("num_q", *tp.MEASURES),
    "qrels_jg": ("num_q", *JG_MEASURES),
}
"""The measures computed when none are named, per ``rel_format`` (trec_eval's ``official``
set for qrels, its ``all_prefs`` and ``qrels_jg`` sets for the others)."""

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


def _parser(
    path: str,
    what: str,
    columns: tuple[str, ...],
    numeric: dict[str, Any],
    *,
    strict: bool = False,
) -> Any:
    """A batch function: split each line on whitespace, cast, raise on the first bad line.

    As trec_eval reads its files: blank lines and comment lines (``#`` as the first
    non-blank character) are skipped, and fields after the ``n`` expected ones are ignored
    (trec_eval ignores what follows the run tag), unless ``strict`` (trec_eval's readers
    of preferences and judgment groups call such a line malformed). Fast path: tabs become
    spaces and a line with exactly ``n - 1`` single spaces is split on them; any other
    line (runs of blanks, extra fields, too few fields) is split again with a regular
    expression, and is an error if it has fewer than ``n`` fields (or, ``strict``, more).
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
            wrong = (pl.col("n") != n) if strict else (pl.col("n") < n)
            bad = df.with_columns(lengths.alias("n")).filter(~pl.col("fast") & wrong)
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
            if dtype.is_float():  # "nan" casts to NaN: no number either (BAD_INPUTS 47)
                bad_mask = bad_mask | cast.is_nan()
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
    and malformed lines (a score that is not a number, ``nan`` included) reported (naming
    the file and the line), at collect time. A rank
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


def read_trec_prefs(path: PathLike) -> pl.LazyFrame:
    """Scan a TREC preference file (trec_eval's ``-R prefs``): columns query, jg, jsg, doc
    (str) and relevance (Float64, the level).

    One line ``query  jg  jsg  doc  level`` per judged document of a judgment sub-group
    (jsg) of a judgment group (jg, one user): within a sub-group a document of a higher
    level is preferred to every one of a lower level; level 0 means non-relevant. Lazy,
    like :func:`read_trec_run`; ``#`` comment lines and blank lines are skipped; a line
    with other than 5 fields, or a level that is not a number, is an error naming the file
    and the line (trec_eval's get_prefs.c calls such a line malformed).

    Examples
    --------
    >>> import tempfile, os
    >>> import polars_eval as pe
    >>> path = os.path.join(tempfile.mkdtemp(), "prefs.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("q1 u1 s1 d1 2\\nq1 u1 s1 d2 0.5\\n")
    >>> pe.read_trec_prefs(path).collect().rows()
    [('q1', 'u1', 's1', 'd1', 2.0), ('q1', 'u1', 's1', 'd2', 0.5)]
    """
    lines = _scan_lines(path, "prefs")
    parse = _parser(
        os.fspath(path), "prefs", PREFS_COLUMNS, {"relevance": (F64, "a number")}, strict=True
    )
    schema = dict.fromkeys(PREFS_COLUMNS[:-1], pl.String) | {"relevance": F64}
    return lines.map_batches(parse, schema=schema, streamable=True)


def read_trec_qrels_jg(path: PathLike) -> pl.LazyFrame:
    """Scan a TREC judgment-group qrels file (trec_eval's ``-R qrels_jg``): columns query,
    jg, doc (str) and relevance (Int64).

    A qrels file whose second field names the judgment group (one user's set of
    relevance judgments) instead of the iteration: ``query  jg  doc  relevance``. Lazy;
    ``#`` comment lines and blank lines are skipped; a line with other than 4 fields, or
    a relevance that is not an integer, is an error naming the file and the line
    (get_qrels_jg.c). A document judged twice in one group is an error of
    :func:`trec_eval`, as in trec_eval.

    Examples
    --------
    >>> import tempfile, os
    >>> import polars_eval as pe
    >>> path = os.path.join(tempfile.mkdtemp(), "qrels_jg.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("q1 alice d1 1\\nq1 bob d1 0\\n")
    >>> pe.read_trec_qrels_jg(path).collect().rows()
    [('q1', 'alice', 'd1', 1), ('q1', 'bob', 'd1', 0)]
    """
    lines = _scan_lines(path, "qrels_jg")
    parse = _parser(
        os.fspath(path),
        "qrels_jg",
        JG_COLUMNS,
        {"relevance": (pl.Int64, "an integer")},
        strict=True,
    )
    schema = dict.fromkeys(JG_COLUMNS[:-1], pl.String) | {"relevance": pl.Int64}
    return lines.map_batches(parse, schema=schema, streamable=True)


def _read_qrels_prefs(path: PathLike) -> pl.LazyFrame:
    """A qrels file read as preferences (trec_eval's ``-R qrels_prefs``, get_qrels_prefs.c):
    the iteration field is the judgment group, one sub-group ("0"), a real level."""
    lines = _scan_lines(path, "qrels_prefs")
    parse = _parser(
        os.fspath(path), "qrels_prefs", JG_COLUMNS, {"relevance": (F64, "a number")}, strict=True
    )
    schema = dict.fromkeys(JG_COLUMNS[:-1], pl.String) | {"relevance": F64}
    lf = lines.map_batches(parse, schema=schema, streamable=True)
    return lf.select("query", "jg", pl.lit("0").alias("jsg"), "doc", "relevance")


def _read_zscores(path: PathLike) -> pl.LazyFrame:
    """A z-scores file (trec_eval's ``-Z``, get_zscores.c): ``query  measure  mean  stddev``
    per line (exactly 4 fields, the mean and standard deviation of ``measure`` on
    ``query`` over reference runs, ``measure`` as trec_eval prints it: ``P_5``)."""
    lines = _scan_lines(path, "zscores")
    numbers = {"mean": (F64, "a number"), "stddev": (F64, "a number")}
    parse = _parser(os.fspath(path), "zscores", ZSCORE_COLUMNS, numbers, strict=True)
    schema = {"query": pl.String, "measure": pl.String, "mean": F64, "stddev": F64}
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


FAMILIES = {
    "qrels": "reads relevance judgments: rel_format='qrels' (trec_eval's default -R qrels)",
    "prefs": (
        "reads preference judgments: rel_format='prefs' or 'qrels_prefs' "
        "(trec_eval -R prefs / qrels_prefs)"
    ),
    "qrels_jg": "reads judgment groups: rel_format='qrels_jg' (trec_eval -R qrels_jg)",
}
"""What each family of measures reads, for the message when ``rel_format`` differs."""


def _family(name: str) -> str | None:
    if name in INFO_MEASURES:
        return None
    if name in tp.MEASURES:
        return "prefs"
    return "qrels_jg" if name in JG_MEASURES else "qrels"


def _check_families(measures: list[Measure], rel_format: str) -> None:
    """Each measure reads the judgments of ``rel_format`` (trec_eval stops otherwise)."""
    wanted = "prefs" if rel_format == "qrels_prefs" else rel_format
    for m in measures:
        family = _family(m.name)
        if family is not None and family != wanted:
            raise InvalidParameterError(
                f"trec_eval measure {m.name!r} {FAMILIES[family]}; got rel_format={rel_format!r}"
            )


def _split(raw: str) -> tuple[str, str | None]:
    """A measure text -> (measure name, parameter text or None): ``P.5`` and ``P_5`` are P
    with 5; the longest measure name that the text starts with wins (``ndcg_cut_10``)."""
    if raw in MEASURE_NAMES:
        return raw, None
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
    ``dcg``, ``ideal_dcg``, ``rbp`` also ``p=0.95``); the judgment-group forms
    ``P_avgjg.5,10`` and ``Rprec_mult_avgjg.0.5``; the ``prefs_*`` measures take no
    parameters. Columns use trec_eval's printed names.
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


SPEC_OF: dict[str, str] = {
    **{m: name for name, measures in _registry.declared("trec").items() for m in measures},
    **rk.TREC_ONLY,
}
"""trec_eval measure -> the ranking formula that computes it (``ndcg`` without a gain map),
at the measure's cutoff where it takes one: the measures each ranking metric declares
``trec=`` at ``@register``, and the formulas only trec_eval reaches."""


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
        metric = SPEC_OF[m.name]
        extra: dict[str, Any] = {}
        if m.name in ("11pt_avg", "iprec_at_recall") and m.params is not None:
            extra["levels"] = m.params
        if m.name == "Rprec_mult":
            extra["multiple"] = m.params[0] if m.params else 1.0
        # the cutoff of P, ndcg_cut ... (the level's index for iprec_at_recall); None else
        specs.append(rk.Spec(m.column, metric, k=m.cut, gain="linear", flavor=flavor, **extra))
    return specs


def _convention(convention: Any) -> str:
    key = str(convention) if isinstance(convention, (str, int)) else None
    if isinstance(convention, bool) or key not in CONVENTIONS:
        raise InvalidParameterError(
            f'convention must be "10" (trec_eval 10, the default) or "9" (trec_eval 9.x, '
            f"as pytrec_eval); got {convention!r}"
        )
    return CONVENTIONS[key]


def _count_measures(measures: list[Measure], collection_size: int = 0) -> list[pl.Expr]:
    """The measures of the per-query counts (trec_eval's set measures, utility; the
    collection size, trec_eval's -N, enters utility's fourth term only)."""
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
        elif m.name == "utility":  # p1 a + p2 b + p3 c + p4 d, d = N + rel_ret - ret - rel
            p1, p2, p3, p4 = m.params or PARAM_MEASURES["utility"]
            value = p1 * rel_ret + p2 * (ret - rel_ret) + p3 * (rel - rel_ret)
            value = value + p4 * (float(collection_size) + rel_ret - ret - rel)
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


def _empty_rankings(measures: list[Measure], flavor: str, judged_only: bool) -> list[pl.Expr]:
    """trec_eval's values for a query with no document retrieved (``-J``, ``-c``): the
    interpolated precision at a level reached by 0 relevant documents is 0/0 (NaN, and so
    11pt_avg); ``utility`` of a query absent from the run (``-c``) is 0.

    A query of the qrels absent from the run (``-c``) is 0 there, as trec_eval: 10.0
    ranks one document outside the qrels for it (precision 0/1; trec_eval.c's
    ``bogus_ranking``), which ``-J`` drops (0/0 again, NaN); 9.x never evaluates it, so it
    adds 0 to the means, with or without ``-J``."""
    empty = pl.col("num_ret") == 0
    if not judged_only or flavor != CONVENTIONS["10"]:
        empty = empty & ~pl.col(MISSING)
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


def _raise_duplicate(run_lf: pl.LazyFrame, qrels_lf: pl.LazyFrame, queries: pl.Series) -> None:
    """Name the first repeated (query, document) pair of the run, else of the qrels, among
    ``queries`` (an error, as in trec_eval)."""
    for lf, what in ((run_lf, "run"), (qrels_lf, "qrels")):
        dups = (
            lf.filter(pl.col("query").is_in(queries.implode()))
            .group_by("query", "doc")
            .len()
            .filter(pl.col("len") > 1)
            .sort("query", "doc")
            .collect()
        )
        if dups.height:
            query, doc = dups.row(0)[:2]
            raise DataValidationError(
                f'document "{doc}" appears more than once for query "{query}" in the {what}; '
                f"{queries.len()} queries have repeated documents (trec_eval stops too)"
            )


QRELS_DUP = "__pe_qrels_dup"
"""Per query: a document judged twice in the qrels."""
MISSING = "__pe_missing"
"""Per query: absent from the run (``complete_queries``)."""
GAINED = "__pe_gained"
"""Per query: the judged documents of positive gain (relevance >= 1)."""
CODES = "__pe_codes"
LEVELS = "__pe_levels"


def _cut_param(m: Measure) -> tuple[float, ...]:
    return () if m.cut is None else (float(m.cut),)


def _numpy_measures(grouped: pl.DataFrame, measures: list[Measure], level: int) -> pl.DataFrame:
    """The measures computed per query in numpy (:mod:`._trec_measures`)."""
    requests = [
        tm.Request(m.column, m.name, m.pairs, m.params or _cut_param(m))
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
    metrics: Iterable[str] | None = None,
    *,
    per_query: bool = False,
    convention: str = "10",
    max_docs: int | None = None,
    min_relevance: int = 1,
    complete_queries: bool = False,
    judged_only: bool = False,
    rel_format: str = "qrels",
    collection_size: int = 0,
    zscores: Any = None,
    ci: str | None = None,
    level: float = 0.95,
    n_resamples: int | None = None,
    seed: int | None = None,
) -> pl.DataFrame:
    """Evaluate a TREC run against qrels as trec_eval does (measure names as trec_eval's).

    ``run`` and ``qrels`` are paths (read with :func:`read_trec_run` and, by
    ``rel_format``, :func:`read_trec_qrels`, :func:`read_trec_prefs` or
    :func:`read_trec_qrels_jg`) or frames with columns query, doc, score (and optionally
    run, the run tag, for ``runid``) and query, doc, relevance (preferences: also jg and
    jsg; judgment groups: also jg, or iteration). ``metrics`` are trec_eval 10 measure
    names with their parameter forms (:func:`parse_measures`); None: trec_eval's default
    set for ``rel_format`` (:data:`FORMAT_DEFAULTS`):

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
      ``set_map``, ``set_relative_P``, ``utility`` (``utility.a,b,c,d``: a·rel_ret +
      b·nonrel_ret + c·rel_not_ret + d·(N + rel_ret - ret - rel), N the collection size
      ``collection_size``);
    * geometric means: ``gm_map``, ``gm_bpref`` (per query log(max(value, 1e-5)), the
      summary their geometric mean, as trec_eval);
    * informational: ``num_q``, ``runid`` (the run tag), ``relstring`` (per query: the
      relevance of the top 10 documents, one character each), ``unj`` (trec_eval 10's
      share of unjudged documents, outside the pool or pooled but unjudged, among the top
      k; cutoffs 5, 10, 20 by default, ``unj.5,10``; a shorter ranking counts as filled
      with judged documents);
    * preferences (``rel_format="prefs"`` or ``"qrels_prefs"``, trec_eval's ``-R prefs``
      and ``-R qrels_prefs``; :mod:`._trec_prefs`): ``prefs_num_prefs_poss``,
      ``prefs_num_prefs_ful``, ``prefs_num_prefs_ful_ret`` (counts, summed in the
      summary), ``prefs_simp`` (fulfilled / possible preferences, a preference of two
      unretrieved documents failed), ``prefs_pair`` (the same per document pair,
      averaged over pairs), ``prefs_avgjg`` (per judgment group, averaged over groups),
      ``prefs_avgjg_Rnonrel`` (as if each group had as many non-relevant documents as
      relevant ones), their ``_ret`` forms (both documents retrieved) and ``_imp`` forms
      (at least one retrieved). The run's ties are broken by document id ascending
      there, as trec_eval's form_prefs_counts.c;
    * judgment groups (``rel_format="qrels_jg"``, ``-R qrels_jg``): ``map_avgjg``,
      ``P_avgjg.k``, ``Rprec_mult_avgjg.x`` (``map``, ``P.k`` and ``Rprec_mult.x`` of
      each group's judgments, averaged over the groups of the query).

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
    score 0 and count in the means and sums; with ``judged_only`` under trec_eval 10's
    rules, their ``iprec_at_recall`` at a level of 0 relevant documents and ``11pt_avg``
    are NaN, as trec_eval 10.0 prints them, 0 under 9.x's), ``judged_only`` (``-J``: the documents
    without a judgment are dropped from the ranking before it is evaluated, after the
    ``-M`` cut), ``rel_format`` (``-R``: ``"qrels"``, ``"prefs"``, ``"qrels_prefs"``,
    ``"qrels_jg"``; each measure reads one format), ``collection_size`` (``-N``: the
    number of documents in the collection, read by ``utility`` only; default 0, which
    leaves its d term as rel_ret - ret - rel, trec_eval's default). The preference
    measures read none of ``min_relevance`` and ``judged_only`` (trec_eval's do not).
    ``zscores`` (``-Z``: a path to a file of ``query  measure  mean  stddev`` lines, or a
    frame with those columns, the mean and standard deviation of a measure, named as
    trec_eval prints it, on a query over reference runs) replaces each value per query by
    its z-score, (value - mean) / stddev, before the summary, and names each measure
    column ``Z<name>`` (``Zmap``, ``ZP_5``; ``Znum_q`` too, as trec_eval prints it); as in
    trec_eval, a query or measure the file lacks, or a standard deviation of 0 with a value
    other than the mean, gives -1000000 (:data:`MISSING_ZSCORE`), and the summary of
    ``gm_map`` / ``gm_bpref`` is the geometric mean of the z-scores of their logarithms.

    Returns one row (the mean over the queries evaluated; the ``num_*`` counts summed, as
    trec_eval's ``all`` line; ``relstring`` left out), or with ``per_query=True`` one row
    per query, sorted by query. Columns are named as trec_eval prints them (``P_5``,
    ``ndcg_cut_10``, ``Rprec_mult_0.50``, ``ndcg_1=0,2=3``). Conventions: see the module
    docstring.

    ``ci="t"`` (SPEC §14) adds ``<column>_lower`` and ``<column>_upper`` after each
    measure averaged over queries: Student's interval mean ± t_{n−1} · s / √n over the
    ``num_q`` queries (every query evaluated has a value under trec_eval's conventions);
    for ``gm_map`` and ``gm_bpref`` it is the interval of the mean of the logarithms,
    exponentiated (an interval of the geometric mean). ``ci="bootstrap"``: the percentile
    interval of the queries resampled with replacement (``n_resamples=``, ``seed=``). The
    summed counts (``num_ret`` ...) get none. See :mod:`polars_eval.stats.units`.

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

    Preference judgments (one user, one sub-group: b preferred to c, both to a): of the
    3 preferences the ranking a, b, c fulfils b > c only.

    >>> prefs = pl.DataFrame(
    ...     {"query": "1", "jg": "u", "jsg": "s", "doc": ["a", "b", "c"], "relevance": [0.0, 2.0, 1.0]}
    ... )
    >>> pe.trec_eval(run, prefs, ["prefs_num_prefs_poss", "prefs_simp"], rel_format="prefs")
    shape: (1, 3)
    ┌───────┬──────────────────────┬────────────┐
    │ num_q ┆ prefs_num_prefs_poss ┆ prefs_simp │
    │ ---   ┆ ---                  ┆ ---        │
    │ i64   ┆ i64                  ┆ f64        │
    ╞═══════╪══════════════════════╪════════════╡
    │ 1     ┆ 3                    ┆ 0.333333   │
    └───────┴──────────────────────┴────────────┘
    """
    fmt = _rel_format(rel_format)
    interval = units.unit_ci(ci, level, n_resamples, seed)
    units.check_no_per_unit(interval, per_query, "per_query")
    measures = parse_measures(FORMAT_DEFAULTS[fmt] if metrics is None else metrics)
    if not measures:
        raise InvalidParameterError("metrics must name at least one trec_eval measure")
    _check_families(measures, fmt)
    flavor = _convention(convention)
    _check_options(max_docs, min_relevance, complete_queries, judged_only)
    size = check_count("collection_size", collection_size, minimum=0)
    z = None if zscores is None else _zscores(zscores)
    run_lf = _as_lazy(run, read_trec_run, ("query", "doc", "score"), "run")
    tagged = "run" in run_lf.collect_schema()
    run_lf = run_lf.select(
        pl.col("query").cast(pl.String),
        pl.col("doc").cast(pl.String),
        pl.col("score").cast(F64),
        *([pl.col("run").cast(pl.String)] if tagged else []),
    )
    flags = _Flags(flavor, max_docs, int(min_relevance), complete_queries, judged_only, size)
    judgments = _judgments(qrels, fmt)
    if fmt == "qrels":
        per = _per_query(run_lf, judgments, measures, flags)
    elif fmt == "qrels_jg":
        per = _per_query_jg(run_lf, judgments, measures, flags)
    else:
        per = _per_query_prefs(run_lf, judgments, measures, flags)
    if z is not None:
        per = _zscored(per, measures, z)
    if per_query:
        out = per.select("query", *(m.column for m in measures if m.name != "num_q"))
    else:
        out = _summary(per, measures, interval, zscored=z is not None)
    return out if z is None else _z_names(out)


@dataclass(frozen=True)
class _Flags:
    """trec_eval's flags, checked: the convention, -M, -l, -c, -J, -N."""

    flavor: str
    max_docs: int | None
    level: int
    complete_queries: bool
    judged_only: bool
    collection_size: int


def _rel_format(rel_format: Any) -> str:
    if not isinstance(rel_format, str) or rel_format not in REL_FORMATS:
        raise InvalidParameterError(
            f"rel_format must be one of {list(REL_FORMATS)!r} (trec_eval's -R); got {rel_format!r}"
        )
    return rel_format


def _summary(
    per: pl.DataFrame,
    measures: list[Measure],
    ci: units.UnitCI | None = None,
    zscored: bool = False,
) -> pl.DataFrame:
    """trec_eval's ``all`` line: means over queries (with ``ci``, their intervals over
    queries: :mod:`polars_eval.stats.units`), counts summed (their z-scores too), geometric means."""
    aggs, columns, means, logs = [], [], [], []
    for m in measures:
        if m.name == "num_q":
            aggs.append(pl.len().cast(pl.Int64).alias("num_q"))
        elif m.name in SUMMED:
            aggs.append(pl.col(m.column).cast(F64 if zscored else pl.Int64).sum())
        elif m.name == "runid":
            aggs.append(pl.col(m.column).drop_nulls().first())
        elif m.name != "relstring":  # per query only, as trec_eval prints it
            means.append(m.column)  # per query a logarithm for a geometric mean
            logs += [m.column] if m.name in GEOMETRIC_MEASURES else []
        else:
            continue
        columns.append(m.column)
    if "num_q" not in {m.name for m in measures}:
        aggs.insert(0, pl.len().cast(pl.Int64).alias("num_q"))
        columns.insert(0, "num_q")
    table = per.lazy().select(*aggs, *units.unit_sums(means, ci=ci))
    table = table.select(pl.exclude("^__pe_.*$"), *units.unit_means(means, ci))
    table = units.with_bootstrap(table, per.lazy(), means, [], ["query"], ci)
    exp = [pl.col(c).exp() for name in logs for c in units.interval_names(name) if ci or c == name]
    return table.with_columns(exp).select(units.ordered(columns, means, ci)).collect()


MISSING_ZSCORE = -1_000_000.0
"""trec_eval's ``MISSING_ZSCORE_VALUE``: the z-score of a measure whose mean and standard
deviation the z-scores file lacks for that query (convert_zscores.c)."""
NOT_ZSCORED = ("num_q", "runid", "relstring")
"""Columns that ``-Z`` leaves as they are (trec_eval prints num_q with the Z prefix)."""
ZM, ZS = "__pe_zmean_", "__pe_zsd_"


def _zscores(zscores: Any) -> pl.DataFrame:
    """The z-scores (a path or a frame with :data:`ZSCORE_COLUMNS`), checked: no null, no
    (query, measure) twice."""
    lf = _as_lazy(zscores, _read_zscores, ZSCORE_COLUMNS, "zscores")
    df = lf.select(
        pl.col("query", "measure").cast(pl.String), pl.col("mean", "stddev").cast(F64)
    ).collect()
    for col in df.columns:
        nulls = df.get_column(col).null_count()
        if nulls:
            raise DataValidationError(f'column "{col}" of the z-scores has {nulls} null values')
    dups = df.group_by("query", "measure").len().filter(pl.col("len") > 1).sort("query", "measure")
    if dups.height:
        query, measure = dups.row(0)[:2]
        raise DataValidationError(
            f'the z-scores give measure "{measure}" of query "{query}" more than once'
        )
    return df


def _zscored(per: pl.DataFrame, measures: list[Measure], zscores: pl.DataFrame) -> pl.DataFrame:
    """Each measure per query as trec_eval's ``-Z`` prints it (convert_zscores.c): (value -
    mean) / stddev with the mean and standard deviation of that query and measure; a
    standard deviation of 0 gives 0 when the value is the mean, and a pair the z-scores
    lack, :data:`MISSING_ZSCORE`. gm_map and gm_bpref are converted as trec_eval keeps them
    per query (the logarithm), and their summary is the geometric mean of the z-scores."""
    out = per
    for value, prefix in (("mean", ZM), ("stddev", ZS)):
        part = zscores.pivot(on="measure", index="query", values=value)
        part = part.rename({c: prefix + c for c in part.columns if c != "query"})
        out = out.join(part, on="query", how="left")
    known = set(out.columns)
    converted = []
    for m in measures:
        if m.name in NOT_ZSCORED:
            continue
        value = pl.col(m.column).cast(F64)
        if ZM + m.column not in known:
            converted.append(pl.lit(MISSING_ZSCORE, F64).alias(m.column))
            continue
        mean, sd = pl.col(ZM + m.column), pl.col(ZS + m.column)
        z = pl.when(mean.is_null()).then(MISSING_ZSCORE).when(sd != 0.0).then((value - mean) / sd)
        z = z.when(value == mean).then(0.0).otherwise(MISSING_ZSCORE)
        converted.append(z.alias(m.column))
    return out.with_columns(converted).select(per.columns)


def _z_names(df: pl.DataFrame) -> pl.DataFrame:
    """The columns as trec_eval's ``-Z`` prints them: ``Z`` before each measure's name."""
    return df.rename({c: "Z" + c for c in df.columns if c not in ("query", "runid", "relstring")})


def _count_aggs(level: int, *, qrels: bool = False) -> list[pl.Expr]:
    """The per-query counts of the run side (retrieved, relevant and judged non-relevant
    retrieved) or of the qrels side (relevant, gained, judged non-relevant), summed as
    Int64 (a boolean sum is UInt32 and wraps, BAD_INPUTS 40)."""
    rel = pl.col("relevance")
    relevant, nonrel = count_true(rel >= level), count_true((rel >= 0) & (rel < level))
    if qrels:
        return [
            relevant.cast(F64).alias(rk.NREL),
            count_true(rel >= 1).cast(F64).alias(GAINED),
            relevant.alias("num_rel"),
            nonrel.cast(F64).alias(rk.NNONREL),
        ]
    return [
        count_true(pl.col("score").is_not_null()).cast(F64).alias(rk.NRET),
        relevant.alias("num_rel_ret"),
        nonrel.alias("num_nonrel_judged_ret"),
    ]


def _per_query(
    run_lf: pl.LazyFrame, qrels_lf: pl.LazyFrame, measures: list[Measure], flags: _Flags
) -> pl.DataFrame:
    """The qrels measures, one row per query evaluated (sorted): query, the measures'
    columns (and runid when asked)."""
    flavor, level, max_docs = flags.flavor, flags.level, flags.max_docs
    tagged = "run" in run_lf.collect_schema()
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
    if max_docs is not None:  # -M cuts the ranking before -J drops (form_res_rels.c)
        order = pl.int_range(pl.len()).over("query")
        joined = joined.sort(["query", "score", "doc"], descending=[False, True, True])
        joined = joined.filter(order < max_docs)
    if flags.judged_only:
        joined = joined.filter(rel >= 0)
    judged = pl.when(rel >= 0).then(rel)  # unjudged documents: null, ranked as not relevant
    aggs = [
        rk.query_state(judged, "score", ties="first", tiebreak="doc"),
        *_count_aggs(level),
        (pl.col("score").is_nan().any() | rel.is_nan().any()).alias(rk.HASNAN),
        pl.len().cast(pl.Int64).alias("num_ret"),
        (pl.col("doc").n_unique() < pl.len()).alias("__pe_dup"),
    ]
    if codes_needed:
        trec_order = [pl.col("score"), pl.col("doc")]
        aggs.append(code.sort_by(trec_order, descending=True).implode().alias(CODES))
    if "runid" in names:
        aggs.append((pl.col("run").first() if tagged else pl.lit(None, pl.String)).alias("runid"))
    run_side = joined.group_by("query").agg(aggs)
    if flags.judged_only:  # a query of the run whose documents are all unjudged: an empty ranking
        run_side = run_lf.select("query").unique().join(run_side, on="query", how="left")
    run_side = run_side.with_columns(pl.lit(True).alias(MISSING))  # null: not in the run
    qrels_side = qrels_lf.group_by("query").agg(
        *_count_aggs(level, qrels=True),
        *rk.ideal_aggs(rel.clip(lower_bound=0.0), specs),
        *([rel.filter(rel >= 0).cast(pl.Int64).alias(LEVELS)] if codes_needed else []),
        (pl.col("doc").n_unique() < pl.len()).alias(QRELS_DUP),
    )
    # collected here: the readers' parsing (a Python batch function) runs once
    if flags.complete_queries:  # the queries of the qrels, those absent from the run empty
        grouped = qrels_side.join(run_side, on="query", how="left")
    else:
        grouped = run_side.join(qrels_side, on="query", how="inner")
    grouped = grouped.with_columns(  # a query with an empty ranking (-c, -J)
        pl.col(MISSING).is_null(),
        pl.col(rk.NRET).fill_null(0.0),
        pl.col(rk.HASNAN, "__pe_dup").fill_null(False),
        pl.col("num_ret", "num_rel_ret", "num_nonrel_judged_ret").fill_null(0),
    )
    # a document judged twice for a query evaluated (retrieved or not): trec_eval stops
    # ("duplicate docs", form_res_rels.c); never counted twice (-c queries too)
    repeated = pl.col(QRELS_DUP).fill_null(False)
    grouped = grouped.with_columns((pl.col("__pe_dup") | repeated).alias("__pe_dup"))
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
    ).with_columns(*_count_measures(measures, flags.collection_size), *_log_measures(measures))
    per = per.with_columns(_empty_rankings(measures, flavor, flags.judged_only))
    if per.get_column("__pe_dup").any():
        _raise_duplicate(run_lf, qrels_lf, per.filter("__pe_dup").get_column("query"))
    return per


# ---------------------------------------------------------------------------------------
# Judgments of the other formats (-R prefs, qrels_prefs, qrels_jg)
# ---------------------------------------------------------------------------------------

JG_KEY = "\x1f"
"""Joins a query and a judgment group into the key of one (query, group) ranking."""


def _judgments(qrels: Any, fmt: str) -> pl.LazyFrame:
    """The judgments as a lazy frame of ``fmt``'s columns (query, [jg, [jsg,]] doc,
    relevance as Float64), from a path (read by the format's reader) or a frame."""
    if fmt == "qrels":
        lf = _as_lazy(qrels, read_trec_qrels, ("query", "doc", "relevance"), "qrels")
        return lf.select(
            pl.col("query").cast(pl.String),
            pl.col("doc").cast(pl.String),
            pl.col("relevance").cast(F64),
        )
    readers = {"prefs": read_trec_prefs, "qrels_prefs": _read_qrels_prefs}
    reader = readers.get(fmt, read_trec_qrels_jg)
    columns = PREFS_COLUMNS if fmt != "qrels_jg" else JG_COLUMNS
    if isinstance(qrels, (pl.DataFrame, pl.LazyFrame)) and fmt != "prefs":
        schema = qrels.lazy().collect_schema()
        if "jg" not in schema and ("iteration" in schema or fmt == "qrels_prefs"):
            # the group is the iteration field, as trec_eval reads it (else one group)
            group = pl.col("iteration") if "iteration" in schema else pl.lit("0")
            qrels = qrels.lazy().with_columns(group.cast(pl.String).alias("jg"))
        if fmt == "qrels_prefs":
            qrels = qrels.lazy().with_columns(pl.lit("0").alias("jsg"))
    lf = _as_lazy(qrels, reader, columns, fmt)
    return lf.select(
        *(pl.col(c).cast(pl.String) for c in columns[:-1]), pl.col("relevance").cast(F64)
    )


def _check_judgments(df: pl.DataFrame, fmt: str, unit: list[str]) -> None:
    """No null field, no NaN level, no document twice in one (sub-)group."""
    what = "preference judgments" if fmt != "qrels_jg" else "qrels_jg judgments"
    for col in df.columns:
        nulls = df.get_column(col).null_count()
        if nulls:
            raise DataValidationError(f'column "{col}" of the {what} has {nulls} null values')
    nans = int(df.get_column("relevance").is_nan().sum())
    if nans:
        raise DataValidationError(f'column "relevance" of the {what} has {nans} NaN values')
    dups = df.group_by(unit).len().filter(pl.col("len") > 1).sort(unit)
    if dups.height:
        row = dups.row(0, named=True)
        where = f'judgment group "{row["jg"]}"'
        if "jsg" in unit:
            where = f'judgment sub-group "{row["jsg"]}" of {where}'
        raise DataValidationError(
            f'document "{row["doc"]}" appears more than once in {where} for query '
            f'"{row["query"]}" of the {what} (trec_eval stops or counts it twice)'
        )


def _check_run_repeats(run: pl.DataFrame) -> None:
    """A document twice in one query of the run is an error (trec_eval stops too)."""
    dups = run.group_by("query", "doc").len().filter(pl.col("len") > 1).sort("query", "doc")
    if dups.height:
        query, doc = dups.row(0)[:2]
        raise DataValidationError(
            f'document "{doc}" appears more than once for query "{query}" in the run '
            "(trec_eval stops too)"
        )


def _run_tags(run_lf: pl.LazyFrame, names: set[str]) -> pl.LazyFrame | None:
    """query -> runid (the run tag), when ``runid`` is asked for."""
    if "runid" not in names:
        return None
    tagged = "run" in run_lf.collect_schema()
    tag = pl.col("run").first() if tagged else pl.lit(None, pl.String)
    return run_lf.group_by("query").agg(tag.alias("runid"))


def _per_query_jg(
    run_lf: pl.LazyFrame, jg_lf: pl.LazyFrame, measures: list[Measure], flags: _Flags
) -> pl.DataFrame:
    """m_map_avgjg.c, m_P_avgjg.c, m_Rprec_mult_avgjg.c: ``map``, ``P.k``,
    ``Rprec_mult.x`` of each judgment group of a query (its own relevance, its own R, the
    run cut by -M and, with -J, its own judged documents: form_res_rels_jg.c), averaged
    over the query's groups. Each (query, group) is one ranking for the qrels measures."""
    jg = jg_lf.collect()
    _check_judgments(jg, "qrels_jg", ["query", "jg", "doc"])
    run = run_lf.collect()
    evaluated = jg.select("query").unique()
    _check_run_repeats(run.join(evaluated, on="query", how="semi"))
    if not flags.complete_queries:
        evaluated = evaluated.join(run, on="query", how="semi")
    key = pl.concat_str("query", pl.lit(JG_KEY), "jg").alias("key")
    groups = jg.select("query", "jg").unique().with_columns(key)
    keyed_run = run.join(groups, on="query").select(
        pl.col("key").alias("query"), pl.exclude("query", "jg", "key")
    )
    keyed_qrels = jg.select(key.alias("query"), "doc", "relevance")
    inner = [
        Measure(JG_MEASURES[m.name], m.column, m.cut, m.params)
        for m in measures
        if m.name in JG_MEASURES
    ]
    names = {m.name for m in measures}
    per = evaluated.select("query").unique()
    if inner:  # each group's values, averaged over the groups of the query
        by_group = _per_query(keyed_run.lazy(), keyed_qrels.lazy(), inner, flags)
        mean = (
            by_group.join(groups, left_on="query", right_on="key", suffix="_of_key")
            .group_by(pl.col("query_of_key").alias("query"))
            .agg(pl.col(m.column).mean() for m in inner)
        )
        per = per.join(mean, on="query", how="left")
    tags = _run_tags(run_lf, names)
    if tags is not None:
        per = per.join(tags.collect(), on="query", how="left")
    return per.sort("query")


def _per_query_prefs(
    run_lf: pl.LazyFrame, prefs_lf: pl.LazyFrame, measures: list[Measure], flags: _Flags
) -> pl.DataFrame:
    """The preference measures per query (:mod:`._trec_prefs`): the docid ranks of the
    judged documents are joined here for every query at once; the counting is per query
    (trec_eval's form_prefs_counts.c is), in numpy."""
    prefs = prefs_lf.collect()
    _check_judgments(prefs, "prefs", ["query", "jg", "jsg", "doc"])
    run = run_lf.collect()
    queries = prefs.select("query").unique()
    if not flags.complete_queries:  # -c: also the queries absent from the run (none retrieved)
        queries = queries.join(run.select("query").unique(), on="query", how="semi")
    queries = queries.sort("query")
    # the run in form_prefs_counts.c's order: score descending, then document id ascending
    ranked = (
        run.join(queries, on="query", how="semi")
        .filter(pl.col("score").is_not_null())
        .sort(["query", "score", "doc"], descending=[False, True, False])
        .with_columns(pl.int_range(pl.len()).over("query").alias("pos"))
    )
    if flags.max_docs is not None:
        ranked = ranked.filter(pl.col("pos") < flags.max_docs)
    _check_run_repeats(ranked)
    prefs = prefs.join(queries, on="query", how="semi")
    judged = prefs.select("query", "doc").unique()
    # docid ranks: the judged documents retrieved, in rank order, then the others by id
    found = (
        ranked.join(judged, on=["query", "doc"], how="semi")
        .sort("query", "pos")
        .with_columns(pl.int_range(pl.len()).over("query").alias("docid"))
    )
    njr = found.group_by("query").len("njr")
    rest = (
        judged.join(found, on=["query", "doc"], how="anti")
        .join(njr, on="query", how="left")
        .sort("query", "doc")
        .with_columns(
            (pl.col("njr").fill_null(0) + pl.int_range(pl.len()).over("query")).alias("docid")
        )
    )
    docids = pl.concat(
        [found.select("query", "doc", "docid"), rest.select("query", "doc", "docid")]
    ).sort("query", "docid")
    lines = (
        prefs.join(docids, on=["query", "doc"])
        .with_columns(
            (pl.col("jg").rank("dense") - 1).cast(pl.Int64).alias("g"),
            (pl.col("jsg").rank("dense") - 1).cast(pl.Int64).alias("s"),
        )
        .sort("query", "g", "s", "docid")
    )
    group_names = lines.select("g", "jg").unique().sort("g")
    names_of = dict(group_names.iter_rows())
    retrieved = dict(njr.iter_rows())
    values: dict[str, list[float]] = {name: [] for name in tp.MEASURES}
    line_parts = lines.partition_by("query", maintain_order=True, as_dict=True)
    doc_parts = docids.partition_by("query", maintain_order=True, as_dict=True)
    for (query,), part in line_parts.items():  # per query, as trec_eval
        doc_names = doc_parts[(query,)].get_column("doc").to_list()
        judgments = tp.Judgments(
            query=query,
            group=part.get_column("g").to_numpy(),
            subgroup=part.get_column("s").to_numpy(),
            doc=part.get_column("docid").to_numpy(),
            level=part.get_column("relevance").to_numpy(),
            retrieved=int(retrieved.get(query, 0)),
            judged=len(doc_names),
            doc_names=doc_names,
            group_names=names_of,
        )
        for name, value in tp.query_values(judgments).items():
            values[name].append(value)
    per = pl.DataFrame(
        {"query": [q for (q,) in line_parts], **values},
        schema={"query": pl.String, **dict.fromkeys(tp.MEASURES, F64)},
    ).with_columns(pl.col(tp.COUNTS).cast(pl.Int64))
    tags = _run_tags(run_lf, {m.name for m in measures})
    if tags is not None:
        per = per.join(tags.collect(), on="query", how="left")
    return per.sort("query")


def trec_cli(
    run_path: PathLike,
    qrels_path: PathLike,
    metrics: Sequence[str] | None = None,
    per_query: bool = False,
    convention: str = "10",
    **flags: Any,
) -> pl.DataFrame:
    """The ``polars-eval trec RUN QRELS [-m measure ...] [-q]`` command: :func:`trec_eval` on two files.

    ``metrics`` None or empty uses the default set of the judgments' format
    (:data:`FORMAT_DEFAULTS`); ``flags`` are trec_eval's (``max_docs``, ``min_relevance``,
    ``complete_queries``, ``judged_only``, ``rel_format``, ``collection_size``; and ``ci``,
    ``level``, ``n_resamples``, ``seed`` of the intervals over queries). Errors
    are :class:`~polars_eval.DataValidationError` (bad file, malformed line, duplicate
    document) or :class:`~polars_eval.InvalidParameterError` (unknown measure), each with
    a one-line message for the CLI to print.
    """
    chosen = list(metrics) if metrics else None
    try:
        return trec_eval(
            read_trec_run(run_path),
            os.fspath(qrels_path),
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
