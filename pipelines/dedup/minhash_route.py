"""Stage `minhash_route`, one task per partition of the candidate pairs' later documents: each later document's
pairs sent on to where its near-duplicate family meets, so that a verification task reads each document of a family
once instead of once for every partition that holds one of its later partners.

A pair left in its later document's partition makes the earlier document read again in every partition where it has
a later partner: at P = 8,000 partitions a verification task reads ~1.1 documents a pair, against ~0.2 at P = 2, and
a document read (its text shingled) costs ~5× a pair (docs/performance.md, "What `minhash_verify` pays for")."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.minhash_buckets import PAIRS
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import PART, mix64, prefix_partition, sorted_batches, write_partitions
from mixture.stages.registry import CANDIDATE_PAIRS, GATHER_REQUESTS, NEAR, VERIFY_PAIRS


def destinations(b: np.ndarray, first: np.ndarray, size: np.ndarray, lane_documents: int,
                 partitions: int) -> np.ndarray:
    """The verification partition of each later document `b`: that of its family, named by its earliest partner
    `first`, so that a family whose members share their first member meets in one partition. A family larger than
    `lane_documents` (by `size`, its estimated members: `family_sizes`) is split by b into lanes of about that many,
    a partition each (each lane reads the few earlier documents its members pair with once): no partition holds
    more than about `lane_documents` of one family."""
    lanes = np.maximum(1, -(-np.asarray(size, np.int64) // max(1, lane_documents))).astype(np.uint64)
    lane = mix64(b) % lanes
    return prefix_partition(mix64(mix64(first) ^ lane), partitions)


def family_sizes(largest_bucket: np.ndarray, here: np.ndarray, partitions: int) -> np.ndarray:
    """The members of a later document's family, as a routing task can tell: at least the largest bucket that
    paired the document (`largest_bucket`), and the family's later documents in the task's partition (`here`, of
    `partitions`) times the partitions (the later documents are hashed over them; a family that reaches beyond its
    buckets through other bands' buckets shows there)."""
    return np.maximum(largest_bucket, np.asarray(here, np.int64) * partitions)


def task_destinations(b: np.ndarray, first: np.ndarray, largest_bucket: np.ndarray,
                      partitions: int) -> tuple[np.ndarray, int]:
    """The verification partition of each of one routing task's later documents `b` (each once, with its earliest
    partner `first` and the largest bucket that paired it), a large family in lanes of about as many documents as
    the task has later documents (about an average verification partition's share); and how many were put in a
    lane."""
    _, family, here = np.unique(first, return_inverse=True, return_counts=True)
    size = family_sizes(largest_bucket, here[family.ravel()], partitions)
    return destinations(b, first, size, len(b), partitions), int((size > len(b)).sum())


class MinhashRoute(PartitionedStep):
    """Stage `minhash_route`, task q: the distinct candidate pairs whose later document lies in partition q (every
    band's, CANDIDATE_PAIRS in `folder`), all the pairs of a later document sent to one verification partition
    (`task_destinations`; VERIFY_PAIRS), and each pair's two documents, with that partition, asked of their prepared
    file (GATHER_REQUESTS, `files` of them: stage `minhash_gather` sends each document to the partitions that asked
    for it). The task's later documents are routed in numpy, ~28 bytes each (~21 MB for the pool's ~744,000 a
    partition at P = 8,000); the pairs stay in DuckDB."""

    name = "🎯 MinHash route pairs to families"

    def __init__(self, folder: str, partitions: int, files: int, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.partitions, self.files = folder, partitions, files

    def inputs(self, rank: int) -> list[tuple]:
        return [("raw_pairs", CANDIDATE_PAIRS.every(self.folder), PAIRS, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        con.execute("""CREATE TABLE pairs AS
                       SELECT a, b, any_value(rank_a) AS rank_a, any_value(idx_a) AS idx_a, any_value(rank_b) AS rank_b,
                              any_value(idx_b) AS idx_b, max(size) AS size
                       FROM raw_pairs GROUP BY a, b""")
        later = con.sql("SELECT b, min(a) AS first, max(size) AS size FROM pairs GROUP BY b").fetchnumpy()
        b = np.asarray(later["b"], np.int64)
        dest, in_lanes = task_destinations(b, np.asarray(later["first"], np.int64), np.asarray(later["size"], np.int64),
                                           self.partitions)
        con.register("route", pa.table({"b": b, "dest": dest}))
        con.execute("CREATE TABLE routed AS SELECT p.*, r.dest FROM pairs p JOIN route r USING (b)")
        written = write_partitions(sorted_batches(con, f"""
            SELECT a, b, rank_a, idx_a, rank_b, idx_b, size, dest AS {PART} FROM routed ORDER BY {PART}"""),
            VERIFY_PAIRS.path(self.folder, rank), self.partitions)
        write_partitions(sorted_batches(con, f"""
            SELECT idx, g, dest, file AS {PART} FROM (
                SELECT rank_a AS file, idx_a AS idx, a AS g, dest FROM routed
                UNION SELECT rank_b, idx_b, b, dest FROM routed) ORDER BY {PART}"""),
            GATHER_REQUESTS.path(self.folder, rank), self.files)
        return {"pairs_routed": sum(written.values()), "later_documents_in_lanes": in_lanes}


def steps(ctx: BuildContext) -> list:
    """Per partition of the later documents: their pairs sent to where their families are verified."""
    return [MinhashRoute(ctx.at(NEAR), ctx.partitions, ctx.tasks, ctx.memory_limit("minhash_route"))]
