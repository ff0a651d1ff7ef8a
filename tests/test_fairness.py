"""Fairness (SPEC §15): per-group metrics, disparity and the fairness measures against
fairlearn 0.15 (MetricFrame, its difference/ratio and the metric functions), to 1e-12."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from sklearn.metrics import f1_score, roc_auc_score

import polars_eval as pe
from polars_eval import fairness as fair
from polars_eval.stats import bootstrap as boot

fm = pytest.importorskip("fairlearn.metrics")

TOL = 1e-12
THRESHOLD = 0.5
FAIRLEARN = {
    "selection_rate": fm.selection_rate,
    "true_positive_rate": fm.true_positive_rate,
    "false_positive_rate": fm.false_positive_rate,
    "accuracy": None,  # scikit-learn's accuracy_score, below
}
MEASURES = [
    ("demographic_parity_difference", {}),
    ("demographic_parity_ratio", {}),
    ("equalized_odds_difference", {"agg": "worst_case"}),
    ("equalized_odds_difference", {"agg": "mean"}),
    ("equalized_odds_ratio", {"agg": "worst_case"}),
    ("equalized_odds_ratio", {"agg": "mean"}),
    ("equal_opportunity_difference", {}),
    ("equal_opportunity_ratio", {}),
]


def frame(n: int = 600, seed: int = 0) -> pl.DataFrame:
    """Labels, probabilities, integer and fractional weights, two sensitive columns (2 × 3
    intersections whose rates differ) and a control column."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["female", "male"], n)
    race = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    y = rng.integers(0, 2, n)
    shift = 0.15 * (sex == "male") - 0.1 * (race == "c")
    p = np.clip(0.35 + 0.3 * y + shift + rng.normal(0, 0.2, n), 0, 1).round(3)
    return pl.DataFrame(
        {
            "y": y,
            "p": p,
            "sex": sex,
            "race": race,
            "region": rng.choice(["north", "south"], n),
            "w": rng.integers(0, 4, n).astype(float),
            "fw": rng.random(n),
        }
    )


def metric_frame(df: pl.DataFrame, sensitive: list[str], weight: str | None, by: list[str]) -> Any:
    """fairlearn's MetricFrame of the four default metrics."""
    from sklearn.metrics import accuracy_score

    fns = {k: (v if v is not None else accuracy_score) for k, v in FAIRLEARN.items()}
    pdf = df.to_pandas()
    params = {k: {"sample_weight": pdf[weight].to_numpy()} for k in fns} if weight else None
    return fm.MetricFrame(
        metrics=fns,
        y_true=pdf["y"].to_numpy(),
        y_pred=(pdf["p"] >= THRESHOLD).astype(int).to_numpy(),
        sensitive_features=pdf[sensitive],
        control_features=pdf[by] if by else None,
        sample_params=params,
    )


def assert_close(ours: Any, theirs: Any, tol: float = TOL) -> None:
    assert ours is not None and theirs is not None
    assert math.isclose(float(ours), float(theirs), rel_tol=tol, abs_tol=tol), (ours, theirs)


CASES = [
    (["sex"], None, []),
    (["sex", "race"], None, []),
    (["race"], "w", []),
    (["sex", "race"], "fw", []),
    (["race"], "fw", ["region"]),
    (["sex", "race"], None, ["region"]),
]


@pytest.mark.parametrize(("sensitive", "weight", "by"), CASES)
def test_by_group_equals_fairlearn(sensitive: list[str], weight: str | None, by: list[str]) -> None:
    df = frame()
    ours = df.eval.fairness("y", "p", sensitive=sensitive, weight=weight, by=by or None)
    theirs = metric_frame(df, sensitive, weight, by).by_group.reset_index()
    assert ours.columns == [*by, *sensitive, "n", *FAIRLEARN]
    assert ours.height == len(theirs)
    for row, (_, ref) in zip(ours.iter_rows(named=True), theirs.iterrows(), strict=True):
        assert [row[k] for k in [*by, *sensitive]] == [ref[k] for k in [*by, *sensitive]]
        for name in FAIRLEARN:
            assert_close(row[name], ref[name])


