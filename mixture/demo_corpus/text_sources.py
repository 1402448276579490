"""Prose and data sources: the language reference, package documentation, licenses and structured data files."""

from __future__ import annotations

import email.parser
import email.policy
import random
import re
from pathlib import Path

from .local_files import read_text, subset
from .model import Source
from .textutil import letter_share

Listing = list[tuple[str, Path]]  # (path relative to its root, absolute path), sorted
_LICENSE_RE = re.compile(r"licen[cs]e|copying|notice|copyright", re.IGNORECASE)
DOC_SUFFIXES = (".md", ".rst", ".txt", ".doctest")
DATA_SUFFIXES = (".json", ".csv", ".tsv", ".toml", ".yaml", ".yml", ".ini", ".cfg", ".xml")
DIST_INFO_DATA = ("RECORD", "entry_points.txt", "WHEEL")
INSTALL_LOCATION = ("direct_url.json",)  # where a package was installed from (an editable install: this checkout)


def python_reference(scale: float, rng: random.Random) -> Source:
    """`pydoc_data.topics`: the language reference as pydoc shows it, one document per topic, no id field."""
    from pydoc_data.topics import topics

    src = Source(
        name="python-reference", category="prose", license="PSF-2.0", fmt="jsonl",
        description="The Python language reference topics shipped for pydoc (pydoc_data.topics); no id field",
        id_field=None,
    )
    names = subset(sorted(topics), scale, rng, min_n=6)
    src.records = [{"topic": n, "text": topics[n]} for n in names if topics[n].strip()]
    return src


def _in_dist_info(relpath: str) -> bool:
    return ".dist-info/" in relpath or ".egg-info/" in relpath


def location_free(name: str, text: str) -> str:
    """A RECORD without the lines whose hashes differ from one checkout or venv to another: the scripts pip
    installs outside the package (`../../../bin/…`, their first line names the environment's Python), an
    editable install's finder (`__editable__…`) and `direct_url.json` (both name the checkout)."""
    if name != "RECORD":
        return text
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(("../", "__editable__")) and not line.split(",", 1)[0].endswith(INSTALL_LOCATION))


def _prose_file(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(text.split()) < 50 or not lines:
        return False
    return letter_share(text[:50_000]) >= 0.8 and sum(len(ln) for ln in lines) / len(lines) >= 30


def metadata_document(text: str) -> str | None:
    """Name, version, summary and long description of a METADATA file; None without a description."""
    msg = email.parser.Parser(policy=email.policy.compat32).parsestr(text)
    body = msg.get_payload()
    if not isinstance(body, str) or not body.strip():
        body = msg.get("Description") or ""
    if len(body.strip()) < 100:
        return None
    head = f"{msg.get('Name', '')} {msg.get('Version', '')}: {msg.get('Summary', '')}".strip()
    return f"{head}\n\n{body.strip()}"


def package_docs(site_files: Listing, scale: float, rng: random.Random) -> Source:
    src = Source(
        name="package-docs", category="prose", license="various (each package's own)", fmt="jsonl.zst",
        description="Long descriptions (dist-info METADATA) and documentation files shipped in installed packages",
    )
    cands = [
        (r, p) for r, p in site_files
        if (r.endswith(".dist-info/METADATA") and r.count("/") == 1)
        or (p.suffix.lower() in DOC_SUFFIXES and not _in_dist_info(r) and not _LICENSE_RE.search(p.name)
            and "/stoplists/" not in r)
    ]
    for r, p in subset(cands, scale, rng, min_n=6):
        text = read_text(p)
        if text is None:
            continue
        if r.endswith("METADATA"):
            text = metadata_document(text)
        elif p.suffix.lower() == ".txt" and not _prose_file(text):
            text = None
        if text:
            src.records.append({"id": f"package-docs/{r}", "text": text})
    return src


def licenses(stdlib: Listing, site_files: Listing, scale: float, rng: random.Random) -> Source:
    """License texts: naturally full of exact and near duplicates (MIT, Apache-2.0, BSD...)."""
    src = Source(
        name="licenses", category="specialized", license="various (the licenses themselves)", fmt="jsonl.gz",
        description="LICENSE/COPYING/NOTICE files of installed packages and the Python LICENSE",
    )
    cands = [(f"stdlib/{r}", p) for r, p in stdlib if "/" not in r and _LICENSE_RE.search(r)]
    cands += [(f"site-packages/{r}", p) for r, p in site_files
              if _LICENSE_RE.search(p.name) and p.suffix.lower() not in (".py", ".pyc", ".so", ".pyi", ".h")]
    for r, p in subset(cands, scale, rng, min_n=6):
        text = read_text(p)
        if text:
            src.records.append({"id": f"licenses/{r}", "text": text})
    return src


def structured_data(stdlib: Listing, site_files: Listing, scale: float, rng: random.Random) -> Source:
    src = Source(
        name="structured-data", category="specialized", license="various (PSF-2.0 and each package's own)",
        fmt="parquet",
        description="JSON, CSV, TOML, YAML, INI/CFG and XML data files shipped with the stdlib and packages",
    )
    cands = [(f"stdlib/{r}", p) for r, p in stdlib if p.suffix.lower() in DATA_SUFFIXES]
    cands += [(f"site-packages/{r}", p) for r, p in site_files
              if (p.suffix.lower() in DATA_SUFFIXES or (_in_dist_info(r) and p.name in DIST_INFO_DATA))
              and p.name not in INSTALL_LOCATION]
    for r, p in subset(sorted(cands), scale, rng, min_n=8):
        text = location_free(p.name, read_text(p) or "")
        if text:
            kind = "csv" if p.name == "RECORD" else "ini" if p.name.endswith(".txt") or p.name == "WHEEL" else p.suffix[1:]
            src.records.append({"id": f"structured/{r}", "text": text, "kind": kind.lower()})
    return src
