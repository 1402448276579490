"""Executors for the build's stages: datatrove's local, Ray and Slurm executors, configured from `execution`.

Ray runs each stage on a running cluster (or a local one it starts); Slurm submits chains of job arrays linked by
`afterok` dependencies and the driver waits only where it reads results (see docs/scaling.md)."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from datatrove.executor.ray import RayPipelineExecutor
from datatrove.utils.logging import logger

from mixture.pipelines.context import BuildContext, Stage
from mixture.pipelines.runtime.datatrove_compat import (
    ExecutorError,
    JobIdRecorder,
    LocalExecutor,
    SlurmArrays,
    TaskSetup,
)
from mixture.spec.models import Execution
from mixture.stages.registry import COMBINE_ROUND, driver_waits_after, worker_group
from mixture.store import layout

EXECUTORS = ("local", "ray", "slurm")
SLURM_JOBS_FILE = "slurm_jobs.json"  # in _build/<stage>/: the job ids of the stage's last submission
NEVER = "DependencyNeverSatisfied"  # squeue reason of a job whose afterok dependency failed

LOCAL_START_METHOD = os.environ.get("MIXTURE_START_METHOD", "fork")


def _cluster_workers(ex: Execution, workers: int) -> int:
    """`workers: -1` means "all cores" locally and "no limit" on a cluster (the build passes the core count)."""
    return -1 if ex.workers == -1 and workers == (os.cpu_count() or 1) else workers


def make_executor(ctx: BuildContext, stage: Stage, executor: str, workers: int, chain: SlurmChain | None = None):
    """The datatrove executor of `stage`; `chain`: the Slurm stages this build submitted and has not waited for."""
    # a round of a stage run in rounds: the driver waits after it (not after a combine round: nothing is read)
    registered, _, round_ = stage.name.partition("/")
    return stage_executor(stage.pipeline, stage.tasks, stage.name, ctx.at(layout.stage_dir(stage.name)),
                          ctx.execution(registered), executor, workers,
                          f"{ctx.spec.name}.{stage.name.replace('/', '.')}", chain,
                          (bool(round_) and not round_.startswith(COMBINE_ROUND))
                          or driver_waits_after(ctx.spec, registered), worker_group(registered))


def stage_executor(pipeline: list, tasks: int, name: str, logging_dir: str, ex: Execution, executor: str,
                   workers: int, job_name: str, chain: SlurmChain | None = None, barrier: bool = True,
                   worker_group: str | None = None):
    """The datatrove executor that runs `pipeline` as `tasks` tasks with its logs and completions in `logging_dir`
    (a build's stage, or `mixture materialize`); `barrier`: a Slurm driver waits for the chain after it;
    `worker_group`: locally, the group whose stages share their worker processes (pipelines/runtime/shared_workers.py)."""
    if executor == "local":
        return LocalExecutor(pipeline=pipeline, tasks=tasks, workers=min(workers, tasks),
                             logging_dir=logging_dir, start_method=LOCAL_START_METHOD, worker_group=worker_group)
    if executor == "ray":
        address = ex.address or os.environ.get("RAY_ADDRESS")
        with _quiet_unless(address, "datatrove.executor.ray"):  # its "local logging dir" warning is moot on one host
            return RayStageExecutor(
                pipeline=pipeline, tasks=tasks, workers=_cluster_workers(ex, workers), logging_dir=logging_dir,
                cpus_per_task=ex.cpus_per_task, mem_per_cpu_gb=ex.mem_per_cpu_gb, tasks_per_job=ex.tasks_per_job,
                address=address, local_cpus=max(workers, ex.cpus_per_task), stage_name=name)
    if executor == "slurm":
        return SlurmStageExecutor(
            pipeline=pipeline, tasks=tasks, time=ex.time, partition=ex.partition,
            cpus_per_task=ex.cpus_per_task, mem_per_cpu_gb=ex.mem_per_cpu_gb, workers=_cluster_workers(ex, workers),
            job_name=job_name, qos=ex.qos or "", env_command=ex.env_command or default_env_command(),
            sbatch_args=dict(ex.sbatch_args), max_array_size=ex.max_array_size, logging_dir=logging_dir,
            slurm_logs_folder=f"{ex.slurm_logs_dir.rstrip('/')}/{name}" if ex.slurm_logs_dir else None,
            tasks_per_job=ex.tasks_per_job, job_id_retriever=JobIdRecorder(),
            chain=SlurmChain() if chain is None else chain, barrier=barrier,
            poll_seconds=ex.poll_seconds, stage_name=name)
    raise ExecutorError(f"executor {executor!r} is not supported; use one of {', '.join(EXECUTORS)}")


@contextlib.contextmanager
def _quiet_unless(condition, module: str) -> Iterator[None]:
    if not condition:
        logger.disable(module)
    try:
        yield
    finally:
        logger.enable(module)


def log_folders(executor) -> list[str]:
    """The stage's log folders that exist: datatrove's task logs (`_build/<stage>/logs`), then Slurm's job logs."""
    folders = [executor.logging_dir.resolve_paths("logs")] if executor.logging_dir.isdir("logs") else []
    slurm_logs = getattr(executor, "slurm_logs_folder", None)
    if slurm_logs and os.path.isdir(slurm_logs):
        folders.append(slurm_logs)
    return folders


def _missing(executor, name: str, where: str, jobs: list[str] | None = None) -> ExecutorError:
    missing = executor.get_incomplete_ranks()
    folders = log_folders(executor)
    logs = f"logs: {', '.join(folders)}" if folders else "no task started (no logs yet)"
    in_jobs = f" (Slurm jobs {', '.join(jobs)}: failed, cancelled or out of time)" if jobs else ""
    return ExecutorError(
        f"stage {name!r}: {len(missing)} of {executor.world_size} tasks did not finish on {where}{in_jobs}: tasks "
        f"{', '.join(map(str, missing[:10]))}{' …' if len(missing) > 10 else ''}; {logs}", stage=name, logs=folders)


# ----------------------------------------------------------------------------------------------------------- Ray


def ensure_ray(address: str | None, num_cpus: int) -> bool:
    """Attach to the cluster at `address` (or RAY_ADDRESS); without one start a local cluster of `num_cpus` CPUs.
    Returns True when this call started a local cluster. Worker output stays in the task logs, not the console."""
    import ray

    if ray.is_initialized():
        return False
    # the allocators importing mixture chose (mixture/__init__.py), set before a worker imports anything
    from mixture import ALLOCATOR_ENV

    allocators = {k: os.environ[k] for k in ALLOCATOR_ENV if k in os.environ}
    opts = {"log_to_driver": False, "runtime_env": {"env_vars": {"TQDM_DISABLE": "1", **allocators},
                                                    "worker_process_setup_hook": "mixture.pipelines.executors.ray_worker_setup"}}
    if address:
        ray.init(address=address, **opts)
        return False
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **opts)
    return True


