"""Keep a task's memory from creeping up with its input: fewer malloc arenas and Arrow on the system allocator."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
from functools import cache

M_ARENA_MAX = -8  # glibc mallopt parameter


@cache
def configure_memory() -> None:
    """Once per process, before a task runs: at most 2 glibc malloc arenas (every short-lived thread may otherwise
    get an arena of its own that keeps its freed pages) and Arrow's buffers on the system allocator instead of
    mimalloc, which keeps freed segments. With the bounded writer buffers and single-threaded tokenizing, the
    build's peak memory over 10x the input went from 1.30x to 1.12x (bench/memory_bench.py)."""
    import pyarrow as pa

    name = ctypes.util.find_library("c")
    with contextlib.suppress(OSError, AttributeError):  # glibc only
        ctypes.CDLL(name).mallopt(M_ARENA_MAX, 2)
    pa.set_memory_pool(pa.system_memory_pool())

