"""The type stub of the ``.eval`` namespace: every argument typed, the keyed metric methods
(``query=``, ``series=``) and the statistics', comparison and fairness methods included;
``compare`` typed per task (overloads read from the task methods)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import polars as pl
import pytest

import polars_eval as pe
from polars_eval._core.tasks import TASKS
from polars_eval.exceptions import InvalidParameterError
from polars_eval.stats import compare_tasks

NAMESPACE = type(pl.DataFrame().eval)
METHODS = sorted(n for n in dir(NAMESPACE) if not n.startswith("_") and n != "install")


def stub_methods() -> dict[str, list[ast.FunctionDef]]:
    path = Path(pe.namespace.__file__).with_suffix(".pyi")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EvalNamespace")
    out: dict[str, list[ast.FunctionDef]] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append(node)
    return out


@pytest.mark.parametrize("name", METHODS)
def test_every_argument_is_typed(name: str) -> None:
    sig = inspect.signature(getattr(NAMESPACE, name))
    untyped = [
        p.name for p in sig.parameters.values() if p.name != "self" and p.annotation is p.empty
    ]
    assert untyped == [], f"{name}: arguments without a type: {untyped}"
    assert sig.return_annotation is not sig.empty


def test_keyed_methods_take_their_task_types() -> None:
    ranking = inspect.signature(NAMESPACE.ranking).parameters
    forecast = inspect.signature(NAMESPACE.forecast).parameters
    ndcg = inspect.signature(NAMESPACE.ndcg).parameters
    mase = inspect.signature(NAMESPACE.mase).parameters
    for arg in ("query", "item", "weight", "per_query"):
        assert ndcg[arg].annotation == ranking[arg].annotation
    for arg in ("series", "cutoff", "lead", "train", "season_length"):
        assert mase[arg].annotation == forecast[arg].annotation
    # the namespace's own arguments keep the namespace's types, an optional key admits None
    assert ndcg["by"].annotation == inspect.signature(NAMESPACE.auc).parameters["by"].annotation
    assert mase["time"].annotation == "str | None"


def test_stub_names_the_types() -> None:
    stub = stub_methods()
    ndcg = {a.arg: ast.unparse(a.annotation) for a in stub["ndcg"][0].args.kwonlyargs}
    assert ndcg["query"] == "str | Sequence[str]"
    assert ndcg["per_query"] == "bool"
    returns = {name: ast.unparse(stub[name][0].returns) for name in ("delong", "fairness")}
    assert returns == {
        "delong": "dict[str, Any] | pl.DataFrame | pl.LazyFrame",
        "fairness": "pl.DataFrame | pl.LazyFrame",
    }


def test_compare_has_one_overload_per_task() -> None:
    overloads = stub_methods()["compare"]
    assert all(ast.unparse(d) == "overload" for f in overloads for d in f.decorator_list)
    tasks = [ast.unparse(f.args.args[1].annotation) for f in overloads]
    assert tasks == [f"Literal['{t}']" for t in TASKS] + ["str"]
    ranking = overloads[list(TASKS).index("ranking")]
    positional = [a.arg for a in ranking.args.args[2:]]
    assert positional == compare_tasks.positional_args("ranking")
    keywords = {a.arg for a in ranking.args.kwonlyargs}
    assert {"query", "k", "test", "baseline"} <= keywords
    assert not keywords & set(compare_tasks.NOT_OPTIONS)


@pytest.mark.parametrize("option", sorted(compare_tasks.NOT_OPTIONS))
def test_options_left_out_of_compare_overloads_are_refused(option: str) -> None:
    df = pl.DataFrame({"q": [1, 1, 2, 2], "rel": [1, 0, 1, 0], "a": [0.9, 0.1, 0.2, 0.8]})
    df = df.with_columns(b=1 - pl.col("a"))
    value = "w" if option == "weight" else ("t" if option == "ci" else True)
    with pytest.raises(InvalidParameterError, match=f"does not take {option}="):
        df.eval.compare("ranking", "rel", score=["a", "b"], query="q", **{option: value})
