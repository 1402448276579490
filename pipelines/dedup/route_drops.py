"""The first step of stage `assign`: dedup's verdicts applied. Each document the dedup stages listed for the task's
prepared file goes to its drop file (a repeated id to `_quarantine/`); the others go on."""

from __future__ import annotations

import json

import fsspec
import pyarrow.parquet as pq
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.disk_base import DiskWriter

from mixture.pipelines.dedup.drop_lists import drops_folder
from mixture.pipelines.dedup.shuffle import partition_files
from mixture.pipelines.schemas import DROPS


def load_drops(work: str, rank: int, fuzzy_drops: str | None) -> dict[int, tuple[str, str | None]]:
    """{document index: (reason, detail)} of the prepared file of task `rank`: what the `duplicate_ids` and
    `find_duplicates` tasks listed for it (`<work>/drops/<rank>/`), plus the near duplicates `minhash_cluster`
    listed when fuzzy dedup ran (`<fuzzy_drops>/<rank>.parquet`; same schema, DROPS)."""
    paths = partition_files(drops_folder(work, rank))
    if fuzzy_drops:
        fs, root = fsspec.core.url_to_fs(f"{fuzzy_drops}/{rank:05d}.parquet")
        fs.invalidate_cache(root.rsplit("/", 1)[0])
        if fs.exists(root):
            paths.append(f"{fuzzy_drops}/{rank:05d}.parquet")
    drops: dict[int, tuple[str, str | None]] = {}
    for path in paths:
        fs, root = fsspec.core.url_to_fs(path)
        with fs.open(root, "rb") as f:
            for r in pq.read_table(f, schema=DROPS).to_pylist():
                drops[r["idx"]] = (r["reason"], r["detail"])
    return drops


class RouteDrops(PipelineStep):
    """Passes on the documents dedup keeps; writes the others to their drop files (`_dropped/<reason>/`) or, for a
    repeated id, to `_quarantine/` as bad input."""

    type = "🔻 - FILTER"
    name = "route duplicates"

    def __init__(self, work: str, fuzzy_drops: str | None, writers: dict[str, DiskWriter]):
        super().__init__()
        self.work, self.fuzzy_drops, self.writers = work, fuzzy_drops, writers

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from contextlib import ExitStack

        from mixture.pipelines.sources.records import RAW_KEEP

        drops = load_drops(self.work, rank, self.fuzzy_drops)
        with ExitStack() as stack:
            open_writers = {reason: stack.enter_context(w) for reason, w in self.writers.items()}
            for doc in data:
                drop = drops.get(doc.metadata["idx"])
                if drop is None:
                    yield doc
                    continue
                reason, detail = drop
                self.stat_update(reason)
                m = doc.metadata
                if reason == "duplicate_id":
                    file, _, record = m["origin"].rpartition(":")
                    raw = json.dumps({"id": doc.id, "text": doc.text[:RAW_KEEP]}, ensure_ascii=False)
                    m.update(_bad="duplicate_id", _detail=detail, _raw=raw, _raw_bytes=len(doc.text.encode()),
                             _file=file, _record=int(record))
                else:
                    m["drop_detail"] = detail
                open_writers[reason].write(doc, rank)
