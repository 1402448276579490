"""Per-cell token counts, read one way wherever they come from: a store (its ledgers, with store.json's partition),
a store.json file, a Marin mix file (`available_tokens`), or a counts table (CSV, or JSON/YAML records or a
{cell: tokens} map). `mixture diff` and `mixture plan --counts` both read counts through `load_counts`."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from typing import Any

import pandas as pd
import yaml

from mixture.accounting.reader import StoreNotReady, StoreReader, open_fs
from mixture.accounting.tables import cell_table, store_k
from mixture.spec.yaml_bounded import load_yaml
from mixture.store import layout
from mixture.store.formats import FormatError, StoreArtifact, load_json, parse_store_artifact

COUNTS_SUFFIXES = (".csv", ".json", ".yaml", ".yml")
COMPAT_FIELDS = ("tokenizer", "k", "quality_levels", "bucket_edges")
HOW_TO_WRITE = "write one with `mixture report STORE --by cell --format csv`"


class CountsError(ValueError):
    """Counts that cannot be read; the message names the file, the record or line and the field."""


class StoreStillBuilding(CountsError):
    """Complete counts were asked of a store that has no store.json yet."""


@dataclass(frozen=True)
class CellCount:
    cell: str
    cluster: int
    quality: int
    tokens: int
    docs: int | None = None


@dataclass
class Counts:
    """Available tokens (and documents, when known) per cell, in the order of the source."""

    cells: dict[str, CellCount]
    source: str
    kind: str  # store | store.json | marin (a mix file) | csv | table (JSON/YAML records or map) | plan
    tokenizer: str | None = None
    store_uri: str | None = None
    mix: dict[str, Any] | None = None  # the mix file as read, when the counts come from one
    k: int = 0
    quality_levels: int | None = None
    bucket_edges: list[float] | None = None
    reader: StoreReader | None = None  # the store, when the counts come from one (diff compares its ids)

    @property
    def name(self) -> str:
        return self.source

    @property
    def total(self) -> int:
        return sum(c.tokens for c in self.cells.values())

    def tokens(self, cell: str) -> int:
        return self.cells[cell].tokens

    @property
    def meta(self) -> dict[str, Any]:
        """What decides whether weights fitted to these counts can be reused elsewhere (those that are known)."""
        values: dict[str, Any] = {"tokenizer": self.tokenizer}
        if self.quality_levels is not None:  # the partition is known (from a store.json), not inferred from names
            values.update(k=self.k, quality_levels=self.quality_levels, bucket_edges=self.bucket_edges)
        return {key: v for key, v in values.items() if v is not None}

    def frame(self) -> pd.DataFrame:
        """cell, tokens, docs (docs <NA> where unknown)."""
        return pd.DataFrame({"cell": list(self.cells), "tokens": [c.tokens for c in self.cells.values()],
                             "docs": pd.array([c.docs for c in self.cells.values()], dtype="Int64")})


def cell_count(name: Any, tokens: Any, docs: Any, where: str) -> CellCount:
    """One checked cell: a cNNqQ name, a whole token count >= 0 and a document count >= 0 (or none)."""
    try:
        cluster, quality = layout.parse_cell(str(name))
    except ValueError as exc:
        raise CountsError(f"{where}: {exc}") from None
    if isinstance(tokens, bool) or not isinstance(tokens, int | float) or tokens < 0 or tokens != int(tokens):
        raise CountsError(f"{where}: expected a whole token count >= 0 for {name}, found {tokens!r}")
    if docs is not None and (isinstance(docs, bool) or not isinstance(docs, int | float) or docs < 0
                             or docs != int(docs)):
        raise CountsError(f"{where}: expected a document count >= 0 for {name}, found {docs!r}")
    return CellCount(str(name), cluster, quality, int(tokens), None if docs is None else int(docs))


def _add(cells: dict[str, CellCount], cell: CellCount, where: str) -> None:
    if cell.cell in cells:
        raise CountsError(f"{where}: cell {cell.cell} listed twice")
    cells[cell.cell] = cell


def _k(cells: dict[str, CellCount]) -> int:
    return max((c.cluster for c in cells.values()), default=-1) + 1


def _nonempty(cells: dict[str, CellCount], source: str) -> dict[str, CellCount]:
    if not cells:
        raise CountsError(f"{source}: expected at least one cell, found none")
    return cells


# -- stores ----------------------------------------------------------------------------------------------------
def store_counts(reader: StoreReader, *, require_complete: bool = False) -> Counts:
    """Counts of a store from its ledgers (the exact counts; no Parquet opened), with the tokenizer and partition
    of its store.json. A store still building has only ledger counts, or raises CountsError with
    `require_complete`; a store.json that does not match its format raises CountsError naming the field."""
    if not reader.fs.exists(reader.root) or reader.fs.isfile(reader.root):
        raise CountsError(f"{reader.uri}: no such store (a folder holding store.json), and not a counts file "
                          f"({', '.join(COUNTS_SUFFIXES)})")
    info: StoreArtifact | None = None
    try:
        info = reader.store_info
    except StoreNotReady as exc:
        if require_complete:
            raise StoreStillBuilding(f"{exc}; wait for `mixture build` to finish") from None
    except FormatError as exc:
        raise CountsError(str(exc)) from None
    cells: dict[str, CellCount] = {}
    for row in cell_table(reader).itertuples():
        cells[row.cell] = CellCount(row.cell, int(row.cluster), int(row.quality), int(row.tokens), int(row.docs))
    if require_complete:
        _nonempty(cells, f"{reader.uri}/{layout.STORE_JSON}")
    if info is None:
        return Counts(cells, reader.uri, "store", store_uri=reader.uri, k=store_k(reader), reader=reader)
    p = info.partition
    return Counts(cells, reader.uri, "store", info.tokenizer, reader.uri, None, p.k, p.quality_levels,
                  list(p.bucket_edges), reader)


def artifact_counts(art: StoreArtifact, source: str, kind: str = "store.json") -> Counts:
    """Counts from a store.json's `cells`."""
    cells: dict[str, CellCount] = {}
    for i, row in enumerate(art.cells):
        _add(cells, CellCount(row.cell, row.cluster, row.quality, row.tokens, row.docs), f"{source}: cells[{i}]")
    p = art.partition
    return Counts(cells, source, kind, art.tokenizer, None, None, p.k, p.quality_levels, list(p.bucket_edges))


