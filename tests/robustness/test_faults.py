"""Disk full and permission errors mid-build: a clear message, a resumable state, then the same store.

Tests run as root, where a read-only mode does not stop writes: the disk-full error comes from Linux's /dev/full
(every write fails with ENOSPC) and the permission error from an immutable directory (`chattr +i`, EPERM even for
root)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mixture.accounting import StoreReader, audit
from tests.robustness.helpers import fingerprint, kill_group, run, start, wait_for

pytestmark = pytest.mark.slow


def chattr(flag: str, path: Path) -> bool:
    return shutil.which("chattr") is not None and subprocess.run(
        ["chattr", flag, str(path)], capture_output=True).returncode == 0


def final_message(stderr: str) -> str:
    """The build's own closing message; above it one line per datatrove error, whose traceback stays in the task's
    log (it printed 200-630 lines of tracebacks first)."""
    assert "build failed" in stderr, stderr[-3000:]
    msg = " ".join(stderr[stderr.rindex("build failed"):].split())
    assert "Traceback" not in stderr, stderr[-3000:]
    assert len(stderr[:stderr.rindex("build failed")].splitlines()) <= 10, stderr[-3000:]
    return msg


def assert_resumable(store: Path, stage: str) -> None:
    """No store.json ("building"), the lock released, the finished tasks of `stage`'s predecessors kept."""
    assert not (store / "store.json").exists()
    assert not (store / "_build" / "LOCK").exists()
    assert audit(StoreReader(str(store))).status == "building"
    assert (store / "_build" / stage / "logs").is_dir()


def test_disk_full_then_read_only_store_then_resume(built_store, tmp_path: Path):
    work = tmp_path / "faults"
    work.mkdir()
    shutil.copy(built_store.spec_path, work / "spec.yaml")
    store = work / "store"
    probe = work / "probe"
    probe.mkdir()
    if not chattr("+i", probe):
        pytest.skip("chattr +i is not supported on this filesystem (no way to refuse a write to root here)")
    chattr("-i", probe)

    # 1. disk full: task 0 of `prepare` writes its record tally through a name that points at /dev/full
    tally = store / "_build" / "work" / "tally"
    tally.mkdir(parents=True)
    (tally / "00000.json.tmp").symlink_to("/dev/full")
    r = run(["build", "spec.yaml"], work)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    msg = final_message(r.stderr)
    assert "stage 'prepare' failed" in msg and "No space left on device" in msg, msg
    assert "rerun the same command" in msg and "_build/prepare/logs" in msg, msg
    assert_resumable(store, "prepare")
    assert (store / "_build" / "prepare" / "completions" / "00001").exists()  # the other task's work is kept
    (tally / "00000.json.tmp").unlink()

    # 2. permission: the store folder becomes immutable while the build runs (after `fit`, before `assign`
    #    creates its cell folders)
    p = start(["build", "spec.yaml"], work)
    try:
        assert wait_for(lambda: (store / "_build" / "fit" / "completions" / "00000").exists(), p, timeout=180)
        assert chattr("+i", store)
        out, err = p.communicate(timeout=180)
    except BaseException:
        kill_group(p)
        raise
    finally:
        chattr("-i", store)
    assert p.returncode == 1, out[-2000:] + err[-2000:]
    msg = final_message(err)
    assert "stage 'assign' failed" in msg and "Operation not permitted" in msg and "rerun" in msg, msg
    assert not (store / "_build" / "assign" / "completions").exists() or \
        len(list((store / "_build" / "assign" / "completions").iterdir())) < 2
    assert (store / "_build" / "fit" / "completions" / "00000").exists()
    assert not (store / "store.json").exists() and not (store / "_build" / "LOCK").exists()

    # 3. the cause fixed, the same command finishes the build: identical to an uninterrupted one
    r = run(["build", "spec.yaml"], work)
    assert r.returncode == 0, r.stderr[-3000:]
    got, want = fingerprint(store), fingerprint(built_store.store)
    assert got == want
    assert json.loads((store / "store.json").read_text())["counters"]["records_out"] > 0
