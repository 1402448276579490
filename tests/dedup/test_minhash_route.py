"""Stage `minhash_route`: a later document's pairs in one verification partition, a family in one partition or in
lanes of bounded size, and fewer documents read for the same pairs than with each pair in its later document's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from mixture.pipelines.dedup.minhash_buckets import PAIRS
from mixture.pipelines.dedup.minhash_gather import REQUESTS
from mixture.pipelines.dedup.minhash_route import MinhashRoute, destinations
from mixture.pipelines.dedup.shuffle import PART as PART_COLUMN
from mixture.pipelines.dedup.shuffle import document_partition, read_partition, write_partitions
from mixture.stages.registry import CANDIDATE_PAIRS, GATHER_REQUESTS, VERIFY_PAIRS


def test_a_family_meets_in_one_partition_or_in_lanes_of_bounded_size():
    parts = 1_000
    b = np.arange(1, 501, dtype=np.int64)
    small = destinations(b, np.zeros(500, np.int64), np.full(500, 500), 1_000, parts)
    assert len(np.unique(small)) == 1  # 500 members, lanes of 1,000: one partition
    b = np.arange(1, 100_001, dtype=np.int64)
    big = destinations(b, np.zeros(len(b), np.int64), np.full(len(b), len(b)), 1_000, parts)
    per = np.bincount(big, minlength=parts)
    # 100 lanes of ~1,000 members: each partition holds at most a few lanes of the family, never the whole of it
    assert 60 <= (per > 0).sum() <= 100 and per.max() <= 4_000
    # another family (another first member) goes elsewhere
    other = destinations(np.arange(1, 501, dtype=np.int64), np.full(500, 7, np.int64), np.full(500, 500), 1_000, parts)
    assert len(np.unique(other)) == 1 and other[0] != small[0]


def _pairs(folder, families: list[list[int]], partitions: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs as the bucket stage writes them: each family's members paired with its first member and
    with each other (a < b), in the partition of the later document; one prepared file, row = position."""
    a, b = zip(*[(x, y) for fam in families for i, x in enumerate(fam) for y in fam[i + 1:]], strict=True)
    a, b = np.array(a, np.int64), np.array(b, np.int64)
    size = np.array([len(f) for f in families for i in range(len(f)) for _ in f[i + 1:]], np.int64)
    part = document_partition(b, partitions)
    order = np.argsort(part, kind="stable")
    table = pa.table({"a": a, "b": b, "rank_a": np.zeros(len(a), np.int32), "idx_a": a,
                      "rank_b": np.zeros(len(a), np.int32), "idx_b": b, "size": size}, schema=PAIRS)
    table = table.take(order).append_column("part", pa.array(part[order]))
    write_partitions(table.to_batches(), CANDIDATE_PAIRS.path(str(folder), 0), partitions)
    return a, b


def test_the_stage_routes_every_pair_once_and_asks_for_each_document_where_it_is_read(tmp_path):
    parts = 8  # ~300 later documents a routing task: more than any family has, so every family stays whole
    rng = np.random.default_rng(0)
    docs = rng.permutation(5_000)
    families, at = [], 0
    for n in [3] * 600 + [12] * 100 + [30] * 5:
        families.append(sorted(docs[at:at + n].tolist()))
        at += n
    a, b = _pairs(tmp_path, families, parts)
    for q in range(parts):
        list(MinhashRoute(str(tmp_path), parts, 1).run(None, q, parts) or ())
    routed = [read_partition(VERIFY_PAIRS.every(str(tmp_path)), q, PAIRS, parts) for q in range(parts)]
    got = sorted((r["a"], r["b"]) for t in routed for r in t.to_pylist())
    assert got == sorted(zip(a.tolist(), b.tolist(), strict=True))  # every pair once
    where = {}
    for q, t in enumerate(routed):
        for x in t.column("b").to_pylist():
            assert where.setdefault(x, q) == q  # a later document's pairs in one partition
    reads = sum(len(set(t.column("a").to_pylist()) | set(t.column("b").to_pylist())) for t in routed)
    before = sum(len(set(a[document_partition(b, parts) == q]) | set(b[document_partition(b, parts) == q]))
                 for q in range(parts))
    assert reads == len(np.unique(np.concatenate([a, b])))  # each family in one partition: each document read once
    assert before > 1.5 * reads
    asked = read_partition(GATHER_REQUESTS.every(str(tmp_path)), 0, REQUESTS, 1)
    wanted = {(r["g"], r["dest"]) for r in asked.to_pylist()}
    assert wanted == {(x, q) for q, t in enumerate(routed) for x in t.column("a").to_pylist() + t.column("b").to_pylist()}


def test_a_range_of_partitions_is_fetched_with_two_requests_a_file(tmp_path, monkeypatch):
    """`fetch_partitions`: the rows of consecutive partitions of every writer file (plain or combined), as one
    `fetch_partition` a partition gives them, with two range requests a file whatever the number of partitions."""
    from fsspec.implementations.local import LocalFileSystem

    from mixture.pipelines.dedup.combine import CombineShuffles
    from mixture.pipelines.dedup.shuffle import fetch_partition, fetch_partitions

    requested: list[int] = []  # paths of each cat_ranges call (one range each)
    cat_ranges = LocalFileSystem.cat_ranges

    def counted(self, paths, *args, **kwargs):
        requested.append(len(paths))
        return cat_ranges(self, paths, *args, **kwargs)

    parts, writers = 12, 5
    pattern = f"{tmp_path}/w/*.parquet"
    rng = np.random.default_rng(1)
    for w in range(writers):
        part = np.sort(rng.integers(0, parts, 200)).astype(np.int32)
        table = pa.table({"x": rng.integers(0, 1 << 40, 200), PART_COLUMN: part})
        write_partitions(table.to_batches(), f"{tmp_path}/w/{w:05d}.parquet", parts)

    def rows(files) -> list[int]:
        return sorted(x for f in files for x in pa.ipc.open_file(f).read_all().column("x").to_pylist())

    for combine in (False, True):
        if combine:
            for c in range(2):
                list(CombineShuffles([pattern], 3, writers).run(None, c, 2) or ())
        for wanted in (range(0, 1), range(3, 8), range(0, parts)):
            one = rows(f for q in wanted for f in fetch_partition(pattern, q, _fresh(tmp_path), parts))
            requested.clear()
            monkeypatch.setattr(LocalFileSystem, "cat_ranges", counted)
            assert rows(fetch_partitions(pattern, wanted, _fresh(tmp_path), parts)) == one and one
            monkeypatch.undo()
            assert sum(requested) == 2 * (2 if combine else writers)  # the entries, then the bytes, of each file


def _fresh(tmp_path) -> str:
    import tempfile

    return tempfile.mkdtemp(dir=tmp_path)
