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

# a row of the graph, kept in the partition of u: an edge (EDGE); a mark that v's only neighbour is u, smaller
# (LEAF: written by a large-star round, read by the next); u's component is the star around v, whole and final
# (DONE: written once, then carried from round to round in u's partition and no longer regrouped)
EDGES = pa.schema([("u", pa.int64()), ("v", pa.int64()), ("flag", pa.int8())])
EDGE, LEAF, DONE = 0, 1, 2
SIZES = pa.schema([("comp", pa.int64()), ("n", pa.int64())])  # a component (its least document), documents counted
# the edges a round wrote, those it replaced, and (large-star) the edges a small-star would replace: to smaller
# neighbours of a node other than its least one; both none: each component is a star around its least document
CHANGES = pa.schema([("edges", pa.int64()), ("changed", pa.int64()), ("unsettled", pa.int64())])
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
    """Round r of the components, task q of P_c (`partitions`): the edges of the nodes of partition q, each node u
    with its neighbours. Even rounds are small-star (u and each smaller neighbour joined to the least of them: only
    the edges to smaller neighbours are read, round 0 reads the verified pairs of its documents from their
    partitions, of `sources` (P), of `minhash_verify`'s shuffle: a later document with each earlier one), odd rounds
    large-star (each larger neighbour of u joined to the least of u and its neighbours, which needs both directions: a small-star round writes each edge to the partitions of both its nodes). Every
    round keeps each component connected and none joins two, nor writes more edges than it read; once a large-star
    round replaces no edge and finds no node with two smaller neighbours (`settled`), each component is a star
    around its least document. Writes the edges (`star_edges(r)`) and the task's counts (`star_changes(r)`).

    A star finished before the others leaves the rounds: its centre's partition would otherwise hold all its edges
    in every large-star round until the last component settles (the largest component, one task's, each round). In
    a large-star round each node whose only neighbour is smaller marks itself that neighbour's leaf (LEAF); in the
    next large-star round a node with no smaller neighbour whose every neighbour marked itself its leaf two rounds
    before is a whole component (its leaves had it for only neighbour, and it nothing smaller): its edges go out as
    DONE, in the leaves' partitions, carried as they are by every later round."""

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
        source = (f"SELECT b AS u, a AS v, {EDGE} AS flag FROM verified "
                  f"WHERE mixture_partition(b, {self.partitions}) = {rank}"
                  if self.round == 0 else "SELECT u, v, flag FROM edges_in")
        if self.round % 2 == 0:  # small-star: u and its smaller neighbours to the least of them
            con.execute(f"CREATE TABLE e AS SELECT DISTINCT u, v FROM ({source}) WHERE flag = {EDGE} AND v < u")
            con.execute("CREATE TABLE m AS SELECT u, min(v) AS m, count(*) AS smaller FROM e GROUP BY u")
            out = (f"SELECT u AS x, m AS y, {EDGE} AS flag FROM m "
                   f"UNION SELECT e.v, m.m, {EDGE} FROM e JOIN m USING (u) WHERE e.v <> m.m")
            # every smaller neighbour but the least is replaced
            counted = "sum(smaller), sum(smaller - 1), sum(smaller - 1)"
            kept = f"SELECT u, v, flag FROM ({source}) WHERE flag <> {EDGE}"  # the marks to their next round, DONE
        else:  # large-star: u's larger neighbours to the least of u and its neighbours
            con.execute(f"CREATE TABLE e AS SELECT DISTINCT u, v FROM ({source}) WHERE flag = {EDGE} AND v <> u")
            con.execute("""CREATE TABLE m AS SELECT u, least(u, min(v)) AS m, count(*) FILTER (v > u) AS larger,
                           count(*) FILTER (v < u) AS smaller FROM e GROUP BY u""")
            # a node with no smaller neighbour whose every neighbour marked itself its leaf two rounds before: its
            # marks are some of its neighbours then, which are some of its neighbours now (a node that has no smaller
            # neighbour now had none then, and a large-star round keeps every neighbour of such a node), so counting
            # them is enough
            con.execute(f"""CREATE TABLE done AS SELECT m.u FROM m JOIN (
                               SELECT u, count(DISTINCT v) AS marks FROM ({source}) WHERE flag = {LEAF} GROUP BY u) k
                           USING (u) WHERE m.smaller = 0 AND m.larger = k.marks""")
            out = (f"SELECT DISTINCT e.v AS x, m.m AS y, CASE WHEN d.u IS NULL THEN {EDGE} ELSE {DONE} END AS flag "
                   "FROM e JOIN m USING (u) LEFT JOIN done d USING (u) WHERE e.v > e.u")
            # the larger neighbours of a node that has a smaller one are replaced; and what a small-star would
            # replace: every smaller neighbour of a node but the least
            counted = "sum(larger + smaller), sum(larger) FILTER (m < u), sum(greatest(smaller - 1, 0))"
            kept = (f"SELECT m, u, {LEAF} FROM m WHERE smaller = 1 AND larger = 0 "  # the leaves: m their neighbour
                    f"UNION ALL SELECT u, v, flag FROM ({source}) WHERE flag = {DONE}")
        edges_in, changed, unsettled = (int(x or 0) for x in con.execute(f"SELECT {counted} FROM m").fetchone())
        con.execute(f"CREATE TABLE out AS {out}")
        mirrored = "UNION ALL SELECT y, x, flag FROM out" if self.round % 2 == 0 else ""  # large-star reads both ways
        written = write_partitions(sorted_batches(con, f"""
            SELECT u, v, flag::TINYINT AS flag, mixture_partition(u, {self.partitions}) AS {PART}
            FROM (SELECT x AS u, y AS v, flag FROM out {mirrored} UNION ALL {kept}) ORDER BY {PART}"""),
            star_edges(self.round).path(self.folder, rank), self.partitions, compression=EDGE_COMPRESSION)
        edges = scalar(con, "SELECT count(*) FROM out")
        write_counts(star_changes(self.round).path(self.folder, rank), CHANGES,
                     {"edges": edges, "changed": changed, "unsettled": unsettled})
        return {"edges_in": edges_in, "edges_out": edges, "edges_written": sum(written.values()),
                "edges_replaced": changed}


def round_changes(folder: str, round_: int) -> int:
    """The edges round `round_` replaced, over all its tasks."""
    return summed_counts(star_changes(round_).every(folder), CHANGES)["changed"]


def settled(folder: str, round_: int) -> bool:
    """After round `round_`, each component is a star around its least document: a large-star round (odd) that
    replaced no edge in a graph where no node has two smaller neighbours (a small-star would replace none)."""
    counts = summed_counts(star_changes(round_).every(folder), CHANGES)
    return round_ % 2 == 1 and counts["changed"] == counts["unsettled"] == 0


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
        # a node with a smaller neighbour is a leaf of the star around the least one (an edge or a DONE row)
        con.execute("CREATE TABLE label AS SELECT u, min(v) AS comp FROM edges_in WHERE v < u GROUP BY u")
        written = write_partitions(sorted_batches(con, f"""
            SELECT comp, count(*) AS n, mixture_partition(comp, {self.partitions}) AS {PART} FROM label
            GROUP BY comp ORDER BY {PART}"""), COMPONENT_SIZES.path(self.folder, rank), self.partitions)
        return {"components": sum(written.values())}


def largest(con) -> int:
    """The most documents of a component in view `sizes_in` (SIZES, a partition's counts from every task): its
    leaves and its centre."""
    return scalar(con, "SELECT coalesce(max(n) + 1, 0) FROM (SELECT sum(n) AS n FROM sizes_in GROUP BY comp)")
