"""Repeated ids and exact duplicates, partitioned: each task decides the documents of one hash partition.

`prepare` ends with `DedupKeys`: its documents' keys go to the partition of their id and of their exact hash
(`_build/work/dedup/by_id/<q>/<task>.parquet`, `by_hash/<q>/…`). Stage `duplicate_ids`, task q, lists the later
occurrences of the ids of partition q; stage `find_duplicates`, task q, the later occurrences of the texts of
hash partition q among the documents whose id was not dropped (the id check routed them there). Both keep the
first document in spec order (source, file, record) and write their drops by prepared file
(`_build/work/drops/<file>/{ids,exact}-<q>.parquet`), the files `load_drops` reads: the decisions and their
evidence are those of one DuckDB query over every document, since all documents of one id (one text) are in one
partition."""

from __future__ import annotations

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.dedup.shuffle import (
    PART,
    duckdb_connection,
    partition_files,
    prefix_partition,
    read_small,
    register,
    sorted_batches,
    string_hashes,
    write_partitions,
    write_rows,
)
from mixture.pipelines.schemas import DROPS

# a document's key row, in both shuffles (`hash_part`: the partition of its exact hash, where the id check sends
# the documents it drops)
KEYS = pa.schema([("rank", pa.int32()), ("idx", pa.int64()), ("id", pa.string()), ("source", pa.string()),
                  ("source_order", pa.int32()), ("origin", pa.string()), ("exact_hash", pa.uint64()),
                  ("hash_part", pa.int32())])
GONE = pa.schema([("rank", pa.int32()), ("idx", pa.int64())])  # documents of a hash partition the id check dropped
# per prepared file: the run of its rows each source file's documents fill (in record order), for spec positions
FILES = pa.schema([("source_order", pa.int32()), ("file", pa.string()), ("rank", pa.int32()),
                   ("first_idx", pa.int64()), ("n", pa.int64())])
COUNTS = pa.schema([("drops", pa.int64())])
_READ = ["rank", "idx", "id", "source", "source_order", "origin", "exact_hash"]

# the documents of a view of KEYS rows, with the file and record their origin names (the spec order's keys)
DOCS = """SELECT rank, idx, id, source, source_order, exact_hash, hash_part,
          regexp_extract(origin, '^(.*):[0-9]+$', 1) AS file,
          CAST(regexp_extract(origin, ':([0-9]+)$', 1) AS BIGINT) AS record FROM {table}"""

# every occurrence of a repeated `key` after the first in spec order (source, file, record), with the first
# occurrence's id, source, file and record
LATER = """
    WITH rep AS (SELECT * FROM {table} WHERE {key} IN (SELECT {key} FROM {table} GROUP BY {key} HAVING count(*) > 1))
    SELECT rank, idx, first_id, first_source, first_file, first_record FROM (
        SELECT rank, idx, row_number() OVER w AS n, first_value(id) OVER w AS first_id,
               first_value(source) OVER w AS first_source, first_value(file) OVER w AS first_file,
               first_value(record) OVER w AS first_record
        FROM rep WINDOW w AS (PARTITION BY {key} ORDER BY source_order, file, record, rank, idx))
    WHERE n > 1"""


def drops_folder(work: str, rank: int) -> str:
    """Where the dedup stages list the drops of prepared file `rank` (one file per deciding task)."""
    return f"{work}/drops/{rank:05d}"


class DedupKeys(PipelineStep):
    """Last step of `prepare`, once the task's prepared file is written: its documents' keys (id, source, origin,
    exact hash, address) to the partition of their id and to that of their exact hash, one file per partition
    (`<folder>/by_id/<q>/<task>.parquet`, `by_hash/…`; a partition without rows gets none), and where each source
    file's documents are in the prepared file (`<folder>/files/<task>.parquet`). Partition = hash prefix, over as
    many partitions as `prepare` has tasks (the dedup stages have as many)."""

    type = "🫂 - DEDUP"
    name = "dedup keys by hash partition"

    def __init__(self, prepared: str, folder: str, memory_limit: str | None = None):
        super().__init__()
        self.prepared, self.folder, self.memory_limit = prepared, folder, memory_limit

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data  # the work writer before this step closes the prepared file when its input ends
        fs, path = fsspec.core.url_to_fs(f"{self.prepared}/{rank:05d}.parquet")
        fs.invalidate_cache(path.rsplit("/", 1)[0])  # just written, maybe through another filesystem instance
        with duckdb_connection(self.memory_limit) as con:
            con.execute("""CREATE TABLE keys (rank INTEGER, idx BIGINT, id VARCHAR, source VARCHAR,
                           source_order INTEGER, origin VARCHAR, exact_hash UBIGINT, hash_part INTEGER,
                           id_part INTEGER)""")
            if fs.exists(path):
                with fs.open(path, "rb") as f:
                    for batch in pq.ParquetFile(f).iter_batches(columns=_READ, batch_size=65_536):
                        t = pa.Table.from_batches([batch])
                        hashes = t.column("exact_hash").fill_null(0).to_numpy()
                        t = t.append_column("hash_part", pa.array(prefix_partition(hashes, world_size)))
                        ids = string_hashes(t.column("id").to_pylist())
                        t = t.append_column("id_part", pa.array(prefix_partition(ids, world_size)))
                        con.register("batch", t)
                        con.execute("INSERT INTO keys SELECT * FROM batch")
                        con.unregister("batch")
            columns = ", ".join(KEYS.names)
            for kind in ("id", "hash"):
                written = write_partitions(
                    sorted_batches(con, f"SELECT {columns}, {kind}_part AS {PART} FROM keys ORDER BY {PART}"),
                    lambda q, kind=kind: f"{self.folder}/by_{kind}/{q:05d}/{rank:05d}.parquet")
                self.stat_update(f"{kind}_partitions", value=len(written))
            write_rows(f"{self.folder}/files/{rank:05d}.parquet", self._files(con, rank))

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


