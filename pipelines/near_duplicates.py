"""Near duplicates with evidence: the documents that share an LSH bucket become candidate pairs, each pair is
checked on its shingles, and a document is dropped only for a kept document it is itself similar to.

`minhash_cluster` runs `ResolveNearDuplicates`: buckets from the bucket stage's pairs → candidate pairs (every
member of a bucket with the first `ANCHORS` members before it in priority order) → verification (signature
agreement rules out the clearly dissimilar pairs, the exact Jaccard similarity of the two documents' shingle sets
decides the others) → a greedy pass over the verified pairs in priority order. Verification is per pair and the
greedy pass reads the verified pairs sorted, so both can be split by pair and by connected component."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.dedup import prepared_docs, write_drops
from mixture.store.formats import NearDuplicateReport, write_model
from mixture.text.shingles import WordHashes

ANCHORS = 8  # a bucket member is paired with at most this many members before it (a bucket of n: ≤ 8n pairs)
SIGMAS = 6  # a pair whose signature agreement is this many standard errors below the threshold is not compared
PAIRS_PER_FETCH = 16_384  # pairs read at a time (their two signatures: 16k × 2 × 112 × 8 bytes = 29 MB)
SHINGLES_PER_CHECK = 4_000_000  # shingles compared at once (each held as value, key and owner: ~24 bytes)
BAND_BITS = 40  # bucket id = band << BAND_BITS | bucket number in the band's file


def bucket_members(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bucket number, member) of the pairs of one band's `.dups` file, in written order: (m, 4) uint32 rows
    (task, index, task, index). The bucket stage writes a bucket's pairs one after the other, each member with the
    one before it (a chain, as datatrove's MinhashDedupBuckets) or with the first (a star): a pair continues the
    bucket when its first document is the previous pair's first or second. Members are (task, index) rows."""
    if not len(pairs):
        return np.empty(0, np.int64), np.empty((0, 2), np.uint32)
    a, b = pairs[:, :2], pairs[:, 2:]
    start = np.ones(len(pairs), dtype=bool)
    start[1:] = ~((a[1:] == b[:-1]).all(axis=1) | (a[1:] == a[:-1]).all(axis=1))
    bucket = np.cumsum(start) - 1
    return np.concatenate([bucket[start], bucket]), np.concatenate([a[start], b])


def band_buckets(path: str, fs: fsspec.AbstractFileSystem, band: int, block: int = 1 << 20) -> Iterator[pa.Table]:
    """(bucket, rank, idx) of every member of every bucket of one band's `.dups` file, read `block` pairs at a time
    (a bucket cut by a block boundary is held back and read with the next block)."""
    held = np.empty((0, 4), np.uint32)
    first = 0
    with fs.open(path, "rb") as f:
        while True:
            raw = f.read(block * 16)
            more = np.frombuffer(raw, dtype="<u4").reshape(-1, 4)
            pairs = np.concatenate([held, more]) if len(held) else more
            if not len(pairs):
                return
            last = len(raw) < block * 16
            bucket, members = bucket_members(pairs)
            if not last:  # the last bucket may go on in the next block
                n_pairs_last = int((bucket[len(bucket) - len(pairs):] == bucket[-1]).sum())
                held = pairs[len(pairs) - n_pairs_last:]
                keep = bucket != bucket[-1]
                bucket, members = bucket[keep], members[keep]
            if len(bucket):
                yield pa.table({"bucket": pa.array((band << BAND_BITS) + first + bucket, pa.int64()),
                                "rank": pa.array(members[:, 0].astype(np.int32)),
                                "idx": pa.array(members[:, 1].astype(np.int64))})
                first += int(bucket[-1]) + 1
            if last:
                return


@dataclass
class Segments:
    """Variable-length uint64 rows in a local file: row i is `values[start[i]:start[i] + length[i]]`."""

    values: np.ndarray  # np.memmap (or array) of uint64
    start: np.ndarray  # int64 per row
    length: np.ndarray  # int64 per row

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of `rows`, concatenated, and the position in `rows` of each value."""
        lengths = self.length[rows]
        owner = np.repeat(np.arange(len(rows)), lengths)
        first = np.cumsum(lengths) - lengths
        at = np.repeat(self.start[rows] - first, lengths) + np.arange(int(lengths.sum()))
        return np.asarray(self.values[at]), owner


def unique_shingles(grams: np.ndarray, doc: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each document's distinct shingles, sorted, document after document (`doc` ascending, as `ngrams` gives
    them), and how many each has."""
    bounds = np.searchsorted(doc, np.arange(n_docs + 1))
    sets = [np.unique(grams[bounds[i]:bounds[i + 1]]) for i in range(n_docs)]
    return (np.concatenate(sets) if sets else np.empty(0, np.uint64)), np.array([len(x) for x in sets], np.int64)


