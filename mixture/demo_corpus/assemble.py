"""Assemble new documents from real text: web-like pages from paragraphs, agentic dialogues from docstrings."""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass

from .docstrings import Docstring
from .textutil import is_prose, normalize, one_line, paragraphs

_ALPHA_RE = re.compile(r"^[A-Za-z]{4,12}$")


@dataclass(frozen=True)
class Group:
    """Consecutive prose paragraphs of one origin (a docstring, a reference topic, a package document)."""

    title: str
    paragraphs: tuple[str, ...]


def paragraph_pool(docstrings: list[Docstring], topics: dict[str, str], package_docs: list[dict]) -> list[Group]:
    groups = []
    for d in docstrings:
        ps = tuple(p for p in paragraphs(d.text) if is_prose(p))
        if ps:
            groups.append(Group(d.name, ps))
    for name in sorted(topics):
        ps = tuple(p for p in paragraphs(topics[name]) if is_prose(p))
        if ps:
            groups.append(Group(name, ps))
    for rec in package_docs:
        ps = tuple(p for p in paragraphs(rec["text"]) if is_prose(p) and len(p) < 4000)
        if ps:
            groups.append(Group(rec["id"].split("/")[1].split("-")[0], ps))
    return groups


def vocabulary(groups: list[Group], limit: int = 20000) -> list[str]:
    """Sorted plain words (4-12 ASCII letters) of the pool: replacement words for near copies."""
    vocab: set[str] = set()
    for g in groups:
        for p in g.paragraphs:
            vocab.update(w.lower() for w in p.split() if _ALPHA_RE.match(w))
        if len(vocab) >= limit:
            break
    return sorted(vocab)


def n_words(text: str) -> int:
    return len(text.split())


def web_length(rng: random.Random) -> int:
    """Target words of a web-like page: short, medium (the near-duplicate range 300-1000) or long."""
    r = rng.random()
    if r < 0.35:
        return rng.randint(80, 300)
    if r < 0.85:
        return rng.randint(320, 850)
    return rng.randint(1000, 2000)


def group_weights(groups: list[Group]) -> list[int]:
    """Cumulative words per group: longer origins are drawn more often, so pages read like articles."""
    return list(itertools.accumulate(sum(n_words(p) for p in g.paragraphs) for g in groups))


def web_document(groups: list[Group], cum_weights: list[int], rng: random.Random, target_words: int) -> str:
    """A title, then runs of 1-3 consecutive paragraphs from random origins (each new origin as a subheading)."""
    g = rng.choices(groups, cum_weights=cum_weights)[0]
    parts, count = [g.title], 0
    while count < target_words:
        if len(parts) > 1:
            g = rng.choices(groups, cum_weights=cum_weights)[0]
            parts.append(g.title)
        start = rng.randrange(len(g.paragraphs))
        run = g.paragraphs[start : start + rng.randint(1, 3)]
        parts.extend(run)
        count += sum(n_words(p) for p in run)
    return normalize("\n\n".join(parts))


def long_document(groups: list[Group], rng: random.Random, min_chars: int) -> str:
    """One very long page: every pool paragraph in seeded group order, cycling until min_chars."""
    order = list(range(len(groups)))
    rng.shuffle(order)
    parts, size, i = [], 0, 0
    while size < min_chars:
        g = groups[order[i % len(order)]]
        parts.append(g.title)
        parts.extend(g.paragraphs)
        size += sum(len(p) + 2 for p in g.paragraphs) + len(g.title) + 2
        i += 1
    return normalize("\n\n".join(parts))


def dialogue_modules(docstrings: list[Docstring]) -> list[list[Docstring]]:
    """Function and class docstrings (>= 10 words) grouped by module, modules in sorted order."""
    by_mod: dict[str, list[Docstring]] = {}
    for d in docstrings:
        if d.kind != "module" and n_words(d.text) >= 10:
            by_mod.setdefault(d.module, []).append(d)
    return [by_mod[m] for m in sorted(by_mod)]


def dialogue(docs: list[Docstring], rng: random.Random) -> str:
    """An agentic exchange: the user asks about objects of one module, the assistant looks each up with help()."""
    picks = rng.sample(docs, min(len(docs), rng.randint(1, 4)))
    turns = []
    for j, d in enumerate(picks):
        if j == 0:
            turns.append(f"User: I am working with the `{d.module}` module. What does `{d.name}` do?")
        else:
            turns.append(f"User: And what about `{d.name}`?")
        turns.append(f"Assistant: Let me read the documentation of `{d.name}` first.")
        turns.append(f'Action: python -c "import {d.module}; help({d.name})"')
        short = d.qualname.split(".")[-1]
        turns.append(f"Observation: Help on {d.kind} {short} in module {d.module}:\n\n{d.text}")
        turns.append(f"Assistant: {one_line(d.text.split(chr(10) * 2)[0])}")
    return normalize("\n\n".join(turns))
