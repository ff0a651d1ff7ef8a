"""Without ``cloudpickle`` (an install that lacks Polars' ``cloudpickle`` extra), Polars
cannot serialize an expression over a Python function. The planner keys states by their
serialized plan; it must then fall back to the expression object, still share the
threshold state, and give the same numbers. (A fresh install of ``.[plot]`` once lacked
it, and ``polars-eval demo`` failed.)"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
import pytest

import polars_eval  # noqa: F401

BLOCK = """
import builtins
_import = builtins.__import__
def _blocked(name, *args, **kwargs):
    if name == "cloudpickle" or name.startswith("cloudpickle."):
        raise ModuleNotFoundError("No module named 'cloudpickle'")
    return _import(name, *args, **kwargs)
builtins.__import__ = _blocked
"""

WORK = """
import json
import numpy as np
import polars as pl
import polars_eval as pe

rng = np.random.default_rng(7)
n = 4000
df = pl.DataFrame({
    "y": rng.integers(0, 2, n),
    "s": np.round(rng.random(n), 2),
    "w": rng.random(n) + 0.1,
    "g": rng.choice(["a", "b", "c"], n),
})
out = {
    "binary": df.eval.binary("y", "s").row(0, named=True),
    "weighted": df.eval.binary("y", "s", weight="w").row(0, named=True),
    "by": df.eval.binary("y", "s", by="g").sort("g").rows(),
    "agg": df.group_by("g").agg(pe.auc("y", "s"), pe.average_precision("y", "s"))
        .sort("g").rows(),
}
import tempfile, pathlib
report = df.eval.report("binary", label="y", score="s", by="g")
with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "r.html"
    report.to_html(path)
    out["report"] = "<svg" in path.read_text() or path.stat().st_size > 0
print(json.dumps(out, default=str))
"""


def _run(block: bool) -> dict:
    code = (BLOCK if block else "") + WORK
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_serializing_a_python_function_fails_without_cloudpickle():
    """The premise: the blocker does make Polars' serialization of a UDF fail."""
    code = BLOCK + textwrap.dedent(
        """
        import polars as pl
        try:
            pl.col("a").map_batches(lambda s: s).meta.serialize()
        except Exception as e:
            print("failed:", type(e).__name__)
        else:
            print("serialized")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip().startswith("failed"), done.stdout + done.stderr


def test_same_numbers_without_cloudpickle():
    with_it, without = _run(block=False), _run(block=True)
    assert without["report"] and with_it["report"]
    for key in ("binary", "weighted"):
        assert with_it[key].keys() == without[key].keys()
        for name, value in with_it[key].items():
            other = without[key][name]
            if isinstance(value, float):
                assert other == pytest.approx(value, rel=1e-12, abs=1e-12), name
            else:
                assert other == value, name
    for key in ("by", "agg"):
        a = np.array([r[1:] for r in with_it[key]], dtype=float)
        b = np.array([r[1:] for r in without[key]], dtype=float)
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert [r[0] for r in with_it["by"]] == [r[0] for r in without["by"]]


def test_plan_key_falls_back_to_the_object():
    from polars_eval._core.spec import plan_key

    expr = pl.col("a").sum()
    assert plan_key(expr) == plan_key(pl.col("a").sum())
    assert isinstance(plan_key(expr), bytes)
