"""``polars-eval demo``: the bundled examples, their tables and reports (SPEC §9)."""

from __future__ import annotations

import argparse
import datetime as dt
import io
import sys
from pathlib import Path
from typing import Any

import polars as pl

from polars_eval.cli._common import (
    TABLE_WIDTH,
    _say,
    add_command,
    one_line,
    progress,
    render_table,
    write_report,
)

EPILOG = """\
The main example is a synthetic credit-scoring validation set (20,000 loan applications,
generated in code from a fixed seed): product segment, sales channel, region, loan
amount, the observed default flag and two models' probabilities of default. Smaller
examples cover the other tasks (property valuations, company ratings, branch
demand forecasts, a search log). Each task's report is written next to the first one:
polars_eval_demo_report.html, polars_eval_demo_report_<task>.html.

examples:
  polars-eval demo
  polars-eval demo --data-dir demo_data     # also save the example data as parquet
  polars-eval binary demo_data/credit_scoring.parquet --label defaulted --score pd_score --by channel
"""


HELP = "evaluate a bundled example (no input needed)"
DESCRIPTION = "Evaluate bundled, synthetic examples, print the tables and write HTML reports."


def command(sub: Any) -> None:
    p = add_command(sub, "demo", HELP, DESCRIPTION, EPILOG)
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        help="also write the example data there as parquet, to try the other commands on",
    )
    p.add_argument(
        "--report",
        metavar="FILE.html",
        default="polars_eval_demo_report.html",
        help="where to write the credit-scoring report; the other tasks' reports go "
        "next to it (default: ./polars_eval_demo_report.html)",
    )
    p.add_argument("--no-report", action="store_true", help="do not write reports")
    p.set_defaults(handler=run)


def _section(out: io.StringIO, table: pl.DataFrame, keys: list[str], title: str) -> None:
    """One table of the demo, under its title."""
    out.write(render_table(table, keys, title) + "\n\n")


def _pick(table: pl.DataFrame, *names: str) -> pl.DataFrame:
    """The named columns that the table has, in that order."""
    return table.select([n for n in names if n in table.columns])


def _demo_binary(out: io.StringIO, data: dict[str, pl.DataFrame]) -> None:
    df = data["credit_scoring"]
    label, score = "defaulted", "pd_score"
    n_pos = int(df.get_column(label).sum())
    out.write(
        f"== Binary classification: {df.height:,} synthetic loan applications, {n_pos:,} "
        f"defaults ({n_pos / df.height:.1%})\nlabel 'defaulted', score 'pd_score' (the "
        "production model's probability of default), segments 'segment' and 'channel'\n\n"
    )
    per = ("auc", "gini", "ks", "logloss", "brier", "ece")
    overall = df.eval.binary(label, score)
    _section(
        out,
        _pick(overall, *per[:3], "pr_auc", *per[3:], "accuracy", "precision", "recall").hstack(
            _pick(overall, "f1", "mcc")
        ),
        [],
        "Overall (threshold 0.5):",
    )
    for seg in ("segment", "channel"):
        counts = df.group_by(seg).agg(
            pl.len().cast(pl.Int64).alias("rows"),
            pl.col(label).mean().alias("default_rate"),
            pl.col(score).mean().alias("mean_pd"),
        )
        table = (
            _pick(df.eval.binary(label, score, by=seg), seg, *per).join(counts, on=seg).sort("auc")
        )
        _section(out, table, [seg], f"Per {seg}, worst AUC first:")
    models = pl.concat(
        [
            _pick(df.eval.binary(label, col), *per).select(pl.lit(col).alias("model"), pl.all())
            for col in ("pd_score", "pd_challenger")
        ]
    )
    _section(out, models, ["model"], "Production model vs challenger:")
    gain = df.eval.gain_table(label, score, bins=10)
    columns = ("bin", "min_score", "count", "positives", "cum_pct_positives", "lift", "cum_lift")
    _section(
        out, _pick(gain, *columns, "ks"), [], "Gain table (deciles of pd_score, riskiest first):"
    )


