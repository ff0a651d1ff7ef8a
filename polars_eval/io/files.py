"""Evaluation inputs read from files: parquet, CSV/TSV and NDJSON; paths, globs, directories.

:func:`scan` gives one LazyFrame over many files. The files are checked first, so that a
bad file is an error naming the file and the line or the column, before any query is
built — never a raw Polars error at collect, a renamed column or a silent null:

* **CSV/TSV structure**: the header must not repeat a column name (Polars would rename
  the second ``p`` to ``p_duplicated_0`` and evaluate the first), and every line must
  have as many fields as the header (Polars reads the missing fields of a short line as
  null, and the row would be dropped as a null row; a long line fails in the streaming
  reader, now and then with a panic). Blank lines are allowed (Polars reads them as
  null rows, which every metric ignores). The check is one vectorised pass over the
  bytes (numpy over a memory map, quoted fields understood as RFC 4180 has them);
  files with irregular quoting are checked line by line with Python's ``csv`` module.
  Lines are numbered as an editor numbers them: the header is line 1.
* **NDJSON keys**: a key repeated in one line's object is an error naming the file, the
  line and the key (Polars keeps one of the two values and drops the other silently).
  Each column name is counted per line as a key, vectorised over blocks of lines; the
  rare lines where one counts twice are parsed with :mod:`json` to tell a repeated key
  from the same text inside a string value or in a nested object.
* **The same columns in every file** (schema drift in a lake): a column missing from
  some files, or whose type changes between files (``Float64`` here, ``String`` there),
  is a :class:`~polars_eval.DataValidationError` naming the column, a file of each kind
  and both types. Parquet schemas come from the files' metadata (nothing else is read);
  CSV headers must also list the columns in the same order.
* **Numeric types that differ** between files (``Int32`` and ``Int64``, ``Float32`` and
  ``Float64``, ``Int32`` and ``Float32``) are accepted: the column is read as their
  common type, ``Int64`` when every file holds integers (``Float64`` when ``UInt64`` is
  among them), else ``Float64`` — exact for floats and for integers below 2**53, which
  is all a label, a score, a weight or a relevance grade needs. Any other change of
  type (a number in one file and a string, a boolean or a date in another) is an error.
* **Files without rows** (a CSV header only, an empty NDJSON file) are left out, their
  header checked against the others; when no file holds a row, "no rows to evaluate".

A column that is missing from some files, or changes type, is an error only when it is
one of ``columns`` (default: every column); other such columns are left out of the
frame. Values that do not fit a column's type further down a CSV or NDJSON file than
its type was inferred from (``infer_schema_length`` rows) are still found by Polars
at collect time.
"""

from __future__ import annotations

import csv
import glob
import json
import mmap
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from polars_eval.exceptions import DataValidationError, InvalidParameterError

__all__ = ["INPUT_FORMATS", "expand", "format_of", "scan"]

INPUT_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
}
FORMATS = ("parquet", "csv", "tsv", "ndjson")
INFER_SCHEMA_LENGTH = 10_000
_WINDOW = 1 << 24  # bytes of a CSV (or of NDJSON lines) checked at once
_QUOTE, _LF, _CR = ord('"'), ord("\n"), ord("\r")


def expand(pattern: str | os.PathLike[str]) -> list[str]:
    """The files one path names: a file, a glob (``**`` recursive) or a directory.

    A directory stands for the parquet, CSV and NDJSON files under it (recursively);
    a glob or a directory that names no file, or a missing path, is a
    ``FileNotFoundError``.
    """
    pattern = os.fspath(pattern)
    if os.path.isfile(pattern):  # a file named data[1].csv is that file, not a glob
        return [pattern]
    if any(ch in pattern for ch in "*?["):
        files = sorted(f for f in glob.glob(pattern, recursive=True) if os.path.isfile(f))
        if not files:
            raise FileNotFoundError(f"no file matches {pattern!r}")
        return files
    path = Path(pattern)
    if path.is_dir():
        files = sorted(
            str(f) for f in path.rglob("*") if f.is_file() and f.suffix.lower() in INPUT_FORMATS
        )
        if not files:
            raise FileNotFoundError(f"directory {pattern!r} holds no parquet, CSV or NDJSON file")
        return files
    if not path.exists():
        raise FileNotFoundError(f"file not found: {pattern!r}")
    return [pattern]