_OWNER_BITS = 15  # pairs compared at once: at most 2**15, their index in the top bits of a 64-bit sort key


def jaccard(shingles: Segments, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Jaccard similarity of the shingle sets of documents a[i] and b[i] (rows of `shingles`, each sorted and
    distinct), pairs taken in groups of at most SHINGLES_PER_CHECK shingles and 2**15 pairs.

    No sort: a key of (pair, top 49 bits of the shingle) is ascending over the group's first sets as they are
    stored, so each shingle of a second set is looked up by binary search and counts when a shingle of the first
    set under its key has the same 64-bit value (a key holds more than one shingle about once in 10^7 pairs of
    5,000-shingle documents; those few are checked one by one)."""
    out = np.empty(len(a), dtype=np.float64)
    size = shingles.length[a] + shingles.length[b]
    ends = np.cumsum(size)
    shift = np.uint64(_OWNER_BITS)
    i = 0
    while i < len(a):
        j = min(len(a), i + (1 << _OWNER_BITS),
                max(i + 1, int(np.searchsorted(ends, (ends[i - 1] if i else 0) + SHINGLES_PER_CHECK, side="right"))))
        va, oa = shingles.gather(a[i:j])
        vb, ob = shingles.gather(b[i:j])
        ka = (oa.astype(np.uint64) << np.uint64(64 - _OWNER_BITS)) | (va >> shift)
        kb = (ob.astype(np.uint64) << np.uint64(64 - _OWNER_BITS)) | (vb >> shift)
        at = np.searchsorted(ka, kb)
        hit = np.zeros(len(kb), dtype=bool)
        found = np.flatnonzero(at < len(ka))
        found = found[ka[at[found]] == kb[found]]
        hit[found] = va[at[found]] == vb[found]
        if len(ka) > 1 and (ka[1:] == ka[:-1]).any():  # a key holding several shingles of a first set: rare
            for x in found[~hit[found]]:
                hit[x] = bool((va[at[x]:np.searchsorted(ka, kb[x], side="right")] == vb[x]).any())
        shared = np.bincount(ob[hit], minlength=j - i)
        union = size[i:j] - shared
        out[i:j] = np.where(union > 0, shared / np.maximum(union, 1), 1.0)
        i = j
    return out


def signature_margin(threshold: float, permutations: int) -> float:
    """How far below the threshold a pair's signature agreement must be to rule it out without comparing its
    shingles: SIGMAS standard errors of the agreement of a pair exactly at the threshold."""
    return SIGMAS * math.sqrt(threshold * (1 - threshold) / permutations)


def _scalar(con, sql: str) -> int:
    return int(con.execute(sql).fetchall()[0][0])


def _row_groups(pf: pq.ParquetFile, idx: np.ndarray, tags: np.ndarray, column: str, most: int = 256
                ) -> Iterator[tuple[np.ndarray, pa.Array]]:
    """(tags, values of `column`) of the rows `idx` (ascending positions in the file), each row group read once,
    at most `most` rows at a time."""
    ends = np.cumsum([pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)])
    group = np.searchsorted(ends, idx, side="right")
    for g in np.unique(group):
        sel = group == g
        col = pf.read_row_group(int(g), columns=[column]).column(0).combine_chunks()
        rows = idx[sel] - (ends[g - 1] if g else 0)
        for lo in range(0, len(rows), most):
            yield tags[sel][lo:lo + most], col.take(pa.array(rows[lo:lo + most]))


class ResolveNearDuplicates(PipelineStep):
    """One task, in place of datatrove's MinhashDedupCluster (union-find over the bucket pairs, which chains
    documents through shared boilerplate): candidate pairs from the buckets, each verified on its shingles, then in
    priority order (source, file, record, as for exact duplicates) a document is dropped when a verified pair joins
    it to an earlier document that is kept; the detail names that document (the most similar one) and the
    similarity. Writes the drops (`fuzzy_drops`) and a report (`report`, NearDuplicateReport)."""

    type = "🫂 - DEDUP"
    name = "🎯 MinHash near duplicates"

    def __init__(self, pairs_folder: str, prepared: str, output: str, report: str, *, threshold: float, ngram: int,
                 permutations: int, anchors: int = ANCHORS):
        super().__init__()
        self.pairs_folder, self.prepared, self.output, self.report = pairs_folder, prepared, output, report
        self.threshold, self.ngram, self.permutations, self.anchors = threshold, ngram, permutations, anchors

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        with prepared_docs(self.prepared) as con, tempfile.TemporaryDirectory(prefix="mixture-neardup-") as tmp:
            counts = self._candidates(con)
            counts.update(self._verify(con, tmp))
            out, kept_similar = self._greedy(con)
        counts.update(drops=len(out), kept_similar=kept_similar,
                      pairs_rejected=counts["pairs_considered"] - counts["pairs_verified"])
        for key in ("pairs_considered", "pairs_verified", "drops"):
            self.stat_update(key, value=counts[key])
        write_drops(self.output, out)
        fs, path = fsspec.core.url_to_fs(self.report)
        write_model(fs, path, NearDuplicateReport(
            measure=f"word {self.ngram}-gram Jaccard", threshold=round(self.threshold, 4), anchors=self.anchors,
            signature_margin=round(signature_margin(self.threshold, self.permutations), 4), **counts))
        if data:
            yield from data

    def _candidates(self, con) -> dict[str, int]:
        """Tables `cand` (rank, idx, prio: position in priority order of the documents in a bucket) and `pairs`
        (a, b: prio of an earlier and a later member of a bucket, the earlier among the first `anchors`)."""
        con.sql("CREATE TABLE members (bucket BIGINT, rank INTEGER, idx BIGINT)")
        fs, root = fsspec.core.url_to_fs(self.pairs_folder)
        band_pairs = 0
        for path in sorted(fs.glob(f"{root}/*.dups")):
            band = int(path.rsplit("/", 1)[-1].split("_")[0])
            band_pairs += fs.size(path) // 16
            for chunk in band_buckets(path, fs, band):
                con.register("chunk", chunk)
                con.sql("INSERT INTO members SELECT * FROM chunk")
                con.unregister("chunk")
        con.sql("""CREATE TABLE cand AS SELECT rank, idx,
                   row_number() OVER (ORDER BY source_order, file, record, rank, idx) - 1 AS prio
                   FROM docs SEMI JOIN members USING (rank, idx)""")
        con.sql("""CREATE TABLE ranked AS SELECT bucket, prio,
                   row_number() OVER (PARTITION BY bucket ORDER BY prio) - 1 AS pos
                   FROM members JOIN cand USING (rank, idx)""")
        con.sql(f"""CREATE TABLE pairs AS SELECT DISTINCT x.prio AS a, y.prio AS b
                    FROM (SELECT * FROM ranked WHERE pos < {int(self.anchors)}) x
                    JOIN ranked y ON x.bucket = y.bucket AND x.pos < y.pos""")
        return {"band_pairs": int(band_pairs), "buckets": _scalar(con, "SELECT count(DISTINCT bucket) FROM members"),
                "documents": _scalar(con, "SELECT count(*) FROM cand"),
                "pairs_considered": _scalar(con, "SELECT count(*) FROM pairs")}

    def _load(self, con, tmp: str, column: str, docs: np.ndarray | None = None) -> Segments:
        """`column` of the prepared files (`minhash`: the signature; `text`: its distinct shingles) of the candidate
        documents (all, or those whose prio is in `docs`), by prio, in a local file."""
        rows = con.execute("SELECT rank, idx, prio FROM cand ORDER BY rank, idx").fetchnumpy()
        if docs is not None:
            mask = np.isin(rows["prio"], docs)
            rows = {k: np.asarray(v)[mask] for k, v in rows.items()}
        n = _scalar(con, "SELECT count(*) FROM cand")
        start, length = np.zeros(n, np.int64), np.zeros(n, np.int64)
        fs, root = fsspec.core.url_to_fs(self.prepared)
        written = 0
        with open(f"{tmp}/{column}", "wb") as out:
            ranks = np.asarray(rows["rank"])
            for r in np.unique(ranks):
                sel = ranks == r
                with fs.open(f"{root}/{int(r):05d}.parquet", "rb") as f:
                    for prio, col in _row_groups(pq.ParquetFile(f), np.asarray(rows["idx"])[sel],
                                                 np.asarray(rows["prio"])[sel], column):
                        values, counts = self._values(col, column)
                        out.write(values.astype("<u8").tobytes())
                        start[prio] = written + np.cumsum(counts) - counts
                        length[prio] = counts
                        written += len(values)
        values = np.memmap(f"{tmp}/{column}", dtype="<u8", mode="r") if written else np.empty(0, np.uint64)
        return Segments(values, start, length)

    def _values(self, col: pa.Array, column: str) -> tuple[np.ndarray, np.ndarray]:
        if column == "minhash":
            sigs = col.to_pylist()
            return np.frombuffer(b"".join(sigs), dtype="<u8"), np.array([len(s) // 8 for s in sigs], np.int64)
        texts = col.to_pylist()
        grams, doc = WordHashes.of(texts).ngrams(self.ngram)
        return unique_shingles(grams, doc, len(texts))

    def _verify(self, con, tmp: str) -> dict[str, int]:
        """Table `verified` (a, b, sim): the candidate pairs whose shingle sets have a Jaccard similarity of at
        least the threshold. A pair whose signature agreement is below the threshold by more than the margin is
        ruled out without reading the texts."""
        con.sql("CREATE TABLE verified (a BIGINT, b BIGINT, sim DOUBLE)")
        sigs = self._load(con, tmp, "minhash")
        k = self.permutations
        floor = self.threshold - signature_margin(self.threshold, k)
        con.sql("CREATE TABLE plausible (a BIGINT, b BIGINT)")
        ruled_out = 0
        reader = con.cursor().sql("SELECT a, b FROM pairs").to_arrow_reader(PAIRS_PER_FETCH)
        for batch in reader:
            a, b = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            va, _ = sigs.gather(a)
            vb, _ = sigs.gather(b)
            agree = (va.reshape(-1, k) == vb.reshape(-1, k)).mean(axis=1)
            keep = agree >= floor
            ruled_out += int((~keep).sum())
            con.register("batch", pa.table({"a": a[keep], "b": b[keep]}))
            con.sql("INSERT INTO plausible SELECT * FROM batch")
            con.unregister("batch")
        needed = con.execute("SELECT a FROM plausible UNION SELECT b FROM plausible").fetchnumpy()["a"]
        shingles = self._load(con, tmp, "text", np.asarray(needed))
        compared = verified = 0
        for batch in con.cursor().sql("SELECT a, b FROM plausible").to_arrow_reader(PAIRS_PER_FETCH):
            a, b = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            sim = jaccard(shingles, a, b)
            ok = sim >= self.threshold
            compared += len(a)
            verified += int(ok.sum())
            con.register("batch", pa.table({"a": a[ok], "b": b[ok], "sim": sim[ok]}))
            con.sql("INSERT INTO verified SELECT * FROM batch")
            con.unregister("batch")
        return {"pairs_ruled_out": ruled_out, "pairs_compared": compared, "pairs_verified": verified}

    def _greedy(self, con) -> tuple[list[tuple], int]:
        """In priority order, each document with a verified pair to an earlier kept document is dropped, naming the
        most similar such document. Returns the drops (rank, idx, reason, detail) and the number of documents kept
        although similar to an earlier one (every such one was dropped: a components approach would drop them)."""
        n = _scalar(con, "SELECT count(*) FROM cand")
        dropped = np.zeros(n, dtype=bool)
        decided: list[tuple[int, int, float]] = []
        kept_similar, current, done = 0, -1, False
        for batch in con.cursor().sql("SELECT a, b, sim FROM verified ORDER BY b, sim DESC, a").to_arrow_reader(
                PAIRS_PER_FETCH):
            for a, b, sim in zip(*(batch.column(i).to_pylist() for i in range(3)), strict=True):
                if b != current:
                    kept_similar += current >= 0 and not done
                    current, done = b, False
                if not done and not dropped[a]:
                    dropped[b], done = True, True
                    decided.append((b, a, sim))
        kept_similar += current >= 0 and not done
        con.register("decided", pa.table({"b": pa.array([d[0] for d in decided], pa.int64()),
                                          "a": pa.array([d[1] for d in decided], pa.int64()),
                                          "sim": pa.array([d[2] for d in decided], pa.float64())}))
        rows = con.sql("""
            SELECT l.rank, l.idx, k.id, k.source, k.file, k.record, d.sim FROM decided d
            JOIN cand lc ON lc.prio = d.b JOIN docs l ON l.rank = lc.rank AND l.idx = lc.idx
            JOIN cand kc ON kc.prio = d.a JOIN docs k ON k.rank = kc.rank AND k.idx = kc.idx""").fetchall()
        measure = f"word {self.ngram}-gram Jaccard"
        out = [(r, i, "fuzzy_duplicate", f"near duplicate of {id_!r} ({src}, {file}:{rec}): {measure} {sim:.3f}")
               for r, i, id_, src, file, rec, sim in rows]
        return out, int(kept_similar)
