"""Hash-partitioned work files between two stages (a shuffle): a writer task splits its rows by partition into
`<folder>/<partition>/<writer>.parquet`, and task q of the next stage reads `<folder>/<q>/` alone.

Also the DuckDB connection every dedup task opens: its threads and memory limit from the task's configuration, a
local spill folder past that limit."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixture.pipelines.threads import duckdb_threads
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


@contextlib.contextmanager
def duckdb_connection(memory_limit: str | None = None) -> Iterator:
    """A DuckDB connection sized to the running task (pipelines/threads.py), with `memory_limit` (e.g. "1.5GB";
    None: DuckDB's default, 80 % of the machine) and a temporary local folder it spills to past that limit."""
    import duckdb

    spill = tempfile.mkdtemp(prefix="mixture-duckdb-")
    config = {"temp_directory": spill, "preserve_insertion_order": False, **duckdb_threads()}
    if memory_limit:
        config["memory_limit"] = memory_limit
    con = duckdb.connect(config=config)
    try:
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def partition_files(folder: str) -> list[str]:
    """The Parquet files of one partition folder (any fsspec URI), sorted; none when the folder does not exist (no
    writer had rows for it)."""
    fs, root = fsspec.core.url_to_fs(folder)
    fs.invalidate_cache(root)  # written by other processes: an object store's cached listing would be stale
    return [fs.unstrip_protocol(p) for p in sorted(fs.glob(f"{root}/*.parquet"))]


def register(con, name: str, files: list[str], schema: pa.Schema) -> None:
    """View `name` over `files` (streamed, only the columns a query uses are read); an empty table of `schema`
    when there are none."""
    import pyarrow.dataset as pads

    if not files:
        con.register(name, schema.empty_table())
        return
    fs, _ = fsspec.core.url_to_fs(files[0])
    paths = [fsspec.core.url_to_fs(f)[1] for f in files]
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
