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
    from mixture.pipelines.build import build

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
    local = built_store.artifact.model_dump(mode="json")
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


def cli(*args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from mixture.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_gcs_audit_deep_passes(gcs_store: dict) -> None:
    code, out = cli("audit", gcs_store["store"], "--deep", "--sample", "200", "--checksums", "all", "--format", "json")
    assert code == 0, out
    result = json.loads(out)
    assert result["status"] == "ok"
    checks = {c["name"]: c for c in result["checks"]}
    n_shards = sum(c.shards for c in gcs_store["artifact"].cells)
    assert checks["checksums"]["status"] == "pass" and checks["checksums"]["checked"] == n_shards
    assert checks["tokens (deep)"]["status"] == "pass" and checks["tokens (deep)"]["checked"] == 200


def test_gcs_audit_finds_a_tampered_shard(gcs: Remote, gcs_store: dict, tmp_path) -> None:
    """The audit reads the bucket, not a cache: a rewritten shard on the emulator is caught, then restored."""
    import pyarrow.parquet as pq

    fs = gcs.fs
    shard = sorted(fs.glob("bucket/store/cluster=*/quality=*/*.parquet"))[0]
    original = fs.cat(shard)
    with fs.open(shard, "rb") as f:
        table = pq.read_table(f)
    try:
        with fs.open(shard, "wb") as f:
            pq.write_table(table.slice(1), f)
        code, out = cli("audit", gcs_store["store"], "--format", "json")
        assert code == 1, out
        failed = {c["name"] for c in json.loads(out)["checks"] if c["status"] == "fail"}
        assert {"rows", "checksums"} <= failed
    finally:
        fs.pipe(shard, original)
    assert cli("audit", gcs_store["store"], "--format", "json")[0] == 0


def test_gcs_report_equals_local_report(gcs_store: dict, built_store) -> None:
    code, out = cli("report", gcs_store["store"], "--by", "cluster,quality", "--format", "json")
    assert code == 0, out
    code_l, out_l = cli("report", str(built_store.store), "--by", "cluster,quality", "--format", "json")
    assert code_l == 0, out_l
    remote, local = json.loads(out), json.loads(out_l)
    assert remote == local
    assert sum(r["tokens"] for r in remote) == gcs_store["artifact"].counters.tokens_out


def test_gcs_sql_and_diff_against_the_local_store(gcs_store: dict, built_store) -> None:
    """DuckDB reads the bucket through the registered gcsfs; the diff of the two stores is empty."""
    code, out = cli("sql", gcs_store["store"], "SELECT count(*) AS n, sum(n_tokens) AS t FROM documents",
                    "--format", "json")
    assert code == 0, out
    counters = gcs_store["artifact"].counters
    assert json.loads(out) == [{"n": counters.records_out, "t": counters.tokens_out}]
    code, out = cli("diff", str(built_store.store), gcs_store["store"], "--format", "json")
    assert code == 0, out
    result = json.loads(out)
    assert result["total_a"] == result["total_b"] == counters.tokens_out
    assert not result["added"] and not result["removed"] and not result["incompatibilities"]
    cells = result["cells"]
    assert len(cells) == len(gcs_store["artifact"].cells)
    assert all(c["delta"] == 0 and c["docs_delta"] == 0 and c["entered"] == 0 and c["left"] == 0 for c in cells)


def test_gcs_plan_from_the_spec(gcs_store: dict, built_store, tmp_path) -> None:
    """`mixture plan` on the spec whose store.uri is gs://: same plan as for the local store; written to gs://."""
    out = gcs_store["store"].rsplit("/", 1)[0] + "/plans/plan.json"
    code, text = cli("plan", str(gcs_store["spec"]), "--format", "json", "--out", out)
    assert code in (0, 1), text
    remote = json.loads(text[text.index("{"):text.rindex("}") + 1])
    code_l, text_l = cli("plan", str(built_store.spec_path), "--format", "json")
    local = json.loads(text_l[text_l.index("{"):text_l.rindex("}") + 1])
    assert remote["store_uri"] == gcs_store["store"]
    assert [(c["cell"], c["available_tokens"], c["phases"]) for c in remote["cells"]] == \
        [(c["cell"], c["available_tokens"], c["phases"]) for c in local["cells"]]
    assert sum(c["available_tokens"] for c in remote["cells"]) == gcs_store["artifact"].counters.tokens_out
    import fsspec

    with fsspec.open(out, "rt") as f:
        assert json.load(f)["cells"] == remote["cells"]


def test_gcs_explorer_overview_and_store_pages(gcs_store: dict, monkeypatch) -> None:
    from mixture.composition.figures import total_text
    from tests.explorer.apptest_util import run

    art = gcs_store["artifact"]
    monkeypatch.setenv("MIXTURE_STORE", gcs_store["store"])
    monkeypatch.delenv("MIXTURE_PLAN", raising=False)
    monkeypatch.delenv("MIXTURE_STORE_B", raising=False)
    at = run(timeout=60)
    tokens = art.counters.tokens_out
    assert at.header[0].value == (f"{total_text(tokens)} tokens across {len(art.clusters)} semantic domains "
                                  "and 5 calibrated quality buckets")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["documents"] == f"{art.counters.records_out:,}"
    grid = len(art.clusters) * art.partition.quality_levels  # store.json lists the cells that hold documents
    assert metrics["cells"] == f"{sum(1 for c in art.cells if c.docs)} non-empty of {grid}"
    run("store", timeout=60)


def remote_tree(fs, root: str) -> dict[str, bytes]:
    """{relative path: bytes} of every object under `root`."""
    fs.invalidate_cache()
    return {p[len(root) + 1:]: fs.cat_file(p) for p in sorted(fs.find(root))}


def test_gcs_materialize_and_realised(gcs: Remote, gcs_store: dict, built_store, tmp_path) -> None:
    """`mixture materialize` from the gs:// store into gs:// as 3 tasks on 2 workers: the same shards, byte for
    byte, as one task from the local store into a local folder; `mixture realised` recounts them on the bucket; a
    rerun with bigger shards leaves no stale shard, no temporary object and no work folder."""
    plan_url = gcs.url("mix-plans/plan.json")
    code, text = cli("plan", str(gcs_store["spec"]), "--out", plan_url)
    assert code in (0, 1), text
    local_plan = tmp_path / "plan.json"
    code, text = cli("plan", str(built_store.spec_path), "--out", str(local_plan))
    assert code in (0, 1), text

    out = gcs.url("mixture")
    code, text = cli("materialize", plan_url, "--out", out, "--shard-bytes", "2MB", "--tasks", "3", "--workers", "2")
    assert code == 0, text
    code, text = cli("materialize", str(local_plan), "--out", str(tmp_path / "mixture"), "--shard-bytes", "2MB",
                     "--tasks", "1", "--workers", "1")
    assert code == 0, text
    fs = gcs.fs
    remote = remote_tree(fs, "bucket/mixture")
    local = {str(p.relative_to(tmp_path / "mixture")): p.read_bytes()
             for p in sorted((tmp_path / "mixture").rglob("*")) if p.is_file()}
    shards = sorted(k for k in local if k.endswith(".parquet"))
    assert len(shards) > 2 and sorted(k for k in remote if k.endswith(".parquet")) == shards
    assert all(remote[k] == local[k] for k in shards)
    manifest = json.loads(remote["manifest.json"])
    assert manifest["store_uri"] == gcs_store["store"]
    assert manifest["phases"] == json.loads(local["manifest.json"])["phases"]  # sizes and checksums of the shards

    code, text = cli("realised", out, plan_url, "--format", "json")
    assert code == 0, text
    assert json.loads(text)["ok"] is True

    code, text = cli("materialize", plan_url, "--out", out, "--shard-bytes", "8MB")
    assert code == 0, text
    again = remote_tree(fs, "bucket/mixture")
    listed = {s["path"] for ph in json.loads(again["manifest.json"])["phases"] for s in ph["shards"]}
    assert len(listed) < len(shards)
    assert {k.rsplit("/", 1)[-1] for k in again if k.endswith(".parquet")} == listed
    assert not [k for k in again if k.endswith(".tmp") or k.startswith("_materialize")]
    assert cli("realised", out, plan_url, "--format", "json")[0] == 0


def test_gcs_overview_page(gcs: Remote, gcs_store: dict, built_store, tmp_path) -> None:
    """`mixture overview` from the gs:// store and a gs:// plan into gs://: a web page (text/html) with the same
    domain panels as the local store's page, and no temporary object left."""
    plan_url = gcs.url("overview-plans/plan.json")
    assert cli("plan", str(gcs_store["spec"]), "--out", plan_url)[0] in (0, 1)
    local_plan = tmp_path / "plan.json"
    assert cli("plan", str(built_store.spec_path), "--out", str(local_plan))[0] in (0, 1)
    code, text = cli("overview", gcs_store["store"], "--out", gcs.url("site"), "--plan", plan_url)
    assert code == 0, text
    assert text.startswith(f"wrote {gcs.url('site')}/index.html (")
    code, text = cli("overview", str(built_store.store), "--out", str(tmp_path / "site"), "--plan", str(local_plan))
    assert code == 0, text

    fs = gcs.fs
    assert fs.ls("bucket/site") == ["bucket/site/index.html"]
    assert fs.info("bucket/site/index.html")["contentType"] == "text/html; charset=utf-8"
    remote = fs.cat("bucket/site/index.html").decode("utf-8")
    local = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    panels = lambda html: html[html.index('<section id="panels">'):html.index("</section>\n\n<footer>")]  # noqa: E731
    assert panels(remote) == panels(local) and "weight " in panels(remote)
    assert f"store <code>{gcs_store['store']}</code>" in remote
    assert f", {plan_url}):" in remote  # a remote plan named by the URI it was given as
    assert str(tmp_path) not in local and ", plan.json):" in local  # a local one by its file name
