"""Compute a plan: per cell and phase weight, tokens, sequences per block, exposure, tail, steps and warnings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mixture.planner.blocks import largest_remainder, phase_boundaries, step_multiple
from mixture.planner.counts import Counts, PlanInputError, is_marin_mix
from mixture.planner.formats import (
    PLAN_FORMAT_VERSION,
    PLAN_KIND,
    CellPhase,
    Component,
    ExposureSummary,
    LadderRung,
    LadderSteps,
    MarinInfo,
    Plan,
    PlanCell,
    PlanPhase,
    PlanSettings,
    PlanSource,
    PlanWarning,
    Steps,
    Tail,
    TopExposure,
    ValidationSet,
    plan_content_id,
)

TAIL = "tail"
REALISED_TOLERANCE = 0.05
TOP_N = 10


@dataclass
class PhaseInput:
    name: str
    tokens: int
    weights: dict[str, float]  # over every cell of the counts


@dataclass
class PlanInputs:
    counts: Counts
    phases: list[PhaseInput]
    max_epochs: float = 8.0
    block_sequences: int = 49_152
    seq_len: int = 4_096
    batch_sequences: int | None = None
    train_steps: int | None = None
    tail_min_tokens: int = 0
    validation: list[dict[str, Any]] = field(default_factory=list)  # {name, uri}
    ladder: list[dict[str, Any]] = field(default_factory=list)  # {name, tokens}
    seed: int = 0
    name: str = "mixture"
    warnings: list[PlanWarning] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


def exposure(phases: list[PhaseInput], counts: Counts) -> dict[str, float]:
    """E_c = Σ_p budget_p · w_p,c / N_c (inf for an empty cell with weight, 0 for an unused one)."""
    out = {}
    for name, cell in counts.cells.items():
        drawn = math.fsum(p.tokens * p.weights.get(name, 0.0) for p in phases)
        out[name] = drawn / cell.tokens if cell.tokens > 0 else (math.inf if drawn > 0 else 0.0)
    return out


def _rel(realised: float, weight: float) -> float | None:
    return (realised - weight) / weight if weight > 0 else None


def _names(cells: list[str], limit: int = 12) -> str:
    return ", ".join(cells[:limit]) + (f" … (+{len(cells) - limit})" if len(cells) > limit else "")


def _check(inputs: PlanInputs) -> None:
    B = inputs.block_sequences
    if not 0 < B < 2**16:
        raise PlanInputError(f"block_sequences: expected 0 < B < 65536, found {B}")
    cells = inputs.counts.cells
    for i, ph in enumerate(inputs.phases):
        if set(ph.weights) != set(cells):
            diff = sorted(set(ph.weights) ^ set(cells))
            raise PlanInputError(f"phase {ph.name!r}: weights must cover exactly the counted cells; differ on {diff[:10]}")
        if ph.tokens < 0:
            raise PlanInputError(f"phases[{i}].tokens: expected >= 0, found {ph.tokens}")
    names = [v["name"] for v in inputs.validation]
    clash = sorted(set(names) & set(cells))
    if clash:
        raise PlanInputError(f"mixture.validation: names {clash} collide with cells of the store; rename the sets")
    tail_cells = [c for c, n in cells.items() if n.tokens < inputs.tail_min_tokens]
    if tail_cells and TAIL in names:
        raise PlanInputError(f"mixture.validation: the name {TAIL!r} is taken by the tail component; rename the set")


def ladder_rungs(inputs: PlanInputs, E: dict[str, float]) -> tuple[list[LadderRung], list[PlanWarning]]:
    """Simulated epoching: each cell truncated to ⌊N_c·X/T⌋ so every cell keeps its full-run exposure."""
    T = sum(p.tokens for p in inputs.phases)
    out, warnings = [], []
    for rung in inputs.ladder:
        X = int(rung["tokens"])
        budgets = largest_remainder([p.tokens for p in inputs.phases], X) if T else [0] * len(inputs.phases)
        truncated, rung_E, vanished = {}, {}, []
        for name, cell in inputs.counts.cells.items():
            n = cell.tokens * X // T if T else 0
            truncated[name] = n
            drawn = math.fsum(b * p.weights[name] for b, p in zip(budgets, inputs.phases, strict=True))
            used = any(p.weights[name] > 0 for p in inputs.phases)
            if n == 0:
                rung_E[name] = math.inf if used else 0.0
                if used:
                    vanished.append(name)
            else:
                rung_E[name] = drawn / n
        finite = [abs(rung_E[c] - E[c]) for c in rung_E if math.isfinite(rung_E[c]) and math.isfinite(E[c])]
        steps = None
        if inputs.batch_sequences:
            total_steps = X // (inputs.batch_sequences * inputs.seq_len)
            steps = LadderSteps(
                total_steps=total_steps,
                starts=phase_boundaries(budgets, total_steps, inputs.block_sequences, inputs.batch_sequences)
                if total_steps and X else [0] * len(budgets),
            )
        out.append(LadderRung(
            name=rung["name"],
            tokens=X,
            scale=X / T if T else 0.0,
            phase_tokens={p.name: b for p, b in zip(inputs.phases, budgets, strict=True)},
            truncated_tokens=truncated,
            exposure={c: (None if math.isinf(e) else e) for c, e in rung_E.items()},
            max_exposure_change=max(finite, default=0.0),
            vanished=vanished,
            steps=steps,
        ))
        if vanished:
            warnings.append(PlanWarning(
                code="ladder_vanish",
                message=f"ladder rung {rung['name']} ({X:,} tokens): {len(vanished)} cells with weight are cut to "
                        f"zero by ⌊N_c·X/T⌋ (an empty finite dataset crashes the loader): {_names(vanished)}",
                cells=vanished,
            ))
    return out, warnings


def compute_plan(inputs: PlanInputs) -> Plan:
    """The full plan (see mixture.planner.formats.Plan and docs/planner.md for every field)."""
    _check(inputs)
    counts, phases, B = inputs.counts, inputs.phases, inputs.block_sequences
    cells = list(counts.cells)
    tail_cells = [c for c in cells if counts.cells[c].tokens < inputs.tail_min_tokens]
    tail_set = set(tail_cells)
    tail_tokens = sum(counts.cells[c].tokens for c in tail_cells)
    component_names = [c for c in cells if c not in tail_set] + ([TAIL] if tail_cells else [])
    warnings = list(inputs.warnings)
    E = exposure(phases, counts)

    cell_phases: dict[str, dict[str, CellPhase]] = {c: {} for c in cells}
    phase_rows: list[PlanPhase] = []
    for ph in phases:
        tokens = largest_remainder([ph.weights[c] for c in cells], ph.tokens, cells) if ph.tokens else [0] * len(cells)
        comp_w = {c: ph.weights[c] for c in cells if c not in tail_set}
        if tail_cells:
            comp_w[TAIL] = math.fsum(ph.weights[c] for c in tail_cells)
        seqs = largest_remainder([comp_w[n] for n in component_names], B, component_names)
        comp_seq = dict(zip(component_names, seqs, strict=True))
        components = [
            Component(name=n, cells=tail_cells if n == TAIL else [n], weight=comp_w[n], sequences=comp_seq[n],
                      realised_weight=comp_seq[n] / B, rel_error=_rel(comp_seq[n] / B, comp_w[n]))
            for n in component_names
        ]
        components += [Component(name=v["name"], cells=[], weight=0.0, sequences=0, realised_weight=0.0,
                                 rel_error=None, validation=True) for v in inputs.validation]
        zero_seq, off = [], []
        for c, t in zip(cells, tokens, strict=True):
            w = ph.weights[c]
            if c in tail_set:
                share = counts.cells[c].tokens / tail_tokens if tail_tokens else 0.0
                realised, s = comp_seq[TAIL] / B * share, comp_seq[TAIL]
            else:
                realised, s = comp_seq[c] / B, comp_seq[c]
            rel = _rel(realised, w)
            cell_phases[c][ph.name] = CellPhase(weight=w, tokens=t, sequences=s, realised_weight=realised, rel_error=rel)
            if w > 0 and s == 0:
                zero_seq.append(c)
            elif rel is not None and abs(rel) > REALISED_TOLERANCE:
                off.append(c)
        if zero_seq:
            warnings.append(PlanWarning(
                code="zero_sequences",
                message=f"phase {ph.name}: {len(zero_seq)} cells with weight > 0 get 0 of {B:,} sequences per block "
                        f"(weight below 1/B = {1 / B:.3g}; raise it, merge it into the tail, or set it to 0): "
                        f"{_names(zero_seq)}",
                cells=zero_seq,
            ))
        if off:
            warnings.append(PlanWarning(
                code="realised_off",
                message=f"phase {ph.name}: {len(off)} cells get a realised weight more than {REALISED_TOLERANCE:.0%} "
                        f"off their planned weight after block rounding: {_names(off)}",
                cells=off,
            ))
        phase_rows.append(PlanPhase(name=ph.name, tokens=ph.tokens, weights=dict(ph.weights), components=components))

    # steps
    steps = None
    if inputs.batch_sequences:
        tps = inputs.batch_sequences * inputs.seq_len
        total_steps = inputs.train_steps or sum(p.tokens for p in phases) // tps
        starts = phase_boundaries([p.tokens for p in phases], total_steps, B, inputs.batch_sequences)
        steps = Steps(batch_sequences=inputs.batch_sequences, tokens_per_step=tps, total_steps=total_steps,
                      m=step_multiple(B, inputs.batch_sequences), starts=starts)
        for i, row in enumerate(phase_rows):
            row.start_step = starts[i]
            row.end_step = starts[i + 1] if i + 1 < len(starts) else total_steps
        empty_phases = [r.name for r in phase_rows if r.end_step <= r.start_step and r.tokens > 0]
        if empty_phases:
            warnings.append(PlanWarning(
                code="phase_steps",
                message=f"phases {empty_phases} get no steps: boundaries fall on multiples of m = {steps.m} steps "
                        f"and the run has {total_steps:,}; use more steps, a smaller block or a batch sharing more "
                        "factors with B",
                cells=[],
            ))

    # exposure warnings
    cap = inputs.max_epochs
    empty = [c for c in cells if math.isinf(E[c])]
    if empty:
        warnings.append(PlanWarning(
            code="empty_cell", message=f"{len(empty)} cells have weight but no tokens (infinite exposure): "
                                       f"{_names(empty)}", cells=empty))
    over = sorted((c for c in cells if math.isfinite(E[c]) and E[c] > cap * (1 + 1e-12)), key=lambda c: -E[c])
    if over:
        warnings.append(PlanWarning(
            code="over_cap",
            message=f"{len(over)} cells exceed the exposure cap of {cap:g} epochs: "
                    + ", ".join(f"{c} ({E[c]:.2f})" for c in over[:12]),
            cells=over,
        ))
    ladder, ladder_warnings = ladder_rungs(inputs, E)
    warnings += ladder_warnings

    def finite(e: float) -> float | None:
        return None if math.isinf(e) else e

    ranked = sorted(cells, key=lambda c: (-E[c], c))
    total_tokens = sum(p.tokens for p in phases)
    finite_E = [E[c] for c in cells if math.isfinite(E[c])]
    settings = PlanSettings(max_epochs=cap, block_sequences=B, seq_len=inputs.seq_len,
                            batch_sequences=inputs.batch_sequences, train_steps=inputs.train_steps,
                            tail_min_tokens=inputs.tail_min_tokens, seed=inputs.seed)
    plan_cells = [
        PlanCell(cell=c, cluster=counts.cells[c].cluster, quality=counts.cells[c].quality,
                 available_tokens=counts.cells[c].tokens, docs=counts.cells[c].docs,
                 component=TAIL if c in tail_set else c, exposure=finite(E[c]), phases=cell_phases[c])
        for c in cells
    ]
    marin = None
    if counts.mix is not None and is_marin_mix(counts.mix):
        raw = counts.mix
        known = {"available_tokens", "phase_budgets", "tokenizer", "candidate_store_uri"}
        marin = MarinInfo(key_order=list(raw), phase_budgets=raw.get("phase_budgets"),
                          extra={k: v for k, v in raw.items() if k not in known and not _is_phase_key(k)})
    plan = Plan(
        format=PLAN_FORMAT_VERSION,
        kind=PLAN_KIND,
        plan_id="",  # set below from the content
        name=inputs.name,
        source=PlanSource(counts=counts.source, counts_kind=counts.kind, **inputs.meta),
        tokenizer=counts.tokenizer,
        store_uri=counts.store_uri,
        k=counts.k,
        settings=settings,
        budget=total_tokens,
        available_tokens=counts.total,
        phases=phase_rows,
        cells=plan_cells,
        tail=Tail(min_tokens=inputs.tail_min_tokens, cells=tail_cells, tokens=tail_tokens) if tail_cells else None,
        validation=[ValidationSet(name=v["name"], uri=v.get("uri"), weight=0.0) for v in inputs.validation],
        steps=steps,
        exposure=ExposureSummary(cap=cap, max=None if empty else max(finite_E, default=0.0),
                                 max_cell=ranked[0] if ranked else None,
                                 proportional=total_tokens / counts.total if counts.total else None, over_cap=over),
        top_exposure=[
            TopExposure(cell=c, exposure=finite(E[c]), available_tokens=counts.cells[c].tokens,
                        tokens=sum(cell_phases[c][p.name].tokens for p in phases),
                        weights={p.name: p.weights[c] for p in phases})
            for c in ranked[:TOP_N]
        ],
        ladder=ladder,
        warnings=warnings,
        repair=None,
        marin=marin,
    )
    plan.plan_id = plan_content_id(plan)
    return plan


def _is_phase_key(key: str) -> bool:
    return key.startswith("phase") and key.endswith("_weights") and key[5:-8].isdigit()
