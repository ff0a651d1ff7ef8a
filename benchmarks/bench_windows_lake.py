"""Windows over a lake (SPEC §13 "Lakes", issue 22): peak memory of binned trailing windows.

The lake: ``--rows`` rows (2e7) over 200 days in one parquet file per day (partitioned by
date, as lakes are: every file holds every segment), 20 segments, continuous scores (6
decimals). Windows ``every="1d"``, ``period="30d"`` per segment, ``bins=1000``, metrics
AUC, log loss and KS. Each variant runs in a fresh process; peak = its max RSS:

- the namespace on the LazyFrame, ``collect(engine="streaming")``;
- ``pe.Evaluation(..., time=, every=, bins=1000).update(scan)`` then ``compute(period=)``;
- the floor: Polars' own streaming ``group_by(segment, day, label, bin).agg(pl.len())``,
  the state a binned window needs, on the same lake.

Target (issue 22): peak <= 1.5 GiB at 2e7 rows; run ``--rows 2e6`` too to see that the peak
does not grow with the rows (it is bounded by segments x days x bins).

    python benchmarks/bench_windows_lake.py --rows 2e7 --dir /tmp/pe_windows_lake
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_line, run_child  # noqa: E402

DAYS = 200
SEGMENTS = 20


def write_lake(root: Path, rows: int, seed: int = 0) -> Path:
    """One parquet file per day, every segment in every file (written once per size)."""
    lake = root / f"rows{rows:.0e}"
    if (lake / "_done").exists():
        return lake
    lake.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per_day = rows // DAYS
    start = np.datetime64("2025-01-01T00:00:00", "us")
    for day in range(DAYS):
        y = rng.integers(0, 2, per_day)
        s = np.clip(rng.random(per_day) * 0.7 + 0.3 * y * rng.random(per_day), 0, 1).round(6)
        seconds = day * 86400 + rng.integers(0, 86400, per_day)
        pl.DataFrame(
            {
                "ts": start + seconds.astype("timedelta64[s]").astype("timedelta64[us]"),
                "seg": rng.integers(0, SEGMENTS, per_day).astype(np.int16),
                "y": y.astype(np.int8),
                "s": s,
            }
        ).write_parquet(lake / f"day={day:03d}.parquet")
    (lake / "_done").touch()
    return lake


NAMESPACE = """
import polars as pl, polars_eval  # noqa: F401
out = pl.scan_parquet("{glob}").eval.binary(
    "y", "s", by="seg", time="ts", every="1d", period="30d", bins=1000,
    metrics=["auc", "logloss", "ks"],
).collect(engine="streaming")
assert out.height > 0
"""

EVALUATION = """
import polars as pl, polars_eval as pe
ev = pe.Evaluation("binary", label="y", score="s", by="seg", time="ts", every="1d",
                   bins=1000, metrics=["auc", "logloss", "ks"])
ev.update(pl.scan_parquet("{glob}"))
out = ev.compute(period="30d")
assert out.height > 0
"""

FLOOR = """
import polars as pl
bin_ = (pl.col("s") * 1000).floor().clip(0, 999).cast(pl.Int16)
out = (
    pl.scan_parquet("{glob}")
    .group_by("seg", pl.col("ts").dt.truncate("1d"), "y", bin_.alias("bin"))
    .agg(pl.len())
    .collect(engine="streaming")
)
assert out.height > 0
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=float, default=2e7)
    parser.add_argument("--dir", default="/tmp/pe_windows_lake")
    args = parser.parse_args()
    rows = int(args.rows)
    lake = write_lake(Path(args.dir), rows)
    glob = str(lake / "*.parquet")
    print(f"# {machine_line()}; load {os.getloadavg()[0]:.1f}")
    print(
        f"# {rows:,} rows, {DAYS} files (one per day, every segment in each), "
        f"{SEGMENTS} segments, every=1d, period=30d, bins=1000"
    )
    print("| variant | wall s | CPU s | peak MiB |")
    print("|---|---|---|---|")
    for name, code in [("namespace", NAMESPACE), ("pe.Evaluation", EVALUATION), ("floor", FLOOR)]:
        got = run_child(code.format(glob=glob))
        print(f"| {name} | {got['seconds']:.2f} | {got['cpu_s']:.2f} | {got['peak_mib']:,.0f} |")


if __name__ == "__main__":
    main()
