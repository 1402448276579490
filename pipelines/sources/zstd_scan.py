"""Check a zstd file before its records are read, as gzip_scan does a gzip file: every frame decoded (its content
checksum verified when the writer stored one, as the zstd tool does by default), where the verified data ends and
what follows the last frame; tells a corrupt frame from a truncated file and from trailing bytes."""

from __future__ import annotations

import contextlib
from typing import BinaryIO

import zstandard

from mixture.pipelines.sources.gzip_scan import CHUNK, PIECE, StreamScan, rest_of_file

MAGIC = b"\x28\xb5\x2f\xfd"  # a zstd frame
SKIPPABLE = b"\x2a\x4d\x18"  # bytes 1-3 of a skippable frame's magic (0x184D2A5?, little-endian)


def _skippable(data: bytes) -> int | None:
    """The length of the skippable frame `data` starts with (header included), None if it starts with none."""
    if len(data) >= 8 and data[0] & 0xF0 == 0x50 and data[1:4] == SKIPPABLE:
        return 8 + int.from_bytes(data[4:8], "little")
    return None


def scan_zstd(f: BinaryIO) -> StreamScan:
    """One pass over the compressed bytes of `f` (decompressed output counted, never kept)."""
    dctx = zstandard.ZstdDecompressor()
    d, good, pending, lines, frames, data = None, 0, 0, 0, 0, b""
    while True:
        if not data:
            data = f.read(CHUNK)
            if not data:
                break
        if d is None:  # between frames: another frame, a skippable one, or trailing bytes
            while len(data) < 8 and (more := f.read(CHUNK)):
                data += more
            skip = _skippable(data)
            if skip is not None:
                while len(data) < skip and (more := f.read(CHUNK)):
                    data += more
                data = data[skip:]
                continue
            if data[:4] != MAGIC:
                if frames == 0:
                    return StreamScan("not_zstd", 0, detail="not a zstd file")
                trailing, frame_after = rest_of_file(data, f, MAGIC, _decodes)
                if frame_after:
                    return StreamScan("bad_header", good, 0, frames,
                                      detail=f"the bytes after zstd frame {frames} are no frame header, and a frame "
                                             "follows them")
                return StreamScan("trailing", good, 0, frames, trailing,
                                  f"{trailing:,} bytes after zstd frame {frames} are not zstd data")
            d = dctx.decompressobj()
        piece, data = data[:PIECE], data[PIECE:]
        # the piece's last 4 bytes apart: a frame's checksum (its last 4 bytes) fails alone, the output of its data
        # counted before it
        parts, rest = (piece[:-4], piece[-4:]), b""
        for i, part in enumerate(parts):
            try:
                out = d.decompress(part)
            except zstandard.ZstdError as exc:
                last = not data and not f.read(1)
                return StreamScan("corrupt", good, lines, frames, last=last,
                                  detail=f"zstd frame {frames + 1} is corrupt ({exc})")
            pending += len(out)
            lines += out.count(b"\n")
            if d.eof:
                rest = d.unused_data + b"".join(parts[i + 1:])
                break
        if d.eof:
            frames += 1
            good, pending, lines = good + pending, 0, 0
            data, d = rest + data, None
    if d is not None:
        return StreamScan("truncated", good, lines, frames, detail=f"the file ends inside zstd frame {frames + 1}")
    if frames == 0:
        return StreamScan("corrupt", 0, 0, 0, detail="no zstd frame")
    return StreamScan("ok", good, 0, frames)


def _decodes(data: bytes) -> bool:
    with contextlib.suppress(zstandard.ZstdError):
        return bool(zstandard.ZstdDecompressor().decompressobj().decompress(data))
    return False
