"""What differs between two listings of a build's inputs (a source's files, the files a spec field names): the
lines a rerun and `mixture audit` name when an input changed."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from mixture.store.formats import InputFile, SourceInputs


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
