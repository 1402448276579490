"""The task-load benchmark's replicated work (bench/task_load_bench.py) is what it claims: each copy of a real
build's prepared files keeps the base's duplicates and duplicates no other copy, so the stages find m times the
base's drops and candidate pairs."""

from __future__ import annotations

import argparse

import numpy as np
import pyarrow as pa
import pytest

from bench import task_load_bench as tlb
from mixture.pipelines.schemas import WORK


def _rows() -> pa.Table:
    sig = np.arange(4, dtype="<u8").tobytes()
    rows = {"id": ["a", "b", "c"], "text": ["x y", "x y", "z"], "origin": ["f.jsonl:0", "f.jsonl:1", "g:x:2"],
            "idx": [0, 1, 2], "exact_hash": [7, 7, None], "minhash": [sig, sig, None]}
    return pa.table({f.name: pa.array(rows.get(f.name, [None] * 3), f.type) for f in WORK}, schema=WORK)


def test_a_copy_keeps_its_duplicates_and_shares_none_with_another():
    base = _rows()
    first, second = tlb.replica(base, 0, 3), tlb.replica(base, 1, 3)
    assert first["exact_hash"].to_pylist() == base["exact_hash"].to_pylist()  # copy 0: the base's own hashes
    assert first["minhash"].to_pylist() == base["minhash"].to_pylist()
    assert second["id"].to_pylist() == ["a~r001", "b~r001", "c~r001"]
    assert second["origin"].to_pylist() == ["f.jsonl~r001:0", "f.jsonl~r001:1", "g:x~r001:2"]
    assert second["idx"].to_pylist() == [3, 4, 5] and second["text"].to_pylist() == ["", "", ""]
    hashes, sigs = second["exact_hash"].to_pylist(), second["minhash"].to_pylist()
    assert hashes[0] == hashes[1] != 7 and hashes[2] is None  # equal within the copy, masked, nulls kept
    assert sigs[0] == sigs[1] != base["minhash"][0].as_py() and sigs[2] is None
    words = np.frombuffer(sigs[0], "<u8") ^ np.arange(4, dtype="<u8")
    assert len(set(words.tolist())) == 1  # every word masked by the same value: bands equal within a copy stay so
    sliced = tlb.replica(base.slice(1), 1, 3)  # a slice's offsets and validity are read from where it starts
    assert sliced["minhash"].to_pylist() == sigs[1:]
    assert tlb.replica(base.slice(2), 1, 3)["minhash"].to_pylist() == [None]  # no signature to mask


@pytest.mark.slow
def test_replicated_work_gives_the_base_drops_and_pairs_times_the_copies(tmp_path):
    args = argparse.Namespace(cache=str(tmp_path / "cache"), seed=0, base_scale=0.03, variants=1, tasks=2, workers=1)
    spec, base, _ = tlb.base_build(tmp_path, args, log=lambda _: None)
    found = {}
    for m in (1, 3):
        folder = tmp_path / f"x{m}"
        docs = tlb.size_store(base, folder, m)
        spec_path = str(tlb.write_spec(folder, spec))
        tasks = [len(tlb.stage_tasks(spec_path, what)) for what in tlb.STAGES]  # in this process: the imports once
        assert tasks == [2, 2, 2, 2, 14, 2]
        found[m] = (docs, tlb.counts(folder / "store"))
    (docs1, one), (docs3, three) = found[1], found[3]
    assert docs3 == 3 * docs1 > 0
    assert one["exact_drops"] > 0 and one["band_pairs"] > 0
    assert three == {k: 3 * v for k, v in one.items()}
