"""Local worker processes that the stages of one group share (StageDef.worker_group): forked once for the group."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

Key = tuple[str, str]  # worker group, start method


@dataclass
class SharedWorkers:
    """The pool a scope holds: at most one, of the group whose stage ran last. A stage of another group, or of
    none, closes it first, so a pool's workers never outlive their group's stages (each ends with what it loaded:
    a stage outside the group starts its own workers, as before)."""

    key: Key | None = None
    size: int = 0
    pool: object | None = None
    forks: list[tuple[Key, int]] = field(default_factory=list)  # every pool it made (key, workers), in order

    def get(self, key: Key, size: int, fork: Callable[[int], object]) -> object:
        """A live pool of `key` with at least `size` workers: the one held, or one forked by `fork(size)`."""
        if self.key != key or self.size < size:
            self.close()
            self.pool, self.key, self.size = fork(size), key, size
            self.forks.append((key, size))
        return self.pool

    def close(self) -> None:
        """Let the held pool's workers finish and exit."""
        self._release(terminate=False)

    def discard(self) -> None:
        """Stop the held pool's workers now (after a failed or interrupted stage: a worker may be dead or busy)."""
        self._release(terminate=True)

    def _release(self, terminate: bool) -> None:
        pool, self.pool, self.key, self.size = self.pool, None, None, 0
        if pool is not None:
            if terminate:
                pool.terminate()
            else:
                pool.close()
            pool.join()


_scopes: list[SharedWorkers] = []


@contextlib.contextmanager
def shared_workers() -> Iterator[SharedWorkers]:
    """Within it, a local executor runs the stages of one worker group on one pool: the workers are forked once,
    and what a worker opens on its first task (its DuckDB instance, ~20-90 ms; libraries' first calls) serves every
    stage of the group. On leaving it the pool is closed (terminated on an error)."""
    scope = SharedWorkers()
    _scopes.append(scope)
    try:
        yield scope
    except BaseException:
        scope.discard()
        raise
    else:
        scope.close()
    finally:
        _scopes.remove(scope)


def current() -> SharedWorkers | None:
    """The innermost open scope, or None (a stage run on its own: its executor forks its own pool)."""
    return _scopes[-1] if _scopes else None


def end_other_groups(group: str | None) -> None:
    """Close the held pool unless it is `group`'s: a stage outside the group (run on its own pool, or in this
    process) starts after the group's workers have exited."""
    scope = current()
    if scope is not None and scope.key is not None and scope.key[0] != group:
        scope.close()
