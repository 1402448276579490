"""SQL text for reading a store's Parquet files in DuckDB: `read_parquet` over a file list, typed empty stand-ins."""

from __future__ import annotations

import pyarrow as pa

from mixture.accounting.reader import StoreReader
from mixture.store.schema import DOCUMENTS as DOC_SCHEMA

_DUCK_TYPES = {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.int16(): "SMALLINT",
               pa.int8(): "TINYINT", pa.int32(): "INTEGER", pa.float32(): "FLOAT"}


def duck_type(t: pa.DataType) -> str:
    return _DUCK_TYPES[t]


def empty_sql(schema: pa.Schema, extra: str = "") -> str:
    """A query with `schema`'s columns (and the `extra` select items) that returns no row."""
    cols = ", ".join([f"NULL::{duck_type(f.type)} AS {f.name}" for f in schema] + ([extra] if extra else []))
    return f"SELECT {cols} WHERE false"


def documents_source_sql(reader: StoreReader, files: list[str] | None = None) -> str:
    """`read_parquet(...)` over the finished shards (ledger-listed and present), cluster/quality as integers."""
    files = reader.shard_files() if files is None else files
    if not files:
        return f"({empty_sql(DOC_SCHEMA)})"
    return f"read_parquet({reader.parquet_list_sql(files)}, hive_partitioning=false)"
