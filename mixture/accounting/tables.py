"""Cached tables from the small artifacts only (ledgers + store.json): no Parquet is opened here."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

import pandas as pd

from mixture.accounting.reader import StoreNotReady, StoreReader
from mixture.store import layout

T = TypeVar("T")


def cached_on_reader(fn: Callable[[StoreReader], T]) -> Callable[[StoreReader], T]:
    """Cache a one-argument table function on the reader (cleared by `reader.refresh()` via `_tables`)."""

    @wraps(fn)
    def wrapper(reader: StoreReader) -> T:
        cache = reader.__dict__.setdefault("_tables", {})
        if fn.__name__ not in cache:
            cache[fn.__name__] = fn(reader)
        return cache[fn.__name__]

    return wrapper


def store_k(reader: StoreReader) -> int:
    """Cluster count: store.json `partition.k`, else inferred from the widest cluster folder name."""
    try:
        return int(reader.artifact["partition"]["k"])
    except (StoreNotReady, KeyError, TypeError, ValueError):
        dirs = list(reader.cell_files())
        width = max((len(d.split("/")[0]) - len("cluster=") for d in dirs), default=2)
        return 101 if width >= 3 else 100


def quality_names(reader: StoreReader) -> list[str]:
    try:
        return list(reader.artifact["partition"].get("quality_names") or layout.QUALITY_NAMES)
    except (StoreNotReady, KeyError, TypeError):
        return list(layout.QUALITY_NAMES)


def cluster_labels(reader: StoreReader) -> dict[int, str]:
    try:
        return {int(c["id"]): str(c.get("label", "")) for c in reader.artifact.get("clusters", [])}
    except StoreNotReady:
        return {}


@cached_on_reader
def ledger_shard_table(reader: StoreReader) -> pd.DataFrame:
    """One row per ledger entry: cell, cluster, quality, file (store-relative), task, rows, tokens, bytes, xxh64."""
    k = store_k(reader)
    rows = []
    for cell_dir, ledger in reader.ledger_by_dir().items():
        c, q = layout.parse_cell_path(cell_dir)
        for s in ledger["shards"]:
            rows.append({"cell": layout.cell_name(c, q, k), "cluster": c, "quality": q,
                         "file": f"{cell_dir}/{s.get('path')}", "task": s.get("task"), "rows": s.get("rows"),
                         "tokens": s.get("tokens"), "bytes": s.get("bytes"), "xxh64": s.get("xxh64")})
    cols = ["cell", "cluster", "quality", "file", "task", "rows", "tokens", "bytes", "xxh64"]
    return pd.DataFrame(rows, columns=cols)


CELL_COLUMNS = ["cell", "cluster", "quality", "quality_name", "label", "path", "docs", "tokens", "shards", "share"]


def _cell_frame(reader: StoreReader, by_cell: dict[tuple[int, int], dict]) -> pd.DataFrame:
    """CELL_COLUMNS from {(cluster, quality): {path, docs, tokens, shards}}, ordered by cluster then quality."""
    k = store_k(reader)
    names = quality_names(reader)
    labels = cluster_labels(reader)
    rows = [
        {"cell": layout.cell_name(c, q, k), "cluster": c, "quality": q,
         "quality_name": names[q] if q < len(names) else str(q), "label": labels.get(c, ""), **v}
        for (c, q), v in sorted(by_cell.items())
    ]
    df = pd.DataFrame(rows, columns=CELL_COLUMNS[:-1])
    total = df["tokens"].sum()
    df["share"] = df["tokens"] / total if total else 0.0
    return df


@cached_on_reader
def cell_table(reader: StoreReader) -> pd.DataFrame:
    """One row per cell with docs/tokens/shards from the ledgers (the exact counts) and labels from store.json.

    Columns: cell, cluster, quality, quality_name, label, path, docs, tokens, shards, share. Cells listed in
    store.json without a ledger appear with zero counts; ordered by cluster then quality.
    """
    k = store_k(reader)
    by_cell: dict[tuple[int, int], dict] = {}
    for cell_dir, ledger in reader.ledger_by_dir().items():
        c, q = layout.parse_cell_path(cell_dir)
        shards = ledger["shards"]
        by_cell[(c, q)] = {"path": cell_dir, "docs": int(sum(s.get("rows") or 0 for s in shards)),
                           "tokens": int(sum(s.get("tokens") or 0 for s in shards)), "shards": len(shards)}
    try:
        for cell in reader.artifact.get("cells", []):
            key = (int(cell["cluster"]), int(cell["quality"]))
            by_cell.setdefault(key, {"path": cell.get("path") or layout.cell_path(*key, k), "docs": 0, "tokens": 0,
                                     "shards": 0})
    except StoreNotReady:
        pass
    return _cell_frame(reader, by_cell)


@cached_on_reader
def published_cell_table(reader: StoreReader) -> pd.DataFrame:
    """cell_table's columns from store.json `cells` alone: what the finished build published, without reading a
    ledger or listing the store (its cost does not grow with the store). Raises StoreNotReady while building."""
    k = store_k(reader)
    by_cell = {}
    for cell in reader.artifact.get("cells", []):
        key = (int(cell["cluster"]), int(cell["quality"]))
        by_cell[key] = {"path": cell.get("path") or layout.cell_path(*key, k), "docs": int(cell.get("docs") or 0),
                        "tokens": int(cell.get("tokens") or 0), "shards": int(cell.get("shards") or 0)}
    return _cell_frame(reader, by_cell)


@cached_on_reader
def cluster_table(reader: StoreReader) -> pd.DataFrame:
    """store.json clusters (id, label, top_terms, summary, confidence, confidence_tag, docs, tokens)."""
    return pd.DataFrame(reader.artifact.get("clusters", []))


@cached_on_reader
def source_table(reader: StoreReader) -> pd.DataFrame:
    """store.json sources, one row per source with every field the build recorded."""
    return pd.DataFrame(reader.artifact.get("sources", []))


@cached_on_reader
def counters_table(reader: StoreReader) -> pd.DataFrame:
    """store.json counters as a single row."""
    return pd.DataFrame([reader.artifact.get("counters", {})])
