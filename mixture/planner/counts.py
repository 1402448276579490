"""Per-cell token counts for planning: from a built store, a Marin mix JSON or a counts CSV."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from typing import Any

from mixture.store import layout


class PlanInputError(ValueError):
    """Input that cannot be planned with; the message names the file, record and field and how to fix it."""


@dataclass(frozen=True)
class CellCount:
    cell: str
    cluster: int
    quality: int
    tokens: int
    docs: int | None = None


@dataclass
class Counts:
    """Available tokens per cell, in the order given by the source."""

    cells: dict[str, CellCount]
    source: str
    kind: str  # store | marin | csv | plan
    tokenizer: str | None = None
    store_uri: str | None = None
    marin: dict[str, Any] | None = None  # the raw Marin mix file when imported from one
    k: int = 0

    @property
    def total(self) -> int:
        return sum(c.tokens for c in self.cells.values())

    def tokens(self, cell: str) -> int:
        return self.cells[cell].tokens


def _cell(name: str, tokens: Any, docs: Any, where: str) -> CellCount:
    try:
        cluster, quality = layout.parse_cell(name)
    except ValueError as exc:
        raise PlanInputError(f"{where}: {exc}") from None
    if isinstance(tokens, bool) or not isinstance(tokens, int | float) or tokens < 0 or tokens != int(tokens):
        raise PlanInputError(f"{where}: expected a whole token count >= 0 for {name}, found {tokens!r}")
    if docs is not None and (isinstance(docs, bool) or not isinstance(docs, int) or docs < 0):
        raise PlanInputError(f"{where}: expected a document count >= 0 for {name}, found {docs!r}")
    return CellCount(name, cluster, quality, int(tokens), docs)


def is_marin_mix(data: Any) -> bool:
    return isinstance(data, dict) and "available_tokens" in data and "phase_budgets" in data


def counts_from_store(uri: str) -> Counts:
    from mixture.accounting import StoreNotReady, StoreReader

    reader = StoreReader(uri)
    try:
        artifact = reader.artifact
    except StoreNotReady as exc:
        raise PlanInputError(f"{exc}; wait for the build to finish or pass --counts") from None
    except FileNotFoundError:
        raise PlanInputError(f"{uri}: no store there (no {layout.STORE_JSON}); check the path") from None
    cells: dict[str, CellCount] = {}
    for i, row in enumerate(artifact.get("cells", [])):
        where = f"{uri}/{layout.STORE_JSON}: cells[{i}]"
        name = row.get("cell") or layout.cell_name(row["cluster"], row["quality"], artifact.get("partition", {}).get("k", 100))
        cells[name] = _cell(name, row.get("tokens"), row.get("docs"), where)
    if not cells:
        raise PlanInputError(f"{uri}/{layout.STORE_JSON}: expected a non-empty `cells` list, found none")
    k = artifact.get("partition", {}).get("k") or (max(c.cluster for c in cells.values()) + 1)
    return Counts(cells, uri, "store", artifact.get("tokenizer"), uri, None, k)


def counts_from_marin(data: dict[str, Any], source: str) -> Counts:
    avail = data.get("available_tokens")
    if not isinstance(avail, dict) or not avail:
        raise PlanInputError(f"{source}: expected `available_tokens` as a non-empty {{cNNqQ: int}} map, found {avail!r:.80}")
    cells = {name: _cell(name, n, None, f"{source}: available_tokens.{name}") for name, n in avail.items()}
    k = max(c.cluster for c in cells.values()) + 1
    return Counts(cells, source, "marin", data.get("tokenizer"), data.get("candidate_store_uri"), data, k)


def counts_from_csv(path: str) -> Counts:
    import fsspec

    cells: dict[str, CellCount] = {}
    fs, local = fsspec.core.url_to_fs(path)
    if not fs.exists(local):
        raise PlanInputError(f"{path}: counts CSV not found")
    with fs.open(local, "rt", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames or not {"cell", "tokens"} <= set(reader.fieldnames):
            raise PlanInputError(f"{path}: expected a header with columns cell,tokens[,docs], found {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            where = f"{path}: line {line}"
            try:
                tokens = int(float(row["tokens"]))
                docs = int(row["docs"]) if row.get("docs") not in (None, "") else None
            except ValueError:
                raise PlanInputError(f"{where}: expected integer tokens/docs, found {row}") from None
            name = row["cell"].strip()
            if name in cells:
                raise PlanInputError(f"{where}: cell {name} listed twice")
            cells[name] = _cell(name, tokens, docs, where)
    if not cells:
        raise PlanInputError(f"{path}: expected at least one cell row, found none")
    return Counts(cells, path, "csv", k=max(c.cluster for c in cells.values()) + 1)


def read_json(path: str) -> Any:
    """A JSON file at a local path or any fsspec URI (gs://, s3://, hf://)."""
    import fsspec

    try:
        with fsspec.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise PlanInputError(f"{path}: file not found") from None
    except json.JSONDecodeError as exc:
        raise PlanInputError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None


def load_counts(source: str) -> Counts:
    """A store URI/folder, a Marin mix JSON, or a counts CSV (cell,tokens[,docs])."""
    if source.endswith(".csv"):
        return counts_from_csv(source)
    if source.endswith(".json"):
        data = read_json(source)
        if is_marin_mix(data):
            return counts_from_marin(data, source)
        if isinstance(data, dict) and data.get("kind") == "mixture-plan":
            return counts_from_plan(data, source)
        raise PlanInputError(
            f"{source}: expected a Marin mix JSON (available_tokens, phase_budgets, phase0_weights, ...) "
            f"or a plan.json, found keys {sorted(data)[:8] if isinstance(data, dict) else type(data).__name__}"
        )
    if "://" not in source and not os.path.exists(source):
        raise PlanInputError(f"{source}: no such store, mix JSON or counts CSV")
    return counts_from_store(source)


def counts_from_plan(plan: dict[str, Any], source: str) -> Counts:
    cells = {
        row["cell"]: CellCount(row["cell"], row["cluster"], row["quality"], row["available_tokens"], row.get("docs"))
        for row in plan["cells"]
    }
    return Counts(cells, source, "plan", plan.get("tokenizer"), plan.get("store_uri"), None, plan.get("k", 0))
