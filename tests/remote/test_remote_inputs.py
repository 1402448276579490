"""The input manifest on object stores: what fsspec's gcsfs (GCS emulator) and s3fs (moto) report that says a file
changed (generation, CRC32C, ETag), the same from one listing as from per-file `info()`, and each change named."""

from __future__ import annotations

import pytest

from mixture.spec.inputs import LISTED_AT_ONCE, identity, list_files, list_source
from mixture.spec.models import Source
from mixture.stages.drift import file_changed, files_drift
from tests.remote.conftest import Remote

pytestmark = pytest.mark.slow

MARKS = {"gs": {"generation", "crc32c", "etag"}, "s3": {"etag"}}


def _record(i: int, word: str = "alpha") -> bytes:
    return f'{{"id": "d{i}", "text": "{word} document number {i:03d} with a few words"}}\n'.encode()


@pytest.mark.parametrize("which", ["gcs", "s3"])
def test_object_store_manifest_names_added_removed_and_rewritten_files(which, request):
    remote: Remote = request.getfixturevalue(which)
    fs = remote.fs
    folder = f"{remote.bucket}/inputs-{which}"
    n = LISTED_AT_ONCE + 4  # more than LISTED_AT_ONCE: listed in one request
    for i in range(n):
        fs.pipe(f"{folder}/part-{i:03d}.jsonl", _record(i))
    fs.invalidate_cache()
    src = Source(name="objs", uri=remote.url(f"inputs-{which}"), format="jsonl")
    before = list_source(src, src.uri).inputs
    assert [f.path for f in before.files] == [f"part-{i:03d}.jsonl" for i in range(n)]
    assert all(set(f.identity) >= MARKS[remote.protocol] and f.size for f in before.files), before.files[0]
    # one listing says what per-file info() says (no datetime or listing-only field in the identity)
    assert [f.identity for f in before.files] == [identity(fs.info(f"{folder}/{f.path}")) for f in before.files]
    fs.invalidate_cache()
    assert list_source(src, src.uri).inputs == before  # listed again, unchanged: no drift

    fs.pipe(f"{folder}/part-001.jsonl", _record(1, "omega"))  # the same size, other bytes
    fs.rm(f"{folder}/part-002.jsonl")
    fs.pipe(f"{folder}/part-999.jsonl", _record(999))
    fs.invalidate_cache()
    after = list_source(src, src.uri).inputs
    drift = files_drift("objs", before.files, after.files)
    assert drift.added == ["part-999.jsonl"] and drift.removed == ["part-002.jsonl"]
    assert [p for p, _ in drift.changed] == ["part-001.jsonl"]
    old, new = before.files[1], next(f for f in after.files if f.path == "part-001.jsonl")
    assert old.size == new.size and file_changed(old, new).split()[0] in MARKS[remote.protocol]
    assert [f.path for f in list_files(remote.url(f"inputs-{which}/part-00*.jsonl"))] == [
        f"part-00{i}.jsonl" for i in (0, 1, 3, 4, 5, 6, 7, 8, 9)]
