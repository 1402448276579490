"""A damaged gzip file is told for what it is: a corrupt member (a flipped bit: its records are quarantined, not
kept), trailing bytes after the last member (every record kept, nothing lost), a file cut short (truncated)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mixture.pipelines.sources.jsonl import read_jsonl
from mixture.pipelines.sources.records import SourceFiles

N = 400


def records(start: int, n: int) -> bytes:
    return b"".join(json.dumps({"id": f"r{i}", "text": f"record {i} " + "lorem ipsum " * (i % 7 + 3)}).encode() + b"\n"
                    for i in range(start, start + n))


def read(path: Path):
    src = SourceFiles(name="gz", category="web", format="jsonl.gz", base=str(path.parent), files=(path.name,),
                      text_field="text", id_field="id", exempt=False, sizes=(path.stat().st_size,))
    docs = list(read_jsonl(src, path.name))
    kept = [d.id for d in docs if "_bad" not in d.metadata]
    bad = [d.metadata for d in docs if "_bad" in d.metadata]
    return kept, bad


def flip(data: bytes, at: int) -> bytes:
    b = bytearray(data)
    b[at] ^= 0x01
    return bytes(b)


def test_a_flipped_bit_in_the_deflate_stream_quarantines_the_member(tmp_path: Path):
    first, second = gzip.compress(records(0, N)), gzip.compress(records(N, N))
    intact = tmp_path / "ok.jsonl.gz"
    intact.write_bytes(first + second)
    assert read(intact) == ([f"r{i}" for i in range(2 * N)], [])
    # a bit flipped in the second member's data: the first member's records are kept, none of the second's
    for at in range(len(first) + 200, len(first) + len(second) - 8, 97):
        path = tmp_path / "flipped.jsonl.gz"
        path.write_bytes(first + flip(second, at - len(first)))
        kept, bad = read(path)
        assert kept == [f"r{i}" for i in range(N)], at
        [broken] = bad
        assert broken["_bad"] in ("corrupt_file", "truncated_file"), at  # a flip can also end the stream early
        if broken["_bad"] == "corrupt_file":
            assert broken["_read"] == N and "gzip member 2 is corrupt" in broken["_detail"]
            assert broken["_lost"] is not None  # lines decompressed before the error (garbage may hold more)


def test_a_crc_failure_quarantines_every_record_of_its_member(tmp_path: Path):
    data = gzip.compress(records(0, N))
    path = tmp_path / "crc.jsonl.gz"
    path.write_bytes(data[:-8] + flip(data[-8:], 0))  # the stored CRC wrong: the data reads, the check fails
    kept, [broken] = read(path)
    assert kept == [] and broken["_bad"] == "corrupt_file" and broken["_read"] == 0
    assert N - 1 <= broken["_lost"] <= N and "incorrect data check" in broken["_detail"]


@pytest.mark.parametrize("tail", [b"garbage after the end", b"\x1e" * 50])
def test_trailing_bytes_lose_no_record(tmp_path: Path, tail: bytes):
    path = tmp_path / "tail.jsonl.gz"
    path.write_bytes(gzip.compress(records(0, N)) + tail)
    kept, [broken] = read(path)
    assert kept == [f"r{i}" for i in range(N)]
    assert broken["_bad"] == "trailing_data" and broken["_lost"] == 0 and broken["_lost_how"].startswith("exact")
    assert f"{len(tail)} bytes after gzip member 1 are not gzip data" in broken["_detail"]


def test_zero_padding_is_no_damage(tmp_path: Path):
    path = tmp_path / "padded.jsonl.gz"
    path.write_bytes(gzip.compress(records(0, N)) + b"\x00" * 512)
    assert read(path) == ([f"r{i}" for i in range(N)], [])


def test_a_cut_file_is_still_truncated(tmp_path: Path):
    data = gzip.compress(records(0, N))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    kept, [broken] = read(path)
    assert broken["_bad"] == "truncated_file" and 0 < len(kept) < N


def test_a_flip_that_keeps_the_last_member_from_ending_keeps_no_changed_record(tmp_path: Path):
    """A bit flipped in the last bytes of the deflate data can keep the stream from ending: the file reads as cut
    short, which no CRC covers. The lines decompressed from its last TAIL bytes are not kept (counted lost), so no
    record with changed text is kept (one was: the flip at 16 bytes from the end changed r795's text)."""
    first, second = gzip.compress(records(0, N)), gzip.compress(records(N, N))
    original = {json.loads(line)["id"]: json.loads(line)["text"] for line in records(0, 2 * N).splitlines()}
    truncated = 0
    for at in range(len(second) - 40, len(second) - 8):  # the deflate data's end, before the 8-byte trailer
        path = tmp_path / "end.jsonl.gz"
        path.write_bytes(first + flip(second, at))
        src = SourceFiles(name="gz", category="web", format="jsonl.gz", base=str(tmp_path), files=(path.name,),
                          text_field="text", id_field="id", exempt=False, sizes=(path.stat().st_size,))
        docs = list(read_jsonl(src, path.name))
        assert all(original[d.id] == d.text for d in docs if "_bad" not in d.metadata), at
        broken = [d.metadata for d in docs if d.metadata.get("_bad") == "truncated_file"]
        if broken:
            truncated += 1
            assert "last 64 bytes" in broken[0]["_lost_how"], broken[0]
    assert truncated > 0  # the case happens (2 of these 32 flips)
