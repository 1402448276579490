"""Check a gzip file before its records are read: every member's CRC and length, where the verified data ends, and
what follows the last member; tells a corrupt member from a truncated file and from trailing bytes."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO, Literal

CHUNK = 1 << 20
PIECE = 1 << 16  # compressed bytes fed at a time
MAGIC = b"\x1f\x8b"
# a file ending inside a member: the output of its last TAIL compressed bytes is not kept. A bit flipped there can
# keep the deflate stream from ending (2 of 350 flips of a 2.4 KB member, both in its last 16 bytes): the file
# reads as cut short, and what follows the flip is garbage no CRC covers (one such record was kept)
TAIL = 64


@dataclass
class StreamScan:
    """What one pass over a compressed file (gzip here, zstd in zstd_scan) found. `good_bytes`: decompressed bytes of the members that checked (the
    records within them can be kept); `bad_lines`: line ends decompressed after them (in a corrupt member, or before
    the file ends inside one); `trailing`: bytes after the last member that are not gzip (zero padding is fine)."""


    status: Literal["ok", "corrupt", "truncated", "trailing", "bad_header", "not_gzip", "not_zstd"]
    good_bytes: int
    bad_lines: int = 0
    members: int = 0
    trailing: int = 0
    detail: str = ""
    last: bool = False  # corrupt: the bad member is the file's last (nothing after it is lost)
    keep_until: int | None = None  # truncated: decompressed bytes before the output of the file's last TAIL bytes


def _size(f: BinaryIO) -> int | None:
    try:
        size = f.seek(0, 2)
        f.seek(0)
        return size
    except (OSError, ValueError, AttributeError):
        return None


def scan_gzip(f: BinaryIO) -> StreamScan:
    """One pass over the compressed bytes of `f` (decompressed output counted, never kept)."""
    d, good, pending, lines, members = None, 0, 0, 0, 0
    rest = b""
    size = _size(f)
    tail_at = None if size is None else max(0, size - TAIL)  # file offset where the last TAIL bytes start
    read, keep_until = 0, None  # compressed bytes read so far; output before tail_at
    while True:
        if rest:
            chunk = rest
        else:
            chunk = f.read(CHUNK)
            read += len(chunk)
        rest = b""
        if not chunk:
            break
        if d is None:  # between members: another member, zero padding (allowed), or trailing bytes
            chunk = chunk.lstrip(b"\x00")
            if not chunk:
                continue
            if len(chunk) < 2:
                more = f.read(CHUNK)
                read += len(more)
                chunk += more
            if chunk[:2] != MAGIC and members == 0:
                return StreamScan("not_gzip", 0, detail="not a gzip file")
            if chunk[:2] != MAGIC:
                trailing, member_after = rest_of_file(chunk, f, MAGIC + b"\x08", _decodes)
                if member_after:  # a damaged header between members: what follows it is lost, not trailing
                    return StreamScan("bad_header", good, 0, members,
                                    detail=f"the bytes after gzip member {members} are no member header, and a "
                                           "member follows them")
                return StreamScan("trailing", good, 0, members, trailing,
                                f"{trailing:,} bytes after gzip member {members} are not gzip data")
            d = zlib.decompressobj(wbits=31)
        after = b""
        try:
            # each piece's last 8 bytes apart: the CRC check (on the 8-byte trailer) fails alone, the output of the
            # member's data is counted before it
            cuts = [c for at in range(0, len(chunk), PIECE) for c in (at, max(at, min(at + PIECE, len(chunk)) - 8))]
            start = read - len(chunk)  # the chunk is always a suffix of what was read: its offset in the file
            if tail_at is not None and keep_until is None and 0 < tail_at - start < len(chunk):
                cuts = sorted({*cuts, tail_at - start})
            for a, b in zip(cuts, [*cuts[1:], len(chunk)], strict=True):
                if a == b:
                    continue
                if tail_at is not None and keep_until is None and start + a >= tail_at:
                    keep_until = good + pending
                out = d.decompress(chunk[a:b])
                pending += len(out)
                lines += out.count(b"\n")
                if d.eof:
                    after = d.unused_data + chunk[b:]
                    break
        except zlib.error as exc:
            last = b >= len(chunk) and not f.read(1)
            return StreamScan("corrupt", good, lines, members, last=last,
                            detail=f"gzip member {members + 1} is corrupt ({exc})")
        if d.eof:
            members += 1
            good, pending, lines = good + pending, 0, 0
            rest, d = after, None
    if d is not None:
        return StreamScan("truncated", good, lines, members, detail=f"the file ends inside gzip member {members + 1}",
                          keep_until=None if keep_until is None else max(good, keep_until))
    if members == 0:
        return StreamScan("corrupt", 0, 0, 0, detail="no gzip member")
    return StreamScan("ok", good, 0, members)


def _decodes(data: bytes) -> bool:
    with contextlib.suppress(zlib.error):
        return bool(zlib.decompressobj(wbits=31).decompress(data))
    return False


def rest_of_file(chunk: bytes, f: BinaryIO, magic: bytes, decodes: Callable[[bytes], bool]) -> tuple[int, bool]:
    """(bytes from `chunk` to the end of `f`, whether a member or frame that decodes starts somewhere in them: at an
    occurrence of `magic` past the first byte, `decodes` of PIECE bytes from it)."""
    size, found, carry = 0, False, b""
    while chunk:
        size += len(chunk)
        if not found:
            data = carry + chunk
            at = data.find(magic, 1)
            while at >= 0 and not found:
                found = decodes(data[at:at + PIECE])
                at = data.find(magic, at + 1)
            carry = data[-PIECE:]
        chunk = f.read(CHUNK)
    return size, found
