"""Text helpers of the demo corpus: the project's normalisation, word shingles, Jaccard, paragraph splitting."""

from __future__ import annotations

import ast
import json
import re
import unicodedata
import warnings

_WORD_RE = re.compile(r"\w+")
_TRAILING_WS_RE = re.compile(r"[ \t]+$", re.MULTILINE)
_PARA_SPLIT_RE = re.compile(r"\n\s*\n")
_SPACE_RE = re.compile(r"\s+")
_NON_LETTER_RE = re.compile(r"[^\w\s]|[\d_]")
SHINGLE_SIZE = 5


def normalize(text: str) -> str:
    """The exact-duplicate normalisation: NFC, CRLF/CR -> LF, trailing blanks per line stripped, outer strip."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _TRAILING_WS_RE.sub("", text).strip()


def words(text: str) -> list[str]:
    """Lower-cased `\\w+` words: the unit of shingles and n-grams here."""
    return _WORD_RE.findall(text.lower())


def shingles(text: str, n: int = SHINGLE_SIZE) -> set[tuple[str, ...]]:
    w = words(text)
    if len(w) < n:
        return {tuple(w)} if w else set()
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def jaccard(a: str, b: str, n: int = SHINGLE_SIZE) -> float:
    """Jaccard similarity of the 5-word shingle sets of two texts."""
    sa, sb = shingles(a, n), shingles(b, n)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}


def one_line(text: str) -> str:
    """Collapse all whitespace runs to single spaces."""
    return _SPACE_RE.sub(" ", text).strip()


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, each normalised (no trailing blanks, no outer whitespace)."""
    return [p for p in (normalize(x) for x in _PARA_SPLIT_RE.split(text)) if p]


def is_prose(paragraph: str, min_words: int = 8) -> bool:
    """A paragraph reads as prose: enough words, mostly letters, no interactive code or tables."""
    if len(paragraph.split()) < min_words or ">>>" in paragraph or "..." in paragraph[:4]:
        return False
    if letter_share(paragraph) < 0.85:
        return False
    lines = paragraph.split("\n")
    return sum(line.startswith(("    ", "\t", "|", "+-", "==", "--", "*", "-", ":")) for line in lines) <= len(lines) // 3


def dumps_line(record: dict) -> str:
    """One JSON line; U+2028/U+2029/NEL escaped so no line splitter can break the record."""
    s = json.dumps(record, ensure_ascii=False)
    return s.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")


def letter_share(text: str) -> float:
    """Share of letters and whitespace among the characters of text."""
    return 1 - len(_NON_LETTER_RE.findall(text)) / max(1, len(text))


def parse_python(source: str) -> ast.Module | None:
    """The module's syntax tree, or None when it does not parse (warnings about the source silenced)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError):
        return None
