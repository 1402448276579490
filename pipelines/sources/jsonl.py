"""Reads a JSON Lines file (`jsonl`, `jsonl.gz`, `jsonl.zst`, and the JSONL files of `hf`): every line becomes a
Document or a quarantine record; a broken compressed stream quarantines the file with the records lost after it
(a gzip or zstd file is checked first: a corrupt member's or frame's records are not kept, trailing bytes lose no
record)."""

from __future__ import annotations

import contextlib
import gzip
import io
import zlib

import fsspec
import orjson
import zstandard
from datatrove.data import DocumentsPipeline

from mixture.pipelines.sources.gzip_scan import TAIL, StreamScan, scan_gzip
from mixture.pipelines.sources.records import (
    SourceFiles,
    bad_record,
    broken_file,
    lost_after_break,
    to_document,
)
from mixture.pipelines.sources.zstd_scan import scan_zstd


class TruncatedStream(EOFError):
    """A compressed stream that ends inside a frame (a truncated or partly copied file)."""


class CorruptMember(ValueError):
    """A gzip member whose CRC or deflate data is wrong (`gzip_scan`), or a zstd frame whose data or checksum is
    (`zstd_scan`): its records are not kept."""


def _scan(path: str) -> StreamScan | None:
    """A gzip or zstd file checked before its records are read (None for another file, or one that cannot be opened:
    the read reports that)."""
    scan = scan_gzip if path.endswith(".gz") else scan_zstd if path.endswith(".zst") else None
    if scan is None:
        return None
    try:
        with fsspec.open(path, "rb") as f:
            return scan(f)
    except Exception:  # noqa: BLE001 - the read that follows names the error
        return None


class _ZstdRaw(io.RawIOBase):
    """zstd frames decompressed one after another; ending inside a frame raises TruncatedStream.

    (zstandard's stream_reader returns a silent EOF on a truncated file, which would hide the loss.)"""

    CHUNK = 1 << 20

    def __init__(self, raw_file):
        super().__init__()
        self.raw, self.dctx, self.obj = raw_file, zstandard.ZstdDecompressor(), None
        self.buf, self.pos, self.at_end = b"", 0, False
        self.error: zstandard.ZstdError | None = None  # raised once what was decoded before it is read

    def readable(self) -> bool:
        return True

    def _feed(self, data: bytes) -> None:
        out = []
        try:
            while data:
                if self.obj is None or self.obj.eof:
                    self.obj = self.dctx.decompressobj()
                out.append(self.obj.decompress(data))
                data = self.obj.unused_data if self.obj.eof else b""
        except zstandard.ZstdError as exc:  # the frames decoded before the bad bytes in this chunk are still read
            self.error = exc
        self.buf, self.pos = self.buf[self.pos :] + b"".join(out), 0

    def readinto(self, b) -> int:
        while self.pos >= len(self.buf):
            if self.error is not None:
                raise self.error
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


def _position(raw_file) -> int | None:
    """Bytes consumed from a file (None when its stream cannot tell)."""
    try:
        return raw_file.tell()
    except (OSError, ValueError):
        return None



def read_jsonl(src: SourceFiles, rel: str) -> DocumentsPipeline:
    """The records of a JSON Lines file, plain, gzip or zstd (by its name): one per line, each a JSON object."""
    path = f"{src.base}/{rel}"
    idx = -1
    try:
        raw_file = fsspec.open(path, "rb").open()
    except Exception as exc:  # noqa: BLE001 - permission, missing object, unreachable bucket: name it, go on
        yield broken_file(src, rel, 0, "unreadable_file", exc, *lost_after_break(0, None, None, []))
        return
    scan = _scan(path)
    keep = scan.good_bytes if scan is not None and scan.status == "corrupt" else None
    unchecked = scan.keep_until if scan is not None and scan.status == "truncated" else None
    dropped = 0  # lines of a cut file's unchecked end: not kept, counted lost
    broke: tuple[str, BaseException, int | None] | None = None
    offset = 0  # decompressed bytes of the lines read so far
    with raw_file:
        try:
            with _decompressed(raw_file, path) as f:
                for idx, raw in enumerate(f):  # noqa: B007
                    offset += len(raw)
                    if keep is not None and offset > keep:  # a line of the corrupt member: not kept
                        idx -= 1
                        raise CorruptMember(scan.detail)
                    if unchecked is not None and offset > unchecked:
                        dropped += 1
                        continue
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
                    yield to_document(src, rel, idx, rec, line)
        except CorruptMember as exc:  # the records of the corrupt member and after it are lost
            broke = ("corrupt_file", exc, None)
        except STREAM_ERRORS as exc:
            if scan is not None and scan.status == "trailing":  # every member read and checked
                broke = ("trailing_data", ValueError(scan.detail), None)
            elif scan is not None and scan.status == "corrupt":
                broke = ("corrupt_file", ValueError(scan.detail), None)
            else:  # truncated or corrupt compressed stream: everything after the last good record is lost
                broke = ("truncated_file", exc, _position(raw_file))
        except (OSError, ValueError) as exc:  # a read error of the storage itself
            broke = ("unreadable_file", exc, _position(raw_file))
    if broke:
        reason, exc, consumed = broke
        if reason == "trailing_data":
            kind = "zstd frame" if path.endswith(".zst") else "gzip member"
            lost: tuple[int | None, str] = (0, f"exact: every {kind} checked; {scan.trailing:,} bytes after the "
                                                f"last one are not {kind.split()[0]} data, no record is in them")
        elif reason == "corrupt_file":
            after = "" if scan.last else f"; the {'frames' if path.endswith('.zst') else 'members'} after it are not read"
            lost = (scan.bad_lines, f"estimate: the lines decompressed from the corrupt "
                                    f"{'frame' if path.endswith('.zst') else 'member'} before its check failed{after}")
        else:
            lost = _lost(src, rel, raw_file, idx + 1 - dropped, consumed)
            if dropped:
                n, how = lost
                lost = (None if n is None else n + dropped,
                        f"{how}; and the {dropped:,} line(s) decompressed from the file's last {TAIL} bytes, which "
                        "no check covers")
        yield broken_file(src, rel, idx + 1 - dropped, reason, exc, *lost)
        return
    if idx < 0:
        yield bad_record(src, rel, 0, "empty_file", "the file holds no records", b"")



def _lost(src: SourceFiles, rel: str, raw_file, records: int, consumed: int | None) -> tuple[int | None, str]:
    """`lost_after_break` for a file of `src` whose stream broke after `records` records and `consumed` bytes."""
    sizes = dict(zip(src.files, src.sizes, strict=True)) if src.sizes else {}
    size = sizes.get(rel) or getattr(raw_file, "size", None)
    return lost_after_break(records, consumed, size, [v for f, v in sizes.items() if f != rel and v])
