"""Shared benchmark helpers: medians, peak memory of a child process, the machine line."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """The median wall time of ``repeat`` calls of ``fn`` (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine_line() -> str:
    """Architecture, cores, memory and versions: the line every RESULTS table carries."""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {mem:.0f} GiB, "
        f"Python {platform.python_version()}, Polars {pl.__version__}"
    )


def status_mib(field: str) -> float:
    """A field of ``/proc/self/status`` in MiB (``VmRSS``, ``VmHWM`` ...); NaN if absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


_CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])  # the parent's polars_eval, whatever the working directory
start = time.perf_counter()
exec(sys.argv[1])
elapsed = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
peak = usage.ru_maxrss  # KiB on Linux
cpu = usage.ru_utime + usage.ru_stime  # every thread's CPU time
print(json.dumps({"seconds": elapsed, "peak_mib": peak / 1024, "cpu_s": cpu}))
"""


def run_child(code: str, timeout: float = 3600) -> dict[str, float]:
    """Run ``code`` in a fresh Python process: its wall time (``seconds``), peak resident
    memory (``peak_mib``) and CPU time of all its threads (``cpu_s``, imports included: a
    measure that the load of a shared machine inflates less than the wall time).

    The child imports the ``polars_eval`` the parent imported: a ``python -c`` child puts
    its working directory first on ``sys.path``, so run from a checkout it would import
    that checkout's package, not the one ``PYTHONPATH`` names for a before/after run.
    """
    import polars_eval

    root = str(Path(polars_eval.__file__).resolve().parent.parent)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, code, root],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])
