"""`prepare`'s fingerprints: one pass computes every document's exact hash, MinHash signature and benchmark n-gram
matches, so that no dedup stage reads the text again."""

from __future__ import annotations

from collections.abc import Iterator

import xxhash
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.prepare.decontaminate import ContaminationFinder
from mixture.text.shingles import EMPTY, WordHashes, minhash_signatures

BATCH_DOCS, BATCH_CHARS = 256, 1_000_000  # a batch: bounded in documents and in characters (its word hashes,
# n-grams and signatures grow with its text, so the largest batch, not the input size, sets a task's peak memory)


def text_batches(data: DocumentsPipeline, max_docs: int = BATCH_DOCS, max_chars: int = BATCH_CHARS
                 ) -> Iterator[list[Document]]:
    """Consecutive documents, at most `max_docs` per batch and no more characters than `max_chars` unless a single
    document is longer."""
    batch, chars = [], 0
    for doc in data:
        if batch and (len(batch) >= max_docs or chars + len(doc.text) > max_chars):
            yield batch
            batch, chars = [], 0
        batch.append(doc)
        chars += len(doc.text)
    if batch:
        yield batch


class Fingerprint(PipelineStep):
    """Per batch of documents: exact hash, MinHash signature (fuzzy group only) and benchmark n-gram matches.

    Sets metadata `exact_hash`, `minhash` (k uint64 as bytes) and, for a contaminated document, `contaminated`
    (the detail of its drop, see decontaminate.ContaminationFinder); the words of the batch are hashed once for both
    n-gram sizes."""

    type = "🫂 - DEDUP"
    name = "fingerprint"

    def __init__(self, minhash: dict | None, decontamination: dict | None):
        super().__init__()
        self.minhash = minhash  # {"ngram", "permutations", "seed"} or None
        self.decontamination = decontamination  # decontaminate.settings(...) or None
        self._finder = ContaminationFinder(decontamination) if decontamination else None

    def preload(self) -> None:
        """The benchmark index, built once per process (pipelines/runtime/preload.py)."""
        if self._finder:
            self._finder.index  # noqa: B018 - builds and caches it

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for batch in text_batches(data):
            with self.track_time("batch"):
                self._fingerprint(batch)
            yield from batch

    def _fingerprint(self, batch: list[Document]) -> None:
        for doc in batch:
            doc.metadata["exact_hash"] = xxhash.xxh3_64_intdigest(doc.text.encode("utf-8", "surrogatepass"))
        if not self.minhash and not self.decontamination:
            return
        words = WordHashes.of([d.text for d in batch])
        if self.minhash:
            k = self.minhash["permutations"]
            grams, doc = words.ngrams(self.minhash["ngram"])
            sigs = minhash_signatures(grams, doc, len(batch), k, self.minhash["seed"])
            for d, sig in zip(batch, sigs, strict=True):
                if not d.metadata.get("exempt") and sig[0] != EMPTY:
                    d.metadata["minhash"] = sig.astype("<u8").tobytes()
        if self._finder:
            self._finder.mark(batch, words)
