"""The cost model (mixture/stages/costs.py): a stage's CPU scaled by what it grows with (never below linear), wall
hours on the cores it can use, objects as the registry's templates make them, the Slurm requests that follow; and
the docs' projection is this model applied to the growth benchmark's rates (one projection)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import growth_report
from mixture.stages import costs

DATA = Path(__file__).parents[1] / "benchmarks" / "data" / "growth_quick.json"


def _rates(*stages: costs.StageRate) -> costs.Rates:
    return costs.Rates(machine="m", measured="test", input_tokens=1_000, kept_share=0.8, stages=stages)


def _work(tokens: float, tasks: int = 10, **stage_tasks: int) -> costs.Workload:
    return costs.Workload(input_tokens=tokens, tasks=tasks, stage_tasks={"a": tasks, **stage_tasks}, fit_sample=100)


def test_a_stage_scales_with_its_tokens_never_below_linear():
    sub = costs.StageRate(stage="a", cpu_seconds=36, scaled_by="tokens", reference=1_000, exponent=0.5, peak_rss=0)
    sup = sub.model_copy(update={"exponent": 1.5})
    [lin] = costs.project(_rates(sub), _work(4_000), cores=5)
    [fast] = costs.project(_rates(sup), _work(4_000), cores=5)
    assert lin.core_hours == pytest.approx(36 * 4 / 3600) == lin.linear_core_hours
    assert fast.core_hours == pytest.approx(36 * 4**1.5 / 3600) and fast.linear_core_hours == lin.core_hours
    assert lin.wall_hours == pytest.approx(lin.core_hours / 5)  # 10 tasks on 5 cores
    assert lin.task_hours == pytest.approx(lin.core_hours / 10)


def test_one_task_stage_runs_on_one_core_and_the_fit_by_its_sample():
    fit = costs.StageRate(stage="fit", cpu_seconds=3600, scaled_by="sample", reference=50, exponent=2.0, peak_rss=0)
    [c] = costs.project(_rates(fit), _work(1e12, fit=1), cores=1000)
    assert c.core_hours == pytest.approx(2.0) == c.wall_hours  # sample 100 / 50, linear: the fit is bounded by it


def test_objects_and_slurm_requests():
    obj = costs.ObjectRate(pairs=2, per_task=3, per_cell=1, fixed=7)
    assert obj.count(tasks=100, cells=200) == 2 * 100**2 + (3 + 200) * 100 + 7
    c = costs.StageCost("a", 10, 1, 1, 1, task_hours=0.3, peak_rss=3 * 2**30, objects=0, scaled="")
    assert c.time_limit_hours() == 1.0 and c.time_limit_hours(8) == 5.0  # 2 × 8 × 0.3 h, in quarter hours
    assert costs.slurm_time(5.0) == "05:00:00" and costs.slurm_time(0.26) == "00:16:00"
    assert c.memory_request_gib == 5  # 1.5 × 3 GiB
    assert costs.price([c], costs.Prices(core_hour=0.5))["total"] == 0.5


def test_combined_shuffles_cut_the_reads_past_the_threshold():
    """A shuffle's readers make 2 range reads per writer file until 2 × writers × readers passes 4M; past it the
    writer files are combined into 64 files and their indexes merged into one (execution.combine_files sets the
    group; 1: never): a reader makes 1 + 64."""
    obj = costs.ObjectRate(shuffles=2)
    assert obj.reads(tasks=100, partitions=50) == 2 * 2 * 100 * 100  # the prepared-file shuffles: T readers
    assert obj.combined(tasks=100) == 0
    t = 8_000
    assert obj.reads(tasks=t, combine_files=1) == 2 * 2 * t * t
    # the combine round ~3 a writer file, the index's task 2 a combined file, the readers 1 + 64 each
    assert obj.reads(tasks=t) == 2 * (3 * t + 2 * 64 + 65 * t) and obj.combined(tasks=t) == 2 * 65
    assert obj.reads(tasks=t, combine_files=t) == 2 * (3 * t + 2 + 2 * t)  # one combined file
    rates = _rates(costs.StageRate(stage="minhash_sigs", cpu_seconds=1, scaled_by="tokens", reference=1,
                                   exponent=1.0, peak_rss=0),
                   costs.StageRate(stage="minhash_buckets", cpu_seconds=1, scaled_by="tokens", reference=1,
                                   exponent=1.0, peak_rss=0))
    work = costs.Workload(input_tokens=1, tasks=t, stage_tasks={"minhash_buckets": 8_008}, fit_sample=1, bands=14)
    sigs, buckets = costs.project(rates, work, cores=1000)
    # each band's files combined into 64 and their index, each file read once, each combined file's index once
    assert (sigs.objects, sigs.reads) == (14 * 65, 14 * (3 * t + 2 * 64))
    assert buckets.reads == 65 * 8_008  # a bucket task: its slice of its band's index, its range of each of 64 files
    plain = costs.project(rates, costs.Workload(input_tokens=1, tasks=t, stage_tasks={"minhash_buckets": 8_008},
                                                fit_sample=1, combine_files=1), cores=1000)
    assert plain[1].reads == 3 * 8_008 * t and plain[0].reads == 0


def test_listings_count_each_reader_and_page():
    """Each reader of a shuffle lists its writers' folder (pages of 1,000 files): 3 requests and a page per 1,000
    files over the writers' files, 1 and the pages when they are combined (the combine round's tasks list them too);
    a `minhash_buckets` task lists its band's signature files; the price counts listings with the writes."""
    obj = costs.ObjectRate(shuffles=2)
    assert obj.listings(tasks=100, partitions=50) == 2 * 100 * (3 + 1)
    t = 8_000
    assert obj.listings(tasks=t, combine_files=1) == 2 * t * (3 + 8)
    # 8,000 readers, the 64 tasks of the combine round and the task that merges their indexes
    assert obj.listings(tasks=t) == 2 * (t + 64 + 1) * (1 + 8)
    assert costs.ObjectRate().listings(tasks=t) == 0
    rates = _rates(costs.StageRate(stage="minhash_buckets", cpu_seconds=1, scaled_by="tokens", reference=1,
                                   exponent=1.0, peak_rss=0))
    work = costs.Workload(input_tokens=1, tasks=t, stage_tasks={"minhash_buckets": 8_008}, fit_sample=1)
    (buckets,) = costs.project(rates, work, cores=1000)
    assert buckets.listings == 8_008 * (1 + 8)
    assert costs.price([buckets], costs.Prices(core_hour=0, per_1000_writes=1))["writes"] == pytest.approx(
        (buckets.objects + buckets.listings) / 1000)


