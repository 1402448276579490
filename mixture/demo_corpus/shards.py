"""Write a source's records as 2-8 deterministic shards: jsonl, jsonl.gz, jsonl.zst or Parquet."""

from __future__ import annotations

import gzip
import io
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from .model import RawLine, Record, Source
from .textutil import dumps_line

MAX_FILES = 8


def _size(r: Record) -> int:
    if isinstance(r, RawLine):
        return len(r.data)
    t = r.get("text")
    return len(t) if isinstance(t, str) else 16


def split(src: Source) -> list[tuple[int, int]]:
    """[start, end) record ranges of each shard, balanced by size: min_files..8 shards, never an empty one."""
    sizes = [_size(r) for r in src.records]
    total = sum(sizes)
    n = max(src.min_files, math.ceil(total / src.bytes_per_file))
    n = max(1, min(n, MAX_FILES, len(sizes)))
    bounds, acc, start = [], 0, 0
    for i, s in enumerate(sizes):
        acc += s
        remaining_shards = n - len(bounds) - 1
        if remaining_shards and (acc >= total * (len(bounds) + 1) / n or len(sizes) - i - 1 == remaining_shards):
            bounds.append((start, i + 1))
            start = i + 1
    bounds.append((start, len(sizes)))
    return bounds


def _row(r: dict, src: Source) -> dict:
    row = {}
    if src.id_field is not None:
        row[src.id_field] = r["id"]
    row[src.text_field] = r["text"]
    row.update({k: v for k, v in r.items() if k not in ("id", "text")})
    return row


def _jsonl_bytes(records: list[Record], src: Source) -> bytes:
    buf = io.BytesIO()
    for r in records:
        buf.write(r.data if isinstance(r, RawLine) else dumps_line(_row(r, src)).encode("utf-8"))
        buf.write(b"\n")
    return buf.getvalue()


def _write_file(path: Path, records: list[Record], src: Source) -> None:
    if src.fmt == "parquet":
        rows = [_row(r, src) for r in records if isinstance(r, dict)]
        table = pa.Table.from_pylist(rows)
        pq.write_table(table, path, compression="zstd", row_group_size=256)
        return
    data = _jsonl_bytes(records, src)
    if src.fmt == "jsonl.gz":
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz:
            gz.write(data)
        data = buf.getvalue()
    elif src.fmt == "jsonl.zst":
        data = zstandard.ZstdCompressor(level=6).compress(data)
    path.write_bytes(data)


def write_source(out: Path, src: Source) -> list[tuple[str, int, int]]:
    """Write `<out>/<name>/part-NNNN.<fmt>`; returns (path relative to out, first record, n records) per shard."""
    folder = out / src.name
    folder.mkdir(parents=True, exist_ok=True)
    shards = []
    for k, (a, b) in enumerate(split(src)):
        relpath = f"{src.name}/part-{k:04d}.{src.fmt}"
        _write_file(out / relpath, src.records[a:b], src)
        shards.append((relpath, a, b - a))
    return shards
