"""CPU of `minhash_verify`'s exact Jaccard similarities: the compiled merge (`jaccard`) against the numpy reference
(`jaccard_py`) on the shingle sets of real documents and their near copies, mapped from a local file as the stage
maps them; the two must agree on every pair. Then the shingle sets themselves: each document's distinct shingles
by one sort (`sorted_distinct`, the stage's) against numpy's `np.unique`. Tables into docs/performance.md.

`python -m bench.verify_jaccard_bench` (~1 min; the demo store's documents, `make demo` first), `--no-publish`."""

from __future__ import annotations

import argparse
import mmap
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from bench.common import machine, show
from bench.tokenizer_bench import multilingual_texts
from mixture.pipelines.dedup.minhash_verify import (
    PAIRS_PER_FETCH,
    Segments,
    jaccard,
    jaccard_py,
    unique_shingles,
)
from mixture.text.kernel import kernel
from mixture.text.shingles import WordHashes, sorted_distinct

BEGIN, END = "<!-- verify-jaccard-bench:begin -->", "<!-- verify-jaccard-bench:end -->"
STORE = Path(__file__).resolve().parents[1] / "demo" / "store"
NGRAM, EDIT = 5, 0.04  # the demo spec's shingle size; the share of a near copy's words replaced


def _texts(store: Path, n: int) -> list[str]:
    texts = [t for path in sorted(store.glob("cluster=*/quality=*/*.parquet"))
             for t in pq.read_table(path, columns=["text"]).column("text").to_pylist() if len(t.split()) >= 50]
    return random.Random(0).sample(texts, min(n, len(texts)))


def _debian_texts(folder: str) -> list[str]:
    """Debian's translated man pages and fortunes of 20 words or more, where they are installed."""
    return [t for t in multilingual_texts(Path(folder)) if len(t.split()) >= 20]


def _near_copy(text: str, rng: random.Random) -> str:
    words = text.split()
    for i in rng.sample(range(len(words)), max(1, int(len(words) * EDIT))):
        words[i] = f"w{rng.randrange(10**6)}"
    return " ".join(words)


def _segments(texts: list[str], path: Path) -> Segments:
    """The texts' distinct shingles in a mapped file, as `minhash_verify` loads them."""
    values, lengths = [], []
    for i in range(0, len(texts), 256):
        batch = texts[i:i + 256]
        v, c = unique_shingles(*WordHashes.of(batch).ngrams(NGRAM), len(batch))
        values.append(v)
        lengths.append(c)
    length = np.concatenate(lengths)
    path.write_bytes(np.concatenate(values).astype("<u8").tobytes())
    with open(path, "rb") as f:
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return Segments(np.frombuffer(mapping, dtype="<u8"), np.cumsum(length) - length, length, mapping)


def _cpu(fn, seg: Segments, a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray]:
    start = time.process_time()
    out = [fn(seg, a[i:i + PAIRS_PER_FETCH], b[i:i + PAIRS_PER_FETCH]) for i in range(0, len(a), PAIRS_PER_FETCH)]
    return time.process_time() - start, np.concatenate(out)


def _compare(corpus: str, originals: list[str], folder: str, repeats: int) -> list[tuple]:
    """Rows (corpus, pairs, count, shingles per pair, median similarity, numpy CPU, kernel CPU) for each text with
    its near copy and for random pairs of the same texts; the two ways must agree on every pair."""
    rng = random.Random(1)
    texts = originals + [_near_copy(t, rng) for t in originals]
    n = len(originals)
    near = np.arange(n, dtype=np.int64), np.arange(n, 2 * n, dtype=np.int64)  # each document and its near copy
    order = np.random.default_rng(2).permutation(2 * n).astype(np.int64)
    unlike = order[:n], order[n:]  # random pairs, mostly unrelated documents
    seg = _segments(texts, Path(folder) / f"shingles-{len(texts)}-{corpus.split()[0]}")
    rows = []
    for name, (x, y) in (("document and its near copy", near), ("random pairs", unlike)):
        best = {"numpy": float("inf"), "kernel": float("inf")}
        for _ in range(repeats):  # in turn
            t_py, ref = _cpu(jaccard_py, seg, x, y)
            t_c, got = _cpu(jaccard, seg, x, y)
            assert np.array_equal(ref, got), f"{corpus}, {name}: the kernel and the reference differ"
            best["numpy"], best["kernel"] = min(best["numpy"], t_py), min(best["kernel"], t_c)
        shingles = int((seg.length[x] + seg.length[y]).sum())
        rows.append((corpus, name, len(x), shingles / len(x), float(np.median(ref)), best["numpy"], best["kernel"]))
    return rows


