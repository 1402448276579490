"""Cached reads of a store through the accounting layer: store.json, samples, side files, footers, scans.

Everything the overview needs comes from small artifacts (store.json and `_samples/`); the full-store
scans below run only when a user asks for them, with a progress callback.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import streamlit as st

from mixture.accounting import StoreNotReady, StoreReader
from mixture.store import layout

__all__ = ["StoreNotReady", "artifact", "dropped", "examples_by_cell", "quarantine", "reader", "samples",
           "scan_documents", "source_mix", "store_state", "content_type_mix", "centroids", "lookup_id",
           "sample_vectors"]

SAMPLE_COLUMNS = ["id", "text", "source", "category", "origin", "n_tokens", "n_chars", "content_type",
                  "raw_score", "quality_score", "cluster", "quality", "fine_cluster", "cluster_distance", "rank"]


@st.cache_resource(show_spinner=False)
def reader(uri: str) -> StoreReader:
    return StoreReader(uri)


@st.cache_data(ttl=5, show_spinner=False)
def store_state(uri: str) -> tuple[str, str]:
    """('complete' | 'building' | 'missing', stamp). The stamp changes when store.json is rewritten."""
    r = reader(uri)
    if not r.fs.exists(r.root):
        return "missing", ""
    if not r.is_complete:
        return "building", ""
    info = r.fs.info(r.path(layout.STORE_JSON))
    return "complete", f"{info.get('size')}:{info.get('mtime') or info.get('updated') or info.get('LastModified')}"


@st.cache_data(show_spinner=False, max_entries=16)
def _artifact(uri: str, stamp: str) -> dict:
    return StoreReader(uri).artifact


def artifact(uri: str) -> dict:
    """store.json of a complete store; raises StoreNotReady while it is building."""
    state, stamp = store_state(uri)
    if state != "complete":
        raise StoreNotReady(f"{uri}: no {layout.STORE_JSON} ({state})")
    return _artifact(uri, stamp)


def _read_parquet(uri: str, rel: str, columns: list[str] | None = None) -> pa.Table | None:
    r = reader(uri)
    if not r.exists(rel):
        return None
    with r.fs.open(r.path(rel), "rb") as f:
        return pq.read_table(io.BytesIO(f.read()), columns=columns)


@st.cache_data(show_spinner=False, max_entries=16)
def _samples(uri: str, kind: str, stamp: str) -> pd.DataFrame:
    art = artifact(uri)
    rel = (art.get("samples") or {}).get(kind) or (
        layout.UNIFORM_SAMPLES if kind == "uniform" else layout.EXEMPLAR_SAMPLES)
    table = _read_parquet(uri, rel)
    if table is None:
        return pd.DataFrame(columns=SAMPLE_COLUMNS)
    df = table.to_pandas()
    if "input_ids" in df:
        df = df.drop(columns="input_ids")
    if "rank" not in df:
        df["rank"] = df.groupby(["cluster", "quality"]).cumcount()
    df = df.astype({"cluster": "int64", "quality": "int64"})
    return df.sort_values(["cluster", "quality", "rank"], kind="stable").reset_index(drop=True)


def samples(uri: str, kind: str = "uniform") -> pd.DataFrame:
    """The `_samples/<kind>.parquet` documents ('uniform' or 'exemplars'), sorted by cell and rank."""
    return _samples(uri, kind, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def _examples(uri: str, kind: str, per_cell: int, stamp: str) -> dict[tuple[int, int], list[dict]]:
    df = samples(uri, kind)
    out: dict[tuple[int, int], list[dict]] = {}
    for (c, q), g in df.groupby(["cluster", "quality"], sort=False):
        out[(int(c), int(q))] = g.head(per_cell).to_dict("records")
    return out


def examples_by_cell(uri: str, kind: str = "uniform", per_cell: int = 2) -> dict[tuple[int, int], list[dict]]:
    """Example documents per (cluster, quality): the first `per_cell` by rank of the chosen sample."""
    return _examples(uri, kind, per_cell, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def _sample_text(uri: str, stamp: str) -> dict[int, str]:
    df = samples(uri, "uniform")
    return {int(c): " ".join(g.text.str.slice(0, 2000)) for c, g in df.groupby("cluster")}


def sample_text_by_cluster(uri: str) -> dict[int, str]:
    """Concatenated sampled text per cluster, for the domain index search."""
    return _sample_text(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def _source_mix(uri: str, stamp: str) -> pd.DataFrame:
    art = artifact(uri)
    rows = []
    for c in art["cells"]:
        by_source = c.get("sources") or c.get("by_source")
        if isinstance(by_source, dict):
            for name, v in by_source.items():
                tokens = v.get("tokens") if isinstance(v, dict) else v
                docs = v.get("docs") if isinstance(v, dict) else None
                rows.append({"cluster": int(c["cluster"]), "quality": int(c["quality"]), "source": name,
                             "tokens": float(tokens or 0), "docs": docs})
    if rows:
        df = pd.DataFrame(rows)
        df["estimated"] = False
    else:  # store.json has no per-cell sources: estimate from the uniform sample, token-weighted
        s = samples(uri, "uniform")
        if s.empty:
            return pd.DataFrame(columns=["cluster", "quality", "source", "tokens", "docs", "share", "estimated"])
        df = s.groupby(["cluster", "quality", "source"]).agg(tokens=("n_tokens", "sum"),
                                                              docs=("id", "count")).reset_index()
        df["estimated"] = True
    df["share"] = df.tokens / df.groupby(["cluster", "quality"]).tokens.transform("sum")
    return df.sort_values(["cluster", "quality", "share"], ascending=[True, True, False]).reset_index(drop=True)


def source_mix(uri: str) -> pd.DataFrame:
    """Source composition per cell: exact when store.json cells carry `sources`, else estimated from samples."""
    return _source_mix(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def _content_type_mix(uri: str, stamp: str) -> pd.DataFrame:
    art = artifact(uri)
    s = samples(uri, "uniform")
    cell_tokens = {(int(c["cluster"]), int(c["quality"])): int(c["tokens"]) for c in art["cells"]}
    if s.empty:
        return pd.DataFrame(columns=["content_type", "tokens", "share"])
    per = s.groupby(["cluster", "quality", "content_type"]).n_tokens.sum().reset_index()
    per["cell_share"] = per.n_tokens / per.groupby(["cluster", "quality"]).n_tokens.transform("sum")
    per["tokens"] = [share * cell_tokens.get((c, q), 0)
                     for share, c, q in zip(per.cell_share, per.cluster, per.quality, strict=True)]
    out = per.groupby("content_type").tokens.sum().reset_index()
    out["share"] = out.tokens / out.tokens.sum()
    return out.sort_values("tokens", ascending=False).reset_index(drop=True)


def content_type_mix(uri: str) -> pd.DataFrame:
    """Tokens per content type, estimated: each cell's tokens split by its sampled documents' content types."""
    return _content_type_mix(uri, store_state(uri)[1])


def content_type_exact(uri: str) -> pd.DataFrame:
    """Exact tokens per content type: a scan of the `n_tokens`/`content_type` columns of every shard."""
    con = reader(uri).connect()
    return con.execute("SELECT content_type, count(*) AS docs, sum(n_tokens) AS tokens FROM documents "
                       "GROUP BY 1 ORDER BY tokens DESC").df()


def _side_files(uri: str, pattern: str) -> pd.DataFrame:
    r = reader(uri)
    frames = []
    for p in sorted(r.fs.glob(r.path(pattern))):
        with r.fs.open(p, "rb") as f:
            t = pq.read_table(io.BytesIO(f.read()))
        df = t.to_pandas()
        df["file"] = df.get("file", p.rsplit("/", 1)[-1])
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


@st.cache_data(show_spinner=False, max_entries=8)
def _dropped(uri: str, stamp: str) -> pd.DataFrame:
    return _side_files(uri, f"{layout.DROPPED_DIR}/*/*.parquet")


def dropped(uri: str) -> pd.DataFrame:
    """All `_dropped/<reason>/*.parquet` rows (id, source, origin, reason, detail, n_chars, text_head)."""
    return _dropped(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=8)
def _quarantine(uri: str, stamp: str) -> pd.DataFrame:
    return _side_files(uri, f"{layout.QUARANTINE_DIR}/*.parquet")


def quarantine(uri: str) -> pd.DataFrame:
    """All `_quarantine/*.parquet` rows (source, file, record, reason, detail, raw, raw_bytes)."""
    return _quarantine(uri, store_state(uri)[1])


def shard_paths(uri: str, cells: list[tuple[int, int]] | None = None) -> list[str]:
    """Relative paths of every finished shard, from the ledgers (optionally only the given cells)."""
    art = artifact(uri)
    k = int(art.get("partition", {}).get("k", 100))
    wanted = set(cells) if cells is not None else None
    out = []
    r = reader(uri)
    for c in art["cells"]:
        key = (int(c["cluster"]), int(c["quality"]))
        if wanted is not None and key not in wanted:
            continue
        rel = c.get("path") or layout.cell_path(*key, k=k)
        if not r.exists(f"{rel}/{layout.LEDGER}"):
            continue
        ledger = r.read_json(f"{rel}/{layout.LEDGER}")
        out.extend(f"{rel}/{s['path']}" for s in ledger.get("shards", []))
    return out


def scan_documents(uri: str, text: str = "", doc_id: str = "", sources: list[str] | None = None,
                   content_types: list[str] | None = None, cells: list[tuple[int, int]] | None = None,
                   limit: int = 200, progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Scan the store's shards (on request only): documents whose text contains `text` (case-insensitive)
    or whose id equals `doc_id`, filtered by facets; stops after `limit` hits."""
    r = reader(uri)
    paths = shard_paths(uri, cells)
    hits: list[pd.DataFrame] = []
    found = 0
    for i, rel in enumerate(paths):
        with r.fs.open(r.path(rel), "rb") as f:
            table = pq.read_table(io.BytesIO(f.read()), columns=SAMPLE_COLUMNS[:-1])
        mask = pa.array(np.ones(table.num_rows, dtype=bool))
        if doc_id:
            mask = pc.and_(mask, pc.equal(table["id"], doc_id))
        if text:
            mask = pc.and_(mask, pc.match_substring(table["text"], text, ignore_case=True))
        if sources:
            mask = pc.and_(mask, pc.is_in(table["source"], pa.array(sources)))
        if content_types:
            mask = pc.and_(mask, pc.is_in(table["content_type"], pa.array(content_types)))
        sub = table.filter(mask)
        if sub.num_rows:
            hits.append(sub.to_pandas())
            found += sub.num_rows
        if progress:
            progress(i + 1, len(paths))
        if found >= limit:
            break
    if not hits:
        return pd.DataFrame(columns=SAMPLE_COLUMNS[:-1])
    return pd.concat(hits, ignore_index=True).head(limit).astype({"cluster": "int64", "quality": "int64"})


