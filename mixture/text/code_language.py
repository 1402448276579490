"""Programming or markup language of a code-like text from weighted tokens (keywords, operators, line shapes):
`score_languages(text)` -> the best language and the runner-up, with their scores per line."""

from __future__ import annotations

import math
import re
from collections import Counter

from mixture.text.kernel import kernel

HEAD = 4000  # characters read: on Debian code 6,000 gave the same answers for 15 % more CPU, 3,000 lost 1 %
# language -> the kind of text it makes (content_type.KINDS); the rest are "code"
KIND_OF = {"html": "markup", "xml": "markup", "latex": "markup", "json": "structured", "yaml": "structured"}
LANGUAGES = ("go", "rust", "c", "cpp", "java", "javascript", "typescript", "shell", "sql", "perl", "ruby", "php",
             "python", "html", "xml", "latex", "yaml", "json")

# Two passes cut the head into tokens. A line's start is read first: a `key: value` line (YAML) or a JSON key, Go's
# grouped declaration, or a marker that counts only there (`#include`, `//`, `fi`, `}` …); the matched start is cut
# away (a data line whole: a JSON key's line too where its value is a string, number, true, false or null, so that
# JSON Schema's "string" or "boolean" are no TypeScript words). One findall cuts the rest into words, operators and
# tags, and Counter counts them in C, so the Python loop runs over distinct tokens, not over every match.
# Line patterns start with a literal newline, and each text is given one in front: the regex engine jumps from
# newline to newline, where `(?m)^` would try every position (~35 % faster on these passes).
_LINE_START = re.compile(
    r"""(?m)\n[^\S\n]*(?:(?P<yaml>-[^\S\n]+)?(?P<key>[A-Za-z_][\w.-]*):(?:[^\S\n][^\n]*)?$|(?P<jkey>"[^"\n]{1,80}"[^\S\n]*:(?:[^\S\n]*(?:(?:"(?:[^"\\\n]|\\.)*"|-?\d[\w.+-]*|true|false|null)[^\S\n]*,?[^\S\n]*$|"(?:[^"\\\n]|\\.)*\Z))?)"""
    r"""|(?P<gogroup>(?:var|const|import|type)[^\S\n]*\($)|(?P<start>\#(?=[^\S\n]|$)|--$|\#!|\#include|\#define|\#if|\#endif|\#\[|//|/\*|\*/|=head\d|=cut|=item|=pod|---$|\}$|end$|fi$|done$"""
    r"""|esac$|then$|else$|do$))""",
)
# `my` then a blank and a sigil is Perl's declaration: matched with its blank ("my "), unlike the English word
# (?=…) names every character a token can start with: the engine skips other positions at once (~30 % faster)
_REST = re.compile(
    r"""(?=[\"<?A-Za-z_$@%:\-=!|&);{}])(?:\"\"\"|</?[A-Za-z][\w:.-]*|<\?(?:php|xml)|<!DOCTYPE|\?>|my[^\S\n](?=[^\S\n]*[$@%(])|[A-Za-z_$@%][\w$]*"""
    r"""|<<(?=['"~A-Z_])|::|:=|->|=>|(?<![=!])[=!]==(?!=)|=~|\$\(|\$\{|\|\||&&|\);|\{|\};|;$)""",
    re.MULTILINE,
)
HTML_TAGS = {"html", "head", "body", "div", "span", "p", "a", "table", "tr", "td", "th", "ul", "ol", "li", "script",
             "meta", "link", "title", "h1", "h2", "h3", "h4", "br", "img", "pre", "code", "em", "strong", "b", "i",
             "dl", "dt", "dd", "hr", "style", "form", "input", "tt", "font", "center", "nav", "section", "blockquote"}

