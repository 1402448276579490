"""Stage `minhash_cluster`, in rounds: the connected components of the verified-pair graph (components.py), each
verified pair routed to its component's partition, then per partition the near duplicates decided greedily in spec
order (a document is dropped only for a kept document it is itself similar to), and the near-duplicate report."""

from __future__ import annotations

from collections.abc import Iterator

import fsspec
import numpy as np
import pyarrow as pa

from mixture.pipelines.context import BuildContext, Round
from mixture.pipelines.dedup.components import (
    MAX_ROUNDS,
    ROUTED,
    RouteToComponents,
    StarRound,
    round_changes,
    settled,
)
from mixture.pipelines.dedup.minhash_buckets import ANCHORS, BAND_COUNTS
from mixture.pipelines.dedup.minhash_verify import PAIRS_PER_FETCH, VERIFY_COUNTS, signature_margin
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import (
    PART,
    matching_files,
    read_small,
    sorted_batches,
    summed_counts,
    write_counts,
    write_partitions,
)
from mixture.pipelines.runtime.duckdb_connection import scalar
from mixture.pipelines.schemas import DROPS
from mixture.stages.registry import (
    BAND_TASK_COUNTS,
    CLUSTER_COUNTS,
    COMPONENT_PAIRS_PER_TASK,
    FUZZY_DROPS,
    NEAR,
    NEAR_DUPLICATES_REPORT,
    ROUTED_PAIRS,
    VERIFY_TASK_COUNTS,
    component_partitions,
    star_changes,
    star_edges,
)
from mixture.store.formats import NearDuplicateReport, write_model
from mixture.text.shingles import WORD_RULE

GREEDY_COUNTS = pa.schema([("drops", pa.int64()), ("kept_similar", pa.int64()), ("largest_component", pa.int64())])
LARGEST = "largest_component"  # of the greedy tasks' counts: the report takes their largest, not their sum


