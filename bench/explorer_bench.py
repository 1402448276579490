"""Benchmark: the overview's first render (AppTest, cold cache) on a store and on one 10x larger; and in a real
browser (headless chromium, playwright) the time "Open all" and "Close all" take on 40 domains.

    python -m bench.explorer_bench [--repeats 5] [--no-write]   # writes its section of docs/performance.md
    python -m bench.explorer_bench --browser-only --store demo/store [--python P --app A]   # another store or app
    python -m bench.explorer_bench --first-load --store demo/store [--python P --app A]   # headline -> interactive
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import machine, publish  # noqa: E402
from mixture.explorer import MAIN, SERVE  # noqa: E402
from mixture.store.formats import read_store_artifact  # noqa: E402
from tests.explorer.synthstore import build_store  # noqa: E402

APP = str(MAIN)  # what AppTest runs
SERVED = str(SERVE)  # what the browser runs are served, as by `mixture explore`
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


def run(repeats: int = 5, k: int = 20, browser: bool = True) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        t0 = time.perf_counter()
        build_store(small, k=k, scale=1, shards_per_cell=1)
        build_store(large, k=k, scale=10, shards_per_cell=10)
        rows = []
        if browser and os.path.exists(CHROMIUM):
            forty = Path(tmp) / "forty"
            build_store(forty, k=40)
            rows.append({"store": "synthetic, 40 domains", "app": "this checkout", **open_all(forty, 3)})
        built = time.perf_counter() - t0
        first_render(small)  # warm the imports once
        times: dict[str, list[float]] = {"small": [], "large": []}
        for _ in range(repeats):
            for name, store in (("small", small), ("large", large)):
                times[name].append(first_render(store))
        files = {n: len(list(s.glob("cluster=*/quality=*/*.parquet"))) for n, s in (("small", small), ("large", large))}
        docs = {}
        for n, s in (("small", small), ("large", large)):
            docs[n] = read_store_artifact(str(s / "store.json")).counters.records_out
    med = {n: statistics.median(v) for n, v in times.items()}
    return {"k": k, "repeats": repeats, "build_seconds": built, "files": files, "docs": docs, "times": times,
            "median": med, "ratio": med["large"] / med["small"], "browser": rows}


CHROMIUM = "/usr/bin/chromium"
_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
# The time of a click: from the click to the last change of the page's DOM, once Streamlit's run is over (no status
# widget, no stale element) and nothing changed for a second.
_OBSERVE = """() => { window.__last = performance.now(); new MutationObserver(() => { window.__last = performance.now(); })
  .observe(document.body, {subtree: true, childList: true, attributes: true, characterData: true}); }"""
_QUIET = """(ms) => !document.querySelector('[data-testid="stStatusWidget"]') &&
  !document.querySelector('[data-stale="true"]') && performance.now() - window.__last > ms"""
_DRAWN = """() => [document.querySelectorAll('[data-testid="stCode"]').length,
  document.querySelectorAll('[data-testid="stExpanderDetails"] [data-testid="stMarkdown"]').length]"""


def _serve(store: Path, python: str, app: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MIXTURE_STORE=str(store), MIXTURE_SHARE="0")
    env.pop("MIXTURE_PLAN", None)
    proc = subprocess.Popen([python, "-m", "streamlit", "run", app, "--server.port", str(port), "--server.address",
                             "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(url + "_stcore/health", timeout=2)
            return proc, url
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                proc.terminate()
                raise RuntimeError("streamlit did not start") from None
            time.sleep(0.2)


def open_all(store: Path, repeats: int = 3, python: str = sys.executable, app: str = SERVED) -> dict:
    """Seconds "Open all" and "Close all" take in headless chromium at 1280 × 900 (each the median of `repeats`
    clicks on a warm server), with what an open-all page draws (code blocks, panels' Markdown blocks)."""
    from playwright.sync_api import sync_playwright

    proc, url = _serve(store, python, app)
    times: dict[str, list[float]] = {"Open all": [], "Close all": []}
    drawn = None
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(url)
            page.get_by_text("semantic domains").first.wait_for(timeout=120000)
            page.evaluate(_OBSERVE)
            page.wait_for_function(_QUIET, arg=1000, timeout=120000, polling=100)
            for _ in range(repeats + 1):  # the first open-all fills the caches: not counted
                for label in ("Open all", "Close all"):
                    start = page.evaluate("() => performance.now()")
                    page.get_by_role("button", name=label, exact=True).click()
                    page.wait_for_timeout(200)
                    page.wait_for_function(_QUIET, arg=1000, timeout=300000, polling=100)
                    times[label].append((page.evaluate("() => window.__last") - start) / 1000)
                    if label == "Open all":
                        drawn = page.evaluate(_DRAWN)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    load = os.getloadavg()[0]
    return {"times": {k: v[1:] for k, v in times.items()}, "median": {k: statistics.median(v[1:]) for k, v in
                                                                       times.items()},
            "code_blocks": drawn[0], "markdown": drawn[1], "load": load}


_INTERACTIVE = """() => !document.querySelector('[data-testid="stStatusWidget"]') &&
  !document.querySelector('[data-stale="true"]') && document.querySelectorAll('[data-testid="stMetric"]').length > 0 &&
  !!document.querySelector('input[aria-label^="Search labels"]') &&
  document.querySelectorAll('.st-key-domain_index button').length > 0"""


def first_load(store: Path, repeats: int = 5, python: str = sys.executable, app: str = SERVED) -> dict:
    """Seconds from opening the overview in a new browser session (a warm server) to its headline, and from the
    headline to the page being interactive (cards, search box and domain index drawn, Streamlit's run over, no
    stale element), in headless chromium at 1280 × 900; `repeats` sessions after a first, uncounted one."""
    from playwright.sync_api import sync_playwright

    proc, url = _serve(store, python, app)
    headline, interactive = [], []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=_ARGS)
            for i in range(repeats + 1):
                ctx = browser.new_context(viewport={"width": 1280, "height": 900})
                page = ctx.new_page()
                t0 = time.perf_counter()
                page.goto(url)
                page.locator("h2", has_text="semantic domains").first.wait_for(timeout=120000)
                t1 = time.perf_counter()
                page.wait_for_function(_INTERACTIVE, timeout=120000, polling=20)
                t2 = time.perf_counter()
                if i:
                    headline.append(t1 - t0)
                    interactive.append(t2 - t1)
                ctx.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"headline": headline, "interactive": interactive, "load": os.getloadavg()[0],
            "median": {"headline": statistics.median(headline), "interactive": statistics.median(interactive)}}


