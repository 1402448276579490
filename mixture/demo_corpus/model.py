"""The in-memory shape of a demo source before it is written: its manifest fields and its records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RawLine:
    """A jsonl line written verbatim (malformed on purpose); `text_chars` counts its text for token estimates."""

    data: bytes
    reason: str
    text_chars: int = 0


Record = dict[str, Any] | RawLine


@dataclass
class Source:
    name: str
    category: str
    license: str
    fmt: str  # jsonl | jsonl.gz | jsonl.zst | parquet
    description: str
    text_field: str = "text"
    id_field: str | None = "id"
    exempt_from_fuzzy_dedup: bool = False
    # Records use the canonical keys "id" and "text"; the writer renames them to id_field / text_field.
    records: list[Record] = field(default_factory=list)
    bytes_per_file: int = 4_000_000
    min_files: int = 2

    def texts(self) -> list[str]:
        return [r["text"] for r in self.records if isinstance(r, dict) and isinstance(r.get("text"), str)]
