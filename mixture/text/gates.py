"""What the length and heuristic gates measure: word count (right for scripts written without spaces), symbol
ratio and repeated lines of a document's head."""

from __future__ import annotations

import re
from collections import Counter

from mixture.text.kernel import kernel

HEAD = 100_000  # characters the symbol and line checks read

# Scripts written without spaces between words (Han, Hiragana, Katakana, Thai, Lao, Myanmar, Khmer) and the CJK
# punctuation and fullwidth forms written with them: each of their letters is one word of the word gate, their
# other characters separate (docs/build.md, Gates). Keep equal to UNSPACED in _signals.c.
UNSPACED_RANGES = (
    (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF), (0x2E80, 0x2FDF),
    (0x3000, 0x312F), (0x31A0, 0x31BF), (0x31F0, 0x31FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF),
    (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F), (0xF900, 0xFAFF), (0xFE30, 0xFE6F), (0xFF00, 0xFFEF), (0x16FE0, 0x16FFF),
    (0x1B000, 0x1B16F), (0x20000, 0x323AF),
)
_UNSPACED = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in UNSPACED_RANGES)
_GATE_WORD = re.compile(f"[{_UNSPACED}]|[^\\s{_UNSPACED}]+")  # one character of those scripts, or a run of others
_SYMBOL = re.compile(r"[^\w \t\n]|_")  # neither alphanumeric (str.isalnum) nor a space, tab or newline
_ASCII_NOT_SYMBOL = bytes(b for b in range(128) if chr(b).isalnum() or chr(b) in " \t\n")


def symbol_count(text: str) -> int:
    """Characters that are neither alphanumeric nor a space, tab or newline, at C speed."""
    if text.isascii():
        return len(text.encode("ascii").translate(None, _ASCII_NOT_SYMBOL))
    return len(_SYMBOL.findall(text))


def gate_words(text: str, cap: int | None = None) -> int:
    """Words as the word gate counts them (at most `cap`): each letter of a script written without spaces is a
    word (its marks and punctuation separate), elsewhere each run of characters between whitespace."""
    if text.isascii() or max(text) < "\u0e00":
        return len(text.split()) if cap is None else min(cap, len(text.split(None, cap)))
    n = 0
    for m in _GATE_WORD.finditer(text):
        w = m.group()
        n += len(w) > 1 or not _in_unspaced(w) or w.isalpha()
        if cap is not None and n >= cap:
            break
    return n


def _in_unspaced(ch: str) -> bool:
    c = ord(ch)
    return any(a <= c <= b for a, b in UNSPACED_RANGES)


def gate_counts_py(text: str, min_words: int, head_chars: int = HEAD) -> tuple[bool, int, int, int, int]:
    """The counts of the compiled `gate_counts`, in Python: (fewer than min_words words, symbols in the head, head
    length, non-blank head lines, occurrences of head lines that repeat)."""
    head = text[:head_chars]
    lines = list(filter(str.strip, head.split("\n")))
    repeated = sum(c for c in Counter(lines).values() if c > 1)
    few = gate_words(text, min_words) < min_words  # stops counting at min_words
    return few, symbol_count(head), len(head), len(lines), repeated


def gate_counts(text: str, min_words: int) -> tuple[bool, int, int, int, int]:
    return kernel.gate_counts(text, min_words, HEAD) if kernel else gate_counts_py(text, min_words)
