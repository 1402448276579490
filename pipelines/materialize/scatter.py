"""The first task of `mixture materialize`: read a share of the store's drawn files once, in order, and write each
drawn document towards the group of shards it is drawn into (the gather tasks then write the shards)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datatrove.pipeline.base import PipelineStep
from fsspec.core import url_to_fs

from mixture.accounting import StoreReader
from mixture.accounting.document_rows import READ_BATCH_ROWS
from mixture.accounting.verify import verify_store_file
from mixture.pipelines.dedup.shuffle import PART, write_partitions
from mixture.pipelines.materialize.draws import WorkFiles, task_shards

FETCHED = ("id", "text", "source")  # read from the store; the rest comes with the draws
# a drawn document on its way to its group: `pos` is its row in draws.parquet (training order over every phase)
BUCKET_SCHEMA = pa.schema([("pos", pa.int64()), ("shard", pa.int32()), ("cell", pa.int32()), ("pass", pa.int32()),
                           ("n_tokens", pa.int64()), ("id", pa.string()), ("text", pa.string()),
                           ("source", pa.string())])


def read_draws_of_files(fs, work: WorkFiles, files: range) -> dict[str, np.ndarray]:
    """The draws that read one of `files` (positions in files.parquet), with their position in draws.parquet,
    ordered by file, row and position; read a row group at a time (integers only)."""
    cols = ("shard", "cell", "file", "row", "pass", "n_tokens")
    parts: dict[str, list[np.ndarray]] = {c: [] for c in ("pos", *cols)}
    with fs.open(work.draws, "rb") as f:
        pf = pq.ParquetFile(f)
        start = 0
        for g in range(pf.metadata.num_row_groups):
            t = pf.read_row_group(g, columns=list(cols), use_threads=False)
            file = t.column("file").to_numpy()
            sel = np.flatnonzero((file >= files.start) & (file < files.stop))
            parts["pos"].append(start + sel)
            for c in cols:
                parts[c].append(t.column(c).to_numpy()[sel])
            start += t.num_rows
    out = {c: np.concatenate(v) if v else np.zeros(0, np.int64) for c, v in parts.items()}
    order = np.lexsort((out["pos"], out["row"], out["file"]))
    return {c: v[order] for c, v in out.items()}


class ScatterDraws(PipelineStep):
    """Scatter task `rank` of `world_size` reads the store files `task_shards(F, world_size, rank)` of
    `DIR/_materialize/work/files.parquet`, each once: the row groups holding a drawn row, in order, `batch_rows`
    rows decoded at a time. Every draw of a row decoded (a row drawn twice is sent twice) goes, with its text and
    fields, to the buffer of its group of shards (`work/groups.parquet`); before the buffered text would pass
    `memory_chars` (or at the end) the buffers are written to ONE file, `shuffle/SSSSS-FFFFF.parquet` (flush F;
    temporary name, then a rename), a byte range per group (a shuffle file: the gather task of a group reads its
    range of each). Held at once: at most `memory_chars` of text, or one batch's drawn text when
    that is more. A rerun of the task first removes what an earlier attempt of it wrote. Stats: `rows_decoded` (a
    value per batch), `batch_chars` (the drawn text of a batch), `rows_scattered`, `scatter_held_chars` (a value
    per flush: the text written), `bucket_files`."""

    name = "🧩 mixture scatter"
    type = "✍️ - WRITER"

    def __init__(self, out_dir: str, store_uri: str, memory_chars: int, batch_rows: int = READ_BATCH_ROWS):
        super().__init__()
        self.out_dir, self.store_uri = out_dir, store_uri
        self.memory_chars, self.batch_rows = memory_chars, batch_rows

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        fs, root = url_to_fs(self.out_dir)
        work = WorkFiles(root.rstrip("/"))
        fs.invalidate_cache()
        stale = fs.glob(f"{work.shuffle}/{rank:05d}-*")  # an earlier attempt of this task
        if stale:
            fs.rm(stale)
        listed = pq.read_table(work.files, filesystem=fs).to_pydict()
        files = listed["path"]
        group_of = pq.read_table(work.groups, filesystem=fs).column("group").to_numpy()
        mine = task_shards(len(files), world_size, rank)
        draws = read_draws_of_files(fs, work, mine)
        reader = StoreReader(self.store_uri)
        self._buffer: list[pa.Table] = []
        self._held, self._flushes = 0, 0
        self._fs, self._work, self._rank, self._group_of = fs, work, rank, group_of
        bounds = np.searchsorted(draws["file"], np.arange(mine.start, mine.stop + 1))
        for k, fi in enumerate(mine):
            a, b = int(bounds[k]), int(bounds[k + 1])
            if b > a:
                with self.track_time("file"):
                    verify_store_file(reader, files[fi], listed["bytes"][fi], listed["xxh64"][fi])
                    self._scatter_file(reader, files[fi], {c: v[a:b] for c, v in draws.items()})
        self._flush()
        yield from ()

    def _scatter_file(self, reader: StoreReader, rel: str, draws: dict[str, np.ndarray]) -> None:
        rows = draws["row"]  # sorted
        with reader.fs.open(reader.path(rel), "rb") as f:
            pf = pq.ParquetFile(f)
            present = [c for c in FETCHED if c in pf.schema_arrow.names]
            meta = pf.metadata
            starts = np.cumsum([0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
            if int(rows[-1]) >= int(starts[-1]):
                raise ValueError(f"{reader.uri}/{rel}: a draw asks for row {int(rows[-1])}, the shard has "
                                 f"{int(starts[-1])} rows (it changed since the draw plan was made); delete "
                                 "DIR/_materialize and rerun")
            for group in np.unique(np.searchsorted(starts, rows, side="right") - 1).tolist():
                last = int(rows[np.searchsorted(rows, starts[group + 1]) - 1])
                offset = int(starts[group])
                for batch in pf.iter_batches(batch_size=self.batch_rows, row_groups=[group], columns=present,
                                             use_threads=False):
                    n = batch.num_rows
                    self.stat_update("rows_decoded", value=int(n))
                    lo, hi = (int(x) for x in np.searchsorted(rows, [offset, offset + n]))
                    if hi > lo:
                        self._add(batch, draws, lo, hi, offset)
                    offset += n
                    if offset > last:
                        break

    def _add(self, batch: pa.RecordBatch, draws: dict[str, np.ndarray], lo: int, hi: int, offset: int) -> None:
        take = pa.array(draws["row"][lo:hi] - offset)
        cols = {}
        for c in FETCHED:
            if c in batch.schema.names:
                col = batch.column(c).take(take)
                cols[c] = col.cast(pa.string()) if col.type != pa.string() else col
            else:
                cols[c] = pa.nulls(hi - lo, pa.string())
        table = pa.Table.from_arrays([pa.array(draws["pos"][lo:hi], pa.int64()),
                                      pa.array(draws["shard"][lo:hi], pa.int32()),
                                      pa.array(draws["cell"][lo:hi], pa.int32()),
                                      pa.array(draws["pass"][lo:hi], pa.int32()),
                                      pa.array(draws["n_tokens"][lo:hi], pa.int64()),
                                      cols["id"], cols["text"], cols["source"]], schema=BUCKET_SCHEMA)
        chars = int(pc.sum(pc.utf8_length(cols["text"])).as_py() or 0)
        self.stat_update("batch_chars", value=chars)
        if self._held + chars > self.memory_chars:
            self._flush()
        self._buffer.append(table)
        self._held += chars
        self.stat_update("rows_scattered", value=int(hi - lo))

    def _flush(self) -> None:
        """Write the buffered documents to one new shuffle file, a range per group."""
        if not self._buffer:
            return
        table = pa.concat_tables(self._buffer)
        groups = self._group_of[table.column("shard").to_numpy()]
        order = np.argsort(groups, kind="stable")
        table, groups = table.take(pa.array(order)), groups[order]
        path = self._work.bucket_file(self._rank, self._flushes)
        table = table.append_column(PART, pa.array(groups.astype(np.int32)))
        write_partitions(table.to_batches(), self._fs.unstrip_protocol(path), int(self._group_of.max()) + 1)
        self.stat_update("bucket_files")
        self.stat_update("scatter_held_chars", value=self._held)
        self._buffer, self._held = [], 0
        self._flushes += 1
