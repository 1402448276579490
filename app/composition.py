"""Pure computations on store.json and the accounting cell table: headline, per-cell shares, enrichment, the
domain index and its search."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mixture.explorer.fmt import humanize
from mixture.overview import numbers
from mixture.store.drops import REASONS
from mixture.store.formats import StoreArtifact
from mixture.store.layout import cell_name

DEFAULT_QUALITY_NAMES = ["junk", "poor", "usable", "good", "excellent"]


def quality_names(info: StoreArtifact) -> list[str]:
    """The name of each quality bucket (`Q<n>` past the names store.json gives)."""
    names = list(info.partition.quality_names or DEFAULT_QUALITY_NAMES)
    levels = info.partition.quality_levels
    return (names + [f"Q{q}" for q in range(len(names), levels)])[:levels]


def n_domains(info: StoreArtifact) -> int:
    return len(info.clusters) or info.partition.k


def total_tokens(info: StoreArtifact) -> int:
    return info.counters.tokens_out


def headline(info: StoreArtifact) -> str:
    """'23.11T tokens across 40 semantic domains and 5 calibrated quality buckets'."""
    return (f"{humanize(total_tokens(info))} tokens across {n_domains(info)} semantic domains "
            f"and {len(quality_names(info))} calibrated quality buckets")


def cluster_labels(info: StoreArtifact) -> dict[int, str]:
    return {c.id: c.label or f"cluster {c.id}" for c in info.clusters}


def cells_frame(cells: pd.DataFrame, info: StoreArtifact) -> pd.DataFrame:
    """The accounting cell table (`mixture.accounting.published_cell_table`) on the full grid of domains and
    quality buckets (missing cells filled with zero), with shares and enrichment.

    share_in_domain = tokens(d, q) / tokens(d); corpus_share = tokens(q) / total;
    enrichment = share_in_domain / corpus_share.
    """
    levels = len(quality_names(info))
    cells = cells[["cluster", "quality", "path", "docs", "tokens", "shards"]].astype({"cluster": int, "quality": int})
    ids = sorted({c.id for c in info.clusters} | set(cells.cluster))
    grid = pd.MultiIndex.from_product([ids, range(levels)], names=["cluster", "quality"]).to_frame(index=False)
    df = grid.merge(cells, on=["cluster", "quality"], how="left")
    k = info.partition.k
    df.insert(0, "cell", [cell_name(c, q, k) for c, q in zip(df.cluster, df.quality, strict=True)])
    df[["docs", "tokens", "shards"]] = df[["docs", "tokens", "shards"]].fillna(0).astype("int64")
    total = df.tokens.sum()
    dom = df.groupby("cluster").tokens.transform("sum")
    bucket = df.groupby("quality").tokens.transform("sum")
    df["share_in_domain"] = (df.tokens / dom.where(dom > 0)).fillna(0.0)
    df["corpus_share"] = bucket / total if total else 0.0
    df["enrichment"] = df.share_in_domain / df.corpus_share.where(df.corpus_share > 0)
    df["share_of_corpus"] = df.tokens / total if total else 0.0
    labels = cluster_labels(info)
    df["label"] = df.cluster.map(lambda c: labels.get(c, f"cluster {c}"))
    return df


def domains_frame(cells: pd.DataFrame, info: StoreArtifact) -> pd.DataFrame:
    """One row per domain of `cells_frame(...)`: id, label, summary, top terms, confidence, docs, tokens, share of
    the corpus (a domain with cells but no store.json cluster entry gets a placeholder label)."""
    agg = cells.groupby("cluster").agg(tokens=("tokens", "sum"), docs=("docs", "sum")).reset_index()
    meta = {c.id: c for c in info.clusters}
    total = agg.tokens.sum()
    rows = []
    for r in agg.itertuples():
        m = meta.get(int(r.cluster))
        terms = list(m.top_terms) if m else []
        rows.append({
            "id": int(r.cluster), "label": (m.label if m else "") or f"cluster {r.cluster}",
            "summary": (m.summary if m else "") or " · ".join(terms), "top_terms": terms,
            "confidence": m.confidence if m else None, "confidence_tag": m.confidence_tag if m else None,
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


def cards(info: StoreArtifact) -> Cards:
    dropped = info.counters.dropped()
    return Cards(documents=info.counters.records_out, tokens=total_tokens(info), sources=len(info.sources),
                 cells=sum(1 for c in info.cells if c.docs or c.tokens),
                 drops={label: dropped[key] for key, label in DROP_KEYS.items()})


def cells_text(cells: pd.DataFrame) -> str:
    """How many cells of the domain × quality grid (a `cells_frame`) hold documents, one way on every page:
    '196 non-empty of 200'."""
    non_empty = int(((cells.docs > 0) | (cells.tokens > 0)).sum())
    return f"{numbers.count(non_empty)} non-empty of {numbers.count(len(cells))}"


def language_line(mix: pd.DataFrame, top: int = 6) -> str:
    """'en 61.2% · fr 20.1% · ja 9.0% · 3 more 9.7%' of one domain's rows of the accounting language mix."""
    rows = mix.sort_values(["tokens", "language"], ascending=[False, True], kind="stable")
    shown = [f"{r.language} {100 * r.share:.1f}%" for r in rows.head(top).itertuples()]
    rest = rows.iloc[top:]
    if len(rest):
        shown.append(f"{len(rest)} more {100 * rest.share.sum():.1f}%")
    return " · ".join(shown)


def group_cutoffs_frame(groups: pd.DataFrame, edges: list[float]) -> pd.DataFrame:
    """The (content type, language) calibration groups (accounting `calibration_groups`): sample documents,
    whether the group has its own calibration, and its raw scores at the bucket edges."""
    cols = [f"Q{i}→Q{i + 1}" for i in range(len(edges))]
    rows = [{"group": g.group, "sample docs": int(g.sample_docs),
             "calibration": "content type's (too few)" if g.fallback else "own",
             **{c: round(float(v), 3) for c, v in zip(cols, g.raw_cutoffs, strict=False)}}
            for g in groups.itertuples()]
    return pd.DataFrame(rows, columns=["group", "sample docs", "calibration", *cols]).set_index("group")


def cutoffs_frame(info: StoreArtifact) -> pd.DataFrame:
    """Raw-score thresholds per content type that correspond to the calibrated bucket edges."""
    edges = list(info.partition.bucket_edges or [0.2, 0.4, 0.6, 0.8])
    names = quality_names(info)
    cols = [f"Q{i}→Q{i + 1} (calibrated {e:g})" for i, e in enumerate(edges)]
    rows = []
    for ctype, cut in sorted(info.raw_score_cutoffs.items()):
        vals = list(cut) + [None] * (len(edges) - len(cut))
        rows.append({"content type": ctype, **{c: (None if v is None else round(float(v), 3))
                                               for c, v in zip(cols, vals, strict=False)}})
    df = pd.DataFrame(rows, columns=["content type", *cols])
    df.attrs["names"] = names
    return df.set_index("content type")