def test_a_stage_in_rounds_runs_as_tasks_of_its_pairs_with_rounds_that_grow_with_the_input():
    near = costs.StageRate(stage="a", cpu_seconds=36, scaled_by="tokens", reference=1_000, exponent=1.0, peak_rss=0,
                           rounds=costs.RoundsRate(rounds=5, pairs=300))
    work = costs.Workload(input_tokens=8_000, tasks=64, stage_tasks={"a": 64}, fit_sample=100,
                          component_pairs_per_task=100)
    [c] = costs.project(_rates(near), work, cores=1000)
    assert c.tasks == 24  # 300 × 8 pairs / 100 per task, not T
    n = 5 + 6  # 2 more rounds per doubling: 3 doublings; as many greedy rounds
    assert c.objects == (2 * n + 7 + 6 * n) * 24 + 3  # and no combined file of the verified pairs at this size
    # star rounds 1 … n-1, greedy rounds and the drops' sizes P_c² each, the greedy's own files 4 a task a round;
    # assign's T × P_c; star round 0, the greedy's start and the drops each read the verified pairs' shuffle (P = T =
    # 64 writer files, not combined at this size): each of the 24 tasks its range of partitions, two requests a file
    assert c.reads == 2 * (2 * n * 24 * 24 + 4 * n * 24 + 64 * 24) + 3 * 2 * 64 * 24
    assert c.wall_hours == pytest.approx(36 * 8 / 3600 / 24)
    [one] = costs.project(_rates(near), costs.Workload(input_tokens=1_000, tasks=64, stage_tasks={},
                                                       fit_sample=100), cores=1000)
    assert one.tasks == 1 and one.objects == 8 * 5 + 7 + 3  # a small graph: one task per round, whatever T


