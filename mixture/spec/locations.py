"""Where the store is against the sources: a `store.uri` equal to, inside or containing a source location (or a
source glob that matches store files) is refused, and a source listing skips every store's own files and every
materialized mixture's."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem
from fsspec.utils import glob_translate

from mixture.stages.registry import PREPARED, TALLY
from mixture.store import layout

GLOB_CHARS = "*?["
# folders of a store's own files (the cells are `cluster=*/quality=*`); a folder holding store.json or _build/ is a store
STORE_FOLDERS = frozenset({layout.BUILD_DIR, layout.QUARANTINE_DIR, layout.DROPPED_DIR, layout.SAMPLES_DIR,
                           layout.MODEL_DIR})
STORE_MARKERS = (layout.STORE_JSON, layout.BUILD_DIR)
# a folder holding manifest.json and phase=NAME/ folders, or materialize's work, is a materialized mixture
MIXTURE_MANIFEST, MIXTURE_WORK = "manifest.json", ("_materialize", "_materialize.lock")
_PHASE = re.compile(r"^phase=[^/]+$")
_CELL = (re.compile(r"^cluster=[^/]+$"), re.compile(r"^quality=[^/]+$"))
# files every store holds (relative to it): a source glob matching one of them would read a store placed there
STORE_EXAMPLES = (layout.STORE_JSON, "cluster=00/quality=0/000_part-00000.parquet", "cluster=00/quality=0/_ledger.json",
                  f"{layout.QUARANTINE_DIR}/part-00000.parquet", f"{layout.DROPPED_DIR}/filtered/part-00000.parquet",
                  layout.UNIFORM_SAMPLES, f"{layout.MODEL_DIR}/fit.json", layout.LOCK_FILE,
                  f"{layout.BUILD_DIR}/prepare/stats.json", PREPARED.path(PREPARED.folder, 0),
                  TALLY.path(TALLY.folder, 0))


def has_glob(path: str) -> bool:
    return any(ch in path for ch in GLOB_CHARS)


def glob_base(path: str) -> str:
    """The folder before a glob's first wildcard component (`/a/b/*/x/*.parquet` → `/a/b`)."""
    parts = path.split("/")
    idx = next(i for i, p in enumerate(parts) if has_glob(p))
    return "/".join(parts[:idx]) or "/"


# ---------------------------------------------------------------------------------------- a store's own files
def store_component(parts: list[str]) -> int | None:
    """The index of the first component of a path (relative to a source location) that is a store's own folder:
    `_build`, `_quarantine`, `_dropped`, `_samples`, `_model`, or a cell folder `cluster=*` followed by `quality=*`."""
    for i, part in enumerate(parts[:-1]):  # the last part is the file name
        if part in STORE_FOLDERS:
            return i
        if _CELL[0].match(part) and i + 1 < len(parts) - 1 and _CELL[1].match(parts[i + 1]):
            return i
    return None


@dataclass
class StoreSkip:
    """What a source listing left out: {store folder: files skipped}."""

    folders: dict[str, int] = field(default_factory=dict)

    def add(self, folder: str) -> None:
        self.folders[folder] = self.folders.get(folder, 0) + 1

    def messages(self, source: str) -> list[str]:
        return [f"source {source!r}: skipped {n:,} file(s) under {folder}: a store's own files (store.json, _build/, "
                "cluster=*/quality=*, _quarantine/, _dropped/, _samples/, _model/) and a materialized mixture's "
                "(manifest.json with phase=*/, _materialize/) are never read as input"
                for folder, n in sorted(self.folders.items())]


def skip_store_files(fs, base: str, paths: Iterable[str], listed: Iterable[str] | None = None) -> tuple[list[str], StoreSkip]:
    """`paths` (on `fs`, under `base`) without the files of a store: those under a folder holding store.json or
    _build/ (told by `listed`, every file and folder (ending in "/") under `base`, when given; else asked of `fs`,
    once per folder) and those
    in a store's own folders (`store_component`)."""
    base = base.rstrip("/")
    markers: dict[str, bool] = {}
    if listed is not None:
        manifests, phases = set(), set()
        for p in listed:
            rel = p[len(base) + 1:] if p.startswith(base + "/") else None
            if rel is None:
                continue
            parts = rel.split("/")  # a folder ends in "/": its last part is ""
            for i, part in enumerate(parts):
                folder = "/".join([base, *parts[:i]])
                last = i == len(parts) - 1
                if (part == layout.BUILD_DIR and not last) or (part == layout.STORE_JSON and last) or part in MIXTURE_WORK:
                    markers[folder] = True
                elif part == MIXTURE_MANIFEST and i == len(parts) - 1:
                    manifests.add(folder)
                elif _PHASE.match(part) and i < len(parts) - 1:
                    phases.add(folder)
        markers.update(dict.fromkeys(manifests & phases, True))

    def is_store(folder: str) -> bool:
        if folder not in markers:
            markers[folder] = listed is None and (
                any(fs.exists(f"{folder}/{m}") for m in (*STORE_MARKERS, *MIXTURE_WORK))
                or (fs.exists(f"{folder}/{MIXTURE_MANIFEST}") and bool(fs.glob(f"{folder}/phase=*"))))
        return markers[folder]

    kept, skipped = [], StoreSkip()
    for p in paths:
        rel = p[len(base) + 1:] if p.startswith(base + "/") else None
        if rel is None:  # a single file named by the source itself
            kept.append(p)
            continue
        parts = rel.split("/")
        folders = ["/".join([base, *parts[:i]]) for i in range(len(parts))]
        root = next((f for f in folders if is_store(f)), None)
        if root is None and (i := store_component(parts)) is not None:
            root = "/".join([base, *parts[: i + 1]])
        if root is None:
            kept.append(p)
        else:
            skipped.add(root)
    return kept, skipped


# ------------------------------------------------------------------------------------- the store against sources
def _where(uri: str) -> tuple[type, str]:
    """(filesystem class, absolute path without protocol; symlinks resolved on a local disk)."""
    fs, path = url_to_fs(uri)
    if isinstance(fs, LocalFileSystem):
        if has_glob(path):
            base = glob_base(path)
            path = os.path.realpath(base) + path[len(base):]
        else:
            path = os.path.realpath(path)
    return type(fs), path.rstrip("/") or "/"


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def store_overlap(store_uri: str, source_uri: str, source: str) -> str | None:
    """Why a store at `store_uri` cannot be built from the source named `source` at `source_uri` (a path, folder or
    glob), or None: the store equal to, inside or containing the source's location, or matched by its glob."""
    try:
        store_fs, store = _where(store_uri)
        source_fs, where = _where(source_uri)
    except Exception:  # noqa: BLE001 - an unknown protocol is reported by the listing check
        return None
    if store_fs is not source_fs:
        return None
    if has_glob(where):
        base = glob_base(where)
        if _inside(base, store):
            return f"contains the files of source {source}: the build would write among them"
        pattern = re.compile(glob_translate(where))
        hits = [rel for rel in STORE_EXAMPLES if pattern.match(f"{store}/{rel}")]
        if hits:
            return f"would be read by the glob of source {source}: it matches {store}/{hits[0]}"
        return None
    if store == where:
        return f"is the location of source {source}: the build would read its own output as input"
    if _inside(store, where):
        return f"is inside the folder of source {source}: the build would read its own output as input"
    if _inside(where, store):
        return f"contains the files of source {source}: the build would write among them"
    return None
