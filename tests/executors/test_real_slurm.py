"""The Slurm path on a real single-node cluster (Debian's slurm-wlm, started by slurm_cluster.py): a build that
fails on a cancelled array element names that stage; a rerun resubmits only its unfinished task; a driver killed
while its chain runs is replaced by one that adopts the queued jobs; the store equals the local executor's, with the
fit on two threads and OMP_NUM_THREADS=2 in the driver. One build, scenarios in sequence (~90 s on 2 cores)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import small_spec
from tests.executors import slurm_cluster
from tests.executors.fingerprint import assert_same_store

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # a real Slurm cluster: make test-heavy

FIRST_CHAIN = ["prepare", "duplicate_ids", "find_duplicates", "minhash_sigs", "minhash_buckets", "minhash_route",
               "minhash_gather", "minhash_verify", "minhash_cluster/r000"]  # minhash_cluster's first round: the driver waits after it
DRIVER = """
import json, sys
from mixture.pipelines.build import BuildError, build
try:
    build(sys.argv[1], executor="slurm", progress=True, overrides=json.loads(sys.argv[2]))
except BuildError as exc:
    print(f"build failed {exc}", file=sys.stderr)
    sys.exit(1)
"""


@pytest.fixture(scope="session")
def real_slurm(tmp_path_factory):
    """A running single-node cluster for the session; skipped, naming the packages, where Slurm is not installed."""
    why = slurm_cluster.missing()
    if why:
        pytest.skip(why)
    cluster = slurm_cluster.start(tmp_path_factory.mktemp("slurm"))
    yield cluster
    cluster.stop()


def _wait(what: str, check, timeout: float = 120):
    """Poll `check` until it returns something; `timeout` is a deadline only to stop waiting for the cluster,
    not a timing assertion."""
    end = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def _record(store: Path, stage: str) -> dict | None:
    p = store / "_build" / stage / "slurm_jobs.json"
    return json.loads(p.read_text()) if p.exists() else None


def test_real_slurm_cancel_rerun_adopt_and_same_store(tmp_path, demo_corpus, built_store, real_slurm):
    from mixture.pipelines.executors import default_env_command

    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(small_spec(str(demo_corpus), "store")))  # the very spec of built_store
    store = tmp_path / "store"
    hold = tmp_path / "hold"  # while it exists, prepare's array element 1 waits before running its task
    hold.touch()
    held = (f'if [ -e {hold} ] && [ "$SLURM_JOB_NAME" = demo.prepare ] && [ "$SLURM_ARRAY_TASK_ID" = 1 ]; '
            "then sleep 300; fi")
    overrides = json.dumps({"poll_seconds": 1, "env_command": f"{default_env_command()}; {held}",
                            "stages": {"minhash_buckets": {"tasks_per_job": 7}, "fit": {"cpus_per_task": 2}}})
    env = {**real_slurm.env(), "OMP_NUM_THREADS": "2", "COLUMNS": "100"}

    def driver() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", DRIVER, str(spec_path), overrides], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    # 1. cancel prepare's element 1 once it runs (an element shows as running ~1 s before it launches: wait for
    #    its log): the chain behind it can never start; the driver fails at its barrier naming `prepare`
    run = driver()
    first = _wait("prepare's submission", lambda: _record(store, "prepare"))["arrays"][0]
    _wait("element 1's log", lambda: (store / "_build/prepare/slurm_logs" / f"{first}_1.out").exists())
    real_slurm.run("scancel", f"{first}_1")
    hold.unlink()
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1, err
    msg = " ".join(err.split())
    assert "stage 'prepare' failed" in msg and "1 of 2 tasks did not finish on Slurm" in msg, msg
    assert f"(Slurm jobs {first}: failed, cancelled or out of time): tasks 1;" in msg, msg
    assert ("queued behind it (duplicate_ids, find_duplicates, minhash_sigs, minhash_buckets, minhash_route, "
            "minhash_gather, minhash_verify, minhash_cluster/r000): ") in msg, msg
    assert "stage 'minhash_cluster' failed" not in msg and ".." not in msg, msg
    folders = re.search(r"; logs: (.+?)\. Cancelled", msg).group(1).split(", ")
    assert folders and all(Path(f).is_dir() for f in folders), msg
    assert (store / "_build/prepare/slurm_logs" / f"{first}_1.out").exists()
    cancelled = {s: _record(store, s) for s in FIRST_CHAIN}

    # 2. rerun: prepare's array holds only its unfinished task; the driver is killed while its chain is queued
    run = driver()
    first_round = "minhash_cluster/r000"
    resubmitted = _wait("the new chain", lambda: (r := _record(store, first_round)) != cancelled[first_round] and r)
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=30)
    queued = {s: _record(store, s) for s in FIRST_CHAIN}
    assert queued[first_round] == resubmitted and queued["prepare"] != cancelled["prepare"]
    assert json.loads((store / "_build/prepare/ranks_to_run.json").read_text()) == [1]
    job = real_slurm.run("scontrol", "show", "job", "--oneliner", queued["prepare"]["arrays"][0])
    assert re.findall(r"ArrayTaskId=([\d-]+)", job) == ["0"], job  # one element: task 1 only

    # 3. a new driver adopts the queued jobs (no stage of the chain is submitted again) and finishes the build
    run = driver()
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    assert {s: _record(store, s) for s in FIRST_CHAIN} == queued
    # the progress display shows every stage finished (chained stages too, not 0/N)
    shown = dict(re.findall(r"^(\w+)\s.*?\s(\d+/\d+)\s+tasks", out, re.M))
    assert set(shown) >= {*FIRST_CHAIN[:-1], "minhash_cluster", "sample", "fit", "assign"}, out  # rounds: `<stage> <round>`
    assert all(a == b for a, b in (v.split("/") for v in shown.values())), out
    assert_same_store(store, built_store.store)

    # the chains as submitted: afterok on the stage before up to the barrier; `sample` starts the second chain
    stages = [*FIRST_CHAIN, "sample", "fit", "assign"]
    rec = {s: _record(store, s) for s in stages}
    assert {s: rec[s]["depends"] for s in stages} == {
        s: None if s in ("prepare", "sample") else ":".join(rec[stages[i - 1]]["arrays"]) for i, s in enumerate(stages)}
    jobs = {s: _jobs(real_slurm, rec[s]["arrays"][0]) for s in stages}
    # elements (prepare: task 1 only; 14 buckets / 7; minhash_cluster's rounds: P_c = 1 task for the demo's pairs)
    assert [len(jobs[s]) for s in stages] == [1, 2, 2, 2, 2, 2, 2, 2, 1, 2, 1, 2]
    assert re.search(r"CPUs/Task=(\d+)", jobs["fit"][0]).group(1) == "2"
    marks = (store / "_build/minhash_cluster/report/completions").iterdir()  # its last round
    assert min(_time(j, "SubmitTime") for j in jobs["sample"]) >= int(max(m.stat().st_mtime for m in marks))  # waited
    assert max(_time(j, "SubmitTime") for j in jobs["assign"]) < max(_time(j, "EndTime") for j in jobs["sample"])
    script = (store / "_build/fit/launch_script.slurm").read_text()
    assert "#SBATCH --cpus-per-task=2" in script and "#SBATCH --mem-per-cpu=2G" in script
    assert f"launch_pickled_pipeline {store}/_build/fit/executor.pik" in script and default_env_command() in script
    real_slurm.drain()  # the merge_stats jobs
    assert all((store / "_build" / s / "stats.json").exists() for s in stages)


def _jobs(cluster: slurm_cluster.Cluster, array: str) -> list[str]:
    """`scontrol show job` of an array job: one line per element (kept MinJobAge = 300 s after it ended)."""
    return cluster.run("scontrol", "show", "job", "--oneliner", array).splitlines()


def _time(job: str, name: str) -> float:
    import datetime

    return datetime.datetime.fromisoformat(re.search(rf"\b{name}=(\S+)", job).group(1)).timestamp()


MATERIALIZE = """
import sys
from mixture.planner.formats import read_plan
from mixture.pipelines.materialize.run import materialize
from mixture.spec.models import Execution
materialize(read_plan(sys.argv[1]), sys.argv[2], shard_bytes=64 * 1024, executor="slurm", tasks=3,
            execution=Execution(executor="slurm", poll_seconds=1, tasks_per_job=2), keep_work=True)
