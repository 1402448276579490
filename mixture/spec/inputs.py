"""What a spec's inputs are on storage now: each source's files with their size and change marks, and the other
files the spec names (the input manifest a build keys its work by); and how two manifests differ."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Any

from fsspec.core import url_to_fs

from mixture.spec import load
from mixture.spec.datasets_source import dataset_form, hub_repo, hub_revision, saved_files
from mixture.spec.load import resolve_uri
from mixture.spec.models import Source, Spec
from mixture.store.formats import InputFile, SourceInputs

# what says a file changed, by filesystem: {name in the manifest: the listing's keys for it}
IDENTITY = {
    "mtime": ("mtime",),  # local files: seconds (a float); memory:// reports `created`
    "generation": ("generation",),  # gs://
    "etag": ("ETag", "etag"),  # s3:// (and gs://: the md5)
    "crc32c": ("crc32c",),  # gs://
    "version_id": ("VersionId",),  # s3:// versioned buckets
    "blob_id": ("blob_id",),  # hf://
}
LISTED_AT_ONCE = 16  # more files than this on an object store: one recursive listing instead of one request each


def identity(info: dict[str, Any]) -> dict[str, str | int | float]:
    """The change marks of a file's fsspec `info()` (only plain values: a datetime differs between a listing and
    an info call of the same object, so it is left out)."""
    out: dict[str, str | int | float] = {}
    for name, keys in IDENTITY.items():
        for key in keys:
            value = info.get(key)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                out[name] = value.strip('"') if isinstance(value, str) else value
                break
    if "mtime" not in out and isinstance(info.get("created"), int | float):
        out["mtime"] = info["created"]
    return out


def _entry(rel: str, info: dict[str, Any]) -> InputFile:
    size = info.get("size")
    return InputFile(path=rel, size=size if isinstance(size, int) else None, identity=identity(info))


def _infos(fs, paths: list[str]) -> dict[str, dict[str, Any]]:
    """{path: info} of files on one filesystem; an object store is listed once when there are many."""
    found: dict[str, dict[str, Any]] = {}
    local = "file" in fs.protocol or "local" in fs.protocol
    if not local and len(paths) > LISTED_AT_ONCE:
        parent = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
        try:
            found = fs.find(parent, detail=True)
        except Exception:  # noqa: BLE001 - each file is asked for below
            found = {}
    out = {}
    for p in paths:
        info = found.get(p)
        if info is None:
            try:
                info = fs.info(p)
            except FileNotFoundError:
                info = {}
        out[p] = info
    return out


def _files_under(base: str, rels: list[str]) -> list[InputFile]:
    fs, root = url_to_fs(base)
    root = root.rstrip("/")
    infos = _infos(fs, [f"{root}/{rel}" for rel in rels])
    return [_entry(rel, infos[f"{root}/{rel}"]) for rel in rels]


def list_files(uri: str) -> list[InputFile]:
    """Every file at a path, folder or glob (paths relative to the folder, or to the glob's fixed part)."""
    fs, path = url_to_fs(uri)
    if any(ch in path for ch in "*?["):
        base = "/".join(path.split("/")[: next(i for i, p in enumerate(path.split("/")) if any(c in p for c in "*?["))])
        found = fs.glob(path, detail=True)
    elif fs.isdir(path):
        base, found = path, fs.find(path, detail=True)
    elif fs.exists(path):
        base, found = os.path.dirname(path), {path: fs.info(path)}
    else:
        return []
    base = base.rstrip("/")
    return [_entry(p[len(base) + 1:] if p.startswith(base + "/") else p, found[p]) for p in sorted(found)]


@dataclass(frozen=True)
class ListedSource:
    """A source as listed when the build starts: its manifest entry, and the files its readers share out (none
    for a `format: datasets` source: its units come from `dataset_units`)."""

    inputs: SourceInputs
    base: str
    files: tuple[str, ...]  # relative to `base`
    sizes: tuple[int | None, ...]
    skipped: tuple[str, ...] = ()  # a sentence per store folder under the source whose files the listing left out


def dataset_inputs(src: Source, uri: str) -> SourceInputs:
    """The manifest entry of a `format: datasets` source, without preparing it: a saved dataset's Arrow files, a
    hub dataset's commit (one request), a local folder's data files."""
    form = dataset_form(src, uri)
    if form == "saved":
        return SourceInputs(name=src.name, base=uri, files=_files_under(uri, saved_files(src, uri)))
    repo = hub_repo(uri)
    if repo:
        return SourceInputs(name=src.name, base=uri, files=[], revision=hub_revision(src, repo))
    return SourceInputs(name=src.name, base=uri, files=list_files(uri))


def list_source(src: Source, uri: str) -> ListedSource:
    """List one source (`uri` resolved): its files with their sizes and change marks, which its readers share out.
    A `format: datasets` source gives its manifest entry only (`dataset_inputs`): its units are resolved when its
    stage is built (`dataset_units`: a hub dataset with `streaming: false` is downloaded and prepared then)."""
    if src.format == "datasets":
        return ListedSource(dataset_inputs(src, uri), uri, (), ())
    listing = load.list_source(uri, src.format)
    base, listed = listing.base, listing.files
    files = _files_under(base, [rel for rel, _ in listed])
    sizes = tuple(f.size if f.size is not None else size for f, (_, size) in zip(files, listed, strict=True))
    return ListedSource(SourceInputs(name=src.name, base=base, files=files), base, tuple(rel for rel, _ in listed),
                        sizes, tuple(listing.skipped.messages(src.name)))


def spec_files(spec: Spec, spec_dir: str) -> dict[str, list[InputFile]]:
    """The files, other than the sources', that a build of `spec` reads, by the spec field that names them:
    benchmarks (when decontamination is on), a fastText language model, the fastText model (scorer: fasttext), the sentence model (embedder:
    sentence), a local tokenizer.json."""
    out: dict[str, list[InputFile]] = {}
    dc = spec.processing.decontamination
    if dc.enabled:
        for i, b in enumerate(dc.benchmarks):
            out[f"processing.decontamination.benchmarks[{i}].uri"] = list_files(resolve_uri(b.uri, spec_dir))
    lid = spec.processing.language.model
    if lid.startswith("fasttext:"):
        out["processing.language.model"] = list_files(resolve_uri(lid.removeprefix("fasttext:"), spec_dir))
    q, c = spec.partition.quality, spec.partition.clusters
    if q.scorer == "fasttext" and q.fasttext_model:
        out["partition.quality.fasttext_model"] = list_files(resolve_uri(q.fasttext_model, spec_dir))
    if c.embedder == "sentence" and c.sentence_model:
        out["partition.clusters.sentence_model"] = list_files(resolve_uri(c.sentence_model, spec_dir))
    tok = spec.tokenizer
    if not tok.startswith("tiktoken:"):
        local = resolve_uri(tok.removeprefix("hf:"), spec_dir)
        if os.path.exists(local):
            out["tokenizer"] = list_files(local)
    return out


# -- differences -----------------------------------------------------------------------------------------------
def file_changed(old: InputFile, new: InputFile) -> str | None:
    """What differs between two listings of one file (None: nothing): its size, or a change mark both have."""
    if old.size != new.size:
        return f"size {_n(old.size)} → {_n(new.size)} bytes"
    for key in sorted(old.identity.keys() & new.identity.keys()):
        if old.identity[key] != new.identity[key]:
            return f"{key} {_mark(key, old.identity[key])} → {_mark(key, new.identity[key])}"
    return None


def _mark(key: str, value: str | int | float) -> str:
    if key == "mtime" and isinstance(value, int | float):  # a local modification time, as UTC
        return dt.datetime.fromtimestamp(value, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return str(value)


def _n(v: int | None) -> str:
    return "?" if v is None else f"{v:,}"


@dataclass
class FilesDrift:
    """How the files of one source (or spec field) differ from what was recorded."""

    name: str  # the source name, or the spec field path
    added: list[str]
    removed: list[str]
    changed: list[tuple[str, str]]  # (path, what changed)
    other: list[str]  # a moved base, another hub commit or other shards
    source: bool = True  # False: the files a spec field names (a benchmark, a model, the tokenizer)

    @property
    def what(self) -> str:
        return f"source {self.name}" if self.source else self.name

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.other)

    def lines(self, limit: int = 8) -> list[str]:
        def some(items: list[str]) -> str:
            return ", ".join(items[:limit]) + (f", … ({len(items) - limit:,} more)" if len(items) > limit else "")

        out = list(self.other)
        if self.added:
            out.append(f"{len(self.added):,} file(s) added: {some(self.added)}")
        if self.removed:
            out.append(f"{len(self.removed):,} file(s) removed: {some(self.removed)}")
        if self.changed:
            out.append(f"{len(self.changed):,} file(s) changed: {some([f'{p} ({what})' for p, what in self.changed])}")
        return out


def files_drift(name: str, old: list[InputFile], new: list[InputFile], source: bool = True) -> FilesDrift:
    was, now = {f.path: f for f in old}, {f.path: f for f in new}
    changed = [(p, what) for p in sorted(was.keys() & now.keys()) if (what := file_changed(was[p], now[p]))]
    return FilesDrift(name, sorted(now.keys() - was.keys()), sorted(was.keys() - now.keys()), changed, [], source)


def sources_drift(old: list[SourceInputs], new: list[SourceInputs]) -> list[FilesDrift]:
    """Per source (by name), what differs; a source only in one of them is left to the spec's differences."""
    was = {s.name: s for s in old}
    out = []
    for s in new:
        o = was.get(s.name)
        if o is None:
            continue
        d = files_drift(s.name, o.files, s.files)
        if o.base != s.base:
            d.other.append(f"read from {s.base} (was {o.base})")
        if o.revision != s.revision:
            d.other.append(f"hub commit {o.revision} → {s.revision}")
        if o.units != s.units:
            d.other.append(f"{len(o.units or []):,} → {len(s.units or []):,} shards")
        if d:
            out.append(d)
    return out


def other_files_drift(old: dict[str, list[InputFile]], new: dict[str, list[InputFile]]) -> list[FilesDrift]:
    return [d for key in sorted(old.keys() & new.keys()) if (d := files_drift(key, old[key], new[key], source=False))]
