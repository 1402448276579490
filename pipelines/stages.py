"""The steps of each stage of the registry (`mixture.stages.registry.STAGES`) for a build's context (the dedup
stages': `steps` of their own module in pipelines/dedup/), and the stage as a datatrove pipeline (name, steps,
task count)."""

from __future__ import annotations

import fsspec
import pyarrow.parquet as pq

from mixture.pipelines import writers
from mixture.pipelines.context import BuildContext, BuildError, Stage
from mixture.pipelines.dedup.drop_lists import dropped_count
from mixture.pipelines.dedup.keys import DedupKeys
from mixture.pipelines.dedup.route_drops import RouteDrops
from mixture.pipelines.finalize.shard_facts import ShardFacts
from mixture.pipelines.prepare import decontaminate as decontaminate_step
from mixture.pipelines.prepare import steps
from mixture.pipelines.prepare.fingerprint import Fingerprint
from mixture.pipelines.sources.files import RankFilesReader
from mixture.spec import preflight
from mixture.spec.load import resolve_uri
from mixture.stages.registry import ID_QUARANTINE, StageDef
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
        Fingerprint(
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
                DedupKeys(f"{ctx.work}/prepared", ctx.dedup_folder, ctx.memory_limit("prepare"))]
    return prepare


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
    total -= dropped_count(ctx.dedup_folder)
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
    route = RouteDrops(ctx.work, ctx.fuzzy_drops, {
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
