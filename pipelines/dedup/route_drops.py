"""The first step of stage `assign`: dedup's verdicts applied. Each document the dedup stages listed for the task's
prepared file goes to its drop file (a repeated id to `_quarantine/`); the others go on."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.disk_base import DiskWriter

from mixture.pipelines.dedup.shuffle import read_partition
from mixture.pipelines.schemas import DROPS
from mixture.stages.registry import EXACT_DROPS, FUZZY_DROPS, ID_DROPS


class DropList:
    """{document index: (reason, detail)} of one prepared file, held as sorted arrays: the table's rows as Python
    objects held ~370 MiB per million drops (detail strings of ~150 characters; a pool task lists ~0.4–1M),
    and converting the whole table at once held every row twice."""

    def __init__(self, table: pa.Table):
        idx = table.column("idx").to_numpy()
        order = np.argsort(idx, kind="stable")
        ordered = idx[order]
        last = np.ones(len(order), bool)  # of a repeated index, the last table's verdict
        last[:-1] = ordered[1:] != ordered[:-1]
        order = order[last]
        self.idx = idx[order]
        reasons = table.column("reason").take(order).combine_chunks().dictionary_encode()
        self._codes = reasons.indices.to_numpy(zero_copy_only=False)
        self._reasons = reasons.dictionary.to_pylist()
        self._details = table.column("detail").take(order).combine_chunks()
        self._query, self._found = -math.inf, -1  # the last index asked, its position (-1: not listed)
        self._pos, self._head = 0, self._value(0)  # the next listed index at or after the last asked

    def _value(self, pos: int) -> float:
        return int(self.idx[pos]) if pos < len(self.idx) else math.inf

    def __len__(self) -> int:
        return len(self.idx)

    def _at(self, idx: int) -> int:
        """Position of `idx`, -1 when not listed. A task asks in its file's order: each answer starts from the last
        (a binary search only when asked out of order or past the next listed index, ~1.8 µs against ~0.1)."""
        if idx == self._query:
            return self._found
        if idx < self._query or idx > self._head:
            self._pos = int(np.searchsorted(self.idx, idx))
            self._head = self._value(self._pos)
        self._query, self._found = idx, -1
        if self._head == idx:
            self._found, self._pos = self._pos, self._pos + 1
            self._head = self._value(self._pos)
        return self._found

    def __contains__(self, idx: int) -> bool:
        return self._at(idx) >= 0

    def dropped(self, idx: np.ndarray) -> np.ndarray:
        """Whether each of the indexes `idx` is listed (a batch's worth at once)."""
        if not len(self.idx):
            return np.zeros(len(idx), bool)
        return self.idx[np.minimum(np.searchsorted(self.idx, idx), len(self.idx) - 1)] == idx

    def get(self, idx: int) -> tuple[str, str | None] | None:
        at = self._at(idx)
        return None if at < 0 else (self._reasons[self._codes[at]], self._details[at].as_py())


def load_drops(drop_lists: str, rank: int, fuzzy_drops: str | None) -> DropList:
    """The drops of the prepared file of task `rank`: what the `duplicate_ids` and `find_duplicates` tasks listed
    for it (ID_DROPS, EXACT_DROPS in `drop_lists`), plus the near duplicates `minhash_cluster`'s tasks listed when
    fuzzy dedup ran (FUZZY_DROPS in `fuzzy_drops`; same schema, DROPS). A document listed twice takes the last
    list's reason."""
    shuffles = [ID_DROPS.every(drop_lists), EXACT_DROPS.every(drop_lists)]
    if fuzzy_drops:
        shuffles.append(FUZZY_DROPS.every(fuzzy_drops))
    return DropList(pa.concat_tables([read_partition(files, rank, DROPS) for files in shuffles]))


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
