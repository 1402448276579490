"""Synthetic verified pairs in `minhash_verify`'s output format (chains, stars, a giant component, many small ones),
for the components rounds of `minhash_cluster` against the single task (tests, bench/components_bench.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mixture.pipelines.dedup.minhash_verify import VERIFIED, VERIFY_COUNTS
from mixture.pipelines.dedup.shuffle import mix64, prefix_partition, write_counts, write_partition
from mixture.stages.registry import VERIFIED_PAIRS, VERIFY_TASK_COUNTS

FILES = 5  # prepared files the synthetic documents are spread over


def chain(ids: np.ndarray) -> np.ndarray:
    """Edges ids[0]~ids[1]~ids[2]~…: each with the next only."""
    return np.stack([ids[:-1], ids[1:]], axis=1)


def star(centre: int, leaves: np.ndarray) -> np.ndarray:
    return np.stack([np.full(len(leaves), centre), leaves], axis=1)


def random_component(rng: np.random.Generator, ids: np.ndarray, extra: float = 0.5) -> np.ndarray:
    """A random tree over `ids` (each joined to one before it, in a shuffled order, so chains run both ways in
    spec order) and `extra` × as many random edges more."""
    order = rng.permutation(ids)
    parent = order[(rng.random(len(order) - 1) * np.arange(1, len(order))).astype(np.int64)]
    more = rng.choice(ids, size=(int(extra * len(ids)), 2))
    return np.concatenate([np.stack([parent, order[1:]], axis=1), more])


def mixed_graph(seed: int = 0, giant: int = 3_000, small: int = 600) -> np.ndarray:
    """Edges (unordered) of: chains A~B~C, a long chain in spec order and one in random order, stars whose centre is
    early, late and in between, a giant random component of `giant` documents, `small` components of 2–4."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(np.arange(10, 10 * (giant + 8 * small + 2_000), 7))  # sparse, unordered document numbers
    at = 0

    def take(n: int) -> np.ndarray:
        nonlocal at
        at += n
        return ids[at - n:at]

    parts = [chain(np.sort(take(3))) for _ in range(20)]  # A~B~C, A≁C
    parts += [chain(np.sort(take(400))), chain(take(400))]
    for where in (0, 150, 299):
        members = np.sort(take(300))
        parts.append(star(members[where], np.delete(members, where)))
    parts.append(random_component(rng, take(giant)))
    for _ in range(small):
        parts.append(random_component(rng, take(int(rng.integers(2, 5))), extra=0.3))
    return np.concatenate(parts)


def write_verified(folder: Path, edges: np.ndarray, tasks: int, seed: int = 0) -> int:
    """The distinct pairs of `edges` (self-pairs left out) as `minhash_verify` tasks write them: (earlier a, later
    b) in the partition of b (VERIFIED_PAIRS, a shuffle of `tasks` partitions; here task q writes partition q's
    pairs), sorted by b then a, with a similarity (ties on purpose: 0.75, 0.8 or 0.9) and the earlier document's
    evidence. Returns the number of pairs."""
    a, b = edges.min(axis=1).astype(np.int64), edges.max(axis=1).astype(np.int64)
    keep = a != b
    a, b = a[keep], b[keep]
    if len(b) and b.max() < 2**32 and a.min() >= 0:  # one uint64 key per pair: ~1/4 of the memory of unique rows
        key = np.unique((b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64))
        del a, b
        b, a = (key >> np.uint64(32)).astype(np.int64), (key & np.uint64(2**32 - 1)).astype(np.int64)
        del key
    else:
        pairs = np.unique(np.stack([b, a], axis=1), axis=0)
        b, a = pairs[:, 0], pairs[:, 1]
    sim = np.random.default_rng(seed).choice(np.array([0.75, 0.8, 0.9]), size=len(a))
    part = prefix_partition(mix64(b), tasks)
    order = np.lexsort((a, b, part))
    a, b, sim, part = a[order], b[order], sim[order], part[order]
    bounds = np.searchsorted(part, np.arange(tasks + 1))
    for q in range(tasks):
        lo, hi = bounds[q], bounds[q + 1]
        aa = pa.array(a[lo:hi])
        table = pa.table({"a": aa, "b": pa.array(b[lo:hi]), "sim": pa.array(sim[lo:hi]),
                          "rank_b": pa.array((b[lo:hi] % FILES).astype(np.int32)), "idx_b": pa.array(b[lo:hi]),
                          "kept_id": pc.binary_join_element_wise("d", pc.cast(aa, pa.string()), ""),
                          "kept_source": pa.array(np.full(hi - lo, "src")).cast(pa.string()),
                          "kept_file": pc.binary_join_element_wise("f", pc.cast(pc.divide(aa, 1000), pa.string()), ""),
                          "kept_record": aa}, schema=VERIFIED)
        path = Path(VERIFIED_PAIRS.path(str(folder), q))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_partition(str(path), table, q, tasks)
        write_counts(VERIFY_TASK_COUNTS.path(str(folder), q), VERIFY_COUNTS,
                     {**dict.fromkeys(VERIFY_COUNTS.names, 0), "pairs_considered": int(hi - lo),
                      "pairs_compared": int(hi - lo), "pairs_verified": int(hi - lo)})
    return len(a)


def forest_graph(seed: int, pairs: int, giant: int) -> np.ndarray:
    """About `pairs` edges at scale, vectorised: one component of `giant` documents (a random tree, each member
    joined to a random one before it in a shuffled order, and as many random edges more), the rest components of
    2–4 documents (random trees); document numbers a random permutation, so chains run both ways in spec order."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 5, size=max(0, (pairs - 2 * giant) // 2))  # a component of k has k - 1 edges
    sizes = np.concatenate([[giant], sizes]) if giant else sizes
    nodes = int(sizes.sum())
    start = np.repeat(np.cumsum(sizes) - sizes, sizes)
    local = np.arange(nodes) - start
    child = local > 0
    parent = start[child] + (rng.random(int(child.sum())) * local[child]).astype(np.int64)
    ids = rng.permutation(nodes).astype(np.int64) * 3 + 1
    edges = [np.stack([ids[parent], ids[np.flatnonzero(child)]], axis=1)]
    if giant:
        edges.append(ids[rng.integers(0, giant, size=(giant, 2))])
    return np.concatenate(edges)
