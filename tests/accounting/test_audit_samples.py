"""The samples are part of the audit: a deleted, truncated or tampered `_samples/` file fails it, naming the file."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from mixture.accounting import StoreReader, audit


def samples_check(store: Path):
    result = audit(StoreReader(str(store)))
    return result, result.check("samples")


def test_intact_samples_pass(store: Path) -> None:
    result, check = samples_check(store)
    assert result.ok and check.status == "pass" and check.checked == 2, result.messages()


def test_a_deleted_sample_file_fails_the_audit(store: Path) -> None:
    (store / "_samples" / "uniform.parquet").unlink()
    result, check = samples_check(store)
    assert not result.ok and check.status == "fail"
    assert "_samples/uniform.parquet: missing" in check.failures[0].message()


def test_a_sample_file_missing_a_cell_fails_the_audit(store: Path) -> None:
    path = store / "_samples" / "uniform.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, table.num_rows - 1), path)
    result, check = samples_check(store)
    assert not result.ok
    assert any("_samples/uniform.parquet" in f.message() and "rows" in f.message() for f in check.failures)
