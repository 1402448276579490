"""The demo build with sources and store on gs:// (the GCS emulator), then audit, report, plan and the explorer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import small_spec
from tests.remote.conftest import Remote, upload

pytestmark = pytest.mark.slow


def cell_ids(fs, root: str) -> dict[str, list[str]]:
    """{cell dir: sorted ids} of a store's finished shards (read with pyarrow through `fs`)."""
    import pyarrow.parquet as pq

    out: dict[str, list[str]] = {}
    for path in sorted(fs.glob(f"{root}/cluster=*/quality=*/*.parquet")):
        cell = "/".join(path.split("/")[-3:-1])
        with fs.open(path, "rb") as f:
            out.setdefault(cell, []).extend(pq.read_table(f, columns=["id"]).column("id").to_pylist())
    return {c: sorted(ids) for c, ids in out.items()}


@pytest.fixture(scope="module")
def gcs_store(gcs: Remote, demo_corpus: Path, tmp_path_factory) -> dict:
    """The small demo corpus uploaded to gs://bucket/corpus and built into gs://bucket/store."""
    from pipelines.build import build

    upload(demo_corpus, gcs.fs, gcs.url("corpus"))
    root = tmp_path_factory.mktemp("gcs_spec")
    spec_path = root / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(small_spec(gcs.url("corpus"), gcs.url("store"))))
    artifact = build(str(spec_path), progress=False)
    return {"spec": spec_path, "store": gcs.url("store"), "artifact": artifact}


def test_gcs_build_matches_local_build(gcs: Remote, gcs_store: dict, built_store) -> None:
    import fsspec

    fs = gcs.fs
    remote = json.loads(fs.cat(f"{gcs_store['store']}/store.json"))
    local = built_store.artifact
    assert remote["counters"] == local["counters"]
    assert remote["counters"]["records_out"] > 0
    strip = ("cell", "docs", "tokens", "shards", "sources")
    assert [{k: c[k] for k in strip} for c in remote["cells"]] == [{k: c[k] for k in strip} for c in local["cells"]]
    assert cell_ids(fs, "bucket/store") == cell_ids(fsspec.filesystem("file"), str(built_store.store))
    # every side file and the model are on the bucket; the work folder is gone, the lock released
    for rel in ("_samples/uniform.parquet", "_model/clusters.json", "_build/assign/completions", "_quarantine"):
        assert fs.exists(f"bucket/store/{rel}"), rel
    assert not fs.exists("bucket/store/_build/work")
    assert not fs.exists("bucket/store/_build/LOCK")
