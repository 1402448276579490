"""What `minhash_verify` pays for: each document it reads (its signature; its text, shingled) and each candidate
pair, timed around the stage's own methods on every partition of a kept build; and how many documents the tasks
read for the same pairs as the partitions grow, with each pair verified in its later document's partition and as
`minhash_route` sends them (a later document's pairs where its family meets). A table into docs/performance.md.

`python -m bench.verify_reads_bench --spec SPEC` builds SPEC (by default the demo corpus at scale 1) once with its
work kept (local executor, one worker, `--tasks` tasks), then measures (~2 min for 4 variants of the growth
corpus); `--no-publish` prints only."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.build_bench import demo_corpus, demo_spec, load, local_spec, write_spec
from bench.common import machine, show
from mixture.pipelines.dedup import minhash_verify as mv
from mixture.pipelines.dedup.minhash_buckets import PAIRS
from mixture.pipelines.dedup.minhash_route import task_destinations
from mixture.pipelines.dedup.shuffle import document_partition, read_partition
from mixture.spec.load import load_spec

BEGIN, END = "<!-- verify-reads-bench:begin -->", "<!-- verify-reads-bench:end -->"
PARTITIONS = (2, 4, 8, 16, 32, 1_000, 8_000)


def verify_split(work: Path, fuzzy, tasks: int, repeats: int) -> dict:
    """CPU seconds of the stage's tasks run one after another in this process (the least of `repeats`), split into
    reading signatures, reading texts (shingled) and the rest, with the documents and pairs they handled."""
    spent = {"minhash": 0.0, "text": 0.0}
    load_column = mv.MinhashVerify._load

    def timed(self, con, tmp, column, docs=None):
        start = time.process_time()
        try:
            return load_column(self, con, tmp, column, docs)
        finally:
            spent[column] += time.process_time() - start

    best: dict = {}
    mv.MinhashVerify._load = timed
    try:
        for _ in range(repeats):
            run = {"cpu": 0.0, "minhash": 0.0, "text": 0.0, "signatures": 0, "texts": 0, "pairs": 0}
            for q in range(tasks):
                with tempfile.TemporaryDirectory(prefix="verify-reads-") as tmp:
                    copy = Path(tmp) / "near_dups"
                    shutil.copytree(work, copy)
                    (copy / "verified" / f"{q:05d}.parquet").unlink()
                    step = mv.MinhashVerify(str(copy), threshold=fuzzy.similarity_threshold, ngram=fuzzy.ngram,
                                            permutations=fuzzy.permutations)
                    spent["minhash"] = spent["text"] = 0.0
                    start = time.process_time()
                    list(step.run(None, q, tasks) or ())
                    run["cpu"] += time.process_time() - start
                    run["minhash"] += spent["minhash"]
                    run["text"] += spent["text"]
                    run["signatures"] += step.stats["signatures_loaded"].total
                    run["texts"] += step.stats["texts_loaded"].total
                    run["pairs"] += step.stats["pairs_considered"].total
            if not best or run["cpu"] < best["cpu"]:
                best = run
    finally:
        mv.MinhashVerify._load = load_column
    return best


def _reads(docs: np.ndarray, dest: np.ndarray) -> tuple[int, float]:
    """Documents read when pair i's two documents (`docs`, two columns) are read in partition dest[i], each once
    a partition, and the most any partition reads over the mean of those that read any."""
    read = np.unique(np.concatenate([np.stack([docs[:, 0], dest], 1), np.stack([docs[:, 1], dest], 1)]), axis=0)
    per = np.bincount(read[:, 1].astype(np.int64))
    return len(read), float(per.max() / per[per > 0].mean())


def routed(a: np.ndarray, b: np.ndarray, size: np.ndarray, p: int) -> np.ndarray:
    """Each distinct pair's verification partition at P = p as `minhash_route` sends it: each routing task's later
    documents (with their earliest partner and largest bucket) through the stage's own `task_destinations`."""
    first = np.full(int(b.max()) + 1, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, b, a)
    largest = np.zeros(len(first), np.int64)
    np.maximum.at(largest, b, size)
    later = np.unique(b)
    task = document_partition(later, p)
    order = np.argsort(task, kind="stable")
    later, bounds = later[order], np.searchsorted(task[order], np.arange(p + 1))
    dest_of = np.zeros(len(first), np.int64)
    for q in range(p):
        mine = later[bounds[q]:bounds[q + 1]]
        if len(mine):
            dest_of[mine] = task_destinations(mine, first[mine], largest[mine], p)[0]
    return dest_of[b]