def lookup_id(uri: str, doc_id: str) -> dict[str, pd.DataFrame]:
    """Where a document id appears in the small artifacts: samples, `_dropped/`, `_quarantine/`."""
    found = {}
    for kind in ("uniform", "exemplars"):
        s = samples(uri, kind)
        found[kind] = s[s.id == doc_id]
    d = dropped(uri)
    found["dropped"] = d[d.id == doc_id] if not d.empty else d
    return found


@st.cache_data(show_spinner=False, max_entries=8)
def _centroids(uri: str, stamp: str) -> dict[str, np.ndarray]:
    r = reader(uri)
    rel = f"{layout.MODEL_DIR}/centroids.npz"
    if not r.exists(rel):
        return {}
    with r.fs.open(r.path(rel), "rb") as f:
        data = np.load(io.BytesIO(f.read()), allow_pickle=False)
        return {k: np.asarray(data[k]) for k in data.files}


def centroids(uri: str) -> dict[str, np.ndarray]:
    """The arrays of `_model/centroids.npz` (empty when the store has none)."""
    return _centroids(uri, store_state(uri)[1])


@st.cache_data(show_spinner="embedding sampled documents", max_entries=8)
def _sample_vectors(uri: str, stamp: str) -> np.ndarray | None:
    r = reader(uri)
    if not r.exists(f"{layout.MODEL_DIR}/embedder.npz"):
        return None
    from mixture.fit.model_store import load_model

    texts = samples(uri)["text"].tolist()
    return load_model(f"{r.uri.rstrip('/')}/{layout.MODEL_DIR}").embedder.transform(texts) if texts else None


def sample_vectors(uri: str) -> np.ndarray | None:
    """The uniform samples embedded by the store's frozen embedder (None when the store has no model)."""
    return _sample_vectors(uri, store_state(uri)[1])


def model_json(uri: str, name: str) -> dict | None:
    r = reader(uri)
    rel = f"{layout.MODEL_DIR}/{name}"
    return json.loads(r.fs.cat_file(r.path(rel))) if r.exists(rel) else None
