"""What must be equal between two builds of one spec: store.json (minus time and spec path), ids per cell, drops.

Float columns are compared to 1e-4: BLAS sums in another thread layout (Ray gives each task OMP_NUM_THREADS=1)
change the last bits of the float32 `cluster_distance` (up to 1.4e-5 seen), hence the shard checksums, but never
an assignment or a count."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def _ids(files: list[Path]) -> list[str]:
    return sorted(i for f in files for i in pq.read_table(f, columns=["id"]).column("id").to_pylist())


def store_fingerprint(store: Path) -> dict:
    artifact = json.loads((store / "store.json").read_text())
    artifact.pop("created")
    artifact["spec"].pop("path")
    cells = {str(d.relative_to(store)): _ids(sorted(d.glob("*.parquet"))) for d in sorted(store.glob("cluster=*/quality=*"))}
    ledgers = {}
    for p in sorted(store.glob("cluster=*/quality=*/_ledger.json")):
        ledger = json.loads(p.read_text())
        for shard in ledger["shards"]:
            shard.pop("xxh64")
        ledgers[str(p.parent.relative_to(store))] = ledger
    dropped = {d.name: _ids(sorted(d.glob("*.parquet"))) for d in sorted((store / "_dropped").glob("*"))}
    return {"artifact": artifact, "cells": cells, "ledgers": ledgers, "dropped": dropped,
            "model": sorted(p.name for p in (store / "_model").iterdir())}


def assert_same_shards(a: Path, b: Path) -> int:
    """Every shard of `a` has a namesake in `b` with equal rows (floats to 1e-4); returns the number of rows."""
    files = sorted(p.relative_to(a) for p in a.glob("cluster=*/quality=*/*.parquet"))
    assert files == sorted(p.relative_to(b) for p in b.glob("cluster=*/quality=*/*.parquet"))
    rows = 0
    for rel in files:
        ta, tb = pq.read_table(a / rel), pq.read_table(b / rel)
        assert ta.schema == tb.schema and ta.num_rows == tb.num_rows, rel
        for name in ta.column_names:
            ca, cb = ta[name], tb[name]
            if pa.types.is_floating(ca.type):
                np.testing.assert_allclose(ca.to_numpy(), cb.to_numpy(), rtol=1e-4, atol=1e-4, err_msg=f"{rel}:{name}")
            else:
                assert ca.equals(cb), f"{rel}:{name}"
        rows += ta.num_rows
    return rows


def assert_same_store(a: Path, b: Path) -> dict:
    fa, fb = store_fingerprint(a), store_fingerprint(b)
    assert fa["artifact"]["counters"] == fb["artifact"]["counters"]
    assert fa["cells"] == fb["cells"]
    assert fa["ledgers"] == fb["ledgers"]
    assert fa["dropped"] == fb["dropped"]
    assert fa == fb
    assert assert_same_shards(a, b) == fa["artifact"]["counters"]["records_out"]
    return fa