def format_of(path: str, input_format: str | None = None) -> str:
    """The format of a file: ``input_format`` when given, else from its extension."""
    if input_format is not None:
        if input_format not in FORMATS:
            raise InvalidParameterError(
                f"input_format must be one of {', '.join(FORMATS)}; got {input_format!r}"
            )
        return input_format
    fmt = INPUT_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        known = ", ".join(INPUT_FORMATS)
        raise InvalidParameterError(
            f"cannot tell the format of {path!r} from its extension (known: {known}); "
            "pass input_format="
        )
    return fmt


# ---------------------------------------------------------------------------------------
# CSV structure
# ---------------------------------------------------------------------------------------


@dataclass
class _Ragged:
    """Lines whose number of fields differs from the header's."""

    count: int = 0
    first: list[tuple[int, int]] = field(default_factory=list)  # (line, fields), a few

    def add(self, lines: Iterable[int], fields: Iterable[int], total: int) -> None:
        """``total`` ragged lines, of which ``lines``/``fields`` are the first ones."""
        self.count += total
        for line, n in zip(lines, fields, strict=False):
            if len(self.first) < 3:
                self.first.append((int(line), int(n)))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _names(columns: Sequence[str], at_most: int = 8) -> str:
    shown = ", ".join(columns[:at_most])
    return shown + (f", ... ({len(columns)} columns)" if len(columns) > at_most else "")


def _header_names(raw: bytes, separator: str, path: str) -> list[str]:
    text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff").rstrip("\r")
    try:
        return next(csv.reader([text], delimiter=separator), [])
    except csv.Error as error:
        raise DataValidationError(f"{path!r}, line 1: cannot read the header ({error})") from None


