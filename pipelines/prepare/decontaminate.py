"""Benchmark decontamination in the build: the documents of a batch that share content-carrying n-grams with a
benchmark (found from the word hashes `Fingerprint` computes once), the filter that drops them, and the
per-benchmark report store.json holds."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import fsspec
import numpy as np
import pyarrow.parquet as pq
from datatrove.data import Document

from mixture.decontam.index import BenchmarkIndex, BenchmarkSource, benchmark_of
from mixture.decontam.tokens import hashed_text, splits_characters
from mixture.pipelines.runtime.datatrove_compat import CountedFilter
from mixture.spec.models import Decontamination
from mixture.store.drops import reason as drop_reason
from mixture.store.formats import DecontaminationInfo
from mixture.text.shingles import WordHashes


def settings(dc: Decontamination, benchmarks: list[dict]) -> dict:
    """What `ContaminationFinder` needs of the spec (plain values: datatrove pickles the steps)."""
    return {"benchmarks": benchmarks, "ngram": dc.ngram, "min_matches": dc.min_matches,
            "min_content_words": dc.min_content_words, "max_number_share": dc.max_number_share}


_BUILT: dict[str, BenchmarkIndex] = {}  # this process's last index, by settings and benchmark bytes


def _index_key(cfg: dict) -> str:
    """The settings and the bytes of every benchmark file: a file rewritten under the same name is a new key."""
    h = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode())
    for b in cfg["benchmarks"]:
        fs, path = fsspec.core.url_to_fs(b["uri"])
        for file in sorted(fs.glob(path)) if any(c in path for c in "*?[") else [path]:
            h.update(file.encode() + b"\0" + fs.cat_file(file) + b"\0")
    return h.hexdigest()


def cached_index(cfg: dict) -> BenchmarkIndex:
    """`build_index(cfg)`, built once per process: every task of a worker process shares it (building it took as
    long as marking a task's documents, and a build runs thousands of tasks)."""
    key = _index_key(cfg)
    if key not in _BUILT:
        _BUILT.clear()
        _BUILT[key] = build_index(cfg)
    return _BUILT[key]


def build_index(cfg: dict) -> BenchmarkIndex:
    sources = [BenchmarkSource(b["name"], b["uri"], tuple(b["fields"]), b.get("id_field")) for b in cfg["benchmarks"]]
    return BenchmarkIndex(sources, cfg["ngram"], cfg["min_content_words"], cfg["max_number_share"])


class ContaminationFinder:
    """Marks the documents of a batch that share at least `min_matches` distinct indexed n-grams with the
    benchmarks: metadata `contaminated` is the drop detail (benchmark, item, field, the document's matching words)."""

    def __init__(self, cfg: dict):
        self.cfg = cfg
        self._index: BenchmarkIndex | None = None

    @property
    def index(self) -> BenchmarkIndex:
        if self._index is None:
            self._index = cached_index(self.cfg)
        return self._index

    def mark(self, batch: list[Document], words: WordHashes) -> None:
        """`words`: the batch's word hashes, as read from the texts themselves; the documents with Han or kana
        characters are hashed again with one word per such character."""
        n = self.cfg["ngram"]
        grams, doc = words.ngrams(n)
        split = [d for d, x in enumerate(batch) if splits_characters(x.text)]
        if split:
            keep = ~np.isin(doc, split)
            g2, d2 = WordHashes.of([hashed_text(batch[d].text) for d in split]).ngrams(n)
            grams, doc = np.concatenate([grams[keep], g2]), np.concatenate([doc[keep], np.asarray(split)[d2]])
        pos = self.index.hits(grams)
        hit = pos >= 0
        if not hit.any():
            return
        for d in np.unique(doc[hit]):
            mine = np.unique(pos[hit & (doc == d)])  # distinct matching n-grams of document d
            if len(mine) >= self.cfg["min_matches"]:
                batch[d].metadata["contaminated"] = self.index.detail(batch[d].text, mine)[1]


class Decontaminate(CountedFilter):
    """Drops the documents Fingerprint found sharing at least `min_matches` distinct n-grams with a benchmark."""

    name = "n-gram decontamination"

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        detail = doc.metadata.pop("contaminated", None)
        if detail is None:
            return True
        doc.metadata["drop_detail"] = detail
        return False, "contaminated"


def report(cfg: dict, store: str) -> DecontaminationInfo:
    """The decontamination block of store.json: the settings, and per benchmark what its records gave the index and
    how many of the store's contaminated drops name it."""
    index = cached_index(cfg)
    fs, root = fsspec.core.url_to_fs(store)
    named: Counter = Counter()
    for path in sorted(fs.glob(f"{root.rstrip('/')}/{drop_reason('contaminated').folder}/*.parquet")):
        with fs.open(path, "rb") as f:
            named.update(benchmark_of(d) for d in pq.read_table(f, columns=["detail"]).column("detail").to_pylist())
    reports = [r.model_copy(update={"documents_matched": named[r.name]}) for r in index.reports]
    return DecontaminationInfo(ngram=cfg["ngram"], min_matches=cfg["min_matches"],
                               min_content_words=cfg["min_content_words"],
                               max_number_share=cfg["max_number_share"], benchmarks=reports)