def test_the_largest_component_s_star_rounds_add_their_share_to_every_task():
    near = costs.StageRate(stage="a", cpu_seconds=36, scaled_by="tokens", reference=1_000, exponent=1.0, peak_rss=0,
                           rounds=costs.RoundsRate(rounds=5, pairs=300))
    # measured: a component of 1,000 documents and 2,000 pairs in 10 rounds of 4 tasks, the longest task of each
    # star round 20 s in all; the greedy's 6 rounds and finish, spread, 4 s on their longest tasks
    path = costs.ComponentPath(members=1_000, pairs=2_000, rounds=10, tasks=4, star_seconds=20, greedy_rounds=6,
                               greedy_seconds=4, measured="test")
    rates = _rates(near).model_copy(update={"largest_component": path})

    def cluster(**work) -> costs.StageCost:
        [c] = costs.project(rates, costs.Workload(input_tokens=8_000, tasks=64, stage_tasks={"a": 64}, fit_sample=100,
                                                  component_pairs_per_task=100, **work), cores=1000)
        return c

    even = cluster()
    assert even.tasks == 24 and even.wall_hours == pytest.approx(36 * 8 / 3600 / 24) and "largest" not in even.scaled
    n = 5 + 6  # the stage's rounds at 8× its reference: fewer than the component's own (10 + 14 + 3)
    big = cluster(largest_component=100_000)
    # its 99,999 pairs at least: 1,000 tasks of 100, at most P = 64
    assert big.tasks == 64
    share = 2.0 * 100 * 4 / 64  # a round's longest task 2 s, × 100 the documents, its 4 tasks' share spread over 64
    assert big.wall_hours == pytest.approx((36 * 8 / 64 + share * n) / 3600)
    assert big.task_hours == pytest.approx((36 * 8 / 64 + share * n) / 3600)
    assert big.core_hours == pytest.approx(even.core_hours + share * n * 64 / 3600) and "100,000 documents" in big.scaled
    small = cluster(largest_component=1_001)  # 1,000 pairs: 10 tasks' worth, fewer than the stage's 24; 11 rounds
    assert small.tasks == 24 and small.wall_hours == pytest.approx(even.wall_hours + 2.0 * 1.001 * 4 / 24 * n / 3600)
    [plain] = costs.project(_rates(near), costs.Workload(input_tokens=8_000, tasks=64, stage_tasks={"a": 64},
                                                          fit_sample=100, component_pairs_per_task=100,
                                                          largest_component=100_000), cores=1000)
    # rates without a measured path: its rounds not projected, its pairs' tasks are
    assert plain.wall_hours == pytest.approx(36 * 8 / 3600 / 64) and "largest" not in plain.scaled
    # a stage of many more rounds (its other components' chains): the component's are its own, the measured 10, 2
    # more per doubling of its documents (100×: 14) and 3 to be found whole
    deep = rates.model_copy(update={"stages": (near.model_copy(update={"rounds": costs.RoundsRate(rounds=60, pairs=300)}),)})
    [c] = costs.project(deep, costs.Workload(input_tokens=8_000, tasks=64, stage_tasks={"a": 64}, fit_sample=100,
                                             component_pairs_per_task=100, largest_component=100_000), cores=1000)
    assert path.rounds_at(100_000) == 10 + 14 + 3
    assert c.wall_hours == pytest.approx((36 * 8 / 64 + share * 27) / 3600) and "27 star rounds" in c.scaled
    assert costs.load_rates().largest_component is not None  # the packaged rates have one


def test_the_greedy_rounds_requested_grow_with_the_largest_component():
    """The greedy's rounds (six files a task, P_c² reads each) are the measured path's, one more per doubling of the
    largest component's documents (Marin's candidate cluster when none is given), at most the star rounds."""
    near = costs.StageRate(stage="a", cpu_seconds=36, scaled_by="tokens", reference=1_000, exponent=1.0, peak_rss=0,
                           rounds=costs.RoundsRate(rounds=30, pairs=300))
    path = costs.ComponentPath(members=1_000, pairs=2_000, rounds=10, tasks=4, star_seconds=20, greedy_rounds=6,
                               greedy_seconds=4, measured="test")
    rates = _rates(near).model_copy(update={"largest_component": path})

    def objects(largest: float | None) -> int:
        [c] = costs.project(rates, costs.Workload(input_tokens=8_000, tasks=64, stage_tasks={"a": 64}, fit_sample=100,
                                                  component_pairs_per_task=100, largest_component=largest), cores=1000)
        return c.objects

    n, tasks = 30 + 6, 24
    assert path.greedy_rounds_at(1_000) == 6 and path.greedy_rounds_at(100_000) == 6 + 7
    assert objects(1_000) == (2 * n + 7 + 6 * 6) * tasks + 3
    assert objects(100_000) == (2 * n + 7 + 6 * 13) * 64 + 3  # its 99,999 pairs: P = 64 tasks
    assert objects(None) == (2 * n + 7 + 6 * 26) * tasks + 3  # Marin's 825M: 6 + 20 greedy rounds
    assert objects(1e12) == (2 * n + 7 + 6 * n) * 64 + 3  # at most the star rounds


