"""`_build/LOCK`: owner, host, pid and start time; a second build refuses; stale and broken locks are taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from mixture.pipelines.build import BuildError, store_lock


def lock_of(store: Path) -> Path:
    return store / "_build" / "LOCK"


def write_lock(store: Path, **holder) -> dict:
    lock_of(store).parent.mkdir(parents=True, exist_ok=True)
    holder = {"owner": "ana@elsewhere", "host": "elsewhere", "pid": 4242, "started": "2026-11-30T08:00:00Z", **holder}
    lock_of(store).write_text(json.dumps(holder))
    return holder


def test_lock_records_owner_pid_and_start_and_is_released(tmp_path: Path):
    with store_lock(str(tmp_path)):
        holder = json.loads(lock_of(tmp_path).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        assert holder["owner"].endswith("@" + socket.gethostname()) and holder["started"].endswith("Z")
        with pytest.raises(BuildError) as second, store_lock(str(tmp_path)):
            pass
        assert f"pid {os.getpid()}" in str(second.value) and holder["started"] in str(second.value)
        assert json.loads(lock_of(tmp_path).read_text()) == holder  # the refused build leaves the lock alone
    assert not lock_of(tmp_path).exists()
    assert not list(lock_of(tmp_path).parent.glob("LOCK*"))  # no temporary file left either


def test_live_lock_of_another_host_refuses_until_broken(tmp_path: Path):
    holder = write_lock(tmp_path)
    with pytest.raises(BuildError) as refused, store_lock(str(tmp_path)):
        pass
    msg = str(refused.value)
    assert "locked by another build: ana@elsewhere pid 4242 since 2026-11-30T08:00:00Z" in msg and "--break-lock" in msg
    assert json.loads(lock_of(tmp_path).read_text()) == holder
    with store_lock(str(tmp_path), break_lock=True):
        assert json.loads(lock_of(tmp_path).read_text())["pid"] == os.getpid()
    assert not lock_of(tmp_path).exists()


def test_stale_lock_of_a_dead_local_process_is_taken_over(tmp_path: Path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    write_lock(tmp_path, host=socket.gethostname(), pid=dead.pid)
    with store_lock(str(tmp_path)):
        assert json.loads(lock_of(tmp_path).read_text())["pid"] == os.getpid()


def test_live_local_process_lock_is_not_stale(tmp_path: Path):
    alive = subprocess.Popen(["sleep", "30"])
    try:
        write_lock(tmp_path, host=socket.gethostname(), pid=alive.pid)
        with pytest.raises(BuildError, match=f"pid {alive.pid}"), store_lock(str(tmp_path)):
            pass
    finally:
        alive.kill()
        alive.wait()


def test_unreadable_lock_names_the_file_and_can_be_broken(tmp_path: Path):
    lock_of(tmp_path).parent.mkdir(parents=True)
    lock_of(tmp_path).write_text('{"owner": "half-writ')
    with pytest.raises(BuildError, match="LOCK is unreadable"), store_lock(str(tmp_path)):
        pass
    with store_lock(str(tmp_path), break_lock=True):
        assert json.loads(lock_of(tmp_path).read_text())["pid"] == os.getpid()


def test_lock_on_an_fsspec_store(tmp_path: Path):
    uri = "memory://robustness-lock/store"
    with store_lock(uri), pytest.raises(BuildError, match="locked by another build"), store_lock(uri):
        pass
    import fsspec

    assert not fsspec.filesystem("memory").exists("/robustness-lock/store/_build/LOCK")


def test_finished_store_clears_the_stale_lock_of_a_build_killed_after_publishing(built_store, tmp_path: Path):
    """Killed between writing store.json and releasing its lock: the rerun finds the store done and removes the
    dead build's lock (and work files); a live build's lock would be left alone."""
    import shutil

    from mixture.pipelines.build import build

    shutil.copy(built_store.spec_path, tmp_path / "spec.yaml")
    shutil.copytree(built_store.store, tmp_path / "store")
    (tmp_path / "store" / "_build" / "work").mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    write_lock(tmp_path / "store", host=socket.gethostname(), pid=dead.pid)
    assert build(str(tmp_path / "spec.yaml"), progress=False).counters == built_store.artifact.counters
    assert not lock_of(tmp_path / "store").exists() and not (tmp_path / "store" / "_build" / "work").exists()
    holder = write_lock(tmp_path / "store", host=socket.gethostname(), pid=os.getpid())
    build(str(tmp_path / "spec.yaml"), progress=False)
    assert json.loads(lock_of(tmp_path / "store").read_text()) == holder
