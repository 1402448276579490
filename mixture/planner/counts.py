"""Per-cell token counts for planning: the accounting layer's counts (a store, a mix file, a counts table), or the
counts a plan.json was computed with."""

from __future__ import annotations

from typing import Any

from mixture.accounting.counts import (
    COUNTS_SUFFIXES,
    CellCount,
    Counts,
    CountsError,
    StoreStillBuilding,
    counts_from_mix,
    store_counts,
)
from mixture.accounting.counts import load_counts as read_counts
from mixture.store.formats import FormatError, load_json, read_bytes

__all__ = ["CellCount", "Counts", "PlanInputError", "counts_from_marin", "counts_from_plan", "counts_from_store",
           "is_marin_mix", "load_counts", "read_json"]


class PlanInputError(ValueError):
    """Input that cannot be planned with; the message names the file, record and field and how to fix it."""


def is_marin_mix(data: Any) -> bool:
    return isinstance(data, dict) and "available_tokens" in data and "phase_budgets" in data


def counts_from_store(uri: str) -> Counts:
    """A complete store's counts (its ledgers, with its tokenizer and partition)."""
    from mixture.accounting import StoreReader

    try:
        return store_counts(StoreReader(uri), require_complete=True)
    except StoreStillBuilding as exc:
        raise PlanInputError(f"{exc} (or pass --counts)") from None
    except CountsError as exc:
        raise PlanInputError(str(exc)) from None


def counts_from_marin(data: dict[str, Any], source: str) -> Counts:
    try:
        return counts_from_mix(data, source)
    except CountsError as exc:
        raise PlanInputError(str(exc)) from None


def counts_from_plan(source: str) -> Counts:
    """The counts a plan.json was computed with (its cells' available tokens and documents)."""
    from mixture.planner.formats import read_plan

    try:
        plan = read_plan(source)
    except FormatError as exc:
        raise PlanInputError(str(exc)) from None
    cells = {c.cell: CellCount(c.cell, c.cluster, c.quality, c.available_tokens, c.docs) for c in plan.cells}
    return Counts(cells, source, "plan", plan.tokenizer, plan.store_uri, None, plan.k)


def read_json(path: str) -> Any:
    """A JSON file at a local path or any fsspec URI (gs://, s3://, hf://), parsed by mixture.store.formats (the
    error names the file, and the line and column of invalid JSON)."""
    try:
        return load_json(read_bytes(path), path)
    except FormatError as exc:
        raise PlanInputError(str(exc)) from None


def load_counts(source: str) -> Counts:
    """A store (path or URI), a plan.json, or any counts file `mixture.accounting.load_counts` reads: a CSV
    cell,tokens[,docs], a Marin mix JSON, a store.json, JSON/YAML records or a {cell: tokens} map."""
    if not source.endswith(COUNTS_SUFFIXES):
        return counts_from_store(source)
    if source.endswith(".json") and isinstance(data := read_json(source), dict) and data.get("kind") == "mixture-plan":
        return counts_from_plan(source)
    try:
        return read_counts(source)
    except CountsError as exc:
        raise PlanInputError(str(exc)) from None
