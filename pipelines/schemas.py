"""Explicit Arrow schemas of the files the build writes (datatrove would infer them from one row).

The store's own files use `mixture.store.schema`; WORK is `_build/work/prepared/<task>.parquet`, the documents
that passed cleaning with their fingerprints; DROPS lists the documents dedup removes from them."""

from __future__ import annotations

import pyarrow as pa

WORK = pa.schema(
    [
        ("id", pa.string()),
        ("text", pa.string()),
        ("source", pa.string()),
        ("category", pa.string()),
        ("origin", pa.string()),
        ("exempt", pa.bool_()),
        ("content_type", pa.string()),
        ("code_language", pa.string()),
        ("language", pa.string()),
        ("language_score", pa.float32()),
        ("raw_score", pa.float64()),
        ("n_chars", pa.int64()),
        ("rank", pa.int32()),  # the task that wrote the file, and the row's index in it: the document's address
        ("idx", pa.int64()),
        ("source_order", pa.int32()),  # with origin (`file:record`) the order that decides which duplicate is first
        ("exact_hash", pa.uint64()),  # xxh3-64 of the normalised text
        ("minhash", pa.binary()),  # k little-endian uint64 (one-permutation MinHash); null: exempt or no shingle
    ]
)

# `_build/work/drops.parquet`: documents of the prepared files that a later occurrence check removes
DROPS = pa.schema([("rank", pa.int32()), ("idx", pa.int64()), ("reason", pa.string()), ("detail", pa.string())])

from mixture.store.schema import DROPPED, QUARANTINE, SAMPLE, store_schema  # noqa: E402,F401
