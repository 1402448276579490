"""The side files `_dropped/<reason>/*.parquet` and `_quarantine/*.parquet`: their lists, and their rows as the
DuckDB views `dropped` and `quarantine` or as DataFrames."""

from __future__ import annotations

from typing import Literal

import duckdb
import pandas as pd

from mixture.accounting.footers import parquet_rows
from mixture.accounting.parquet_sql import empty_sql
from mixture.accounting.reader import StoreReader
from mixture.store import layout
from mixture.store.schema import DROPPED, QUARANTINE

SideKind = Literal["dropped", "quarantine"]


def dropped_files(reader: StoreReader) -> dict[str, list[str]]:
    """{reason: store-relative paths} of every `_dropped/<reason>/*.parquet`, sorted by reason then name."""
    out: dict[str, list[str]] = {}
    for path in sorted(reader.fs.glob(reader.path(f"{layout.DROPPED_DIR}/*/*.parquet"))):
        rel = reader.rel(path)
        out.setdefault(rel.split("/")[1], []).append(rel)
    return out


def quarantine_files(reader: StoreReader) -> list[str]:
    """Store-relative paths of every `_quarantine/*.parquet`, sorted."""
    return sorted(reader.rel(p) for p in reader.fs.glob(reader.path(f"{layout.QUARANTINE_DIR}/*.parquet")))


def side_files(reader: StoreReader, kind: SideKind) -> list[str]:
    if kind == "dropped":
        return [rel for rels in dropped_files(reader).values() for rel in rels]
    return quarantine_files(reader)


def _select(reader: StoreReader, rels: list[str], kind: SideKind) -> str:
    # dropped rows also get the name of their file (quarantine rows already carry `file`: the input file)
    if not rels:
        return empty_sql(DROPPED, "NULL::VARCHAR AS file") if kind == "dropped" else empty_sql(QUARANTINE)
    scan = f"read_parquet({reader.parquet_list_sql(rels)}, union_by_name=true, filename=true)"
    if kind == "dropped":
        return f"SELECT * EXCLUDE (filename), parse_filename(filename) AS file FROM {scan}"
    return f"SELECT * EXCLUDE (filename) FROM {scan}"


def create_side_view(reader: StoreReader, con: duckdb.DuckDBPyConnection, kind: SideKind,
                     name: str | None = None) -> None:
    """Create the view `kind` (or `name`) over every side file of that kind on `con`.

    A file without a readable footer (still being written by a running build, or damaged: `mixture audit` names
    it) is left out rather than making the whole view unreadable.
    """
    reader.register(con)
    rels = side_files(reader, kind)
    view = name or kind
    try:
        con.execute(f"CREATE OR REPLACE VIEW {view} AS {_select(reader, rels, kind)}")
    except duckdb.Error:
        readable = [rel for rel, rows in parquet_rows(reader, rels).items() if isinstance(rows, int)]
        con.execute(f"CREATE OR REPLACE VIEW {view} AS {_select(reader, readable, kind)}")


def _frame(reader: StoreReader, kind: SideKind) -> pd.DataFrame:
    con = reader.connect_bare()
    create_side_view(reader, con, kind)
    return con.execute(f"SELECT * FROM {kind}").df()


def dropped(reader: StoreReader) -> pd.DataFrame:
    """Every `_dropped/<reason>/*.parquet` row (id, source, origin, reason, detail, n_chars, text_head) and the
    name of its file (`file`), in file order."""
    return _frame(reader, "dropped")


def quarantine(reader: StoreReader) -> pd.DataFrame:
    """Every `_quarantine/*.parquet` row (source, file, record, reason, detail, raw, raw_bytes), in file order."""
    return _frame(reader, "quarantine")