_W: dict[str, dict[str, float]] = {
    "go": {"go (": 4, "func": 3, "package": 1, ":=": 3, "chan": 3, "defer": 3, "nil": 1.5, "fmt": 2, "struct": 1,
           "interface": 1, "err": 1.5, "range": 1, "string": 0.5, "int": 0.3, "byte": 1, "var": 0.5, "go": 0.5,
           "uint64": 1.5, "int64": 1.5, "//": 0.5, "}": 0.3, "{": 0.3, "t": 0.3, "import": 0.3, "return": 0.3},
    "rust": {"fn": 3, "mut": 3, "impl": 3, "pub": 2.5, "let": 1, "::": 1.5, "->": 1, "#[": 3, "use": 1,
             "Self": 2, "self": 0.5, "match": 1, "Option": 1.5, "Some": 2, "None": 0.5, "Ok": 2, "unwrap": 2,
             "enum": 1, "struct": 1, "trait": 2.5, "usize": 3, "u8": 2.5, "u32": 2.5, "i32": 2.5, "mod": 1.5,
             "crate": 3, "where": 0.5, "//": 0.5, "}": 0.3, "{": 0.3, "assert_eq": 2, "Vec": 2, "dyn": 2},
    "c": {"#include": 3, "#define": 2.5, "#if": 1.5, "#endif": 2, "int": 1, "void": 1.5, "char": 1.5,
          "unsigned": 2, "static": 1, "const": 0.5, "struct": 1, "typedef": 2.5, "extern": 2, "NULL": 2,
          "->": 0.5, "::": -1, "sizeof": 2, "/*": 1, "*/": 1, "return": 0.3, ");": 0.5, "else": 0.3, "size_t": 2,
          "uint32_t": 2, "long": 1, "#[": -2, "__attribute__": 2, "goto": 1.5, "}": 0.3, "{": 0.3},
    "cpp": {"std": 3, "::": 3, "template": 3, "namespace": 2.5, "class": 1, "public": 1, "private": 1,
            "virtual": 2.5, "nullptr": 3, "const": 0.5, "typename": 3, "#include": 2, "inline": 1, "operator": 2,
            "boost": 3, "bool": 1, "auto": 1, "noexcept": 3, "constexpr": 3, "override": 1, "void": 0.5,
            "}": 0.3, "{": 0.3, "#define": 1, "#endif": 1, "struct": 0.5, "->": 0.5, "/*": 0.5, "*/": 0.5,
            "#if": 0.5},
    "java": {"public": 1.5, "private": 1.5, "protected": 1.5, "class": 1, "import": 0.5, "package": 1, "new": 1,
             "extends": 1.5, "implements": 2.5, "throws": 3, "@Override": 3, "final": 1.5, "static": 0.5,
             "String": 1.5, "void": 1, "boolean": 2, "this": 0.5, "null": 1, "synchronized": 2.5,
             "instanceof": 2, "@param": 1, "@return": 1, "*/": 0.5, "/*": 0.5, "java": 2, "int": 0.3,
             "}": 0.3, "{": 0.3, "interface": 0.5, "catch": 1, "abstract": 1},
    "javascript": {"function": 2, "var": 1.5, "const": 1, "let": 1, "=>": 1.5, "===": 3, "!==": 3,
                   "document": 2, "window": 2, "require": 1.5, "module": 1, "exports": 2, "console": 2,
                   "this": 1, "undefined": 2.5, "null": 0.5, "prototype": 2.5, "async": 1, "await": 1, "new": 0.5,
                   "return": 0.5, "typeof": 2, "$": 1, "}": 0.3, "{": 0.3, ");": 0.3, "//": 0.3, "true": 0.3,
                   "false": 0.3, "export": 0.5, "import": 0.3},
    "typescript": {"interface": 2, "declare": 3, "readonly": 3, "type": 1.5, "string": 1.5, "number": 2,
                   "boolean": 2, "any": 1.5, "export": 1.5, "namespace": 1, "enum": 1, "implements": 1,
                   "private": 0.5, "public": 0.5, "const": 0.5, "function": 1, "=>": 1, "undefined": 1,
                   "void": 1, "never": 2.5, "keyof": 3, "unknown": 1, "extends": 0.5, "}": 0.3, "{": 0.3,
                   "let": 0.5, "import": 0.3, "===": 1},
    "shell": {"#!": 1, "fi": 3, "then": 2, "done": 3, "esac": 3, "do": 1, "echo": 2, "export": 1, "$(": 2,
              "${": 2, "local": 1, "exit": 1.5, "if": 0.3, "||": 0.5, "&&": 0.5, "set": 0.5, "case": 1,
              "shift": 1.5, "elif": 0.5, "test": 0.5, "grep": 1, "sed": 1.5, "cat": 1, "rm": 1, "mkdir": 1,
              "#": 0.5, "<<": 1.5},
    "sql": {"SELECT": 3, "FROM": 1.5, "WHERE": 2, "CREATE": 2.5, "TABLE": 2.5, "INSERT": 3, "INTO": 2,
            "VALUES": 2.5, "UPDATE": 1.5, "DELETE": 1.5, "JOIN": 2, "FUNCTION": 2, "RETURNS": 3, "LANGUAGE": 2,
            "AS": 1, "NOT": 1, "NULL": 0.5, "PRIMARY": 2.5, "KEY": 1, "REFERENCES": 2.5, "VARCHAR": 3,
            "INTEGER": 2, "TEXT": 1, "BEGIN": 1, "COMMIT": 2, "DROP": 2, "ALTER": 2, "GRANT": 2.5, "ON": 1,
            "INDEX": 2, "OR": 0.5, "AND": 0.5, "REPLACE": 1.5, "TYPE": 1, "select": 1.5, "from": 0.3,
            "where": 0.3, "create": 1, "table": 1, "insert": 1, "values": 1, "int4": 3, "int8": 3, "plpgsql": 3,
            "STRICT": 2, "IMMUTABLE": 3, "EXTENSION": 2.5, "OPERATOR": 2, "SCHEMA": 2, "pg_catalog": 3,
            ";": 0.5, "regclass": 3, "--": 1},
    "perl": {"my $": 2.5, "=>": 1.2, "<<": 2, "sub": 2, "use": 1, "strict": 2, "warnings": 2, "$_": 3, "=~": 3, "qw": 3, "$self": 3,
             "@_": 3, "foreach": 1.5, "elsif": 2, "unless": 1.5, "package": 1, "local": 0.5, "=head1": 3,
             "=head2": 3, "=cut": 3, "=item": 2, "=pod": 3, "__END__": 2, "bless": 3, "croak": 3, "die": 1,
             "->": 0.5, "ref": 1, "shift": 1, "#!": 0.5, "#": 0.3, "return": 0.3, "::": 0.5, "}": 0.3, "{": 0.3},
    "ruby": {"def": 1.5, "end": 2, "require": 1.5, "module": 1.5, "class": 0.5, "attr_reader": 3,
             "attr_accessor": 3, "do": 1, "each": 1.5, "puts": 2, "nil": 1.5, "elsif": 2, "unless": 1.5,
             "self": 0.5, "raise": 1, "yield": 1, "lambda": 0.5, "rescue": 3, "ensure": 2, "begin": 1,
             "require_relative": 3, "private": 0.5, "include": 0.5, "true": 0.3, "false": 0.3, "=>": 0.5,
             "frozen_string_literal": 3, "::": 1, "when": 1, "then": 0.3, "new": 0.3, "#": 0.3},
    "php": {"<?php": 6, "?>": 2, "$this": 3, "function": 1, "echo": 1, "public": 0.5, "array": 2, "namespace": 1,
            "use": 0.5, "->": 1, "=>": 1, "null": 0.5, "isset": 3, "static": 0.5, "class": 0.3, "foreach": 1,
            "return": 0.3, "$": 0.3, "}": 0.3, "{": 0.3, "@param": 0.5},
    "python": {"def": 2, "import": 1, "from": 0.5, "self": 2, "None": 2, "True": 1.5, "False": 1.5, "elif": 2,
               "except": 1.5, "lambda": 1.5, "raise": 1, "yield": 1, "class": 1, "return": 0.5, "as": 0.3,
               "assert": 1, "pass": 1.5,
               "__init__": 2, '"""': 2, "#": 0.3, "kwargs": 2, "args": 1, "print": 1, "isinstance": 2, "len": 1, "try": 0.5},
    "html": {"<html": 6, "<!DOCTYPE": 2, "htmltag": 1.5, "href": 1, "class": 0.3, "nbsp": 2, "amp": 0.5},
    "xml": {"<?xml": 6, "xmltag": 1, "xmlns": 2},
    "latex": {"begin": 0.5, "end": 0.5, "section": 1, "usepackage": 3, "documentclass": 3, "textbf": 2,
              "emph": 1, "label": 1, "ref": 0.5, "cite": 1, "item": 0.5},
    "yaml": {"ykey": 1.2, "ylist": 0.8, "---": 1, "#": 0.3},
    "json": {"jkey": 3},
}
_INDEX: dict[str, list[tuple[int, float]]] = {}
for _i, _lang in enumerate(LANGUAGES):
    for _tok, _w in _W[_lang].items():
        _INDEX.setdefault(_tok, []).append((_i, _w))


