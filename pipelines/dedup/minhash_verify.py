"""Stage `minhash_verify`, one task per verification partition of the candidate pairs (where `minhash_route` sent
a later document's family): each pair checked on its evidence. Signature agreement rules out the clearly dissimilar
pairs; the exact Jaccard similarity of the two documents' shingle sets decides the others."""

from __future__ import annotations

import math
import mmap
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.minhash_buckets import MEMBERS, PAIRS
from mixture.pipelines.dedup.minhash_gather import GATHERED
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import (
    PART,
    sorted_batches,
    with_partition_function,
    write_counts,
    write_partitions,
)
from mixture.pipelines.runtime.duckdb_connection import scalar
from mixture.pipelines.runtime.scratch import scratch
from mixture.stages.registry import (
    BUCKET_MEMBERS,
    GATHERED_TEXTS,
    NEAR,
    VERIFIED_PAIRS,
    VERIFY_PAIRS,
    VERIFY_TASK_COUNTS,
)
from mixture.text.kernel import kernel
from mixture.text.shingles import WordHashes, sorted_distinct

SIGMAS = 6  # a pair whose signature agreement is this many standard errors below the threshold is not compared
PAIRS_PER_FETCH = 4_096  # pairs read at a time (their two signatures: 4k × 2 × 112 × 8 bytes = 7 MB)
SHINGLES_PER_CHECK = 250_000  # shingles compared at once (value, key, owner and lookups: ~50 bytes each)

VERIFY_COUNTS = pa.schema([(f, pa.int64()) for f in ("documents", "pairs_considered", "pairs_ruled_out",
                                                     "pairs_compared", "pairs_verified")])
# a verified pair with its evidence: the later document's address, the earlier one's id, source, file, record
VERIFIED = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("sim", pa.float64()), ("rank_b", pa.int32()),
                      ("idx_b", pa.int64()), ("kept_id", pa.string()), ("kept_source", pa.string()),
                      ("kept_file", pa.string()), ("kept_record", pa.int64())])


