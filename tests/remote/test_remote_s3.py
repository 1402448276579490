"""The demo build with sources and store on s3:// (moto's S3 server), then the audit, against the local build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import small_spec
from tests.remote.conftest import Remote, upload
from tests.remote.test_remote_gcs import cell_ids, cli

pytestmark = pytest.mark.slow


def test_s3_build_and_audit_match_local_build(s3: Remote, demo_corpus: Path, built_store, tmp_path) -> None:
    import fsspec

    from pipelines.build import build

    upload(demo_corpus, s3.fs, s3.url("corpus"))
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(small_spec(s3.url("corpus"), s3.url("store"))))
    artifact = build(str(spec_path), progress=False)
    local = built_store.artifact
    assert artifact["counters"] == local["counters"]
    assert [(c["cell"], c["docs"], c["tokens"]) for c in artifact["cells"]] == \
        [(c["cell"], c["docs"], c["tokens"]) for c in local["cells"]]
    fs = s3.fs
    assert cell_ids(fs, "bucket/store") == cell_ids(fsspec.filesystem("file"), str(built_store.store))
    assert json.loads(fs.cat("bucket/store/store.json"))["counters"] == local["counters"]
    assert not fs.exists("bucket/store/_build/work") and not fs.exists("bucket/store/_build/LOCK")

    code, out = cli("audit", s3.url("store"), "--checksums", "all", "--format", "json")
    assert code == 0, out
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["checksums"]["status"] == "pass"
    assert checks["checksums"]["checked"] == sum(c["shards"] for c in artifact["cells"])
    # a rerun of the finished build is a no-op that returns the same artifact
    assert build(str(spec_path), progress=False)["counters"] == artifact["counters"]
