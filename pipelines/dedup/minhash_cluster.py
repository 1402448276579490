"""Stage `minhash_cluster`, in rounds: the connected components of the verified-pair graph (components.py, for the
report's largest component), the near duplicates decided greedily in spec order (a document is dropped only for a
kept document it is itself similar to) in rounds (greedy_rounds.py), their drops with evidence per partition, and
the near-duplicate report."""

from __future__ import annotations

from collections.abc import Iterator

import fsspec
import pyarrow as pa

from mixture.pipelines.context import BuildContext, Round
from mixture.pipelines.dedup.components import (
    MAX_ROUNDS,
    SIZES,
    ComponentSizes,
    StarRound,
    largest,
    round_changes,
    settled,
    verified_partitions,
)
from mixture.pipelines.dedup.greedy_rounds import (
    MAX_GREEDY_ROUNDS,
    ROUND_COUNTS,
    STALLED,
    GreedyFinish,
    GreedyRound,
    GreedyStart,
    decided_drops,
    remaining_pairs,
)
from mixture.pipelines.dedup.minhash_buckets import ANCHORS, BAND_COUNTS
from mixture.pipelines.dedup.minhash_verify import VERIFIED, VERIFY_COUNTS, signature_margin
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import (
    PART,
    matching_files,
    read_small,
    sorted_batches,
    summed_counts,
    with_partition_function,
    write_counts,
    write_partitions,
)
from mixture.pipelines.runtime.duckdb_connection import scalar
from mixture.pipelines.schemas import DROPS
from mixture.stages.registry import (
    BAND_TASK_COUNTS,
    CLUSTER_COUNTS,
    COMPONENT_PAIRS_PER_TASK,
    COMPONENT_SIZES,
    FINISH_COUNTS,
    FINISH_DROPS,
    FUZZY_DROPS,
    GREEDY_COUNTS_EVERY,
    NEAR,
    NEAR_DUPLICATES_REPORT,
    VERIFIED_PAIRS,
    VERIFY_TASK_COUNTS,
    component_partitions,
    greedy_files,
    star_changes,
    star_edges,
)
from mixture.store.formats import NearDuplicateReport, write_model
from mixture.text.shingles import WORD_RULE

DROP_COUNTS = pa.schema([("drops", pa.int64()), ("largest_component", pa.int64())])
LARGEST = "largest_component"  # of the drops tasks' counts: the report takes their largest, not their sum


