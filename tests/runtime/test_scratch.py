"""Local scratch folders: one per process tree, removed at its exit, and by the next process on the host when its
process was killed (kill -9, preemption, the out-of-memory killer) — never while one of its processes lives."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

TREE = """
import os, sys, time
from mixture.pipelines.runtime.scratch import scratch_folder
folder = scratch_folder("gather-")
open(os.path.join(folder, "spilled"), "w").write("x" * 1000)
print(folder, flush=True)
time.sleep(float(sys.argv[1]))
"""

WORKERS = """
import os, sys
from mixture.pipelines.runtime import datatrove_compat as compat
from mixture.pipelines.runtime.duckdb_connection import duckdb_connection

def step(data, rank, world_size):
    with duckdb_connection() as con:
        folder = con.execute("SELECT current_setting('temp_directory')").fetchone()[0]
        open(os.path.join(folder, "spilled"), "w").write("x")  # as a spill the task could not remove
    return data

compat.quiet_datatrove_console()
compat.LocalExecutor([step], tasks=4, workers=2, logging_dir=sys.argv[1], start_method="fork").run()
from mixture.pipelines.runtime.scratch import scratch_parent
print(*sorted(p.name for p in scratch_parent().iterdir()))
"""


def _env(tmp: Path) -> dict:
    return {**os.environ, "TMPDIR": str(tmp)}


def _start(tmp: Path, seconds: float) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", TREE, str(seconds)], stdout=subprocess.PIPE, text=True,
                            env=_env(tmp))
    return proc, Path(proc.stdout.readline().strip())


def test_a_killed_process_s_scratch_goes_with_the_next_process_and_a_live_one_s_stays(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    killed, spilled = _start(tmp, 60)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert (spilled / "spilled").exists()  # kill -9 ran no cleanup
    live, kept = _start(tmp, 60)  # its start sweeps the killed one's
    try:
        assert not spilled.parent.exists() and (kept / "spilled").exists()
        done, own = _start(tmp, 0)  # another start while `live` runs leaves its folder alone
        assert done.wait() == 0 and (kept / "spilled").exists()
        assert not own.parent.exists()  # a process that ends removes its own
    finally:
        live.kill()
        live.wait()


def test_pool_workers_scratch_goes_with_the_driver(tmp_path):
    """A pool worker exits without `atexit` (terminated with its pool): its DuckDB instance's spill folder is inside
    the driver's, which the driver removes at its exit (before: a folder left per worker of every pool)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = subprocess.run([sys.executable, "-c", WORKERS, str(tmp_path / "logs")], capture_output=True, text=True,
                         env=_env(tmp), check=True).stdout.split()
    assert len(out) == 1, out  # while the driver runs: its one folder, the workers' inside it
    assert [p.name for p in tmp.iterdir() if p.name.startswith("mixture-")] == [f"mixture-scratch-{os.getuid()}"]
    assert not list((tmp / f"mixture-scratch-{os.getuid()}").iterdir())  # and nothing after it
