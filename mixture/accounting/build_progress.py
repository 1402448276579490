"""Progress of a store that may still be building: its state, the build lock, stages from `_build/`, and rows and
tokens so far per cell and in the side files (from Parquet footers: a file still being written counts 0)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from typing import Literal, NamedTuple

import pandas as pd
import pyarrow.parquet as pq

from mixture.accounting.reader import StoreReader
from mixture.accounting.side_files import dropped_files, quarantine_files
from mixture.stages.registry import order_key
from mixture.store import drops, layout

StoreState = Literal["complete", "building", "missing"]


class Footer(NamedTuple):
    """What the footer of one Parquet file says so far."""

    rows: int
    tokens: int | None
    readable: bool


# (reader, store-relative path, size in bytes, tokens its ledger lists or None) -> Footer. Callers may pass a
# cached one (the explorer caches by path and size, so a file is read again only once it changed).
FooterReader = Callable[[StoreReader, str, int, int | None], Footer]


def store_status(reader: StoreReader) -> tuple[StoreState, str]:
    """('complete' | 'building' | 'missing', stamp); the stamp (size and mtime of store.json) changes when
    store.json is rewritten, and is empty unless complete."""
    if not reader.fs.exists(reader.root):
        return "missing", ""
    if not reader.is_complete:
        return "building", ""
    info = reader.fs.info(reader.path(layout.STORE_JSON))
    return "complete", f"{info.get('size')}:{info.get('mtime') or info.get('updated') or info.get('LastModified')}"


def lock_info(reader: StoreReader) -> dict | None:
    """The build lock `_build/LOCK` (who holds it, since when), None when no build runs."""
    if not reader.exists(layout.LOCK_FILE):
        return None
    raw = reader.fs.cat_file(reader.path(layout.LOCK_FILE))
    try:
        return json.loads(raw)
    except ValueError:
        return {"lock": raw.decode(errors="replace")}


def _run_folders(reader: StoreReader, d: str) -> list[tuple[str, str]]:
    """(name, folder) of what ran of stage folder `d`: the stage itself, or for a stage run in rounds each round
    (`<stage>/<round>`: its own executor.json and completions), numbered rounds first, then the others as they
    started (their executor.json's time)."""
    name = d.rstrip("/").rsplit("/", 1)[-1]
    if reader.fs.exists(f"{d}/executor.json") or reader.fs.exists(f"{d}/completions"):
        return [(name, d)]
    rounds = [p.rsplit("/", 1)[0] for p in reader.fs.glob(f"{d}/*/executor.json")]
    if not rounds:
        return [(name, d)]

    def started(r: str) -> tuple:
        last = r.rsplit("/", 1)[-1]
        numbered = re.fullmatch(r"r(\d+)", last)
        return (0, int(numbered.group(1)), 0.0) if numbered else (1, 0, reader.fs.modified(f"{r}/executor.json")
                                                                       .timestamp())
    return [(f"{name}/{r.rsplit('/', 1)[-1]}", r) for r in sorted(rounds, key=started)]


def stages(reader: StoreReader) -> pd.DataFrame:
    """One row per `_build/<stage>/` (per round of a stage run in rounds: `<stage>/<round>`): tasks (executor.json
    world_size), completed (completions/), status."""
    rows = []
    lock = reader.exists(layout.LOCK_FILE)
    for stage_dir in sorted(reader.fs.glob(reader.path(f"{layout.BUILD_DIR}/*")), key=order_key):  # pipeline order
        if stage_dir.rstrip("/").rsplit("/", 1)[-1] in ("work", "LOCK") or not reader.fs.isdir(stage_dir):
            continue
        for name, d in _run_folders(reader, stage_dir):
            done = len(reader.fs.glob(f"{d}/completions/*"))
            tasks = None
            if reader.fs.exists(f"{d}/executor.json"):
                try:
                    info = json.loads(reader.fs.cat_file(f"{d}/executor.json"))
                    tasks = info.get("world_size") or info.get("tasks")
                except (ValueError, OSError):
                    tasks = None
            if tasks and done >= int(tasks):
                status = "done"
            elif done or (lock and tasks):
                status = "running" if lock else "stopped"
            else:
                status = "waiting" if lock else "not started"
            rows.append({"stage": name, "tasks": tasks, "completed": done, "status": status})
    return pd.DataFrame(rows, columns=["stage", "tasks", "completed", "status"])


def read_footer(reader: StoreReader, rel: str, size: int, listed_tokens: int | None) -> Footer:
    """Rows from the file's footer; tokens from its ledger entry, else its n_tokens column."""
    try:
        with reader.fs.open(reader.path(rel), "rb") as f:
            pf = pq.ParquetFile(io.BytesIO(f.read()))
        rows = pf.metadata.num_rows
        if listed_tokens is not None:
            return Footer(rows, listed_tokens, True)
        tokens = int(pf.read(columns=["n_tokens"]).column(0).to_numpy().sum()) if rows else 0
        return Footer(rows, tokens, True)
    except Exception:  # noqa: BLE001 - a file still being written has no footer yet
        return Footer(0, None, False)


CELL_PROGRESS_COLUMNS = ["cluster", "quality", "files", "listed", "rows", "tokens", "unreadable"]


def cell_progress(reader: StoreReader, footer: FooterReader = read_footer) -> pd.DataFrame:
    """Per cell with Parquet files so far: files, listed (files its ledger lists), rows (footers), tokens (ledger,
    else the n_tokens column), unreadable (files without a footer yet)."""
    listed_tokens = {(cell_dir, s.path): s.tokens
                     for cell_dir, ledger in reader.ledger_models().items() for s in ledger.shards}
    rows = []
    for cell_dir, files in reader.cell_files().items():
        c, q = layout.parse_cell_path(cell_dir)
        for name, size in files.items():
            if not name.endswith(".parquet"):
                continue
            listed = listed_tokens.get((cell_dir, name))
            n, tokens, readable = footer(reader, f"{cell_dir}/{name}", size, listed)
            rows.append({"cluster": c, "quality": q, "path": f"{cell_dir}/{name}", "rows": n, "tokens": tokens or 0,
                         "listed": listed is not None, "unreadable": not readable})
    if not rows:
        return pd.DataFrame(columns=CELL_PROGRESS_COLUMNS)
    return pd.DataFrame(rows).groupby(["cluster", "quality"]).agg(
        files=("path", "count"), listed=("listed", "sum"), rows=("rows", "sum"), tokens=("tokens", "sum"),
        unreadable=("unreadable", "sum")).reset_index()


def side_counts(reader: StoreReader, footer: FooterReader = read_footer) -> dict[str, int]:
    """Rows so far per drop reason of mixture.store.drops, from footers: each `_dropped/<reason>/`, then the
    quarantined reason (`bad_input`, `_quarantine/`)."""
    by_reason = dropped_files(reader)
    quarantined = quarantine_files(reader)
    groups = {r.name: quarantined if r.quarantined else by_reason.get(r.name, [])
              for r in sorted(drops.REASONS, key=lambda r: r.quarantined)}
    return {label: sum(footer(reader, rel, reader.fs.size(reader.path(rel)), 0).rows for rel in rels)
            for label, rels in groups.items()}
