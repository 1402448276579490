"""Source reader: every record becomes a Document, or a quarantine record with the reason it is bad."""

from __future__ import annotations

import contextlib
import gzip
import heapq
import io
import json
import statistics
import zlib
from collections.abc import Callable

import fsspec
import orjson
import zstandard
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.sources.records import SourceFiles, bad_record, describe_error
from mixture.store.io import write_json_atomic


class TruncatedStream(EOFError):
    """A compressed stream that ends inside a frame (a truncated or partly copied file)."""


class _ZstdRaw(io.RawIOBase):
    """zstd frames decompressed one after another; ending inside a frame raises TruncatedStream.

    (zstandard's stream_reader returns a silent EOF on a truncated file, which would hide the loss.)"""

    CHUNK = 1 << 20

    def __init__(self, raw_file):
        super().__init__()
        self.raw, self.dctx, self.obj = raw_file, zstandard.ZstdDecompressor(), None
        self.buf, self.pos, self.at_end = b"", 0, False

    def readable(self) -> bool:
        return True

    def _feed(self, data: bytes) -> None:
        out = []
        while data:
            if self.obj is None or self.obj.eof:
                self.obj = self.dctx.decompressobj()
            out.append(self.obj.decompress(data))
            data = self.obj.unused_data if self.obj.eof else b""
        self.buf, self.pos = self.buf[self.pos :] + b"".join(out), 0

    def readinto(self, b) -> int:
        while self.pos >= len(self.buf):
            if self.at_end:
                return 0
            chunk = self.raw.read(self.CHUNK)
            if not chunk:
                self.at_end = True
                if self.obj is not None and not self.obj.eof:
                    raise TruncatedStream("the zstd stream ends inside a frame (truncated file)")
                return 0
            self._feed(chunk)
        n = min(len(b), len(self.buf) - self.pos)
        b[:n] = self.buf[self.pos : self.pos + n]
        self.pos += n
        return n


@contextlib.contextmanager
def _decompressed(raw_file, path: str):
    """A line-iterable binary stream over a plain, gzip or zstd file."""
    if path.endswith(".gz"):
        with gzip.GzipFile(fileobj=raw_file) as f:
            yield f
    elif path.endswith(".zst"):
        with io.BufferedReader(_ZstdRaw(raw_file), buffer_size=1 << 16) as f:
            yield f
    else:
        yield raw_file


# errors of a broken compressed stream (the records after the break are lost) vs a file that cannot be read at all
STREAM_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error, zstandard.ZstdError)
BROKEN_FILE = ("truncated_file", "unreadable_file")  # quarantine reasons of a file not read to its end


def _position(raw_file) -> int | None:
    """Bytes consumed from a file (None when its stream cannot tell)."""
    try:
        return raw_file.tell()
    except (OSError, ValueError):
        return None


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


