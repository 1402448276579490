"""Open a store at any fsspec URI and expose its small artifacts (store.json, ledgers, listing) and DuckDB views."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import duckdb
import fsspec
from fsspec.core import url_to_fs

from mixture.store import layout
from mixture.store.formats import FormatError, Ledger, StoreArtifact, read_models, read_store_artifact


class StoreNotReady(RuntimeError):
    """The store has no store.json yet: it is still building (or the build failed)."""


def open_fs(uri: str, **storage_options: Any) -> tuple[fsspec.AbstractFileSystem, str]:
    """Return (filesystem, root path without protocol) for a local path or fsspec URI."""
    fs, root = url_to_fs(uri, **storage_options)
    return fs, root.rstrip("/")


def fs_protocol(fs: fsspec.AbstractFileSystem) -> str:
    return fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]


def is_local(fs: fsspec.AbstractFileSystem) -> bool:
    return fs_protocol(fs) in ("file", "local")


class StoreReader:
    """Read-only view of one store. All queries of the planner and explorer go through here.

    Small artifacts (store.json, ledgers, the file listing) are read once and cached; call `refresh()` after the
    store changed underneath.
    """

    def __init__(self, uri: str, **storage_options: Any):
        self.uri = uri
        self.fs, self.root = open_fs(uri, **storage_options)
        self.verified: set[str] = set()  # shards checked against their ledger (mixture.accounting.verify)

    # -- paths -----------------------------------------------------------------------------------------------
    def path(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def rel(self, path: str) -> str:
        """Path relative to the store root (inverse of `path`)."""
        path = path.rstrip("/")
        return path[len(self.root) + 1 :] if path.startswith(self.root + "/") else path

    def exists(self, rel: str) -> bool:
        return self.fs.exists(self.path(rel))

    @property
    def protocol(self) -> str:
        return fs_protocol(self.fs)

    def duckdb_path(self, rel: str) -> str:
        """A path DuckDB can open: local as-is, remote through the registered fsspec filesystem."""
        if is_local(self.fs):
            return self.path(rel)
        return f"{self.protocol}://{self.path(rel)}"

    def refresh(self) -> None:
        """Forget cached artifacts, ledgers and listings (after the store changed)."""
        for name in ("store_info", "_listing", "_ledgers", "_tables"):
            self.__dict__.pop(name, None)
        self.verified.clear()
        self.fs.invalidate_cache()

    # -- artifact ----------------------------------------------------------------------------------------------
    @property
    def is_complete(self) -> bool:
        return self.exists(layout.STORE_JSON)

    @cached_property
    def store_info(self) -> StoreArtifact:
        """store.json validated against its format (mixture.store.formats.StoreArtifact); raises StoreNotReady while
        the store is building, StoreVersionError for a store of another format version and FormatError (naming the
        file and every wrong field) when it does not match."""
        if not self.is_complete:
            raise StoreNotReady(f"{self.uri}: no {layout.STORE_JSON} yet, the store is still building")
        file = f"{self.uri.rstrip('/')}/{layout.STORE_JSON}"
        hint = f"run `mixture audit {self.uri}`; rebuild the store if store.json was edited or truncated"
        return read_store_artifact(self.path(layout.STORE_JSON), hint, fs=self.fs, file=file)

    # -- listing -----------------------------------------------------------------------------------------------
    @cached_property
    def _listing(self) -> dict[str, dict[str, int]]:
        """{cell dir `cluster=NN/quality=Q`: {file name: size in bytes}} for every file in every cell folder."""
        out: dict[str, dict[str, int]] = {}
        for path, info in self.fs.glob(self.path("cluster=*/quality=*/*"), detail=True).items():
            if info.get("type") == "directory":
                continue
            rel = self.rel(path)
            cell_dir, _, name = rel.rpartition("/")
            out.setdefault(cell_dir, {})[name] = int(info.get("size") or 0)
        return dict(sorted(out.items()))

    def cell_files(self) -> dict[str, dict[str, int]]:
        """{cell dir: {file name: bytes}} from one listing of the store (cached)."""
        return self._listing

    # -- ledgers -----------------------------------------------------------------------------------------------
    @cached_property
    def _ledgers(self) -> tuple[dict[str, Ledger], dict[str, str]]:
        """({cell dir: Ledger}, {cell dir: error}) of every ledger in the listing, read through
        mixture.store.formats; a ledger that is not valid JSON or does not match its format goes to the errors."""
        paths = {f"{d}/{layout.LEDGER}": self.path(f"{d}/{layout.LEDGER}")
                 for d, files in self._listing.items() if layout.LEDGER in files}
        models: dict[str, Ledger] = {}
        errors: dict[str, str] = {}
        for file, read in read_models(Ledger, self.fs, paths).items():
            cell_dir = file.rpartition("/")[0]
            if isinstance(read, FormatError):  # reported by the audit, skipped by readers
                errors[cell_dir] = "; ".join(f"{f}: {m}" if f else m for f, m in read.problems)
            else:
                models[cell_dir] = read
        return models, errors

    def ledger_models(self) -> dict[str, Ledger]:
        """{cell dir: Ledger} for every ledger that matches its format, ordered by cell path (cached)."""
        return self._ledgers[0]

    def ledger_errors(self) -> dict[str, str]:
        """{cell dir: error} for ledgers that could not be read or do not match their format."""
        return self._ledgers[1]

    # -- shard files -------------------------------------------------------------------------------------------
    def shard_files(self) -> list[str]:
        """Relative paths of the finished document shards: listed by a ledger AND present in the listing.

        Unlisted Parquet files (partial output of failed tasks) are never shown to readers.
        """
        out = []
        for cell_dir, ledger in self.ledger_models().items():
            present = self._listing.get(cell_dir, {})
            out.extend(f"{cell_dir}/{s.path}" for s in ledger.shards if s.path in present)
        return out

    # -- DuckDB ------------------------------------------------------------------------------------------------
    def register(self, con: duckdb.DuckDBPyConnection) -> None:
        """Make this store's filesystem readable by DuckDB (no-op for local paths)."""
        if is_local(self.fs):
            return
        if not con.filesystem_is_registered(self.protocol):
            con.register_filesystem(self.fs)

    def parquet_list_sql(self, rels: list[str]) -> str:
        """A DuckDB list literal of the given store-relative Parquet paths."""
        return "[" + ",".join("'" + self.duckdb_path(r).replace("'", "''") + "'" for r in rels) + "]"

    def connect_bare(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection that can read this store's files, without any view."""
        con = duckdb.connect()
        self.register(con)
        return con
