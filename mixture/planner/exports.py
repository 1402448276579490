"""Export a plan for trainers: Levanter/Marin stages, OLMo-core source mixtures, Megatron blends, Marin, JSON, CSV."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import yaml

from mixture.planner.formats import Plan, PlanCell, PlanPhase
from mixture.planner.marin import plan_to_marin
from mixture.planner.plan import TAIL
from mixture.store import layout
from mixture.store.formats import dump

FORMATS = ("levanter", "olmo", "megatron", "marin", "json", "csv")


class ExportError(ValueError):
    """The plan lacks what the format needs (the message says what to add)."""


def cell_uri(plan: Plan, cell: PlanCell) -> str:
    rel = layout.cell_path(cell.cluster, cell.quality, plan.k or 100)
    return f"{plan.store_uri.rstrip('/')}/{rel}" if plan.store_uri else rel


def component_weights(phase: PlanPhase) -> dict[str, float]:
    """Planned weight per component: cells, the tail (Σ of its cells) and validation sets at 0."""
    return {c.name: c.weight for c in phase.components}


def to_levanter(plan: Plan) -> str:
    steps = plan.steps
    if not steps:
        raise ExportError("levanter/marin stages are in steps: set mixture.batch_sequences (or --batch-sequences)")
    cells = plan.cell_map()
    validation = {v.name: v for v in plan.validation}
    components: dict[str, Any] = {}
    for comp in plan.phases[0].components:
        if comp.validation:
            components[comp.name] = {"source": validation[comp.name].uri, "validation": True}
        elif comp.name == TAIL:
            components[TAIL] = {"sources": [cell_uri(plan, cells[c]) for c in comp.cells]}
        else:
            components[comp.name] = {"source": cell_uri(plan, cells[comp.name])}
    doc = {
        "data": {
            "mixture_block_size": plan.settings.block_sequences,
            "components": components,
            "train_weights": [[ph.start_step, component_weights(ph)] for ph in plan.phases],
        },
        "trainer": {"train_batch_size": steps.batch_sequences, "num_train_steps": steps.total_steps},
        "model": {"seq_len": plan.settings.seq_len},
    }
    return yaml.safe_dump(doc, sort_keys=False, width=120)


def to_olmo(plan: Plan) -> str:
    cells = plan.cell_map()
    phases = []
    for ph in plan.phases:
        sources = []
        for name, w in ph.weights.items():
            if w <= 0:
                continue
            cell = cells[name]
            n = cell.available_tokens
            reps = ph.tokens * w / n if n else math.inf
            sources.append({
                "source_name": name,
                "paths": [f"{cell_uri(plan, cell)}/*.parquet"],
                "target_ratio": w,
                "max_repetition_ratio": max(1.0, math.ceil(reps * 100) / 100) if math.isfinite(reps) else None,
            })
        phases.append({
            "name": ph.name,
            "start_step": ph.start_step,
            "source_mixture_config": {
                "requested_tokens": ph.tokens,
                "seed": plan.settings.seed,
                "sequence_length": plan.settings.seq_len,
                "source_configs": sources,
            },
        })
    validation = [v.model_dump(mode="json") for v in plan.validation]
    return json.dumps({"phases": phases, "validation": validation}, indent=2) + "\n"


def to_megatron(plan: Plan) -> str:
    cells = plan.cell_map()
    lines = []
    for ph in plan.phases:
        span = f", steps {ph.start_step}-{ph.end_step}" if ph.start_step is not None else ""
        lines.append(f"# phase {ph.name}: {ph.tokens} tokens{span}")
        blend = [f"{w!r} {cell_uri(plan, cells[c])}" for c, w in ph.weights.items() if w > 0]
        lines.append("--data-path " + " ".join(blend))
    for v in plan.validation:
        lines.append(f"# validation {v.name}: {v.uri or ''} (weight 0, evaluation only)")
    return "\n".join(lines) + "\n"


def to_csv(plan: Plan) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["phase", "cell", "component", "weight", "tokens", "sequences", "realised_weight", "rel_error",
                "available_tokens", "exposure"])
    for cell in plan.cells:
        for name, row in cell.phases.items():
            w.writerow([name, cell.cell, cell.component, repr(row.weight), row.tokens, row.sequences,
                        repr(row.realised_weight), "" if row.rel_error is None else repr(row.rel_error),
                        cell.available_tokens, "" if cell.exposure is None else repr(cell.exposure)])
    for v in plan.validation:
        for ph in plan.phases:
            w.writerow([ph.name, v.name, v.name, "0.0", 0, 0, "0.0", "", "", ""])
    return out.getvalue()


def export_plan(plan: Plan, fmt: str) -> str:
    if fmt == "json":
        return dump(plan)
    if fmt == "marin":
        return json.dumps(plan_to_marin(plan), indent=2) + "\n"
    if fmt == "levanter":
        return to_levanter(plan)
    if fmt == "olmo":
        return to_olmo(plan)
    if fmt == "megatron":
        return to_megatron(plan)
    if fmt == "csv":
        return to_csv(plan)
    raise ExportError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
