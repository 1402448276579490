"""Run a build: validate, lock the store, run each stage with a datatrove executor, finalize, publish."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import fsspec
from datatrove.utils.logging import logger

from mixture.pipelines import reuse
from mixture.pipelines.context import BuildContext, BuildError, Round, Stage
from mixture.pipelines.dedup import minhash_sigs
from mixture.pipelines.dedup.combine import CombineShuffles, IndexCombined
from mixture.pipelines.executors import SlurmChain, make_executor
from mixture.pipelines.locks import folder_lock, lock_is_stale, read_lock
from mixture.pipelines.runtime.attempts import ClearTaskFiles
from mixture.pipelines.runtime.datatrove_compat import quiet_datatrove_console
from mixture.pipelines.runtime.shared_workers import shared_workers
from mixture.spec.load import load_spec
from mixture.stages import registry as stage_registry
from mixture.store import layout
from mixture.store.formats import FormatError, StoreArtifact, StoreVersionError, read_store_artifact
from mixture.text import kernel as text_kernel


class BuildInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) while a stage or finalize ran; `stage` names it."""

    def __init__(self, stage: str):
        super().__init__(stage)
        self.stage = stage


@contextmanager
def store_lock(store: str, break_lock: bool = False):
    """Hold `_build/LOCK` (owner, host, pid, start) for the build; a second build refuses with a clear message.

    A lock left by a dead process of this host is taken over; `break_lock` takes over any lock."""
    with folder_lock(store, layout.LOCK_FILE, "build", BuildError, break_lock):
        yield


def stage_runs(ctx: BuildContext, stage: stage_registry.StageDef) -> Iterator[Stage]:
    """What the driver runs of the stage, one after another: its pipeline for this build, or for a stage run in
    rounds each round (`<stage>/<round>`), made only once the round before it has run. A stage (round) whose tasks
    write files of their own first removes those of an earlier attempt."""
    made = stage.steps_function()(ctx)
    rounds = made if stage.rounds else [Round("", made, stage.task_count(ctx.spec, ctx.tasks), stage.files.tasks)]
    for r in itertools.chain(rounds, combine_rounds(ctx, stage)):
        name = f"{stage.name}/{r.name}" if r.name else stage.name
        pipeline = list(r.steps)
        if r.files:
            pipeline = [ClearTaskFiles([ctx.at(f.glob) for f in r.files], ctx.at(f"{layout.stage_dir(name)}/attempts")),
                        *pipeline]
        yield Stage(name, pipeline, r.tasks)


