"""Which finished work a build may reuse: a stage's tasks are reused only while its key (mixture/stages/keys.py) is
the one on storage; otherwise the build stops before any work, naming what changed, or (`--redo-changed`) clears
the stages whose key changed and every stage after them, so a store never mixes work of two specs or inputs."""

from __future__ import annotations

from dataclasses import dataclass

import fsspec
from datatrove.utils.logging import logger

from mixture.pipelines.context import BuildContext, BuildError
from mixture.spec.canonical import canonical_spec
from mixture.stages import keys as stage_keys
from mixture.stages import registry as stage_registry
from mixture.stages.files import RANK
from mixture.stages.keys import Changes
from mixture.store import layout
from mixture.store.formats import FormatError, StageRecord, StoreArtifact, read_model, write_model

KEY_FILE = "key.json"  # in _build/<stage>/: the StageRecord of the work there
REDO_FLAG = "--redo-changed"
ANY_TASK = "[0-9]" * 5  # a task's 5-digit rank, in a glob


class StoreChanged(BuildError):
    """The spec or the inputs differ from what the store's finished work was made from, or the finished store is of
    another format version; nothing was done."""

    exit_code = 2


def current_records(ctx: BuildContext) -> list[StageRecord]:
    """The record (key) of every stage a build of this context runs, from its spec and inputs as listed now."""
    return stage_keys.stage_records(canonical_spec(ctx.refs), ctx.inputs(), ctx.tasks)


def _stage_dir(root: str, name: str) -> str:
    return f"{root}/{layout.stage_dir(name)}"


def read_record(fs, root: str, name: str) -> StageRecord | None:
    """The record of the work in `_build/<name>/`; None when there is none or it cannot be read (then the work is
    of unknown origin)."""
    try:
        return read_model(StageRecord, f"{_stage_dir(root, name)}/{KEY_FILE}", fs=fs)
    except FormatError:
        return None


def has_work(fs, root: str, name: str) -> bool:
    """A key record or a finished task in `_build/<name>/` (a folder with neither holds no work: a build killed
    before it wrote the record)."""
    folder = _stage_dir(root, name)
    if fs.exists(f"{folder}/{KEY_FILE}"):
        return True
    try:
        return bool(fs.ls(f"{folder}/completions", detail=False))
    except FileNotFoundError:
        return False


def write_record(ctx: BuildContext, record: StageRecord) -> None:
    """Written before the stage's first task runs: every completion in its folder is then work of this key."""
    fs, root = fsspec.core.url_to_fs(ctx.store)
    path = f"{_stage_dir(root.rstrip('/'), record.name)}/{KEY_FILE}"
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    write_model(fs, path, record)


def _rm(fs, pattern: str, root: str) -> None:
    """Remove what `pattern` matches, then the folders it leaves empty (a cell folder of a cluster no longer made
    must not stay behind as an empty cell)."""
    parents: set[str] = set()
    for path in fs.glob(pattern) if any(c in pattern for c in "*?[") else [pattern]:
        if fs.exists(path):
            fs.rm(path, recursive=True)
            parents.add(path.rsplit("/", 1)[0])
    for folder in sorted(parents, key=len, reverse=True):
        while folder.startswith(root + "/") and folder != root:
            try:
                if fs.ls(folder, detail=False):
                    break
                fs.rmdir(folder)
            except (FileNotFoundError, OSError):
                break
            folder = folder.rsplit("/", 1)[0]


def clear_stage(fs, root: str, stage: stage_registry.StageDef) -> None:
    """Remove what a stage wrote: its outputs, its tasks' files, then its `_build/<name>/` (the completions and the
    key record last: a clear interrupted midway is redone by the next run)."""
    for rel in (*stage.files.outputs, *(g.replace(RANK, ANY_TASK) for g in stage.files.task_globs)):
        _rm(fs, f"{root}/{rel}", root)
    _rm(fs, _stage_dir(root, stage.name), root)


def clear_finalize(fs, root: str) -> None:
    for rel in stage_registry.FINALIZE_OUTPUTS:  # store.json first: the store is no longer complete
        _rm(fs, f"{root}/{rel}", root)


def _stage_names(names: list[str]) -> str:
    return ", ".join(names) if len(names) < 4 else f"{names[0]} … {names[-1]} ({len(names)} stages)"


def refusal(store: str, changes: Changes, redo: list[str], keep: list[str], finished: StoreArtifact | None) -> str:
    what = (f"{store} is a finished store (built {finished.created}) of other spec values or inputs"
            if finished else f"{store} holds unfinished work of other spec values or inputs")
    ways = (f"Either put them back and rerun the same command, or rerun with {REDO_FLAG} to redo "
            f"{_stage_names(redo)}" + (f" (keeping {_stage_names(keep)})" if keep else "") + ".")
    return "\n".join([f"{what}; nothing was done. What changed:", *(f"  - {line}" for line in changes.lines()), ways])


