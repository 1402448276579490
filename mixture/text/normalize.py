"""Unicode and whitespace normalisation; the exact-dedup key is a hash of the normalised text."""

from __future__ import annotations

import re
import unicodedata

import xxhash

from mixture.text.kernel import kernel

_LINE_SPACE = " \t\f\v\u00a0"
_TRAILING_WS = re.compile(f"[{_LINE_SPACE}]+\n")
_MANY_BLANK_LINES = re.compile(r"\n{4,}")


def rewrite_flags_py(text: str) -> tuple[bool, bool, bool]:
    """(has "\r", has a line space before a newline, has 4 newlines in a row): which rewrites can change the text."""
    return "\r" in text, any(f"{c}\n" in text for c in _LINE_SPACE), "\n\n\n\n" in text


def rewrite_flags(text: str) -> tuple[bool, bool, bool]:
    return kernel.normalize_flags(text) if kernel else rewrite_flags_py(text)


def normalize_text(text: str) -> str:
    """NFC, LF line ends, no trailing spaces on lines, at most 3 blank lines in a row, outer whitespace stripped.

    Each rewrite runs only when one scan of the text shows it can change something (most text needs none)."""
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    cr, trailing, blank4 = rewrite_flags(text)
    if cr:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        _, trailing, blank4 = rewrite_flags(text)
    if trailing:  # the end of the text is covered by strip()
        text = _TRAILING_WS.sub("\n", text)
        blank4 = "\n\n\n\n" in text
    if blank4:
        text = _MANY_BLANK_LINES.sub("\n\n\n", text)
    return text.strip()


def text_hash(text: str) -> int:
    """Stable 64-bit hash (xxh3) of already-normalised text."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8"))


def stable_unit(key: str, seed: int) -> float:
    """A deterministic pseudo-random number in [0, 1) for `key` under `seed` (seeded uniform sampling)."""
    return xxhash.xxh64_intdigest(key.encode("utf-8"), seed=seed) / 2**64
