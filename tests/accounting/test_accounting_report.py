"""Report, counts and views: totals equal store.json, and an independent pyarrow recount equals DuckDB."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from mixture.accounting import StoreReader, cell_table, connect, matrix, report, source_counts
from mixture.cli import app

runner = CliRunner()


def _pyarrow_recount(store: Path) -> dict[str, list[int]]:
    """Per cell [docs, tokens] from every ledger-listed Parquet file, read with pyarrow (no DuckDB)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ledger_path in sorted(store.glob("cluster=*/quality=*/_ledger.json")):
        ledger = json.loads(ledger_path.read_text())
        for shard in ledger["shards"]:
            t = pq.read_table(ledger_path.parent / shard["path"], columns=["n_tokens"])
            out[ledger["cell"]][0] += t.num_rows
            out[ledger["cell"]][1] += sum(t["n_tokens"].to_pylist())
    return dict(out)


@pytest.mark.parametrize("by", ["cell", "cluster", "quality", "source", "content_type", "category",
                                "cluster,quality", "source,quality", "cell,category"])
def test_report_totals_equal_store_json(store: Path, template_store, by: str) -> None:
    counters = template_store[1].counters.model_dump()
    df = report(StoreReader(str(store)), by)
    assert int(df["tokens"].sum()) == counters["tokens_out"]
    assert int(df["docs"].sum()) == counters["records_out"]
    assert df["share"].sum() == pytest.approx(1.0)
    row = df.iloc[0]
    assert row["mean_tokens_per_doc"] == pytest.approx(row["tokens"] / row["docs"])


def test_independent_recount_equals_duckdb(store: Path, template_store) -> None:
    recount = _pyarrow_recount(store)
    reader = StoreReader(str(store))
    by_cell = report(reader, "cell").set_index("cell")
    con = connect(reader)
    shards = con.execute("SELECT cell, sum(rows), sum(tokens) FROM shards GROUP BY cell").fetchall()
    docs = con.execute("SELECT cluster, quality, count(*), sum(n_tokens) FROM documents GROUP BY ALL").fetchall()
    assert {c: [int(r), int(t)] for c, r, t in shards} == recount
    assert {f"c{c:02d}q{q}": [n, t] for c, q, n, t in docs} == recount
    assert {c: [int(by_cell.loc[c, "docs"]), int(by_cell.loc[c, "tokens"])] for c in by_cell.index} == recount
    assert {c.cell: [c.docs, c.tokens] for c in template_store[1].cells} == recount
    # views are typed as the contract says
    types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE documents)").fetchall())
    assert (types["cluster"], types["quality"], types["n_tokens"]) == ("SMALLINT", "TINYINT", "BIGINT")
    assert con.execute("SELECT tokens_out FROM counters").fetchone()[0] == template_store[1].counters.tokens_out
    assert con.execute("SELECT count(*) FROM clusters").fetchone()[0] == 3
    assert con.execute("SELECT count(*) FROM shards WHERE bytes = ledger_bytes AND rows = ledger_rows "
                       "AND tokens = ledger_tokens").fetchone()[0] == 45


def test_cell_table_needs_no_parquet(store: Path, template_store) -> None:
    expected = {c.cell: (c.docs, c.tokens, c.shards) for c in template_store[1].cells}
    for f in store.glob("cluster=*/quality=*/*.parquet"):
        f.unlink()
    table = cell_table(StoreReader(str(store)))
    assert {r.cell: (r.docs, r.tokens, r.shards) for r in table.itertuples()} == expected
    m = matrix(StoreReader(str(store)))
    assert int(m["total"].sum()) == template_store[1].counters.tokens_out
    assert list(m.columns) == ["cluster", "label", "Q0 junk", "Q1 poor", "Q2 usable", "Q3 good", "Q4 excellent",
                               "total"]


def test_source_counts_and_cli_outputs(store: Path, template_store, tmp_path: Path) -> None:
    df = source_counts(StoreReader(str(store)))
    expected = {s.name: (s.tokens_kept, s.docs_kept) for s in template_store[1].sources}
    assert {r.name: (r.tokens, r.docs) for r in df.itertuples()} == expected
    assert {"name", "tokens", "category", "docs", "license"} <= set(df.columns)
    out = tmp_path / "counts.csv"
    result = runner.invoke(app, ["counts", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = pd.read_csv(out)
    assert int(written["tokens"].sum()) == template_store[1].counters.tokens_out
    md = runner.invoke(app, ["report", str(store), "--by", "quality", "--format", "md"])
    assert md.exit_code == 0 and "| quality | quality_name |" in md.output and "| TOTAL |" in md.output
    js = runner.invoke(app, ["report", str(store), "--by", "cluster", "--format", "json"])
    assert sum(r["tokens"] for r in json.loads(js.output)) == template_store[1].counters.tokens_out
    mat = runner.invoke(app, ["report", str(store), "--by", "cluster,quality"])
    assert mat.exit_code == 0 and "Q4 excellent" in mat.output
    bad = runner.invoke(app, ["report", str(store), "--by", "colour"])
    assert bad.exit_code == 2 and "expected one or two of" in bad.output


def test_sql_command(store: Path, template_store) -> None:
    tokens_out = template_store[1].counters.tokens_out
    one = runner.invoke(app, ["sql", str(store), "SELECT sum(n_tokens) AS t FROM documents", "--format", "csv"])
    assert one.exit_code == 0 and one.output.split() == ["t", str(tokens_out)]
    loop = runner.invoke(app, ["sql", str(store), "--format", "csv"],
                         input="SELECT count(*) AS n\nFROM cells;\nSELECT nope FROM cells;\n.quit\n")
    assert loop.exit_code == 1  # the second statement failed
    assert "n\n15" in loop.output and "nope" in loop.output
