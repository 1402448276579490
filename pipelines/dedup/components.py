"""The connected components of the verified-pair graph, by T tasks in rounds (large-star and small-star of Kiveris
et al., "Connected Components in MapReduce and Beyond"), then their documents counted (the report's largest
component); the first rounds of `minhash_cluster`."""

from __future__ import annotations

import pyarrow as pa

from mixture.pipelines.dedup.minhash_verify import VERIFIED
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
from mixture.stages.registry import COMPONENT_SIZES, VERIFIED_PAIRS, star_changes, star_edges

# a row of the graph's rounds (EDGES: u, v, flag), in the partition of u (an edge's larger end, or the node the row
# is about) unless said otherwise:
# EDGE    an edge, v < u: a node's smaller neighbours are in its own partition, so the least of them is found there,
#         and a document with millions of larger neighbours (a template's first page) holds none of their edges
# DONE    an edge of a whole star (its centre v): out of the rounds, carried in u's partition to the last
# HOLDER  (x, p): partition p holds an edge of x to a larger neighbour (an apply round, to the next least round)
# WHOLE   (x, x): x is the centre of a whole star (an apply round, to the next least round in x's partition)
# LEAST   (x, m): m the least of x's smaller neighbours (a least round, to each partition that holds edges of x)
# CLOSED  (x, x): x's star is whole: its edges leave the rounds (a least round, to each partition that holds them)
# OPEN    (x, 0|1): whether a partition's larger neighbours of x include one with another neighbour (a least round,
#         to x's partition, whose next apply round finds x the centre of a whole star when none does)
EDGES = pa.schema([("u", pa.int64()), ("v", pa.int64()), ("flag", pa.int8())])
EDGE, DONE, HOLDER, WHOLE, LEAST, CLOSED, OPEN = range(7)
SIZES = pa.schema([("comp", pa.int64()), ("n", pa.int64())])  # a component (its least document), documents counted
# the edges a round kept, and what it changed: an apply round's edges replaced (by the large-star, then by the
# small-star), a least round's documents that keep the components from being stars; none in a least round or in an
# apply round after the first, and each component is a star around its least document
CHANGES = pa.schema([("edges", pa.int64()), ("changed", pa.int64())])
EDGE_COMPRESSION = "lz4"  # the rounds' edges: integers written and read once, where zstd's time would dominate
MAX_ROUNDS = 200  # large-star/small-star needs O(log² n) rounds at worst; far more means something is broken


def verified_partitions(part: int, partitions: int, sources: int) -> range:
    """The partitions of the verified pairs' shuffle (`minhash_verify` writes each pair to the partition of its
    later document, of `sources` = P) that may hold pairs whose later document lies in component partition `part`
    of `partitions` (P_c): a document's partition is the prefix of its hash scaled to the count
    (`document_partition`), so P_c partition q' overlaps P partitions ⌊q'·P/P_c⌋ … ⌈(q'+1)·P/P_c⌉ − 1; the reader
    keeps its own documents' pairs (`mixture_partition(b, P_c) = q'`)."""
    first, last = part * sources // partitions, -(-(part + 1) * sources // partitions) - 1
    return range(first, min(last, sources - 1) + 1)


