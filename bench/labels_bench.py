"""Cluster labels and per-language calibration on real text nobody here wrote: the Debian multilingual corpus
(translated man pages and fortunes) at k=8 and k=24 and the demo corpus. Prints each store's labels (stopwords
and programming keywords counted) and each small (content type, language) group's Q0 and Q4 shares with the map
it was calibrated with. Figures go into docs/performance.md."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from bench.common import machine, publish

BEGIN, END = "<!-- labels-bench:begin -->", "<!-- labels-bench:end -->"


def build_store(root: Path, spec: dict) -> Path:
    from mixture.pipelines.build import build

    root.mkdir(parents=True, exist_ok=True)
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(root / "spec.yaml"), progress=False)
    return root / "store"


def label_rows(store: Path) -> list[dict]:
    doc = json.loads((store / "store.json").read_text())
    return [{k: c.get(k) for k in ("id", "label", "name", "confidence", "confidence_tag", "languages")}
            for c in doc["clusters"]]


def banned(label: str) -> list[str]:
    """The words of `label` that are a stopword in some language or a programming keyword."""
    import keyword

    import stopwordsiso

    stop = stopwordsiso.stopwords(stopwordsiso.langs())
    words = [w.strip().lower() for part in label.split(",") for w in part.split()]
    return [w for w in words if w in stop or keyword.iskeyword(w) or w in {"def", "func", "return", "self", "byte"}]


def label_cost(root: Path, k: int = 40) -> dict:
    """CPU seconds of the fit's steps in this process on the demo and Debian texts together: term counting, the
    embedding and clustering, and the labels (with their exemplars' text already read)."""
    import numpy as np

    from mixture.demo_corpus import read
    from mixture.fit.cluster_labels import EXEMPLARS, HEAD_CHARS, label_counted_clusters
    from mixture.fit.clusters import fit_clusters, token_estimate
    from mixture.fit.embed import LexicalEmbedder, TermCounts

    texts = read.texts(root / "demo")
    for f in sorted((root / "debian").glob("*/part-*.jsonl")):
        texts += [json.loads(line)["text"] for line in f.open()]
    t = time.process_time()
    counted = TermCounts.of(texts)
    count = time.process_time() - t
    t = time.process_time()
    _, x = LexicalEmbedder.fit_counts(counted, 64, 0)
    model, _ = fit_clusters(x, k, 256, 0.005, 0, token_estimate(texts), 1.0)
    cluster, _, dist = model.assign(x)
    fit = time.process_time() - t
    t = time.process_time()
    labels = cluster.astype(np.int64)
    order = np.lexsort((dist, labels))
    wanted = np.concatenate([order[labels[order] == c][:EXEMPLARS] for c in range(k)])
    label_counted_clusters(counted, labels, k, {int(r): texts[r][:HEAD_CHARS] for r in wanted}, dist)
    return {"docs": len(texts), "chars": sum(map(len, texts)), "count": count, "fit": fit,
            "labels": time.process_time() - t, "k": k}


def fit_cpu(store: Path) -> float:
    """CPU seconds of the `fit` stage's task (its usage record)."""
    return sum(json.loads(p.read_text())["cpu_seconds"] for p in (store / "_build" / "fit" / "usage").glob("*.json"))


def group_shares(store: Path) -> list[dict]:
    """Per (content type, language) group: sample docs, the map, kept docs and Q0 / top-bucket shares."""
    import pyarrow.dataset as ds

    doc = json.loads((store / "store.json").read_text())
    top = doc["partition"]["quality_levels"] - 1
    files = sorted(str(p) for p in store.glob("cluster=*/quality=*/*.parquet"))
    rows = ds.dataset(files, format="parquet").to_table(columns=["content_type", "language", "quality"]).to_pylist()
    kept, q0, q4 = Counter(), Counter(), Counter()
    for r in rows:
        g = f"{r['content_type']}/{r['language']}"
        kept[g] += 1
        q0[g] += r["quality"] == 0
        q4[g] += r["quality"] == top
    out = []
    for g in doc["language"]["calibration_groups"]:
        name = g["group"]
        out.append({"group": name, "sample_docs": g["sample_docs"], "map": g.get("map", "content_type" if g["fallback"] else "own"),
                    "kept": kept[name], "q0": q0[name] / max(kept[name], 1), "q4": q4[name] / max(kept[name], 1)})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", help="keep the stores here (default: a temporary folder)")
    p.add_argument("--demo-scale", type=float, default=0.1)
    p.add_argument("--json", help="write the figures here as JSON")
    p.add_argument("--stores", default="debian k=8,debian k=24,demo",
                   help="which stores to build (comma-separated: debian k=8, debian k=24, demo)")
    p.add_argument("--before", help="a --json file of an earlier run (older code) to compare with, side by side")
    p.add_argument("--no-publish", action="store_true")
    args = p.parse_args()
    from mixture.demo import demo_spec
    from mixture.demo_corpus import write_demo_corpus
    from mixture.demo_corpus.debian_text import multilingual_spec, write_multilingual_corpus

    root = Path(args.out or tempfile.mkdtemp(prefix="labels-bench-"))
    write_multilingual_corpus(root / "debian", seed=0, scale=1.0)
    write_demo_corpus(str(root / "demo"), seed=0, scale=args.demo_scale, progress=False)
    runs = {"debian k=8": multilingual_spec(str(root / "debian"), "store"),
            "debian k=24": multilingual_spec(str(root / "debian"), "store", k=24, min_share=0.01),
            f"demo {args.demo_scale}": demo_spec(str(root / "demo"), "store")}
    wanted = [s.strip() for s in args.stores.split(",")]
    runs = {name: spec for name, spec in runs.items() if any(name.startswith(w) for w in wanted)}
    result: dict = {}
    for name, spec in runs.items():
        t = time.perf_counter()
        store = build_store(root / name.replace(" ", "_"), spec)
        labels = label_rows(store)
        result[name] = {"seconds": time.perf_counter() - t, "fit_cpu": fit_cpu(store), "labels": labels,
                        "load": os.getloadavg()[0],
                        "banned": sum(bool(banned(r["label"])) for r in labels),
                        "high": sum(r["confidence_tag"] == "high" for r in labels),
                        "groups": group_shares(store)}
        print(f"== {name}: {len(labels)} labels, {result[name]['banned']} with a stopword or keyword, "
              f"{result[name]['high']} 'high'")
        for r in labels:
            print(f"  {r['id']:2d} {r['confidence_tag']:6s} {r['confidence']:.2f} {r['label']!r} "
                  f"{r.get('name') or ''} {r.get('languages') or ''} {banned(r['label']) or ''}")
        for g in result[name]["groups"]:
            if g["sample_docs"] < 50 and g["kept"]:
                print(f"  group {g['group']:22s} n={g['sample_docs']:3d} map={g['map']:13s} kept={g['kept']:5d} "
                      f"Q0={g['q0']:.0%} Q4={g['q4']:.0%}")
    cost = label_cost(root)
    print(f"label cost: {cost}")
    if args.json:
        Path(args.json).write_text(json.dumps({**result, "_cost": cost}, indent=1))
    if not args.no_publish:
        before = json.loads(Path(args.before).read_text()) if args.before else None
        publish(section(result, before, cost), BEGIN, END)


def _row(name: str, r: dict) -> str:
    small = [g for g in r["groups"] if 20 <= g["sample_docs"] < 50 and g["kept"]]
    bad = [g for g in small if max(g["q0"], g["q4"]) > 0.4]
    worst = max((max(g["q0"], g["q4"]) for g in small), default=0.0)
    return (f"| {name} | {len(r['labels'])} | {r['banned']} | {r['high']} | {len(small)} | {len(bad)} | "
            f"{worst:.0%} | {r.get('fit_cpu', 0):.2f} |")


def section(result: dict, before: dict | None = None, cost: dict | None = None) -> str:
    loads = [r.get("load", 0.0) for r in result.values()]
    lines = [BEGIN, "## Cluster labels and small-group calibration (`python -m bench.labels_bench`)", "",
             f"Machine: {machine()}; 1-minute load {min(loads):.1f}–{max(loads):.1f} after the builds.", "",
             "Rows *before* are a `--json` run of the older code on the same corpus files (the demo corpus depends on "
             "the installed packages), so its clusters are the same and only their labels and calibration differ. "
             "Small groups: (content type, language) groups of 20–49 sample documents, under `group_min_docs`; "
             "*tagged high*: label confidence high (older code: coverage ≥ 0.7; this code: NPMI@5 ≥ 0.5).", "",
             "| store | labels | with a stopword or keyword | tagged high | small groups (20–49 docs) | of them > 40 % "
             "in Q0 or Q4 | largest Q0 or Q4 share of one | fit CPU s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in result.items():
        if before and name in before:
            lines.append(_row(f"{name}, before", before[name]))
        lines.append(_row(name if not before else f"{name}, this code", r))
    if cost:
        lines += ["", f"The labels' cost in process, on the demo and Debian texts together ({cost['docs']:,} documents, "
                  f"{cost['chars'] / 1e6:.1f}M characters, k = {cost['k']}): {cost['labels']:.2f} s CPU, against "
                  f"{cost['fit']:.2f} s for the embedding, clustering and assignment and {cost['count']:.2f} s for "
                  "counting the terms (the exemplars' text read aside: at most 200 documents per cluster)."]
    lines += ["", "Labels (first 12 of each store):", ""]
    for name, r in result.items():
        old = {row["id"]: row["label"] for row in (before or {}).get(name, {}).get("labels", [])}
        lines.append(f"- {name}: " + "; ".join(
            (f"{old[row['id']]} → " if row["id"] in old else "") + f"**{row['label']}**" for row in r["labels"][:12]))
    lines += ["", END]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
