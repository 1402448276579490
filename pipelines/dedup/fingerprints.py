"""Fingerprints, decontamination and dedup: one pass computes every document's hashes, later stages only read them.

`prepare` fingerprints each document (exact hash, one-permutation MinHash, benchmark n-gram hits); `duplicate_ids`
and `find_duplicates` (duplicates.py) list repeated ids and exact duplicates; `minhash_sigs` writes the surviving
signatures in datatrove's format, `minhash_buckets` finds the pairs that share a band (near_duplicates.py turns
them into candidate pairs, verifies and resolves them); `assign` routes every listed document to its drop file."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.disk_base import DiskWriter

from mixture.pipelines.dedup.exact import drops_folder
from mixture.pipelines.dedup.shuffle import partition_files
from mixture.pipelines.prepare.decontaminate import ContaminationFinder
from mixture.pipelines.schemas import DROPS
from mixture.store.io import open_atomic, write_atomic
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


def slice_bounds(s: int, slices: int) -> tuple[int, int | None]:
    """The first hashes h0 of slice s of `slices` equal ranges of the uint64 space: [lo, hi), hi None for the last."""
    return (s << 64) // slices, None if s == slices - 1 else ((s + 1) << 64) // slices


def slice_offsets(h0: np.ndarray, slices: int) -> np.ndarray:
    """The first record of each slice in a signature file's sorted first hashes, and the record count: the
    `.minhash.slices` index (slices + 1 little-endian uint64) MinhashSigs writes beside each file."""
    bounds = np.array([slice_bounds(s, slices)[0] for s in range(1, slices)], dtype=np.uint64)
    return np.concatenate([[0], np.searchsorted(h0, bounds, side="left"), [len(h0)]]).astype("<u8")


def slice_records(fs: fsspec.AbstractFileSystem, path: str, records: int, itemsize: int, s: int, slices: int
                  ) -> tuple[int, int]:
    """[start, end) records of slice s in a sorted signature file: from its `.minhash.slices` index (one small
    read) when it was written for `slices` and this file, else by binary search of the file."""
    if slices == 1:
        return 0, records
    try:
        raw = fs.cat_file(path.removesuffix(".sig") + ".slices")
    except FileNotFoundError:
        raw = b""
    index = np.frombuffer(raw, dtype="<u8") if len(raw) == 8 * (slices + 1) else None
    if index is not None and index[-1] == records:
        return int(index[s]), int(index[s + 1])
    lo, hi = slice_bounds(s, slices)
    return (first_at_least(fs, path, records, itemsize, lo) if lo else 0,
            records if hi is None else first_at_least(fs, path, records, itemsize, hi))


def first_at_least(fs: fsspec.AbstractFileSystem, path: str, records: int, itemsize: int, value: int) -> int:
    """The first record of a signature file (`records` fixed-size records sorted by their first hash, a uint64 at
    the start of each record) whose first hash is at least `value`: a binary search, one 8-byte range read a step."""
    lo, hi = 0, records
    while lo < hi:
        mid = (lo + hi) // 2
        h0 = int.from_bytes(fs.cat_file(path, start=mid * itemsize, end=mid * itemsize + 8), "little")
        lo, hi = (mid + 1, hi) if h0 < value else (lo, mid)
    return lo


class BandCollisions(PipelineStep):
    """Task r = (band b, slice s) of the bucket stage (b = r // slices, s = r % slices), in place of datatrove's
    MinhashDedupBuckets (same input files, same pairs): merges the slice of band b's sorted signature files whose
    first hash h0 falls in the s-th of `slices` equal ranges of the uint64 space (a contiguous run of each file,
    from the file's slice index, else by binary search; equal signatures have equal h0, so a bucket lies wholly
    in one slice) and writes, for every run of equal band signatures, each record paired with the one before it in
    (signature, file, document) order, as `<r>_00.dups` (4 uint32 per pair, streamed): the pairs of one bucket
    follow each other (`minhash_cluster` reads the buckets back from them). Records are merged in blocks with
    numpy instead of one heap step per record; a block of every file is held at a time."""

    type = "🫂 - DEDUP"
    name = "🎯 MinHash band collisions"

    def __init__(self, input_folder: str, output_folder: str, rows: int, memory: int = 256 * 2**20, slices: int = 1):
        super().__init__()
        self.input_folder, self.output_folder, self.rows, self.memory = input_folder, output_folder, rows, memory
        self.slices = slices

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        dtype = np.dtype([(f"h{j}", "<u8") for j in range(self.rows)] + [("doc", "<u4")])
        band = rank // self.slices
        fs, root = fsspec.core.url_to_fs(f"{self.input_folder}/bucket_{band:03d}")
        paths = sorted(fs.glob(f"{root}/*.minhash.sig"))
        block = max(256, self.memory // (dtype.itemsize * max(1, len(paths))))  # records read per file at a time
        out_fs, out_root = fsspec.core.url_to_fs(self.output_folder)
        n_pairs = 0
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(open_atomic(out_fs, f"{out_root}/{rank:05d}_00.dups"))  # pairs streamed
            files, left = [], []  # per file: open at the slice's first record, how many records of the slice remain
            for p in paths:
                start, end = slice_records(fs, p, fs.size(p) // dtype.itemsize, dtype.itemsize, rank % self.slices,
                                           self.slices)
                files.append(stack.enter_context(fs.open(p, "rb")))
                files[-1].seek(start * dtype.itemsize)
                left.append(max(0, end - start))
            stems = [int(p.rsplit("/", 1)[-1].removesuffix(".minhash.sig")) for p in paths]
            held = [np.zeros(0, dtype) for _ in files]
            done = [not n for n in left]

            def read_on(i: int) -> None:
                """The next block of file i's slice after what it holds."""
                want = min(block, left[i])
                more = np.frombuffer(files[i].read(want * dtype.itemsize), dtype=dtype)
                left[i] -= len(more)
                done[i] = len(more) < want or not left[i]
                held[i] = np.concatenate([held[i], more]) if len(held[i]) else more

            while True:
                for i in range(len(files)):  # refill every file whose records all went into the last merge
                    if not done[i] and not len(held[i]):
                        read_on(i)
                live = [i for i in range(len(files)) if len(held[i])]
                if not live:
                    break
                # records whose first hash is below every unfinished file's last held one have all their equals held
                open_ends = [held[i]["h0"][-1] for i in live if not done[i]]
                cut = min(open_ends) if open_ends else None
                parts, ranks = [], []
                for i in live:
                    n = len(held[i]) if cut is None else int(np.searchsorted(held[i]["h0"], cut, side="left"))
                    if n == 0 and cut is not None and held[i]["h0"][-1] == cut and not done[i]:
                        read_on(i)  # a run of equal first hashes longer than the block: read on before cutting
                        continue
                    parts.append(held[i][:n])
                    ranks.append(np.full(n, stems[i], dtype=np.uint32))
                    held[i] = held[i][n:]
                if parts:
                    pairs = self._pairs(np.concatenate(parts), np.concatenate(ranks))
                    out.write(pairs.astype("<u4").tobytes())
                    n_pairs += len(pairs)
        self.stat_update("total_matches", value=n_pairs)
        if data:
            yield from data

    def _pairs(self, recs: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        """(file, doc, file, doc) of every record whose band signature equals the previous record's."""
        hs = [recs[f"h{j}"] for j in range(self.rows)]
        order = np.lexsort([recs["doc"], ranks, *hs[::-1]])
        same = np.ones(len(order) - 1 if len(order) else 0, dtype=bool)
        for h in hs:
            h = h[order]
            same &= h[1:] == h[:-1]
        i = np.flatnonzero(same) + 1
        return np.stack([ranks[order[i - 1]], recs["doc"][order[i - 1]], ranks[order[i]], recs["doc"][order[i]]], axis=1)


class MinhashSigs(PipelineStep):
    """Writes the MinHash signatures of task `rank`'s surviving fuzzy-group documents as datatrove signature files
    (`bucket_<b>/<rank>.minhash.sig`: rows of `rows` uint64 and the document index, sorted), read from the prepared
    file's `minhash` column alone; with `slices` > 1, beside each the first record of each first-hash slice the
    bucket stage reads (`<rank>.minhash.slices`, slice_offsets)."""

    type = "🫂 - DEDUP"
    name = "🎯 MinHash signatures"

    def __init__(self, work: str, output_folder: str, bands: int, rows: int, slices: int = 1):
        super().__init__()
        self.work, self.output_folder, self.bands, self.rows, self.slices = work, output_folder, bands, rows, slices

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        drops = load_drops(self.work, rank, None)
        dtype = np.dtype([(f"h{j}", "<u8") for j in range(self.rows)] + [("doc", "<u4")])
        fs, root = fsspec.core.url_to_fs(f"{self.work}/prepared/{rank:05d}.parquet")
        out_fs, out_root = fsspec.core.url_to_fs(self.output_folder)
        n = 0
        with tempfile.TemporaryDirectory(prefix="mixture-sigs-") as tmp:
            # one unsorted local file per band, written batch by batch; then each band alone is sorted and published
            bands = [open(f"{tmp}/{b}", "wb") for b in range(self.bands)]  # noqa: SIM115 - closed below
            try:
                if fs.exists(root):
                    with fs.open(root, "rb") as f:
                        for batch in pq.ParquetFile(f).iter_batches(columns=["idx", "minhash"], batch_size=4096):
                            n += self._spill(batch, drops, bands, dtype)
            finally:
                for band in bands:
                    band.close()
            for b in range(self.bands):
                records = np.fromfile(f"{tmp}/{b}", dtype=dtype)
                records.sort(order=dtype.names)  # the bucket stage merges files sorted by signature
                out_fs.makedirs(f"{out_root}/bucket_{b:03d}", exist_ok=True)
                if self.slices > 1:  # the index first: a published signature file always has its index
                    write_atomic(out_fs, f"{out_root}/bucket_{b:03d}/{rank:05d}.minhash.slices",
                                 slice_offsets(records["h0"], self.slices).tobytes())
                write_atomic(out_fs, f"{out_root}/bucket_{b:03d}/{rank:05d}.minhash.sig", records.tobytes())
        self.stat_update("signatures", value=n)
        if data:
            yield from data

    def _spill(self, batch: pa.RecordBatch, drops: dict, bands: list, dtype: np.dtype) -> int:
        keep = [(i, sig) for i, sig in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)
                if sig is not None and i not in drops]
        if not keep:
            return 0
        matrix = np.frombuffer(b"".join(sig for _, sig in keep), dtype="<u8").reshape(len(keep), -1)
        for b, band in enumerate(bands):
            records = np.empty(len(keep), dtype=dtype)
            for j in range(self.rows):
                records[f"h{j}"] = matrix[:, b * self.rows + j]
            records["doc"] = [i for i, _ in keep]
            band.write(records.tobytes())
        return len(keep)


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
