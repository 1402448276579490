"""The shuffles' objects on object storage: the small demo built on gs:// (T = 4, and with its shuffles combined 2
writer files to a file) and on s3:// (T = 16, P = 6), work kept; every shuffle folder holds at most 2 (T + P)
objects (one per writer task, and the combined files), and the store is the local one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from mixture.pipelines.dedup.shuffle import INDEX_SUFFIX
from mixture.stages import registry as stage_registry
from tests.conftest import small_spec
from tests.remote.conftest import Remote, upload

pytestmark = pytest.mark.slow


def shuffle_objects(fs, store: str) -> dict[str, int]:
    """{shuffle folder: objects in it} of a store's kept work, every folder of SHUFFLES."""
    folders = {f"{f.folder}/{f.name.rsplit('/', 1)[0]}" if "/" in f.name else f.folder
               for f in stage_registry.SHUFFLES}
    fs.invalidate_cache()
    return {d: len(fs.find(f"{store}/{d}")) for d in sorted(folders)}


@pytest.mark.parametrize(("protocol", "tasks", "partitions", "combine"), [
    ("gs", 4, None, None),
    pytest.param("gs", 4, None, 2, marks=pytest.mark.heavy),  # combined (~60 s; covered locally in make test)
    pytest.param("s3", 16, 6, None, marks=pytest.mark.heavy),  # 16 tasks on 2 cores: make test-heavy (CI runs both)
])
def test_each_shuffle_is_one_object_per_writer(request, protocol: str, tasks: int, partitions: int | None,
                                               combine: int | None, demo_corpus: Path, built_store,
                                               tmp_path) -> None:
    from mixture.pipelines.build import build

    remote: Remote = request.getfixturevalue({"gs": "gcs", "s3": "s3"}[protocol])
    corpus, store = remote.url(f"corpus-{tasks}"), remote.url(f"shuffle-store-{tasks}-{combine}")
    upload(demo_corpus, remote.fs, corpus)
    spec = small_spec(corpus, store)
    spec["execution"].update(tasks=tasks, **({"partitions": partitions} if partitions else {}),
                             **({"combine_files": combine} if combine else {}))
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(tmp_path / "spec.yaml"), progress=False, keep_work=True)

    fs = remote.fs
    p = partitions or tasks
    from mixture.spec.load import load_spec

    bands = load_spec(str(tmp_path / "spec.yaml")).processing.dedup.fuzzy.bands
    writers = max(tasks, p, bands * stage_registry.bucket_slices(bands, tasks))
    counts = shuffle_objects(fs, store.split("://", 1)[1])
    assert set(counts) >= {"_build/work/dedup/by_id", "_build/work/near_dups/texts"}
    for folder, n in counts.items():
        found = fs.find(f"{store.split('://', 1)[1]}/{folder}/_combined")
        indexes = sum(f.endswith(INDEX_SUFFIX) for f in found)
        combined, n = len(found) - indexes, n - indexes
        assert 0 < n - combined <= 2 * (tasks + p), (folder, n, tasks, p)
        assert n - combined <= writers, (folder, n)  # one per writer task, none per partition
        grouped = combine and f"{folder}/_combined" in {o for s in stage_registry.STAGES for o in s.files.outputs}
        assert combined == (-(-(n - combined) // combine) if grouped else 0), (folder, n)  # ⌈writers / g⌉
        assert indexes == (1 if grouped else 0), (folder, found)  # and their merged index
    got = json.loads(fs.cat(f"{store}/store.json"))
    assert got["counters"] == built_store.artifact.model_dump(mode="json")["counters"]


@pytest.mark.parametrize("protocol", ["gs", "s3"])
def test_a_combined_shuffle_reads_back_the_same_rows(request, protocol: str, monkeypatch) -> None:
    """Writer files combined on the object store (pipelines/dedup/combine.py: ranged reads of their indexes, each
    file read front to back, one upload): every partition reads back the rows of the writer files, in order; once
    their indexes are merged, with one read for where its ranges are."""
    import numpy as np
    import pyarrow as pa

    from mixture.pipelines.dedup.combine import combine
    from mixture.pipelines.dedup.shuffle import PART, read_partition, write_merged_index, write_partitions

    remote: Remote = request.getfixturevalue({"gs": "gcs", "s3": "s3"}[protocol])
    url, writers, parts = remote.url("combine-unit"), 5, 4
    schema = pa.schema([("x", pa.int64())])
    rng = np.random.default_rng(0)
    for w in range(writers):
        part = np.sort(rng.integers(0, parts, 50)).astype(np.int32)
        write_partitions(pa.table({"x": np.arange(50) + 100 * w, PART: part}).to_batches(), f"{url}/{w:05d}.parquet",
                         parts)
    before = [read_partition(f"{url}/*.parquet", q, schema, parts) for q in range(parts)]
    for c in range(3):
        combine(f"{url}/*.parquet", c, 2, writers)
    assert len(remote.fs.ls(f"{url}/_combined".split("://", 1)[1])) == 3
    assert [read_partition(f"{url}/*.parquet", q, schema, parts) for q in range(parts)] == before
    assert sum(t.num_rows for t in before) == writers * 50
    write_merged_index(f"{url}/*.parquet")
    assert len(remote.fs.ls(f"{url}/_combined".split("://", 1)[1])) == 4
    reads = object_reads(protocol, monkeypatch)
    for q in range(parts):
        assert read_partition(f"{url}/*.parquet", q, schema, parts) == before[q]
        assert reads() == 4  # its slice of the merged index, then its range of each of the 3 combined files


def object_reads(protocol: str, monkeypatch) -> Callable[[], int]:
    """From now on, the object reads (GETs of an object's bytes) gcsfs or s3fs makes: a function that returns how
    many since it was last called."""
    import gcsfs.core
    import s3fs.core
    from fsspec.asyn import sync_wrapper

    seen = [0]

    def counting(call, is_read):
        async def counted(self, *args, **kwargs):
            seen[0] += bool(is_read(*args, **kwargs))
            return await call(self, *args, **kwargs)
        return counted

    if protocol == "gs":
        monkeypatch.setattr(gcsfs.core.GCSFileSystem, "_request", counting(
            gcsfs.core.GCSFileSystem._request, lambda method, path, *a, **k: method == "GET" and not path.endswith("/o")
            and ("Range" in (k.get("headers") or {}) or k.get("alt") == "media")))
    else:
        call = counting(s3fs.core.S3FileSystem._call_s3,
                        lambda method, *a, **k: getattr(method, "__name__", method) == "get_object")
        monkeypatch.setattr(s3fs.core.S3FileSystem, "_call_s3", call)
        monkeypatch.setattr(s3fs.core.S3FileSystem, "call_s3", sync_wrapper(call))

    def since() -> int:
        n, seen[0] = seen[0], 0
        return n

    return since
