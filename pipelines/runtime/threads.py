"""A task's native thread pools (OpenMP, BLAS, Arrow, DuckDB) sized to the cores it was given."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

_task_threads = 0  # 0: no task is running in this process (libraries keep their defaults)
# read by OpenMP and BLAS libraries when they load: a library first loaded inside a task (scipy's own OpenBLAS and
# scikit-learn's OpenMP in a fresh Slurm or Ray process) would otherwise take one thread per core of the node,
# which threadpoolctl cannot limit after the fact and which changed the fitted embedder with the node's core count
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


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
    saved_env = {k: os.environ.get(k) for k in THREAD_ENV}
    os.environ.update({k: str(n) for k in THREAD_ENV})
    pa.set_cpu_count(n)
    _task_threads = n
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        _task_threads = saved[0]
        pa.set_cpu_count(saved[1])
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def duckdb_threads() -> dict:
    """DuckDB connection settings for the running task's thread limit."""
    return {"threads": _task_threads} if _task_threads else {}
