"""Atomic writes at any fsspec path: write a temporary name, then rename, or on an object store one upload
(readers never see a partial file); a file wrapper that checksums what is written through it."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixture.store.schema import short_column_options


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


OBJECT_STORES = {"gs", "gcs", "s3", "s3a"}  # an object appears whole when its upload completes, never in part


def is_object_store(fs: fsspec.AbstractFileSystem) -> bool:
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else fs.protocol
    return bool(OBJECT_STORES & set(protocols))


@contextmanager
def open_atomic(fs: fsspec.AbstractFileSystem, path: str, **open_kwargs: Any) -> Iterator[IO[bytes]]:
    """A binary file that becomes `path` (parent folders created) when the block ends without an error: written
    as `path.tmp`, then renamed. On an object store (gs://, s3://) the upload itself is atomic: the object is
    written under its own name and appears when the block ends, and an error discards the upload (a single
    request instead of an upload, a copy, a delete and their listings). `open_kwargs` go to `fs.open` (e.g. an
    object store's content type)."""
    if is_object_store(fs):
        f = fs.open(path, "wb", **open_kwargs)
        try:
            yield f
        except BaseException:
            # an unfinished multipart or resumable upload is cancelled, a buffered one never sent; an upload that
            # cannot be cancelled (some emulators) stays unfinished, which no reader sees: the block's error wins
            with contextlib.suppress(Exception):
                f.discard()
            f.closed = True  # close (or its finaliser) would upload what was written
            raise
        f.close()
        return
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
    (never the whole file in memory), then renamed. Long text columns get neither a dictionary nor statistics
    (`short_column_options`)."""
    fs, path = fsspec.core.url_to_fs(uri)
    with open_atomic(fs, path) as f:
        pq.write_table(table, f, compression=compression, row_group_size=row_group_size,
                       **short_column_options(table.schema))
