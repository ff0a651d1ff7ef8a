"""Facts about metrics are declared where each metric is registered (issue 21): no hand list
of metric names outside ``polars_eval/metrics/``.

The expected sets below are facts of the definitions (logarithmic errors need inputs
> -1; a correlation is undefined for a constant prediction; AUC and Gini are Mann–Whitney
statistics; 11-point AP's exact expectation over tie orders grows as m⁴; trec_eval's
``map`` is the mean average precision), written here, not read from the registry.

"In the default table" is decided one way: the ``summary=`` declaration at ``@register``
(one key for membership; the summary *text* of a metric is its docstring's first line,
``MetricInfo.description``), read by ``registry.default_table(task, **options)`` alone.
``summary=True`` is its task's table, ``False`` none, and a mapping names the tables (a
task), each with ``True``, a place (forecast's order) or the table's options under which
the metric is in (``{"ties": "first"}``). The lists below pin each default table, per
option, as it was before the declarations were unified.
"""

from __future__ import annotations

import ast
from pathlib import Path

import polars as pl
import pytest

import polars_eval  # noqa: F401  (registers every metric)
from polars_eval._core.registry import REGISTRY, by_task, default_table
from polars_eval.tasks.regression import _log_domain

PACKAGE = Path(polars_eval.__file__).parent

TREC_EVAL_MEASURES = frozenset(
    """runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank
    iprec_at_recall P relstring recall infAP gm_bpref Rprec_mult utility 11pt_avg binG G dcg
    ideal_dcg ndcg ndcg_rel Rndcg ndcg_cut map_cut relative_P success set_P set_relative_P
    set_recall set_map set_F num_nonrel_judged_ret prefs_num_prefs_poss prefs_num_prefs_ful
    prefs_num_prefs_ful_ret prefs_simp prefs_pair prefs_avgjg prefs_avgjg_Rnonrel
    prefs_simp_ret prefs_pair_ret prefs_avgjg_ret prefs_avgjg_Rnonrel_ret prefs_simp_imp
    prefs_pair_imp prefs_avgjg_imp map_avgjg P_avgjg Rprec_mult_avgjg yaap rbp
    rbp_resid""".split()
)
"""trec_eval 10's measures (its measures.c, ``te_trec_measures``): trec_eval's vocabulary.
Some are also names of our metrics (``map``, ``ndcg``, ``bpref`` ...)."""


def test_log_domain_is_the_logarithmic_errors() -> None:
    assert {i.name for i in by_task("regression") if _log_domain(i)} == {"msle", "rmsle"}


def test_no_baseline_is_the_correlations() -> None:
    declared = {i.name for i in by_task("regression") if i.extra.get("baseline") is False}
    assert declared == {"pearson", "spearman", "kendall_tau", "r2_pearson"}


def test_auc_kernel_is_auc_and_gini() -> None:
    assert {i.name for i in REGISTRY.values() if i.extra.get("auc_kernel")} == {"auc", "gini"}


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


# ---------------------------------------------------------------------------------------
# The default tables
# ---------------------------------------------------------------------------------------

BINARY = [
    *("auc", "gini", "pr_auc", "average_precision", "ks", "logloss", "brier", "accuracy"),
    *("balanced_accuracy", "precision", "recall", "specificity", "fpr", "fnr", "fdr", "npv"),
    *("f1", "mcc", "cohen_kappa", "max_accuracy", "max_f1", "max_mcc", "ece"),
]
OF_PROBABILITIES = ("logloss", "brier", "ece")
REGRESSION = [
    *("mse", "rmse", "mae", "medae", "max_error", "bias", "r2", "r2_pearson", "pearson"),
    *("spearman", "kendall_tau", "explained_variance", "rmsle", "msle", "rmspe", "mape"),
    *("smape", "mer", "wape"),
]
MULTICLASS = [
    *("multiclass_accuracy", "multiclass_precision", "multiclass_recall", "multiclass_f1"),
    *("multiclass_mcc", "multiclass_cohen_kappa", "multiclass_logloss", "top_k_accuracy"),
    "multiclass_auc",
]
OF_PROBA = ("multiclass_logloss", "top_k_accuracy", "multiclass_auc")
RANKING = [
    *("ndcg", "dcg", "precision_at_k", "recall_at_k", "hit_rate_at_k", "ap_at_k", "ap_11pt"),
    *("mrr", "err", "cg", "r_precision"),
]
FORECAST = ["mae", "mse", "rmse", "bias", "mape", "smape", "wape", "mase", "rmsse"]