def test_a_stage_scaled_by_candidate_pairs_takes_the_workloads_or_their_measured_growth():
    verify = costs.StageRate(stage="a", cpu_seconds=36, scaled_by="pairs", reference=500, exponent=1.0, peak_rss=0)
    rates = _rates(verify).model_copy(update={"candidate_pairs": 500.0, "pairs_exponent": 1.5})
    [grown] = costs.project(rates, _work(4_000), cores=1000)  # 4× the tokens: 4^1.5 = 8× the pairs
    assert rates.pairs_at(4_000) == pytest.approx(4_000) and grown.core_hours == pytest.approx(36 * 8 / 3600)
    given = costs.Workload(input_tokens=4_000, tasks=10, stage_tasks={"a": 10}, fit_sample=100, candidate_pairs=1_000)
    [mine] = costs.project(rates, given, cores=1000)  # the corpus's own pairs, whatever the tokens
    assert mine.core_hours == pytest.approx(36 * 2 / 3600) and mine.scaled == "pairs ×2"
    assert rates.model_copy(update={"pairs_exponent": 0.5}).pairs_at(4_000) == pytest.approx(2_000)  # never under 1
    with pytest.raises(ValueError, match="no candidate pairs"):
        costs.project(_rates(verify), _work(4_000), cores=1000)


def test_a_fitted_stage_pays_its_tasks_its_ranges_and_its_work():
    lin = costs.LinearCost(fixed=10, per_task=0.5, per_range=0.01, per_unit=2e-3)
    a = costs.StageRate(stage="a", cpu_seconds=36, scaled_by="tokens", reference=1_000, exponent=1.5, peak_rss=0,
                        linear=lin)
    work = costs.Workload(input_tokens=4_000, tasks=10, stage_tasks={"a": 10}, fit_sample=100, partitions=5)
    [c] = costs.project(_rates(a), work, cores=1000)
    assert c.core_hours * 3600 == pytest.approx(10 + 0.5 * 10 + 0.01 * 10 * 5 + 2e-3 * 4_000)  # not 36 × 4^1.5
    assert "its tasks" in c.scaled and "T·P" in c.scaled


def test_the_docs_projection_is_the_cost_model_of_the_growth_rates():
    report = growth_report.Report(json.loads(DATA.read_text()))
    rates = report.rates()
    assert {r.stage for r in rates.stages} == set(report.names)
    rows = report.projection_rows()
    assert sum(r["core_hours"] for r in rows) > 0
    again = costs.Rates.model_validate_json(rates.model_dump_json())  # what bench/cost_rates.py writes, read back
    assert [r.cpu_seconds for r in again.stages] == [r["cpu"] for r in rows]


def test_the_components_benchmark_gives_the_largest_component_s_path():
    from bench.cost_rates import component_path

    longest = {"star": 12.0, "start": 1.0, "greedy": 17.0, "finish": 2.0, "drops": 1.0, "report": 0.1}
    results = {"pairs": 8_000, "giant": 4_000, "machine": "m", "load": "load 1", "command": "python -m bench.x",
               "runs": {"old": {"tasks": 1, "rounds": 1},
                        "P=1": {"tasks": 1, "rounds": 9, "greedy_rounds": 5, "longest": {**longest, "greedy": 30.0}},
                        "P=8": {"tasks": 8, "rounds": 10, "greedy_rounds": 6, "longest": longest}}}
    path = component_path(results)  # the run with the most tasks: the component's task apart from the rest
    assert (path.members, path.pairs, path.rounds, path.greedy_rounds, path.tasks) == (4_000, 8_000, 10, 6, 8)
    assert (path.star_seconds, path.greedy_seconds) == (12.0, 19.0)
    assert "python -m bench.x" in path.measured and "load 1" in path.measured