@pytest.mark.parametrize(("sensitive", "weight", "by"), CASES)
@pytest.mark.parametrize("method", ["between_groups", "to_overall"])
def test_disparity_equals_fairlearn(
    sensitive: list[str], weight: str | None, by: list[str], method: str
) -> None:
    df = frame(seed=1)
    ours = df.eval.disparity(
        "y", "p", sensitive=sensitive, weight=weight, by=by or None, method=method
    )
    mf = metric_frame(df, sensitive, weight, by)
    diff, ratio = mf.difference(method=method), mf.ratio(method=method)
    expected_columns = [f"{m}_{k}" for m in FAIRLEARN for k in ("difference", "ratio")]
    assert ours.columns == [*by, *expected_columns]
    if not by:
        diff, ratio = pd.DataFrame([diff]), pd.DataFrame([ratio])
    else:
        diff, ratio = diff.reset_index(), ratio.reset_index()
    for i, row in enumerate(ours.iter_rows(named=True)):
        for name in FAIRLEARN:
            assert_close(row[f"{name}_difference"], diff.iloc[i][name])
            assert_close(row[f"{name}_ratio"], ratio.iloc[i][name])


@pytest.mark.parametrize(("name", "options"), MEASURES)
@pytest.mark.parametrize("weight", [None, "w", "fw"])
@pytest.mark.parametrize("method", ["between_groups", "to_overall"])
def test_measures_equal_fairlearn(
    name: str, options: dict, weight: str | None, method: str
) -> None:
    df = frame(seed=2)
    pdf = df.to_pandas()
    sensitive = pdf[["sex", "race"]]
    theirs = getattr(fm, name)(
        pdf["y"].to_numpy(),
        (pdf["p"] >= THRESHOLD).astype(int).to_numpy(),
        sensitive_features=sensitive,
        method=method,
        sample_weight=None if weight is None else pdf[weight].to_numpy(),
        **options,
    )
    ours = getattr(df.eval, name)(
        "y", "p", sensitive=["sex", "race"], weight=weight, method=method, **options
    )
    assert isinstance(ours, float)
    assert_close(ours, theirs)


def test_measures_per_by_group_equal_each_group_alone() -> None:
    df = frame(seed=3)
    out = df.eval.equalized_odds_ratio("y", "p", sensitive="race", by="region", weight="fw")
    assert out.columns == ["region", "equalized_odds_ratio"]
    for region, value in out.iter_rows():
        part = df.filter(pl.col("region") == region)
        alone = part.eval.equalized_odds_ratio("y", "p", sensitive="race", weight="fw")
        assert_close(value, alone)


def test_any_binary_metric_by_name_per_group() -> None:
    df = frame(seed=4)
    out = df.eval.fairness("y", "p", sensitive="race", metrics=["auc", "f1", "recall"])
    assert out.columns == ["race", "n", "auc", "f1", "recall"]
    for row in out.iter_rows(named=True):
        part = df.filter(pl.col("race") == row["race"])
        assert_close(row["auc"], roc_auc_score(part["y"], part["p"]))
        assert_close(row["f1"], f1_score(part["y"], part["p"] >= THRESHOLD))
        assert row["n"] == part.height
    by_alias = df.eval.fairness("y", "p", sensitive="race", metrics=["true_positive_rate"])
    assert by_alias["true_positive_rate"].to_list() == out["recall"].to_list()


def test_selection_rate_metric_equals_fairlearn() -> None:
    df = frame(seed=5)
    pdf = df.to_pandas()
    pred = (pdf["p"] >= 0.4).astype(int).to_numpy()
    for weight in (None, "fw"):
        sw = None if weight is None else pdf[weight].to_numpy()
        theirs = fm.selection_rate(pdf["y"], pred, sample_weight=sw)
        assert_close(df.eval.selection_rate("p", 0.4, weight=weight), theirs)
        assert_close(df.eval.selection_rate("p", 0.4, label="y", weight=weight), theirs)
    # with label=, its states are the threshold metrics' confusion counts (computed once)
    from polars_eval._core.planner import plan_specs

    specs = {
        "s": pe.metrics.fairness.selection_rate.__wrapped__("p", label="y"),
        "a": pe.metrics.binary.accuracy.__wrapped__("y", "p"),
    }
    assert len(plan_specs(specs).aggs) == 5  # tp, fp, tn, fn and the NaN flag


