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
from mixture.text.shingles import WordHashes, sorted_distinct

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
    """The content-carrying word n-grams of every benchmark's fields (each field, and the fields joined, so an
    n-gram across a question and its answer counts too): `hashes`, sorted and distinct, for the lookups; and every
    (hash, benchmark, item) occurrence with the field (`a+b` for the joined text) and word offset where the item
    first has it, sorted by hash then spec order, for the way back to the items."""

    def __init__(self, benchmarks: list[BenchmarkSource], n: int, min_content_words: int, max_number_share: float):
        self.n, self.min_content_words, self.max_number_share = n, min_content_words, max_number_share
        self.benchmarks = benchmarks
        self.items: list[list[BenchmarkItem]] = []
        self.reports: list[BenchmarkReport] = []
        self.field_names: list[str] = []
        columns: list[list[np.ndarray]] = [[], [], [], [], []]  # hash, benchmark, item, field, offset
        for b, bench in enumerate(benchmarks):
            records = read_records(bench.uri)
            items = benchmark_items(records, list(bench.fields), bench.id_field)
            self.items.append(items)
            kept, skipped = self._item_ngrams(items)
            for col, values in zip(columns, [kept[0], np.full(len(kept[0]), b, np.int64), *kept[1:]], strict=True):
                col.append(values)
            self.reports.append(BenchmarkReport(
                name=bench.name, fields=list(bench.fields), items=len(items),
                items_indexed=len(np.unique(kept[1])), missing_fields=missing_fields(records, list(bench.fields)),
                ngrams_indexed=len(sorted_distinct(kept[0])),
                ngrams_skipped={r: len(sorted_distinct(skipped[r])) for r in SKIP_REASONS}, documents_matched=0))
        occ = [np.concatenate(c) if c else np.zeros(0, np.uint64 if j == 0 else np.int64)
               for j, c in enumerate(columns)]
        order = np.arange(len(occ[0]))
        for key in (occ[2], occ[1], occ[0]):  # stable sorts, least significant key first: by hash, bench, item
            order = order[np.argsort(key[order], kind="stable")]
        occ = [c[order] for c in occ]
        first_of_item = np.ones(len(order), dtype=bool)  # an item's n-gram once (its first field and offset)
        first_of_item[1:] = (occ[0][1:] != occ[0][:-1]) | (occ[1][1:] != occ[1][:-1]) | (occ[2][1:] != occ[2][:-1])
        self.occ_hash, self.occ_bench, self.occ_item, self.occ_field, self.occ_offset = (c[first_of_item] for c in occ)
        self.hashes, self.first = np.unique(self.occ_hash, return_index=True)  # occurrences of hashes[p]:
        self.end = np.append(self.first[1:], len(self.occ_hash))  # first[p]:end[p], the first in spec order
        # a bit per value of a hash's top bits: nearly every document n-gram is ruled out by one lookup
        self.bits = max(16, min(28, int(len(self.hashes)).bit_length() + 6))
        self.prefilter = np.zeros(1 << self.bits, dtype=bool)
        self.prefilter[self.hashes >> np.uint64(64 - self.bits)] = True

    def _field_id(self, name: str) -> int:
        if name not in self.field_names:
            self.field_names.append(name)
        return self.field_names.index(name)

    def _item_ngrams(self, items: list[BenchmarkItem]) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
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
        many_numbers = numbers >= self.max_number_share * self.n
        reason = np.select([~aligned, content == 0, content < self.min_content_words, many_numbers], [-2, 0, 1, 2],
                           default=-1)
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

    def occurrences(self, positions: np.ndarray) -> np.ndarray:
        """The occurrence rows (into the `occ_*` arrays) of the indexed hashes at `positions`."""
        starts, ends = self.first[positions], self.end[positions]
        lengths = ends - starts
        return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))

    def ngram_words(self, row: int) -> tuple[str, BenchmarkItem, str, list[str]]:
        """(benchmark name, item, field, words) of occurrence `row`, read from the benchmark."""
        b, i, f, o = (int(a[row]) for a in (self.occ_bench, self.occ_item, self.occ_field, self.occ_offset))
        item, field = self.items[b][i], self.field_names[f]
        texts = dict(item.texts)
        text = texts.get(field) or " ".join(texts[k] for k in field.split("+"))
        return self.benchmarks[b].name, item, field, words(text)[o:o + self.n]

    def detail(self, text: str, matched: np.ndarray) -> tuple[int, str]:
        """(benchmark, drop detail) of a document whose distinct matching index positions are `matched`: the
        benchmark item that has the most of them (the first in spec order on a tie), the field and the document's
        own words where they first match that item, and the counts."""
        rows = self.occurrences(matched)
        keys = self.occ_bench[rows] * (1 << 32) + self.occ_item[rows]
        uniq, counts = np.unique(keys, return_counts=True)
        best = int(uniq[np.argmax(counts)])  # np.unique sorts: the first maximum is the first in spec order
        b, i, mine = best >> 32, best & 0xFFFFFFFF, rows[keys == best]
        field, passage = self._passage(text, mine)
        quoted = f' "{passage}"' if passage else ""
        others = f", {len(matched)} in all" if len(matched) > len(mine) else ""
        return b, (f"{self.benchmarks[b].name} {self.items[b][i].label} {field}:{quoted} "
                   f"({len(mine)} matching {self.n}-grams{others})")

    def _passage(self, text: str, rows: np.ndarray) -> tuple[str, str]:
        """For the occurrences `rows` of one item: the field of the first n-gram of `text` among them, and the
        document's words from there to the end of that run of matching n-grams of the same field (at most
        PASSAGE_CHARS characters, spaces collapsed)."""
        first_field = int(self.occ_field[rows[np.argmin(self.occ_offset[rows])]])
        spans = token_spans(text)
        grams, _ = WordHashes.of([hashed_text(text)]).ngrams(self.n)
        if len(grams) != max(0, len(spans) - self.n + 1):  # cannot happen with one hasher: no quote then
            return self.field_names[first_field], ""
        order = np.argsort(self.occ_hash[rows], kind="stable")
        hashes, fields = self.occ_hash[rows][order], self.occ_field[rows][order]
        at = np.minimum(np.searchsorted(hashes, grams), len(hashes) - 1)
        field = np.where(hashes[at] == grams, fields[at], -1)  # the item's field of each n-gram of the text
        if not (field >= 0).any():
            return self.field_names[first_field], ""
        j = int(np.argmax(field >= 0))
        end = j
        while end + 1 < len(field) and field[end + 1] == field[j]:
            end += 1
        passage = " ".join(text[spans[j][0]:spans[end + self.n - 1][1]].split())
        if len(passage) > PASSAGE_CHARS:
            passage = passage[:PASSAGE_CHARS - 1].rstrip() + "…"
        return self.field_names[int(field[j])], passage.replace('"', "'")


def benchmark_of(detail: str | None) -> str | None:
    """The benchmark a contamination drop's detail names (its first word; benchmark names have no spaces)."""
    return detail.split(" ", 1)[0] if detail else None
