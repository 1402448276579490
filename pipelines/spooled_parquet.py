"""A Parquet file written when it is closed: its batches wait in a local Arrow IPC stream, so a task that keeps many
files open (an `assign` task: a file per cell) holds no row group metadata for them and writes large row groups."""

from __future__ import annotations

import os
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_BYTES = 8 << 20  # uncompressed bytes of a row group written at close (at least one batch)


class SpooledParquet:
    """pyarrow's ParquetWriter as the build's writers use it (`write_batch`, `close`), for a file written at close.

    pyarrow keeps ~18 KiB of metadata per row group of an open file until it is closed (bench/rowgroup_memory_bench.py):
    200 open cell files, each written a few dozen documents at a time, would hold ~1.5 GiB at the pool's ~4M documents
    a task. Here the batches go to a local LZ4-compressed IPC stream in `folder` (a stream keeps nothing per batch),
    and `close` writes them to `sink` regrouped into row groups of ROW_GROUP_BYTES, one row group in memory at a
    time. `spooled_bytes` is the stream's size so far (what a writer that rotates files by size can go by)."""

    def __init__(self, sink, schema: pa.Schema, folder: str, **parquet_options):
        self.sink, self.schema, self.options = sink, schema, parquet_options
        fd, self.path = tempfile.mkstemp(prefix="spool-", suffix=".arrows", dir=folder)
        os.close(fd)
        self._file = pa.OSFile(self.path, "wb")
        self._stream = pa.ipc.new_stream(self._file, schema, options=pa.ipc.IpcWriteOptions(compression="lz4"))
        self.spooled_bytes = self._file.tell()  # asked before every row a writer adds (it rotates files by size)
        self.closed = False

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self._stream.write_batch(batch)
        self.spooled_bytes = self._file.tell()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._stream.close()
        self._file.close()
        try:
            with pa.OSFile(self.path, "rb") as f, pq.ParquetWriter(self.sink, self.schema, **self.options) as out:
                held: list[pa.RecordBatch] = []
                size = 0
                for batch in pa.ipc.open_stream(f):
                    held.append(batch)
                    size += batch.nbytes
                    if size >= ROW_GROUP_BYTES:
                        out.write_table(pa.Table.from_batches(held), row_group_size=sum(b.num_rows for b in held))
                        held, size = [], 0
                if held:
                    out.write_table(pa.Table.from_batches(held), row_group_size=sum(b.num_rows for b in held))
        finally:
            os.remove(self.path)
