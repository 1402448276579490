"""Stage `minhash_gather`: each prepared file read once, its candidate near-duplicate documents sent to the
verification partitions that compare them (a shuffle), so that a verification task reads its own partition only.

Without it each verification task read every row group (128 documents) of the prepared files that held one of its
candidates: with T tasks the stage read about T times the candidates' files (superlinear in the corpus)."""

from __future__ import annotations

from collections.abc import Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import PART, write_partitions
from mixture.pipelines.dedup.spilled_columns import SpilledColumns
from mixture.pipelines.runtime.scratch import scratch
from mixture.stages.registry import GATHER_REQUESTS, GATHERED_TEXTS, NEAR, PREPARED

# what the bucket stage asks of prepared file f (GATHER_REQUESTS): its row `idx`, the document's spec position
# `g`, and the verification partition `dest` that needs it
REQUESTS = pa.schema([("idx", pa.int64()), ("g", pa.int64()), ("dest", pa.int32())])
# what a verification partition receives (GATHERED_TEXTS): each candidate document once
GATHERED = pa.schema([("g", pa.int64()), ("minhash", pa.binary()), ("text", pa.string()), ("id", pa.string()),
                      ("source", pa.string()), ("origin", pa.string())])
FETCHED = pa.schema(list(GATHERED)[1:])  # the columns read from the prepared file, spilled to a local file
POSITIONS_ROWS = 65_536  # rows' positions handed to DuckDB at a time
SENT_ROWS = 512  # documents sent at a time, at most SENT_BYTES of their columns (a few long documents: fewer)
SENT_BYTES = 64 << 20


class MinhashGather(PartitionedStep):
    """Stage `minhash_gather`, task f: the rows of prepared file f that a candidate pair names (every bucket
    task's requests for the file, GATHER_REQUESTS in `folder`), read once, only the row groups that hold one → each
    document, with its signature, text and evidence fields, to every verification partition that asked for it
    (GATHERED_TEXTS).

    The documents' columns go to a local file as they are read (SpilledColumns); DuckDB sorts only each request's
    partition and the document's positions in that file (it spills those past `memory_limit`), and the documents
    are read back SENT_ROWS at a time in partition order. So the task holds a few hundred documents whatever its
    file's size: DuckDB (2.0) cannot sort rows of long texts past its memory limit (a 58 MB sort of 6 KB texts fails
    under a 64 MB limit), which a task of the 25.6T pool (~12 GB of text per prepared file) would meet."""

    name = "🎯 MinHash gather candidates"

    def __init__(self, folder: str, prepared: str, memory_limit: str | None = None, partitions: int | None = None):
        super().__init__(memory_limit)
        self.folder, self.prepared, self.partitions = folder, prepared, partitions

    def inputs(self, rank: int) -> list[tuple]:
        return [("raw_requests", GATHER_REQUESTS.every(self.folder), REQUESTS, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        con.execute("CREATE TABLE wanted AS SELECT DISTINCT idx, g, dest FROM raw_requests")
        rows = con.execute("SELECT DISTINCT idx FROM wanted ORDER BY idx").fetchnumpy()["idx"]
        with scratch("gather-") as tmp:
            spilled = SpilledColumns(f"{tmp}/documents", FETCHED)
            try:
                columns = ", ".join(f"{name} BIGINT" for name in spilled.position_names)
                con.execute(f"CREATE TABLE docs (idx BIGINT, {columns})")
                if len(rows):
                    self._spill(con, np.asarray(rows, np.int64), rank, spilled)
                written = write_partitions(self._sent(con, spilled), GATHERED_TEXTS.path(self.folder, rank),
                                           self.partitions or self.world_size)
            finally:
                spilled.close()
        return {"documents_gathered": len(rows), "documents_sent": sum(written.values())}

    def _spill(self, con, rows: np.ndarray, rank: int, spilled: SpilledColumns) -> None:
        """Rows `rows` (ascending) of prepared file `rank`, each row group that holds one read once, into `spilled`;
        table `docs`: each row's idx and positions there."""
        fs, root = fsspec.core.url_to_fs(self.prepared)
        held: list[dict[str, np.ndarray]] = []
        pending = 0  # rows in `held`

        def insert() -> None:
            con.register("batch", pa.table({k: np.concatenate([h[k] for h in held]) for k in held[0]}))
            con.execute("INSERT INTO docs SELECT * FROM batch")
            con.unregister("batch")
            held.clear()

        with fs.open(PREPARED.path(root, rank), "rb") as f:
            pf = pq.ParquetFile(f)
            ends = np.cumsum([pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)])
            group = np.searchsorted(ends, rows, side="right")
            for g in np.unique(group):
                sel = rows[group == g]
                t = pf.read_row_group(int(g), columns=FETCHED.names).take(pa.array(sel - (ends[g - 1] if g else 0)))
                held.append({"idx": sel, **spilled.append(t)})
                pending += len(sel)
                if pending >= POSITIONS_ROWS:
                    insert()
                    pending = 0
        if held:
            insert()

    def _sent(self, con, spilled: SpilledColumns) -> Iterator[pa.RecordBatch]:
        """Every request's document (g, the spilled columns, `part`: its partition), sorted by partition."""
        positions = ", ".join(f"d.{name}" for name in spilled.position_names)
        lengths = [f"{field.name}_len" for field in FETCHED]
        for batch in con.sql(f"""SELECT w.g, w.dest AS {PART}, {positions} FROM wanted w JOIN docs d USING (idx)
                                 ORDER BY {PART}""").to_arrow_reader(SENT_ROWS):
            cols = {name: batch.column(name).to_numpy() for name in batch.schema.names}
            size = np.cumsum(sum(np.maximum(cols[k], 0) for k in lengths))
            lo = 0
            while lo < batch.num_rows:  # slices of at most SENT_BYTES (at least one row)
                hi = max(lo + 1, int(np.searchsorted(size, (size[lo - 1] if lo else 0) + SENT_BYTES, side="right")))
                part = {k: v[lo:hi] for k, v in cols.items()}
                yield pa.RecordBatch.from_arrays([pa.array(part["g"]), *spilled.read(part), pa.array(part[PART])],
                                                 names=[*GATHERED.names, PART])
                lo = hi


def steps(ctx: BuildContext) -> list:
    """Per prepared file: its candidate documents, read once, sent to the verification partitions that need them."""
    return [MinhashGather(ctx.at(NEAR), ctx.at(PREPARED.folder), ctx.memory_limit("minhash_gather"), ctx.partitions)]
