"""Property tests: allocations sum to the budget, sequences to B, exposure >= 0, repair honours the cap."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixture.planner.blocks import largest_remainder
from mixture.planner.counts import CellCount, Counts
from mixture.planner.formats import Plan
from mixture.planner.plan import PhaseInput, PlanInputs, compute_plan
from mixture.planner.repair import repair_weights
from mixture.store.formats import dump


@st.composite
def problems(draw):
    n = draw(st.integers(1, 12))
    names = [f"c{i:02d}q{i % 5}" for i in range(n)]
    tokens = draw(st.lists(st.integers(0, 10**9), min_size=n, max_size=n))
    if sum(tokens) == 0:
        tokens[0] = 1
    n_phases = draw(st.integers(1, 3))
    phases = []
    for p in range(n_phases):
        raw = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=n, max_size=n))
        raw = [r if t > 0 else 0.0 for r, t in zip(raw, tokens, strict=True)]  # no weight on empty cells
        if sum(raw) == 0:
            raw[tokens.index(max(tokens))] = 1.0
        s = sum(raw)
        phases.append(PhaseInput(f"p{p}", draw(st.integers(0, 10**12)), {c: r / s for c, r in zip(names, raw, strict=True)}))
    B = draw(st.integers(1, 2**16 - 1))
    counts = Counts({c: CellCount(c, int(c[1:3]), int(c[4]), t) for c, t in zip(names, tokens, strict=True)}, "h", "csv", k=n)
    return PlanInputs(counts, phases, block_sequences=B, tail_min_tokens=draw(st.sampled_from([0, 10**6])))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_plan_invariants(inputs):
    plan = compute_plan(inputs)
    B = inputs.block_sequences
    for ph, ph_in in zip(plan.phases, inputs.phases, strict=True):
        assert sum(c.phases[ph.name].tokens for c in plan.cells) == ph_in.tokens
        assert sum(c.sequences for c in ph.components) == B
        assert all(c.sequences >= 0 for c in ph.components)
    for c in plan.cells:
        assert c.exposure is None or c.exposure >= 0
    assert Plan.model_validate_json(dump(plan)) == plan  # what is written reads back as the same plan


@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=30), st.integers(0, 10**6))
def test_largest_remainder_sums_and_stays_within_one(weights, total):
    if sum(weights) == 0:
        weights = [*weights[:-1], 1.0]
    out = largest_remainder(weights, total)
    assert sum(out) == total
    s = math.fsum(weights)
    assert all(abs(o - w * total / s) < 1 + 1e-9 for o, w in zip(out, weights, strict=True))


@st.composite
def cap_problems(draw):
    n = draw(st.integers(2, 10))
    cells = [f"c{i:02d}q0" for i in range(n)]
    available = {c: draw(st.integers(1, 10**6)) for c in cells}
    n_phases = draw(st.integers(1, 3))
    weights = []
    for _ in range(n_phases):
        raw = draw(st.lists(st.floats(0.01, 1), min_size=n, max_size=n))  # every cell has weight in every phase
        s = sum(raw)
        weights.append({c: r / s for c, r in zip(cells, raw, strict=True)})
    budgets = [draw(st.integers(0, 10**7)) for _ in range(n_phases)]
    cap = draw(st.floats(0.5, 10))
    return weights, budgets, available, cap


@settings(max_examples=150, deadline=None)
@given(cap_problems())
def test_repair_meets_the_cap_when_feasible_and_says_when_not(problem):
    weights, budgets, available, cap = problem
    result = repair_weights(weights, budgets, available, cap)
    feasible = sum(budgets) <= cap * sum(available.values()) * (1 - 1e-9)
    if feasible:
        assert result.feasible, result.message
        for w in result.weights:
            assert math.fsum(w.values()) == __import__("pytest").approx(1.0, abs=1e-9)
            assert min(w.values()) >= 0
        for c, n in available.items():
            e = math.fsum(b * w[c] for b, w in zip(budgets, result.weights, strict=True)) / n
            assert e <= cap * (1 + 1e-7)
    elif sum(budgets) > cap * sum(available.values()) * (1 + 1e-9):
        assert not result.feasible and "infeasible" in result.message