@dataclass
class Segments:
    """Variable-length uint64 rows in a local file: row i is `values[start[i]:start[i] + length[i]]`."""

    values: np.ndarray  # uint64 over `mapping` (or an array)
    start: np.ndarray  # int64 per row
    length: np.ndarray  # int64 per row
    mapping: mmap.mmap | None = None  # the file, mapped

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of `rows`, concatenated (a copy), and the position in `rows` of each value. The file's pages
        read are then let go: the process keeps one gather's values, not every page of the file it has touched
        (they stay in the page cache, but a task's resident memory counts them while it maps them)."""
        lengths = self.length[rows]
        owner = np.repeat(np.arange(len(rows)), lengths)
        first = np.cumsum(lengths) - lengths
        at = np.repeat(self.start[rows] - first, lengths) + np.arange(int(lengths.sum()))
        values = self.values[at]
        if self.mapping is not None:
            self.mapping.madvise(mmap.MADV_DONTNEED)
        return values, owner


def unique_shingles(grams: np.ndarray, doc: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each document's distinct shingles, sorted, document after document (`doc` ascending, as `ngrams` gives
    them), and how many each has."""
    bounds = np.searchsorted(doc, np.arange(n_docs + 1))
    sets = [sorted_distinct(grams[bounds[i]:bounds[i + 1]]) for i in range(n_docs)]
    return (np.concatenate(sets) if sets else np.empty(0, np.uint64)), np.array([len(x) for x in sets], np.int64)


_OWNER_BITS = 15  # pairs compared at once: at most 2**15, their index in the top bits of a 64-bit sort key


def _groups(size: np.ndarray, max_pairs: int) -> Iterator[tuple[int, int]]:
    """Consecutive pairs [i, j) of at most SHINGLES_PER_CHECK shingles (`size`: each pair's) and `max_pairs` pairs,
    at least one pair each."""
    ends = np.cumsum(size)
    i = 0
    while i < len(size):
        j = min(len(size), i + max_pairs,
                max(i + 1, int(np.searchsorted(ends, (ends[i - 1] if i else 0) + SHINGLES_PER_CHECK, side="right"))))
        yield i, j
        i = j


def _similarity(shared: np.ndarray, size: np.ndarray) -> np.ndarray:
    union = size - shared
    return np.where(union > 0, shared / np.maximum(union, 1), 1.0)


def jaccard(shingles: Segments, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Jaccard similarity of the shingle sets of documents a[i] and b[i] (rows of `shingles`, each sorted and
    distinct): the compiled kernel merges each pair's two rows where the file maps them (6-12x `jaccard_py`, the
    reference, bench/verify_jaccard_bench.py), in groups of at most SHINGLES_PER_CHECK shingles, after each of
    which the pages it read are let go (Segments.gather)."""
    if kernel is None:
        return jaccard_py(shingles, a, b)
    a, b = np.ascontiguousarray(a, np.int64), np.ascontiguousarray(b, np.int64)
    size = shingles.length[a] + shingles.length[b]
    out = np.empty(len(a), dtype=np.float64)
    for i, j in _groups(size, len(a)):
        shared = np.frombuffer(kernel.shared_counts(shingles.values, shingles.start, shingles.length, a[i:j], b[i:j]),
                               np.int64)
        if shingles.mapping is not None:
            shingles.mapping.madvise(mmap.MADV_DONTNEED)
        out[i:j] = _similarity(shared, size[i:j])
    return out


def jaccard_py(shingles: Segments, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`jaccard` in numpy, pairs taken in groups of at most SHINGLES_PER_CHECK shingles and 2**15 pairs.

    No sort: a key of (pair, top 49 bits of the shingle) is ascending over the group's first sets as they are
    stored, so each shingle of a second set is looked up by binary search and counts when a shingle of the first
    set under its key has the same 64-bit value (a key holds more than one shingle about once in 10^7 pairs of
    5,000-shingle documents; those few are checked one by one)."""
    out = np.empty(len(a), dtype=np.float64)
    size = shingles.length[a] + shingles.length[b]
    shift = np.uint64(_OWNER_BITS)
    for i, j in _groups(size, 1 << _OWNER_BITS):
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
        out[i:j] = _similarity(np.bincount(ob[hit], minlength=j - i), size[i:j])
    return out


def signature_margin(threshold: float, permutations: int) -> float:
    """How far below the threshold a pair's signature agreement must be to rule it out without comparing its
    shingles: SIGMAS standard errors of the agreement of a pair exactly at the threshold."""
    return SIGMAS * math.sqrt(threshold * (1 - threshold) / permutations)


class MinhashVerify(PartitionedStep):
    """Stage `minhash_verify`, task q: the distinct candidate pairs of verification partition q (VERIFY_PAIRS: every
    pair of the later documents `minhash_route` sent there, from every band), each verified: signature agreement
    rules out the clearly dissimilar, the exact Jaccard similarity of the two documents' shingle sets decides the
    others. Only the documents of
    these pairs are read, as `minhash_gather` sent them to this partition (GATHERED_TEXTS in `folder`: their
    signatures, then the texts of those not ruled out). Writes the verified pairs with their evidence to the
    partitions of their later documents (VERIFIED_PAIRS, a shuffle of P: the components' rounds read a document's
    pairs there) and the task's counts (VERIFY_TASK_COUNTS)."""

    name = "🎯 MinHash verify pairs"

    def __init__(self, folder: str, *, threshold: float, ngram: int, permutations: int,
                 memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder = folder
        self.threshold, self.ngram, self.permutations = threshold, ngram, permutations

    def inputs(self, rank: int) -> list[tuple]:
        return [("raw_pairs_files", VERIFY_PAIRS.every(self.folder), PAIRS, rank),
                ("gathered_files", GATHERED_TEXTS.every(self.folder), GATHERED, rank),
                ("raw_members", BUCKET_MEMBERS.every(self.folder), MEMBERS, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        # the pairs are read into a table once (a scan pays per file: one per writer task); the gathered documents,
        # whose texts are the bulk of the partition, are scanned where needed and never held (memory that does not
        # grow with the partition's texts)
        con.execute("CREATE TABLE raw_pairs AS SELECT * FROM raw_pairs_files")
        counts = {"documents": scalar(con, "SELECT count(DISTINCT g) FROM raw_members")}
        counts.update(self._candidates(con))
        with scratch("neardup-") as tmp:
            counts.update(self._verify(con, tmp, rank))
        self._evidence(con)
        with_partition_function(con)
        write_partitions(sorted_batches(con, f"""
            SELECT * FROM (
                SELECT ca.g AS a, cb.g AS b, v.sim, cb.rank AS rank_b, cb.idx AS idx_b, k.id AS kept_id,
                       k.source AS kept_source, k.file AS kept_file, k.record AS kept_record,
                       mixture_partition(cb.g, {self.world_size}) AS {PART}
                FROM verified v JOIN cand ca ON ca.prio = v.a JOIN cand cb ON cb.prio = v.b JOIN kept k ON k.g = ca.g)
            ORDER BY {PART}, b, a"""), VERIFIED_PAIRS.path(self.folder, rank), self.world_size)
        write_counts(VERIFY_TASK_COUNTS.path(self.folder, rank), VERIFY_COUNTS, counts)
        return {key: int(counts[key]) for key in ("pairs_considered", "pairs_verified")}

    def _candidates(self, con) -> dict[str, int]:
        """Tables `cand` (g, rank, idx, prio: the task's own numbering of its pairs' documents, in spec order) and
        `pairs` (a, b: prio of the earlier and the later document of each distinct pair)."""
        con.execute("""CREATE TABLE cand AS SELECT g, rank, idx, row_number() OVER (ORDER BY g) - 1 AS prio FROM (
                       SELECT a AS g, rank_a AS rank, idx_a AS idx FROM raw_pairs
                       UNION SELECT b, rank_b, idx_b FROM raw_pairs)""")
        con.execute("""CREATE TABLE pairs AS SELECT DISTINCT ca.prio AS a, cb.prio AS b FROM raw_pairs p
                       JOIN cand ca ON ca.g = p.a JOIN cand cb ON cb.g = p.b""")
        return {"pairs_considered": scalar(con, "SELECT count(*) FROM pairs")}

    def _load(self, con, tmp: str, column: str, docs: str | None = None) -> Segments:
        """`column` of the candidate documents as gathered for this partition (`minhash`: the signature; `text`:
        its distinct shingles), of all or of those whose prio is in table `docs`, by prio, in a local file. The
        gathered files are scanned a batch at a time, not joined: no more of their rows than a batch is held."""
        g_of = con.sql("SELECT g FROM cand ORDER BY prio").fetchnumpy()["g"]  # a document's prio: its rank in g
        n = len(g_of)
        start, length = np.zeros(n, np.int64), np.zeros(n, np.int64)
        wanted = np.ones(n, bool)
        if docs:
            wanted[:] = False
            wanted[con.sql(f"SELECT prio FROM {docs}").fetchnumpy()["prio"]] = True
        written = loaded = 0
        with open(f"{tmp}/{column}", "wb") as out:
            # on con itself, not a cursor: the view is this connection's
            for batch in con.sql(f"SELECT g, {column} FROM gathered_files").to_arrow_reader(256):
                g = batch.column(0).to_numpy()
                prio = np.minimum(np.searchsorted(g_of, g), max(n - 1, 0))
                keep = (g_of[prio] == g) & wanted[prio] if n else np.zeros(len(g), bool)
                if not keep.any():
                    continue
                prio = prio[keep]
                values, counts = self._values(batch.column(1).filter(pa.array(keep)), column)
                out.write(values.astype("<u8").tobytes())
                start[prio] = written + np.cumsum(counts) - counts
                length[prio] = counts
                written += len(values)
                loaded += len(prio)
        self.stat_update("signatures_loaded" if column == "minhash" else "texts_loaded", value=loaded)
        if not written:
            return Segments(np.empty(0, np.uint64), start, length)
        with open(f"{tmp}/{column}", "rb") as f:
            mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return Segments(np.frombuffer(mapping, dtype="<u8"), start, length, mapping)

    def _values(self, col: pa.Array, column: str) -> tuple[np.ndarray, np.ndarray]:
        if column == "minhash":
            sigs = col.to_pylist()
            return np.frombuffer(b"".join(sigs), dtype="<u8"), np.array([len(s) // 8 for s in sigs], np.int64)
        texts = col.to_pylist()
        grams, doc = WordHashes.of(texts).ngrams(self.ngram)
        return unique_shingles(grams, doc, len(texts))

    def _verify(self, con, tmp: str, rank: int) -> dict[str, int]:
        """Table `verified` (a, b, sim): the candidate pairs whose shingle sets have a Jaccard similarity of at
        least the threshold. A pair whose signature agreement is below the threshold by more than the margin is
        ruled out without reading the texts."""
        con.execute("CREATE TABLE verified (a BIGINT, b BIGINT, sim DOUBLE)")
        sigs = self._load(con, tmp, "minhash")
        missing = int((sigs.length == 0).sum())
        if missing:  # the gather stage's output does not match the pairs: never verify without them
            raise RuntimeError(f"{missing} of the {len(sigs.length)} candidate documents of verification partition "
                               f"{rank} were not gathered (partition {rank} of {GATHERED_TEXTS.every(self.folder)} "
                               "lacks them); "
                               "remove the store's _build/minhash_gather/ (the gather stage's completions) and "
                               "build again")
        k = self.permutations
        if (sigs.length != k).any():
            raise RuntimeError(f"verification partition {rank}: a gathered signature does not have the spec's {k} "
                               f"values ({GATHERED_TEXTS.every(self.folder)}); remove the store's "
                               "_build/minhash_gather/ (the gather stage's completions) and build again")
        rows = sigs.values.reshape(-1, k)  # every signature has k values: a document's is row start // k
        row_of = sigs.start // k
        floor = self.threshold - signature_margin(self.threshold, k)
        con.execute("CREATE TABLE plausible (a BIGINT, b BIGINT)")
        ruled_out = 0
        for batch in con.cursor().sql("SELECT a, b FROM pairs").to_arrow_reader(PAIRS_PER_FETCH):
            a, b = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            agree = (rows[row_of[a]] == rows[row_of[b]]).mean(axis=1)
            if sigs.mapping is not None:
                sigs.mapping.madvise(mmap.MADV_DONTNEED)
            keep = agree >= floor
            ruled_out += int((~keep).sum())
            con.register("batch", pa.table({"a": a[keep], "b": b[keep]}))
            con.execute("INSERT INTO plausible SELECT * FROM batch")
            con.unregister("batch")
        con.execute("CREATE TABLE needed AS SELECT a AS prio FROM plausible UNION SELECT b FROM plausible")
        shingles = self._load(con, tmp, "text", "needed")
        compared = verified = 0
        for batch in con.cursor().sql("SELECT a, b FROM plausible").to_arrow_reader(PAIRS_PER_FETCH):
            a, b = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            sim = jaccard(shingles, a, b)
            ok = sim >= self.threshold
            compared += len(a)
            verified += int(ok.sum())
            con.register("batch", pa.table({"a": a[ok], "b": b[ok], "sim": sim[ok]}))
            con.execute("INSERT INTO verified SELECT * FROM batch")
            con.unregister("batch")
        return {"pairs_ruled_out": ruled_out, "pairs_compared": compared, "pairs_verified": verified}

    def _evidence(self, con) -> None:
        """Table `kept` (g, id, source, file, record) of the earlier documents of the verified pairs, as gathered
        (the document a drop will name)."""
        con.execute("""CREATE TABLE kept AS
                       SELECT x.g, x.id, x.source, regexp_extract(x.origin, '^(.*):[0-9]+$', 1) AS file,
                              CAST(regexp_extract(x.origin, ':([0-9]+)$', 1) AS BIGINT) AS record
                       FROM gathered_files x JOIN (SELECT DISTINCT c.g FROM verified v JOIN cand c ON c.prio = v.a) k
                       ON k.g = x.g""")


def steps(ctx: BuildContext) -> list:
    fz = ctx.spec.processing.dedup.fuzzy
    return [MinhashVerify(ctx.at(NEAR), threshold=fz.similarity_threshold, ngram=fz.ngram,
                          permutations=fz.permutations, memory_limit=ctx.memory_limit("minhash_verify"))]
