"""Content type of a document from cheap surface signals: code, math, structured, multilingual, agentic, prose."""

from __future__ import annotations

import re

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


def detect_content_type(text: str) -> str:
    """One of CONTENT_TYPES. Rules are ordered from the most to the least specific; see docs/build.md."""
    sample = text[:20_000]
    n = len(list(filter(str.strip, sample.split("\n"))))
    if not n:
        return "default"
    lined = "\n" + sample  # every line starts with a newline (see above)
    if len(_AGENT_TURN.findall(lined)) >= 3:
        return "agentic"
    letters = letter_count(sample)
    if letters >= 50 and not sample.isascii() and len(_NON_LATIN_LETTER.findall(sample)) / letters > 0.3:
        return "multilingual"
    code_lines = len(_CODE_LINE.findall(lined))
    if code_lines / n > 0.35 and n >= 3:
        return "code"
    struct_lines = len(_STRUCT_LINE.findall(lined))
    if struct_lines / n > 0.6 and n >= 3:
        return "structured"
    math_hits = len(_MATH.findall(sample))
    if math_hits >= 3 and math_hits * 200 >= len(sample) / 10:
        return "math"
    if len(sample.split(None, 20)) > 20:  # at least 20 words (stops splitting after 21)
        sentences = sample.count(". ") + sample.count(".\n") + sample.count("? ") + sample.count("! ")
        if sentences >= 2 and letters / max(1, len(sample)) > 0.6:
            return "prose"
    return "default"
