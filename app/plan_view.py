"""Read a plan.json defensively into one shape the explorer shows (phases, per-cell exposure, cap, warnings).

Accepted shapes:
- minimal: {"phases": [{"name", "tokens", "weights": {cell: w}}], "cells": {cell: {"tokens": N, "exposure": E}},
  "max_epochs": 8, "warnings": [...], "ladder": [...], "repaired": {<a plan>}}
- mix file: {"available_tokens": {cell: N}, "phase0_weights": {...}, "phase1_weights": {...},
  "phase_budgets": [15e12, 3.75e12], "max_epochs"?: 8}
Exposure E_c = Σ_p tokens_p · w_{p,c} / N_c is computed when the file does not give it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mixture.spec.amounts import parse_amount

DEFAULT_CAP = 8.0


class PlanError(ValueError):
    """The plan file cannot be read; the message names the file and field and says how to fix it."""


@dataclass
class Phase:
    name: str
    tokens: float
    weights: dict[str, float]


@dataclass
class PlanView:
    phases: list[Phase]
    cell_tokens: dict[str, float]
    exposure: dict[str, float]
    max_epochs: float = DEFAULT_CAP
    warnings: list[str] = field(default_factory=list)
    ladder: list[dict] = field(default_factory=list)
    repaired: PlanView | None = None
    source: str = ""

    @property
    def cells(self) -> list[str]:
        names = set(self.cell_tokens) | set(self.exposure)
        for p in self.phases:
            names |= set(p.weights)
        return sorted(names)

    @property
    def total_tokens(self) -> float:
        return sum(p.tokens for p in self.phases)

    def over_cap(self) -> list[str]:
        """Cells whose exposure exceeds max_epochs, highest first."""
        return sorted((c for c, e in self.exposure.items() if e > self.max_epochs + 1e-12),
                      key=lambda c: (-self.exposure[c], c))

    def weight(self, phase: int, cell: str) -> float:
        return float(self.phases[phase].weights.get(cell, 0.0))

    def frame(self) -> pd.DataFrame:
        """One row per cell: available tokens, weight and allocated tokens per phase, exposure, over_cap."""
        rows = []
        for c in self.cells:
            row: dict[str, Any] = {"cell": c, "available": self.cell_tokens.get(c)}
            for p in self.phases:
                w = float(p.weights.get(c, 0.0))
                row[f"w {p.name}"] = w
                row[f"tokens {p.name}"] = w * p.tokens
            row["exposure"] = self.exposure.get(c)
            row["over_cap"] = bool(row["exposure"] is not None and row["exposure"] > self.max_epochs + 1e-12)
            rows.append(row)
        return pd.DataFrame(rows)

    def ladder_frame(self) -> pd.DataFrame:
        """The ladder as given, plus cells cut to zero by simulated epoching: ⌊N_c·X/T⌋ = 0."""
        df = pd.DataFrame(self.ladder)
        if "vanished" in df:
            df["vanished cells"] = df["vanished"].map(lambda v: len(v) if isinstance(v, list) else v)
        df = df[[c for c in df.columns if not df[c].map(lambda v: isinstance(v, dict | list)).any()]]
        total = self.total_tokens
        budget_col = next((c for c in ("tokens", "budget", "target_tokens") if c in df), None)
        if not df.empty and budget_col and total > 0:
            def vanished(x: Any) -> list[str]:
                try:
                    budget = float(parse_amount(x))
                except ValueError:
                    return []
                return [c for c, n in sorted(self.cell_tokens.items()) if n > 0 and math.floor(n * budget / total) == 0]

            cut = df[budget_col].map(vanished)
            df["cells cut to zero"] = cut.map(len)
            df["which"] = cut.map(lambda v: ", ".join(v[:12]) + (" …" if len(v) > 12 else ""))
        return df


_PHASE_KEY = re.compile(r"^phase(\d+)_weights$")
_CELL = re.compile(r"^c\d{2,3}q\d$")


def _num(value: Any, where: str) -> float:
    try:
        return float(parse_amount(value)) if isinstance(value, str) else float(value)
    except (TypeError, ValueError) as exc:
        raise PlanError(f"{where}: expected a number, found {value!r}") from exc


def _weights(obj: Any, where: str) -> dict[str, float]:
    if not isinstance(obj, dict):
        raise PlanError(f"{where}: expected an object {{cell: weight}}, found {type(obj).__name__}")
    return {str(k): _num(v, f"{where}.{k}") for k, v in obj.items()}


def _warning_text(w: Any) -> str:
    if isinstance(w, dict):
        kind = w.get("kind") or w.get("type") or w.get("code")
        msg = w.get("message") or w.get("detail") or json.dumps(w, sort_keys=True)
        cells = w.get("cells") or ([w["cell"]] if w.get("cell") else [])
        head = f"[{kind}] " if kind else ""
        tail = f" ({', '.join(map(str, cells))})" if cells and not any(str(c) in msg for c in cells) else ""
        return f"{head}{msg}{tail}"
    return str(w)


def from_dict(data: dict, source: str = "plan") -> PlanView:
    """Build a PlanView from any accepted shape; raises PlanError naming the field."""
    if not isinstance(data, dict):
        raise PlanError(f"{source}: expected a JSON object at the top level")
    for key in ("plan", "mixture"):  # tolerate one level of nesting
        if "phases" not in data and isinstance(data.get(key), dict):
            data = {**data, **data[key]}
    phases: list[Phase] = []
    if isinstance(data.get("phases"), list):
        for i, p in enumerate(data["phases"]):
            where = f"{source}: phases[{i}]"
            if not isinstance(p, dict):
                raise PlanError(f"{where}: expected an object with name, tokens, weights")
            tokens = p.get("tokens", p.get("budget", p.get("tokens_budget")))
            if tokens is None:
                raise PlanError(f"{where}.tokens: missing; give the phase's token budget, e.g. 15T")
            phases.append(Phase(str(p.get("name", f"phase{i}")), _num(tokens, f"{where}.tokens"),
                                _weights(p.get("weights", {}), f"{where}.weights")))
    else:
        keys = sorted((int(m.group(1)), k) for k in data if (m := _PHASE_KEY.match(k)))
        budgets = data.get("phase_budgets") or []
        if keys and len(budgets) < len(keys):
            raise PlanError(f"{source}: phase_budgets has {len(budgets)} entries for {len(keys)} phaseN_weights")
        for i, k in keys:
            phases.append(Phase(f"phase{i}", _num(budgets[i], f"{source}: phase_budgets[{i}]"),
                                _weights(data[k], f"{source}: {k}")))
    if not phases:
        raise PlanError(f"{source}: no phases found: expected `phases: [...]` or `phase0_weights` + `phase_budgets`")

    cell_tokens: dict[str, float] = {}
    exposure: dict[str, float] = {}
    cells = data.get("cells")
    if isinstance(cells, dict):
        for c, v in cells.items():
            if isinstance(v, dict):
                if v.get("tokens", v.get("available")) is not None:
                    cell_tokens[c] = _num(v.get("tokens", v.get("available")), f"{source}: cells.{c}.tokens")
                if v.get("exposure", v.get("epochs")) is not None:
                    exposure[c] = _num(v.get("exposure", v.get("epochs")), f"{source}: cells.{c}.exposure")
            else:
                cell_tokens[c] = _num(v, f"{source}: cells.{c}")
    elif isinstance(cells, list):
        for i, v in enumerate(cells):
            name = v.get("cell") or v.get("name") if isinstance(v, dict) else None
            if not name:
                raise PlanError(f"{source}: cells[{i}]: expected an object with `cell`")
            avail = v.get("available_tokens", v.get("available", v.get("tokens")))
            if avail is not None:
                cell_tokens[name] = _num(avail, f"{source}: cells[{i}].available_tokens")
            if "exposure" in v and v["exposure"] is None and avail:
                exposure[name] = math.inf  # the planner writes null for an infinite exposure
            elif v.get("exposure") is not None:
                exposure[name] = _num(v["exposure"], f"{source}: cells[{i}].exposure")
    if isinstance(data.get("available_tokens"), dict):
        for c, v in data["available_tokens"].items():
            cell_tokens.setdefault(c, _num(v, f"{source}: available_tokens.{c}"))
    if isinstance(data.get("exposure"), dict):  # {cell: E}, or the planner's summary {cap, max, over_cap, ...}
        for c, v in data["exposure"].items():
            if _CELL.match(c) and v is not None:
                exposure.setdefault(c, _num(v, f"{source}: exposure.{c}"))
    for c, n in cell_tokens.items():
        if c not in exposure and n > 0:
            exposure[c] = sum(p.tokens * p.weights.get(c, 0.0) for p in phases) / n

    settings = data.get("settings") if isinstance(data.get("settings"), dict) else {}
    summary = data.get("exposure") if isinstance(data.get("exposure"), dict) else {}
    cap = next((v for v in (data.get("max_epochs"), settings.get("max_epochs"), summary.get("cap"), data.get("cap"),
                            data.get("epoch_cap")) if v is not None), DEFAULT_CAP)
    warnings = [_warning_text(w) for w in (data.get("warnings") or [])]
    ladder = data.get("ladder") or []
    if isinstance(ladder, dict):
        ladder = ladder.get("rungs") or ladder.get("runs") or [ladder]
    repaired = data.get("repaired") or data.get("repaired_plan") or (
        data["repair"].get("plan") if isinstance(data.get("repair"), dict) else None)
    return PlanView(phases=phases, cell_tokens=cell_tokens, exposure=exposure,
                    max_epochs=_num(cap, f"{source}: max_epochs"), warnings=warnings,
                    ladder=[r for r in ladder if isinstance(r, dict)],
                    repaired=from_dict(repaired, f"{source}: repaired") if isinstance(repaired, dict) else None,
                    source=source)


def load_plan(path: str | Path) -> PlanView:
    """Read plan.json (local path); raises PlanError with the file name and how to fix it."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError as exc:
        raise PlanError(f"{p}: no such plan file; pass the plan.json written by `mixture plan`") from exc
    except json.JSONDecodeError as exc:
        raise PlanError(f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from exc
    plan = from_dict(data, str(p))
    sibling = p.with_name(p.stem + ".repaired.json")  # `mixture plan --out X.json` writes X.repaired.json
    if plan.repaired is None and sibling.exists():
        try:
            plan.repaired = from_dict(json.loads(sibling.read_text()), str(sibling))
        except (PlanError, json.JSONDecodeError):
            plan.repaired = None
    return plan
