"""Hand-computed planner cases: exposure, largest remainder, zero sequences, cap repair, steps, tail, ladder."""

from __future__ import annotations

import json

import pytest

from mixture.planner.blocks import boundary_step, largest_remainder, phase_boundaries, step_multiple
from mixture.planner.counts import CellCount, Counts, PlanInputError
from mixture.planner.formats import Plan, PlanWarning
from mixture.planner.plan import PhaseInput, PlanInputs, compute_plan, exposure
from mixture.planner.run import repair_plan


def counts(**tokens: int) -> Counts:
    cells = {}
    for name, n in tokens.items():
        cells[name] = CellCount(name, int(name[1:3]), int(name[4]), n)
    return Counts(cells, "<test>", "csv", k=10)


def warnings_by_code(plan: Plan) -> dict[str, PlanWarning]:
    return {w.code: w for w in plan.warnings}


def test_exposure_hand_computed():
    c = counts(c00q0=100, c01q0=50)
    phases = [PhaseInput("p0", 100, {"c00q0": 0.5, "c01q0": 0.5}), PhaseInput("p1", 50, {"c00q0": 0.2, "c01q0": 0.8})]
    e = exposure(phases, c)
    assert e == {"c00q0": pytest.approx(0.6, abs=1e-15), "c01q0": pytest.approx(1.8, abs=1e-15)}
    plan = compute_plan(PlanInputs(c, phases, block_sequences=10))
    assert plan.exposure.max == pytest.approx(1.8)
    assert plan.exposure.max_cell == "c01q0"
    assert plan.exposure.proportional == 1.0
    assert [r.cell for r in plan.top_exposure] == ["c01q0", "c00q0"]
    assert plan.cells[1].phases["p1"].tokens == 40
    assert plan.warnings == []


def test_largest_remainder_gives_leftover_to_largest_fractions():
    assert largest_remainder([0.5, 0.3, 0.2], 7) == [4, 2, 1]  # quotas 3.5, 2.1, 1.4
    assert largest_remainder([0.26, 0.37, 0.37], 10) == [2, 4, 4]  # quotas 2.6, 3.7, 3.7
    assert largest_remainder([1, 1, 1], 10) == [4, 3, 3]  # equal fractions: the earlier name wins
    assert largest_remainder([0.0, 1.0], 5) == [0, 5]
    assert sum(largest_remainder([0.1] * 7, 49_152)) == 49_152


def test_weight_below_one_over_B_gets_zero_sequences_and_a_warning():
    B = 49_152
    tiny = 0.4 / B
    w = {"c00q0": tiny, "c01q0": (1 - tiny) / 2, "c02q0": (1 - tiny) / 2}
    plan = compute_plan(PlanInputs(counts(c00q0=10**9, c01q0=10**9, c02q0=10**9), [PhaseInput("p0", 10**9, w)]))
    comps = {c.name: c for c in plan.phases[0].components}
    assert [comps[n].sequences for n in ("c00q0", "c01q0", "c02q0")] == [0, 24_576, 24_576]
    warn = warnings_by_code(plan)["zero_sequences"]
    assert warn.cells == ["c00q0"]
    assert "c00q0" in warn.message
    row = plan.cells[0].phases["p0"]
    assert row.sequences == 0 and row.realised_weight == 0.0 and row.rel_error == -1.0
    assert row.tokens == 8138  # 1e9 · 0.4/49152 = 8138.02 -> largest remainder keeps 8138


def test_realised_weight_off_by_more_than_5_percent_is_flagged():
    B = 100
    w = {"c00q0": 0.0149, "c01q0": 0.9851}  # 1.49 sequences -> 1: realised 0.01, 33 % off
    plan = compute_plan(PlanInputs(counts(c00q0=10**6, c01q0=10**6), [PhaseInput("p0", 10**6, w)], block_sequences=B))
    warn = warnings_by_code(plan)["realised_off"]
    assert warn.cells == ["c00q0"]
    assert plan.cells[0].phases["p0"].rel_error == pytest.approx(0.01 / 0.0149 - 1)


def test_cell_over_cap_warns_and_repair_writes_a_new_plan_within_the_cap():
    c = counts(c00q0=10, c01q0=200)
    inputs = PlanInputs(c, [PhaseInput("p0", 100, {"c00q0": 0.9, "c01q0": 0.1})], max_epochs=2.0, block_sequences=10)
    plan = compute_plan(inputs)
    warn = warnings_by_code(plan)["over_cap"]
    assert warn.cells == ["c00q0"] and "9.00" in warn.message
    result, repaired = repair_plan(inputs, plan)
    assert result.feasible and result.method == "water-filling"
    assert result.l1_total == pytest.approx(1.4)
    assert repaired.phases[0].weights == pytest.approx({"c00q0": 0.2, "c01q0": 0.8})
    assert repaired.exposure.max == pytest.approx(2.0)
    assert repaired.repair.repaired_from == plan.plan_id != repaired.plan_id
    assert "over_cap" not in {w.code for w in repaired.warnings}
    assert plan.phases[0].weights == {"c00q0": 0.9, "c01q0": 0.1}  # the original is untouched


