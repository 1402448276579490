"""Plain text of a roff man page (man and mdoc macros) by a light strip: requests dropped or reduced to their text,
escapes replaced; no layout. Close enough to `man -l FILE` for language and quality signals, ~100x faster."""

from __future__ import annotations

import re
import shlex
import unicodedata

_NAMED = {"em": "—", "en": "–", "aq": "'", "dq": '"', "lq": "“", "rq": "”", "oq": "‘", "cq": "’", "bu": "•",
          "co": "©", "rg": "®", "tm": "™", "mi": "-", "pl": "+", "ti": "~", "ha": "^", "rs": "\\", "hy": "-",
          "<=": "≤", ">=": "≥", "!=": "≠", "mu": "×", "de": "°", "Fo": "«", "Fc": "»", "fo": "‹", "fc": "›",
          "ga": "`", "at": "@", "sh": "#", "Do": "$", "ba": "|", "sl": "/", "lB": "[", "rB": "]", "lC": "{",
          "rC": "}", "la": "⟨", "ra": "⟩", "ua": "↑", "da": "↓", "->": "→", "<-": "←", "aa": "´", "ss": "ß"}
_SIMPLE = {"-": "-", "e": "\\", "&": "", " ": " ", "~": " ", "0": " ", "|": "", "^": "", "/": "", ",": "", "c": "",
           ":": "", "%": "", "'": "´", "`": "`", ".": ".", "\\": "\\", "t": "\t", "a": ""}
_ESCAPE = re.compile(
    r"\\(?:f(?:\[[^\]]*\]|\(..|.)"           # font changes
    r"|s[+-]?(?:\d+|\[[^\]]*\]|\(..)"         # size changes
    r"|\*(?:\[([^\]]*)\]|\((..)|(.))"          # predefined strings: \*(lq and such, others dropped
    r"|\((..)|\[([^\]]*)\]"                    # named characters
    r"|[nkgVYmMFhHvwxoSlLDbZXRNzOuBAj](?:\[[^\]]*\]|\(..|'[^']*'|.)"  # registers, motions, drawing: dropped
    r"|(.))"
)
_TEXT_MACROS = {  # man and mdoc macros whose arguments are text
    "SH", "SS", "B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB", "IP", "TP", "HP", "UR", "MT", "TQ",
    "Sh", "Ss", "Nm", "Nd", "It", "Fl", "Ar", "Op", "Xr", "Dv", "Ev", "Pa", "Em", "Sy", "Li", "Cm", "Va", "Fn", "Fa",
    "Ft", "Fo", "Dq", "Qq", "Sq", "Pq", "Ql", "Er", "Ic", "Ad", "An", "Cd", "Ms", "Tn", "Ux", "Bx", "At", "St", "Lk",
    "Mt", "Aq", "Bq", "Brq", "Ns", "No", "Ta", "Vt", "Dl", "D1", "Lb", "In", "Rs", "%A", "%T", "%B", "%J", "%N",
}
_MDOC_INLINE = {m for m in _TEXT_MACROS if m[0].isupper() and m[1:].islower() or m in ("D1", "Dl")}
_PARAGRAPH = {"PP", "LP", "P", "Pp", "sp", "br", "SH", "SS", "Sh", "Ss", "TP", "IP", "HP", "Bl", "El", "It", "Bd",
              "Ed", "RS", "RE", "TQ"}
_CONDITIONAL = re.compile(r"^[.']\s*(?:ie|el|if)\b")


_ACCENTS = {"'": "\u0301", "`": "\u0300", "^": "\u0302", ":": "\u0308", ",": "\u0327", "~": "\u0303",
            "o": "\u030a", "v": "\u030c"}
_STRINGS = {"Aq": "'", "aq": "'", "lq": "“", "rq": "”", "R": "®", "Tm": "™", "Lq": "“", "Rq": "”"}


def _named(name: str) -> str:
    """A named character: a table entry, an accented letter (`('e` → é) or a code point (`[u00E9]`)."""
    if name in _NAMED:
        return _NAMED[name]
    if len(name) == 2 and name[0] in _ACCENTS and name[1].isalpha():
        return unicodedata.normalize("NFC", name[1] + _ACCENTS[name[0]])
    if re.fullmatch(r"u[0-9A-Fa-f]{4,6}", name):
        return chr(int(name[1:], 16))
    return ""


def _escape(m: re.Match) -> str:
    string1, string2, string3, named2, named, simple = m.groups()
    string = string1 or string2 or string3
    if string is not None:
        return _STRINGS.get(string, _NAMED.get(string, ""))
    name = named2 or named
    if name is not None:
        return _named(name)
    if simple is not None:
        return _SIMPLE.get(simple, simple)
    return ""


def unescape(line: str) -> str:
    return _ESCAPE.sub(_escape, line)


def _args(rest: str) -> list[str]:
    try:
        return shlex.split(rest, posix=True)
    except ValueError:
        return rest.split()


def roff_to_text(source: str) -> str:
    """The text of a roff page: comments, macro definitions and layout requests dropped, text-bearing macros
    reduced to their arguments (section headings on their own line), escapes replaced."""
    out: list[str] = []
    skipping_definition = False
    for raw in source.splitlines():
        line = raw.rstrip()
        if skipping_definition:
            skipping_definition = line.strip() != ".."
            continue
        if line.startswith(('.\\"', "'\\\"", '.\\#', "\\\"")) or line in (".", "'"):
            continue
        if not line.startswith((".", "'")):
            out.append(unescape(line))
            continue
        if _CONDITIONAL.match(line):
            continue
        request, _, rest = line[1:].strip().partition(" ")
        if request in ("de", "de1", "am", "ig"):
            skipping_definition = True
            continue
        if request in _PARAGRAPH:
            out.append("")
        if request == "TH" or request == "Dt":
            out.append(" ".join(_args(unescape(rest))[:1]))
            continue
        if request not in _TEXT_MACROS:
            continue
        words = _args(unescape(rest))
        if request in ("IP", "TP", "HP", "TQ"):  # an item's label; the numbers after it are indents
            words = words[:1] if request == "IP" else []
        if request in _MDOC_INLINE:
            words = [w for w in words if w not in _MDOC_INLINE]
        joiner = "" if request in ("BR", "IR", "RB", "RI", "BI", "IB") else " "
        text = joiner.join(words)
        if text:
            out.append(text)
        if request in ("SH", "SS", "Sh", "Ss"):
            out.append("")
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
