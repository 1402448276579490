"""The DuckDB views of a store (documents, shards, cells, clusters, sources, counters, dropped, quarantine,
samples) and `connect(reader)`, a connection that has them."""

from __future__ import annotations

import re

import duckdb
import pandas as pd
import pyarrow as pa

from mixture.accounting.parquet_sql import documents_source_sql
from mixture.accounting.reader import StoreNotReady, StoreReader
from mixture.accounting.sample_files import sample_path
from mixture.accounting.side_files import create_side_view
from mixture.accounting.tables import cell_table, ledger_shard_table
from mixture.store import layout
from mixture.store.formats import FormatError

# name -> one line on what it holds (the order of `mixture sql`'s help and `.tables`)
VIEWS = {
    "documents": "every document of the finished shards (ledger-listed and present), one row each",
    "shards": "one row per Parquet file of a cell: rows/tokens/bytes counted and as its ledger records them",
    "cells": "one row per cell: docs, tokens, shards (from the ledgers), label, share",
    "clusters": "store.json clusters: id, label, top terms, summary, confidence, docs, tokens",
    "sources": "store.json sources: docs and tokens in and kept, drops by reason, license, format",
    "counters": "store.json counters (one row): records in/out, bad input, drops, tokens out",
    "dropped": "every _dropped/<reason>/*.parquet row: id, source, origin, reason, detail, n_chars, text_head, file",
    "quarantine": "every _quarantine/*.parquet row: source, file, record, reason, detail, raw, raw_bytes",
    "samples_uniform": "_samples/uniform.parquet: uniformly sampled documents per cell, with rank",
    "samples_exemplars": "_samples/exemplars.parquet: the documents nearest their cluster centroid, with rank",
}


# statements a read-only session refuses: they write files (COPY … TO, EXPORT), open other databases (ATTACH,
# DETACH) or install and load extensions (INSTALL, LOAD)
WRITING = frozenset({"COPY", "COPY_DATABASE", "EXPORT", "ATTACH", "DETACH", "LOAD", "EXTENSION"})
WRAPPING = frozenset({"EXPLAIN", "PREPARE"})  # statements that hold another one, run by EXPLAIN ANALYZE or EXECUTE
MAX_WRAPPED_WORDS = 12  # the wrapped statement starts within these words (EXPLAIN (ANALYZE, FORMAT json) COPY …)


def sql_string(text: str) -> str:
    """`text` as a DuckDB string literal (quotes doubled: a store path may hold a `'`)."""
    return "'" + text.replace("'", "''") + "'"


def connect(reader: StoreReader, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to `reader`'s store with every view of VIEWS (artifact views once store.json exists,
    sample views when the files are there). `read_only` (what `mixture sql` opens): once the views exist, DuckDB
    may open no file outside the store, install or load no extension and change no setting (`lock_down`); the
    statements of WRITING are refused by `refused`."""
    con = duckdb.connect()
    create_views(reader, con)
    if read_only:
        lock_down(reader, con)
    return con


def lock_down(reader: StoreReader, con: duckdb.DuckDBPyConnection) -> None:
    """DuckDB's own limits on `con`: external access off but for the store's folder (allowed_directories), no
    extension installed or loaded, configuration locked (no SET can lift any of it)."""
    for setting in ("autoinstall_known_extensions", "autoload_known_extensions", "allow_community_extensions"):
        con.execute(f"SET {setting} = false")
    con.execute(f"SET allowed_directories = [{sql_string(reader.duckdb_path(''))}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def refused(con: duckdb.DuckDBPyConnection, sql: str) -> str | None:
    """Why a read-only session refuses `sql` (its first statement of WRITING), None when it may run (including SQL
    DuckDB cannot parse: running it reports the syntax error)."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error:
        return None
    for st in statements:
        kind = st.type.name
        if kind in WRAPPING:
            kind = _wrapped_writing(con, st.query) or kind
        if kind in WRITING:
            return (f"{kind} statements are refused: `mixture sql` reads the store and writes nothing (no COPY … TO, "
                    "EXPORT, ATTACH, INSTALL or LOAD, nor one inside EXPLAIN ANALYZE or PREPARE); rerun with "
                    "--unrestricted to lift that")
    return None


def _wrapped_writing(con: duckdb.DuckDBPyConnection, sql: str) -> str | None:
    """The type of a WRITING statement that `sql` (an EXPLAIN or PREPARE) wraps: any tail of it, from a word on,
    that parses as one (EXPLAIN ANALYZE runs it; PREPARE … AS keeps it for EXECUTE)."""
    starts = [m.start() for m in re.finditer(r"(?<![\w'\"])[A-Za-z]", sql)][1:]
    for at in starts[:MAX_WRAPPED_WORDS]:
        try:
            inner = con.extract_statements(sql[at:])
        except duckdb.Error:
            continue
        kinds = [st.type.name for st in inner if st.type.name in WRITING]
        if kinds:
            return kinds[0]
    return None


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
        info = reader.store_info
    except (StoreNotReady, FormatError):  # building, or a store.json `mixture audit` reports: no store.json views
        info = None
    if info is not None:
        con.register("clusters", _records_table([c.model_dump(mode="json") for c in info.clusters]))
        con.register("sources", _records_table([s.model_dump(mode="json") for s in info.sources]))
        con.register("counters", _records_table([info.counters.model_dump(mode="json")]))
    create_side_view(reader, con, "dropped")
    create_side_view(reader, con, "quarantine")
    for view, kind in (("samples_uniform", "uniform"), ("samples_exemplars", "exemplars")):
        rel = sample_path(reader, kind)
        if reader.exists(rel):
            con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet({sql_string(reader.duckdb_path(rel))})")


def _cheap_rows(reader: StoreReader, con: duckdb.DuckDBPyConnection, name: str, is_table: bool) -> int | None:
    """Rows of one view without scanning documents: documents and shards from the ledgers and the listing,
    store.json and side-file views by count(*) (footers only); None for a view the session defined."""
    if name == "documents" and reader.ledger_models():
        files = set(reader.shard_files())
        ledger = ledger_shard_table(reader)
        return int(ledger.loc[ledger["file"].isin(files), "rows"].fillna(0).sum())
    if name == "shards":
        return int(con.execute("SELECT (SELECT count(*) FROM _ledger_shards) + (SELECT count(*) FROM "
                               "_unlisted_files u JOIN _store_files f ON f.file = u.file)").fetchall()[0][0])
    if name in VIEWS or is_table:
        return int(con.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0])
    return None


def table_list(reader: StoreReader, con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """name, rows, description of every view and table on `con` made by `connect` (in VIEWS order), then those the
    session created (tables counted, views not); helper tables whose name starts with `_` are left out."""
    found = {name: False for (name,) in con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    found.update({name: True for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()})
    names = [n for n in VIEWS if n in found] + sorted(n for n in found if n not in VIEWS and not n.startswith("_"))
    rows = [{"name": n, "rows": _cheap_rows(reader, con, n, found[n]), "description": VIEWS.get(n, "")}
            for n in names]
    df = pd.DataFrame(rows, columns=["name", "rows", "description"])
    df["rows"] = df["rows"].astype("Int64")
    return df
