"""Benchmark: the overview's first render (AppTest, cold cache) on a store and on one 10x larger.

    python -m bench.explorer_bench [--repeats 5] [--no-write]   # writes its section of docs/performance.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import publish  # noqa: E402
from mixture.explorer import MAIN  # noqa: E402
from mixture.store.formats import StoreArtifact, read_model  # noqa: E402
from tests.explorer.synthstore import build_store  # noqa: E402

APP = str(MAIN)
START, END = "<!-- explorer-bench:start -->", "<!-- explorer-bench:end -->"


def first_render(store: Path) -> float:
    """Seconds for one cold overview render (Streamlit caches cleared first)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()
    st.cache_resource.clear()
    os.environ["MIXTURE_STORE"] = str(store)
    os.environ.pop("MIXTURE_PLAN", None)
    at = AppTest.from_file(APP, default_timeout=120)
    t0 = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - t0
    if at.exception or "semantic domains" not in at.header[0].value:
        raise RuntimeError(f"overview failed on {store}: {[e.value for e in at.exception]}")
    return elapsed


def run(repeats: int = 5, k: int = 20) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        t0 = time.perf_counter()
        build_store(small, k=k, scale=1, shards_per_cell=1)
        build_store(large, k=k, scale=10, shards_per_cell=10)
        built = time.perf_counter() - t0
        first_render(small)  # warm the imports once
        times: dict[str, list[float]] = {"small": [], "large": []}
        for _ in range(repeats):
            for name, store in (("small", small), ("large", large)):
                times[name].append(first_render(store))
        files = {n: len(list(s.glob("cluster=*/quality=*/*.parquet"))) for n, s in (("small", small), ("large", large))}
        docs = {}
        for n, s in (("small", small), ("large", large)):
            docs[n] = read_model(StoreArtifact, str(s / "store.json")).counters.records_out
    med = {n: statistics.median(v) for n, v in times.items()}
    return {"k": k, "repeats": repeats, "build_seconds": built, "files": files, "docs": docs, "times": times,
            "median": med, "ratio": med["large"] / med["small"]}


def markdown(r: dict) -> str:
    lines = [START, "## Explorer: overview first render", "",
             f"`python -m bench.explorer_bench` — AppTest, Streamlit caches cleared before every render, "
             f"k = {r['k']} domains × 5 buckets, median of {r['repeats']} runs on this machine (2 cores).", "",
             "| store | documents | shard files | first render (median) | all runs (s) |", "|---|---|---|---|---|"]
    for n in ("small", "large"):
        runs = ", ".join(f"{t:.3f}" for t in r["times"][n])
        lines.append(f"| {n} | {r['docs'][n]:,} | {r['files'][n]:,} | {r['median'][n]:.3f} s | {runs} |")
    lines += ["", f"Ratio large / small: **{r['ratio']:.2f}** (10× the documents and shard files). The overview "
              "reads only store.json and `_samples/`, so its time does not grow with the store.", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--no-write", action="store_true", help="print only, leave docs/performance.md alone")
    args = parser.parse_args()
    r = run(args.repeats, args.k)
    text = markdown(r)
    print(text)
    if not args.no_write:
        publish(text, START, END)


if __name__ == "__main__":
    main()
