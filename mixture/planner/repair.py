"""Cap repair: the smallest reweighting that brings every cell's exposure under the cap, or why none exists."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

EPS = 1e-12


@dataclass
class RepairResult:
    feasible: bool
    weights: list[dict[str, float]]  # per phase, over every cell (the input weights when infeasible)
    method: str  # none | water-filling | linear-program | infeasible
    l1: list[float] = field(default_factory=list)  # Σ_c |w' - w| per phase
    capped: list[str] = field(default_factory=list)  # cells held at the cap
    message: str = ""

    @property
    def l1_total(self) -> float:
        return math.fsum(self.l1)


def _exposures(W: np.ndarray, budgets: np.ndarray, N: np.ndarray) -> np.ndarray:
    drawn = budgets @ W
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(N > 0, drawn / np.where(N > 0, N, 1), np.where(drawn > 0, np.inf, 0.0))


def _water_fill(W: np.ndarray, budgets: np.ndarray, N: np.ndarray, cap: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Scale over-cap cells down to the cap (all phases alike) and pour each phase's freed weight onto the
    phase's cells not at the cap in proportion to their weights; repeat until nothing exceeds the cap."""
    W = W.copy()
    capped = np.zeros(W.shape[1], dtype=bool)
    for _ in range(W.shape[1] + 1):
        exp = _exposures(W, budgets, N)
        limit = cap * (1 + 1e-12)
        over = exp > limit
        if not over.any():
            return W, capped
        if np.isinf(exp[over]).any():
            return None  # an empty cell with weight cannot be repaired by scaling
        active = budgets > 0  # a phase without tokens exposes nothing: leave its weights alone
        W[np.ix_(active, over)] *= cap / exp[over]
        capped |= over
        for p in range(W.shape[0]):
            if budgets[p] == 0:
                continue
            freed = 1.0 - W[p].sum()
            if freed <= EPS:
                continue
            open_ = (~capped) & (W[p] > 0)
            mass = W[p, open_].sum()
            if mass <= 0:
                return None
            W[p, open_] += freed * W[p, open_] / mass
    return None


def _linear_program(W: np.ndarray, budgets: np.ndarray, N: np.ndarray, cap: float) -> np.ndarray | None:
    """min Σ|w' - w| s.t. rows sum to 1, w' >= 0, w' = 0 where w = 0, Σ_p budget_p·w'_p,c <= cap·N_c."""
    from scipy import sparse
    from scipy.optimize import linprog

    P, C = W.shape
    n = P * C
    w0 = W.ravel()
    eye = sparse.identity(n, format="csr")
    scale = float(budgets.max()) or 1.0
    caprow = sparse.hstack([sparse.kron(sparse.csr_matrix(budgets / scale), sparse.identity(C)), sparse.csr_matrix((C, n))])
    # variables [w', t]: w' - t <= w, -w' - t <= -w (t >= |w' - w|), exposure rows
    A_ub = sparse.vstack([sparse.hstack([eye, -eye]), sparse.hstack([-eye, -eye]), caprow], format="csr")
    b_ub = np.concatenate([w0, -w0, cap * N / scale])
    A_eq = sparse.hstack([sparse.kron(sparse.identity(P), np.ones((1, C))), sparse.csr_matrix((P, n))], format="csr")
    bounds = [(0, None if w0[i] > 0 else 0) for i in range(n)] + [(0, None)] * n
    c = np.concatenate([np.zeros(n), np.ones(n)])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(P), bounds=bounds, method="highs")
    if res.status != 0:
        return None
    return np.clip(res.x[:n].reshape(P, C), 0, None)


def repair_weights(
    weights: list[dict[str, float]], budgets: list[int], available: dict[str, int], cap: float
) -> RepairResult:
    """Repair per-phase weights so that max_c E_c <= cap; weights only move within a phase, onto cells that
    already have weight there. Water-filling first; if it gets stuck, the minimum-L1 linear program."""
    cells = list(available)
    W = np.array([[w[c] for c in cells] for w in weights], dtype=float)
    b = np.array(budgets, dtype=float)
    N = np.array([available[c] for c in cells], dtype=float)
    exp = _exposures(W, b, N)
    limit = cap * (1 + 1e-12)
    if not (exp > limit).any():
        return RepairResult(True, [dict(w) for w in weights], "none", [0.0] * len(weights), [], "no cell exceeds the cap")
    filled = _water_fill(W, b, N, cap)
    method = "water-filling"
    if filled is not None:
        W2, capped_mask = filled
    else:
        W2 = _linear_program(W, b, N, cap) if len(cells) * len(budgets) <= 200_000 else None
        method = "linear-program"
        if W2 is None:
            need = float(b.sum())
            room = float(cap * N[(W > 0).any(axis=0)].sum())
            return RepairResult(
                False, [dict(w) for w in weights], "infeasible", [], [],
                f"infeasible: no reweighting within the phases' cells meets the cap of {cap:g} epochs "
                f"(the budget needs {need:,.0f} tokens; the cells with weight hold {room:,.0f} at the cap)",
            )
        W2 = W2 / W2.sum(axis=1, keepdims=True)
        capped_mask = _exposures(W2, b, N) >= cap * (1 - 1e-9)
    l1 = [float(np.abs(W2[p] - W[p]).sum()) for p in range(len(budgets))]
    out = [{c: float(W2[p, j]) for j, c in enumerate(cells)} for p in range(len(budgets))]
    capped = [c for j, c in enumerate(cells) if capped_mask[j]]
    return RepairResult(
        True, out, method, l1, capped,
        f"{method}: {len(capped)} cells held at {cap:g} epochs, L1 change {math.fsum(l1):.6g} "
        f"({', '.join(f'{v:.6g}' for v in l1)} per phase)",
    )
