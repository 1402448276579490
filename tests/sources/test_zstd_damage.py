"""A damaged zstd file is told for what it is, as a gzip file is (test_gzip_damage.py): a corrupt frame (a flipped
bit caught by the frame's checksum or its block decoder: its records are quarantined, not kept), trailing bytes
after the last frame (every record kept, nothing lost), a file cut short (truncated)."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from mixture.pipelines.sources.jsonl import read_jsonl
from mixture.pipelines.sources.records import SourceFiles
from tests.sources.test_gzip_damage import N, flip, records


def compress(data: bytes, checksum: bool = True) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=checksum).compress(data)  # the zstd tool writes checksums


def read(path: Path):
    src = SourceFiles(name="zst", category="web", format="jsonl.zst", base=str(path.parent), files=(path.name,),
                      text_field="text", id_field="id", exempt=False, sizes=(path.stat().st_size,))
    docs = list(read_jsonl(src, path.name))
    return [d.id for d in docs if "_bad" not in d.metadata], [d.metadata for d in docs if "_bad" in d.metadata]


def test_a_flipped_bit_in_a_frame_quarantines_its_records(tmp_path: Path):
    first, second = compress(records(0, N)), compress(records(N, N))
    intact = tmp_path / "ok.jsonl.zst"
    intact.write_bytes(first + second)
    assert read(intact) == ([f"r{i}" for i in range(2 * N)], [])
    corrupt = 0
    for at in range(len(first) + 12, len(first) + len(second), 61):  # past the second frame's header
        path = tmp_path / "flipped.jsonl.zst"
        path.write_bytes(first + flip(second, at - len(first)))
        kept, bad = read(path)
        assert kept[:N] == [f"r{i}" for i in range(N)] and len(kept) <= N, at  # none of the damaged frame's
        [broken] = bad
        assert broken["_bad"] in ("corrupt_file", "truncated_file"), at  # a flip can also end the stream early
        if broken["_bad"] == "corrupt_file":
            corrupt += 1
            assert broken["_read"] == N and "zstd frame 2 is corrupt" in broken["_detail"]
            assert broken["_lost"] is not None and broken["_lost_how"].startswith("estimate")
    assert corrupt > 0


def test_a_checksum_failure_quarantines_every_record_of_its_frame(tmp_path: Path):
    data = compress(records(0, N))
    path = tmp_path / "sum.jsonl.zst"
    path.write_bytes(data[:-4] + flip(data[-4:], 0))  # the stored checksum wrong: the data decodes, the check fails
    kept, [broken] = read(path)
    assert kept == [] and broken["_bad"] == "corrupt_file" and broken["_read"] == 0
    assert broken["_lost"] == N and "checksum" in broken["_detail"]


@pytest.mark.parametrize("tail", [b"garbage after the end", b"\x00" * 64])
def test_trailing_bytes_lose_no_record(tmp_path: Path, tail: bytes):
    path = tmp_path / "tail.jsonl.zst"
    path.write_bytes(compress(records(0, N)) + compress(records(N, N)) + tail)
    kept, [broken] = read(path)
    assert kept == [f"r{i}" for i in range(2 * N)]
    assert broken["_bad"] == "trailing_data" and broken["_lost"] == 0 and broken["_lost_how"].startswith("exact")
    assert f"{len(tail)} bytes after zstd frame 2 are not zstd data" in broken["_detail"]


def test_a_skippable_frame_is_no_damage(tmp_path: Path):
    skippable = b"\x50\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"hello"
    path = tmp_path / "skip.jsonl.zst"
    path.write_bytes(compress(records(0, N)) + skippable + compress(records(N, 10)))
    assert read(path) == ([f"r{i}" for i in range(N + 10)], [])


def test_a_cut_file_is_still_truncated(tmp_path: Path):
    data = compress(records(0, 4 * N), checksum=False)
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(data[: len(data) // 2])
    kept, [broken] = read(path)
    assert broken["_bad"] == "truncated_file" and len(kept) < 4 * N
