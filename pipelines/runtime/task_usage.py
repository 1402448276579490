"""What each task used: wall and CPU seconds and peak memory, written beside its completion marker as
`_build/<stage>/usage/<rank>.json` (on every executor: local, Ray, Slurm)."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import time
from collections.abc import Callable
from typing import TypeVar

from datatrove.io import DataFolder
from datatrove.utils.logging import logger

USAGE_DIR = "usage"
T = TypeVar("T")


def _status_kb(key: str) -> int | None:
    """A `kB` field of /proc/self/status (Linux), or None."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    return None


def reset_peak() -> bool:
    """Restart the process's peak-RSS counter (`VmHWM`; Linux ≥ 4.0: "5" into /proc/self/clear_refs), so the peak
    read at the end is the task's own; False where it cannot be reset (the peak is then the process's so far)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int:
    """Peak resident memory of this process in bytes: VmHWM, else ru_maxrss (kB on Linux)."""
    kb = _status_kb("VmHWM:")
    return 1024 * (kb if kb is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def record_usage(logging_dir: DataFolder, rank: int, run: Callable[[], T]) -> T:
    """Run one task (`run`: the executor's own run of it) and write what it used to `usage/<rank>.json`:
    `wall_seconds`, `cpu_seconds` (user + system of the process that ran it, all its threads, while it ran),
    `peak_rss_bytes` and `peak_rss_scope` ("task", or "process" where the counter could not be reset: the process's
    peak since it started, an upper bound), `pid`, `host`. Nothing is written for a task skipped as finished; a
    record that cannot be written is logged, never a task failure."""
    scope = "task" if reset_peak() else "process"
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    result = run()
    if not getattr(result, "stats", None):  # datatrove returns empty stats for a task it skipped
        return result
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    usage = {"rank": rank, "wall_seconds": round(time.perf_counter() - t0, 4),
             "cpu_seconds": round(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, 4),
             "user_seconds": round(r1.ru_utime - r0.ru_utime, 4), "system_seconds": round(r1.ru_stime - r0.ru_stime, 4),
             "peak_rss_bytes": peak_rss(), "peak_rss_scope": scope, "pid": os.getpid(), "host": socket.gethostname()}
    try:
        with logging_dir.open(f"{USAGE_DIR}/{rank:05d}.json", "w") as f:
            json.dump(usage, f)
    except Exception as exc:  # noqa: BLE001 - the task's work is done and marked; its usage record is extra
        logger.warning(f"could not write the usage record of task {rank}: {type(exc).__name__}: {exc}")
    return result
