"""The build's stages as datatrove pipelines: each is (name, list of steps, task count); the steps of each stage
of the registry (`stage_registry.STAGES`) for a build's context."""

from __future__ import annotations

from dataclasses import dataclass, field

import fsspec
import pyarrow.parquet as pq
from datatrove.utils.logging import logger

from mixture.pipelines import writers
from mixture.pipelines.dedup import exact as duplicates
from mixture.pipelines.dedup import fingerprints as dedup
from mixture.pipelines.dedup import minhash_gather as candidate_texts
from mixture.pipelines.dedup import near as near_duplicates
from mixture.pipelines.finalize.shard_facts import ShardFacts
from mixture.pipelines.prepare import decontaminate as decontaminate_step
from mixture.pipelines.prepare import steps
from mixture.pipelines.sources.files import RankFilesReader
from mixture.pipelines.sources.records import SourceFiles
from mixture.spec import preflight
from mixture.spec.datasets_source import dataset_units
from mixture.spec.inputs import ListedSource, list_source, spec_files
from mixture.spec.load import resolve_uri
from mixture.spec.models import Execution, Spec
from mixture.stages.registry import ID_QUARANTINE, StageDef, bucket_slices
from mixture.store import drops, layout
from mixture.store.formats import InputManifest, NearDuplicateReport, read_model

DUCKDB_MEMORY_SHARE = 0.5  # of a task's memory, for DuckDB (the rest: Arrow batches, numpy, Python)


class BuildError(RuntimeError):
    """A build that cannot go on; the message says why and what to do."""


@dataclass
class Stage:
    name: str
    pipeline: list
    tasks: int


@dataclass
class BuildContext:
    spec: Spec
    spec_dir: str
    store: str
    tasks: int
    overrides: dict = field(default_factory=dict)  # execution settings given on the command line (None: not given)
    _listed: list[ListedSource] | None = field(default=None, repr=False)
    _inputs: InputManifest | None = field(default=None, repr=False)

    def execution(self, stage: str | None = None) -> Execution:
        """The spec's execution settings with the command-line overrides, then the stage's own `execution.stages`
        entry, applied (the spec and its hash stay as they are)."""
        given = {k: v for k, v in self.overrides.items() if v is not None}
        ex = Execution.model_validate({**self.spec.execution.model_dump(), **given}) if given else self.spec.execution
        return ex.for_stage(stage) if stage else ex

    def at(self, rel: str) -> str:
        return f"{self.store}/{rel}"

    @property
    def work(self) -> str:
        return self.at(layout.WORK_DIR)

    def listed(self) -> list[ListedSource]:
        """Every source as listed once, when the build starts (hub datasets resolve here): the files the readers
        share out are the files the input manifest records."""
        if self._listed is None:
            self._listed = [list_source(s, resolve_uri(s.uri, self.spec_dir)) for s in self.spec.sources]
        return self._listed

    def inputs(self) -> InputManifest:
        """The input manifest: the sources' files and the other files the spec names, as listed once."""
        if self._inputs is None:
            self._inputs = InputManifest(sources=[src.inputs for src in self.listed()],
                                         files=spec_files(self.spec, self.spec_dir))
        return self._inputs

    def sources(self) -> list[SourceFiles]:
        out = []
        for s, got in zip(self.spec.sources, self.listed(), strict=True):
            if s.format == "datasets":  # Arrow files or IterableDataset shards (hub datasets resolve here)
                units = dataset_units(s, resolve_uri(s.uri, self.spec_dir))
                out.append(SourceFiles(s.name, s.category, s.format, units.base, units.units, s.text_field, s.id_field,
                                       s.exempt_from_fuzzy_dedup, units.sizes, units))
            else:
                for message in got.skipped:
                    logger.warning(message)
                out.append(SourceFiles(s.name, s.category, s.format, got.base, got.files, s.text_field, s.id_field,
                                       s.exempt_from_fuzzy_dedup, got.sizes))
        return out

    def benchmarks(self) -> list[dict]:
        return [{"name": b.name, "uri": resolve_uri(b.uri, self.spec_dir), "fields": list(b.fields),
                 "id_field": b.id_field} for b in self.spec.processing.decontamination.benchmarks]

    @property
    def fuzzy_drops(self) -> str | None:
        """The folder of the near duplicates `minhash_cluster` lists (`<prepared file>.parquet`, DROPS schema), None
        without fuzzy dedup."""
        return f"{self.work}/fuzzy_drops" if self.spec.processing.dedup.fuzzy.enabled else None

    @property
    def dedup_folder(self) -> str:
        """The exact-dedup shuffle (duplicates.py): keys by id and hash partition, file tables, counts."""
        return f"{self.work}/dedup"

    @property
    def near_dups_folder(self) -> str:
        """The near-duplicate work (near_duplicates.py): candidate pairs by partition, verified pairs, counts."""
        return f"{self.work}/near_dups"

    def memory_limit(self, stage: str) -> str:
        """DuckDB's memory limit in a task of `stage`: DUCKDB_MEMORY_SHARE of the memory the task is given
        (`execution.mem_per_cpu_gb` × `cpus_per_task`, per-stage entries applied); past it DuckDB spills to disk."""
        ex = self.execution(stage)
        return f"{max(64, int(ex.mem_per_cpu_gb * ex.cpus_per_task * 1024 * DUCKDB_MEMORY_SHARE))}MB"

    @property
    def near_duplicates_report(self) -> str | None:
        """`minhash_cluster`'s report (NearDuplicateReport), None without fuzzy dedup."""
        return f"{self.work}/near_duplicates.json" if self.spec.processing.dedup.fuzzy.enabled else None


