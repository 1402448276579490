"""The build's stages, in pipeline order: the one place a stage is added. The spec's `execution.stages` names, the
build loop, the Slurm chains, the explorer's stage order and each stage's key (the spec fields it `reads`, what it
writes) all come from `STAGES`. The files each stage writes are named here too, once (its `StageFiles`, of TaskFile
templates): its steps, the stages that read them and the build's clean-ups take every path from these.

Light on purpose (no datatrove import): the spec validation imports it; a stage's steps are imported when it is built."""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mixture.stages.files import RANK, StageFiles, TaskFile
from mixture.store import drops, layout

if TYPE_CHECKING:
    from mixture.spec.models import Spec

TASKS = "tasks"  # a stage's task count: the build's (execution.tasks, or --tasks)
PARTITIONS = "partitions"  # a stage's task count: dedup's hash partitions P (execution.partitions, else the tasks)
FUZZY = "processing.dedup.fuzzy.enabled"
# minhash_buckets: one task per band and slice of the band's first-hash range, S = bucket_slices(bands, T) of them
BAND_SLICES = "bands × S"
# the MinHash settings: the signatures and their LSH buckets depend on them (not on the verification threshold)
MINHASH = tuple(f"processing.dedup.fuzzy.{f}" for f in ("permutations", "bands", "ngram", "seed"))
# fields of the canonical spec no stage reads: only finalize (store.json) uses them, or nothing yet
# (machine_translated). A finished store is still compared on them (the whole spec's hash); an unfinished build
# reruns finalize anyway. tests/stages/test_stage_keys.py fails when a stage's steps read one of them.
FINALIZE_ONLY = ("name", "description", "sources[].license", "sources[].synthetic", "sources[].machine_translated")
# what finalize writes (removed whenever a stage is redone, store.json first)
FINALIZE_OUTPUTS = (layout.STORE_JSON, f"cluster=*/quality=*/{layout.LEDGER}", layout.SAMPLES_DIR)
SOURCE_FIELDS = tuple(f"sources[].{f}" for f in ("name", "uri", "format", "text_field", "id_field", "category",
                                                 "exempt_from_fuzzy_dedup", "split", "subset", "revision",
                                                 "streaming"))


@dataclass(frozen=True)
class StageDef:
    """One stage: a datatrove pipeline run as `tasks` tasks, its logs and completions in `_build/<name>/`.

    `chained`: the stage is built without reading the results of the stages before it, so a Slurm build submits it
    right behind them (`afterok`) and the driver does not wait. False, the safe default: the driver waits until every
    earlier stage has finished (it reads their results to build this one)."""

    name: str
    about: str  # one line, for the docs and the build's progress display
    steps: str  # "module:function": the function that returns the stage's steps for a BuildContext
    tasks: int | str  # a number, TASKS, or the dotted spec field that holds the count
    when: str | None = None  # the dotted boolean spec field that turns the stage on; None: every build runs it
    chained: bool = False
    # True: the stage runs in rounds, its steps function yielding one round at a time (pipelines/context.py Round:
    # its steps, task count and task files); the driver runs each round to its end before it asks for the next
    # (a round may read what the one before wrote to decide whether another is needed), a Slurm barrier after each
    rounds: bool = False
    # what it writes: each task's files (a rerun task first removes an earlier attempt's) and its outputs
    files: StageFiles = StageFiles()
    # the spec fields the stage's output depends on, as paths of the canonical spec (mixture/stages/keys.py): a
    # field (`seed`), a section (every field under it: `processing.filters`) or a field of every list item
    # (`sources[].uri`). The stage's key hashes their values, the files they name (sources, benchmarks, models, a
    # tokenizer file), the code version and the previous stage's key; `when` is read too. Be complete: a field
    # missing here lets a rerun reuse work the edited spec would not have made (tests/stages/test_stage_keys.py
    # records what each stage's steps read and fails on a field not listed).
    reads: tuple[str, ...] = ()
    # stages of one group run one after another on the same local worker processes (forked once for the group,
    # each worker's DuckDB instance opened once): small stages whose fixed cost per worker is most of their work
    worker_group: str | None = None

    def runs(self, spec: Spec) -> bool:
        return self.when is None or bool(operator.attrgetter(self.when)(spec))

    def task_count(self, spec: Spec, tasks: int) -> int:
        if isinstance(self.tasks, int):
            return self.tasks
        if self.tasks == BAND_SLICES:
            bands = spec.processing.dedup.fuzzy.bands
            return bands * bucket_slices(bands, tasks)
        if self.tasks == PARTITIONS:
            return dedup_partitions(spec, tasks)
        return tasks if self.tasks == TASKS else int(operator.attrgetter(self.tasks)(spec))

    def steps_function(self) -> Callable:
        module, _, function = self.steps.partition(":")
        return getattr(importlib.import_module(module), function)


