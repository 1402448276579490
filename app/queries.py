"""Streamlit-cached reads of a store, each a call into the accounting layer (`mixture.accounting`).

Everything is cached by store URI and the stamp of store.json (a rebuilt store is re-read). The overview needs
only store.json and `_samples/`; the scans of the shards run only when a user asks for them, with a progress
callback.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from mixture import accounting
from mixture.accounting import StoreNotReady, StoreReader
from mixture.accounting.verify import CorruptShard
from mixture.composition import figures as composition
from mixture.composition.labels import DomainLabel, cluster_labels
from mixture.store import layout
from mixture.store.formats import StoreArtifact
from mixture.store.model_files import Centroids

__all__ = ["StoreNotReady", "calibration_groups", "cell_table", "centroids",
           "content_type_exact", "content_type_mix", "domain_labels", "dropped", "examples_by_cell", "find_document", "language_mix", "lookup_id",
           "quarantine", "reader", "sample_vectors", "samples", "scan_documents", "search_index", "source_mix", "store_info", "store_state"]


@st.cache_resource(show_spinner=False)
def reader(uri: str) -> StoreReader:
    """The store's reader for state checks (its small artifacts may be stale: use `_reader_at` for contents)."""
    return StoreReader(uri)


@st.cache_resource(show_spinner=False, max_entries=16)
def _reader_at(uri: str, stamp: str) -> StoreReader:
    """One reader per version of a store (by store.json stamp), sharing its cached artifact, ledgers, listing."""
    return StoreReader(uri)


@st.cache_data(ttl=5, show_spinner=False)
def store_state(uri: str) -> tuple[str, str]:
    """('complete' | 'building' | 'missing', stamp). The stamp changes when store.json is rewritten."""
    return accounting.store_status(reader(uri))


def _current(uri: str) -> tuple[StoreReader, str]:
    stamp = store_state(uri)[1]
    return _reader_at(uri, stamp), stamp


@st.cache_data(show_spinner=False, max_entries=16)
def _store_info(uri: str, stamp: str) -> StoreArtifact:
    return _reader_at(uri, stamp).store_info


def store_info(uri: str) -> StoreArtifact:
    """store.json of a complete store (mixture.store.formats.StoreArtifact); raises StoreNotReady while it is
    building and FormatError (naming the file and every wrong field) when it does not match its format."""
    state, stamp = store_state(uri)
    if state != "complete":
        raise StoreNotReady(f"{uri}: no {layout.STORE_JSON} ({state})")
    return _store_info(uri, stamp)


@st.cache_data(show_spinner=False, max_entries=16)
def _cell_table(uri: str, stamp: str) -> pd.DataFrame:
    return accounting.published_cell_table(_reader_at(uri, stamp))


