"""The MinHash bucket stage (mixture.pipelines.dedup.minhash_buckets.BandCollisions) against datatrove's MinhashDedupBuckets as the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets

from mixture.pipelines.dedup.minhash_buckets import BandCollisions

ROWS, BANDS = 3, 2


def write_sig_files(folder, rng, files: int, docs: int, shared: int, run: int, top: int = 2**60,
                    stride: int = 3) -> None:
    """Sorted signature files of every band: random signatures below `top`, `shared` signatures that several
    documents of several files have, and one signature held by `run` documents (longer than a small read block)."""
    dtype = np.dtype([(f"h{j}", "<u8") for j in range(ROWS)] + [("doc", "<u4")])
    pool = rng.integers(0, top, (shared, ROWS), dtype=np.uint64)
    for b in range(BANDS):
        (folder / f"bucket_{b:03d}").mkdir(parents=True)
        for f in range(files):
            sig = rng.integers(0, top, (docs, ROWS), dtype=np.uint64)
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
            rec.tofile(folder / f"bucket_{b:03d}" / f"{f * stride:05d}.minhash.sig")  # stems need not be 0..n-1


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


def buckets_of(path) -> list[frozenset]:
    """The buckets (sets of (file, doc) members) of one `.dups` file, read back as the bucket stage does."""
    from mixture.pipelines.dedup.minhash_buckets import bucket_members

    bucket, members = bucket_members(np.fromfile(path, dtype="<u4").reshape(-1, 4))
    return [frozenset(map(tuple, members[bucket == b].tolist())) for b in np.unique(bucket)]


def run_slices(sigs, out, slices: int, memory: int = 256 * 2**20) -> list[list]:
    """Every task of the bucket stage split `slices` ways: per band, the buckets of each of its slices."""
    for r in range(BANDS * slices):
        list(BandCollisions(str(sigs), str(out), ROWS, memory=memory, slices=slices).run(None, r, BANDS * slices) or ())
    return [[buckets_of(out / f"{b * slices + s:05d}_00.dups") for s in range(slices)] for b in range(BANDS)]


def write_slice_index(sigs, slices: int) -> None:
    """The `.minhash.slices` index MinhashSigs writes beside each signature file."""
    from mixture.pipelines.dedup.minhash_buckets import slice_offsets

    dtype = np.dtype([(f"h{j}", "<u8") for j in range(ROWS)] + [("doc", "<u4")])
    for path in sigs.glob("bucket_*/*.minhash.sig"):
        path.with_suffix(".slices").write_bytes(slice_offsets(np.fromfile(path, dtype)["h0"], slices).tobytes())


@pytest.mark.parametrize("slices", [2, 3, 16])
@pytest.mark.parametrize("memory", [256 * 2**20, 1])
@pytest.mark.parametrize("index", [False, True])  # the slices found by binary search, or read from the index
def test_slices_give_the_pairs_of_the_whole_band(tmp_path, slices, memory, index):
    """A band split into first-hash slices: the slices' pairs together are the whole band's, bucket by bucket."""
    rng = np.random.default_rng(11)
    write_sig_files(tmp_path / "sigs", rng, files=4, docs=1000, shared=30, run=300, top=2**64 - 1)
    if index:
        write_slice_index(tmp_path / "sigs", slices)
    whole = run_slices(tmp_path / "sigs", tmp_path / "one", 1, memory)
    split = run_slices(tmp_path / "sigs", tmp_path / f"s{slices}", slices, memory)
    for b in range(BANDS):
        assert sorted(map(sorted, whole[b][0])) == sorted(sorted(x) for part in split[b] for x in part)
        assert sum(len(part) > 0 for part in split[b]) > 1  # the buckets are spread over several slices
    assert sum(map(len, read_pairs(tmp_path / "one"))) == sum(map(len, read_pairs(tmp_path / f"s{slices}")))


@pytest.mark.parametrize("index", [False, True])
def test_a_bucket_at_a_slice_boundary_stays_whole(tmp_path, index):
    """Equal band signatures whose first hash is a slice's first value, the value before it, 0 and 2^64 - 1, in
    every file: each bucket is written whole by exactly one slice (a bucket split across slices, or a record read
    by two slices or none, fails)."""
    from mixture.pipelines.dedup.minhash_buckets import slice_bounds

    slices, files = 3, 4
    dtype = np.dtype([(f"h{j}", "<u8") for j in range(ROWS)] + [("doc", "<u4")])
    firsts = [0, 2**64 - 1] + [v for s in range(1, slices) for v in (slice_bounds(s, slices)[0] - 1,
                                                                          slice_bounds(s, slices)[0])]
    rng = np.random.default_rng(3)
    for b in range(BANDS):
        (tmp_path / "sigs" / f"bucket_{b:03d}").mkdir(parents=True)
        for f in range(files):
            rec = np.zeros(len(firsts) + 50, dtype)
            rec["h0"][:len(firsts)] = firsts
            rec["h0"][len(firsts):] = rng.integers(0, 2**64 - 1, 50, dtype=np.uint64, endpoint=True)
            rec["h1"][:len(firsts)] = 7  # the planted ones share the rest of the band signature across files
            rec["h1"][len(firsts):] = rng.integers(8, 2**60, 50, dtype=np.uint64)
            rec["doc"] = np.arange(len(rec))
            rec.sort(order=dtype.names)
            rec.tofile(tmp_path / "sigs" / f"bucket_{b:03d}" / f"{f:05d}.minhash.sig")
    if index:
        write_slice_index(tmp_path / "sigs", slices)
    bucket = {d: frozenset((f, d) for f in range(files)) for d in range(len(firsts))}  # a planted h0 each
    expected = [{bucket[d] for d, h0 in enumerate(firsts) if lo <= h0 < (2**64 if hi is None else hi)}
                for lo, hi in (slice_bounds(s, slices) for s in range(slices))]
    for b, parts in enumerate(run_slices(tmp_path / "sigs", tmp_path / "out", slices)):
        assert [sorted(part, key=sorted) for part in parts] == [sorted(x, key=sorted) for x in expected], b
        assert all(len(x) == 2 for x in expected)  # each slice starts with a bucket and ends with one


@pytest.mark.parametrize("slices", [1, 3])
@pytest.mark.parametrize("memory", [256 * 2**20, 1])
def test_combined_bands_give_the_same_pairs(tmp_path, slices, memory):
    """Each band's signature files combined (pipelines/dedup/combine.py, 2 to a file, a partition per slice): every
    slice task writes the bytes it writes from the files themselves, read from 3 combined files instead of 5."""
    from mixture.pipelines.dedup.combine import combine_signatures
    from mixture.pipelines.dedup.shuffle import COMBINED, fetch_runs

    rng = np.random.default_rng(5)
    write_sig_files(tmp_path / "sigs", rng, files=5, docs=800, shared=30, run=300, top=2**64 - 1, stride=1)
    if slices > 1:
        write_slice_index(tmp_path / "sigs", slices)
    run_slices(tmp_path / "sigs", tmp_path / "plain", slices, memory)
    itemsize = 8 * ROWS + 4
    for b in range(BANDS):
        for c in range(3):
            combine_signatures(f"{tmp_path}/sigs/bucket_{b:03d}/*.minhash.sig", c, 2, 5, slices, itemsize)
    assert len(list((tmp_path / "sigs" / "bucket_001" / COMBINED).iterdir())) == 3
    runs = fetch_runs(f"{tmp_path}/sigs/bucket_000/*.minhash.sig", 0, str(tmp_path / "runs"), slices)
    assert [stem for stem, _, _ in runs] == [0, 1, 2, 3, 4]  # each file's run of the slice, named by its task
    run_slices(tmp_path / "sigs", tmp_path / "combined", slices, memory)
    plain = sorted((tmp_path / "plain").glob("*.dups"))
    assert len(plain) == BANDS * slices and sum(p.stat().st_size for p in plain) > 0
    for path in plain:
        assert (tmp_path / "combined" / path.name).read_bytes() == path.read_bytes(), path.name
    (tmp_path / "sigs" / "bucket_000" / COMBINED / "00001.minhash.sig").unlink()
    with pytest.raises(ValueError, match="do not cover the 5 writer files"):
        run_slices(tmp_path / "sigs", tmp_path / "half", slices, memory)
