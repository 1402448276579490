"""The keys of the exact-dedup shuffle: `prepare` ends with `DedupKeys`, which sends each document's keys to the
partition of its id (stage `duplicate_ids`) and to that of its exact hash (stage `find_duplicates`), and records
where each source file's documents are, from which a document's position in spec order follows
(`spec_positions`)."""

from __future__ import annotations

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.dedup.shuffle import (
    PART,
    matching_files,
    prefix_partition,
    sorted_batches,
    string_hashes,
    write_partitions,
    write_rows,
)
from mixture.pipelines.runtime.duckdb_connection import duckdb_connection
from mixture.stages.registry import KEYS_BY_HASH, KEYS_BY_ID, PREPARED, SOURCE_RUNS
from mixture.store.row_groups import row_group_batches

# a document's key row, in both shuffles (`hash_part`: the partition of its exact hash, where the id check sends
# the documents it drops)
KEYS = pa.schema([("rank", pa.int32()), ("idx", pa.int64()), ("id", pa.string()), ("source", pa.string()),
                  ("source_order", pa.int32()), ("origin", pa.string()), ("exact_hash", pa.uint64()),
                  ("hash_part", pa.int32())])
# per prepared file: the run of its rows each source file's documents fill (in record order), for spec positions
FILES = pa.schema([("source_order", pa.int32()), ("file", pa.string()), ("rank", pa.int32()),
                   ("first_idx", pa.int64()), ("n", pa.int64())])
_READ = ["rank", "idx", "id", "source", "source_order", "origin", "exact_hash"]

# the documents of a view of KEYS rows, with the file and record their origin names (the spec order's keys)
DOCS = """SELECT rank, idx, id, source, source_order, exact_hash, hash_part,
          regexp_extract(origin, '^(.*):[0-9]+$', 1) AS file,
          CAST(regexp_extract(origin, ':([0-9]+)$', 1) AS BIGINT) AS record FROM {table}"""


class DedupKeys(PipelineStep):
    """Last step of `prepare`, once the task's prepared file is written: its documents' keys (id, source, origin,
    exact hash, address) to the partition of their id and to that of their exact hash, one file per partition
    (KEYS_BY_ID, KEYS_BY_HASH in `folder`; a partition without rows gets none), and where each source file's
    documents are in the prepared file (SOURCE_RUNS). Partition = hash prefix over `partitions` (P, the tasks of the
    dedup stages that read them; default: as many as `prepare` has tasks); a shuffle file each (one per task)."""

    type = "🫂 - DEDUP"
    name = "dedup keys by hash partition"

    def __init__(self, prepared: str, folder: str, memory_limit: str | None = None, partitions: int | None = None):
        super().__init__()
        self.prepared, self.folder, self.memory_limit = prepared, folder, memory_limit
        self.partitions = partitions

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data  # the work writer before this step closes the prepared file when its input ends
        fs, path = fsspec.core.url_to_fs(PREPARED.path(self.prepared, rank))
        fs.invalidate_cache(path.rsplit("/", 1)[0])  # just written, maybe through another filesystem instance
        parts = self.partitions or world_size
        with duckdb_connection(self.memory_limit) as con:
            con.execute("""CREATE TABLE keys (rank INTEGER, idx BIGINT, id VARCHAR, source VARCHAR,
                           source_order INTEGER, origin VARCHAR, exact_hash UBIGINT, hash_part INTEGER,
                           id_part INTEGER)""")
            if fs.exists(path):
                with fs.open(path, "rb") as f:
                    for batch in row_group_batches(pq.ParquetFile(f), 65_536, _READ):
                        t = pa.Table.from_batches([batch])
                        hashes = t.column("exact_hash").fill_null(0).to_numpy()
                        t = t.append_column("hash_part", pa.array(prefix_partition(hashes, parts)))
                        ids = string_hashes(t.column("id").to_pylist())
                        t = t.append_column("id_part", pa.array(prefix_partition(ids, parts)))
                        con.register("batch", t)
                        con.execute("INSERT INTO keys SELECT * FROM batch")
                        con.unregister("batch")
            columns = ", ".join(KEYS.names)
            for kind, file in (("id", KEYS_BY_ID), ("hash", KEYS_BY_HASH)):
                written = write_partitions(
                    sorted_batches(con, f"SELECT {columns}, {kind}_part AS {PART} FROM keys ORDER BY {PART}"),
                    file.path(self.folder, rank), parts)
                self.stat_update(f"{kind}_partitions", value=len(written))
            write_rows(SOURCE_RUNS.path(self.folder, rank), self._files(con, rank))

    def _files(self, con, rank: int) -> pa.Table:
        """Per source file: the first row and the number of rows of its documents, which must be consecutive rows
        in record order (a task reads whole files, one after the other): then a document's position in spec order
        is its file's first position plus its row's offset (see `spec_positions`)."""
        con.execute("CREATE TEMP TABLE located AS SELECT source_order, file, record, idx "
                    f"FROM ({DOCS.format(table='keys')})")
        broken = con.execute("""
            SELECT source_order, file FROM (SELECT source_order, file, idx, record,
                   lag(idx) OVER w AS prev_idx, lag(record) OVER w AS prev_record
                   FROM located WINDOW w AS (PARTITION BY source_order, file ORDER BY idx))
            WHERE prev_idx IS NOT NULL AND (idx <> prev_idx + 1 OR record <= prev_record) LIMIT 1""").fetchall()
        if broken:
            raise ValueError(f"prepared file {rank:05d}: the documents of source #{broken[0][0]} file "
                             f"{broken[0][1]!r} are not consecutive rows in record order; spec positions need them so")
        table = con.sql(f"""SELECT source_order, file, {int(rank)}::INTEGER AS rank, min(idx) AS first_idx,
                            count(*) AS n FROM located GROUP BY source_order, file ORDER BY first_idx""")
        return table.to_arrow_table().cast(FILES)


