"""``pe.Evaluation``: a task's mergeable state, updated batch by batch (SPEC §10).

A metric of this library is a function of the *weighted empirical distribution* of its
inputs within a group: the rows matter only through how much weight each distinct
combination of input values carries. The state of an evaluation is that distribution,
one row per distinct (group, input values) with the summed weight. Two states of
disjoint rows merge exactly by concatenating them and summing the weights per key
(the "counts per distinct key" merge rule of SPEC §10), and :meth:`Evaluation.compute`
finalizes by running the task method on the state, the summed weight as the weight:
the numbers are those of the task method on all the rows seen (to rounding, 1e-12).

Memory is bounded by the distinct values, not the rows: a score column stored at 4
decimals has at most 10,001 distinct values per (group, label). ``bins=N`` (binary)
counts scores in N bins instead, with the one-pass metrics (log loss, Brier score and
the confusion counts at ``threshold``) kept exact as sums; see :func:`score_bin`.

Tasks whose rows are keyed (a forecast row by its series and time, a ranked item by its
query and item id) keep those rows as they are: a series or a query split across
partitions still merges exactly, and a key seen twice is the task's duplicate-key error
at ``compute()``.

The state is a ``pl.DataFrame`` that carries its own definition (task, columns,
options, format version) in a first row, so ``ev.state.write_parquet(path)`` and
``Evaluation.from_state(pl.read_parquet(path))`` round-trip.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from polars_eval._core.registry import Role
from polars_eval._core.tasks import TASKS
from polars_eval._exprs import binary_label, to_float
from polars_eval._validate import check_aggs, column_problems, raise_for_checks, row_checks
from polars_eval.exceptions import (
    DataValidationError,
    InvalidParameterError,
    UndefinedMetricError,
    UndefinedMetricWarning,
)
from polars_eval.metrics._curve import score_bin
from polars_eval.scale import spill as _spill

STATE_VERSION = 1
"""The format version of a state frame; a state of a newer version is refused."""

PART = "__pe_part"  # "def" for the definition row, "rows" for data rows
DEF = "__pe_def"  # the JSON definition, on the definition row only
W = "__pe_w"  # summed weight per distinct key
N = "__pe_n"  # number of rows per distinct key (ranking without item ids)
BIN = "__pe_bin"  # the bin of a score (binned mode)
ABOVE = "__pe_above"  # score >= threshold (binned mode)
LL = "__pe_ll"  # summed weighted log loss terms (binned mode)
SQ = "__pe_sq"  # summed weighted squared errors (binned mode)
LABEL01 = "__pe_y"  # the 0/1 label (binned mode)

# column arguments (names of columns, or lists of names) and options of each task, with
# the defaults of the task method; everything else is refused by name
_COLUMNS: dict[str, tuple[str, ...]] = {
    "binary": ("label", "score"),
    "multiclass": ("label", "pred", "proba"),
    "regression": ("actual", "pred"),
    "forecast": ("actual", "forecast", "series", "time"),
    "ranking": ("relevance", "score", "query", "item"),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "binary": ("label", "score"),
    "multiclass": ("label",),
    "regression": ("actual", "pred"),
    "forecast": ("actual", "forecast", "series", "time"),
    "ranking": ("relevance", "score", "query"),
}
_OPTIONS: dict[str, dict[str, Any]] = {
    "binary": {"pos_label": None, "threshold": 0.5, "probability": True, "baseline": False},
    "multiclass": {"classes": None, "k": 2, "baseline": False},
    "regression": {"zero_actuals": "skip", "baseline": False},
    "forecast": {
        "season_length": 1,
        "zero_actuals": "skip",
        "quantiles": None,
        "interval": None,
    },
    "ranking": {
        "k": (1, 5, 10),
        "gain": "exp2",
        "ties": "average",
        "min_relevance": 1.0,
        "no_relevant": None,
        "max_relevance": 4.0,
        "unscored": "ignore",
        "baseline": False,
    },
}
_ROLES: dict[str, dict[str, Role]] = {
    "binary": {"label": "binary_label", "score": "score"},
    "multiclass": {"label": "key", "pred": "key", "proba": "proba"},
    "regression": {"actual": "numeric", "pred": "numeric"},
    "forecast": {"actual": "numeric", "forecast": "numeric", "series": "key", "time": "key"},
    "ranking": {"relevance": "relevance", "score": "score", "query": "key", "item": "key"},
}


@dataclass(frozen=True)
class _Definition:
    task: str
    columns: Mapping[str, Any]
    options: Mapping[str, Any]
    by: tuple[str, ...]
    metrics: tuple[str, ...] | None
    weight: str | None
    bins: int | None

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": STATE_VERSION,
                "task": self.task,
                "columns": dict(self.columns),
                "options": _jsonable(dict(self.options)),
                "by": list(self.by),
                "metrics": None if self.metrics is None else list(self.metrics),
                "weight": self.weight,
                "bins": self.bins,
            },
            sort_keys=True,
        )

    @staticmethod
    def from_json(text: str) -> _Definition:
        raw = json.loads(text)
        version = raw.get("version")
        if not isinstance(version, int) or version > STATE_VERSION:
            raise InvalidParameterError(
                f"this state was written by a newer polars_eval (state format version "
                f"{version!r}; this version reads up to {STATE_VERSION}): upgrade polars_eval"
            )
        options = dict(raw["options"])
        if raw["task"] == "forecast" and options.get("quantiles") is not None:
            options["quantiles"] = {float(q): c for q, c in options["quantiles"].items()}
        for key in ("interval", "k"):
            if isinstance(options.get(key), list):
                options[key] = tuple(options[key])
        return _Definition(
            task=raw["task"],
            columns=raw["columns"],
            options=options,
            by=tuple(raw["by"]),
            metrics=None if raw["metrics"] is None else tuple(raw["metrics"]),
            weight=raw["weight"],
            bins=raw["bins"],
        )

    def differences(self, other: _Definition) -> list[str]:
        mine, theirs = json.loads(self.to_json()), json.loads(other.to_json())
        return [
            f"{key}: {mine[key]!r} vs {theirs[key]!r}"
            for key in sorted(mine)
            if mine[key] != theirs[key]
        ]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _names(value: Any) -> list[str]:
    """The column names of a column argument (a name or a list of names)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InvalidParameterError(
        "pe.Evaluation takes column names (str, or a list of str for several columns); "
        f"got {value!r}"
    )


