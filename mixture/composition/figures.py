"""Pure computations on store.json and the accounting cell table: headline, per-cell shares, enrichment, the
domain index and its search."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mixture.composition import numbers
from mixture.composition.labels import DomainLabel, cluster_labels, label_of
from mixture.store import layout
from mixture.store.drops import REASONS
from mixture.store.formats import StoreArtifact
from mixture.store.layout import cell_name, parse_cell


def quality_names(info: StoreArtifact) -> list[str]:
    """The name of each quality bucket of the store (`layout.bucket_names` of its partition)."""
    return layout.bucket_names(info.partition.quality_levels, info.partition.quality_names)


def n_domains(info: StoreArtifact) -> int:
    return len(info.clusters) or info.partition.k


def total_tokens(info: StoreArtifact) -> int:
    return info.counters.tokens_out


TOTAL_DIGITS = 4  # significant digits of a store's or a domain's total tokens, on every page: 28.59M, 23.11T


def total_text(tokens: float | int) -> str:
    """A total of tokens as every page writes it: 28_591_234 -> '28.59M' (four significant digits)."""
    return numbers.tokens(tokens, TOTAL_DIGITS)


def language_note(info: StoreArtifact) -> str | None:
    """The build's warning when the clusters split by language (mixture.fit.balance.language_split), else None."""
    from mixture.fit.balance import language_split

    return language_split(info.clusters)


def headline(info: StoreArtifact) -> str:
    """'23.11T tokens across 40 semantic domains and 5 calibrated quality buckets'."""
    return (f"{total_text(total_tokens(info))} tokens across {n_domains(info)} semantic domains "
            f"and {len(quality_names(info))} calibrated quality buckets")


Labels = dict[int, DomainLabel]


def readable_labels(info: StoreArtifact, labels: Labels | None = None) -> Labels:
    """Every domain's readable label: `labels` (`cluster_labels` styled by the sampled documents) where given, else
    `cluster_labels` of store.json's clusters alone."""
    return labels if labels is not None else cluster_labels(info.clusters)


def cells_frame(cells: pd.DataFrame, info: StoreArtifact, labels: Labels | None = None) -> pd.DataFrame:
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
    readable = readable_labels(info, labels)
    df["label"] = df.cluster.map(lambda c: label_of(readable, c).text)
    return df


def domains_frame(cells: pd.DataFrame, info: StoreArtifact, labels: Labels | None = None) -> pd.DataFrame:
    """One row per domain of `cells_frame(...)`: id, label (plain text) and name (its DomainLabel: the label's
    terms and the other top terms), summary (only one that is more than the top terms joined), top terms,
    confidence, title (a title of its exemplars, or empty), docs, tokens, share of the corpus (a domain with cells but no store.json cluster entry gets a
    placeholder label)."""
    agg = cells.groupby("cluster").agg(tokens=("tokens", "sum"), docs=("docs", "sum")).reset_index()
    meta = {c.id: c for c in info.clusters}
    readable = readable_labels(info, labels)
    total = agg.tokens.sum()
    rows = []
    for r in agg.itertuples():
        m = meta.get(int(r.cluster))
        terms = list(m.top_terms) if m else []
        name = label_of(readable, int(r.cluster))
        summary = (m.summary if m else "") or ""
        rows.append({
            "id": int(r.cluster), "label": name.text, "name": name,
            "summary": "" if summary.strip() in ("", " · ".join(terms), ", ".join(terms)) else summary,
            "top_terms": terms,
            "confidence": m.confidence if m else None, "confidence_tag": m.confidence_tag if m else None,
            "title": (m.name or "") if m else "",
            "docs": int(r.docs), "tokens": int(r.tokens), "share": (r.tokens / total) if total else 0.0,
        })
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Link:
    """What a shared link's `?domain=` / `?cell=` asks for: the domain to open (None: none), the bucket to pick,
    or the problem to tell when it names nothing in this store."""

    domain: int | None
    quality: int | None
    problem: str | None
    params: tuple[str, str]  # (domain, cell) as given: a link is applied once per value