def test_one_group_gives_difference_0_and_ratio_1() -> None:
    df = frame(seed=6).with_columns(pl.lit("all").alias("sex"))
    out = df.eval.disparity("y", "p", sensitive="sex")
    for name in FAIRLEARN:
        assert out[f"{name}_difference"].item() == 0.0
        assert out[f"{name}_ratio"].item() == 1.0
    assert df.eval.equalized_odds_ratio("y", "p", sensitive="sex", method="to_overall") == 1.0


def test_group_without_positives_is_null_and_left_out() -> None:
    """BAD_INPUTS 61: TPR undefined in one group -> null there, left out of the difference
    and ratio (fairlearn would count 0), one warning."""
    df = frame(seed=7)
    df = df.with_columns(pl.when(pl.col("race") == "c").then(0).otherwise(pl.col("y")).alias("y"))
    with pytest.warns(pe.UndefinedMetricWarning) as caught:
        groups = df.eval.fairness("y", "p", sensitive="race")
    assert len(caught) == 1
    assert "true_positive_rate is null for 1 of 3 groups" in str(caught[0].message)
    assert groups.filter(pl.col("race") == "c")["true_positive_rate"].item() is None
    with pytest.warns(pe.UndefinedMetricWarning, match="left out of its difference"):
        ours = df.eval.equal_opportunity_difference("y", "p", sensitive="race")
    kept = df.filter(pl.col("race") != "c").to_pandas()
    theirs = fm.equal_opportunity_difference(
        kept["y"], (kept["p"] >= THRESHOLD).astype(int), sensitive_features=kept["race"]
    )
    assert_close(ours, theirs)


def test_no_group_with_a_defined_rate() -> None:
    df = frame(seed=8).with_columns(pl.lit(0).alias("y"))
    with pytest.raises(pe.UndefinedMetricError, match="equal_opportunity_ratio is undefined"):
        df.eval.equal_opportunity_ratio("y", "p", sensitive="race")
    with pytest.warns(pe.UndefinedMetricWarning, match="true_positive_rate is null for 3 of 3"):
        out = df.eval.disparity("y", "p", sensitive="race")
    assert out["true_positive_rate_difference"].item() is None
    assert out["false_positive_rate_difference"].item() is not None


def test_null_sensitive_rows_are_ignored_and_counted() -> None:
    df = frame(seed=9)
    nulled = df.with_columns(
        pl.when(pl.int_range(pl.len()) < 7).then(None).otherwise(pl.col("race")).alias("race")
    )
    with pytest.warns(pe.UndefinedMetricWarning, match='7 rows have a null in .*"race"'):
        ours = nulled.eval.disparity("y", "p", sensitive=["sex", "race"], method="to_overall")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = df.slice(7).eval.disparity(
            "y", "p", sensitive=["sex", "race"], method="to_overall"
        )
    assert_frame_equal(ours, expected)


def test_lazy_equals_eager_and_errors_at_collect(collect: Any) -> None:
    df = frame(seed=10)
    kwargs = {"sensitive": ["sex"], "by": "region", "weight": "fw"}
    lazy = df.lazy().eval.disparity("y", "p", method="to_overall", **kwargs)
    assert isinstance(lazy, pl.LazyFrame)
    eager = df.eval.disparity("y", "p", method="to_overall", **kwargs)
    assert_frame_equal(collect(lazy), eager)
    lazy_measure = df.lazy().eval.demographic_parity_ratio("y", "p", sensitive="race")
    assert isinstance(lazy_measure, pl.LazyFrame)
    assert_close(
        collect(lazy_measure).item(), df.eval.demographic_parity_ratio("y", "p", sensitive="race")
    )
    bad = df.with_columns(pl.lit(2).alias("y")).lazy()
    out = bad.eval.fairness("y", "p", sensitive="sex")  # nothing runs yet
    with pytest.raises(pe.DataValidationError, match='column "y"'):
        collect(out)
    missing = df.lazy().eval.fairness("y", "p", sensitive="gender")
    with pytest.raises(pe.DataValidationError, match='column "gender"'):
        missing.collect()
    with pytest.raises(pe.DataValidationError, match='column "gender"'):
        df.eval.fairness("y", "p", sensitive="gender")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sensitive": None}, "sensitive= is required"),
        ({"sensitive": []}, "sensitive= must be"),
        ({"sensitive": ["sex", 3]}, "sensitive= takes column names"),
        ({"sensitive": "sex", "by": "sex"}, "both in sensitive= and in by="),
        ({"sensitive": "sex", "metrics": ["auc", "nope"]}, "'nope' is not a binary metric"),
        ({"sensitive": "sex", "ci": "wilson"}, "ci must be one of"),
        ({"sensitive": "sex", "ci": "bootstrap", "n_resamples": 0}, "n_resamples"),
        ({"sensitive": "sex", "threshold": float("nan")}, "threshold"),
    ],
)
def test_bad_parameters(kwargs: dict, match: str) -> None:
    df = frame(50)
    with pytest.raises(pe.InvalidParameterError, match=match):
        df.eval.fairness("y", "p", **kwargs)


