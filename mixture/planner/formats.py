"""The planner's JSON files, defined once: the plan (`mixture plan --out plan.json`) and the materialized manifest
(`mixture materialize`: `manifest.json`, `phase=NAME/_manifest.json`). `mixture schema --plan` / `--manifest`
print their JSON Schemas; docs/planner.md explains the formulas behind the fields."""

from __future__ import annotations

import json
import math
from typing import Any, Literal

import fsspec
import xxhash
from pydantic import Field

from mixture.store.formats import (
    CELL_PATTERN,
    Format,
    FormatError,
    load_json,
    parse_model,
    read_bytes,
    read_model,
)

PLAN_KIND = "mixture-plan"
MANIFEST = "manifest.json"  # DIR/manifest.json of a materialized mixture, written last
PHASE_MANIFEST = "_manifest.json"  # DIR/phase=NAME/_manifest.json
PLAN_FORMAT_VERSION = 1
MANIFEST_FORMAT_VERSION = 1
WEIGHT_SUM_TOLERANCE = 1e-6  # a phase's weights sum to 1 within this (what `mixture plan` writes: ~1e-15)
WarningCode = Literal["over_cap", "empty_cell", "zero_sequences", "realised_off", "ladder_vanish", "phase_steps",
                      "normalized"]
NOT_A_PLAN = "write one with `mixture plan SPEC --out plan.json` (a Marin mix JSON: `mixture plan mix.json --out plan.json`)"


# -- plan.json -------------------------------------------------------------------------------------------------
class PlanWarning(Format):
    """A warning of the plan, naming the cells it is about."""

    code: WarningCode = Field(description="over_cap: exposure above max_epochs; empty_cell: weight but no tokens; "
                                          "zero_sequences: weight below 1/B; realised_off: realised weight > 5 % off; "
                                          "ladder_vanish: a rung cuts a used cell to 0 tokens; phase_steps: a phase "
                                          "gets no steps; normalized: weights rescaled to sum to 1")
    message: str = Field(description="what is wrong and how to fix it")
    cells: list[str] = Field(description="the cells it is about")


class PlanSource(Format):
    """Where the counts came from."""

    counts: str = Field(description="the store, mix file or counts file the per-cell counts came from")
    counts_kind: str = Field(description="store, store.json, marin (a mix file), csv, table or plan")
    spec: str | None = Field(None, description="the spec (or Marin mix JSON) planned")
    scale: float | None = Field(None, description="--scale applied to the budgets, rungs and train_steps")


class PlanSettings(Format):
    """The settings the plan was computed with (the spec's `mixture:` section and the command line)."""

    max_epochs: float = Field(description="exposure cap")
    block_sequences: int = Field(gt=0, lt=2**16, description="B: sequences per mixture block")
    seq_len: int = Field(gt=0, description="tokens per sequence")
    batch_sequences: int | None = Field(description="sequences per step (null: no step boundaries)")
    train_steps: int | None = Field(description="total steps when given (null: budget / (batch · seq_len))")
    tail_min_tokens: int = Field(ge=0, description="cells below this are mixed as one `tail` component")
    seed: int = Field(description="permutation seed of `mixture materialize`")


class Component(Format):
    """A component of the loader's mixture in one phase: a cell, the tail, or a validation set."""

    name: str = Field(description="cell name, `tail`, or a validation set's name")
    cells: list[str] = Field(description="the cells it draws from (the tail: several; a validation set: none)")
    weight: float = Field(ge=0, description="planned weight (the tail: the sum of its cells')")
    sequences: int = Field(ge=0, description="sequences per block of B (largest remainder)")
    realised_weight: float = Field(ge=0, description="sequences / B")
    rel_error: float | None = Field(description="(realised − weight) / weight (null when the weight is 0)")
    validation: bool = Field(False, description="a validation set (weight 0 in every phase)")


class PlanPhase(Format):
    """One training phase."""

    name: str = Field(description="the phase's name")
    tokens: int = Field(ge=0, description="the phase's token budget")
    weights: dict[str, float] = Field(description="weight of every cell, summing to 1")
    start_step: int | None = Field(None, description="first step of the phase (with a batch size)")
    end_step: int | None = Field(None, description="the step after its last (with a batch size)")
    components: list[Component] = Field(description="the loader's components: cells, the tail, validation sets")


