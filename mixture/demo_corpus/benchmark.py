"""The demo benchmark: questions and answers from docstrings of held-out stdlib modules kept out of the corpus."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .docstrings import Docstring, extract, module_name
from .local_files import read_text
from .textutil import is_prose, one_line, paragraphs, words

N_RECORDS = 100
DECONTAM_N = 13


@dataclass(frozen=True)
class Candidate:
    doc: Docstring
    question: str
    answer: str
    source_lines: tuple[str, ...]  # the docstring lines the answer comes from


def _leading_prose(text: str, max_words: int = 90) -> list[str]:
    """The docstring's leading prose paragraphs, as long as they stay within max_words together."""
    taken: list[str] = []
    for p in paragraphs(text):
        if not is_prose(p, min_words=3) or len(" ".join(taken + [p]).split()) > max_words:
            break
        taken.append(p)
    return taken


def held_out_order(stdlib_files: list[tuple[str, Path]], site_basenames: set[str], rng: random.Random) -> list[str]:
    """Top-level stdlib modules, seeded order; a module some package also ships (a vendored copy) is never used."""
    names = [r for r, _ in stdlib_files
             if "/" not in r and not r.startswith("_") and r not in ("this.py", "antigravity.py")
             and r not in site_basenames]
    rng.shuffle(names)
    return names


def _question(d: Docstring, answer: str) -> str:
    if d.kind == "class":
        return f"What is the class `{d.name}` of the Python standard library for?"
    if answer.startswith("Return"):
        return f"What does the function `{d.name}()` return?"
    return f"What does the function `{d.name}()` do?"


def collect(order: list[str], root: Path, want: int = 150, per_module: int = 25,
            min_per_module: int = 4) -> tuple[list[str], list[Candidate]]:
    """Walk held-out candidates until `want` usable docstrings: returns (held-out module paths, candidates)."""
    held, cands, seen = [], [], set()
    for relpath in order:
        if len(cands) >= want:
            break
        text = read_text(root / relpath, python_source=True)
        if text is None:
            continue
        mine: list[Candidate] = []
        for d in extract(text, module_name(relpath)):
            if d.kind == "module" or d.qualname.split(".")[-1].startswith("_") or len(mine) >= per_module:
                continue
            lead = _leading_prose(d.text)
            answer = one_line(" ".join(lead))
            if len(answer.split()) >= 20 and answer not in seen:
                seen.add(answer)
                lines = tuple(ln for p in lead for ln in p.splitlines())
                mine.append(Candidate(d, _question(d, answer), answer, lines))
        if len(mine) >= min_per_module:  # modules giving only one or two questions stay in the corpus
            held.append(relpath)
            cands.extend(mine)
    return held, cands


def drop_overlapping(cands: list[Candidate], texts: Iterable[str], n: int = DECONTAM_N) -> list[Candidate]:
    """Keep candidates none of whose answer n-grams occurs in texts (so only planted copies contaminate)."""
    owner: dict[tuple[str, ...], list[int]] = {}
    for i, c in enumerate(cands):
        w = words(f"{c.question} {c.answer}")
        for j in range(len(w) - n + 1):
            owner.setdefault(tuple(w[j : j + n]), []).append(i)
    bad: set[int] = set()
    for text in texts:
        w = words(text)
        for j in range(len(w) - n + 1):
            hit = owner.get(tuple(w[j : j + n]))
            if hit:
                bad.update(hit)
    return [c for i, c in enumerate(cands) if i not in bad]


def records(cands: list[Candidate], n: int = N_RECORDS) -> list[dict]:
    return [{"id": f"demo-bench-{i:03d}", "question": c.question, "answer": c.answer, "origin": c.doc.name}
            for i, c in enumerate(cands[:n])]


def guard(cands: list[Candidate]) -> Callable[[str], bool]:
    """A fast test for a file that holds a benchmark docstring line (e.g. a vendored copy of the module)."""
    lines = {k for c in cands for ln in c.source_lines if len(k := " ".join(words(ln))) >= 20}

    def holds(text: str) -> bool:
        return any(len(ln) >= 20 and " ".join(words(ln)) in lines for ln in text.splitlines())

    return holds
