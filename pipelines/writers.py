"""ParquetWriters with explicit schemas and adapters for work files, drops, quarantine and the store's cells."""

from __future__ import annotations

import operator
import tempfile

from datatrove.data import Document
from datatrove.pipeline.writers.parquet import ParquetWriter

from mixture.pipelines import schemas
from mixture.pipelines.runtime.datatrove_compat import ParquetWriterBase
from mixture.pipelines.runtime.scratch import scratch_root
from mixture.pipelines.spooled_parquet import HeldBytes, SpooledParquet
from mixture.stages.files import RANK, TaskFile
from mixture.stages.registry import DROPPED, PREPARED, QUARANTINED
from mixture.store.io import DigestingFile
from mixture.store.schema import LONG_TEXT, short_column_options

TEXT_HEAD = 500
STORE_BATCH = 128  # documents buffered per open output file (datatrove's default 1000 lets big documents pile up)
# the prepared file's row groups: one file open per task, and pyarrow holds ~18 KiB of every row group's metadata
# until the file closes (bench/rowgroup_memory_bench.py): ~31k groups of 128 at the pool's ~4M documents a task,
# 0.55 GiB, against ~71 MiB in groups of 1,024 (BUFFER_CHARS still bounds the text a batch holds)
PREPARED_BATCH = 1024
BUFFER_CHARS = 8 * 2**20  # text buffered over all open files of a writer; above it the largest batches are written


BULKY = LONG_TEXT | {"input_ids"}  # columns worth the spec's codec; the small ones get snappy


def column_codecs(schema, codec: str | None) -> str | dict[str, str] | None:
    """The codec for the bulky columns, snappy for the small ones: a zstd context per column chunk cost
    0.7 ms per shard of the demo store (1.28 s → 0.82 s for its 700 shards) for the same bytes (34.5 vs 34.3 MB)."""
    if codec in (None, "none", "snappy"):
        return None if codec == "none" else codec
    return {f.name: codec if f.name in BULKY else "snappy" for f in schema}