# -- files -----------------------------------------------------------------------------------------------------
def counts_from_mix(data: dict[str, Any], source: str) -> Counts:
    """A Marin mix file's `available_tokens` {cNNqQ: tokens} (its tokenizer and store kept)."""
    avail = data.get("available_tokens")
    if not isinstance(avail, dict) or not avail:
        raise CountsError(f"{source}: expected `available_tokens` as a non-empty {{cNNqQ: int}} map, "
                          f"found {avail!r:.80}")
    cells = {str(n): cell_count(n, t, None, f"{source}: available_tokens.{n}") for n, t in avail.items()}
    return Counts(cells, source, "marin", data.get("tokenizer"), data.get("candidate_store_uri"), data, _k(cells))


def counts_from_records(records: Any, source: str, kind: str = "table") -> Counts:
    """A {cell: tokens} map, or records with `cell` (or `cluster` and `quality`), `tokens` and optionally `docs`."""
    cells: dict[str, CellCount] = {}
    if isinstance(records, dict):
        for name, tokens in records.items():
            _add(cells, cell_count(name, tokens, None, f"{source}: {name}"), source)
        return Counts(_nonempty(cells, source), source, kind, k=_k(cells))
    if not isinstance(records, list):
        raise CountsError(f"{source}: expected a counts table (records with cell,tokens[,docs]), a {{cell: tokens}} "
                          f"map, a mix file with available_tokens or a store.json, found {type(records).__name__}; "
                          f"{HOW_TO_WRITE}")
    for i, row in enumerate(records):
        where = f"{source}: record {i}"
        if not isinstance(row, dict):
            raise CountsError(f"{where}: expected an object with cell and tokens, found {row!r:.80}")
        _add(cells, _record(row, where), where)
    return Counts(_nonempty(cells, source), source, kind, k=_k(cells))


