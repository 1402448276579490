"""Cluster labels a person reads as topics: distinctive words and phrases of each cluster's sample documents
against the whole sample (no stop word of any language, no programming keyword), a name from its exemplars' titles,
its languages, and a label confidence that measures how coherent the label's terms are (docs/build.md, Clusters)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from itertools import combinations, islice

import numpy as np
import scipy.sparse as sp

from mixture.fit.embed import TermCounts, min_df_for
from mixture.fit.label_terms import allowed, word_allowed

TOP_TERMS, LABEL_TERMS = 8, 3
HEAD_CHARS = 3_000  # of each exemplar text: its title and phrases
EXEMPLARS = 200  # sample documents nearest each cluster's centre whose text gives its phrases and name
PHRASE_SHARE = 0.5  # a phrase stands for its word when at least this share of the word's documents hold the phrase
COHERENCE_TERMS = 5  # the confidence is the coherence of this many top terms (NPMI@5, as topic models report it)
HIGH, MEDIUM = 0.5, 0.25  # confidence (mean NPMI of the top terms) of a "high" and a "medium" label
MIN_CLUSTER_SHARE = 0.05  # a label term is in at least this share of its cluster's sample documents
LANGUAGE_SHARE = 0.1  # a cluster "holds" a language with at least this share of its sample tokens
_WORD = r"[^\W\d_]{3,}"
_PAIR = re.compile(rf"\b({_WORD})(?=[ \t]+({_WORD})\b)")  # the first word read past: 1.2x faster than all in the lookahead
_UNDERLINE = re.compile(r"^\s*[-=~*]{3,}\s*$")
_MAN_NAME = re.compile(r"^[\w.+-]+(?:, [\w.+-]+)* [-\u2013\u2014] \w.{3,}$")  # a man page's NAME line
_QUOTES = re.compile(r"^[rRbBuU]?(?:\"\"\"|\'\'\'|\"|\')|(?:\"\"\"|\'\'\')$")
_CODE_LINE = re.compile(r"[(){}\[\]=;<>@`|\\]|^#!|^(?:import|from|def|class|return)\b|^\w+:\s|^(?:copyright|spdx)",
                        re.IGNORECASE)
_KATAKANA = re.compile(r"[\u30a0-\u30ff]{3,}")


def title_of(text: str) -> str | None:
    """A document's title: a man page's NAME line (`faillog - display faillog records`) among its first lines, else
    its first non-blank line when text follows it and it reads as a heading (a Markdown `#` heading, a line
    underlined with = or -, or a line followed by a blank line) of 2 to 10 words that is not code (no bracket,
    `=`, `;`, shebang, `import`/`from`, speaker tag or licence line); else None."""
    lines = text[:HEAD_CHARS].splitlines()
    filled = list(islice((i for i, line in enumerate(lines) if line.strip()), 12))  # the first 12 are read
    for i in filled:
        if len(lines[i].strip()) <= 90 and (m := _MAN_NAME.match(lines[i].strip())):
            return m.group(0)
    if len(filled) < 2:
        return None
    first = filled[0]
    if lines[first].lstrip().startswith("#!"):
        return None
    line = _QUOTES.sub("", lines[first].strip()).strip()
    nxt = lines[first + 1]
    heading = line.startswith("#") or _UNDERLINE.match(nxt) or not nxt.strip()
    line = line.strip(" #=-:")
    words = line.split()
    if not heading or not 2 <= len(words) <= 10 or len(line) > 80 or _CODE_LINE.search(line):
        return None
    return line


def _phrases(text: str) -> set[str]:
    """The adjacent word pairs of a text's head (words of 3 letters or more, a space or tab between them) whose
    words may be in a label."""
    pairs = set(_PAIR.findall(text[:HEAD_CHARS].lower()))  # lower-case words: each checked once, cached
    return {f"{a} {b}" for a, b in pairs if word_allowed(a) and word_allowed(b)}


def _scores(df_cluster: np.ndarray, n_cluster: np.ndarray, df_all: np.ndarray, n_all: int) -> np.ndarray:
    """Distinctiveness of each term for each cluster: p_c · log(p_c / p), where p_c is the share of the cluster's
    documents that hold the term and p its share of all documents (a term as frequent everywhere scores 0; one that
    only this cluster uses and most of its documents hold scores highest). 0 below 2 documents of the cluster or
    below MIN_CLUSTER_SHARE of them (a word of a few documents says nothing about the cluster)."""
    pc = df_cluster / np.maximum(n_cluster, 1)[:, None]
    p = np.maximum(df_all / max(n_all, 1), 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = pc * np.log(pc / p[None, :])
    s[~np.isfinite(s) | (pc <= p[None, :]) | (df_cluster < 2) | (pc < MIN_CLUSTER_SHARE)] = 0.0
    return s


def _npmi(docs: list[set[int]], n: int) -> float:
    """Mean normalised pointwise mutual information of the terms' pairs over the sample's documents (each term
    given by the documents that hold it): 1 when they always occur together, 0 when independently, -1 never."""
    values = []
    for a, b in combinations(docs, 2):
        pa_, pb, pab = len(a) / n, len(b) / n, len(a & b) / n
        if not pa_ or not pb:
            continue
        values.append(-1.0 if pab == 0 else 1.0 if pab == 1 else np.log(pab / (pa_ * pb)) / -np.log(pab))
    return float(np.mean(values)) if values else 0.0


def _exemplar_rows(labels: np.ndarray, distance: np.ndarray | None, k: int) -> dict[int, np.ndarray]:
    """Each cluster's sample documents nearest its centre (EXEMPLARS at most; all of them without distances)."""
    out = {}
    for c in range(k):
        rows = np.flatnonzero(labels == c)
        if distance is not None:
            rows = rows[np.argsort(distance[rows], kind="stable")]
        out[c] = rows[:EXEMPLARS]
    return out


