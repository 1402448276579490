"""Progress of a store that is still building: stages from `_build/`, per-cell rows and tokens from footers."""

from __future__ import annotations

import io
import json

import pandas as pd
import pyarrow.parquet as pq
import streamlit as st
from mixture.pipelines.stage_registry import order_key

from mixture.accounting import StoreReader
from mixture.store import layout


def stages(r: StoreReader) -> pd.DataFrame:
    """One row per `_build/<stage>/`: tasks (executor.json world_size), completed (completions/), status."""
    rows = []
    lock = r.exists(layout.LOCK_FILE)
    for d in sorted(r.fs.glob(r.path(f"{layout.BUILD_DIR}/*")), key=order_key):
        name = d.rstrip("/").rsplit("/", 1)[-1]
        if name in ("work", "LOCK") or not r.fs.isdir(d):
            continue
        done = len(r.fs.glob(f"{d}/completions/*"))
        tasks = None
        if r.fs.exists(f"{d}/executor.json"):
            try:
                info = json.loads(r.fs.cat_file(f"{d}/executor.json"))
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


def lock_info(r: StoreReader) -> dict | None:
    if not r.exists(layout.LOCK_FILE):
        return None
    raw = r.fs.cat_file(r.path(layout.LOCK_FILE))
    try:
        return json.loads(raw)
    except ValueError:
        return {"lock": raw.decode(errors="replace")}


@st.cache_data(show_spinner=False, max_entries=20000)
def _footer(uri: str, path: str, size: int, listed_tokens: int | None) -> tuple[int, int | None, bool]:
    """(rows, tokens, readable) of one Parquet file; tokens from its ledger entry, else its n_tokens column."""
    r = StoreReader(uri)
    try:
        with r.fs.open(path, "rb") as f:
            data = f.read()
        pf = pq.ParquetFile(io.BytesIO(data))
        rows = pf.metadata.num_rows
        if listed_tokens is not None:
            return rows, listed_tokens, True
        tokens = int(pf.read(columns=["n_tokens"]).column(0).to_numpy().sum()) if rows else 0
        return rows, tokens, True
    except Exception:  # a file still being written has no footer yet
        return 0, None, False


def cells(uri: str) -> pd.DataFrame:
    """Per cell: files, rows (footers), tokens (ledger, else the n_tokens column), files listed in the ledger."""
    r = StoreReader(uri)
    rows = []
    for p in r.fs.glob(r.path("cluster=*/quality=*/*.parquet")):
        c, q = layout.parse_cell_path(p)
        rows.append({"cluster": c, "quality": q, "path": p, "size": r.fs.size(p)})
    if not rows:
        return pd.DataFrame(columns=["cluster", "quality", "files", "listed", "rows", "tokens", "unreadable"])
    ledgers = {}
    for led in r.ledgers():
        for s in led.get("shards", []):
            ledgers[(int(led["cluster"]), int(led["quality"]), s["path"])] = int(s.get("tokens", 0))
    out = []
    for f in rows:
        listed = ledgers.get((f["cluster"], f["quality"], f["path"].rsplit("/", 1)[-1]))
        n, tok, ok = _footer(uri, f["path"], f["size"], listed)
        out.append({**f, "rows": n, "tokens": tok or 0, "listed": listed is not None, "unreadable": not ok})
    df = pd.DataFrame(out)
    return df.groupby(["cluster", "quality"]).agg(
        files=("path", "count"), listed=("listed", "sum"), rows=("rows", "sum"), tokens=("tokens", "sum"),
        unreadable=("unreadable", "sum")).reset_index()


def side_counts(uri: str) -> dict[str, int]:
    """Rows so far in `_dropped/<reason>/` and `_quarantine/`, from Parquet footers."""
    r = StoreReader(uri)
    out = {}
    for label, pattern in [(reason, f"{layout.dropped_dir(reason)}/*.parquet") for reason in layout.DROP_REASONS] + [
            ("bad_input", f"{layout.QUARANTINE_DIR}/*.parquet")]:
        n = 0
        for p in r.fs.glob(r.path(pattern)):
            n += _footer(uri, p, r.fs.size(p), 0)[0]
        out[label] = n
    return out