class MinhashCluster(PartitionedStep):
    """Stage `minhash_cluster`, greedy round, task p: the verified pairs of the components of partition p (every
    pair of a component is in one partition), in place of datatrove's MinhashDedupCluster (union-find over the
    bucket pairs, which chains documents through shared boilerplate): in spec order (source, file, record, as for
    exact duplicates) a document is dropped when a verified pair joins it to an earlier document that is kept; the
    detail names that document (the most similar one) and the similarity. A document's fate depends only on its
    component, so each partition decides its own as one pass over all of them would. Holds one byte per document
    of its pairs; the pairs stream from DuckDB sorted (spilled past `memory_limit`). Writes the drops by prepared
    file (FUZZY_DROPS in `output`: a shuffle file of `prepared` partitions, T, one per prepared file, read by
    `assign`'s task of that file) and the task's counts (CLUSTER_COUNTS in `folder`)."""

    name = "🎯 MinHash near duplicates"

    def __init__(self, folder: str, output: str, *, prepared: int, ngram: int, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.output, self.prepared, self.ngram = folder, output, prepared, ngram

    def inputs(self, rank: int) -> list[tuple[str, str, pa.Schema]]:
        return [("raw_verified", ROUTED_PAIRS.every(self.folder), ROUTED, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        # the pairs without their evidence (the kept document's id, source and file): ~3x less to hold and sort;
        # the drops' evidence is read back at the end (`_greedy`)
        con.execute("CREATE TABLE edges AS SELECT a, b, sim, comp FROM raw_verified")
        # a document is in one component: its (document, component) rows are distinct by document
        con.execute("""CREATE TABLE nodes AS SELECT g, comp, row_number() OVER (ORDER BY g) - 1 AS i
                       FROM (SELECT a AS g, comp FROM edges UNION SELECT b, comp FROM edges)""")
        largest = scalar(con, "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM nodes GROUP BY comp)")
        drops, kept_similar = self._greedy(con, rank)
        write_counts(CLUSTER_COUNTS.path(self.folder, rank), GREEDY_COUNTS,
                     {"drops": drops, "kept_similar": kept_similar, LARGEST: largest})
        return {"pairs": scalar(con, "SELECT count(*) FROM edges"), "drops": drops}

    def _greedy(self, con, rank: int) -> tuple[int, int]:
        """In spec order, each document with a verified pair to an earlier kept document is dropped, naming the most
        similar such document. Writes the drops; returns their number and the number of documents kept although
        similar to an earlier one (every such one was dropped: a components approach would drop them)."""
        dropped = np.zeros(scalar(con, "SELECT count(*) FROM nodes"), dtype=bool)
        con.execute("CREATE TABLE decided (a BIGINT, b BIGINT)")
        kept_similar, current, done = 0, -1, False
        stream = con.cursor().sql("""
            SELECT na.i AS ai, nb.i AS bi, e.a, e.b
            FROM edges e JOIN nodes na ON na.g = e.a JOIN nodes nb ON nb.g = e.b ORDER BY e.b, e.sim DESC, e.a""")
        for batch in stream.to_arrow_reader(PAIRS_PER_FETCH):
            taken = []
            for row, (a, b) in enumerate(zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True)):
                if b != current:
                    kept_similar += current >= 0 and not done
                    current, done = b, False
                if not done and not dropped[a]:
                    dropped[b], done = True, True
                    taken.append(row)
            if taken:
                con.register("batch", batch.take(pa.array(taken, pa.int64())))
                con.execute("INSERT INTO decided SELECT a, b FROM batch")
                con.unregister("batch")
        kept_similar += current >= 0 and not done
        measure = f"word {self.ngram}-gram Jaccard"

        def rows() -> Iterator[pa.RecordBatch]:
            # each dropped document (b) once, with the evidence of the pair that decided it
            for batch in sorted_batches(con, """
                    SELECT * FROM (SELECT DISTINCT ON (d.b) v.rank_b AS rank, v.idx_b AS idx, v.kept_id, v.kept_source,
                                          v.kept_file, v.kept_record, v.sim
                                   FROM decided d JOIN raw_verified v ON v.a = d.a AND v.b = d.b ORDER BY d.b)
                    ORDER BY rank, idx"""):
                cols = [batch.column(c).to_pylist() for c in ("kept_id", "kept_source", "kept_file", "kept_record",
                                                               "sim")]
                detail = [f"near duplicate of {i!r} ({s}, {f}:{r}): {measure} {sim:.3f} ({WORD_RULE})" for i, s, f, r, sim in zip(
                    *cols, strict=True)]
                yield pa.RecordBatch.from_arrays(
                    [batch.column("rank"), batch.column("idx"), pa.array(["fuzzy_duplicate"] * batch.num_rows),
                     pa.array(detail, pa.string()), batch.column("rank")], names=[*DROPS.names, PART])

        written = write_partitions(rows(), FUZZY_DROPS.path(self.output, rank), self.prepared)
        return sum(written.values()), int(kept_similar)



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
                  **summed_counts(CLUSTER_COUNTS.every(self.folder), GREEDY_COUNTS)}
        counts[LARGEST] = max((read_small(f, GREEDY_COUNTS)[LARGEST][0].as_py()
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
    the components are stars (`settled`, read once each round ran), the pairs routed to their components'
    partitions, the greedy keep per partition, the report."""
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
    yield Round("route", [RouteToComponents(folder, r, parts, tasks, memory_limit)], parts, (ROUTED_PAIRS,))
    yield Round("greedy", [MinhashCluster(folder, output, prepared=prepared, ngram=ngram, memory_limit=memory_limit)],
                parts, (FUZZY_DROPS, CLUSTER_COUNTS))
    yield Round("report", [NearDuplicates(folder, report, threshold=threshold, ngram=ngram, permutations=permutations,
                                          anchors=anchors)], 1)


def steps(ctx: BuildContext) -> Iterator[Round]:
    fz = ctx.spec.processing.dedup.fuzzy
    settings = {"threshold": fz.similarity_threshold, "ngram": fz.ngram, "permutations": fz.permutations}
    yield from rounds(ctx.at(NEAR), ctx.at(FUZZY_DROPS.folder), ctx.at(NEAR_DUPLICATES_REPORT), ctx.partitions,
                      prepared=ctx.tasks, pairs_per_task=ctx.execution("minhash_cluster").component_pairs_per_task,
                      memory_limit=ctx.memory_limit("minhash_cluster"), **settings)