def cluster_languages(labels: np.ndarray, languages: Sequence[str] | None, tokens: np.ndarray, k: int
                      ) -> list[tuple[list[str], float]]:
    """Per cluster: (its languages holding ≥ LANGUAGE_SHARE of its sample tokens, most first; the largest one's
    share)."""
    out = []
    for c in range(k):
        rows = np.flatnonzero(labels == c)
        if languages is None or not len(rows):
            out.append(([], 0.0))
            continue
        weight: Counter = Counter()
        for r in rows.tolist():
            weight[languages[r]] += float(tokens[r])
        total = sum(weight.values()) or 1.0
        ranked = sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))
        out.append(([lang for lang, w in ranked if w / total >= LANGUAGE_SHARE], round(ranked[0][1] / total, 4)))
    return out


def label_counted_clusters(counted: TermCounts, labels: np.ndarray, k: int, texts: dict[int, str] | None = None,
                           distance: np.ndarray | None = None, languages: Sequence[str] | None = None,
                           tokens: np.ndarray | None = None) -> list[dict]:
    """The label of each of k clusters of the sample documents counted in `counted` (`labels`: each document's
    cluster). `texts`: {document: text} of (at least) each cluster's exemplars, its EXEMPLARS documents nearest its
    centre, for phrases and names; `distance`: each document's distance to its cluster's centre (None: a cluster's
    first documents are its exemplars); `languages`, `tokens`: per document."""
    labels = np.asarray(labels)
    n = counted.n_docs
    selected = counted.select(max_features=50_000, min_df=min_df_for(n))
    keep = np.array([allowed(t) for t in selected.terms], dtype=bool)
    terms = [t for t, ok in zip(selected.terms, keep, strict=True) if ok]
    binary = (selected.counts[:, np.flatnonzero(keep)] > 0).astype(np.float64).tocsc()
    docs = np.flatnonzero((labels >= 0) & (labels < k))
    member = sp.csr_matrix((np.ones(len(docs)), (labels[docs], docs)), shape=(k, n))
    n_cluster = np.bincount(labels[docs], minlength=k).astype(np.float64)
    df_all = np.asarray(binary.sum(axis=0)).ravel()
    word_scores = _scores((member @ binary).toarray(), n_cluster, df_all, n) if terms else np.zeros((k, 0))
    word_docs = _TermDocs(terms, binary)
    exemplars = _exemplar_rows(labels, distance, k)
    phrase_docs = _phrase_docs(texts, exemplars) if texts else {}
    tok = np.ones(n) if tokens is None else np.asarray(tokens, dtype=np.float64)
    langs = cluster_languages(labels, languages, tok, k)
    used: set[str] = set()
    out = []
    for c in range(k):
        ranked = _ranked(word_scores[c], terms, word_docs, phrase_docs.get(c, {}), exemplars[c])
        ranked = _whole_words(ranked, _katakana_words(texts, exemplars[c]))
        top = ranked[:TOP_TERMS]
        n_label = LABEL_TERMS
        label = ", ".join(top[:n_label])
        while (label in used or not label) and n_label < len(ranked):
            n_label += 1
            label = ", ".join(ranked[:n_label])
        if not label:  # every frequent word of it is a stop word (a list of stop words, say): no topic to name
            label = f"cluster {c}"
        elif label in used:
            label = f"{label} ({c})"
        used.add(label)
        sets = [_docs_of(t, word_docs, phrase_docs.get(c, {})) for t in top[:COHERENCE_TERMS]]
        confidence = max(0.0, _npmi([s for s in sets if s], n))
        rows = set(np.flatnonzero(labels == c).tolist())
        held = set().union(*sets[:n_label]) if top else set()
        coverage = len(rows & held) / len(rows) if rows else 0.0
        out.append({
            "id": c, "label": label, "top_terms": top, "summary": " · ".join(top),
            "name": _name(texts, exemplars[c], top), "confidence": round(confidence, 4),
            "confidence_tag": "high" if confidence >= HIGH else "medium" if confidence >= MEDIUM else "low",
            "coverage": round(coverage, 4), "languages": langs[c][0], "language_share": langs[c][1],
        })
    return out


