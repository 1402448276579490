"""The build's cost model: per-stage rates measured by the growth benchmark, projected to a workload (tokens, tasks,
cores) as core-hours, wall hours, memory and objects per stage, and the Slurm requests and prices that follow."""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mixture.stages.registry import COMPONENT_PAIRS_PER_TASK, combine_group, component_partitions

RATES_FILE = "rates.json"  # packaged beside this module: the rates of the last published growth benchmark
SAFETY = 2.0  # a Slurm time limit: twice the projected longest task, at least MIN_LIMIT_HOURS
MIN_LIMIT_HOURS = 1.0
MEMORY_HEADROOM = 1.5  # a memory request: the measured peak per task × this, in whole GiB
GIB = 2**30
ROUNDS_PER_DOUBLING = 2.0  # star rounds added per doubling of the input (RoundsRate)
# rounds a component's edges are still read after it is a star: the apply round that finds its centre whole, the
# least round that tells the partitions holding its edges, the apply round that writes them DONE (components.py)
FINISH_ROUNDS = 3
# greedy rounds added per doubling of a component's documents: measured 11 at 1M documents and 12 at 4M
# (docs/performance.md), rounded up
GREEDY_ROUNDS_PER_DOUBLING = 1.0
# members of the largest candidate cluster of Marin's fuzzy dedup of the 25.6T pool (marin-community/marin #8237):
# the largest near-duplicate component a user of that pool should plan for (ComponentPath)
MARIN_LARGEST = 825_000_000
# requests of a `minhash_buckets` task to each signature file of its band (T of them): its size, its slice index, its
# run (pipelines/dedup/minhash_buckets.py BandCollisions); of the combine round to each: its slice index, its records
SIGNATURE_READS = 3
LIST_PAGE = 1000  # objects a listing request returns (GCS and S3)
# listing requests of a shuffle's reader (the emulator benchmark, docs/performance.md, s3: the larger): over its
# writers' files 3 and a page per 1,000 files; over combined files 1, and a page per 1,000 of the writers' files
# (their tiling checked against the writers listed now)
LISTS_UNCOMBINED, LISTS_COMBINED = 3, 1
# requests of the task that merges a shuffle's combined indexes to each combined file (its trailer, its entries)
INDEX_READS = 2


def combined_reads(files: int) -> int:
    """Range reads of a reader of a combined shuffle of `files` combined files: its slice of their merged index,
    then its range of each (shuffle.shuffle_ranges)."""
    return 1 + files


