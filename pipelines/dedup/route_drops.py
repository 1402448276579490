"""The first step of stage `assign`: dedup's verdicts applied. Each document the dedup stages listed for the task's
prepared file goes to its drop file (a repeated id to `_quarantine/`); the others go on."""

from __future__ import annotations

import json

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.disk_base import DiskWriter

from mixture.pipelines.dedup.shuffle import read_partition
from mixture.pipelines.schemas import DROPS
from mixture.stages.registry import EXACT_DROPS, FUZZY_DROPS, ID_DROPS


def load_drops(drop_lists: str, rank: int, fuzzy_drops: str | None) -> dict[int, tuple[str, str | None]]:
    """{document index: (reason, detail)} of the prepared file of task `rank`: what the `duplicate_ids` and
    `find_duplicates` tasks listed for it (ID_DROPS, EXACT_DROPS in `drop_lists`), plus the near duplicates
    `minhash_cluster`'s tasks listed when fuzzy dedup ran (FUZZY_DROPS in `fuzzy_drops`; same schema, DROPS)."""
    shuffles = [ID_DROPS.every(drop_lists), EXACT_DROPS.every(drop_lists)]
    if fuzzy_drops:
        shuffles.append(FUZZY_DROPS.every(fuzzy_drops))
    tables = [read_partition(files, rank, DROPS) for files in shuffles]
    drops: dict[int, tuple[str, str | None]] = {}
    for table in tables:
        for r in table.to_pylist():
            drops[r["idx"]] = (r["reason"], r["detail"])
    return drops


class RouteDrops(PipelineStep):
    """Passes on the documents dedup keeps; writes the others to their drop files (`_dropped/<reason>/`) or, for a
    repeated id, to `_quarantine/` as bad input."""

    type = "🔻 - FILTER"
    name = "route duplicates"

    def __init__(self, drop_lists: str, fuzzy_drops: str | None, writers: dict[str, DiskWriter]):
        super().__init__()
        self.drop_lists, self.fuzzy_drops, self.writers = drop_lists, fuzzy_drops, writers

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from contextlib import ExitStack

        from mixture.pipelines.sources.records import RAW_KEEP

        drops = load_drops(self.drop_lists, rank, self.fuzzy_drops)
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
