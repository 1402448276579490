"""Arrow schemas of the store's Parquet files (docs/store.md) and the drop-reason -> counter map."""

from __future__ import annotations

import pyarrow as pa

DOC_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("text", pa.string()),
        ("source", pa.string()),
        ("category", pa.string()),
        ("origin", pa.string()),
        ("n_tokens", pa.int64()),
        ("n_chars", pa.int64()),
        ("content_type", pa.string()),
        ("raw_score", pa.float64()),
        ("quality_score", pa.float64()),
        ("cluster", pa.int16()),
        ("quality", pa.int8()),
        ("fine_cluster", pa.int32()),
        ("cluster_distance", pa.float32()),
    ]
)
DROPPED_SCHEMA = pa.schema(
    [("id", pa.string()), ("source", pa.string()), ("origin", pa.string()), ("reason", pa.string()),
     ("detail", pa.string()), ("n_chars", pa.int64()), ("text_head", pa.string())]
)
QUARANTINE_SCHEMA = pa.schema(
    [("source", pa.string()), ("file", pa.string()), ("record", pa.int64()), ("reason", pa.string()),
     ("detail", pa.string()), ("raw", pa.string()), ("raw_bytes", pa.int64())]
)
DROP_COUNTER = {
    "filtered": "filtered",
    "exact_duplicate": "exact_duplicate_dropped",
    "fuzzy_duplicate": "fuzzy_duplicate_dropped",
    "contaminated": "contaminated_dropped",
}
