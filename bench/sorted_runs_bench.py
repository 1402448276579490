"""Memory and CPU of sorting one band's signature records (`minhash_sigs`): one sort in memory against sorted runs
merged block by block (pipelines/dedup/sorted_runs.py), on files of 0.25M to 4M records (a pool task holds ~4M
documents); each sort in a fresh process, the two ways in turn; a table into docs/performance.md.

`python -m bench.sorted_runs_bench` (~2 min), `--records 250000,1000000` for other sizes, `--no-publish`."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import machine, show

BEGIN, END = "<!-- sorted-runs-bench:begin -->", "<!-- sorted-runs-bench:end -->"
ROWS = 8  # rows per band of the default spec (112 permutations, 14 bands)

SORT = r"""
import json, resource, sys, time
import mixture  # first, as in a build: it picks numpy's and Arrow's allocators before they are imported
import numpy as np
from mixture.pipelines.dedup import sorted_runs
from mixture.pipelines.dedup.minhash_buckets import signature_record
path, rows, way = sys.argv[1], int(sys.argv[2]), sys.argv[3]
dtype = signature_record(rows)
start = time.process_time()
if way == "before":  # what minhash_sigs did before runs: one structured sort in place
    records = np.fromfile(path, dtype=dtype)
    records.sort(order=dtype.names)
    n = len(records)
else:
    if way == "memory":
        sorted_runs.RUN_BYTES = 1 << 62  # one sort in memory, as a task under RUN_BYTES does
    n = sum(len(block) for block in sorted_runs.sorted_blocks(path, dtype))
cpu = time.process_time() - start
print(json.dumps({"records": n, "cpu": cpu, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

BASE = r"""
import json, resource, sys
import mixture, numpy as np, mixture.pipelines.dedup.sorted_runs
print(json.dumps({"peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _write(path: Path, n: int, seed: int) -> None:
    import numpy as np

    from mixture.pipelines.dedup.minhash_buckets import signature_record

    dtype = signature_record(ROWS)
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        for start in range(0, n, 1 << 20):
            m = min(1 << 20, n - start)
            records = np.empty(m, dtype)
            for j in range(ROWS):
                records[f"h{j}"] = rng.integers(0, np.iinfo(np.uint64).max, m, dtype=np.uint64)
            records["doc"] = np.arange(start, start + m)
            records.tofile(f)


def _run(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", default="250000,1000000,4000000")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--no-publish", action="store_true")
    a = p.parse_args()
    from mixture.pipelines.dedup.minhash_buckets import signature_record
    from mixture.pipelines.dedup.sorted_runs import MERGE_BYTES, RUN_BYTES

    itemsize = signature_record(ROWS).itemsize
    base = _run(BASE)["peak"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="sorted-runs-bench-") as tmp:
        for n in map(int, a.records.split(",")):
            path = Path(tmp) / f"band-{n}"
            _write(path, n, n)
            got = {"before": [], "memory": [], "runs": []}
            for _ in range(a.repeats):
                for way in got:
                    got[way].append(_run(SORT, str(path), str(ROWS), way))
            assert all(r["records"] == n for w in got.values() for r in w)
            best = {w: (min(r["cpu"] for r in rs), max(r["peak"] for r in rs)) for w, rs in got.items()}
            rows.append((n, n * itemsize / 2**20, *best["before"], *best["memory"], *best["runs"]))
            path.unlink()
    lines = [
        BEGIN,
        "## Sorting a band's signatures in bounded memory (`python -m bench.sorted_runs_bench`)",
        "",
        f"{machine()}. `minhash_sigs` sorts each band of its task's signatures (records of {ROWS} hashes and a "
        f"document, {itemsize} B) before the bucket stage merges them. Before: one structured sort of the whole "
        "band in place. In memory: `sort_records` (a numeric sort of the first hash, then the records that share "
        "it by every field), what a task does when its band is under a run. Runs: sorted runs of "
        f"{RUN_BYTES >> 20} MiB merged in blocks of {MERGE_BYTES >> 20} MiB in all (`pipelines/dedup/sorted_runs.py`), "
        "what a larger task does. Each sort in a fresh process (peak resident memory; the process with numpy and "
        f"the module imported: {base:.0f} MiB), CPU the least of {a.repeats} runs, the ways in turn; random records.",
        "",
        "| records | band | before: CPU s | peak MiB | in memory: CPU s | peak MiB | runs: CPU s | peak MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {n:,} | {mib:.0f} MiB | {bc:.2f} | {bp:.0f} | {mc:.2f} | {mp:.0f} | {rc:.2f} | {rp:.0f} |"
          for n, mib, bc, bp, mc, mp, rc, rp in rows),
        END,
    ]
    show("\n".join(lines), BEGIN, END, not a.no_publish)


if __name__ == "__main__":
    main()
