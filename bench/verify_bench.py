"""Cost of checking every shard against its ledger before its text is read (materialize, load_store, the scan): the
whole-file xxh64 of each shard beside a read of the same shards' text columns, on one synthetic store, side by side
in one run. Figures go into docs/performance.md."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import machine, publish

BEGIN, END = "<!-- verify-bench:begin -->", "<!-- verify-bench:end -->"


def store(root: Path, docs: int, chars: int) -> Path:
    """A synthetic store of `docs` documents of random words (about `chars` characters each: little to compress)."""
    from mixture.accounting.synthetic import synthetic_documents, write_synthetic_store

    rng = np.random.default_rng(0)
    table = synthetic_documents(k=2, docs_per_cell=max(1, docs // 10), seed=0, pool_size=16)
    words = np.array([f"w{i:x}" for i in range(50_000)])
    texts = [" ".join(rng.choice(words, size=chars // 6)) for _ in range(table.num_rows)]
    table = table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts, pa.string()))
    write_synthetic_store(str(root), table, k=2, shards_per_cell=4)
    return root


def flip_sweep(path: Path, flips: int) -> tuple[int, int, int]:
    """`flips` single-bit flips of one shard, spread over its bytes, each on a fresh copy: (flips, read back
    without error but with other text, caught by the size + xxh64 check)."""
    import xxhash

    from mixture.accounting.verify import CorruptShard, check_file

    data = path.read_bytes()
    want = xxhash.xxh64_hexdigest(data)
    original = pq.read_table(path, columns=["text"]).column("text").to_pylist()
    silent = caught = 0
    import fsspec

    fs = fsspec.filesystem("file")
    for k in range(flips):
        at = (k * len(data)) // flips
        bad = bytearray(data)
        bad[at] ^= 1 << (k % 8)
        path.write_bytes(bytes(bad))
        try:
            if pq.read_table(path, columns=["text"]).column("text").to_pylist() != original:
                silent += 1
        except Exception:  # noqa: BLE001, S110 - Parquet noticed: not silent
            pass
        try:
            check_file(fs, str(path), len(data), want, path.name, "its ledger", "")
        except CorruptShard:
            caught += 1
    path.write_bytes(data)
    return flips, silent, caught


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=40_000)
    parser.add_argument("--chars", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--flips", type=int, default=2_000)
    args = parser.parse_args()
    from mixture.accounting import StoreReader
    from mixture.accounting.verify import verify_store_shards

    with tempfile.TemporaryDirectory() as tmp:
        root = store(Path(tmp) / "store", args.docs, args.chars)
        reader = StoreReader(str(root))
        rels = reader.shard_files()
        size = sum(os.path.getsize(reader.path(r)) for r in rels)

        def read_text() -> None:
            for rel in rels:
                pq.read_table(reader.path(rel), columns=["id", "text", "source"], use_threads=False)

        def verify() -> None:
            reader.refresh()  # no shard remembered as checked
            verify_store_shards(reader, rels, threads=1)

        read_text()  # page cache warm for both: the figures compare CPU, not the disk
        reads, hashes = [], []
        for _ in range(args.repeat):
            reads.append(timed(read_text))
            hashes.append(timed(verify))
        flips, silent, caught = flip_sweep(Path(reader.path(rels[0])), args.flips)
        load = os.getloadavg()[0]
    read_s, hash_s = min(reads), min(hashes)
    mib = size / 2**20
    section = f"""{BEGIN}
## Checking shards before reading them (`python -m bench.verify_bench`)

{machine()}; load average {load:.2f} at the end of the run.

One synthetic store: {args.docs:,} documents of about {args.chars:,} characters of random words, {len(rels)} shards,
{mib:,.1f} MiB of Parquet (zstd). Best of {args.repeat}, page cache warm, one thread each, side by side in one run:

| what | seconds | MiB/s |
| --- | ---: | ---: |
| read `id`, `text`, `source` of every shard (pyarrow, as the scatter / `load_store` do) | {read_s:.3f} | {mib / read_s:,.0f} |
| check every shard against its ledger (size + whole-file xxh64) | {hash_s:.3f} | {mib / hash_s:,.0f} |

The check costs {hash_s / read_s:.2f}× the read it protects. It reads the same bytes once more: from a cold disk or
a bucket both are bound by the transfer, so the check at most doubles the bytes read.

| {flips:,} single-bit flips spread over one shard (about {size // len(rels):,} bytes), each on a fresh copy | flips |
| --- | ---: |
| read back by pyarrow without an error, with other text (what a reader without the check used) | {silent:,} |
| caught by the size + xxh64 check | {caught:,} |
{END}"""
    print(section)
    publish(section, BEGIN, END)


if __name__ == "__main__":
    main()
