"""The index of the benchmarks' word n-grams that carry content, the way back from a matching hash to the benchmark
item, field and words, the per-benchmark report, and the drop detail that names all three.

Only the benchmark side is checked for content: a document n-gram that hashes to an indexed one has the same words,
so it carries the same content."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixture.decontam.records import BenchmarkItem, benchmark_items, missing_fields, read_records
from mixture.decontam.tokens import hashed_text, ngram_content, token_spans, words
from mixture.store.formats import BenchmarkReport
from mixture.text.shingles import WordHashes

SKIP_REASONS = ("no_content", "few_content_words", "many_numbers")
PASSAGE_CHARS = 240  # the longest matched passage a drop detail quotes


@dataclass(frozen=True)
class BenchmarkSource:
    """A benchmark as the build reads it: name, resolved uri, fields and id field."""

    name: str
    uri: str
    fields: tuple[str, ...]
    id_field: str | None = None


class BenchmarkIndex:
    """Sorted hashes of the content-carrying word n-grams of every benchmark's fields (each field, and the fields
    joined, so an n-gram across a question and its answer counts too); for each, where it was first seen: benchmark,
    item, field (`a+b` for the joined text) and word offset."""

    def __init__(self, benchmarks: list[BenchmarkSource], n: int, min_content_words: int, max_number_share: float):
        self.n, self.min_content_words, self.max_number_share = n, min_content_words, max_number_share
        self.benchmarks = benchmarks
        self.items: list[list[BenchmarkItem]] = []
        self.reports: list[BenchmarkReport] = []
        hashes, bench_of, item_of, field_of, offset_of = [], [], [], [], []
        self.field_names: list[str] = []
        for b, bench in enumerate(benchmarks):
            records = read_records(bench.uri)
            items = benchmark_items(records, list(bench.fields), bench.id_field)
            self.items.append(items)
            kept, skipped = self._item_ngrams(b, items)
            for arrays, out in zip(kept, (hashes, item_of, field_of, offset_of), strict=True):
                out.append(arrays)
            bench_of.append(np.full(len(kept[0]), b, dtype=np.int64))
            self.reports.append(BenchmarkReport(
                name=bench.name, fields=list(bench.fields), items=len(items),
                items_indexed=len(np.unique(kept[1])), missing_fields=missing_fields(records, list(bench.fields)),
                ngrams_indexed=len(np.unique(kept[0])),
                ngrams_skipped={r: len(np.unique(skipped[r])) for r in SKIP_REASONS}, documents_matched=0))
        cat = [np.concatenate(a) if a else np.zeros(0, np.int64) for a in (bench_of, item_of, field_of, offset_of)]
        all_hashes = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
        self.hashes, first = np.unique(all_hashes.astype(np.uint64), return_index=True)
        self.bench_of, self.item_of, self.field_of, self.offset_of = (a[first] for a in cat)
        # a bit per value of a hash's top bits: nearly every document n-gram is ruled out by one lookup
        self.bits = max(16, min(28, int(len(self.hashes)).bit_length() + 6))
        self.prefilter = np.zeros(1 << self.bits, dtype=bool)
        self.prefilter[self.hashes >> np.uint64(64 - self.bits)] = True

    def _field_id(self, name: str) -> int:
        if name not in self.field_names:
            self.field_names.append(name)
        return self.field_names.index(name)

    def _item_ngrams(self, b: int, items: list[BenchmarkItem]) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
        """(hashes, item, field, offset) of the content-carrying n-grams of `items`, and the hashes of the others
        by skip reason."""
        texts, item_ids, field_ids = [], [], []
        for item in items:
            fields = list(item.texts)
            if len(fields) > 1:
                fields.append(("+".join(f for f, _ in fields), " ".join(t for _, t in fields)))
            for field, text in fields:
                texts.append(words(text))
                item_ids.append(item.index)
                field_ids.append(self._field_id(field))
        empty = np.zeros(0, np.int64)
        if not texts:
            return [np.zeros(0, np.uint64), empty, empty, empty], {r: np.zeros(0, np.uint64) for r in SKIP_REASONS}
        hashed = WordHashes.of([" ".join(ws) for ws in texts])
        grams, doc = hashed.ngrams(self.n)
        content, numbers = np.zeros(len(grams), dtype=np.int32), np.zeros(len(grams), dtype=np.int32)
        starts = np.searchsorted(doc, np.arange(len(texts) + 1))  # text t's n-grams: starts[t]:starts[t + 1]
        aligned = np.ones(len(grams), dtype=bool)
        for t, ws in enumerate(texts):
            (c, k), lo, hi = ngram_content(ws, self.n), starts[t], starts[t + 1]
            if len(c) == hi - lo:
                content[lo:hi], numbers[lo:hi] = c, k
            else:  # the hasher split the words differently (lower-casing in the pure-Python path): not indexed
                aligned[lo:hi] = False
        offsets = np.arange(len(grams)) - starts[doc]
        reason = np.select([~aligned, content == 0, content < self.min_content_words, numbers >= self.max_number_share * self.n],
                           [-2, 0, 1, 2], default=-1)
        keep = reason == -1
        skipped = {r: grams[reason == j] for j, r in enumerate(SKIP_REASONS)}
        ids = np.asarray(item_ids, dtype=np.int64)[doc]
        fids = np.asarray(field_ids, dtype=np.int64)[doc]
        return [grams[keep], ids[keep], fids[keep], offsets[keep]], skipped

    def hits(self, grams: np.ndarray) -> np.ndarray:
        """Position in the index of every gram, -1 where the gram is not an indexed benchmark n-gram."""
        out = np.full(len(grams), -1)
        if not len(self.hashes):
            return out
        maybe = np.flatnonzero(self.prefilter[grams >> np.uint64(64 - self.bits)])
        pos = np.minimum(np.searchsorted(self.hashes, grams[maybe]), len(self.hashes) - 1)
        out[maybe] = np.where(self.hashes[pos] == grams[maybe], pos, -1)
        return out

    def ngram_words(self, pos: int) -> tuple[str, BenchmarkItem, str, list[str]]:
        """(benchmark name, item, field, words) of the indexed n-gram at position `pos`, read from the benchmark."""
        b, i, f, o = (int(a[pos]) for a in (self.bench_of, self.item_of, self.field_of, self.offset_of))
        item, field = self.items[b][i], self.field_names[f]
        texts = dict(item.texts)
        text = texts.get(field) or " ".join(texts[k] for k in field.split("+"))
        return self.benchmarks[b].name, item, field, words(text)[o:o + self.n]

    def detail(self, text: str, matched: np.ndarray) -> tuple[int, str]:
        """(benchmark, drop detail) of a document whose distinct matching index positions are `matched`: the
        benchmark item sharing the most of them (the first in spec order on a tie), the field and the document's
        own words where they first match, and the counts."""
        keys = self.bench_of[matched] * (1 << 32) + self.item_of[matched]
        uniq, counts = np.unique(keys, return_counts=True)
        best = int(uniq[np.argmax(counts)])  # np.unique sorts: the first maximum is the first in spec order
        b, i = best >> 32, best & 0xFFFFFFFF
        mine = matched[keys == best]
        item = self.items[b][i]
        field, passage = self._passage(text, b, i)
        if field is None:  # not found again (cannot happen with one hasher): the index's own first n-gram
            field = self.field_names[int(self.field_of[mine.min()])]
        quoted = f' "{passage}"' if passage else ""
        others = f", {len(matched)} in all" if len(matched) > len(mine) else ""
        return int(b), (f"{self.benchmarks[b].name} {item.label} {field}:{quoted} "
                        f"({len(mine)} matching {self.n}-grams{others})")

    def _passage(self, text: str, b: int, i: int) -> tuple[str | None, str]:
        """The field of the first n-gram of `text` that matches item i of benchmark b and the document's words from
        there to the end of that run of matching n-grams (at most PASSAGE_CHARS characters, spaces collapsed)."""
        spans = token_spans(text)
        grams, _ = WordHashes.of([hashed_text(text)]).ngrams(self.n)
        if len(grams) != max(0, len(spans) - self.n + 1):
            return None, ""
        pos = self.hits(grams)
        ok = pos >= 0
        ok[ok] = (self.bench_of[pos[ok]] == b) & (self.item_of[pos[ok]] == i)
        if not ok.any():
            return None, ""
        j = int(np.argmax(ok))
        end = j
        while end + 1 < len(ok) and ok[end + 1]:
            end += 1
        passage = " ".join(text[spans[j][0]:spans[end + self.n - 1][1]].split())
        if len(passage) > PASSAGE_CHARS:
            passage = passage[:PASSAGE_CHARS - 1].rstrip() + "…"
        return self.field_names[int(self.field_of[pos[j]])], passage.replace('"', "'")


def benchmark_of(detail: str | None) -> str | None:
    """The benchmark a contamination drop's detail names (its first word; benchmark names have no spaces)."""
    return detail.split(" ", 1)[0] if detail else None
