"""The binary table in binned mode: a table of bins and sums (``bins=N``, SPEC §10).

``pe.Evaluation("binary", ..., bins=N)`` and ``df.eval.binary(..., bins=N)`` keep, per
``by`` group, one row per (label, score bin, side of the threshold) with sums: the
summed weight and the sums of the states of the metrics that ``bins=`` keeps exact and
that read the score itself (log loss, Brier score: a bin does not know its scores). Two
such tables of disjoint rows merge by summing per key, so the state is bounded by the
groups and the bins, never by the rows.

:func:`bins_table` builds it from the arguments of ``df.eval.binary`` as two tables of
the table layer (:mod:`polars_eval._core.table`):

- ``bins``: the bins and sums of a frame's rows (:meth:`BinsTable.partition`: its ``by``
  the group columns and the bin keys, its states the sums, merged by summing:
  :meth:`BinsTable.merge`);
- ``over``: the binary table evaluated over the bins rows (:meth:`BinsTable.finalize`,
  the one runner ``run``): the sort-based metrics over the bins (each bin's score its
  representative, :func:`~polars_eval.tasks.binary.binned_representative`), the
  threshold metrics over the side of the threshold (exact), and the metrics of the sums
  finalized by their own specs from the summed states (exact).

Every formula is the registered metric's own: the sums are the row values of the
metrics' states, the finalizers their specs'. ``scale/binned.py`` reduces the same rows
faster (packed keys, ``bincount``) for ``pe.Evaluation`` over a lake.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from polars_eval._core import registry as _registry
from polars_eval._core.registry import MetricInfo
from polars_eval._core.spec import MetricSpec, State
from polars_eval._core.table import Checks, Specs, Table, run
from polars_eval._exprs import binary_label, to_float
from polars_eval.exceptions import UndefinedMetricError
from polars_eval.metrics._curve import score_bin
from polars_eval.tasks.binary import EXACT_WHEN_BINNED, bin_score, binary_table, summary_infos

LABEL = "__pe_y"  # the 0/1 label
BIN = "__pe_bin"  # the bin of the score
ABOVE = "__pe_above"  # score >= threshold
KEYS = (LABEL, BIN, ABOVE)
SUMS = ("__pe_w", "__pe_ll", "__pe_sq")
"""The sums of a bin (state format version 3): the distinct states of the exact metrics
that read the score (:func:`score_sums`), in order: the summed weight of the rows used,
the summed weighted log loss and squared error terms."""
W = SUMS[0]


def _exact(info: MetricInfo) -> bool:
    """``bins=`` keeps the metric exact (the others run over the bins)."""
    return info.name in EXACT_WHEN_BINNED


def _reads_side(info: MetricInfo) -> bool:
    """An exact metric of the side of the threshold: it takes a hard prediction."""
    return "pred" in info.signature.parameters


def score_sums(
    label: Any, score: Any, weight: str | None, pos_label: Any
) -> tuple[dict[str, pl.Expr], dict[str, MetricSpec], dict[bytes, str]]:
    """The row values summed per bin (by the names of :data:`SUMS`); the specs of the
    exact metrics that read the score, bound to the rows; and the sum that holds each
    of their states (by the state's key: their distinct states are the sums, in order)."""
    infos = [i for i in _registry.by_task("binary") if _exact(i) and not _reads_side(i)]
    available = {"label": label, "score": score, "weight": weight, "pos_label": pos_label}
    specs = {info.name: _registry.bind(info, available) for info in infos}
    values: dict[bytes, pl.Expr] = {}
    for spec in specs.values():
        for state in spec.states.values():
            assert state.kind == "sum", "a binned sum is a sum state"
            values.setdefault(state.key[1], state.value)
    assert len(values) == len(SUMS), "the sums of the binned state (format version 3)"
    columns = dict(zip(values, SUMS, strict=True))
    sums = {columns[k]: v.cast(pl.Float64).fill_null(0.0) for k, v in values.items()}
    return sums, specs, columns


def _lifted(spec: MetricSpec, columns: Mapping[bytes, str]) -> MetricSpec:
    """``spec`` over the bins rows: each of its (sum) states read from the column that
    holds its sum per bin, finalized as the spec finalizes."""
    states = {k: State(pl.col(columns[s.key[1]])) for k, s in spec.states.items()}
    return MetricSpec(states, spec.finalize, spec.undefined, spec.extra)


@dataclass(frozen=True)
class BinsTable:
    """The bins and sums of one binary definition and the table over them (see the
    module's docstring): ``bins`` partitions and merges, ``over`` finalizes."""

    bins: Table
    over: Table
    rows: Mapping[str, pl.Expr]  # the bin keys of a row, by name (:data:`KEYS`)
    sums: Mapping[str, pl.Expr]  # the row values summed per bin, by name (:data:`SUMS`)
    n_bins: int

    @property
    def checks(self) -> Checks:
        """The validation of the input rows (their roles, as the task method's)."""
        return self.bins.checks

    @property
    def by(self) -> list[str]:
        """The group columns."""
        return [b for b in self.bins.by if b not in KEYS]

    @property
    def columns(self) -> list[str]:
        """The columns of the bins rows."""
        return [*self.by, *KEYS, *SUMS]

    @property
    def states(self) -> Mapping[str, State]:
        """Each sum column and its state (merged by summing)."""
        return self.bins.states

    def partition(self, frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
        """The bins rows of ``frame``'s rows (lazy): one row per (group, bin key)."""
        return self.bins.partition(frame).select(self.columns)

    def merge(self, states: pl.DataFrame) -> pl.DataFrame:
        """Stacked bins rows summed per (group, bin key)."""
        return self.bins.merge(states)

    def finalize(self, states: pl.DataFrame, **_: Any) -> pl.DataFrame:
        """The table over (stacked) bins rows: one row per group."""
        by = self.by
        usable = pl.col(LABEL).is_not_null() & pl.col(BIN).is_not_null() & (pl.col(W) > 0)
        if not by and not states.select(usable.any()).item():
            raise UndefinedMetricError(
                "no rows to evaluate: no row seen has a label, a score and a positive "
                "weight; every metric is undefined"
            )
        out = run(self.over, states)
        assert isinstance(out, pl.DataFrame)
        return out


def bins_table(a: Mapping[str, Any]) -> BinsTable:
    """The binned table of ``df.eval.binary(..., bins=N)`` from the arguments of
    :meth:`~polars_eval.tasks.binary.BinaryMethods.binary` by name (``bins`` among
    them): every column of the task table (``metrics=`` is a selection the caller makes
    of them), from the bins of the rows and their sums."""
    label, score, weight, pos_label = a["label"], a["score"], a["weight"], a["pos_label"]
    n_bins, threshold, probability = a["bins"], a["threshold"], a["probability"]
    exact = binary_table({**a, "bins": n_bins, "metrics": None, "grouping": None})
    y, s = binary_label(label, pos_label), to_float(score)
    b = score_bin(s, n_bins, probability=probability)
    # a null score has a null bin and side (the rows are validated: no NaN score)
    rows = {LABEL: y.cast(pl.Float64), BIN: b, ABOVE: s >= threshold}
    sums, specs, columns = score_sums(label, score, weight, pos_label)
    by = list(exact.by)
    bins = Table(
        Specs(
            {},
            sums=[value.sum().alias(name) for name, value in sums.items()],
            stages=[[expr.alias(name) for name, expr in rows.items()]],
        ),
        Checks(exact.checks.inputs, exact.checks.args),
        by=[*by, *KEYS],
    )
    over = _over(a, by, specs, columns)
    return BinsTable(bins, over, rows, sums, n_bins)


def _over(
    a: Mapping[str, Any],
    by: Sequence[str],
    specs: Mapping[str, MetricSpec],
    columns: Mapping[bytes, str],
) -> Table:
    """The binary table over the bins rows: the label, the bin's representative score
    and the summed weight as its rows; the exact metrics of the side (a hard prediction)
    and of the sums (their specs over the summed states)."""
    n_bins, threshold, probability = a["bins"], a["threshold"], a["probability"]
    score = bin_score(pl.col(BIN), n_bins, probability=probability)
    binned = {**a, "label": LABEL, "score": score, "weight": W, "pos_label": None}
    binned |= {"bins": None, "metrics": None, "grouping": None, "validate": False, "by": by}
    table = binary_table(binned)
    assert isinstance(table.query, Specs)
    side = {"label": LABEL, "score": None, "pred": pl.col(ABOVE), "threshold": threshold}
    side |= {"weight": W, "pos_label": None}
    chosen = dict(table.query.specs)
    for info in summary_infos(probability):
        if not _exact(info):
            continue
        if _reads_side(info):
            chosen[info.name] = _registry.bind(info, side)
        else:
            chosen[info.name] = _lifted(specs[info.name], columns)
    return replace(table, query=replace(table.query, specs=chosen))


def evaluation_state(d: Any, trained: bool) -> tuple[Table | BinsTable | None, Checks]:
    """What ``pe.Evaluation`` keeps for a binary definition ``d`` (the task's hook,
    :class:`~polars_eval._core.tasks.Task`): with ``bins=`` the bins table (with windows,
    the binary table of the bins' scores, whose states per step are at most ``bins``
    points), else the binary table where its states are bounded (the one-pass metrics),
    else None: the rows (sorted scores; the baseline's constant predictor, a function of
    each group's rows). The checks: the table's where its states are kept, else the
    input roles (the task method checks the rest when it runs on the rows)."""
    a = d.arguments(metrics=d.metrics, bins=d.bins)
    baseline = a["baseline"]
    if d.bins is not None and (d.windows is None or baseline):
        bins = bins_table(a)
        return bins, bins.checks
    table = binary_table({**a, "metrics": None} if baseline else a)
    if not baseline and (d.bins is not None or table.bounded):
        return table, table.checks
    return None, Checks(table.checks.inputs, table.checks.args)
