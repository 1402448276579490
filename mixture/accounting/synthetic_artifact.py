"""store.json of a synthetic store (tests and benchmarks): every block a build writes, those a build derives from
the cells, clusters and sources (spec hash, provenance, loss, cluster balance, empty cells) derived the same way."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from mixture.fit.balance import cluster_balance
from mixture.stages import keys as stage_keys
from mixture.store import layout
from mixture.store.formats import (
    STORE_FORMAT_VERSION,
    CellEntry,
    ClusterEntry,
    ClusterLanguageCount,
    DedupInfo,
    FitInfo,
    InputManifest,
    LanguageCount,
    LanguageInfo,
    PartitionInfo,
    Provenance,
    QualityLanguageCount,
    SamplesInfo,
    SourceInputs,
    SpecRef,
    StoreArtifact,
    TokenizerRef,
)
from mixture.store.loss import loss_info

MAX_LOSS = 0.01  # the spec's default processing.max_loss


def language_info(rows: Iterable[tuple[int, int, str, int]], calibration_groups: Sequence = ()) -> LanguageInfo:
    """The `language` block of documents given as (cluster, quality, language, tokens), as the assign tasks count
    them: per language, per (cluster, language) and per (quality, language), most tokens first."""
    counts: Counter = Counter()
    for cluster, quality, language, tokens in rows:
        for key in (None, ("cluster", cluster), ("quality", quality)):
            counts[(key, language, "docs")] += 1
            counts[(key, language, "tokens")] += tokens

    def of(kind: str | None) -> list[tuple[Any, str, int, int]]:
        keys = {(key, lang) for key, lang, _ in counts if (key[0] if key else None) == kind}
        out = [(key[1] if key else None, lang, counts[(key, lang, "docs")], counts[(key, lang, "tokens")])
               for key, lang in keys]
        return sorted(out, key=lambda r: (r[0] if r[0] is not None else -1, -r[3], r[1]))

    return LanguageInfo(
        model="cld2", min_score=0.5, per_language=bool(calibration_groups), group_min_docs=50,
        languages=[LanguageCount(language=lang, docs=d, tokens=t) for _, lang, d, t in of(None)],
        by_cluster=[ClusterLanguageCount(cluster=c, language=lang, docs=d, tokens=t) for c, lang, d, t in of("cluster")],
        by_quality=[QualityLanguageCount(quality=q, language=lang, docs=d, tokens=t) for q, lang, d, t in of("quality")],
        calibration_groups=list(calibration_groups))


def cluster_entry(cluster: int, label: str, top_terms: list[str], cells: Sequence[CellEntry], **fields: Any) -> ClusterEntry:
    """A cluster with its totals over `cells` and its sample shares taken as its shares of the cells' documents and
    tokens (`fields`: confidence, confidence_tag, summary, …)."""
    mine = [c for c in cells if c.cluster == cluster]
    docs, tokens = sum(c.docs for c in mine), sum(c.tokens for c in mine)
    all_docs, all_tokens = max(1, sum(c.docs for c in cells)), max(1, sum(c.tokens for c in cells))
    return ClusterEntry(**{"id": cluster, "label": label, "top_terms": top_terms, "summary": " · ".join(top_terms),
                           "confidence": 0.5, "confidence_tag": "medium", "sample_share": docs / all_docs,
                           "sample_token_share": round(tokens / all_tokens, 6), "docs": docs, "tokens": tokens,
                           **fields})


def provenance(seed: int, tokenizer: str, partition: PartitionInfo, samples: SamplesInfo, sources: Sequence) -> Provenance:
    """A provenance `mixture audit` recomputes: a canonical spec of the settings store.json repeats, each source
    listed with no file and the records it read (`sources[].docs_in`), and the stage keys of that spec."""
    spec = {"name": "synthetic", "seed": seed, "tokenizer": tokenizer,
            "sources": [{"name": s.name, "category": s.category, "format": s.format} for s in sources],
            "partition": {"clusters": {"k": partition.k, "fine_k": partition.fine_k, "min_share": partition.min_share,
                                       "max_share": partition.max_share, "embedder": partition.embedder},
                          "quality": {"levels": partition.quality_levels, "edges": list(partition.bucket_edges)}},
            "store": {"samples_per_cell": samples.per_cell, "exemplars_per_cell": samples.exemplars_per_cell}}
    inputs = InputManifest(sources=[SourceInputs(name=s.name, base=f"synthetic://{s.name}", files=[],
                                                 records=s.docs_in) for s in sources])
    stages = stage_keys.stage_keys(stage_keys.stage_records(spec, inputs, 1))
    return Provenance(keys_version=stage_keys.KEYS_VERSION, code_version=stage_keys.code_version(), spec=spec,
                      inputs=inputs, stages=stages)


def synthetic_artifact(*, seed: int, tokenizer: TokenizerRef, partition: PartitionInfo, clusters: list[ClusterEntry],
                       cells: list[CellEntry], sources: list, counters: Any, samples: SamplesInfo,
                       language: LanguageInfo, **fields: Any) -> StoreArtifact:
    """A complete store.json over the given cells, clusters, sources and counters: the spec hash, provenance, loss,
    cluster balance and empty cells derived from them as a build derives them, the fit and dedup blocks plain
    settings; `fields` set any other field (raw_score_cutoffs, filtered_by_reason, …) or override one."""
    prov = provenance(seed, tokenizer.spec_form, partition, samples, sources)
    k, levels = partition.k, partition.quality_levels
    present = {c.cell for c in cells}
    values: dict[str, Any] = {
        "format_version": STORE_FORMAT_VERSION,
        "spec": SpecRef(name="synthetic", hash=stage_keys.spec_hash(prov.spec), path=None),
        "code_version": "0.1.0", "created": "2026-01-01T00:00:00Z", "tokenizer": tokenizer.spec_form,
        "tokenizer_ref": tokenizer, "seed": seed,
        "partition": partition, "raw_score_cutoffs": {}, "calibration_docs": {},
        "dedup": DedupInfo(exact=True, fuzzy={"enabled": False}, fuzzy_threshold=0.8),
        "clusters": clusters, "cells": cells,
        "empty_cells": [n for c in range(k) for q in range(levels) if (n := layout.cell_name(c, q, k)) not in present],
        "sources": sources, "counters": counters, "filtered_by_reason": {}, "bad_input_by_reason": {},
        "fit": FitInfo(sample_docs=counters.records_out, sample_by_source={s.name: s.docs_kept for s in sources},
                       fine_k=partition.fine_k, k=k, embedder=partition.embedder, embedding_dim=16, vocabulary=0,
                       seed=seed, token_estimate="tokenizer", max_share=partition.max_share),
        "near_duplicates": None,
        "cluster_balance": cluster_balance(clusters, partition.min_share, partition.max_share),
        "samples": samples, "language": language, "loss": loss_info(sources, {}, MAX_LOSS),
        "decontamination": None, "provenance": prov,
    }
    return StoreArtifact(**(values | fields))
