"""`minhash_cluster` in rounds (connected components, pairs routed by component, the greedy keep per partition)
equals the old single task (tests/dedup/cluster_reference.py) on synthetic verified-pair graphs at T = 1, 3, 7:
the drops of every prepared file, their details and the report; and the rounds find the graph's components."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from mixture.pipelines.dedup.components import SIZES, round_changes, settled
from mixture.pipelines.dedup.shuffle import matching_files, read_partition
from mixture.stages.registry import COMPONENT_SIZES, star_changes
from mixture.store.formats import NearDuplicateReport, read_model
from tests.dedup.cluster_reference import assert_same_as_single_task, drops_by_file, resolve
from tests.dedup.synthetic_graphs import chain, mixed_graph, write_verified

SETTINGS = {"threshold": 0.7, "ngram": 5, "permutations": 112}


@pytest.mark.parametrize("tasks", [1, 3, pytest.param(7, marks=pytest.mark.slow)])
def test_rounds_equal_the_single_task_on_chains_stars_and_a_giant_component(tmp_path, tasks):
    near = tmp_path / "near_dups"
    pairs = write_verified(near, mixed_graph(seed=tasks), tasks, seed=tasks)
    report = assert_same_as_single_task(near, tasks, tmp_path, **SETTINGS)
    assert pairs > 5_000 and report["drops"] > 1_000 and report["kept_similar"] > 100


def test_chain_drops_its_middle_at_3_tasks(tmp_path):
    """A ~ B ~ C with A ≁ C: B goes, naming A; C stays (its only earlier neighbour is dropped)."""
    near = tmp_path / "near_dups"
    write_verified(near, chain(np.array([100, 200, 300])), 3)
    report = assert_same_as_single_task(near, 3, tmp_path, **SETTINGS)
    drops = [r for rows in drops_by_file(tmp_path / "rounds-3" / "drops").values() for r in rows]
    assert [r["idx"] for r in drops] == [200] and "'d100'" in drops[0]["detail"]
    assert (report["drops"], report["kept_similar"]) == (1, 1)


def test_no_pairs(tmp_path):
    near = tmp_path / "near_dups"
    write_verified(near, np.empty((0, 2), np.int64), 3)
    report = assert_same_as_single_task(near, 3, tmp_path, **SETTINGS)
    assert report["drops"] == report["kept_similar"] == 0


@pytest.mark.parametrize("tasks", [3, pytest.param(7, marks=pytest.mark.slow)])
def test_rounds_find_the_connected_components(tmp_path, tasks):
    """Each component's documents are counted in one partition with its component (the least document in it: scipy's
    components of the same graph); the rounds stop at the first round that finds the components stars;
    the report counts the largest component's documents."""
    near = tmp_path / "near_dups"
    edges = mixed_graph(seed=5)
    write_verified(near, edges, tasks)
    resolve(str(near), str(tmp_path / "drops"), str(tmp_path / "report.json"), tasks, **SETTINGS)
    stars = len({f.rsplit("/", 2)[1] for f in matching_files(star_changes(0).every(str(near)).replace("r000", "r*"))})
    assert [settled(str(near), r) for r in range(stars)] == [False] * (stars - 1) + [True]
    assert round_changes(str(near), 0) > 0 and round_changes(str(near), 1) > 0 and round_changes(str(near), 2) > 0
    assert round_changes(str(near), stars - 1) == 0 and round_changes(str(near), stars - 2) > 0
    nodes, inverse = np.unique(edges, return_inverse=True)
    inverse = inverse.reshape(edges.shape)
    graph = coo_matrix((np.ones(len(edges)), (inverse[:, 0], inverse[:, 1])), shape=(len(nodes), len(nodes)))
    _, label = connected_components(graph, directed=False)
    sizes = {int(nodes[label == c].min()): int((label == c).sum()) for c in set(label.tolist())}
    counted: dict[int, int] = {}
    partitions_of: dict[int, set[int]] = {}
    for q in range(tasks):
        for comp, n in zip(*read_partition(COMPONENT_SIZES.every(str(near)), q, SIZES, tasks).to_pydict().values(),
                           strict=True):
            counted[comp] = counted.get(comp, 0) + n
            partitions_of.setdefault(comp, set()).add(q)
    assert {comp: n + 1 for comp, n in counted.items()} == sizes  # the leaves counted, and the centre
    assert all(len(p) == 1 for p in partitions_of.values())
    report = read_model(NearDuplicateReport, str(tmp_path / "report.json"))
    assert report.largest_component == np.bincount(label).max() > 1_000  # mixed_graph's giant component