class StarRound(PartitionedStep):
    """Round r of the components, task q of P_c (`partitions`): large-star and small-star over the edges kept in the
    partition of their larger end, so that no task holds a node's larger neighbours (a template's first page may
    have millions). Odd rounds find the least: each node's least smaller neighbour (all of them in its partition),
    sent to each partition holding its edges to larger neighbours (LEAST: at most P_c rows a node, whatever its
    degree). Even rounds apply: each edge (u, v) to (u, the least of v and v's neighbours) (large-star), then each
    node's smaller neighbours joined to the least of them (small-star); the new edges go to their larger end's
    partition, and each partition holding edges of a node x to larger ones tells x's (HOLDER). Round 0 reads the
    verified pairs (each in the partition of its later document, of `sources` P) and applies the small-star only.
    Every round keeps each component connected and none joins two, nor writes more edges than it read. Each
    component is a star around its least document (`settled`) once every edge's smaller end has no smaller neighbour
    and every larger end one: a least round checks it on the edges it reads (a node's smaller neighbours are in its
    partition, and whether it has larger ones is what the HOLDER rows say), an apply round after the first by
    replacing no edge.

    A star finished before the others leaves the rounds (its edges would otherwise be read and written in every
    round until the last component settles): a least round tells each node x whether the partition's larger
    neighbours of x include one that is not a leaf (OPEN; a leaf has one smaller neighbour and no larger one); the
    next apply round finds x the centre of a whole star when x has no smaller neighbour and no partition named a
    non-leaf (WHOLE), the next least round tells the partitions holding its edges (CLOSED), and the apply round after
    writes them DONE, carried as they are by every later round. Writes the rows (`star_edges(r)`) and the task's
    counts (`star_changes(r)`)."""

    name = "🎯 MinHash components round"

    def __init__(self, folder: str, round_: int, partitions: int, sources: int, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.round, self.partitions, self.sources = folder, round_, partitions, sources

    def inputs(self, rank: int) -> list[tuple]:
        if self.round == 0:
            return [("verified", VERIFIED_PAIRS.every(self.folder), VERIFIED,
                     verified_partitions(rank, self.partitions, self.sources), self.sources)]
        return [("edges_in", star_edges(self.round - 1).every(self.folder), EDGES, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        with_partition_function(con)
        if self.round == 0:
            con.execute(f"CREATE VIEW edges_in AS SELECT b AS u, a AS v, {EDGE}::TINYINT AS flag FROM verified "
                        f"WHERE mixture_partition(b, {self.partitions}) = {rank}")
        con.execute(f"CREATE TABLE e AS SELECT DISTINCT u, v FROM edges_in WHERE flag = {EDGE}")
        edges_in = scalar(con, "SELECT count(*) FROM e")
        rows, counts = self._least(con, rank, edges_in) if self.round % 2 else self._apply(con)
        written = write_partitions(sorted_batches(con, f"""
            SELECT u, v, flag::TINYINT AS flag, {PART} FROM ({rows}) ORDER BY {PART}"""),
            star_edges(self.round).path(self.folder, rank), self.partitions, compression=EDGE_COMPRESSION)
        write_counts(star_changes(self.round).path(self.folder, rank), CHANGES, counts)
        return {"edges_in": edges_in, "rows_written": sum(written.values()), "edges_replaced": counts["changed"]}

    def _least(self, con, rank: int, edges: int) -> tuple[str, dict[str, int]]:
        """A least round's rows (each with its partition) and counts: its `edges` carried as they are."""
        con.execute(f"CREATE TABLE holders AS SELECT DISTINCT u AS x, v AS p FROM edges_in WHERE flag = {HOLDER}")
        con.execute("CREATE TABLE m AS SELECT u, min(v) AS m, count(*) AS smaller FROM e GROUP BY u")
        con.execute("CREATE TABLE nonleaf AS SELECT u FROM m WHERE smaller > 1 UNION SELECT x FROM holders")
        part = f"mixture_partition(u, {self.partitions})"
        rows = f"""
            SELECT u, v, {EDGE} AS flag, {rank} AS {PART} FROM e
            UNION ALL SELECT u, v, flag, {rank} FROM edges_in WHERE flag = {DONE}
            UNION ALL SELECT m.u, m.m, {LEAST}, h.p FROM m JOIN holders h ON h.x = m.u
            UNION ALL SELECT w.u, w.u, {CLOSED}, h.p FROM (SELECT DISTINCT u FROM edges_in WHERE flag = {WHOLE}) w
                JOIN holders h ON h.x = w.u
            UNION ALL SELECT u, open, {OPEN}, {part} FROM (
                SELECT e.v AS u, max(CASE WHEN n.u IS NULL THEN 0 ELSE 1 END) AS open
                FROM e LEFT JOIN nonleaf n ON n.u = e.u GROUP BY e.v)"""
        # what keeps the components from being stars around their least documents: a document with two earlier
        # neighbours, or one with an earlier neighbour that is itself an edge's earlier end (it has holders); none in
        # any partition and the apply round after would replace no edge (`settled`)
        unsettled = scalar(con, "SELECT coalesce(sum(smaller - 1), 0) + count(*) FILTER (WHERE u IN (SELECT x FROM "
                                "holders)) FROM m")
        return rows, {"edges": edges, "changed": unsettled}

    def _apply(self, con) -> tuple[str, dict[str, int]]:
        """An apply round's rows (each with its partition) and counts."""
        con.execute(f"CREATE TABLE least AS SELECT u AS v, min(v) AS m FROM edges_in WHERE flag = {LEAST} GROUP BY u")
        con.execute(f"CREATE TABLE closed AS SELECT DISTINCT u AS v FROM edges_in WHERE flag = {CLOSED}")
        # large-star: each edge (u, v) to the least of v and its smaller neighbours; a whole star's edges leave
        con.execute("""CREATE TABLE big AS SELECT DISTINCT e.u, coalesce(l.m, e.v) AS v
                       FROM e LEFT JOIN least l ON l.v = e.v WHERE e.v NOT IN (SELECT v FROM closed)""")
        # small-star: each node's smaller neighbours (and itself) to the least of them
        con.execute("CREATE TABLE s AS SELECT u, min(v) AS m, count(*) AS smaller FROM big GROUP BY u")
        con.execute("CREATE TABLE out AS SELECT u, m AS v FROM s UNION SELECT b.v, s.m FROM big b JOIN s USING (u) "
                    "WHERE b.v <> s.m")
        # a whole star's centre: no smaller neighbour, and every partition holding its edges found only leaves
        con.execute(f"""CREATE TABLE whole AS SELECT u FROM edges_in WHERE flag = {OPEN} GROUP BY u
                        HAVING max(v) = 0 AND u NOT IN (SELECT u FROM e)""")
        part = f"mixture_partition(u, {self.partitions})"
        rows = f"""
            SELECT u, v, flag, {part} AS {PART} FROM (
                SELECT u, v, {EDGE} AS flag FROM out
                UNION ALL SELECT u, v, flag FROM edges_in WHERE flag = {DONE}
                UNION ALL SELECT e.u, e.v, {DONE} FROM e JOIN closed c ON c.v = e.v
                UNION ALL SELECT u, u, {WHOLE} FROM whole
                UNION ALL SELECT DISTINCT v, mixture_partition(u, {self.partitions}), {HOLDER} FROM out)"""
        replaced = scalar(con, "SELECT count(*) FROM e JOIN least l ON l.v = e.v")
        unsettled = int(scalar(con, "SELECT coalesce(sum(smaller - 1), 0) FROM s"))
        return rows, {"edges": scalar(con, "SELECT count(*) FROM out"), "changed": replaced + unsettled}


def round_changes(folder: str, round_: int) -> int:
    """The edges round `round_` replaced, over all its tasks."""
    return summed_counts(star_changes(round_).every(folder), CHANGES)["changed"]


def settled(folder: str, round_: int) -> bool:
    """After round `round_`, each component is a star around its least document: a least round (odd) that found no
    document with two earlier neighbours nor one with an earlier neighbour and a later one, or an apply round after
    the first that replaced no edge (`StarRound`)."""
    return (round_ % 2 == 1 or round_ >= 2) and round_changes(folder, round_) == 0


class ComponentSizes(PartitionedStep):
    """After the last star round (`last`), task q of P_c: the documents of partition q other than their component's
    centre counted by component (the least document of its star, the node each is joined to), to the component's
    partition (SIZES): at most P_c rows a component, whatever its size. The greedy's drops round sums them
    (`largest`)."""

    name = "🎯 MinHash component sizes"

    def __init__(self, folder: str, last: int, partitions: int, memory_limit: str | None = None):
        super().__init__(memory_limit)
        self.folder, self.last, self.partitions = folder, last, partitions

    def inputs(self, rank: int) -> list[tuple]:
        return [("edges_in", star_edges(self.last).every(self.folder), EDGES, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        with_partition_function(con)
        # a node with a smaller neighbour is a leaf of the star around it (an edge or a DONE row)
        con.execute(f"CREATE TABLE label AS SELECT u, min(v) AS comp FROM edges_in WHERE flag IN ({EDGE}, {DONE}) "
                    "GROUP BY u")
        written = write_partitions(sorted_batches(con, f"""
            SELECT comp, count(*) AS n, mixture_partition(comp, {self.partitions}) AS {PART} FROM label
            GROUP BY comp ORDER BY {PART}"""), COMPONENT_SIZES.path(self.folder, rank), self.partitions)
        return {"components": sum(written.values())}


def largest(con) -> int:
    """The most documents of a component in view `sizes_in` (SIZES, a partition's counts from every task): its
    leaves and its centre."""
    return scalar(con, "SELECT coalesce(max(n) + 1, 0) FROM (SELECT sum(n) AS n FROM sizes_in GROUP BY comp)")
