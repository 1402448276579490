"""What an open Parquet file costs a task per row group written: pyarrow's writer keeps every row group's metadata
until the file is closed, so a task's memory grows with the row groups of the files it holds open (the prepared
file in `prepare`, a file per cell in `assign`). Each case in a fresh process; figures into docs/performance.md.

`python -m bench.rowgroup_memory_bench` (about a minute)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import machine, publish

BEGIN, END = "<!-- rowgroup-memory-bench:begin -->", "<!-- rowgroup-memory-bench:end -->"
CASES = [("prepared", 1, 1_000), ("prepared", 1, 4_000), ("cells", 200, 5), ("cells", 200, 20)]
ROWS = 10  # documents per row group (few: the metadata is what is measured, not the data)
# the 25.6T pool at T = 8,000: ~3.2B input tokens a task, ~4M documents of ~800 tokens; row groups as they were
# written before 2026-12-03: the prepared file's of 128 documents, the cells' of ~45 (the growth run at 300 variants)
POOL_DOCS_PER_TASK = 4_000_000
POOL_DOCS_PER_ROW_GROUP = {"prepared": 128, "cells": 45}


def _measure(kind: str, files: int, groups: int, folder: str) -> dict:
    """In this process: `files` files open at once, `groups` row groups each, written with the build's own writer
    settings for `kind`; resident anonymous memory before, with them open, after closing them."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    from mixture.pipelines import schemas
    from mixture.pipelines.runtime.memory import configure_memory
    from mixture.pipelines.writers import column_codecs
    from mixture.store.schema import short_column_options

    configure_memory()
    schema = schemas.WORK if kind == "prepared" else schemas.store_schema(False)
    options = {"compression": column_codecs(schema, "zstd"), **short_column_options(schema), "write_page_index": False}
    rng = random.Random(0)

    def value(field: pa.Field, i: int):
        t = field.type
        if pa.types.is_string(t):
            return f"{field.name}-{i}-" + "".join(rng.choices("abcdef ", k=600 if field.name == "text" else 12))
        if pa.types.is_binary(t):
            return rng.randbytes(64)
        if pa.types.is_boolean(t):
            return False
        if pa.types.is_floating(t):
            return rng.random()
        if pa.types.is_list(t):
            return [1, 2, 3]
        return i % 100  # int8 fields among them

    def batch(base: int) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({f.name: [value(f, base + i) for i in range(ROWS)] for f in schema},
                                          schema=schema)

    before = _anon()
    writers = [pq.ParquetWriter(f"{folder}/{i}.parquet", schema=schema, **options) for i in range(files)]
    for g in range(groups):
        for w in writers:
            w.write_batch(batch(g * ROWS))
    held = _anon()
    for w in writers:
        w.close()
    del writers
    footer = pq.ParquetFile(f"{folder}/0.parquet").metadata.serialized_size
    return {"kind": kind, "files": files, "groups": groups, "columns": len(schema), "before": before, "held": held,
            "closed": _anon(), "footer_per_group": footer / groups}


def _anon() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon"):
            return int(line.split()[1]) * 1024
    return 0


def run_case(kind: str, files: int, groups: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="rowgroup-bench-") as folder:
        out = subprocess.run([sys.executable, "-m", "bench.rowgroup_memory_bench", "--case", kind, str(files),
                              str(groups), folder], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(results: list[dict]) -> str:
    lines = [BEGIN, "## Memory per row group of an open Parquet file (`python -m bench.rowgroup_memory_bench`)", "",
             f"Machine: {machine('pyarrow')}. Each case in a fresh process: `files` Parquet files open at once with the "
             "build's writer settings (the prepared file's WORK schema, or the store's cell schema), `row groups` "
             f"of {ROWS} documents written to each, the process's resident anonymous memory before, with the files "
             "open and after closing them (glibc keeps what was freed).", "",
             "| files | schema | columns | row groups in all | held while open | footer per row group | after closing |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    slope: dict[str, float] = {}
    by_kind: dict[str, list[dict]] = {}
    for r in results:
        by_kind.setdefault(r["kind"], []).append(r)
        lines.append(f"| {r['files']} | {r['kind']} | {r['columns']} | {r['files'] * r['groups']:,} | "
                     f"{(r['held'] - r['before']) / 2**20:.1f} MiB | {r['footer_per_group'] / 1024:.1f} KiB | "
                     f"{(r['closed'] - r['before']) / 2**20:.1f} MiB |")
    for kind, (small, large) in ((k, (v[0], v[-1])) for k, v in by_kind.items()):
        groups = large["files"] * large["groups"] - small["files"] * small["groups"]
        slope[kind] = ((large["held"] - large["before"]) - (small["held"] - small["before"])) / groups
    lines += ["", "pyarrow's writer holds every row group's metadata in memory until the file is closed, ~10 times "
              "its size in the footer. Each further row group held (the slope between the two sizes), and what that "
              "makes at the 25.6T pool (T = 8,000, ~4M documents a task):", ""]
    from mixture.pipelines.writers import PREPARED_BATCH

    for kind, per in slope.items():
        groups = POOL_DOCS_PER_TASK // POOL_DOCS_PER_ROW_GROUP[kind]
        lines.append(f"- {kind}: {per / 1024:.1f} KiB a row group; ~{groups:,} row groups a task "
                     f"({POOL_DOCS_PER_ROW_GROUP[kind]} documents each) would hold ~{groups * per / 2**30:.2f} GiB "
                     "while open.")
    lines += ["", f"So the prepared file is written in row groups of {PREPARED_BATCH:,} documents "
              f"(~{POOL_DOCS_PER_TASK // PREPARED_BATCH * slope.get('prepared', 0) / 2**20:,.0f} MiB at the pool), "
              "and the store's cell files are spooled (pipelines/spooled_parquet.py): their batches wait in a local "
              "stream and each file is written at close, so none of their row groups is held while they are open."]
    return "\n".join(lines + [END])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", nargs=4, metavar=("KIND", "FILES", "GROUPS", "FOLDER"), help=argparse.SUPPRESS)
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    args = p.parse_args()
    if args.case:
        kind, files, groups, folder = args.case
        print(json.dumps(_measure(kind, int(files), int(groups), folder)))
        return
    results = [run_case(*case) for case in CASES]
    text = report(results)
    print(text)
    if not args.no_publish:
        publish(text, BEGIN, END)


if __name__ == "__main__":
    main()
