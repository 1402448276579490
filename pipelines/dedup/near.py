"""Near duplicates with evidence: the documents that share an LSH bucket become candidate pairs, each pair is
checked on its shingles, and a document is dropped only for a kept document it is itself similar to.

Three steps, two of them partitioned: `BucketPairs` (the bucket stage's second step, one task per band and slice
of its first-hash range) reads the slice's buckets back and pairs every member with the first `ANCHORS` members
before it in spec order, sending each pair to the partition of its later document (and asking each document's
prepared file for it: stage `minhash_gather`, candidate_texts.py, sends it to the partition); `VerifyPairs` (stage
`minhash_verify`, T tasks) verifies the pairs of one partition (signature agreement rules out the clearly
dissimilar pairs, the exact Jaccard similarity of the two documents' shingle sets decides the others);
`ResolveNearDuplicates` (stage `minhash_cluster`, one task) keeps greedily in spec order over the verified pairs
only."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import fsspec
import numpy as np
import pyarrow as pa
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.dedup.exact import positions, spec_positions
from mixture.pipelines.dedup.minhash_gather import GATHERED, requests_folder, texts_folder
from mixture.pipelines.dedup.shuffle import (
    PART,
    duckdb_connection,
    mix64,
    partition_files,
    prefix_partition,
    read_small,
    register,
    sorted_batches,
    write_partitions,
    write_rows,
)
from mixture.pipelines.schemas import DROPS
from mixture.store.formats import NearDuplicateReport, write_model
from mixture.text.shingles import WordHashes

ANCHORS = 8  # a bucket member is paired with at most this many members before it (a bucket of n: ≤ 8n pairs)
SIGMAS = 6  # a pair whose signature agreement is this many standard errors below the threshold is not compared
PAIRS_PER_FETCH = 16_384  # pairs read at a time (their two signatures: 16k × 2 × 112 × 8 bytes = 29 MB)
SHINGLES_PER_CHECK = 4_000_000  # shingles compared at once (each held as value, key and owner: ~24 bytes)
BAND_BITS = 40  # bucket id = task << BAND_BITS | bucket number in the task's `.dups` file


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


# candidate pairs (positions in spec order of the earlier and the later document, and their addresses), as the
# bucket stage sends them to the verification task of the later document
PAIRS = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("rank_a", pa.int32()), ("idx_a", pa.int64()),
                   ("rank_b", pa.int32()), ("idx_b", pa.int64())])
MEMBERS = pa.schema([("g", pa.int64())])  # documents in a bucket (spec positions), for the count of distinct ones
BAND_COUNTS = pa.schema([("band_pairs", pa.int64()), ("buckets", pa.int64())])
VERIFY_COUNTS = pa.schema([(f, pa.int64()) for f in ("documents", "pairs_considered", "pairs_ruled_out",
                                                     "pairs_compared", "pairs_verified")])
# a verified pair with its evidence: the later document's address, the earlier one's id, source, file, record
VERIFIED = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("sim", pa.float64()), ("rank_b", pa.int32()),
                      ("idx_b", pa.int64()), ("kept_id", pa.string()), ("kept_source", pa.string()),
                      ("kept_file", pa.string()), ("kept_record", pa.int64())])


class BucketPairs(PipelineStep):
    """Second step of `minhash_buckets`, task r (a band and a slice of its first-hash range, dedup.BandCollisions):
    the task's buckets read back from the pairs written before it (`<r>_00.dups`; a bucket lies wholly in one
    task) → each member with the first `anchors` members before it in spec order (a document's position over
    every prepared document, duplicates.spec_positions) → the candidate pairs, to the verification partition of
    their later document (`<folder>/pairs/<q>/<r>.parquet`, a hash prefix over `partitions`); the members, to
    their own partition (`members/<q>/<r>.parquet`), and the task's counts (`bands/<r>.parquet`, summed by
    `minhash_cluster`)."""

    type = "🫂 - DEDUP"
    name = "🎯 MinHash candidate pairs"

    def __init__(self, buckets_folder: str, dedup_folder: str, folder: str, partitions: int, anchors: int = ANCHORS,
                 memory_limit: str | None = None):
        super().__init__()
        self.buckets_folder, self.dedup_folder, self.folder = buckets_folder, dedup_folder, folder
        self.partitions, self.anchors, self.memory_limit = partitions, anchors, memory_limit

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data  # the bucket step before this one has published the band's pairs when its run ends
        table = spec_positions(self.dedup_folder)
        fs, root = fsspec.core.url_to_fs(self.buckets_folder)
        path = f"{root}/{rank:05d}_00.dups"
        band_pairs = fs.size(path) // 16 if fs.exists(path) else 0
        with duckdb_connection(self.memory_limit) as con:
            con.execute("CREATE TABLE members (bucket BIGINT, g BIGINT, rank INTEGER, idx BIGINT, part INTEGER)")
            for chunk in band_buckets(path, fs, rank) if band_pairs else ():
                g = positions(table, chunk.column("rank").to_numpy(), chunk.column("idx").to_numpy())
                part = prefix_partition(mix64(g), self.partitions)
                con.register("chunk", chunk.append_column("g", pa.array(g)).append_column(PART, pa.array(part)))
                con.execute("INSERT INTO members SELECT bucket, g, rank, idx, part FROM chunk")
                con.unregister("chunk")
            con.execute("""CREATE TABLE ranked AS
                           SELECT *, row_number() OVER (PARTITION BY bucket ORDER BY g) - 1 AS pos FROM members""")
            con.execute(f"""CREATE TABLE pairs AS
                SELECT x.g AS a, y.g AS b, x.rank AS rank_a, x.idx AS idx_a, y.rank AS rank_b, y.idx AS idx_b,
                       y.part AS {PART}
                FROM (SELECT * FROM ranked WHERE pos < {int(self.anchors)}) x
                JOIN ranked y ON x.bucket = y.bucket AND x.pos < y.pos""")
            write_partitions(sorted_batches(con, f"SELECT * FROM pairs ORDER BY {PART}"),
                             lambda q: f"{self.folder}/pairs/{q:05d}/{rank:05d}.parquet")
            write_partitions(sorted_batches(con, f"""
                SELECT idx, g, dest, file AS {PART} FROM (
                    SELECT rank_a AS file, idx_a AS idx, a AS g, {PART} AS dest FROM pairs
                    UNION SELECT rank_b, idx_b, b, {PART} FROM pairs) ORDER BY {PART}"""),
                lambda f: f"{requests_folder(self.folder, f)}/{rank:05d}.parquet")
            write_partitions(sorted_batches(con, f"SELECT g, part AS {PART} FROM members ORDER BY {PART}"),
                             lambda q: f"{self.folder}/members/{q:05d}/{rank:05d}.parquet")
            buckets = _scalar(con, "SELECT count(DISTINCT bucket) FROM members")
        write_rows(f"{self.folder}/bands/{rank:05d}.parquet",
                   pa.table({"band_pairs": [int(band_pairs)], "buckets": [buckets]}, schema=BAND_COUNTS))
        self.stat_update("buckets", value=buckets)


class VerifyPairs(PipelineStep):
    """Stage `minhash_verify`, task q: the distinct candidate pairs of partition q (every pair whose later
    document hashes there, from every band), each verified: signature agreement rules out the clearly dissimilar,
    the exact Jaccard similarity of the two documents' shingle sets decides the others. Only the documents of
    these pairs are read, as `minhash_gather` sent them to this partition (`<folder>/texts/<q>/`: their signatures,
    then the texts of those not ruled out). Writes the verified pairs with their evidence
    (`<folder>/verified/<q>.parquet`) and the task's counts (`verify_counts/<q>.parquet`)."""

    type = "🫂 - DEDUP"
    name = "🎯 MinHash verify pairs"

    def __init__(self, folder: str, *, threshold: float, ngram: int, permutations: int,
                 memory_limit: str | None = None):
        super().__init__()
        self.folder, self.memory_limit = folder, memory_limit
        self.threshold, self.ngram, self.permutations = threshold, ngram, permutations

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        with duckdb_connection(self.memory_limit) as con, tempfile.TemporaryDirectory(prefix="mixture-neardup-") as tmp:
            # each of the partition's folders is one file per writer task (T of them): read once into a table,
            # not once per query (a scan pays per file)
            for name, folder, schema in (("raw_pairs", f"{self.folder}/pairs/{rank:05d}", PAIRS),
                                         ("gathered", texts_folder(self.folder, rank), GATHERED)):
                register(con, f"{name}_files", partition_files(folder), schema)
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_files")
            register(con, "raw_members", partition_files(f"{self.folder}/members/{rank:05d}"), MEMBERS)
            counts = {"documents": _scalar(con, "SELECT count(DISTINCT g) FROM raw_members")}
            counts.update(self._candidates(con))
            counts.update(self._verify(con, tmp, rank))
            self._evidence(con)
            write_partitions(sorted_batches(con, f"""
                SELECT ca.g AS a, cb.g AS b, v.sim, cb.rank AS rank_b, cb.idx AS idx_b, k.id AS kept_id,
                       k.source AS kept_source, k.file AS kept_file, k.record AS kept_record, 0 AS {PART}
                FROM verified v JOIN cand ca ON ca.prio = v.a JOIN cand cb ON cb.prio = v.b JOIN kept k ON k.g = ca.g
                ORDER BY {PART}, b, a"""), lambda _: f"{self.folder}/verified/{rank:05d}.parquet")
        fs, root = fsspec.core.url_to_fs(f"{self.folder}/verified/{rank:05d}.parquet")
        if not fs.exists(root):  # no verified pair: an empty file, so that the resolution sees every task's
            write_rows(f"{self.folder}/verified/{rank:05d}.parquet", VERIFIED.empty_table())
        write_rows(f"{self.folder}/verify_counts/{rank:05d}.parquet",
                   pa.table({k: [int(counts[k])] for k in VERIFY_COUNTS.names}, schema=VERIFY_COUNTS))
        for key in ("pairs_considered", "pairs_verified"):
            self.stat_update(key, value=int(counts[key]))

    def _candidates(self, con) -> dict[str, int]:
        """Tables `cand` (g, rank, idx, prio: the task's own numbering of its pairs' documents, in spec order) and
        `pairs` (a, b: prio of the earlier and the later document of each distinct pair)."""
        con.execute("""CREATE TABLE cand AS SELECT g, rank, idx, row_number() OVER (ORDER BY g) - 1 AS prio FROM (
                       SELECT a AS g, rank_a AS rank, idx_a AS idx FROM raw_pairs
                       UNION SELECT b, rank_b, idx_b FROM raw_pairs)""")
        con.execute("""CREATE TABLE pairs AS SELECT DISTINCT ca.prio AS a, cb.prio AS b FROM raw_pairs p
                       JOIN cand ca ON ca.g = p.a JOIN cand cb ON cb.g = p.b""")
        return {"pairs_considered": _scalar(con, "SELECT count(*) FROM pairs")}

    def _load(self, con, tmp: str, column: str, docs: str | None = None) -> Segments:
        """`column` of the candidate documents as gathered for this partition (`minhash`: the signature; `text`:
        its distinct shingles), of all or of those whose prio is in table `docs`, by prio, in a local file."""
        n = _scalar(con, "SELECT count(*) FROM cand")
        start, length = np.zeros(n, np.int64), np.zeros(n, np.int64)
        written = loaded = 0
        needed = f"JOIN {docs} n ON n.prio = c.prio" if docs else ""
        with open(f"{tmp}/{column}", "wb") as out:
            for batch in con.cursor().sql(f"""SELECT c.prio, x.{column} FROM gathered x JOIN cand c ON c.g = x.g
                                              {needed}""").to_arrow_reader(256):
                prio = batch.column(0).to_numpy()
                values, counts = self._values(batch.column(1), column)
                out.write(values.astype("<u8").tobytes())
                start[prio] = written + np.cumsum(counts) - counts
                length[prio] = counts
                written += len(values)
                loaded += len(prio)
        self.stat_update("signatures_loaded" if column == "minhash" else "texts_loaded", value=loaded)
        values = np.memmap(f"{tmp}/{column}", dtype="<u8", mode="r") if written else np.empty(0, np.uint64)
        return Segments(values, start, length)

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
                               f"{rank} were not gathered ({self.folder}/texts/{rank:05d}/ lacks them); remove the "
                               "store's _build/minhash_gather/ (the gather stage's completions) and build again")
        k = self.permutations
        floor = self.threshold - signature_margin(self.threshold, k)
        con.execute("CREATE TABLE plausible (a BIGINT, b BIGINT)")
        ruled_out = 0
        for batch in con.cursor().sql("SELECT a, b FROM pairs").to_arrow_reader(PAIRS_PER_FETCH):
            a, b = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            va, _ = sigs.gather(a)
            vb, _ = sigs.gather(b)
            agree = (va.reshape(-1, k) == vb.reshape(-1, k)).mean(axis=1)
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
                       FROM gathered x JOIN (SELECT DISTINCT c.g FROM verified v JOIN cand c ON c.prio = v.a) k
                       ON k.g = x.g""")


class ResolveNearDuplicates(PipelineStep):
    """Stage `minhash_cluster`, one task over the verified pairs only, in place of datatrove's MinhashDedupCluster
    (union-find over the bucket pairs, which chains documents through shared boilerplate): in spec order (source,
    file, record, as for exact duplicates) a document is dropped when a verified pair joins it to an earlier
    document that is kept; the detail names that document (the most similar one) and the similarity. Holds one
    byte per document of a verified pair; the pairs stream from DuckDB sorted (spilled past `memory_limit`).
    Writes the drops by prepared file (`<output>/<file>.parquet`) and the report (`report`, NearDuplicateReport,
    the counts of every task summed)."""

    type = "🫂 - DEDUP"
    name = "🎯 MinHash near duplicates"

    def __init__(self, folder: str, output: str, report: str, *, threshold: float, ngram: int, permutations: int,
                 anchors: int = ANCHORS, memory_limit: str | None = None):
        super().__init__()
        self.folder, self.output, self.report, self.memory_limit = folder, output, report, memory_limit
        self.threshold, self.ngram, self.permutations, self.anchors = threshold, ngram, permutations, anchors

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        out_fs, out_root = fsspec.core.url_to_fs(self.output)
        if out_fs.exists(out_root):  # an earlier attempt of this (only) task
            out_fs.rm(out_root, recursive=True)
        counts = {k: 0 for k in (*BAND_COUNTS.names, *VERIFY_COUNTS.names)}
        for kind, schema in (("bands", BAND_COUNTS), ("verify_counts", VERIFY_COUNTS)):
            for path in partition_files(f"{self.folder}/{kind}"):
                for k, v in read_small(path, schema).to_pylist()[0].items():
                    counts[k] += int(v)
        with duckdb_connection(self.memory_limit) as con:
            register(con, "raw_verified", partition_files(f"{self.folder}/verified"), VERIFIED)
            con.execute("CREATE TABLE edges AS SELECT * FROM raw_verified")
            con.execute("""CREATE TABLE nodes AS SELECT g, row_number() OVER (ORDER BY g) - 1 AS i
                           FROM (SELECT a AS g FROM edges UNION SELECT b FROM edges)""")
            drops, kept_similar = self._greedy(con)
        counts.update(drops=drops, kept_similar=kept_similar,
                      pairs_rejected=counts["pairs_considered"] - counts["pairs_verified"])
        for key in ("pairs_considered", "pairs_verified", "drops"):
            self.stat_update(key, value=counts[key])
        fs, path = fsspec.core.url_to_fs(self.report)
        write_model(fs, path, NearDuplicateReport(
            measure=f"word {self.ngram}-gram Jaccard", threshold=round(self.threshold, 4), anchors=self.anchors,
            signature_margin=round(signature_margin(self.threshold, self.permutations), 4), **counts))

    def _greedy(self, con) -> tuple[int, int]:
        """In spec order, each document with a verified pair to an earlier kept document is dropped, naming the most
        similar such document. Writes the drops; returns their number and the number of documents kept although
        similar to an earlier one (every such one was dropped: a components approach would drop them)."""
        dropped = np.zeros(_scalar(con, "SELECT count(*) FROM nodes"), dtype=bool)
        con.execute("""CREATE TABLE decided (rank INTEGER, idx BIGINT, kept_id VARCHAR, kept_source VARCHAR,
                       kept_file VARCHAR, kept_record BIGINT, sim DOUBLE)""")
        kept_similar, current, done = 0, -1, False
        stream = con.cursor().sql("""
            SELECT na.i AS ai, nb.i AS bi, e.sim, e.rank_b AS rank, e.idx_b AS idx, e.kept_id, e.kept_source,
                   e.kept_file, e.kept_record
            FROM edges e JOIN nodes na ON na.g = e.a JOIN nodes nb ON nb.g = e.b ORDER BY e.b, e.sim DESC, e.a""")
        for batch in stream.to_arrow_reader(PAIRS_PER_FETCH):
            taken = []
            for row, (a, b) in enumerate(zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)):
                if b != current:
                    kept_similar += current >= 0 and not done
                    current, done = b, False
                if not done and not dropped[a]:
                    dropped[b], done = True, True
                    taken.append(row)
            if taken:
                con.register("batch", batch.take(pa.array(taken, pa.int64())))
                con.execute("""INSERT INTO decided SELECT rank, idx, kept_id, kept_source, kept_file, kept_record, sim
                               FROM batch""")
                con.unregister("batch")
        kept_similar += current >= 0 and not done
        measure = f"word {self.ngram}-gram Jaccard"

        def rows() -> Iterator[pa.RecordBatch]:
            for batch in sorted_batches(con, "SELECT * FROM decided ORDER BY rank, idx"):
                cols = [batch.column(c).to_pylist() for c in ("kept_id", "kept_source", "kept_file", "kept_record",
                                                               "sim")]
                detail = [f"near duplicate of {i!r} ({s}, {f}:{r}): {measure} {sim:.3f}" for i, s, f, r, sim in zip(
                    *cols, strict=True)]
                yield pa.RecordBatch.from_arrays(
                    [batch.column("rank"), batch.column("idx"), pa.array(["fuzzy_duplicate"] * batch.num_rows),
                     pa.array(detail, pa.string()), batch.column("rank")], names=[*DROPS.names, PART])

        written = write_partitions(rows(), lambda r: f"{self.output}/{r:05d}.parquet")
        return sum(written.values()), int(kept_similar)
