"""Find and read the real text files every Python installation ships: the stdlib and the installed packages."""

from __future__ import annotations

import io
import math
import os
import random
import sys
import sysconfig
import tokenize
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

# No natural document may reach the demo spec's max_chars (1,000,000): only the planted large one does.
MAX_DOC_CHARS = 900_000
T = TypeVar("T")


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"]).resolve()


def site_dirs() -> list[Path]:
    """The site-packages folders of the running interpreter (sorted, deduplicated, existing)."""
    cands = [Path(p) for p in sys.path if p and Path(p).name in ("site-packages", "dist-packages")]
    for key in ("purelib", "platlib"):
        cands.append(Path(sysconfig.get_paths()[key]))
    seen: dict[str, Path] = {}
    for c in cands:
        if c.is_dir():
            seen.setdefault(str(c.resolve()), c.resolve())
    return [seen[k] for k in sorted(seen)]


def list_files(root: Path, suffixes: Sequence[str] | None = None, *, skip_site_packages: bool = False) -> list[Path]:
    """All regular files under root (sorted), optionally by suffix, never inside __pycache__."""
    skip = {"__pycache__"} | ({"site-packages", "dist-packages"} if skip_site_packages else set())
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for f in filenames:
            if suffixes is not None and os.path.splitext(f)[1].lower() not in suffixes:
                continue
            full = os.path.join(dirpath, f)
            if not os.path.islink(full):
                out.append(Path(full))
    return sorted(out)


def decode(data: bytes, *, python_source: bool = False) -> str | None:
    """UTF-8 text (BOM dropped), or the PEP 263 declared encoding for Python source; None if undecodable."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        if not python_source:
            return None
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            text = data.decode(encoding)
        except (SyntaxError, LookupError, UnicodeDecodeError):
            return None
    return text


def read_text(path: Path, *, python_source: bool = False, max_chars: int = MAX_DOC_CHARS) -> str | None:
    """A file as text, or None when it is empty, undecodable, holds NUL bytes or exceeds max_chars."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data or len(data) > 4 * max_chars:
        return None
    text = decode(data, python_source=python_source)
    if text is None or not text.strip() or len(text) > max_chars:
        return None
    return text


def subset(items: Sequence[T], scale: float, rng: random.Random, min_n: int = 2) -> list[T]:
    """A seeded subset of about scale * len(items) items (at least min_n), in the original order."""
    if scale >= 1.0 or len(items) <= min_n:
        return list(items)
    k = min(len(items), max(min_n, math.ceil(len(items) * scale)))
    keep = sorted(rng.sample(range(len(items)), k))
    return [items[i] for i in keep]


def rel(path: Path, root: Path) -> str:
    p, r = str(path), str(root).rstrip(os.sep) + os.sep
    if p.startswith(r):  # the usual case, a file found under root: os.path.relpath costs ~0.1 ms a call
        return p[len(r):].replace(os.sep, "/")
    return os.path.relpath(path, root).replace(os.sep, "/")
