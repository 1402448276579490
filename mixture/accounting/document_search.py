"""Search the kept documents of a store by text, id and facets: DuckDB over the finished shards, a few files per
query, stopping once `limit` documents matched (it reads the shards, so it runs on request only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from mixture.accounting.reader import StoreReader
from mixture.store import layout
from mixture.store.schema import DOCUMENTS as DOC_SCHEMA

DOCUMENT_COLUMNS = [f.name for f in DOC_SCHEMA]


def search_documents(reader: StoreReader, text: str = "", doc_id: str = "", sources: Sequence[str] | None = None,
                     content_types: Sequence[str] | None = None, cells: Sequence[tuple[int, int]] | None = None,
                     limit: int = 200, progress: Callable[[int, int], None] | None = None,
                     files_per_query: int = 8) -> pd.DataFrame:
    """Documents whose text contains `text` (case-insensitive) and whose id equals `doc_id` (when given), from
    the given sources, content types and (cluster, quality) cells; at most `limit`, in shard and row order.

    Reads the finished shards (ledger-listed and present, so a store still building works too) in cell order,
    `files_per_query` at a time; `progress(files read, files)` after each query.
    """
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
    found = 0
    for start in range(0, len(files), files_per_query):
        batch = files[start:start + files_per_query]
        order = [reader.duckdb_path(f) for f in batch]
        df = con.execute(
            f"SELECT {', '.join(DOCUMENT_COLUMNS)} FROM read_parquet({reader.parquet_list_sql(batch)}, "
            "hive_partitioning=false, filename=true, file_row_number=true) "
            f"WHERE {' AND '.join(where)} ORDER BY list_position(?::VARCHAR[], filename), file_row_number "
            f"LIMIT {int(limit) - found}", [*params, order]).df()
        if len(df):
            hits.append(df)
            found += len(df)
        if progress:
            progress(start + len(batch), len(files))
        if found >= limit:
            break
    if not hits:
        return pd.DataFrame(columns=DOCUMENT_COLUMNS)
    return pd.concat(hits, ignore_index=True).astype({"cluster": "int64", "quality": "int64"})