def _details(batch: pa.RecordBatch, form: str) -> pa.Array:
    cols = [batch.column(c).to_pylist() for c in ("first_id", "first_source", "first_file", "first_record")]
    return pa.array([form.format(id=i, src=s, file=f, rec=r) for i, s, f, r in zip(*cols, strict=True)], pa.string())


def _write_drops(con, sql: str, reason: str, form: str, path_of) -> int:
    """The later occurrences `sql` lists (LATER's columns, ordered by rank and idx) as DROPS rows, one file per
    prepared file (`path_of(rank)`). Returns the number of drops."""
    def rows():
        for batch in sorted_batches(con, sql):
            yield pa.RecordBatch.from_arrays(
                [batch.column("rank"), batch.column("idx"), pa.array([reason] * batch.num_rows, pa.string()),
                 _details(batch, form), batch.column("rank")], names=[*DROPS.names, PART])
    return sum(write_partitions(rows(), path_of).values())


ID_DETAIL = "id {id!r} is already used by source {src!r} ({file}:{rec})"
EXACT_DETAIL = "same text as {id!r} ({src}, {file}:{rec})"


class DuplicateIds(PipelineStep):
    """Stage `duplicate_ids`, task q: the later occurrences (spec order) of the ids of id partition q are listed as
    `duplicate_id` (`<work>/drops/<file>/ids-<q>.parquet`, the detail naming the source, file and record that own
    the id), and sent to the partition of their exact hash (`<folder>/id_drops/<hash partition>/<q>.parquet`) for
    the exact check, which leaves them out."""

    type = "🫂 - DEDUP"
    name = "find repeated ids"

    def __init__(self, folder: str, work: str, memory_limit: str | None = None):
        super().__init__()
        self.folder, self.work, self.memory_limit = folder, work, memory_limit

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        with duckdb_connection(self.memory_limit) as con:
            register(con, "part", partition_files(f"{self.folder}/by_id/{rank:05d}"), KEYS)
            con.execute(f"CREATE TEMP TABLE docs AS {DOCS.format(table='part')}")
            con.execute(f"CREATE TEMP TABLE later AS {LATER.format(key='id', table='docs')}")
            n = _write_drops(con, "SELECT * FROM later ORDER BY rank, idx", "duplicate_id", ID_DETAIL,
                             lambda r: f"{drops_folder(self.work, r)}/ids-{rank:05d}.parquet")
            write_partitions(sorted_batches(con, f"""SELECT rank, idx, hash_part AS {PART} FROM later
                                                     JOIN docs USING (rank, idx) ORDER BY {PART}, rank, idx"""),
                             lambda q: f"{self.folder}/id_drops/{q:05d}/{rank:05d}.parquet")
        write_rows(f"{self.folder}/counts/ids-{rank:05d}.parquet", pa.table({"drops": [n]}, schema=COUNTS))
        self.stat_update("duplicate_id", value=n)


class ExactDuplicates(PipelineStep):
    """Stage `find_duplicates`, task q: among the documents of exact-hash partition q whose id was not dropped,
    the later occurrences (spec order) of a text are listed as `exact_duplicate`
    (`<work>/drops/<file>/exact-<q>.parquet`, the detail naming the kept copy). With exact dedup off, none."""

    type = "🫂 - DEDUP"
    name = "find exact duplicates"

    def __init__(self, folder: str, work: str, exact: bool, memory_limit: str | None = None):
        super().__init__()
        self.folder, self.work, self.exact, self.memory_limit = folder, work, exact, memory_limit

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        n = 0
        if self.exact:
            with duckdb_connection(self.memory_limit) as con:
                register(con, "part", partition_files(f"{self.folder}/by_hash/{rank:05d}"), KEYS)
                register(con, "gone", partition_files(f"{self.folder}/id_drops/{rank:05d}"), GONE)
                con.execute(f"CREATE TEMP TABLE kept AS SELECT * FROM ({DOCS.format(table='part')}) "
                            "ANTI JOIN gone USING (rank, idx)")
                later = LATER.format(key="exact_hash", table="kept")
                n = _write_drops(con, f"SELECT * FROM ({later}) ORDER BY rank, idx",
                                 "exact_duplicate", EXACT_DETAIL,
                                 lambda r: f"{drops_folder(self.work, r)}/exact-{rank:05d}.parquet")
        write_rows(f"{self.folder}/counts/exact-{rank:05d}.parquet", pa.table({"drops": [n]}, schema=COUNTS))
        self.stat_update("exact_duplicate", value=n)


def dropped_count(folder: str) -> int:
    """Documents the two dedup stages dropped, from their tasks' counts (`<folder>/counts/`)."""
    files = partition_files(f"{folder}/counts")
    return int(sum(read_small(f, COUNTS).column("drops").to_numpy().sum() for f in files))


def spec_positions(folder: str) -> tuple[np.ndarray, np.ndarray]:
    """From the prepared files' file tables (`<folder>/files/`): (sorted keys rank << 40 | first row, offset),
    such that a document's position in spec order (source, file, record) over every prepared document is
    `offset[i] + idx` for the last key `i` not above its `rank << 40 | idx` (see `positions`)."""
    import pyarrow.dataset as pads

    files = partition_files(f"{folder}/files")
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
