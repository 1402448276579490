"""`mixture validate` on an object store: the store's location must be writable (a bucket that does not exist is
refused before any work) and may not sit inside a source's folder."""

from __future__ import annotations

import pytest
import yaml

from tests.remote.conftest import Remote
from tests.remote.test_remote_gcs import cli

pytestmark = pytest.mark.slow


def _validate(tmp_path, source: str, store: str) -> tuple[int, str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "t", "sources": [{"name": "web", "uri": source, "format": "jsonl"}],
                                    "store": {"uri": store}}))
    code, out = cli("validate", str(spec))
    return code, " ".join(out.split())


def test_s3_store_location_is_checked_before_any_work(s3: Remote, tmp_path) -> None:
    s3.fs.pipe(f"{s3.bucket}/location/web/part-0.jsonl", b'{"text": "hello there"}\n')
    code, out = _validate(tmp_path, s3.url("location/web"), s3.url("location/store"))
    assert code == 0, out
    assert not s3.fs.find(f"{s3.bucket}/location/store")  # the write check left nothing behind
    code, out = _validate(tmp_path, s3.url("location/web"), "s3://no-such-bucket/store")
    assert code == 2 and "store.uri: cannot write the store at 's3://no-such-bucket/store'" in out, out
    code, out = _validate(tmp_path, s3.url("location/web"), s3.url("location/web/store"))
    assert code == 2 and "is inside the folder of source sources[0] 'web'" in out, out
