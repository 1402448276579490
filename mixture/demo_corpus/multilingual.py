"""Non-English real text found offline: CJK test texts, translated messages, stop-word lists, CLDR names."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

from .local_files import read_text, subset
from .model import Source
from .textutil import parse_python

Listing = list[tuple[str, Path]]
_NON_LATIN_RE = re.compile(r"[^\W\d_\u0000-\u024f]")
_CJK_LANG = {"big5": "zh", "gb": "zh", "hz": "zh", "cp949": "ko", "euc_kr": "ko", "iso2022_kr": "ko",
             "johab": "ko", "euc_j": "ja", "iso2022_jp": "ja", "shift_jis": "ja"}


def _cjk_lang(name: str) -> str:
    return next((lang for prefix, lang in _CJK_LANG.items() if name.startswith(prefix)), "und")


def _non_latin_lines(text: str, min_letters: int = 8) -> list[str]:
    """Lines with at least min_letters letters beyond the Latin blocks (Greek, Cyrillic, CJK, Arabic...)."""
    if text.isascii():
        return []
    return [ln.strip() for ln in text.splitlines()
            if not ln.isascii() and len(_NON_LATIN_RE.findall(ln)) >= min_letters]


def _string_constants(source: str) -> list[str]:
    """Module-level string constants (lists, sets, calls over strings), docstring excluded."""
    tree = parse_python(source)
    if tree is None:
        return []
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            out += [n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return [s.strip() for s in out if s.strip()]


def _cldr_document(locale_id: str) -> str | None:
    from babel import Locale

    loc = Locale.parse(locale_id)
    parts = []
    for title, table in (("languages", loc.languages), ("territories", loc.territories),
                         ("scripts", loc.scripts), ("currencies", loc.currencies)):
        names = [str(v) for _, v in sorted(table.items())]
        if names:
            parts.append(f"{loc.get_display_name(locale_id) or locale_id} — {title}\n" + "\n".join(names))
    for table in (loc.months, loc.days):
        wide = table.get("format", {}).get("wide", {})
        if wide:
            parts.append(", ".join(str(v) for _, v in sorted(wide.items())))
    text = "\n\n".join(parts)
    return text if len(text) >= 200 else None


def multilingual(stdlib_root: Path, stdlib_texts: list[tuple[str, str]], site_files: Listing,
                 scale: float, rng: random.Random) -> Source:
    src = Source(
        name="multilingual", category="multilingual",
        license="mixed (PSF-2.0, Unicode CLDR license, each package's own)", fmt="parquet",
        description=("CJK sample texts of the stdlib tests, non-Latin lines of stdlib modules, translated "
                     "messages (*.po), stop-word lists and example sentences of packages, CLDR locale names"),
    )
    # (id, lang, loader) candidates; loaders run only for the seeded subset.
    cands: list[tuple[str, str, object]] = []
    for p in sorted((stdlib_root / "test" / "cjkencodings").glob("*-utf8.txt")):
        cands.append((f"multilingual/stdlib/test/cjkencodings/{p.name}", _cjk_lang(p.name), p))
    for r, p in site_files:
        if p.suffix == ".po":
            lang = p.parts[-3] if p.parent.name == "LC_MESSAGES" else p.stem
            cands.append((f"multilingual/site-packages/{r}", lang, p))
        elif "/stoplists/" in r and p.suffix == ".txt":
            cands.append((f"multilingual/site-packages/{r}", p.stem.lower(), p))
        elif re.match(r"spacy/lang/[a-z_]+/(examples|stop_words)\.py$", r):
            cands.append((f"multilingual/site-packages/{r}", p.parent.name, ("strings", p)))
    try:
        import babel.localedata

        for loc in sorted(i for i in babel.localedata.locale_identifiers() if "_" not in i):
            cands.append((f"multilingual/cldr/{loc}", loc, ("cldr", loc)))
    except ImportError:
        pass
    seen: set[str] = set()
    for doc_id, lang, what in subset(cands, scale, rng, min_n=10):
        if isinstance(what, Path):
            text = read_text(what)
        elif what[0] == "strings":
            src_text = read_text(what[1], python_source=True)
            text = "\n".join(_string_constants(src_text)) if src_text else None
        else:
            text = _cldr_document(what[1])
        if text and text not in seen:
            seen.add(text)
            src.records.append({"id": doc_id, "text": text, "lang": lang})
    for relpath, text in stdlib_texts:  # already a seeded subset of the stdlib
        lines = _non_latin_lines(text)
        if sum(len(ln) for ln in lines) >= 150:
            src.records.append({"id": f"multilingual/stdlib/{relpath}", "text": "\n".join(lines), "lang": "mul"})
    src.records.sort(key=lambda r: r["id"])
    return src
