"""A Parquet file written when it is closed: its batches wait in memory (within a budget its writer's files share)
or in a local Arrow IPC stream, so a task that keeps many files open (an `assign` task: a file per cell) holds no
row group metadata for them and writes large row groups."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP_BYTES = 8 << 20  # uncompressed bytes of a row group written at close (at least one batch)
HELD_BYTES = 8 << 20  # batches the files of one writer hold in memory before a file goes to its local spool
# (32 MiB: 2.6 % less CPU on a 1-worker demo build, but assign's peak 1.28x at 100x its input against 1.20x)


class HeldBytes:
    """What the open files of one writer hold in memory, against `limit`."""

    def __init__(self, limit: int | None = None):
        self.limit, self.used = HELD_BYTES if limit is None else limit, 0


class SpooledParquet:
    """pyarrow's ParquetWriter as the build's writers use it (`write_batch`, `close`), for a file written at close.

    pyarrow keeps ~18 KiB of metadata per row group of an open file until it is closed (bench/rowgroup_memory_bench.py):
    200 open cell files, each written a few dozen documents at a time, would hold ~1.5 GiB at the pool's ~4M documents
    a task. Here the batches are held in memory while the writer's files hold under `held.limit` bytes in all; the
    file whose batch would pass it moves to a local LZ4-compressed IPC stream in `folder` (a stream keeps nothing per
    batch) and so does every later batch of it. `close` writes the batches to `sink` regrouped into row groups of
    ROW_GROUP_BYTES, one row group in memory at a time: the same file whichever way its batches waited. A small file
    never touches the disk (compressing and reading back a spool cost ~2.5 ms a demo cell file, as much as writing
    it). `spooled_bytes`: the batches' size so far, compressed once spooled (what a writer that rotates files by size
    goes by)."""

    def __init__(self, sink, schema: pa.Schema, folder: str, held: HeldBytes | None = None, **parquet_options):
        self.sink, self.schema, self.folder, self.options = sink, schema, folder, parquet_options
        self.held = held if held is not None else HeldBytes()
        self._batches: list[pa.RecordBatch] = []  # in memory until the file is spooled
        self._bytes = 0  # of those batches, counted in `held`
        self.path: str | None = None  # the spool, once there is one
        self.spooled_bytes = 0
        self.closed = False

    def write_batch(self, batch: pa.RecordBatch) -> None:
        if self.path is None and self.held.used + batch.nbytes <= self.held.limit:
            self._batches.append(batch)
            self._bytes += batch.nbytes
            self.held.used += batch.nbytes
            self.spooled_bytes = self._bytes
            return
        if self.path is None:
            self._spool()
        self._stream.write_batch(batch)
        self.spooled_bytes = self._file.tell()

    def _spool(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="spool-", suffix=".arrows", dir=self.folder)
        os.close(fd)
        self._file = pa.OSFile(self.path, "wb")
        self._stream = pa.ipc.new_stream(self._file, self.schema, options=pa.ipc.IpcWriteOptions(compression="lz4"))
        for batch in self._batches:
            self._stream.write_batch(batch)
        self._release()

    def _release(self) -> None:
        self.held.used -= self._bytes
        self._batches, self._bytes = [], 0

    def _waiting(self) -> Iterator[pa.RecordBatch]:
        """The file's batches in the order they were written, from memory or from its spool."""
        if self.path is None:
            batches, self._batches = self._batches, []
            yield from batches
            return
        self._stream.close()
        self._file.close()
        with pa.OSFile(self.path, "rb") as f:
            yield from pa.ipc.open_stream(f)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            with pq.ParquetWriter(self.sink, self.schema, **self.options) as out:
                group: list[pa.RecordBatch] = []
                size = 0
                for batch in self._waiting():
                    group.append(batch)
                    size += batch.nbytes
                    if size >= ROW_GROUP_BYTES:
                        out.write_table(pa.Table.from_batches(group), row_group_size=sum(b.num_rows for b in group))
                        group, size = [], 0
                if group:
                    out.write_table(pa.Table.from_batches(group), row_group_size=sum(b.num_rows for b in group))
        finally:
            self._release()
            if self.path is not None:
                os.remove(self.path)
