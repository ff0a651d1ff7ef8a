"""Report benchmark (issue 11, SPEC §9/§11): the HTML report must not dominate.

Scenario of the issue: a parquet file of ``--rows`` rows with 100 segments, and the
command ``polars-eval binary FILE --label y --score score --by seg`` run with and without
``--report r.html``, each in a fresh child process: the median wall time, the median CPU
seconds of all its threads (what the load of a shared machine inflates less) and the
largest peak resident memory of ``--repeat`` runs. Target: with ``--report`` within 1.5×
the time and the peak memory of the same command without it.

Then, in this process, where the report's time goes (one run after a warm-up): reading
the three columns, the report's tables (``df.eval.report``: every state, table and
interval; the binary calibration section runs in a thread beside them, and the step that
first reads it waits for it), its charts (thinned curves, Altair specs) and ``.html()``
(SVG rendering).

Run:  python benchmarks/bench_report.py [--rows 1e6 2e7] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import polars as pl

import polars_eval as pe  # noqa: F401  (registers the .eval namespace)

sys.path.insert(0, str(Path(__file__).parent))
from _harness import machine_line, run_child  # noqa: E402


def make_data(n: int, segments: int = 100, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0.0, 1.0)
    return pl.DataFrame({"y": y, "score": score, "seg": rng.integers(0, segments, n)})


def cli_code(path: Path, out: Path, report: Path | None) -> str:
    argv = ["binary", str(path), "--label", "y", "--score", "score", "--by", "seg"]
    argv += ["-o", str(out)] + (["--report", str(report)] if report else [])
    return f"from polars_eval.cli import main\nassert main({argv!r}) == 0"


def breakdown(path: Path) -> dict[str, float]:
    """Seconds of each step of the report, in this process (the last of two runs)."""
    parts: dict[str, float] = {}
    for _ in range(2):  # the first run imports altair and starts the SVG engine
        t0 = time.perf_counter()
        df = pl.read_parquet(path, columns=["y", "score", "seg"])
        t1 = time.perf_counter()
        rep = df.eval.report("binary", label="y", score="score", by="seg")
        t2 = time.perf_counter()
        _ = rep.charts
        t3 = time.perf_counter()
        rep.html()
        t4 = time.perf_counter()
        parts = {"read": t1 - t0, "tables": t2 - t1, "charts": t3 - t2, "html": t4 - t3}
    return parts


def run(n: int, repeat: int, parts: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.parquet"
        make_data(n).write_parquet(path)
        out = Path(tmp) / "out.csv"
        runs: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
        for _ in range(repeat):  # interleaved: the machine's load hits both alike
            runs["without"].append(run_child(cli_code(path, out, None)))
            runs["with"].append(run_child(cli_code(path, out, Path(tmp) / "r.html")))
        steps = breakdown(path) if parts else {}
    secs = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    cpu = {k: statistics.median(r["cpu_s"] for r in v) for k, v in runs.items()}
    peak = {k: max(r["peak_mib"] for r in v) for k, v in runs.items()}
    print(f"\n## `polars-eval binary --by seg`, {n:,} rows, 100 segments (median of {repeat})")
    print(machine_line())
    print(f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (after)")
    print("| command | median s | median CPU s | peak MiB |")
    print("|---|---|---|---|")
    for key in ("without", "with"):
        print(f"| {key} `--report` | {secs[key]:.2f} | {cpu[key]:.2f} | {peak[key]:,.0f} |")
    print(
        f"| ratio with / without | {secs['with'] / secs['without']:.2f} "
        f"| {cpu['with'] / cpu['without']:.2f} | {peak['with'] / peak['without']:.2f} |"
    )
    print("(target: both ratios <= 1.5)")
    if steps:
        print("\n| report step, in process | s |")
        print("|---|---|")
        for key, value in steps.items():
            print(f"| {key} | {value:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="+", default=[1e6])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-breakdown", action="store_true", help="skip the in-process steps")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for rows in args.rows:
        run(int(rows), args.repeat, not args.no_breakdown)


if __name__ == "__main__":
    main()
