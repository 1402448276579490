"""The steps of the dedup stages of the registry (`mixture.stages.registry.STAGES`) for a build's context."""

from __future__ import annotations

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup import exact as duplicates
from mixture.pipelines.dedup import fingerprints as dedup
from mixture.pipelines.dedup import minhash_gather as candidate_texts
from mixture.pipelines.dedup import near as near_duplicates
from mixture.stages.registry import bucket_slices


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
