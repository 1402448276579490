"""Per-cell differences between two stores (tokens, docs) or two plans (weights, exposure)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mixture.explorer.plan_view import PlanView
from mixture.store.layout import parse_cell


def _status(a: pd.Series, b: pd.Series) -> pd.Series:
    return pd.Series(np.select([a.isna(), b.isna(), a != b], ["added", "removed", "changed"], "same"), index=a.index)


def store_diff(cells_a: pd.DataFrame, cells_b: pd.DataFrame, value: str = "tokens") -> pd.DataFrame:
    """One row per cell with documents in either store (cell tables of `mixture.accounting`): A, B,
    delta = B − A, relative delta, status."""
    a, b = cells_a, cells_b
    a = a[(a.docs > 0) | (a.tokens > 0)][["cell", "cluster", "quality", value]]
    b = b[(b.docs > 0) | (b.tokens > 0)][["cell", "cluster", "quality", value]]
    df = a.merge(b, on=["cell", "cluster", "quality"], how="outer", suffixes=(" A", " B"))
    df["status"] = _status(df[f"{value} A"], df[f"{value} B"])
    df["delta"] = df[f"{value} B"].fillna(0) - df[f"{value} A"].fillna(0)
    df["delta %"] = 100 * df.delta / df[f"{value} A"].where(df[f"{value} A"] > 0)
    return df.sort_values(["cluster", "quality"]).reset_index(drop=True)


def plan_diff(plan_a: PlanView, plan_b: PlanView, value: str = "exposure") -> pd.DataFrame:
    """One row per cell of either plan; `value` is 'exposure' or a column of PlanView.frame() ('w phase0')."""
    a = plan_a.frame()
    b = plan_b.frame()
    col_a = a[["cell", value]] if value in a else a[["cell"]].assign(**{value: np.nan})
    col_b = b[["cell", value]] if value in b else b[["cell"]].assign(**{value: np.nan})
    df = col_a.merge(col_b, on="cell", how="outer", suffixes=(" A", " B"))
    df["status"] = _status(df[f"{value} A"], df[f"{value} B"])
    df["delta"] = df[f"{value} B"].fillna(0) - df[f"{value} A"].fillna(0)
    df["delta %"] = 100 * df.delta / df[f"{value} A"].where(df[f"{value} A"] > 0)
    parsed = []
    for c in df.cell:
        try:
            parsed.append(parse_cell(c))
        except ValueError:
            parsed.append((-1, -1))
    df["cluster"] = [p[0] for p in parsed]
    df["quality"] = [p[1] for p in parsed]
    return df.sort_values(["cluster", "quality", "cell"]).reset_index(drop=True)