@pytest.mark.parametrize(
    "task,options,expected",
    [
        ("binary", {"probability": True}, BINARY),
        ("binary", {"probability": False}, [m for m in BINARY if m not in OF_PROBABILITIES]),
        ("binary", {}, BINARY),
        ("regression", {}, REGRESSION),
        ("multiclass", {"proba": True}, MULTICLASS),
        ("multiclass", {"proba": False}, [m for m in MULTICLASS if m not in OF_PROBA]),
        ("multiclass", {"proba": ["p_a", "p_b"]}, MULTICLASS),
        ("multiclass", {"proba": None}, [m for m in MULTICLASS if m not in OF_PROBA]),
        ("ranking", {"ties": "first"}, RANKING),
        ("ranking", {"ties": "average"}, [m for m in RANKING if m != "ap_11pt"]),
        ("ranking", {}, RANKING),
        ("forecast", {"train": None}, FORECAST[:7]),
        ("forecast", {"train": True}, FORECAST),
        ("forecast", {}, FORECAST),
    ],
)
def test_default_table(task: str, options: dict, expected: list[str]) -> None:
    """Each default table, per option, in its order: written here, as it stood before the
    four ways of deciding membership became ``summary=`` (11-point AP with ``ties="first"``
    only, its exact expectation costing m⁴ per tie block; the metrics of probabilities only
    with probabilities; MASE and RMSSE only with ``train=``, after the point errors)."""
    assert default_table(task, **options) == expected


def test_default_tables_hold_what_spec_names() -> None:
    """SPEC §7: ``df.eval.ranking`` gives whole-list ndcg beside its cutoffs, map (the
    mean of ap_at_k, its columns ``map``) and mrr; §6: forecast's errors per series and
    across series, mase and rmsse with ``train=``, wape and bias; §3/§4/§5: the standard
    metrics of each task."""
    assert {"ndcg", "ap_at_k", "mrr"} <= set(default_table("ranking", ties="average"))
    assert REGISTRY["ap_at_k"].extra["short"] == "map"
    assert {"mase", "rmsse", "wape", "bias"} <= set(default_table("forecast", train=True))
    assert {"auc", "gini", "pr_auc", "average_precision", "logloss", "brier", "ks"} <= set(BINARY)
    assert {"accuracy", "precision", "recall", "f1", "mcc", "cohen_kappa"} <= set(BINARY)
    assert {"multiclass_accuracy", "multiclass_logloss", "multiclass_auc", "top_k_accuracy"} <= (
        set(MULTICLASS)
    )
    assert {"mse", "rmse", "mae", "r2", "mape", "smape", "wape", "rmsle"} <= set(REGRESSION)


def test_default_table_conditions_follow_the_inputs() -> None:
    """A metric of probabilities (binary role ``proba``; multiclass without a ``pred``
    input) is in the default table only when the table has them."""
    assert {i.name for i in by_task("binary") if i.inputs.get("score") == "proba"} & set(
        BINARY
    ) == set(OF_PROBABILITIES)
    assert {i.name for i in by_task("multiclass") if "pred" not in i.inputs} & set(
        MULTICLASS
    ) == set(OF_PROBA)


