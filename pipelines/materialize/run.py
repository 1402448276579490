"""Materialize a plan: decide every draw from the documents' sizes (no text), then write the shards as two rounds
of datatrove tasks on the build's executors (local, Ray, Slurm): scatter (the store read once), gather (the
shards); manifests last."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash
from fsspec import AbstractFileSystem
from fsspec.core import url_to_fs

import mixture
from mixture.accounting import StoreNotReady, StoreReader
from mixture.accounting.document_rows import document_index
from mixture.accounting.verify import CorruptShard, ledger_entries, mixture_shard_problems
from mixture.pipelines.locks import folder_lock
from mixture.pipelines.materialize.draws import (  # noqa: F401  (re-exported: the draw's building blocks)
    DRAWS_SCHEMA,
    GROUPS_SCHEMA,
    SHARD_SCHEMA,
    SHARDS_SCHEMA,
    CellDraw,
    CellStream,
    DrawPlan,
    MaterializeError,
    WorkFiles,
    cell_seed,
    cell_stream,
    choose_cut,
    draw_cell,
    draw_phases,
    interleave,
    phase_dir,
    plan_draws,
    shard_groups,
    shard_name,
    task_shards,
)
from mixture.planner.formats import (
    MANIFEST,
    MANIFEST_FORMAT_VERSION,
    PHASE_MANIFEST,
    Manifest,
    MaterializeWork,
    PhaseManifest,
    Plan,
    TaskShards,
    read_manifest,
)
from mixture.spec.models import Execution
from mixture.store.formats import (
    FormatError,
    LedgerShard,
    StoreArtifact,
    read_model,
    read_models,
    write_model,
)
from mixture.store.io import open_atomic

LOCK_FILE = "_materialize.lock"  # DIR/_materialize.lock while a run writes DIR (not under _materialize/: removed)
DEFAULT_SHARD_BYTES = 128 * 2**20
DEFAULT_MEMORY = 2**30
SHARD_SCHEMA_COLUMNS = tuple(SHARD_SCHEMA.names)
DRAWS_FORMAT = 3  # the work tables' layout: a key of another version starts over
DRAWS_ROW_GROUP = 65_536  # rows per row group of draws.parquet: a task reads the groups of its shards only
Progress = Callable[[str, int, int], None]  # (what, done, total): "draw" (cells), "shards" (written)


def parse_bytes(value: str | int) -> int:
    """`128MB`, `1GiB`, `500k`, `1048576` -> bytes."""
    if isinstance(value, int):
        return value
    text = value.strip().upper().replace("IB", "B")
    units = {"B": 1, "KB": 2**10, "K": 2**10, "MB": 2**20, "M": 2**20, "GB": 2**30, "G": 2**30}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            number = text[: -len(suffix)].strip()
            break
    else:
        suffix, number = "B", text
    try:
        out = int(float(number) * units[suffix])
    except ValueError:
        raise ValueError(f"expected a size like 128MB, 1GB or 1048576, found {value!r}") from None
    if out <= 0:
        raise ValueError(f"expected a positive size, found {value!r}")
    return out


@dataclass
class Target:
    """One materialize run: what it draws and where it writes (`root`: DIR on `fs`, without protocol)."""

    plan: Plan
    out: str  # DIR as given (a URL or a path)
    fs: AbstractFileSystem
    root: str
    store_uri: str
    artifact: StoreArtifact
    seed: int
    shard_bytes: int

    @property
    def work(self) -> WorkFiles:
        return WorkFiles(self.root)

    def key(self) -> MaterializeWork:
        """What the draw plan is made from (tasks and shards are filled in once it is drawn)."""
        fields = {"plan_id": self.plan.plan_id, "store_uri": self.store_uri, "store_created": self.artifact.created,
                  "seed": self.seed, "shard_bytes": self.shard_bytes,
                  "code_version": f"{mixture.__version__}+manifest{MANIFEST_FORMAT_VERSION}+draws{DRAWS_FORMAT}"}
        key = xxhash.xxh64_hexdigest(json.dumps(fields, sort_keys=True))
        return MaterializeWork(key=key, tasks=1, shards=0, **fields)


def _local_abs(uri: str) -> str:
    """A local path made absolute (tasks may run in another working directory: Ray, Slurm); URLs as they are."""
    return uri if "://" in uri else os.path.abspath(uri)


def materialize(
    plan: Plan,
    out_dir: str | os.PathLike,
    store_uri: str | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    seed: int | None = None,
    progress: Progress | None = None,
    *,
    tasks: int | None = None,
    workers: int | None = None,
    executor: str | None = None,
    execution: Execution | None = None,
    memory: int = DEFAULT_MEMORY,
    keep_work: bool = False,
    break_lock: bool = False,
    replace: bool = False,
    notice: Callable[[str], None] | None = None,
) -> Manifest:
    """Write DIR/phase=NAME/part-NNNNN.parquet and the manifests (DIR: a local folder or any fsspec URL: gs://,
    s3://, …); returns the manifest. The same plan, store, seed and shard size give the same bytes whatever the
    tasks, workers or executor.

    `tasks` datatrove tasks (default `workers`; at most one per shard) on `executor` ("local", "ray", "slurm";
    default `execution.executor`) with `workers` at once (default 1; `execution` holds the Ray/Slurm settings);
    each task holds at most `memory` characters of text (or one shard, when a shard is bigger). Scatter tasks read
    the store's drawn files once and send every draw to its group of shards; gather tasks write the shards from
    their groups. A run that was killed resumes: finished tasks are skipped and shards already written are kept. A finished DIR of the same
    plan, store, seed and shard size is left as it is. `keep_work`: keep DIR/_materialize/ (logs, stats, the
    draw plan, the intermediate files) after publishing.

    DIR is locked while a run writes it (DIR/_materialize.lock, as a build locks its store: a second run refuses,
    `break_lock` takes over the lock of a dead one). A finished mixture of another plan in DIR is refused unless
    `replace`. A finished mixture of this plan whose shards differ from its manifest (size or xxh64: a flipped
    bit, an edit, a lost file) is written again, each damaged shard named on `notice` (default: a warning on
    stderr). A file system error (a read-only or full disk) is a MaterializeError."""
    uri = store_uri or plan.store_uri
    if not uri:
        raise MaterializeError("the plan names no store; pass --store URI")
    reader = StoreReader(uri)
    try:
        artifact = reader.store_info
    except (StoreNotReady, FormatError) as exc:
        raise MaterializeError(str(exc)) from None
    inside = inside_a_source(plan, str(out_dir))
    if inside:
        raise MaterializeError(f"{out_dir} {inside}; write the mixture outside every source location")
    fs, root = url_to_fs(str(out_dir))
    t = Target(plan, str(out_dir), fs, root.rstrip("/"), uri, artifact, plan.settings.seed if seed is None else seed,
               shard_bytes)
    try:
        fs.makedirs(t.root, exist_ok=True)
        with folder_lock(str(out_dir), LOCK_FILE, "materialize", MaterializeError, break_lock):
            finished, damaged = finished_manifest(t)
            if damaged:
                (notice or _warn)(damaged_notice(t, damaged))
            if finished is not None:
                n = sum(len(p.shards) for p in finished.phases)
                if progress:
                    progress("shards", n, n)
                return finished
            if not replace:
                refuse_other(t)

            ex = execution or Execution()
            executor = executor or ex.executor
            workers = workers or (ex.workers if ex.workers > 0 else 1)
            # damaged shards are drawn again from scratch: a kept _materialize/ would skip their finished tasks
            work = (None if damaged else resume(t, tasks)) or draw(t, reader, max(1, tasks or workers), progress)
            run_tasks(t, work, executor, workers, ex, memory, progress)
            manifest = publish(t, work, read_model(Manifest, t.work.drawn, fs=fs))
            write_model(fs, f"{t.root}/{MANIFEST}", manifest, indent=2)  # last: its presence means complete
            if not keep_work:
                fs.rm(t.work.logging, recursive=True)
            return manifest
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        raise MaterializeError(f"{out_dir}: cannot write the mixture: {why}{where}. Make the folder writable (or "
                               "free space), or choose another --out; rerunning the same command resumes.") from None


def inside_a_source(plan: Plan, out: str) -> str | None:
    """Why DIR would be read back as input by a build of the spec the plan was made from (inside, equal to or
    holding a source location, or matched by a source's glob), or None (also when that spec cannot be read)."""
    from mixture.spec.load import SpecError, load_spec
    from mixture.spec.locations import store_overlap

    spec_path = plan.source.spec
    if not spec_path or not spec_path.endswith((".yaml", ".yml")) or not os.path.isfile(spec_path):
        return None
    try:
        spec = load_spec(spec_path, check_resources=False)
    except (SpecError, OSError, ValueError):
        return None
    for i, (src, uri) in enumerate(zip(spec.sources, spec.refs.sources, strict=True)):
        if uri.startswith("hf://"):
            continue
        why = store_overlap(out, uri, f"sources[{i}] {src.name!r} ({uri})")
        if why:
            return why.replace("the build would read its own output as input",
                               "a build of the plan's spec would read the mixture as input")
    return None


def refuse_other(t: Target) -> None:
    """MaterializeError when DIR holds the finished mixture (a readable manifest.json) of another plan: it is not
    overwritten without --replace (one of this plan with another store, seed or shard size is redrawn)."""
    if not t.fs.exists(f"{t.root}/{MANIFEST}"):
        return
    try:
        old = read_manifest(t.root, fs=t.fs)
    except FormatError:
        return  # not a finished mixture: its leftovers are replaced
    if old.plan_id == t.plan.plan_id:
        return  # this plan's mixture, damaged or of another store, seed or shard size: it is drawn again
    raise MaterializeError(f"{t.out} holds the finished mixture of another plan ({old.plan_name}, plan_id "
                           f"{old.plan_id}; this plan's is {t.plan.plan_id}). Choose another --out, or rerun with "
                           "--replace to delete it and write this one.")


def finished_manifest(t: Target) -> tuple[Manifest | None, list[str]]:
    """(DIR's manifest, []) when it is of this plan, store (as built: its `created`), seed and shard size, agrees
    with the store's counts, and every shard it lists is there with its size and xxh64; (None, a message per damaged
    shard) when only its shards differ; (None, []) otherwise."""
    if not t.fs.exists(f"{t.root}/{MANIFEST}"):
        return None, []
    try:
        manifest = read_manifest(t.root, fs=t.fs)
    except FormatError:
        return None, []
    if (manifest.plan_id, manifest.store_uri, manifest.store_created, manifest.seed, manifest.shard_bytes) != \
            (t.plan.plan_id, t.store_uri, t.artifact.created, t.seed, t.shard_bytes):
        return None, []  # a store rebuilt with the same counts (ids changed, say) is another store: drawn again
    store = {c.cell: (c.tokens, c.docs) for c in t.artifact.cells}
    if any(store.get(c, (0, 0)) != (i.available_tokens, i.docs_in_store) for c, i in manifest.cells.items()):
        return None, []
    # whole-file xxh64, not sizes alone: a flipped bit keeps the size (20 MB hashed in 0.01 s, 0.4 % of the demo's
    # materialize; docs/robustness.md)
    t.fs.invalidate_cache(t.root)
    damaged = mixture_shard_problems(t.fs, t.root, t.out.rstrip("/"), manifest.phases, fix="")
    return (None, damaged) if damaged else (manifest, [])


def damaged_notice(t: Target, damaged: list[str]) -> str:
    more = f" ({len(damaged) - 1} more shard(s) differ)" if len(damaged) > 1 else ""
    return (f"{t.out.rstrip('/')} holds this plan's finished mixture, but {damaged[0].rstrip(' ;.')}{more}. Writing the "
            "mixture again (the same plan, store, seed and shard size give the same bytes); if shards keep changing, "
            "check the disk.")


def _warn(message: str) -> None:
    from datatrove.utils.logging import logger

    logger.warning(message)


def resume(t: Target, tasks: int | None) -> MaterializeWork | None:
    """The recorded draw plan when it was made from what this run draws (a killed run of the same command); it
    keeps the task count it was shared out to."""
    if not t.fs.exists(t.work.key):
        return None
    try:
        recorded = read_model(MaterializeWork, t.work.key, fs=t.fs)
    except FormatError:
        return None
    if recorded.key != t.key().key:
        return None
    if tasks and tasks != recorded.tasks:
        from datatrove.utils.logging import logger

        logger.warning(f"resuming with {recorded.tasks} tasks, the task count this materialize started with (not "
                       f"{tasks}); finished tasks are skipped")
    _withdraw(t)
    return recorded


def _withdraw(t: Target) -> None:
    """manifest.json is written last and its presence means complete: withdraw it before any shard is touched, so
    that a run killed midway never leaves a manifest describing a mix of old and new shards."""
    if t.fs.exists(f"{t.root}/{MANIFEST}"):
        t.fs.rm(f"{t.root}/{MANIFEST}")


def _phase_dirs(t: Target) -> list[str]:
    t.fs.invalidate_cache(t.root)
    return [p for p in t.fs.glob(f"{t.root}/phase=*") if t.fs.isdir(p)]


def start_over(t: Target) -> None:
    """Remove what an earlier run of another plan, store, seed or shard size left: manifests, shards, temporary
    files, and _materialize/ (its completions would skip tasks of the new draw)."""
    _withdraw(t)
    if t.fs.exists(t.work.logging):
        t.fs.rm(t.work.logging, recursive=True)
    for pdir in _phase_dirs(t):
        t.fs.invalidate_cache(pdir)
        stale = [p for p in t.fs.ls(pdir, detail=False) if p.rsplit("/", 1)[-1].startswith("part-")
                 or p.endswith(".tmp") or p.endswith(f"/{PHASE_MANIFEST}")]
        if stale:
            t.fs.rm(stale)


def draw(t: Target, reader: StoreReader, tasks: int, progress: Progress | None) -> MaterializeWork:
    """Decide every draw from the used cells' sizes and write the draw plan to _materialize/work/ (key.json last)."""
    start_over(t)
    used = t.plan.used_cells()
    try:
        index = document_index(reader, [(c.cluster, c.quality) for c in used])
    except CorruptShard as exc:
        raise MaterializeError(str(exc)) from None
    if used and not index.files:
        raise MaterializeError(f"{reader.uri}: no documents to read in the {len(used)} cells the plan draws from")
    drawn = plan_draws(t.plan, index, t.seed, t.shard_bytes, progress)
    del index
    write_draws(t, drawn, ledger_entries(reader))
    work = t.key().model_copy(update={"tasks": max(1, min(tasks, drawn.n_shards)), "shards": drawn.n_shards})
    write_model(t.fs, t.work.key, work)
    return work


def write_draws(t: Target, drawn: DrawPlan, ledger: dict[str, LedgerShard]) -> None:
    """files.parquet (each drawn shard with its ledger's size and xxh64: the scatter checks them before reading
    it), shards.parquet, draws.parquet (training order, phase after phase) and drawn.json."""
    fs, work = t.fs, t.work
    fs.makedirs(work.work, exist_ok=True)
    with fs.open(work.files, "wb") as f:
        pq.write_table(pa.table({"path": pa.array(drawn.files, pa.string()),
                                 "bytes": pa.array([ledger[p].bytes for p in drawn.files], pa.int64()),
                                 "xxh64": pa.array([ledger[p].xxh64 for p in drawn.files], pa.string())}), f)
    with fs.open(work.shards, "wb") as f:
        pq.write_table(pa.concat_tables([SHARDS_SCHEMA.empty_table(), *(p.shards for p in drawn.phases)]), f)
    with fs.open(work.draws, "wb") as f, pq.ParquetWriter(f, DRAWS_SCHEMA) as writer:
        for p in drawn.phases:
            writer.write_table(p.draws, row_group_size=DRAWS_ROW_GROUP)
    store_tokens = {c.cell: c.tokens for c in t.artifact.cells}
    mismatched = sorted(c for c, i in drawn.cell_info.items() if i.available_tokens != i.planned_available_tokens
                        or store_tokens.get(c, i.available_tokens) != i.available_tokens)
    tolerance = sum(i.max_doc_tokens for i in drawn.cell_info.values())  # one document per cell
    largest = max((i.max_doc_tokens for i in drawn.cell_info.values()), default=0)
    phases = [PhaseManifest(name=ph.name, planned_tokens=ph.tokens, tokens=sum(c.tokens for c in cells.values()),
                            docs=sum(c.docs for c in cells.values()), tolerance=tolerance, max_doc_tokens=largest,
                            shards=[], cells=cells)
              for ph, cells in zip(t.plan.phases, drawn.drawn, strict=True)]
    write_model(fs, work.drawn, Manifest(
        format=MANIFEST_FORMAT_VERSION, plan_id=t.plan.plan_id, plan_name=t.plan.name, store_uri=t.store_uri,
        store_created=t.artifact.created, seed=t.seed, shard_bytes=t.shard_bytes, cells=drawn.cell_info,
        count_mismatch=mismatched, phases=phases))


def write_groups(t: Target, work: MaterializeWork, memory: int) -> None:
    """work/groups.parquet: the group of shards each shard is written in, text of at most `memory` each (or one
    shard), within one task's range. Written once: a resumed run keeps the groups its scatter wrote towards."""
    if t.fs.exists(t.work.groups):
        return
    chars = pq.read_table(t.work.shards, filesystem=t.fs).column("chars").to_numpy()
    groups = pa.table({"shard": pa.array(np.arange(len(chars), dtype=np.int32)),
                       "group": pa.array(shard_groups(chars, work.tasks, memory))}, schema=GROUPS_SCHEMA)
    with open_atomic(t.fs, t.work.groups) as f:
        pq.write_table(groups, f)


def run_tasks(t: Target, work: MaterializeWork, executor: str, workers: int, ex: Execution, memory: int,
              progress: Progress | None) -> None:
    """Scatter the drawn documents to their groups of shards, then write the shards (gather), each as `work.tasks`
    datatrove tasks (finished ones are skipped), following the shards on `progress`."""
    from mixture.pipelines.materialize.scatter import ScatterDraws
    from mixture.pipelines.materialize.shards import WriteMixtureShards
    from mixture.pipelines.runtime.datatrove_compat import quiet_datatrove_console

    for pdir in _phase_dirs(t):  # half-written shards of a killed run
        t.fs.invalidate_cache(pdir)
        tmp = [p for p in t.fs.ls(pdir, detail=False) if p.endswith(".tmp")]
        if tmp:
            t.fs.rm(tmp)
    write_groups(t, work, memory)
    used = t.plan.used_cells()
    out = _local_abs(t.out).rstrip("/")
    quiet_datatrove_console()
    _run_stage(t, ScatterDraws(out, _local_abs(t.store_uri), memory), work, f"{out}/_materialize/scatter",
               "materialize-scatter", executor, workers, ex, None)
    _run_stage(t, WriteMixtureShards(out, t.plan.phase_names(), [(c.cell, c.cluster, c.quality) for c in used]),
               work, f"{out}/_materialize", "materialize", executor, workers, ex, progress)
    if progress:
        progress("shards", work.shards, work.shards)


def _run_stage(t: Target, step, work: MaterializeWork, logging: str, name: str, executor: str, workers: int,
               ex: Execution, progress: Progress | None) -> None:
    from mixture.pipelines.executors import stage_executor

    runner = stage_executor([step], work.tasks, name, logging, ex, executor, workers, f"{t.plan.name}.{name}")
    stop = threading.Event()
    follower = threading.Thread(target=_follow, args=(t, work, progress, stop), daemon=True)
    if progress:
        follower.start()
    try:
        runner.run()
    except Exception as exc:
        raise MaterializeError(f"{name} failed: {type(exc).__name__}: {str(exc).rstrip('.')}. Task logs: "
                               f"{logging}/logs. Fix the cause and rerun the same command: finished tasks are "
                               "skipped.") from exc
    finally:
        stop.set()
        if progress:
            follower.join()
    missing = runner.get_incomplete_ranks()
    if missing:
        raise MaterializeError(f"{name}: tasks {', '.join(map(str, missing[:10]))} did not finish; task logs: "
                               f"{logging}/logs. Rerun the same command: finished tasks are skipped.")


def _follow(t: Target, work: MaterializeWork, progress: Progress, stop: threading.Event) -> None:
    """Count the shards written while the tasks run: those of the tasks with a completion marker, and on a local
    folder every shard present (each appears by a rename: present = written)."""
    local = "file" in t.fs.protocol or "local" in t.fs.protocol
    completions = f"{t.work.logging}/completions"
    while True:
        try:
            fs, root = url_to_fs(t.out)
            fs.invalidate_cache()
            done = [int(p.rsplit("/", 1)[-1]) for p in fs.ls(completions, detail=False)] if fs.exists(completions) \
                else []
            n = sum(len(task_shards(work.shards, work.tasks, r)) for r in done)
            if local:
                n = max(n, len(fs.glob(f"{root.rstrip('/')}/phase=*/part-*.parquet")))
            progress("shards", min(n, work.shards), work.shards)
        except (OSError, ValueError):
            pass
        if stop.wait(0.5 if local else 5.0):
            return


def publish(t: Target, work: MaterializeWork, drawn: Manifest) -> Manifest:
    """Gather the tasks' shard lists (task after task: shard order) into the phase manifests, after removing any
    shard file they do not list; returns the manifest to write last."""
    fs = t.fs
    paths = [t.work.written(r) for r in range(work.tasks)]
    fs.invalidate_cache(t.work.work)
    got = read_models(TaskShards, fs, {p: p for p in paths})
    shards: dict[str, list] = {ph.name: [] for ph in drawn.phases}
    for path in paths:
        if isinstance(got[path], FormatError):
            raise MaterializeError(f"{got[path]}; rerun the same command")
        for name, listed in got[path].shards.items():
            shards[name].extend(listed)
    phases = []
    for ph in drawn.phases:
        listed = shards[ph.name]
        if sum(s.tokens for s in listed) != ph.tokens or sum(s.rows for s in listed) != ph.docs:
            raise MaterializeError(f"phase {ph.name}: the tasks' shards hold {sum(s.tokens for s in listed):,} tokens "
                                   f"in {sum(s.rows for s in listed):,} documents, the draw {ph.tokens:,} in "
                                   f"{ph.docs:,}; delete {t.work.logging} and rerun")
        entry = ph.model_copy(update={"shards": listed})
        pdir = f"{t.root}/{phase_dir(ph.name)}"
        fs.makedirs(pdir, exist_ok=True)
        fs.invalidate_cache(pdir)
        keep = {s.path for s in listed}
        stale = [p for p in fs.ls(pdir, detail=False) if p.rsplit("/", 1)[-1].startswith("part-")
                 and p.rsplit("/", 1)[-1] not in keep]
        if stale:
            fs.rm(stale)
        write_model(fs, f"{pdir}/{PHASE_MANIFEST}", entry, indent=2)
        phases.append(entry)
    return drawn.model_copy(update={"phases": phases})
