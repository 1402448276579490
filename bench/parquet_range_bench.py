"""CPU and bytes of one shuffle range as `minhash_gather` writes its candidate texts: a small Parquet file with
every column dictionary-encoded with min/max statistics (pyarrow's default), with the long columns without either
(`mixture.store.schema.short_column_options`; the range until 2026-12-06), and an Arrow IPC stream in a zstd frame
(pipelines/dedup/shuffle.py, the range since); and the CPU to read one back. A table into docs/performance.md.

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
from mixture.pipelines.dedup import shuffle
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


def _parquet(table: pa.Table, options: dict) -> bytes:
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, table.schema, compression="zstd", **options) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _arrow(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    out = shuffle._Range(sink, table.schema)  # the range write_partitions writes
    for batch in table.to_batches():
        out.writer.write_batch(batch)
    out.finish()
    return sink.getvalue()


def _least_ms(call, repeats: int, calls: int):
    """The least CPU milliseconds of `call()` over `repeats` runs of `calls` calls, and what it returned."""
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            out = call()
        best = min(best, (time.process_time() - start) / calls * 1e3)
    return best, out


def _measured(table: pa.Table, repeats: int, calls: int) -> dict:
    default_ms, default = _least_ms(lambda: _parquet(table, {}), repeats, calls)
    short_ms, short = _least_ms(lambda: _parquet(table, short_column_options(table.schema)), repeats, calls)
    arrow_ms, arrow = _least_ms(lambda: _arrow(table), repeats, calls)
    short_read, back = _least_ms(lambda: pq.read_table(pa.BufferReader(short)), repeats, calls)
    arrow_read, batches = _least_ms(lambda: list(shuffle._batches([arrow], "bench")), repeats, calls)
    if not pa.Table.from_batches(batches).equals(back):
        raise AssertionError("the Arrow range does not read back the rows of the Parquet one")
    return {"default_ms": default_ms, "short_ms": short_ms, "arrow_ms": arrow_ms, "short_read": short_read,
            "arrow_read": arrow_read, "default": len(default), "short": len(short), "arrow": len(arrow)}


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
                rows.append((corpus, n, _measured(_gathered(docs, n, rng), a.repeats, a.calls)))
    lines = [
        BEGIN,
        "## One shuffle range of candidate texts (`python -m bench.parquet_range_bench`)",
        "",
        f"{machine()}. A shuffle file holds a range per destination partition; `minhash_gather`'s ranges hold "
        "candidate documents (signature, text, id). As a small Parquet file written with pyarrow's defaults, the "
        "text and the signature get a dictionary page and min/max statistics (a whole text stored twice more in "
        "the footer); `short`: without them on the long columns (`short_column_options`, the range until "
        "2026-12-06); `arrow`: an Arrow IPC stream in a zstd frame (`write_partitions`' range since). Rows of demo "
        "store documents, and of Debian's translated man pages and fortunes where they are installed "
        "(mixture/demo_corpus/debian_text.py); zstd; CPU the least of "
        f"{a.repeats} runs of {a.calls} ranges; read: the range decoded to Arrow (`pq.read_table`; the shuffle's "
        "own decoder), checked to give the same rows.",
        "",
        "| texts | rows per range | write CPU ms: defaults | short | arrow | arrow / short | read CPU ms: short | "
        "arrow | bytes: defaults | short | arrow |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {c} | {n} | {m['default_ms']:.3f} | {m['short_ms']:.3f} | {m['arrow_ms']:.3f} | "
          f"{m['arrow_ms'] / m['short_ms']:.2f} | {m['short_read']:.3f} | {m['arrow_read']:.3f} | {m['default']:,} | "
          f"{m['short']:,} | {m['arrow']:,} |" for c, n, m in rows),
        END,
    ]
    show("\n".join(lines), BEGIN, END, not a.no_publish)


if __name__ == "__main__":
    main()
