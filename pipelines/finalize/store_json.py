"""After the last stage: per-cell ledgers from what was written, merged samples, and store.json (last, atomic)."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter, defaultdict

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import mixture
from mixture.fit.balance import cluster_balance
from mixture.fit.model_store import load_model
from mixture.pipelines.context import BuildContext
from mixture.pipelines.finalize.language_summary import language_info
from mixture.pipelines.finalize.shard_facts import read_task_facts, shard_facts
from mixture.pipelines.prepare import decontaminate
from mixture.pipelines.schemas import SAMPLE
from mixture.pipelines.sources.files import read_rows
from mixture.spec.canonical import canonical_spec
from mixture.stages import keys as stage_keys
from mixture.stages.registry import CELL_SAMPLES, SHARD_FACTS, TALLY
from mixture.store import drops, layout
from mixture.store.formats import (
    STORE_FORMAT_VERSION,
    BrokenFile,
    CellEntry,
    ClusterEntry,
    Counters,
    DecontaminationInfo,
    DedupInfo,
    Ledger,
    LedgerShard,
    NearDuplicateReport,
    PartitionInfo,
    Provenance,
    SamplesInfo,
    SourceEntry,
    SpecRef,
    StageRecord,
    StoreArtifact,
    read_model,
    write_model,
)
from mixture.store.io import write_parquet_atomic
from mixture.store.loss import loss_info
from mixture.store.row_groups import row_group_batches

_TASK_RE = re.compile(r"part-(\d+)\.parquet$")


def _value_counts(column: pa.Array) -> dict:
    return {d["values"]: d["counts"] for d in column.value_counts().to_pylist()}


def _count_rows(fs, paths: list[str], columns: list[str]) -> tuple[int, Counter, Counter]:
    """Rows of `paths`, and the counts of their first column's and second column's values (empty without one),
    read a batch at a time: memory does not grow with the number of rows (drop files grow with the corpus). A
    `detail` column is counted by what precedes its first `: ` (a gate's detail is `<gate>: <measured value>`)."""
    rows, first, second = 0, Counter(), Counter()
    for p in paths:
        with fs.open(p, "rb") as f:
            for batch in row_group_batches(pq.ParquetFile(f), 65_536, columns):
                rows += batch.num_rows
                first.update(_value_counts(batch.column(0)))
                if len(columns) > 1:
                    column = batch.column(1)
                    if columns[1] == "detail":
                        column = pc.list_element(pc.split_pattern(column, ": ", max_splits=1), 0)
                    second.update(_value_counts(column))
    return rows, first, second


def write_ledgers(ctx: BuildContext, fs, root: str, facts: list[dict]) -> tuple[list[Ledger], dict]:
    """One `_ledger.json` per cell: rows, tokens, bytes and xxh64 of every shard, as measured by the assign task
    that wrote it (a shard its task did not measure is measured here; facts that no longer match the store stop
    finalize). Also returns
    {(cluster, quality): Counter(source → tokens)} and Counters of kept documents and tokens per source."""
    known = {f"{root}/{s['path']}": s for t in facts for s in t["shards"]}
    cell_sources: dict[tuple[int, int], Counter] = defaultdict(Counter)
    cell_languages: Counter = Counter()  # (cluster, quality, language, "docs" | "tokens") → count
    kept_docs: Counter = Counter()
    kept_tokens: Counter = Counter()
    found = fs.glob(f"{root}/cluster=*/quality=*/*.parquet", detail=True)
    stale = [p for p in known if p not in found]  # measured by a task, gone since
    for t in facts:
        for cluster, quality, source, docs, tokens in t["cell_sources"]:
            cell_sources[(cluster, quality)][source] += tokens
            kept_docs[source] += docs
            kept_tokens[source] += tokens
        for cluster, quality, language, docs, tokens in t["cell_languages"]:
            cell_languages[(cluster, quality, language, "docs")] += docs
            cell_languages[(cluster, quality, language, "tokens")] += tokens
    by_cell: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(found):
        size = int(found[path].get("size") or 0)
        shard = known.get(path)
        if shard is not None and shard["bytes"] != size:
            stale.append(path)
        if shard is None:  # not measured by its task: measure it here
            m = _TASK_RE.search(path)
            shard = {"path": path[len(root) + 1 :], "task": int(m.group(1)) if m else None,
                     **shard_facts(fs, path, size)}
            cl, ql = layout.parse_cell_path(path)
            with fs.open(path, "rb") as f:
                table = pq.read_table(f, columns=["source", "n_tokens", "language"])
            for src, n_tokens, language in zip(*(table.column(c).to_pylist() for c in ("source", "n_tokens", "language")),
                                               strict=True):
                cell_sources[(cl, ql)][src] += n_tokens
                kept_docs[src] += 1
                kept_tokens[src] += n_tokens
                cell_languages[(cl, ql, language, "docs")] += 1
                cell_languages[(cl, ql, language, "tokens")] += n_tokens
        by_cell[path.rsplit("/", 1)[0]].append({**shard, "path": path.rsplit("/", 1)[1]})
    if stale:  # facts of a shard that is gone or was rewritten: the counts above would be off
        raise OSError(f"shard facts disagree with the store for {len(stale)} shard(s), e.g. {stale[0]}; "
                      f"delete {ctx.at(SHARD_FACTS.folder)} and rerun to measure them again")
    k = ctx.spec.partition.clusters.k
    ledgers = []
    for cell_dir, shards in sorted(by_cell.items()):
        cluster, quality = layout.parse_cell_path(cell_dir)
        ledger = Ledger.of(layout.cell_name(cluster, quality, k), cluster, quality,
                           [LedgerShard.model_validate(s) for s in shards])
        write_model(fs, f"{cell_dir}/{layout.LEDGER}", ledger)
        ledgers.append(ledger)
    return ledgers, {"cell_sources": cell_sources, "docs": kept_docs, "tokens": kept_tokens,
                     "cell_languages": cell_languages}


def write_samples(ctx: BuildContext, fs, root: str) -> dict:
    """The store's sample files: per cell the first `samples_per_cell` uniform draws and `exemplars_per_cell`
    exemplars over every assign task's candidates, chosen on the key columns; only the chosen rows' text is read."""
    n = {"uniform": ctx.spec.store.samples_per_cell, "exemplar": ctx.spec.store.exemplars_per_cell}
    paths = sorted(fs.glob(CELL_SAMPLES.every(f"{root}/{CELL_SAMPLES.folder}")))
    keys = []
    for f, p in enumerate(paths):
        with fs.open(p, "rb") as fh:
            t = pq.read_table(fh, columns=["kind", "cluster", "quality", "key", "id"])
        keys.append(t.append_column("file", pa.array(np.full(t.num_rows, f, np.int32)))
                    .append_column("row", pa.array(np.arange(t.num_rows))))
    picked: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)  # (kind, file) → [(row, rank)]
    if keys:
        table = pa.concat_tables(keys).sort_by([(c, "ascending") for c in ("kind", "cluster", "quality", "key", "id")])
        last, rank = None, 0
        for kind, cl, ql, f, row in zip(*(table.column(c).to_pylist() for c in ("kind", "cluster", "quality", "file", "row")),
                                        strict=True):
            rank = rank + 1 if (kind, cl, ql) == last else 0
            last = (kind, cl, ql)
            if rank < n[kind]:
                picked[(kind, f)].append((row, rank))
    parts: dict[str, list[pa.Table]] = defaultdict(list)
    for f, p in enumerate(paths):  # each file once, only the row groups that hold picked rows
        chosen = {kind: picked[(kind, f)] for kind in n if (kind, f) in picked}
        if not chosen:
            continue
        rows = np.array(sorted({r for kept in chosen.values() for r, _ in kept}), dtype=np.int64)
        with fs.open(p, "rb") as fh:
            # one thread, and the pool's freed memory returned after each file: decoding every task's candidates
            # (their whole row groups, text included) otherwise left the driver's memory growing with the tasks
            table = read_rows(pq.ParquetFile(fh), rows, use_threads=False)
        for kind, kept in chosen.items():
            t = table.take(np.searchsorted(rows, [r for r, _ in kept]))
            parts[kind].append(t.set_column(t.schema.get_field_index("rank"), "rank",
                                            pa.array([k for _, k in kept], pa.int32())).drop_columns(["key"]))
        del table
        pa.default_memory_pool().release_unused()
    for kind, rel in (("uniform", layout.UNIFORM_SAMPLES), ("exemplar", layout.EXEMPLAR_SAMPLES)):
        out = pa.concat_tables(parts[kind]).cast(SAMPLE) if parts[kind] else SAMPLE.empty_table()
        write_parquet_atomic(f"{ctx.store}/{rel}", out.sort_by([("cluster", "ascending"), ("quality", "ascending"),
                                                                ("rank", "ascending")]))
    return {"uniform": layout.UNIFORM_SAMPLES, "exemplars": layout.EXEMPLAR_SAMPLES,
            "per_cell": n["uniform"], "exemplars_per_cell": n["exemplar"]}