def dedup_partitions(spec: Spec, tasks: int) -> int:
    """P, the hash partitions of dedup's shuffles (documents by id and by exact hash, candidate pairs by later
    document) and the tasks of the stages that read one each (`duplicate_ids`, `find_duplicates`,
    `minhash_verify`): `execution.partitions`, else the build's task count. A shuffle's T writers then write T files
    and its P readers make 2·T·P range reads (docs/scaling.md)."""
    return spec.execution.partitions or tasks


COMPONENT_PAIRS_PER_TASK = 100_000_000  # execution.component_pairs_per_task's default (docs/scaling.md: the requests)


def component_partitions(pairs: int, partitions: int, pairs_per_task: int) -> int:
    """P_c, the tasks of `minhash_cluster`'s rounds (and the partitions of their shuffles): ⌈verified pairs /
    `execution.component_pairs_per_task`⌉, at least 1 and at most P. Each round's P_c readers make P_c² range
    reads of the files its P_c writers wrote, so the count follows the graph's size: at P (= T) a round of a small
    graph would be T² reads of nearly empty ranges, repeated every round."""
    return max(1, min(partitions, -(-pairs // pairs_per_task)))


COMBINE_ROUND = "combine"  # the round after a stage's tasks that combines its shuffle files (`combine_group`)
COMBINED_FILES = 64  # combined files per shuffle, when the group is chosen for the build
COMBINE_ABOVE = 4_000_000  # range reads of a shuffle (2 × writers × readers) past which it is combined by default


def combine_group(writers: int, readers: int, setting: int | None) -> int:
    """Writer files of a shuffle combined into one before its `readers` read it (pipelines/dedup/combine.py): the
    spec's `execution.combine_files` when given (1: never), else none while its readers' range reads 2 × writers ×
    readers stay under COMBINE_ABOVE, and groups that make COMBINED_FILES files past it. A reader then makes
    1 + ⌈writers / group⌉ range reads (their merged index, then each file) instead of 2·writers; the combine round
    reads each writer file once."""
    if setting is not None:
        return max(1, setting)
    if 2 * writers * readers <= COMBINE_ABOVE:
        return 1
    return -(-writers // COMBINED_FILES)


def combined(shuffle: TaskFile) -> TaskFile:
    """The combined files of `shuffle` (one of SHUFFLES), in `_combined/` beside its writer files."""
    folder, _, name = shuffle.name.rpartition("/")
    return TaskFile(shuffle.folder, f"{folder}/_combined/{name}" if folder else f"_combined/{name}")


def bucket_slices(bands: int, tasks: int) -> int:
    """Slices of each band in `minhash_buckets` (ranges of the first band hash, a task each): ⌈tasks / bands⌉, at
    least 1, so the stage has about as many tasks as the build's per-file stages (`tasks`, execution.tasks)."""
    return max(1, -(-tasks // bands))


# Where each stage's work is, under the store, and the files its tasks write there (mixture/stages/files.py), by
# the stage that writes them; the steps take every path from these (`<file>.path(<folder in the build>, rank, part)`).
# A shuffle's files (SHUFFLES) are one per writer task, `{rank}` alone: each holds a byte range per partition
# (pipelines/dedup/shuffle.py), partition q read from every writer's file with `.every(folder)`.
WORK = layout.WORK_DIR
DROPPED = {r.name: TaskFile(r.folder, f"part-{RANK}.parquet") for r in drops.REASONS}  # `_dropped/<reason>/`


def dropped_by(stage: str) -> tuple[TaskFile, ...]:
    """The `_dropped/<reason>/` file of each reason whose rows the tasks of `stage` write (mixture.store.drops)."""
    return tuple(DROPPED[r.name] for r in drops.dropped_by(stage))


# prepare
QUARANTINED = TaskFile(layout.QUARANTINE_DIR, f"part-{RANK}.parquet")  # records that are not documents
PREPARED = TaskFile(f"{WORK}/prepared", f"{RANK}.parquet")  # the documents (pipelines/schemas.py WORK)
TALLY = TaskFile(f"{WORK}/tally", f"{RANK}.json")  # records read per source, files not read to their end
DEDUP = f"{WORK}/dedup"  # the exact-dedup shuffle (pipelines/dedup/keys.py)
KEYS_BY_ID = TaskFile(DEDUP, f"by_id/{RANK}.parquet")  # the documents' keys, by id partition (P)
KEYS_BY_HASH = TaskFile(DEDUP, f"by_hash/{RANK}.parquet")  # and by exact-hash partition (P)
SOURCE_RUNS = TaskFile(DEDUP, f"files/{RANK}.parquet")  # where each source file's documents are
# duplicate_ids, find_duplicates: the drops by prepared file (T), the ids dropped by hash partition (P), the tasks'
# counts
DROP_LISTS = f"{WORK}/drops"
ID_DROPS = TaskFile(DROP_LISTS, f"ids/{RANK}.parquet")
ID_GONE = TaskFile(DEDUP, f"id_drops/{RANK}.parquet")
ID_COUNTS = TaskFile(DEDUP, f"counts/ids-{RANK}.parquet")
EXACT_DROPS = TaskFile(DROP_LISTS, f"exact/{RANK}.parquet")
EXACT_COUNTS = TaskFile(DEDUP, f"counts/exact-{RANK}.parquet")
# minhash_sigs: datatrove's signature files, one per band (the partition), and beside each its slice index
SIGNATURES_DIR = f"{WORK}/mh_sigs"
SIGNATURES = TaskFile(SIGNATURES_DIR, f"bucket_{{part:03d}}/{RANK}.minhash.sig")
SLICE_INDEX = TaskFile(SIGNATURES_DIR, f"bucket_{{part:03d}}/{RANK}.minhash.slices")
# minhash_buckets: each task's colliding pairs, then its candidate pairs by partition of their later document (P),
# the bucket members (P) and the task's counts
COLLISIONS_DIR = f"{WORK}/mh_buckets"
COLLISIONS = TaskFile(COLLISIONS_DIR, f"{RANK}_00.dups")
NEAR = f"{WORK}/near_dups"  # candidate and verified near-duplicate pairs (pipelines/dedup/minhash_*.py)
CANDIDATE_PAIRS = TaskFile(NEAR, f"pairs/{RANK}.parquet")
BUCKET_MEMBERS = TaskFile(NEAR, f"members/{RANK}.parquet")
BAND_TASK_COUNTS = TaskFile(NEAR, f"bands/{RANK}.parquet")
# minhash_route: the candidate pairs by verification partition (P), where each later document's family meets
# (pipelines/dedup/minhash_route.py), and the documents each prepared file (the partition, T) is asked for
VERIFY_PAIRS = TaskFile(NEAR, f"to_verify/{RANK}.parquet")
GATHER_REQUESTS = TaskFile(NEAR, f"requests/{RANK}.parquet")
# minhash_gather: the candidate documents, by verification partition (P)
GATHERED_TEXTS = TaskFile(NEAR, f"texts/{RANK}.parquet")
# minhash_verify: the verified pairs with their evidence, by partition of their later document (P), the task's counts
VERIFIED_PAIRS = TaskFile(NEAR, f"verified/{RANK}.parquet")
# the shuffles: one file per writer task, a byte range per partition (pipelines/dedup/shuffle.py)
SHUFFLES = (KEYS_BY_ID, KEYS_BY_HASH, ID_DROPS, ID_GONE, EXACT_DROPS, CANDIDATE_PAIRS, BUCKET_MEMBERS, VERIFY_PAIRS,
            GATHER_REQUESTS, GATHERED_TEXTS, VERIFIED_PAIRS)
# shuffles whose readers are another stage's fewer tasks, each reading a range of partitions with two requests a file
# (the verified pairs: minhash_cluster's P_c tasks over P; shuffle.fetch_partitions); the cost model counts their
# reads with the reading stage
RANGE_READ = (VERIFIED_PAIRS,)
VERIFY_TASK_COUNTS = TaskFile(NEAR, f"verify_counts/{RANK}.parquet")
# minhash_cluster (rounds, pipelines/dedup/components.py and greedy_rounds.py): the verified-pair graph's edges
# after each star round, by partition of their first node, and each task's count of edges the round replaced; each
# task's documents counted by component, to the component's partition; the greedy's rounds (`greedy_*`), its finish
# (one task), then the near duplicates by prepared file, each task's counts and the report. Its tasks (the component
# partitions, P_c) follow the verified pairs, not T: `component_partitions`
COMPONENTS = f"{NEAR}/components"
GREEDY = f"{NEAR}/greedy"
COMPONENT_SIZES = TaskFile(NEAR, f"components/sizes/{RANK}.parquet")  # a shuffle file: a range per partition (P_c)
FINISH_DROPS = TaskFile(NEAR, f"greedy/finish/{RANK}.parquet")  # the finish's drops: a range per partition (P_c)
FINISH_COUNTS = TaskFile(NEAR, f"greedy/counts/finish/{RANK}.parquet")
GREEDY_COUNTS_EVERY = TaskFile(NEAR, f"greedy/counts/*/{RANK}.parquet")  # every greedy round's and the finish's
SHUFFLES = (*SHUFFLES, COMPONENT_SIZES, FINISH_DROPS)  # and each star round's star_edges, each greedy round's messages
CLUSTER_COUNTS = TaskFile(NEAR, f"components/counts/{RANK}.parquet")
FUZZY_DROPS_DIR = f"{WORK}/fuzzy_drops"
FUZZY_DROPS = TaskFile(FUZZY_DROPS_DIR, f"{RANK}.parquet")  # a shuffle file: a range per prepared file (T)
SHUFFLES = (*SHUFFLES, FUZZY_DROPS)
NEAR_DUPLICATES_REPORT = f"{WORK}/near_duplicates.json"


def combined_outputs(*shuffles: TaskFile) -> tuple[str, ...]:
    """The folders of the combined files of `shuffles` (a stage's outputs: removed when it is redone)."""
    return tuple(combined(f).glob.rsplit("/", 1)[0] for f in shuffles)


def star_edges(round_: int) -> TaskFile:
    """The graph's rows after round `round_` of `minhash_cluster` (edges by partition of their later document, and
    what a round tells the next): a shuffle file per task, a range per component partition (P_c)."""
    return TaskFile(NEAR, f"components/r{round_:03d}/{RANK}.parquet")


def star_changes(round_: int) -> TaskFile:
    """How many edges task `{rank}` of round `round_` replaced (none in an apply round after the first: the
    components are found)."""
    return TaskFile(NEAR, f"components/changes/r{round_:03d}/{RANK}.parquet")


def _greedy(kind: str, round_: int) -> TaskFile:
    return TaskFile(NEAR, f"greedy/r{round_:03d}/{kind}/{RANK}.parquet")


def greedy_pairs(round_: int) -> TaskFile:
    """The pairs task `{rank}` has left undecided after greedy round `round_` (0: the start), its own file."""
    return _greedy("pairs", round_)


def greedy_state(round_: int) -> TaskFile:
    """The documents of task `{rank}` still waiting for earlier neighbours after greedy round `round_`, its own file."""
    return _greedy("state", round_)


def greedy_fanout(round_: int) -> TaskFile:
    """The undecided documents' partitions of later neighbours: after the start a shuffle file (a range per
    partition, P_c), after a round the task's own file."""
    return _greedy("fanout", round_)


def greedy_messages(round_: int) -> TaskFile:
    """The documents greedy round `round_` decided, to their later neighbours' partitions: a shuffle file (P_c)."""
    return _greedy("messages", round_)


def greedy_drops(round_: int) -> TaskFile:
    """The drops greedy round `round_` made final in task `{rank}`'s partition, its own file."""
    return _greedy("drops", round_)


def greedy_counts(round_: int) -> TaskFile:
    """What task `{rank}` of greedy round `round_` left undecided and decided (summed to choose the next round)."""
    return TaskFile(NEAR, f"greedy/counts/r{round_:03d}/{RANK}.parquet")


def greedy_files(round_: int) -> tuple[TaskFile, ...]:
    """What greedy round `round_` (0: the start) writes."""
    return (greedy_pairs(round_), greedy_state(round_), greedy_fanout(round_), greedy_counts(round_),
            *((greedy_messages(round_), greedy_drops(round_)) if round_ else ()))
# sample, fit: their folders (mixture.fit names the files in them)
SAMPLE_DIR = f"{WORK}/sample"
FIT_ASSIGNMENTS_DIR = f"{WORK}/fit_assignments"
# assign: the store's shards (rotated ones `NNN_part-…`), the cells' sample candidates, what the task wrote
SHARDS = TaskFile("", f"cluster=*/quality=*/*part-{RANK}.parquet")
CELL_SAMPLES = TaskFile(f"{WORK}/samples", f"{RANK}.parquet")
SHARD_FACTS = TaskFile(f"{WORK}/shard_facts", f"{RANK}.json")
ID_QUARANTINED = TaskFile(layout.QUARANTINE_DIR, f"part-ids-{RANK}.parquet")  # repeated ids, as bad input

DEDUP_GROUP = "dedup"  # the dedup stages' worker group (StageDef.worker_group)

STAGES: tuple[StageDef, ...] = (
    StageDef("prepare", "read, clean, filter, fingerprint and score every document",
             "mixture.pipelines.prepare.stage:steps", TASKS, chained=True,
             files=StageFiles(tasks=(QUARANTINED, PREPARED, TALLY, *dropped_by("prepare"), SOURCE_RUNS, KEYS_BY_ID,
                                     KEYS_BY_HASH), outputs=combined_outputs(KEYS_BY_ID, KEYS_BY_HASH)),
             reads=(*SOURCE_FIELDS, "processing.filters", FUZZY, "processing.dedup.fuzzy.ngram",
                    "processing.dedup.fuzzy.permutations", "processing.dedup.fuzzy.seed", "processing.decontamination",
                    "processing.language", "partition.quality.scorer", "partition.quality.fasttext_model", "partition.quality.fasttext_label")),
    StageDef("duplicate_ids", "repeated ids, one id hash partition per task (DuckDB)",
             "mixture.pipelines.dedup.duplicate_ids:steps", PARTITIONS, chained=True,
             worker_group=DEDUP_GROUP,
             files=StageFiles(tasks=(ID_DROPS, ID_GONE, ID_COUNTS), outputs=combined_outputs(ID_DROPS, ID_GONE))),
    StageDef("find_duplicates", "exact duplicates, one text hash partition per task (DuckDB)",
             "mixture.pipelines.dedup.find_duplicates:steps", PARTITIONS, chained=True,
             worker_group=DEDUP_GROUP,
             files=StageFiles(tasks=(EXACT_DROPS, EXACT_COUNTS), outputs=combined_outputs(EXACT_DROPS)),
             reads=("processing.dedup.exact.enabled",)),
    StageDef("minhash_sigs", "MinHash signatures of the kept fuzzy-group documents",
             "mixture.pipelines.dedup.minhash_sigs:steps", TASKS, when=FUZZY, chained=True,
             worker_group=DEDUP_GROUP,
             reads=MINHASH,
             files=StageFiles(outputs=(SIGNATURES_DIR,))),
    StageDef("minhash_buckets", "candidate near-duplicate pairs, one task per band and first-hash slice",
             "mixture.pipelines.dedup.minhash_buckets:steps", BAND_SLICES, when=FUZZY, chained=True,
             worker_group=DEDUP_GROUP,
             reads=MINHASH,
             files=StageFiles(tasks=(CANDIDATE_PAIRS, BUCKET_MEMBERS, BAND_TASK_COUNTS),
                              outputs=(COLLISIONS_DIR, *combined_outputs(CANDIDATE_PAIRS, BUCKET_MEMBERS)))),
    StageDef("minhash_route", "candidate pairs to where their documents' families meet, by partition",
             "mixture.pipelines.dedup.minhash_route:steps", PARTITIONS, when=FUZZY, chained=True,
             worker_group=DEDUP_GROUP,
             files=StageFiles(tasks=(VERIFY_PAIRS, GATHER_REQUESTS),
                              outputs=combined_outputs(VERIFY_PAIRS, GATHER_REQUESTS))),
    StageDef("minhash_gather", "candidate documents, each prepared file read once, to their partitions",
             "mixture.pipelines.dedup.minhash_gather:steps", TASKS, when=FUZZY, chained=True,
             worker_group=DEDUP_GROUP,
             files=StageFiles(tasks=(GATHERED_TEXTS,), outputs=combined_outputs(GATHERED_TEXTS))),
    StageDef("minhash_verify", "candidate pairs verified on their shingles, by partition",
             "mixture.pipelines.dedup.minhash_verify:steps", PARTITIONS, when=FUZZY, chained=True,
             worker_group=DEDUP_GROUP,
             files=StageFiles(tasks=(VERIFIED_PAIRS, VERIFY_TASK_COUNTS), outputs=combined_outputs(VERIFIED_PAIRS)),
             reads=("processing.dedup.fuzzy",)),
    StageDef("minhash_cluster", "near duplicates: components and the greedy keep, in rounds",
             "mixture.pipelines.dedup.minhash_cluster:steps", PARTITIONS, when=FUZZY, chained=True, rounds=True,
             worker_group=DEDUP_GROUP,
             reads=("processing.dedup.fuzzy",),
             files=StageFiles(outputs=(COMPONENTS, GREEDY, FUZZY_DROPS_DIR, NEAR_DUPLICATES_REPORT))),
    # not chained: its sample rate comes from the number of documents dedup kept
    StageDef("sample", "a seeded sample of the kept documents, its tokens and terms counted",
             "mixture.pipelines.partition.sample:steps", TASKS,
             reads=("partition.clusters.sample_docs", "seed", FUZZY, "tokenizer", "tokenizer_implementation"),
             files=StageFiles(outputs=(SAMPLE_DIR,))),
    StageDef("fit", "embedder (merged term counts), clusters, labels, quality calibration",
             "mixture.pipelines.partition.fit:steps", 1, chained=True,
             reads=("partition.clusters", "partition.quality", "seed", "fit_implementation"),
             files=StageFiles(outputs=(layout.MODEL_DIR, FIT_ASSIGNMENTS_DIR))),
    StageDef("assign", "route duplicates; cluster, score and tokenize; write the cells",
             "mixture.pipelines.partition.assign:steps", TASKS, chained=True,
             files=StageFiles(tasks=(SHARDS, CELL_SAMPLES, SHARD_FACTS, ID_QUARANTINED, *dropped_by("assign"))),
             reads=("tokenizer", "tokenizer_implementation", "partition.quality.edges", "partition.clusters.k", "store.keep_token_ids",
                    "store.samples_per_cell", "store.exemplars_per_cell", "store.shard_bytes", "store.compression",
                    "seed", FUZZY)),
)


def names() -> tuple[str, ...]:
    """Every stage's name, in pipeline order (the keys `execution.stages` accepts)."""
    return tuple(s.name for s in STAGES)


def get(name: str) -> StageDef:
    for s in STAGES:
        if s.name == name:
            return s
    raise KeyError(f"no stage {name!r}; stages are {', '.join(names())}")


def worker_group(name: str) -> str | None:
    """The worker group of stage `name` (StageDef.worker_group); None for a name not in the registry."""
    return next((s.worker_group for s in STAGES if s.name == name), None)


def planned(spec: Spec) -> list[StageDef]:
    """The stages a build of `spec` runs, in order."""
    return [s for s in STAGES if s.runs(spec)]


def driver_waits_after(spec: Spec, name: str) -> bool:
    """True after the last stage and before a stage that is not chained: a Slurm driver waits there; the stages in
    between are submitted as one chain of `afterok` dependencies. A stage not in the registry is a barrier."""
    plan = [s.name for s in planned(spec)]
    if name not in plan:
        return True
    i = plan.index(name)
    return i == len(plan) - 1 or not get(plan[i + 1]).chained


def order_key(stage: str) -> tuple[int, str]:
    """Sort key of stages (names, or paths that end in one) in pipeline order; other names come after, by name."""
    name, order = stage.rstrip("/").rpartition("/")[2], names()
    return (order.index(name), "") if name in order else (len(order), name)