def markdown(r: dict) -> str:
    lines = [START, "## Explorer: overview first render", "",
             f"`python -m bench.explorer_bench` — AppTest, Streamlit caches cleared before every render, "
             f"k = {r['k']} domains × 5 buckets, median of {r['repeats']} runs on this machine (2 cores).", "",
             "| store | documents | shard files | first render (median) | all runs (s) |", "|---|---|---|---|---|"]
    for n in ("small", "large"):
        runs = ", ".join(f"{t:.3f}" for t in r["times"][n])
        lines.append(f"| {n} | {r['docs'][n]:,} | {r['files'][n]:,} | {r['median'][n]:.3f} s | {runs} |")
    lines += ["", f"Ratio large / small: **{r['ratio']:.2f}** (10× the documents and shard files). The overview "
              "reads only store.json and `_samples/`, so its time does not grow with the store."]
    lines += browser_markdown(r.get("browser") or [])
    return "\n".join(lines + [END])


def browser_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["", "### Open all / Close all in a browser", "",
           "Headless chromium (playwright) at 1280 × 900 on a warm server: from the click to the last change of the "
           "page (Streamlit's run over and nothing changed for a second), median of the clicks after a first one. "
           f"Machine: {machine()}; the load average during each run is given (the machine is shared).", "",
           "| store | app | Open all | Close all | code blocks drawn (open all) | load average |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['store']} | {r['app']} | {r['median']['Open all']:.2f} s "
                   f"({', '.join(f'{t:.2f}' for t in r['times']['Open all'])}) | {r['median']['Close all']:.2f} s "
                   f"({', '.join(f'{t:.2f}' for t in r['times']['Close all'])}) | {r['code_blocks']} | {r['load']:.1f} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--no-write", action="store_true", help="print only, leave docs/performance.md alone")
    parser.add_argument("--browser-only", action="store_true", help="only Open all / Close all on --store, printed")
    parser.add_argument("--first-load", action="store_true", help="only the first load on --store, printed")
    parser.add_argument("--store", help="the store for --browser-only / --first-load (e.g. demo/store)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs streamlit (another checkout's)")
    parser.add_argument("--app", default=SERVED, help="the explorer script to serve (serve.py or main.py)")
    args = parser.parse_args()
    if args.first_load:
        r = first_load(Path(args.store), args.repeats, args.python, args.app)
        print(f"{args.app}: headline {r['median']['headline']:.2f} s, then interactive after "
              f"{r['median']['interactive']:.2f} s more (medians of {args.repeats}; headline "
              f"{', '.join(f'{t:.2f}' for t in r['headline'])}; interactive "
              f"{', '.join(f'{t:.2f}' for t in r['interactive'])}); load average {r['load']:.1f}")
        return
    if args.browser_only:
        r = open_all(Path(args.store), args.repeats, args.python, args.app)
        print("\n".join(browser_markdown([{"store": args.store, "app": args.app, **r}])))
        return
    r = run(args.repeats, args.k)
    text = markdown(r)
    print(text)
    if not args.no_write:
        publish(text, START, END)


if __name__ == "__main__":
    main()