@pytest.mark.parametrize(("tasks", "components"), [(3, 1), (7, 3)])
def test_fewer_component_tasks_than_verify_tasks(tmp_path, tasks, components):
    """The rounds run as P_c = ⌈pairs / component_pairs_per_task⌉ tasks (here 1 of 3, 3 of 7): each reads the
    verified pairs of its documents from the files of the P verify tasks its partition overlaps; the drops and
    the report are the single task's."""
    from mixture.stages.registry import component_partitions

    near = tmp_path / "near_dups"
    pairs = write_verified(near, mixed_graph(seed=11), tasks, seed=11)
    per_task = -(-pairs // components)
    assert component_partitions(pairs, tasks, per_task) == components
    report = assert_same_as_single_task(near, tasks, tmp_path, pairs_per_task=per_task, **SETTINGS)
    assert report["drops"] > 1_000
    assert len(list((near / "components" / "r000").glob("*.parquet"))) == components
    assert component_partitions(0, 8, 10) == 1 and component_partitions(10**9, 8, 10) == 8


def test_no_task_holds_a_hub_and_a_finished_star_leaves_the_rounds(tmp_path):
    """A star settles in a few rounds; a chain in random order keeps the rounds going. Its edges are kept in their
    leaves' partitions: the centre's partition holds a few rows about it a round (LEAST, HOLDER, OPEN: at most P_c²),
    never its 200 edges; once it is found whole its edges are written DONE and carried, and the drops, the report and
    the components are still the single task's and scipy's."""
    from mixture.pipelines.dedup.components import DONE, EDGE, EDGES
    from mixture.pipelines.dedup.shuffle import matching_files, read_shuffle_file
    from mixture.stages.registry import star_edges
    from tests.dedup.synthetic_graphs import star

    rng = np.random.default_rng(3)
    leaves = np.arange(1_000, 1_400, 2)  # 200 leaves of centre 10
    edges = np.concatenate([star(10, leaves), chain(rng.permutation(np.arange(5_001, 9_001, 2)))])
    near = tmp_path / "near_dups"
    write_verified(near, edges, 3)
    report = assert_same_as_single_task(near, 3, tmp_path, **SETTINGS)
    assert report["largest_component"] == 2_000  # the chain

    def rows(r: int) -> list[dict]:
        files = matching_files(star_edges(r).every(str(near)))
        return [x for f in files for x in read_shuffle_file(f, EDGES).to_pylist()]

    stars = sum(1 for r in range(200) if matching_files(star_edges(r).every(str(near))))
    assert stars >= 9  # the chain's rounds, well past the star's
    about_centre = [sum(1 for x in rows(r) if x["u"] == 10) for r in range(stars)]
    assert 0 < max(about_centre) <= 3 * 3
    star_edges_by_round = [{x["u"]: x["flag"] for x in rows(r) if x["v"] == 10 and x["flag"] in (EDGE, DONE)}
                           for r in range(stars)]
    assert all(set(s) == set(leaves.tolist()) for s in star_edges_by_round)  # every round: leaf, centre
    done = [r for r, s in enumerate(star_edges_by_round) if set(s.values()) == {DONE}]
    assert done and done[0] <= 6 and done == list(range(done[0], stars))  # out of the rounds early, to the last


def test_the_greedy_decides_in_rounds_and_hands_a_chain_to_its_finish(tmp_path):
    """The greedy's rounds decide most documents (a round's decisions settle the next round's pairs); the chain in
    spec order, one link a round, is left to the finish once a round settles under 1/16 of the pairs left; the
    drops, their evidence and the report are the single pass's."""
    from mixture.pipelines.dedup.greedy_rounds import ROUND_COUNTS
    from mixture.pipelines.dedup.shuffle import summed_counts
    from mixture.stages.registry import FINISH_COUNTS, greedy_counts

    near = tmp_path / "near_dups"
    pairs = write_verified(near, mixed_graph(seed=2), 3, seed=2)
    assert_same_as_single_task(near, 3, tmp_path, **SETTINGS)
    counts = [summed_counts(greedy_counts(k).every(str(near)), ROUND_COUNTS)
              for k in range(1, 200) if matching_files(greedy_counts(k).every(str(near)))]
    assert len(counts) >= 4 and counts[0]["pairs"] == pairs  # round 1 sends the first decisions, settles no pair
    assert counts[1]["pairs"] < pairs / 2  # round 2 settles the pairs of the documents round 1 decided
    assert counts[-1]["pairs"] - counts[-1]["drops"] < counts[-2]["pairs"]  # the last round still settled some
    finish = summed_counts(FINISH_COUNTS.every(str(near)), ROUND_COUNTS)
    assert 0 < finish["pairs"] < 500 < pairs / 10  # the 400-document chain in spec order, about


def test_a_document_with_many_later_neighbours_sends_one_message_a_partition(tmp_path):
    """A template family's first page is the earlier document of a pair with each of its members: its decision
    (kept, round 1) goes once to each partition of its later neighbours, not once a neighbour."""
    from mixture.pipelines.dedup.greedy_rounds import MESSAGES
    from mixture.stages.registry import greedy_messages
    from tests.dedup.synthetic_graphs import star

    near = tmp_path / "near_dups"
    leaves = np.arange(1_000, 3_000, 2)
    write_verified(near, np.concatenate([star(10, leaves), chain(np.arange(5_001, 5_101, 2))]), 5)
    assert_same_as_single_task(near, 5, tmp_path, **SETTINGS)
    sent = [x for q in range(5) for x in read_partition(greedy_messages(1).every(str(near)), q, MESSAGES, 5)
            .to_pylist() if x["x"] == 10]
    assert len(sent) == 5 and all(x["kept"] for x in sent)  # 1,000 later neighbours over 5 partitions
