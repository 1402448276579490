"""Keep a task's memory from creeping up with its input: fewer malloc arenas and Arrow on the system allocator."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
from functools import cache

M_ARENA_MAX, M_MMAP_THRESHOLD = -8, -3  # glibc mallopt parameters


@cache
def configure_memory() -> None:
    """Once per process, before a task runs: at most 2 glibc malloc arenas (every short-lived thread may otherwise
    get an arena of its own that keeps its freed pages), a fixed 256 KiB mmap threshold (glibc raises it to the
    largest block freed so far, after which big batch buffers come from the heap and their pages stay: −56 MiB at
    the end of a 1× build and −64 MiB at 10× in bench/memory_bench.py) and Arrow's buffers on the system allocator
    instead of mimalloc, which keeps freed segments. With the bounded writer buffers and single-threaded
    tokenizing, the build's peak memory over 10x the input went from 1.30x to 1.12x. The C++ code that takes Arrow's
    own default pool is put on the system allocator when `mixture` is imported (mixture/__init__.py)."""
    import pyarrow as pa

    name = ctypes.util.find_library("c")
    with contextlib.suppress(OSError, AttributeError):  # glibc only
        libc = ctypes.CDLL(name)
        libc.mallopt(M_ARENA_MAX, 2)
        libc.mallopt(M_MMAP_THRESHOLD, 256 * 1024)
    pa.set_memory_pool(pa.system_memory_pool())