def test_every_table_reads_the_default_table() -> None:
    """The task methods' columns are the registry's default tables, in their order."""
    b = pl.DataFrame({"y": [0, 1, 0, 1, 1, 0], "p": [0.1, 0.8, 0.4, 0.3, 0.9, 0.2]})
    assert b.eval.binary("y", "p").columns == default_table("binary", probability=True)
    no_p = b.eval.binary("y", "p", probability=False).columns
    assert no_p == default_table("binary", probability=False)
    assert b.eval.regression("y", "p").columns == [*REGRESSION, "zero_actuals"]
    m = pl.DataFrame(
        {"y": ["a", "b", "b", "a"], "pr": ["a", "b", "a", "a"], "pa": [0.7, 0.4, 0.6, 0.8]}
    ).with_columns(pb=1 - pl.col("pa"))
    averaged = {"multiclass_precision", "multiclass_recall", "multiclass_f1", "multiclass_auc"}

    def stems(columns: list[str]) -> list[str]:
        out = [next((a for a in averaged if c.startswith(a + "_")), c) for c in columns]
        return list(dict.fromkeys(out))

    with_proba = m.eval.multiclass("y", pred="pr", proba=["pa", "pb"], classes=["a", "b"])
    assert stems(with_proba.columns) == MULTICLASS
    without = m.eval.multiclass("y", pred="pr", classes=["a", "b"])
    assert stems(without.columns) == default_table("multiclass", proba=None)
    r = pl.DataFrame({"q": [1, 1, 1, 2, 2], "rel": [1, 0, 1, 0, 1], "s": [0.9, 0.5, 0.1, 0.8, 0.7]})
    cuts = ["ndcg", "ndcg@3", "dcg@3", "precision@3", "recall@3", "hit_rate@3", "map", "map@3"]
    cuts += ["mrr", "mrr@3", "err@3", "cg@3"]
    first = r.eval.ranking("rel", "s", query="q", k=[3], ties="first").columns
    assert first == ["n_queries", "n_excluded", *cuts, "ap_11pt", "r_precision"]
    average = r.eval.ranking("rel", "s", query="q", k=[3]).columns
    assert average == ["n_queries", "n_excluded", *cuts, "r_precision"]
    f = pl.DataFrame(
        {"id": [1, 1, 1, 2, 2, 2], "t": [1, 2, 3] * 2, "y": [1.0, 2, 3, 4, 5, 6]}
    ).with_columns(f=pl.col("y") + 0.5)
    train = pl.DataFrame({"id": [1, 1, 1, 2, 2, 2], "t": [-2, -1, 0] * 2, "y": [1.0, 2, 4] * 2})
    plain = f.eval.forecast("y", "f", series="id", time="t").columns
    assert plain == ["n_series", "n", *FORECAST[:7], *(m + "_pooled" for m in FORECAST[:7])] + [
        "zero_actuals"
    ]
    trained = f.eval.forecast("y", "f", series="id", time="t", train=train).columns
    assert trained[2:11] == FORECAST


def test_metrics_lists_default_table_membership() -> None:
    """``pe.metrics()``'s ``in_summary``: in some task's default table."""
    import polars_eval as pe

    listed = pe.metrics().filter(pl.col("in_summary"))["name"].to_list()
    assert set(listed) == {*BINARY, *REGRESSION, *MULTICLASS, *RANKING, *FORECAST}


def test_a_bad_summary_declaration_fails_at_registration() -> None:
    from polars_eval._core.registry import register

    def fn(a, b):  # type: ignore[no-untyped-def]
        return None

    for bad in ({"nope": True}, {"binary": "yes"}, {"binary": {"place": "2"}}, "binary"):
        with pytest.raises(RuntimeError, match="summary="):
            register(task="binary", inputs={"a": "score"}, summary=bad, name="__pe_x")(fn)
    with pytest.raises(RuntimeError, match="scalar spec metric"):
        register(task="binary", inputs={"a": "score"}, kind="curve", name="__pe_x")(fn)
    assert "__pe_x" not in REGISTRY


