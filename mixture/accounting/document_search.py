"""Search the kept documents of a store by text, id and facets: DuckDB over the finished shards, a few files per
query, stopping once `limit` documents matched or a row / time budget is spent (it reads the shards, so it runs
on request only)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import duckdb
import pandas as pd

from mixture.accounting.reader import StoreReader
from mixture.accounting.verify import verify_store_shards
from mixture.store import layout
from mixture.store.schema import DOCUMENTS as DOC_SCHEMA

DOCUMENT_COLUMNS = [f.name for f in DOC_SCHEMA]
# columns a store built by older code lacks (`code_language`, 0.2.0): read as NULL there
_LATER_COLUMNS = {"code_language": "VARCHAR"}


def _select_list(con: duckdb.DuckDBPyConnection, source: str) -> str:
    """DOCUMENT_COLUMNS as a select list over `source`, a column added after the shards were written as NULL."""
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    return ", ".join(c if c in present or c not in _LATER_COLUMNS else f"NULL::{_LATER_COLUMNS[c]} AS {c}"
                     for c in DOCUMENT_COLUMNS)


@dataclass(frozen=True)
class ScanBudget:
    """How much one scan may read: at most `max_rows` rows of the shards and `max_seconds` of wall time
    (None: no limit)."""

    max_rows: int | None = None
    max_seconds: float | None = None


@dataclass(frozen=True)
class DocumentScan:
    """What a scan found and how far it got. `stopped`: 'complete' (every selected shard read), 'hits' (`limit`
    documents matched), 'rows' or 'seconds' (the budget ran out: the hits come from the part read).
    `rows_read` is counted (from the Parquet footers) only under a row budget, else 0."""

    hits: pd.DataFrame
    rows_read: int
    files_read: int
    files: int
    stopped: Literal["complete", "hits", "rows", "seconds"]


def search_documents(reader: StoreReader, text: str = "", doc_id: str = "", sources: Sequence[str] | None = None,
                     content_types: Sequence[str] | None = None, cells: Sequence[tuple[int, int]] | None = None,
                     limit: int = 200, progress: Callable[[int, int], None] | None = None,
                     files_per_query: int = 8) -> pd.DataFrame:
    """Documents whose text contains `text` (case-insensitive) and whose id equals `doc_id` (when given), from
    the given sources, content types and (cluster, quality) cells; at most `limit`, in shard and row order.

    Reads the finished shards (ledger-listed and present, so a store still building works too) in cell order,
    `files_per_query` at a time; `progress(files read, files)` after each query.
    """
    return scan_documents(reader, text=text, doc_id=doc_id, sources=sources, content_types=content_types,
                          cells=cells, limit=limit, progress=progress, files_per_query=files_per_query).hits


def scan_documents(reader: StoreReader, text: str = "", doc_id: str = "", sources: Sequence[str] | None = None,
                   content_types: Sequence[str] | None = None, cells: Sequence[tuple[int, int]] | None = None,
                   limit: int = 200, budget: ScanBudget | None = None,
                   progress: Callable[[int, int], None] | None = None, files_per_query: int = 8) -> DocumentScan:
    """`search_documents` within a budget: stops after `budget.max_rows` rows read (the last shard only up to
    that row, counted from the Parquet footers) or `budget.max_seconds` (a running query is interrupted), and
    says which limit stopped it."""
    budget = budget or ScanBudget()
    deadline = None if budget.max_seconds is None else time.monotonic() + budget.max_seconds
    files = reader.shard_files()
    if cells is not None:
        wanted = {(int(c), int(q)) for c, q in cells}
        files = [f for f in files if layout.parse_cell_path(f) in wanted]
    where, params = ["true"], []
    if doc_id:
        where.append("id = ?")
        params.append(doc_id)
    if text:
        where.append("contains(lower(text), ?)")
        params.append(text.lower())
    for column, values in (("source", sources), ("content_type", content_types)):
        if values:
            where.append(f"list_contains(?::VARCHAR[], {column})")
            params.append(list(values))
    con = reader.connect_bare()
    hits: list[pd.DataFrame] = []
    found = rows_read = files_read = 0
    stopped: Literal["complete", "hits", "rows", "seconds"] = "complete"
    try:
        for start in range(0, len(files), files_per_query):
            if deadline is not None and time.monotonic() >= deadline:
                stopped = "seconds"
                break
            batch = files[start:start + files_per_query]
            verify_store_shards(reader, batch)  # CorruptShard before any text of a changed shard is shown
            order = [reader.duckdb_path(f) for f in batch]
            row_cut, batch_rows = "", None
            if budget.max_rows is not None:
                batch, row_cut, batch_rows = _within_rows(con, reader, batch, budget.max_rows - rows_read)
                if not batch:
                    stopped = "rows"
                    break
            source = f"read_parquet({reader.parquet_list_sql(batch)}, hive_partitioning=false, union_by_name=true"
            sql = (f"SELECT {_select_list(con, source + ')')} FROM {source}, filename=true, file_row_number=true) "
                   f"WHERE {' AND '.join(where)}{row_cut} "
                   f"ORDER BY list_position(?::VARCHAR[], filename), file_row_number LIMIT {int(limit) - found}")
            try:
                df = _execute(con, sql, [*params, order], deadline)
            except duckdb.InterruptException:
                stopped = "seconds"
                break
            files_read += len(batch)
            rows_read += batch_rows if batch_rows is not None else 0
            if len(df):
                hits.append(df)
                found += len(df)
            if progress:
                progress(start + len(batch), len(files))
            if found >= limit:
                stopped = "hits"
                break
            if row_cut or (budget.max_rows is not None and rows_read >= budget.max_rows
                           and start + files_per_query < len(files)):
                stopped = "rows"
                break
    finally:
        con.close()
    out = (pd.concat(hits, ignore_index=True).astype({"cluster": "int64", "quality": "int64"}) if hits
           else pd.DataFrame(columns=DOCUMENT_COLUMNS))
    return DocumentScan(out, rows_read, files_read, len(files), stopped)


def _within_rows(con: duckdb.DuckDBPyConnection, reader: StoreReader, batch: list[str],
                 rows_left: int) -> tuple[list[str], str, int]:
    """The files of `batch` that fit in `rows_left` rows (the last one cut by a `file_row_number` condition),
    the SQL condition and the rows they hold; the row counts come from the Parquet footers only."""
    if rows_left <= 0:
        return [], "", 0
    counts = dict(con.execute(f"SELECT file_name, num_rows FROM parquet_file_metadata("
                              f"{reader.parquet_list_sql(batch)})").fetchall())
    kept, total = [], 0
    for rel in batch:
        n = int(counts.get(reader.duckdb_path(rel), 0))
        kept.append(rel)
        if total + n > rows_left:
            path = reader.duckdb_path(rel).replace("'", "''")
            return kept, f" AND (filename <> '{path}' OR file_row_number < {rows_left - total})", rows_left
        total += n
    return kept, "", total


def _execute(con: duckdb.DuckDBPyConnection, sql: str, params: list, deadline: float | None) -> pd.DataFrame:
    """Run one query; past `deadline` it is interrupted (duckdb.InterruptException)."""
    if deadline is None:
        return con.execute(sql, params).df()
    timer = threading.Timer(max(deadline - time.monotonic(), 0.0), con.interrupt)
    timer.start()
    try:
        return con.execute(sql, params).df()
    finally:
        timer.cancel()
