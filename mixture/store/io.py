"""Atomic writes at any fsspec path: write a temporary name, then rename (readers never see a partial file); a
file wrapper that checksums what is written through it."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash


class DigestingFile:
    """A write-only file that passes bytes on to another and keeps their count and xxh64 (a shard's checksum
    without reading it back)."""

    def __init__(self, raw):
        self.raw, self.size, self.digest = raw, 0, xxhash.xxh64()
        self.closed = False

    def write(self, data) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.raw.flush()

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True  # the writer that opened `raw` closes it


@contextmanager
def open_atomic(fs: fsspec.AbstractFileSystem, path: str, **open_kwargs: Any) -> Iterator[IO[bytes]]:
    """A binary file that becomes `path` (parent folders created) when the block ends without an error: written
    as `path.tmp`, then renamed. `open_kwargs` go to `fs.open` (e.g. an object store's content type)."""
    if "/" in path:
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    tmp = path + ".tmp"
    with fs.open(tmp, "wb", **open_kwargs) as f:
        yield f
    fs.mv(tmp, path)


def write_atomic(fs: fsspec.AbstractFileSystem, path: str, data: bytes | str, **open_kwargs: Any) -> None:
    """Write `data` to `path` (parent folders created) through `path.tmp` and a rename."""
    with open_atomic(fs, path, **open_kwargs) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_json_atomic(fs: fsspec.AbstractFileSystem, path: str, obj: Any, indent: int | None = 1) -> None:
    write_atomic(fs, path, json.dumps(obj, indent=indent))


def parquet_bytes(table: pa.Table, compression: str | None = "zstd") -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression=compression)
    return sink.getvalue()


def write_parquet_atomic(uri: str, table: pa.Table, compression: str | None = "zstd",
                         row_group_size: int | None = None) -> None:
    """Write an Arrow table to a Parquet file at `uri` (any fsspec URI), atomically: streamed into `path.tmp`
    (never the whole file in memory), then renamed."""
    fs, path = fsspec.core.url_to_fs(uri)
    with open_atomic(fs, path) as f:
        pq.write_table(table, f, compression=compression, row_group_size=row_group_size)
