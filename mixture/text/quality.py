"""Raw quality score in [0, 1] from documented surface signals (a transparent stand-in for a learned classifier)."""

from __future__ import annotations

import math
import re
from collections import Counter

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
STOPWORDS = frozenset(
    ["the", "be", "to", "of", "and", "a", "in", "that", "have", "i", "it", "for", "not", "on", "with", "he", "as", "you", "do", "at", "this", "but", "his", "by", "from", "they", "we", "say", "her", "she", "or", "an", "will", "my", "one", "all", "would", "there", "their", "what", "so", "up", "out", "if", "about", "who", "get", "which", "go", "me", "when", "make", "can", "like", "time", "no", "just", "him", "know", "take", "people", "into", "year", "your", "good", "some", "could", "them", "see", "other", "than", "then", "now", "look", "only", "come", "its", "over", "think", "also", "back", "after", "use", "two", "how", "our", "work", "first", "well", "way", "even", "new", "want", "because", "any", "these", "give", "day", "most", "us", "is", "are", "was", "were", "been", "has", "had", "does", "did", "should", "may", "must", "each", "such"]
)


def quality_signals(text: str) -> dict[str, float]:
    """The signals the raw score combines; each is in [0, 1] and higher is better."""
    n = max(1, len(text))
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    words = _WORD.findall(text[:50_000])
    nw = max(1, len(words))
    alpha = sum(ch.isalpha() for ch in text[:50_000]) / min(n, 50_000)
    mean_word = sum(map(len, words)) / nw
    word_len = math.exp(-(((mean_word - 5.0) / 2.5) ** 2))
    stop = min(1.0, sum(w.lower() in STOPWORDS for w in words) / nw / 0.3)
    long_lines = [ln for ln in lines if len(ln) >= 30]  # short lines (`}`, `return`, blank-ish) repeat naturally
    counts = Counter(long_lines)
    dup = sum(c for c in counts.values() if c > 1) / max(1, len(long_lines))
    head = words[:1000]  # variety over a fixed window, so it does not fall with length (Heaps' law)
    uniq_words = len({w.lower() for w in head}) / len(head) if len(head) > 30 else 0.5
    punct_end = sum(ln[-1] in ".!?:;)\"'`" for ln in lines) / max(1, len(lines))
    length = min(1.0, math.log10(max(10, len(words))) / 3.5)
    return {
        "alpha": alpha,
        "word_length": word_len,
        "stopwords": stop,
        "unique_lines": 1.0 - dup,
        "lexical_variety": min(1.0, uniq_words / 0.5),
        "line_endings": punct_end,
        "length": length,
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
