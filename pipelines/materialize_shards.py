"""The task of `mixture materialize`: write a range of the mixture's shards from the draw plan, fetching the text
of their documents from the store a row group and a batch at a time, holding at most a set amount of it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datatrove.pipeline.base import PipelineStep
from fsspec.core import url_to_fs

from mixture.accounting import StoreReader
from mixture.accounting.document_rows import READ_BATCH_ROWS, read_rows
from mixture.pipelines.shard_facts import file_digest
from mixture.planner.draws import SHARD_SCHEMA, WorkFiles, passes_within, phase_dir, shard_name, task_shards
from mixture.planner.formats import ManifestShard, TaskShards
from mixture.store.formats import write_model
from mixture.store.io import DigestingFile, open_atomic

FETCHED = ("id", "text", "source")  # read from the store; n_tokens comes with the draws


def _size(fs, path: str) -> int | None:
    """The file's size, None when there is none."""
    try:
        return int(fs.info(path).get("size") or 0)
    except FileNotFoundError:
        return None


class WriteMixtureShards(PipelineStep):
    """Task `rank` of `world_size` writes shards `task_shards(S, world_size, rank)` of the draw plan in
    `DIR/_materialize/work/` into `DIR/phase=NAME/part-NNNNN.parquet` (temporary name, then a rename; size and
    xxh64 taken as the bytes are written) and lists them in `work/written/<rank>.json`.

    Memory: the shards are taken in groups whose text (characters, from the plan) adds up to at most
    `memory_chars` (one shard when a shard is bigger); a group's distinct documents are fetched file by file, only
    the row groups holding one of them, `batch_rows` rows decoded at a time, and kept (id, text, source) until the
    group's shards are written. A shard already present under its final name (a killed task's; renames are
    atomic) is kept and only checksummed. Stats (datatrove keeps the total, mean and max of each):
    `rows_decoded` (a value per batch: its max is the rows decoded at a time), `held_rows`, `held_chars`, `held_bytes` (a
    value per group: the documents kept, the characters of their text, their Arrow bytes), `shards_written`, `shards_kept`."""

    name = "🧩 mixture shards"
    type = "✍️ - WRITER"

    def __init__(self, out_dir: str, store_uri: str, phases: list[str], cells: list[tuple[str, int, int]],
                 memory_chars: int, batch_rows: int = READ_BATCH_ROWS):
        super().__init__()
        self.out_dir, self.store_uri, self.phases, self.cells = out_dir, store_uri, list(phases), list(cells)
        self.memory_chars, self.batch_rows = memory_chars, batch_rows

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        fs, root = url_to_fs(self.out_dir)
        root = root.rstrip("/")
        work = WorkFiles(root)
        n_shards = pq.read_metadata(work.shards, filesystem=fs).num_rows
        mine = task_shards(n_shards, world_size, rank)
        shards = pq.read_table(work.shards, filesystem=fs, filters=[("shard", ">=", mine.start),
                                                                    ("shard", "<", mine.stop)]).to_pydict()
        if shards["shard"] != list(mine):
            raise RuntimeError(f"{work.shards}: shards {mine.start}…{mine.stop - 1} are not listed in order; delete "
                               f"{work.logging} and rerun")
        fs.invalidate_cache()  # an earlier attempt's shards were written by another process
        facts: dict[int, ManifestShard] = {}
        todo = []
        for i, s in enumerate(mine):
            path = self._path(root, shards["phase"][i], shards["part"][i])
            size = _size(fs, path)
            if size is not None:  # written by an earlier attempt of this task (renamed into place: complete)
                facts[s] = ManifestShard(path=shard_name(shards["part"][i]), rows=shards["rows"][i],
                                         tokens=shards["tokens"][i], bytes=size, xxh64=file_digest(fs, path))
                self.stat_update("shards_kept")
            else:
                todo.append(i)
        if todo:
            files = pq.read_table(work.files, filesystem=fs).column("path").to_pylist()
            reader = StoreReader(self.store_uri)
            for a, b in passes_within([shards["chars"][i] for i in todo], self.memory_chars):
                with self.track_time("group"):
                    facts.update(self._write_group(fs, root, work, reader, files, shards, mine, todo[a:b]))
        written: dict[str, list[ManifestShard]] = {}
        for i, s in enumerate(mine):
            written.setdefault(self.phases[shards["phase"][i]], []).append(facts[s])
        write_model(fs, work.written(rank), TaskShards(task=rank, shards=written))
        yield from ()

    def _path(self, root: str, phase: int, part: int) -> str:
        return f"{root}/{phase_dir(self.phases[phase])}/{shard_name(part)}"

    def _write_group(self, fs, root: str, work: WorkFiles, reader: StoreReader, files: list[str], shards: dict,
                     mine: range, group: list[int]) -> dict[int, ManifestShard]:
        """Fetch the documents of shards `group` (positions in `mine`) and write those shards."""
        wanted = [mine[i] for i in group]
        draws = pq.read_table(work.draws, filesystem=fs, filters=[("shard", ">=", min(wanted)),
                                                                  ("shard", "<=", max(wanted))])
        draws = draws.filter(pc.is_in(draws.column("shard"), pa.array(wanted, pa.int32())))
        file, row = draws.column("file").to_numpy(), draws.column("row").to_numpy()
        keys, where = np.unique(file.astype(np.int64) << 40 | row, return_inverse=True)
        held = self._fetch(reader, files, keys)
        self.stat_update("held_rows", value=held.num_rows)
        self.stat_update("held_chars", value=int(pc.sum(pc.utf8_length(held.column("text"))).as_py() or 0))
        self.stat_update("held_bytes", value=held.nbytes)
        names = pa.array([c[0] for c in self.cells], pa.string())
        clusters = pa.array([c[1] for c in self.cells], pa.int16())
        qualities = pa.array([c[2] for c in self.cells], pa.int8())
        shard_col = draws.column("shard").to_numpy()
        out = {}
        for i, s in zip(group, wanted, strict=True):
            sel = np.nonzero(shard_col == s)[0]
            docs = held.take(pa.array(where[sel]))
            cells = pa.array(draws.column("cell").to_numpy()[sel])
            table = pa.Table.from_arrays([
                docs.column("id"), docs.column("text"), draws.column("n_tokens").take(pa.array(sel)),
                docs.column("source"), names.take(cells), clusters.take(cells), qualities.take(cells),
                draws.column("pass").take(pa.array(sel)),
            ], schema=SHARD_SCHEMA).combine_chunks()
            path = self._path(root, shards["phase"][i], shards["part"][i])
            with open_atomic(fs, path) as f:  # checksummed as it is written: never read back
                sink = DigestingFile(f)
                pq.write_table(table, sink, compression="zstd")
            out[s] = ManifestShard(path=shard_name(shards["part"][i]), rows=table.num_rows,
                                   tokens=int(pc.sum(table.column("n_tokens")).as_py() or 0),
                                   bytes=sink.size, xxh64=sink.digest.hexdigest())
            self.stat_update("shards_written")
        return out

    def _fetch(self, reader: StoreReader, files: list[str], keys: np.ndarray) -> pa.Table:
        """The documents at `keys` (file << 40 | row, sorted), in that order."""
        file_of, rows = keys >> 40, keys & ((1 << 40) - 1)
        bounds = np.flatnonzero(np.diff(file_of)) + 1
        parts = []
        for chunk in np.split(np.arange(len(keys)), bounds):
            if len(chunk) == 0:
                continue
            parts.append(read_rows(reader, files[int(file_of[chunk[0]])], rows[chunk], FETCHED, self.batch_rows,
                                   on_batch=self._decoded))
        return pa.concat_tables(parts) if parts else pa.table({c: pa.array([], pa.string()) for c in FETCHED})

    def _decoded(self, n: int) -> None:
        self.stat_update("rows_decoded", value=n)  # its total: rows decoded; its max: rows decoded at a time
