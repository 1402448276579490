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

    from mixture.pipelines.build import build

    upload(demo_corpus, s3.fs, s3.url("corpus"))
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(small_spec(s3.url("corpus"), s3.url("store"))))
    artifact = build(str(spec_path), progress=False)
    local = built_store.artifact
    assert artifact.counters == local.counters
    assert [(c.cell, c.docs, c.tokens) for c in artifact.cells] == [(c.cell, c.docs, c.tokens) for c in local.cells]
    fs = s3.fs
    assert cell_ids(fs, "bucket/store") == cell_ids(fsspec.filesystem("file"), str(built_store.store))
    assert json.loads(fs.cat("bucket/store/store.json"))["counters"] == local.counters.model_dump()
    assert not fs.exists("bucket/store/_build/work") and not fs.exists("bucket/store/_build/LOCK")

    code, out = cli("audit", s3.url("store"), "--checksums", "all", "--format", "json")
    assert code == 0, out
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["checksums"]["status"] == "pass"
    assert checks["checksums"]["checked"] == sum(c.shards for c in artifact.cells)
    # a rerun of the finished build is a no-op that returns the same artifact
    assert build(str(spec_path), progress=False).counters == artifact.counters


def test_s3_materialize_from_a_local_store(s3: Remote, built_store, tmp_path) -> None:
    """`mixture materialize --out s3://…`: the shards and manifest written to the bucket are the bytes a local run
    writes; `mixture realised` recounts them there."""
    from tests.remote.test_remote_gcs import remote_tree

    plan = tmp_path / "plan.json"
    code, text = cli("plan", str(built_store.spec_path), "--out", str(plan))
    assert code in (0, 1), text
    for out in (s3.url("mixture"), str(tmp_path / "mixture")):
        code, text = cli("materialize", str(plan), "--out", out, "--shard-bytes", "2MB")
        assert code == 0, text
    remote = remote_tree(s3.fs, "bucket/mixture")
    local = {str(p.relative_to(tmp_path / "mixture")): p.read_bytes()
             for p in sorted((tmp_path / "mixture").rglob("*")) if p.is_file()}
    assert remote == local and sum(k.endswith(".parquet") for k in local) > 2
    code, text = cli("realised", s3.url("mixture"), str(plan), "--format", "json")
    assert code == 0 and json.loads(text)["ok"] is True, text