def ray_worker_setup() -> None:
    """Runs in every Ray worker: datatrove's actor runs its tasks in a `multiprocess` pool; forked from the
    many-threaded worker, a pool process can inherit a held lock and hang after its task (seen here). Forkserver
    children start from a clean single-threaded process."""
    import multiprocess

    multiprocess.set_start_method("forkserver", force=True)


class RayStageExecutor(TaskSetup, RayPipelineExecutor):
    """datatrove's Ray executor that attaches to (or starts) the cluster, refuses tasks no node can hold, and fails
    the stage when a task did not finish (datatrove only logs it)."""

    def __init__(self, *, address: str | None, local_cpus: int, stage_name: str, **kwargs):
        super().__init__(**kwargs)
        self.address, self.local_cpus, self.stage_name = address, local_cpus, stage_name

    def run(self):
        import ray

        started_here = ensure_ray(self.address, self.local_cpus)
        need_mem = int(self.mem_per_cpu_gb * self.cpus_per_task * 2**30)
        nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
        if not any(r.get("CPU", 0) >= self.cpus_per_task and r.get("memory", 0) >= need_mem for r in nodes):
            largest = max(nodes, key=lambda r: r.get("CPU", 0), default={})
            msg = (f"stage {self.stage_name!r} asks {self.cpus_per_task} CPU and {need_mem / 2**30:.1f} GB per task, but "
                   f"no Ray node has that much (largest: {largest.get('CPU', 0):g} CPU, "
                   f"{largest.get('memory', 0) / 2**30:.1f} GB); lower execution.cpus_per_task / mem_per_cpu_gb")
            if started_here or not self.address:  # a local cluster does not grow
                raise ExecutorError(msg)
            logger.warning(msg + " (waiting for the autoscaler)")
        super().run()
        if self.get_incomplete_ranks():
            raise _missing(self, self.stage_name, "Ray")


