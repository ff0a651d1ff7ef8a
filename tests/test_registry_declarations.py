"""Facts about metrics are declared where each metric is registered (issue 21): no hand list
of metric names outside ``polars_eval/metrics/``.

The expected sets below are facts of the definitions (logarithmic errors need inputs
> -1; a correlation is undefined for a constant prediction; AUC and Gini are Mann–Whitney
statistics; 11-point AP's exact expectation over tie orders grows as m⁴), written here,
not read from the registry.
"""

from __future__ import annotations

import ast
from pathlib import Path

import polars_eval  # noqa: F401  (registers every metric)
from polars_eval._core.registry import REGISTRY, by_task
from polars_eval.tasks.ranking import _in_default_table
from polars_eval.tasks.regression import _log_domain

PACKAGE = Path(polars_eval.__file__).parent

# Module constants of metric names not yet turned into declarations (issue 21, item 4),
# "module:constant". The test fails when one is converted and not removed here, or when a
# new one appears. The trec ones list trec_eval's measure vocabulary (P_k, ndcg_cut_k ...).
PENDING = {
    "io/_trec_measures.py:GAIN_MEASURES",
    "io/trec.py:DEFAULT_MEASURES",
    "io/trec.py:GAIN_MEASURES",
    "io/trec.py:PLAIN_MEASURES",
    "io/trec.py:SPEC_OF",
    "report/html.py:SMALL_TABLES",
}


def test_log_domain_is_the_logarithmic_errors() -> None:
    assert {i.name for i in by_task("regression") if _log_domain(i)} == {"msle", "rmsle"}


def test_no_baseline_is_the_correlations() -> None:
    declared = {i.name for i in by_task("regression") if i.extra.get("baseline") is False}
    assert declared == {"pearson", "spearman", "kendall_tau", "r2_pearson"}


def test_auc_kernel_is_auc_and_gini() -> None:
    assert {i.name for i in REGISTRY.values() if i.extra.get("auc_kernel")} == {"auc", "gini"}


def test_costly_ties_leave_ap_11pt_out_of_the_average_ties_table() -> None:
    assert {i.name for i in REGISTRY.values() if i.extra.get("costly_ties")} == {"ap_11pt"}
    assert not _in_default_table("ap_11pt", "average")
    assert _in_default_table("ap_11pt", "first")
    assert _in_default_table("ndcg", "average")


def test_exact_when_binned_is_the_threshold_metrics_and_the_row_sums() -> None:
    from polars_eval.tasks.binary import EXACT_WHEN_BINNED

    assert EXACT_WHEN_BINNED == {
        *("accuracy", "balanced_accuracy", "cohen_kappa", "f1", "fdr", "fnr", "fpr"),
        *("jaccard", "mcc", "negative_likelihood_ratio", "npv", "positive_likelihood_ratio"),
        *("precision", "recall", "specificity", "youden_j", "logloss", "brier"),
    }


def test_proportions_are_declared_with_their_counts() -> None:
    from polars_eval.stats.intervals import PROPORTIONS

    # each a share of confusion counts (Wilson 1927's interval applies)
    assert PROPORTIONS == {
        "accuracy": (("tp", "tn"), ("tp", "fp", "tn", "fn")),
        "precision": (("tp",), ("tp", "fp")),
        "recall": (("tp",), ("tp", "fn")),
        "specificity": (("tn",), ("tn", "fp")),
        "fpr": (("fp",), ("fp", "tn")),
        "fnr": (("fn",), ("fn", "tp")),
        "fdr": (("fp",), ("fp", "tp")),
        "npv": (("tn",), ("tn", "fn")),
    }


def test_forecast_declarations() -> None:
    from polars_eval.tasks import forecast

    assert forecast.POINT_METRICS == ("mae", "mse", "rmse", "bias", "mape", "smape", "wape")
    assert forecast.SCALED_METRICS == ("mase", "rmsse")
    # MASE scales the MAE's terms, RMSSE and MSSE the MSE's (Hyndman & Koehler 2006; M5)
    assert forecast.SCALED_LATE == {"mase": "mae", "rmsse": "mse", "msse": "mse"}
    assert forecast.TRAIN_SCALED == {
        "mase": "mase_scale",
        "rmsse": "rmsse_scale",
        "msse": "rmsse_scale",
        "spis": "spis_scale",
        "scaled_quantile_loss": "mase_scale",
        "scaled_mqloss": "mase_scale",
    }


def test_report_chart_declarations() -> None:
    from polars_eval.report import charts

    assert charts.AT_K_METRICS == ("ndcg", "precision", "recall", "map", "mrr", "hit_rate")
    assert charts.LEAD_METRICS == ("mae", "rmse", "bias")
    from polars_eval.report import tables

    assert tables.PER_CLASS == ("multiclass_precision", "multiclass_recall", "multiclass_f1")


def _literals_of_metric_names(path: Path) -> list[str]:
    """Module constants (``NAME = (...)``, a tuple, list, set, frozenset or a dict keyed by
    strings) holding two or more registered metric names; ``__all__`` aside."""
    names = set(REGISTRY)
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        target = [t.id for t in targets if isinstance(t, ast.Name)]
        if not target or target[0] == "__all__":
            continue
        if isinstance(value, ast.Call) and value.args:  # frozenset([...]), set((...))
            value = value.args[0]
        if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
            items = value.elts
        elif isinstance(value, ast.Dict):
            items = [k for k in value.keys if k is not None]
        else:
            continue
        strings = {
            e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
        if len(strings & names) >= 2:
            found.append(target[0])
    return found


def test_no_hand_list_of_metric_names_outside_metrics() -> None:
    holding = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("metrics/"):
            continue
        holding |= {f"{rel}:{name}" for name in _literals_of_metric_names(path)}
    assert holding == PENDING
