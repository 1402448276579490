"""CPU and bytes of one shuffle range (a small Parquet file inside a shuffle file) as `minhash_gather` writes its
candidate texts: every column dictionary-encoded with min/max statistics (pyarrow's default), against the long
columns without either (`mixture.store.schema.short_column_options`). A table into docs/performance.md.

`python -m bench.parquet_range_bench` (~30 s; the demo store's texts, `make demo` first), `--no-publish`."""

from __future__ import annotations

import argparse
import io
import random
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import machine, show
from mixture.pipelines.dedup.minhash_gather import GATHERED
from mixture.store.schema import short_column_options

BEGIN, END = "<!-- parquet-range-bench:begin -->", "<!-- parquet-range-bench:end -->"
STORE = Path(__file__).resolve().parents[1] / "demo" / "store"


def _gathered(store: Path, rows: int, rng: random.Random) -> pa.Table:
    """`rows` documents of the demo store as GATHERED rows (their MinHash signatures random 112 × 8 bytes)."""
    files = sorted(store.glob("cluster=*/quality=*/*.parquet"))
    if not files:
        raise SystemExit(f"no store at {store}: run `make demo` first, or pass --store")
    columns = ["text", "id", "source", "origin"]
    docs = [d for f in rng.sample(files, min(len(files), 40)) for d in pq.read_table(f, columns=columns).to_pylist()]
    picked = rng.sample(docs, min(rows, len(docs)))
    data = np.random.default_rng(0)
    return pa.table({"g": pa.array(data.integers(0, 2**62, len(picked))),
                     "minhash": pa.array([data.bytes(112 * 8) for _ in picked], pa.binary()),
                     **{c: pa.array([d[c] for d in picked], pa.string()) for c in columns}}, schema=GATHERED)


def _range(table: pa.Table, options: dict, repeats: int, calls: int) -> tuple[float, int]:
    """The least CPU milliseconds over `repeats` of writing `table` as one zstd range, and its bytes."""
    best, size = float("inf"), 0
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            sink = io.BytesIO()
            with pq.ParquetWriter(sink, table.schema, compression="zstd", **options) as writer:
                writer.write_table(table)
        best = min(best, (time.process_time() - start) / calls * 1e3)
        size = len(sink.getvalue())
    return best, size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", type=Path, default=STORE)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--no-publish", action="store_true")
    a = p.parse_args()
    rng = random.Random(0)
    rows = []
    for n in (4, 16, 64):
        table = _gathered(a.store, n, rng)
        default_ms, default_bytes = _range(table, {}, a.repeats, a.calls)
        short_ms, short_bytes = _range(table, short_column_options(table.schema), a.repeats, a.calls)
        rows.append((n, default_ms, short_ms, default_bytes, short_bytes))
    lines = [
        BEGIN,
        "## One shuffle range of candidate texts (`python -m bench.parquet_range_bench`)",
        "",
        f"{machine()}. A shuffle file holds a small Parquet file per destination partition; `minhash_gather`'s "
        "ranges hold candidate documents (signature, text, id). Written with pyarrow's defaults, the text and the "
        "signature get a dictionary page and min/max statistics (a whole text stored twice more in the footer); "
        "without them on the long columns (`short_column_options`, as the store's writer had already), rows of "
        f"demo store documents, zstd; CPU the least of {a.repeats} runs of {a.calls} ranges.",
        "",
        "| rows per range | CPU ms, defaults | CPU ms, short columns only | ratio | bytes, defaults | bytes, short only |",
        "|---:|---:|---:|---:|---:|---:|",
        *(f"| {n} | {d:.3f} | {s:.3f} | {s / d:.2f} | {db:,} | {sb:,} |" for n, d, s, db, sb in rows),
        END,
    ]
    show("\n".join(lines), BEGIN, END, not a.no_publish)


if __name__ == "__main__":
    main()