def link_scope(ids: list[int], levels: int) -> str:
    """What a link may name in a store: 'its domains are 0–39 and its quality buckets Q0–Q4'."""
    return (f"its domains are {min(ids)}–{max(ids)}" if ids else "it has no domains") + \
        f" and its quality buckets Q0–Q{levels - 1}"


def resolve_link(domain: str, cell: str, ids: list[int], levels: int, k: int) -> Link:
    """The domain and bucket `?domain=NN` or `?cell=cNNqQ` names (cell wins), checked against this store's
    domains `ids` and its `levels` quality buckets; an unknown one gives a message saying what the store has."""
    params = (domain or "", cell or "")
    has = link_scope(ids, levels)

    def problem(text: str) -> Link:
        return Link(None, None, text, params)

    if cell:
        try:
            d, q = parse_cell(cell.strip())
        except ValueError:
            example = cell_name(ids[0] if ids else 0, levels - 1, k)
            return problem(f"The link's `cell={code_text(cell)}` is not a cell name: expected cNNqQ, e.g. {example}.")
        if d not in ids or q >= levels:
            return problem(f"The link's `cell={code_text(cell)}` names no cell of this store: {has}.")
        return Link(d, q, None, params)
    if domain:
        d = int(domain.strip()) if domain.strip().isdigit() else None
        if d is None or d not in ids:
            return problem(f"The link's `domain={code_text(domain)}` names no domain of this store: {has}.")
        return Link(d, None, None, params)
    return Link(None, None, None, params)


def code_text(text: str) -> str:
    """User text for inside a Markdown code span."""
    return str(text).replace("`", "'").replace("\n", " ")[:80]


SEARCH_CHARS = 2_000  # of each sampled document: what the domain search reads, on every page
SEARCH_FIELDS = {"label": "label", "terms": "top terms", "source": "source", "text": "sample text"}  # why it matched


def _words(*texts: str) -> str:
    """The distinct whitespace-separated words of `texts`, lower case, in first-seen order: a query word (never
    holding a space) is a substring of the texts exactly when it is one of a word, so these are enough to search."""
    return " ".join(dict.fromkeys(" ".join(texts).lower().split()))


def search_index(domains: pd.DataFrame, info: StoreArtifact | None, samples: pd.DataFrame
                 ) -> dict[int, dict[str, str]]:
    """What the domain search reads of each domain of `domains_frame(...)`, one field per reason it can match
    (`SEARCH_FIELDS`): its label; its top terms and summary; the names of its sources (store.json's per-cell
    sources, else its sampled documents'); its uniformly sampled documents (`mixture.accounting.samples`: their ids
    and first `SEARCH_CHARS` characters). The explorer and the static page search through this and `match_domains`."""
    by_cell = {}
    for c in info.cells if info is not None else ():
        by_cell.setdefault(int(c.cluster), set()).update(c.sources)
    texts: dict[int, list[str]] = {}
    srcs: dict[int, set[str]] = {}
    if not samples.empty:
        for row in samples[["cluster", "id", "source", "text"]].itertuples(index=False):
            texts.setdefault(int(row.cluster), []).extend((str(row.id), str(row.text or "")[:SEARCH_CHARS]))
            srcs.setdefault(int(row.cluster), set()).add(str(row.source))
    out = {}
    for row in domains.to_dict("records"):
        d = int(row["id"])
        name = row["name"]
        out[d] = {"label": _words(name.text),
                  "terms": _words(" ".join(row["top_terms"]), name.more_text, row["summary"]),
                  "source": _words(*sorted(by_cell.get(d) or srcs.get(d) or ())),
                  "text": _words(*texts.get(d, ()))}
    return out


def match_domains(index: dict[int, dict[str, str]], query: str) -> dict[int, list[str]]:
    """{domain: why it matched (the `SEARCH_FIELDS` names holding a word of the query)} of the domains of `index`
    (`search_index`) in which every word of `query` is found in one field or another; every domain for no query."""
    words = (query or "").lower().split()
    out = {}
    for d, fields in index.items():
        found = {w: [f for f, hay in fields.items() if w in hay] for w in words}
        if all(found.values()):
            out[d] = [name for f, name in SEARCH_FIELDS.items() if any(f in where for where in found.values())]
    return out


