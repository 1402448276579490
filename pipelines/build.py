"""Run a build: validate, lock the store, run each stage with a datatrove executor, finalize, publish."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

import fsspec
import pyarrow.parquet as pq
from datatrove.utils.logging import logger

from mixture.spec.load import load_spec, resolve_uri, spec_dir
from mixture.store import layout
from pipelines.executors import make_executor, quiet_datatrove_console
from pipelines.stages import BuildContext, Stage, assign_stage, dedup_stages, fit_stage, sample_stage


class BuildError(RuntimeError):
    pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_is_stale(holder: dict) -> bool:
    """A lock taken on this host by a process that no longer exists (e.g. a build killed with SIGKILL)."""
    return holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int) and not _pid_alive(holder["pid"])


@contextmanager
def store_lock(store: str, break_lock: bool = False):
    """Hold `_build/LOCK` (owner, host, pid, start) for the build; a second build refuses with a clear message."""
    fs, root = fsspec.core.url_to_fs(store)
    path = f"{root.rstrip('/')}/{layout.LOCK_FILE}"
    if fs.exists(path):
        with fs.open(path) as f:
            holder = json.load(f)
        if lock_is_stale(holder):
            logger.warning(f"taking over the stale lock of pid {holder['pid']} (no such process on this host)")
        elif not break_lock:
            raise BuildError(
                f"{store} is locked by another build: {holder.get('owner')} pid {holder.get('pid')} since "
                f"{holder.get('started')}. If that build is dead, rerun with --break-lock."
            )
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    with fs.open(path, "w") as f:
        json.dump({"owner": f"{os.environ.get('USER', 'user')}@{socket.gethostname()}", "host": socket.gethostname(),
                   "pid": os.getpid(),
                   "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f)
    try:
        yield
    finally:
        if fs.exists(path):
            fs.rm(path)


def count_rows(folders: list[str]) -> int:
    total = 0
    for folder in folders:
        fs, root = fsspec.core.url_to_fs(folder)
        for p in fs.glob(f"{root}/*.parquet"):
            with fs.open(p, "rb") as f:
                total += pq.ParquetFile(f).metadata.num_rows
    return total


def _completed(ctx: BuildContext, stage: Stage) -> int:
    fs, root = fsspec.core.url_to_fs(ctx.at(f"{layout.stage_dir(stage.name)}/completions"))
    try:
        return len(fs.ls(root, detail=False))
    except FileNotFoundError:
        return 0


def run_stage(ctx: BuildContext, stage: Stage, executor: str, workers: int, on_progress: Callable[[int], None]) -> None:
    done = threading.Event()

    def poll() -> None:
        while not done.wait(0.5):
            on_progress(_completed(ctx, stage))

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    try:
        make_executor(ctx, stage, executor, workers).run()
    except Exception as exc:
        raise BuildError(
            f"stage {stage.name!r} failed: {type(exc).__name__}: {exc}. Logs: {ctx.at(layout.stage_dir(stage.name))}/logs; "
            "fix the cause and rerun the same command: finished tasks are skipped."
        ) from exc
    finally:
        done.set()
        t.join()
    on_progress(_completed(ctx, stage))


def build(spec_path: str, *, executor: str | None = None, tasks: int | None = None, workers: int | None = None,
          break_lock: bool = False, keep_work: bool = False, progress: bool = True) -> dict:
    """Build the store of a spec; returns the store artifact. A finished store with the same spec is left as is."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from pipelines.finalize import finalize, spec_hash

    spec = load_spec(spec_path)
    base = spec_dir(spec_path)
    store = resolve_uri(spec.store.uri, base).rstrip("/")
    ex = spec.execution
    n_tasks = tasks or ex.tasks
    n_workers = workers or (ex.workers if ex.workers > 0 else (os.cpu_count() or 1))
    ctx = BuildContext(spec, base, store, n_tasks)
    fs, root = fsspec.core.url_to_fs(store)
    if fs.exists(f"{root}/{layout.STORE_JSON}"):
        with fs.open(f"{root}/{layout.STORE_JSON}") as f:
            artifact = json.load(f)
        if artifact["spec"]["hash"] == spec_hash(ctx):
            return artifact
        raise BuildError(f"{store} holds a finished store of another spec (hash {artifact['spec']['hash'][:12]}); "
                         "point store.uri at a new location or delete the old store")
    quiet_datatrove_console()
    with store_lock(store, break_lock), Progress(
        TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TextColumn("tasks"),
        TimeElapsedColumn(), disable=not progress, transient=False,
    ) as bar:
        def run(stage: Stage) -> None:
            task = bar.add_task(stage.name, total=stage.tasks)
            run_stage(ctx, stage, executor or ex.executor, n_workers, lambda n: bar.update(task, completed=n))

        for stage in dedup_stages(ctx):
            run(stage)
        total = count_rows(ctx.kept_folders)
        if total == 0:
            raise BuildError("no document survived cleaning, filtering and dedup; check the sources and filters")
        run(sample_stage(ctx, min(1.0, spec.partition.clusters.sample_docs / total)))
        run(fit_stage(ctx))
        run(assign_stage(ctx))
        task = bar.add_task("finalize", total=1)
        artifact = finalize(ctx, str(spec_path))
        bar.update(task, completed=1)
    if not keep_work:
        fs.rm(f"{root}/{layout.WORK_DIR}", recursive=True)
    return artifact