def _check_header(names: list[str], path: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            n = names.count(name)
            raise DataValidationError(
                f'{path!r}: column "{name}" appears {n} times in the header; column names '
                f"must be unique (Polars would rename the repeats {name}_duplicated_0 ...)"
            )
        seen.add(name)


def _raise_ragged(path: str, names: list[str], ragged: _Ragged) -> None:
    line, found = ragged.first[0]
    message = (
        f"{path!r}, line {line}: expected {_plural(len(names), 'field')} as in the header "
        f"({_names(names)}), found {found}"
    )
    if ragged.count > 1:
        shown = ", ".join(str(li) for li, _ in ragged.first)
        more = ", ..." if ragged.count > len(ragged.first) else ""
        message += f"; {ragged.count} lines have the wrong number of fields (lines {shown}{more})"
    raise DataValidationError(message)


def _csv_structure_fast(data: np.ndarray, sep: int, path: str) -> tuple[list[str], int] | None:
    """Header names and data-row count of a CSV held in ``data`` (bytes), vectorised.

    Returns None when a quote is not where RFC 4180 puts quotes (at the start and end of
    a field, doubled inside): the quote parity that tells which separators and line
    ends are inside quoted fields would not be reliable, and the slow path decides.
    """
    size = data.size
    parity = 0  # quotes seen so far, mod 2: 1 = inside a quoted field
    lines_before = 0  # '\n' bytes before the window (physical lines, quoted ones too)
    seps_since = 0  # separators outside quotes in the current record so far
    start = 0  # byte offset where the current record starts
    start_line = 1  # its physical line number
    names: list[str] | None = None
    n_fields = 0
    rows = 0
    ragged = _Ragged()
    for a in range(0, size, _WINDOW):
        w = data[a : a + _WINDOW]
        marks = np.flatnonzero((w == sep) | (w == _LF))  # separators and line ends
        is_lf = w[marks] == _LF
        n_newlines = int(np.count_nonzero(is_lf))
        rank = None  # with quotes: the rank of each kept line end among all line ends
        is_quote = w == _QUOTE
        quotes = np.flatnonzero(is_quote)
        if quotes.size:
            pos = quotes + a
            opens, closes = pos[parity::2], pos[1 - parity :: 2]  # quotes alternate
            prev = data[np.maximum(opens - 1, 0)]
            ok = (prev == sep) | (prev == _LF) | (prev == _QUOTE) | (opens == 0)
            ok |= (opens == 3) & (data[0] == 0xEF)  # after a UTF-8 byte-order mark
            nxt = data[np.minimum(closes + 1, size - 1)]
            ok_close = (nxt == sep) | (nxt == _LF) | (nxt == _CR) | (nxt == _QUOTE)
            if not (ok.all() and (ok_close | (closes == size - 1)).all()):
                return None
            quotes_to = np.cumsum(is_quote, dtype=np.int32)  # quotes up to each byte
            keep = ((quotes_to[marks] + parity) & 1) == 0  # marks outside quoted fields
            rank = (np.cumsum(is_lf) - 1)[keep & is_lf]
            marks, is_lf = marks[keep], is_lf[keep]
            parity = (parity + quotes.size) & 1
        elif parity:  # the whole window is inside a quoted field
            marks, is_lf, rank = marks[:0], is_lf[:0], np.arange(0)
        at_lf = np.flatnonzero(is_lf)  # index in marks of each record end
        ends_w = marks[at_lf]
        n_seps_w = marks.size - at_lf.size
        if ends_w.size:
            cum = at_lf - np.arange(at_lf.size)  # separators before each record end
            n_seps = np.diff(cum, prepend=0)
            n_seps[0] += seps_since
            ends = ends_w + a
            starts = np.concatenate(([start], ends[:-1] + 1))
            length = ends - starts
            has_cr = (length > 0) & (data[np.maximum(ends - 1, 0)] == _CR)
            blank = (n_seps == 0) & (length == has_cr)
            first = 0
            if names is None:
                names = _header_names(bytes(data[0 : ends[0]]), chr(sep), path)
                _check_header(names, path)
                n_fields = len(names)
                first = 1
            fields = n_seps[first:] + 1
            bad = ~blank[first:] & (fields != n_fields)
            rows += int(fields.size - np.count_nonzero(blank[first:]))
            # the physical line after each record end
            after = lines_before + 2 + (np.arange(ends_w.size) if rank is None else rank)
            if bad.any():
                lines = np.concatenate(([start_line], after[:-1]))[first:]
                ragged.add(lines[bad][:3], fields[bad][:3], int(np.count_nonzero(bad)))
            start = int(ends[-1]) + 1
            start_line = int(after[-1])
            seps_since = int(n_seps_w - cum[-1])
        else:
            seps_since += n_seps_w
        lines_before += n_newlines
    if parity:
        raise DataValidationError(
            f"{path!r}, line {start_line}: a quoted field is not closed by the end of the file"
        )
    if start < size:  # a last record without a final line end
        length = size - start - (1 if data[size - 1] == _CR else 0)
        if names is None:
            names = _header_names(bytes(data[start:size]), chr(sep), path)
            _check_header(names, path)
            n_fields = len(names)
        elif not (seps_since == 0 and length == 0):
            rows += 1
            if seps_since + 1 != n_fields:
                ragged.add([start_line], [seps_since + 1], 1)
    if ragged.count:
        _raise_ragged(path, names or [], ragged)
    return names or [], rows


def _csv_structure_slow(path: str, separator: str) -> tuple[list[str], int]:
    """The same check with Python's csv module (irregular quoting)."""
    names: list[str] | None = None
    rows = 0
    ragged = _Ragged()
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
        reader = csv.reader(handle, delimiter=separator)
        line = 1
        try:
            for record in reader:
                if names is None:
                    names = record
                    _check_header(names, path)
                elif record:
                    rows += 1
                    if len(record) != len(names):
                        ragged.add([line], [len(record)], 1)
                line = reader.line_num + 1
        except csv.Error as error:
            raise DataValidationError(f"{path!r}, line {line}: {error}") from None
    if ragged.count:
        _raise_ragged(path, names or [], ragged)
    return names or [], rows


def csv_structure(path: str, separator: str = ",") -> tuple[list[str], int]:
    """The header's column names and the number of data rows of a CSV file, checked.

    A repeated column name, or a line whose number of fields differs from the header's,
    is a :class:`~polars_eval.DataValidationError` naming the file and the column or the
    line (the header is line 1). Blank lines are not rows.
    """
    if os.path.getsize(path) == 0:
        raise DataValidationError(f"{path!r} is empty: expected a header line naming the columns")
    error: DataValidationError | None = None
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        data = np.frombuffer(mm, dtype=np.uint8)
        try:
            result = _csv_structure_fast(data, ord(separator), path)
        except DataValidationError as problem:
            # its traceback holds views of the map, which cannot close while they live
            error = problem.with_traceback(None)
            result = None
        del data  # the memory map closes only when no array views it
    if error is not None:
        raise error
    return result if result is not None else _csv_structure_slow(path, separator)


# ---------------------------------------------------------------------------------------
# NDJSON keys
# ---------------------------------------------------------------------------------------


def _key_pattern(name: str) -> str:
    """A regex matching ``name`` as a JSON key (``"name":``), written with or without
    ``\\u`` escapes of its non-ASCII characters."""
    forms = {json.dumps(name, ensure_ascii=False)[1:-1], json.dumps(name)[1:-1]}
    inner = "|".join(pl.escape_regex(form) for form in sorted(forms))
    return f'"(?:{inner})"\\s*:'


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _no_repeat(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _RepeatedKey(key)
        seen.add(key)
    return dict(pairs)


def _repeated_key(line: str) -> str | None:
    """The first key repeated in one object of a JSON line; None when none is (or when the
    line is not JSON: Polars reports that)."""
    try:
        json.loads(line, object_pairs_hook=_no_repeat)
    except _RepeatedKey as repeated:
        return repeated.key
    except ValueError:
        return None
    return None


def _first_bad_json_line(path: str) -> tuple[int, str] | None:
    """The first line of an NDJSON file that is not a JSON object (blank lines pass), with
    why; None when every line is one. Runs only after Polars failed to read the file: a
    Python loop over the lines is then affordable, and names the line."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as error:
                return number, f"{error.msg} at column {error.colno}"
            if not isinstance(value, dict):
                return number, f"a JSON {type(value).__name__}, not an object"
    return None


def _check_ndjson_keys(path: str, names: Sequence[str]) -> None:
    """A column's key twice in one line of an NDJSON file is an error naming the file, the
    line (the first is line 1) and the key."""
    if not names:
        return
    patterns = [_key_pattern(name) for name in names]
    line = pl.col("line")
    twice = pl.any_horizontal(line.str.count_matches(p) > 1 for p in patterns)
    first = 1  # the number of the block's first line
    rest = b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(_WINDOW)
            data = rest + block
            if block:  # whole lines only; the partial last one goes with the next block
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
            if data:
                lines = data.decode("utf-8", errors="replace").split("\n")
                if data.endswith(b"\n"):
                    lines.pop()
                frame = pl.DataFrame({"line": lines}, schema={"line": pl.String})
                found = frame.with_row_index("n", offset=first).filter(twice)
                # a Python loop over the few candidate lines only: JSON decides
                for n, text in found.iter_rows():
                    key = _repeated_key(text)
                    if key is not None:
                        raise DataValidationError(
                            f'{path!r}, line {n}: key "{key}" appears more than once in one '
                            "object; keys must be unique (Polars would keep one of the values "
                            "and drop the other)"
                        )
                first += len(lines)
            if not block:
                return


# ---------------------------------------------------------------------------------------
# Schemas of many files
# ---------------------------------------------------------------------------------------


@dataclass
class _Source:
    path: str
    fmt: str
    schema: dict[str, pl.DataType]
    rows: int | None  # None: not counted (parquet)
    header: list[str] = field(default_factory=list)  # CSV: the header, in order
    empty_columns: set[str] = field(default_factory=set)  # CSV: no value where inferred


def _polars_error(path: str, what: str, error: Exception) -> DataValidationError:
    text = " ".join(str(error).split("\n\n")[0].split())
    return DataValidationError(f"{path!r}: cannot read the {what} ({text})")


def _read_source(path: str, fmt: str, infer_schema_length: int) -> _Source:
    if fmt == "parquet":
        try:
            # the file's own columns (metadata only); glob=False: "a[1].parquet" is a name
            schema = pl.scan_parquet(path, glob=False, hive_partitioning=False).collect_schema()
        except (pl.exceptions.PolarsError, OSError, ValueError) as error:
            raise _polars_error(path, "parquet file", error) from error
        return _Source(path, fmt, dict(schema), None)
    if fmt in ("csv", "tsv"):
        separator = "\t" if fmt == "tsv" else ","
        _, rows = csv_structure(path, separator)
        lf = pl.scan_csv(
            path, separator=separator, infer_schema_length=infer_schema_length, glob=False
        )
        try:
            schema = dict(lf.collect_schema())  # the names as Polars reads them
            empty: set[str] = set()
            text = [name for name, dtype in schema.items() if dtype == pl.String]
            if text and rows:  # a column without any value where its type was inferred
                seen = lf.head(infer_schema_length).select(pl.col(text).is_not_null().any())
                empty = {
                    name
                    for name, any_value in seen.collect().row(0, named=True).items()
                    if not any_value
                }
        except pl.exceptions.PolarsError as error:
            raise _polars_error(path, "CSV file", error) from error
        return _Source(path, fmt, schema, rows, list(schema), empty)
    with open(path, "rb") as handle:
        if not handle.read(1 << 16).strip() and not handle.read().strip():
            return _Source(path, fmt, {}, 0)
    try:
        schema = pl.scan_ndjson(path, infer_schema_length=infer_schema_length).collect_schema()
    except pl.exceptions.PolarsError as error:
        bad = _first_bad_json_line(path)
        if bad is None:
            raise _polars_error(path, "NDJSON file", error) from error
        line, reason = bad
        raise DataValidationError(f"{path!r}, line {line}: not a JSON object ({reason})") from error
    _check_ndjson_keys(path, list(schema))
    return _Source(path, fmt, dict(schema), None)


def _common_type(dtypes: Sequence[pl.DataType]) -> pl.DataType | None:
    """The type every file's column is read as; None when the types do not mix."""
    first = dtypes[0]
    if all(d == first for d in dtypes):
        return first
    if not all(d.is_integer() or d.is_float() for d in dtypes):
        return None
    if all(d.is_integer() for d in dtypes) and pl.UInt64 not in dtypes:
        return pl.Int64()
    return pl.Float64()


def _shown(paths: Sequence[str]) -> str:
    more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
    return f"{paths[0]!r}{more}"


def _unify(
    sources: Sequence[_Source], checked: set[str] | None, fill: bool = False
) -> tuple[dict[str, pl.DataType], bool]:
    """One schema for every file (column -> type read); whether any file needs a cast.

    Raises for a column in ``checked`` (None: every column) that some files lack or
    whose types do not mix; other such columns are left out of the schema. ``fill``: a
    column some files lack is kept (null in those files), typed by the files that have it.
    """
    order: list[str] = []
    for source in sources:
        order += [name for name in source.schema if name not in order]
    schema: dict[str, pl.DataType] = {}
    casts = False
    for name in order:
        strict = checked is None or name in checked
        having = [s for s in sources if name in s.schema]
        lacking = [s.path for s in sources if name not in s.schema]
        if lacking and not fill:
            if strict:
                raise DataValidationError(
                    f'column "{name}" is missing from {_plural(len(lacking), "file")} of '
                    f"{len(sources)}: {_shown(lacking)}; it is in {_shown([having[0].path])}"
                    "; every input file must have the same columns (missing_columns="
                    '"null" reads it as null there)'
                )
            continue
        typed = [s for s in having if name not in s.empty_columns] or having
        dtype = _common_type([s.schema[name] for s in typed])
        if dtype is None:
            if strict:
                first = typed[0]
                other = next(s for s in typed if s.schema[name] != first.schema[name])
                odd = [s.path for s in typed if s.schema[name] == other.schema[name]]
                raise DataValidationError(
                    f'column "{name}" has different types in the input files: '
                    f"{first.schema[name]} in {first.path!r}, {other.schema[name]} in "
                    f"{_shown(odd)}; every file must hold the same type (numeric types "
                    "may differ: they are read as their common type)"
                )
            continue
        casts |= any(s.schema[name] != dtype for s in having)
        schema[name] = dtype
    return schema, casts


def _check_headers(sources: Sequence[_Source]) -> None:
    """CSV files are read by position: their headers must list the same columns in order."""
    csvs = [s for s in sources if s.fmt in ("csv", "tsv")]
    for source in csvs[1:]:
        first = csvs[0]
        lacking = [(c, source, first) for c in first.header if c not in source.header]
        lacking += [(c, first, source) for c in source.header if c not in first.header]
        if lacking:
            name, without, having = lacking[0]
            raise DataValidationError(
                f'column "{name}" is missing from {without.path!r}; it is in {having.path!r}'
                '; every input file must have the same columns (missing_columns="null" '
                "reads it as null there)"
            )
        if source.header != csvs[0].header:
            raise DataValidationError(
                f"the header of {source.path!r} ({_names(source.header)}) differs from the "
                f"header of {csvs[0].path!r} ({_names(csvs[0].header)}); CSV files read "
                "together must have the same columns in the same order"
            )


def _scan_group(
    fmt: str,
    sources: Sequence[_Source],
    schema: dict[str, pl.DataType],
    casts: bool,
    fill: bool = False,
) -> pl.LazyFrame:
    """The files of one format as one LazyFrame of ``schema``'s columns (``fill``: the
    columns a file lacks are null there)."""
    files = [s.path for s in sources]
    names = [name for name in sources[0].schema if name in schema]
    if fill:
        names = list(schema)
        if fmt in ("csv", "tsv"):  # read by position: one scan per header
            headers: dict[tuple[str, ...], list[_Source]] = {}
            for source in sources:
                headers.setdefault(tuple(source.header), []).append(source)
            parts = [
                _scan_group(fmt, group, schema, casts).select(
                    pl.col(n) if n in header else pl.lit(None, schema[n]).alias(n) for n in names
                )
                for header, group in headers.items()
            ]
            return parts[0] if len(parts) == 1 else pl.concat(parts)
    if fmt == "parquet":
        if not casts and all(len(s.schema) == len(schema) for s in sources):
            return pl.scan_parquet(files, hive_partitioning=True, glob=False)
        return pl.scan_parquet(
            files,
            hive_partitioning=True,
            glob=False,
            schema={name: schema[name] for name in names},
            extra_columns="ignore",
            missing_columns="insert" if fill else "raise",
            cast_options=pl.ScanCastOptions(
                integer_cast=["upcast", "allow-float"], float_cast="upcast"
            ),
        )
    if fmt in ("csv", "tsv"):
        header = sources[0].header
        overrides = {name: schema.get(name, pl.String()) for name in header}
        lf = pl.scan_csv(
            files,
            separator="\t" if fmt == "tsv" else ",",
            schema_overrides=overrides,
            infer_schema_length=INFER_SCHEMA_LENGTH,
            glob=False,
        )
        return lf.select(name for name in header if name in schema)
    return pl.scan_ndjson(files, schema={name: schema[name] for name in names})


def scan(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    missing_columns: str = "error",
    input_format: str | None = None,
    columns: Sequence[str] | None = None,
    infer_schema_length: int = INFER_SCHEMA_LENGTH,
) -> pl.LazyFrame:
    """Read a lake lazily: parquet, CSV/TSV and NDJSON files checked before any query (SPEC §10).

    The CLI's reader as a function (``pe.scan``): one LazyFrame over every file that
    ``source`` names, whose files are checked first, so that a lake whose files drift
    gives a :class:`~polars_eval.DataValidationError` naming the column, a file of each
    kind and both types (BAD_INPUTS row 7), never Polars' ``SchemaError`` at collect
    (``pl.scan_parquet`` takes the first file's schema and fails later, or on a column
    missing from a file, raises ``ColumnNotFoundError``).

    * **Widening**: numeric types that differ between files are read as their common
      type, where no value changes: ``Int32`` with ``Int64`` is ``Int64``, ``Float32``
      with ``Float64`` is ``Float64``, integers with floats ``Float64`` (``UInt64`` with
      signed integers too: exact below 2**53). Any other change of type (a number here, a
      string, a boolean or a date there) is an error.
    * **Missing columns**: a column some files lack is an error naming it and a file
      without it (``missing_columns="error"``), or is read as null in those files
      (``missing_columns="null"``).
    * **Files**: a CSV with a repeated column name or a line with the wrong number of
      fields, an NDJSON line with a repeated key, a file that cannot be read: errors
      naming the file (and the line or the column). Files without a row are left out;
      none with a row is "no rows to evaluate".

    Parameters
    ----------
    source
        A file, a glob (``"lake/**/*.parquet"``) or a directory (its parquet, CSV and
        NDJSON files, recursively), or a list of them; the format by extension
        (``.parquet``/``.pq``, ``.csv``, ``.tsv``, ``.ndjson``/``.jsonl``).
    missing_columns
        ``"error"`` (default) or ``"null"``: what a column that some files lack gives.
    input_format
        Read every file in this format (``"parquet"``, ``"csv"``, ``"tsv"``, ``"ndjson"``)
        whatever its extension.
    columns
        The columns to check (those an evaluation reads); other columns that some files
        lack or that change type are left out of the frame. Default: every column.
    infer_schema_length
        Rows of each CSV/NDJSON file its column types are inferred from (values that do
        not fit the type further down are found by Polars at collect).

    Returns
    -------
    LazyFrame
        Hive partitions of parquet files (``key=value`` directories) become columns;
        files of different formats are concatenated.

    Raises
    ------
    FileNotFoundError
        A path that names no file.
    DataValidationError
        As above (see also the module's notes).
    InvalidParameterError
        An unknown ``missing_columns`` or ``input_format``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> lake = Path(tempfile.mkdtemp())
    >>> pl.DataFrame({"y": [1, 0], "p": [0.8, 0.3]}).write_parquet(lake / "a.parquet")
    >>> pl.DataFrame({"y": [0, 1], "p": ["low", "high"]}).write_parquet(lake / "b.parquet")
    >>> pe.scan(lake)  # doctest: +ELLIPSIS, +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    polars_eval.exceptions.DataValidationError: column "p" has different types in the input
    files: Float64 in '.../a.parquet', String in '.../b.parquet'; ...
    >>> b = pl.DataFrame({"y": [0, 1], "p": [0.25, 0.75]}, schema={"y": pl.Int32, "p": pl.Float32})
    >>> b.write_parquet(lake / "b.parquet")  # Int32 and Float32 here: widened
    >>> pl.DataFrame({"y": [1], "p": [0.5], "w": [2.0]}).write_parquet(lake / "c.parquet")
    >>> pe.scan(lake, missing_columns="null").collect()
    shape: (5, 3)
    ┌─────┬──────┬──────┐
    │ y   ┆ p    ┆ w    │
    │ --- ┆ ---  ┆ ---  │
    │ i64 ┆ f64  ┆ f64  │
    ╞═════╪══════╪══════╡
    │ 1   ┆ 0.8  ┆ null │
    │ 0   ┆ 0.3  ┆ null │
    │ 0   ┆ 0.25 ┆ null │
    │ 1   ┆ 0.75 ┆ null │
    │ 1   ┆ 0.5  ┆ 2.0  │
    └─────┴──────┴──────┘
    >>> pe.scan(lake)  # doctest: +ELLIPSIS, +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    polars_eval.exceptions.DataValidationError: column "w" is missing from 2 files of 3: ...
    >>> pe.scan(lake, columns=["y", "p"]).eval.auc("y", "p").collect().item()
    1.0
    >>> import shutil
    >>> shutil.rmtree(lake)
    """
    if missing_columns not in ("error", "null"):
        raise InvalidParameterError(
            f'missing_columns must be "error" or "null"; got {missing_columns!r}'
        )
    paths = source
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[str] = []
    for pattern in paths:
        files += expand(pattern)
    sources = [
        _read_source(file, format_of(file, input_format), infer_schema_length) for file in files
    ]
    fill = missing_columns == "null"
    if not fill:  # read together, by position
        _check_headers(sources)
    with_rows = [s for s in sources if s.rows != 0]
    if not with_rows:
        shown = _shown([s.path for s in sources])
        verb = "holds" if len(sources) == 1 else "hold"
        raise DataValidationError(f"no rows to evaluate: {shown} {verb} no data row")
    # files without rows are left out (a header-only CSV has only String columns);
    # their headers were checked against the other CSV files' above
    schema, casts = _unify(with_rows, None if columns is None else set(columns), fill)
    groups: dict[str, list[_Source]] = {}
    for source in with_rows:
        groups.setdefault(source.fmt, []).append(source)
    frames = [_scan_group(fmt, group, schema, casts, fill) for fmt, group in groups.items()]
    if len(frames) == 1:
        return frames[0]
    try:
        names = [list(frame.collect_schema()) for frame in frames]
    except pl.exceptions.PolarsError as error:
        raise DataValidationError(f"cannot read the input files together ({error})") from None
    if any(set(n) != set(names[0]) for n in names[1:]):
        fmts = list(groups)
        raise DataValidationError(
            f"the {fmts[0]} files have the columns {_names(names[0])} but the other files "
            f"{_names(next(n for n in names[1:] if set(n) != set(names[0])))}"
        )
    return pl.concat([frame.select(names[0]) for frame in frames], how="vertical_relaxed")
