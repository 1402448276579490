"""The build's stages, in pipeline order: the one place a stage is added. The spec's `execution.stages` names, the
build loop, the Slurm chains, the explorer's stage order and each stage's key (the spec fields it `reads`, what it
writes) all come from `STAGES`.

Light on purpose (no datatrove import): the spec validation imports it; a stage's steps are imported when it is built."""

from __future__ import annotations

import importlib
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mixture.store import drops, layout

if TYPE_CHECKING:
    from mixture.spec.models import Spec

TASKS = "tasks"  # a stage's task count: the build's (execution.tasks, or --tasks)
ID_QUARANTINE = "part-ids-${rank}.parquet"  # `_quarantine/` file of the duplicate-id check (one per task)
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
    # globs under the store ({rank}: the task, 5 digits) of the files a task writes under names its rerun may not
    # rewrite; the stage's first step removes them (pipelines/runtime/attempts.py)
    side_files: tuple[str, ...] = ()
    # the spec fields the stage's output depends on, as paths of the canonical spec (mixture/stages/keys.py): a
    # field (`seed`), a section (every field under it: `processing.filters`) or a field of every list item
    # (`sources[].uri`). The stage's key hashes their values, the files they name (sources, benchmarks, models, a
    # tokenizer file), the code version and the previous stage's key; `when` is read too. Be complete: a field
    # missing here lets a rerun reuse work the edited spec would not have made (tests/stages/test_stage_keys.py
    # records what each stage's steps read and fails on a field not listed).
    reads: tuple[str, ...] = ()
    # what the stage writes as a whole, globs under the store: removed (with its side files of every task and its
    # `_build/<name>/`) when the stage is redone because its key changed
    outputs: tuple[str, ...] = ()

    def runs(self, spec: Spec) -> bool:
        return self.when is None or bool(operator.attrgetter(self.when)(spec))

    def task_count(self, spec: Spec, tasks: int) -> int:
        if isinstance(self.tasks, int):
            return self.tasks
        if self.tasks == BAND_SLICES:
            bands = spec.processing.dedup.fuzzy.bands
            return bands * bucket_slices(bands, tasks)
        return tasks if self.tasks == TASKS else int(operator.attrgetter(self.tasks)(spec))

    def steps_function(self) -> Callable:
        module, _, function = self.steps.partition(":")
        return getattr(importlib.import_module(module), function)


