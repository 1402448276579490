"""The single-task `minhash_cluster` the build ran before the near duplicates were resolved per connected component,
kept as the reference the rounds of the stage must equal (drops, details and report). Copied as it was; only the
name of its drop files (one per prepared file, `OLD_DROPS`) is its own now."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa

from mixture.pipelines.context import Round
from mixture.pipelines.dedup.minhash_buckets import ANCHORS, BAND_COUNTS
from mixture.pipelines.dedup.minhash_verify import PAIRS_PER_FETCH, VERIFIED, VERIFY_COUNTS, signature_margin
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import (
    PART,
    matching_files,
    shuffle_partitions,
    sorted_batches,
    summed_counts,
    write_partitions,
)
from mixture.pipelines.runtime.duckdb_connection import scalar
from mixture.pipelines.schemas import DROPS
from mixture.stages.files import PART as PART_FIELD
from mixture.stages.files import TaskFile
from mixture.stages.registry import BAND_TASK_COUNTS, FUZZY_DROPS_DIR, VERIFIED_PAIRS, VERIFY_TASK_COUNTS
from mixture.store.formats import NearDuplicateReport, write_model
from mixture.text.shingles import WORD_RULE
from tests.dedup.synthetic_graphs import FILES

FUZZY_DROPS = TaskFile(FUZZY_DROPS_DIR, f"{PART_FIELD}.parquet")  # the old drop files: one per prepared file


class MinhashCluster(PartitionedStep):
    """Stage `minhash_cluster`, one task over the verified pairs only, in place of datatrove's MinhashDedupCluster
    (union-find over the bucket pairs, which chains documents through shared boilerplate): in spec order (source,
    file, record, as for exact duplicates) a document is dropped when a verified pair joins it to an earlier
    document that is kept; the detail names that document (the most similar one) and the similarity. Holds one
    byte per document of a verified pair; the pairs stream from DuckDB sorted (spilled past `memory_limit`).
    Writes the drops by prepared file (FUZZY_DROPS in `output`) and the report (`report`, NearDuplicateReport,
    the counts of every task summed)."""

    name = "🎯 MinHash near duplicates"

    def __init__(self, folder: str, output: str, report: str, *, threshold: float, ngram: int, permutations: int,
                 anchors: int = ANCHORS, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.output, self.report = folder, output, report
        self.threshold, self.ngram, self.permutations, self.anchors = threshold, ngram, permutations, anchors

    def inputs(self, rank: int) -> list[tuple]:
        files = matching_files(VERIFIED_PAIRS.every(self.folder))  # one shuffle file per verification task
        parts = shuffle_partitions(files[0]) if files else 1
        return [("raw_verified", VERIFIED_PAIRS.every(self.folder), VERIFIED, range(parts), parts)]

    def process(self, con, rank: int) -> dict[str, int]:
        out_fs, out_root = fsspec.core.url_to_fs(self.output)
        if out_fs.exists(out_root):  # an earlier attempt of this (only) task
            out_fs.rm(out_root, recursive=True)
        counts = {**summed_counts(BAND_TASK_COUNTS.every(self.folder), BAND_COUNTS),
                  **summed_counts(VERIFY_TASK_COUNTS.every(self.folder), VERIFY_COUNTS)}
        con.execute("CREATE TABLE edges AS SELECT * FROM raw_verified")
        con.execute("""CREATE TABLE nodes AS SELECT g, row_number() OVER (ORDER BY g) - 1 AS i
                       FROM (SELECT a AS g FROM edges UNION SELECT b FROM edges)""")
        drops, kept_similar = self._greedy(con)
        counts.update(drops=drops, kept_similar=kept_similar, largest_component=_largest_component(con),
                      pairs_rejected=counts["pairs_considered"] - counts["pairs_verified"])
        fs, path = fsspec.core.url_to_fs(self.report)
        write_model(fs, path, NearDuplicateReport(
            measure=f"word {self.ngram}-gram Jaccard ({WORD_RULE})", threshold=round(self.threshold, 4), anchors=self.anchors,
            signature_margin=round(signature_margin(self.threshold, self.permutations), 4), **counts))
        return {key: counts[key] for key in ("pairs_considered", "pairs_verified", "drops")}

    def _greedy(self, con) -> tuple[int, int]:
        """In spec order, each document with a verified pair to an earlier kept document is dropped, naming the most
        similar such document. Writes the drops; returns their number and the number of documents kept although
        similar to an earlier one (every such one was dropped: a components approach would drop them)."""
        dropped = np.zeros(scalar(con, "SELECT count(*) FROM nodes"), dtype=bool)
        con.execute("""CREATE TABLE decided (rank INTEGER, idx BIGINT, kept_id VARCHAR, kept_source VARCHAR,
                       kept_file VARCHAR, kept_record BIGINT, sim DOUBLE)""")
        kept_similar, current, done = 0, -1, False
        stream = con.cursor().sql("""
            SELECT na.i AS ai, nb.i AS bi, e.sim, e.rank_b AS rank, e.idx_b AS idx, e.kept_id, e.kept_source,
                   e.kept_file, e.kept_record
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
                con.execute("""INSERT INTO decided SELECT rank, idx, kept_id, kept_source, kept_file, kept_record, sim
                               FROM batch""")
                con.unregister("batch")
        kept_similar += current >= 0 and not done
        measure = f"word {self.ngram}-gram Jaccard"

        def rows() -> Iterator[pa.RecordBatch]:
            for batch in sorted_batches(con, "SELECT * FROM decided ORDER BY rank, idx"):
                cols = [batch.column(c).to_pylist() for c in ("kept_id", "kept_source", "kept_file", "kept_record",
                                                               "sim")]
                detail = [f"near duplicate of {i!r} ({s}, {f}:{r}): {measure} {sim:.3f} ({WORD_RULE})" for i, s, f, r, sim in zip(
                    *cols, strict=True)]
                yield pa.RecordBatch.from_arrays(
                    [batch.column("rank"), batch.column("idx"), pa.array(["fuzzy_duplicate"] * batch.num_rows),
                     pa.array(detail, pa.string()), batch.column("rank")], names=[*DROPS.names, PART])

        written = write_partitions(rows(), lambda r: FUZZY_DROPS.path(self.output, part=r))
        return sum(written.values()), int(kept_similar)



