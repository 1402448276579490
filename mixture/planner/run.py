"""Plan workflows shared by the CLI and tests: spec -> plan, plan -> repaired plan."""

from __future__ import annotations

import copy

from mixture.planner.formats import Plan, Repair
from mixture.planner.inputs import build_inputs, load_planning_spec
from mixture.planner.plan import PhaseInput, PlanInputs, compute_plan
from mixture.planner.repair import RepairResult, repair_weights


def plan_from_spec(spec_path: str, counts: str | None = None, scale: float | None = None) -> tuple[PlanInputs, Plan]:
    inputs = build_inputs(load_planning_spec(spec_path), counts, scale)
    return inputs, compute_plan(inputs)


def repair_plan(inputs: PlanInputs, plan: Plan) -> tuple[RepairResult, Plan | None]:
    """A NEW plan with weights repaired to the exposure cap (None when nothing is over it or it is infeasible)."""
    result = repair_weights(
        [p.weights for p in inputs.phases],
        [p.tokens for p in inputs.phases],
        {c: n.tokens for c, n in inputs.counts.cells.items()},
        inputs.max_epochs,
    )
    if not result.feasible or result.method == "none":
        return result, None
    repaired = copy.copy(inputs)
    repaired.phases = [PhaseInput(p.name, p.tokens, w) for p, w in zip(inputs.phases, result.weights, strict=True)]
    repaired.warnings = [w for w in inputs.warnings if w.code != "normalized"]
    new = compute_plan(repaired)
    new.repair = Repair(
        repaired_from=plan.plan_id,
        method=result.method,
        l1_total=result.l1_total,
        l1_by_phase={p.name: v for p, v in zip(inputs.phases, result.l1, strict=True)},
        capped_cells=result.capped,
        cap=inputs.max_epochs,
        message=result.message,
    )
    return result, new
