"""Helpers of the planner tests: a synthetic store in the docs/store.md format and a 200-cell Marin mix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixture.store import layout


def write_store(root: Path, cells: dict[tuple[int, int], list[int]], k: int = 3) -> Path:
    """A small complete store: one Parquet file, a ledger per cell and store.json (written last)."""
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for (cluster, quality), lengths in cells.items():
        name = layout.cell_name(cluster, quality, k)
        cdir = root / layout.cell_path(cluster, quality, k)
        cdir.mkdir(parents=True, exist_ok=True)
        ids = [f"src/{name}/{i:04d}" for i in range(len(lengths))]
        texts = [" ".join(f"w{cluster}{quality}{i}x{j}" for j in range(n)) for i, n in enumerate(lengths)]
        table = pa.table({
            "id": pa.array(ids, pa.string()),
            "text": pa.array(texts, pa.string()),
            "source": pa.array(["synthetic"] * len(ids), pa.string()),
            "n_tokens": pa.array(lengths, pa.int64()),
            "n_chars": pa.array([len(t) for t in texts], pa.int64()),
            "cluster": pa.array([cluster] * len(ids), pa.int16()),
            "quality": pa.array([quality] * len(ids), pa.int8()),
        })
        path = cdir / "part-00000.parquet"
        pq.write_table(table, path)
        data = path.read_bytes()
        ledger = {"format": 1, "cell": name, "cluster": cluster, "quality": quality,
                  "shards": [{"path": path.name, "task": 0, "rows": len(ids), "tokens": int(sum(lengths)),
                              "bytes": len(data), "xxh64": xxhash.xxh64_hexdigest(data)}],
                  "total_num_rows": len(ids), "total_tokens": int(sum(lengths)), "is_finished": True}
        (cdir / layout.LEDGER).write_text(json.dumps(ledger))
        rows.append({"cell": name, "cluster": cluster, "quality": quality, "path": layout.cell_path(cluster, quality, k),
                     "docs": len(ids), "tokens": int(sum(lengths)), "shards": 1})
    artifact = {"format_version": 1, "spec": {"name": "synthetic"}, "tokenizer": "synthetic:words",
                "partition": {"k": k, "quality_levels": 5}, "cells": rows,
                "counters": {"tokens_out": sum(r["tokens"] for r in rows)}}
    (root / layout.STORE_JSON).write_text(json.dumps(artifact))
    return root


def marin_mix(n_clusters: int = 40, levels: int = 5, seed: int = 0) -> dict:
    """A Marin-format mix with 200 cells: available tokens, two phase weight maps summing to 1, 18.75T."""
    rng = np.random.default_rng(seed)
    cells = [f"c{c:02d}q{q}" for c in range(n_clusters) for q in range(levels)]
    avail = {c: int(x) for c, x in zip(cells, rng.integers(3_000_000, 400_000_000_000, len(cells)), strict=True)}
    total = sum(avail.values())

    def weights(temp: float) -> dict[str, float]:
        x = np.array([avail[c] for c in cells], dtype=float) ** temp
        x /= x.sum()
        return dict(zip(cells, map(float, x), strict=True))

    return {
        "available_tokens": avail,
        "phase0_weights": weights(1.0),
        "phase1_weights": weights(0.6),
        "phase_budgets": [15e12, 3.75e12],
        "tokenizer": "meta-llama/Meta-Llama-3.1-8B",
        "candidate_store_uri": "gs://bucket/store-v1",
        "notes": {"total": total, "origin": "written by the test"},
    }