def list_pages(files: int) -> int:
    """Listing requests to list a folder of `files` objects."""
    return max(1, -(-files // LIST_PAGE))


class ObjectRate(BaseModel):
    """Files a stage writes, with T tasks, P partitions and C cells: pairs·T·P + (per_task + per_cell·C)·T + fixed.
    `pairs`: its templates with a partition (each writer writes one file per partition, as at scale every writer has
    rows for every partition); `per_task`, `per_cell`: its other templates (a shuffle file, a shard per cell and
    task) and, fitted on real builds, its records and outputs per task; `fixed`: what it writes once. `shuffles`:
    its shuffle files per task, each read by the P readers with 2 range reads (stages.registry.SHUFFLES)."""

    model_config = ConfigDict(frozen=True)

    pairs: float = 0.0
    per_task: float = 0.0
    per_cell: float = 0.0
    fixed: float = 0.0
    shuffles: float = 0.0

    def count(self, tasks: int, cells: int, partitions: int | None = None) -> int:
        p = partitions or tasks
        return max(0, round(self.pairs * tasks * p + (self.per_task + self.per_cell * cells) * tasks + self.fixed))

    def reads(self, tasks: int, partitions: int | None = None, combine_files: int | None = None) -> int:
        """Range reads of the stage's shuffle files: each of its `tasks` writer files read by the max(T, P) readers
        with 2 range reads, or, where the shuffle is combined (stages.registry.combine_group), each writer file
        read by the combine round (its index, then front to back: ~3 reads, more past 4 MiB), each combined file's
        index by the task that merges them, and the merged index and each combined file by the readers."""
        readers = max(tasks, partitions or tasks)
        group = combine_group(tasks, readers, combine_files)
        files = -(-tasks // group)
        per_shuffle = 2 * tasks * readers if group <= 1 else \
            3 * tasks + INDEX_READS * files + combined_reads(files) * readers
        return round(self.shuffles * per_shuffle)

    def listings(self, tasks: int, partitions: int | None = None, combine_files: int | None = None) -> int:
        """Listing requests of the stage's shuffles: each reader lists the T writer files (and the combined ones),
        each task of a combine round and the one that merges their indexes the writer files."""
        readers = max(tasks, partitions or tasks)
        group = combine_group(tasks, readers, combine_files)
        if group <= 1:
            per_shuffle = readers * (LISTS_UNCOMBINED + list_pages(tasks))
        else:
            per_shuffle = (readers + -(-tasks // group) + 1) * (LISTS_COMBINED + list_pages(tasks))
        return round(self.shuffles * per_shuffle)

    def combined(self, tasks: int, partitions: int | None = None, combine_files: int | None = None) -> int:
        """Combined files the stage's combine round writes and their merged index (none when its shuffles are not
        combined)."""
        group = combine_group(tasks, max(tasks, partitions or tasks), combine_files)
        return 0 if group <= 1 else round(self.shuffles * (-(-tasks // group) + 1))


class RoundsRate(BaseModel):
    """A stage run in rounds over the verified near-duplicate pairs (`minhash_cluster`), at the reference size: its
    star rounds and the pairs. At scale its tasks are P_c (stages.registry.component_partitions of the pairs, taken
    as growing with the tokens) and its rounds grow by ROUNDS_PER_DOUBLING per doubling of the input (large-star/
    small-star halve a component's depth about every round pair): each round writes a shuffle file and a count per
    task and reads P_c² ranges; the greedy's drops are one shuffle file per task, read by the T `assign` tasks."""

    model_config = ConfigDict(frozen=True)

    rounds: int = Field(ge=1, description="star rounds at the reference size")
    pairs: int = Field(ge=0, description="verified near-duplicate pairs at the reference size")

    def at(self, ratio: float) -> int:
        """Star rounds at `ratio` × the reference input."""
        return self.rounds + math.ceil(ROUNDS_PER_DOUBLING * math.log2(max(1.0, ratio)))


class ComponentPath(BaseModel):
    """The largest near-duplicate component's path through `minhash_cluster`: its edges are kept in the partitions of
    their larger ends, spread over the stage's tasks like the other pairs (no task holds a node's larger neighbours),
    so each of its star rounds until it is found whole (FINISH_ROUNDS after it is a star) adds its share to every
    task; its greedy keep is spread too (a document's decision goes to each partition of its later neighbours once,
    and the finish holds at most a task's share of pairs). Measured by bench/components_bench.py on a graph that is
    that one component, at `tasks` tasks: the longest task's CPU seconds of each kind, summed over the rounds."""

    model_config = ConfigDict(frozen=True)

    members: int = Field(gt=0, description="documents of the measured component")
    pairs: int = Field(gt=0, description="its verified pairs")
    rounds: int = Field(ge=1, description="its star rounds")
    tasks: int = Field(1, ge=1, description="the tasks of each round of the measured run (P_c)")
    star_seconds: float = Field(ge=0, description="the longest task of each star round, summed")
    greedy_rounds: int = Field(ge=0, description="the greedy's rounds before its finish")
    greedy_seconds: float = Field(ge=0, description="the longest task of each greedy round and the finish, summed "
                                                    "(the stage's work, spread: not the component's path)")
    measured: str = Field(description="by which command, on which machine")

    def rounds_at(self, members: float) -> int:
        """Star rounds of a component of `members` documents until it is found whole: the measured component's,
        ROUNDS_PER_DOUBLING more per doubling of its documents (as a stage's grow with its input: the measured ones
        did not grow from 250k to 4M documents), and FINISH_ROUNDS."""
        return self.rounds + math.ceil(ROUNDS_PER_DOUBLING * math.log2(max(1.0, members / self.members))) + FINISH_ROUNDS

    def greedy_rounds_at(self, members: float) -> int:
        """The greedy's rounds over a component of `members` documents: the measured ones, GREEDY_ROUNDS_PER_DOUBLING
        more per doubling of its documents (a round that settles under 1/16 of the pairs left ends them)."""
        doublings = math.log2(max(1.0, members / self.members))
        return self.greedy_rounds + math.ceil(GREEDY_ROUNDS_PER_DOUBLING * doublings)

    def seconds(self, members: float, stage_rounds: int, tasks: int) -> tuple[float, int]:
        """(what its rounds add to each of the stage's `tasks` tasks, its rounds) for a component of
        `members` documents in a stage of `stage_rounds` star rounds: its own rounds (`rounds_at`, at most the
        stage's), each the measured round's longest task scaled by its documents and spread over `tasks`."""
        rounds = min(stage_rounds, self.rounds_at(members))
        share = self.star_seconds / self.rounds * members / self.members * self.tasks / max(1, tasks)
        return share * rounds, rounds


class LinearCost(BaseModel):
    """A stage's CPU seconds as fixed + per_task · its tasks + per_range · T · P + per_unit · its work (input tokens,
    or candidate pairs), fitted by non-negative least squares on growth runs that vary the tasks and the input apart
    (bench/cost_rates.py): what a task pays whatever its input (its start, listings, small files, a DuckDB query),
    what a shuffle's writer–reader pair costs (a range written and read), and the work itself. An exponent fitted on
    a run whose T grows with its input reads the T · P ranges as superlinear work."""

    model_config = ConfigDict(frozen=True)

    fixed: float = Field(0.0, ge=0, description="seconds per build")
    per_task: float = Field(0.0, ge=0, description="seconds per task of the stage")
    per_range: float = Field(0.0, ge=0, description="seconds per writer × reader pair of the build's shuffles (T · P)")
    per_unit: float = Field(0.0, ge=0, description="seconds per input token, or per candidate pair (`scaled_by`)")
    r2: float | None = Field(None, description="share of the measured CPU's variance the fit explains")

    def seconds(self, tasks: float, ranges: float, amount: float) -> float:
        return self.fixed + self.per_task * tasks + self.per_range * ranges + self.per_unit * amount


class StageRate(BaseModel):
    """One stage as the growth benchmark measured it: its CPU at the reference size and how it grows."""

    model_config = ConfigDict(frozen=True)

    stage: str
    cpu_seconds: float = Field(ge=0, description="CPU seconds of the stage at the reference size")
    scaled_by: Literal["tokens", "pairs", "sample", "tasks"] = Field(
        description="what its work grows with: the input tokens, the near-duplicate candidate pairs, the fit sample "
                    "or the tasks")
    reference: float = Field(gt=0, description="that quantity at the reference size")
    exponent: float | None = Field(description="CPU growth exponent over the sizes (never applied below 1)")
    peak_rss: int = Field(ge=0, description="peak resident bytes of its largest task at the reference size")
    objects: ObjectRate = Field(ObjectRate(), description="files it writes as a function of the tasks and cells")
    rounds: RoundsRate | None = Field(None, description="a stage run in rounds: its rounds and pairs (its objects "
                                                        "and tasks then follow them)")
    linear: LinearCost | None = Field(None, description="its CPU as fixed, per-task, per-range and per-unit seconds "
                                                        "(applied instead of the exponent when present)")


class Rates(BaseModel):
    """What the projection rests on: the stages' rates and where they were measured."""

    model_config = ConfigDict(frozen=True)

    format: Literal[1] = 1
    machine: str = Field(description="the machine the rates were measured on")
    measured: str = Field(description="when and by which command")
    input_tokens: int = Field(gt=0, description="input tokens of the reference size")
    kept_share: float = Field(gt=0, le=1, description="kept tokens / input tokens at the reference size")
    bare_tokenizer: float | None = Field(None, description="the bare tokenizer's tokens per second per core there")
    candidate_pairs: float | None = Field(None, gt=0, description="near-duplicate candidate pairs at the reference "
                                                                  "size (a stage scaled by `pairs` is scaled by them)")
    pairs_exponent: float | None = Field(None, description="growth exponent of the candidate pairs with the input "
                                                           "tokens over the sizes: the corpus's duplicates, not a "
                                                           "stage's cost")
    stages: tuple[StageRate, ...]
    largest_component: ComponentPath | None = Field(None, description="the largest near-duplicate component's path "
                                                                      "through `minhash_cluster`")

    def pairs_at(self, input_tokens: float) -> float:
        """Candidate pairs projected to `input_tokens`: the reference's grown by `pairs_exponent` (never under 1)."""
        if self.candidate_pairs is None:
            raise ValueError("these rates have no candidate pairs: give the workload's")
        return self.candidate_pairs * (input_tokens / self.input_tokens) ** max(1.0, self.pairs_exponent or 1.0)


@dataclass(frozen=True)
class Workload:
    """What a build is asked to do: its input tokens, its tasks per stage (the registry's task counts for
    `execution.tasks` = T) and its fit sample."""

    input_tokens: float
    tasks: int
    stage_tasks: dict[str, int]
    fit_sample: int
    cells: int = 200
    partitions: int | None = None  # dedup's P (execution.partitions); None: the tasks
    component_pairs_per_task: int = COMPONENT_PAIRS_PER_TASK  # execution.component_pairs_per_task: P_c in rounds
    combine_files: int | None = None  # execution.combine_files: the shuffles' combine group (None: the default)
    bands: int = 14  # processing.dedup.fuzzy.bands: `minhash_sigs` writes a signature file per band and task
    candidate_pairs: float | None = None  # near-duplicate candidate pairs; None: the rates' growth of them
    largest_component: float | None = None  # documents of the largest near-duplicate component; None: not projected


@dataclass(frozen=True)
class StageCost:
    stage: str
    tasks: int
    core_hours: float
    linear_core_hours: float
    wall_hours: float  # on the given cores: core-hours / min(cores, tasks), or the largest component's path
    task_hours: float  # the longest task: the work shared evenly, or the largest component's
    peak_rss: int
    objects: int
    scaled: str  # how the reference figure was scaled, for a reader
    reads: int = 0  # range reads of the shuffle files it writes
    listings: int = 0  # listing requests of its readers over those files
    combine_group: int = 1  # writer files of its shuffles combined into one (1: not combined)

    def time_limit_hours(self, tasks_per_job: int = 1) -> float:
        """The time limit to ask Slurm for an array element that runs `tasks_per_job` tasks of the stage one after
        another: SAFETY × their projected time, in quarter hours, at least MIN_LIMIT_HOURS."""
        return max(MIN_LIMIT_HOURS, math.ceil(self.task_hours * tasks_per_job * SAFETY * 4) / 4)

    @property
    def memory_request_gib(self) -> int:
        return max(1, math.ceil(self.peak_rss * MEMORY_HEADROOM / GIB))


def project(rates: Rates, work: Workload, cores: int) -> list[StageCost]:
    """Every stage of `rates` scaled to `work` on `cores` cores: with its fitted `linear` cost, its fixed, per-task,
    per-range (T · P) and per-unit seconds; otherwise its CPU seconds times (work / reference)^e, e its CPU growth
    exponent, never under 1 (the linear figure beside it). A stage scaled by the candidate pairs takes the
    workload's, or the rates' grown to its tokens (`Rates.pairs_at`)."""
    out = []
    for r in rates.stages:
        amount = _amount(r, rates, work)
        ratio = amount / r.reference
        e = 1.0 if r.exponent is None or r.scaled_by == "sample" else max(r.exponent, 1.0)
        core_s = r.cpu_seconds * ratio**e
        tasks = work.stage_tasks.get(r.stage, 1)
        objects = r.objects.count(work.tasks, work.cells, work.partitions) \
            + r.objects.combined(work.tasks, work.partitions, work.combine_files)
        reads = r.objects.reads(work.tasks, work.partitions, work.combine_files)
        listings = r.objects.listings(work.tasks, work.partitions, work.combine_files)
        scaled = [f"{r.scaled_by} ×{ratio:,.0f}" + (f" ^{e:.2f}" if e != 1 and r.linear is None else "")]
        if r.stage in ("minhash_sigs", "minhash_buckets"):  # the bands' signature files, read by slice
            objects, reads = _signature_requests(r.stage, work, objects, reads)
        if r.stage == "minhash_buckets":  # each task lists its band's T signature files
            listings += tasks * (LISTS_COMBINED + list_pages(work.tasks))
        if r.rounds is not None:
            # a component of N documents has at least N - 1 verified pairs: the stage's tasks hold them too
            pairs = max(round(r.rounds.pairs * ratio), round(work.largest_component or 0) - 1)
            tasks = component_partitions(pairs, work.partitions or work.tasks, work.component_pairs_per_task)
            n = r.rounds.at(ratio)
            g = _greedy_rounds(rates, work, n)
            # per task: each star round's edges and counts; the start's sizes, pairs, documents, partitions and
            # counts; each greedy round's six files; the drops and their counts; the finish's two. Reads: star rounds
            # 1 … n-1, each greedy round and the drops' sizes P_c² ranges each (with the own files, 4 a task a
            # greedy round), `assign`'s T tasks P_c each
            objects = (2 * n + 7 + 6 * g) * tasks + 3
            reads = 2 * ((n + g) * tasks * tasks + 4 * g * tasks + work.tasks * tasks)
            listings = ((n + 4 * g + 2) * tasks + work.tasks) * (LISTS_UNCOMBINED + list_pages(tasks))
            verified = _verified_pairs_requests(work, tasks)
            objects, reads, listings = objects + verified[0], reads + verified[1], listings + verified[2]
            scaled.append(f"{n} star and {g} greedy rounds of {tasks:,} tasks")
        if r.linear is not None:
            ranges = work.tasks * (work.partitions or work.tasks)
            core_s = r.linear.seconds(tasks, ranges, amount)
            unit = "a token" if r.scaled_by == "tokens" else "a pair" if r.scaled_by == "pairs" else "each"
            rate = f"{r.linear.per_unit * 1e6:.3g} µs" if r.linear.per_unit >= 1e-6 else f"{r.linear.per_unit * 1e9:.3g} ns"
            scaled.append(f"{rate} {unit}; its tasks {r.linear.per_task * tasks / 3600:,.1f} h, "
                          f"T·P {r.linear.per_range * ranges / 3600:,.1f} h")
        wall_s, task_s = core_s / min(cores, tasks), core_s / tasks
        path = rates.largest_component
        if r.rounds is not None and path is not None and work.largest_component:
            # its largest component's edges are spread over the stage's tasks: each of its rounds adds its share
            added, rounds = path.seconds(work.largest_component, r.rounds.at(ratio), tasks)
            core_s, wall_s, task_s = core_s + added * tasks, wall_s + added, task_s + added
            scaled.append(f"its largest component ({work.largest_component:,.0f} documents) {added / 3600:,.2f} h more "
                          f"on each task ({rounds} star rounds)")
        out.append(StageCost(
            stage=r.stage, tasks=tasks, core_hours=core_s / 3600, linear_core_hours=r.cpu_seconds * ratio / 3600,
            wall_hours=wall_s / 3600, task_hours=task_s / 3600, peak_rss=r.peak_rss,
            objects=objects, reads=reads, listings=listings, scaled=", ".join(scaled),
            combine_group=combine_group(work.tasks, max(work.tasks, work.partitions or work.tasks), work.combine_files)
            if r.objects.shuffles else 1))
    return out


def _greedy_rounds(rates: Rates, work: Workload, star_rounds: int) -> int:
    """The greedy's rounds in `minhash_cluster` for the requests: the measured path's grown to the workload's largest
    component (or Marin's candidate cluster, which a user of a pool like it should plan for), at most the star
    rounds; without a measured path, as many as the star rounds."""
    path = rates.largest_component
    if path is None:
        return star_rounds
    return min(star_rounds, path.greedy_rounds_at(work.largest_component or MARIN_LARGEST))


def _verified_pairs_requests(work: Workload, readers: int) -> tuple[int, int, int]:
    """(objects, range reads, listings) of `minhash_verify`'s shuffle (stages.registry.RANGE_READ: P writer files,
    combined as the build combines them) read three times (star round 0, the greedy's start, the drops) by `readers` (P_c) tasks, each a range of
    its partitions with two requests a file, or one a combined file and one for the merged index
    (shuffle.fetch_partitions)."""
    p, passes = work.partitions or work.tasks, 3
    group = combine_group(p, max(work.tasks, p), work.combine_files)
    if group <= 1:  # a reader: two requests a writer file
        objects, reads, listings, lists, per_reader = 0, 0, 0, LISTS_UNCOMBINED, 2 * p
    else:  # the combine rounds after minhash_verify: its files and their index, ~3 reads a writer file, a listing a task
        files = -(-p // group)
        objects, reads = files + 1, 3 * p + INDEX_READS * files
        listings, lists, per_reader = (files + 1) * (LISTS_COMBINED + list_pages(p)), LISTS_COMBINED, combined_reads(files)
    return objects, reads + passes * per_reader * readers, listings + passes * readers * (lists + list_pages(p))


def candidate_pairs(rates: Rates, work: Workload) -> float | None:
    """The near-duplicate candidate pairs of `work`: its own, else the rates' grown to its tokens (None: neither)."""
    if work.candidate_pairs is not None:
        return work.candidate_pairs
    return rates.pairs_at(work.input_tokens) if rates.candidate_pairs is not None else None


def _amount(r: StageRate, rates: Rates, work: Workload) -> float:
    """What the stage's work grows with, in `work`."""
    if r.scaled_by == "pairs":
        pairs = candidate_pairs(rates, work)
        if pairs is None:
            raise ValueError(f"stage {r.stage!r} is scaled by candidate pairs, and the rates and the workload have no "
                             "candidate pairs: give the workload's")
        return pairs
    return {"tokens": work.input_tokens, "sample": work.fit_sample, "tasks": work.tasks}[r.scaled_by]


def _signature_requests(stage: str, work: Workload, objects: int, reads: int) -> tuple[int, int]:
    """`objects` and `reads` of `minhash_sigs` or `minhash_buckets` with the signature files' own: each bucket task
    (band, slice) reads its run of every one of its band's T files, or, where `minhash_sigs` combined them (a
    combine round: each file read once, C = ⌈T / group⌉ files a band, and their merged index), its slice of the
    index and its range of each of its band's C files."""
    buckets = work.stage_tasks.get("minhash_buckets", work.tasks)
    group = combine_group(work.tasks, max(work.tasks, work.partitions or work.tasks, buckets), work.combine_files)
    combined = -(-work.tasks // group)
    if stage == "minhash_sigs":
        return (objects + work.bands * (combined + 1),
                reads + work.bands * (SIGNATURE_READS * work.tasks + INDEX_READS * combined)) if group > 1 \
            else (objects, reads)
    return objects, reads + (combined_reads(combined) * buckets if group > 1 else SIGNATURE_READS * buckets * work.tasks)


def slurm_time(hours: float) -> str:
    """`--time` of a Slurm request: HH:MM:00."""
    minutes = math.ceil(hours * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


class Prices(BaseModel):
    """A user's own prices (never fetched): per core-hour, per 1,000 object writes."""

    model_config = ConfigDict(extra="forbid")

    core_hour: float = Field(ge=0, description="price of one core-hour")
    per_1000_writes: float = Field(0.0, ge=0, description="price of 1,000 object writes (class A operations: "
                                                          "uploads and listings)")
    currency: str = "USD"


def price(costs: list[StageCost], prices: Prices) -> dict[str, float]:
    compute = sum(c.core_hours for c in costs) * prices.core_hour
    writes = sum(c.objects + c.listings for c in costs) / 1000 * prices.per_1000_writes  # listings: class A too
    return {"compute": compute, "writes": writes, "total": compute + writes}


def load_rates(path: str | Path | None = None) -> Rates:
    """Rates from `path`, or the packaged ones (the last published growth benchmark's)."""
    text = Path(path).read_text() if path else resources.files(__package__).joinpath(RATES_FILE).read_text()
    return Rates.model_validate_json(text)
