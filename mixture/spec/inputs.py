"""What a spec's inputs are on storage now: each source's files with their size and change marks, and the other
files the spec names (the input manifest a build keys its work by); and how two manifests differ."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from fsspec.core import url_to_fs

from mixture.spec.models import Source
from mixture.spec.resolve import References
from mixture.spec.source_formats import source_format
from mixture.stages.keys import flatten
from mixture.store.formats import InputFile, InputManifest, Provenance, SourceInputs, TokenizerRef

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


def files_under(base: str, rels: list[str]) -> list[InputFile]:
    """The manifest entries of files `rels` under `base`."""
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
    for a source whose units are resolved when its stage is built, like `format: datasets`)."""

    inputs: SourceInputs
    base: str
    files: tuple[str, ...]  # relative to `base`
    sizes: tuple[int | None, ...]
    skipped: tuple[str, ...] = ()  # a sentence per store folder under the source whose files the listing left out


def list_source(src: Source, uri: str) -> ListedSource:
    """List one source (`uri` resolved) as its format lists it (`SourceFormat.listing`): its files with their sizes
    and change marks, which its readers share out; a `format: datasets` source gives its manifest entry only (its
    units are resolved when its stage is built)."""
    return source_format(src.format).list_source(src, uri)


def spec_files(refs: References) -> dict[str, list[InputFile]]:
    """The files, other than the sources', that a build of the spec reads, by the spec field that names them:
    benchmarks (when decontamination is on), a fastText language model, the fastText model (scorer: fasttext), the
    sentence model (embedder: sentence), a local tokenizer.json."""
    spec = refs.spec
    out: dict[str, list[InputFile]] = {}
    if spec.processing.decontamination.enabled:
        for i, uri in enumerate(refs.benchmarks):
            out[f"processing.decontamination.benchmarks[{i}].uri"] = list_files(uri)
    if refs.language_model is not None:
        out["processing.language.model"] = list_files(refs.language_model)
    q, c = spec.partition.quality, spec.partition.clusters
    if q.scorer == "fasttext" and refs.quality_model:
        out["partition.quality.fasttext_model"] = list_files(refs.quality_model)
    if c.embedder == "sentence" and refs.sentence_model:
        out["partition.clusters.sentence_model"] = list_files(refs.sentence_model)
    tok = refs.tokenizer
    if tok.kind == "file" and os.path.exists(tok.name):
        out["tokenizer"] = list_files(tok.name)
    return out


def relist(prov: Provenance, tokenizer: TokenizerRef) -> tuple[InputManifest, list[str]]:
    """The inputs a store was built from (`tokenizer`: the resolved tokenizer its store.json records), listed again
    now (from the canonical spec it records); and the problems listing them (a source that cannot be listed, by
    name)."""
    flat = flatten(prov.spec)
    sources: list[SourceInputs] = []
    problems = []
    for entry in prov.spec.get("sources", []):
        try:
            src = Source.model_validate(entry)
            sources.append(list_source(src, src.uri).inputs)
        except Exception as exc:  # noqa: BLE001 - a source gone or unreachable is reported by name
            problems.append(f"source {entry.get('name')}: cannot list {entry.get('uri')!r}: {type(exc).__name__}: {exc}")
    files: dict[str, list[InputFile]] = {}
    for field in prov.inputs.files:
        uri = flat.get(field)
        if isinstance(uri, str):
            files[field] = list_files(tokenizer.name if field == "tokenizer" else uri)
    return InputManifest(sources=sources, files=files), problems
