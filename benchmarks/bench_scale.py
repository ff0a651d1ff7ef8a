"""Lakes beyond memory (SPEC §10, issue 12): time and peak memory by mode, one child each.

Writes a hive-partitioned parquet lake (``seg=<k>/part-<i>.parquet``, 100 segments, file
by file so the writer never holds the lake) of continuous scores or scores at 4
decimals, then evaluates the binary task per segment in a fresh process per run:

* ``expr streaming``: ``scan_parquet().group_by("seg").agg(pe.auc, pe.logloss, pe.ks)``
  collected with the streaming engine (the sorted state of every row: memory grows with
  the rows);
* ``Evaluation exact``: ``pe.Evaluation("binary", ..., by="seg").update(lake)``: one
  state row per distinct (segment, label, score);
* ``Evaluation bins=1000``: one state row per (segment, label, bin, side of the
  threshold): memory independent of the rows.

    python benchmarks/bench_scale.py --rows 1e7 1e8 --decimals 4 --dir /tmp/lakes

Prints seconds, peak resident MiB and the ratio to the exact streaming expression.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).parent))
from _harness import machine_line, run_child  # noqa: E402

SEGMENTS = 100
ROWS_PER_FILE = 5_000_000


def write_lake(root: Path, rows: int, decimals: int | None, seed: int = 0) -> Path:
    """A hive lake of ``rows`` rows, written one file at a time (skipped if present)."""
    tag = f"rows{rows:.0e}_dec{decimals if decimals is not None else 'none'}"
    lake = root / tag
    done = lake / "_done"
    if done.exists():
        return lake
    rng = np.random.default_rng(seed)
    n_files = max(1, rows // ROWS_PER_FILE)
    per_file = rows // n_files
    for i in range(n_files):
        seg = rng.integers(0, SEGMENTS, per_file).astype(np.int16)
        y = rng.integers(0, 2, per_file).astype(np.int8)
        s = 1.0 / (1.0 + np.exp(-(rng.normal(size=per_file) + 0.8 * y - 0.4)))
        if decimals is not None:
            s = np.round(s, decimals)
        frame = pl.DataFrame({"seg": seg, "y": y, "s": s})
        for (k,), part in frame.partition_by("seg", as_dict=True).items():
            path = lake / f"seg={k}" / f"part-{i:04d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            part.drop("seg").write_parquet(path)
    done.touch()
    return lake


RUNS = {
    "expr streaming": (
        "import polars as pl, polars_eval as pe\n"
        "pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True).group_by('seg')"
        ".agg(pe.auc('y', 's'), pe.logloss('y', 's'), pe.ks('y', 's'))"
        ".collect(engine='streaming')"
    ),
    "Evaluation exact": (
        "import polars as pl, polars_eval as pe\n"
        "ev = pe.Evaluation('binary', label='y', score='s', by='seg')\n"
        "ev.update(pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True)).compute()"
    ),
    "Evaluation bins=1000": (
        "import polars as pl, polars_eval as pe\n"
        "ev = pe.Evaluation('binary', label='y', score='s', by='seg', bins=1000)\n"
        "ev.update(pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True)).compute()"
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=float, default=[1e7])
    parser.add_argument("--decimals", nargs="+", default=["none", "4"])
    parser.add_argument("--dir", default=os.environ.get("TMPDIR", "/tmp") + "/pe_lakes")
    parser.add_argument("--runs", nargs="+", default=list(RUNS))
    args = parser.parse_args()
    print(machine_line())
    for rows in args.rows:
        for dec in args.decimals:
            decimals = None if dec == "none" else int(dec)
            lake = write_lake(Path(args.dir), int(rows), decimals)
            print(f"\n{int(rows):.0e} rows, scores at {dec} decimals, {SEGMENTS} segments")
            base = None
            for name in args.runs:
                result = run_child(RUNS[name].format(lake=lake))
                base = base or result["seconds"]
                print(
                    f"  {name:22s} {result['seconds']:8.2f} s  peak {result['peak_mib']:8.0f} MiB"
                    f"  ({result['seconds'] / base:.2f}× the first)"
                )


if __name__ == "__main__":
    main()
