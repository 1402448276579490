"""The growth benchmark's harness (bench/growth_bench.py) cannot rot: its corpus of variants at a tiny size, and its
exponents, goals and docs sections on the figures a real `--quick` run measured (tests/benchmarks/data/)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
import yaml

from bench import growth_bench, growth_corpus, growth_report
from mixture.spec.load import load_spec
from mixture.stages import costs
from mixture.stages import registry as stage_registry

DATA = Path(__file__).parent / "data" / "growth_quick.json"


@pytest.fixture(scope="module")
def measured() -> dict:
    return json.loads(DATA.read_text())


def test_variants_are_cached_and_joined_into_one_corpus_per_size(tmp_path):
    cache = tmp_path / "cache"
    folders = growth_corpus.ensure_variants(cache, 0, 0.02, [1, 2], log=lambda _: None)
    counts = [growth_corpus.input_counts(folders[v]) for v in (1, 2)]
    assert counts[0]["records"] == counts[1]["records"] > 100 and counts[0]["tokens"] > 10_000
    stamp = (folders[1] / "MANIFEST.json").stat().st_mtime_ns
    assert growth_corpus.ensure_variants(cache, 0, 0.02, [1, 2], log=lambda _: None) == folders
    assert (folders[1] / "MANIFEST.json").stat().st_mtime_ns == stamp  # cached: not written again

    corpus = growth_corpus.assemble(tmp_path / "n002", [folders[1], folders[2]])
    code = sorted(p.name for p in (corpus / "stdlib-code").iterdir())
    assert code and all(n.startswith(("v001-part-", "v002-part-")) for n in code)
    assert len(code) == 2 * len(list((folders[1] / "stdlib-code").iterdir()))
    linked = corpus / "stdlib-code" / code[0]
    assert os.path.samefile(linked, folders[1] / "stdlib-code" / code[0].removeprefix("v001-"))

    args = growth_bench.argparse.Namespace(k=8, fine_k=32, tasks_per_variant=2, sample_docs=100)
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(growth_bench.growth_spec(corpus, 2, 2, args)))
    spec = load_spec(str(spec_path))
    assert spec.execution.tasks == 4 and spec.partition.clusters.sample_docs == 100
    single = growth_report.single_task_stages(spec_path, 4)
    assert single[-1] == "finalize"
    assert all(stage_registry.get(n).task_count(spec, 4) == 1 for n in single[:-1])
    assert set(growth_report.pool_tasks(spec_path)) == {s.name for s in stage_registry.planned(spec)} | {"finalize"}


def test_exponent_is_the_log_log_slope():
    xs = [1e6, 4e6, 18e6]
    assert growth_report.exponent(xs, [3 * x**1.5 for x in xs]) == pytest.approx(1.5)
    assert growth_report.exponent(xs, [7.0] * 3) == pytest.approx(0.0, abs=1e-12)
    assert growth_report.exponent([1e6], [2.0]) is None and growth_report.exponent(xs, [0.0, 1.0, 2.0]) is None


def test_per_token_fit_separates_fixed_seconds_from_growth():
    """A stage of 0.8 s fixed plus linear growth reads as sublinear to a log-log slope; the fit finds k = 1 and the
    0.8 s; a superlinear growing part stays superlinear; too few points give nothing."""
    xs = [s * 7.5e6 for s in (1, 2, 4, 8, 16) for _ in range(3)]
    noise = [1.0, 1.02, 0.98] * 5
    linear = [(0.8 + 2e-7 * x) * e for x, e in zip(xs, noise, strict=True)]
    assert growth_report.exponent(xs, linear) < 0.9
    k, low, high, a = growth_report.per_token_fit(xs, linear)
    assert k == pytest.approx(1.0, abs=0.05) and low < 1.0 < high and a == pytest.approx(0.8, abs=0.3)
    k, low, high, _ = growth_report.per_token_fit(xs, [0.8 + 1e-10 * x**1.4 for x in xs])
    assert k == pytest.approx(1.4, abs=0.01) and low > 1.1
    assert growth_report.per_token_fit(xs[:4], linear[:4]) is None


def test_linear_cost_separates_tasks_and_ranges_from_the_work():
    """CPU = 0.3 s + 20 ms per task + 1 ms per T·P + 0.2 µs per token: a run whose T grows with its input cannot tell
    the tasks from the tokens (None); with a run at a fixed T beside it the fit finds every term."""
    def cpu(t: int, tokens: float) -> float:
        return 0.3 + 0.02 * t + 0.001 * t * t + 2e-7 * tokens

    sizes = [(2 * n, n * 7.5e6) for n in (1, 2, 4, 8, 16)]
    growing = [(t, t * t, x, cpu(t, x)) for t, x in sizes]
    fixed = [(2, 4, x, cpu(2, x)) for _, x in sizes]
    assert growth_report.linear_cost(growing) is None
    fit = growth_report.linear_cost(growing + fixed)
    assert (fit.fixed, fit.per_task, fit.per_range, fit.per_unit) == pytest.approx((0.3, 0.02, 0.001, 2e-7), rel=1e-6)
    assert fit.r2 == pytest.approx(1.0)
    assert growth_report.linear_cost([(t, r, x, 5.0) for t, r, x, _ in growing + fixed]) is None  # never varies
    assert growth_report.linear_cost(fixed[:4]) is None


def test_a_fixed_tasks_run_gives_the_projection_fitted_costs(measured):
    fixed = copy.deepcopy(measured)
    for s in fixed["scales"]:  # one T at every size, as `--fixed-tasks 2` builds it
        s["tasks"] = 2
        for b in s["builds"].values():
            for st in b["stages"]:
                st["tasks"] = min(st.get("tasks", 2), 2)
    report = growth_report.Report(copy.deepcopy(measured), fixed)
    fits = report.linear_costs()
    assert "prepare" in fits and "fit" not in fits and "finalize" not in fits
    rates = report.rates()
    assert rates.model_copy() == costs.Rates.model_validate_json(rates.model_dump_json())
    assert {r.stage for r in rates.stages if r.linear is not None} == set(fits)
    projection = report.projection_section()
    assert "non-negative least squares" in projection and "T·P" in projection
    _tables_are_rectangular(projection)
    own = growth_report.Report({**copy.deepcopy(measured), "one_t": fixed})  # the run's own series at one T
    assert own.linear_costs() == fits
    [same] = [g for g in own.goals() if "keep the documents" in g.name]
    assert same.passed
    lost = copy.deepcopy(fixed)
    lost["scales"][-1]["builds"]["2"]["counters"]["records_out"] -= 1  # a document lost at one T: loud
    [same] = [g for g in growth_report.Report({**copy.deepcopy(measured), "one_t": lost}).goals()
              if "keep the documents" in g.name]
    assert not same.passed and "4×: DIFFER" in same.detail
    section = own.performance_section()
    assert "The same sizes at T = 2" in section and "| `prepare` |" in section
    _tables_are_rectangular(section)


def test_goals_on_measured_figures(measured):
    report = growth_report.Report(measured)
    lines = report.goal_lines()
    assert lines and all(line.startswith(("PASS ", "FAIL ")) for line in lines)
    stages = [s["stage"] for s in measured["scales"][-1]["builds"]["2"]["stages"]]
    for name in stages:
        assert any(f"`{name}` peak memory per task" in line for line in lines), name
        assert any(f"`{name}` grows linearly" in line for line in lines) == (name not in growth_report.NOT_PER_TOKEN)
    ws = report.by_workers()
    speedup = ws[1]["wall"] / ws[2]["wall"]
    two = [line for line in lines if "two workers" in line]
    assert len(two) == 1 and two[0].startswith("PASS" if speedup >= 1.8 else "FAIL")
    t = measured["scales"][-1]["tokenizer"]
    ceiling = (t["2"]["input_tokens"] / t["2"]["input_seconds"]) / (t["1"]["input_tokens"] / t["1"]["input_seconds"])
    # beside the goal: what a second process gives the bare tokenizer itself on this machine
    assert f"gains {ceiling:.2f}× from a second process" in two[0] and f"{speedup / ceiling:.0%}" in two[0]
    assert sum(line.split(" ", 1)[1].startswith("throughput ≥") for line in lines) == 2


def test_goals_pass_and_fail_as_the_figures_say(measured):
    """The same figures made exactly linear in the kept tokens, memory flat, 2 workers twice as fast: every goal
    of those passes; memory doubled: the memory goals fail."""
    fixed = copy.deepcopy(measured)
    base = fixed["scales"][0]["builds"]["2"]["counters"]["tokens_out"]
    for scale in fixed["scales"]:
        for build in scale["builds"].values():
            f = build["counters"]["tokens_out"] / base
            for s in build["stages"]:
                s["wall"], s["cpu"] = 10.0 * f, 10.0 * f
            build["wall"] = sum(s["wall"] for s in build["stages"])
    fixed["scales"][-1]["builds"]["1"]["wall"] = 2 * fixed["scales"][-1]["builds"]["2"]["wall"]
    goals = growth_report.Report(fixed).goals()
    assert all(g.passed for g in goals if "grows linearly" in g.name or "peak memory" in g.name)
    assert next(g for g in goals if "two workers" in g.name).passed
    for build in fixed["scales"][-1]["builds"].values():
        for s in build["stages"]:
            s["peak_rss"] *= 2
    assert not any(g.passed for g in growth_report.Report(fixed).goals() if "peak memory" in g.name)


def _tables_are_rectangular(section: str) -> None:
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert rows
    block: list[int] = []
    for line in section.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line.count("|"))
        elif block:
            assert len(set(block)) == 1, block
            block = []


def test_sections_render_every_stage_and_the_projection(measured):
    report = growth_report.Report(measured)
    section = report.performance_section()
    assert section.startswith(growth_report.BEGIN) and section.rstrip().endswith(growth_report.END)
    _tables_are_rectangular(section)
    for s in measured["scales"][-1]["builds"]["2"]["stages"]:
        assert f"| `{s['stage']}`" in section
    assert measured["machine"]["uname"] in section and measured["load_start"] in section
    projection = report.projection_section()
    assert projection.startswith(growth_report.PROJECTION_BEGIN)
    _tables_are_rectangular(projection)
    rows = report.projection_rows()
    assert {r["stage"] for r in rows} == {s["stage"] for s in measured["scales"][-1]["builds"]["1"]["stages"]}
    assert all(r["core_hours"] > 0 and r["wall_hours"] > 0 for r in rows)
    for r in rows:  # never extrapolated below linear; one task means the whole time is on the path
        if r["stage"] not in ("fit", "finalize"):  # those grow with the sample and the tasks
            assert r["core_hours"] * 3600 >= r["cpu"] * growth_report.RAW_POOL / measured["scales"][-1]["input_tokens"] * 0.999
        if r["tasks"] == 1:
            assert r["wall_hours"] == pytest.approx(r["core_hours"])
    assert f"**{sum(r['core_hours'] for r in rows):,.0f}**" in projection


def test_skip_build_renders_from_a_results_file(measured, tmp_path, capsys):
    (tmp_path / growth_bench.RESULTS).write_text(json.dumps(measured))
    growth_bench.main(["--skip-build", "--out", str(tmp_path), "--no-publish"])
    out = capsys.readouterr().out
    assert growth_report.BEGIN in out and growth_report.PROJECTION_END in out
    assert ("PASS " in out or "FAIL " in out) and "two workers" in out


def _burn_then_wait(ready, done) -> None:
    import time

    while time.process_time() < 0.3:
        pass
    ready.set()
    done.wait(60)


def _parent_of_one(ready, done, reaped, leave) -> None:
    """A process whose only child burns 0.3 s of CPU; it reaps the child, then waits to be let go."""
    import multiprocessing

    child = multiprocessing.get_context("fork").Process(target=_burn_then_wait, args=(ready, done))
    child.start()
    child.join()
    reaped.set()
    leave.wait(60)


def test_a_stage_s_cpu_counts_the_workers_still_running():
    """The dedup stages share workers that are reaped only when the group ends: `os.times()` would give their CPU
    to the stage that closed the pool, so child_build also counts the live children's (bench.common)."""
    import multiprocessing

    from bench.common import live_children_cpu

    ctx = multiprocessing.get_context("fork")
    ready, done, reaped, leave = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Event()
    parent = ctx.Process(target=_parent_of_one, args=(ready, done, reaped, leave))
    parent.start()
    try:
        assert ready.wait(60)
        running = live_children_cpu(parent.pid)
        done.set()
        assert reaped.wait(60)
        after = live_children_cpu(parent.pid)
    finally:
        done.set()
        leave.set()
        parent.join()
    assert running >= 0.25, running  # the live child's CPU, read from /proc
    assert after == 0, after  # reaped: counted in its parent's os.times() now, no longer a live child
