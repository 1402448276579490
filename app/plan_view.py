"""The plan the explorer shows: a plan.json read through the planner's own model (mixture.planner.formats.Plan)
into what the pages draw: phases, exposure as the planner wrote it, the cap from the plan's settings, warnings
with their codes, the ladder's rungs, and the repaired plan written beside it (`X.repaired.json`).

A Marin mix JSON is converted by the planner itself (the same plan `mixture plan mix.json` computes); any other
file is refused with a message saying how to write a plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mixture.planner.counts import PlanInputError, is_marin_mix
from mixture.planner.formats import NOT_A_PLAN, LadderRung, Plan, is_plan, parse_plan
from mixture.planner.marin import inputs_from_marin
from mixture.planner.plan import compute_plan
from mixture.store.formats import FormatError, load_json


class PlanError(ValueError):
    """The plan file cannot be read; the message names the file and field and says how to fix it."""


@dataclass
class Phase:
    name: str
    tokens: int
    weights: dict[str, float]


@dataclass
class PlanView:
    plan: Plan
    phases: list[Phase]
    cell_tokens: dict[str, int]  # N_c
    exposure: dict[str, float]  # epochs as the planner wrote them (math.inf where it writes null)
    max_epochs: float
    warnings: list[str] = field(default_factory=list)  # "[code] message"
    ladder: list[LadderRung] = field(default_factory=list)
    repaired: PlanView | None = None
    source: str = ""

    @property
    def cells(self) -> list[str]:
        return sorted(self.cell_tokens)

    @property
    def total_tokens(self) -> int:
        return sum(p.tokens for p in self.phases)

    def over_cap(self) -> list[str]:
        """Cells whose exposure exceeds max_epochs (infinite ones included), highest first."""
        return sorted((c for c, e in self.exposure.items() if e > self.max_epochs * (1 + 1e-12)),
                      key=lambda c: (-self.exposure[c], c))

    def weight(self, phase: int, cell: str) -> float:
        return float(self.phases[phase].weights.get(cell, 0.0))

    def frame(self) -> pd.DataFrame:
        """One row per cell: available tokens, weight and drawn tokens per phase, exposure, over_cap."""
        rows = []
        for c in sorted(self.plan.cells, key=lambda c: c.cell):
            row: dict[str, Any] = {"cell": c.cell, "available": c.available_tokens}
            for p in self.phases:
                drawn = c.phases.get(p.name)
                row[f"w {p.name}"] = drawn.weight if drawn else 0.0
                row[f"tokens {p.name}"] = drawn.tokens if drawn else 0
            row["exposure"] = self.exposure[c.cell]
            row["over_cap"] = bool(row["exposure"] > self.max_epochs * (1 + 1e-12))
            rows.append(row)
        return pd.DataFrame(rows)

    def ladder_frame(self) -> pd.DataFrame:
        """One row per rung of the planner's ladder: its budget, the largest exposure change, and the used cells
        simulated epoching cuts to zero (⌊N_c·X/T⌋ = 0: an empty dataset crashes the loader)."""
        rows = [{"name": r.name, "tokens": r.tokens, "scale": r.scale, "max exposure change": r.max_exposure_change,
                 "cells cut to zero": len(r.vanished),
                 "which": ", ".join(r.vanished[:12]) + (" …" if len(r.vanished) > 12 else "")} for r in self.ladder]
        return pd.DataFrame(rows, columns=["name", "tokens", "scale", "max exposure change", "cells cut to zero",
                                           "which"])


def view_of(plan: Plan, source: str = "plan") -> PlanView:
    """The explorer's view of a plan model."""
    return PlanView(
        plan=plan,
        phases=[Phase(p.name, p.tokens, dict(p.weights)) for p in plan.phases],
        cell_tokens={c.cell: c.available_tokens for c in plan.cells},
        exposure=plan.exposures(),
        max_epochs=plan.settings.max_epochs,
        warnings=[f"[{w.code}] {w.message}" for w in plan.warnings],
        ladder=list(plan.ladder),
        source=source,
    )


def plan_from_data(data: Any, source: str) -> Plan:
    """A plan model from parsed JSON: a plan.json as written by `mixture plan`, or a Marin mix JSON converted by the
    planner; anything else raises PlanError naming the file and field."""
    if is_marin_mix(data) and not is_plan(data):
        try:
            return compute_plan(inputs_from_marin(data, source))
        except PlanInputError as exc:
            raise PlanError(f"{exc}\n{NOT_A_PLAN}") from None
    try:
        return parse_plan(data, source)
    except FormatError as exc:
        raise PlanError(str(exc)) from None


def from_dict(data: Any, source: str = "plan") -> PlanView:
    """A PlanView from parsed JSON (see `plan_from_data`)."""
    return view_of(plan_from_data(data, source), source)


def _read(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file; pass the plan.json written by `mixture plan`") from None
    try:
        return load_json(raw, str(path), NOT_A_PLAN)
    except FormatError as exc:
        raise PlanError(str(exc)) from None


def load_plan(path: str | Path) -> PlanView:
    """Read plan.json (local path) and the repaired plan `mixture plan --out X.json` writes beside it
    (X.repaired.json, when it repairs this plan); raises PlanError with the file name and how to fix it."""
    p = Path(path)
    view = from_dict(_read(p), str(p))
    sibling = p.with_name(p.stem + ".repaired.json")
    if sibling.exists():
        try:
            repaired = from_dict(_read(sibling), str(sibling))
        except PlanError:
            repaired = None
        if repaired is not None and repaired.plan.repair is not None \
                and repaired.plan.repair.repaired_from == view.plan.plan_id:
            view.repaired = repaired
    return view
