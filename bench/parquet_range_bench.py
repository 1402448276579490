"""CPU and bytes of one shuffle range (a small Parquet file inside a shuffle file) as `minhash_gather` writes its
candidate texts: every column dictionary-encoded with min/max statistics (pyarrow's default), against the long
columns without either (`mixture.store.schema.short_column_options`). A table into docs/performance.md.

`python -m bench.parquet_range_bench` (~1 min; the demo store's texts, `make demo` first; Debian's where installed), `--no-publish`."""

from __future__ import annotations

import argparse
import io
import random
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import machine, show
from bench.tokenizer_bench import multilingual_texts
from mixture.pipelines.dedup.minhash_gather import GATHERED
from mixture.store.schema import short_column_options

BEGIN, END = "<!-- parquet-range-bench:begin -->", "<!-- parquet-range-bench:end -->"
STORE = Path(__file__).resolve().parents[1] / "demo" / "store"


COLUMNS = ["text", "id", "source", "origin"]  # GATHERED's columns read from the documents


def _store_docs(store: Path, rng: random.Random) -> list[dict]:
    files = sorted(store.glob("cluster=*/quality=*/*.parquet"))
    if not files:
        raise SystemExit(f"no store at {store}: run `make demo` first, or pass --store")
    return [d for f in rng.sample(files, min(len(files), 40)) for d in pq.read_table(f, columns=COLUMNS).to_pylist()]


def _debian_docs(folder: Path) -> list[dict]:
    """Debian's translated man pages and fortunes, where they are installed."""
    return [{"text": t, "id": f"debian/{i}", "source": "debian", "origin": ""}
            for i, t in enumerate(multilingual_texts(folder))]


def _gathered(docs: list[dict], rows: int, rng: random.Random) -> pa.Table:
    """`rows` of `docs` as GATHERED rows (their MinHash signatures random 112 × 8 bytes)."""
    picked = rng.sample(docs, min(rows, len(docs)))
    data = np.random.default_rng(0)
    return pa.table({"g": pa.array(data.integers(0, 2**62, len(picked))),
                     "minhash": pa.array([data.bytes(112 * 8) for _ in picked], pa.binary()),
                     **{c: pa.array([d[c] for d in picked], pa.string()) for c in COLUMNS}}, schema=GATHERED)


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
    with tempfile.TemporaryDirectory(prefix="parquet-range-bench-") as tmp:
        for corpus, docs in (("demo store", _store_docs(a.store, rng)),
                             ("Debian man pages and fortunes", _debian_docs(Path(tmp)))):
            for n in (4, 16, 64) if docs else ():
                table = _gathered(docs, n, rng)
                default_ms, default_bytes = _range(table, {}, a.repeats, a.calls)
                short_ms, short_bytes = _range(table, short_column_options(table.schema), a.repeats, a.calls)
                rows.append((corpus, n, default_ms, short_ms, default_bytes, short_bytes))
    lines = [
        BEGIN,
        "## One shuffle range of candidate texts (`python -m bench.parquet_range_bench`)",
        "",
        f"{machine()}. A shuffle file holds a small Parquet file per destination partition; `minhash_gather`'s "
        "ranges hold candidate documents (signature, text, id). Written with pyarrow's defaults, the text and the "
        "signature get a dictionary page and min/max statistics (a whole text stored twice more in the footer); "
        "without them on the long columns (`short_column_options`, as the store's writer had already). Rows of "
        "demo store documents, and of Debian's translated man pages and fortunes where they are installed "
        f"(mixture/demo_corpus/debian_text.py); zstd; CPU the least of {a.repeats} runs of {a.calls} ranges.",
        "",
        "| texts | rows per range | CPU ms, defaults | CPU ms, short columns only | ratio | bytes, defaults | "
        "bytes, short only |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(f"| {c} | {n} | {d:.3f} | {s:.3f} | {s / d:.2f} | {db:,} | {sb:,} |" for c, n, d, s, db, sb in rows),
        END,
    ]
    show("\n".join(lines), BEGIN, END, not a.no_publish)


if __name__ == "__main__":
    main()
