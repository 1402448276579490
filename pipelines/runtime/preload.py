"""What every worker of a local pool would load on its first task, loaded once by the driver before it forks them."""

from __future__ import annotations

import importlib

from mixture.pipelines.runtime.memory import configure_memory

# modules the tasks import lazily (the dedup stages' DuckDB, the shuffles' Arrow datasets): imported in each forked
# worker on its first task, they cost ~0.05-0.2 s per worker and stage. None starts a thread on import.
TASK_IMPORTS = ("duckdb", "pyarrow.dataset")


def preload(pipeline: list) -> None:
    """Sets the task's allocator (configure_memory: its libc lookup runs `ldconfig`, ~10 ms), imports TASK_IMPORTS,
    makes threadpoolctl's first scan of the loaded libraries and calls `preload()` on each step that has it (a
    tokenizer, a benchmark index: what a step caches per process), so that the workers forked next inherit them.
    Only what is safe to fork: no thread pool, no open database (each worker opens its own DuckDB)."""
    configure_memory()  # what every task sets first, once per process: the forked workers inherit it
    for name in TASK_IMPORTS:
        importlib.import_module(name)
    from threadpoolctl import ThreadpoolController

    ThreadpoolController()
    for step in pipeline:
        load = getattr(step, "preload", None)
        if callable(load):
            load()
