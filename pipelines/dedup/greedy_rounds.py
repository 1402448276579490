"""The greedy keep of `minhash_cluster` in rounds over the verified-pair graph, by P_c tasks whatever its components'
sizes: a document is kept once every earlier neighbour is dropped and dropped once one is kept (the decisions of
one pass in spec order), each round deciding what the last one's decisions allow, then one task finishing the rest
(a round task's share, or a chain that rounds would decide one link at a time); the drops with their evidence per
partition."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from mixture.pipelines.dedup.components import verified_partitions
from mixture.pipelines.dedup.minhash_verify import PAIRS_PER_FETCH, VERIFIED
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import (
    PART,
    sorted_batches,
    summed_counts,
    with_partition_function,
    write_counts,
    write_partitions,
)
from mixture.pipelines.runtime.duckdb_connection import scalar
from mixture.stages.files import TaskFile
from mixture.stages.registry import (
    FINISH_COUNTS,
    FINISH_DROPS,
    VERIFIED_PAIRS,
    greedy_counts,
    greedy_drops,
    greedy_fanout,
    greedy_messages,
    greedy_pairs,
    greedy_state,
)

# a pair whose earlier document (a) is not decided yet, kept in the partition of its later one (b)
PAIRS = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("sim", pa.float64())])
# a document with earlier neighbours not decided yet (waiting): dropped once one of them is kept, the kept one most
# similar so far its evidence (best_a, best_sim: the first in order of similarity, then document)
STATE = pa.schema([("b", pa.int64()), ("waiting", pa.int64()), ("dropped", pa.bool_()), ("best_a", pa.int64()),
                   ("best_sim", pa.float64())])
FANOUT = pa.schema([("x", pa.int64()), ("p", pa.int32())])  # an undecided document: a partition of its later neighbours
MESSAGES = pa.schema([("x", pa.int64()), ("kept", pa.bool_())])  # a document decided, to its later neighbours' partitions
DECIDED = pa.schema([("b", pa.int64()), ("best_a", pa.int64())])  # a drop, final, and its evidence's kept document
ROUND_COUNTS = pa.schema([(f, pa.int64()) for f in ("pairs", "waiting", "decided", "drops", "kept_similar")])
MAX_GREEDY_ROUNDS = 200  # past this the finishing task takes whatever is left (a chain of decisions this long)
# a round that settles less than 1/STALLED of the pairs left is deciding along chains (A~B~C~… in spec order, one link
# a round): the finish takes the rest in one pass, however many pairs that is (it sorts them spilling to disk)
STALLED = 16


def own(files: str, schema: pa.Schema) -> tuple:
    """An input's files, schema and partitions for a carried table (files of one partition): two requests a file."""
    return files, schema, range(0, 1), 1


def write_own(con, sql: str, path: str) -> int:
    """The rows of `sql` as the task's own file of one partition, streamed; returns their count."""
    return sum(write_partitions(sorted_batches(con, f"SELECT *, 0 AS {PART} FROM ({sql})"), path, 1).values())


def remaining_pairs(folder: str, round_: int) -> int:
    """The pairs left undecided after round `round_` (0: the start), over all its tasks."""
    return summed_counts(greedy_counts(round_).every(folder), ROUND_COUNTS)["pairs"]


