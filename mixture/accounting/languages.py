"""Languages of a store's kept documents: tokens and documents per language, overall, per cluster or per quality
bucket, with each language's share of its group's tokens; and the quality calibration of each (content type,
language) group."""

from __future__ import annotations

from typing import Literal

import duckdb
import pandas as pd

from mixture.accounting.parquet_sql import documents_source_sql
from mixture.accounting.reader import StoreReader

By = Literal["cluster", "quality"] | None
COLUMNS = ["language", "docs", "tokens", "share"]


def _with_share(df: pd.DataFrame, key: str | None) -> pd.DataFrame:
    df = df.astype({"docs": "int64", "tokens": "int64"})
    total = df.groupby(key).tokens.transform("sum") if key else df.tokens.sum()
    df["share"] = (df.tokens / total).where(total > 0, 0.0) if key else (df.tokens / total if total else 0.0)
    order = ([key] if key else []) + ["tokens", "language"]
    asc = ([True] if key else []) + [False, True]
    return df.sort_values(order, ascending=asc, kind="stable").reset_index(drop=True)


def language_mix(reader: StoreReader, by: By = None, scan: bool = True) -> pd.DataFrame:
    """[cluster | quality], language, docs, tokens, share (of the group's tokens), most tokens first in each group.

    From store.json's `language` block (no Parquet read); a store without it is counted from the shards'
    `language` and `n_tokens` columns when `scan`, and one built before language identification (or without
    `scan`) gives an empty frame."""
    cols = ([by] if by else []) + COLUMNS
    block = reader.store_info.language
    if block is not None:
        rows = {None: block.languages, "cluster": block.by_cluster, "quality": block.by_quality}[by]
        df = pd.DataFrame([r.model_dump() for r in rows], columns=cols[:-1])
        return _with_share(df, by)[cols]
    if not scan:
        return pd.DataFrame(columns=cols)
    keys = ", ".join(([by] if by else []) + ["language"])
    try:
        df = reader.connect_bare().execute(
            f"SELECT {keys}, count(*)::BIGINT AS docs, sum(n_tokens)::BIGINT AS tokens "
            f"FROM {documents_source_sql(reader)} GROUP BY ALL").fetchdf()
    except duckdb.BinderException:  # no `language` column: a store built before language identification
        return pd.DataFrame(columns=cols)
    return _with_share(df, by)[cols]


def calibration_groups(reader: StoreReader) -> pd.DataFrame:
    """One row per (content type, language) group of the fit sample: group, content_type, language, sample_docs,
    fallback (true: too few sample documents, calibrated with its content type's map), raw_cutoffs."""
    block = reader.store_info.language
    cols = ["group", "content_type", "language", "sample_docs", "fallback", "raw_cutoffs"]
    if block is None:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame([g.model_dump() for g in block.calibration_groups], columns=cols)
