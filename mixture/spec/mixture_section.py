"""The `mixture:` section of a spec: budget, phases and their weights, caps, blocks, validation sets, ladder."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from mixture.spec.amounts import parse_amount

TokenAmount = Annotated[int, BeforeValidator(parse_amount), Field(description="tokens: 18.75T, 926B, 48e9 or an int")]
CELL_RE = re.compile(r"^c(\d{2,3})q(\d)$")
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
WEIGHT_FORMS = ("proportional", "uniform", "temperature", "multipliers", "file", "cells")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProportionalWeights(_Strict):
    """Natural distribution: w_c = N_c / Σ N."""

    kind: Literal["proportional"] = "proportional"


class UniformWeights(_Strict):
    """Every non-empty cell gets the same weight."""

    kind: Literal["uniform"] = "uniform"


class TemperatureWeights(_Strict):
    """w_c ∝ N_c^alpha (alpha 1 = proportional, 0 = uniform over non-empty cells)."""

    kind: Literal["temperature"] = "temperature"
    alpha: float = Field(ge=0, le=10, description="exponent α of p ∝ n^α")


class MultiplierWeights(_Strict):
    """A base distribution times per-cluster, per-quality and per-cell multipliers, then normalised."""

    kind: Literal["multipliers"] = "multipliers"
    base: Literal["proportional", "uniform"] = "proportional"
    clusters: dict[int, float] = Field(default_factory=dict, description="cluster id -> multiplier (default 1)")
    quality: dict[int, float] = Field(default_factory=dict, description="quality level -> multiplier (default 1)")
    cells: dict[str, float] = Field(default_factory=dict, description="cell name -> multiplier (default 1)")

    @field_validator("clusters", "quality", "cells")
    @classmethod
    def _non_negative(cls, v: dict) -> dict:
        bad = {k: m for k, m in v.items() if m < 0}
        if bad:
            raise ValueError(f"expected multipliers >= 0, found {bad}")
        return v


class FileWeights(_Strict):
    """Weights read from a file: a Marin mix JSON (`key`, default phase<i>_weights), a {cell: w} JSON, a plan.json
    (phase by name) or a CSV with columns cell,weight."""

    kind: Literal["file"] = "file"
    path: str = Field(min_length=1, description="path, relative to the spec file")
    key: str | None = Field(None, description="JSON key or plan phase name holding the weights")


class CellWeights(_Strict):
    """An explicit weight for every cell: {c26q4: 0.017, ...}."""

    kind: Literal["cells"] = "cells"
    cells: dict[str, float]

    @field_validator("cells")
    @classmethod
    def _cell_names(cls, v: dict[str, float]) -> dict[str, float]:
        negative = {k: w for k, w in v.items() if w < 0}
        if negative:
            raise ValueError(f"expected weights >= 0, found negative weights {negative}")
        return v


WeightSpec = (
    ProportionalWeights | UniformWeights | TemperatureWeights | MultiplierWeights | FileWeights | CellWeights
)


def _weights_form(value: Any) -> Any:
    """Accept the short forms: `proportional`, `{temperature: 0.5}`, `{file: x.json}`, `{c00q1: 0.2, ...}`."""
    if isinstance(value, str):
        if value in ("proportional", "uniform"):
            return {"kind": value}
        raise ValueError(
            f"expected `proportional`, `uniform` or a mapping (cells, temperature, multipliers, file), found {value!r}"
        )
    if not isinstance(value, dict):
        raise ValueError(f"expected a weights mapping or `proportional`, found {type(value).__name__}")
    if "kind" in value:
        return value
    keys = set(value)
    if keys == {"temperature"}:
        alpha = value["temperature"]
        return {"kind": "temperature", **(alpha if isinstance(alpha, dict) else {"alpha": alpha})}
    if keys == {"multipliers"}:
        mult = value["multipliers"] or {}
        if not isinstance(mult, dict):
            raise ValueError(f"multipliers must be a mapping (base, quality, cluster, ...), found {type(mult).__name__}")
        return {"kind": "multipliers", **mult}
    if "file" in keys and keys <= {"file", "key"}:
        return {"kind": "file", "path": value["file"], **({"key": value["key"]} if "key" in value else {})}
    if keys == {"cells"}:
        return {"kind": "cells", "cells": value["cells"]}
    not_cells = sorted(str(k) for k in keys if not CELL_RE.match(str(k)))
    if not_cells:
        raise ValueError(
            "expected cell names like c26q4 as keys (or one of temperature, multipliers, file, cells), "
            f"found {not_cells[:5]}"
        )
    return {"kind": "cells", "cells": value}


class Phase(_Strict):
    name: str = Field(pattern=NAME_RE)
    tokens: TokenAmount | None = Field(None, description="tokens of this phase (e.g. 15T)")
    fraction: float | None = Field(None, gt=0, le=1, description="share of the budget (instead of tokens)")
    weights: Annotated[WeightSpec, BeforeValidator(_weights_form), Field(discriminator="kind")] = Field(
        default_factory=ProportionalWeights
    )

    @model_validator(mode="after")
    def _one_amount(self) -> Phase:
        if self.tokens is not None and self.fraction is not None:
            raise ValueError(f"phase {self.name!r}: expected either tokens or fraction, found both")
        return self


class ValidationSet(_Strict):
    name: str = Field(pattern=NAME_RE)
    uri: str | None = Field(None, description="where the validation data lives (passed through to exports)")


class Rung(_Strict):
    name: str = Field(min_length=1)
    tokens: TokenAmount


class MixtureSection(_Strict):
    """How the store's cells are mixed into training phases (see docs/planner.md)."""

    budget: TokenAmount | None = Field(None, description="total training tokens; default Σ phases.tokens")
    phases: list[Phase] = Field(min_length=1)
    normalize: bool = Field(False, description="rescale weights that do not sum to 1 (with a warning) instead of failing")
    max_epochs: float = Field(8.0, gt=0, description="exposure cap: Σ_p budget_p·w_p,c / N_c ≤ max_epochs")
    block_sequences: int = Field(49_152, gt=0, lt=2**16, description="B: sequences per mixture block")
    seq_len: int = Field(4_096, gt=0)
    batch_sequences: int | None = Field(None, gt=0, description="sequences per step (for phase boundaries)")
    train_steps: int | None = Field(None, gt=0, description="total steps; default ⌊budget / (batch·seq_len)⌋")
    tail_min_tokens: TokenAmount = Field(0, description="cells with fewer tokens merge into one `tail` component")
    validation: list[ValidationSet] = Field(default_factory=list)
    ladder: list[Rung] = Field(default_factory=list)
    seed: int = 0

    @field_validator("validation", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": x} if isinstance(x, str) else x for x in v]
        return v

    @model_validator(mode="after")
    def _budget(self) -> MixtureSection:
        names = [p.name for p in self.phases]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"expected unique phase names, found duplicates {dup}")
        vnames = [v.name for v in self.validation]
        if len(set(vnames)) != len(vnames):
            raise ValueError(f"expected unique validation set names, found {vnames}")
        if any(p.fraction is not None for p in self.phases) and self.budget is None:
            raise ValueError("phases given as a fraction need `budget`; found no budget")
        if self.budget is None and any(p.tokens is None for p in self.phases):
            if len(self.phases) > 1:
                raise ValueError("expected `budget` or `tokens` on every phase, found neither")
            raise ValueError("expected `budget` or the phase's `tokens`, found neither")
        for rung in self.ladder:
            if self.budget is not None and rung.tokens > self.budget:
                raise ValueError(
                    f"ladder rung {rung.name!r}: expected tokens below the budget {self.budget}, found {rung.tokens}"
                )
        return self

    def total_budget(self) -> int:
        return self.budget if self.budget is not None else sum(self.phase_tokens())

    def phase_tokens(self) -> list[int]:
        """Tokens of every phase (fractions apportioned over the budget by largest remainder)."""
        budget = self.budget
        if budget is None:
            return [int(p.tokens or 0) for p in self.phases]
        if len(self.phases) == 1 and self.phases[0].tokens is None and self.phases[0].fraction is None:
            return [budget]
        fixed = sum(p.tokens for p in self.phases if p.tokens is not None)
        quotas = [(i, budget * p.fraction) for i, p in enumerate(self.phases) if p.fraction is not None]
        out = [p.tokens if p.tokens is not None else int(budget * (p.fraction or 0.0)) for p in self.phases]
        left = budget - fixed - sum(out[i] for i, _ in quotas)
        if 0 < left <= len(quotas):  # hand the rounding leftover to the largest fractional parts
            for i, _q in sorted(quotas, key=lambda t: (-(t[1] - int(t[1])), t[0]))[:left]:
                out[i] += 1
        return out

    @model_validator(mode="after")
    def _sums(self) -> MixtureSection:
        tokens = self.phase_tokens()
        if self.budget is not None and sum(tokens) != self.budget:
            raise ValueError(
                f"expected the phases to add up to the budget {self.budget}, found {sum(tokens)} "
                f"({', '.join(f'{p.name}={t}' for p, t in zip(self.phases, tokens, strict=True))})"
            )
        fractions = [p.fraction for p in self.phases if p.fraction is not None]
        if fractions and len(fractions) == len(self.phases) and abs(sum(fractions) - 1) > 1e-9:
            raise ValueError(f"expected phase fractions summing to 1, found {sum(fractions)}")
        return self