def _demo_regression(out: io.StringIO, data: dict[str, pl.DataFrame]) -> None:
    df = data["property_valuations"]
    out.write(
        f"== Regression: {df.height:,} synthetic property sales\nactual 'sale_price', "
        "prediction 'predicted_price' (an automated valuation model), segment 'region'\n\n"
    )
    keep = ("mape", "wape", "mae", "rmse", "bias", "r2", "pearson")
    overall = df.eval.regression("sale_price", "predicted_price")
    _section(out, _pick(overall, *keep), [], "Overall:")
    per = df.eval.regression("sale_price", "predicted_price", by="region")
    _section(
        out,
        _pick(per, "region", *keep).sort("mape", descending=True),
        ["region"],
        "Per region, worst MAPE first:",
    )


def _demo_multiclass(out: io.StringIO, data: dict[str, pl.DataFrame]) -> None:
    from polars_eval import _demo

    df = data["rating_grades"]
    proba = [f"p_{g}" for g in _demo.GRADES]
    out.write(
        f"== Multiclass: {df.height:,} synthetic company ratings, grades A-E\nlabel 'grade', "
        "prediction 'predicted_grade', probabilities 'p_A' ... 'p_E', segment 'sector'\n\n"
    )
    per = df.eval.multiclass(
        "grade", pred="predicted_grade", proba=proba, classes=list(_demo.GRADES), by="sector"
    )
    keep = ("multiclass_accuracy", "multiclass_f1_macro", "multiclass_mcc") + (
        "multiclass_logloss",
        "multiclass_auc_macro",
        "top_k_accuracy",
    )
    table = _pick(per, "sector", *keep).sort("multiclass_accuracy")
    table = table.rename({c: c.removeprefix("multiclass_") for c in table.columns})
    _section(out, table, ["sector"], "Per sector, worst accuracy first:")


def _demo_forecast(out: io.StringIO, data: dict[str, pl.DataFrame]) -> None:
    history, forecasts = data["branch_history"], data["branch_forecasts"]
    out.write(
        f"== Forecasting: monthly loan applications of {forecasts['branch'].n_unique()} "
        "branches, 6-month forecasts from 3 origins\nactual 'applications', forecast "
        "'forecast', 80 % interval 'lo80'-'hi80', series 'branch', time 'month', origin "
        "'cutoff'; MASE against a 36-month history (season 12)\n\n"
    )
    by_lead = forecasts.eval.forecast(
        "applications",
        "forecast",
        series="branch",
        time="month",
        cutoff="cutoff",
        train=history,
        season_length=12,
        interval=("lo80", "hi80"),
        by="lead",
    )
    keep = ("n", "mae", "rmse", "bias", "mape", "wape", "mase", "coverage")
    _section(out, _pick(by_lead, "lead", *keep), ["lead"], "By lead time (months ahead):")


def _demo_ranking(out: io.StringIO, data: dict[str, pl.DataFrame]) -> None:
    df = data["search_log"]
    out.write(
        f"== Ranking: a synthetic search log, {df['query_id'].n_unique():,} queries x 20 "
        "documents\nrelevance 'relevance' (0-4), score 'score', query 'query_id', segment "
        "'market'\n\n"
    )
    keep = ("n_queries", "n_excluded", "ndcg@10", "map@10", "mrr@10", "precision@5", "recall@10")
    per = df.eval.ranking("relevance", "score", query="query_id", k=[5, 10], by="market")
    _section(
        out,
        _pick(per, "market", *keep).sort("ndcg@10"),
        ["market"],
        "Per market, worst NDCG@10 first (means over queries):",
    )


def _demo_reports(data: dict[str, pl.DataFrame]) -> dict[str, tuple[str, dict[str, Any]]]:
    """task -> (data set, arguments of ``df.eval.report``) for the demo's reports."""
    from polars_eval import _demo

    return {
        "binary": (
            "credit_scoring",
            {
                "label": "defaulted",
                "score": "pd_score",
                "by": "segment",
                # the trend section: 4-week windows every week, the PSI against January
                "time": "application_date",
                "every": "1w",
                "period": "4w",
                "reference": _january(data.get("credit_scoring")),
            },
        ),
        "regression": (
            "property_valuations",
            {"actual": "sale_price", "pred": "predicted_price", "by": "region"},
        ),
        "multiclass": (
            "rating_grades",
            {
                "label": "grade",
                "pred": "predicted_grade",
                "proba": [f"p_{g}" for g in _demo.GRADES],
                "classes": list(_demo.GRADES),
                "by": "sector",
            },
        ),
        "forecast": (
            "branch_forecasts",
            {
                "actual": "applications",
                "forecast": "forecast",
                "series": "branch",
                "time": "month",
                "cutoff": "cutoff",
                "train": data.get("branch_history"),
                "season_length": 12,
                "by": "region",
            },
        ),
        "ranking": (
            "search_log",
            {"relevance": "relevance", "score": "score", "query": "query_id", "by": "market"},
        ),
    }


