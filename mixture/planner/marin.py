"""The Marin mix JSON: import (see counts.counts_from_marin) and export back, equivalent in content."""

from __future__ import annotations

from typing import Any

from mixture.planner.counts import counts_from_marin
from mixture.planner.formats import Plan
from mixture.planner.plan import PhaseInput, PlanInputs


def plan_to_marin(plan: Plan) -> dict[str, Any]:
    """The plan's counts, weights and budgets in the Marin mix format (extra keys and key order of an imported
    file kept; phase budgets kept in their original number form when unchanged)."""
    budgets: list[int | float] = [p.tokens for p in plan.phases]
    info = plan.marin
    raw_budgets = info.phase_budgets if info else None
    if isinstance(raw_budgets, list) and len(raw_budgets) == len(budgets) and all(
        r == b for r, b in zip(raw_budgets, budgets, strict=True)
    ):
        budgets = raw_budgets
    content: dict[str, Any] = {"available_tokens": {c.cell: c.available_tokens for c in plan.cells}}
    for i, ph in enumerate(plan.phases):
        content[f"phase{i}_weights"] = dict(ph.weights)
    content["phase_budgets"] = budgets
    content["tokenizer"] = plan.tokenizer
    content["candidate_store_uri"] = plan.store_uri
    content.update(info.extra if info else {})
    order = [k for k in (info.key_order if info else []) if k in content]
    return {**{k: content[k] for k in order}, **{k: v for k, v in content.items() if k not in order}}


def inputs_from_marin(data: dict[str, Any], source: str = "<mix>") -> PlanInputs:
    """PlanInputs straight from a Marin mix dict (default settings: cap 8, B 49,152, seq_len 4,096)."""
    from mixture.planner.inputs import _marin_phases

    counts = counts_from_marin(data, source)
    phases: list[PhaseInput]
    phases, warnings = _marin_phases(data, counts, source)
    return PlanInputs(counts, phases, warnings=warnings, name="marin-mix")