class Evaluation:
    """A task's evaluation over many batches or partitions, with a mergeable state.

    ``Evaluation(task, by=None, metrics=None, weight=None, bins=None, **columns)``:
    ``task`` is one of ``"binary"``, ``"multiclass"``, ``"regression"``, ``"forecast"``,
    ``"ranking"``; ``columns`` are the task method's column arguments and options, by
    name (``label="y", score="p"`` for binary; ``actual=, pred=`` for regression;
    ``label=, pred=, proba=, classes=`` for multiclass; ``actual=, forecast=, series=,
    time=`` (+ ``train=``, ``season_length=``) for forecasting; ``relevance=, score=,
    query=`` (+ ``item=``, ``k=`` …) for ranking). ``metrics=None`` keeps every metric of
    the task method.

    :meth:`update` adds rows (a DataFrame, a LazyFrame collected with the streaming
    engine, or an Arrow table); :meth:`merge` adds another evaluation of the same
    definition over disjoint rows; :attr:`state` is the merged state as a small
    ``pl.DataFrame``; :meth:`compute` gives the task method's table on every row seen.

    Not supported (refused when asked): ``cutoff=``/``lead=`` for forecasting (a lead is
    a rank within a cutoff, not a sum) and ``ties="first"`` for ranking (input order does
    not survive a merge).

    ``spill=<directory>`` (ranking): the state lives on disk, not in memory, for query logs
    larger than memory: :meth:`update` streams the rows into parquet buckets of whole
    queries (a hash of the query keys), :meth:`compute` evaluates one bucket at a time, so
    peak memory is one bucket's, not the rows'. ``spill_buckets=`` fixes the number of
    buckets (default: from the first update's row count, about 2e7 rows a bucket; give it
    when many small batches follow: a bucket that outgrew it is split again at compute,
    one more pass over its rows). The directory must be new or empty; :meth:`from_spill` reopens it; :attr:`state` reads
    every row back (as large as the rows). See :mod:`polars_eval.scale.spill`.

    Examples
    --------
    >>> import polars as pl
    >>> import polars_eval as pe
    >>> a = pl.DataFrame({"y": [0, 1, 1], "p": [0.1, 0.8, 0.4]})
    >>> b = pl.DataFrame({"y": [0, 1, 0], "p": [0.5, 0.5, 0.2]})
    >>> ev = pe.Evaluation("binary", label="y", score="p", metrics=["auc", "logloss"])
    >>> round(ev.update(a).update(b).compute()["auc"].item(), 6)  # 7.5 of 9 pairs
    0.833333
    >>> round(pl.concat([a, b]).eval.auc("y", "p"), 6)
    0.833333
    >>> other = pe.Evaluation.from_state(ev.state)  # e.g. after a parquet round trip
    >>> round(other.merge(ev).compute()["auc"].item(), 6)  # the same rows twice: same AUC
    0.833333
    """

    def __init__(
        self,
        task: str,
        *,
        by: str | Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        weight: str | None = None,
        bins: int | None = None,
        train: pl.DataFrame | pl.LazyFrame | None = None,
        spill: str | os.PathLike[str] | None = None,
        spill_buckets: int | None = None,
        **columns: Any,
    ) -> None:
        if task not in TASKS:
            raise InvalidParameterError(f"task must be one of {list(TASKS)}; got {task!r}")
        if bins is not None:
            if isinstance(bins, bool) or not isinstance(bins, int) or bins < 2:
                raise InvalidParameterError(f"bins must be an integer >= 2; got {bins!r}")
            if task != "binary":
                raise InvalidParameterError(
                    f"bins= is available for the binary task; the {task} task keeps exact "
                    "states (distinct values)"
                )
        unknown = [k for k in columns if k not in _COLUMNS[task] and k not in _OPTIONS[task]]
        if "cutoff" in columns or "lead" in columns:
            raise InvalidParameterError(
                "pe.Evaluation does not take cutoff=/lead= (a lead is a rank within a "
                "cutoff, which does not merge): evaluate by lead with df.eval.forecast"
            )
        if unknown:
            known = ", ".join([*_COLUMNS[task], *_OPTIONS[task]])
            raise InvalidParameterError(
                f"unknown argument(s) {unknown} for the {task} task; known: {known}"
            )
        missing = [k for k in _REQUIRED[task] if columns.get(k) is None]
        if missing:
            raise InvalidParameterError(f"the {task} task needs the column argument(s) {missing}")
        for key in _COLUMNS[task]:
            _names(columns.get(key))
        if task == "ranking" and columns.get("ties", "average") != "average":
            raise InvalidParameterError(
                "pe.Evaluation ranks with ties='average' only: 'first' depends on the input "
                "order, which does not survive a merge"
            )
        if metrics is not None and (
            isinstance(metrics, str) or not all(isinstance(m, str) for m in metrics)
        ):
            raise InvalidParameterError(f"metrics must be a list of metric names; got {metrics!r}")
        if weight is not None and not isinstance(weight, str):
            raise InvalidParameterError(f"weight must be a column name; got {weight!r}")
        if task == "forecast" and train is not None:
            train = train.lazy().collect()
        elif train is not None:
            raise InvalidParameterError(f"train= is for the forecast task, not {task}")
        options = {key: columns.get(key, default) for key, default in _OPTIONS[task].items()}
        self._def = _Definition(
            task=task,
            columns={key: columns.get(key) for key in _COLUMNS[task]},
            options=options,
            by=tuple(_names(by)),
            metrics=None if metrics is None else tuple(metrics),
            weight=weight,
            bins=bins,
        )
        self._train: pl.DataFrame | None = train  # type: ignore[assignment]
        self._rows: pl.DataFrame | None = None
        self._spill: _spill.Spill | None = None
        if spill is not None and task != "ranking":
            raise InvalidParameterError(
                f"spill= is available for the ranking task; the {task} task keeps its state "
                "in memory"
            )
        if spill is not None:
            self._spill = _spill.Spill.create(spill, self._def.to_json(), spill_buckets)
        elif spill_buckets is not None:
            raise InvalidParameterError("spill_buckets= needs spill= (a directory)")

    # -- the state ---------------------------------------------------------------------

    @property
    def _keyed(self) -> bool:
        """Rows kept as they are (keyed by series/time or query/item), not re-aggregated."""
        d = self._def
        return d.task == "forecast" or (d.task == "ranking" and d.columns.get("item") is not None)

    def _value_columns(self) -> list[str]:
        d = self._def
        if self._keyed:
            return []
        if d.task == "ranking":
            return [N]
        if d.bins is not None:
            return [W, LL, SQ]
        return [W]

    def _row_columns(self) -> list[str]:
        """The columns of the state rows."""
        d = self._def
        if d.bins is not None:
            return [*d.by, LABEL01, BIN, ABOVE, W, LL, SQ]
        if self._keyed or d.task == "ranking":
            return self._inputs() + self._value_columns()
        return [c for c in self._inputs() if c != d.weight] + [W]

    def _inputs(self) -> list[str]:
        """The input columns a batch must have (columns, weight, by)."""
        d = self._def
        cols = [c for key in _COLUMNS[d.task] for c in _names(d.columns.get(key))]
        if d.task == "forecast":
            for c in (d.options.get("quantiles") or {}).values():
                cols.append(c)
            cols += list(d.options.get("interval") or ())
        if d.weight is not None:
            cols.append(d.weight)
        return list(dict.fromkeys([*d.by, *cols]))

    def _check(self, lf: pl.LazyFrame) -> list[pl.Expr]:
        """Column problems now; the row checks as aggregations to collect with the state."""
        d = self._def
        schema = lf.collect_schema()
        args: dict[str, Any] = {key: d.columns.get(key) for key in _COLUMNS[d.task]}
        roles: dict[str, Role] = dict(_ROLES[d.task])
        if d.task == "binary":
            args["pos_label"] = d.options["pos_label"]
            if d.options["probability"]:
                roles["score"] = "proba"
        args["weight"] = d.weight
        roles["weight"] = "weight"
        problems = column_problems(schema, args, roles)
        problems += [f'column "{b}" (argument by=) not found' for b in d.by if b not in schema]
        for c in (d.options.get("quantiles") or {}).values() if d.task == "forecast" else ():
            if c not in schema:
                problems.append(f'column "{c}" (argument quantiles=) not found')
        if problems:
            raise DataValidationError(problems[0])
        self._checks = row_checks(schema, args, roles)
        return check_aggs(self._checks, examples=False)

    def _batch_rows(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        """The state rows of one batch, as a lazy query."""
        d = self._def
        cols = self._inputs()
        w = pl.col(d.weight).cast(pl.Float64) if d.weight is not None else pl.lit(1.0)
        if self._keyed:
            return lf.select(cols)
        keys = [c for c in cols if c != d.weight]
        if d.task == "ranking":
            # tied items of one query with the same grade are interchangeable (ties="average")
            keys = cols
            return lf.group_by(keys).agg(pl.len().cast(pl.Int64).alias(N))
        if d.bins is None:
            total = w.sum() if d.weight is not None else pl.len().cast(pl.Float64)
            return lf.group_by(keys).agg(total.alias(W))
        # binned binary: (group, label, bin, score >= threshold) with exact sums
        from polars_eval.metrics.binary import LOGLOSS_EPS

        label, score = d.columns["label"], d.columns["score"]
        y = binary_label(pl.col(label), d.options["pos_label"])
        s = to_float(score)
        p = s.clip(LOGLOSS_EPS, 1.0 - LOGLOSS_EPS)
        ll = -(y * p.log() + (1.0 - y) * (1.0 - p).log())
        valid = y.is_not_null() & s.is_not_null() & w.is_not_null()
        return (
            lf.with_columns(
                y.alias(LABEL01),
                score_bin(s, d.bins, probability=d.options["probability"]).alias(BIN),
                (s >= d.options["threshold"]).alias(ABOVE),
                pl.when(valid).then(w).alias(W),
                pl.when(valid).then(w * ll).alias(LL),
                pl.when(valid).then(w * (s - y) ** 2).alias(SQ),
            )
            .group_by([*d.by, LABEL01, BIN, ABOVE])
            .agg(pl.col(W).sum(), pl.col(LL).sum(), pl.col(SQ).sum())
        )

    def update(self, data: pl.DataFrame | pl.LazyFrame | pa.Table) -> Evaluation:
        """Add the rows of ``data`` (a LazyFrame is collected with the streaming engine).

        Rows are validated as the task method validates them (the weight here; the
        task's own checks, such as labels in {0, 1}, at :meth:`compute` in exact mode and
        here in binned mode); a bad batch raises and leaves the state unchanged.
        Returns ``self``.
        """
        if self._spill is not None:
            _spill.update(self, _lazy(data))
        else:
            self._add(self._state_rows(data))
        return self

    def _state_rows(self, data: pl.DataFrame | pl.LazyFrame | pa.Table) -> pl.DataFrame:
        """The validated state rows of one batch (what :meth:`update` adds)."""
        lf = _lazy(data)
        checks = self._check(lf)
        rows_q = self._batch_rows(lf)
        if checks:
            rows, bad = pl.collect_all([rows_q, lf.select(checks)], engine="streaming")
            raise_for_checks(bad, self._checks, per_row=False, source=lf)
        else:
            rows = rows_q.collect(engine="streaming")
        return rows

    def _add(self, rows: pl.DataFrame) -> None:
        if self._rows is None or self._rows.height == 0:
            self._rows = rows
        else:
            self._rows = self._merge_rows([self._rows, rows])

    def _merge_rows(self, parts: Sequence[pl.DataFrame]) -> pl.DataFrame:
        """State rows of disjoint rows merged: value columns summed per key (or kept)."""
        merged = pl.concat(parts, how="vertical_relaxed")
        values = self._value_columns()
        if values:
            keys = [c for c in merged.columns if c not in values]
            merged = merged.group_by(keys, maintain_order=True).agg(pl.col(values).sum())
        return merged

    def merge(self, other: Evaluation) -> Evaluation:
        """Add the state of ``other`` (the same definition, disjoint rows). Returns ``self``."""
        if not isinstance(other, Evaluation):
            raise InvalidParameterError(f"merge() takes an Evaluation; got {type(other).__name__}")
        diff = self._def.differences(other._def)
        if self._def.task == "forecast" and not _same_frame(self._train, other._train):
            diff.append("train: different training frames")
        if diff:
            raise InvalidParameterError(
                "cannot merge evaluations of different definitions: " + "; ".join(diff)
            )
        if self._spill is not None or other._spill is not None:
            _spill.merge(self, other)
        elif other._rows is not None:
            self._add(other._rows)
        return self

    @property
    def state(self) -> pl.DataFrame:
        """The merged state: a definition row, then one row per distinct key.

        Write it with ``write_parquet`` and read it back with :meth:`from_state`.
        """
        head = pl.DataFrame({PART: ["def"], DEF: [self._def.to_json()]})
        parts = [head]
        rows = _spill.rows(self) if self._spill is not None else self._rows
        if rows is not None:
            parts.append(rows.with_columns(pl.lit("rows").alias(PART)))
        if self._train is not None:
            parts.append(self._train.with_columns(pl.lit("train").alias(PART)))
        return pl.concat(parts, how="diagonal_relaxed")

    @classmethod
    def from_state(cls, state: pl.DataFrame) -> Evaluation:
        """The evaluation a :attr:`state` frame describes (after a parquet round trip too)."""
        if not isinstance(state, pl.DataFrame) or PART not in state.columns or DEF not in state:
            raise InvalidParameterError(
                "from_state() takes the frame of an Evaluation's .state (columns "
                f'"{PART}" and "{DEF}" are missing)'
            )
        head = state.filter(pl.col(PART) == "def")
        if head.height != 1:
            raise InvalidParameterError("a state frame holds exactly one definition row")
        definition = _Definition.from_json(head[DEF].item())
        ev = cls.__new__(cls)
        ev._def = definition
        rows = state.filter(pl.col(PART) == "rows")
        train = state.filter(pl.col(PART) == "train")
        columns = ev._row_columns()
        ev._rows = rows.select(columns) if rows.height else None
        ev._train = None
        ev._spill = None
        if definition.task == "forecast" and train.height:
            names = [definition.columns[k] for k in ("series", "time", "actual")]
            ev._train = train.select(_names(definition.columns["series"]) + names[1:])
        return ev

    @classmethod
    def from_spill(cls, path: str | os.PathLike[str]) -> Evaluation:
        """The spilled evaluation written in the directory ``path`` (``spill=``), e.g. in
        another process: :meth:`update` adds to it, :meth:`merge` merges it."""
        store = _spill.Spill.open(path)
        ev = cls.__new__(cls)
        ev._def = _Definition.from_json(store.definition)
        ev._rows = ev._train = None
        ev._spill = store
        return ev

    # -- finalize ----------------------------------------------------------------------

    def compute(self) -> pl.DataFrame:
        """The task method's table (one row per group) on every row seen so far.

        Raises ``ValueError`` when nothing was seen and there is no ``by``, as the task
        method does on an empty frame.
        """
        d = self._def
        spilled = self._spill is not None and bool(self._spill.files())
        if self._rows is None and not spilled and not d.by:
            raise UndefinedMetricError(f"no rows to evaluate: this {d.task} evaluation saw none")
        if self._rows is None:
            empty = pl.DataFrame(schema=self._empty_schema())
            rows = empty
        else:
            rows = self._rows
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = _spill.compute(self) if spilled else self._finalize(rows)
        _rewarn(caught, d.metrics)
        if d.metrics is not None:
            missing = [m for m in d.metrics if m not in out.columns]
            if missing:
                raise InvalidParameterError(
                    f"metrics {missing} are not columns of the {d.task} task; "
                    f"available: {[c for c in out.columns if c not in d.by]}"
                )
            out = out.select([*d.by, *d.metrics])
        return out

    def _finalize(self, rows: pl.DataFrame) -> pl.DataFrame:
        """The task method on the state rows, the summed weight as the weight."""
        d = self._def
        by = list(d.by) or None
        opts = {k: v for k, v in d.options.items()}
        cols = dict(d.columns)
        if d.task == "binary" and d.bins is not None:
            out = self._compute_binned(rows, by)
        elif d.task == "binary":
            out = rows.eval.binary(cols["label"], cols["score"], weight=W, by=by, **opts)
        elif d.task == "regression":
            out = rows.eval.regression(cols["actual"], cols["pred"], weight=W, by=by, **opts)
        elif d.task == "multiclass":
            out = rows.eval.multiclass(
                cols["label"], pred=cols["pred"], proba=cols["proba"], weight=W, by=by, **opts
            )
        elif d.task == "forecast":
            out = rows.eval.forecast(
                cols["actual"],
                cols["forecast"],
                series=cols["series"],
                time=cols["time"],
                train=self._train,
                weight=d.weight,
                by=by,
                **opts,
            )
        else:
            if not self._keyed:
                values = [c for c in rows.columns if c != N]
                rows = rows.with_columns(pl.col(values).repeat_by(N)).explode(values)
            out = rows.eval.ranking(**_spill.table_request(d))
        return out

    def _empty_schema(self) -> dict[str, pl.DataType]:
        # an evaluation that saw no rows: the task method on an empty frame
        schema: dict[str, pl.DataType] = {c: pl.Float64 for c in self._row_columns()}
        types = {N: pl.Int64, BIN: pl.Int32, ABOVE: pl.Boolean}
        schema.update({c: t for c, t in types.items() if c in schema})
        return schema

    def _compute_binned(self, rows: pl.DataFrame, by: list[str] | None) -> pl.DataFrame:
        """Sort-based metrics over the bins; log loss, Brier and threshold metrics exact."""
        from polars_eval._core import registry as _registry
        from polars_eval.metrics import binary as b

        d = self._def
        n_bins = d.bins
        assert n_bins is not None
        rep = (pl.col(BIN) + 0.5) / n_bins if d.options["probability"] else pl.col(BIN)
        scored = rows.with_columns(rep.cast(pl.Float64).alias("__pe_rep"))
        out = scored.eval.binary(
            LABEL01,
            "__pe_rep",
            weight=W,
            by=by,
            threshold=d.options["threshold"],
            probability=d.options["probability"],
            baseline=d.options["baseline"],
        )
        order = out.columns
        exact = [
            _registry.get(name).fn(LABEL01, pred=ABOVE, weight=W).alias(name)
            for name in b.THRESHOLD_FORMULAS
            if name in out.columns
        ]
        total = pl.col(W).sum()
        if "logloss" in out.columns:
            exact.append(pl.when(total > 0).then(pl.col(LL).sum() / total).alias("logloss"))
        if "brier" in out.columns:
            exact.append(pl.when(total > 0).then(pl.col(SQ).sum() / total).alias("brier"))
        sums = scored.group_by(by).agg(exact) if by else scored.select(exact)
        replaced = [c for c in sums.columns if c not in (by or [])]
        if by:
            out = out.drop(replaced).join(sums, on=by, how="left", nulls_equal=True)
        else:
            out = out.drop(replaced).with_columns(sums)
        return out.select(order)


def _lazy(data: pl.DataFrame | pl.LazyFrame | pa.Table) -> pl.LazyFrame:
    """A batch given to :meth:`Evaluation.update` as a LazyFrame."""
    if isinstance(data, pa.Table):
        data = pl.from_arrow(data)  # type: ignore[assignment]
    if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
        raise InvalidParameterError(
            "update() takes a polars DataFrame or LazyFrame or a pyarrow Table; "
            f"got {type(data).__name__}"
        )
    return data.lazy()


def _rewarn(caught: list[warnings.WarningMessage], metrics: Sequence[str] | None) -> None:
    """Warn again what the task method warned, only about the ``metrics`` kept."""
    for item in caught:
        message = str(item.message)
        if metrics is not None and issubclass(item.category, UndefinedMetricWarning):
            parts = [p for p in message.split("; ") if p.split(" ", 1)[0] in metrics]
            if not parts:
                continue
            message = "; ".join(parts)
        warnings.warn(message, item.category, stacklevel=3)


def _same_frame(a: pl.DataFrame | None, b: pl.DataFrame | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.equals(b)
