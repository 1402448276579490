"""A store shard whose page header was damaged after the build: the commands that scan the shards with DuckDB (which
names no file: "don't know what type") say so in one line and point to `mixture audit`, which names the shard."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from mixture.accounting import StoreReader
from mixture.cli import app


def break_page_header(shard: Path, column: str = "n_tokens") -> None:
    """16 bytes of `column`'s first page header overwritten: the file keeps its size, its footer reads."""
    meta = pq.ParquetFile(shard).metadata.row_group(0)
    chunk = next(meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == column)
    at = chunk.dictionary_page_offset or chunk.data_page_offset
    data = bytearray(shard.read_bytes())
    data[at:at + 16] = b"\xff" * 16
    shard.write_bytes(bytes(data))


@pytest.mark.parametrize("args", [["counts"], ["report", "--by", "source"], ["sql", "SELECT sum(n_tokens) FROM documents"]])
def test_a_broken_page_header_points_to_the_audit(store: Path, args: list[str]) -> None:
    shard = sorted(store.glob("cluster=*/quality=*/*.parquet"))[0]
    break_page_header(shard)
    res = CliRunner().invoke(app, [args[0], str(store), *args[1:]])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and f"mixture audit {store} --checksums all" in text, res.output
    assert isinstance(res.exception, SystemExit)
    res = CliRunner().invoke(app, ["audit", str(store), "--checksums", "all"])
    assert res.exit_code == 1 and shard.name in res.output


def break_footer_length(shard: Path) -> None:
    """The 4-byte footer length before the closing magic changed: DuckDB cannot open the file ("Footer length error")."""
    data = bytearray(shard.read_bytes())
    data[-6] ^= 0xFF
    shard.write_bytes(bytes(data))


@pytest.mark.parametrize("args", [["sql", "{store}", "SELECT 1"], ["sql", "{store}", "SELECT count(*) FROM documents"],
                                  ["diff", "{template}", "{store}"], ["counts", "{store}"]])
def test_a_broken_footer_points_to_the_audit(store: Path, template_store: tuple[Path, dict], args: list[str]) -> None:
    """`mixture sql` reads the footers when it makes its views (its first shard) or runs a query, `diff` the ids of
    both stores: the views and `diff` were tracebacks."""
    break_footer_length(store / StoreReader(str(store)).shard_files()[0])  # the first the views bind to
    res = CliRunner().invoke(app, [a.format(store=store, template=template_store[0]) for a in args])
    text = " ".join(res.output.split())
    assert res.exit_code == 1 and f"mixture audit {store} --checksums all" in text, res.output
    assert isinstance(res.exception, SystemExit)


def test_a_locked_setting_is_not_blamed_on_the_shards(store: Path) -> None:
    res = CliRunner().invoke(app, ["sql", str(store), "RESET enable_external_access"])
    assert res.exit_code == 1 and "locked" in res.output and "mixture audit" not in res.output
