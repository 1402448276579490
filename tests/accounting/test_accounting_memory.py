"""Every command on a store in fsspec's memory:// filesystem (DuckDB reads it through register_filesystem)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fsspec
import pandas as pd
from typer.testing import CliRunner

from mixture.accounting import StoreReader, audit, diff, report
from mixture.cli import app

runner = CliRunner()


def test_all_commands_on_memory_store(memory_store: str, template_store) -> None:
    counters = template_store[1].counters.model_dump()
    result = audit(StoreReader(memory_store), deep=True, sample=20)
    assert result.status == "ok", result.messages()
    assert result.check("checksums").checked == 45
    cli = runner.invoke(app, ["audit", memory_store])
    assert cli.exit_code == 0, cli.output

    df = report(StoreReader(memory_store), "source")
    assert int(df["tokens"].sum()) == counters["tokens_out"]
    rep = runner.invoke(app, ["report", memory_store, "--by", "content_type", "--format", "csv"])
    assert rep.exit_code == 0 and int(pd.read_csv(io.StringIO(rep.output))["tokens"].sum()) == counters["tokens_out"]

    out = f"{memory_store}-counts.csv"
    cnt = runner.invoke(app, ["counts", memory_store, "--out", out])
    assert cnt.exit_code == 0, cnt.output
    with fsspec.open(out, "r") as f:
        assert int(pd.read_csv(f)["docs"].sum()) == counters["records_out"]

    sql = runner.invoke(app, ["sql", memory_store, "SELECT count(*) AS n FROM shards WHERE listed", "--format", "csv"])
    assert sql.exit_code == 0 and sql.output.split() == ["n", "45"]


def test_memory_tampering_and_building(memory_store: str) -> None:
    fs = fsspec.filesystem("memory")
    root = memory_store.removeprefix("memory://")
    fs.rm(f"{root}/cluster=02/quality=2/part-00000.parquet")
    result = audit(StoreReader(memory_store))
    assert [f.where for f in result.check("files").failures] == ["cluster=02/quality=2/part-00000.parquet"]
    fs.rm(f"{root}/store.json")
    cli = runner.invoke(app, ["audit", memory_store])
    assert cli.exit_code == 1 and "building" in cli.output


def test_diff_memory_against_local(memory_store: str, store: Path) -> None:
    result = diff(memory_store, str(store))
    assert (result.cells["delta"] == 0).all() and result.summary[0].endswith("no cell changes")
    assert int(result.cells["entered"].sum()) == 0 and int(result.cells["left"].sum()) == 0
    cli = runner.invoke(app, ["diff", memory_store, str(store), "--format", "json"])
    assert cli.exit_code == 0 and json.loads(cli.output)["total_a"] == result.total_b
