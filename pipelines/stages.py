"""The build's stages as datatrove pipelines: each is (name, list of steps, task count)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from datatrove.data import Document
from datatrove.pipeline.dedup.exact_dedup import (
    ExactDedupConfig,
    ExactDedupFilter,
    ExactDedupSignature,
    ExactFindDedups,
)
from datatrove.pipeline.dedup.minhash import (
    MinhashConfig,
    MinhashDedupBuckets,
    MinhashDedupCluster,
    MinhashDedupFilter,
    MinhashDedupSignature,
)

from mixture.spec.load import list_source_files, resolve_uri
from mixture.spec.models import Spec
from mixture.store import layout
from pipelines import steps, writers
from pipelines.readers import RankFilesReader, SourceFiles
from pipelines.words import SimplifiedTextWords

ID_QUARANTINE = "part-ids-${rank}.parquet"  # `_quarantine/` file of the duplicate-id check (one per task)


def doc_text(doc: Document) -> str:
    """Exact-dedup content: the normalised text."""
    return doc.text


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

    def at(self, rel: str) -> str:
        return f"{self.store}/{rel}"

    @property
    def work(self) -> str:
        return self.at(layout.WORK_DIR)

    def sources(self) -> list[SourceFiles]:
        out = []
        for s in self.spec.sources:
            base, files = list_source_files(resolve_uri(s.uri, self.spec_dir), s.format)
            out.append(SourceFiles(s.name, s.category, s.format, base, tuple(files), s.text_field, s.id_field,
                                   s.exempt_from_fuzzy_dedup))
        return out

    def benchmarks(self) -> list[dict]:
        return [{"name": b.name, "uri": resolve_uri(b.uri, self.spec_dir), "fields": list(b.fields)}
                for b in self.spec.processing.decontamination.benchmarks]

    @property
    def exact_config(self) -> ExactDedupConfig:
        return ExactDedupConfig(content_getter=doc_text)

    @property
    def minhash_config(self) -> MinhashConfig:
        f = self.spec.processing.dedup.fuzzy
        return MinhashConfig(n_grams=f.ngram, num_buckets=f.bands, hashes_per_bucket=f.rows_per_band, seed=f.seed)

    def task_side_files(self, stage: str) -> list[str]:
        """Globs ({rank} = the task) of the files a task of `stage` writes under names it may not rewrite on a rerun."""
        w = self.work
        return {
            "prepare": [self.at(f"{layout.QUARANTINE_DIR}/part-{{rank}}.parquet"), f"{w}/prepared/{{rank}}.parquet",
                        f"{w}/ids/{{rank}}.parquet", f"{w}/tally/{{rank}}.json",
                        *(self.at(f"{layout.dropped_dir(r)}/part-{{rank}}.parquet") for r in ("filtered", "contaminated"))],
            "id_filter": [self.at(f"{layout.QUARANTINE_DIR}/{ID_QUARANTINE.replace('${rank}', '{rank}')}")],
            "split": [self.at(f"{layout.dropped_dir('exact_duplicate')}/part-{{rank}}.parquet"),
                      f"{w}/dedup_in/*/{{rank}}.parquet"],
            "minhash_filter": [self.at(f"{layout.dropped_dir('fuzzy_duplicate')}/part-{{rank}}.parquet"),
                               f"{w}/deduped/fuzzy/{{rank}}.parquet"],
            "assign": [self.at("cluster=*/quality=*/*part-{rank}.parquet"), f"{w}/samples/{{rank}}.parquet"],
        }[stage]

    @property
    def kept_folders(self) -> list[str]:
        folders = [f"{self.work}/dedup_in/exempt"]
        if self.spec.processing.dedup.fuzzy.enabled:
            folders.insert(0, f"{self.work}/deduped/fuzzy")
        else:
            folders.insert(0, f"{self.work}/dedup_in/fuzzy")
        return folders


def dedup_stages(ctx: BuildContext) -> list[Stage]:
    """read → normalise → quarantine → gates → decontaminate → annotate, duplicate ids, then exact and MinHash dedup."""
    p = ctx.spec.processing
    flt = p.filters
    prepare = [
        steps.ClearTaskFiles(ctx.task_side_files("prepare")),
        steps_reader(ctx),
        steps.Normalize(),
        steps.Quarantine(writers.quarantine_writer(ctx.at(layout.QUARANTINE_DIR))),
        steps.Gates(flt.length.min_chars, flt.length.max_chars, flt.length.min_words, flt.heuristics.max_symbol_ratio,
                    flt.heuristics.max_duplicate_line_ratio,
                    exclusion_writer=writers.drop_writer(ctx.at(layout.dropped_dir("filtered")), "filtered")),
    ]
    if p.decontamination.enabled and p.decontamination.benchmarks:
        prepare.append(steps.Decontaminate(
            ctx.benchmarks(), p.decontamination.ngram, p.decontamination.min_matches,
            exclusion_writer=writers.drop_writer(ctx.at(layout.dropped_dir("contaminated")), "contaminated")))
    q = ctx.spec.partition.quality
    prepare += [steps.Annotate(q.scorer, q.fasttext_model and resolve_uri(q.fasttext_model, ctx.spec_dir), q.fasttext_label),
                writers.work_writer(f"{ctx.work}/prepared"), writers.ids_writer(f"{ctx.work}/ids")]
    stages = [Stage("prepare", prepare, ctx.tasks)]
    # duplicate ids: the first occurrence keeps the id, later ones are quarantined before exact dedup sees them
    id_dups = f"{ctx.work}/id_dups.parquet"
    stages.append(Stage("id_find", [steps.FindDuplicateIds(f"{ctx.work}/ids", id_dups)], 1))
    id_filter = [steps.ClearTaskFiles(ctx.task_side_files("id_filter")), RankFilesReader([f"{ctx.work}/prepared"]),
                 steps.DuplicateIds(id_dups, writers.quarantine_writer(ctx.at(layout.QUARANTINE_DIR), ID_QUARANTINE))]
    split_from = [steps.ClearTaskFiles(ctx.task_side_files("split")), RankFilesReader([f"{ctx.work}/prepared"]),
                  steps.DuplicateIds(id_dups)]
    if p.dedup.exact.enabled:
        id_filter.append(ExactDedupSignature(f"{ctx.work}/exact_sigs", ctx.exact_config))
        split_from.append(ExactDedupFilter(
            f"{ctx.work}/exact_dups", ctx.exact_config,
            exclusion_writer=writers.drop_writer(ctx.at(layout.dropped_dir("exact_duplicate")), "exact_duplicate")))
    stages.append(Stage("id_filter", id_filter, ctx.tasks))
    if p.dedup.exact.enabled:
        stages.append(Stage("exact_find", [ExactFindDedups(f"{ctx.work}/exact_sigs", f"{ctx.work}/exact_dups", ctx.exact_config)], 1))
    split = [*split_from, writers.work_writer(f"{ctx.work}/dedup_in", "${group}/${rank}.parquet")]
    fz = p.dedup.fuzzy
    if fz.enabled:
        mh = ctx.minhash_config
        split += [steps.OnlyFuzzyGroup(), MinhashDedupSignature(f"{ctx.work}/mh_sigs", mh, language=SimplifiedTextWords())]
    stages.append(Stage("split", split, ctx.tasks))
    if fz.enabled:
        stages += [
            Stage("minhash_buckets", [MinhashDedupBuckets(f"{ctx.work}/mh_sigs", f"{ctx.work}/mh_buckets", config=mh)], fz.bands),
            Stage("minhash_cluster", [MinhashDedupCluster(f"{ctx.work}/mh_buckets", f"{ctx.work}/mh_remove", config=mh)], 1),
            Stage("minhash_filter", [
                steps.ClearTaskFiles(ctx.task_side_files("minhash_filter")),
                RankFilesReader([f"{ctx.work}/dedup_in/fuzzy"]),
                MinhashDedupFilter(f"{ctx.work}/mh_remove", exclusion_writer=writers.drop_writer(
                    ctx.at(layout.dropped_dir("fuzzy_duplicate")), "fuzzy_duplicate")),
                writers.work_writer(f"{ctx.work}/deduped/fuzzy"),
            ], ctx.tasks),
        ]
    return stages


def steps_reader(ctx: BuildContext):
    from pipelines.readers import SourceReader

    return SourceReader(ctx.sources(), f"{ctx.work}/tally")


def sample_stage(ctx: BuildContext, rate: float) -> Stage:
    return Stage("sample", [RankFilesReader(ctx.kept_folders), steps.SampleForFit(rate, ctx.spec.seed, f"{ctx.work}/sample")], ctx.tasks)


def fit_stage(ctx: BuildContext) -> Stage:
    c, q = ctx.spec.partition.clusters, ctx.spec.partition.quality
    params = {"k": c.k, "fine_k": c.fine_k, "min_share": c.min_share, "embedding_dim": c.embedding_dim,
              "seed": ctx.spec.seed, "edges": list(q.edges), "embedder": c.embedder,
              "sentence_model": c.sentence_model and resolve_uri(c.sentence_model, ctx.spec_dir)}
    return Stage("fit", [steps.FitModel(f"{ctx.work}/sample", ctx.at(layout.MODEL_DIR), params)], 1)


def assign_stage(ctx: BuildContext) -> Stage:
    s, c = ctx.spec.store, ctx.spec.partition
    assign = steps.Assign(ctx.at(layout.MODEL_DIR), tokenizer_ref(ctx), list(c.quality.edges), c.clusters.k,
                          s.keep_token_ids, s.samples_per_cell, s.exemplars_per_cell, ctx.spec.seed, f"{ctx.work}/samples")
    return Stage("assign", [steps.ClearTaskFiles(ctx.task_side_files("assign")), RankFilesReader(ctx.kept_folders), assign,
                            writers.store_writer(ctx.store, s.keep_token_ids, s.shard_bytes, s.compression)], ctx.tasks)


def tokenizer_ref(ctx: BuildContext) -> str:
    """The spec's tokenizer with local tokenizer.json paths made absolute."""
    tok = ctx.spec.tokenizer
    if tok.startswith("tiktoken:"):
        return tok
    path = tok.removeprefix("hf:")
    local = resolve_uri(path, ctx.spec_dir)
    return f"hf:{local}" if os.path.exists(local) else f"hf:{path}"
