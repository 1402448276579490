"""Source reader: every record becomes a Document, or a quarantine record with the reason it is bad."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
from collections.abc import Callable
from dataclasses import dataclass

import fsspec
import orjson
import zstandard
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

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


@contextlib.contextmanager
def _decompressed(raw_file, path: str):
    """A line-iterable binary stream over a plain, gzip or zstd file."""
    if path.endswith(".gz"):
        with gzip.GzipFile(fileobj=raw_file) as f:
            yield f
    elif path.endswith(".zst"):
        with io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw_file)) as f:
            yield f
    else:
        yield raw_file


class SourceReader(PipelineStep):
    """Reads every source's files; task `rank` takes files rank, rank+T, … of the sorted list of all files."""

    type = "📖 - READER"
    name = "mixture sources"

    def __init__(self, sources: list[SourceFiles], tally_folder: str):
        super().__init__()
        self.sources = sources
        self.tally_folder = tally_folder

    def shard(self, rank: int, world_size: int) -> list[tuple[SourceFiles, str]]:
        files = [(s, f) for s in self.sources for f in s.files]
        return files[rank::world_size]

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        tally: dict[str, int] = {}
        for src, rel in self.shard(rank, world_size):
            self.stat_update("input_files")
            for doc in self.read_file(src, rel):
                tally[src.name] = tally.get(src.name, 0) + 1
                self.stat_update("records")
                yield doc
        # records read per source by this task: the build's `records_in`, saved with the task's outputs
        fs, root = fsspec.core.url_to_fs(self.tally_folder)
        fs.makedirs(root, exist_ok=True)
        with fs.open(f"{root}/{rank:05d}.json", "w") as f:
            json.dump({"rank": rank, "records": tally}, f)

    def read_file(self, src: SourceFiles, rel: str) -> DocumentsPipeline:
        path = f"{src.base}/{rel}"
        if src.format == "parquet" or (src.format == "hf" and rel.endswith(".parquet")):
            yield from self._read_parquet(src, rel, path)
        else:
            yield from self._read_jsonl(src, rel, path)

    def _make_doc(self, src: SourceFiles, rel: str, idx: int, rec: object, raw: bytes | str | Callable) -> Document:
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

    def _read_jsonl(self, src: SourceFiles, rel: str, path: str) -> DocumentsPipeline:
        idx = -1
        try:
            with fsspec.open(path, "rb") as raw_file, _decompressed(raw_file, path) as f:
                for idx, raw in enumerate(f):  # noqa: B007
                    line = raw.rstrip(b"\r\n")
                    if not line.strip():
                        yield bad_record(src, rel, idx, "empty_line", "blank line", raw)
                        continue
                    try:
                        decoded = line.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        yield bad_record(src, rel, idx, "invalid_utf8", f"byte {exc.start}: {exc.reason}", line)
                        continue
                    try:
                        rec = orjson.loads(decoded)
                    except orjson.JSONDecodeError as exc:
                        yield bad_record(src, rel, idx, "invalid_json", str(exc)[:200], line)
                        continue
                    yield self._make_doc(src, rel, idx, rec, line)
        except (EOFError, OSError, ValueError, zstandard.ZstdError) as exc:
            # truncated or corrupt compressed stream: everything after the last good record is lost
            yield bad_record(src, rel, idx + 1, "truncated_file", f"{type(exc).__name__}: {exc}"[:300], b"")

    def _read_parquet(self, src: SourceFiles, rel: str, path: str) -> DocumentsPipeline:
        import pyarrow.parquet as pq

        try:
            with fsspec.open(path, "rb") as f:
                pf = pq.ParquetFile(f)
                names = pf.schema_arrow.names
                if src.text_field not in names:
                    for i in range(pf.metadata.num_rows):
                        yield bad_record(
                            src, rel, i, "missing_text", f"file has no column {src.text_field!r} (columns: {names[:10]})", b""
                        )
                    return
                cols = [c for c in (src.text_field, src.id_field) if c and c in names]
                idx = 0
                for batch in pf.iter_batches(columns=cols, batch_size=1024):
                    for rec in batch.to_pylist():
                        yield self._make_doc(src, rel, idx, rec, lambda rec=rec: json.dumps(rec, default=str))
                        idx += 1
        except (OSError, ValueError) as exc:
            yield bad_record(src, rel, 0, "unreadable_file", f"{type(exc).__name__}: {exc}"[:300], b"")


class RankFilesReader(PipelineStep):
    """Reads the intermediate Parquet files `<folder>/<rank>.parquet` written by task `rank` of an earlier stage."""

    type = "📖 - READER"
    name = "mixture stage files"

    def __init__(self, folders: list[str]):
        super().__init__()
        self.folders = folders

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import pyarrow.parquet as pq

        if data:
            yield from data
        for folder in self.folders:
            fs, root = fsspec.core.url_to_fs(folder)
            path = f"{root}/{rank:05d}.parquet"
            if not fs.exists(path):
                continue
            with fs.open(path, "rb") as f:
                for batch in pq.ParquetFile(f).iter_batches(batch_size=1024):
                    for rec in batch.to_pylist():
                        text, doc_id = rec.pop("text"), rec.pop("id")
                        rec["group"] = "exempt" if rec.get("exempt") else "fuzzy"
                        self.stat_update("documents")
                        yield Document(text=text, id=doc_id, metadata=rec)
