"""A Parquet file's record batches read one row group at a time, so that reading a file holds one row group's
worth whatever the file's size."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq


def row_group_batches(pf: pq.ParquetFile, batch_size: int, columns: list[str] | None = None
                      ) -> Iterator[pa.RecordBatch]:
    """The rows of `pf` in order, in batches of at most `batch_size` rows that never span two row groups. pyarrow's
    reader over the whole file holds more the more row groups it has read: on a 43 MB prepared file of 201 row
    groups its peak grew 76 MiB against 33 MiB this way, for 18 % more CPU (docs/performance.md)."""
    for group in range(pf.num_row_groups):
        yield from pf.iter_batches(batch_size=batch_size, row_groups=[group], columns=columns, use_threads=False)