"""


def test_real_slurm_materialize_equals_local(tmp_path, built_store, real_slurm):
    """`mixture materialize` as 3 tasks in one Slurm array (2 tasks per element): the driver submits, waits and
    publishes the bytes one local task writes."""
    from mixture.pipelines.materialize.run import materialize
    from mixture.planner.run import plan_from_spec
    from mixture.store.formats import dump

    _, plan = plan_from_spec(str(built_store.spec_path), scale=0.05)
    (tmp_path / "plan.json").write_text(dump(plan))
    materialize(plan, tmp_path / "local", shard_bytes=64 * 1024)
    out = tmp_path / "slurm"
    r = subprocess.run([sys.executable, "-c", MATERIALIZE, str(tmp_path / "plan.json"), str(out)],
                       env=real_slurm.env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    logs = out / "_materialize"
    assert len(list((logs / "completions").iterdir())) == 3
    assert "#SBATCH --array=0-1" in (logs / "launch_script.slurm").read_text()  # 3 tasks, 2 per element
    assert json.loads((logs / "slurm_jobs.json").read_text())["stage"] == "materialize"

    def tree(d: Path) -> dict[str, bytes]:
        return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*"))
                if p.is_file() and "_materialize" not in p.parts}

    local = tree(tmp_path / "local")
    assert sum(k.endswith(".parquet") for k in local) >= 6 and tree(out) == local
    real_slurm.drain()  # the merge_stats job
