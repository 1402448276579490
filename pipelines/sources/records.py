"""What every source format's reader shares: a source with its resolved units, a record as a Document, the
quarantine record of a bad input record, and of a file not read to its end."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from datatrove.data import Document

RAW_KEEP = 1_000_000  # characters of a bad record kept in quarantine (its full size is recorded too)


@dataclass(frozen=True)
class SourceFiles:
    """A source with its resolved units (base URI + paths relative to it: files, or what its format's `units` gives)."""

    name: str
    category: str
    format: str
    base: str
    files: tuple[str, ...]
    text_field: str
    id_field: str | None
    exempt: bool
    sizes: tuple[int | None, ...] = ()  # bytes of each file, from the listing (balances the tasks)
    detail: Any = None  # what its format's reader needs besides (SourceUnits.detail; datasets: DatasetUnits)


def bad_record(src: SourceFiles, rel: str, idx: int, reason: str, detail: str, raw: bytes | str | Callable) -> Document:
    if callable(raw):
        raw = raw()
    raw_text = raw.decode("utf-8", errors="backslashreplace") if isinstance(raw, bytes) else raw
    return Document(
        text="",
        id=f"{src.name}/{rel}/{idx}",
        metadata={
            "_bad": reason,
            "_detail": detail,
            "_raw": raw_text[:RAW_KEEP],
            "_raw_bytes": len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass")),
            "source": src.name,
            "_file": rel,
            "_record": idx,
        },
    )


def describe_error(exc: BaseException) -> str:
    """`Type: message` of an exception, cut to 300 characters (the quarantine `detail`)."""
    return f"{type(exc).__name__}: {exc}"[:300]


def to_document(src: SourceFiles, rel: str, idx: int, rec: object, raw: bytes | str | Callable) -> Document:
    """Record `idx` of unit `rel` (a decoded JSON value or row) as a Document, or its quarantine record; `raw`: the
    record as read (or a function that gives it), kept in quarantine."""
    if not isinstance(rec, dict):
        return bad_record(src, rel, idx, "not_an_object", f"expected a JSON object, found {type(rec).__name__}", raw)
    if src.text_field not in rec:
        return bad_record(
            src, rel, idx, "missing_text", f"no field {src.text_field!r} (fields: {sorted(rec)[:10]})", raw
        )
    text = rec[src.text_field]
    if not isinstance(text, str):
        return bad_record(
            src, rel, idx, "wrong_type", f"field {src.text_field!r} is {type(text).__name__}, expected a string", raw
        )
    if not text.strip():
        return bad_record(src, rel, idx, "empty_text", f"field {src.text_field!r} is empty", raw)
    rid = rec.get(src.id_field) if src.id_field else None
    doc_id = str(rid) if rid not in (None, "") else f"{src.name}/{rel}/{idx}"
    return Document(
        text=text,
        id=doc_id,
        metadata={"source": src.name, "category": src.category, "origin": f"{rel}:{idx}", "exempt": src.exempt},
    )


# quarantine reasons of a file not read to its end (trailing_data: read to its end, then bytes that are no stream)
BROKEN_FILE = ("truncated_file", "corrupt_file", "trailing_data", "unreadable_file")


def lost_after_break(records: int, consumed: int | None, size: int | None,
                     others: list[int]) -> tuple[int | None, str]:
    """(records lost after a stream broke, how that was told), estimated from the bytes not read: when the break
    came before the end of the file, at the rate of the records read so far in the compressed bytes consumed; when
    the file ends inside its stream (truncated), from the median size of the source's other files at the same rate;
    None when neither tells (no record read, or no larger sibling file)."""
    if records and consumed and size and consumed < size:
        return (round(records * size / consumed) - records,
                f"estimate: {records:,} records in the first {consumed:,} of its {size:,} compressed bytes")
    typical = statistics.median(others) if others else None
    if records and size and typical and typical > size:
        return (round(records * typical / size) - records,
                f"estimate: the file is {size:,} bytes, its source's other files {typical:,.0f} (median), at "
                f"{records:,} records in {size:,} bytes")
    if not records:
        return None, "unknown: no record was read from it"
    return None, "unknown: the file ends inside its compressed stream and no other file of its source tells its size"


def broken_file(src: SourceFiles, rel: str, records: int, reason: str, exc: BaseException,
                lost: int | None, how: str) -> Document:
    """The quarantine record of a file not read to its end: its detail says how many records were read before the
    break and how many are lost after it (`_read`, `_lost`, `_lost_how`: the same for the build's loss table)."""
    told = f"~{lost:,} more lost ({how})" if lost is not None and how.startswith("estimate") else \
        f"{lost:,} more lost ({how})" if lost is not None else f"an unknown number lost ({how.removeprefix('unknown: ')})"
    doc = bad_record(src, rel, records, reason,
                     f"{describe_error(exc)}; {records:,} records read before the break, {told}", b"")
    doc.metadata.update(_read=records, _lost=lost, _lost_how=how)
    return doc
