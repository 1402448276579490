"""Content type of a document from cheap surface signals: code, math, structured, multilingual, agentic, prose."""

from __future__ import annotations

import re

CONTENT_TYPES = ("agentic", "code", "default", "math", "multilingual", "prose", "structured")

_AGENT_TURN = re.compile(r"^(User|Assistant|System|Human|AI|Action|Observation|Thought|Tool)\s*:", re.MULTILINE)
_CODE_LINE = re.compile(
    r"^\s*(def |class |import |from \S+ import |return\b|if .*:\s*$|for .*:\s*$|while .*:\s*$|#include|"
    r"function\b|var |let |const |public |private |\}|\{|@\w+|try:|except\b|elif |else:|with .*:\s*$|"
    r"#!|self\.|[A-Za-z_][\w.]*\s*=\s*\S|[A-Za-z_][\w.]*\(.*\)\s*$)"
)
_MATH = re.compile(r"(\\frac|\\sum|\\int|\\sqrt|\\alpha|\\beta|\\theta|\\cdot|\\leq|\\geq|\$[^$\n]{1,80}\$|\^\{|_\{|∑|∫|√|≤|≥|±)")
_STRUCT_LINE = re.compile(r'^\s*([\[\]{},]|"[^"]*"\s*:|[\w.-]+\s*[:=]\s*\S|[^,\n]*(,[^,\n]*){3,}$|\|.*\|)')
_LETTER = re.compile(r"[^\W\d_]")


def detect_content_type(text: str) -> str:
    """One of CONTENT_TYPES. Rules are ordered from the most to the least specific; see docs/build.md."""
    sample = text[:20_000]
    lines = [ln for ln in sample.split("\n") if ln.strip()]
    if not lines:
        return "default"
    n = len(lines)
    if len(_AGENT_TURN.findall(sample)) >= 3:
        return "agentic"
    letters = _LETTER.findall(sample)
    if len(letters) >= 50:
        non_latin = sum(1 for ch in letters if ord(ch) > 0x24F)
        if non_latin / len(letters) > 0.3:
            return "multilingual"
    code_lines = sum(1 for ln in lines if _CODE_LINE.match(ln))
    if code_lines / n > 0.35 and n >= 3:
        return "code"
    struct_lines = sum(1 for ln in lines if _STRUCT_LINE.match(ln))
    if struct_lines / n > 0.6 and n >= 3:
        return "structured"
    math_hits = len(_MATH.findall(sample))
    if math_hits >= 3 and math_hits * 200 >= len(sample) / 10:
        return "math"
    words = sample.split()
    if len(words) >= 20:
        sentences = sample.count(". ") + sample.count(".\n") + sample.count("? ") + sample.count("! ")
        if sentences >= 2 and len(letters) / max(1, len(sample)) > 0.6:
            return "prose"
    return "default"
