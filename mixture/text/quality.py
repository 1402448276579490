"""Raw quality score in [0, 1] from documented surface signals (a transparent stand-in for a learned classifier)."""

from __future__ import annotations

import math
import re
from collections import Counter
from operator import itemgetter

from mixture.text.kernel import kernel

_LETTER = re.compile(r"[^\W\d_]")
_ASCII_RUNS = re.compile(r"[\x00-\x7f]+")
_NOT_ASCII_LETTER = bytes(b for b in range(128) if not chr(b).isalpha())
_NON_LETTER_ASCII_TO_SPACE = bytes(b if b >= 128 or chr(b).isalpha() else 32 for b in range(256))
_CLAUSE_END = frozenset(".!?:;)\"'`")  # last character of a line that ends a clause
STOPWORDS = frozenset(
    ["the", "be", "to", "of", "and", "a", "in", "that", "have", "i", "it", "for", "not", "on", "with", "he", "as", "you", "do", "at", "this", "but", "his", "by", "from", "they", "we", "say", "her", "she", "or", "an", "will", "my", "one", "all", "would", "there", "their", "what", "so", "up", "out", "if", "about", "who", "get", "which", "go", "me", "when", "make", "can", "like", "time", "no", "just", "him", "know", "take", "people", "into", "year", "your", "good", "some", "could", "them", "see", "other", "than", "then", "now", "look", "only", "come", "its", "over", "think", "also", "back", "after", "use", "two", "how", "our", "work", "first", "well", "way", "even", "new", "want", "because", "any", "these", "give", "day", "most", "us", "is", "are", "was", "were", "been", "has", "had", "does", "did", "should", "may", "must", "each", "such"]
)
if kernel:
    kernel.set_stopwords(" ".join(sorted(STOPWORDS)))


def letter_count(text: str) -> int:
    """Number of letters (`[^\\W\\d_]`: word characters that are not digits or `_`), at C speed."""
    ascii_letters = len(text.encode("ascii", "ignore").translate(None, _NOT_ASCII_LETTER))
    return ascii_letters if text.isascii() else ascii_letters + len(_LETTER.findall(_ASCII_RUNS.sub("", text)))


def lower_words(text: str) -> list[str]:
    """Lower-cased words: maximal runs of ASCII letters and non-ASCII characters (`don't` is two words; `naïve`
    one), found by a byte translation at C speed (non-ASCII punctuation such as `—` stays inside a word)."""
    return text.lower().encode("utf-8", "surrogatepass").translate(_NON_LETTER_ASCII_TO_SPACE).decode("utf-8", "surrogatepass").split()


HEAD = 50_000  # characters the letter and word signals read
FIRST_WORDS = 1000  # lexical variety is measured over a fixed window, so it does not fall with length (Heaps' law)


def word_counts_py(head: str) -> tuple[int, int, int, int, int]:
    """(words, their characters, stopwords among them, first words, distinct first words) of `lower_words`."""
    words = lower_words(head)
    first = words[:FIRST_WORDS]
    return len(words), sum(map(len, words)), sum(map(STOPWORDS.__contains__, words)), len(first), len(set(first))


def word_counts(head: str) -> tuple[int, int, int, int, int]:
    return kernel.word_counts(head.lower()) if kernel else word_counts_py(head)


def quality_counts_py(text: str, head_chars: int = HEAD) -> tuple[int, int, int, int, int]:
    """The counts of the compiled `quality_counts`, in Python: (non-blank lines, long lines, repeated long lines,
    clause-ending lines, letters of the head)."""
    lines = list(filter(None, map(str.strip, text.split("\n"))))
    n_long = dup_long = 0
    for line, c in Counter(lines).items():
        if len(line) >= 30:  # short lines (`}`, `return`, blank-ish) repeat naturally
            n_long += c
            dup_long += c if c > 1 else 0
    clause_end = sum(map(_CLAUSE_END.__contains__, map(itemgetter(-1), lines)))
    return len(lines), n_long, dup_long, clause_end, letter_count(text[:head_chars])


def quality_signals(text: str) -> dict[str, float]:
    """The signals the raw score combines; each is in [0, 1] and higher is better."""
    counts = kernel.quality_counts(text, HEAD) if kernel else quality_counts_py(text)
    n_lines, n_long, dup_long, clause_end, letters = counts
    n_words, word_chars, stop_hits, n_first, n_unique = word_counts(text[:HEAD])
    nw = max(1, n_words)
    mean_word = word_chars / nw
    uniq_words = n_unique / n_first if n_first > 30 else 0.5
    return {
        "alpha": letters / max(1, min(len(text), HEAD)),
        "word_length": math.exp(-(((mean_word - 5.0) / 2.5) ** 2)),
        "stopwords": min(1.0, stop_hits / nw / 0.3),
        "unique_lines": 1.0 - dup_long / max(1, n_long),
        "lexical_variety": min(1.0, uniq_words / 0.5),
        "line_endings": clause_end / max(1, n_lines),
        "length": min(1.0, math.log10(max(10, n_words)) / 3.5),
    }


WEIGHTS = {
    "alpha": 1.5,
    "word_length": 1.0,
    "stopwords": 1.5,
    "unique_lines": 1.5,
    "lexical_variety": 1.0,
    "line_endings": 0.75,
    "length": 1.25,
}


def raw_quality_score(text: str) -> float:
    """Logistic of the weighted signals, centred so typical documents land mid-range."""
    sig = quality_signals(text)
    z = sum(WEIGHTS[k] * v for k, v in sig.items()) - 0.6 * sum(WEIGHTS.values())
    return 1.0 / (1.0 + math.exp(-2.0 * z))
