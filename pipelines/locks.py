"""A lock file on a folder (a store being built, a mixture being materialized) on any fsspec filesystem: one writer
at a time, a dead holder of this host taken over, --break-lock for the rest."""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from contextlib import contextmanager

import fsspec
from datatrove.utils.logging import logger


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


def _create_lock(fs, path: str, holder: dict) -> bool:
    """Create the lock file only if there is none. Local disks: the full file is hard-linked into place (atomic,
    never half-written); object stores: write if absent, then read back our token."""
    data = json.dumps(holder).encode()
    if "file" in fs.protocol or "local" in fs.protocol:
        tmp = f"{path}.{holder['token']}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        return True
    if fs.exists(path):
        return False
    with fs.open(path, "wb") as f:
        f.write(data)
    return (read_lock(fs, path) or {}).get("token") == holder["token"]


def read_lock(fs, path: str) -> dict | None:
    """The lock's holder; None if there is no lock; {"unreadable": reason} if it cannot be parsed."""
    try:
        with fs.open(path, "rb") as f:
            holder = json.loads(f.read() or b"null")
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return {"unreadable": f"{type(exc).__name__}: {exc}"}
    return holder if isinstance(holder, dict) else {"unreadable": "not a JSON object"}


@contextmanager
def folder_lock(folder: str, rel: str, what: str, error: type[Exception], break_lock: bool = False):
    """Hold FOLDER/`rel` (owner, host, pid, start) while a `what` ("build", "materialize") writes FOLDER; a second
    one refuses with `error` naming the holder. A lock left by a dead process of this host is taken over;
    `break_lock` takes over any lock."""
    fs, root = fsspec.core.url_to_fs(folder)
    path = f"{root.rstrip('/')}/{rel}"
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    me = {"owner": f"{os.environ.get('USER', 'user')}@{socket.gethostname()}", "host": socket.gethostname(),
          "pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "token": uuid.uuid4().hex}
    for _ in range(5):
        if _create_lock(fs, path, me):
            break
        holder = read_lock(fs, path)
        if holder is None:
            continue  # released meanwhile
        if "unreadable" in holder and not break_lock:
            raise error(f"{folder}: the {what} lock {rel} is unreadable ({holder['unreadable']}). "
                        f"If no {what} is running, rerun with --break-lock.")
        if "unreadable" not in holder and not lock_is_stale(holder) and not break_lock:
            raise error(
                f"{folder} is locked by another {what}: {holder.get('owner')} pid {holder.get('pid')} since "
                f"{holder.get('started')}. Wait for it to finish; if that {what} is dead, rerun with --break-lock."
            )
        why = "stale (no such process on this host)" if lock_is_stale(holder) else "broken with --break-lock"
        logger.warning(f"taking over the lock of {holder.get('owner')} pid {holder.get('pid')}: {why}")
        if read_lock(fs, path) == holder:  # still the same holder: nobody took it over meanwhile
            fs.rm(path)
    else:
        raise error(f"{folder}: could not take the {what} lock {rel}; another {what} is starting")
    try:
        yield
    finally:
        if (read_lock(fs, path) or {}).get("token") == me["token"]:
            fs.rm(path)
