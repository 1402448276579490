"""Documents by position: a cells' index of sizes and locations without their text (`document_index`), and the
rows at given positions of one shard, read a row group and a batch at a time (`read_rows`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mixture.accounting.reader import StoreReader
from mixture.accounting.verify import CorruptShard, store_fix, verify_store_shards
from mixture.store import layout

READ_BATCH_ROWS = 256  # rows decoded at a time when fetching rows (the store writes row groups of 128)


@dataclass
class DocumentIndex:
    """Every document of some cells, cell by cell and by id within a cell: its cell (position in the cells asked
    for), tokens, characters and where it is (`files[file]`, row `row` of that shard)."""

    files: list[str]  # store-relative paths of the finished shards read
    cell: np.ndarray  # int32
    n_tokens: np.ndarray  # int64
    n_chars: np.ndarray  # int64
    file: np.ndarray  # int32
    row: np.ndarray  # int64

    def cell_bounds(self, n_cells: int) -> np.ndarray:
        """ends[i]: the end of cell i's documents (they start at ends[i - 1])."""
        return np.cumsum(np.bincount(self.cell, minlength=n_cells))


def document_index(reader: StoreReader, cells: Sequence[tuple[int, int]]) -> DocumentIndex:
    """The documents of `cells` ((cluster, quality) pairs) in the finished shards (ledger-listed and present), ordered
    by cell (in the order given) and id, with no text read: one DuckDB query over the shards of those cells only.
    CorruptShard when the query fails on a shard whose bytes are not those of its ledger (naming it)."""
    wanted = {(int(c), int(q)): i for i, (c, q) in enumerate(cells)}
    files, cell_of = [], []
    for rel in reader.shard_files():
        key = layout.parse_cell_path(rel)
        if key in wanted:
            files.append(rel)
            cell_of.append(wanted[key])
    empty = np.zeros(0, dtype=np.int64)
    if not files:
        return DocumentIndex([], empty.astype(np.int32), empty, empty, empty.astype(np.int32), empty)
    con = reader.connect_bare()
    try:
        con.register("shard_files", pa.table({"path": [reader.duckdb_path(f) for f in files],
                                              "fi": np.arange(len(files), dtype=np.int32),
                                              "k": np.array(cell_of, dtype=np.int32)}))
        table = con.sql(
            "SELECT f.k, d.n_tokens::BIGINT AS n_tokens, d.n_chars::BIGINT AS n_chars, f.fi, d.file_row_number AS row "
            f"FROM read_parquet({reader.parquet_list_sql(files)}, hive_partitioning = false, filename = true, "
            "file_row_number = true) d JOIN shard_files f ON d.filename = f.path ORDER BY f.k, d.id"
        ).to_arrow_table()
    except duckdb.Error as exc:
        # DuckDB names no file ("don't know what type" for a damaged page header): the ledger finds the shard
        verify_store_shards(reader, files)
        first = (str(exc).strip().splitlines() or [""])[0]
        raise CorruptShard(f"{reader.uri}: reading the sizes of {len(files):,} shards failed ({type(exc).__name__}: "
                           f"{first[:300]}), though each matches its ledger. {store_fix(reader)}") from None
    finally:
        con.close()
    col = lambda name, dtype: table.column(name).to_numpy().astype(dtype, copy=False)  # noqa: E731
    return DocumentIndex(files, col("k", np.int32), col("n_tokens", np.int64), col("n_chars", np.int64),
                         col("fi", np.int32), col("row", np.int64))


def read_rows(reader: StoreReader, rel: str, rows: np.ndarray, columns: Sequence[str],
              batch_rows: int = READ_BATCH_ROWS, on_batch: Callable[[int], None] | None = None) -> pa.Table:
    """Rows `rows` (sorted, distinct) of the store's shard `rel`, in that order, with `columns` (a column the shard
    lacks comes back null): only the row groups that hold one of them are read, `batch_rows` rows decoded at a
    time; `on_batch(n)` is told the size of every batch decoded."""
    rows = np.asarray(rows, dtype=np.int64)
    parts: list[pa.RecordBatch] = []
    with reader.fs.open(reader.path(rel), "rb") as f:
        pf = pq.ParquetFile(f)
        present = [c for c in columns if c in pf.schema_arrow.names]
        meta = pf.metadata
        starts = np.cumsum([0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
        group_of = np.searchsorted(starts, rows, side="right") - 1
        for group in np.unique(group_of).tolist():
            want = rows[group_of == group] - starts[group]
            offset, last = 0, int(want[-1])
            for batch in pf.iter_batches(batch_size=batch_rows, row_groups=[group], columns=present, use_threads=False):
                n = batch.num_rows
                if on_batch:
                    on_batch(n)
                lo, hi = np.searchsorted(want, [offset, offset + n])
                if hi > lo:
                    parts.append(batch.take(pa.array(want[lo:hi] - offset)))
                offset += n
                if offset > last:
                    break
    got = sum(p.num_rows for p in parts)
    if got != len(rows):
        raise ValueError(f"{reader.uri}/{rel}: asked for {len(rows)} rows, found {got} (the shard changed since it "
                         "was listed)")
    table = pa.Table.from_batches(parts) if parts else None
    out = {}
    for c in columns:
        if table is not None and c in present:
            out[c] = table.column(c).cast(pa.string()) if pa.types.is_large_string(table.schema.field(c).type) \
                else table.column(c)
        else:
            out[c] = pa.nulls(len(rows), pa.string())
    return pa.table(out)
