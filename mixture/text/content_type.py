"""Content type of a document: its kind (prose, code, markup, structured, math, agentic, default) from cheap line
counts and, for code-like text, its language (code_language.py; Magika where that is unsure)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from mixture.text.code_language import KIND_OF, score_languages
from mixture.text.kernel import kernel
from mixture.text.quality import letter_count

# Line patterns are counted with one findall over "\n" + sample: a pattern that starts with a literal newline lets
# the regex engine jump from line start to line start (a `^` pattern tries every position, ~2x slower).
# `[^\S\n]` (whitespace but not a newline) keeps every match inside one line, so the count is the number of
# matching lines. Possessive quantifiers (`*+`) give the same matches without backtracking over long lines.
_AGENT_TURN = re.compile(r"\n(User|Assistant|System|Human|AI|Action|Observation|Thought|Tool)\s*:")
_CODE_LINE = re.compile(
    r"\n[^\S\n]*(?:def |class |import |from \S+ import |return\b|if .*:[^\S\n]*$|for .*:[^\S\n]*$|while .*:[^\S\n]*$|"
    r"#include|function\b|var |let |const |public |private |\}|\{|@\w+|try:|except\b|elif |else:|"
    r"with .*:[^\S\n]*$|#!|self\.|"
    # Go, Rust, C/C++, PHP, SQL, shell; comment lines; a `$name` line (Perl, PHP, shell)
    r"func |package |fn |pub |impl |struct |enum |typedef |static |void |namespace |template|#define|#if|#endif|"
    r"#else|<\?php|//|/\*|\*/|\* |# |SELECT |CREATE |INSERT |echo |export |\$[A-Za-z_{]|"
    # a line that is only a block's closing keyword (shell, Ruby, Lua)
    r"(?:end|fi|done|esac|then|do|else)[^\S\n]*$|"
    r"[A-Za-z_][\w.]*+[^\S\n]*+:?=[^\S\n]*+\S|[A-Za-z_][\w.]*+\(.*\)[^\S\n]*$|"
    # a line that ends a statement or opens a block
    r"[^\n]*[{;][^\S\n]*$)",
    re.MULTILINE,
)
# a line that opens with a tag (HTML, XML) or a command (LaTeX)
_MARKUP_LINE = re.compile(r"\n[^\S\n]*(?:<[A-Za-z/!?]|\\[A-Za-z])")
# `$…$` not followed by a word, `{` or `(`: shell and Perl `$A … $B` are variables, not inline math
_MATH = re.compile(r"(\\frac|\\sum|\\int|\\sqrt|\\alpha|\\beta|\\theta|\\cdot|\\leq|\\geq|\$[^$\n]{1,80}\$(?![\w{(])|"
                   r"\^\{|_\{|∑|∫|√|≤|≥|±)")
_STRUCT_LINE = re.compile(
    r'\n[^\S\n]*+(?:[\[\]{},]|"[^"\n]*+"[^\S\n]*+:|[\w.-]++[^\S\n]*+[:=][^\S\n]*+\S|[^,\n]*+(?:,[^,\n]*+){3,}$|\|.*\|)',
    re.MULTILINE,
)
SAMPLE = 20_000  # characters read
KINDS = ("agentic", "code", "default", "markup", "math", "prose", "structured")  # with language: calibration groups
# code-like lines over non-blank lines above which the language scorer is asked
CODE_SHARE, MARKUP_SHARE, STRUCT_SHARE = 0.2, 0.2, 0.3
# fewer code-like lines (a file whose head is mostly comments or a data table): code only on strong, clear evidence
LOW_SHARE, STRONG_EVIDENCE = 0.1, 3.0
MIN_EVIDENCE = 0.6  # the best language's score per line (code_language.score_languages) to call a text code
AMBIGUOUS = 1.25  # best < AMBIGUOUS × runner-up: Magika decides (content_type_magika.py)


class ContentType(NamedTuple):
    """A document's kind (KINDS) and, for code, markup and structured data, its language (code_language.LANGUAGES;
    "" otherwise)."""

    kind: str
    code_language: str = ""


def content_type_counts_py(text: str, sample_chars: int = SAMPLE) -> tuple:
    """The counts of the compiled `content_type_counts`, in Python: (non-blank lines, agent turns, letters,
    markup lines, code lines, structured lines, math hits, at least 21 words, sentence ends, sample is ASCII)."""
    sample = text[:sample_chars]
    lined = "\n" + sample  # every line starts with a newline (see above)
    return (
        len(list(filter(str.strip, sample.split("\n")))),
        len(_AGENT_TURN.findall(lined)),
        letter_count(sample),
        len(_MARKUP_LINE.findall(lined)),
        len(_CODE_LINE.findall(lined)),
        len(_STRUCT_LINE.findall(lined)),
        len(_MATH.findall(sample)),
        len(sample.split(None, 20)) > 20,  # stops splitting after 21 words
        sample.count(". ") + sample.count(".\n") + sample.count("? ") + sample.count("! "),
        sample.isascii(),
    )


def _formal(text: str, magika: Callable[[str], str | None] | None) -> ContentType | None:
    """The kind and language of a text whose lines look like code, markup or data, or None when the language
    scorer finds too little evidence of any language (prose with code-like lines). Where its two best languages
    are close, Magika names the language (or calls the text plain text)."""
    language, best, _, second = score_languages(text)
    if best < MIN_EVIDENCE:
        return None
    if best < AMBIGUOUS * second and magika is not None:
        found = magika(text)
        if found is None:
            return None
        language = found
    return ContentType(KIND_OF.get(language, "code"), language)


def _clear(text: str) -> ContentType | None:
    """The language of a text with few code-like lines when the scorer is sure of it (strong and well ahead of
    the runner-up; Magika is not asked), else None."""
    language, best, _, second = score_languages(text)
    if best >= STRONG_EVIDENCE and best >= AMBIGUOUS * second:
        return ContentType(KIND_OF.get(language, "code"), language)
    return None


def detect_content_type(text: str, magika: Callable[[str], str | None] | None = None) -> ContentType:
    """The kind (KINDS) and code language of a text. Rules go from the most to the least specific (docs/build.md,
    Content type); the language scorer runs only on texts whose lines look like code, markup or data, and
    `magika` (content_type_magika.MagikaLanguage) only where its two best languages are close."""
    counts = kernel.content_type_counts(text, SAMPLE) if kernel else content_type_counts_py(text)
    n, agent, letters, markup, code, structured, math_hits, many_words, sentences, _ = counts
    size = min(len(text), SAMPLE)
    if not n:
        return ContentType("default")
    if agent >= 3:
        return ContentType("agentic")
    if n >= 3 and (code / n > CODE_SHARE or markup / n > MARKUP_SHARE or structured / n > STRUCT_SHARE):
        found = _formal(text, magika)
        if found is not None:
            return found
    elif n >= 3 and (code + markup + structured) / n > LOW_SHARE:
        found = _clear(text)
        if found is not None:
            return found
    if math_hits >= 3 and math_hits * 200 >= size / 10:
        return ContentType("math")
    if many_words and sentences >= 2 and letters / max(1, size) > 0.6:
        return ContentType("prose")
    return ContentType("default")
