"""The second task of `mixture materialize` (gather): write a range of the mixture's shards, a group of shards at
a time, from the documents the scatter tasks sent to each group, ordered as the draw plan orders them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datatrove.pipeline.base import PipelineStep
from fsspec.core import url_to_fs

from mixture.pipelines.dedup.shuffle import read_partition
from mixture.pipelines.finalize.shard_facts import file_digest
from mixture.pipelines.materialize.draws import SHARD_SCHEMA, WorkFiles, phase_dir, shard_name, task_shards
from mixture.pipelines.materialize.scatter import BUCKET_SCHEMA
from mixture.planner.formats import ManifestShard, TaskShards
from mixture.store.formats import write_model
from mixture.store.io import DigestingFile, open_atomic


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

    Memory: the shards are taken in the groups of `work/groups.parquet` (decided by the driver: text of at most
    `--memory`, or one shard when a shard is bigger); a group's documents are read from the scatter's files (its
    byte range of each `_materialize/shuffle/` file), ordered by their position in the draws and kept until the group's shards are
    written. A shard already present under its final name (a killed task's; renames are atomic) is kept and only
    checksummed. Stats (datatrove keeps the total, mean and max of each): `held_rows`, `held_chars`, `held_bytes`
    (a value per group: the documents kept, the characters of their text, their Arrow bytes), `shards_written`,
    `shards_kept`."""

    name = "🧩 mixture shards"
    type = "✍️ - WRITER"

    def __init__(self, out_dir: str, phases: list[str], cells: list[tuple[str, int, int]]):
        super().__init__()
        self.out_dir, self.phases, self.cells = out_dir, list(phases), list(cells)

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
            groups = pq.read_table(work.groups, filesystem=fs, filters=[("shard", ">=", mine.start),
                                                                        ("shard", "<", mine.stop)])
            group_of = groups.column("group").to_numpy()[np.argsort(groups.column("shard").to_numpy())]
            by_group: dict[int, list[int]] = {}
            for i in todo:
                by_group.setdefault(int(group_of[i]), []).append(i)
            for g, group in by_group.items():
                with self.track_time("group"):
                    facts.update(self._write_group(fs, root, work, g, shards, mine, group))
        written: dict[str, list[ManifestShard]] = {}
        for i, s in enumerate(mine):
            written.setdefault(self.phases[shards["phase"][i]], []).append(facts[s])
        write_model(fs, work.written(rank), TaskShards(task=rank, shards=written))
        yield from ()

    def _path(self, root: str, phase: int, part: int) -> str:
        return f"{root}/{phase_dir(self.phases[phase])}/{shard_name(part)}"

    def _write_group(self, fs, root: str, work: WorkFiles, g: int, shards: dict, mine: range,
                     group: list[int]) -> dict[int, ManifestShard]:
        """Read group `g`'s documents (the scatter's files of it), order them by draw and write shards `group`
        (positions in `mine`) of it."""
        wanted = [mine[i] for i in group]
        held = read_partition(fs.unstrip_protocol(work.bucket_files), g, BUCKET_SCHEMA)
        held = held.filter(pc.is_in(held.column("shard"), pa.array(wanted, pa.int32())))
        held = held.take(pa.array(np.argsort(held.column("pos").to_numpy(), kind="stable")))
        expected = sum(shards["rows"][i] for i in group)
        if held.num_rows != expected:
            raise RuntimeError(f"{work.shuffle}: {held.num_rows} documents of group {g} for shards {wanted[0]}…{wanted[-1]}, the "
                               f"draw plan has {expected}; delete {work.logging} and rerun")
        self.stat_update("held_rows", value=held.num_rows)
        self.stat_update("held_chars", value=int(pc.sum(pc.utf8_length(held.column("text"))).as_py() or 0))
        self.stat_update("held_bytes", value=held.nbytes)
        names = pa.array([c[0] for c in self.cells], pa.string())
        clusters = pa.array([c[1] for c in self.cells], pa.int16())
        qualities = pa.array([c[2] for c in self.cells], pa.int8())
        shard_col = held.column("shard").to_numpy()
        out = {}
        for i, s in zip(group, wanted, strict=True):
            docs = held.take(pa.array(np.flatnonzero(shard_col == s)))
            cells = docs.column("cell")
            table = pa.Table.from_arrays([
                docs.column("id"), docs.column("text"), docs.column("n_tokens"), docs.column("source"),
                names.take(cells), clusters.take(cells), qualities.take(cells), docs.column("pass"),
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