def test_bad_method_and_agg() -> None:
    df = frame(50)
    with pytest.raises(pe.InvalidParameterError, match="method"):
        df.eval.disparity("y", "p", sensitive="sex", method="worst")
    with pytest.raises(pe.InvalidParameterError, match="agg"):
        df.eval.equalized_odds_difference("y", "p", sensitive="sex", agg="max")
    with pytest.raises(pe.InvalidParameterError, match="agg= combines two rates"):
        df.eval.demographic_parity_difference("y", "p", sensitive="sex", agg="mean")


def test_empty_input_without_by_is_an_error() -> None:
    df = frame(20).clear()
    with pytest.raises(pe.UndefinedMetricError, match="no rows to evaluate"):
        df.eval.fairness("y", "p", sensitive="sex")
    nulls = frame(20).with_columns(pl.lit(None, dtype=pl.String).alias("sex"))
    with pytest.raises(pe.UndefinedMetricError, match='null in .*"sex"'):
        nulls.eval.demographic_parity_difference("y", "p", sensitive="sex")


# --------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [None, "fw"])
def test_bootstrap_replicates_equal_the_resampled_rows(weight: str | None) -> None:
    """Each resample's group metrics equal the table of the rows weighted by their counts
    (the counts of the package's bootstrap design, within ``by``), and fairlearn's
    MetricFrame with those counts times the weights as sample weights."""
    df = frame(300, seed=11).with_columns(one=pl.lit(1.0))
    q = fair.make_query(
        "y",
        "p",
        sensitive=["sex", "race"],
        metrics=[*FAIRLEARN, "auc"],
        threshold=THRESHOLD,
        weight=weight,
        pos_label=None,
        by=["region"],
        validate=True,
    )
    groups, overall = fair.replicates(df, q, 5, 3, overall=True)
    rows = fair.resampled_rows(df, q)[0]  # the evaluated rows, in the order counts are drawn
    design, _, _ = boot.make_design(rows, ["region"], [], "multinomial", 3)
    for r in (0, 4):
        counts = pl.Series(design.counts(r)).cast(pl.Float64)
        resampled = rows.with_columns((counts * pl.col(weight or "one")).alias("cw"))
        metrics = [*FAIRLEARN, "auc"]
        want = resampled.eval.fairness(
            "y", "p", sensitive=["sex", "race"], metrics=metrics, weight="cw", by="region"
        ).drop("n")
        got = groups.filter(pl.col(boot.R_COL) == r).drop(boot.R_COL)
        assert_frame_equal(got, want, rel_tol=1e-12, abs_tol=1e-12)
        ref = metric_frame(resampled, ["sex", "race"], "cw", ["region"]).overall.reset_index()
        got_overall = overall.filter(pl.col(boot.R_COL) == r)
        for i, row in enumerate(got_overall.iter_rows(named=True)):
            for name in FAIRLEARN:
                assert_close(row[name], ref.iloc[i][name])


