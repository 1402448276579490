"""Open a store at any fsspec URI and expose its small artifacts and DuckDB views."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

import duckdb
import fsspec
from fsspec.core import url_to_fs

from mixture.store import layout


class StoreNotReady(RuntimeError):
    """The store has no store.json yet: it is still building (or the build failed)."""


def open_fs(uri: str, **storage_options: Any) -> tuple[fsspec.AbstractFileSystem, str]:
    """Return (filesystem, root path without protocol) for a local path or fsspec URI."""
    fs, root = url_to_fs(uri, **storage_options)
    return fs, root.rstrip("/")


class StoreReader:
    """Read-only view of one store. All queries of the planner and explorer go through here."""

    def __init__(self, uri: str, **storage_options: Any):
        self.uri = uri
        self.fs, self.root = open_fs(uri, **storage_options)

    def path(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def exists(self, rel: str) -> bool:
        return self.fs.exists(self.path(rel))

    def read_json(self, rel: str) -> dict:
        with self.fs.open(self.path(rel), "rb") as f:
            return json.loads(f.read())

    @property
    def is_complete(self) -> bool:
        return self.exists(layout.STORE_JSON)

    @cached_property
    def artifact(self) -> dict:
        """The parsed store.json; raises StoreNotReady while the store is building."""
        if not self.is_complete:
            raise StoreNotReady(f"{self.uri}: no {layout.STORE_JSON} yet, the store is still building")
        return self.read_json(layout.STORE_JSON)

    def ledger_paths(self) -> list[str]:
        return sorted(self.fs.glob(self.path(f"cluster=*/quality=*/{layout.LEDGER}")))

    def ledgers(self) -> list[dict]:
        out = []
        for p in self.ledger_paths():
            with self.fs.open(p, "rb") as f:
                out.append(json.loads(f.read()))
        return out

    def _duckdb_path(self, rel: str) -> str:
        """A path DuckDB can open: local as-is, remote through the registered fsspec filesystem."""
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        if protocol in ("file", "local"):
            return self.path(rel)
        return f"{protocol}://{self.path(rel)}"

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with views `documents`, `samples_uniform`, `samples_exemplars` (when present)."""
        con = duckdb.connect()
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        if protocol not in ("file", "local"):
            con.register_filesystem(self.fs)
        if self.fs.glob(self.path("cluster=*/quality=*/*.parquet")):
            docs = self._duckdb_path("cluster=*/quality=*/*.parquet")
            con.execute(
                f"CREATE VIEW documents AS SELECT * FROM read_parquet('{docs}', hive_partitioning=false)"
            )
        for view, rel in (("samples_uniform", layout.UNIFORM_SAMPLES), ("samples_exemplars", layout.EXEMPLAR_SAMPLES)):
            if self.exists(rel):
                con.execute(f"CREATE VIEW {view} AS SELECT * FROM read_parquet('{self._duckdb_path(rel)}')")
        return con
