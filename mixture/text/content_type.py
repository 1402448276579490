"""Content type of a document from cheap surface signals: code, math, structured, multilingual, agentic, prose."""

from __future__ import annotations

import re

from mixture.text.kernel import kernel
from mixture.text.quality import letter_count

CONTENT_TYPES = ("agentic", "code", "default", "math", "multilingual", "prose", "structured")

# Line patterns are counted with one findall over "\n" + sample: a pattern that starts with a literal newline lets
# the regex engine jump from line start to line start (a `^` pattern tries every position, ~2x slower).
# `[^\S\n]` (whitespace but not a newline) keeps every match inside one line, so the count is the number of
# matching lines. Possessive quantifiers (`*+`) give the same matches without backtracking over long lines.
_AGENT_TURN = re.compile(r"\n(User|Assistant|System|Human|AI|Action|Observation|Thought|Tool)\s*:")
_CODE_LINE = re.compile(
    r"\n[^\S\n]*(?:def |class |import |from \S+ import |return\b|if .*:[^\S\n]*$|for .*:[^\S\n]*$|while .*:[^\S\n]*$|"
    r"#include|function\b|var |let |const |public |private |\}|\{|@\w+|try:|except\b|elif |else:|"
    r"with .*:[^\S\n]*$|#!|self\.|[A-Za-z_][\w.]*+[^\S\n]*+=[^\S\n]*+\S|[A-Za-z_][\w.]*+\(.*\)[^\S\n]*$)",
    re.MULTILINE,
)
_MATH = re.compile(r"(\\frac|\\sum|\\int|\\sqrt|\\alpha|\\beta|\\theta|\\cdot|\\leq|\\geq|\$[^$\n]{1,80}\$|\^\{|_\{|∑|∫|√|≤|≥|±)")
_STRUCT_LINE = re.compile(
    r'\n[^\S\n]*+(?:[\[\]{},]|"[^"\n]*+"[^\S\n]*+:|[\w.-]++[^\S\n]*+[:=][^\S\n]*+\S|[^,\n]*+(?:,[^,\n]*+){3,}$|\|.*\|)',
    re.MULTILINE,
)
_NON_LATIN_LETTER = re.compile(r"[^\W\d_\x00-\u024f]")


SAMPLE = 20_000  # characters read


def content_type_counts_py(text: str, sample_chars: int = SAMPLE) -> tuple:
    """The counts of the compiled `content_type_counts`, in Python: (non-blank lines, agent turns, letters,
    non-Latin letters, code lines, structured lines, math hits, at least 21 words, sentence ends, sample is ASCII)."""
    sample = text[:sample_chars]
    lined = "\n" + sample  # every line starts with a newline (see above)
    letters = letter_count(sample)
    ascii_only = sample.isascii()
    return (
        len(list(filter(str.strip, sample.split("\n")))),
        len(_AGENT_TURN.findall(lined)),
        letters,
        0 if ascii_only else len(_NON_LATIN_LETTER.findall(sample)),
        len(_CODE_LINE.findall(lined)),
        len(_STRUCT_LINE.findall(lined)),
        len(_MATH.findall(sample)),
        len(sample.split(None, 20)) > 20,  # stops splitting after 21 words
        sample.count(". ") + sample.count(".\n") + sample.count("? ") + sample.count("! "),
        ascii_only,
    )


def detect_content_type(text: str) -> str:
    """One of CONTENT_TYPES. Rules are ordered from the most to the least specific; see docs/build.md."""
    counts = kernel.content_type_counts(text, SAMPLE) if kernel else content_type_counts_py(text)
    n, agent, letters, non_latin, code, structured, math_hits, many_words, sentences, ascii_only = counts
    size = min(len(text), SAMPLE)
    if not n:
        return "default"
    if agent >= 3:
        return "agentic"
    if letters >= 50 and not ascii_only and non_latin / letters > 0.3:
        return "multilingual"
    if code / n > 0.35 and n >= 3:
        return "code"
    if structured / n > 0.6 and n >= 3:
        return "structured"
    if math_hits >= 3 and math_hits * 200 >= size / 10:
        return "math"
    if many_words and sentences >= 2 and letters / max(1, size) > 0.6:
        return "prose"
    return "default"
