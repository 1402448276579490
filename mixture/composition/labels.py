"""Readable cluster labels from store.json's labels and top terms, one way for the reports, the explorer and the
static page: terms that say the same (file, files; use, used, using) once, words in lower case, code tokens in code
style as the domain's sampled documents spell them (`assertEqual`), acronyms in capitals (AWS); the other top terms
beside the label."""

from __future__ import annotations

import keyword
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from mixture.store.formats import ClusterLabel

__all__ = ["DomainLabel", "Term", "cluster_labels", "dedup_terms", "domain_label", "generated_label", "label_of",
           "style_terms"]

LABEL_TERMS = 3  # terms in a label made from the top terms (as mixture.fit.clusters.label_clusters makes them)
_DOC_CHARS, _MAX_SCAN = 3_000, 120_000  # of each sampled document, and in all: enough to tell how a term is used
_SUFFIXES = ("ies", "es", "ing", "ed", "s", "d")
_STATEMENTS = {"def", "class", "import", "from", "return", "raise", "assert", "pass", "yield", "elif", "except",
               "lambda", "async", "await", "nonlocal", "global", "del"}
_KEYWORDS = set(keyword.kwlist) - {"and", "or", "not", "in", "is", "as", "if", "else", "for", "while", "with",
                                   "try", "finally", "break", "continue", "from", "import", "return", "class",
                                   "pass", "raise", "assert", "global", "yield"} | {"self", "cls", "kwargs", "args"}


@dataclass(frozen=True)
class Term:
    text: str
    code: bool = False  # shown in code style


@dataclass(frozen=True)
class DomainLabel:
    terms: tuple[Term, ...]  # the label: its terms, or one Term holding a label a person wrote
    more: tuple[Term, ...]  # the other top terms, shown beside the label (never repeating it)
    generated: bool  # made from the top terms (False: store.json's label was not the top terms)

    @property
    def text(self) -> str:
        """The label as plain text: 'self, assertEqual, def'."""
        return ", ".join(t.text for t in self.terms)

    @property
    def more_text(self) -> str:
        return " · ".join(t.text for t in self.more)


def _stems(term: str) -> set[str]:
    """The term and what it may be an ending of: files -> file, used -> use, using -> use, libraries -> library."""
    t = term.lower()
    out = {t}
    for suffix in _SUFFIXES:
        stem = t[: -len(suffix)]
        if t.endswith(suffix) and len(stem) >= 2:
            out |= {stem + "y"} if suffix == "ies" else {stem, stem + "e"} if suffix in ("ing", "ed") else {stem}
    return {s for s in out if len(s) >= 3}


def dedup_terms(terms: Iterable[str]) -> list[str]:
    """The terms without those that repeat an earlier one up to a plural or verb ending (codecs after codec,
    used and using after use), in their order."""
    kept: list[tuple[str, set[str]]] = []
    for term in terms:
        stems = _stems(term)
        if term and not any(stems & seen for _, seen in kept):
            kept.append((term, stems))
    return [t for t, _ in kept]


def generated_label(label: str, top_terms: list[str]) -> bool:
    """True when `label` is what the fit writes from the top terms ('sparse matrix, numpy, scipy'; older fits
    title-cased them: 'Self, Assertequal, Def'), possibly more terms or a ' (7)' suffix, or empty: then a readable
    label is made from the terms instead."""
    base = re.sub(r"\s\(\d+\)$", "", (label or "").strip())
    if not base or re.fullmatch(r"[Cc]luster \d+", base):
        return True
    return any(base in (", ".join(top_terms[:n]), ", ".join(t.title() for t in top_terms[:n]))
               for n in range(1, len(top_terms) + 1))


def _is_camel(word: str) -> bool:
    return bool(re.search(r"[a-z][A-Z]", word)) or (word[:1].isupper() and any(c.isupper() for c in word[1:])
                                                     and not word.isupper())


