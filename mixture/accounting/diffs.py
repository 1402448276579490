"""`diff(a, b)`: per-cell token/doc deltas between two stores (or a store and a counts file), incompatibilities
for weight reuse, and the documents that entered or left each cell (by id)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb
import pandas as pd

from mixture.accounting.counts import COMPAT_FIELDS, Counts, load_counts
from mixture.accounting.reader import StoreReader
from mixture.accounting.tables import store_k
from mixture.spec.amounts import humanize
from mixture.store import layout


@dataclass
class DiffResult:
    a: str
    b: str
    cells: pd.DataFrame  # cell, status, tokens_a, tokens_b, delta, pct, docs_a, docs_b, docs_delta, entered, left,…
    total_a: int
    total_b: int
    added: list[str]
    removed: list[str]
    incompatibilities: list[str]
    summary: list[str]
    ids_compared: bool

    @property
    def changed(self) -> pd.DataFrame:
        return self.cells[(self.cells["delta"] != 0) | (self.cells["status"] != "kept")
                          | (self.cells.get("entered", 0) > 0) | (self.cells.get("left", 0) > 0)]

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "total_a": self.total_a, "total_b": self.total_b, "added": self.added,
                "removed": self.removed, "incompatibilities": self.incompatibilities, "summary": self.summary,
                "cells": json.loads(self.cells.to_json(orient="records"))}


def open_side(x: str | StoreReader | Counts) -> Counts:
    """A store (StoreReader or URI) or a counts file (.csv/.json/.yaml) as Counts."""
    return x if isinstance(x, Counts) else load_counts(x)


def _doc_moves(a: StoreReader, b: StoreReader, samples: int) -> pd.DataFrame:
    """Per cell: ids that entered (in b's cell, not in a's) and left (in a's cell, not in b's), with samples."""
    con = duckdb.connect()
    a.register(con)
    if b.protocol != a.protocol:
        b.register(con)
    k = store_k(b)
    for name, r in (("a_ids", a), ("b_ids", b)):
        files = r.shard_files()
        src = (f"read_parquet({r.parquet_list_sql(files)}, hive_partitioning=false)" if files else
               "(SELECT NULL::VARCHAR AS id, NULL::INT AS cluster, NULL::INT AS quality WHERE false)")
        con.execute(f"CREATE TEMP TABLE {name} AS SELECT id, cluster::INT AS cluster, quality::INT AS quality "
                    f"FROM {src}")
    out = []
    for kind, left, right in (("entered", "b_ids", "a_ids"), ("left", "a_ids", "b_ids")):
        rows = con.execute(
            f"SELECT cluster, quality, count(*)::BIGINT, list(id ORDER BY id)[1:{samples}] FROM "
            f"(SELECT id, cluster, quality FROM {left} EXCEPT ALL SELECT id, cluster, quality FROM {right}) "
            "GROUP BY cluster, quality").fetchall()
        out += [{"cell": layout.cell_name(c, q, k), "kind": kind, "n": n, "sample": s} for c, q, n, s in rows]
    return pd.DataFrame(out, columns=["cell", "kind", "n", "sample"])


def _pct(delta: float, base: float) -> float | None:
    return delta / base if base else None


def diff(a: str | StoreReader | Counts, b: str | StoreReader | Counts, *, ids: bool = True,
         samples: int = 3) -> DiffResult:
    """Compare two stores (or a store and a counts file); `ids` also lists documents entering/leaving cells."""
    ca, cb = open_side(a), open_side(b)
    df = ca.frame().merge(cb.frame(), on="cell", how="outer", suffixes=("_a", "_b"), indicator=True)
    df["status"] = df["_merge"].map({"both": "kept", "left_only": "removed", "right_only": "added"}).astype(str)
    df = df.drop(columns="_merge")
    for c in ("tokens_a", "tokens_b"):
        df[c] = df[c].fillna(0).astype("int64")
    df["delta"] = df["tokens_b"] - df["tokens_a"]
    df["pct"] = [_pct(d, t) for d, t in zip(df["delta"], df["tokens_a"], strict=True)]
    df["docs_a"] = pd.to_numeric(df["docs_a"], errors="coerce").astype("Int64")
    df["docs_b"] = pd.to_numeric(df["docs_b"], errors="coerce").astype("Int64")
    df.loc[df["status"] == "added", "docs_a"] = 0
    df.loc[df["status"] == "removed", "docs_b"] = 0
    df["docs_delta"] = df["docs_b"] - df["docs_a"]
    order = [layout.parse_cell(str(c)) for c in df["cell"]]
    df = df.assign(_o=order).sort_values("_o").drop(columns="_o").reset_index(drop=True)
    ids_compared = bool(ids and ca.reader is not None and cb.reader is not None)
    if ids_compared:
        moves = _doc_moves(ca.reader, cb.reader, samples)
        for kind in ("entered", "left"):
            m = moves[moves["kind"] == kind].set_index("cell")
            df[kind] = [int(m["n"].get(c, 0)) for c in df["cell"]]
            df[f"{kind}_sample"] = [list(m["sample"].get(c, [])) for c in df["cell"]]
    df = df[[c for c in ("cell", "status", "tokens_a", "tokens_b", "delta", "pct", "docs_a", "docs_b",
                         "docs_delta", "entered", "left", "entered_sample", "left_sample") if c in df.columns]]

    incompat = []
    for key in COMPAT_FIELDS:
        va, vb = ca.meta.get(key), cb.meta.get(key)
        if va is not None and vb is not None and va != vb:
            incompat.append(f"{key} changed: {va} → {vb} (weights fitted to {ca.name} cannot be reused as is)")
    added = df.loc[df["status"] == "added", "cell"].tolist()
    removed = df.loc[df["status"] == "removed", "cell"].tolist()
    total_a, total_b = int(df["tokens_a"].sum()), int(df["tokens_b"].sum())
    summary = [_headline(df, total_a, total_b)]
    if added:
        summary.append(f"cells added ({len(added)}): {', '.join(added)}")
    if removed:
        summary.append(f"cells removed ({len(removed)}): {', '.join(removed)}")
    if ids_compared:
        moved = df[(df["entered"] > 0) | (df["left"] > 0)]
        summary.append(f"documents: {int(df['entered'].sum()):,} entered and {int(df['left'].sum()):,} left "
                       f"across {len(moved)} cell(s)")
    summary += [f"INCOMPATIBLE: {x}" for x in incompat]
    return DiffResult(ca.name, cb.name, df, total_a, total_b, added, removed, incompat, summary, ids_compared)


def _headline(df: pd.DataFrame, total_a: int, total_b: int) -> str:
    kept = df[(df["status"] == "kept") & df["pct"].notna()]
    totals = f"{humanize(total_a, 3)} → {humanize(total_b, 3)} ({_signed_pct(_pct(total_b - total_a, total_a))})"
    gain = kept[kept["delta"] > 0].sort_values(["pct", "cell"], ascending=[False, True])
    loss = kept[kept["delta"] < 0].sort_values(["pct", "cell"], ascending=[True, True])
    parts = []
    if loss.empty:
        parts.append("every cell keeps or increases its token count" if not gain.empty or not kept.empty
                     else "no common cell")
    else:
        parts.append(f"{len(loss)} of {len(kept)} cells lose tokens")
    parts.append(totals)
    if not loss.empty:
        parts.append(f"largest loss {loss.iloc[0]['cell']} {_signed_pct(loss.iloc[0]['pct'], 1)}")
    if not gain.empty:
        parts.append(f"largest gain {gain.iloc[0]['cell']} {_signed_pct(gain.iloc[0]['pct'], 1)}")
    elif loss.empty:
        parts.append("no cell changes")
    return ", ".join(parts)


def _signed_pct(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "n/a"
    return f"{x * 100:+.{digits}f}%".replace("-", "−")