class CellPhase(Format):
    """A cell in one phase."""

    weight: float = Field(ge=0, description="the cell's weight in the phase")
    tokens: int = Field(ge=0, description="tokens drawn: the phase budget apportioned by largest remainder")
    sequences: int = Field(ge=0, description="sequences per block of its component")
    realised_weight: float = Field(ge=0, description="its share of the block (a tail cell: the tail's share × "
                                                     "N_c / N_tail)")
    rel_error: float | None = Field(description="(realised − weight) / weight (null when the weight is 0)")


class PlanCell(Format):
    """A cell of the counts."""

    cell: str = Field(pattern=CELL_PATTERN, description="cell name cNNqQ")
    cluster: int = Field(ge=0, description="topic cluster")
    quality: int = Field(ge=0, description="quality bucket")
    available_tokens: int = Field(ge=0, description="N_c: tokens in the store")
    docs: int | None = Field(description="documents in the store (null: not known)")
    component: str = Field(description="its component: itself or `tail`")
    exposure: float | None = Field(description="E_c = Σ_p budget_p · w_p,c / N_c in epochs (null: infinite)")
    phases: dict[str, CellPhase] = Field(description="per phase name")


class Tail(Format):
    """Cells too small to mix alone, concatenated into one component."""

    min_tokens: int = Field(ge=0, description="tail_min_tokens: cells below it are in the tail")
    cells: list[str] = Field(description="the tail's cells")
    tokens: int = Field(ge=0, description="Σ N_c of its cells")


class ValidationSet(Format):
    """A validation set: a component with weight 0 in every phase."""

    name: str = Field(description="its name (must not be a cell's)")
    uri: str | None = Field(None, description="where it is (from the spec)")
    weight: float = Field(0.0, description="always 0")


class Steps(Format):
    """Phase boundaries in steps, on multiples of m = B / gcd(B, batch)."""

    batch_sequences: int = Field(gt=0, description="sequences per step")
    tokens_per_step: int = Field(gt=0, description="batch · seq_len")
    total_steps: int = Field(ge=0, description="S: train_steps, or budget / tokens_per_step")
    m: int = Field(gt=0, description="B / gcd(B, batch): boundaries fall on multiples of m")
    starts: list[int] = Field(description="first step of every phase")


class ExposureSummary(Format):
    """Exposure (epochs) over the whole run."""

    cap: float = Field(description="max_epochs")
    max: float | None = Field(description="the largest finite exposure (null when a cell's is infinite)")
    max_cell: str | None = Field(description="the cell with the largest exposure")
    proportional: float | None = Field(description="budget / available tokens: every cell's exposure under "
                                                   "proportional weights")
    over_cap: list[str] = Field(description="cells above the cap, highest first")


class TopExposure(Format):
    """One of the cells with the highest exposure."""

    cell: str = Field(description="cell name")
    exposure: float | None = Field(description="epochs (null: infinite)")
    available_tokens: int = Field(ge=0, description="N_c")
    tokens: int = Field(description="tokens drawn over all phases")
    weights: dict[str, float] = Field(description="per phase name")


class LadderSteps(Format):
    """A rung's steps (with a batch size)."""

    total_steps: int = Field(ge=0, description="X / (batch · seq_len)")
    starts: list[int] = Field(description="first step of every phase")


class LadderRung(Format):
    """A smaller run of the scaling ladder: each cell truncated to ⌊N_c·X/T⌋ (simulated epoching)."""

    name: str = Field(description="the rung's name (e.g. the model size)")
    tokens: int = Field(ge=0, description="X: the rung's budget")
    scale: float = Field(description="X / T")
    phase_tokens: dict[str, int] = Field(description="per phase name: its budget at this rung")
    truncated_tokens: dict[str, int] = Field(description="per cell: ⌊N_c·X/T⌋")
    exposure: dict[str, float | None] = Field(description="per cell: exposure at this rung (null: infinite)")
    max_exposure_change: float = Field(description="largest |rung exposure − full-run exposure|")
    vanished: list[str] = Field(description="used cells cut to 0 tokens (an empty dataset crashes the loader)")
    steps: LadderSteps | None = Field(None, description="with a batch size")


