"""Each stage's key: the hash of the spec fields it reads (stage_registry `reads`), the files they name, the code
version and the previous stage's key; the canonical spec they are read from; and the differences a rerun names.

Light on purpose (no datatrove): `mixture audit` recomputes the keys of a store from its store.json."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import mixture
from mixture.stages import registry as stage_registry
from mixture.stages.drift import FilesDrift, other_files_drift, sources_drift
from mixture.stages.registry import StageDef
from mixture.store.formats import (
    STORE_FORMAT_VERSION,
    InputManifest,
    Provenance,
    SourceInputs,
    StageKey,
    StageRecord,
)

# bump when what a key hashes changes: every stage of every unfinished build is then redone. 2: a task removes what
# an earlier attempt of it left only when that attempt left its marker (pipelines/runtime/attempts.py); work of version 1
# has no markers, so it is redone, not resumed. 3: the bucket stage also writes each prepared file's requests
# (stage minhash_gather reads them); a bucket stage finished by older code has none. 4: stage minhash_route between
# the bucket stage (its pairs now carry their bucket's size, no requests) and minhash_gather; verified pairs by
# partition of their later document. 5: the rounds' edges carry a flag (a star found whole leaves the rounds), the
# pairs routed to their components carry the component, and the greedy tasks' counts its largest
KEYS_VERSION = 5
SOURCES = "sources"
ABSENT = "(absent)"


def code_version() -> str:
    """The version of the code that makes the stages' output (mixture and the store format)."""
    return f"{mixture.__version__}+store{STORE_FORMAT_VERSION}"


def _sha256(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def spec_hash(canon: dict[str, Any]) -> str:
    """sha256 of the canonical spec's JSON (store.json `spec.hash`)."""
    return _sha256(canon)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{field path: value} of every field: mappings and lists of mappings are walked (`sources[2].uri`); a list of
    plain values is one field (`partition.quality.edges`)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else k))
        return out if out or not prefix else {prefix: {}}
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


_INDEX = re.compile(r"\[\d+\]")


def pattern_of(path: str) -> str:
    """`sources[2].uri` → `sources[].uri`: the path with its list indices left out."""
    return _INDEX.sub("[]", path)


def reads(pattern: str, path: str) -> bool:
    """Does the `reads` entry `pattern` cover the field `path`: the field itself, a section above it, or the field
    of every list item (`sources[].uri` covers `sources[2].uri`)?"""
    p = pattern_of(path)
    return p == pattern or p.startswith(pattern + ".") or p.startswith(pattern + "[")


def stage_fields(stage: StageDef, flat: dict[str, Any]) -> dict[str, Any]:
    """{field path: value} of the fields of the canonical spec `stage` reads (its `reads` and its `when`)."""
    patterns = (*stage.reads, *([stage.when] if stage.when else []))
    return {path: v for path, v in flat.items() if any(reads(p, path) for p in patterns)}


def planned(flat: dict[str, Any]) -> list[StageDef]:
    """The stages a build of the canonical spec runs (stage_registry.planned, on field paths)."""
    return [s for s in stage_registry.STAGES if s.when is None or bool(flat.get(s.when))]


def _bare(s: SourceInputs) -> SourceInputs:
    return s.model_copy(update={"records": None})


def key_of(record: StageRecord) -> str:
    """The key of a stage from what its record holds (the `key` field itself left out)."""
    return _sha256({"stage": record.name, "keys_version": record.keys_version, "code": record.code_version,
                    "after": record.after, "fields": record.fields,
                    "sources": None if record.sources is None else [_bare(s).model_dump(mode="json")
                                                                    for s in record.sources],
                    "files": {k: [f.model_dump(mode="json") for f in v] for k, v in sorted(record.files.items())}})


def stage_records(canon: dict[str, Any], inputs: InputManifest, tasks: int, code: str | None = None) -> list[StageRecord]:
    """The record (key and what it is made of) of every stage a build of `canon` with `inputs` runs, chained."""
    flat = flatten(canon)
    out: list[StageRecord] = []
    after = None
    for stage in planned(flat):
        fields = stage_fields(stage, flat)
        reads_sources = any(pattern_of(p).startswith(SOURCES + "[") for p in fields)
        record = StageRecord(
            name=stage.name, key="0" * 64, tasks=tasks, keys_version=KEYS_VERSION, code_version=code or code_version(),
            after=after, fields=fields, sources=[_bare(s) for s in inputs.sources] if reads_sources else None,
            files={k: v for k, v in inputs.files.items() if k in fields})
        record = record.model_copy(update={"key": key_of(record)})
        out.append(record)
        after = record.key
    return out


def stage_keys(records: list[StageRecord]) -> list[StageKey]:
    return [StageKey(name=r.name, key=r.key, tasks=r.tasks) for r in records]


# -- what changed ----------------------------------------------------------------------------------------------
def _show(v: Any) -> str:
    if v is ABSENT:
        return ABSENT
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 100 else text[:97] + "..."


@dataclass
class Changes:
    """What differs between the work (or store) on storage and what the spec and inputs give now."""

    fields: list[tuple[str, Any, Any]]  # (field path, old value or ABSENT, new value or ABSENT)
    files: list[FilesDrift]
    other: list[str]  # code version, work of unknown origin

    def __bool__(self) -> bool:
        return bool(self.fields or self.files or self.other)

    def lines(self) -> list[str]:
        out = [f"{path}: {_show(old)} → {_show(new)}" for path, old, new in self.fields]
        for d in self.files:
            out += [f"{d.what}: {line}" for line in d.lines()]
        return out + self.other


def field_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(p, old.get(p, ABSENT), new.get(p, ABSENT)) for p in sorted(old.keys() | new.keys())
            if old.get(p, ABSENT) != new.get(p, ABSENT)]


def manifest_changes(old_sources: list[SourceInputs] | None, new_sources: list[SourceInputs] | None,
                     old_files: dict, new_files: dict) -> list[FilesDrift]:
    out = sources_drift(old_sources or [], new_sources or []) if old_sources is not None and new_sources is not None \
        else []
    return out + other_files_drift(old_files, new_files)


def record_changes(old: StageRecord, new: StageRecord) -> Changes:
    """What differs between a stage's record on storage and the one the build computes now."""
    other = []
    if (old.code_version, old.keys_version) != (new.code_version, new.keys_version):
        other.append(f"code version: {old.code_version} (keys v{old.keys_version}) → {new.code_version} "
                     f"(keys v{new.keys_version})")
    return Changes(field_changes(old.fields, new.fields),
                   manifest_changes(old.sources, new.sources, old.files, new.files), other)


def merge(changes: list[Changes]) -> Changes:
    """Several stages' changes as one list, each field, file and line once."""
    fields, files, other = {}, {}, []
    for c in changes:
        for f in c.fields:
            fields.setdefault(f[0], f)
        for d in c.files:
            files.setdefault(d.what, d)
        other += [line for line in c.other if line not in other]
    return Changes([fields[k] for k in sorted(fields)], list(files.values()), other)


# -- a finished store's provenance -----------------------------------------------------------------------------
def recomputed_keys(prov: Provenance) -> list[StageKey]:
    """The stage keys of a store's provenance recomputed from its canonical spec and input manifest (with the code
    version it records): equal to `prov.stages` unless store.json was edited or damaged."""
    tasks = {s.name: s.tasks for s in prov.stages}
    records = stage_records(prov.spec, prov.inputs, 1, prov.code_version)
    return [StageKey(name=r.name, key=r.key, tasks=tasks.get(r.name, 1)) for r in records]
