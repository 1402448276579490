"""`open_atomic` on object stores (gs://, s3://): one upload under the file's own name, no temporary name, copy or
delete; a block that raises leaves no object, whether its bytes were still buffered or a multipart / resumable
upload had begun (a partial file must never appear under a name a reader trusts)."""

from __future__ import annotations

import gc

import pytest

from mixture.store.io import is_object_store, open_atomic
from tests.remote.conftest import Remote

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("protocol", "size"), [
    ("gs", 1_000), ("s3", 1_000),  # buffered
    # past two 5 MiB blocks (resumable, multipart); the emulated gs upload takes ~35 s: make test-heavy (CI runs both)
    pytest.param("gs", 12 << 20, marks=pytest.mark.heavy), ("s3", 12 << 20),
])
def test_an_object_appears_whole_or_not_at_all(request, protocol: str, size: int) -> None:
    remote: Remote = request.getfixturevalue({"gs": "gcs", "s3": "s3"}[protocol])
    fs = remote.fs
    assert is_object_store(fs)
    _, path = remote.url(f"atomic/{size}/ok.bin").split("://", 1)
    data = bytes(range(256)) * (size // 256)
    with open_atomic(fs, path) as f:
        f.write(data)
    fs.invalidate_cache()
    assert fs.cat_file(path) == data
    assert fs.ls(path.rsplit("/", 1)[0], detail=False) == [path]  # no temporary name left beside it

    failed = path.replace("ok.bin", "failed.bin")
    with pytest.raises(RuntimeError, match="midway"), open_atomic(fs, failed, block_size=5 << 20) as f:
        f.write(data)
        f.flush()  # past a block, the upload has begun
        raise RuntimeError("midway")
    del f
    gc.collect()  # a file's finaliser must not upload what was written either
    fs.invalidate_cache()
    assert fs.ls(path.rsplit("/", 1)[0], detail=False) == [path]  # nothing of the failed write, under any name
    with open_atomic(fs, path) as f:  # overwritten whole
        f.write(b"new")
    fs.invalidate_cache()
    assert fs.cat_file(path) == b"new"