class Repair(Format):
    """How a repaired plan was derived from the plan it repairs."""

    repaired_from: str = Field(description="plan_id of the original plan")
    method: Literal["water-filling", "linear-program"] = Field(description="how the weights were repaired")
    l1_total: float = Field(description="Σ over phases of Σ_c |w' − w|")
    l1_by_phase: dict[str, float] = Field(description="per phase name: Σ_c |w' − w|")
    capped_cells: list[str] = Field(description="cells held at the cap")
    cap: float = Field(description="the exposure cap repaired to")
    message: str = Field(description="what was done, for people")


class MarinInfo(Format):
    """What an imported Marin mix JSON had beyond counts and weights (so that exporting gives it back)."""

    key_order: list[str] = Field(description="the file's keys in their order")
    phase_budgets: list[int | float] | None = Field(description="the budgets as written in the file")
    extra: dict[str, Any] = Field(description="keys the planner does not use, kept as they were")


class Plan(Format):
    """`plan.json`: a training mixture over the store's cells (see docs/planner.md for every formula)."""

    format: Literal[1] = Field(description="format version of the plan")
    kind: Literal["mixture-plan"] = Field(description="always mixture-plan")
    plan_id: str = Field(description="xxh64 of what the plan draws (plan_content_id: phases' tokens and weights, "
                                     "cells, settings, tail, validation), recomputed when the plan is read")
    name: str = Field(description="the spec's name")
    source: PlanSource = Field(description="where the counts came from")
    tokenizer: str | None = Field(description="the store's tokenizer")
    store_uri: str | None = Field(description="the store to materialize from")
    k: int = Field(ge=0, description="clusters of the partition")
    settings: PlanSettings = Field(description="the settings of the plan")
    budget: int = Field(ge=0, description="Σ phase tokens")
    available_tokens: int = Field(ge=0, description="Σ N_c")
    phases: list[PlanPhase] = Field(description="the training phases, in order")
    cells: list[PlanCell] = Field(description="every cell of the counts, in their order")
    tail: Tail | None = Field(description="the tail component (null: none)")
    validation: list[ValidationSet] = Field(description="validation sets (weight 0)")
    steps: Steps | None = Field(description="phase boundaries in steps (null without a batch size)")
    exposure: ExposureSummary = Field(description="exposure over the run")
    top_exposure: list[TopExposure] = Field(description="the 10 cells with the highest exposure")
    ladder: list[LadderRung] = Field(description="the scaling ladder's rungs")
    warnings: list[PlanWarning] = Field(description="warnings, each naming its cells")
    repair: Repair | None = Field(description="set on a repaired plan (`plan.repaired.json`)")
    marin: MarinInfo | None = Field(None, description="set when the counts came from a Marin mix JSON")

    def cell_map(self) -> dict[str, PlanCell]:
        return {c.cell: c for c in self.cells}

    def phase_names(self) -> list[str]:
        return [p.name for p in self.phases]

    def used_cells(self) -> list[PlanCell]:
        """Cells that draw tokens in some phase."""
        return [c for c in self.cells if any(r.tokens > 0 for r in c.phases.values())]

    def exposures(self) -> dict[str, float]:
        """{cell: exposure}, math.inf where the plan writes null (weight but no tokens)."""
        return {c.cell: math.inf if c.exposure is None else c.exposure for c in self.cells}


def is_plan(data: Any) -> bool:
    return isinstance(data, dict) and data.get("kind") == PLAN_KIND


def plan_content_id(plan: Plan) -> str:
    """xxh64 of what the plan draws and how a trainer weighs it: each phase's name, tokens and weights, every cell
    (counts, component, per-phase weight and tokens), the settings, the tail and the validation sets. Its name,
    source, warnings, ladder and repair note are not part of it."""
    core = plan.model_dump(mode="json", include={"phases": {"__all__": {"name", "tokens", "weights"}}, "cells": True,
                                                 "settings": True, "tail": True, "validation": True})
    return xxhash.xxh64(json.dumps(core, sort_keys=True).encode()).hexdigest()


def _finite_weight(w: float) -> str | None:
    if not math.isfinite(w):
        return f"{w} is not a number a weight can be (finite, ≥ 0)"
    if w < 0:
        return f"{w} is negative (a weight is ≥ 0)"
    return None


