"""After the last stage: per-cell ledgers from what was written, merged samples, and store.json (last, atomic)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter, defaultdict

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

import mixture
from mixture.fit.model_store import load_model
from mixture.store import layout
from mixture.store.io import write_json_atomic
from pipelines.schemas import SAMPLE
from pipelines.stages import BuildContext

_TASK_RE = re.compile(r"part-(\d+)\.parquet$")
CHUNK = 8 * 2**20
WHOLE_READ = 256 * 2**20  # shards up to this size are read in one request for their ledger entry


def file_digest(fs, path: str) -> str:
    h = xxhash.xxh64()
    with fs.open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _read_columns(fs, paths: list[str], columns: list[str]) -> pa.Table | None:
    tables = []
    for p in paths:
        with fs.open(p, "rb") as f:
            tables.append(pq.read_table(f, columns=columns))
    return pa.concat_tables(tables) if tables else None


def _shard_facts(fs, path: str, size: int) -> tuple[int, int, int, str]:
    """(rows, Σ n_tokens, bytes, xxh64) of a shard; small ones in one read (one GET on an object store)."""
    if size <= WHOLE_READ:
        data = fs.cat_file(path)
        pf = pq.ParquetFile(pa.BufferReader(data))
        return pf.metadata.num_rows, _tokens(pf), len(data), xxhash.xxh64_hexdigest(data)
    with fs.open(path, "rb") as f:
        pf = pq.ParquetFile(f)
        rows, tokens = pf.metadata.num_rows, _tokens(pf)
    return rows, tokens, fs.size(path), file_digest(fs, path)


def _tokens(pf: pq.ParquetFile) -> int:
    return int(pa.compute.sum(pf.read(columns=["n_tokens"]).column(0)).as_py() or 0)


def write_ledgers(ctx: BuildContext, fs, root: str) -> list[dict]:
    """One `_ledger.json` per cell: rows (footer), tokens (n_tokens column), bytes and xxh64 of every shard."""
    by_cell: dict[str, list[str]] = defaultdict(list)
    found = fs.glob(f"{root}/cluster=*/quality=*/*.parquet", detail=True)
    for path in sorted(found):
        by_cell[path.rsplit("/", 1)[0]].append(path)
    k = ctx.spec.partition.clusters.k
    ledgers = []
    for cell_dir, paths in sorted(by_cell.items()):
        cluster, quality = layout.parse_cell_path(cell_dir)
        shards = []
        for p in paths:
            rows, tokens, size, digest = _shard_facts(fs, p, int(found[p].get("size") or 0))
            m = _TASK_RE.search(p)
            shards.append({"path": p.rsplit("/", 1)[1], "task": int(m.group(1)) if m else None, "rows": rows,
                           "tokens": tokens, "bytes": size, "xxh64": digest})
        ledger = {"format": 1, "cell": layout.cell_name(cluster, quality, k), "cluster": cluster, "quality": quality,
                  "shards": shards, "total_num_rows": sum(s["rows"] for s in shards),
                  "total_tokens": sum(s["tokens"] for s in shards), "is_finished": True}
        write_json_atomic(fs, f"{cell_dir}/{layout.LEDGER}", ledger)
        ledgers.append(ledger)
    return ledgers


def write_samples(ctx: BuildContext, fs, root: str) -> dict:
    paths = sorted(fs.glob(f"{root}/{layout.WORK_DIR}/samples/*.parquet"))
    table = _read_columns(fs, paths, None) if paths else pa.Table.from_pylist([], schema=SAMPLE.append(pa.field("key", pa.float64())))
    rows = table.to_pylist()
    n = {"uniform": ctx.spec.store.samples_per_cell, "exemplar": ctx.spec.store.exemplars_per_cell}
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["kind"], r["cluster"], r["quality"])].append(r)
    out: dict[str, list[dict]] = {"uniform": [], "exemplar": []}
    for (kind, _, _), items in sorted(groups.items()):
        items.sort(key=lambda r: (r["key"], r["id"]))
        for i, r in enumerate(items[: n[kind]]):
            r = {**r, "rank": i}
            r.pop("key")
            out[kind].append(r)
    for kind, rel in (("uniform", layout.UNIFORM_SAMPLES), ("exemplar", layout.EXEMPLAR_SAMPLES)):
        from pipelines.steps import write_parquet_rows

        write_parquet_rows(f"{ctx.store}/{rel}", out[kind], SAMPLE)
    return {"uniform": layout.UNIFORM_SAMPLES, "exemplars": layout.EXEMPLAR_SAMPLES,
            "per_cell": n["uniform"], "exemplars_per_cell": n["exemplar"]}


def spec_hash(ctx: BuildContext) -> str:
    """sha256 of the canonical spec without `execution` (where and how fast a build runs does not change the store)
    and without `mixture` (the planner's section does not change the store either)."""
    import hashlib

    content = ctx.spec.model_dump(mode="json", exclude={"execution", "mixture"})
    canon = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def finalize(ctx: BuildContext, spec_path: str) -> dict:
    fs, root = fsspec.core.url_to_fs(ctx.store)
    root = root.rstrip("/")
    fs.invalidate_cache()  # the stages' workers wrote everything below: no listing cached before may be reused
    ledgers = write_ledgers(ctx, fs, root)
    samples = write_samples(ctx, fs, root)
    model = load_model(ctx.at(layout.MODEL_DIR))
    spec, k = ctx.spec, ctx.spec.partition.clusters.k

    records_in: Counter = Counter()
    for p in sorted(fs.glob(f"{root}/{layout.WORK_DIR}/tally/*.json")):
        with fs.open(p) as f:
            records_in.update(json.load(f)["records"])

    def side_table(rel: str, columns: list[str]) -> pa.Table | None:
        return _read_columns(fs, sorted(fs.glob(f"{root}/{rel}/*.parquet")), columns)

    per_source: dict[str, Counter] = defaultdict(Counter)
    quarantine = side_table(layout.QUARANTINE_DIR, ["source", "reason"])
    bad_by_reason = Counter(quarantine.column("reason").to_pylist()) if quarantine else Counter()
    if quarantine:
        for s in quarantine.column("source").to_pylist():
            per_source[s]["bad_input"] += 1
    drop_counts, filtered_by_reason = {}, Counter()
    for reason in layout.DROP_REASONS:
        t = side_table(layout.dropped_dir(reason), ["source", "detail"])
        drop_counts[reason] = t.num_rows if t else 0
        if t:
            key = "filtered" if reason == "filtered" else f"{reason}_dropped"
            for s in t.column("source").to_pylist():
                per_source[s][key] += 1
            if reason == "filtered":
                filtered_by_reason.update(t.column("detail").to_pylist())
    kept = _read_columns(fs, sorted(fs.glob(f"{root}/cluster=*/quality=*/*.parquet")), ["source", "n_tokens", "cluster", "quality"])
    kept_docs: Counter = Counter()
    kept_tokens: Counter = Counter()
    cell_sources: dict[tuple[int, int], Counter] = defaultdict(Counter)
    if kept:
        cols = [kept.column(c).to_pylist() for c in ("source", "n_tokens", "cluster", "quality")]
        for s, t, cl, ql in zip(*cols, strict=True):
            kept_docs[s] += 1
            kept_tokens[s] += t
            cell_sources[(cl, ql)][s] += t

    cells = [{"cell": lg["cell"], "cluster": lg["cluster"], "quality": lg["quality"],
              "path": layout.cell_path(lg["cluster"], lg["quality"], k), "docs": lg["total_num_rows"],
              "tokens": lg["total_tokens"], "shards": len(lg["shards"]),
              "sources": dict(sorted(cell_sources[(lg["cluster"], lg["quality"])].items()))} for lg in ledgers]
    present = {c["cell"] for c in cells}
    levels = spec.partition.quality.levels
    empty = [layout.cell_name(c, q, k) for c in range(k) for q in range(levels) if layout.cell_name(c, q, k) not in present]
    cl_docs, cl_tokens = Counter(), Counter()
    for c in cells:
        cl_docs[c["cluster"]] += c["docs"]
        cl_tokens[c["cluster"]] += c["tokens"]
    clusters = [{**lab, "docs": cl_docs[lab["id"]], "tokens": cl_tokens[lab["id"]]} for lab in model.labels]
    sources = []
    for s in spec.sources:
        ps = per_source[s.name]
        sources.append({"name": s.name, "category": s.category, "license": s.license, "format": s.format,
                        "synthetic": s.synthetic, "exempt_from_fuzzy_dedup": s.exempt_from_fuzzy_dedup,
                        "docs_in": records_in[s.name], "tokens_in": None, "docs_kept": kept_docs[s.name],
                        "tokens_kept": kept_tokens[s.name], "bad_input": ps["bad_input"], "filtered": ps["filtered"],
                        "exact_duplicate_dropped": ps["exact_duplicate_dropped"],
                        "fuzzy_duplicate_dropped": ps["fuzzy_duplicate_dropped"],
                        "contaminated_dropped": ps["contaminated_dropped"]})
    counters = {
        "records_in": sum(records_in.values()),
        "bad_input": quarantine.num_rows if quarantine else 0,
        "filtered": drop_counts["filtered"],
        "exact_duplicate_dropped": drop_counts["exact_duplicate"],
        "fuzzy_duplicate_dropped": drop_counts["fuzzy_duplicate"],
        "contaminated_dropped": drop_counts["contaminated"],
        "records_out": sum(c["docs"] for c in cells),
        "tokens_out": sum(c["tokens"] for c in cells),
    }
    q = spec.partition.quality
    artifact = {
        "format_version": 1,
        "spec": {"name": spec.name, "hash": spec_hash(ctx), "path": spec_path},
        "code_version": mixture.__version__,
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tokenizer": spec.tokenizer,
        "seed": spec.seed,
        "partition": {"k": k, "fine_k": model.fit["fine_k"], "quality_levels": levels, "bucket_edges": list(q.edges),
                      "quality_names": list(layout.QUALITY_NAMES) if levels == 5 else [f"Q{i}" for i in range(levels)],
                      "min_share": spec.partition.clusters.min_share, "embedder": spec.partition.clusters.embedder},
        "raw_score_cutoffs": {ct: cal["raw_cutoffs"] for ct, cal in model.calibration.items()},
        "calibration_docs": {ct: cal["n"] for ct, cal in model.calibration.items()},
        "dedup": {"exact": spec.processing.dedup.exact.enabled, "fuzzy": spec.processing.dedup.fuzzy.model_dump(),
                  "fuzzy_threshold": round(spec.processing.dedup.fuzzy.threshold, 4)},
        "clusters": clusters,
        "cells": cells,
        "empty_cells": empty,
        "sources": sources,
        "counters": counters,
        "filtered_by_reason": dict(sorted(filtered_by_reason.items())),
        "bad_input_by_reason": dict(sorted(bad_by_reason.items())),
        "fit": model.fit,
        "samples": samples,
    }
    write_json_atomic(fs, f"{root}/{layout.STORE_JSON}", artifact)
    return artifact
