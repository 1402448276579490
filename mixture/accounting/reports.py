"""Token reports: tokens, docs, share and mean tokens/doc by any grouping or pair, the cluster x quality matrix,
and the per-source counts table."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mixture.accounting.parquet_sql import documents_source_sql
from mixture.accounting.reader import StoreReader
from mixture.accounting.tables import cell_table, store_cluster_labels, store_k, store_quality_names
from mixture.composition.labels import label_of
from mixture.spec.amounts import humanize
from mixture.store import layout

GROUPS = ("cell", "cluster", "quality", "source", "content_type", "category", "language")
LEDGER_GROUPS = {"cell", "cluster", "quality"}


def parse_by(by: str | Sequence[str]) -> list[str]:
    """'cluster,quality' -> ['cluster', 'quality']; raises ValueError naming the allowed groupings."""
    keys = [k.strip() for k in (by.split(",") if isinstance(by, str) else by) if k.strip()]
    bad = [k for k in keys if k not in GROUPS]
    if not keys or bad or len(set(keys)) != len(keys):
        raise ValueError(f"--by {by!r}: expected one or two of {', '.join(GROUPS)} separated by a comma, "
                         "e.g. --by cluster,quality")
    return keys


def _finish(df: pd.DataFrame, keys: list[str], reader: StoreReader) -> pd.DataFrame:
    if "cluster" in keys:
        labels = store_cluster_labels(reader)
        df.insert(keys.index("cluster") + 1, "label", [label_of(labels, int(c)).text for c in df["cluster"]])
    if "quality" in keys:
        names = store_quality_names(reader)
        pos = list(df.columns).index("quality") + 1
        df.insert(pos, "quality_name", [names[int(q)] if int(q) < len(names) else f"Q{q}" for q in df["quality"]])
    df["tokens"] = df["tokens"].astype("int64")
    df["docs"] = df["docs"].astype("int64")
    total = int(df["tokens"].sum())
    df["tokens_h"] = [humanize(t) for t in df["tokens"]]
    df["share"] = df["tokens"] / total if total else 0.0
    df["mean_tokens_per_doc"] = (df["tokens"] / df["docs"].where(df["docs"] > 0)).fillna(0.0)
    cols = [c for c in df.columns if c not in ("tokens", "tokens_h", "docs", "share", "mean_tokens_per_doc")]
    return df[[*cols, "tokens", "tokens_h", "docs", "share", "mean_tokens_per_doc"]].reset_index(drop=True)


def report(reader: StoreReader, by: str | Sequence[str] = "cell") -> pd.DataFrame:
    """Tokens, docs, share of tokens and mean tokens/doc grouped by `by` (one or two of GROUPS).

    cell/cluster/quality come from the ledgers (no Parquet scan); source/content_type/category/language scan only
    those columns and `n_tokens` of the finished shards.
    """
    keys = parse_by(by)
    if set(keys) <= LEDGER_GROUPS:
        cells = cell_table(reader)
        df = cells.groupby(keys, sort=True, as_index=False)[["tokens", "docs"]].sum() if keys != ["cell"] else (
            cells[["cell", "tokens", "docs"]].copy())
        return _finish(df, keys, reader)
    sql_keys = [k for k in keys if k != "cell"] + (["cluster", "quality"] if "cell" in keys else [])
    sql_keys = list(dict.fromkeys(sql_keys))
    con = reader.connect_bare()
    cols = ", ".join(sql_keys)
    df = con.execute(f"SELECT {cols}, sum(n_tokens)::BIGINT AS tokens, count(*)::BIGINT AS docs "
                     f"FROM {documents_source_sql(reader)} GROUP BY ALL ORDER BY {cols}").fetchdf()
    if "cell" in keys:
        k = store_k(reader)
        df.insert(0, "cell", [layout.cell_name(int(c), int(q), k) for c, q in zip(df["cluster"], df["quality"],
                                                                                   strict=True)])
        df = df.drop(columns=[c for c in ("cluster", "quality") if c not in keys])
        df = df.sort_values(keys, kind="stable")
    return _finish(df[[*keys, "tokens", "docs"]].copy(), keys, reader)


def matrix(reader: StoreReader, value: str = "tokens") -> pd.DataFrame:
    """Cluster x quality matrix of `value` (tokens, docs or share) from the ledgers: one row per cluster with its
    label, one column per quality name (Q0..), and a total column."""
    cells = cell_table(reader)
    names = store_quality_names(reader)
    col = "share" if value == "share" else value
    wide = cells.pivot_table(index="cluster", columns="quality", values=col, aggfunc="sum", fill_value=0)
    wide = wide.reindex(columns=range(len(names)), fill_value=0)
    wide.columns = [f"Q{q} {names[q]}" for q in wide.columns]
    wide["total"] = wide.sum(axis=1)
    labels = store_cluster_labels(reader)
    wide.insert(0, "label", [label_of(labels, int(c)).text for c in wide.index])
    return wide.reset_index()


def source_counts(reader: StoreReader) -> pd.DataFrame:
    """Per-source table like the public token-count table: name, tokens, tokens_h, category, docs, share, then
    every other field store.json records for the source (license, format, docs_in, drops, …).

    tokens/docs are counted from the finished shards (the `source` and `n_tokens` columns only).
    """
    con = reader.connect_bare()
    counted = con.execute(
        f"SELECT source AS name, any_value(category) AS category, sum(n_tokens)::BIGINT AS tokens, "
        f"count(*)::BIGINT AS docs FROM {documents_source_sql(reader)} GROUP BY source").fetchdf()
    meta = pd.DataFrame([src.model_dump() for src in reader.store_info.sources])
    if meta.empty:
        meta = pd.DataFrame(columns=["name"])
    meta = meta.drop(columns=[c for c in ("docs_kept", "tokens_kept") if c in meta.columns])
    df = meta.merge(counted, on="name", how="outer", suffixes=("", "_parquet"))
    if "category_parquet" in df.columns:
        df["category"] = df["category"].fillna(df["category_parquet"])
        df = df.drop(columns=["category_parquet"])
    df["tokens"] = df["tokens"].fillna(0).astype("int64")
    df["docs"] = df["docs"].fillna(0).astype("int64")
    total = int(df["tokens"].sum())
    df["tokens_h"] = [humanize(t) for t in df["tokens"]]
    df["share"] = df["tokens"] / total if total else 0.0
    first = ["name", "tokens", "tokens_h", "category", "docs", "share"]
    df = df[first + [c for c in df.columns if c not in first]]
    return df.sort_values(["tokens", "name"], ascending=[False, True]).reset_index(drop=True)
