"""The words decontamination compares, in every script, and which of them carry content.

A word is a run of word characters (`\\w`, as the MinHash shingles of mixture.text.shingles read them), except in the
scripts written without spaces between words: each Han, Hiragana or Katakana character is a word by itself, so a
Chinese or Japanese passage has n-grams of n characters instead of one "word" per clause. A content word has no digit
and at least two letters (`numbers`, `Zahlen`, `числа`); one Han or kana character also counts. Numbers (`1998`,
`0x1f`), single letters (`x`, the hex digits `a`-`f`) and identifiers with digits (`l2`, `utf8`) do not."""

from __future__ import annotations

import re

import numpy as np

# Han (with its iteration marks and the CJK compatibility and extension blocks), Hiragana, Katakana (full and half
# width). Hangul is left out: Korean separates words with spaces. Thai, Lao, Khmer and Myanmar also write no spaces,
# but a character of theirs is a letter, not a word: they keep the space-separated runs (longer n-grams, fewer
# matches, no false ones).
NO_SPACE_RANGES = ("\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
                   "\U00020000-\U0003134f")
_NO_SPACE = re.compile(f"[{NO_SPACE_RANGES}]")
# a run of word characters outside those scripts, or one word character inside them. The hasher reads the text
# lower-cased, and İ (U+0130) is the one character str.lower() turns into a word character and a non-word one (i and
# a combining dot): it ends the word it is in.
_TOKEN = re.compile(f"[^\\W{NO_SPACE_RANGES}\u0130]+\u0130?|\u0130|(?=[{NO_SPACE_RANGES}])\\w")


# the UTF-8 lead bytes of U+3000-U+9FFF, U+F000-U+FFFF and the supplementary planes: a text whose UTF-8 has none of
# them has no Han or kana character (a byte search each is several times faster than the expression over the text)
_LEAD_BYTES = (b"\xe3", b"\xe4", b"\xe5", b"\xe6", b"\xe7", b"\xe8", b"\xe9", b"\xef", b"\xf0")


def splits_characters(text: str) -> bool:
    """True when `text` holds a character of a script written without spaces (its words are not \\w runs)."""
    if text.isascii():
        return False
    data = text.encode("utf-8", "surrogatepass")
    return any(b in data for b in _LEAD_BYTES) and _NO_SPACE.search(text) is not None


def token_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) in `text` of every word, in order."""
    return [m.span() for m in _TOKEN.finditer(text)]


def words(text: str) -> list[str]:
    """The words of `text`, in order, as written (not lower-cased)."""
    return _TOKEN.findall(text)


def hashed_text(text: str) -> str:
    """What the word hasher (mixture.text.shingles.WordHashes) reads for `text`: the text itself when its \\w runs are
    its words, else the text with a space on each side of every Han or kana character (one word each)."""
    return _NO_SPACE.sub(r" \g<0> ", text) if splits_characters(text) else text


def is_content_word(word: str) -> bool:
    """No digit, and at least two letters or one Han or kana letter."""
    if is_number(word):
        return False
    letters = sum(c.isalpha() for c in word)
    return letters >= 2 or (letters == 1 and len(word) == 1 and _NO_SPACE.match(word) is not None)


def is_number(word: str) -> bool:
    """A word with a digit: the hasher reads its digits as `0`, so it keeps only its shape (`1998` = `2024`)."""
    return any(c.isdigit() for c in word)


def ngram_content(text_words: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """For every run of `n` consecutive words: its distinct content words (case-folded) and its numbers."""
    m = len(text_words) - n + 1
    if m <= 0:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    keys = [w.casefold() if is_content_word(w) else None for w in text_words]
    numbers = np.cumsum([0] + [is_number(w) for w in text_words])
    seen: dict[str, int] = {}
    content = np.zeros(m, dtype=np.int32)
    for i, key in enumerate(keys):
        if key is not None:
            seen[key] = seen.get(key, 0) + 1
        if i >= n:  # the word that left the window
            old = keys[i - n]
            if old is not None:
                seen[old] -= 1
                if not seen[old]:
                    del seen[old]
        if i >= n - 1:
            content[i - n + 1] = len(seen)
    return content, (numbers[n:] - numbers[:-n]).astype(np.int32)