class GreedyStart(PartitionedStep):
    """The greedy's start, task q of P_c: the verified pairs whose later document lies in partition q (of P's
    files, as the components' round 0 reads them), carried as they are; each such document waits for its earlier
    neighbours; each earlier document learns which partitions hold its later neighbours (FANOUT, to its own
    partition): a document's decision goes to each of them once, so a document with millions of later neighbours
    sends P_c messages at most."""

    name = "🎯 MinHash greedy start"

    def __init__(self, folder: str, partitions: int, sources: int, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.partitions, self.sources = folder, partitions, sources

    def inputs(self, rank: int) -> list[tuple]:
        return [("verified", VERIFIED_PAIRS.every(self.folder), VERIFIED,
                 verified_partitions(rank, self.partitions, self.sources), self.sources)]

    def process(self, con, rank: int) -> dict[str, int]:
        with_partition_function(con)
        con.execute(f"CREATE TABLE pairs AS SELECT a, b, sim FROM verified "
                    f"WHERE mixture_partition(b, {self.partitions}) = {rank}")
        pairs = write_own(con, "SELECT a, b, sim FROM pairs", greedy_pairs(0).path(self.folder, rank))
        waiting = write_own(con, "SELECT b, count(*) AS waiting, false AS dropped, NULL::BIGINT AS best_a, "
                                 "NULL::DOUBLE AS best_sim FROM pairs GROUP BY b",
                            greedy_state(0).path(self.folder, rank))
        write_partitions(sorted_batches(con, f"""
            SELECT x, {rank}::INTEGER AS p, mixture_partition(x, {self.partitions}) AS {PART}
            FROM (SELECT DISTINCT a AS x FROM pairs) ORDER BY {PART}"""),
            greedy_fanout(0).path(self.folder, rank), self.partitions)
        write_counts(greedy_counts(0).path(self.folder, rank), ROUND_COUNTS,
                     {"pairs": pairs, "waiting": waiting, "decided": 0, "drops": 0, "kept_similar": 0})
        return {"pairs": pairs, "waiting": waiting}


def apply_messages(con) -> None:
    """Over views `pairs_in` (PAIRS), `state_in` (STATE) and `msg_in` (MESSAGES, the documents decided in the last
    round, in this partition): table `st`, each waiting document's state after them (`was`: dropped before), and
    table `rest`, the pairs whose earlier document is still undecided."""
    con.execute("""CREATE TABLE upd AS SELECT p.b, count(*) AS n, bool_or(m.kept) AS kept,
                       max(p.sim) FILTER (WHERE m.kept) AS best_sim,
                       first(p.a ORDER BY p.sim DESC, p.a) FILTER (WHERE m.kept) AS best_a
                   FROM pairs_in p JOIN msg_in m ON m.x = p.a GROUP BY p.b""")
    lost = scalar(con, "SELECT count(*) FROM upd u ANTI JOIN state_in s ON s.b = u.b")
    if lost:  # a pair's later document not waiting in its own partition: the rounds' files do not match
        raise RuntimeError(f"{lost} documents with undecided pairs are not waiting in their partition; remove the "
                           "store's _build/minhash_cluster/ and build again")
    better = "u.best_sim IS NOT NULL AND (s.best_sim IS NULL OR u.best_sim > s.best_sim OR " \
             "(u.best_sim = s.best_sim AND u.best_a < s.best_a))"
    con.execute(f"""CREATE TABLE st AS SELECT s.b, s.waiting - coalesce(u.n, 0) AS waiting, s.dropped AS was,
                        s.dropped OR coalesce(u.kept, false) AS dropped,
                        CASE WHEN {better} THEN u.best_a ELSE s.best_a END AS best_a,
                        CASE WHEN {better} THEN u.best_sim ELSE s.best_sim END AS best_sim
                    FROM state_in s LEFT JOIN upd u USING (b)""")
    con.execute("CREATE TABLE rest AS SELECT p.a, p.b, p.sim FROM pairs_in p ANTI JOIN msg_in m ON m.x = p.a")


def finals(con) -> tuple[str, int]:
    """The drops `st` holds final (no earlier neighbour left undecided) as a query of DECIDED rows, and the
    documents kept although similar to earlier ones (each of them dropped)."""
    kept = scalar(con, "SELECT count(*) FROM st WHERE waiting = 0 AND NOT dropped")
    return "SELECT b, best_a FROM st WHERE waiting = 0 AND dropped", kept


class GreedyRound(PartitionedStep):
    """Greedy round k ≥ 1, task q: the decisions of round k-1 (MESSAGES, in the partitions of the decided
    documents' later neighbours) applied to the pairs and documents of partition q. A document is decided when one
    earlier neighbour is kept (dropped) or every one is dropped (kept); in round 1 a document with no earlier
    neighbour is kept. Each decision goes to the partitions of the document's later neighbours; a dropped document
    stays until every earlier neighbour is decided, for its evidence (the most similar kept one). Writes the
    messages (a shuffle of P_c), what is left of the pairs, the waiting documents and the undecided documents'
    partitions (the task's own files), the final drops and the round's counts."""

    name = "🎯 MinHash greedy round"

    def __init__(self, folder: str, round_: int, partitions: int, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.round, self.partitions = folder, round_, partitions

    def inputs(self, rank: int) -> list[tuple]:
        last = self.round - 1
        # the start sent each document's partitions to its own partition; later rounds carry them
        fanout = (("fanout_in", greedy_fanout(0).every(self.folder), FANOUT, rank) if last == 0 else
                  ("fanout_in", *own(greedy_fanout(last).path(self.folder, rank), FANOUT)))
        got = [("pairs_in", *own(greedy_pairs(last).path(self.folder, rank), PAIRS)),
               ("state_in", *own(greedy_state(last).path(self.folder, rank), STATE)), fanout]
        if last:
            got.append(("msg_in", greedy_messages(last).every(self.folder), MESSAGES, rank))
        return got

    def process(self, con, rank: int) -> dict[str, int]:
        if self.round == 1:
            con.register("msg_in", MESSAGES.empty_table())
        apply_messages(con)
        # decided now: those the messages settle, and (round 1) the documents with no earlier neighbour
        con.execute("""CREATE TABLE dec AS SELECT b AS x, NOT dropped AS kept FROM st
                           WHERE NOT was AND (dropped OR waiting = 0)
                       UNION ALL SELECT DISTINCT f.x, true FROM fanout_in f ANTI JOIN state_in s ON s.b = f.x""")

        def path(files: TaskFile) -> str:
            return files.path(self.folder, rank)

        write_partitions(sorted_batches(con, f"""
            SELECT d.x, d.kept, f.p AS {PART} FROM dec d JOIN fanout_in f USING (x) ORDER BY {PART}"""),
            path(greedy_messages(self.round)), self.partitions)
        pairs = write_own(con, "SELECT a, b, sim FROM rest", path(greedy_pairs(self.round)))
        waiting = write_own(con, "SELECT b, waiting, dropped, best_a, best_sim FROM st WHERE waiting > 0",
                            path(greedy_state(self.round)))
        write_own(con, "SELECT f.x, f.p FROM fanout_in f ANTI JOIN dec d ON d.x = f.x", path(greedy_fanout(self.round)))
        drops_sql, kept_similar = finals(con)
        drops = write_own(con, drops_sql, path(greedy_drops(self.round)))
        decided = scalar(con, "SELECT count(*) FROM dec")
        write_counts(path(greedy_counts(self.round)), ROUND_COUNTS, {
            "pairs": pairs, "waiting": waiting, "decided": decided, "drops": drops, "kept_similar": kept_similar})
        return {"decided": decided, "pairs_left": pairs, "drops": drops}


class GreedyFinish(PartitionedStep):
    """After round `last` (0: the start), one task: the last decisions applied, then what is left (at most a round
    task's share of pairs, or whatever MAX_GREEDY_ROUNDS left) decided in one pass in spec order: a waiting document
    is dropped for its most similar earlier neighbour that is kept, else kept; one already dropped takes a more
    similar kept neighbour for its evidence. A document that never waited is kept (no earlier neighbour). Writes the
    drops by partition of P_c (FINISH_DROPS) and its counts."""

    name = "🎯 MinHash greedy finish"

    def __init__(self, folder: str, last: int, partitions: int, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.last, self.partitions = folder, last, partitions

    def inputs(self, rank: int) -> list[tuple]:
        every = range(self.partitions)
        got = [("pairs_in", *own(greedy_pairs(self.last).every(self.folder), PAIRS)),
               ("state_in", *own(greedy_state(self.last).every(self.folder), STATE))]
        if self.last:
            got.append(("msg_every", greedy_messages(self.last).every(self.folder), MESSAGES, every, self.partitions))
        return got

    def process(self, con, rank: int) -> dict[str, int]:
        with_partition_function(con)
        if not self.last:
            con.register("msg_in", MESSAGES.empty_table())
        else:  # a decision goes to each partition of the document's later neighbours: here they are all one
            con.execute("CREATE VIEW msg_in AS SELECT DISTINCT x, kept FROM msg_every")
        apply_messages(con)
        drops_sql, kept_similar = finals(con)
        con.execute(f"CREATE TABLE out AS {drops_sql}")
        # what is left, in spec order: the documents numbered (those the last decisions settled too: one of them may
        # be dropped and still the earlier document of a pair left), each one's pairs by similarity
        con.execute("CREATE TABLE nodes AS SELECT *, row_number() OVER (ORDER BY b) - 1 AS i FROM st")
        n, waits = con.execute("SELECT count(*), coalesce(sum(waiting), 0) FROM st").fetchone()
        left = scalar(con, "SELECT count(*) FROM rest")
        if waits != left:  # each waiting document waits for its pairs left
            raise RuntimeError(f"the greedy's documents wait for {waits} pairs but {left} are left; remove the "
                               "store's _build/minhash_cluster/ and build again")
        known = con.sql("SELECT b, dropped, coalesce(best_a, -1) AS a, coalesce(best_sim, -1) AS s, "
                        "waiting > 0 AS w FROM nodes ORDER BY i").fetchnumpy()
        dropped, best_a, best_sim = (np.array(known[k]) for k in ("dropped", "a", "s"))
        pending = np.array(known["w"])  # the pass decides these, or finds their evidence
        waited = pending & ~dropped  # undecided when the pass starts
        current, found = -1, False
        stream = con.cursor().sql("""SELECT nb.i AS bi, coalesce(na.i, -1) AS ai, r.a, r.sim
                                     FROM rest r JOIN nodes nb ON nb.b = r.b LEFT JOIN nodes na ON na.b = r.a
                                     ORDER BY r.b, r.sim DESC, r.a""")
        for batch in stream.to_arrow_reader(PAIRS_PER_FETCH):
            for bi, ai, a, sim in zip(*(batch.column(c).to_pylist() for c in range(4)), strict=True):
                if bi != current:
                    current, found = bi, False
                if found or (ai >= 0 and dropped[ai]):  # decided for b already, or a dropped
                    continue
                found = True  # the first kept earlier neighbour by similarity: b's evidence
                if waited[bi] or sim > best_sim[bi] or (sim == best_sim[bi] and a < best_a[bi]):
                    dropped[bi], best_a[bi], best_sim[bi] = True, a, sim
        kept_similar += int((waited & ~dropped).sum())
        b = np.asarray(known["b"])
        swept = pending & dropped
        con.register("swept", pa.table({"b": b[swept], "best_a": best_a[swept]}))
        con.execute("INSERT INTO out SELECT b, best_a FROM swept")
        written = write_partitions(sorted_batches(con, f"""
            SELECT b, best_a, mixture_partition(b, {self.partitions}) AS {PART} FROM out ORDER BY {PART}"""),
            FINISH_DROPS.path(self.folder, rank), self.partitions)
        drops = sum(written.values())
        write_counts(FINISH_COUNTS.path(self.folder, rank), ROUND_COUNTS, {
            "pairs": left, "waiting": int(pending.sum()), "decided": n, "drops": drops, "kept_similar": kept_similar})
        return {"pairs_left": left, "drops": drops}


def decided_drops(folder: str, last: int, rank: int, partitions: int) -> Iterator[tuple]:
    """The inputs of task `rank` holding its partition's drops: each greedy round's own file, the finish's range."""
    for k in range(1, last + 1):
        yield f"drops_r{k}", *own(greedy_drops(k).path(folder, rank), DECIDED)
    yield "drops_finish", FINISH_DROPS.every(folder), DECIDED, range(rank, rank + 1), partitions
