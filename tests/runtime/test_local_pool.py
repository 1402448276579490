"""The local executor's pool: a worker that dies mid-task fails the stage with one message instead of hanging it,
and a worker collects none of the garbage it inherited from the driver."""

from __future__ import annotations

import gc
import json
import os
import signal
from pathlib import Path

import pytest

from mixture.pipelines.runtime import datatrove_compat as compat


def _killed_on_rank_1(data, rank: int, world_size: int):
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does
    return data


def _alarm(signum, frame):
    raise TimeoutError("the stage hung after its worker died")


def test_a_worker_killed_mid_task_fails_the_stage_and_names_the_signal(tmp_path: Path):
    compat.quiet_datatrove_console()
    ex = compat.LocalExecutor([_killed_on_rank_1], tasks=3, workers=2, logging_dir=str(tmp_path),
                              start_method="fork")
    before = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(120)  # a pool never hands back a dead worker's task: the old wait hung here for good
    try:
        with pytest.raises(compat.ExecutorError) as err:
            ex.run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    text = str(err.value)
    assert "(killed by SIGKILL: most often the kernel's out-of-memory killer)" in text and "rerun" in text, text
    assert "1" in text.split(" while task")[1].split(" had")[0], text
    assert 1 in ex.get_incomplete_ranks()


def _freeze_count(data, rank: int, world_size: int):
    Path(os.environ["FREEZE_OUT"], f"{rank}.json").write_text(json.dumps(gc.get_freeze_count()))
    return data


def test_a_pool_worker_freezes_what_it_inherited(tmp_path: Path, monkeypatch):
    """gc.freeze() in the worker: its collections leave the driver's objects (and their finalizers) alone."""
    monkeypatch.setenv("FREEZE_OUT", str(tmp_path))
    ex = compat.LocalExecutor([_freeze_count], tasks=2, workers=2, logging_dir=str(tmp_path / "logs"),
                              start_method="fork")
    ex.run()
    counts = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(2)]
    assert all(c > 1000 for c in counts), counts  # every object the driver held when the worker was forked


LOADED: dict[str, int] = {}  # what PreloadedStep loaded, and in which process


class PreloadedStep:
    """A step with a per-process resource: `preload()` loads it, a task uses what is there or loads it itself."""

    def preload(self) -> None:
        LOADED.setdefault("resource", os.getpid())

    def __call__(self, data, rank: int, world_size: int):
        loader = LOADED.setdefault("resource", os.getpid())
        Path(os.environ["PRELOAD_OUT"], f"{rank}.json").write_text(json.dumps([loader, os.getpid()]))
        return data


def test_a_pool_worker_inherits_what_the_driver_preloaded(tmp_path: Path, monkeypatch):
    """The driver loads each step's per-process resources before it forks the pool (pipelines/runtime/preload.py):
    no worker loads them again on its first task."""
    monkeypatch.setenv("PRELOAD_OUT", str(tmp_path))
    LOADED.clear()
    try:
        ex = compat.LocalExecutor([PreloadedStep()], tasks=3, workers=2, logging_dir=str(tmp_path / "logs"),
                                  start_method="fork")
        ex.run()
        seen = [json.loads((tmp_path / f"{r}.json").read_text()) for r in range(3)]
        assert all(loader == os.getpid() != worker for loader, worker in seen), seen
    finally:
        LOADED.clear()
