"""A task's local scratch folders (spills, spools, sorted runs, DuckDB's temporary files), all under one folder per
process tree, which its process removes at exit and the next build on the host removes if that process was killed."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

LOCK = ".lock"  # in a process tree's folder, locked (flock) while any of its processes lives

_root: list[str] = []  # [folder] of this process tree: made by its first process that asks, inherited by its forks


def scratch_parent() -> Path:
    """Where the process trees' folders are: `mixture-scratch-<uid>` in the temporary folder (TMPDIR)."""
    return Path(tempfile.gettempdir()) / f"mixture-scratch-{os.getuid()}"


def _held(folder: Path) -> bool:
    """Whether a live process holds `folder`'s lock. A lock is let go when the last process holding it dies, kill -9
    included, and is seen across PID namespaces on the host, where a pid is not."""
    try:
        fd = os.open(folder / LOCK, os.O_RDWR)
    except FileNotFoundError:  # its process has not locked it yet, or is removing it
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing lets go of a lock just taken
    return False


def sweep(parent: Path) -> list[Path]:
    """Remove the folders under `parent` whose process tree has ended without removing them (killed, or out of
    memory): what a preempted task spilled would otherwise fill the node's disk. Returns them."""
    gone = []
    with contextlib.suppress(FileNotFoundError):
        for folder in parent.iterdir():
            if folder.is_dir() and (folder / LOCK).exists() and not _held(folder):
                shutil.rmtree(folder, ignore_errors=True)
                gone.append(folder)
    return gone


def scratch_root() -> str:
    """This process tree's scratch folder: made (with its lock held, and the folders of ended trees swept) by the
    first process that asks, removed at its exit. A driver asks before it forks workers: a pool worker exits without
    running `atexit` (terminated with its pool), so its folders go with the driver's."""
    if not _root:
        parent = scratch_parent()
        parent.mkdir(parents=True, exist_ok=True)
        sweep(parent)
        folder = tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=parent)
        fd = os.open(os.path.join(folder, LOCK + ".new"), os.O_RDWR | os.O_CREAT, 0o600)  # open for life, and in forks
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(os.path.join(folder, LOCK + ".new"), os.path.join(folder, LOCK))  # a sweep sees it locked only
        atexit.register(_remove, folder, os.getpid())
        _root.append(folder)
    return _root[0]


def _remove(folder: str, pid: int) -> None:
    if os.getpid() == pid:  # a forked child that runs atexit leaves its parent's folder alone
        shutil.rmtree(folder, ignore_errors=True)


def scratch_folder(prefix: str) -> str:
    """A new folder in this process tree's scratch folder (the caller removes it; else it goes with the tree's)."""
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=scratch_root())


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[str]:
    """A scratch folder for the `with` block, removed after it."""
    folder = scratch_folder(prefix)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
