"""Integer apportionment (largest remainder) and phase boundaries on the mixture-block step lattice."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction


def largest_remainder(weights: Sequence[float], total: int, names: Sequence[str] | None = None) -> list[int]:
    """Integers proportional to `weights` summing to `total`: floors, then +1 to the largest fractional parts.

    Ties go to the larger weight, then to the earlier name (or position). Weights need not sum to 1.
    """
    if total < 0:
        raise ValueError(f"expected a total >= 0, found {total}")
    n = len(weights)
    if n == 0:
        if total:
            raise ValueError("cannot apportion a positive total over no components")
        return []
    if any(w < 0 or not math.isfinite(w) for w in weights):
        raise ValueError("expected finite weights >= 0")
    # exact arithmetic: float weights are rationals, so quotas and remainders are exact
    fw = [Fraction(w) for w in weights]
    s = sum(fw)
    if s == 0:
        if total:
            raise ValueError("cannot apportion a positive total over all-zero weights")
        return [0] * n
    quotas = [w * total / s for w in fw]
    floors = [math.floor(q) for q in quotas]
    left = total - sum(floors)
    keys = names if names is not None else [f"{i:09d}" for i in range(n)]
    order = sorted(range(n), key=lambda i: (-(quotas[i] - floors[i]), -fw[i], keys[i]))
    for i in order[:left]:
        floors[i] += 1
    return floors


def step_multiple(block_sequences: int, batch_sequences: int) -> int:
    """m = B / gcd(B, batch): stage boundaries in steps must be multiples of m to fall on a block boundary."""
    return block_sequences // math.gcd(block_sequences, batch_sequences)


def boundary_step(fraction: float | Fraction, total_steps: int, block_sequences: int, batch_sequences: int) -> int:
    """s = max(m, ⌊⌊f·S⌋ / m⌋·m): the first step of the phase that starts after a fraction f of S steps."""
    m = step_multiple(block_sequences, batch_sequences)
    exact = Fraction(repr(fraction)) if isinstance(fraction, float) else Fraction(fraction)  # 0.3 means 3/10
    raw = math.floor(exact * total_steps)
    return max(m, (raw // m) * m)


def phase_boundaries(
    phase_tokens: Sequence[int], total_steps: int, block_sequences: int, batch_sequences: int
) -> list[int]:
    """Start step of every phase (the first is 0) from cumulative token fractions."""
    total = sum(phase_tokens)
    starts = [0]
    acc = 0
    for t in phase_tokens[:-1]:
        acc += t
        starts.append(boundary_step(Fraction(acc, total), total_steps, block_sequences, batch_sequences))
    return starts