def test_a_table_places_all_its_metrics_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table lists its metrics by place or by registration, never both."""
    import dataclasses

    unplaced = dataclasses.replace(REGISTRY["pis"], summary={"forecast": True})
    monkeypatch.setitem(REGISTRY, "pis", unplaced)
    with pytest.raises(RuntimeError, match="some metrics declare a place, not all"):
        default_table("forecast")


def test_the_cli_reads_the_default_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--metrics`` naming a metric outside the call's default table asks the table for it:
    11-point AP with the default ``ties="average"`` (outside), ``map`` (ap_at_k's columns,
    inside)."""
    import json

    from polars_eval import _demo, cli

    log = _demo.search_log(30, 6)
    path = tmp_path / "log.parquet"
    log.write_parquet(path)
    base = ["ranking", str(path), "--query", "query_id", "--relevance", "relevance"]
    code = cli.main([*base, "--score", "score", "--metrics", "ap_11pt,map", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    want = log.eval.ranking("relevance", "score", query="query_id", k=None, metrics=["ap_11pt"])
    got = json.loads(out)[0]
    assert list(got) == ["ap_11pt", "map"]
    assert got["ap_11pt"] == pytest.approx(want["ap_11pt"][0], rel=1e-12)
    assert got["map"] == pytest.approx(log.eval.map("relevance", "score", query="query_id"))


# ---------------------------------------------------------------------------------------
# trec_eval's measures
# ---------------------------------------------------------------------------------------


def test_trec_measures_are_declared_at_the_metrics() -> None:
    """The trec_eval measure each ranking formula computes (trec_eval's definitions: map
    and gm_map the mean and log-mean AP over the whole list, map_cut at a cutoff; P, recall,
    success and ndcg_cut at a cutoff; recip_rank, Rprec, 11pt_avg, bpref and gm_bpref),
    declared ``trec=`` at ``@register`` (and for the formulas no metric exposes, beside
    them): ``pe.trec_eval`` reads them."""
    from polars_eval.io.trec import SPEC_OF

    assert SPEC_OF == {
        "map": "ap_at_k",
        "map_cut": "ap_at_k",
        "gm_map": "ap_at_k",
        "ndcg": "ndcg",
        "ndcg_cut": "ndcg",
        "P": "precision_at_k",
        "recall": "recall_at_k",
        "success": "hit_rate_at_k",
        "relative_P": "relative_precision",
        "recip_rank": "reciprocal_rank",
        "Rprec": "r_precision",
        "Rprec_mult": "rprec_mult",
        "11pt_avg": "ap_11pt",
        "iprec_at_recall": "iprec_at_recall",
        "bpref": "bpref",
        "gm_bpref": "bpref",
    }
    assert set(SPEC_OF) <= TREC_EVAL_MEASURES
    declared = {m for i in REGISTRY.values() for m in i.extra.get("trec", ())}
    assert declared <= TREC_EVAL_MEASURES


# ---------------------------------------------------------------------------------------
# The scan
# ---------------------------------------------------------------------------------------


def _trec_vocabulary(strings: set[str]) -> bool:
    """trec_eval's own words, not a list of our metrics: every string a trec_eval measure
    (a parameter after the first "." aside: ``P.5``), one at least not our metric's name."""
    return all(s.split(".")[0] in TREC_EVAL_MEASURES for s in strings) and not strings <= set(
        REGISTRY
    )


def _report_titles(value: ast.Dict) -> bool:
    """A mapping from ``report.tables`` keys to their titles, not from metrics: every value
    a title (text with a space), one key at least not a metric's name (the report names the
    table of a metric's own output, ``gain_table``, after it)."""
    keys = {k.value for k in value.keys if isinstance(k, ast.Constant)}
    titles = [v for v in value.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return (
        len(titles) == len(value.values)
        and all(" " in v.value for v in titles)
        and not keys <= set(REGISTRY)
    )


def _literals_of_metric_names(path: Path, rel: str) -> list[str]:
    """Module constants (``NAME = (...)``, a tuple, list, set, frozenset or a dict keyed by
    strings) holding two or more registered metric names; ``__all__`` aside, and, in the
    trec modules (``io/``), trec_eval's vocabulary, and in ``report/``, a mapping of report
    tables to titles: those are not our metrics (see the two rules above)."""
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
        if len(strings & names) < 2:
            continue
        if rel.startswith("io/") and _trec_vocabulary(strings):
            continue
        if rel.startswith("report/") and isinstance(value, ast.Dict) and _report_titles(value):
            continue
        found.append(target[0])
    return found


def test_no_hand_list_of_metric_names_outside_metrics() -> None:
    holding = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("metrics/"):
            continue
        holding |= {f"{rel}:{name}" for name in _literals_of_metric_names(path, rel)}
    assert holding == set()


TITLES = {"gain_table": "Gain table", "roc_curve": "ROC curve", "per_class": "Per class"}


@pytest.mark.parametrize(
    "rel,source,flagged",
    [
        ("tasks/x.py", 'A = ("auc", "gini")', True),
        ("tasks/x.py", 'A: dict[str, int] = {"mae": 1, "rmse": 2}', True),
        ("tasks/x.py", 'A = frozenset(["ndcg", "map"])', True),
        ("tasks/x.py", 'A = ("auc", "not_a_metric")', False),
        ("io/x.py", 'A = ("ndcg", "map")', True),  # trec's words and ours only: ours
        ("io/x.py", 'A = ("ndcg", "map", "num_q", "P.5")', False),
        ("tasks/x.py", 'A = ("ndcg", "map", "num_q")', True),  # trec's words, outside io/
        ("report/x.py", f"A = {TITLES}", False),
        ("report/x.py", 'A = {"auc": "Area under ROC", "gini": "Gini index"}', True),
        (
            "report/x.py",
            'A = {"gain_table": "Gain", "roc_curve": "ROC", "per_class": "Per class"}',
            True,
        ),
        ("tasks/x.py", f"A = {TITLES}", True),
    ],
)
def test_the_scan_finds_a_new_hand_list(
    tmp_path: Path, rel: str, source: str, flagged: bool
) -> None:
    """The scan's two exemptions (trec_eval's vocabulary in io/, report table titles in
    report/) leave every other literal of our metric names found."""
    path = tmp_path / "module.py"
    path.write_text(source + "\n")
    assert (_literals_of_metric_names(path, rel) == ["A"]) is flagged
