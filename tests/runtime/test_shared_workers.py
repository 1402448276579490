"""The stages of one worker group run on the same local workers, forked once; other stages get workers of their own,
and no worker outlives the build."""

from __future__ import annotations

import functools
import json
import os
import signal
from pathlib import Path

import multiprocess
import pytest

from mixture.pipelines.runtime import datatrove_compat as compat
from mixture.pipelines.runtime.shared_workers import shared_workers
from mixture.stages import registry as stage_registry


def _pid(data, rank: int, world_size: int, stage: str = ""):
    Path(os.environ["PIDS_OUT"], f"{stage}-{rank}.json").write_text(json.dumps(os.getpid()))
    return data


def _run(tmp_path: Path, stage: str, group: str | None, tasks: int = 4) -> set[int]:
    """Run a stage of `tasks` tasks on 2 workers; the pids its tasks ran in."""
    compat.LocalExecutor([functools.partial(_pid, stage=stage)], tasks=tasks, workers=2, logging_dir=str(tmp_path / stage), start_method="fork",
                         worker_group=group).run()
    return {json.loads((tmp_path / f"{stage}-{r}.json").read_text()) for r in range(tasks)}


def test_a_group_s_stages_share_their_workers_and_others_fork_their_own(tmp_path: Path, monkeypatch):
    compat.quiet_datatrove_console()
    monkeypatch.setenv("PIDS_OUT", str(tmp_path))
    with shared_workers() as scope:
        a = _run(tmp_path, "a", "dedup")
        b = _run(tmp_path, "b", "dedup")
        assert scope.pool is not None and len(scope.forks) == 1
        workers = {p.pid for p in scope.pool._pool}
        c = _run(tmp_path, "c", None)  # outside the group: the group's pool is closed first
        assert scope.pool is None
        d = _run(tmp_path, "d", "dedup")
    # which worker takes which task is the pool's choice: one may take them all
    assert len(workers) == 2 and a | b <= workers and os.getpid() not in workers, (a, b, workers)
    assert not c & workers and not d & (workers | c), (workers, c, d)  # after another stage: a new pool
    assert scope.forks == [(("dedup", "fork"), 2), (("dedup", "fork"), 2)]
    assert not multiprocess.active_children()  # every worker has exited with its pool


def test_without_a_scope_each_stage_forks_its_own_workers(tmp_path: Path, monkeypatch):
    compat.quiet_datatrove_console()
    monkeypatch.setenv("PIDS_OUT", str(tmp_path))
    a = _run(tmp_path, "a", "dedup")
    b = _run(tmp_path, "b", "dedup")
    assert not a & b, (a, b)


def _killed_on_rank_1(data, rank: int, world_size: int):
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return data


def test_a_dead_worker_fails_its_stage_and_the_next_stage_gets_new_workers(tmp_path: Path, monkeypatch):
    compat.quiet_datatrove_console()
    monkeypatch.setenv("PIDS_OUT", str(tmp_path))
    with shared_workers() as scope:
        before = _run(tmp_path, "a", "dedup")
        with pytest.raises(compat.ExecutorError, match="killed by SIGKILL"):
            compat.LocalExecutor([_killed_on_rank_1], tasks=3, workers=2, logging_dir=str(tmp_path / "k"),
                                 start_method="fork", worker_group="dedup").run()
        assert scope.pool is None  # the broken pool was stopped, not kept for the next stage
        after = _run(tmp_path, "b", "dedup")
    assert not before & after and after, (before, after)
    assert not multiprocess.active_children()


def test_an_error_in_the_scope_stops_the_workers(tmp_path: Path, monkeypatch):
    compat.quiet_datatrove_console()
    monkeypatch.setenv("PIDS_OUT", str(tmp_path))
    with pytest.raises(RuntimeError), shared_workers():
        _run(tmp_path, "a", "dedup")
        raise RuntimeError("a failure between stages")
    assert not multiprocess.active_children()


def test_a_build_runs_its_dedup_stages_on_one_set_of_workers(built_store):
    """The small test build (2 tasks, 2 workers): every dedup stage that ran on a pool ran in the same worker
    processes, none of which ran `prepare`, `sample` or `assign`."""
    def pids(name: str) -> set[int]:
        folder = built_store.store / "_build" / name
        return {json.loads(p.read_text())["pid"] for p in folder.glob("**/usage/*.json")}

    grouped = [s.name for s in stage_registry.STAGES if s.worker_group == stage_registry.DEDUP_GROUP]
    assert "duplicate_ids" in grouped and "minhash_verify" in grouped
    driver = pids("fit")  # one task: run in the build's own process
    shared = set().union(*(pids(n) for n in grouped)) - driver
    assert 1 <= len(shared) <= 2, {n: pids(n) for n in grouped}  # a pool per stage: up to 2 for each stage
    for other in ("prepare", "sample", "assign"):
        assert pids(other) and not pids(other) & (shared | driver), (other, pids(other), shared)