def plan_problems(plan: Plan) -> list[tuple[str, str]]:
    """(field, what is wrong) for every inconsistency a hand edit can leave: a weight that is not finite or is
    negative, a phase whose weights do not sum to 1 within WEIGHT_SUM_TOLERANCE, a cell whose per-phase weight
    differs from its phase's, whose tokens do not add up to the phase's, or which lacks a phase."""
    problems: list[tuple[str, str]] = []
    names = plan.phase_names()
    for i, ph in enumerate(plan.phases):
        bad = [(f"phases[{i}].weights.{c}", why) for c, w in ph.weights.items() if (why := _finite_weight(w))]
        problems += bad
        total = math.fsum(ph.weights.values())
        if not bad and abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
            problems.append((f"phases[{i}].weights", f"phase {ph.name}'s weights sum to {total:.9g}, not 1 "
                                                     f"(± {WEIGHT_SUM_TOLERANCE:g})"))
    tokens = dict.fromkeys(names, 0)
    for j, cell in enumerate(plan.cells):
        missing = [n for n in names if n not in cell.phases]
        if missing:
            problems.append((f"cells[{j}].phases", f"{cell.cell} has no entry for phase(s) {', '.join(missing)}"))
        for n, cp in cell.phases.items():
            where = f"cells[{j}].phases.{n}"
            if n not in tokens:
                problems.append((where, f"{cell.cell}: no phase {n!r} in the plan's phases"))
                continue
            tokens[n] += cp.tokens
            if (why := _finite_weight(cp.weight)):
                problems.append((f"{where}.weight", why))
            elif cp.weight != plan.phases[names.index(n)].weights.get(cell.cell, 0.0):
                problems.append((f"{where}.weight", f"{cell.cell}: {cp.weight} ≠ the phase's weight "
                                                    f"{plan.phases[names.index(n)].weights.get(cell.cell, 0.0)}"))
    for i, ph in enumerate(plan.phases):
        if tokens[ph.name] != ph.tokens:
            problems.append((f"phases[{i}].tokens", f"phase {ph.name} has {ph.tokens:,} tokens, its cells' tokens sum "
                                                    f"to {tokens[ph.name]:,}"))
    return problems


def parse_plan(data: Any, file: str) -> Plan:
    """A plan from parsed JSON, checked (`plan_problems`) and identified by its content (`plan_content_id`): a plan
    whose plan_id is not its content's hash was edited and is refused; one without a plan_id gets it. FormatError
    names the file and each wrong field, or says how to write a plan when `data` is something else (a Marin mix
    JSON, a hand-written shape)."""
    if not is_plan(data):
        found = f"keys {', '.join(sorted(map(str, data))[:8])}" if isinstance(data, dict) else type(data).__name__
        raise FormatError(file, [("kind", f"expected a plan written by `mixture plan` (kind: {PLAN_KIND}), "
                                          f"found {found}")], NOT_A_PLAN)
    claimed = data.get("plan_id")
    plan = parse_model(Plan, {**data, "plan_id": claimed or ""}, file,
                       "the plan does not match its format (`mixture schema --plan`); " + NOT_A_PLAN)
    problems = plan_problems(plan)
    if problems:
        raise FormatError(file, problems, "fix the plan (docs/planner.md: what a plan must hold) or write a new one "
                                          "with `mixture plan`")
    content = plan_content_id(plan)
    if claimed and claimed != content:
        raise FormatError(file, [("plan_id", f"{claimed} is not the hash of the plan's content ({content}): the plan "
                                             "was changed after `mixture plan` wrote it")],
                          "write a new plan with `mixture plan`; to use the edited plan as a new plan, delete its "
                          "plan_id field (it is then computed from the content)")
    plan.plan_id = content
    return plan


def read_plan(uri: str) -> Plan:
    """plan.json at a local path or any fsspec URI; FormatError names the file and field, or says how to write one."""
    return parse_plan(load_json(read_bytes(str(uri), NOT_A_PLAN), str(uri), NOT_A_PLAN), str(uri))


# -- manifest.json ---------------------------------------------------------------------------------------------
class ManifestShard(Format):
    """One written Parquet shard of a phase."""

    path: str = Field(description="file name, relative to the phase folder")
    rows: int = Field(ge=0, description="documents in the file")
    tokens: int = Field(ge=0, description="Σ n_tokens of its documents")
    bytes: int = Field(ge=0, description="file size in bytes")
    xxh64: str = Field(pattern=r"^[0-9a-f]{16}$", description="hex xxHash64 of the file's bytes")


