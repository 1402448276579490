"""Pure computations on store.json and the accounting cell table: headline, per-cell shares, enrichment, the
domain index and its search."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from mixture.explorer.fmt import humanize

from mixture.store.drops import REASONS
from mixture.store.layout import cell_name

DEFAULT_QUALITY_NAMES = ["junk", "poor", "usable", "good", "excellent"]


def quality_names(artifact: dict) -> list[str]:
    part = artifact.get("partition", {})
    names = list(part.get("quality_names") or DEFAULT_QUALITY_NAMES)
    levels = int(part.get("quality_levels") or len(names))
    return (names + [f"Q{q}" for q in range(len(names), levels)])[:levels]


def n_domains(artifact: dict) -> int:
    return len(artifact.get("clusters") or []) or int(artifact.get("partition", {}).get("k", 0))


def total_tokens(artifact: dict) -> int:
    counters = artifact.get("counters") or {}
    if counters.get("tokens_out") is not None:
        return int(counters["tokens_out"])
    return int(sum(c.get("tokens", 0) for c in artifact.get("cells", [])))


def headline(artifact: dict) -> str:
    """'23.11T tokens across 40 semantic domains and 5 calibrated quality buckets'."""
    return (f"{humanize(total_tokens(artifact))} tokens across {n_domains(artifact)} semantic domains "
            f"and {len(quality_names(artifact))} calibrated quality buckets")


def cluster_labels(artifact: dict) -> dict[int, str]:
    return {int(c["id"]): str(c.get("label") or f"cluster {c['id']}") for c in artifact.get("clusters", [])}


def cells_frame(cells: pd.DataFrame, artifact: dict) -> pd.DataFrame:
    """The accounting cell table (`mixture.accounting.published_cell_table`) on the full grid of domains and
    quality buckets (missing cells filled with zero), with shares and enrichment.

    share_in_domain = tokens(d, q) / tokens(d); corpus_share = tokens(q) / total;
    enrichment = share_in_domain / corpus_share.
    """
    levels = len(quality_names(artifact))
    cells = cells[["cluster", "quality", "path", "docs", "tokens", "shards"]].astype({"cluster": int, "quality": int})
    ids = sorted({int(c["id"]) for c in artifact.get("clusters", [])} | set(cells.cluster))
    grid = pd.MultiIndex.from_product([ids, range(levels)], names=["cluster", "quality"]).to_frame(index=False)
    df = grid.merge(cells, on=["cluster", "quality"], how="left")
    k = int(artifact.get("partition", {}).get("k", len(ids)))
    df.insert(0, "cell", [cell_name(c, q, k) for c, q in zip(df.cluster, df.quality, strict=True)])
    df[["docs", "tokens", "shards"]] = df[["docs", "tokens", "shards"]].fillna(0).astype("int64")
    total = df.tokens.sum()
    dom = df.groupby("cluster").tokens.transform("sum")
    bucket = df.groupby("quality").tokens.transform("sum")
    df["share_in_domain"] = (df.tokens / dom.where(dom > 0)).fillna(0.0)
    df["corpus_share"] = bucket / total if total else 0.0
    df["enrichment"] = df.share_in_domain / df.corpus_share.where(df.corpus_share > 0)
    df["share_of_corpus"] = df.tokens / total if total else 0.0
    labels = cluster_labels(artifact)
    df["label"] = df.cluster.map(lambda c: labels.get(c, f"cluster {c}"))
    return df


def domains_frame(cells: pd.DataFrame, artifact: dict) -> pd.DataFrame:
    """One row per domain of `cells_frame(...)`: id, label, summary, top terms, confidence, docs, tokens, share of
    the corpus."""
    agg = cells.groupby("cluster").agg(tokens=("tokens", "sum"), docs=("docs", "sum")).reset_index()
    meta = {int(c["id"]): c for c in artifact.get("clusters", [])}
    total = agg.tokens.sum()
    rows = []
    for r in agg.itertuples():
        m = meta.get(int(r.cluster), {})
        terms = list(m.get("top_terms") or [])
        rows.append({
            "id": int(r.cluster), "label": str(m.get("label") or f"cluster {r.cluster}"),
            "summary": str(m.get("summary") or " · ".join(terms)), "top_terms": terms,
            "confidence": m.get("confidence"), "confidence_tag": m.get("confidence_tag"),
            "docs": int(r.docs), "tokens": int(r.tokens), "share": (r.tokens / total) if total else 0.0,
        })
    return pd.DataFrame(rows)


def index_entry(row: dict | pd.Series) -> str:
    """'26 · Council and Board Meeting Records · 7.52% · 1.74T'."""
    return f"{row['id']} · {row['label']} · {100 * row['share']:.2f}% · {humanize(row['tokens'])}"


def filter_domains(domains: pd.DataFrame, query: str, sample_text: dict[int, str] | None = None) -> pd.DataFrame:
    """Domains whose label, top terms, summary or sampled document text contain every word of `query`."""
    words = [w for w in (query or "").lower().split() if w]
    if not words:
        return domains
    sample_text = sample_text or {}

    def hit(row: pd.Series) -> bool:
        hay = " ".join([str(row["id"]), row["label"], row["summary"], " ".join(row["top_terms"]),
                        sample_text.get(int(row["id"]), "")]).lower()
        return all(w in hay for w in words)

    return domains[domains.apply(hit, axis=1)] if len(domains) else domains


@dataclass(frozen=True)
class Cards:
    documents: int
    tokens: int
    sources: int
    cells: int
    drops: dict[str, int]


DROP_KEYS = {r.counter: r.label for r in REASONS}  # store.json counter -> label, from mixture.store.drops


def cards(artifact: dict) -> Cards:
    counters = artifact.get("counters") or {}
    docs = counters.get("records_out")
    if docs is None:
        docs = sum(int(c.get("docs", 0)) for c in artifact.get("cells", []))
    return Cards(documents=int(docs), tokens=total_tokens(artifact), sources=len(artifact.get("sources") or []),
                 cells=sum(1 for c in artifact.get("cells", []) if c.get("docs", 0) or c.get("tokens", 0)),
                 drops={label: int(counters.get(key) or 0) for key, label in DROP_KEYS.items()})


def cutoffs_frame(artifact: dict) -> pd.DataFrame:
    """Raw-score thresholds per content type that correspond to the calibrated bucket edges."""
    edges = list(artifact.get("partition", {}).get("bucket_edges") or [0.2, 0.4, 0.6, 0.8])
    names = quality_names(artifact)
    cols = [f"Q{i}→Q{i + 1} (calibrated {e:g})" for i, e in enumerate(edges)]
    rows = []
    for ctype, cut in sorted((artifact.get("raw_score_cutoffs") or {}).items()):
        vals = list(cut) + [None] * (len(edges) - len(cut))
        rows.append({"content type": ctype, **{c: (None if v is None else round(float(v), 3))
                                               for c, v in zip(cols, vals, strict=False)}})
    df = pd.DataFrame(rows, columns=["content type", *cols])
    df.attrs["names"] = names
    return df.set_index("content type")
