"""What a source reader hands on: a source with its resolved files, and the quarantine record of a bad input
record (shared by the file readers and the `datasets` reader)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from datatrove.data import Document

from mixture.spec.datasets_source import DatasetUnits

RAW_KEEP = 1_000_000  # characters of a bad record kept in quarantine (its full size is recorded too)


@dataclass(frozen=True)
class SourceFiles:
    """A source with its resolved files (base URI + paths relative to it)."""

    name: str
    category: str
    format: str
    base: str
    files: tuple[str, ...]
    text_field: str
    id_field: str | None
    exempt: bool
    sizes: tuple[int | None, ...] = ()  # bytes of each file, from the listing (balances the tasks)
    dataset: DatasetUnits | None = None  # format: datasets: what `files` are (Arrow files or shards) and how to open them


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