def _in_code(text: str, start: int, end: int) -> bool:
    """The occurrence text[start:end] is used as code: an attribute or a call, an argument name, a camelCase or
    back-quoted spelling, or a statement keyword at the start of a line."""
    word = text[start:end]
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    after2 = text[end + 1] if end + 1 < len(text) else ""
    if _is_camel(word) or before in ("`", "$", "@", "_") or after in ("(", "_", "[", "`", "="):
        return True
    if before == "." and start >= 2 and not text[start - 2].isspace():
        return True  # obj.term
    if after == "." and (after2.isalnum() or after2 == "_"):
        return True  # term.attr
    if word.lower() in _STATEMENTS:
        line_start = text.rfind("\n", 0, start) + 1
        return text[line_start:start].strip() == "" and after in (" ", ":", "\n", "")
    return False


def _style(term: str, uses: Counter, code: Counter) -> Term:
    """How `term` is shown from its uses (spelling -> count) and its uses as code in a domain's sampled documents:
    code style and its most common code spelling when at least half of its uses are code; capitals when it is an
    acronym written so (AWS, XML); else lower case."""
    if "_" in term or any(c in "0123456789" for c in term):
        return Term(term, code=True)
    total = sum(uses.values())
    if total:
        if sum(code.values()) * 2 >= total:
            return Term(code.most_common(1)[0][0], code=True)
        caps = sum(n for w, n in uses.items() if w.isupper())
        return Term(term.upper() if len(term) <= 4 and caps * 5 >= total * 4 else term.lower())
    return Term(term.lower(), code=term.lower() in _KEYWORDS)


def _scan_text(texts: Iterable[str]) -> str:
    """The heads of a domain's sampled documents, up to `_MAX_SCAN` characters in all."""
    out, size = [], 0
    for t in texts:
        head = str(t or "")[:_DOC_CHARS]
        out.append(head)
        size += len(head) + 1
        if size >= _MAX_SCAN:
            break
    return "\n".join(out)


def style_terms(terms: Iterable[str], texts: Iterable[str] = ()) -> list[Term]:
    """Each term styled by its uses in `texts` (a domain's sampled documents; their heads are enough to tell)."""
    terms = list(terms)
    text = _scan_text(texts)
    uses: dict[str, Counter] = {t.lower(): Counter() for t in terms}
    code: dict[str, Counter] = {t.lower(): Counter() for t in terms}
    if text and terms:
        alternatives = "|".join(re.escape(t) for t in sorted(uses, key=len, reverse=True))
        lower = text.lower()
        same = len(lower) == len(text)  # matching the lower-cased text is faster; positions agree unless İ & co
        pattern = re.compile(rf"\b(?:{alternatives})\b", 0 if same else re.IGNORECASE)
        for m in pattern.finditer(lower if same else text):
            word = text[m.start():m.end()]
            uses[word.lower()][word] += 1
            if _in_code(text, m.start(), m.end()):
                code[word.lower()][word] += 1
    return [_style(t, uses[t.lower()], code[t.lower()]) for t in terms]


def domain_label(label: str, top_terms: list[str], texts: Iterable[str] = (), n: int = LABEL_TERMS) -> DomainLabel:
    """The label of a domain: store.json's `label` when a person wrote it, else its first `n` distinct top terms,
    styled by how `texts` (the domain's sampled documents) use them; `more` holds the other distinct terms."""
    distinct = dedup_terms(top_terms)
    styled = style_terms(distinct, texts)
    if not generated_label(label, top_terms):
        return DomainLabel((Term(label.strip()),), tuple(styled), generated=False)
    if not styled:
        return DomainLabel((Term(label.strip() or "unlabelled"),), (), generated=True)
    return DomainLabel(tuple(styled[:n]), tuple(styled[n:]), generated=True)


def cluster_labels(clusters: Iterable[ClusterLabel], samples: pd.DataFrame | None = None) -> dict[int, DomainLabel]:
    """{cluster: its readable label} of store.json's clusters; with `samples` (rows with `cluster` and `text`, as
    `mixture.accounting.samples` gives them), each label's terms are styled by how its sampled documents use them."""
    texts = ({int(c): list(g.text) for c, g in samples.groupby("cluster")}
             if samples is not None and not samples.empty else {})
    return {c.id: domain_label(c.label, list(c.top_terms), texts.get(c.id, ())) for c in clusters}


def label_of(labels: Mapping[int, DomainLabel], cluster: int) -> DomainLabel:
    """The cluster's label in `labels` (`cluster_labels`), else `cluster N` (a cluster store.json does not list)."""
    return labels.get(cluster) or DomainLabel((Term(f"cluster {cluster}"),), (), generated=True)
