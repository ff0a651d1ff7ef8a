"""Every metric's expression stays small, each of its aggregations written once (issue 26).

Polars evaluates every copy of a repeated subexpression inside one aggregation: a state
rebuilt inside every reference to it (``pe.pearson`` once printed 178,000 characters,
274 struct builds of its co-moments) is computed that many times. For every registered
metric, weighted and not, with the inputs of ``test_common.CASES``:

* its printed expression is bounded (a few thousand characters; the longest today are
  the hand-written bare forms of the binary AUC, ``MetricSpec.alone``);
* each distinct aggregation of its states (:meth:`State.parts`: a sum, an extremum, one
  of the co-moments' nine) occurs exactly once in the printed expression of the spec's
  one-expression form (the states are packed and read through ``spec.bind``).
"""

from __future__ import annotations

import pytest
from test_common import CASES, METRICS, arguments

from polars_eval._core.registry import MetricInfo

LONGEST = 20_000  # characters of a printed metric expression
SPEC_FORM_LONGEST = 12_000  # ... of one built from its states (no MetricSpec.alone)
# a state per class: the weighted multiclass calibration error keeps one per-bin state of
# every class (classwise) besides the confidence's, each written once (the test below)
PER_CLASS_LONGEST = {"multiclass_calibration_error": 16_000}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("info", METRICS, ids=[info.name for info in METRICS])
def test_expression_is_bounded(info: MetricInfo, weighted: bool) -> None:
    args = arguments(info, CASES[info.task], weighted=weighted)
    text = str(info.fn(**args))
    assert len(text) <= LONGEST, (info.name, len(text))
    if info.spec is not None and info.spec(**args).alone is None:
        limit = PER_CLASS_LONGEST.get(info.name, SPEC_FORM_LONGEST)
        assert len(text) <= limit, (info.name, len(text))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "info",
    [i for i in METRICS if i.spec is not None],
    ids=[i.name for i in METRICS if i.spec is not None],
)
def test_each_aggregation_written_once(info: MetricInfo, weighted: bool) -> None:
    args = arguments(info, CASES[info.task], weighted=weighted)
    assert info.spec is not None
    spec = info.spec(**args)
    if spec.alone is not None:  # a hand-written expression, bounded above
        return
    text = str(info.fn(**args))
    aggregations = {
        str(agg)
        for state in spec.states.values()
        if state.kind != "rows"  # the rows themselves: read as columns, not aggregated
        for agg in state.parts().values()
    }
    counts = {agg: text.count(agg) for agg in aggregations}
    assert all(c == 1 for c in counts.values()), {a[:80]: c for a, c in counts.items() if c != 1}


def test_the_co_moments_are_nine_aggregations() -> None:
    """The state that used to blow up: Pearson's co-moments are six plain aggregations
    without weights and nine with, each once, and the expression is a few thousand
    characters (it was 178,000, with 274 struct builds)."""
    import polars_eval as pe
    from polars_eval._core.registry import REGISTRY

    build = REGISTRY["pearson"].spec
    assert build is not None
    for weight, parts in ((None, 6), ("w", 9)):
        spec = build("y", "p", weight=weight)
        assert len(spec.states["m"].parts()) == parts
        text = str(pe.pearson("y", "p", weight=weight))
        assert len(text) < 8_000
        # the packed parts, the assembled states and their co-moments: each built once
        assert text.count("as_struct") == 3, text.count("as_struct")
