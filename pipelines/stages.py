"""The build's stages as datatrove pipelines: each is (name, list of steps, task count)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from mixture.pipelines import dedup, steps, writers
from mixture.pipelines.readers import RankFilesReader, SourceFiles
from mixture.pipelines.shard_facts import ShardFacts

from mixture.spec.load import list_source_files_sized, resolve_uri
from mixture.spec.models import Spec
from mixture.store import drops, layout

ID_QUARANTINE = "part-ids-${rank}.parquet"  # `_quarantine/` file of the duplicate-id check (one per task)


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
            base, files = list_source_files_sized(resolve_uri(s.uri, self.spec_dir), s.format)
            out.append(SourceFiles(s.name, s.category, s.format, base, tuple(f for f, _ in files), s.text_field,
                                   s.id_field, s.exempt_from_fuzzy_dedup, tuple(size for _, size in files)))
        return out

    def benchmarks(self) -> list[dict]:
        return [{"name": b.name, "uri": resolve_uri(b.uri, self.spec_dir), "fields": list(b.fields)}
                for b in self.spec.processing.decontamination.benchmarks]

    @property
    def fuzzy_drops(self) -> str | None:
        """The near duplicates `minhash_cluster` lists (DROPS schema), None without fuzzy dedup."""
        return f"{self.work}/fuzzy_drops.parquet" if self.spec.processing.dedup.fuzzy.enabled else None

    def task_side_files(self, stage: str) -> list[str]:
        """Globs ({rank} = the task) of the files a task of `stage` writes under names it may not rewrite on a rerun."""
        w = self.work
        return {
            "prepare": [self.at(f"{layout.QUARANTINE_DIR}/part-{{rank}}.parquet"), f"{w}/prepared/{{rank}}.parquet",
                        f"{w}/tally/{{rank}}.json",
                        *(self.at(f"{r.folder}/part-{{rank}}.parquet") for r in drops.dropped_by("prepare"))],
            "assign": [self.at("cluster=*/quality=*/*part-{rank}.parquet"), f"{w}/samples/{{rank}}.parquet",
                       f"{w}/shard_facts/{{rank}}.json",
                       self.at(f"{layout.QUARANTINE_DIR}/{ID_QUARANTINE.replace('${rank}', '{rank}')}"),
                       *(self.at(f"{r.folder}/part-{{rank}}.parquet") for r in drops.dropped_by("assign"))],
        }[stage]


def dedup_stages(ctx: BuildContext) -> list[Stage]:
    """read → normalise → quarantine → gates → fingerprint → decontaminate → annotate, then the dedup decisions:
    repeated ids and exact duplicates (DuckDB), MinHash LSH (band collisions). No stage after `prepare` reads the text."""
    p = ctx.spec.processing
    flt, fz, dc = p.filters, p.dedup.fuzzy, p.decontamination
    decontaminate = dc.enabled and bool(dc.benchmarks)
    prepare = [
        steps.ClearTaskFiles(ctx.task_side_files("prepare")),
        steps_reader(ctx),
        steps.Normalize(),
        steps.Quarantine(writers.quarantine_writer(ctx.at(layout.QUARANTINE_DIR))),
        steps.Gates(flt.length.min_chars, flt.length.max_chars, flt.length.min_words, flt.heuristics.max_symbol_ratio,
                    flt.heuristics.max_duplicate_line_ratio,
                    exclusion_writer=writers.drop_writer(ctx.at(layout.dropped_dir("filtered")), "filtered")),
        dedup.Fingerprint(
            {"ngram": fz.ngram, "permutations": fz.permutations, "seed": fz.seed} if fz.enabled else None,
            {"benchmarks": ctx.benchmarks(), "ngram": dc.ngram, "min_matches": dc.min_matches} if decontaminate else None),
    ]
    if decontaminate:
        prepare.append(dedup.Decontaminate(
            exclusion_writer=writers.drop_writer(ctx.at(layout.dropped_dir("contaminated")), "contaminated")))
    q = ctx.spec.partition.quality
    prepare += [steps.Annotate(q.scorer, q.fasttext_model and resolve_uri(q.fasttext_model, ctx.spec_dir), q.fasttext_label),
                writers.work_writer(f"{ctx.work}/prepared")]
    stages = [Stage("prepare", prepare, ctx.tasks),
              Stage("find_duplicates", [dedup.FindDuplicates(f"{ctx.work}/prepared", f"{ctx.work}/drops.parquet",
                                                             p.dedup.exact.enabled)], 1)]
    if fz.enabled:
        stages += [
            Stage("minhash_sigs", [dedup.MinhashSigs(ctx.work, f"{ctx.work}/mh_sigs", fz.bands, fz.rows_per_band)], ctx.tasks),
            Stage("minhash_buckets", [dedup.BandCollisions(f"{ctx.work}/mh_sigs", f"{ctx.work}/mh_buckets", fz.rows_per_band)],
                  fz.bands),
            Stage("minhash_cluster", [dedup.ResolveNearDuplicates(f"{ctx.work}/mh_buckets", f"{ctx.work}/prepared",
                                                                  ctx.fuzzy_drops)], 1),
        ]
    return stages


def steps_reader(ctx: BuildContext):
    from mixture.pipelines.readers import SourceReader

    return SourceReader(ctx.sources(), f"{ctx.work}/tally")


def sample_stage(ctx: BuildContext, rate: float) -> Stage:
    return Stage("sample", [steps.SampleForFit(rate, ctx.spec.seed, ctx.work, ctx.fuzzy_drops, f"{ctx.work}/sample")],
                 ctx.tasks)


def fit_stage(ctx: BuildContext) -> Stage:
    c, q = ctx.spec.partition.clusters, ctx.spec.partition.quality
    params = {"k": c.k, "fine_k": c.fine_k, "min_share": c.min_share, "embedding_dim": c.embedding_dim,
              "seed": ctx.spec.seed, "edges": list(q.edges), "embedder": c.embedder,
              "sentence_model": c.sentence_model and resolve_uri(c.sentence_model, ctx.spec_dir)}
    return Stage("fit", [steps.FitModel(f"{ctx.work}/sample", ctx.at(layout.MODEL_DIR), params, f"{ctx.work}/fit_assignments")],
                 1)


def assign_stage(ctx: BuildContext) -> Stage:
    s, c = ctx.spec.store, ctx.spec.partition
    assign = steps.Assign(ctx.at(layout.MODEL_DIR), tokenizer_ref(ctx), list(c.quality.edges), c.clusters.k,
                          s.keep_token_ids, s.samples_per_cell, s.exemplars_per_cell, ctx.spec.seed, f"{ctx.work}/samples",
                          assignments_folder=f"{ctx.work}/fit_assignments")
    route = dedup.RouteDrops(ctx.work, ctx.fuzzy_drops, {
        "duplicate_id": writers.quarantine_writer(ctx.at(layout.QUARANTINE_DIR), ID_QUARANTINE),
        **{r.name: writers.drop_writer(ctx.at(r.folder), r.name) for r in drops.dropped_by("assign")}})
    store = writers.store_writer(ctx.store, s.keep_token_ids, s.shard_bytes, s.compression)
    return Stage("assign", [steps.ClearTaskFiles(ctx.task_side_files("assign")),
                            RankFilesReader([f"{ctx.work}/prepared"], columns=ASSIGN_COLUMNS), route, assign, store,
                            ShardFacts(ctx.store, f"{ctx.work}/shard_facts", store)], ctx.tasks)


ASSIGN_COLUMNS = ["id", "text", "source", "category", "origin", "content_type", "raw_score", "idx"]


def tokenizer_ref(ctx: BuildContext) -> str:
    """The spec's tokenizer with local tokenizer.json paths made absolute."""
    tok = ctx.spec.tokenizer
    if tok.startswith("tiktoken:"):
        return tok
    path = tok.removeprefix("hf:")
    local = resolve_uri(path, ctx.spec_dir)
    return f"hf:{local}" if os.path.exists(local) else f"hf:{path}"
