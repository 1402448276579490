"""The steps of each stage of the registry (`mixture.stages.registry.STAGES`) for a build's context, and the
stage as a datatrove pipeline (name, steps, task count)."""

from __future__ import annotations

import fsspec
import pyarrow.parquet as pq

from mixture.pipelines import writers
from mixture.pipelines.context import BuildContext, BuildError, Stage
from mixture.pipelines.dedup import exact as duplicates
from mixture.pipelines.dedup import fingerprints as dedup
from mixture.pipelines.dedup import minhash_gather as candidate_texts
from mixture.pipelines.dedup import near as near_duplicates
from mixture.pipelines.finalize.shard_facts import ShardFacts
from mixture.pipelines.prepare import decontaminate as decontaminate_step
from mixture.pipelines.prepare import steps
from mixture.pipelines.sources.files import RankFilesReader
from mixture.stages.registry import ID_QUARANTINE, StageDef, bucket_slices
from mixture.store import drops, layout
from mixture.store.formats import NearDuplicateReport, read_model


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
    prepare += [steps.Annotate(q.scorer, ctx.refs.quality_model, q.fasttext_label,
                               language_model=ctx.refs.language_id, language_min_score=lang.min_score),
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
    return [steps.SampleForFit(rate, ctx.spec.seed, ctx.work, ctx.fuzzy_drops, f"{ctx.work}/sample", ctx.refs.tokenizer)]


def fit_steps(ctx: BuildContext) -> list:
    c, q = ctx.spec.partition.clusters, ctx.spec.partition.quality
    params = {"k": c.k, "fine_k": c.fine_k, "min_share": c.min_share, "max_share": c.max_token_share,
              "embedding_dim": c.embedding_dim, "seed": ctx.spec.seed, "edges": list(q.edges), "embedder": c.embedder,
              "per_language": q.per_language, "group_min_docs": q.group_min_docs,
              "sentence_model": ctx.refs.sentence_model}
    return [steps.FitModel(f"{ctx.work}/sample", ctx.at(layout.MODEL_DIR), params, f"{ctx.work}/fit_assignments")]


def assign_steps(ctx: BuildContext) -> list:
    s, c = ctx.spec.store, ctx.spec.partition
    assign = steps.Assign(ctx.at(layout.MODEL_DIR), ctx.refs.tokenizer, list(c.quality.edges), c.clusters.k,
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
