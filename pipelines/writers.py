"""ParquetWriters with explicit schemas and adapters for work files, drops, quarantine and the store's cells."""

from __future__ import annotations

import pyarrow as pa
from datatrove.data import Document
from datatrove.pipeline.writers.parquet import ParquetWriter

from pipelines import schemas

TEXT_HEAD = 500
STORE_BATCH = 128  # documents buffered per open output file (datatrove's default 1000 lets big documents pile up)

# `_build/work/ids/<rank>.parquet`: every document that reaches the work files, for the duplicate-id check
IDS = pa.schema([("id", pa.string()), ("source", pa.string()), ("source_order", pa.int32()), ("file", pa.string()),
                 ("record", pa.int64()), ("rank", pa.int32())])


def _work_row(self, doc: Document) -> dict:
    m = doc.metadata
    return {
        "id": doc.id,
        "text": doc.text,
        "source": m["source"],
        "category": m.get("category"),
        "origin": m.get("origin"),
        "exempt": bool(m.get("exempt", False)),
        "content_type": m.get("content_type"),
        "raw_score": m.get("raw_score"),
        "n_chars": len(doc.text),
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


def _ids_row(self, doc: Document) -> dict:
    m = doc.metadata
    file, _, record = m["origin"].rpartition(":")
    return {"id": doc.id, "source": m["source"], "source_order": m.get("source_order", 0), "file": file,
            "record": int(record), "rank": self.current_rank}


class IdsWriter(ParquetWriter):
    """Writes (id, source, source order, file, record, task) of every document passing through."""

    current_rank = 0

    def write(self, document: Document, rank: int = 0, **kwargs):
        self.current_rank = rank
        return super().write(document, rank, **kwargs)


def ids_writer(folder: str) -> ParquetWriter:
    return IdsWriter(
        folder, "${rank}.parquet", adapter=_ids_row, schema=IDS, max_file_size=-1, compression="zstd",
        use_content_defined_chunking=False, write_page_index=False,
    )


def work_writer(folder: str, filename: str = "${rank}.parquet") -> ParquetWriter:
    return ParquetWriter(
        folder, filename, adapter=_work_row, schema=schemas.WORK, max_file_size=-1, compression="zstd",
        use_content_defined_chunking=False, write_page_index=False, batch_size=STORE_BATCH,
    )


def drop_writer(folder: str, reason: str) -> ParquetWriter:
    w = ParquetWriter(
        folder, "part-${rank}.parquet", adapter=_drop_row, schema=schemas.DROPPED, max_file_size=-1,
        compression="zstd", use_content_defined_chunking=False, write_page_index=False,
    )
    w.drop_reason = reason
    return w


def quarantine_writer(folder: str, filename: str = "part-${rank}.parquet") -> ParquetWriter:
    return ParquetWriter(
        folder, filename, adapter=_quarantine_row, schema=schemas.QUARANTINE, max_file_size=-1,
        compression="zstd", use_content_defined_chunking=False, write_page_index=False,
    )


def store_writer(store: str, keep_token_ids: bool, shard_bytes: int, compression: str) -> ParquetWriter:
    return ParquetWriter(
        store,
        "cluster=${cluster_dir}/quality=${quality}/part-${rank}.parquet",
        adapter=_store_row,
        schema=schemas.store_schema(keep_token_ids),
        max_file_size=shard_bytes,
        compression=None if compression == "none" else compression,
        # one open file per cell and task: a small batch bounds the task's buffered documents (200 cells × batch)
        batch_size=STORE_BATCH,
    )
