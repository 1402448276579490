"""The DuckDB views of a store: documents, shards, cells, clusters, sources, counters (+ samples)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from mixture.accounting.reader import StoreNotReady, StoreReader
from mixture.accounting.tables import cell_table, ledger_shard_table
from mixture.store import layout
from mixture.store.schema import DOCUMENTS as DOC_SCHEMA

VIEWS = ("documents", "shards", "cells", "clusters", "sources", "counters")


def _empty_documents_sql() -> str:
    cols = ", ".join(f"NULL::{_duck_type(f.type)} AS {f.name}" for f in DOC_SCHEMA)
    return f"SELECT {cols} WHERE false"


def _duck_type(t: pa.DataType) -> str:
    return {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.int16(): "SMALLINT",
            pa.int8(): "TINYINT", pa.int32(): "INTEGER", pa.float32(): "FLOAT"}[t]


def documents_source_sql(reader: StoreReader, files: list[str] | None = None) -> str:
    """`read_parquet(...)` over the finished shards (ledger-listed and present), cluster/quality as integers."""
    files = reader.shard_files() if files is None else files
    if not files:
        return f"({_empty_documents_sql()})"
    return f"read_parquet({reader.parquet_list_sql(files)}, hive_partitioning=false)"


def _records_table(records: list[dict]) -> pa.Table:
    table = pa.Table.from_pylist(records) if records else pa.table({"empty": pa.array([], pa.int64())})
    # all-null columns (e.g. tokens_in) have arrow type null, which DuckDB cannot scan: make them BIGINT
    return table.cast(pa.schema([pa.field(f.name, pa.int64() if pa.types.is_null(f.type) else f.type)
                                 for f in table.schema]))


def create_views(reader: StoreReader, con: duckdb.DuckDBPyConnection) -> None:
    """Create every view on `con`. Artifact views (clusters, sources, counters) only once store.json exists."""
    reader.register(con)
    files = reader.shard_files()
    con.execute(f"CREATE VIEW documents AS SELECT * FROM {documents_source_sql(reader, files)}")

    ledger = ledger_shard_table(reader).copy()
    listed = set(ledger["file"])
    listing = [{"file": f"{d}/{n}", "file_bytes": size} for d, names in reader.cell_files().items()
               for n, size in names.items() if n.endswith(".parquet")]
    extra = [row for row in listing if row["file"] not in listed]
    files_tbl = pa.Table.from_pylist(listing, schema=pa.schema([("file", pa.string()), ("file_bytes", pa.int64())]))
    con.register("_store_files", files_tbl)
    ledger["duck_path"] = [reader.duckdb_path(f) for f in ledger["file"]]
    con.register("_ledger_shards", pa.Table.from_pandas(ledger, preserve_index=False))
    scan = (
        "SELECT filename, count(*)::BIGINT AS n_rows, sum(n_tokens)::BIGINT AS n_tokens "
        f"FROM read_parquet({reader.parquet_list_sql(files)}, filename=true, hive_partitioning=false) GROUP BY filename"
        if files else "SELECT NULL::VARCHAR AS filename, NULL::BIGINT AS n_rows, NULL::BIGINT AS n_tokens WHERE false"
    )
    k_extra = [(r["file"],) + layout.parse_cell_path(r["file"]) for r in extra]
    con.register("_unlisted_files", pa.table({"file": [e[0] for e in k_extra],
                                              "cluster": pa.array([e[1] for e in k_extra], pa.int64()),
                                              "quality": pa.array([e[2] for e in k_extra], pa.int64())}))
    con.execute(f"""
        CREATE VIEW shards AS
        WITH scan AS ({scan})
        SELECT l.cell, l.cluster, l.quality, l.file AS path, l.task, scan.n_rows AS rows, scan.n_tokens AS tokens,
               f.file_bytes AS bytes, l.xxh64 AS checksum, TRUE AS listed,
               l.rows AS ledger_rows, l.tokens AS ledger_tokens, l.bytes AS ledger_bytes
        FROM _ledger_shards l LEFT JOIN _store_files f ON f.file = l.file LEFT JOIN scan ON scan.filename = l.duck_path
        UNION ALL
        SELECT NULL, u.cluster, u.quality, u.file, NULL, NULL, NULL, f.file_bytes, NULL, FALSE, NULL, NULL, NULL
        FROM _unlisted_files u JOIN _store_files f ON f.file = u.file
    """)
    con.register("cells", pa.Table.from_pandas(cell_table(reader), preserve_index=False))
    try:
        artifact = reader.artifact
    except StoreNotReady:
        artifact = None
    if artifact is not None:
        con.register("clusters", _records_table(artifact.get("clusters", [])))
        con.register("sources", _records_table(artifact.get("sources", [])))
        con.register("counters", _records_table([artifact.get("counters", {})]))
    for view, rel in (("samples_uniform", layout.UNIFORM_SAMPLES), ("samples_exemplars", layout.EXEMPLAR_SAMPLES)):
        if reader.exists(rel):
            con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{reader.duckdb_path(rel)}')")