# -- running the new stage's rounds in this process, and comparing them with the single task -----------------
def run_rounds(rounds: Iterable[Round]) -> int:
    """Every task of each round of a stage run in rounds, in this process, one after another (as the driver runs
    them: each round made once the one before it ran); returns the number of rounds."""
    n = 0
    for r in rounds:
        for rank in range(r.tasks):
            data = None
            for step in r.steps:
                data = step.run(data, rank, r.tasks)
            list(data or ())
        n += 1
    return n


def _largest_component(con) -> int:
    """Documents of the largest component of the verified pairs, by scipy over every pair (the reference for the
    report's count, which the rounds' greedy tasks take from the components the rounds found)."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    pairs = con.execute("SELECT na.i, nb.i FROM edges e JOIN nodes na ON na.g = e.a JOIN nodes nb ON nb.g = e.b").fetchnumpy()
    n = int(con.execute("SELECT count(*) FROM nodes").fetchone()[0])
    if not n:
        return 0
    a, b = (np.asarray(v, np.int64) for v in pairs.values())
    _, label = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)), directed=False)
    return int(np.bincount(label).max())


def resolve(folder: str, output: str, report: str, tasks: int, prepared: int = FILES, pairs_per_task: int = 1,
            **settings) -> int:
    """The rounds of `minhash_cluster` (P = `tasks`, minhash_verify's; `prepared` files) over the verified pairs in
    `folder`, as ⌈pairs / `pairs_per_task`⌉ tasks (at most P; 1 pair: P tasks): the drops in `output`, the
    report at `report`; returns the number of rounds."""
    from mixture.pipelines.dedup.minhash_cluster import rounds

    return run_rounds(rounds(folder, output, report, tasks, prepared=prepared, pairs_per_task=pairs_per_task,
                             **settings))


def drops_by_file(folder: Path) -> dict[int, list[dict]]:
    """{prepared file: its drop rows sorted by document} of a drop folder: the old single task's files (one per
    prepared file) or the rounds' shuffle files (one per task, a range per prepared file)."""
    import pyarrow.parquet as pq

    from mixture.pipelines.dedup.shuffle import read_shuffle_file, shuffle_partitions

    out: dict[int, list[dict]] = {}
    for f in sorted(folder.rglob("*.parquet")):
        table = read_shuffle_file(str(f), DROPS) if shuffle_partitions(str(f)) else pq.read_table(f)
        for row in table.to_pylist():
            out.setdefault(row["rank"], []).append(row)
    return {k: sorted(v, key=lambda r: r["idx"]) for k, v in sorted(out.items())}


def assert_same_as_single_task(near: Path, tasks: int, out: Path, pairs_per_task: int = 1, **settings) -> dict:
    """The rounds of `minhash_cluster` at T = `tasks` over the verified pairs in `near` (a `near_dups` folder) list
    the drops (rank, index, detail, by prepared file) and write the report of the old single task over the same
    pairs; returns the report."""
    from mixture.store.formats import read_model

    reference, new = out / "reference", out / f"rounds-{tasks}"
    list(MinhashCluster(str(near), str(reference / "drops"), str(reference / "report.json"), **settings)
         .run(None, 0, 1) or ())
    resolve(str(near), str(new / "drops"), str(new / "report.json"), tasks, pairs_per_task=pairs_per_task, **settings)
    want = read_model(NearDuplicateReport, str(reference / "report.json"))
    assert drops_by_file(new / "drops") == drops_by_file(reference / "drops")
    assert read_model(NearDuplicateReport, str(new / "report.json")) == want
    return want.model_dump()
