"""What each `assign` task wrote, measured by the task itself: rows, tokens, bytes and xxh64 of its shards and its
documents and tokens per (cell, source) and per (cell, language). Finalize merges these small files instead of reading the whole store."""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash
from datatrove.pipeline.base import PipelineStep

from mixture.stages.registry import SHARD_FACTS, SHARDS
from mixture.store.io import write_json_atomic

CHUNK = 8 * 2**20
WHOLE_READ = 256 * 2**20  # shards up to this size are read in one request (one GET on an object store)


def file_digest(fs, path: str) -> str:
    h = xxhash.xxh64()
    with fs.open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def shard_facts(fs, path: str, size: int) -> dict:
    """{rows, tokens, bytes, xxh64} of a shard (rows from the footer, tokens from the `n_tokens` column)."""
    if size <= WHOLE_READ:
        data = fs.cat_file(path)
        pf = pq.ParquetFile(pa.BufferReader(data))
        size, digest = len(data), xxhash.xxh64_hexdigest(data)
        tokens = pf.read(columns=["n_tokens"]).column(0)
    else:
        with fs.open(path, "rb") as f:
            pf = pq.ParquetFile(f)
            tokens = pf.read(columns=["n_tokens"]).column(0)
        size, digest = fs.size(path), file_digest(fs, path)
    return {"rows": pf.metadata.num_rows, "tokens": int(pc.sum(tokens).as_py() or 0), "bytes": size, "xxh64": digest}


def task_facts(store: str, rank: int, cell_sources: dict[tuple[int, int, str], list[int]],
               written: dict[str, dict] | None, cell_languages: dict[tuple[int, int, str], list[int]]) -> dict:
    """Facts of every shard `part-<rank>` (and its rotations) in the store's cells, with the task's documents and
    tokens per (cluster, quality, source) and per (cluster, quality, language). `written`: facts the writer took as
    it wrote (by path in the store), used for the shards whose size on storage agrees; any other shard is read."""
    fs, root = fsspec.core.url_to_fs(store)
    root = root.rstrip("/")
    fs.invalidate_cache(root)
    if written is not None:  # the task's own shards, as its writer named them (ClearTaskFiles removed any
        # of an earlier attempt): listing every cell folder instead cost each task a look at every task's shards
        found = {}
        for path in (f"{root}/{rel}" for rel in written):
            with contextlib.suppress(FileNotFoundError):
                found[path] = fs.info(path)
    else:
        found = fs.glob(SHARDS.path(root, rank), detail=True)
    shards = []
    for p in sorted(found):
        rel, size = p[len(root) + 1 :], int(found[p].get("size") or 0)
        known = (written or {}).get(rel)
        shards.append({"path": rel, "task": rank, **(known if known and known["bytes"] == size else
                                                      shard_facts(fs, p, size))})
    return {"rank": rank, "shards": shards,
            "cell_sources": [[c, q, s, n, t] for (c, q, s), (n, t) in sorted(cell_sources.items())],
            "cell_languages": [[c, q, lang, n, t] for (c, q, lang), (n, t) in sorted(cell_languages.items())]}


class ShardFacts(PipelineStep):
    """Last step of `assign`: counts the documents the store writer passes on per (cell, source); once the writer
    has closed the task's shards, takes their facts (from the writer, which measured what it wrote, or by reading
    them); writes both to SHARD_FACTS in `folder`."""

    type = "📏 - MEASURE"
    name = "shard facts"

    def __init__(self, store: str, folder: str, writer=None):
        super().__init__()
        self.store, self.folder, self.writer = store, folder, writer  # writer: a measuring BoundedParquetWriter

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        cell_sources: dict[tuple[int, int, str], list[int]] = defaultdict(lambda: [0, 0])
        cell_languages: dict[tuple[int, int, str], list[int]] = defaultdict(lambda: [0, 0])
        for doc in data or ():  # draining the writer's generator makes it close every file
            m = doc.metadata
            for counts in (cell_sources[(m["cluster"], m["quality"], m["source"])],
                           cell_languages[(m["cluster"], m["quality"], m["language"])]):
                counts[0] += 1
                counts[1] += m["n_tokens"]
        facts = task_facts(self.store, rank, cell_sources, getattr(self.writer, "facts", None), cell_languages)
        fs, root = fsspec.core.url_to_fs(self.folder)
        write_json_atomic(fs, SHARD_FACTS.path(root, rank), facts, indent=None)
        self.stat_update("shards", value=len(facts["shards"]))
        return
        yield


def read_task_facts(folder: str) -> list[dict]:
    fs, root = fsspec.core.url_to_fs(folder)
    out = []
    for p in sorted(fs.glob(SHARD_FACTS.every(root))):
        with fs.open(p) as f:
            out.append(json.load(f))
    return out