def _record(row: dict[str, Any], where: str) -> CellCount:
    name = row.get("cell")
    if name in (None, "") and row.get("cluster") not in (None, "") and row.get("quality") not in (None, ""):
        try:
            name = layout.cell_name(int(row["cluster"]), int(row["quality"]))
        except (TypeError, ValueError):
            raise CountsError(f"{where}: expected integer cluster and quality, found {row['cluster']!r}, "
                              f"{row['quality']!r}") from None
    if name in (None, "") or "tokens" not in row:
        raise CountsError(f"{where}: expected columns `cell` (cNNqQ, or `cluster` and `quality`) and `tokens`, "
                          f"found {', '.join(map(str, row))}; {HOW_TO_WRITE}")
    docs = row.get("docs")
    return cell_count(name, row["tokens"], None if docs in (None, "") else docs, where)


def counts_from_csv(text: str, source: str) -> Counts:
    """A CSV with a header `cell,tokens[,docs]` (or `cluster,quality,tokens[,docs]`), one row per cell."""
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "tokens" not in reader.fieldnames or not (
            "cell" in reader.fieldnames or {"cluster", "quality"} <= set(reader.fieldnames)):
        raise CountsError(f"{source}: expected a header with columns cell,tokens[,docs], found {reader.fieldnames}; "
                          f"{HOW_TO_WRITE}")
    cells: dict[str, CellCount] = {}
    for line, row in enumerate(reader, start=2):
        where = f"{source}: line {line}"
        values = dict(row)
        for key in ("tokens", "docs"):
            if values.get(key) not in (None, ""):
                try:
                    values[key] = float(values[key]) if "." in values[key] or "e" in values[key].lower() \
                        else int(values[key])
                except ValueError:
                    raise CountsError(f"{where}: expected a number for {key}, found {values[key]!r}") from None
        if values.get("cell") is not None:
            values["cell"] = values["cell"].strip()
        cell = _record(values, where)
        _add(cells, cell, where)
    return Counts(_nonempty(cells, source), source, "csv", k=_k(cells))


def counts_from_document(doc: Any, source: str) -> Counts:
    """Parsed JSON/YAML: a mix file, a store.json, or a counts table."""
    if isinstance(doc, dict) and "available_tokens" in doc:
        return counts_from_mix(doc, source)
    if isinstance(doc, dict) and doc.get("kind") == "mixture-plan":
        raise CountsError(f"{source}: a plan.json, not counts; `mixture plan --counts` reads the counts it was "
                          "planned with, or compare the store it names")
    if isinstance(doc, dict) and "cells" in doc and "counters" in doc:
        try:
            art = parse_store_artifact(doc, source)
        except FormatError as exc:
            raise CountsError(str(exc)) from None
        return artifact_counts(art, source)
    return counts_from_records(doc, source)


def read_text(path: str) -> bytes:
    fs, p = open_fs(path)
    try:
        with fs.open(p, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise CountsError(f"{path}: file not found") from None


def parse_document(raw: bytes, path: str) -> Any:
    """JSON (.json) or YAML; errors give the line and column."""
    try:
        return load_json(raw, path) if path.endswith(".json") else load_yaml(raw.decode("utf-8", "replace"))
    except FormatError as exc:  # not JSON: the line and column
        raise CountsError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise CountsError(f"{path}: invalid YAML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise CountsError(f"{path}: not UTF-8 text ({exc})") from None


def load_counts(source: str | StoreReader) -> Counts:
    """Counts from a store (StoreReader, path or URI) or a counts file: `.csv` (cell,tokens[,docs]), or `.json` /
    `.yaml` holding a mix file (available_tokens), a store.json, records or a {cell: tokens} map."""
    if isinstance(source, StoreReader):
        return store_counts(source)
    if source.endswith(COUNTS_SUFFIXES):
        raw = read_text(source)
        if source.endswith(".csv"):
            try:
                return counts_from_csv(raw.decode("utf-8-sig"), source)
            except UnicodeDecodeError as exc:
                raise CountsError(f"{source}: not UTF-8 text ({exc})") from None
        return counts_from_document(parse_document(raw, source), source)
    if "://" not in source and not os.path.exists(source):
        raise CountsError(f"{source}: no such store or counts file (a store folder, or {', '.join(COUNTS_SUFFIXES)})")
    return store_counts(StoreReader(source))
