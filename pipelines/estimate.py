"""`mixture estimate`: a build's cost before it runs — its sources listed and a sample of their files read by the
build's own readers and tokenizer, the totals projected from it, and the cost model (mixture/stages/costs.py) applied."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

from mixture.pipelines.context import BuildContext
from mixture.pipelines.sources.files import SourceReader
from mixture.pipelines.sources.records import SourceFiles
from mixture.spec.load import load_spec
from mixture.stages import costs
from mixture.stages import registry as stage_registry
from mixture.tokenizer import count_tokens, load_tokenizer

SAMPLE_BYTES = 16 * 2**20  # file bytes read per source (whole files, spread over its listing)
BATCH = 256


@dataclass
class SourceSample:
    """One source: its listing, and what the files read in full held."""

    name: str
    files: int
    bytes: int
    read_files: int = 0
    read_bytes: int = 0
    records: int = 0
    bad: int = 0
    chars: int = 0
    tokens: int = 0

    @property
    def scale(self) -> float:
        """Listed bytes per byte read (1 when every file was read)."""
        return self.bytes / self.read_bytes if self.read_bytes else 0.0

    @property
    def est_records(self) -> float:
        return self.records * self.scale

    @property
    def est_tokens(self) -> float:
        return self.tokens * self.scale


@dataclass
class Estimate:
    spec: str
    tasks: int
    cores: int
    sources: list[SourceSample]
    costs: list[costs.StageCost]
    rates: costs.Rates
    tasks_per_job: dict[str, int] = field(default_factory=dict)  # the spec's, per stage (execution.stages)
    pairs_per_doc: float | None = None  # near-duplicate candidate pairs per input record, as given
    candidate_pairs: float | None = None  # the candidate pairs projected (None: the rates have none)
    largest_component: float | None = None  # documents of the largest near-duplicate component, as given
    work: costs.Workload | None = None  # what was projected

    @property
    def input_tokens(self) -> float:
        return sum(s.est_tokens for s in self.sources)

    @property
    def critical_path_hours(self) -> float:
        return sum(c.wall_hours for c in self.costs)


def _spread(sizes: list[int], budget: int) -> list[int]:
    """Indexes of the files to read in full: spread evenly over the listing first, then the rest, while under
    `budget` bytes (at least one)."""
    stride = max(1, len(sizes) // 16)
    order = [*range(0, len(sizes), stride), *(i for i in range(len(sizes)) if i % stride)]
    picked, total = [], 0
    for i in order:
        if picked and total + sizes[i] > budget:
            continue
        picked.append(i)
        total += sizes[i]
        if total >= budget:
            break
    return sorted(picked)


def sample_source(src: SourceFiles, reader: SourceReader, counter, budget: int, progress=None) -> SourceSample:
    """Read whole files of `src` (spread over its listing, up to `budget` bytes) with the build's reader; count
    their records, bad records, characters and tokens."""
    sizes = [s or 0 for s in (src.sizes or (0,) * len(src.files))]
    out = SourceSample(src.name, len(src.files), sum(sizes))

    def texts(rel: str) -> Iterator[str]:
        for doc in reader.read_file(src, rel):
            if "_bad" in doc.metadata:
                out.bad += 1
            else:
                yield doc.text

    for i in _spread(sizes, budget):
        docs = texts(src.files[i])
        while batch := list(islice(docs, BATCH)):
            out.records += len(batch)
            out.tokens += sum(count_tokens(counter, batch))
            out.chars += sum(map(len, batch))
        out.read_files += 1
        out.read_bytes += sizes[i]
        if progress:
            progress(src.name, out)
    if not out.bytes:  # sizes unknown (a dataset's shards): every unit counts the same
        out.bytes, out.read_bytes = len(src.files), max(1, out.read_files)
    return out


def estimate(spec_path: str, *, tasks: int | None = None, cores: int = 1000, budget: int = SAMPLE_BYTES,
             rates: costs.Rates | None = None, pairs_per_doc: float | None = None,
             largest_component: float | None = None, progress=None) -> Estimate:
    """The spec's inputs sampled and its build projected with `tasks` tasks (default: execution.tasks) on
    `cores` cores; `pairs_per_doc`: near-duplicate candidate pairs per input record (default: the rates' growth
    of them); `largest_component`: documents of the largest near-duplicate component, its star rounds added to
    `minhash_cluster`'s tasks (default: not projected)."""
    spec = load_spec(spec_path)
    n_tasks = tasks or spec.execution.tasks
    ctx = BuildContext(spec, spec.refs.folder, spec.refs.store, n_tasks)
    sources = ctx.sources()
    reader = SourceReader(sources, ctx.at("_estimate"))
    counter = load_tokenizer(spec.refs.tokenizer)
    samples = [sample_source(s, reader, counter, budget, progress) for s in sources]
    rates = rates or costs.load_rates()
    stage_tasks = {s.name: s.task_count(spec, n_tasks) for s in stage_registry.planned(spec)} | {"finalize": 1}
    work = costs.Workload(input_tokens=sum(s.est_tokens for s in samples), tasks=n_tasks, stage_tasks=stage_tasks,
                          fit_sample=spec.partition.clusters.sample_docs,
                          cells=spec.partition.clusters.k * spec.partition.quality.levels,
                          partitions=stage_registry.dedup_partitions(spec, n_tasks),
                          component_pairs_per_task=spec.execution.component_pairs_per_task,
                          combine_files=spec.execution.combine_files, bands=spec.processing.dedup.fuzzy.bands,
                          candidate_pairs=None if pairs_per_doc is None else
                          pairs_per_doc * sum(s.est_records for s in samples), largest_component=largest_component)
    kept = rates.model_copy(update={"stages": tuple(r for r in rates.stages if r.stage in stage_tasks)})
    per_job = {name: spec.execution.for_stage(name).tasks_per_job for name in stage_tasks}
    return Estimate(spec_path, n_tasks, cores, samples, costs.project(kept, work, cores), kept, per_job,
                    pairs_per_doc, costs.candidate_pairs(rates, work), largest_component, work)