class BoundedParquetWriter(ParquetWriterBase):
    """datatrove's ParquetWriter (through ParquetWriterBase: file names filled once per file, stats counted per
    file) with a bound on the text buffered across all its open files (an assign task keeps one file open per
    cell, 200 in the reference partition, and 200 batches of STORE_BATCH documents would grow with the input until
    every batch is full), without dictionary encoding or min/max statistics for long text columns (measured on the
    demo store: 2.6× faster to write, 22 % smaller), the spec's codec for bulky columns only (`column_codecs`),
    batches built column by column (3× faster than row by row), and, with `measure`, the facts of every file it
    wrote (`facts`: rows, tokens, bytes, xxh64 by path)."""

    def __init__(self, *args, measure: bool = False, spool: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.spool = spool  # files written at close from a local spool (SpooledParquet): no metadata held while open
        self._spool_dir: tempfile.TemporaryDirectory | None = None
        self._held = HeldBytes()  # the batches its spooled files hold in memory, all files together
        self._chars: dict[str, int] = {}  # characters of text in each open file's pending batch
        self._pending = 0  # their sum
        self.measure = measure
        self._open: dict[str, tuple[DigestingFile, list[int]]] = {}  # file, [rows, tokens]
        self.facts: dict[str, dict] = {}
        self._row = operator.itemgetter(*self.schema.names)  # an adapted row's values in schema order (≥ 2 columns)
        self._long = tuple(c for c in self.schema.names if c in LONG_TEXT)  # the columns the text budget counts

    def open_parquet(self, name: str, file_handler):
        import pyarrow.parquet as pq

        sink = file_handler
        if self.measure:
            sink = DigestingFile(file_handler)
            self._open[name] = (sink, [0, 0])
        options = {"compression": column_codecs(self.schema, self.compression), **short_column_options(self.schema),
                   "use_content_defined_chunking": self.use_content_defined_chunking,
                   "write_page_index": self.write_page_index}
        if self.spool:
            if self._spool_dir is None:
                self._spool_dir = tempfile.TemporaryDirectory(prefix="spool-", dir=scratch_root())
            return SpooledParquet(sink, self.schema, self._spool_dir.name, self._held, **options)
        return pq.ParquetWriter(sink, schema=self.schema, **options)

    def file_bytes(self, name: str) -> int:
        """A spooled file's size is what its batches take while they wait: Arrow bytes in memory, LZ4 once spooled
        (the zstd Parquet written at close is smaller)."""
        if self.spool:
            writer = self._writers.get(name)
            return writer.spooled_bytes if writer is not None else 0
        return super().file_bytes(name)

    def close(self) -> None:
        if self.spool:  # every pending batch to its spool first: the rows are let go before the files are written
            for name in list(self._batches):
                self.flush(name)
        try:
            super().close()
        finally:
            if self._spool_dir is not None:
                self._spool_dir.cleanup()
                self._spool_dir = None

    def row_buffered(self, name: str, row: dict) -> None:
        if self.measure:
            counts = self._open[name][1]
            counts[0] += 1
            counts[1] += row.get("n_tokens") or 0
        size = sum(len(row.get(c) or "") for c in self._long)
        self._chars[name] = self._chars.get(name, 0) + size
        self._pending += size

    def rows_buffered(self) -> None:
        if self._pending > BUFFER_CHARS:  # write the largest batches until half the budget is left
            for big in sorted(self._chars, key=self._chars.get, reverse=True):
                self.flush(big)
                if self._pending <= BUFFER_CHARS // 2:
                    break

    def batch_flushed(self, name: str) -> None:
        self._pending -= self._chars.pop(name, 0)

    def record_batch(self, rows: list[dict]):
        import pyarrow as pa

        values = zip(*map(self._row, rows), strict=True)  # every schema here has several columns
        columns = [pa.array(v, type=f.type) for v, f in zip(values, self.schema, strict=True)]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def file_closed(self, name: str) -> None:
        if name in self._open:  # the footer is written: the file is complete
            sink, (rows, tokens) = self._open.pop(name)
            self.facts[name] = {"rows": rows, "tokens": tokens, "bytes": sink.size, "xxh64": sink.digest.hexdigest()}


def _work_row(self, doc: Document) -> dict:
    m = doc.metadata
    self.rows += 1
    return {
        "id": doc.id,
        "text": doc.text,
        "source": m["source"],
        "category": m.get("category"),
        "origin": m.get("origin"),
        "exempt": bool(m.get("exempt", False)),
        "content_type": m.get("content_type"),
        "code_language": m.get("code_language", ""),
        "language": m.get("language"),
        "language_score": m.get("language_score"),
        "raw_score": m.get("raw_score"),
        "n_chars": len(doc.text),
        "rank": self.current_rank,
        "idx": self.rows - 1,
        "source_order": m.get("source_order", 0),
        "exact_hash": m.get("exact_hash"),
        "minhash": m.get("minhash"),
    }


def _drop_row(self, doc: Document) -> dict:
    m = doc.metadata
    return {
        "id": doc.id,
        "source": m.get("source"),
        "origin": m.get("origin"),
        "reason": self.drop_reason,
        "detail": m.get("drop_detail") or m.get("filter_reason"),
        "n_chars": len(doc.text),
        "text_head": doc.text[:TEXT_HEAD],
    }


def _quarantine_row(self, doc: Document) -> dict:
    m = doc.metadata
    return {
        "source": m["source"],
        "file": m["_file"],
        "record": m["_record"],
        "reason": m["_bad"],
        "detail": m["_detail"],
        "raw": m["_raw"],
        "raw_bytes": m["_raw_bytes"],
    }


def _store_row(self, doc: Document) -> dict:
    m = doc.metadata
    row = {
        "id": doc.id,
        "text": doc.text,
        "source": m["source"],
        "category": m.get("category"),
        "origin": m.get("origin"),
        "n_tokens": m["n_tokens"],
        "n_chars": len(doc.text),
        "content_type": m["content_type"],
        "code_language": m.get("code_language", ""),
        "language": m["language"],
        "language_score": m["language_score"],
        "raw_score": m["raw_score"],
        "quality_score": m["quality_score"],
        "cluster": m["cluster"],
        "quality": m["quality"],
        "fine_cluster": m["fine_cluster"],
        "cluster_distance": m["cluster_distance"],
    }
    if "input_ids" in m:
        row["input_ids"] = m["input_ids"]
    return row


class WorkWriter(BoundedParquetWriter):
    """The prepared documents (PREPARED); each row records its task and its index in the file."""

    current_rank, rows = 0, 0

    def run(self, data, rank: int = 0, world_size: int = 1):
        self.current_rank, self.rows = rank, 0
        return super().run(data, rank, world_size)


def _target(store: str, file: TaskFile) -> tuple[str, str]:
    """datatrove's output folder and file name (`${rank}`: the task) of a stage's files in `store`."""
    return f"{store}/{file.folder}", file.name.replace(RANK, "${rank}")


def work_writer(store: str) -> ParquetWriter:
    return WorkWriter(
        *_target(store, PREPARED), adapter=_work_row, schema=schemas.WORK, max_file_size=-1, compression="zstd",
        use_content_defined_chunking=False, write_page_index=False, batch_size=PREPARED_BATCH,
    )


def drop_writer(store: str, reason: str) -> ParquetWriter:
    w = BoundedParquetWriter(
        *_target(store, DROPPED[reason]), adapter=_drop_row, schema=schemas.DROPPED, max_file_size=-1,
        compression="zstd", use_content_defined_chunking=False, write_page_index=False,
    )
    w.drop_reason = reason
    return w


def quarantine_writer(store: str, file: TaskFile = QUARANTINED) -> ParquetWriter:
    return BoundedParquetWriter(
        *_target(store, file), adapter=_quarantine_row, schema=schemas.QUARANTINE, max_file_size=-1,
        compression="zstd", use_content_defined_chunking=False, write_page_index=False,
    )


def store_writer(store: str, keep_token_ids: bool, shard_bytes: int, compression: str) -> ParquetWriter:
    return BoundedParquetWriter(
        store,
        "cluster=${cluster_dir}/quality=${quality}/part-${rank}.parquet",
        adapter=_store_row,
        schema=schemas.store_schema(keep_token_ids),
        max_file_size=shard_bytes,
        compression=None if compression == "none" else compression,
        # one open file per cell and task: a small batch bounds the task's buffered documents (200 cells × batch);
        # spooled, so the open files hold no row group metadata and are written in large row groups at close
        batch_size=STORE_BATCH,
        measure=True,
        spool=True,
    )
