"""How a stage names its files: one template per kind of file its tasks write, from which the steps' paths, the
readers' globs and the registry's globs (what a rerun task removes, what a redone stage loses) all follow."""

from __future__ import annotations

import re
from dataclasses import dataclass

RANK = "{rank}"  # in a file's name: the task that writes it, 5 digits
PART = "{part}"  # the partition (or prepared file) the file's rows are sent to, 5 digits; `{part:03d}`: 3 digits
_FIELD = re.compile(r"\{(rank|part)(?::0(\d)d)?\}")


def _fill(template: str, values: dict[str, int | str]) -> str:
    """`template` with each field replaced: a number zero-padded to the field's width, a string (a glob) as is."""
    def one(m: re.Match) -> str:
        if m.group(1) not in values:
            raise ValueError(f"{template!r}: no value for {{{m.group(1)}}}")
        value = values[m.group(1)]
        return value if isinstance(value, str) else f"{value:0{m.group(2) or 5}d}"
    return _FIELD.sub(one, template)


@dataclass(frozen=True)
class TaskFile:
    """Files of one kind a stage's tasks write: `name` in `folder` (a folder under the store; "": the store itself),
    `{rank}` in it the writing task and `{part}`, if any, the partition its rows are sent to (a task writes one file
    per partition). A shuffle's file names `{rank}` alone: one file per writer task, a byte range per partition
    (registry.SHUFFLES, pipelines/dedup/shuffle.py). A name may hold glob wildcards (the store's shards: any cell, a rotated file's prefix). A step
    is given where the folder is in its build (`root`) and takes every path from here."""

    folder: str
    name: str

    def __post_init__(self) -> None:
        if not _FIELD.search(self.name):
            raise ValueError(f"{self.name!r} names no task ({RANK}) and no partition ({PART})")
        if any(m.group(1) == "rank" and m.group(2) for m in _FIELD.finditer(self.name)):
            raise ValueError(f"{self.name!r}: {RANK} takes no width (a task is 5 digits, as its attempt marker)")

    @property
    def glob(self) -> str:
        """The files of task `{rank}` (left for the task to fill in), of every partition, under the store."""
        return _fill(f"{self.folder}/{self.name}" if self.folder else self.name, {"rank": RANK, "part": "*"})

    def path(self, root: str, rank: int | None = None, part: int | None = None) -> str:
        """The file task `rank` writes for partition `part`, in `root` (where `folder` is in this build)."""
        given = {k: v for k, v in (("rank", rank), ("part", part)) if v is not None}
        return f"{root}/{_fill(self.name, given)}"

    def every(self, root: str, part: int | None = None) -> str:
        """A glob, in `root`, of every task's file for partition `part` (of every partition when None)."""
        return f"{root}/{_fill(self.name, {'rank': '*', 'part': '*' if part is None else part})}"

    def rank_of(self, path: str) -> int:
        """The task that wrote `path`, one of these files, read from its name."""
        last = self.name.rsplit("/", 1)[-1]
        pattern, at = "", 0
        for m in _FIELD.finditer(last):
            pattern += re.escape(last[at:m.start()]) + (r"(\d+)" if m.group(1) == "rank" else r"\d+")
            at = m.end()
        found = re.fullmatch(pattern + re.escape(last[at:]), path.rsplit("/", 1)[-1])
        if found is None or not found.groups():
            raise ValueError(f"{path!r} is not a file {last!r} of a task")
        return int(found.group(1))


@dataclass(frozen=True)
class StageFiles:
    """What a stage writes under the store. `tasks`: each task's own files, which a rerun task first removes where
    an earlier attempt of it left them, by their `glob` (pipelines/runtime/attempts.py). `outputs`: the folders and
    files it writes as a whole (a one-task stage's, or files a rerun writes again under the same names), removed with
    the tasks' files when the stage is redone (pipelines/reuse.py)."""

    tasks: tuple[TaskFile, ...] = ()
    outputs: tuple[str, ...] = ()

    @property
    def task_globs(self) -> tuple[str, ...]:
        """Under the store, with `{rank}` for the task: the files a rerun of task `{rank}` removes first."""
        return tuple(f.glob for f in self.tasks)
