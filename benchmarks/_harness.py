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


def run_child(code: str, timeout: float = 3600, max_mib: float | None = None) -> dict[str, float]:
    """Run ``code`` in a fresh Python process: its wall time (``seconds``), peak resident
    memory (``peak_mib``) and CPU time of all its threads (``cpu_s``, imports included: a
    measure that the load of a shared machine inflates less than the wall time).

    The child imports the ``polars_eval`` the parent imported: a ``python -c`` child puts
    its working directory first on ``sys.path``, so run from a checkout it would import
    that checkout's package, not the one ``PYTHONPATH`` names for a before/after run.

    With ``max_mib`` the child is killed once its resident memory passes it (read every
    0.2 s, a shared machine's guard): the result then holds ``killed_at_s``, the seconds
    it ran, and ``peak_mib`` the last resident memory read.
    """
    import polars_eval

    root = str(Path(polars_eval.__file__).resolve().parent.parent)
    args = [sys.executable, "-c", _CHILD, code, root]
    if max_mib is not None:
        return _guarded(args, timeout, max_mib)
    out = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"child failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _guarded(args: list[str], timeout: float, max_mib: float) -> dict[str, float]:
    # run_child with a resident-memory guard: poll the child's VmRSS, kill it past max_mib
    start = time.perf_counter()
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        rss = 0.0
        while p.poll() is None:
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    line = next(x for x in f if x.startswith("VmRSS:"))
                rss = int(line.split()[1]) / 1024
            except (OSError, StopIteration):
                pass
            elapsed = time.perf_counter() - start
            if rss > max_mib or elapsed > timeout:
                p.kill()
                p.wait()
                return {
                    "seconds": float("nan"),
                    "peak_mib": rss,
                    "cpu_s": float("nan"),
                    "killed_at_s": elapsed,
                }
            time.sleep(0.2)
        out, err = p.communicate()
    if p.returncode != 0:
        raise RuntimeError(f"child failed:\n{err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])