class _TermDocs:
    """{term: the sample documents holding it}, each set made when first asked for (a label needs a few dozen of
    the vocabulary's terms; all of them would be one Python int per term occurrence of the sample)."""

    def __init__(self, terms: list[str], binary: sp.csc_matrix):
        self.column = {t: j for j, t in enumerate(terms)}
        self.binary = binary
        self.made: dict[str, set[int]] = {}

    def __contains__(self, term: str) -> bool:
        return term in self.column

    def __getitem__(self, term: str) -> set[int]:
        if term not in self.made:
            j = self.column[term]
            self.made[term] = set(self.binary.indices[self.binary.indptr[j]:self.binary.indptr[j + 1]].tolist())
        return self.made[term]


def _phrase_docs(texts: dict[int, str], exemplars: dict[int, np.ndarray]) -> dict[int, dict[str, set[int]]]:
    """Per cluster: {phrase: its exemplars holding it} over each cluster's exemplar texts."""
    out: dict[int, dict[str, set[int]]] = {}
    for c, rows in exemplars.items():
        found: dict[str, set[int]] = {}
        for r in rows.tolist():
            for p in _phrases(texts.get(r, "")):
                found.setdefault(p, set()).add(r)
        out[c] = {p: d for p, d in found.items() if len(d) >= 3}
    return out


def _katakana_words(texts: dict[int, str] | None, exemplars: np.ndarray) -> Counter:
    """Runs of 3 katakana or more in the exemplars' texts, with their counts: the words a katakana letter pair
    (what the embedder counts in scripts written without spaces) belongs to."""
    runs: Counter = Counter()
    for r in exemplars.tolist() if texts else []:
        runs.update(_KATAKANA.findall(texts.get(r, "")))
    return runs


def _whole_words(ranked: list[str], katakana: Counter) -> list[str]:
    """The ranked terms with a katakana letter pair replaced by the most frequent katakana word that holds it
    (ファ → ファイル), a pair of none dropped when it starts with a small kana or a long-vowel mark (a word's middle:
    ァイ), each term once."""
    out: list[str] = []
    for term in ranked:
        if len(term) == 2 and all("\u30a0" <= ch <= "\u30ff" for ch in term):
            words = [(n, w) for w, n in katakana.items() if term in w]
            if words:
                term = max(words)[1]
            elif term[0] in "ァィゥェォッャュョヮヵヶー":
                continue
        if term not in out:
            out.append(term)
    return out


def _docs_of(term: str, word_docs: _TermDocs, phrases: dict[str, set[int]]) -> set[int]:
    """The sample documents holding a term: a phrase by the documents holding each of its words (its exemplars
    holding it when a word is not in the vocabulary)."""
    words = term.split()
    if all(w in word_docs for w in words):
        return set.intersection(*(word_docs[w] for w in words))
    return phrases.get(term, set())


def _ranked(scores: np.ndarray, terms: list[str], word_docs: _TermDocs, phrases: dict[str, set[int]],
            exemplars: np.ndarray) -> list[str]:
    """The cluster's terms by distinctiveness, a word replaced by the phrase that holds it in most of the
    exemplars that hold the word (at least PHRASE_SHARE of them), each word once."""
    ex = set(exemplars.tolist())
    out: list[str] = []
    seen: set[str] = set()
    for j in np.argsort(-scores, kind="stable")[: TOP_TERMS * 4]:
        if scores[j] <= 0 or len(out) >= TOP_TERMS * 2:
            break
        word = terms[j]
        if word in seen:
            continue
        held = word_docs[word] & ex
        best = max((p for p in phrases if word in p.split()), default=None,
                   key=lambda p: (len(phrases[p]), p))
        if best and held and len(phrases[best]) >= PHRASE_SHARE * len(held) and not set(best.split()) & seen:
            out.append(best)
            seen |= set(best.split())
        else:
            out.append(word)
            seen.add(word)
    return out


def _name(texts: dict[int, str] | None, exemplars: np.ndarray, top: list[str]) -> str | None:
    """The title among the exemplars' that holds the most of the cluster's top words (the nearest exemplar's on
    ties); None when no exemplar has a title holding one."""
    if not texts:
        return None
    words = {w for t in top for w in t.split()}
    best, best_hits = None, 0
    for r in exemplars.tolist():
        title = title_of(texts.get(r, ""))
        if not title:
            continue
        hits = len(words & set(re.findall(r"\w+", title.lower())))
        if hits > best_hits:
            best, best_hits = title, hits
    return best
