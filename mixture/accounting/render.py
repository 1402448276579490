"""Render accounting DataFrames as a rich table, CSV, JSON or Markdown (for pasting into an issue)."""

from __future__ import annotations

import io
import json
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa
from rich.console import Console
from rich.table import Table

from mixture.spec.amounts import humanize

Format = Literal["table", "csv", "json", "md"]
FORMATS = ("table", "csv", "json", "md")
_INT_COLS = {"tokens", "docs", "shards", "rows", "bytes"}


def exact_frame(table: pa.Table) -> pd.DataFrame:
    """Arrow -> pandas keeping integer sums exact: DuckDB's sum(BIGINT) is HUGEINT (decimal128(38, 0)), which
    pandas would turn into float64; such columns become int64 (or Python ints when out of range)."""
    cols = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_decimal(col.type) and col.type.scale == 0:
            values = [None if v is None else int(v) for v in col.to_pylist()]
            fits = all(v is None or -(2**63) <= v < 2**63 for v in values)
            cols[name] = pd.Series(values, dtype="Int64" if fits else object)
        else:
            cols[name] = col.to_pandas()
    return pd.DataFrame(cols, columns=table.column_names)


def _display(df: pd.DataFrame, total: bool) -> pd.DataFrame:
    """Human form: thousands separators, shares as percentages, a TOTAL row when asked."""
    out = df.copy()
    if total and "tokens" in out.columns and len(out):
        row: dict = {c: "" for c in out.columns}
        row[out.columns[0]] = "TOTAL"
        for c in ("tokens", "docs"):
            if c in out.columns:
                row[c] = int(out[c].sum())
        if "tokens_h" in out.columns:
            row["tokens_h"] = humanize(row["tokens"])
        if "share" in out.columns:
            row["share"] = float(out["share"].sum())
        if "mean_tokens_per_doc" in out.columns and row.get("docs"):
            row["mean_tokens_per_doc"] = row["tokens"] / row["docs"]
        out = pd.concat([out.astype(object), pd.DataFrame([row])], ignore_index=True)
    for c in out.columns:
        if c == "share" or c.endswith("_pct") or c == "pct":
            out[c] = [f"{v * 100:.2f}%" if isinstance(v, int | float | np.number) and not pd.isna(v) else ""
                      for v in out[c]]
        elif c in _INT_COLS or c.endswith(("_tokens", "_docs")) or c.startswith(("tokens_", "docs_")):
            out[c] = [f"{int(v):,}" if isinstance(v, int | float | np.number) and not pd.isna(v) else str(v or "")
                      for v in out[c]]
        elif c == "mean_tokens_per_doc":
            out[c] = [f"{v:,.1f}" if isinstance(v, int | float | np.number) and not pd.isna(v) else "" for v in out[c]]
    return out.fillna("").astype(str)


def to_markdown(df: pd.DataFrame, total: bool = True) -> str:
    d = _display(df, total)
    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]
    lines = ["| " + " | ".join(map(str, d.columns)) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(v.replace("|", "\\|") for v in row) + " |" for row in d.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def to_table(df: pd.DataFrame, title: str | None = None, total: bool = True) -> Table:
    d = _display(df, total)
    table = Table(title=title, show_lines=False)
    for c in df.columns:
        table.add_column(str(c), justify="right" if pd.api.types.is_numeric_dtype(df[c]) else "left")
    for i, row in enumerate(d.itertuples(index=False)):
        table.add_row(*row, style="bold" if total and i == len(d) - 1 and len(d) > len(df) else None)
    return table


def render(df: pd.DataFrame, fmt: str, title: str | None = None, total: bool = True) -> str:
    """The frame as text in `fmt` (table, csv, json, md). csv/json keep exact machine values."""
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(df.to_json(orient="records")), indent=1) + "\n"
    if fmt == "md":
        return (f"**{title}**\n\n" if title else "") + to_markdown(df, total)
    if fmt == "table":
        buf = io.StringIO()
        Console(file=buf, width=max(100, 14 * len(df.columns)), force_terminal=False).print(to_table(df, title, total))
        return buf.getvalue()
    raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