def combine_rounds(ctx: BuildContext, stage: stage_registry.StageDef) -> list[Round]:
    """The rounds after the stage's tasks that combine the shuffle files they wrote, then merge the combined files'
    indexes in one task (pipelines/dedup/combine.py), when `stage_registry.combine_group` says so for its writers
    and readers; none otherwise. Named by its group, so that a run with another group does not take its
    completions for done."""
    shuffles = [f.every(ctx.at(f.folder)) for f in stage.files.tasks if f in stage_registry.SHUFFLES]
    signatures, readers = None, max(ctx.tasks, ctx.partitions)
    if stage.name == "minhash_sigs":  # each band's signature files, a partition per slice of minhash_buckets
        shuffles, signatures = minhash_sigs.band_files(ctx)
        readers = stage_registry.get("minhash_buckets").task_count(ctx.spec, ctx.tasks)
    if stage.rounds or not shuffles:
        return []
    writers = stage.task_count(ctx.spec, ctx.tasks)
    group = stage_registry.combine_group(writers, readers, ctx.execution(stage.name).combine_files)
    if group <= 1:
        return []
    name = f"{stage_registry.COMBINE_ROUND}-by-{group}"
    return [Round(name, [CombineShuffles(shuffles, group, writers, signatures)], -(-writers // group)),
            Round(f"{name}-index", [IndexCombined(shuffles)], 1)]


def build_stage(ctx: BuildContext, stage: stage_registry.StageDef) -> Stage:
    """The stage's pipeline for this build (of a stage run in rounds: its first round's)."""
    return next(stage_runs(ctx, stage))


def _completed(ctx: BuildContext, stage: Stage) -> int:
    fs, root = fsspec.core.url_to_fs(ctx.at(f"{layout.stage_dir(stage.name)}/completions"))
    fs.invalidate_cache(root)  # written by the workers: an object store's cached listing would stay stale
    try:
        return len(fs.ls(root, detail=False))
    except FileNotFoundError:
        return 0


def run_stage(ctx: BuildContext, stage: Stage, executor: str, workers: int,
              on_progress: Callable[[int], None] | None = None, chain: SlurmChain | None = None) -> None:
    """Run (locally, on Ray) or submit (Slurm, chained behind the stages before) one stage; `on_progress` gets its
    completed tasks when `run` returns (StageBars follows every stage while the build runs)."""
    try:
        make_executor(ctx, stage, executor, workers, chain).run()
    except KeyboardInterrupt:
        raise BuildInterrupted(stage.name) from None
    except Exception as exc:
        # a Slurm chain fails at its barrier: the error names the earlier stage that did not finish, and its logs
        failed, logs = getattr(exc, "stage", None) or stage.name, getattr(exc, "logs", None)
        where = "" if logs is not None else f" Logs: {ctx.at(layout.stage_dir(failed))}/logs."
        raise BuildError(
            f"stage {failed!r} failed: {type(exc).__name__}: {str(exc).rstrip('.')}.{where} Fix the cause and rerun "
            "the same command: finished tasks are skipped."
        ) from exc
    if on_progress is not None:
        on_progress(_completed(ctx, stage))


class StageBars:
    """One progress bar per stage, each following its completion markers until the build ends: a Slurm stage
    chained behind others returns as soon as it is submitted, and its bar (count and clock) moves with its jobs;
    a bar's clock stops when its stage has all its tasks."""

    def __init__(self, ctx: BuildContext, bar, every: float = 0.5):
        self.ctx, self.bar, self.every = ctx, bar, every
        self.stages: list[tuple[Stage, object]] = []  # (stage, its rich TaskID)
        self._finished: set = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def add(self, stage: Stage, about: str) -> None:
        task = self.bar.add_task(stage.name.replace("/", " "), total=stage.tasks, about=about)  # a round: `<stage> <round>`
        with self._lock:
            self.stages.append((stage, task))
        self.refresh()

    def refresh(self) -> None:
        with self._lock:
            stages = list(self.stages)
        for stage, task in stages:
            if task not in self._finished:
                done = _completed(self.ctx, stage)
                self.bar.update(task, completed=done)
                if done >= stage.tasks:
                    self._finished.add(task)

    def _poll(self) -> None:
        while not self._stop.wait(self.every):
            self.refresh()

    def __enter__(self) -> StageBars:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.refresh()


@dataclass
class Built:
    """What `build_store` did: the store's artifact, and whether the store was already built (nothing was done)."""

    artifact: StoreArtifact
    already_built: bool = False


def build(spec_path: str, *, executor: str | None = None, tasks: int | None = None, workers: int | None = None,
          break_lock: bool = False, keep_work: bool = False, progress: bool = True, overrides: dict | None = None,
          redo_changed: bool = False) -> StoreArtifact:
    """Build the store of a spec; returns the store artifact (see `build_store`)."""
    return build_store(spec_path, executor=executor, tasks=tasks, workers=workers, break_lock=break_lock,
                       keep_work=keep_work, progress=progress, overrides=overrides, redo_changed=redo_changed).artifact


def build_store(spec_path: str, *, executor: str | None = None, tasks: int | None = None, workers: int | None = None,
                break_lock: bool = False, keep_work: bool = False, progress: bool = True,
                overrides: dict | None = None, redo_changed: bool = False) -> Built:
    """Build the store of a spec. A finished store of the same spec and inputs is left as is (already built).

    Work on storage is reused only where its stage key (mixture/stages/keys.py) is the one computed now; when the
    spec or the inputs changed, StoreChanged names what changed before any work, unless `redo_changed`: then the
    stages whose key changed and every stage after them are redone (pipelines/reuse.py). A finished store of another
    format version is refused the same way (StoreChanged, the message of StoreVersionError), or with
    `redo_changed` rebuilt: the stage keys hash the format version, so every stage is redone.

    `overrides`: execution settings given on the command line, applied over the spec's (`None` values ignored; the
    spec and its hash stay as they are); per-stage entries of `execution.stages` still apply on top."""
    from rich import get_console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mixture.pipelines.finalize.store_json import finalize

    spec = load_spec(spec_path)
    store = spec.refs.store
    ex = spec.execution
    n_tasks = tasks or ex.tasks
    n_workers = workers or (ex.workers if ex.workers > 0 else (os.cpu_count() or 1))
    ctx = BuildContext(spec, spec.refs.folder, store, n_tasks, dict(overrides or {}))
    fs, root = fsspec.core.url_to_fs(store)
    if fs.exists(f"{root}/{layout.STORE_JSON}"):
        try:
            artifact = read_store_artifact(f"{root}/{layout.STORE_JSON}", fs=fs, file=f"{store}/{layout.STORE_JSON}")
        except StoreVersionError as exc:
            if not redo_changed:
                raise reuse.StoreChanged(str(exc)) from None
            logger.warning(f"{exc.file}: a store of format version {exc.version}: rebuilding it ({reuse.REDO_FLAG})")
            artifact = None  # plan_reuse clears store.json and every stage: their keys hold the old format's
        except FormatError as exc:
            raise BuildError(f"{exc}\n{store} holds a store.json that does not match its format; delete the "
                             "store or point store.uri at a new location") from None
        if artifact is not None and reuse.check_finished(ctx, artifact, redo_changed):
            # a build killed after publishing store.json may have left its work files and its lock behind
            if not keep_work and fs.exists(f"{root}/{layout.WORK_DIR}"):
                fs.rm(f"{root}/{layout.WORK_DIR}", recursive=True)
            lock = f"{root.rstrip('/')}/{layout.LOCK_FILE}"
            holder = read_lock(fs, lock)
            if holder and "unreadable" not in holder and lock_is_stale(holder):
                fs.rm(lock)
            return Built(artifact, already_built=True)
    quiet_datatrove_console()
    if text_kernel.kernel is None:
        logger.warning(text_kernel.MISSING)
    chain = SlurmChain()  # a Slurm build's stages submitted since the driver last waited
    columns = [TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TextColumn("tasks"),
               TimeElapsedColumn()]
    if get_console().width >= 130:  # room for the stage's one-line description
        columns.append(TextColumn("[dim]{task.fields[about]}"))
    with store_lock(store, break_lock), Progress(*columns, disable=not progress, transient=False) as bar, \
            StageBars(ctx, bar) as bars, shared_workers():
        plan = reuse.plan_reuse(ctx, redo_changed)  # before any work: reuse only work of the keys computed now
        ctx.tasks = plan.tasks
        records = {r.name: r for r in plan.records}
        for info in stage_registry.planned(spec):  # built one at a time: a stage may read the results of earlier ones
            if info.name not in plan.kept:
                reuse.write_record(ctx, records[info.name])
            for stage in stage_runs(ctx, info):  # a stage run in rounds: the next is made once this one ran
                bars.add(stage, info.about)
                run_stage(ctx, stage, executor or ex.executor, n_workers, chain=chain)
        bars.refresh()
        task = bar.add_task("finalize", total=1, about="ledgers, samples, store.json")
        try:
            artifact = finalize(ctx, str(spec_path), plan.records)
        except KeyboardInterrupt:
            raise BuildInterrupted("finalize") from None
        except OSError as exc:
            raise BuildError(f"finalize failed: {type(exc).__name__}: {exc}. Fix the cause and rerun the same "
                             "command: finished stages are skipped and finalize runs again.") from exc
        bar.update(task, completed=1)
    if not keep_work:
        fs.rm(f"{root}/{layout.WORK_DIR}", recursive=True)
    return Built(artifact)
