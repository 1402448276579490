"""Hash-partitioned work files between two stages (a shuffle): a writer task splits its rows by partition into
`<folder>/<partition>/<writer>.parquet`, and task q of the next stage reads `<folder>/<q>/` alone.

Also the DuckDB connection every dedup task opens: its threads and memory limit from the task's configuration, a
local spill folder past that limit."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixture.pipelines.runtime.threads import duckdb_threads
from mixture.store.io import open_atomic

PART = "part"  # the column that names a row's partition in the streams given to `write_partitions`


def prefix_partition(hashes: np.ndarray, n: int) -> np.ndarray:
    """The partition (0 … n-1) of each 64-bit hash: its top 32 bits scaled to n, so partition q holds the hashes
    whose prefix lies in [q/n, (q+1)/n) of the range."""
    top = np.asarray(hashes, dtype=np.uint64) >> np.uint64(32)
    return ((top * np.uint64(n)) >> np.uint64(32)).astype(np.int32)


def mix64(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a stable 64-bit hash of each integer (documents' spec positions, numbered in order,
    would otherwise fill the partitions in runs)."""
    z = np.asarray(values).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def string_hashes(values: Iterable[str]) -> np.ndarray:
    """xxh3-64 of each string's UTF-8 bytes (lone surrogates kept), as uint64."""
    return np.fromiter((xxhash.xxh3_64_intdigest(v.encode("utf-8", "surrogatepass")) for v in values),
                       dtype=np.uint64)


_db: dict = {}  # pid → this process's DuckDB instance (a forked child never uses its parent's): opening one takes
# ~20 ms, and a build opens one per task of every dedup stage
_db_lock = threading.Lock()
_db_dirty: list = []  # not empty: the last task's tables may remain


def _process_db():
    import duckdb

    pid = os.getpid()
    if pid not in _db:
        spill = tempfile.mkdtemp(prefix="mixture-duckdb-")
        atexit.register(shutil.rmtree, spill, ignore_errors=True)
        _db[pid] = duckdb.connect(config={"temp_directory": spill, "preserve_insertion_order": False})
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
        spill = tempfile.mkdtemp(prefix="mixture-duckdb-")
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


def partition_files(folder: str) -> list[str]:
    """The Parquet files of one partition folder (any fsspec URI), sorted; none when the folder does not exist (no
    writer had rows for it)."""
    fs, root = fsspec.core.url_to_fs(folder)
    fs.invalidate_cache(root)  # written by other processes: an object store's cached listing would be stale
    return [fs.unstrip_protocol(p) for p in sorted(fs.glob(f"{root}/*.parquet"))]


def register(con, name: str, files: list[str], schema: pa.Schema) -> None:
    """View `name` over `files` (streamed, only the columns a query uses are read); an empty table of `schema`
    when there are none. Local files are read by DuckDB's own Parquet reader (a shuffle partition is one small file
    per writer task, T of them: ~0.4 ms per file and scan instead of ~1 ms through an Arrow dataset); other
    filesystems through fsspec."""
    import pyarrow.dataset as pads

    if not files:
        con.register(name, schema.empty_table())
        return
    fs, _ = fsspec.core.url_to_fs(files[0])
    paths = [fsspec.core.url_to_fs(f)[1] for f in files]
    if "file" in fs.protocol:
        con.read_parquet(paths).select(", ".join(f'"{f.name}"' for f in schema)).create_view(name)
        return
    con.register(name, pads.dataset(paths, filesystem=fs, format="parquet", schema=schema))


def write_partitions(batches: Iterable[pa.RecordBatch], path_of: Callable[[int], str],
                     compression: str = "zstd") -> dict[int, int]:
    """Rows sorted by their `part` column → one Parquet file per partition, `path_of(part)`, each published
    atomically once its last row is written; the `part` column is left out. Only one file is open at a time, so
    memory holds one batch whatever the number of partitions. Returns {partition: rows written}."""
    written: dict[int, int] = {}
    with contextlib.ExitStack() as stack:
        writer, current = None, None
        for batch in batches:
            if not batch.num_rows:
                continue
            parts = batch.column(PART).to_numpy()
            rows = batch.drop_columns([PART])
            cuts = np.flatnonzero(parts[1:] != parts[:-1]) + 1
            for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(parts)], strict=True):
                part = int(parts[lo])
                if part != current:
                    if current is not None and part < current:
                        raise ValueError(f"write_partitions: rows not sorted by partition ({part} after {current})")
                    stack.close()  # publish the previous partition's file
                    fs, path = fsspec.core.url_to_fs(path_of(part))
                    sink = stack.enter_context(open_atomic(fs, path))
                    writer = stack.enter_context(pq.ParquetWriter(sink, rows.schema, compression=compression))
                    current = part
                writer.write_batch(rows.slice(lo, hi - lo))
                written[part] = written.get(part, 0) + int(hi - lo)
    return written


def sorted_batches(con, sql: str, rows: int = 65_536) -> Iterator[pa.RecordBatch]:
    """The result of `sql` (which orders its rows by `part`) as Arrow batches, streamed."""
    yield from con.sql(sql).to_arrow_reader(rows)


def read_small(uri: str, schema: pa.Schema) -> pa.Table:
    """A small Parquet file (e.g. a task's counts) at any fsspec URI, read through fsspec (a `gs://` string given to
    pyarrow itself would go to Arrow's own GCS client and its credentials)."""
    fs, path = fsspec.core.url_to_fs(uri)
    with fs.open(path, "rb") as f:
        return pq.read_table(f, schema=schema)


def write_rows(uri: str, table: pa.Table, compression: str = "zstd") -> None:
    """A small table (e.g. a task's counts) as one Parquet file, published atomically."""
    fs, path = fsspec.core.url_to_fs(uri)
    with open_atomic(fs, path) as f:
        pq.write_table(table, f, compression=compression)
