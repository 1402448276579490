"""Labelled real code and prose from Debian packages: source files labelled by their extension, prose by the
language folder of the documentation that ships it (`labelled_code`, `labelled_prose`; nothing is downloaded)."""

from __future__ import annotations

import random
import zipfile
from collections.abc import Iterator
from pathlib import Path

from .debian_text import FORTUNE_FILES, MAN_LANGUAGES, fortune_files, man_files, read_fortunes, read_man_page

MAX_CHARS = 60_000  # a file is cut here (the content type reads its first 20,000 characters)
# language -> (roots, file name suffixes); the packages that ship them are in PACKAGES
CODE_FILES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "go": (("/usr/share/go-1.19/src", "/usr/share/go-1.19/misc"), (".go",)),
    "rust": (("/usr/src",), (".rs",)),
    "c": (("/usr/include", "/usr/share", "/usr/lib/python3"), (".c", ".h")),
    "cpp": (("/usr/include",), (".hpp", ".cpp", ".cc", ".hh")),
    "javascript": (("/usr/share", "/usr/lib/node_modules"), (".js",)),
    "typescript": (("/usr/share/nodejs", "/usr/lib/node_modules"), (".ts",)),
    "shell": (("/usr/share", "/usr/lib", "/etc"), (".sh",)),
    "sql": (("/usr/share", "/usr/lib"), (".sql",)),
    "perl": (("/usr/share/perl", "/usr/share/perl5", "/usr/lib/x86_64-linux-gnu/perl-base"), (".pm", ".pl")),
    "ruby": (("/usr/lib/ruby",), (".rb",)),
    "php": (("/usr/share",), (".php",)),
    "python": (("/usr/lib/python3",), (".py",)),
    "html": (("/usr/share/doc", "/usr/share"), (".html", ".htm")),
    "xml": (("/usr/share",), (".xml",)),
    "yaml": (("/usr/share", "/usr/lib", "/etc"), (".yaml", ".yml")),
    "json": (("/usr/share", "/usr/lib"), (".json",)),
}
JAVA_SOURCES = "/usr/lib/jvm/*/lib/src.zip"  # a JDK's sources (openjdk-*-source, or a JDK that ships them)
PACKAGES = "golang-1.19-src rust-src libruby3.1 node-typescript"
_SKIP_PARTS = {"testdata", "fixtures", "locale", "vendor", "unicore"}  # unicore: generated Perl data tables
# C headers in C++ trees are C++ (a `.h` says nothing of which)
_CPP_TREES = ("c++", "llvm", "boost", "qt5", "qt6")
_SKIP_SUFFIXES = (".min.js", ".d.js", "-min.js")


def _files(language: str) -> list[Path]:
    roots, suffixes = CODE_FILES[language]
    seen: set[Path] = set()
    out = []
    for root in roots:
        base = Path(root)
        if not base.is_dir():
            continue
        for suffix in suffixes:
            for f in base.rglob(f"*{suffix}"):
                if (f in seen or not f.is_file() or f.is_symlink() or f.name.endswith(_SKIP_SUFFIXES)
                        or _SKIP_PARTS & set(f.parts)):
                    continue
                if language == "c" and f.suffix == ".h" and any(t in p for p in f.parts for t in _CPP_TREES):
                    continue
                seen.add(f)
                out.append(f)
    return sorted(out)


def _read(path: Path) -> str:
    try:
        raw = path.read_bytes()[: MAX_CHARS * 4]
    except OSError:
        return ""
    return raw.decode("utf-8", errors="replace")[:MAX_CHARS]


def _java(rng: random.Random, n: int) -> list[dict]:
    zips = sorted(Path("/").glob(JAVA_SOURCES.lstrip("/")))
    if not zips:
        return []
    with zipfile.ZipFile(zips[0]) as z:
        names = sorted(i.filename for i in z.infolist() if i.filename.endswith(".java") and i.file_size > 200)
        pick = rng.sample(names, min(n, len(names)))
        return [{"id": f"java:{name}", "kind": "code", "lang": "java",
                 "text": z.read(name)[: MAX_CHARS * 4].decode("utf-8", errors="replace")[:MAX_CHARS]}
                for name in pick]


def labelled_code(per_language: int, seed: int = 0, min_chars: int = 200) -> list[dict]:
    """Up to `per_language` files of each language in CODE_FILES (and Java from a JDK's src.zip), drawn with
    `seed`: {id, kind: "code", lang, text}. Files shorter than `min_chars` are left out."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for language in CODE_FILES:
        files = _files(language)
        rng.shuffle(files)
        taken = 0
        for f in files:
            if taken >= per_language:
                break
            text = _read(f)
            if len(text.strip()) >= min_chars:
                rows.append({"id": str(f), "kind": "code", "lang": language, "text": text})
                taken += 1
    return rows + _java(rng, per_language)


def _man_sections(text: str) -> Iterator[str]:
    """A rendered man page's sections (a heading line in capitals starts one)."""
    section: list[str] = []
    for line in text.split("\n"):
        if line and not line[0].isspace() and line.upper() == line and any(c.isalpha() for c in line) and section:
            yield "\n".join(section).strip()
            section = []
        section.append(line)
    if section:
        yield "\n".join(section).strip()


def labelled_prose(per_language: int, seed: int = 0, sections: bool = False) -> list[dict]:
    """Man pages of each translated folder and fortunes of each language, `per_language` of each, drawn with
    `seed`: {id, kind: "man" | "man-section" | "fortune", lang, text}. `sections`: also each man page's sections
    as documents of their own (short texts for language identification)."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for folder, language in MAN_LANGUAGES.items():
        pages = sorted(man_files(folder).items()) if (Path("/usr/share/man") / folder).is_dir() else []
        rng.shuffle(pages)
        for name, path in pages[:per_language]:
            text = read_man_page(path)
            if not text.strip():
                continue
            rows.append({"id": f"man/{folder or 'en'}/{name}", "kind": "man", "lang": language, "text": text})
            if sections:
                rows += [{"id": f"man/{folder or 'en'}/{name}#{i}", "kind": "man-section", "lang": language,
                          "text": s} for i, s in enumerate(_man_sections(text)) if len(s) >= 40]
    for language in FORTUNE_FILES:
        texts = [t for f in fortune_files(language) for t in read_fortunes(f)]
        rng.shuffle(texts)
        rows += [{"id": f"fortune/{language}/{i}", "kind": "fortune", "lang": language, "text": t}
                 for i, t in enumerate(texts[:per_language])]
    return rows