_SENTENCE = re.compile(r"[.?!,;]\s|[.?!]$")
_HTML, _XML = LANGUAGES.index("html"), LANGUAGES.index("xml")


def _line_start(m: re.Match, out: Counter) -> str:
    """Counts a line's start token (see _LINE_START); the start is cut away, its line's newline kept."""
    kind = m.lastgroup
    if kind == "key":
        value = m.group(0)[m.end("key") - m.start() + 1:].strip()
        if not _SENTENCE.search(value):  # `Name: a sentence.` is a dialogue line, not data
            out["ylist" if m.group("yaml") else "ykey"] += 1
    elif kind == "yaml":  # a list item whose key was captured too
        out["ylist"] += 1
    elif kind == "gogroup":  # Go's `const (` … `)` block
        out["go ("] += 1
    elif kind == "jkey":
        out["jkey"] += 1
    else:
        out[m.group(kind)] += 1
    return "\n"


def passes_py(head: str) -> tuple[Counter, Counter]:
    """The two passes in Python, the reference for the compiled `code_tokens`: the line starts (cut away) and the
    tokens of the rest, each in order of first occurrence (the scores' float sums follow that order)."""
    starts: Counter = Counter()
    rest = _LINE_START.sub(lambda m: _line_start(m, starts), "\n" + head)
    return starts, Counter(_REST.findall(rest))


