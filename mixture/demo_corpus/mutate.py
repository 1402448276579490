"""Planted copies: exact duplicates that differ only in what normalisation removes, and ~1 %-edited near copies."""

from __future__ import annotations

import random
import re

from .textutil import jaccard, normalize

EXACT_VARIANTS = ("identical", "identical", "trailing_spaces", "crlf", "crlf_trailing_spaces", "outer_whitespace")
_TOKEN_RE = re.compile(r"(\s+)")


def exact_copy(text: str, variant: str, rng: random.Random) -> str:
    """A copy whose normalised text equals normalize(text) but whose bytes may differ."""
    out = text
    if variant in ("trailing_spaces", "crlf_trailing_spaces"):
        lines = out.split("\n")
        picks = set(rng.sample(range(len(lines)), max(1, len(lines) // 2)))
        out = "\n".join(ln + " " * rng.randint(1, 3) if i in picks else ln for i, ln in enumerate(lines))
    if variant in ("crlf", "crlf_trailing_spaces"):
        out = out.replace("\n", "\r\n")
    if variant == "outer_whitespace":
        out = "\n  " + out + "  \n\n"
    assert normalize(out) == normalize(text), variant
    return out


def near_copy(text: str, rng: random.Random, vocab: list[str], *, low: float = 0.9) -> tuple[str, float]:
    """Replace about 1 word in 100..160 by another real word; returns (copy, 5-gram shingle Jaccard >= low)."""
    tokens = _TOKEN_RE.split(text)
    slots = [i for i, t in enumerate(tokens) if t.isalpha() and len(t) > 2]
    n_words = len(text.split())
    k = max(1, round(n_words * rng.uniform(1 / 160, 1 / 100)))
    while True:
        k = min(k, len(slots))
        step = max(1, len(slots) // k)
        chosen = [slots[min(len(slots) - 1, j * step + rng.randrange(step))] for j in range(k)]
        new = list(tokens)
        for i in chosen:
            old = tokens[i].lower()
            repl = rng.choice(vocab)
            while repl.lower() == old:
                repl = rng.choice(vocab)
            new[i] = repl.capitalize() if tokens[i][:1].isupper() else repl
        copy = "".join(new)
        jac = jaccard(text, copy)
        if low <= jac < 1.0 and normalize(copy) != normalize(text):
            return copy, jac
        if k == 1:
            raise ValueError("text too short for a near copy")
        k = max(1, k // 2)
