"""Materialize benchmark: peak memory of one task and of the driver, wall time and rows decoded per row written,
as the mixture grows (synthetic stores of 1×, 4×, 16× documents, each drawn at one epoch). Figures go into
docs/performance.md."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import yaml

from bench.common import machine, publish
from bench.memory_bench import _children, _kb

BEGIN, END = "<!-- materialize-bench:begin -->", "<!-- materialize-bench:end -->"
REPO = Path(__file__).resolve().parent.parent
MIB = 2**20
WORDS = ["the", "of", "and", "to", "in", "is", "socket", "server", "request", "matrix", "theorem", "proof",
         "function", "return", "value", "council", "meeting", "minutes", "budget", "river", "mountain",
         "recipe", "garden", "python", "class", "import", "error", "network", "protocol", "energy",
         "climate", "integral", "limit", "series", "vector", "kernel", "thread", "memory", "cache"]


def documents(n: int, k: int, seed: int = 0) -> pa.Table:
    """`n` documents of about 2,000 characters over k × 5 cells (texts from a pool of 512, real token counts)."""
    from mixture.accounting.synthetic import TOKENIZER, synthetic_documents
    from mixture.tokenizer import count_tokens, load_tokenizer

    rng = np.random.default_rng(seed)
    pool = [" ".join(rng.choice(WORDS, size=int(w))) for w in rng.integers(100, 600, size=512)]
    tokens = np.array(count_tokens(load_tokenizer(TOKENIZER), pool), dtype=np.int64)
    docs = synthetic_documents(k=k, docs_per_cell=max(1, n // (k * 5)), seed=seed, pool_size=16)
    pick = rng.integers(0, len(pool), size=docs.num_rows)
    for name, values in (("text", pa.array([pool[i] for i in pick], pa.string())),
                         ("n_tokens", pa.array(tokens[pick])),
                         ("n_chars", pa.array(np.array([len(pool[i]) for i in pick], dtype=np.int64)))):
        docs = docs.set_column(docs.schema.get_field_index(name), name, values)
    return docs


def make_store(root: Path, n: int, k: int, docs_per_file: int) -> tuple[Path, Path, dict]:
    """A synthetic store of about `n` documents and a plan drawing all its tokens once (phases 0.8 / 0.2)."""
    from mixture.accounting.synthetic import write_synthetic_store

    docs = documents(n, k)
    store = root / "store"
    shards = max(1, docs.num_rows // (k * 5 * docs_per_file))
    artifact = write_synthetic_store(str(store), docs, k=k, shards_per_cell=shards)
    spec = root / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "bench", "sources": [{"name": "synthetic", "uri": "corpus/*.jsonl", "format": "jsonl"}],
        "store": {"uri": str(store)},
        "mixture": {"budget": artifact.counters.tokens_out, "max_epochs": 8,
                    "phases": [{"name": "pretrain", "fraction": 0.8}, {"name": "anneal", "fraction": 0.2}]}}))
    plan = root / "plan.json"
    mixture = str(REPO / ".venv" / "bin" / "mixture")
    subprocess.run([mixture, "plan", str(spec), "--out", str(plan)], check=True, capture_output=True)
    text = int(sum(len(t) for t in docs.column("text").to_pylist()))
    return store, plan, {"store_docs": docs.num_rows, "tokens": artifact.counters.tokens_out, "text": text,
                         "files": sum(c.shards for c in artifact.cells)}


def descendants(pid: int) -> list[int]:
    kids, todo, out = _children(), [pid], []
    while todo:
        p = todo.pop()
        out += kids.get(p, [])
        todo += kids.get(p, [])
    return out


def run(cmd: list[str], interval: float, env: dict) -> dict:
    """Run `cmd`, polling the driver's peak RSS (VmHWM) and every descendant's (the task processes)."""
    peaks: dict[int, int] = {}
    driver = [0]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            driver[0] = max(driver[0], _kb(f"/proc/{proc.pid}/status", "VmHWM:") * 1024)
            for child in descendants(proc.pid):
                peaks[child] = max(peaks.get(child, 0), _kb(f"/proc/{child}/status", "VmHWM:") * 1024)
            done.wait(interval)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    out, _ = proc.communicate()
    done.set()
    th.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out.decode()[-3000:]}")
    return {"wall": time.perf_counter() - t, "driver": driver[0], "task": max(peaks.values(), default=0)}


def task_stats(out: Path) -> dict:
    """Over the tasks, from datatrove's stats of the two steps: rows decoded (scatter), the most text a task held
    at once (scatter buffers, gather groups), groups of shards (gather; datatrove writes only total and mean for a
    stat updated once)."""
    tot = {"decoded": 0, "held_chars_max": 0, "scatter_chars_max": 0, "groups": 0, "bucket_files": 0}

    def stat(s: dict, name: str) -> dict:
        v = s.get(name, {})
        return v if isinstance(v, dict) else {"total": v, "n": 1, "max": v}

    for p in (out / "_materialize" / "scatter" / "stats").glob("*.json"):
        s = json.loads(p.read_text())[0]["stats"]
        tot["decoded"] += stat(s, "rows_decoded").get("total", 0)
        tot["bucket_files"] += stat(s, "bucket_files").get("total", 0)
        held = stat(s, "scatter_held_chars")
        tot["scatter_chars_max"] = max(tot["scatter_chars_max"], held.get("max", held.get("total", 0)))
    for p in (out / "_materialize" / "stats").glob("*.json"):
        s = json.loads(p.read_text())[0]["stats"]
        held = stat(s, "held_chars")
        tot["held_chars_max"] = max(tot["held_chars_max"], held.get("max", held.get("total", 0)))
        tot["groups"] += held.get("n", 1 if held else 0)
    return tot


def markdown(results: list[dict], args, cmd: str) -> str:
    heads = " | ".join(f"{r['size']}×" for r in results)
    row = lambda label, f: f"| {label} | " + " | ".join(f(r) for r in results) + " |"  # noqa: E731
    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
    lines = [
        BEGIN,
        "## Materialize: memory of a task as the mixture grows (`bench/materialize_bench.py`)",
        "",
        f"Machine: {machine()}; `uname -a`: `{uname}`. "
        "Load average (1/5/15 min) when each run started: "
        + "; ".join(f"{r['size']}×: {r['load']}" for r in results) + ".",
        "",
        f"Reproduce: `{cmd}`. Each size is a synthetic store (`write_synthetic_store`, k = {args.k}, texts of "
        f"≈ 2,000 characters, about {args.docs_per_file:,} documents per shard file, one row group each) planned at "
        "one epoch (`budget` = its tokens; phases 0.8 / 0.2, proportional) and materialized with "
        f"`mixture materialize --tasks {args.tasks} --workers {args.workers} --shard-bytes {args.shard_bytes} "
        f"--memory {args.memory} --keep-work` in a fresh process (`MIXTURE_START_METHOD=forkserver`: the pool's "
        "processes start from a small server process, so their peak is their own). Every "
        f"{args.interval * 1000:.0f} ms the benchmark reads `VmHWM` (peak RSS) of the driver and of every process "
        "under it; *task peak* is the largest of the task processes (each runs one task after another). Rows "
        "decoded and text held come from the tasks' datatrove stats (scatter and gather).",
        "",
        f"| | {heads} |",
        "|---|" + "---:|" * len(results),
        row("documents in the store", lambda r: f"{r['store_docs']:,}"),
        row("text in the store (characters, drawn once)", lambda r: f"{r['text'] / MIB:,.0f} Mi"),
        row("documents written", lambda r: f"{r['docs']:,}"),
        row("tokens drawn", lambda r: f"{r['tokens']:,}"),
        row("shards written", lambda r: f"{r['shards']:,}"),
        row("wall time", lambda r: f"{r['wall']:.1f} s"),
        row("**task peak RSS**", lambda r: f"**{r['task'] / MIB:,.0f} MiB**"),
        row("most text a scatter task buffered (characters)", lambda r: f"{r.get('scatter_chars_max', 0) / MIB:,.1f} Mi"),
        row("most text a gather task held (characters)", lambda r: f"{r['held_chars_max'] / MIB:,.1f} Mi"),
        row("groups of shards (Σ over tasks)", lambda r: f"{r['groups']:,}"),
        row("intermediate files (Σ over scatter tasks)", lambda r: f"{r.get('bucket_files', 0):,}"),
        row("rows decoded per row written", lambda r: f"{r['decoded'] / max(1, r['docs']):.1f}"),
        row("driver peak RSS (draw plan)", lambda r: f"{r['driver'] / MIB:,.0f} MiB"),
    ]
    if any("baseline" in r for r in results):
        lines.append(row("before (one process, all text in memory): peak RSS, wall",
                         lambda r: f"{r['baseline']['driver'] / MIB:,.0f} MiB, {r['baseline']['wall']:.1f} s"
                         if "baseline" in r else "–"))
    base, top = results[0], results[-1]
    lines += [
        "",
        f"Task peak {base['task'] / MIB:,.0f} → {top['task'] / MIB:,.0f} MiB "
        f"({top['task'] / base['task']:.2f}×) while the mixture grew {top['text'] / base['text']:.0f}×; the driver, "
        f"which holds the index and the draws (integers, no text), {base['driver'] / MIB:,.0f} → "
        f"{top['driver'] / MIB:,.0f} MiB (at these sizes the draw plan is small next to the imports). Rows decoded "
        f"per row written {base['decoded'] / max(1, base['docs']):.2f} → {top['decoded'] / max(1, top['docs']):.2f}: "
        "the scatter tasks read each drawn store file once, in order, and send every draw to its group of shards "
        "(`_materialize/shuffle/`); the gather tasks write the shards from them (docs/planner.md, Materialize). The "
        "wall time over the one-process version, which held the whole text, is starting two rounds of task "
        "processes (datatrove, Arrow: several seconds each on this loaded machine) and writing the text twice."
        + (" *Before*: the same plans with `--baseline OLD/.venv/bin/mixture`, the previous version's `mixture "
           "materialize` (one process; its peak grows with the text of the cells drawn)." if any(
            "baseline" in r for r in results) else ""),
        END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", help="where to write the stores and mixtures (default: a temporary folder)")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--docs", type=int, default=6_000, help="documents of the 1× store")
    p.add_argument("--sizes", default="1,4,16")
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--docs-per-file", type=int, default=500)
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--shard-bytes", default="2MB")
    p.add_argument("--memory", default="8MB")
    p.add_argument("--interval", type=float, default=0.02)
    p.add_argument("--baseline", help="another installation's `mixture` to run the same plans with (one process, "
                                      "its own options: --shard-bytes only)")
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    p.add_argument("--results", help="JSON lines of the sizes already measured (the lines this prints): render the "
                                     "section from them instead of measuring")
    args = p.parse_args(argv)
    if args.results:
        results = [json.loads(line) for line in Path(args.results).read_text().splitlines() if line.startswith("{")]
        args.baseline = args.baseline or any("baseline" in r for r in results)
    cmd = "python -m bench.materialize_bench" + (" --baseline OLD/.venv/bin/mixture" if args.baseline else "")
    if args.results:
        return _publish(markdown(results, args, cmd), args.no_publish)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="materialize-bench-"))
    mixture = str(REPO / ".venv" / "bin" / "mixture")
    env = {**os.environ, "MIXTURE_START_METHOD": "forkserver", "COLUMNS": "120"}
    results = []
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            where = root / f"x{size}"
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir(parents=True)
            store, plan, facts = make_store(where, args.docs * size, args.k, args.docs_per_file)
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            out = where / "mix"
            got = run([mixture, "materialize", str(plan), "--out", str(out), "--tasks", str(args.tasks),
                       "--workers", str(args.workers), "--shard-bytes", args.shard_bytes, "--memory", args.memory,
                       "--keep-work"], args.interval, env)
            manifest = json.loads((out / "manifest.json").read_text())
            result = {"size": size, "load": load, **facts, **got, **task_stats(out),
                      "shards": sum(len(ph["shards"]) for ph in manifest["phases"]),
                      "docs": sum(ph["docs"] for ph in manifest["phases"])}
            if args.baseline:
                result["baseline"] = run([args.baseline, "materialize", str(plan), "--out", str(where / "before"),
                                          "--shard-bytes", args.shard_bytes], args.interval, env)
            results.append(result)
            print(json.dumps({k: v for k, v in result.items()}), flush=True)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    _publish(markdown(results, args, cmd), args.no_publish)


def _publish(text: str, no_publish: bool) -> None:
    if no_publish:
        print(text)
    else:
        publish(text, BEGIN, END)
        print(f"wrote the materialize section of {REPO / 'docs' / 'performance.md'}")


if __name__ == "__main__":
    main()
