"""Write a small synthetic store in exactly the docs/store.md format (and a plan.json) for the explorer's tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash
from pydantic import BaseModel

from mixture.accounting.synthetic_artifact import cluster_entry, language_info, synthetic_artifact
from mixture.store.formats import (
    CalibrationGroup,
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
from mixture.store.model_files import CENTROIDS, Centroids, write_model_file

QUALITY_NAMES = ["junk", "poor", "usable", "good", "excellent"]
CONTENT_TYPES = ["code", "prose", "math", "default"]
SOURCES = [("web-crawl", "web"), ("stdlib-code", "code"), ("proof-notes", "math")]
TOPICS = [
    ["socket", "server", "request", "client", "port", "handler"],
    ["council", "meeting", "board", "minutes", "motion", "vote"],
    ["theorem", "proof", "lemma", "integral", "matrix", "prime"],
    ["recipe", "flour", "butter", "oven", "sugar", "bake"],
    ["galaxy", "orbit", "telescope", "planet", "nebula", "comet"],
    ["contract", "court", "appeal", "statute", "plaintiff", "ruling"],
    ["guitar", "chord", "melody", "rhythm", "tempo", "band"],
    ["vaccine", "patient", "clinical", "dose", "trial", "symptom"],
]
FILLER = ["the", "of", "and", "a", "to", "in", "is", "for", "on", "with", "as", "by"]
def LINEAGE_ID_OF(uniform_rows: list[dict]) -> str:  # noqa: N802
    """The sampled document whose id a dropped exact duplicate shares (lineage shows kept and dropped)."""
    return uniform_rows[0]["id"]


LANGUAGES = ["en", "de", "fr", "zh", "ja"]  # a domain's main language; every fourth document is English


def language_of(cluster: int, i: int) -> str:
    return LANGUAGES[cluster % len(LANGUAGES)] if i % 4 else "en"


SCRIPT_DOC = "Before the script <script>alert(1)</script> and <b>bold</b> after it."

DOC_SCHEMA = pa.schema([
    ("id", pa.string()), ("text", pa.string()), ("source", pa.string()), ("category", pa.string()),
    ("origin", pa.string()), ("n_tokens", pa.int64()), ("n_chars", pa.int64()),
    ("content_type", pa.string()), ("language", pa.string()), ("language_score", pa.float32()),
    ("raw_score", pa.float64()), ("quality_score", pa.float64()),
    ("cluster", pa.int16()), ("quality", pa.int8()), ("fine_cluster", pa.int32()),
    ("cluster_distance", pa.float32()),
])
SAMPLE_SCHEMA = pa.schema([("rank", pa.int32())] + [f for f in DOC_SCHEMA])


def _write_parquet(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _write_json(model: BaseModel, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_model(fsspec.filesystem("file"), str(path), model)


def _text(rng: np.random.Generator, cluster: int, n_words: int) -> str:
    topic = TOPICS[cluster % len(TOPICS)]
    words = [topic[i] if rng.random() < 0.4 else FILLER[i % len(FILLER)]
             for i in rng.integers(0, 6, size=n_words)]
    return " ".join(words)


def cell_docs(k: int, cluster: int, quality: int, scale: int) -> int:
    """Documents in a cell: uneven across cells so shares and enrichments differ."""
    base = 3 + (cluster * 7 + quality * 5) % 11 + (6 if quality == 2 + cluster % 2 else 0)
    return base * scale


def build_store(root: Path, k: int = 5, scale: int = 1, shards_per_cell: int = 1, seed: int = 0,
                building: bool = False, centroids: bool = True, per_cell_samples: int = 3) -> dict:
    """Write a store under `root`; returns the store.json dict (also when `building`, where it is not written)."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    cells, uniform_rows, exemplar_rows = [], [], []
    src_tot = {name: [0, 0] for name, _ in SOURCES}
    languages: list[tuple[int, int, str, int]] = []  # (cluster, quality, language, tokens) of every document
    doc_counter = 0
    for c in range(k):
        for q in range(5):
            n = cell_docs(k, c, q, scale)
            rows = []
            for i in range(n):
                src, cat = SOURCES[(c + q + i) % len(SOURCES)]
                text = _text(rng, c, int(rng.integers(20, 400)))
                if c == 1 and q == 2 and i == 0:
                    text = SCRIPT_DOC
                if c == 0 and q == 4 and i == 0:
                    text = "long " * 400 + "TAILMARKER"
                raw = float(rng.uniform(q * 0.2, q * 0.2 + 0.2))
                rows.append({
                    "id": f"{src}/file-{c}-{q}.jsonl/{i}", "text": text, "source": src, "category": cat,
                    "origin": f"{src}/file-{c}-{q}.jsonl:{i}", "n_tokens": len(text.split()),
                    "n_chars": len(text), "content_type": CONTENT_TYPES[(c + i) % len(CONTENT_TYPES)],
                    "language": language_of(c, i), "language_score": 0.9,
                    "raw_score": raw, "quality_score": min(0.999, raw + 0.001), "cluster": c, "quality": q,
                    "fine_cluster": c * 10 + i % 10, "cluster_distance": float(rng.uniform(0.05, 0.6)),
                })
                doc_counter += 1
            cell_dir = root / f"cluster={c:02d}" / f"quality={q}"
            shards, n_tok = [], 0
            per = -(-n // shards_per_cell)
            for s in range(shards_per_cell):
                part = rows[s * per:(s + 1) * per]
                if not part:
                    continue
                name = f"part-{s:05d}.parquet"
                _write_parquet(pa.Table.from_pylist(part, schema=DOC_SCHEMA), cell_dir / name)
                data = (cell_dir / name).read_bytes()
                tok = sum(r["n_tokens"] for r in part)
                shards.append(LedgerShard(path=name, task=s, rows=len(part), tokens=tok, bytes=len(data),
                                          xxh64=xxhash.xxh64(data).hexdigest()))
                n_tok += tok
            _write_json(Ledger.of(f"c{c:02d}q{q}", c, q, shards), cell_dir / "_ledger.json")
            by_source: dict[str, int] = {}
            for r in rows:
                by_source[r["source"]] = by_source.get(r["source"], 0) + r["n_tokens"]
            cells.append(CellEntry(cell=f"c{c:02d}q{q}", cluster=c, quality=q, path=f"cluster={c:02d}/quality={q}",
                                   docs=n, tokens=n_tok, shards=len(shards), sources=dict(sorted(by_source.items()))))
            for r in rows:
                src_tot[r["source"]][0] += 1
                src_tot[r["source"]][1] += r["n_tokens"]
                languages.append((c, q, r["language"], r["n_tokens"]))
            order = [int(j) for j in rng.permutation(n)[:per_cell_samples]]
            if (c, q) in ((1, 2), (0, 4)) and order[0] != 0:  # the <script> and the long document come first
                order = [0] + [j for j in order if j != 0][: per_cell_samples - 1]
            for rank, j in enumerate(order):
                uniform_rows.append({"rank": rank, **rows[j]})
            by_dist = sorted(rows, key=lambda r: r["cluster_distance"])[:per_cell_samples]
            for rank, r in enumerate(by_dist):
                exemplar_rows.append({"rank": rank, **r})
    _write_parquet(pa.Table.from_pylist(uniform_rows, schema=SAMPLE_SCHEMA), root / "_samples/uniform.parquet")
    _write_parquet(pa.Table.from_pylist(exemplar_rows, schema=SAMPLE_SCHEMA), root / "_samples/exemplars.parquet")

    dropped = {"filtered": 4, "exact_duplicate": 6, "fuzzy_duplicate": 3, "contaminated": 1}
    for reason, n in dropped.items():
        rows = [{"id": f"web-crawl/dropped-{reason}.jsonl/{i}", "source": "web-crawl",
                 "origin": f"web-crawl/dropped-{reason}.jsonl:{i}", "reason": reason,
                 "detail": f"{reason} detail {i}", "n_chars": 100 + i, "text_head": f"dropped text {i}"}
                for i in range(n)]
        # one dropped duplicate shares its id with a kept document: lineage must show both decisions
        if reason == "exact_duplicate":
            rows[0]["id"] = LINEAGE_ID_OF(uniform_rows)
        _write_parquet(pa.Table.from_pylist(rows), root / f"_dropped/{reason}/part-00000.parquet")
    quarantine = [{"source": "web-crawl", "file": "bad.jsonl", "record": i, "reason": "invalid_json",
                   "detail": "Expecting value", "raw": "{not json", "raw_bytes": 9} for i in range(2)]
    _write_parquet(pa.Table.from_pylist(quarantine), root / "_quarantine/part-00000.parquet")

    if centroids:
        cen = rng.normal(size=(k, 16)).astype(np.float32)
        cen /= np.linalg.norm(cen, axis=1, keepdims=True)
        write_model_file(str(root / "_model"), CENTROIDS, Centroids(cen, np.arange(k, dtype=np.int32), cen))

    for stage, tasks, done in (("read", 2, 2), ("dedup", 2, 2 if not building else 1), ("write", 3, 3 if not building else 0)):
        d = root / "_build" / stage
        (d / "completions").mkdir(parents=True, exist_ok=True)
        (d / "executor.json").write_text(json.dumps({"world_size": tasks, "tasks": tasks}))
        for t in range(done):
            (d / "completions" / f"{t:05d}").write_text("")

    tokens_out = sum(c.tokens for c in cells)
    records_out = sum(c.docs for c in cells)
    drops = {"bad_input": 2, "filtered": 4, "exact_duplicate_dropped": 6, "fuzzy_duplicate_dropped": 3,
             "contaminated_dropped": 1}
    counters = Counters(records_in=records_out + sum(drops.values()), **drops, records_out=records_out,
                        tokens_out=tokens_out)
    clusters = []
    for c in range(k):
        topic = TOPICS[c % len(TOPICS)]
        clusters.append(cluster_entry(c, ", ".join(w.title() for w in topic[:3]), topic, cells,
                                      confidence=round(0.4 + 0.1 * c, 2),
                                      confidence_tag=["low", "medium", "high"][c % 3]))
    sources = [SourceEntry(name=name, category=cat, license="CC-BY-4.0", format="jsonl", synthetic=False,
                           exempt_from_fuzzy_dedup=False,
                           docs_in=src_tot[name][0] + (sum(drops.values()) if name == "web-crawl" else 0),
                           tokens_in=None, docs_kept=src_tot[name][0], tokens_kept=src_tot[name][1],
                           **{key: n if name == "web-crawl" else 0 for key, n in drops.items()})
               for name, cat in SOURCES]
    artifact = synthetic_artifact(
        seed=seed, tokenizer=TokenizerRef(kind="hub", name="whitespace", sha256=None),
        partition=PartitionInfo(k=k, fine_k=k * 10, quality_levels=5, bucket_edges=[0.2, 0.4, 0.6, 0.8],
                                quality_names=QUALITY_NAMES, min_share=0.0, max_share=1.0, embedder="lexical"),
        clusters=clusters, cells=cells, sources=sources, counters=counters,
        samples=SamplesInfo(uniform="_samples/uniform.parquet", exemplars="_samples/exemplars.parquet",
                            per_cell=per_cell_samples, exemplars_per_cell=per_cell_samples),
        language=language_info(languages, [
            CalibrationGroup(group="prose/en", content_type="prose", language="en", sample_docs=120,
                             fallback=False, raw_cutoffs=[0.3, 0.45, 0.6, 0.8]),
            CalibrationGroup(group="prose/de", content_type="prose", language="de", sample_docs=12,
                             fallback=True, raw_cutoffs=[0.22, 0.39, 0.58, 0.77])]),
        created="2026-11-30T10:00:00Z",
        raw_score_cutoffs={"code": [0.31, 0.42, 0.5, 0.61], "prose": [0.22, 0.39, 0.58, 0.77],
                           "math": [0.25, 0.45, 0.65, 0.85], "default": [0.2, 0.4, 0.6, 0.8]},
        filtered_by_reason={"min_chars": 3, "max_chars": 1},
        bad_input_by_reason={"invalid_json": 2},
    )
    if not building:
        _write_json(artifact, root / "store.json")
    return artifact.model_dump(mode="json")


def plan_inputs(store: Path, cap: float = 8.0):
    """Planner inputs over the store's counts whose exposures put a known set of cells (names[1::7]: c00q1, c01q3,
    c03q0, c04q2 for k=5) over `cap`, with a ladder whose smaller rung cuts cells to zero."""
    from mixture.planner.counts import load_counts
    from mixture.planner.plan import PhaseInput, PlanInputs

    counts = load_counts(str(store))
    cells = {n: c.tokens for n, c in counts.cells.items()}
    names = sorted(cells)
    total = sum(cells.values())
    hot = set(names[1::7])  # these get weight that pushes them over the cap
    raw0 = {n: (40.0 if n in hot else 1.0) * cells[n] for n in names}
    raw1 = {n: cells[n] * (1.0 + (i % 3)) for i, n in enumerate(names)}
    w0 = {n: v / sum(raw0.values()) for n, v in raw0.items()}
    w1 = {n: v / sum(raw1.values()) for n, v in raw1.items()}
    return PlanInputs(counts, [PhaseInput("phase0", 3 * total, w0), PhaseInput("phase1", total, w1)],
                      max_epochs=cap, name="synthetic",
                      ladder=[{"name": "tiny", "tokens": 2 * total // 1000}, {"name": "small", "tokens": total // 10}])


def build_plan(path: Path, store: Path, cap: float = 8.0, repaired: bool = False):
    """Plan the store with the real planner (see `plan_inputs`) and write plan.json at `path`, and with `repaired`
    the cap-repaired plan beside it as `mixture plan --out` does; returns the plan."""
    from mixture.planner.plan import compute_plan
    from mixture.planner.run import repair_plan

    inputs = plan_inputs(store, cap)
    plan = compute_plan(inputs)
    _write_json(plan, path)
    if repaired:
        _, fixed = repair_plan(inputs, plan)
        _write_json(fixed, path.with_name(path.stem + ".repaired.json"))
    return plan
