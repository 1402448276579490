"""Explicit Arrow schemas of the files the build writes (datatrove would infer them from one row).

The store's own files use `mixture.store.schema`; WORK is the intermediate file between stages."""

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
        ("raw_score", pa.float64()),
        ("n_chars", pa.int64()),
    ]
)

from mixture.store.schema import DROPPED, QUARANTINE, SAMPLE, store_schema  # noqa: E402,F401