def spec_hash(ctx: BuildContext) -> str:
    """sha256 of the canonical spec (mixture/spec/canonical.py): without execution, mixture,
    store.uri and processing.max_loss, relative paths resolved."""
    return stage_keys.spec_hash(canonical_spec(ctx.refs))


def provenance(ctx: BuildContext, records: list[StageRecord], records_in: Counter) -> Provenance:
    """store.json `provenance`: the canonical spec, the input manifest with the records read from each source, and
    the stages' keys."""
    inputs = ctx.inputs()
    sources = [s.model_copy(update={"records": records_in[s.name]}) for s in inputs.sources]
    return Provenance(keys_version=stage_keys.KEYS_VERSION, code_version=stage_keys.code_version(),
                      spec=canonical_spec(ctx.refs),
                      inputs=inputs.model_copy(update={"sources": sources}), stages=stage_keys.stage_keys(records))


def decontamination_report(ctx: BuildContext) -> DecontaminationInfo | None:
    """store.json's decontamination block; None when the build did not decontaminate."""
    dc = ctx.spec.processing.decontamination
    if not (dc.enabled and dc.benchmarks):
        return None
    return decontaminate.report(decontaminate.settings(dc, ctx.benchmarks()), ctx.store)


def finalize(ctx: BuildContext, spec_path: str, records: list[StageRecord]) -> StoreArtifact:
    """Ledgers, samples and store.json (last); `records`: the keys of the stages the build ran (or kept)."""
    fs, root = fsspec.core.url_to_fs(ctx.store)
    root = root.rstrip("/")
    fs.invalidate_cache()  # the stages' workers wrote everything below: no listing cached before may be reused
    ledgers, kept = write_ledgers(ctx, fs, root, read_task_facts(ctx.at(SHARD_FACTS.folder)))
    samples = write_samples(ctx, fs, root)
    model = load_model(ctx.at(layout.MODEL_DIR))
    spec, k = ctx.spec, ctx.spec.partition.clusters.k

    records_in: Counter = Counter()
    broken: dict[str, list[BrokenFile]] = defaultdict(list)  # per source, its files not read to their end
    for p in sorted(fs.glob(TALLY.every(f"{root}/{TALLY.folder}"))):
        with fs.open(p) as f:
            tally = json.load(f)
        records_in.update(tally["records"])
        for b in tally.get("broken_files", []):
            broken[b.pop("source")].append(BrokenFile.model_validate(b))

    per_source: dict[str, Counter] = defaultdict(Counter)
    drop_counts: dict[str, int] = {}
    breakdowns: dict[str, Counter] = {}
    for reason in drops.REASONS:  # the rows of every drop reason, counted per source and by its breakdown column
        columns = ["source", *([reason.breakdown[0]] if reason.breakdown else [])]
        rows, by_source, by_column = _count_rows(fs, sorted(fs.glob(f"{root}/{reason.folder}/*.parquet")), columns)
        drop_counts[reason.counter] = rows
        for s, n in by_source.items():
            per_source[s][reason.counter] += n
        if reason.breakdown:
            breakdowns[reason.breakdown[1]] = by_column
    kept_docs, kept_tokens, cell_sources = kept["docs"], kept["tokens"], kept["cell_sources"]

    cells = [CellEntry(cell=lg.cell, cluster=lg.cluster, quality=lg.quality,
                       path=layout.cell_path(lg.cluster, lg.quality, k), docs=lg.total_num_rows,
                       tokens=lg.total_tokens, shards=len(lg.shards),
                       sources=dict(sorted(cell_sources[(lg.cluster, lg.quality)].items()))) for lg in ledgers]
    present = {c.cell for c in cells}
    levels = spec.partition.quality.levels
    empty = [layout.cell_name(c, q, k) for c in range(k) for q in range(levels) if layout.cell_name(c, q, k) not in present]
    cl_docs, cl_tokens = Counter(), Counter()
    for c in cells:
        cl_docs[c.cluster] += c.docs
        cl_tokens[c.cluster] += c.tokens
    clusters = [ClusterEntry(**lab.model_dump(), docs=cl_docs[lab.id], tokens=cl_tokens[lab.id]) for lab in model.labels]
    sources = []
    for s in spec.sources:
        ps = per_source[s.name]
        sources.append(SourceEntry(name=s.name, category=s.category, license=s.license, format=s.format,
                                   synthetic=s.synthetic, exempt_from_fuzzy_dedup=s.exempt_from_fuzzy_dedup,
                                   docs_in=records_in[s.name], tokens_in=None, docs_kept=kept_docs[s.name],
                                   tokens_kept=kept_tokens[s.name], **{r.counter: ps[r.counter] for r in drops.REASONS}))
    counters = Counters(records_in=sum(records_in.values()), **drop_counts,
                        records_out=sum(c.docs for c in cells), tokens_out=sum(c.tokens for c in cells))
    q = spec.partition.quality
    artifact = StoreArtifact(
        format_version=STORE_FORMAT_VERSION,
        spec=SpecRef(name=spec.name, hash=spec_hash(ctx), path=spec_path),
        code_version=mixture.__version__,
        created=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        tokenizer=spec.tokenizer,
        tokenizer_ref=ctx.refs.tokenizer,
        seed=spec.seed,
        partition=PartitionInfo(
            k=k, fine_k=model.fit.fine_k, quality_levels=levels, bucket_edges=list(q.edges),
            quality_names=layout.bucket_names(levels),
            min_share=spec.partition.clusters.min_share, embedder=spec.partition.clusters.embedder,
            max_share=spec.partition.clusters.max_token_share),
        raw_score_cutoffs={ct: cal.raw_cutoffs for ct, cal in model.calibration.items()},
        calibration_docs={ct: cal.n for ct, cal in model.calibration.items()},
        dedup=DedupInfo(exact=spec.processing.dedup.exact.enabled, fuzzy=spec.processing.dedup.fuzzy.model_dump(),
                        fuzzy_threshold=round(spec.processing.dedup.fuzzy.lsh_threshold, 4)),
        clusters=clusters,
        cells=cells,
        empty_cells=empty,
        sources=sources,
        counters=counters,
        **{key: dict(sorted(counts.items())) for key, counts in breakdowns.items()},
        fit=model.fit,
        cluster_balance=cluster_balance(clusters, spec.partition.clusters.min_share,
                                        spec.partition.clusters.max_token_share),
        samples=SamplesInfo(**samples),
        language=language_info(spec, model, kept["cell_languages"]),
        loss=loss_info(sources, {name: sorted(files, key=lambda b: b.file) for name, files in broken.items()},
                       spec.processing.max_loss),
        decontamination=decontamination_report(ctx),
        near_duplicates=read_model(NearDuplicateReport, ctx.near_duplicates_report)
        if ctx.near_duplicates_report else None,
        provenance=provenance(ctx, records, records_in),
    )
    write_model(fs, f"{root}/{layout.STORE_JSON}", artifact)
    return artifact
