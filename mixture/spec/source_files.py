"""Sources of plain files (every format but `datasets`): the files of a path, folder or glob with the format's
extensions, their check, their line in `mixture validate` and the units the build shares out (one file each)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from fsspec.core import url_to_fs

from mixture.spec.inputs import ListedSource, files_under
from mixture.spec.locations import StoreSkip, glob_base, has_glob, skip_store_files
from mixture.spec.models import Source
from mixture.spec.source_formats import SourceError, SourceUnits, source_format
from mixture.store.formats import SourceInputs


@dataclass
class SourceListing:
    """The files of a source: its base folder, each file relative to it with its size (None if not reported), and
    the store files the listing left out."""

    base: str
    files: list[tuple[str, int | None]]
    skipped: StoreSkip
    irregular: list[str] = field(default_factory=list)  # matched paths that are no regular file (FIFO, loop, ...)

    def irregular_problem(self, source: str) -> str | None:
        """Why the source cannot be read while it matches an irregular path (None when it matches none)."""
        if not self.irregular:
            return None
        more = f" (and {len(self.irregular) - 1} more)" if len(self.irregular) > 1 else ""
        return (f"source {source!r}: {self.irregular[0]}{more} is not a regular file (a FIFO, socket, device, or a "
                "symlink that loops or points nowhere): reading it could block or fail; remove it from the source "
                "folder or narrow the source's glob")


def match_files(uri: str, extensions: tuple[str, ...]) -> SourceListing:
    """The files of a path, folder or glob at any fsspec URI (in a folder: those with one of `extensions`), sorted;
    a store's own files under it are left out (`locations.skip_store_files`: the build never reads a store as its
    input)."""
    fs, path = url_to_fs(uri)
    listed, one_file = None, False
    if has_glob(path):
        base = glob_base(path)
        found = fs.glob(path, detail=True)
    elif fs.isdir(path):
        base = path
        everything = fs.find(path, withdirs=True, detail=True)  # folders too: an empty _build/ marks a store
        listed = [f + "/" if info.get("type") == "directory" else f for f, info in everything.items()]
        found = {f: info for f, info in everything.items() if f.endswith(extensions) and info.get("type") != "directory"}
    else:  # one file, named by the source itself: read even inside a store
        base, one_file = os.path.dirname(path) or ".", True
        found = {path: fs.info(path)} if fs.exists(path) else {}
    base = base.rstrip("/")
    irregular = sorted(f for f, info in found.items() if info.get("type") not in ("file", None))
    found = {f: info for f, info in found.items() if f not in set(irregular)}
    kept, skipped = (sorted(found), StoreSkip()) if one_file else skip_store_files(fs, base, sorted(found), listed)
    protocol = uri.split("://", 1)[0] + "://" if "://" in uri else ""
    files = [(f[len(base) + 1 :] if f.startswith(base + "/") else f, found[f].get("size")) for f in kept]
    return SourceListing(protocol + base, files, skipped, [protocol + f for f in irregular])


def _matched(src: Source, uri: str) -> SourceListing:
    return match_files(uri, source_format(src.format).extensions)


def list_file_source(src: Source, uri: str) -> ListedSource:
    """The source's files with their sizes and change marks: its manifest entry, and the files its readers share."""
    listing = _matched(src, uri)
    if (why := listing.irregular_problem(src.name)) is not None:
        raise SourceError(src.name, why.split(": ", 1)[1])
    base, listed = listing.base, listing.files
    files = files_under(base, [rel for rel, _ in listed])
    sizes = tuple(f.size if f.size is not None else size for f, (_, size) in zip(files, listed, strict=True))
    return ListedSource(SourceInputs(name=src.name, base=base, files=files), base, tuple(rel for rel, _ in listed),
                        sizes, tuple(listing.skipped.messages(src.name)))


def check_files(src: Source, uri: str) -> list[tuple[str, str]]:
    """The source lists, and matches at least one file of its format."""
    try:
        listing = _matched(src, uri)
    except Exception as exc:  # permission, bad protocol, unreachable bucket
        return [("uri", f"source {src.name!r}: cannot list {uri!r}: {type(exc).__name__}: {exc}")]
    if (why := listing.irregular_problem(src.name)) is not None:
        return [("uri", why)]
    if listing.files:
        return []
    exts = ", ".join(source_format(src.format).extensions)
    skipped = "".join(f" (skipped {n:,} file(s) of a store under {folder})"
                      for folder, n in sorted(listing.skipped.folders.items()))
    return [("uri", f"source {src.name!r} matches no {src.format} file ({exts}) at {uri!r}{skipped}; "
                    "check the path or glob")]


def check_hf_files(src: Source, uri: str) -> list[tuple[str, str]]:
    """`check_files`, but a hub dataset (hf://) resolves at read time (network)."""
    return [] if uri.startswith("hf://") else check_files(src, uri)


def describe_files(src: Source, uri: str) -> tuple[str, list[str]]:
    """How many files the source matches (a hub location: not listed), and the store files the listing left out."""
    if uri.startswith("hf://"):
        return "hub", []
    listing = _matched(src, uri)
    return f"{len(listing.files)} file(s)", listing.skipped.messages(src.name)


def file_units(src: Source, uri: str, listed: ListedSource) -> SourceUnits:
    """One unit per file, as listed when the build starts."""
    return SourceUnits(listed.base, listed.files, listed.sizes)