def build_stage(ctx: BuildContext, stage: StageDef) -> Stage:
    """The stage's pipeline for this build; a stage with side files first removes those of an earlier attempt."""
    pipeline = stage.steps_function()(ctx)
    if stage.side_files:
        pipeline = [steps.ClearTaskFiles([ctx.at(glob) for glob in stage.side_files],
                                         ctx.at(f"{layout.stage_dir(stage.name)}/attempts")), *pipeline]
    return Stage(stage.name, pipeline, stage.task_count(ctx.spec, ctx.tasks))


def prepare_steps(ctx: BuildContext) -> list:
    """read → normalise → quarantine → gates → fingerprint → decontaminate → annotate. No stage after `prepare`
    reads the text: the dedup stages read only the ids, hashes and signatures it wrote."""
    p = ctx.spec.processing
    flt, fz, dc = p.filters, p.dedup.fuzzy, p.decontamination
    decontaminate = dc.enabled and bool(dc.benchmarks)
    prepare = [
        steps_reader(ctx),
        steps.Normalize(),
        steps.Quarantine(writers.quarantine_writer(ctx.at(layout.QUARANTINE_DIR))),
        steps.Gates(flt.length.min_chars, flt.length.max_chars, flt.length.min_words, flt.heuristics.max_symbol_ratio,
                    flt.heuristics.max_duplicate_line_ratio,
                    exclusion_writer=writers.drop_writer(ctx.at(layout.dropped_dir("filtered")), "filtered")),
        dedup.Fingerprint(
            {"ngram": fz.ngram, "permutations": fz.permutations, "seed": fz.seed} if fz.enabled else None,
            decontaminate_step.settings(dc, ctx.benchmarks()) if decontaminate else None),
    ]
    if decontaminate:
        prepare.append(decontaminate_step.Decontaminate(
            exclusion_writer=writers.drop_writer(ctx.at(layout.dropped_dir("contaminated")), "contaminated")))
    q, lang = ctx.spec.partition.quality, p.language
    lid_model = lang.model if lang.model == "cld2" else f"fasttext:{resolve_uri(lang.model[9:], ctx.spec_dir)}"
    prepare += [steps.Annotate(q.scorer, q.fasttext_model and resolve_uri(q.fasttext_model, ctx.spec_dir), q.fasttext_label,
                               language_model=lid_model, language_min_score=lang.min_score),
                writers.work_writer(f"{ctx.work}/prepared"),
                duplicates.DedupKeys(f"{ctx.work}/prepared", ctx.dedup_folder, ctx.memory_limit("prepare"))]
    return prepare


def duplicate_ids_steps(ctx: BuildContext) -> list:
    """Repeated ids, one id partition per task (DuckDB)."""
    return [duplicates.DuplicateIds(ctx.dedup_folder, ctx.work, ctx.memory_limit("duplicate_ids"))]


def find_duplicates_steps(ctx: BuildContext) -> list:
    """Exact duplicates, one exact-hash partition per task (DuckDB)."""
    return [duplicates.ExactDuplicates(ctx.dedup_folder, ctx.work, ctx.spec.processing.dedup.exact.enabled,
                                       ctx.memory_limit("find_duplicates"))]


def minhash_sigs_steps(ctx: BuildContext) -> list:
    fz = ctx.spec.processing.dedup.fuzzy
    # fields, not the rows_per_band property: the stage-key test counts a property as reading the whole section
    return [dedup.MinhashSigs(ctx.work, f"{ctx.work}/mh_sigs", fz.bands, fz.permutations // fz.bands,
                              slices=bucket_slices(fz.bands, ctx.tasks))]


def minhash_buckets_steps(ctx: BuildContext) -> list:
    """Per band and slice of its first-hash range: the slice's collisions, then its candidate pairs sent to the
    verification partitions (T)."""
    fz = ctx.spec.processing.dedup.fuzzy
    return [dedup.BandCollisions(f"{ctx.work}/mh_sigs", f"{ctx.work}/mh_buckets", fz.permutations // fz.bands,
                                 slices=bucket_slices(fz.bands, ctx.tasks)),
            near_duplicates.BucketPairs(f"{ctx.work}/mh_buckets", ctx.dedup_folder, ctx.near_dups_folder, ctx.tasks,
                                        memory_limit=ctx.memory_limit("minhash_buckets"))]


