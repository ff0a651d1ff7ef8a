"""Lakes beyond memory (SPEC §10, issue 12): time and peak memory by mode, one child each.

Writes a hive-partitioned parquet lake (``seg=<k>/part-<i>.parquet``, 100 segments, file
by file so the writer never holds the lake) of continuous scores or scores at 4
decimals, then evaluates the binary task per segment in a fresh process per run
(``--task binary``):

* ``expr streaming``: ``scan_parquet().group_by("seg").agg(pe.auc, pe.logloss, pe.ks)``
  collected with the streaming engine (the sorted state of every row: memory grows with
  the rows);
* ``Evaluation exact``: ``pe.Evaluation("binary", ..., by="seg").update(lake)``: one
  state row per distinct (segment, label, score);
* ``Evaluation bins=1000``: one state row per (segment, label, bin, side of the
  threshold): memory independent of the rows.

With ``--task regression`` the lake holds ``actual``/``pred`` columns (continuous, or at
``--decimals``) and the runs are the regression table per segment without its order
statistics (``REGRESSION_METRICS``: every metric whose state is sums, extrema or
co-moments):

* ``exprs streaming``: ``scan_parquet().group_by("seg").agg(pe.r2, pe.pearson,
  pe.explained_variance, pe.mse, pe.mae, pe.max_error)`` collected with the streaming
  engine (the bare expressions);
* ``expr streaming``: ``scan_parquet().eval.regression(..., by="seg", metrics=...)``
  collected with the streaming engine;
* ``Evaluation rows (old)``: ``pe.Evaluation`` forced onto the distinct-rows state
  (one row per distinct (segment, actual, pred), finalized by the task method's whole
  table, as before the specs' states);
* ``Evaluation states``: ``pe.Evaluation(..., metrics=REGRESSION_METRICS)``: the specs'
  states, one row per segment.

With ``--task forecast`` the lake is a forecast log: ``--series`` series (default 1e4)
of ``rows / series`` days each (``sid`` Int32, ``t`` Int32 day, actual ``y``, forecast
``f``), the series dealt to the 100 segments (``seg = sid % 100``), each file one stretch
of days of every series of its segment, sorted by (series, day) as a log written day by
day and compacted; a training frame of 56 days per series beside it (``train=``,
``season_length=7``). The runs are the forecast table per segment (every default point
metric, MASE and RMSSE):

* ``expr streaming``: ``scan_parquet().eval.forecast(..., by="seg", train=...)``
  collected with the streaming engine;
* ``Evaluation rows (before)``: ``pe.Evaluation("forecast", ...)`` forced onto the rows
  state (every row kept, the task method at ``compute``: the path before the bounded
  state);
* ``Evaluation states``: the bounded state, per series the metrics' sums and the runs of
  days seen.

With ``--layout mixed`` (issue 27) the lake is plain files of 5e6 rows in which every
file holds every segment (a lake partitioned by date or by load): ``seg`` (Int16, 100
segments drawn uniformly in every file), and for ``--task binary`` ``y`` (Int8), ``s``
(scores at 6 decimals) and ``s4`` (the same at 4 decimals: 1.8e6 distinct (segment,
label, score) keys); for ``--task regression`` continuous ``actual`` and ``pred``. The
binary runs (AUC, log loss, KS per segment): Polars' own streaming
``group_by(seg, y, bin).agg(pl.len())``, ``pe.Evaluation(..., bins=1000)``, the namespace
with ``bins=1000``, the CLI's ``--bins 1000``; Polars' ``group_by(seg, y, s4).agg(
pl.len())``, ``pe.Evaluation`` exact and the namespace exact on ``s4``. The regression
runs: a plain ``group_by(seg)`` of sums, ``pe.Evaluation`` and the namespace with the
bounded metrics. (The ranking query log, whose queries are split across files:
``bench_scale_ranking.py --segments 100``.)

    python benchmarks/bench_scale.py --rows 1e7 1e8 --decimals 4 --dir /tmp/lakes
    python benchmarks/bench_scale.py --task regression --rows 1e7 1e8 --decimals none
    python benchmarks/bench_scale.py --task forecast --rows 1e7 1e8 --series 10000
    python benchmarks/bench_scale.py --layout mixed --rows 1e8 1e9 --runs "Evaluation bins=1000"

Prints seconds, peak resident MiB and the ratio to the first run.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import polars as pl

import polars_eval as pe

sys.path.insert(0, str(Path(__file__).parent))
from _harness import machine_line, run_child  # noqa: E402

SEGMENTS = 100
ROWS_PER_FILE = 5_000_000


def binary_columns(rng: np.random.Generator, n: int, decimals: int | None) -> dict:
    """0/1 labels ``y`` and logistic scores ``s``."""
    y = rng.integers(0, 2, n).astype(np.int8)
    s = 1.0 / (1.0 + np.exp(-(rng.normal(size=n) + 0.8 * y - 0.4)))
    return {"y": y, "s": s if decimals is None else np.round(s, decimals)}


def regression_columns(rng: np.random.Generator, n: int, decimals: int | None) -> dict:
    """Positive targets ``actual`` (about 5 % zeros) and predictions ``pred``."""
    actual = rng.gamma(2.0, 10.0, n)
    actual[rng.random(n) < 0.05] = 0.0
    pred = np.abs(actual + rng.normal(0.0, 5.0, n))
    if decimals is not None:
        actual, pred = np.round(actual, decimals), np.round(pred, decimals)
    return {"actual": actual, "pred": pred}


COLUMNS = {"binary": binary_columns, "regression": regression_columns}
TRAIN_DAYS = 56


def forecast_frame(rng: np.random.Generator, days: range, n_series: int) -> pl.DataFrame:
    """Every series on ``days`` (series by series): a weekly level and noise (``y``), a
    forecast off by a series bias and noise (``f``), ``seg = sid % 100``."""
    sid = np.repeat(np.arange(n_series, dtype=np.int32), len(days))
    t = np.tile(np.arange(days.start, days.stop, dtype=np.int32), n_series)
    level = 20.0 + 5.0 * np.sin(2.0 * np.pi * t / 7.0) + (sid % 17)
    y = np.maximum(level + rng.normal(0.0, 3.0, sid.size), 0.0)
    f = level + (sid % 5 - 2) * 0.5 + rng.normal(0.0, 2.0, sid.size)
    return pl.DataFrame(
        {"seg": (sid % SEGMENTS).astype(np.int16), "sid": sid, "t": t, "y": y, "f": f}
    )


def write_lake(
    root: Path,
    rows: int,
    decimals: int | None,
    seed: int = 0,
    task: str = "binary",
    series: int = 10_000,
) -> Path:
    """A hive lake of ``rows`` rows, written one file at a time (skipped if present)."""
    prefix = "" if task == "binary" else f"{task}_"
    tag = f"{prefix}rows{rows:.0e}_dec{decimals if decimals is not None else 'none'}"
    if task == "forecast":
        tag = f"{prefix}rows{rows:.0e}_series{series:.0e}"
    lake = root / tag
    done = lake / "_done"
    if done.exists():
        return lake
    rng = np.random.default_rng(seed)
    n_files = max(1, rows // ROWS_PER_FILE)
    per_file = rows // n_files
    if task == "forecast":
        lake.mkdir(parents=True, exist_ok=True)
        days = rows // series
        forecast_frame(rng, range(-TRAIN_DAYS, 0), series).select("sid", "t", "y").write_parquet(
            lake.parent / f"{tag}_train.parquet"
        )
    for i in range(n_files):
        if task == "forecast":  # the days of this file, for every series
            stretch = range(i * days // n_files, (i + 1) * days // n_files)
            frame = forecast_frame(rng, stretch, series)
        else:
            seg = rng.integers(0, SEGMENTS, per_file).astype(np.int16)
            frame = pl.DataFrame({"seg": seg, **COLUMNS[task](rng, per_file, decimals)})
        for (k,), part in frame.partition_by("seg", as_dict=True).items():
            path = lake / f"seg={k}" / f"part-{i:04d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            part.drop("seg").write_parquet(path)
    done.touch()
    return lake


def write_mixed_lake(root: Path, rows: int, task: str = "binary", seed: int = 0) -> Path:
    """A plain lake of ``rows`` rows whose files each hold every segment (issue 27): files
    of 5e6 rows (a lake partitioned by date or by load), ``seg`` (Int16) drawn uniformly
    from 100 segments in every file; binary: ``y`` (Int8), ``s`` (scores at 6 decimals)
    and ``s4`` (the same at 4 decimals); regression: ``actual``, ``pred`` (continuous).
    Written one file at a time (skipped if present)."""
    lake = root / f"mixed_{task}_rows{rows:.0e}"
    done = lake / "_done"
    if done.exists():
        return lake
    lake.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n_files = max(1, rows // ROWS_PER_FILE)
    per_file = rows // n_files
    for i in range(n_files):
        seg = rng.integers(0, SEGMENTS, per_file).astype(np.int16)
        if task == "binary":
            cols = binary_columns(rng, per_file, 6)
            cols["s4"] = np.round(cols["s"], 4)
        else:
            cols = COLUMNS[task](rng, per_file, None)
        pl.DataFrame({"seg": seg, **cols}).write_parquet(lake / f"part-{i:04d}.parquet")
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

ORDER_STATISTICS = ("medae", "spearman", "kendall_tau", "mer")  # their state is the rows
REGRESSION_METRICS = [
    name
    for name in pe.metrics().filter(task="regression", in_summary=True, kind="scalar")["name"]
    if name not in ORDER_STATISTICS
]
_REGRESSION_EV = (
    "import polars as pl, polars_eval as pe\n"
    "ev = pe.Evaluation('regression', actual='actual', pred='pred', by='seg', "
    f"metrics={REGRESSION_METRICS!r})\n"
    "{force}"
    "ev.update(pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True)).compute()"
)
REGRESSION_EXPRS = "pe.r2, pe.pearson, pe.explained_variance, pe.mse, pe.mae, pe.max_error"
REGRESSION_RUNS = {
    "exprs streaming": (
        "import polars as pl, polars_eval as pe\n"
        "pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True).group_by('seg').agg("
        + ", ".join(f"{e}('actual', 'pred')" for e in REGRESSION_EXPRS.split(", "))
        + ").collect(engine='streaming')"
    ),
    "expr streaming": (
        "import polars as pl, polars_eval as pe\n"
        "pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True).eval.regression("
        f"'actual', 'pred', by='seg', metrics={REGRESSION_METRICS!r}"
        ").collect(engine='streaming')"
    ),
    # the distinct-rows state and the task method's whole table, as before the specs' states
    "Evaluation rows (old)": _REGRESSION_EV.replace("{force}", "ev._table_cache = None\n"),
    "Evaluation states": _REGRESSION_EV.replace("{force}", ""),
}
_FORECAST_ARGS = (
    "'y', 'f', series='sid', time='t', by='seg', season_length=7, "
    "train=pl.read_parquet('{lake}_train.parquet')"
)
_FORECAST_EV = (
    "import polars as pl, polars_eval as pe\n"
    "ev = pe.Evaluation('forecast', actual='y', forecast='f', series='sid', time='t', "
    "by='seg', season_length=7, train=pl.read_parquet('{lake}_train.parquet'))\n"
    "{force}"
    "ev.update(pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True)).compute()"
)
FORECAST_RUNS = {
    "expr streaming": (
        "import polars as pl, polars_eval as pe\n"
        "pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True).eval.forecast("
        f"{_FORECAST_ARGS}"
        ").collect(engine='streaming')"
    ),
    # every row kept and the task method at compute, as before the bounded state
    "Evaluation rows (before)": _FORECAST_EV.replace("{force}", "ev._forecast_cache = None\n"),
    "Evaluation states": _FORECAST_EV.replace("{force}", ""),
}
TASK_RUNS = {"binary": RUNS, "regression": REGRESSION_RUNS, "forecast": FORECAST_RUNS}

# --layout mixed (issue 27): plain files of 5e6 rows, every segment in every file
_SCAN = "pl.scan_parquet('{lake}/*.parquet')"
_METRICS3 = "metrics=['auc', 'logloss', 'ks']"
_BIN = "(pl.col('s') * 1000).floor().cast(pl.Int32).alias('bin')"
MIXED_RUNS = {
    "polars group_by(seg, y, bin).len()": (
        "import polars as pl\n"
        f"{_SCAN}.group_by('seg', 'y', {_BIN}).agg(pl.len()).collect(engine='streaming')"
    ),
    "Evaluation bins=1000": (
        "import polars as pl, polars_eval as pe\n"
        f"ev = pe.Evaluation('binary', label='y', score='s', by='seg', {_METRICS3}, bins=1000)\n"
        f"ev.update({_SCAN}).compute()"
    ),
    "namespace bins=1000": (
        "import polars as pl, polars_eval as pe\n"
        f"{_SCAN}.eval.binary('y', 's', by='seg', {_METRICS3}, bins=1000)"
        ".collect(engine='streaming')"
    ),
    "CLI --bins 1000": (
        "from polars_eval.cli import main\n"
        "main(['binary', '{lake}/*.parquet', '--label', 'y', '--score', 's', '--by', 'seg', "
        "'--metrics', 'auc,logloss,ks', '--bins', '1000', '--format', 'json'])"
    ),
    "polars group_by(seg, y, s4).len()": (
        "import polars as pl\n"
        f"{_SCAN}.group_by('seg', 'y', 's4').agg(pl.len()).collect(engine='streaming')"
    ),
    "Evaluation exact (s4)": (
        "import polars as pl, polars_eval as pe\n"
        f"ev = pe.Evaluation('binary', label='y', score='s4', by='seg', {_METRICS3})\n"
        f"ev.update({_SCAN}).compute()"
    ),
    "namespace exact (s4)": (
        "import polars as pl, polars_eval as pe\n"
        f"{_SCAN}.eval.binary('y', 's4', by='seg', {_METRICS3}).collect(engine='streaming')"
    ),
}
MIXED_REGRESSION_RUNS = {
    "polars group_by(seg) sums": (
        "import polars as pl\n"
        f"{_SCAN}.group_by('seg').agg(pl.len(), pl.col('actual', 'pred').sum(), "
        "(pl.col('actual') - pl.col('pred')).abs().sum().alias('ae'))"
        ".collect(engine='streaming')"
    ),
    "Evaluation states": _REGRESSION_EV.replace("{force}", "").replace(
        "pl.scan_parquet('{lake}/**/*.parquet', hive_partitioning=True)", _SCAN
    ),
    "namespace streaming": (
        "import polars as pl, polars_eval as pe\n"
        f"{_SCAN}.eval.regression('actual', 'pred', by='seg', metrics={REGRESSION_METRICS!r})"
        ".collect(engine='streaming')"
    ),
}
MIXED_TASK_RUNS = {"binary": MIXED_RUNS, "regression": MIXED_REGRESSION_RUNS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=float, default=[1e7])
    parser.add_argument("--decimals", nargs="+", default=["none", "4"])
    parser.add_argument("--dir", default=os.environ.get("TMPDIR", "/tmp") + "/pe_lakes")
    parser.add_argument("--task", choices=list(TASK_RUNS), default="binary")
    parser.add_argument("--runs", nargs="+", default=None, help="default: every run of --task")
    parser.add_argument("--series", type=float, default=1e4, help="forecast: series")
    parser.add_argument(
        "--layout",
        choices=["segment", "mixed"],
        default="segment",
        help="segment: a hive lake, one segment per file; mixed: every segment in every file",
    )
    parser.add_argument(
        "--max-mib",
        type=float,
        default=None,
        help="mixed: kill a run whose resident memory passes this (a shared machine's guard)",
    )
    args = parser.parse_args()
    print(machine_line(), f"| polars_eval from {Path(pe.__file__).parent}")
    if args.layout == "mixed":
        return mixed(args)
    runs = TASK_RUNS[args.task]
    for rows in args.rows:
        for dec in ["none"] if args.task == "forecast" else args.decimals:
            decimals = None if dec == "none" else int(dec)
            lake = write_lake(
                Path(args.dir).resolve(),
                int(rows),
                decimals,
                task=args.task,
                series=int(args.series),
            )
            detail = (
                f"{int(args.series):.0e} series"
                if args.task == "forecast"
                else (f"values at {dec} decimals")
            )
            print(f"\n{args.task}: {int(rows):.0e} rows, {detail}, {SEGMENTS} segments")
            base = None
            for name in args.runs or list(runs):
                result = run_child(runs[name].replace("{lake}", str(lake)))
                base = base or result["seconds"]
                print(
                    f"  {name:22s} {result['seconds']:8.2f} s  peak {result['peak_mib']:8.0f} MiB"
                    f"  ({result['seconds'] / base:.2f}× the first; CPU {result['cpu_s']:.1f} s)"
                )


def mixed(args: argparse.Namespace) -> None:
    """``--layout mixed``: the runs of ``MIXED_TASK_RUNS`` on plain lakes whose files
    each hold every segment, the ratio of seconds and of peaks to the first run."""
    runs = MIXED_TASK_RUNS[args.task]
    for rows in args.rows:
        lake = write_mixed_lake(Path(args.dir).resolve(), int(rows), task=args.task)
        files = len(list(lake.glob("*.parquet")))
        print(f"\n{args.task}: {int(rows):.0e} rows in {files} files, {SEGMENTS} segments in each")
        base = None
        for name in args.runs or list(runs):
            load = os.getloadavg()[0]
            code = runs[name].replace("{lake}", str(lake))
            result = run_child(code, timeout=6 * 3600, max_mib=args.max_mib)
            if "killed_at_s" in result:
                print(
                    f"  {name:36s} killed after {result['killed_at_s']:.0f} s at "
                    f"{result['peak_mib']:.0f} MiB (--max-mib)  load {load:.1f}",
                    flush=True,
                )
                continue
            base = base or result
            print(
                f"  {name:36s} {result['seconds']:8.2f} s  CPU {result['cpu_s']:7.1f} s  "
                f"peak {result['peak_mib']:6.0f} MiB  ({result['seconds'] / base['seconds']:.2f}× "
                f"the first's time, {result['cpu_s'] / base['cpu_s']:.2f}× its CPU, "
                f"{result['peak_mib'] / base['peak_mib']:.2f}× its peak)  "
                f"load {load:.1f}/{os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
