"""The sampled documents of a store: `_samples/uniform.parquet` and `_samples/exemplars.parquet`."""

from __future__ import annotations

import io
from typing import Literal

import pandas as pd
import pyarrow.parquet as pq

from mixture.accounting.reader import StoreNotReady, StoreReader
from mixture.store import layout
from mixture.store.formats import FormatError

SampleKind = Literal["uniform", "exemplars"]
SAMPLE_COLUMNS = ["id", "text", "source", "category", "origin", "n_tokens", "n_chars", "content_type",
                  "code_language", "language", "language_score", "raw_score", "quality_score", "cluster", "quality", "fine_cluster", "cluster_distance", "rank"]
DEFAULT_PATHS = {"uniform": layout.UNIFORM_SAMPLES, "exemplars": layout.EXEMPLAR_SAMPLES}


def sample_path(reader: StoreReader, kind: SampleKind) -> str:
    """Store-relative path of a sample: store.json `samples.<kind>`; the default `_samples/<kind>.parquet` while the
    store builds or when its store.json does not match its format (`mixture audit` reports it)."""
    try:
        return getattr(reader.store_info.samples, kind)
    except (StoreNotReady, FormatError):
        return DEFAULT_PATHS[kind]


def samples(reader: StoreReader, kind: SampleKind = "uniform") -> pd.DataFrame:
    """The documents of one sample sorted by cluster, quality and rank (without `input_ids`); a store without
    the file gives an empty frame with SAMPLE_COLUMNS."""
    rel = sample_path(reader, kind)
    if not reader.exists(rel):
        return pd.DataFrame(columns=SAMPLE_COLUMNS)
    with reader.fs.open(reader.path(rel), "rb") as f:
        df = pq.read_table(io.BytesIO(f.read())).to_pandas()
    if "input_ids" in df:
        df = df.drop(columns="input_ids")
    df = df.astype({"cluster": "int64", "quality": "int64"})
    return df.sort_values(["cluster", "quality", "rank"], kind="stable").reset_index(drop=True)


def recorded_samples(reader: StoreReader, kind: SampleKind = "uniform") -> int:
    """Documents store.json records in a sample: min(per cell, docs) over the cells."""
    art = reader.store_info
    per_cell = art.samples.per_cell if kind == "uniform" else art.samples.exemplars_per_cell
    return sum(min(per_cell, c.docs) for c in art.cells)


def sample_shortfall(reader: StoreReader, rows: int, kind: SampleKind = "uniform") -> str | None:
    """Why `rows` documents read from a finished store's sample are not what its store.json records (a file deleted
    or cut after the build), or None."""
    want = recorded_samples(reader, kind)
    if rows == want:
        return None
    rel = sample_path(reader, kind)
    got = "missing" if not reader.exists(rel) else f"{rows:,} documents"
    return (f"{reader.uri.rstrip('/')}/{rel}: {got}, though store.json records {want:,} sampled documents in it. "
            f"Run `mixture audit {reader.uri}` and restore the file or rebuild the store.")