def minhash_gather_steps(ctx: BuildContext) -> list:
    """Per prepared file: its candidate documents, read once, sent to the verification partitions that need them."""
    return [candidate_texts.GatherCandidates(ctx.near_dups_folder, f"{ctx.work}/prepared",
                                             ctx.memory_limit("minhash_gather"))]


def minhash_verify_steps(ctx: BuildContext) -> list:
    fz = ctx.spec.processing.dedup.fuzzy
    return [near_duplicates.VerifyPairs(ctx.near_dups_folder, threshold=fz.similarity_threshold,
                                        ngram=fz.ngram, permutations=fz.permutations,
                                        memory_limit=ctx.memory_limit("minhash_verify"))]


def minhash_cluster_steps(ctx: BuildContext) -> list:
    fz = ctx.spec.processing.dedup.fuzzy
    return [near_duplicates.ResolveNearDuplicates(
        ctx.near_dups_folder, ctx.fuzzy_drops, ctx.near_duplicates_report, threshold=fz.similarity_threshold,
        ngram=fz.ngram, permutations=fz.permutations, memory_limit=ctx.memory_limit("minhash_cluster"))]


def steps_reader(ctx: BuildContext):
    from mixture.pipelines.sources.files import SourceReader

    return SourceReader(ctx.sources(), f"{ctx.work}/tally")


def count_kept(ctx: BuildContext) -> int:
    """Documents dedup keeps: prepared rows (Parquet footers) minus the drops the dedup tasks counted (one small
    file per task, not a footer per drop file)."""
    fs, root = fsspec.core.url_to_fs(ctx.work)
    fs.invalidate_cache(root)  # written by the stage's workers (other processes)
    total = 0
    for p in fs.glob(f"{root}/prepared/*.parquet"):
        with fs.open(p, "rb") as f:
            total += pq.ParquetFile(f).metadata.num_rows
    total -= duplicates.dropped_count(ctx.dedup_folder)
    if ctx.near_duplicates_report:
        total -= read_model(NearDuplicateReport, ctx.near_duplicates_report).drops
    return total


def sample_steps(ctx: BuildContext) -> list:
    """The fit's sample; its rate (sample_docs of the documents dedup kept) is read from the dedup stages' results."""
    total = count_kept(ctx)
    if total == 0:
        raise BuildError("no document survived cleaning, filtering and dedup; check the sources and filters")
    return sample_for_fit(ctx, min(1.0, ctx.spec.partition.clusters.sample_docs / total))


def sample_for_fit(ctx: BuildContext, rate: float) -> list:
    return [steps.SampleForFit(rate, ctx.spec.seed, ctx.work, ctx.fuzzy_drops, f"{ctx.work}/sample", tokenizer_ref(ctx))]


def fit_steps(ctx: BuildContext) -> list:
    c, q = ctx.spec.partition.clusters, ctx.spec.partition.quality
    params = {"k": c.k, "fine_k": c.fine_k, "min_share": c.min_share, "max_share": c.max_token_share,
              "embedding_dim": c.embedding_dim, "seed": ctx.spec.seed, "edges": list(q.edges), "embedder": c.embedder,
              "per_language": q.per_language, "group_min_docs": q.group_min_docs,
              "sentence_model": c.sentence_model and resolve_uri(c.sentence_model, ctx.spec_dir)}
    return [steps.FitModel(f"{ctx.work}/sample", ctx.at(layout.MODEL_DIR), params, f"{ctx.work}/fit_assignments")]


def assign_steps(ctx: BuildContext) -> list:
    s, c = ctx.spec.store, ctx.spec.partition
    assign = steps.Assign(ctx.at(layout.MODEL_DIR), tokenizer_ref(ctx), list(c.quality.edges), c.clusters.k,
                          s.keep_token_ids, s.samples_per_cell, s.exemplars_per_cell, ctx.spec.seed, f"{ctx.work}/samples",
                          assignments_folder=f"{ctx.work}/fit_assignments")
    route = dedup.RouteDrops(ctx.work, ctx.fuzzy_drops, {
        "duplicate_id": writers.quarantine_writer(ctx.at(layout.QUARANTINE_DIR), ID_QUARANTINE),
        **{r.name: writers.drop_writer(ctx.at(r.folder), r.name) for r in drops.dropped_by("assign")}})
    store = writers.store_writer(ctx.store, s.keep_token_ids, s.shard_bytes, s.compression)
    return [RankFilesReader([f"{ctx.work}/prepared"], columns=ASSIGN_COLUMNS), route, assign, store,
            ShardFacts(ctx.store, f"{ctx.work}/shard_facts", store)]


ASSIGN_COLUMNS = ["id", "text", "source", "category", "origin", "content_type", "language", "language_score",
                  "raw_score", "idx"]


def tokenizer_ref(ctx: BuildContext) -> str:
    """The spec's tokenizer with local tokenizer.json paths made absolute."""
    return preflight.tokenizer_ref(ctx.spec.tokenizer, ctx.spec_dir)
