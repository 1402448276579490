"""The attempt markers of a stage's tasks: a rerun task first removes the files an earlier attempt of it left."""

from __future__ import annotations

import fsspec
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.stages.files import RANK
from mixture.store.io import write_atomic


class ClearTaskFiles(PipelineStep):
    """First step of a stage: removes what an earlier, killed attempt of the same task left behind.

    A task killed mid-write leaves partial files under their final names; its rerun rewrites most of them, but a
    file it would not rewrite (e.g. a rotated `001_part-…` shard) must not survive into the store. Each attempt
    leaves a marker (`<attempts>/<rank>`) before it writes; only a task that finds one searches for such files. The
    search lists every partition or cell folder, so one per task would cost T × T listings over a stage of T tasks;
    a stage redone under a new key loses its files and markers together (reuse.clear_stage)."""

    type = "🧹 - CLEAN"
    name = "clear files of an earlier attempt"

    def __init__(self, patterns: list[str], attempts: str):
        super().__init__()
        self.patterns = patterns  # fsspec globs with {rank} (5 digits), e.g. <store>/cluster=*/quality=*/*part-{rank}.parquet
        self.attempts = attempts  # folder of the attempt markers

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        fs, marker = fsspec.core.url_to_fs(f"{self.attempts}/{rank:05d}")
        if fs.exists(marker):
            for pattern in self.patterns:
                fs, path = fsspec.core.url_to_fs(pattern.replace(RANK, f"{rank:05d}"))
                for stale in fs.glob(path):
                    fs.rm(stale)
                    self.stat_update("removed_files")
        else:
            fs.makedirs(marker.rsplit("/", 1)[0], exist_ok=True)
            write_atomic(fs, marker, b"")
        if data:
            yield from data
