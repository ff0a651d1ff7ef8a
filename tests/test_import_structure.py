"""The import structure of ``polars_eval`` (issue 21): no circle of more than four files,
at most three imports running back up a floor.

Read from the source, not from ``sys.modules``: every ``import`` statement counts, those
inside functions (lazy) and under ``if TYPE_CHECKING:`` too. The floors are those of
``docs/engine.md`` ("The table layer"), from the bottom; a module should import only from
its own floor or below.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "polars_eval"

MAX_CIRCLE = 4
MAX_UPWARD = 3

FLOORS = {
    # 1: conversion, option checks, data checks by role, the shared types
    "_exprs": 1,
    "_params": 1,
    "_validate": 1,
    "exceptions": 1,
    "_typing": 1,
    "_version": 1,
    # 2: one spec and one @register per metric (and the task list they read)
    "_core.spec": 2,
    "_core.registry": 2,
    "_core.origin": 2,
    "_core.tasks": 2,
    # 3: the specs laid out for one query, the grouping
    "_core.planner": 3,
    "_core.windows": 3,
    # 4: the table object, the one runner, the second stage over units
    "_core.table": 4,
    "_core.units": 4,
    # 5: the registered metrics; 6: one table builder per task, the task methods
    "metrics": 5,
    "tasks": 6,
    # 8: the entry points; everything else (scale/, stats/, report/, namespace ...) is 7
    "cli": 8,
    "__main__": 8,
}


def floor(module: str) -> int:
    """The floor of ``polars_eval.<...>``: its longest prefix in :data:`FLOORS`, the
    package root on the top floor with ``cli/``, anything else on floor 7."""
    parts = module.split(".")[1:]
    if not parts:
        return 8
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in FLOORS:
            return FLOORS[prefix]
    return 2 if parts[0] == "_core" else 7


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def import_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Every module's imports of other modules of the package, and the lazy ones among them."""
    mods = modules()
    edges: dict[str, set[str]] = defaultdict(set)
    lazy: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(node) for node in tree.body}
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    kept = package[: len(package) - (node.level - 1)]
                    base = ".".join(kept + ([node.module] if node.module else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets += [full] if full in mods else [base] if base in mods else []
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names if alias.name in mods]
            for target in targets:
                if target != name and target.startswith("polars_eval"):
                    edges[name].add(target)
                    if id(node) not in top:
                        lazy[name].add(target)
    return edges, lazy


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=len, reverse=True)


def upward(edges: dict[str, set[str]], lazy: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} -> {t}{' (lazy)' if t in lazy[m] else ''}"
        for m, targets in edges.items()
        for t in targets
        if floor(t) > floor(m)
    )


def test_the_graph_is_read() -> None:
    """The reader finds the imports it is meant to (absolute, relative, lazy)."""
    edges, lazy = import_graph()
    assert "polars_eval._core.table" in edges["polars_eval.tasks.binary"]
    assert "polars_eval.report._report" in edges["polars_eval.report.methods"]
    assert "polars_eval.report._report" in lazy["polars_eval.report.methods"]
    assert "polars_eval.namespace" in edges["polars_eval"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert floor("polars_eval") == 8 and floor("polars_eval._core.units") == 4
    assert floor("polars_eval.tasks._methods") == 6 and floor("polars_eval.report.html") == 7


def test_no_import_circle_of_more_than_four_files() -> None:
    edges, _ = import_graph()
    big = [c for c in circles(edges) if len(c) > MAX_CIRCLE]
    assert not big, big


def test_few_imports_run_back_up_a_floor() -> None:
    edges, lazy = import_graph()
    up = upward(edges, lazy)
    assert len(up) <= MAX_UPWARD, up
