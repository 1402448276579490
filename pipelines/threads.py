"""A task's native thread pools (OpenMP, BLAS, Arrow, DuckDB) sized to the cores it was given."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_task_threads = 0  # 0: no task is running in this process (libraries keep their defaults)


@contextlib.contextmanager
def task_threads(n: int) -> Iterator[None]:
    """While a task runs: OpenMP and BLAS (threadpoolctl), Arrow's CPU pool and the DuckDB connections the task
    opens use at most `n` threads. A local worker is one process per core: left at their defaults, k-means and
    sparse products in `fit` ran on every core (and were slower than on one, measured on 2 cores), and parquet
    decoding took cores that other workers were using."""
    global _task_threads
    import pyarrow as pa
    from threadpoolctl import threadpool_limits

    n, saved = max(1, int(n)), (_task_threads, pa.cpu_count())
    pa.set_cpu_count(n)
    _task_threads = n
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        _task_threads = saved[0]
        pa.set_cpu_count(saved[1])


def duckdb_threads() -> dict:
    """DuckDB connection settings for the running task's thread limit."""
    return {"threads": _task_threads} if _task_threads else {}
