"""The small demo build on a real local Ray cluster gives the same store as the local executor."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import small_spec
from tests.executors.fingerprint import assert_same_store

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a real Ray cluster: make test-heavy
ray = pytest.importorskip("ray")


@pytest.fixture
def ray_cluster():
    """No cluster running before; the build's executor starts a local one (2 CPUs); shut down after the test."""
    if ray.is_initialized():
        ray.shutdown()
    yield
    ray.shutdown()


def test_ray_build_equals_local_build(tmp_path, demo_corpus, built_store, ray_cluster):
    from mixture.pipelines.build import build

    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(small_spec(str(demo_corpus), "store")))  # the very spec of built_store
    # 14 tiny bucket tasks run as 2 Ray jobs of 7, the fit on 2 threads (task_threads(2)): the same model bytes;
    # settings given like CLI options, so the spec (and its hash) match
    artifact = build(str(spec_path), executor="ray", progress=False,
                     overrides={"stages": {"minhash_buckets": {"tasks_per_job": 7}, "fit": {"cpus_per_task": 2}}})
    assert ray.is_initialized()
    assert ray.cluster_resources()["CPU"] == 2  # the executor started a local cluster with the build's 2 workers
    store = tmp_path / "store"
    fp = assert_same_store(store, built_store.store)
    assert artifact.counters.records_out == fp["artifact"]["counters"]["records_out"] > 0
    assert sum(len(ids) for ids in fp["cells"].values()) == artifact.counters.records_out
    # every stage ran through Ray: datatrove's Ray executor saved its config and a log per task
    for stage, tasks, per_job in (("prepare", 2, 1), ("minhash_buckets", 14, 7), ("assign", 2, 1)):
        d = store / "_build" / stage
        saved = json.loads((d / "executor.json").read_text())
        assert (saved["stage_name"], saved["local_cpus"], saved["tasks_per_job"]) == (stage, 2, per_job)
        assert len(list((d / "completions").iterdir())) == tasks
        assert len(list((d / "logs").glob("task_*.log"))) == tasks


def test_ray_materialize_equals_local(tmp_path, built_store, ray_cluster):
    """`mixture materialize` as 3 tasks on a local Ray cluster (started by the executor) writes the bytes one local
    task writes."""
    from mixture.pipelines.materialize.run import materialize
    from mixture.planner.run import plan_from_spec

    _, plan = plan_from_spec(str(built_store.spec_path), scale=0.05)
    materialize(plan, tmp_path / "local", shard_bytes=64 * 1024)
    materialize(plan, tmp_path / "ray", shard_bytes=64 * 1024, executor="ray", tasks=3, workers=2, keep_work=True)
    assert ray.is_initialized() and ray.cluster_resources()["CPU"] == 2
    logs = tmp_path / "ray" / "_materialize"
    assert json.loads((logs / "executor.json").read_text())["stage_name"] == "materialize"
    assert len(list((logs / "completions").iterdir())) == 3 and len(list((logs / "logs").glob("task_*.log"))) == 3
    tree = lambda d: {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*"))  # noqa: E731
                      if p.is_file() and "_materialize" not in p.parts}
    local = tree(tmp_path / "local")
    assert sum(k.endswith(".parquet") for k in local) >= 6 and tree(tmp_path / "ray") == local
