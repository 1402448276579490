"""The Slurm executor against fake `sbatch`/`squeue`/`scancel`/`srun` on PATH that record and really run the jobs,
for what the real cluster of test_real_slurm.py does not show here: jobs stuck behind a failed dependency, job ids
split into arrays and merge_stats jobs, sbatch arguments for partitions, accounts and QOS the test cluster lacks."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.conftest import small_spec
from tests.executors import fake_slurm

SETTINGS = {"partition": "cpu", "time": "00:30:00", "poll_seconds": 0.2, "sbatch_args": {"account": "demo"},
            "stages": {"minhash_buckets": {"tasks_per_job": 7}, "fit": {"mem_per_cpu_gb": 6, "time": "01:00:00"}}}


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """Fake Slurm commands first on PATH; returns the folder of their state (jobs/<id>.json, scripts/, scancel.log)."""
    state = tmp_path / "slurm"
    fake_slurm.install(tmp_path / "bin", state)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(state))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    yield state
    live = [j["id"] for j in _jobs(state) if j["state"] in ("PENDING", "RUNNING")]
    if live:  # stop runners left behind by a failing test
        fake_slurm.scancel(live)


def _jobs(state: Path) -> list[dict]:
    return sorted((json.loads(p.read_text()) for p in (state / "jobs").glob("*.json")), key=lambda j: int(j["id"]))


def _settle(state: Path, timeout: float = 90) -> None:
    """Wait for the fake's jobs to end (the driver goes on once the completion markers exist, before the runners
    record their end, and the merge_stats jobs run after that)."""
    end = time.monotonic() + timeout

    def busy(j: dict) -> bool:
        return j["state"] == "RUNNING" or (j["state"] == "PENDING" and j["reason"] != fake_slurm.NEVER)

    while any(busy(j) for j in _jobs(state)) and time.monotonic() < end:
        time.sleep(0.2)


def test_the_driver_waits_after_the_last_dedup_stage_and_assign():
    """The Slurm chains come from the stage registry: a barrier before `sample` (it reads the kept count) and at
    the end; every other stage is chained behind the one before."""
    import copy

    from mixture.spec.models import Spec
    from mixture.stages.registry import driver_waits_after, planned

    raw = {**small_spec("corpus"), "sources": [{"name": "s", "uri": "/nonexistent", "format": "jsonl"}]}
    spec = Spec.model_validate(raw)
    names = [s.name for s in planned(spec)]
    assert names == ["prepare", "duplicate_ids", "find_duplicates", "minhash_sigs", "minhash_buckets",
                     "minhash_route", "minhash_gather", "minhash_verify", "minhash_cluster", "sample", "fit", "assign"]
    assert [n for n in names if driver_waits_after(spec, n)] == ["minhash_cluster", "assign"]
    raw = copy.deepcopy(raw)
    raw["processing"]["dedup"]["fuzzy"]["enabled"] = False
    no_fuzzy = Spec.model_validate(raw)
    names = [s.name for s in planned(no_fuzzy)]
    assert names == ["prepare", "duplicate_ids", "find_duplicates", "sample", "fit", "assign"]
    assert [n for n in names if driver_waits_after(no_fuzzy, n)] == ["find_duplicates", "assign"]
    assert driver_waits_after(spec, "not_a_stage")  # the safe default: wait


def test_restarted_driver_adopts_queued_jobs_and_replaces_stuck_ones(tmp_path, slurm):
    """A driver restarted while its jobs are queued waits for them instead of submitting the stage twice; a job
    stuck behind a failed dependency is cancelled and the stage submitted again."""
    from mixture.pipelines.context import BuildContext, Stage
    from mixture.pipelines.executors import SlurmStageExecutor, make_executor
    from mixture.spec.models import Spec

    spec = Spec.model_validate({**small_spec("corpus"), "execution": {"executor": "slurm", "tasks": 2, **SETTINGS}})
    ctx = BuildContext(spec, str(tmp_path), str(tmp_path / "store"), 2)
    stage = Stage("split", [lambda data, rank, world_size: []], 2)
    logging_dir = tmp_path / "store" / "_build" / "split"
    logging_dir.mkdir(parents=True)

    def queued(job_id: str, state: str, reason: str) -> None:
        (slurm / "jobs" / f"{job_id}.json").write_text(json.dumps(
            {"id": job_id, "name": "demo.split", "state": state, "reason": reason, "script": "", "pid": None}))

    queued("500", "RUNNING", "None")
    (logging_dir / "slurm_jobs.json").write_text(json.dumps({"arrays": ["500"], "helpers": ["501"]}))
    ex = make_executor(ctx, stage, "slurm", 2)
    assert isinstance(ex, SlurmStageExecutor)
    link = ex._adopt()
    assert link is not None and link.arrays == ["500"] and link.helpers == ["501"]

    queued("500", "PENDING", "DependencyNeverSatisfied")
    queued("501", "PENDING", "Dependency")
    assert ex._adopt() is None  # resubmit instead
    assert (slurm / "scancel.log").read_text().split() == ["500", "501"]
    assert json.loads((slurm / "jobs" / "500.json").read_text())["state"] == "CANCELLED"


def test_sbatch_arguments_without_partition_or_time(tmp_path):
    """Unset partition/time are left to the cluster's defaults (no `--partition=None`); fractional memory in MB."""
    from mixture.pipelines.context import BuildContext, Stage
    from mixture.pipelines.executors import make_executor, slurm_mem
    from mixture.spec.models import Spec

    spec = Spec.model_validate({**small_spec("corpus"), "execution": {
        "executor": "slurm", "mem_per_cpu_gb": 1.5, "qos": "high", "slurm_logs_dir": str(tmp_path / "logs"),
        "env_command": "module load python", "workers": -1}})
    ctx = BuildContext(spec, str(tmp_path), str(tmp_path / "store"), 4)
    ex = make_executor(ctx, Stage("prepare", [], 4), "slurm", os.cpu_count() or 1)
    args = ex.get_sbatch_args(4)
    assert "partition" not in args and "time" not in args
    assert args["mem-per-cpu"] == "1536M" == slurm_mem(1.5) and slurm_mem(4.0) == "4G"
    assert args["qos"] == "high" and args["array"] == "0-3"  # workers -1: no array throttle on a cluster
    assert args["output"] == f"{tmp_path}/logs/prepare/%A_%a.out"
    script = ex.get_launch_file_contents(args, "true")
    assert "module load python" in script and "None" not in script