class NearDuplicateDrops(PartitionedStep):
    """Stage `minhash_cluster`, drops round, task q of P_c: the drops the greedy's rounds and its finish decided in
    partition q (a document dropped for an earlier kept one it is itself similar to, the most similar such one; the
    decisions of one pass over the verified pairs in spec order: source, file, record, as for exact duplicates), in
    place of datatrove's MinhashDedupCluster (union-find over the bucket pairs, which chains documents through shared
    boilerplate), each with its evidence from the verified pair (the kept document's id, source, file and record,
    the similarity). Writes the drops by prepared file (FUZZY_DROPS in `output`: a shuffle file of `prepared`
    partitions, T, one per prepared file, read by `assign`'s task of that file) and the task's counts
    (CLUSTER_COUNTS in `folder`: its drops and the largest component of its partition)."""

    name = "🎯 MinHash near duplicates"

    def __init__(self, folder: str, output: str, *, last: int, partitions: int, sources: int, prepared: int,
                 ngram: int, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.output, self.last, self.partitions = folder, output, last, partitions
        self.sources, self.prepared, self.ngram = sources, prepared, ngram

    def inputs(self, rank: int) -> list[tuple]:
        return [("verified", VERIFIED_PAIRS.every(self.folder), VERIFIED,
                 verified_partitions(rank, self.partitions, self.sources), self.sources),
                ("sizes_in", COMPONENT_SIZES.every(self.folder), SIZES, rank),
                *decided_drops(self.folder, self.last, rank, self.partitions)]

    def process(self, con, rank: int) -> dict[str, int]:
        with_partition_function(con)
        views = " UNION ALL ".join(f"SELECT b, best_a FROM {view}" for view, *_ in
                                   decided_drops(self.folder, self.last, rank, self.partitions))
        con.execute(f"CREATE TABLE decided AS {views}")
        measure = f"word {self.ngram}-gram Jaccard"

        def rows() -> Iterator[pa.RecordBatch]:
            # each dropped document (b) once, with the evidence of the pair that decided it
            for batch in sorted_batches(con, f"""
                    SELECT * FROM (SELECT DISTINCT ON (d.b) v.rank_b AS rank, v.idx_b AS idx, v.kept_id, v.kept_source,
                                          v.kept_file, v.kept_record, v.sim
                                   FROM decided d JOIN verified v ON v.a = d.best_a AND v.b = d.b
                                   WHERE mixture_partition(v.b, {self.partitions}) = {rank} ORDER BY d.b)
                    ORDER BY rank, idx"""):
                cols = [batch.column(c).to_pylist() for c in ("kept_id", "kept_source", "kept_file", "kept_record",
                                                               "sim")]
                detail = [f"near duplicate of {i!r} ({s}, {f}:{r}): {measure} {sim:.3f} ({WORD_RULE})"
                          for i, s, f, r, sim in zip(*cols, strict=True)]
                yield pa.RecordBatch.from_arrays(
                    [batch.column("rank"), batch.column("idx"), pa.array(["fuzzy_duplicate"] * batch.num_rows),
                     pa.array(detail, pa.string()), batch.column("rank")], names=[*DROPS.names, PART])

        written = sum(write_partitions(rows(), FUZZY_DROPS.path(self.output, rank), self.prepared).values())
        decided = scalar(con, "SELECT count(DISTINCT b) FROM decided")
        if written != decided:  # a drop without its verified pair: the rounds' files do not match the pairs
            raise RuntimeError(f"{decided - written} of {decided} near-duplicate drops of partition {rank} have no "
                               f"verified pair in {VERIFIED_PAIRS.every(self.folder)}; remove the store's "
                               "_build/minhash_cluster/ and build again")
        write_counts(CLUSTER_COUNTS.path(self.folder, rank), DROP_COUNTS, {"drops": written, LARGEST: largest(con)})
        return {"drops": written}


class NearDuplicates(PartitionedStep):
    """Stage `minhash_cluster`, last round, one task: the near-duplicate report (`report`, NearDuplicateReport), the
    counts of every task of the bucket, verification and greedy stages summed."""

    name = "🎯 MinHash near-duplicate report"

    def __init__(self, folder: str, report: str, *, threshold: float, ngram: int, permutations: int,
                 anchors: int = ANCHORS):
        super().__init__()
        self.folder, self.report = folder, report
        self.threshold, self.ngram, self.permutations, self.anchors = threshold, ngram, permutations, anchors

    def process(self, con, rank: int) -> dict[str, int]:
        counts = {**summed_counts(BAND_TASK_COUNTS.every(self.folder), BAND_COUNTS),
                  **summed_counts(VERIFY_TASK_COUNTS.every(self.folder), VERIFY_COUNTS),
                  **summed_counts(CLUSTER_COUNTS.every(self.folder), DROP_COUNTS)}
        # kept although similar to earlier documents (each of them dropped): counted where they were decided
        counts["kept_similar"] = summed_counts(GREEDY_COUNTS_EVERY.every(self.folder), ROUND_COUNTS)["kept_similar"]
        counts[LARGEST] = max((read_small(f, DROP_COUNTS)[LARGEST][0].as_py()
                               for f in matching_files(CLUSTER_COUNTS.every(self.folder))), default=0)
        counts["pairs_rejected"] = counts["pairs_considered"] - counts["pairs_verified"]
        fs, path = fsspec.core.url_to_fs(self.report)
        write_model(fs, path, NearDuplicateReport(
            measure=f"word {self.ngram}-gram Jaccard ({WORD_RULE})", threshold=round(self.threshold, 4), anchors=self.anchors,
            signature_margin=round(signature_margin(self.threshold, self.permutations), 4), **counts))
        return {key: counts[key] for key in ("pairs_considered", "pairs_verified", "drops")}


def rounds(folder: str, output: str, report: str, tasks: int, *, prepared: int, threshold: float, ngram: int,
           permutations: int, anchors: int = ANCHORS, pairs_per_task: int = COMPONENT_PAIRS_PER_TASK,
           memory_limit: str | None = None) -> Iterator[Round]:
    """The stage's rounds over the verified pairs in `folder` (of `tasks` minhash_verify tasks, P; `prepared`
    prepared files, T), each run as P_c tasks (`component_partitions` of the pairs verified): star rounds until
    the components are stars (`settled`, read once each round ran); their sizes and the greedy's start; greedy
    rounds while more than `pairs_per_task` pairs are left undecided and a round decides at least 1/STALLED of
    them (read once each round ran); the finish (one task, the rest); the drops with their evidence; the report."""
    pairs = summed_counts(VERIFY_TASK_COUNTS.every(folder), VERIFY_COUNTS)["pairs_verified"]
    parts = component_partitions(pairs, tasks, pairs_per_task)
    r = 0
    while True:
        yield Round(f"r{r:03d}", [StarRound(folder, r, parts, tasks, memory_limit)], parts,
                    (star_edges(r), star_changes(r)))
        if settled(folder, r):
            break
        r += 1
        if r >= MAX_ROUNDS:
            raise RuntimeError(f"the components of the verified pairs in {folder} did not settle in {MAX_ROUNDS} "
                               f"rounds (edges replaced in the last: {round_changes(folder, r - 1)})")
    yield Round("start", [ComponentSizes(folder, r, parts, memory_limit),
                          GreedyStart(folder, parts, tasks, memory_limit)], parts, (COMPONENT_SIZES, *greedy_files(0)))
    k, left = 0, remaining_pairs(folder, 0)
    while left > pairs_per_task and k < MAX_GREEDY_ROUNDS:
        k += 1
        yield Round(f"g{k:03d}", [GreedyRound(folder, k, parts, memory_limit)], parts, greedy_files(k))
        left, before = remaining_pairs(folder, k), left
        # round 1 settles no pair (it sends the first decisions); from round 2 on a round that settles few is
        # deciding along a chain, one link a round: the finish takes it whole
        if k > 1 and before - left < before / STALLED:
            break
    yield Round("finish", [GreedyFinish(folder, k, parts, memory_limit)], 1, (FINISH_DROPS, FINISH_COUNTS))
    yield Round("drops", [NearDuplicateDrops(folder, output, last=k, partitions=parts, sources=tasks,
                                             prepared=prepared, ngram=ngram, memory_limit=memory_limit)],
                parts, (FUZZY_DROPS, CLUSTER_COUNTS))
    yield Round("report", [NearDuplicates(folder, report, threshold=threshold, ngram=ngram, permutations=permutations,
                                          anchors=anchors)], 1)


def steps(ctx: BuildContext) -> Iterator[Round]:
    fz = ctx.spec.processing.dedup.fuzzy
    settings = {"threshold": fz.similarity_threshold, "ngram": fz.ngram, "permutations": fz.permutations}
    yield from rounds(ctx.at(NEAR), ctx.at(FUZZY_DROPS.folder), ctx.at(NEAR_DUPLICATES_REPORT), ctx.partitions,
                      prepared=ctx.tasks, pairs_per_task=ctx.execution("minhash_cluster").component_pairs_per_task,
                      memory_limit=ctx.memory_limit("minhash_cluster"), **settings)