def _tokens(head: str) -> Counter:
    """The head's weighted tokens and their counts, in order of first occurrence (tags as `htmltag`/`xmltag`, `</`
    counted apart); a word no language weighs is left out: it scores nothing, and most words are such (~120 a code
    file), so counting them cost more than scoring."""
    starts, words = kernel.code_tokens(head) if kernel else passes_py(head)
    out = Counter(starts)
    for tok, n in words.items():
        if tok in _INDEX:  # `<<`, `<?php`, `?>` … among them; none starts with `</`
            out[tok] += n
            continue
        first = tok[0]
        if first == "<" and tok != "<<" or tok == "?>":
            if tok.startswith("</"):
                out["</"] += n
            out["htmltag" if tok.lstrip("</").lower() in HTML_TAGS else "xmltag"] += n
        elif first == "m" and tok[-1].isspace():  # Perl's `my $x`, not the English word
            out["my $"] += n
    return out


# a comment line's words are prose (licence headers, docs): only its marker is kept. `#` starts a comment unless it
# starts a C preprocessor line, a shebang or a Rust attribute; a Python docstring is cut to its quotes
_COMMENT = re.compile(r"\n([^\S\n]*(?:#(?![!\[]|include|define|if|endif|else|pragma|undef)|//+|/\*+|\*+(?!/)|--(?=\s)))[^\n]*")
_DOCSTRING = re.compile(r'"""[\s\S]*?"""')


def head_py(head: str) -> tuple[str, int]:
    """What the scorer reads of a text's head (comment lines cut to their marker, docstrings emptied) and its
    non-blank lines (at least 1): the reference for the compiled `code_head`."""
    head = _COMMENT.sub("\n\\1", "\n" + head)[1:]
    if '"""' in head:
        head = _DOCSTRING.sub('""" """', head)
    return head, max(1, len(list(filter(str.strip, head.split("\n")))))


def score_languages(text: str) -> tuple[str, float, str, float]:
    """(best language, its score per non-blank line, the runner-up, its score per line) over the first HEAD
    characters; a token's weight counts as log(1 + its count), so one repeated keyword does not decide."""
    head, lines = kernel.code_head(text[:HEAD]) if kernel else head_py(text[:HEAD])
    scores = [0.0] * len(LANGUAGES)
    tokens = _tokens(head)
    for tok, n in tokens.items():
        for i, w in _INDEX.get(tok, ()):
            scores[i] += w * math.log1p(n)
    if not tokens["</"]:  # no closing tag: not HTML or XML (`<nick>` in a chat log)
        scores[_HTML] = scores[_XML] = 0.0
    order = sorted(range(len(LANGUAGES)), key=lambda i: -scores[i])
    norm = math.log1p(lines)
    return LANGUAGES[order[0]], scores[order[0]] / norm, LANGUAGES[order[1]], scores[order[1]] / norm
