"""Stage `prepare`: Unicode and whitespace normalisation, and the quarantine of bad input records."""

from __future__ import annotations

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.disk_base import DiskWriter

from mixture.text.normalize import normalize_text


class Normalize(PipelineStep):
    """Unicode NFC and whitespace normalisation; a text that normalises to nothing becomes bad input."""

    type = "✂️ - FORMAT"
    name = "normalise text"

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for doc in data:
            if "_bad" not in doc.metadata:
                doc.text = normalize_text(doc.text)
                if not doc.text:
                    m = doc.metadata
                    rel, _, idx = m["origin"].rpartition(":")
                    m.update(_bad="empty_text", _detail="only whitespace", _raw="", _raw_bytes=0, _file=rel, _record=int(idx))
            yield doc


class Quarantine(PipelineStep):
    """Writes bad input records to `_quarantine/` with their reason and passes the rest on."""

    type = "🔻 - FILTER"
    name = "quarantine bad input"

    def __init__(self, writer: DiskWriter):
        super().__init__()
        self.writer = writer

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        with self.writer as w:
            for doc in data:
                if "_bad" in doc.metadata:
                    self.stat_update("bad_input", f"bad_{doc.metadata['_bad']}")
                    w.write(doc, rank)
                    continue
                yield doc