@dataclass
class Reuse:
    """The decision for one build: its stage records, the stages whose work is kept, the task count."""

    records: list[StageRecord]
    kept: list[str]
    redone: list[str]
    tasks: int


def finished_changes(ctx: BuildContext, artifact: StoreArtifact, records: list[StageRecord]) -> Changes:
    """What differs between a finished store and a build of this spec and inputs (empty: it is already built)."""
    canon = canonical_spec(ctx.refs)
    prov = artifact.provenance
    other = []
    if (prov.code_version, prov.keys_version) != (stage_keys.code_version(), stage_keys.KEYS_VERSION):
        other.append(f"code version: {prov.code_version} (keys v{prov.keys_version}) → {stage_keys.code_version()} "
                     f"(keys v{stage_keys.KEYS_VERSION})")
    inputs = ctx.inputs()
    changes = Changes(stage_keys.field_changes(stage_keys.flatten(prov.spec), stage_keys.flatten(canon)),
                      stage_keys.manifest_changes(prov.inputs.sources, inputs.sources, prov.inputs.files, inputs.files),
                      other)
    if not changes and [s.key for s in prov.stages] != [r.key for r in records]:
        changes.other.append("stage keys differ from the ones store.json records (see `mixture audit`)")
    return changes


def check_finished(ctx: BuildContext, artifact: StoreArtifact, redo: bool) -> bool:
    """True when the finished store is what this build would make (already built). Otherwise refuses, or with
    `redo` returns False: the caller clears it under the lock (`plan_reuse`)."""
    changes = finished_changes(ctx, artifact, current_records(ctx))
    if not changes:
        return True
    if not redo:
        planned = [s.name for s in stage_registry.planned(ctx.spec)]
        fs, root = fsspec.core.url_to_fs(ctx.store)
        work = fs.exists(f"{root.rstrip('/')}/{layout.WORK_DIR}")
        keep = _unchanged(ctx, fs, root.rstrip("/")) if work else []
        raise StoreChanged(refusal(ctx.store, changes, [n for n in planned if n not in keep] or ["finalize"], keep,
                                   artifact))
    return False


def _unchanged(ctx: BuildContext, fs, root: str) -> list[str]:
    """The leading stages whose work on storage has the key this build computes."""
    keep = []
    for record in current_records(ctx):
        old = read_record(fs, root, record.name)
        if old is None or old.key != record.key:
            break
        keep.append(record.name)
    return keep


def plan_reuse(ctx: BuildContext, redo: bool) -> Reuse:
    """Under the store's lock, before any work: compare each stage's work on storage with the key computed now.
    The leading stages whose key matches are kept; every stage after them is redone. Work whose key differs (or
    that has no readable key) needs `redo`, else StoreChanged names what changed; with it, the stale stages'
    files are cleared first (and a finished store's store.json before anything). Kept work keeps the task count
    it was started with (the files of a rank depend on it)."""
    fs, root = fsspec.core.url_to_fs(ctx.store)
    root = root.rstrip("/")
    fs.invalidate_cache()  # an object store's listing cached by an earlier build of this process may be stale
    records = current_records(ctx)
    keeping = fs.exists(f"{root}/{layout.WORK_DIR}")  # removed when a build ends: then nothing is left to reuse
    kept: list[StageRecord] = []
    changes: list[Changes] = []
    for record in records:
        work = has_work(fs, root, record.name)
        old = read_record(fs, root, record.name) if work else None
        if work and old is None:
            changes.append(Changes([], [], [f"stage {record.name}: work without a key record (a build by an older "
                                            "mixture, or a damaged _build/)"]))
        elif old is not None and old.key != record.key:
            changes.append(stage_keys.record_changes(old, record))
        keeping = keeping and old is not None and old.key == record.key
        if keeping:
            kept.append(old)
    redone = [r.name for r in records[len(kept):]]
    merged = stage_keys.merge(changes)
    if merged and not redo:
        raise StoreChanged(refusal(ctx.store, merged, redone, [r.name for r in kept], None))
    if merged:
        logger.warning(f"redoing {_stage_names(redone)}, what changed: " + "; ".join(merged.lines()))
    planned = {r.name for r in records}
    stale = [s for s in stage_registry.STAGES
             if (s.name in redone or s.name not in planned) and has_work(fs, root, s.name)]
    if stale or fs.exists(f"{root}/{layout.STORE_JSON}"):
        clear_finalize(fs, root)
    for s in reversed(stale):
        clear_stage(fs, root, s)
    tasks = kept[0].tasks if kept else ctx.tasks
    if tasks != ctx.tasks:
        logger.warning(f"resuming with {tasks} tasks, the task count this build started with (not {ctx.tasks}: "
                       "the files of a task depend on it)")
        records = [r.model_copy(update={"tasks": tasks}) for r in records]
    return Reuse(records, [r.name for r in kept], redone, tasks)
