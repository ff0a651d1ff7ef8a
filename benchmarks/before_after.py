"""Every family before and after a change, in one command (issue 21: "no family slower").

``python benchmarks/before_after.py --before REV [--after REV] [--scale 1.0] [--repeat 3]``

``REV`` is extracted with ``git archive`` into a temporary directory (``--after`` too; by
default the after side is this checkout's working tree). Each scenario is timed in a
fresh child process per side (``benchmarks/_harness.py``-style: the data is built with a
fixed seed in the child, not timed; the median of ``--repeat`` calls is printed back), and
the two sides alternate, scenario after scenario, ``--rounds`` times, so that both are
timed in one sitting under the same load of a shared machine. The table gives the medians
over the rounds and after/before; a ratio over 1.10 is flagged.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_line  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

# Data builders: each defines the frames a scenario reads (numpy seed fixed), rows scaled.
DATA = {
    "binary": """
n = int(1e6 * S); rng = np.random.default_rng(0)
y = rng.integers(0, 2, n)
df = pl.DataFrame({"y": y, "p": np.clip(rng.normal(0.3 + 0.3 * y, 0.2), 0, 1),
                   "t": rng.integers(0, 100, n) / 100, "seg": rng.integers(0, 1000, n)})
""",
    "regression": """
n = int(1e6 * S); rng = np.random.default_rng(1)
a = rng.gamma(2.0, 2.0, n)
df = pl.DataFrame({"a": a, "p": a + rng.normal(0, 1, n), "seg": rng.integers(0, 1000, n)})
""",
    "forecast": """
n_series = max(10, int(1e4 * S)); points = 200; season = 7
rng = np.random.default_rng(2)
sid = np.repeat(np.arange(n_series), points); ds = np.tile(np.arange(points), n_series)
y = 10 + np.sin(ds * 2 * np.pi / season) + rng.normal(0, 1, sid.size)
frame = pl.DataFrame({"unique_id": sid, "ds": ds, "y": y})
train = frame.filter(pl.col("ds") < 180)
test = frame.filter(pl.col("ds") >= 180).with_columns(f=pl.col("y") + 0.5)
""",
    "multiclass": """
n = int(5e5 * S); k = 10; rng = np.random.default_rng(3)
y = rng.integers(0, k, n); logits = rng.normal(0, 1, (n, k)); logits[np.arange(n), y] += 1.0
pr = np.exp(logits); pr /= pr.sum(1, keepdims=True)
cols = [f"p{j}" for j in range(k)]
df = pl.DataFrame({"y": y, "yhat": pr.argmax(1), **{c: pr[:, j] for j, c in enumerate(cols)}})
""",
    "ranking": """
q = max(10, int(1e4 * S)); d = 100; rng = np.random.default_rng(4)
rel = rng.integers(0, 4, q * d) * (rng.random(q * d) < 0.3)
df = pl.DataFrame({"qid": np.repeat(np.arange(q), d), "rel": rel,
                   "score": rel + rng.normal(0, 1.5, q * d)})
""",
}

SCENARIOS = [
    ("binary", "pe.auc, continuous", 'df.select(pe.auc("y", "p"))'),
    ("binary", "pe.auc, tied (2 decimals)", 'df.select(pe.auc("y", "t"))'),
    ("binary", "pe.average_precision", 'df.select(pe.average_precision("y", "p"))'),
    ("binary", "pe.logloss, pe.accuracy", 'df.select(pe.logloss("y", "p"), pe.accuracy("y", "p"))'),
    ("binary", "df.eval.binary", 'df.eval.binary("y", "p")'),
    ("binary", "per-segment AUC, 1,000 segments", 'df.group_by("seg").agg(pe.auc("y", "p"))'),
    ("binary", "df.eval.binary(by=seg)", 'df.eval.binary("y", "p", by="seg")'),
    (
        "binary",
        "pe.Evaluation update + compute",
        'pe.Evaluation("binary", label="y", score="p", by="seg").update(df).compute()',
    ),
    (
        "binary",
        "df.eval.auc(ci='bootstrap'), 200",
        'df.eval.auc("y", "p", ci="bootstrap", n_resamples=200)',
    ),
    ("regression", "df.eval.regression", 'df.eval.regression("a", "p")'),
    ("regression", "pe.mae per segment", 'df.group_by("seg").agg(pe.mae("a", "p"))'),
    (
        "forecast",
        "df.eval.forecast(per_series=True)",
        'test.eval.forecast("y", "f", series="unique_id", time="ds", train=train, '
        "season_length=season, per_series=True)",
    ),
    (
        "multiclass",
        "df.eval.multiclass",
        'df.eval.multiclass("y", pred="yhat", proba=cols, classes=list(range(k)))',
    ),
    (
        "ranking",
        "df.eval.ranking (ndcg@10, map, mrr)",
        'df.eval.ranking("rel", "score", query="qid", k=None, metrics=["ndcg@10", "map", "mrr"])',
    ),
    ("ranking", "df.eval.ranking default table", 'df.eval.ranking("rel", "score", query="qid")'),
]

CHILD = """
import json, statistics, sys, time, warnings
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import numpy as np, polars as pl, polars_eval as pe
S = float(sys.argv[2]); repeat = int(sys.argv[3])
exec(sys.argv[4])
code = compile(sys.argv[5], "<scenario>", "eval")
eval(code)  # warm-up: imports, first-call caches
times = []
for _ in range(repeat):
    t = time.perf_counter(); eval(code); times.append(time.perf_counter() - t)
print(json.dumps(statistics.median(times)))
"""


def extract(rev: str, into: Path) -> Path:
    """``git archive REV`` unpacked into ``into``: the package tree of that commit."""
    archive = into / f"{rev}.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), rev], check=True)
    root = into / rev
    root.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return root


def time_side(root: Path, family: str, code: str, scale: float, repeat: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(scale), str(repeat), DATA[family], code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    if out.returncode != 0:
        return float("nan")  # the API differs on that side: shown as "–"
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="git revision of the before side")
    ap.add_argument("--after", default=None, help="git revision (default: the working tree)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every row count")
    ap.add_argument("--repeat", type=int, default=3, help="calls per child (median)")
    ap.add_argument("--rounds", type=int, default=2, help="before/after alternations")
    ap.add_argument("--only", nargs="*", default=None, help="families to run")
    args = ap.parse_args(argv)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        before = extract(args.before, Path(tmp))
        after = extract(args.after, Path(tmp)) if args.after else REPO
        print(f"machine: {machine_line()}; load average at start {load:.1f}")
        print(
            f"before {args.before}, after {args.after or 'working tree'}, scale {args.scale}, "
            f"median of {args.repeat} calls, {args.rounds} alternations"
        )
        print("\n| family | scenario | before s | after s | after/before |")
        print("|---|---|---|---|---|")
        for family, name, code in SCENARIOS:
            if args.only and family not in args.only:
                continue
            b, a = [], []
            for _ in range(args.rounds):
                b.append(time_side(before, family, code, args.scale, args.repeat))
                a.append(time_side(after, family, code, args.scale, args.repeat))
            mb, ma = statistics.median(b), statistics.median(a)
            ratio = ma / mb
            flag = " **slower**" if ratio > 1.10 else ""
            cell = lambda v: "–" if v != v else f"{v:.3f}"  # noqa: E731 (NaN: failed)
            print(
                f"| {family} | {name} | {cell(mb)} | {cell(ma)} | {cell(ratio)}{flag} |", flush=True
            )
        print(f"\nload average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