def test_submit_tells_the_arrays_from_the_merge_stats_job(tmp_path, slurm):
    """datatrove's `launch_job` queues one array per `max_array_size` elements, then calls `launch_merge_stats`:
    `SlurmArrays.submit` (datatrove_compat) returns the array jobs and that helper job apart."""
    from mixture.pipelines.executors import default_env_command
    from mixture.pipelines.runtime.datatrove_compat import JobIdRecorder, SlurmArrays

    ex = SlurmArrays([], tasks=3, time=None, partition=None, max_array_size=2,
                     job_name="demo.split", env_command=default_env_command(), job_id_retriever=JobIdRecorder(),
                     logging_dir=str(tmp_path / "logs"))
    arrays, helpers = ex.submit(None)
    _settle(slurm)
    jobs = {j["id"]: j for j in _jobs(slurm)}
    assert sorted(jobs) == sorted([*arrays, *helpers]) and len(arrays) == 2 and len(helpers) == 1
    assert [jobs[j]["directives"]["array"] for j in arrays] == ["0-1", "0-1"]
    assert "merge_stats" in Path(jobs[helpers[0]]["script"]).read_text()
    assert jobs[helpers[0]]["dependency"] == f"afterok:{arrays[-1]}"
    assert ex.get_incomplete_ranks() == [] and all(jobs[j]["state"] == "COMPLETED" for j in jobs)


def test_command_line_settings_apply_over_the_spec_and_under_its_stage_entries(tmp_path):
    """`mixture build --cpus-per-task 4 ...` (BuildContext.overrides): over the spec's settings, None ignored,
    `execution.stages` entries still on top; the spec itself is left as it is."""
    from mixture.pipelines.context import BuildContext, Stage
    from mixture.pipelines.executors import make_executor
    from mixture.spec.models import Spec

    spec = Spec.model_validate({**small_spec("corpus"), "execution": {"executor": "slurm", **SETTINGS}})
    ctx = BuildContext(spec, str(tmp_path), str(tmp_path / "store"), 2,
                       {"cpus_per_task": 4, "mem_per_cpu_gb": 3, "partition": None, "time": "02:00:00"})
    prepare = make_executor(ctx, Stage("prepare", [], 2), "slurm", 2)
    fit = make_executor(ctx, Stage("fit", [], 1), "slurm", 2)
    assert (prepare.cpus_per_task, prepare.mem_per_cpu_gb, prepare.partition, prepare.time) == (4, 3, "cpu", "02:00:00")
    assert (fit.cpus_per_task, fit.mem_per_cpu_gb, fit.time) == (4, 6, "01:00:00")  # the spec's stage entry wins
    assert spec.execution.cpus_per_task == 1 and ctx.execution().time == "02:00:00"
