"""Read a written demo corpus back: raw lines or rows of each shard, and the manifest and ground truth."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import zstandard

from .names import GROUND_TRUTH, MANIFEST


def manifest(out: str | Path) -> dict:
    return json.loads((Path(out) / MANIFEST).read_text(encoding="utf-8"))


def ground_truth(out: str | Path) -> dict:
    return json.loads((Path(out) / GROUND_TRUTH).read_text(encoding="utf-8"))


def source_entry(out: str | Path, name: str) -> dict:
    return next(s for s in manifest(out)["sources"] if s["name"] == name)


def shard_paths(out: str | Path, entry: dict) -> list[Path]:
    return sorted(Path(out).glob(entry["uri_glob"]))


def raw_lines(path: Path) -> list[bytes]:
    """The lines of a jsonl / jsonl.gz / jsonl.zst shard as bytes (no decoding, so bad bytes survive)."""
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    elif path.name.endswith(".zst"):
        data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")


def iter_records(out: str | Path, entry: dict) -> Iterator[tuple[str, int, dict | None]]:
    """(file relative to out, record index, record) for every record; record is None when malformed JSON/UTF-8."""
    for path in shard_paths(out, entry):
        relpath = path.relative_to(out).as_posix()
        if entry["format"] == "parquet":
            for i, row in enumerate(pq.read_table(path).to_pylist()):
                yield relpath, i, row
            continue
        for i, line in enumerate(raw_lines(path)):
            try:
                yield relpath, i, json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                yield relpath, i, None


def texts(out: str | Path) -> list[str]:
    """The text of every well-formed record of every source, in manifest and file order."""
    found = []
    for entry in manifest(out)["sources"]:
        tf = entry["text_field"]
        found += [r[tf] for _, _, r in iter_records(out, entry) if isinstance(r, dict) and isinstance(r.get(tf), str)]
    return found


def texts_by_id(out: str | Path, entry: dict) -> dict[str, str]:
    """id -> text of the well-formed records that have an id and a string text."""
    idf, tf = entry["id_field"], entry["text_field"]
    return {r[idf]: r[tf] for _, _, r in iter_records(out, entry)
            if r is not None and idf and isinstance(r.get(tf), str) and idf in r}