def _january(credit: pl.DataFrame | None) -> pl.DataFrame | None:
    """The applications of January 2024: the demo's reference sample for the PSI."""
    if credit is None:
        return None
    return credit.filter(pl.col("application_date") < dt.date(2024, 2, 1))


def _demo_data() -> dict[str, pl.DataFrame]:
    """The example data sets of the tasks, by file name."""
    from polars_eval import _demo

    history, forecasts = _demo.branch_demand()
    return {
        "credit_scoring": _demo.credit_scoring(),
        "property_valuations": _demo.property_valuations(),
        "rating_grades": _demo.rating_grades(),
        "branch_history": history,
        "branch_forecasts": forecasts,
        "search_log": _demo.search_log(),
    }


def _wrap_prose(text: str) -> str:
    """The demo's sentences wrapped to the terminal width; its tables left as they are."""
    import shutil
    import textwrap

    width = shutil.get_terminal_size((TABLE_WIDTH, 24)).columns
    lines = []
    for line in text.split("\n"):
        if len(line) <= width or line[:1] in "┌│╞└├":
            lines.append(line)
        else:
            lines += textwrap.wrap(line, width, break_on_hyphens=False)
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    out = io.StringIO()
    sections = [
        ("regression", _demo_regression),
        ("multiclass", _demo_multiclass),
        ("forecast", _demo_forecast),
        ("ranking", _demo_ranking),
    ]
    with progress("evaluating the examples", 1 + len(sections), "examples") as meter:
        data = _demo_data()
        _demo_binary(out, data)
        meter.add()
        for task, section in sections:
            part = io.StringIO()
            try:
                section(part, data)
            except Exception as error:  # one broken family must not hide the others
                meter.say(f"warning: the {task} example failed: {one_line(error)}")
                continue
            finally:
                meter.add()
            out.write(part.getvalue())
    sys.stdout.write(_wrap_prose(out.getvalue().rstrip("\n")) + "\n")
    sys.stdout.flush()
    if args.data_dir:
        target = Path(args.data_dir)
        target.mkdir(parents=True, exist_ok=True)
        for name, frame in data.items():
            frame.write_parquet(target / f"{name}.parquet")
        names = [f"{name}.parquet" for name in data]
        if "search_log" in data:  # for `polars-eval trec`
            from polars_eval import _demo

            run, qrels = _demo.trec_files(data["search_log"])
            (target / "run.txt").write_text(run, encoding="utf-8")
            (target / "qrels.txt").write_text(qrels, encoding="utf-8")
            names += ["run.txt", "qrels.txt"]
            # a weaker run of the same queries, for `polars-eval trec ... --compare`
            weaker, _ = _demo.trec_files(_demo.weaker_ranker(data["search_log"]))
            (target / "run_bm25.txt").write_text(weaker.replace(" demo\n", " bm25\n"), "utf-8")
            names += ["run_bm25.txt"]
        _say(f"example data written to {target.resolve()}: {', '.join(names)}")
    report = getattr(args, "report", None)
    if report and not getattr(args, "no_report", False):
        first = Path(report)
        reports = {task: value for task, value in _demo_reports(data).items() if value[0] in data}
        with progress("writing the reports", len(reports), "reports") as meter:
            for task, (name, arguments) in reports.items():
                path = (
                    first
                    if task == "binary"
                    else first.with_name(f"{first.stem}_{task}{first.suffix}")
                )
                try:
                    where = write_report(
                        data[name],
                        str(path),
                        task=task,
                        title=f"polars-eval demo: {task}",
                        **arguments,
                    )
                except Exception as error:
                    if task == "binary":
                        raise
                    meter.say(f"warning: the {task} report failed: {one_line(error)}")
                    continue
                finally:
                    meter.add()
                meter.say(f"{task} report written to {where}")
    return 0
