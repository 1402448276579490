"""Benchmark: the static overview page (`mixture overview`): time to write it, its size, and the time Chromium
takes to load it, for the demo store and for a worst case of 200 cells x 4 samples of long Python sources.

    python -m bench.overview_bench [--store demo/store --plan demo/plan.json] [--repeats 3] [--no-write]
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

START, END = "<!-- overview-bench:start -->", "<!-- overview-bench:end -->"
CHROMIUM = "/usr/bin/chromium"


def worst_case_store(root: Path) -> Path:
    """k = 40 (200 cells), 4 uniform samples per cell, each a long standard-library module (quotes, brackets)."""
    import pyarrow as pa

    from mixture.accounting import synthetic_documents, write_synthetic_store
    from tests.overview.conftest import python_sources

    docs = synthetic_documents(k=40, docs_per_cell=10, seed=3)
    sources = python_sources()
    text = pa.array([sources[i % len(sources)] for i in range(docs.num_rows)], pa.string())
    docs = docs.set_column(docs.schema.get_field_index("text"), "text", text)
    write_synthetic_store(str(root), docs, samples_per_cell=4)
    return root


def write_times(store: str, plan: str | None, out: Path, repeats: int) -> tuple[list[float], int, int, int]:
    """Seconds of each `write_overview` (a fresh reader each time), the page's bytes, cells and documents."""
    from mixture.accounting import StoreReader
    from mixture.overview.page import build_page
    from mixture.overview.render import write_overview
    from mixture.planner.formats import read_plan

    loaded = read_plan(plan) if plan else None
    times, size = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        size = write_overview(StoreReader(store), str(out), loaded, plan or "").bytes
        times.append(time.perf_counter() - t0)
    page = build_page(StoreReader(store), loaded)
    cells = sum(len(d.cells) for d in page.domains)
    return times, size, cells, sum(len(c.samples) for d in page.domains for c in d.cells)


def load_times(page: Path, repeats: int) -> list[tuple[float, float]] | None:
    """(first contentful paint, load event) in ms after navigation start, of the page opened from disk in
    Chromium, a fresh context each time."""
    if not os.path.exists(CHROMIUM):
        return None
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for _ in range(repeats + 1):
            ctx = browser.new_context()
            tab = ctx.new_page()
            tab.goto(page.as_uri())
            out.append(tuple(tab.evaluate(
                "[performance.getEntriesByName('first-contentful-paint')[0].startTime, "
                "performance.getEntriesByType('navigation')[0].loadEventEnd]")))
            ctx.close()
        browser.close()
    return out[1:]  # the first warms the browser


def run(store: str | None, plan: str | None, repeats: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        if store and ("://" in store or (Path(store) / "store.json").exists()):
            cases.append((f"`make demo` store{' and plan' if plan else ''}", store, plan))
        cases.append(("worst case: 200 cells × 4 samples, each a long Python source",
                      str(worst_case_store(Path(tmp) / "worst")), None))
        for i, (name, s, p) in enumerate(cases):
            out = Path(tmp) / f"page{i}"
            writes, size, cells, docs = write_times(s, p, out, repeats)
            loads = load_times(out / "index.html", max(5, repeats))
            rows.append({"name": name, "writes": writes, "size": size, "cells": cells, "docs": docs, "loads": loads})
    return rows


def markdown(rows: list[dict], repeats: int) -> str:
    lines = [START, "## Static overview page (`bench/overview_bench.py`)", "",
             f"`python -m bench.overview_bench` — `mixture overview` (store.json and `_samples/` read through the "
             f"accounting layer, rendered, written atomically), median of {repeats} writes; then the file opened from "
             "disk in Chromium (a fresh context each time, median of 5): first contentful paint and the load event. "
             f"2 cores, load average {os.getloadavg()[0]:.1f} when it ran (other jobs share the machine).", "",
             "| store | cells | documents | page size | write (median) | first paint | load event |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        paint, load = (f"{statistics.median(x):.0f} ms" for x in zip(*r["loads"], strict=True)) if r["loads"] else ("–", "–")
        lines.append(f"| {r['name']} | {r['cells']:,} | {r['docs']:,} | {r['size'] / 1e6:.2f} MB | "
                     f"{statistics.median(r['writes']):.2f} s | {paint} | {load} |")
    lines += ["", "Document text is capped by a page budget (`--text-budget`, 2 MB of escaped text shared by the "
              "samples), so 200 cells × 4 samples stay under 3 MB however long the documents are.", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=str(ROOT / "demo" / "store"))
    parser.add_argument("--plan", default=str(ROOT / "demo" / "plan.json"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only, leave docs/performance.md alone")
    args = parser.parse_args()
    plan = args.plan if args.plan and Path(args.plan).exists() else None
    text = markdown(run(args.store, plan, args.repeats), args.repeats)
    print(text)
    if not args.no_write:
        publish(text, START, END)


if __name__ == "__main__":
    main()