# --------------------------------------------------------------------------------------------------------- Slurm


def default_env_command() -> str:
    """Activate the driver's virtual environment in every job (it must sit on a filesystem the nodes share)."""
    return f"source {sys.prefix}/bin/activate" if sys.prefix != sys.base_prefix else ""


def slurm_mem(gb: float) -> str:
    return f"{int(gb)}G" if float(gb).is_integer() else f"{round(gb * 1024)}M"


@dataclass
class Link:
    """A stage submitted in the current chain: its Slurm array jobs and helper (merge-stats) jobs."""

    executor: SlurmStageExecutor
    arrays: list[str]
    helpers: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.executor.get_incomplete_ranks()


class SlurmChain:
    """The stages one build submitted since its driver last waited, in order: each waits (`afterok`) on the one
    before. The build makes one and hands it to every stage's executor (it is not pickled into the jobs)."""

    def __init__(self):
        self.links: list[Link] = []

    def __repr__(self) -> str:  # executor.json lists the executor's attributes
        return f"SlurmChain({', '.join(link.executor.stage_name for link in self.links)})"


def squeue_jobs() -> dict[str, list[tuple[str, str]]] | None:
    """{array job id: [(state, reason), …]} for the user's queued jobs; None when squeue does not answer."""
    try:
        out = subprocess.run(["squeue", "--noheader", "--user", getpass.getuser(), "--format", "%F|%T|%r"],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.warning(f"squeue failed: {exc}")
        return None
    if out.returncode != 0:
        logger.warning(f"squeue failed: {out.stderr.strip()}")
        return None
    jobs: dict[str, list[tuple[str, str]]] = {}
    for line in out.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3:
            jobs.setdefault(parts[0], []).append((parts[1], parts[2]))
    return jobs


def _live(job_ids: list[str], queue: dict[str, list[tuple[str, str]]]) -> list[str]:
    """Jobs still queued or running that can still run (not stuck behind a failed dependency)."""
    return [j for j in job_ids if j in queue and not all(reason == NEVER for _, reason in queue[j])]


def scancel(job_ids: list[str]) -> None:
    if job_ids:
        subprocess.run(["scancel", *job_ids], capture_output=True, text=True, timeout=120)


class SlurmStageExecutor(SlurmArrays):
    """datatrove's Slurm executor, run from the build driver as a link of a chain of job arrays.

    Driver side: submit the stage's array (`afterok` on the previous link's arrays), record its job ids in
    `_build/<stage>/slurm_jobs.json`, and adopt a still-queued submission instead of submitting twice after a driver
    restart. At a barrier stage, wait until every link finished; a failed link cancels the rest of the chain.
    Inside a job (SLURM_ARRAY_TASK_ID set) it runs its tasks like datatrove's executor."""

    def __init__(self, *, chain: SlurmChain, barrier: bool, poll_seconds: float, stage_name: str, **kwargs):
        super().__init__(**kwargs)
        self.chain, self.barrier, self.poll_seconds, self.stage_name = chain, barrier, poll_seconds, stage_name

    def __getstate__(self) -> dict:
        """What datatrove pickles into `executor.pik` for the jobs: not the driver's chain (earlier executors)."""
        return {k: v for k, v in self.__dict__.items() if k != "chain"}

    # ---- sbatch script
    def get_sbatch_args(self, max_array: int = 1) -> dict:
        args = super().get_sbatch_args(max_array)
        args["mem-per-cpu"] = slurm_mem(self.mem_per_cpu_gb)
        args.update(self.extra_sbatch_args)  # the spec's sbatch_args win
        return {k: v for k, v in args.items() if v is not None and v != "None"}

    # ---- driver side
    def run(self):
        if "SLURM_ARRAY_TASK_ID" in os.environ:
            return super().run()
        chain = self.chain.links
        try:
            if self.get_incomplete_ranks():
                chain.append(self._adopt() or self._submit(chain))
            if self.barrier:
                wait_for_chain(chain, self.poll_seconds)
        except BaseException:
            chain.clear()
            raise
        if self.barrier:
            chain.clear()

    def _record(self) -> dict | None:
        if not self.logging_dir.isfile(SLURM_JOBS_FILE):
            return None
        with self.logging_dir.open(SLURM_JOBS_FILE, "r") as f:
            return json.load(f)

    def _adopt(self) -> Link | None:
        """The stage's earlier submission when it is still queued or running (the driver was restarted)."""
        rec = self._record()
        queue = squeue_jobs() if rec else None
        if not rec or queue is None:
            return None
        live = _live(rec["arrays"], queue)
        stuck = [j for j in rec["arrays"] + rec.get("helpers", []) if j in queue and j not in live]
        if not live:
            scancel(stuck)
            return None
        logger.warning(f"stage {self.stage_name!r}: waiting for its Slurm jobs {', '.join(live)} submitted earlier")
        return Link(self, live, rec.get("helpers", []))

    def _submit(self, chain: list[Link]) -> Link:
        link = Link(self, *self.submit(self._dependency(chain)))
        with self.logging_dir.open(SLURM_JOBS_FILE, "w") as f:
            json.dump({"stage": self.stage_name, "arrays": link.arrays, "helpers": link.helpers,
                       "depends": self.depends_job_id,
                       "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f)
        return link

    def _dependency(self, chain: list[Link]) -> str | None:
        """`afterok` on the previous link's array jobs that are still queued; none once that link is complete."""
        if not chain:
            return None
        queue = squeue_jobs()
        prev = chain[-1]
        if prev.complete:
            return None
        live = _live(prev.arrays, queue) if queue is not None else prev.arrays
        if not live:
            fail_chain(chain, queue or {})
        return ":".join(live)


def fail_chain(chain: list[Link], queue: dict) -> None:
    """Cancel what is left of the chain and raise, naming the first stage that did not finish."""
    leftover = [j for link in chain for j in link.arrays + link.helpers if j in queue]
    scancel(leftover)
    first = next(link for link in chain if not link.complete)
    err = _missing(first.executor, first.executor.stage_name, "Slurm", first.arrays)
    if leftover:
        behind = ", ".join(link.executor.stage_name for link in chain[chain.index(first) + 1:])
        err.args = (f"{err}. Cancelled the jobs queued behind it ({behind}): {', '.join(leftover)}",)
    raise err


def wait_for_chain(chain: list[Link], poll_seconds: float) -> None:
    """Wait until every link of the chain finished all its tasks (completion markers in its logging dir).

    The chain is broken when its first unfinished link has no array job that can still run (gone from squeue, or
    pending behind a failed dependency): everything after it waits on it (`afterok`) and would never start. That
    must hold for two polls in a row (squeue and the markers are read at different moments)."""
    misses = 0
    while True:
        queue = squeue_jobs()  # before the completion check: a job that left the queue has written its markers
        first = next((link for link in chain if not link.complete), None)
        if first is None:
            return
        if queue is not None:
            misses = 0 if _live(first.arrays, queue) else misses + 1
            if misses >= 2:
                fail_chain(chain, queue)
        time.sleep(poll_seconds)