def _set_cpu(distinct, grams: list[tuple[np.ndarray, np.ndarray, int]]) -> tuple[float, list[np.ndarray]]:
    start = time.process_time()
    out = []
    for g, doc, n in grams:
        bounds = np.searchsorted(doc, np.arange(n + 1))
        out += [distinct(g[bounds[i]:bounds[i + 1]]) for i in range(n)]
    return time.process_time() - start, out


def _shingle_sets(corpus: str, texts: list[str], repeats: int) -> tuple:
    """(corpus, documents, n-grams per document, hashing CPU, np.unique CPU, sorted_distinct CPU): each
    document's distinct shingles both ways, in batches of 256 as the stage makes them; equal sets or the run
    stops."""
    start = time.process_time()
    grams = [(*WordHashes.of(texts[i:i + 256]).ngrams(NGRAM), len(texts[i:i + 256])) for i in range(0, len(texts), 256)]
    hashing = time.process_time() - start
    best = {"np.unique": float("inf"), "sorted_distinct": float("inf")}
    for _ in range(repeats):  # in turn
        t_np, ref = _set_cpu(np.unique, grams)
        t_sort, got = _set_cpu(sorted_distinct, grams)
        assert all(np.array_equal(x, y) for x, y in zip(ref, got, strict=True)), f"{corpus}: the sets differ"
        best["np.unique"], best["sorted_distinct"] = min(best["np.unique"], t_np), min(best["sorted_distinct"], t_sort)
    return (corpus, len(texts), sum(len(g) for g, _, _ in grams) / max(1, len(texts)), hashing, best["np.unique"],
            best["sorted_distinct"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, default=STORE)
    p.add_argument("--documents", type=int, default=4000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-publish", action="store_true")
    a = p.parse_args()
    if kernel is None:
        raise SystemExit("the compiled kernel is not built: nothing to compare (pip install -e .)")
    rows, sets = [], []
    with tempfile.TemporaryDirectory(prefix="verify-jaccard-bench-") as tmp:
        for corpus, originals in (("demo store", _texts(a.store, a.documents)),
                                  ("Debian man pages and fortunes", _debian_texts(tmp))):
            if originals:
                rows += _compare(corpus, originals, tmp, a.repeats)
                sets.append(_shingle_sets(corpus, originals, a.repeats))
    lines = [
        BEGIN,
        "## Exact Jaccard of the verified pairs (`python -m bench.verify_jaccard_bench`)",
        "",
        f"{machine()}. `minhash_verify` compares the distinct word {NGRAM}-gram hashes of the two documents of every "
        "plausible pair (sorted sets of 64-bit values, mapped from a local file). `jaccard_py`, the reference: numpy "
        "gathers, a binary search of one set's keys in the other's and a count per pair. `jaccard`: the compiled "
        "kernel's `shared_counts`, one merge of the two sorted rows where they are mapped. Texts: up to "
        f"{a.documents:,} documents of the demo store (50 words or more), and Debian's translated man pages and "
        "fortunes in several languages (mixture/demo_corpus/debian_text.py, 20 words or more) where they are "
        f"installed; each with a near copy ({EDIT:.0%} of its words replaced). {PAIRS_PER_FETCH:,} pairs per call "
        f"as the stage fetches them; CPU the least of {a.repeats} runs, the two in turn; the similarities are equal "
        "on every pair (the run stops otherwise).",
        "",
        "| texts | pairs | count | shingles per pair | median similarity | numpy CPU s | kernel CPU s | speed-up |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *(f"| {corpus} | {name} | {count:,} | {per:,.0f} | {sim:.3f} | {tp:.3f} | {tc:.3f} | {tp / tc:.1f}× |"
          for corpus, name, count, per, sim, tp, tc in rows),
        "",
        "Each document's distinct shingles (the sets compared above), from its shingle hashes: numpy's `np.unique` "
        "(numpy >= 2.3 answers it from a hash table) against `sorted_distinct` (one `np.sort`, then the values "
        "unlike their predecessor), one call per document in batches of 256 as the stage makes them; equal sets on "
        f"every document (the run stops otherwise); CPU the least of {a.repeats} runs, in turn; the hashing (words "
        "and n-grams, once) for scale.",
        "",
        "| texts | documents | n-grams per document | hashing CPU s | `np.unique` CPU s | `sorted_distinct` CPU s "
        "| speed-up |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(f"| {corpus} | {n:,} | {per:,.0f} | {th:.3f} | {tu:.3f} | {ts:.3f} | {tu / ts:.1f}× |"
          for corpus, n, per, th, tu, ts in sets),
        END,
    ]
    show("\n".join(lines), BEGIN, END, not a.no_publish)


if __name__ == "__main__":
    main()
