"""`minhash_route` on synthetic candidate pairs shaped like a pool's: near-duplicate families of heavy-tailed sizes and
one giant family (1 % of the documents), paired as the bucket stage pairs them (in each band, the members that
collide, each with the first 8 before it in spec order). The documents a verification task reads per pair, with each
pair in its later document's partition and as `minhash_route` sends it, and how uneven the partitions are, as the
documents a partition holds grow against the families' sizes. A table into docs/performance.md.

`python -m bench.route_bench` (~2 min, ~3 GB at the default 2M documents); `--no-publish` prints only."""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.common import machine, show
from bench.verify_reads_bench import _reads, routed
from mixture.pipelines.dedup.minhash_buckets import ANCHORS
from mixture.pipelines.dedup.shuffle import document_partition

BEGIN, END = "<!-- route-bench:begin -->", "<!-- route-bench:end -->"
BANDS = 14
PARTITIONS = (2, 20, 200, 2_000)


def families(n_docs: int, share: float, giant: float, rng: np.random.Generator) -> np.ndarray:
    """Each document's family (-1: none): one giant family of `giant` × the documents, then families of 2 or more
    members with a Zipf tail (exponent 2, at most 1/1000 of the documents), until `share` of them are in one."""
    sizes = [int(giant * n_docs)]
    while sum(sizes) < share * n_docs:
        sizes.extend(int(x) for x in np.minimum(rng.zipf(2.0, 10_000) + 1, max(2, n_docs // 1000)))
    sizes = np.array(sizes)
    sizes = sizes[np.cumsum(sizes) <= share * n_docs]
    fam = np.full(n_docs, -1, np.int64)
    order = rng.permutation(n_docs)  # members at random spec positions
    fam[order[:sizes.sum()]] = np.repeat(np.arange(len(sizes)), sizes)
    return fam


def bucket_pairs(fam: np.ndarray, collide: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(a, b, size) of the distinct candidate pairs: in each band each family's members that collide (each with
    probability `collide`) form a bucket, each member paired with the first ANCHORS members before it; size is
    the largest bucket that paired the two."""
    members = np.flatnonzero(fam >= 0)
    keys, sizes = [], []
    for _ in range(BANDS):
        m = members[rng.random(len(members)) < collide]
        m = m[np.lexsort((m, fam[m]))]  # by family, then spec position
        f = fam[m]
        start = np.r_[0, np.flatnonzero(f[1:] != f[:-1]) + 1]
        count = np.diff(np.r_[start, len(m)])
        first = np.repeat(start, count)
        pos = np.arange(len(m)) - first
        reps = np.minimum(pos, ANCHORS)
        b = np.repeat(m, reps)
        a = m[np.repeat(first, reps) + np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)]
        keys.append((a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64))
        sizes.append(np.repeat(np.repeat(count, count), reps))
    key, size = np.concatenate(keys), np.concatenate(sizes)
    order = np.lexsort((-size, key))
    key, size = key[order], size[order]
    first = np.r_[True, key[1:] != key[:-1]]
    key, size = key[first], size[first]
    return (key >> np.uint64(32)).astype(np.int64), (key & np.uint64(2**32 - 1)).astype(np.int64), size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--documents", type=int, default=2_000_000)
    p.add_argument("--share", type=float, default=0.5, help="documents in a family")
    p.add_argument("--giant", type=float, default=0.01, help="the giant family's share of the documents")
    p.add_argument("--collide", type=float, default=0.6, help="a member's chance to be in its family's bucket of a band")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-publish", action="store_true")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    started = time.time()
    fam = families(a.documents, a.share, a.giant, rng)
    pa_, pb, size = bucket_pairs(fam, a.collide, rng)
    docs = len(np.unique(np.concatenate([pa_, pb])))
    key = np.stack([pa_, pb], axis=1)
    rows = []
    for parts in PARTITIONS:
        later = _reads(key, document_partition(pb, parts))
        dest = routed(pa_, pb, size, parts)
        family = _reads(key, dest)
        giant = fam[pb] == 0
        rows.append((parts, docs / parts, *later, *family, len(np.unique(dest[giant]))))
        print(f"  P = {parts}: {time.time() - started:.0f} s", flush=True)
    n_fam = int(fam.max()) + 1
    lines = [
        BEGIN,
        "## `minhash_route` on pairs shaped like a pool's (`python -m bench.route_bench`)",
        "",
        f"{machine()}. {a.documents:,} documents, {a.share:.0%} of them in {n_fam:,} near-duplicate families: one of "
        f"{int(a.giant * a.documents):,} members ({a.giant:.0%} of the documents), the others of 2 or more with a "
        f"Zipf tail (seed {a.seed}); in each of {BANDS} bands a member collides with its family with probability "
        f"{a.collide} and is paired with the first {ANCHORS} colliding members before it, as the bucket stage pairs "
        f"them: {len(pa_):,} distinct candidate pairs of {docs:,} documents. The documents the verification tasks read "
        "(each document of a partition's pairs once) with each pair in its later document's partition and as "
        "`minhash_route` sends it (the stage's own functions), the most a partition reads over the mean, and the "
        "partitions the giant family's pairs take:",
        "",
        "| P | candidate documents a partition | by later document: reads a pair | largest / mean | by family: reads "
        "a pair | largest / mean | the giant family's partitions |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {parts:,} | {per:,.0f} | {r / len(pa_):.3f} | {skew:.1f} | {f / len(pa_):.3f} | {fskew:.1f} | {g:,} |"
          for parts, per, r, skew, f, fskew, g in rows),
        END,
    ]
    show("\n".join(lines), BEGIN, END, not a.no_publish)


if __name__ == "__main__":
    main()
