"""What a task's dedup verdicts cost in memory: `assign`, `sample` and `minhash_sigs` load every drop listed for their
prepared file. As Python rows ({index: (reason, detail)}, the load before 2026-12-03) against `DropList` (sorted arrays).
Each case in a fresh process; figures into docs/performance.md.

`python -m bench.drop_list_memory_bench` (about half a minute)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from bench.common import machine, publish

BEGIN, END = "<!-- drop-list-memory-bench:begin -->", "<!-- drop-list-memory-bench:end -->"
SIZES = (250_000, 1_000_000)
DOCS_PER_DROP = 4  # documents of the prepared file per listed drop (the lookups: every document asks)


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    return 0


def _table(n: int):
    """`n` drops shaped as the growth corpus's: ~2/3 near duplicates with a ~150-character detail, the rest exact."""
    import numpy as np
    import pyarrow as pa

    from mixture.pipelines.schemas import DROPS

    rng = np.random.default_rng(0)
    idx = np.sort(rng.choice(n * DOCS_PER_DROP, n, replace=False))
    fuzzy = rng.random(n) < 2 / 3
    detail = [f"near duplicate of web-{i:08d}.jsonl.zst:{i % 9973} (similarity 0.{i % 89 + 10:02d} over 5-grams; "
              f"band {i % 14} of 14, candidate family of {i % 251 + 2} documents)" if f
              else f"same text as web-{i:08d}.jsonl.zst:{i % 9973}" for i, f in zip(range(n), fuzzy, strict=True)]
    reason = np.where(fuzzy, "fuzzy_duplicate", "exact_duplicate").tolist()
    return pa.table({"rank": pa.array(np.zeros(n, np.int32)), "idx": pa.array(idx), "reason": reason,
                     "detail": detail}, schema=DROPS)


def _measure(kind: str, n: int) -> dict:
    """In this process: load `n` drops as `kind`, then ask for every document of the file; memory and CPU."""
    import gc
    import resource

    from mixture.pipelines.dedup.route_drops import DropList

    table = _table(n)
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here
    before, t0 = _status("RssAnon"), time.process_time()
    if kind == "rows":
        drops: object = {r["idx"]: (r["reason"], r["detail"]) for r in table.to_pylist()}
    else:
        drops = DropList(table)
    del table
    gc.collect()
    load = time.process_time() - t0
    held, peak = _status("RssAnon"), _status("VmHWM")
    t0 = time.process_time()
    found = sum(drops.get(i) is not None for i in range(n * DOCS_PER_DROP))
    lookup = time.process_time() - t0
    assert found == n
    return {"kind": kind, "drops": n, "held": held - before, "peak_over_start": peak - before,
            "load_cpu": load, "lookup_cpu": lookup, "lookups": n * DOCS_PER_DROP,
            "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def run_case(kind: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.drop_list_memory_bench", "--case", kind, str(n)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(results: list[dict]) -> str:
    lines = [BEGIN, "## Memory of a task's dedup verdicts (`python -m bench.drop_list_memory_bench`)", "",
             f"Machine: {machine('pyarrow, numpy')}. Each case in a fresh process: a DROPS table of `drops` rows "
             "(2/3 near duplicates with a ~150-character detail, the rest exact), loaded as the stages load it; "
             "then every document of a file with "
             f"{DOCS_PER_DROP} documents per drop asks for its verdict (`get`). Held: resident anonymous memory "
             "after the load, the table let go; peak: the high-water mark over the start.", "",
             "| drops | held as | held | peak | load CPU | lookups CPU (per document) |",
             "|---:|---|---:|---:|---:|---:|"]
    for r in results:
        name = "Python rows (before)" if r["kind"] == "rows" else "DropList"
        lines.append(f"| {r['drops']:,} | {name} | {r['held'] / 2**20:.0f} MiB | {r['peak_over_start'] / 2**20:.0f} MiB "
                     f"| {r['load_cpu']:.2f} s | {r['lookup_cpu']:.2f} s ({r['lookup_cpu'] / r['lookups'] * 1e6:.2f} µs) |")
    lines += ["", "A pool task (T = 8,000, ~4M documents) lists ~0.4–1M drops when ~10–25 % of its documents are "
              "duplicates."]
    return "\n".join(lines + [END])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--case", nargs=2, metavar=("KIND", "DROPS"), help=argparse.SUPPRESS)
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    args = p.parse_args()
    if args.case:
        print(json.dumps(_measure(args.case[0], int(args.case[1]))))
        return
    text = report([run_case(kind, n) for n in SIZES for kind in ("rows", "arrays")])
    print(text)
    if not args.no_publish:
        publish(text, BEGIN, END)


if __name__ == "__main__":
    main()