class ManifestCellPhase(Format):
    """What one cell gave one phase."""

    planned_tokens: int = Field(ge=0, description="the plan's tokens of the cell in the phase")
    docs: int = Field(ge=0, description="documents drawn (a draw below half a document can take none)")
    tokens: int = Field(ge=0, description="tokens drawn (within one document of planned_tokens)")
    passes: list[int] = Field(description="the seeded permutations (passes over the cell) the documents come from")
    epochs: float = Field(description="tokens / the cell's tokens in the store")


class PhaseManifest(Format):
    """`phase=NAME/_manifest.json` (and an entry of manifest.json `phases`)."""

    name: str = Field(description="the phase's name")
    planned_tokens: int = Field(ge=0, description="the phase's budget in the plan")
    tokens: int = Field(ge=0, description="tokens written")
    docs: int = Field(ge=0, description="documents written")
    tolerance: int = Field(ge=0, description="Σ over cells of their largest document: the allowed drift")
    max_doc_tokens: int = Field(ge=0, description="the largest document of the phase's cells")
    shards: list[ManifestShard] = Field(description="the phase's Parquet files, in order")
    cells: dict[str, ManifestCellPhase] = Field(description="per cell")


class ManifestCell(Format):
    """A used cell as found in the store."""

    available_tokens: int = Field(ge=0, description="tokens of the cell in the store")
    planned_available_tokens: int = Field(ge=0, description="the plan's N_c")
    docs_in_store: int = Field(ge=0, description="documents of the cell in the store")
    max_doc_tokens: int = Field(ge=0, description="its largest document")


class Manifest(Format):
    """`manifest.json` of a materialized mixture: written last (its presence means complete)."""

    format: Literal[1] = Field(description="format version of the manifest")
    plan_id: str = Field(description="the plan materialized")
    plan_name: str = Field(description="the plan's name")
    store_uri: str = Field(description="the store drawn from")
    store_created: str | None = Field(None, description="that store's store.json `created` when drawn: a rebuilt "
                                      "store is another store (absent from manifests written before it was kept)")
    seed: int = Field(description="the permutation seed drawn with")
    shard_bytes: int = Field(gt=0, description="text bytes per shard")
    cells: dict[str, ManifestCell] = Field(description="per used cell")
    count_mismatch: list[str] = Field(description="cells whose store counts differ from the plan's")
    phases: list[PhaseManifest] = Field(description="per phase, in order (each also in phase=NAME/_manifest.json)")


def read_manifest(folder: str, fs: fsspec.AbstractFileSystem | None = None) -> Manifest:
    """FOLDER/manifest.json of a materialized mixture (a local folder or any fsspec URI; a path on `fs` when
    given); FormatError naming the file and field when it is absent or does not match its format."""
    path = f"{str(folder).rstrip('/')}/{MANIFEST}"
    return read_model(Manifest, path, "run `mixture materialize` again to rewrite it", fs=fs)


# -- DIR/_materialize/: the work of a materialize run (removed once manifest.json is published) ----------------
class MaterializeWork(Format):
    """`_materialize/work/key.json`: what the draw plan beside it was made from, written after it (a run that
    finds it with the same key resumes: finished tasks are skipped; another key starts over)."""

    key: str = Field(pattern=r"^[0-9a-f]{16}$", description="xxh64 of every field below except tasks")
    plan_id: str = Field(description="the plan materialized")
    store_uri: str = Field(description="the store drawn from")
    store_created: str = Field(description="the store's store.json `created`: a rebuilt store is another store")
    seed: int = Field(description="the permutation seed")
    shard_bytes: int = Field(gt=0, description="text per shard (characters, see docs/planner.md)")
    code_version: str = Field(description="mixture's version and the manifest format")
    tasks: int = Field(ge=1, description="the task count the draws were shared out to (task r writes a range of shards)")
    shards: int = Field(ge=0, description="shards over every phase")


class TaskShards(Format):
    """`_materialize/work/written/NNNNN.json`: the shards one materialize task wrote, measured as it wrote them."""

    task: int = Field(ge=0, description="the task (datatrove rank)")
    shards: dict[str, list[ManifestShard]] = Field(description="per phase name, in shard order")