def prepared_files(folder: str) -> int:
    """The number of prepared files (one SOURCE_RUNS file each, in `folder`): the partitions of the drop lists
    when a step is not told them."""
    return len(matching_files(SOURCE_RUNS.every(folder)))


def spec_positions(folder: str) -> tuple[np.ndarray, np.ndarray]:
    """From the prepared files' file tables (SOURCE_RUNS in `folder`): (sorted keys rank << 40 | first row, offset),
    such that a document's position in spec order (source, file, record) over every prepared document is
    `offset[i] + idx` for the last key `i` not above its `rank << 40 | idx` (see `positions`)."""
    import pyarrow.dataset as pads

    files = matching_files(SOURCE_RUNS.every(folder))
    if not files:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    fs, _ = fsspec.core.url_to_fs(files[0])
    table = pads.dataset([fsspec.core.url_to_fs(f)[1] for f in files], filesystem=fs, schema=FILES).to_table()
    with duckdb_connection() as con:
        con.register("files", table)
        dup = con.execute("SELECT source_order, file FROM files GROUP BY ALL HAVING count(*) > 1 LIMIT 1").fetchall()
        if dup:
            raise ValueError(f"source #{dup[0][0]} file {dup[0][1]!r} is in two prepared files")
        got = con.execute("""SELECT rank, first_idx, sum(n) OVER (ORDER BY source_order, file ROWS UNBOUNDED PRECEDING)
                             - n AS base FROM files ORDER BY rank, first_idx""").fetchnumpy()
    keys = (np.asarray(got["rank"]).astype(np.int64) << 40) | np.asarray(got["first_idx"]).astype(np.int64)
    return keys, np.asarray(got["base"]).astype(np.int64) - np.asarray(got["first_idx"]).astype(np.int64)


def positions(table: tuple[np.ndarray, np.ndarray], rank: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The spec positions of documents (rank, idx) from `spec_positions`' table."""
    keys, offset = table
    at = np.searchsorted(keys, (rank.astype(np.int64) << 40) | idx.astype(np.int64), side="right") - 1
    if len(at) and ((at < 0).any() or ((keys[np.maximum(at, 0)] >> 40) != rank).any()):
        raise ValueError("a document outside every file table of its prepared file (dedup/files/ incomplete?)")
    return offset[at] + idx.astype(np.int64)
