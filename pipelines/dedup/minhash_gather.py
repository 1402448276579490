"""Stage `minhash_gather`: each prepared file read once, its candidate near-duplicate documents sent to the
verification partitions that compare them (a shuffle), so that a verification task reads its own partition only.

Without it each verification task read every row group (128 documents) of the prepared files that held one of its
candidates: with T tasks the stage read about T times the candidates' files (superlinear in the corpus)."""

from __future__ import annotations

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import PART, sorted_batches, write_partitions
from mixture.stages.registry import GATHER_REQUESTS, GATHERED_TEXTS, NEAR, PREPARED

# what the bucket stage asks of prepared file f (GATHER_REQUESTS): its row `idx`, the document's spec position
# `g`, and the verification partition `dest` that needs it
REQUESTS = pa.schema([("idx", pa.int64()), ("g", pa.int64()), ("dest", pa.int32())])
# what a verification partition receives (GATHERED_TEXTS): each candidate document once
FETCHED = ("minhash", "text", "id", "source", "origin")
GATHERED = pa.schema([("g", pa.int64()), ("minhash", pa.binary()), ("text", pa.string()), ("id", pa.string()),
                      ("source", pa.string()), ("origin", pa.string())])
INSERT_BYTES = 16 << 20  # rows read from the prepared file are handed to DuckDB this many text bytes at a time


class MinhashGather(PartitionedStep):
    """Stage `minhash_gather`, task f: the rows of prepared file f that a candidate pair names (every bucket
    task's requests for the file, GATHER_REQUESTS in `folder`), read once, only the row groups that hold one → each
    document, with its signature, text and evidence fields, to every verification partition that asked for it
    (GATHERED_TEXTS). The rows wait in DuckDB, sorted by partition (spilled past
    `memory_limit`), so memory does not grow with the file."""

    name = "🎯 MinHash gather candidates"

    def __init__(self, folder: str, prepared: str, memory_limit: str | None = None, partitions: int | None = None):
        super().__init__(memory_limit)
        self.folder, self.prepared, self.partitions = folder, prepared, partitions

    def inputs(self, rank: int) -> list[tuple]:
        return [("raw_requests", GATHER_REQUESTS.every(self.folder), REQUESTS, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        con.execute("CREATE TABLE wanted AS SELECT DISTINCT idx, g, dest FROM raw_requests")
        rows = con.execute("SELECT DISTINCT idx FROM wanted ORDER BY idx").fetchnumpy()["idx"]
        con.execute("""CREATE TABLE docs (idx BIGINT, minhash BLOB, text VARCHAR, id VARCHAR, source VARCHAR,
                       origin VARCHAR)""")
        if len(rows):
            self._read(con, np.asarray(rows, np.int64), rank)
        written = write_partitions(sorted_batches(con, f"""
            SELECT w.g, d.minhash, d.text, d.id, d.source, d.origin, w.dest AS {PART}
            FROM wanted w JOIN docs d USING (idx) ORDER BY {PART}"""),
            GATHERED_TEXTS.path(self.folder, rank), self.partitions or self.world_size)
        return {"documents_gathered": len(rows), "documents_sent": sum(written.values())}

    def _read(self, con, rows: np.ndarray, rank: int) -> None:
        """Table `docs`: rows `rows` (ascending) of prepared file `rank`, each row group that holds one read once."""
        fs, root = fsspec.core.url_to_fs(self.prepared)
        held: list[pa.Table] = []
        size = 0

        def insert() -> None:
            con.register("batch", pa.concat_tables(held))
            con.execute("INSERT INTO docs SELECT idx, minhash, text, id, source, origin FROM batch")
            con.unregister("batch")
            held.clear()

        with fs.open(PREPARED.path(root, rank), "rb") as f:
            pf = pq.ParquetFile(f)
            ends = np.cumsum([pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)])
            group = np.searchsorted(ends, rows, side="right")
            for g in np.unique(group):
                sel = rows[group == g]
                t = pf.read_row_group(int(g), columns=list(FETCHED)).take(pa.array(sel - (ends[g - 1] if g else 0)))
                held.append(t.append_column("idx", pa.array(sel, pa.int64())))
                size += t.nbytes
                if size >= INSERT_BYTES:
                    insert()
                    size = 0
        if held:
            insert()


def steps(ctx: BuildContext) -> list:
    """Per prepared file: its candidate documents, read once, sent to the verification partitions that need them."""
    return [MinhashGather(ctx.at(NEAR), ctx.at(PREPARED.folder), ctx.memory_limit("minhash_gather"), ctx.partitions)]
