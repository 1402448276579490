"""The MinHash bucket stage (mixture.pipelines.dedup.BandCollisions) against datatrove's MinhashDedupBuckets as the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets

from mixture.pipelines.dedup import BandCollisions

ROWS, BANDS = 3, 2


def write_sig_files(folder, rng, files: int, docs: int, shared: int, run: int) -> None:
    """Sorted signature files of every band: random signatures, `shared` signatures that several documents of
    several files have, and one signature held by `run` documents (longer than a small read block)."""
    dtype = np.dtype([(f"h{j}", "<u8") for j in range(ROWS)] + [("doc", "<u4")])
    pool = rng.integers(0, 2**60, (shared, ROWS), dtype=np.uint64)
    for b in range(BANDS):
        (folder / f"bucket_{b:03d}").mkdir(parents=True)
        for f in range(files):
            sig = rng.integers(0, 2**60, (docs, ROWS), dtype=np.uint64)
            pick = rng.random(docs) < 0.3
            sig[pick] = pool[rng.integers(0, shared, pick.sum())]
            sig[pick & (rng.random(docs) < 0.2), 1:] ^= 1  # same first hash, different signature
            if f % 2 == 0:
                sig[:run] = pool[0]
            rec = np.zeros(docs, dtype)
            for j in range(ROWS):
                rec[f"h{j}"] = sig[:, j]
            rec["doc"] = np.arange(docs)
            rec.sort(order=dtype.names)
            rec.tofile(folder / f"bucket_{b:03d}" / f"{f * 3:05d}.minhash.sig")  # stems need not be 0..n-1


def read_pairs(folder) -> list[list[tuple[int, ...]]]:
    return [sorted(map(tuple, np.fromfile(p, dtype="<u4").reshape(-1, 4).tolist()))
            for p in sorted(folder.glob("*.dups"))]


@pytest.mark.parametrize("memory", [256 * 2**20, 1])  # 1: blocks of 256 records, runs cross block ends
def test_pairs_equal_datatroves(tmp_path, memory):
    rng = np.random.default_rng(7)
    write_sig_files(tmp_path / "sigs", rng, files=5, docs=3000, shared=40, run=700)
    config = MinhashConfig(num_buckets=BANDS, hashes_per_bucket=ROWS)
    for b in range(BANDS):
        MinhashDedupBuckets(str(tmp_path / "sigs"), str(tmp_path / "datatrove"), config=config).run(None, b, BANDS)
        list(BandCollisions(str(tmp_path / "sigs"), str(tmp_path / "ours"), ROWS, memory=memory).run(None, b, BANDS) or ())
    expected = read_pairs(tmp_path / "datatrove")
    assert sum(map(len, expected)) > 3000  # many collisions, including the long run
    assert read_pairs(tmp_path / "ours") == expected


def test_a_band_without_signatures_writes_no_pair(tmp_path):
    (tmp_path / "sigs" / "bucket_000").mkdir(parents=True)
    (tmp_path / "sigs" / "bucket_000" / "00000.minhash.sig").write_bytes(b"")
    list(BandCollisions(str(tmp_path / "sigs"), str(tmp_path / "out"), ROWS).run(None, 0, 1) or ())
    assert (tmp_path / "out" / "00000_00.dups").read_bytes() == b""