class SourceReader(PipelineStep):
    """Reads every source's files; task `rank` takes files rank, rank+T, … of the sorted list of all files."""

    type = "📖 - READER"
    name = "mixture sources"

    def __init__(self, sources: list[SourceFiles], tally_folder: str):
        super().__init__()
        self.sources = sources
        self.tally_folder = tally_folder

    def shard(self, rank: int, world_size: int) -> list[tuple[int, SourceFiles, str]]:
        """Task `rank`'s files: the largest file goes to the least-loaded task (lowest rank on ties), so tasks get
        about the same bytes; with a size missing every file counts the same (round robin). Each task reads its
        files in (source, path) order."""
        files = [(i, s, f) for i, s in enumerate(self.sources) for f in s.files]
        sizes = [size for s in self.sources for size in (s.sizes or (None,) * len(s.files))]
        if any(size is None for size in sizes):
            sizes = [1] * len(files)
        load = [(0, r) for r in range(world_size)]  # a heap of (bytes so far, task)
        mine = []
        for j in sorted(range(len(files)), key=lambda j: (-sizes[j], j)):
            total, r = heapq.heappop(load)
            heapq.heappush(load, (total + sizes[j], r))
            if r == rank:
                mine.append(j)
        return [files[j] for j in sorted(mine)]

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        tally: dict[str, int] = {}
        broken: list[dict] = []
        for order, src, rel in self.shard(rank, world_size):
            self.stat_update("input_files")
            n = 0
            for n, doc in enumerate(self.read_file(src, rel), 1):  # noqa: B007 - n counts the file's records
                m = doc.metadata
                if "_bad" not in m:
                    m["source_order"] = order
                elif m["_bad"] in BROKEN_FILE:
                    broken.append({"source": src.name, "file": rel, "reason": m["_bad"], "records_read": m.get("_read", 0),
                                   "lost": m.get("_lost"), "how": m.get("_lost_how", "unknown: not told by its reader")})
                yield doc
            tally[src.name] = tally.get(src.name, 0) + n
            self.stat_update("records", value=n)
        # records read per source by this task (the build's `records_in`) and its files not read to their end (the
        # loss table), saved with the task's outputs
        fs, root = fsspec.core.url_to_fs(self.tally_folder)
        write_json_atomic(fs, f"{root}/{rank:05d}.json", {"rank": rank, "records": tally, "broken_files": broken},
                          indent=None)

    def read_file(self, src: SourceFiles, rel: str) -> DocumentsPipeline:
        path = f"{src.base}/{rel}"
        if src.dataset is not None:
            from mixture.pipelines.sources.datasets import read_dataset_unit

            yield from read_dataset_unit(src, rel, self._make_doc)
        elif src.format == "parquet" or (src.format == "hf" and rel.endswith(".parquet")):
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
            raw_file = fsspec.open(path, "rb").open()
        except Exception as exc:  # noqa: BLE001 - permission, missing object, unreachable bucket: name it, go on
            yield broken_file(src, rel, 0, "unreadable_file", exc, *lost_after_break(0, None, None, []))
            return
        broke: tuple[str, BaseException, int | None] | None = None
        with raw_file:
            try:
                with _decompressed(raw_file, path) as f:
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
            except STREAM_ERRORS as exc:
                # truncated or corrupt compressed stream: everything after the last good record is lost
                broke = ("truncated_file", exc, _position(raw_file))
            except (OSError, ValueError) as exc:  # a read error of the storage itself
                broke = ("unreadable_file", exc, _position(raw_file))
        if broke:
            reason, exc, consumed = broke
            yield broken_file(src, rel, idx + 1, reason, exc, *self._lost(src, rel, raw_file, idx + 1, consumed))
            return
        if idx < 0:
            yield bad_record(src, rel, 0, "empty_file", "the file holds no records", b"")

    @staticmethod
    def _lost(src: SourceFiles, rel: str, raw_file, records: int, consumed: int | None) -> tuple[int | None, str]:
        """`lost_after_break` for a file of `src` whose stream broke after `records` records and `consumed` bytes."""
        sizes = dict(zip(src.files, src.sizes, strict=True)) if src.sizes else {}
        size = sizes.get(rel) or getattr(raw_file, "size", None)
        return lost_after_break(records, consumed, size, [v for f, v in sizes.items() if f != rel and v])

    def _read_parquet(self, src: SourceFiles, rel: str, path: str) -> DocumentsPipeline:
        import pyarrow.parquet as pq

        idx, rows = 0, None
        try:
            with fsspec.open(path, "rb") as f:
                pf = pq.ParquetFile(f)
                rows = pf.metadata.num_rows
                names = pf.schema_arrow.names
                if pf.metadata.num_rows == 0:
                    yield bad_record(src, rel, 0, "empty_file", "the file holds no rows", b"")
                    return
                if src.text_field not in names:
                    # another schema: every row is quarantined (with its values) and the build goes on
                    detail = f"file has no column {src.text_field!r} (columns: {names[:10]}); set text_field"
                    for batch in pf.iter_batches(batch_size=128):
                        for rec in batch.to_pylist():
                            yield bad_record(src, rel, idx, "missing_text", detail,
                                             lambda rec=rec: json.dumps(rec, default=str))
                            idx += 1
                    return
                cols = [c for c in (src.text_field, src.id_field) if c and c in names]
                for batch in pf.iter_batches(columns=cols, batch_size=128):
                    for rec in batch.to_pylist():
                        yield self._make_doc(src, rel, idx, rec, lambda rec=rec: json.dumps(rec, default=str))
                        idx += 1
        except Exception as exc:  # noqa: BLE001 - not Parquet, permission, unreachable: name the file, go on
            if rows is None:  # no footer: nothing tells how many rows the file holds
                yield broken_file(src, rel, idx, "unreadable_file", exc, *lost_after_break(idx, None, None, []))
            else:
                yield broken_file(src, rel, idx, "unreadable_file", exc, max(0, rows - idx),
                                  f"exact: {rows:,} rows in its Parquet footer")


def read_rows(pf, rows, columns: list[str] | None = None, use_threads: bool = True):
    """Rows `rows` (ascending positions in the file) of a `pyarrow.parquet.ParquetFile`, in that order, reading only
    the row groups that hold them (`use_threads`: decode a row group's columns in parallel)."""
    import numpy as np
    import pyarrow as pa

    ends = np.cumsum([pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)])
    group = np.searchsorted(ends, rows, side="right")
    parts = [pf.read_row_group(int(g), columns=columns, use_threads=use_threads)
             .take(pa.array(rows[group == g] - (ends[g - 1] if g else 0))) for g in np.unique(group)]
    if parts:
        return pa.concat_tables(parts)
    schema = pf.schema_arrow
    return (pa.schema([schema.field(c) for c in columns]) if columns else schema).empty_table()


class RankFilesReader(PipelineStep):
    """Reads the intermediate Parquet files `<folder>/<rank>.parquet` written by task `rank` of an earlier stage."""

    type = "📖 - READER"
    name = "mixture stage files"

    def __init__(self, folders: list[str], columns: list[str] | None = None):
        super().__init__()
        self.folders, self.columns = folders, columns

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
                for batch in pq.ParquetFile(f).iter_batches(batch_size=128, columns=self.columns):
                    self.stat_update("documents", value=batch.num_rows)
                    for rec in batch.to_pylist():
                        text, doc_id = rec.pop("text"), rec.pop("id")
                        yield Document(text=text, id=doc_id, metadata=rec)
