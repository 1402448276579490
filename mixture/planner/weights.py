"""Turn a phase's weight spec (explicit, multipliers, proportional, temperature, file) into checked per-cell weights."""

from __future__ import annotations

import csv
import math
import os

from mixture.planner.counts import Counts, PlanInputError, read_json
from mixture.planner.formats import PlanWarning, is_plan, parse_plan
from mixture.spec.mixture_section import (
    CellWeights,
    FileWeights,
    MultiplierWeights,
    ProportionalWeights,
    TemperatureWeights,
    UniformWeights,
    WeightSpec,
)
from mixture.store.formats import FormatError

SUM_TOLERANCE = 1e-9


def _normalised(raw: dict[str, float], where: str) -> dict[str, float]:
    total = math.fsum(raw.values())
    if total <= 0:
        raise PlanInputError(f"{where}: expected some cell with a positive weight, found all weights zero")
    return {c: w / total for c, w in raw.items()}


def distribution(kind: str, counts: Counts, alpha: float = 1.0) -> dict[str, float]:
    """proportional (n), uniform (1 per non-empty cell) or temperature (n^alpha) weights over all cells."""
    out = {}
    for name, cell in counts.cells.items():
        n = cell.tokens
        if n <= 0:
            out[name] = 0.0
        elif kind == "uniform":
            out[name] = 1.0
        elif kind == "temperature":
            out[name] = float(n) ** alpha
        else:
            out[name] = float(n)
    return out


def read_weights_file(path: str, key: str | None, phase_index: int, phase_name: str) -> dict[str, float]:
    """{cell: weight} from a Marin mix JSON, a plain JSON map, a plan.json or a CSV (cell,weight)."""
    if path.endswith(".csv"):
        try:
            with open(path, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        except FileNotFoundError:
            raise PlanInputError(f"{path}: weights file not found") from None
        if rows and not {"cell", "weight"} <= set(rows[0]):
            raise PlanInputError(f"{path}: expected columns cell,weight, found {sorted(rows[0])}")
        try:
            return {r["cell"].strip(): float(r["weight"]) for r in rows}
        except ValueError as exc:
            raise PlanInputError(f"{path}: expected numeric weights: {exc}") from None
    data = read_json(path)
    if is_plan(data):
        try:
            plan = parse_plan(data, path)
        except FormatError as exc:
            raise PlanInputError(str(exc)) from None
        name = key or phase_name
        for ph in plan.phases:
            if ph.name == name:
                return dict(ph.weights)
        raise PlanInputError(f"{path}: expected a phase named {name!r}, found {plan.phase_names()}")
    if isinstance(data, dict) and "available_tokens" in data:
        name = key or f"phase{phase_index}_weights"
        if name not in data:
            raise PlanInputError(f"{path}: expected key {name!r} with the weights, found keys {sorted(data)}")
        data = data[name]
    elif key is not None:
        if not isinstance(data, dict) or key not in data:
            raise PlanInputError(f"{path}: expected key {key!r}, found {sorted(data) if isinstance(data, dict) else data}")
        data = data[key]
    if not isinstance(data, dict) or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in data.values()):
        raise PlanInputError(f"{path}: expected a {{cell: weight}} map of numbers")
    return {str(k): float(v) for k, v in data.items()}


def check_explicit(
    raw: dict[str, float],
    counts: Counts,
    where: str,
    normalize: bool,
    validation: frozenset[str] = frozenset(),
) -> tuple[dict[str, float], list[PlanWarning]]:
    """Validate an explicit map: unknown/missing cells, negatives, NaN, sum 1 (or normalise with a warning)."""
    warnings: list[PlanWarning] = []
    bad = sorted(c for c, w in raw.items() if not isinstance(w, int | float) or isinstance(w, bool) or not math.isfinite(w))
    if bad:
        raise PlanInputError(f"{where}: expected finite numeric weights, found {[(c, raw[c]) for c in bad[:5]]}")
    negative = sorted(c for c, w in raw.items() if w < 0)
    if negative:
        raise PlanInputError(f"{where}: expected weights >= 0, found negative weights for {negative[:10]}")
    val_pos = sorted(c for c in raw if c in validation and raw[c] != 0)
    if val_pos:
        raise PlanInputError(f"{where}: validation sets {val_pos} always have weight 0, found {[raw[c] for c in val_pos]}")
    unknown = sorted(c for c in raw if c not in counts.cells and c not in validation)
    if unknown:
        raise PlanInputError(
            f"{where}: unknown cells {unknown[:10]}{' …' if len(unknown) > 10 else ''} ({len(unknown)}): "
            f"not in the counts from {counts.source}; expected names from there"
        )
    missing = [c for c in counts.cells if c not in raw]
    if missing:
        raise PlanInputError(
            f"{where}: missing weights for {len(missing)} cells {missing[:10]}{' …' if len(missing) > 10 else ''}; "
            "list every cell (write 0 to leave one out)"
        )
    weights = {c: float(raw[c]) for c in counts.cells}
    total = math.fsum(weights.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        if not normalize or total <= 0:
            raise PlanInputError(
                f"{where}: expected weights summing to 1 (±{SUM_TOLERANCE:g}), found {total!r}; "
                "fix them or set `normalize: true`"
            )
        factor = 1.0 / total
        weights = {c: w * factor for c, w in weights.items()}
        warnings.append(
            PlanWarning(code="normalized", message=f"{where}: weights summed to {total:.12g}; multiplied by "
                                                   f"{factor:.12g}", cells=[])
        )
    return weights, warnings


def resolve_weights(
    spec: WeightSpec,
    counts: Counts,
    *,
    phase_index: int,
    phase_name: str,
    normalize: bool,
    base_dir: str = ".",
    validation: frozenset[str] = frozenset(),
    where: str | None = None,
) -> tuple[dict[str, float], list[PlanWarning]]:
    """Weights over every cell of `counts` (in their order) and the warnings raised on the way."""
    where = where or f"mixture.phases[{phase_index}].weights"
    if isinstance(spec, ProportionalWeights | UniformWeights):
        return _normalised(distribution(spec.kind, counts), where), []
    if isinstance(spec, TemperatureWeights):
        return _normalised(distribution("temperature", counts, spec.alpha), where), []
    if isinstance(spec, MultiplierWeights):
        clusters = {c.cluster for c in counts.cells.values()}
        levels = {c.quality for c in counts.cells.values()}
        for label, keys, known in (("clusters", spec.clusters, clusters), ("quality", spec.quality, levels)):
            unknown = sorted(set(keys) - known)
            if unknown:
                raise PlanInputError(f"{where}.{label}: unknown ids {unknown}; the counts have {sorted(known)}")
        unknown_cells = sorted(set(spec.cells) - set(counts.cells))
        if unknown_cells:
            raise PlanInputError(f"{where}.cells: unknown cells {unknown_cells[:10]}")
        base = distribution(spec.base, counts)
        raw = {
            name: base[name] * spec.clusters.get(c.cluster, 1.0) * spec.quality.get(c.quality, 1.0) * spec.cells.get(name, 1.0)
            for name, c in counts.cells.items()
        }
        return _normalised(raw, where), []
    if isinstance(spec, FileWeights):
        path = spec.path if os.path.isabs(spec.path) else os.path.join(base_dir, spec.path)
        raw = read_weights_file(path, spec.key, phase_index, phase_name)
        return check_explicit(raw, counts, f"{where} (from {path})", normalize, validation)
    if isinstance(spec, CellWeights):
        return check_explicit(dict(spec.cells), counts, where, normalize, validation)
    raise PlanInputError(f"{where}: unsupported weights form {spec!r}")
