"""Accounting on a store built by the real pipeline (`built_store` from tests/conftest.py)."""

from __future__ import annotations

import json
from collections import defaultdict

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from mixture.accounting import StoreReader, audit, cell_table, connect, report, source_counts
from mixture.cli import app

pytestmark = pytest.mark.slow
runner = CliRunner()


def test_audit_passes_on_built_store(built_store) -> None:
    result = audit(StoreReader(str(built_store.store)), deep=True, sample=200)
    assert result.status == "ok", "\n".join(result.messages()[:20])
    assert result.check("files").checked == sum(c.shards for c in built_store.artifact.cells) > 0
    assert result.check("tokens (deep)").checked > 0
    assert result.check("reports").status == "pass" and result.check("reports").checked > 10
    cli = runner.invoke(app, ["audit", str(built_store.store)])
    assert cli.exit_code == 0, cli.output


@pytest.mark.parametrize("by", ["cell", "cluster", "quality", "source", "content_type", "category",
                                "cluster,quality"])
def test_report_totals_equal_built_store_json(built_store, by: str) -> None:
    counters = built_store.artifact.counters.model_dump()
    df = report(StoreReader(str(built_store.store)), by)
    assert int(df["tokens"].sum()) == counters["tokens_out"]
    assert int(df["docs"].sum()) == counters["records_out"]


def test_pyarrow_recount_equals_duckdb_on_built_store(built_store) -> None:
    recount: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ledger_path in sorted(built_store.store.glob("cluster=*/quality=*/_ledger.json")):
        ledger = json.loads(ledger_path.read_text())
        for shard in ledger["shards"]:
            t = pq.read_table(ledger_path.parent / shard["path"], columns=["n_tokens"])
            recount[ledger["cell"]][0] += t.num_rows
            recount[ledger["cell"]][1] += sum(t["n_tokens"].to_pylist())
    reader = StoreReader(str(built_store.store))
    con = connect(reader)
    shards = con.execute("SELECT cell, sum(rows), sum(tokens) FROM shards GROUP BY cell").fetchall()
    assert {c: [int(r), int(t)] for c, r, t in shards} == dict(recount)
    table = cell_table(reader)
    assert {r.cell: [r.docs, r.tokens] for r in table.itertuples() if r.docs} == dict(recount)
    counts = source_counts(reader)
    kept = {s.name: s.tokens_kept for s in built_store.artifact.sources}
    assert {r.name: r.tokens for r in counts.itertuples()} == kept