def cell_table(uri: str) -> pd.DataFrame:
    """One row per cell as store.json publishes it (cell, cluster, quality, quality_name, label, path, docs,
    tokens, shards, share): no ledger is read, so its cost does not grow with the store."""
    return _cell_table(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def _samples(uri: str, kind: str, stamp: str) -> pd.DataFrame:
    return accounting.samples(_reader_at(uri, stamp), kind)


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
def _search_index(uri: str, stamp: str) -> dict[int, dict[str, str]]:
    info, labels = store_info(uri), domain_labels(uri)
    domains = composition.domains_frame(composition.cells_frame(cell_table(uri), info, labels), info, labels)
    return composition.search_index(domains, info, samples(uri, "uniform"))


@st.cache_data(show_spinner=False, max_entries=16)
def _domain_labels(uri: str, stamp: str) -> dict[int, DomainLabel]:
    return cluster_labels(store_info(uri).clusters, samples(uri, "uniform"))


def domain_labels(uri: str) -> dict[int, DomainLabel]:
    """The readable label of every domain (`mixture.composition.labels.cluster_labels`: its distinct top terms, code
    tokens in code style as its sampled documents spell them), the same the static overview page shows."""
    return _domain_labels(uri, store_state(uri)[1])


def search_index(uri: str) -> dict[int, dict[str, str]]:
    """What the domain search reads of each domain (`mixture.composition.figures.search_index`), the same the
    static overview page searches."""
    return _search_index(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def _source_mix(uri: str, stamp: str) -> pd.DataFrame:
    rows = [{"cluster": c.cluster, "quality": c.quality, "source": name, "tokens": float(tokens), "docs": None}
            for c in store_info(uri).cells for name, tokens in c.sources.items()]
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
    cells = cell_table(uri)
    s = samples(uri, "uniform")
    cell_tokens = {(int(c), int(q)): int(t) for c, q, t in zip(cells.cluster, cells.quality, cells.tokens,
                                                               strict=True)}
    if s.empty:
        return pd.DataFrame(columns=["content_type", "tokens", "share"])
    per = s.groupby(["cluster", "quality", "content_type"]).n_tokens.sum().reset_index()
    per["cell_share"] = per.n_tokens / per.groupby(["cluster", "quality"]).n_tokens.transform("sum")
    per["tokens"] = [share * cell_tokens.get((c, q), 0)
                     for share, c, q in zip(per.cell_share, per.cluster, per.quality, strict=True)]
    out = per.groupby("content_type").tokens.sum().reset_index()
    out["share"] = out.tokens / out.tokens.sum()
    return out.sort_values("tokens", ascending=False).reset_index(drop=True)


@st.cache_data(show_spinner=False, max_entries=16)
def _language_mix(uri: str, stamp: str) -> pd.DataFrame:
    return accounting.language_mix(_reader_at(uri, stamp), "cluster")


def language_mix(uri: str) -> pd.DataFrame:
    """Languages per domain (cluster, language, docs, tokens, share of the domain's tokens) from store.json's
    `language` block (no shard is read for the overview)."""
    return _language_mix(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=16)
def _calibration_groups(uri: str, stamp: str) -> pd.DataFrame:
    return accounting.calibration_groups(_reader_at(uri, stamp))


def calibration_groups(uri: str) -> pd.DataFrame:
    """The (content type, language) calibration groups of the fit (store.json `language.calibration_groups`)."""
    return _calibration_groups(uri, store_state(uri)[1])


def content_type_mix(uri: str) -> pd.DataFrame:
    """Tokens per content type, estimated: each cell's tokens split by its sampled documents' content types."""
    return _content_type_mix(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=8)
def _content_type_exact(uri: str, stamp: str) -> pd.DataFrame:
    df = accounting.report(_reader_at(uri, stamp), "content_type")
    return df.sort_values("tokens", ascending=False, kind="stable")[["content_type", "docs", "tokens"]] \
        .reset_index(drop=True)


def content_type_exact(uri: str) -> pd.DataFrame:
    """Exact docs and tokens per content type (the accounting report: a scan of the `n_tokens` and
    `content_type` columns of every shard), most tokens first; computed once per version of the store."""
    return _content_type_exact(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=8)
def _dropped(uri: str, stamp: str) -> pd.DataFrame:
    return accounting.dropped(_reader_at(uri, stamp))


def dropped(uri: str) -> pd.DataFrame:
    """All `_dropped/<reason>/*.parquet` rows (id, source, origin, reason, detail, n_chars, text_head, file)."""
    return _dropped(uri, store_state(uri)[1])


@st.cache_data(show_spinner=False, max_entries=8)
def _quarantine(uri: str, stamp: str) -> pd.DataFrame:
    return accounting.quarantine(_reader_at(uri, stamp))


def quarantine(uri: str) -> pd.DataFrame:
    """All `_quarantine/*.parquet` rows (source, file, record, reason, detail, raw, raw_bytes)."""
    return _quarantine(uri, store_state(uri)[1])


def scan_documents(uri: str, text: str = "", doc_id: str = "", sources: list[str] | None = None,
                   content_types: list[str] | None = None, cells: list[tuple[int, int]] | None = None,
                   limit: int = 200, budget: accounting.ScanBudget | None = None,
                   progress: Callable[[int, int], None] | None = None) -> accounting.DocumentScan:
    """Search every finished shard (on request only): documents whose text contains `text` (case-insensitive)
    or whose id equals `doc_id`, filtered by facets; stops after `limit` hits or when `budget` is spent. A shard
    whose bytes differ from its ledger stops the page with the message (which shard, `mixture audit`)."""
    try:
        return accounting.scan_documents(_current(uri)[0], text=text, doc_id=doc_id, sources=sources,
                                         content_types=content_types, cells=cells, limit=limit, budget=budget,
                                         progress=progress)
    except CorruptShard as exc:
        st.error(str(exc))
        st.stop()
        raise  # st.stop() raises; this line is for type checkers


@st.cache_resource(show_spinner=False, max_entries=8)
def _id_ranges(uri: str, stamp: str) -> accounting.IdRanges:
    return accounting.id_ranges(_current(uri)[0])


def find_document(uri: str, doc_id: str) -> pd.DataFrame:
    """A kept document by id (`mixture.accounting.find_document`): the row groups whose id range holds it only,
    the ranges read once per store version from the shards' footers."""
    reader, stamp = _current(uri)
    try:
        return accounting.find_document(reader, doc_id, _id_ranges(uri, stamp))
    except CorruptShard as exc:
        st.error(str(exc))
        st.stop()
        raise  # st.stop() raises; this line is for type checkers


def lookup_id(uri: str, doc_id: str) -> dict[str, pd.DataFrame]:
    """Where a document id appears in the small artifacts: samples, `_dropped/`."""
    found = {}
    for kind in ("uniform", "exemplars"):
        s = samples(uri, kind)
        found[kind] = s[s.id == doc_id]
    d = dropped(uri)
    found["dropped"] = d[d.id == doc_id] if not d.empty else d
    return found


@st.cache_data(show_spinner=False, max_entries=8)
def _centroids(uri: str, stamp: str) -> Centroids | None:
    return accounting.centroids(_reader_at(uri, stamp))


def centroids(uri: str) -> Centroids | None:
    """`_model/centroids.npz` (None when the store has none)."""
    return _centroids(uri, store_state(uri)[1])


@st.cache_data(show_spinner="embedding sampled documents", max_entries=8)
def _sample_vectors(uri: str, stamp: str) -> np.ndarray | None:
    return accounting.sample_vectors(_reader_at(uri, stamp))


def sample_vectors(uri: str) -> np.ndarray | None:
    """The uniform samples embedded by the store's frozen embedder (None when the store has no model)."""
    return _sample_vectors(uri, store_state(uri)[1])
