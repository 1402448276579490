"""Benchmark records (JSONL, optionally compressed, or Parquet; one file or a glob) and the checks `validate` runs on
them: the fields the spec names must be there."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

import fsspec
import pyarrow.parquet as pq

MOST = 0.5  # a field missing or empty in more than this share of the records is an error, not a gap


class BenchmarkReadError(ValueError):
    """A benchmark file that cannot be read as records; the message names the file and line."""


@dataclass(frozen=True)
class BenchmarkItem:
    """One record of a benchmark: its position, its id (the spec's `id_field`, None where absent) and the texts of
    the named fields that it has, in the spec's order."""

    index: int
    id: str | None
    texts: tuple[tuple[str, str], ...]  # (field, text)

    @property
    def label(self) -> str:
        return f"item {self.index}" + (f" ({self.id})" if self.id is not None else "")


def read_records(uri: str) -> list[dict]:
    """Every record of the file(s) at `uri`, in file-name then line order."""
    fs, path = fsspec.core.url_to_fs(uri)
    records: list[dict] = []
    for file in sorted(fs.glob(path)) if any(c in path for c in "*?[") else [path]:
        if file.endswith(".parquet"):
            with fs.open(file, "rb") as f:
                records += pq.read_table(f).to_pylist()
            continue
        with fs.open(file, "rb", compression="infer") as f:
            for line_no, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    raise BenchmarkReadError(f"{file}, line {line_no}: not a JSON record ({exc})") from None
                if not isinstance(rec, dict):
                    raise BenchmarkReadError(f"{file}, line {line_no}: expected a JSON object, found "
                                             f"{type(rec).__name__}")
                records.append(rec)
    return records


def _text(value: object) -> str | None:
    """A field's value as text: strings as they are, numbers and lists as JSON; None, empty or blank: no text."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if text.strip() else None


def benchmark_items(records: list[dict], fields: list[str], id_field: str | None) -> list[BenchmarkItem]:
    """The records as items: the named fields' texts (those present and not blank) and the id."""
    out = []
    for i, rec in enumerate(records):
        texts = tuple((f, t) for f in fields if (t := _text(rec.get(f))) is not None)
        rid = rec.get(id_field) if id_field else None
        out.append(BenchmarkItem(i, None if rid is None else str(rid), texts))
    return out


def missing_fields(records: list[dict], fields: list[str]) -> dict[str, int]:
    """{field: records without a (non-blank) value for it} for every named field."""
    return {f: sum(_text(rec.get(f)) is None for rec in records) for f in fields}


def field_problems(name: str, records: list[dict], fields: list[str], id_field: str | None) -> list[tuple[str, str]]:
    """(spec key, message) for each named field missing or empty in most records, naming the fields the records do
    have; `id_field` is checked the same way when given."""
    if not records:
        return [("uri", f"benchmark {name!r} has no records")]
    have = Counter(k for rec in records for k, v in rec.items() if _text(v) is not None)
    present = ", ".join(f"{k} ({n})" if n < len(records) else k for k, n in have.most_common())
    out = []
    for key, wanted, fix in (("fields", fields, "name the fields that hold its text"),
                             ("id_field", [id_field] if id_field else [], "name the field that identifies an item")):
        for f, n in missing_fields(records, wanted).items():
            if n > MOST * len(records):
                out.append((key, f"benchmark {name!r}: field {f!r} is missing or empty in {n:,} of its "
                                 f"{len(records):,} records; its records have: {present or 'no fields'} ({fix})"))
    return out
