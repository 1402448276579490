"""Stage `minhash_buckets`, one task per band and slice of its first-hash range: the documents whose signatures
agree on the band (`BandCollisions`), then those buckets as candidate pairs, each member paired with the first
`ANCHORS` members before it in spec order (`MinhashBuckets`), sent to the partition of the later document (stage
`minhash_route` then sends them on to where they are verified)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import fsspec
import numpy as np
import pyarrow as pa
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.keys import positions, spec_positions
from mixture.pipelines.dedup.shuffle import (
    PART,
    document_partition,
    fetch_runs,
    sorted_batches,
    write_counts,
    write_partitions,
)
from mixture.pipelines.dedup.sorted_runs import field_order
from mixture.pipelines.runtime.duckdb_connection import duckdb_connection, scalar
from mixture.pipelines.runtime.scratch import scratch
from mixture.stages.registry import (
    BAND_TASK_COUNTS,
    BUCKET_MEMBERS,
    CANDIDATE_PAIRS,
    COLLISIONS,
    COLLISIONS_DIR,
    DEDUP,
    NEAR,
    SIGNATURES,
    SIGNATURES_DIR,
    SLICE_INDEX,
    bucket_slices,
)
from mixture.store.io import open_atomic

ANCHORS = 8  # a bucket member is paired with at most this many members before it (a bucket of n: ≤ 8n pairs)
BAND_BITS = 40  # bucket id = task << BAND_BITS | bucket number in the task's `.dups` file

# candidate pairs (positions in spec order of the earlier and the later document, their addresses, and the members
# of the bucket that paired them), as the bucket stage sends them to the partition of the later document
PAIRS = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("rank_a", pa.int32()), ("idx_a", pa.int64()),
                   ("rank_b", pa.int32()), ("idx_b", pa.int64()), ("size", pa.int64())])
MEMBERS = pa.schema([("g", pa.int64())])  # documents in a bucket (spec positions), for the count of distinct ones
BAND_COUNTS = pa.schema([("band_pairs", pa.int64()), ("buckets", pa.int64())])


def slice_bounds(s: int, slices: int) -> tuple[int, int | None]:
    """The first hashes h0 of slice s of `slices` equal ranges of the uint64 space: [lo, hi), hi None for the last."""
    return (s << 64) // slices, None if s == slices - 1 else ((s + 1) << 64) // slices


def signature_record(rows: int) -> np.dtype:
    """A record of a band's signature file (MinhashSigs writes them, sorted): the band's `rows` hashes and the
    document's number in its prepared file."""
    return np.dtype([(f"h{j}", "<u8") for j in range(rows)] + [("doc", "<u4")])


def slice_offsets(h0: np.ndarray, slices: int) -> np.ndarray:
    """The first record of each slice in a signature file's sorted first hashes, and the record count: the
    slice index (SLICE_INDEX, slices + 1 little-endian uint64) MinhashSigs writes beside each file."""
    bounds = np.array([slice_bounds(s, slices)[0] for s in range(1, slices)], dtype=np.uint64)
    return np.concatenate([[0], np.searchsorted(h0, bounds, side="left"), [len(h0)]]).astype("<u8")


def slice_records(fs: fsspec.AbstractFileSystem, path: str, index: str, records: int, itemsize: int, s: int,
                  slices: int) -> tuple[int, int]:
    """[start, end) records of slice s in a sorted signature file: from its slice index `index` (one small read)
    when it was written for `slices` and this file, else by binary search of the file."""
    if slices == 1:
        return 0, records
    try:
        raw = fs.cat_file(index)
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


class _Run:
    """One signature file's run of a slice, in the local file of a combined band's runs: read on from its start."""

    def __init__(self, fd: int, offset: int):
        self.fd, self.at = fd, offset

    def read(self, n: int) -> bytes:
        data = os.pread(self.fd, n, self.at)
        self.at += len(data)
        return data


