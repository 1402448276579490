"""Signature files sorted in bounded memory (pipelines/dedup/sorted_runs.py): runs merged block by block give the
records of one sort in memory, and `minhash_sigs` writes the same files and slice indexes with runs as without."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mixture.pipelines.dedup import sorted_runs
from mixture.pipelines.dedup.minhash_buckets import signature_record, slice_offsets
from mixture.pipelines.dedup.minhash_sigs import MinhashSigs
from mixture.pipelines.dedup.sorted_runs import sorted_blocks
from mixture.stages.registry import PREPARED, SIGNATURES, SLICE_INDEX


def _records(n: int, seed: int, dtype: np.dtype) -> np.ndarray:
    """Records in random order whose hashes repeat (a near-duplicate family shares a band's first hashes, some
    whole signatures), told apart by their document."""
    rng = np.random.default_rng(seed)
    out = np.zeros(n, dtype)
    family = rng.integers(0, max(1, n // 20), n)
    out["h0"] = rng.integers(0, np.iinfo(np.uint64).max, max(1, n // 20), dtype=np.uint64)[family]
    for name in dtype.names[1:-1]:
        out[name] = rng.integers(0, 3, n)
    out["doc"] = rng.permutation(n)
    return out


@pytest.mark.parametrize(("n", "run_records", "merge_records"), [
    (0, 10, 10), (1, 10, 10), (500, 1000, 64),  # one run: sorted in memory
    (500, 37, 64), (500, 37, 5), (2000, 100, 1), (2000, 499, 7000),  # runs merged, blocks of 1 record and up
])
def test_runs_merged_give_one_sort(tmp_path: Path, n: int, run_records: int, merge_records: int):
    dtype = signature_record(3)
    records = _records(n, n + run_records, dtype)
    records.tofile(tmp_path / "band")
    blocks = list(sorted_blocks(str(tmp_path / "band"), dtype, run_records * dtype.itemsize,
                                merge_records * dtype.itemsize))
    expected = np.sort(records, order=dtype.names)
    assert np.concatenate(blocks).tobytes() == expected.tobytes()
    runs = -(-n // run_records)
    assert all(len(b) <= max(run_records, merge_records, runs) for b in blocks)  # memory: a run or the blocks
    if n > max(run_records, merge_records):
        assert len(blocks) > 1  # merged block by block, not sorted whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["band"]  # the runs removed


def _signatures(tmp_path: Path, run_bytes: int | None, monkeypatch) -> dict[str, bytes]:
    """Every file `minhash_sigs` writes for a prepared file of 3,000 documents (2 bands of 4 rows, 3 slices),
    with sorts in memory of `run_bytes` at most."""
    prepared = tmp_path / "prepared"
    path = Path(PREPARED.path(str(prepared), 0))
    if not path.exists():
        rng = np.random.default_rng(7)
        family = rng.integers(0, 150, 3000)
        sigs = rng.integers(0, np.iinfo(np.uint64).max, (150, 8), dtype=np.uint64)[family]
        sigs[:, 1::2] = rng.integers(0, np.iinfo(np.uint64).max, (3000, 4), dtype=np.uint64)  # part of a family
        path.parent.mkdir(parents=True)
        pq.write_table(pa.table({"idx": pa.array(np.arange(3000), pa.int64()),
                                 "minhash": pa.array([s.astype("<u8").tobytes() for s in sigs], pa.binary())}),
                       path, row_group_size=700)
    if run_bytes:
        monkeypatch.setattr(sorted_runs, "RUN_BYTES", run_bytes)
        monkeypatch.setattr(sorted_runs, "MERGE_BYTES", run_bytes // 3)
    out = tmp_path / f"sigs-{run_bytes}"
    list(MinhashSigs(str(prepared), str(tmp_path / "no-drops"), str(out), bands=2, rows=4, slices=3).run(rank=0))
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_minhash_sigs_writes_the_same_files_with_runs(tmp_path: Path, monkeypatch):
    whole = _signatures(tmp_path, None, monkeypatch)
    dtype = signature_record(4)
    assert sorted(whole) == sorted(str(Path(f.path(".", 0, b))) for f in (SIGNATURES, SLICE_INDEX) for b in (0, 1))  # 2 bands, a file and its slice index each
    for run_bytes in (4000 * dtype.itemsize, 500 * dtype.itemsize, 64 * dtype.itemsize):
        assert _signatures(tmp_path, run_bytes, monkeypatch) == whole, run_bytes
    for name, data in whole.items():
        if name.endswith(".sig"):
            records = np.frombuffer(data, dtype)
            assert len(records) == 3000 and (np.sort(records, order=dtype.names) == records).all()
            assert whole[name[:-4] + ".slices"] == slice_offsets(records["h0"], 3).tobytes()


@pytest.mark.parametrize("families", [1, 7, 10_000])  # one family holds every record, a few, none shared
def test_sort_records_equals_a_sort_of_whole_records(families: int):
    dtype = signature_record(2)
    rng = np.random.default_rng(families)
    records = np.zeros(3000, dtype)
    # the whole uint64 range (a top bit set sorts last), and tied records told apart by small values (zero bytes)
    records["h0"] = rng.integers(0, 2**64, families, dtype=np.uint64, endpoint=False)[rng.integers(0, families, 3000)]
    records["h1"] = rng.integers(0, 4, 3000)
    records["doc"] = rng.permutation(3000)
    assert sorted_runs.sort_records(records).tobytes() == np.sort(records, order=dtype.names).tobytes()


def test_sort_records_of_signed_fields_sorts_negatives_first():
    dtype = np.dtype([("a", "<i8"), ("b", "<i4")])
    rng = np.random.default_rng(3)
    records = np.zeros(2000, dtype)
    records["a"] = rng.integers(-3, 3, 2000)
    records["b"] = rng.integers(-2**31, 2**31, 2000)
    assert sorted_runs.sort_records(records).tobytes() == np.sort(records, order=dtype.names).tobytes()


def test_field_order_then_columns_after_equals_a_lexsort():
    """minhash_buckets' order of a merged block: every signature field, then the file's rank, then the document."""
    dtype = signature_record(3)
    rng = np.random.default_rng(5)
    records = np.zeros(4000, dtype)
    for j, spread in enumerate((50, 3, 2**64)):  # many shared first hashes; ties on later fields too
        records[f"h{j}"] = rng.integers(0, spread, 4000, dtype=np.uint64, endpoint=False)
    records["doc"] = rng.integers(0, 40, 4000)
    ranks = rng.integers(0, 3, 4000).astype(np.uint32)
    signature = records[["h0", "h1", "h2"]]
    expected = np.lexsort([records["doc"], ranks, records["h2"], records["h1"], records["h0"]])
    assert (sorted_runs.field_order(signature, ranks, records["doc"]) == expected).all()
    signed = ranks.astype(np.int32) - 1  # a column that is not unsigned: the lexsort, the same order
    assert (sorted_runs.field_order(signature, signed, records["doc"]) == expected).all()
