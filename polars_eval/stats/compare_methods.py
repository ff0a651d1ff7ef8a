"""The ``.eval`` methods of SPEC §14 that compare systems: ``compare`` and ``dm_test``."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import polars as pl

from polars_eval._core.tasks import TASKS
from polars_eval._typing import IntoExpr
from polars_eval.stats import compare_tasks as _tasks
from polars_eval.stats import diebold_mariano as _dm
from polars_eval.tasks._methods import frame_method


class CompareMethods:
    """Comparisons of several systems evaluated on the same units."""

    _frame: pl.DataFrame | pl.LazyFrame

    def compare(
        self,
        task: str,
        *args: IntoExpr | Sequence[str],
        baseline: str | None = None,
        test: str = "t",
        correction: str | None = "holm",
        level: float = 0.95,
        n_resamples: int = 10_000,
        seed: int = 0,
        metrics: str | Sequence[str] | None = None,
        by: str | Sequence[str] | None = None,
        system: str | None = None,
        unit: str | Sequence[str] | None = None,
        missing: str | None = None,
        validate: bool = True,
        **options: Any,
    ) -> pl.DataFrame | pl.LazyFrame:
        """Compare several systems evaluated on the same units, metric by metric.

        ``task`` is ``"ranking"``, ``"forecast"``, ``"binary"``, ``"regression"`` or
        ``"multiclass"``; its column arguments (by position, in the task method's order,
        or by keyword) and options (``query=``, ``k=``, ``series=``, ``time=``,
        ``train=``, ``threshold=`` ...) are those of ``df.eval.<task>``. The systems are
        named in one of two forms:

        * wide: a list of columns of the task's system argument, one per system:
          ``score=["bm25", "dense"]`` (ranking, binary), ``forecast=[...]``,
          ``pred=[...]`` (regression, multiclass; or multiclass ``proba=`` a list of List
          columns);
        * long: ``system="model"`` a column naming each row's system, and one column for
          the argument; each system's rows cover the same units.

        The baseline is the first system (long form: first to appear) unless
        ``baseline=`` names one. Units: queries (``query=``) for ranking, series
        (``series=``) for forecast; rows for binary, regression and multiclass, or the
        groups of ``unit=`` (a column or columns). Each system's value per unit comes from
        its task table (``df.eval.ranking(per_query=True)``, ``df.eval.forecast(
        per_series=True)``, ``df.eval.<task>(by=unit)``, validated as there), so a value
        equals the table's. With rows as units, a metric must be a mean over rows
        (accuracy, log loss, Brier, MSE, MAE ...); AUC, RMSE, F1 and the other metrics of
        all rows are compared by ``test="bootstrap"`` (rows resampled, as
        ``df.eval.bootstrap``) or, for AUC, ``test="delong"``; without ``metrics=`` a
        per-unit test takes the table's metrics that are means over rows.

        ``test=``: ``"t"`` (paired t-test, = ``scipy.stats.ttest_rel``; interval: the t
        interval of the mean difference), ``"randomization"`` (Fisher's: random sign
        flips of the differences, p = (1 + b) / (1 + n_resamples)), ``"bootstrap"``
        (paired bootstrap of the mean difference, percentile interval, p = twice the
        smaller share of resampled differences on either side of 0, at most 1),
        ``"wilcoxon"`` (= ``scipy.stats.wilcoxon(d)``) or ``"sign"`` (exact binomial test
        of wins against losses, ties left out); the interval of the last three is the
        paired bootstrap's percentile interval of the mean difference (``n_resamples``,
        ``seed``). ``correction=``: ``"holm"``, ``"bonferroni"``, ``"bh"`` (Benjamini–
        Hochberg) or None, over the systems compared on one metric within one ``by``
        group (as ``statsmodels.stats.multitest.multipletests``).

        A unit that some system lacks (a query missing from one run) is an error naming
        the system and the count, unless ``missing="zero"`` (it scores 0, as trec_eval's
        ``-c``) or ``missing="drop"`` (only the units every system has). A unit whose
        value is undefined for a system (a query with no relevant item) is left out of
        that pair's test; ``n_units`` counts those that remain, and ``value`` /
        ``baseline_value`` are the means over them (the table's values when every unit is
        defined), so ``difference`` is the mean of the per-unit differences. Two values
        within 1e-12 of each other (relative) are a tie. ``weight=`` is not taken: every
        unit counts alike.

        Returns one row per (``by`` group, metric, system other than the baseline):
        ``metric`` (the task table's column, e.g. ``"ndcg@10"``), ``system``,
        ``baseline``, ``value``, ``baseline_value``, ``difference`` (value − baseline
        value), ``lower`` and ``upper`` (the difference's interval at ``level``),
        ``p_value``, ``p_adjusted``, ``wins``, ``ties``, ``losses`` (units where the system
        is better than, equal to, worse than the baseline in the metric's direction; null
        for a metric without one, and for a metric of all rows), ``n_units``; the ``by``
        columns first. Identical systems get p = 1 and the interval [0, 0]. A LazyFrame
        gives a LazyFrame (computed at ``collect()``).

        References
        ----------
        Student (1908). The probable error of a mean. Biometrika 6(1). Fisher, R. A.
        (1935). The Design of Experiments. Wilcoxon, F. (1945). Individual comparisons by
        ranking methods. Biometrics Bulletin 1(6). Efron, B., Tibshirani, R. (1993). An
        Introduction to the Bootstrap, §16.4. Smucker, M. D., Allan, J., Carterette, B.
        (2007). A comparison of statistical significance tests for information retrieval
        evaluation. CIKM. Holm, S. (1979). A simple sequentially rejective multiple test
        procedure. Scand. J. Statist. 6(2). Benjamini, Y., Hochberg, Y. (1995).
        Controlling the false discovery rate. JRSS B 57(1).

        Examples
        --------
        Four queries of two items; system ``b`` puts the relevant item first on every
        query, ``a`` on two of them (reciprocal ranks 1, ½, 1, ½):

        >>> import polars as pl
        >>> import polars_eval as pe
        >>> df = pl.DataFrame({"q": [1, 1, 2, 2, 3, 3, 4, 4], "rel": [1, 0] * 4,
        ...                    "a": [0.9, 0.1, 0.2, 0.8, 0.7, 0.3, 0.4, 0.6],
        ...                    "b": [0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.6, 0.4]})
        >>> out = df.eval.compare("ranking", "rel", score=["a", "b"], query="q", metrics=["mrr"])
        >>> out.select("metric", "system", "baseline", "value", "baseline_value", "difference")
        shape: (1, 6)
        ┌────────┬────────┬──────────┬───────┬────────────────┬────────────┐
        │ metric ┆ system ┆ baseline ┆ value ┆ baseline_value ┆ difference │
        │ ---    ┆ ---    ┆ ---      ┆ ---   ┆ ---            ┆ ---        │
        │ str    ┆ str    ┆ str      ┆ f64   ┆ f64            ┆ f64        │
        ╞════════╪════════╪══════════╪═══════╪════════════════╪════════════╡
        │ mrr    ┆ b      ┆ a        ┆ 1.0   ┆ 0.75           ┆ 0.25       │
        └────────┴────────┴──────────┴───────┴────────────────┴────────────┘
        >>> out.select("wins", "ties", "losses", "n_units").row(0)
        (2, 2, 0, 4)

        The differences are (0, ½, 0, ½): t = 0.25 / (0.2887 / 2) = √3, three degrees of
        freedom, and the t interval 0.25 ± 3.1824 · 0.1443 = 0.25 ± 0.4593:

        >>> out.select(pl.col("p_value", "lower", "upper").round(4)).row(0)
        (0.1817, -0.2093, 0.7093)
        >>> df.eval.compare("ranking", "rel", score=["a", "b"], query="q", metrics=["mrr"],
        ...                 test="sign").select("p_value").item()
        0.5
        """
        return _tasks.compare(
            self._frame,
            task,
            args,
            baseline=baseline,
            system=system,
            unit=unit,
            by=by,
            options=options,
            test=test,
            correction=correction,
            level=level,
            n_resamples=n_resamples,
            seed=seed,
            metrics=metrics,
            missing=missing,
            validate=validate,
        )

    dm_test = frame_method(_dm.dm_test)


def _compare_overloads(namespace: type) -> list[inspect.Signature]:
    """``compare``'s signature for each task, for the type stub: the task's column arguments
    (the systems' also a list of columns) and its table's options (``df.eval.<task>``'s,
    less those compare does not take), then the generic form."""
    own = inspect.signature(CompareMethods.compare)
    mine = [p for p in own.parameters.values() if p.kind is p.KEYWORD_ONLY]
    keyword, positional = inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
    out = []
    for task in TASKS.values():
        table = inspect.signature(getattr(namespace, task.name)).parameters
        data = _tasks.positional_args(task.name)
        taken = {"self", *data, *(p.name for p in mine), *_tasks.NOT_OPTIONS}
        params = [
            own.parameters["self"],
            own.parameters["task"].replace(annotation=f'Literal["{task.name}"]'),
        ]
        for name in data:
            systems = name in _tasks.SYSTEM_ARGS[task.name]
            ann = f"{table[name].annotation} | Sequence[str]" if systems else table[name].annotation
            params.append(inspect.Parameter(name, positional, default=None, annotation=ann))
        params += mine
        params += [p.replace(kind=keyword) for p in table.values() if p.name not in taken]
        out.append(own.replace(parameters=params))
    return [*out, own]


CompareMethods.compare.__stub_overloads__ = _compare_overloads  # type: ignore[attr-defined]
