"""The DuckDB connection a task opens: its threads and memory limit from the task's configuration, a local spill
folder past that limit (pipelines/runtime/scratch.py), one instance per process shared by the tasks that run in it
one after another."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator

from mixture.pipelines.runtime.scratch import scratch_folder
from mixture.pipelines.runtime.threads import duckdb_threads

_db: dict = {}  # pid → this process's DuckDB instance (a forked child never uses its parent's): opening one takes
# ~20 ms, and a build opens one per task of every dedup stage
_db_lock = threading.Lock()
_db_dirty: list = []  # not empty: the last task's tables may remain


def _process_db():
    import duckdb

    pid = os.getpid()
    if pid not in _db:
        _db[pid] = duckdb.connect(config={"temp_directory": scratch_folder("duckdb-"), "preserve_insertion_order": False})
    return _db[pid]


def _drop_tables(con) -> None:
    """Drop every table and view of the shared instance's main schema (a task's own, when it ends)."""
    for name, kind in con.execute("""SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE database_name = 'memory'
                                     UNION ALL SELECT view_name, 'VIEW' FROM duckdb_views()
                                     WHERE database_name = 'memory' AND NOT internal AND NOT temporary""").fetchall():
        con.execute(f'DROP {kind} IF EXISTS memory.main."{name}"')


@contextlib.contextmanager
def duckdb_connection(memory_limit: str | None = None) -> Iterator:
    """A DuckDB connection sized to the running task (pipelines/runtime/threads.py), with `memory_limit` (e.g. "1.5GB";
    None: DuckDB's default, 80 % of the machine), spilling to a temporary local folder past that limit. The
    process's DuckDB instance is shared by the tasks that run in it one after another, each dropping the tables it
    made (a second connection while one is open gets an instance of its own)."""
    import duckdb

    if not _db_lock.acquire(blocking=False):
        spill = scratch_folder("duckdb-")
        config = {"temp_directory": spill, "preserve_insertion_order": False, **duckdb_threads()}
        con = duckdb.connect(config={**config, **({"memory_limit": memory_limit} if memory_limit else {})})
        try:
            yield con
        finally:
            con.close()
            shutil.rmtree(spill, ignore_errors=True)
        return
    try:
        con = _process_db().cursor()
        try:
            if _db_dirty:  # a task failed before it could drop its tables
                _drop_tables(con)
            _db_dirty.append(True)
            threads = duckdb_threads().get("threads")
            con.execute(f"SET threads = {int(threads)}" if threads else "RESET threads")
            con.execute(f"SET memory_limit = '{memory_limit}'" if memory_limit else "RESET memory_limit")
            yield con
        finally:
            with contextlib.suppress(duckdb.Error):  # a failed task's connection may refuse: the next one drops them
                _drop_tables(con)
                _db_dirty.clear()
            con.close()
    finally:
        _db_lock.release()


def scalar(con, sql: str) -> int:
    """The one value `sql` returns, as an int."""
    return int(con.execute(sql).fetchall()[0][0])
