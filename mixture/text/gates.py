"""What the length and heuristic gates measure: word count, symbol ratio and repeated lines of a document's head."""

from __future__ import annotations

import re
from collections import Counter

from mixture.text.kernel import kernel

HEAD = 100_000  # characters the symbol and line checks read

_SYMBOL = re.compile(r"[^\w \t\n]|_")  # neither alphanumeric (str.isalnum) nor a space, tab or newline
_ASCII_NOT_SYMBOL = bytes(b for b in range(128) if chr(b).isalnum() or chr(b) in " \t\n")


def symbol_count(text: str) -> int:
    """Characters that are neither alphanumeric nor a space, tab or newline, at C speed."""
    if text.isascii():
        return len(text.encode("ascii").translate(None, _ASCII_NOT_SYMBOL))
    return len(_SYMBOL.findall(text))


def gate_counts_py(text: str, min_words: int, head_chars: int = HEAD) -> tuple[bool, int, int, int, int]:
    """The counts of the compiled `gate_counts`, in Python: (fewer than min_words words, symbols in the head, head
    length, non-blank head lines, occurrences of head lines that repeat)."""
    head = text[:head_chars]
    lines = list(filter(str.strip, head.split("\n")))
    repeated = sum(c for c in Counter(lines).values() if c > 1)
    few = len(text.split(None, min_words)) < min_words  # stops splitting after min_words + 1 words
    return few, symbol_count(head), len(head), len(lines), repeated


def gate_counts(text: str, min_words: int) -> tuple[bool, int, int, int, int]:
    return kernel.gate_counts(text, min_words, HEAD) if kernel else gate_counts_py(text, min_words)
