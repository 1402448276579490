"""Languages of a store's kept documents: tokens and documents per language, overall, per cluster or per quality
bucket, with each language's share of its group's tokens; and the quality calibration of each (content type,
language) group."""

from __future__ import annotations

from typing import Literal

import pandas as pd

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


def language_mix(reader: StoreReader, by: By = None) -> pd.DataFrame:
    """[cluster | quality], language, docs, tokens, share (of the group's tokens), most tokens first in each group,
    from store.json's `language` block (no Parquet read)."""
    cols = ([by] if by else []) + COLUMNS
    block = reader.store_info.language
    rows = {None: block.languages, "cluster": block.by_cluster, "quality": block.by_quality}[by]
    df = pd.DataFrame([r.model_dump() for r in rows], columns=cols[:-1])
    return _with_share(df, by)[cols]


def calibration_groups(reader: StoreReader) -> pd.DataFrame:
    """One row per (content type, language) group of the fit sample: group, content_type, language, sample_docs,
    fallback (true: too few sample documents for an empirical map of its own), map (own, shape: its own median and
    spread with a pooled shape, content_type: its type's map), raw_cutoffs."""
    cols = ["group", "content_type", "language", "sample_docs", "fallback", "map", "raw_cutoffs"]
    return pd.DataFrame([g.model_dump() for g in reader.store_info.language.calibration_groups], columns=cols)
