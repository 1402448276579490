"""A kept document by id without a scan: the id range of every row group of the finished shards (their Parquet
footers' statistics; the store writes each shard sorted by id), then only the row groups whose range holds the id."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pandas as pd
import pyarrow.parquet as pq

from mixture.accounting.document_search import DOCUMENT_COLUMNS
from mixture.accounting.reader import StoreReader
from mixture.accounting.verify import verify_store_shards


@dataclass(frozen=True)
class IdRanges:
    """For each row group of the finished shards: its shard, its index and its smallest and largest id (None: the
    footer records none, so the group may hold any id)."""

    groups: list[tuple[str, int, str | None, str | None]]

    def holding(self, doc_id: str) -> list[tuple[str, int]]:
        """The (shard, row group) pairs whose id range holds `doc_id`."""
        return [(rel, g) for rel, g, low, high in self.groups
                if (low is None or low <= doc_id) and (high is None or doc_id <= high)]


def _ranges(reader: StoreReader, rel: str) -> list[tuple[str, int, str | None, str | None]]:
    with reader.fs.open(reader.path(rel), "rb") as f:
        meta = pq.ParquetFile(f).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if "id" not in names:
        return []
    col = names.index("id")
    out = []
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(col).statistics
        known = stats is not None and stats.has_min_max
        out.append((rel, g, str(stats.min) if known else None, str(stats.max) if known else None))
    return out


def id_ranges(reader: StoreReader, threads: int = 8) -> IdRanges:
    """The id range of every row group of the store's finished shards, from their footers (no row is read)."""
    files = reader.shard_files()
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(files)))) as pool:
        groups = [g for part in pool.map(lambda rel: _ranges(reader, rel), files) for g in part]
    return IdRanges(groups)


def find_document(reader: StoreReader, doc_id: str, ranges: IdRanges | None = None) -> pd.DataFrame:
    """The kept document `doc_id` (DOCUMENT_COLUMNS; empty when no finished shard holds it), read from the row
    groups whose id range holds it only. `ranges`: `id_ranges(reader)` when the caller keeps them."""
    ranges = ranges if ranges is not None else id_ranges(reader)
    found = []
    for rel, group in ranges.holding(doc_id):
        verify_store_shards(reader, [rel])  # CorruptShard before any text of a changed shard is shown
        with reader.fs.open(reader.path(rel), "rb") as f:
            pf = pq.ParquetFile(f)
            present = [c for c in DOCUMENT_COLUMNS if c in pf.schema_arrow.names]
            table = pf.read_row_group(group, columns=present)
        df = table.to_pandas()
        found.append(df[df["id"] == doc_id])
        if len(found[-1]):
            break
    hits = [df for df in found if len(df)]
    if not hits:
        return pd.DataFrame(columns=DOCUMENT_COLUMNS)
    out = hits[0].reset_index(drop=True)
    for c in DOCUMENT_COLUMNS:
        if c not in out:
            out[c] = None
    return out[DOCUMENT_COLUMNS].astype({"cluster": "int64", "quality": "int64"})
