"""Shared helpers of the robustness tests: run the CLI as a subprocess, kill it, fingerprint a store."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
MIXTURE = str(Path(sys.executable).parent / "mixture")
VOLATILE = ("created",)  # store.json keys that differ between two builds of the same spec


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    """`mixture ARGS` in its own process group (so the whole tree can be killed at once), with SIGINT at its
    default: a child inherits an ignored SIGINT, and Python then installs no KeyboardInterrupt handler, so a test
    process that ignores it (a test runner's worker, code run earlier in it) would make Ctrl-C do nothing."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.Popen([MIXTURE, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    p = start(args, cwd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        raise
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def kill_group(p: subprocess.Popen) -> None:
    """SIGKILL the process and every child (datatrove's forkserver and pool workers)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.communicate()
    wait_group_gone(p.pid)


def wait_group_gone(pgid: int, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def wait_for(cond: Callable[[], bool], p: subprocess.Popen | None, timeout: float = 120, step: float = 0.02) -> bool:
    """Poll `cond` until true (True) or until the process ends first / the time runs out (False). `timeout` is a
    deadline only to stop waiting (a build that never gets there fails the test instead of hanging it), not a
    timing assertion: it is far above what the event takes on a loaded machine."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        if p is not None and p.poll() is not None:
            return cond()
        time.sleep(step)
    return False


def cell_ids(store: Path) -> dict[str, list[str]]:
    """{cell path: sorted ids} over the files the ledgers list."""
    out = {}
    for ledger_path in sorted(store.glob("cluster=*/quality=*/_ledger.json")):
        ledger = json.loads(ledger_path.read_text())
        ids = []
        for s in ledger["shards"]:
            ids += pq.read_table(ledger_path.parent / s["path"], columns=["id"]).column("id").to_pylist()
        out[str(ledger_path.parent.relative_to(store))] = sorted(ids)
    return out


def side_rows(store: Path) -> dict[str, list[tuple]]:
    """Sorted (source, origin or file:record, reason) rows of _quarantine/ and every _dropped/<reason>/."""
    out = {}
    for folder in [store / "_quarantine", *sorted((store / "_dropped").glob("*"))]:
        rows = []
        for f in sorted(folder.glob("*.parquet")):
            t = pq.read_table(f).to_pylist()
            rows += [(r["source"], r.get("origin") or f"{r['file']}:{r['record']}", r["reason"]) for r in t]
        out[folder.name] = sorted(rows)
    return out


def fingerprint(store: Path) -> dict:
    """What must be identical between an interrupted-and-resumed build and an uninterrupted one."""
    art = json.loads((store / "store.json").read_text())
    for key in VOLATILE:
        art.pop(key, None)
    art["spec"].pop("path", None)
    ledgers = {str(p.parent.relative_to(store)): json.loads(p.read_text())
               for p in sorted(store.glob("cluster=*/quality=*/_ledger.json"))}
    return {"artifact": art, "ledgers": ledgers, "ids": cell_ids(store), "side": side_rows(store),
            "cell_files": sorted(str(p.relative_to(store)) for p in store.glob("cluster=*/quality=*/*"))}


def partial_parquet(path: Path) -> bool:
    try:
        pq.ParquetFile(path).metadata  # noqa: B018
    except Exception:  # noqa: BLE001
        return True
    return False
