"""CPU of one shuffle (T writers → P = T readers, local disk) on a fixed input as T grows, and the same with the shuffle
code of another commit (`--against`), in turn in one run: what a writer–reader pair costs whatever the rows."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa

from bench.common import machine, show
from bench.shuffle_objects_bench import ROWS, fixed_input

SHUFFLE = "pipelines/dedup/shuffle.py"
BEGIN, END = "<!-- shuffle-cpu-bench:begin -->", "<!-- shuffle-cpu-bench:end -->"


def shuffle_at(commit: str, folder: str) -> ModuleType:
    """The shuffle module as it was at `commit` (its file from git, imported under another name)."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(["git", "-C", str(root), "show", f"{commit}:{SHUFFLE}"], check=True, capture_output=True,
                            text=True).stdout
    path = Path(folder) / f"shuffle_{commit}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_shuffle(shuffle: ModuleType, folder: str, data: pa.Table, tasks: int, combined: int = 0) -> dict:
    """T = P = `tasks`: each writer writes its share of `data` partitioned by hash prefix, then (`combined` C) C
    tasks combine the writer files and one merges their indexes (a build's combine rounds), then each reader
    fetches its partition and reads it with DuckDB (the dedup stages' code); CPU seconds of each phase."""
    from mixture.pipelines.runtime.duckdb_connection import duckdb_connection

    bounds = np.linspace(0, data.num_rows, tasks + 1).astype(int)
    started = time.process_time()
    for w in range(tasks):
        share = data.slice(bounds[w], bounds[w + 1] - bounds[w])
        share = share.append_column(shuffle.PART, pa.array(shuffle.prefix_partition(
            share.column("exact_hash").to_numpy(), tasks)))
        shuffle.write_partitions(share.sort_by([(shuffle.PART, "ascending")]).to_batches(65_536),
                                 f"{folder}/{w:05d}.parquet", tasks)
    write = time.process_time() - started
    started = time.process_time()
    if combined:
        from mixture.pipelines.dedup.combine import combine

        group = -(-tasks // combined)
        for c in range(-(-tasks // group)):
            combine(f"{folder}/*.parquet", c, group, tasks)
        shuffle.write_merged_index(f"{folder}/*.parquet")
    write += time.process_time() - started
    started, rows = time.process_time(), 0
    for q in range(tasks):
        with tempfile.TemporaryDirectory() as scratch, duckdb_connection("256MB") as con:
            files = shuffle.fetch_partition(f"{folder}/*.parquet", q, scratch, tasks)
            shuffle.register(con, "part", files, data.schema)
            rows += con.execute("SELECT count(*), sum(exact_hash % 7) FROM part").fetchone()[0]
    if rows != data.num_rows:
        raise AssertionError(f"T = {tasks}: the readers read {rows:,} rows of {data.num_rows:,}")
    return {"write": write, "read": time.process_time() - started}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, nargs="+", default=[16, 64, 256, 1024])
    ap.add_argument("--rows", type=int, default=ROWS)
    ap.add_argument("--against", help="a commit whose shuffle code runs in turn with this one's")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--combined", type=int, default=0, help="also this tree's shuffle combined into C files with "
                    "their merged index (the write column includes the combine round and the index)")
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--no-publish", action="store_true", help="print the section, leave docs/performance.md")
    args = ap.parse_args(argv)
    from mixture.pipelines.dedup import shuffle

    data = fixed_input(args.rows)
    with tempfile.TemporaryDirectory() as work:
        codes = {"this tree": (shuffle, 0)}
        if args.combined:
            codes[f"this tree, combined into {args.combined}"] = (shuffle, args.combined)
        if args.against:
            codes[args.against] = (shuffle_at(args.against, work), 0)
        for code, combined in codes.values():  # imports and first connections, before anything is measured
            run_shuffle(code, tempfile.mkdtemp(dir=work), data.slice(0, 1_000), 2, combined and 2)
        rows = []
        for repeat in range(args.repeats):
            for tasks in args.tasks:
                for name, (code, combined) in (codes.items() if repeat % 2 == 0 else reversed(codes.items())):
                    folder = tempfile.mkdtemp(dir=work)
                    figures = run_shuffle(code, folder, data, tasks, combined if combined < tasks else 0)
                    rows.append({"code": name, "T": tasks, "repeat": repeat, **figures})
                    print(f"{name:>12} T = P = {tasks:>5}: write {figures['write']:7.2f} s, read "
                          f"{figures['read']:7.2f} s of CPU", flush=True)
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [BEGIN, "## A shuffle's CPU as T grows (`bench/shuffle_cpu_bench.py`)", "",
             f"Machine: {machine()}; load average at the end: {load}.", "",
             f"Reproduce: `python -m bench.shuffle_cpu_bench --tasks {' '.join(map(str, args.tasks))}"
             + (f" --against {args.against}" if args.against else "") + f" --repeats {args.repeats}"
             + (f" --rows {args.rows}" if args.rows != ROWS else "")
             + (f" --combined {args.combined}" if args.combined else "") + "`. Input: "
             f"{args.rows:,} key rows as the exact-dedup shuffle's (bench/shuffle_objects_bench.py's), the same at "
             "every T; T writers each write their share partitioned over P = T by hash prefix to one shuffle file "
             "(local disk), then P readers each fetch their partition and read it with DuckDB "
             "(pipelines/dedup/shuffle.py, as the dedup stages do), in this process one after the other"
             + (f"; `combined into {args.combined}`: between the two, a build's combine round (C = "
                f"{args.combined} tasks each regrouping ⌈T / C⌉ writer files) and the task that merges their "
                "indexes, counted in the write column, and each reader reads 1 + C ranges (T > C only)"
                if args.combined else "") + ". CPU "
             "seconds of this process (DuckDB's threads included), the least of the repeats"
             + (f"; `{args.against}`: the shuffle code of that commit (its pipelines/dedup/shuffle.py, from git), "
                "run in turn with this tree's at each T" if args.against else "") + ".", "",
             f"| code | T = P | writer–reader pairs | write CPU s | read CPU s | total | × T = {args.tasks[0]} | "
             "µs a pair past T = " + f"{args.tasks[0]} |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in codes:
        best = {t: min((r for r in rows if r["code"] == name and r["T"] == t), key=lambda r: r["write"] + r["read"])
                for t in args.tasks}
        base = best[args.tasks[0]]["write"] + best[args.tasks[0]]["read"]
        for tasks, r in best.items():
            total, pairs = r["write"] + r["read"], tasks * tasks - args.tasks[0] ** 2
            per_pair = f"{(total - base) / pairs * 1e6:.0f}" if pairs else "—"
            lines.append(f"| {name} | {tasks:,} | {tasks * tasks:,} | {r['write']:.2f} | {r['read']:.2f} | "
                         f"{total:.2f} | {total / base:.1f} | {per_pair} |")
    show("\n".join([*lines, END]), BEGIN, END, not args.no_publish)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "input_rows": args.rows}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