def test_bootstrap_intervals_are_seeded_and_laid_out() -> None:
    df = frame(400, seed=12)
    kwargs: dict[str, Any] = {"sensitive": "race", "ci": "bootstrap", "n_resamples": 200}
    a = df.eval.disparity("y", "p", seed=5, **kwargs)
    b = df.lazy().eval.disparity("y", "p", seed=5, **kwargs).collect()
    assert_frame_equal(a, b)
    c = df.eval.disparity("y", "p", seed=6, **kwargs)
    assert not a.equals(c)
    assert a.columns[:3] == [
        "selection_rate_difference",
        "selection_rate_difference_lower",
        "selection_rate_difference_upper",
    ]
    for name in FAIRLEARN:
        for kind in ("difference", "ratio"):
            col = f"{name}_{kind}"
            assert 0.0 <= a[f"{col}_lower"].item() < a[f"{col}_upper"].item() <= 1.0
    interval = df.eval.equalized_odds_difference("y", "p", **kwargs)
    assert isinstance(interval, pe.Interval)
    plain = df.eval.equalized_odds_difference("y", "p", sensitive="race")
    assert interval.value == plain
    assert interval.lower < interval.upper
    groups = df.eval.fairness("y", "p", **kwargs)
    assert groups.columns[:5] == [
        "race",
        "n",
        "selection_rate",
        "selection_rate_lower",
        "selection_rate_upper",
    ]


def test_bootstrap_percentiles_of_the_replicates() -> None:
    """The interval of a measure is the percentile of its per-resample values (the
    resamples' worst-case equalized odds, not a combination of separate intervals)."""
    df = frame(300, seed=13)
    q = fair.make_query(
        "y",
        "p",
        sensitive="sex",
        metrics=["true_positive_rate", "false_positive_rate"],
        threshold=THRESHOLD,
        weight=None,
        pos_label=None,
        by=None,
        validate=True,
    )
    groups, _ = fair.replicates(df, q, 100, 0, overall=False)
    per = groups.group_by(boot.R_COL).agg(
        (pl.col("true_positive_rate").max() - pl.col("true_positive_rate").min()).alias("t"),
        (pl.col("false_positive_rate").max() - pl.col("false_positive_rate").min()).alias("f"),
    )
    worst = per.select(pl.max_horizontal("t", "f")).to_series()
    out = df.eval.equalized_odds_difference(
        "y", "p", sensitive="sex", ci="bootstrap", n_resamples=100, level=0.9
    )
    assert_close(out.lower, worst.quantile(0.05, interpolation="linear"))
    assert_close(out.upper, worst.quantile(0.95, interpolation="linear"))


# --------------------------------------------------------------------------------------
# Invariances
# --------------------------------------------------------------------------------------


@given(seed=st.integers(0, 10_000), n=st.integers(8, 60))
def test_integer_weights_equal_repeated_rows_and_order_does_not_matter(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    df = pl.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "p": rng.random(n).round(1),
            "g": rng.choice(["a", "b"], n),
            "w": rng.integers(0, 3, n),
        }
    )
    assume(df["w"].sum() > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pe.UndefinedMetricWarning)
        weighted = df.eval.disparity("y", "p", sensitive="g", weight="w", method="to_overall")
        repeated = df.filter(pl.col("w") > 0).select(pl.all().repeat_by("w").explode()).drop("w")
        plain = repeated.eval.disparity("y", "p", sensitive="g", method="to_overall")
        shuffled = df.sample(fraction=1.0, shuffle=True, seed=seed).eval.disparity(
            "y", "p", sensitive="g", weight="w", method="to_overall"
        )
    assert_frame_equal(weighted, plain, rel_tol=1e-12, abs_tol=1e-12)
    assert_frame_equal(weighted, shuffled, rel_tol=1e-12, abs_tol=1e-12)


def test_readme_fairness_claims() -> None:
    """The README's fairness review: its commented value is fairlearn's, on the demo data
    (the block itself runs in tests/test_readme.py)."""
    import re
    from pathlib import Path

    from polars_eval._demo import credit_scoring

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    claim = re.search(r"equalized_odds_difference\(.*\)\s+# ([0-9.]+)\.\.\.", readme)
    assert claim is not None
    df = credit_scoring().to_pandas()
    theirs = fm.equalized_odds_difference(
        df["defaulted"], (df["pd_score"] >= 0.1).astype(int), sensitive_features=df["age_band"]
    )
    assert f"{theirs:.6f}".startswith(claim.group(1))