def bucket_slices(bands: int, tasks: int) -> int:
    """Slices of each band in `minhash_buckets` (ranges of the first band hash, a task each): ⌈tasks / bands⌉, at
    least 1, so the stage has about as many tasks as the build's per-file stages (`tasks`, execution.tasks)."""
    return max(1, -(-tasks // bands))


def _drop_files(stage: str) -> tuple[str, ...]:
    """The `_dropped/<reason>/` file of each reason whose rows the tasks of `stage` write (mixture.store.drops)."""
    return tuple(f"{r.folder}/part-{{rank}}.parquet" for r in drops.dropped_by(stage))


WORK = layout.WORK_DIR
DEDUP = f"{WORK}/dedup"  # the exact-dedup shuffle (pipelines/dedup/keys.py)
NEAR = f"{WORK}/near_dups"  # candidate and verified near-duplicate pairs (pipelines/dedup/minhash_*.py)

STAGES: tuple[StageDef, ...] = (
    StageDef("prepare", "read, clean, filter, fingerprint and score every document",
             "mixture.pipelines.prepare.stage:steps", TASKS, chained=True,
             side_files=(f"{layout.QUARANTINE_DIR}/part-{{rank}}.parquet", f"{WORK}/prepared/{{rank}}.parquet",
                         f"{WORK}/tally/{{rank}}.json", *_drop_files("prepare"), f"{DEDUP}/files/{{rank}}.parquet",
                         f"{DEDUP}/by_id/*/{{rank}}.parquet", f"{DEDUP}/by_hash/*/{{rank}}.parquet"),
             reads=(*SOURCE_FIELDS, "processing.filters", FUZZY, "processing.dedup.fuzzy.ngram",
                    "processing.dedup.fuzzy.permutations", "processing.dedup.fuzzy.seed", "processing.decontamination",
                    "processing.language", "partition.quality.scorer", "partition.quality.fasttext_model", "partition.quality.fasttext_label")),
    StageDef("duplicate_ids", "repeated ids, one id hash partition per task (DuckDB)",
             "mixture.pipelines.dedup.duplicate_ids:steps", TASKS, chained=True,
             side_files=(f"{WORK}/drops/*/ids-{{rank}}.parquet", f"{DEDUP}/id_drops/*/{{rank}}.parquet",
                         f"{DEDUP}/counts/ids-{{rank}}.parquet")),
    StageDef("find_duplicates", "exact duplicates, one text hash partition per task (DuckDB)",
             "mixture.pipelines.dedup.find_duplicates:steps", TASKS, chained=True,
             side_files=(f"{WORK}/drops/*/exact-{{rank}}.parquet", f"{DEDUP}/counts/exact-{{rank}}.parquet"),
             reads=("processing.dedup.exact.enabled",)),
    StageDef("minhash_sigs", "MinHash signatures of the kept fuzzy-group documents",
             "mixture.pipelines.dedup.minhash_sigs:steps", TASKS, when=FUZZY, chained=True,
             reads=MINHASH,
             outputs=(f"{WORK}/mh_sigs",)),
    StageDef("minhash_buckets", "candidate near-duplicate pairs, one task per band and first-hash slice",
             "mixture.pipelines.dedup.minhash_buckets:steps", BAND_SLICES, when=FUZZY, chained=True,
             side_files=(f"{NEAR}/pairs/*/{{rank}}.parquet", f"{NEAR}/members/*/{{rank}}.parquet",
                         f"{NEAR}/requests/*/{{rank}}.parquet", f"{NEAR}/bands/{{rank}}.parquet"),
             reads=MINHASH,
             outputs=(f"{WORK}/mh_buckets",)),
    StageDef("minhash_gather", "candidate documents, each prepared file read once, to their partitions",
             "mixture.pipelines.dedup.minhash_gather:steps", TASKS, when=FUZZY, chained=True,
             side_files=(f"{NEAR}/texts/*/{{rank}}.parquet",)),
    StageDef("minhash_verify", "candidate pairs verified on their shingles, by partition",
             "mixture.pipelines.dedup.minhash_verify:steps", TASKS, when=FUZZY, chained=True,
             side_files=(f"{NEAR}/verified/{{rank}}.parquet", f"{NEAR}/verify_counts/{{rank}}.parquet"),
             reads=("processing.dedup.fuzzy",)),
    StageDef("minhash_cluster", "near duplicates: greedy keep in spec order over the verified pairs",
             "mixture.pipelines.dedup.minhash_cluster:steps", 1, when=FUZZY, chained=True,
             reads=("processing.dedup.fuzzy",),
             outputs=(f"{WORK}/fuzzy_drops", f"{WORK}/near_duplicates.json")),
    # not chained: its sample rate comes from the number of documents dedup kept
    StageDef("sample", "a seeded sample of the kept documents, its tokens and terms counted",
             "mixture.pipelines.partition.sample:steps", TASKS,
             reads=("partition.clusters.sample_docs", "seed", FUZZY, "tokenizer"), outputs=(f"{layout.WORK_DIR}/sample",)),
    StageDef("fit", "embedder (merged term counts), clusters, labels, quality calibration",
             "mixture.pipelines.partition.fit:steps", 1, chained=True,
             reads=("partition.clusters", "partition.quality", "seed"),
             outputs=(layout.MODEL_DIR, f"{layout.WORK_DIR}/fit_assignments")),
    StageDef("assign", "route duplicates; cluster, score and tokenize; write the cells",
             "mixture.pipelines.partition.assign:steps", TASKS, chained=True,
             side_files=("cluster=*/quality=*/*part-{rank}.parquet", f"{layout.WORK_DIR}/samples/{{rank}}.parquet",
                         f"{layout.WORK_DIR}/shard_facts/{{rank}}.json",
                         f"{layout.QUARANTINE_DIR}/{ID_QUARANTINE.replace('${rank}', '{rank}')}",
                         *_drop_files("assign")),
             reads=("tokenizer", "partition.quality.edges", "partition.clusters.k", "store.keep_token_ids",
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
