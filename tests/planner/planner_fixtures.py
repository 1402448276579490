"""Helpers of the planner tests: a synthetic store in the docs/store.md format and a 200-cell Marin mix."""

from __future__ import annotations

from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixture.accounting.synthetic_artifact import cluster_entry, language_info, synthetic_artifact
from mixture.store import layout
from mixture.store.drops import REASONS
from mixture.store.formats import (
    CellEntry,
    Counters,
    Ledger,
    LedgerShard,
    PartitionInfo,
    SamplesInfo,
    SourceEntry,
    TokenizerRef,
    write_model,
)


def write_store(root: Path, cells: dict[tuple[int, int], list[int]], k: int = 3) -> Path:
    """A small complete store: one Parquet file, a ledger per cell and store.json (written last), through the
    store's models."""
    root.mkdir(parents=True, exist_ok=True)
    fs = fsspec.filesystem("file")
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
        shard = LedgerShard(path=path.name, task=0, rows=len(ids), tokens=int(sum(lengths)), bytes=len(data),
                            xxh64=xxhash.xxh64_hexdigest(data))
        write_model(fs, str(cdir / layout.LEDGER), Ledger.of(name, cluster, quality, [shard]))
        rows.append(CellEntry(cell=name, cluster=cluster, quality=quality, path=layout.cell_path(cluster, quality, k),
                              docs=len(ids), tokens=int(sum(lengths)), shards=1, sources={"synthetic": int(sum(lengths))}))
    docs, tokens = sum(r.docs for r in rows), sum(r.tokens for r in rows)
    artifact = synthetic_artifact(
        seed=0, tokenizer=TokenizerRef(kind="hub", name="synthetic:words", sha256=None),
        partition=PartitionInfo(k=k, fine_k=k, quality_levels=5, bucket_edges=[0.2, 0.4, 0.6, 0.8],
                                quality_names=list(layout.QUALITY_NAMES), min_share=0.0, max_share=1.0,
                                embedder="lexical"),
        clusters=[cluster_entry(c, f"cluster {c}", [], rows, summary="", confidence=0.0, confidence_tag="low")
                  for c in range(k)],
        cells=rows,
        sources=[SourceEntry(name="synthetic", category="web", license=None, format="jsonl", synthetic=False,
                             exempt_from_fuzzy_dedup=False, docs_in=docs, tokens_in=None, docs_kept=docs,
                             tokens_kept=tokens, **{r.counter: 0 for r in REASONS})],
        counters=Counters(records_in=docs, **{r.counter: 0 for r in REASONS}, records_out=docs, tokens_out=tokens),
        samples=SamplesInfo(uniform=layout.UNIFORM_SAMPLES, exemplars=layout.EXEMPLAR_SAMPLES, per_cell=0,
                            exemplars_per_cell=0),
        language=language_info((c, q, "und", n) for (c, q), lengths in cells.items() for n in lengths),
    )
    write_model(fs, str(root / layout.STORE_JSON), artifact)
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
