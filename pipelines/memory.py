"""Keep a task's memory from creeping up with its input: fewer malloc arenas, Arrow on the system allocator, and
freed pages given back between batches."""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

M_ARENA_MAX = -8  # glibc mallopt parameter


@cache
def _libc():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return libc if libc is not None and hasattr(libc, "malloc_trim") else None  # glibc only
    except OSError:
        return None


@cache
def configure_memory() -> None:
    """Once per process, before a task runs: at most 2 glibc malloc arenas (every short-lived thread may otherwise
    get an arena of its own that keeps its freed pages) and Arrow's buffers on the system allocator instead of
    mimalloc, which keeps freed segments. With the bounded writer buffers and single-threaded tokenizing, the
    build's peak memory over 10x the input went from 1.30x to 1.12x (bench/memory_bench.py)."""
    import pyarrow as pa

    libc = _libc()
    if libc is not None:
        libc.mallopt(M_ARENA_MAX, 2)
    pa.set_memory_pool(pa.system_memory_pool())


def release_memory() -> None:
    """glibc `malloc_trim(0)` (freed pages inside the heap, not only at its top) and Arrow's `release_unused`."""
    import pyarrow as pa

    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
    pa.default_memory_pool().release_unused()
