"""Hash-partitioned work files between two stages (a shuffle): a writer task splits its rows by partition into
`<folder>/<partition>/<writer>.parquet`, and task q of the next stage reads `<folder>/<q>/` alone; and the one-row
counts a task leaves for a later stage to sum."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

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


def matching_files(pattern: str) -> list[str]:
    """The files a glob matches (any fsspec URI; e.g. every writer's file of one partition, TaskFile.every), sorted;
    none when their folder does not exist (no writer had rows for the partition)."""
    fs, path = fsspec.core.url_to_fs(pattern)
    parts = path.split("/")
    wild = next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), len(parts) - 1)
    fs.invalidate_cache("/".join(parts[:wild]))  # written by other processes: a cached listing would be stale
    return [fs.unstrip_protocol(p) for p in sorted(fs.glob(path))]


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


def write_counts(uri: str, schema: pa.Schema, counts: dict[str, int]) -> None:
    """A task's counts (the fields of `schema`) as a one-row Parquet file, published atomically."""
    write_rows(uri, pa.table({k: [int(counts[k])] for k in schema.names}, schema=schema))


def summed_counts(pattern: str, schema: pa.Schema) -> dict[str, int]:
    """The counts of every task that wrote one (`write_counts`; `pattern`: a glob of their files), summed field by
    field."""
    total = dict.fromkeys(schema.names, 0)
    for path in matching_files(pattern):
        for k, v in read_small(path, schema).to_pylist()[0].items():
            total[k] += int(v)
    return total