def test_repair_says_when_the_cap_is_infeasible():
    c = counts(c00q0=10, c01q0=20)
    inputs = PlanInputs(c, [PhaseInput("p0", 100, {"c00q0": 0.9, "c01q0": 0.1})], max_epochs=2.0, block_sequences=10)
    result, repaired = repair_plan(inputs, compute_plan(inputs))
    assert repaired is None and not result.feasible
    assert "infeasible" in result.message and "60" in result.message  # (10 + 20) · 2 tokens at the cap


def test_repair_falls_back_to_the_linear_program_across_phases():
    # phase p1 can only use c01q0, so phase p0 must move its c01q0 share onto c00q0
    c = counts(c00q0=200, c01q0=120)
    phases = [PhaseInput("p0", 100, {"c00q0": 0.5, "c01q0": 0.5}), PhaseInput("p1", 100, {"c00q0": 0.0, "c01q0": 1.0})]
    inputs = PlanInputs(c, phases, max_epochs=1.0, block_sequences=10)
    result, repaired = repair_plan(inputs, compute_plan(inputs))
    assert result.method == "linear-program"
    assert repaired.phases[0].weights == pytest.approx({"c00q0": 0.8, "c01q0": 0.2}, abs=1e-9)
    assert result.l1_total == pytest.approx(0.6, abs=1e-9)
    assert repaired.exposure.max <= 1.0 + 1e-9


def test_hero_step_boundary():
    assert step_multiple(49_152, 11_264) == 48
    assert boundary_step(0.8, 390_251, 49_152, 11_264) == 312_192
    assert phase_boundaries([15 * 10**12, 375 * 10**10], 390_251, 49_152, 11_264) == [0, 312_192]
    assert boundary_step(0.0001, 390_251, 49_152, 11_264) == 48  # never before the first block boundary
    c = counts(c00q0=20 * 10**12)
    inputs = PlanInputs(c, [PhaseInput("p0", 15 * 10**12, {"c00q0": 1.0}), PhaseInput("p1", 375 * 10**10, {"c00q0": 1.0})],
                        batch_sequences=11_264, train_steps=390_251)
    plan = compute_plan(inputs)
    assert plan.steps.m == 48
    assert [(p.start_step, p.end_step) for p in plan.phases] == [(0, 312_192), (312_192, 390_251)]


def test_tail_component_and_validation_sets():
    c = counts(c00q0=10**6, c01q0=10**6, c02q0=300, c03q0=100)
    w = {"c00q0": 0.5, "c01q0": 0.3, "c02q0": 0.15, "c03q0": 0.05}
    inputs = PlanInputs(c, [PhaseInput("p0", 10**5, w)], block_sequences=100, tail_min_tokens=1000,
                        validation=[{"name": "paloma", "uri": "/val/paloma"}])
    plan = compute_plan(inputs)
    comps = {x.name: x for x in plan.phases[0].components}
    assert list(comps) == ["c00q0", "c01q0", "tail", "paloma"]
    assert comps["tail"].cells == ["c02q0", "c03q0"] and comps["tail"].sequences == 20
    assert comps["paloma"].weight == 0.0 and comps["paloma"].sequences == 0 and comps["paloma"].validation
    assert plan.tail.model_dump() == {"min_tokens": 1000, "cells": ["c02q0", "c03q0"], "tokens": 400}
    # inside the concatenated tail cells are drawn by size: 20/100 · 300/400 = 0.15
    assert plan.cells[2].phases["p0"].realised_weight == pytest.approx(0.15)
    assert plan.cells[3].phases["p0"].realised_weight == pytest.approx(0.05)
    bad = PlanInputs(c, [PhaseInput("p0", 10**5, w)], validation=[{"name": "c01q0"}])
    with pytest.raises(PlanInputError, match="collide"):
        compute_plan(bad)


def test_ladder_truncation_keeps_exposure_and_detects_vanishing_cells():
    c = counts(c00q0=10**6, c01q0=999)
    w = {"c00q0": 0.999, "c01q0": 0.001}
    inputs = PlanInputs(c, [PhaseInput("p0", 10**6, w)], block_sequences=1000,
                        ladder=[{"name": "small", "tokens": 1000}, {"name": "mid", "tokens": 500_000}])
    plan = compute_plan(inputs)
    small, mid = plan.ladder
    assert small.truncated_tokens == {"c00q0": 1000, "c01q0": 0}  # ⌊999·1000/1e6⌋ = 0
    assert small.vanished == ["c01q0"] and small.exposure["c01q0"] is None
    assert mid.truncated_tokens == {"c00q0": 500_000, "c01q0": 499}
    assert mid.exposure["c00q0"] == pytest.approx(plan.cells[0].exposure)
    assert mid.vanished == []
    warn = warnings_by_code(plan)["ladder_vanish"]
    assert warn.cells == ["c01q0"] and "small" in warn.message
    json.dumps(plan.model_dump(mode="json"), allow_nan=False)  # JSON-ready (no inf / nan)
