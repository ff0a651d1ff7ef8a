"""The generated namespace: docstrings, signatures and the .pyi stub follow the registry."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import polars as pl
import pytest

import polars_eval as pe
from polars_eval._core import registry as _registry
from polars_eval.namespace import render_stub

NAMESPACE = type(pl.DataFrame().eval)


def test_stub_is_current():
    path = Path(pe.namespace.__file__).with_suffix(".pyi")
    assert path.read_text(encoding="utf-8") == render_stub(), (
        'the stub is stale: run python -c "import polars_eval.namespace as n; n.write_stub()"'
    )
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "EvalNamespace")
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert set(_registry.REGISTRY) <= methods
    assert {"binary", "multiclass", "regression", "forecast", "ranking"} <= methods


# The ranking methods are still written by their family (they take query= keys); every
# other method is generated from the registry.
GENERATED = sorted(name for name, info in _registry.REGISTRY.items() if info.task != "ranking")


def test_generated_methods_cover_the_other_tasks():
    assert {"binary", "regression", "forecast", "multiclass"} <= {
        _registry.REGISTRY[name].task for name in GENERATED
    }


@pytest.mark.parametrize("name", GENERATED)
def test_method_help_describes_the_namespace_form(name):
    info = _registry.REGISTRY[name]
    method = getattr(NAMESPACE, name)
    doc = inspect.getdoc(method) or ""
    assert doc.splitlines()[0] == (inspect.getdoc(info.fn) or "").splitlines()[0]
    assert "by : str or list of str" in doc and "validate : bool" in doc
    assert ("ci : " in doc) == bool(info.intervals)
    sig = inspect.signature(method)
    assert "pl.Expr" not in str(sig.return_annotation)
    if info.kind == "scalar":
        assert sig.return_annotation.startswith("float")
        assert "float\n    Without ``by``" in doc
    assert sig.parameters["by"].annotation == "str | list[str] | None"


def test_help_of_auc_names_every_namespace_argument():
    text = pl.DataFrame().eval.auc.__doc__
    for needle in ("by :", "validate :", "ci : {'hanley'", "level :", "Returns", "pl.LazyFrame"):
        assert needle in text


# The statistics' namespace methods with an expression of their own take its arguments,
# in its order and with its defaults, plus the namespace's (SPEC §1.2, STYLE "A metric").
@pytest.mark.parametrize(
    ("method", "function", "added"),
    [
        ("mcnemar", pe.mcnemar, ["by", "validate"]),
        ("delong", pe.delong, ["by", "validate"]),
        ("bootstrap", pe.stats.bootstrap.bootstrap, []),
    ],
)
def test_stats_methods_mirror_their_functions(method, function, added):
    ours = inspect.signature(getattr(NAMESPACE, method)).parameters
    theirs = inspect.signature(function).parameters
    expected = [
        (p.name, p.kind, p.default) for p in theirs.values() if p.name not in ("frame",)
    ] + [(name, inspect.Parameter.KEYWORD_ONLY) for name in added]
    got = [(p.name, p.kind, p.default) for p in ours.values() if p.name != "self"]
    got = [g[:2] if g[0] in added else g for g in got]
    assert got == expected
