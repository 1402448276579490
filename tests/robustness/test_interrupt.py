"""Ctrl-C during a build: SIGINT to the build's process group (what a terminal sends) prints one line naming the
interrupted stage and how to resume, no worker traceback, exit 130; the same command then finishes the store."""

from __future__ import annotations

import os
import re
import shutil
import signal
from pathlib import Path

import pytest

from mixture.spec.load import load_spec
from mixture.stages import registry as stage_registry
from tests.robustness.helpers import fingerprint, run, start, wait_for

pytestmark = pytest.mark.slow
LINE = re.compile(r"^interrupted during stage '(\w+)'; run the same command again to resume \(finished tasks are "
                  r"skipped\)$")


def finished_tasks(store: Path, stage: str) -> int:
    folder = store / "_build" / stage / "completions"
    return len(list(folder.iterdir())) if folder.exists() else 0


def test_ctrl_c_names_the_stage_and_the_same_command_resumes(built_store, tmp_path: Path):
    shutil.copy(built_store.spec_path, tmp_path / "spec.yaml")
    store = tmp_path / "store"
    p = start(["build", "spec.yaml"], tmp_path)
    # a task of `prepare` has started (two tasks in a pool of two workers)
    assert wait_for(lambda: any((store / "_build" / "prepare").glob("logs/*")), p, timeout=120)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-3000:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and LINE.match(lines[0]), err[-3000:]
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err
    stage = LINE.match(lines[0]).group(1)
    spec = load_spec(tmp_path / "spec.yaml")
    tasks = stage_registry.get(stage).task_count(spec, spec.execution.tasks)
    assert finished_tasks(store, stage) < tasks  # it was still running
    assert not (store / "store.json").exists() and not (store / "_build" / "LOCK").exists()
    final = run(["build", "spec.yaml"], tmp_path)
    assert final.returncode == 0, final.stderr[-3000:]
    got, want = fingerprint(store), fingerprint(built_store.store)
    assert got["ids"] == want["ids"] and got["side"] == want["side"] and got["artifact"] == want["artifact"]
