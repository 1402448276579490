"""Read what a plan needs: the spec's `mixture:` section (or a Marin mix JSON) and the per-cell counts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mixture.planner.blocks import largest_remainder
from mixture.planner.counts import (
    Counts,
    PlanInputError,
    counts_from_marin,
    counts_from_store,
    is_marin_mix,
    load_counts,
    read_json,
)
from mixture.planner.formats import PlanWarning
from mixture.planner.plan import PhaseInput, PlanInputs
from mixture.planner.weights import check_explicit, resolve_weights
from mixture.spec.load import SpecError, load_spec
from mixture.spec.mixture_section import MixtureSection


@dataclass
class PlanningSpec:
    path: str
    name: str
    section: MixtureSection | None
    store_uri: str | None
    marin: dict[str, Any] | None  # when the spec itself is a Marin mix JSON
    base_dir: str


def load_planning_spec(path: str) -> PlanningSpec:
    """The spec to plan: a `.json` file is taken as a Marin mix JSON; anything else is loaded by the spec loader
    (mixture.spec.load: the whole spec validated, its `mixture:` section included; sources need not exist yet),
    whose `store.uri` gives the counts."""
    base_dir = os.path.dirname(os.path.abspath(path))
    if path.endswith(".json"):
        data = read_json(path)
        if not is_marin_mix(data):
            raise PlanInputError(f"{path}: expected a Marin mix JSON with available_tokens and phase_budgets")
        name = os.path.splitext(os.path.basename(path))[0]
        return PlanningSpec(path, name, None, data.get("candidate_store_uri"), data, base_dir)
    try:
        spec = load_spec(path, check_resources=False)
    except SpecError as exc:
        raise PlanInputError(str(exc)) from None
    return PlanningSpec(path, spec.name, spec.mixture, spec.refs.store, None, base_dir)


def _counts(spec: PlanningSpec, counts_source: str | None) -> Counts:
    if counts_source:
        return load_counts(counts_source)
    if spec.marin is not None:
        return counts_from_marin(spec.marin, spec.path)
    if spec.store_uri:
        return counts_from_store(spec.store_uri)
    raise PlanInputError(f"{spec.path}: no counts: the spec has no store.uri; pass --counts STORE|mix.json|counts.csv")


def _marin_phases(data: dict[str, Any], counts: Counts, where: str) -> tuple[list[PhaseInput], list[PlanWarning]]:
    budgets = data.get("phase_budgets")
    if not isinstance(budgets, list) or not budgets:
        raise PlanInputError(f"{where}: expected `phase_budgets` as a list of token counts, found {budgets!r}")
    phases, warnings = [], []
    for i, b in enumerate(budgets):
        if isinstance(b, bool) or not isinstance(b, int | float) or b < 0 or b != int(b):
            raise PlanInputError(f"{where}: phase_budgets[{i}]: expected a whole token count, found {b!r}")
        key = f"phase{i}_weights"
        if not isinstance(data.get(key), dict):
            raise PlanInputError(f"{where}: expected `{key}` (a {{cell: weight}} map) for phase_budgets[{i}]")
        w, warn = check_explicit(data[key], counts, f"{where}: {key}", normalize=False)
        phases.append(PhaseInput(f"phase{i}", int(b), w))
        warnings += warn
    return phases, warnings


def scale_tokens(values: list[int], scale: float) -> list[int]:
    total = round(sum(values) * scale)
    return largest_remainder([float(v) for v in values], total) if sum(values) else [0] * len(values)


def build_inputs(
    spec: PlanningSpec, counts_source: str | None = None, scale: float | None = None
) -> PlanInputs:
    section = spec.section
    if section is None and spec.marin is None and not (counts_source or "").endswith(".json"):
        raise PlanInputError(
            f"{spec.path}: the spec has no `mixture:` section; add one (see docs/planner.md) "
            "or give a Marin mix JSON as the spec or with --counts"
        )
    counts = _counts(spec, counts_source)
    meta: dict[str, Any] = {"spec": spec.path}
    if scale is not None:
        meta["scale"] = scale
    if section is None:
        data = spec.marin or (counts.mix if is_marin_mix(counts.mix) else None)
        if data is None:
            raise PlanInputError(
                f"{spec.path}: the spec has no `mixture:` section; add one (see docs/planner.md) "
                "or give a Marin mix JSON as the spec or with --counts"
            )
        phases, warnings = _marin_phases(data, counts, spec.path if spec.marin is not None else counts.source)
        inputs = PlanInputs(counts, phases, warnings=warnings, name=spec.name, meta=meta)
    else:
        tokens = section.phase_tokens()
        validation = frozenset(v.name for v in section.validation)
        phases, warnings = [], []
        for i, (ph, t) in enumerate(zip(section.phases, tokens, strict=True)):
            w, warn = resolve_weights(
                ph.weights, counts, phase_index=i, phase_name=ph.name, normalize=section.normalize,
                base_dir=spec.base_dir, validation=validation,
            )
            phases.append(PhaseInput(ph.name, t, w))
            warnings += warn
        inputs = PlanInputs(
            counts, phases,
            max_epochs=section.max_epochs,
            block_sequences=section.block_sequences,
            seq_len=section.seq_len,
            batch_sequences=section.batch_sequences,
            train_steps=section.train_steps,
            tail_min_tokens=section.tail_min_tokens,
            validation=[v.model_dump() for v in section.validation],
            ladder=[r.model_dump() for r in section.ladder],
            seed=section.seed,
            name=spec.name,
            warnings=warnings,
            meta=meta,
        )
    if scale is not None:
        for ph, t in zip(inputs.phases, scale_tokens([p.tokens for p in inputs.phases], scale), strict=True):
            ph.tokens = t
        inputs.ladder = [{**r, "tokens": round(r["tokens"] * scale)} for r in inputs.ladder]
        if inputs.train_steps:
            inputs.train_steps = max(1, round(inputs.train_steps * scale))
    return inputs
