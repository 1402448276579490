"""Unicode and whitespace normalisation; the exact-dedup key is a hash of the normalised text."""

from __future__ import annotations

import re
import unicodedata

import xxhash

_LINE_SPACE = " \t\f\v\u00a0"
_TRAILING_WS = re.compile(f"[{_LINE_SPACE}]+\n")
_MANY_BLANK_LINES = re.compile(r"\n{4,}")


def normalize_text(text: str) -> str:
    """NFC, LF line ends, no trailing spaces on lines, at most 3 blank lines in a row, outer whitespace stripped.

    Each rewrite runs only when a C-speed substring test shows it can change something (most text needs none)."""
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if any(f"{c}\n" in text for c in _LINE_SPACE):  # the end of the text is covered by strip()
        text = _TRAILING_WS.sub("\n", text)
    if "\n\n\n\n" in text:
        text = _MANY_BLANK_LINES.sub("\n\n\n", text)
    return text.strip()


def text_hash(text: str) -> int:
    """Stable 64-bit hash (xxh3) of already-normalised text."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8"))


def stable_unit(key: str, seed: int) -> float:
    """A deterministic pseudo-random number in [0, 1) for `key` under `seed` (seeded uniform sampling)."""
    return xxhash.xxh64_intdigest(key.encode("utf-8"), seed=seed) / 2**64
