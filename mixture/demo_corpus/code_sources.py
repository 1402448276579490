"""Code sources: the stdlib's `.py` files, their docstrings, and a budgeted sample of installed packages' code."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import xxhash

from .docstrings import Docstring, module_document
from .local_files import list_files, read_text, rel, subset
from .model import Source

PACKAGE_CODE_CHARS = 24_000_000  # at scale 1.0 (about 6 M cl100k tokens)


def stdlib_py_files(root: Path) -> list[tuple[str, Path]]:
    """(path relative to the stdlib, absolute path) of every stdlib module, site-packages excluded."""
    return [(rel(p, root), p) for p in list_files(root, (".py",), skip_site_packages=True)]


def is_test_module(relpath: str) -> bool:
    """Test suites (test/, tests/, idle_test/) hold few docstrings worth reading: the docstrings source skips them."""
    return any(part in ("test", "tests", "idle_test") for part in relpath.split("/")[:-1])


def read_stdlib(files: list[tuple[str, Path]], scale: float, rng: random.Random) -> list[tuple[str, str]]:
    """A seeded subset of the stdlib modules as (relative path, source text)."""
    out = []
    for relpath, path in subset(files, scale, rng, min_n=20):
        text = read_text(path, python_source=True)
        if text is not None:
            out.append((relpath, text))
    return out


def stdlib_code(files: list[tuple[str, str]]) -> Source:
    src = Source(
        name="stdlib-code", category="code", license="PSF-2.0", fmt="parquet",
        description="Python standard library modules, one document per .py file (fields path/content)",
        text_field="content", id_field="path",
    )
    src.records = [{"id": f"stdlib/{r}", "text": t} for r, t in files]
    return src


def stdlib_docstrings(by_module: dict[str, list[Docstring]]) -> Source:
    src = Source(
        name="stdlib-docstrings", category="prose", license="PSF-2.0", fmt="jsonl.gz",
        description="Module, class and function docstrings of the stdlib (ast), one document per module",
    )
    src.records = [
        {"id": f"docstrings/{m}", "text": module_document(docs), "module": m, "n_docstrings": len(docs)}
        for m, docs in sorted(by_module.items())
        if docs
    ]
    return src


def package_code_files(site_files: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """Installed packages' .py files (relative to their site-packages folder), editable-install hooks excluded."""
    return [(r, p) for r, p in site_files
            if p.suffix == ".py" and not r.startswith("__editable__") and ".dist-info/" not in r]


def package_code(
    files: list[tuple[str, Path]], scale: float, rng: random.Random, reject: Callable[[str], bool]
) -> Source:
    """Installed packages' .py files drawn in seeded order until the character budget is spent."""
    src = Source(
        name="package-code", category="code", license="various (each package's own)", fmt="parquet",
        description="Python source of installed packages (site-packages), a seeded sample by character budget",
    )
    # each file's place in the draw is a seeded hash of its path: installing another package inserts its files into
    # the order and leaves the others' order as it was (a shuffle of the whole listing would draw a new sample)
    salt = rng.getrandbits(64)
    order = sorted(range(len(files)), key=lambda i: xxhash.xxh3_64_intdigest(files[i][0], seed=salt))
    budget, used, chosen = PACKAGE_CODE_CHARS * scale, 0, []
    for i in order:
        if used >= budget:
            break
        relpath, path = files[i]
        text = read_text(path, python_source=True)
        if text is None or reject(text):
            continue
        chosen.append((relpath, text))
        used += len(text)
    src.records = [{"id": f"site-packages/{r}", "text": t} for r, t in sorted(chosen)]
    return src
