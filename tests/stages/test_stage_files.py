"""Each stage's files are named once, by the templates of its StageFiles (mixture/stages/files.py): the globs a rerun
task removes are derived from them, and a file a task writes (its template's path) is what its glob matches."""

from __future__ import annotations

import itertools
import re
from fnmatch import fnmatch

import pytest

from mixture.stages import registry as stage_registry
from mixture.stages.files import RANK, StageFiles, TaskFile

TASK_FILES = [(s.name, f) for s in stage_registry.STAGES for f in s.files.tasks]
STORE = "/data/store"


def folder(file: TaskFile) -> str:
    """Where the file's folder is in a build of STORE."""
    return f"{STORE}/{file.folder}" if file.folder else STORE


def written(file: TaskFile, rank: int, part: int) -> str:
    """The file task `rank` writes for partition `part` (a shard: in cell c07q3, rotated once)."""
    return file.path(folder(file), rank, part).replace("cluster=*/quality=*/*", "cluster=07/quality=3/001_")


def test_every_task_glob_is_its_template_with_any_partition():
    """The registry's per-task globs (ClearTaskFiles, reuse.clear_stage) are the templates, `{part}` → `*` (any
    width), `{rank}` kept for the task; no stage lists a glob of its own."""
    for s in stage_registry.STAGES:
        assert isinstance(s.files, StageFiles)
        assert s.files.task_globs == tuple(f.glob for f in s.files.tasks)
        for f in s.files.tasks:
            template = f"{f.folder}/{f.name}" if f.folder else f.name
            assert f.glob == re.sub(r"\{part(:0\dd)?\}", "*", template), (s.name, f)
            assert f.glob.count(RANK) == 1, (s.name, f)


@pytest.mark.parametrize(("stage", "file"), TASK_FILES, ids=[f"{n}:{f.name}" for n, f in TASK_FILES])
def test_a_tasks_files_match_its_glob_alone(stage, file):
    """Task r's file for any partition matches the glob with r filled in (what its rerun removes), not another
    task's glob; and the readers' globs (`every`) find it."""
    for rank, part in itertools.product((0, 3, 12345), (0, 7, 99)):
        path = written(file, rank, part)
        assert fnmatch(path, f"{STORE}/{file.glob.replace(RANK, f'{rank:05d}')}"), (path, file.glob)
        assert not fnmatch(path, f"{STORE}/{file.glob.replace(RANK, f'{rank + 1:05d}')}"), (path, file.glob)
        assert fnmatch(path, file.every(folder(file))) and fnmatch(path, file.every(folder(file), part)), path
        if "*" not in file.name:
            assert file.rank_of(path) == rank


def test_a_rerun_task_removes_no_other_files():
    """No task file of one kind matches the glob of another (of any stage): a rerun task removes its own alone."""
    for (s1, f1), (s2, f2) in itertools.permutations(TASK_FILES, 2):
        assert not fnmatch(written(f1, 3, 7), f"{STORE}/{f2.glob.replace(RANK, '00003')}"), (s1, f1, s2, f2)


def test_outputs_are_folders_or_files_under_the_store():
    for s in stage_registry.STAGES:
        for out in s.files.outputs:
            assert out and not out.startswith("/") and RANK not in out and "*" not in out, (s.name, out)


def test_a_template_fills_its_fields():
    sig = TaskFile("_build/work/mh_sigs", f"bucket_{{part:03d}}/{RANK}.minhash.sig")
    assert sig.path("/s", 3, 7) == "/s/bucket_007/00003.minhash.sig"
    assert sig.every("/s", 7) == "/s/bucket_007/*.minhash.sig"
    assert sig.every("/s") == "/s/bucket_*/*.minhash.sig"
    assert sig.glob == "_build/work/mh_sigs/bucket_*/{rank}.minhash.sig"
    assert sig.rank_of("/s/bucket_007/00003.minhash.sig") == 3
    with pytest.raises(ValueError, match="no value for {part}"):
        sig.path("/s", 3)
    with pytest.raises(ValueError, match="names no task"):
        TaskFile("x", "all.json")
    with pytest.raises(ValueError, match="takes no width"):
        TaskFile("x", "{rank:03d}.json")