def filter_domains(domains: pd.DataFrame, query: str, index: dict[int, dict[str, str]] | None = None
                   ) -> pd.DataFrame:
    """The rows of `domains` that `query` matches (`match_domains` over `index`, else over the labels and terms
    alone), with column `why`: where it matched ('label, sample text'; empty for no query)."""
    if not (query or "").split():
        return domains.assign(why="")
    index = index if index is not None else search_index(domains, None, pd.DataFrame())
    hits = match_domains({d: f for d, f in index.items() if d in set(domains["id"])}, query)
    out = domains[domains["id"].isin(list(hits))].copy()
    out["why"] = [", ".join(hits[int(d)]) for d in out["id"]]
    return out


@dataclass(frozen=True)
class Cards:
    documents: int
    tokens: int
    domains: int
    buckets: int
    sources: int
    cells: int
    drops: dict[str, int]


DROP_KEYS = {r.counter: r.label for r in REASONS}  # store.json counter -> label, from mixture.store.drops


def cards(info: StoreArtifact) -> Cards:
    dropped = info.counters.dropped()
    return Cards(documents=info.counters.records_out, tokens=total_tokens(info), domains=n_domains(info),
                 buckets=len(quality_names(info)), sources=len(info.sources),
                 cells=sum(1 for c in info.cells if c.docs or c.tokens),
                 drops={label: dropped[key] for key, label in DROP_KEYS.items()})


def cells_text(cells: pd.DataFrame) -> str:
    """How many cells of the domain × quality grid (a `cells_frame`) hold documents, one way on every page:
    '196 non-empty of 200'."""
    non_empty = int(((cells.docs > 0) | (cells.tokens > 0)).sum())
    return f"{numbers.count(non_empty)} non-empty of {numbers.count(len(cells))}"


@dataclass(frozen=True)
class CardText:
    """One summary card as every page shows it: its value and what hovering it tells."""

    label: str
    value: str
    detail: str = ""


def card_texts(info: StoreArtifact, cells: pd.DataFrame) -> list[CardText]:
    """The summary cards of a store, written one way for the explorer and the static page; `cells` its
    `cells_frame`."""
    c = cards(info)
    names = quality_names(info)
    return [CardText("tokens", total_text(c.tokens), f"{numbers.count(c.tokens)} tokens"),
            CardText("documents", numbers.count(c.documents)),
            CardText("cells", cells_text(cells), "cells of the domain × quality grid that hold documents"),
            CardText("domains", numbers.count(c.domains)),
            CardText("buckets", numbers.count(c.buckets), "calibrated quality buckets: "
                     + ", ".join(f"Q{q} {n}" for q, n in enumerate(names))),
            CardText("sources", numbers.count(c.sources))]


def language_line(mix: pd.DataFrame, top: int = 6) -> str:
    """'en 61.2% · fr 20.1% · ja 9.0% · 3 more 9.7%' of one domain's rows of the accounting language mix."""
    rows = mix.sort_values(["tokens", "language"], ascending=[False, True], kind="stable")
    shown = [f"{r.language} {100 * r.share:.1f}%" for r in rows.head(top).itertuples()]
    rest = rows.iloc[top:]
    if len(rest):
        shown.append(f"{len(rest)} more {100 * rest.share.sum():.1f}%")
    return " · ".join(shown)


def group_map_text(group_map: str | None, fallback: bool) -> str:
    """How a calibration group's documents are calibrated, in words (`map` absent: a store of older code)."""
    group_map = group_map or ("content_type" if fallback else "own")
    return {"own": "own", "shape": "own centre and spread, pooled shape (few documents)",
            "content_type": "content type's (too few)"}[group_map]


def group_cutoffs_frame(groups: pd.DataFrame, edges: list[float]) -> pd.DataFrame:
    """The (content type, language) calibration groups (accounting `calibration_groups`): sample documents,
    whether the group has its own calibration, and its raw scores at the bucket edges."""
    cols = [f"Q{i}→Q{i + 1}" for i in range(len(edges))]
    rows = [{"group": g.group, "sample docs": int(g.sample_docs),
             "calibration": group_map_text(g.map, g.fallback),
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