class BandCollisions(PipelineStep):
    """Task r = (band b, slice s) of the bucket stage (b = r // slices, s = r % slices), in place of datatrove's
    MinhashDedupBuckets (same input files, same pairs): merges the slice of band b's sorted signature files whose
    first hash h0 falls in the s-th of `slices` equal ranges of the uint64 space (a contiguous run of each file,
    from the file's slice index, else by binary search; equal signatures have equal h0, so a bucket lies wholly
    in one slice) and writes, for every run of equal band signatures, each record paired with the one before it in
    (signature, file, document) order, as COLLISIONS (4 uint32 per pair, streamed): the pairs of one bucket
    follow each other (the next step, MinhashBuckets, reads the buckets back from them). Records are merged in
    blocks with numpy instead of one heap step per record; a block of every file is held at a time."""

    type = "🫂 - DEDUP"
    name = "🎯 MinHash band collisions"

    def __init__(self, input_folder: str, output_folder: str, rows: int, memory: int = 256 * 2**20, slices: int = 1):
        super().__init__()
        self.input_folder, self.output_folder, self.rows, self.memory = input_folder, output_folder, rows, memory
        self.slices = slices

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        dtype = signature_record(self.rows)
        band = rank // self.slices
        fs, root = fsspec.core.url_to_fs(self.input_folder)
        out_fs, out_root = fsspec.core.url_to_fs(self.output_folder)
        n_pairs = 0
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(open_atomic(out_fs, COLLISIONS.path(out_root, rank)))  # pairs streamed
            local = stack.enter_context(scratch("slice-"))
            runs = fetch_runs(fs.unstrip_protocol(SIGNATURES.every(root, band)), rank % self.slices,
                              f"{local}/runs", self.slices)
            # per file: its slice's records from the first, and how many of them remain
            files: list = []
            left, stems = [], []
            if runs is not None:  # the band's files were combined: every run of the slice fetched to one local file
                runs_file = stack.enter_context(open(f"{local}/runs", "rb"))
                for stem, offset, length in runs:
                    files.append(_Run(runs_file.fileno(), offset))
                    stems.append(stem)
                    left.append(length // dtype.itemsize)
            else:
                for p in sorted(fs.glob(SIGNATURES.every(root, band))):
                    stems.append(SIGNATURES.rank_of(p))
                    start, end = slice_records(fs, p, SLICE_INDEX.path(root, stems[-1], band),
                                               fs.size(p) // dtype.itemsize, dtype.itemsize, rank % self.slices,
                                               self.slices)
                    files.append(stack.enter_context(fs.open(p, "rb")))
                    files[-1].seek(start * dtype.itemsize)
                    left.append(max(0, end - start))
            block = max(256, self.memory // (dtype.itemsize * max(1, len(files))))  # records read per file at a time
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
        order = field_order(recs[[f"h{j}" for j in range(self.rows)]], ranks, recs["doc"])
        same = np.ones(len(order) - 1 if len(order) else 0, dtype=bool)
        for h in hs:
            h = h[order]
            same &= h[1:] == h[:-1]
        i = np.flatnonzero(same) + 1
        return np.stack([ranks[order[i - 1]], recs["doc"][order[i - 1]], ranks[order[i]], recs["doc"][order[i]]], axis=1)


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


class MinhashBuckets(PipelineStep):
    """Second step of `minhash_buckets`, task r (a band and a slice of its first-hash range, BandCollisions):
    the task's buckets read back from the pairs written before it (COLLISIONS; a bucket lies wholly in one
    task) → each member with the first `anchors` members before it in spec order (a document's position over
    every prepared document, keys.spec_positions) → the candidate pairs, with their bucket's size, to the partition
    of their later document (CANDIDATE_PAIRS in `folder`, `document_partition` over `partitions`); the members, to
    their own partition (BUCKET_MEMBERS), and the task's counts (BAND_TASK_COUNTS, summed by `minhash_cluster`)."""

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
        path = COLLISIONS.path(root, rank)
        band_pairs = fs.size(path) // 16 if fs.exists(path) else 0
        with duckdb_connection(self.memory_limit) as con:
            con.execute("CREATE TABLE members (bucket BIGINT, g BIGINT, rank INTEGER, idx BIGINT, part INTEGER)")
            for chunk in band_buckets(path, fs, rank) if band_pairs else ():
                g = positions(table, chunk.column("rank").to_numpy(), chunk.column("idx").to_numpy())
                part = document_partition(g, self.partitions)
                con.register("chunk", chunk.append_column("g", pa.array(g)).append_column(PART, pa.array(part)))
                con.execute("INSERT INTO members SELECT bucket, g, rank, idx, part FROM chunk")
                con.unregister("chunk")
            con.execute("""CREATE TABLE ranked AS
                           SELECT *, row_number() OVER (PARTITION BY bucket ORDER BY g) - 1 AS pos,
                                  count(*) OVER (PARTITION BY bucket) AS size FROM members""")
            con.execute(f"""CREATE TABLE pairs AS
                SELECT x.g AS a, y.g AS b, x.rank AS rank_a, x.idx AS idx_a, y.rank AS rank_b, y.idx AS idx_b,
                       y.size, y.part AS {PART}
                FROM (SELECT * FROM ranked WHERE pos < {int(self.anchors)}) x
                JOIN ranked y ON x.bucket = y.bucket AND x.pos < y.pos""")
            write_partitions(sorted_batches(con, f"SELECT * FROM pairs ORDER BY {PART}"),
                             CANDIDATE_PAIRS.path(self.folder, rank), self.partitions)
            write_partitions(sorted_batches(con, f"SELECT g, part AS {PART} FROM members ORDER BY {PART}"),
                             BUCKET_MEMBERS.path(self.folder, rank), self.partitions)
            buckets = scalar(con, "SELECT count(DISTINCT bucket) FROM members")
        write_counts(BAND_TASK_COUNTS.path(self.folder, rank), BAND_COUNTS,
                     {"band_pairs": band_pairs, "buckets": buckets})
        self.stat_update("buckets", value=buckets)


def steps(ctx: BuildContext) -> list:
    """Per band and slice of its first-hash range: the slice's collisions, then its candidate pairs sent to the
    partitions of their later documents (P)."""
    fz = ctx.spec.processing.dedup.fuzzy
    return [BandCollisions(ctx.at(SIGNATURES_DIR), ctx.at(COLLISIONS_DIR), fz.permutations // fz.bands,
                           slices=bucket_slices(fz.bands, ctx.tasks)),
            MinhashBuckets(ctx.at(COLLISIONS_DIR), ctx.at(DEDUP), ctx.at(NEAR), ctx.partitions,
                           memory_limit=ctx.memory_limit("minhash_buckets"))]