def reads_by_partitions(work: Path, tasks: int) -> tuple[int, int, list[tuple[int, int, float, int, float]]]:
    """(distinct candidate pairs, candidate documents, [(P, documents read and the largest partition's share over
    the mean with each pair in its later document's partition, the same as `minhash_route` sends them)]): a
    partition reads each document of its pairs once."""
    parts = [read_partition(f"{work}/pairs/*.parquet", q, PAIRS, tasks) for q in range(tasks)]
    a = np.concatenate([t.column("a").to_numpy() for t in parts]).astype(np.int64)
    b = np.concatenate([t.column("b").to_numpy() for t in parts]).astype(np.int64)
    size = np.concatenate([t.column("size").to_numpy() for t in parts]).astype(np.int64)
    key, at = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
    largest = np.zeros(len(key), np.int64)
    np.maximum.at(largest, at.ravel(), size)
    a, b = key[:, 0], key[:, 1]
    docs = len(np.unique(key))
    rows = []
    for p in PARTITIONS:
        later = _reads(key, document_partition(b, p))
        family = _reads(key, routed(a, b, largest, p))
        rows.append((p, *later, *family))
    return len(a), docs, rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spec", help="a spec to build (default: the demo corpus at scale 1)")
    p.add_argument("--tasks", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-publish", action="store_true")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="verify-reads-bench-") as tmp:
        root = Path(tmp)
        if a.spec:
            spec = local_spec(a.spec, str(root / "store"), tasks=a.tasks)
        else:
            demo_corpus(root / "corpus", seed=0, scale=1.0)
            spec = demo_spec([root / "corpus"], str(root / "store"), k=40, fine_k=200, tasks=a.tasks, workers=1)
        spec_path = write_spec(root / "build", spec)
        before = load()
        # built in a process of its own: this one then measures as a pool worker would, fresh (after a whole
        # build in the same process the texts' reading costs ~1.4x)
        subprocess.run([sys.executable, "-c", "import sys; from mixture.pipelines.build import build; "
                        "build(sys.argv[1], keep_work=True, progress=False)", str(spec_path)], check=True)
        work = root / "store" / "_build" / "work" / "near_dups"
        fuzzy = load_spec(str(spec_path)).processing.dedup.fuzzy
        split = verify_split(work, fuzzy, a.tasks, a.repeats)
        n_pairs, n_docs, reads = reads_by_partitions(work, a.tasks)
    assert reads[[r[0] for r in reads].index(a.tasks)][3] == split["signatures"], "the reads model is not the stage's"
    per_sig, per_text = split["minhash"] / split["signatures"], split["text"] / split["texts"]
    rest = (split["cpu"] - split["minhash"] - split["text"]) / split["pairs"]
    corpus = f"`{a.spec}`" if a.spec else "the demo corpus at scale 1"
    lines = [
        BEGIN,
        "## What `minhash_verify` pays for: the documents it reads (`python -m bench.verify_reads_bench`)",
        "",
        f"{machine()}; load {before} at the start. {corpus}, built once with its work kept ({a.tasks} tasks, one "
        f"worker); then its {a.tasks} verification tasks run again one after another in a fresh process, timed around "
        f"the stage's own reading of each partition's signatures and texts (the least CPU of {a.repeats} runs).",
        "",
        "| | count | CPU s | each |",
        "|---|---:|---:|---:|",
        f"| signatures read | {split['signatures']:,} | {split['minhash']:.3f} | {per_sig * 1e6:.1f} µs |",
        f"| texts read and shingled | {split['texts']:,} | {split['text']:.3f} | {per_text * 1e6:.1f} µs |",
        f"| the rest (its {a.tasks} tasks' fixed costs included), per candidate pair | {split['pairs']:,} | "
        f"{split['cpu'] - split['minhash'] - split['text']:.3f} | {rest * 1e6:.1f} µs |",
        "",
        f"The same {n_pairs:,} distinct candidate pairs ({n_docs:,} documents) verified by P tasks: the documents the "
        "tasks read (a partition reads each document of its pairs once), with each pair in its later document's "
        "partition (before `minhash_route`) and as `minhash_route` sends them (a later document's pairs where its "
        "family meets; computed from the kept pairs with the stage's own functions, equal to the stage's count at "
        f"P = {a.tasks}); the most documents a partition reads over the mean of those that read any (where the "
        "partitions outnumber the families, a family's partition stands out); and what a pair then costs (the rest, "
        "plus the reads at the rates above):",
        "",
        "| P | by later document: read | a pair | largest / mean | CPU a pair | by family: read | a pair | "
        "largest / mean | CPU a pair | reads |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {p:,} | {r:,} | {r / n_pairs:.3f} | {skew:.1f} | "
          f"{(rest + (per_sig + per_text) * r / n_pairs) * 1e6:.1f} µs | {f:,} | {f / n_pairs:.3f} | {fskew:.1f} | "
          f"{(rest + (per_sig + per_text) * f / n_pairs) * 1e6:.1f} µs | {f / r:.2f}× |"
          for p, r, skew, f, fskew in reads),
        END,
    ]
    show("\n".join(lines), BEGIN, END, not a.no_publish)


if __name__ == "__main__":
    main()
