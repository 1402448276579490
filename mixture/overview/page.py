"""The overview page's content, read from a store through the accounting layer (store.json, `_samples/`) and an
optional plan (mixture.planner.formats.Plan): headline, cards, cutoffs, one entry per domain with its cells,
sources and sampled documents. Numbers stay numbers here; the template writes them with `numbers`."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import fsspec
import pandas as pd
from markupsafe import escape

from mixture import __version__, accounting
from mixture.accounting import StoreReader
from mixture.accounting.sample_files import sample_shortfall
from mixture.composition import figures as composition
from mixture.composition import numbers
from mixture.composition.labels import Term, cluster_labels
from mixture.planner.formats import Plan
from mixture.store.formats import StoreArtifact
from mixture.store.layout import cluster_width

HEAD_CHARS = 900  # a document is shown cut at ~900 characters (on a word boundary), as on the published page
TEXT_BUDGET = 2_000_000  # bytes of (escaped) text in one page: its search index, then its sampled documents
MAX_DOC_CHARS = 20_000  # "show all" shows at most this much of one document, however small the store


@dataclass
class Doc:
    """A sampled document: its head (~900 characters) and the rest "show all" reveals (cut at `shown_chars`)."""

    id: str
    source: str
    content_type: str
    language: str | None
    n_tokens: int
    n_chars: int
    quality_score: float | None
    cluster_distance: float | None
    head: str
    rest: str
    file: str = ""  # with full texts: its whole text, a file beside the page ("show all" fetches it)

    @property
    def shown_chars(self) -> int:
        return len(self.head) + len(self.rest)

    @property
    def complete(self) -> bool:
        """The page holds the whole text (else "show all" shows its first `shown_chars` characters)."""
        return self.shown_chars >= self.n_chars


@dataclass
class SourceShare:
    name: str
    tokens: float
    share: float  # of the cell's tokens


@dataclass
class Cell:
    """One (domain, quality bucket) cell of the grid; an empty cell has zero tokens and no documents."""

    name: str  # cNNqQ, also its anchor
    quality: int
    quality_name: str
    tokens: int
    docs: int
    share_in_domain: float
    enrichment: float  # share_in_domain / the bucket's share of the corpus (nan when the bucket is empty)
    sources: list[SourceShare] = field(default_factory=list)
    sources_estimated: bool = False  # from the uniform sample: store.json has no per-cell sources
    samples: list[Doc] = field(default_factory=list)
    weights: list[float | None] = field(default_factory=list)  # per plan phase (None: the plan lacks the cell)
    epochs: float | None = None
    over_cap: bool = False


@dataclass
class Domain:
    id: int
    number: str  # zero-padded like the cell names: 07
    label: str  # readable, as plain text ('self, assertEqual, def'): `labels.domain_label`, as the explorer shows it
    label_terms: list[Term]  # the label's terms (code tokens in code style)
    more_terms: list[Term]  # the other distinct top terms, shown beside it
    label_generated: bool  # made from the top terms (False: a label a person wrote)
    summary: str  # a summary that is more than the top terms joined (else empty)
    top_terms: list[str]
    confidence: float | None
    confidence_tag: str | None
    title: str  # a title of its exemplar documents holding its top words (empty: none)
    tokens: int
    docs: int
    share: float  # of the corpus
    languages: str  # 'en 61.2% · fr 20.1% · …' (empty without store.json's language block)
    cells: list[Cell]

    @property
    def anchor(self) -> str:
        return f"domain-{self.number}"


@dataclass
class Card:
    label: str
    value: str  # written by `composition.card_texts`, as the explorer writes it
    detail: str = ""


@dataclass
class CutoffRow:
    name: str  # a content type, or a (content type, language) group
    cutoffs: list[float | None]  # raw score at each calibrated edge
    sample_docs: int | None
    note: str = ""


@dataclass
class PlanPhase:
    name: str
    tokens: int


@dataclass
class PlanSummary:
    name: str
    plan_id: str
    source: str
    phases: list[PlanPhase]
    max_epochs: float
    cells_missing: int  # store cells the plan does not list


@dataclass
class Page:
    title: str
    headline: str
    store: str
    spec_name: str
    tokenizer: str
    created: str
    code_version: str
    generator: str  # no time: the same store and plan give the same page, byte for byte
    quality_names: list[str]
    bucket_edges: list[float]
    cards: list[Card]
    drops: list[Card]
    cutoffs: list[CutoffRow]
    group_cutoffs: list[CutoffRow]
    domains: list[Domain]
    search: dict[int, dict[str, str]]  # `composition.search_index`: what the domain search reads of each domain
    link_scope: str  # what an anchor may name: 'its domains are 0–39 and its quality buckets Q0–Q4'
    plan: PlanSummary | None = None
    samples_per_cell: int = 0
    texts: dict[str, str] = field(default_factory=dict)  # with full texts: file beside the page -> its text
    notes: list[str] = field(default_factory=list)  # what a reader must know first: the clusters split by language


def published_name(uri: str) -> str:
    """How a published page names a store or a plan: a remote one by the URI it was given as (gs://bucket/store),
    a local one by its file or folder name alone, never by the writer's file system."""
    protocol, path = fsspec.core.split_protocol(uri)
    if protocol not in (None, "file", "local"):
        return uri
    return PurePosixPath(path.replace("\\", "/").rstrip("/")).name or path


def escaped_size(text: str) -> int:
    """Bytes `text` takes in the page: HTML-escaped, UTF-8."""
    return len(str(escape(text)).encode("utf-8"))


def split_text(text: str, head_chars: int, max_bytes: int, max_chars: int = MAX_DOC_CHARS) -> tuple[str, str]:
    """(head, rest): the head cut on a word boundary near `head_chars` (always kept whole), the rest as much of
    what follows as fits in `max_bytes` of escaped text in all and `max_chars` characters."""
    if len(text) <= head_chars:
        return text, ""
    head = text[:head_chars]
    space = max(head.rfind(" ", int(head_chars * 0.8)), head.rfind("\n", int(head_chars * 0.8)))
    if space > 0:
        head = head[:space]
    start = len(head)
    end = min(len(text), max_chars, start + max(0, max_bytes - escaped_size(head)))
    while end > start and (size := escaped_size(text[:end])) > max_bytes:  # shrink by the overshoot's ratio
        end = start + min(end - start - 1, int((end - start) * max_bytes / size))
    return head, text[start:max(start, end)]


def search_bytes(index: dict[int, dict[str, str]]) -> int:
    """Bytes the search index (`composition.search_index`) takes in the page, escaped."""
    return sum(escaped_size(v) for fields in index.values() for v in fields.values())


def doc_text_cap(n_docs: int, budget: int = TEXT_BUDGET) -> int:
    """Bytes of escaped text each document may take: the budget shared by the page's documents."""
    return budget // max(1, n_docs)


def _num(x: object) -> float | None:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


TEXTS = "texts"  # the folder beside index.html holding the whole texts (`--full-texts`)


def text_file(doc_id: str) -> str:
    """Where a document's whole text goes beside the page: texts/<sha256 of its id, 20 hex>.txt (an id may hold
    any character)."""
    return f"{TEXTS}/{hashlib.sha256(doc_id.encode('utf-8')).hexdigest()[:20]}.txt"


def _doc(row: dict, cap: int, texts: dict[str, str] | None = None) -> Doc:
    """A sampled document; with `texts` (full texts beside the page) a long one keeps only its head in the page,
    and its whole text goes into `texts`."""
    text = str(row.get("text") or "")
    head, rest = split_text(text, HEAD_CHARS, 0 if texts is not None else cap)
    file = ""
    if texts is not None and len(head) < len(text):
        file = text_file(str(row.get("id") or ""))
        texts[file] = text
    return Doc(file=file, id=str(row.get("id") or ""), source=str(row.get("source") or ""),
               content_type=str(row.get("content_type") or ""),
               language=None if row.get("language") is None else str(row["language"]),
               n_tokens=int(row.get("n_tokens") or 0), n_chars=len(text),
               quality_score=_num(row.get("quality_score")), cluster_distance=_num(row.get("cluster_distance")),
               head=head, rest=rest)


def _sources(info: StoreArtifact, uniform: pd.DataFrame) -> tuple[dict[tuple[int, int], list[SourceShare]], bool]:
    """Tokens per source of every cell: exact from store.json `cells[].sources`, else estimated from the uniform
    sample (token-weighted), as the explorer does."""
    exact = {(c.cluster, c.quality): c.sources for c in info.cells if c.sources}
    estimated = not exact and not uniform.empty
    if estimated:
        per = uniform.groupby(["cluster", "quality", "source"]).n_tokens.sum()
        exact = {}
        for (c, q, s), t in per.items():
            exact.setdefault((int(c), int(q)), {})[str(s)] = int(t)
    out = {}
    for key, by_source in exact.items():
        total = sum(by_source.values())
        rows = [SourceShare(name, float(t), t / total if total else 0.0) for name, t in by_source.items()]
        out[key] = sorted(rows, key=lambda r: (-r.tokens, r.name))
    return out, estimated


def _cutoffs(info: StoreArtifact, groups: pd.DataFrame, levels: int) -> tuple[list[CutoffRow], list[CutoffRow]]:
    n_edges = max(0, levels - 1)
    pad = lambda vals: ([float(v) for v in vals] + [None] * n_edges)[:n_edges]  # noqa: E731
    by_type = [CutoffRow(ctype, pad(cut), info.calibration_docs.get(ctype))
               for ctype, cut in sorted(info.raw_score_cutoffs.items())]
    by_group = [CutoffRow(str(g.group), pad(g.raw_cutoffs), int(g.sample_docs),
                          "" if g.map in (None, "own") and not g.fallback else composition.group_map_text(g.map, g.fallback))
                for g in groups.itertuples()]
    return by_type, by_group


def _plan_summary(plan: Plan, source: str, store_cells: set[str]) -> PlanSummary:
    listed = {c.cell for c in plan.cells}
    return PlanSummary(name=plan.name, plan_id=plan.plan_id, source=source,
                       phases=[PlanPhase(p.name, p.tokens) for p in plan.phases],
                       max_epochs=plan.settings.max_epochs, cells_missing=len(store_cells - listed))


class DamagedStore(ValueError):
    """A finished store missing what its store.json records (the message names the file and what to do)."""


def build_page(reader: StoreReader, plan: Plan | None = None, plan_source: str = "",
               samples_per_cell: int | None = None, text_budget: int = TEXT_BUDGET, full_texts: bool = False) -> Page:
    """The page of a complete store (raises StoreNotReady while it builds, FormatError for a store.json that does
    not match its format). `samples_per_cell`: at most this many uniform samples per cell (None: all);
    `full_texts`: every long sample's whole text in `Page.texts`, to be written beside the page, which keeps only
    their heads (the text budget then holds the search index alone)."""
    info = reader.store_info
    k = info.partition.k
    names = composition.quality_names(info)
    uniform = accounting.samples(reader, "uniform")
    if why := sample_shortfall(reader, len(uniform)):
        raise DamagedStore(why)  # a page without the documents it should show is published by no one
    labels = cluster_labels(info.clusters, uniform)
    cells = composition.cells_frame(accounting.published_cell_table(reader), info, labels)
    domains = composition.domains_frame(cells, info, labels)
    search = composition.search_index(domains, info, uniform)
    if samples_per_cell is not None and not uniform.empty:
        uniform = uniform.groupby(["cluster", "quality"], sort=False).head(samples_per_cell)
    cap = doc_text_cap(len(uniform), max(0, text_budget - search_bytes(search)))  # the index is read first
    docs: dict[tuple[int, int], list[Doc]] = {}
    texts: dict[str, str] | None = {} if full_texts else None
    for row in uniform.to_dict("records"):
        docs.setdefault((int(row["cluster"]), int(row["quality"])), []).append(_doc(row, cap, texts))
    sources, estimated = _sources(info, uniform)
    languages = accounting.language_mix(reader, "cluster")
    weights = [dict(p.weights) for p in plan.phases] if plan is not None else []
    exposure = plan.exposures() if plan is not None else {}
    cap_epochs = plan.settings.max_epochs if plan is not None else math.inf

    out_domains = []
    for d in domains.to_dict("records"):
        did = int(d["id"])
        out_cells = []
        for r in cells[cells.cluster == did].sort_values("quality").itertuples():
            q = int(r.quality)
            e = exposure.get(r.cell)
            out_cells.append(Cell(
                name=r.cell, quality=q, quality_name=names[q] if q < len(names) else f"Q{q}",
                tokens=int(r.tokens), docs=int(r.docs), share_in_domain=float(r.share_in_domain),
                enrichment=float(r.enrichment), sources=sources.get((did, q), []), sources_estimated=estimated,
                samples=docs.get((did, q), []), weights=[w.get(r.cell) for w in weights], epochs=e,
                over_cap=e is not None and e > cap_epochs * (1 + 1e-12)))
        lang = languages[languages.cluster == did] if not languages.empty else languages
        out_domains.append(Domain(
            id=did, number=f"{did:0{cluster_width(k)}d}", label=str(d["label"]), label_terms=list(d["name"].terms),
            more_terms=list(d["name"].more), label_generated=d["name"].generated, summary=str(d["summary"]),
            top_terms=list(d["top_terms"]), confidence=_num(d.get("confidence")),
            confidence_tag=d.get("confidence_tag") or None, title=str(d.get("title") or ""),
            tokens=int(d["tokens"]), docs=int(d["docs"]),
            share=float(d["share"]), languages=composition.language_line(lang) if len(lang) else "",
            cells=out_cells))

    c = composition.cards(info)
    by_type, by_group = _cutoffs(info, accounting.calibration_groups(reader), len(names))
    return Page(
        title=f"{info.spec.name}: cluster overview", headline=composition.headline(info),
        notes=[n for n in [composition.language_note(info)] if n],
        store=published_name(reader.uri), spec_name=info.spec.name,
        tokenizer=info.tokenizer, created=info.created, code_version=info.code_version,
        generator=f"mixture {__version__}",
        quality_names=names, bucket_edges=list(info.partition.bucket_edges),
        cards=[Card(t.label, t.value, t.detail) for t in composition.card_texts(info, cells)],
        drops=[Card(label, numbers.count(n)) for label, n in c.drops.items()],
        cutoffs=by_type, group_cutoffs=by_group, domains=out_domains, search=search,
        link_scope=composition.link_scope([d.id for d in out_domains], len(names)),
        plan=(_plan_summary(plan, published_name(plan_source), set(cells.cell[cells.tokens > 0]))
              if plan is not None else None),
        samples_per_cell=max((len(v) for v in docs.values()), default=0), texts=texts or {})
