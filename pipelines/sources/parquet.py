"""Reads a Parquet file (`parquet`, and the files of `hf`): every row becomes a Document or a quarantine record."""

from __future__ import annotations

import json

import fsspec
from datatrove.data import DocumentsPipeline

from mixture.pipelines.sources.jsonl import read_jsonl
from mixture.pipelines.sources.records import (
    SourceFiles,
    bad_record,
    broken_file,
    lost_after_break,
    to_document,
)
from mixture.store.row_groups import row_group_batches


def read_parquet(src: SourceFiles, rel: str) -> DocumentsPipeline:
    """The rows of a Parquet file, batch by batch; a file without the text column quarantines every row."""
    path = f"{src.base}/{rel}"
    import pyarrow.parquet as pq

    idx, rows = 0, None
    try:
        with fsspec.open(path, "rb") as f:
            pf = pq.ParquetFile(f)
            rows = pf.metadata.num_rows
            names = pf.schema_arrow.names
            if pf.metadata.num_rows == 0:
                yield bad_record(src, rel, 0, "empty_file", "the file holds no rows", b"")
                return
            if src.text_field not in names:
                # another schema: every row is quarantined (with its values) and the build goes on
                detail = f"file has no column {src.text_field!r} (columns: {names[:10]}); set text_field"
                for batch in row_group_batches(pf, 128):
                    for rec in batch.to_pylist():
                        yield bad_record(src, rel, idx, "missing_text", detail,
                                         lambda rec=rec: json.dumps(rec, default=str))
                        idx += 1
                return
            cols = [c for c in (src.text_field, src.id_field) if c and c in names]
            for batch in row_group_batches(pf, 128, cols):
                for rec in batch.to_pylist():
                    yield to_document(src, rel, idx, rec, lambda rec=rec: json.dumps(rec, default=str))
                    idx += 1
    except Exception as exc:  # noqa: BLE001 - not Parquet, permission, unreachable: name the file, go on
        if rows is None:  # no footer: nothing tells how many rows the file holds
            yield broken_file(src, rel, idx, "unreadable_file", exc, *lost_after_break(idx, None, None, []))
        else:
            yield broken_file(src, rel, idx, "unreadable_file", exc, max(0, rows - idx),
                              f"exact: {rows:,} rows in its Parquet footer")


def read_parquet_or_jsonl(src: SourceFiles, rel: str) -> DocumentsPipeline:
    """A file of a Hugging Face dataset's folder: Parquet or JSON Lines, by its name."""
    yield from (read_parquet if rel.endswith(".parquet") else read_jsonl)(src, rel)
