"""Cached tables from the small artifacts only (ledgers + store.json): no Parquet is opened here."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

import pandas as pd

from mixture.accounting.reader import StoreNotReady, StoreReader
from mixture.composition.labels import DomainLabel, cluster_labels, label_of
from mixture.store import layout
from mixture.store.formats import FormatError, StoreArtifact

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


def _store_info(reader: StoreReader) -> StoreArtifact | None:
    """store.json when present and valid; None while building or when it does not match its format (the audit
    names the fields)."""
    try:
        return reader.store_info
    except (StoreNotReady, FormatError):
        return None


def store_k(reader: StoreReader) -> int:
    """Cluster count: store.json `partition.k`, else inferred from the widest cluster folder name."""
    info = _store_info(reader)
    if info is not None:
        return info.partition.k
    dirs = list(reader.cell_files())
    width = max((len(d.split("/")[0]) - len("cluster=") for d in dirs), default=2)
    return 101 if width >= 3 else 100


def store_quality_names(reader: StoreReader) -> list[str]:
    """`layout.bucket_names` of store.json's partition (of the five default buckets while there is none)."""
    info = _store_info(reader)
    if info is None:
        return layout.bucket_names(len(layout.QUALITY_NAMES))
    return layout.bucket_names(info.partition.quality_levels, info.partition.quality_names)


def store_cluster_labels(reader: StoreReader) -> dict[int, DomainLabel]:
    """`labels.cluster_labels` of store.json's clusters (none while there is no store.json)."""
    info = _store_info(reader)
    return cluster_labels(info.clusters if info is not None else [])


@cached_on_reader
def ledger_shard_table(reader: StoreReader) -> pd.DataFrame:
    """One row per ledger entry: cell, cluster, quality, file (store-relative), task, rows, tokens, bytes, xxh64."""
    k = store_k(reader)
    rows = []
    for cell_dir, ledger in reader.ledger_models().items():
        c, q = layout.parse_cell_path(cell_dir)
        for s in ledger.shards:
            rows.append({"cell": layout.cell_name(c, q, k), "cluster": c, "quality": q,
                         "file": f"{cell_dir}/{s.path}", "task": s.task, "rows": s.rows,
                         "tokens": s.tokens, "bytes": s.bytes, "xxh64": s.xxh64})
    cols = ["cell", "cluster", "quality", "file", "task", "rows", "tokens", "bytes", "xxh64"]
    return pd.DataFrame(rows, columns=cols)


CELL_COLUMNS = ["cell", "cluster", "quality", "quality_name", "label", "path", "docs", "tokens", "shards", "share"]


def _cell_frame(reader: StoreReader, by_cell: dict[tuple[int, int], dict]) -> pd.DataFrame:
    """CELL_COLUMNS from {(cluster, quality): {path, docs, tokens, shards}}, ordered by cluster then quality."""
    k = store_k(reader)
    names = store_quality_names(reader)
    labels = store_cluster_labels(reader)
    rows = [
        {"cell": layout.cell_name(c, q, k), "cluster": c, "quality": q,
         "quality_name": names[q] if q < len(names) else f"Q{q}", "label": label_of(labels, c).text, **v}
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
    by_cell: dict[tuple[int, int], dict] = {}
    for cell_dir, ledger in reader.ledger_models().items():
        c, q = layout.parse_cell_path(cell_dir)
        by_cell[(c, q)] = {"path": cell_dir, "docs": sum(s.rows for s in ledger.shards),
                           "tokens": sum(s.tokens for s in ledger.shards), "shards": len(ledger.shards)}
    info = _store_info(reader)
    for cell in info.cells if info is not None else []:
        by_cell.setdefault((cell.cluster, cell.quality), {"path": cell.path, "docs": 0, "tokens": 0, "shards": 0})
    return _cell_frame(reader, by_cell)


@cached_on_reader
def published_cell_table(reader: StoreReader) -> pd.DataFrame:
    """cell_table's columns from store.json `cells` alone: what the finished build published, without reading a
    ledger or listing the store (its cost does not grow with the store). Raises StoreNotReady while building."""
    by_cell = {(cell.cluster, cell.quality): {"path": cell.path, "docs": cell.docs, "tokens": cell.tokens,
                                              "shards": cell.shards} for cell in reader.store_info.cells}
    return _cell_frame(reader, by_cell)


@cached_on_reader
def cluster_table(reader: StoreReader) -> pd.DataFrame:
    """store.json clusters (id, label, top_terms, summary, confidence, confidence_tag, name, coverage, languages,
    language_share, docs, tokens)."""
    return pd.DataFrame([c.model_dump() for c in reader.store_info.clusters])


@cached_on_reader
def source_table(reader: StoreReader) -> pd.DataFrame:
    """store.json sources, one row per source with every field the build recorded."""
    return pd.DataFrame([s.model_dump() for s in reader.store_info.sources])


@cached_on_reader
def counters_table(reader: StoreReader) -> pd.DataFrame:
    """store.json counters as a single row."""
    return pd.DataFrame([reader.store_info.counters.model_dump()])
