"""Memory benchmark: peak memory of `mixture build --workers 1` (a fresh process each) as the input grows 1x, 3x
and 10x (distinct demo corpora), with the peak of every stage. Figures go into docs/performance.md."""

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

from bench.build_bench import REPO, demo_corpus, demo_spec, load, write_spec
from bench.common import machine, proc_stats, publish
from mixture.stages import registry as stage_registry
from mixture.store.formats import read_store_artifact

BEGIN, END = "<!-- memory-bench:begin -->", "<!-- memory-bench:end -->"
STAGES = list(stage_registry.names())
MIB = 2**20


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for pid, fields in proc_stats():
        kids.setdefault(int(fields[1]), []).append(pid)
    return kids


def _kb(path: str, key: str) -> int:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def tree_memory(pid: int) -> tuple[int, int, int, int]:
    """(Σ RSS, Σ PSS, Σ PSS without `pid` itself, processes) of `pid` and all its descendants, in bytes."""
    kids, todo, pids = _children(), [pid], []
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += kids.get(p, [])
    rss = sum(_kb(f"/proc/{p}/status", "VmRSS:") for p in pids)
    pss = [_kb(f"/proc/{p}/smaps_rollup", "Pss:") for p in pids]
    return rss * 1024, sum(pss) * 1024, sum(pss[1:]) * 1024, len(pids)


def current_stage(store: Path, tasks: int) -> str:
    """The stage the build is in: the last stage folder created under _build/, `finalize` once assign is done."""
    build = store / "_build"
    stage = "start"
    for name in STAGES:
        if (build / name).exists():
            stage = name
    if stage == "assign":
        try:
            if len(os.listdir(build / "assign" / "completions")) >= tasks:
                stage = "finalize"
        except OSError:
            pass
    return stage


def run_build(spec_path: Path, store: Path, tasks: int, interval: float) -> dict:
    """Run `mixture build SPEC --workers 1` in a fresh process; poll the process tree's memory every `interval` s."""
    cmd = [str(REPO / ".venv" / "bin" / "mixture"), "build", str(spec_path), "--workers", "1"]
    log = spec_path.parent / "build.log"
    peaks: dict[str, list[int]] = {}  # stage -> [rss, pss, pss of the processes the driver started]
    peak = [0, 0, 0, 0]  # rss, pss, most processes at once, the driver's own peak RSS (VmHWM)
    t = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "120"})
        done = threading.Event()

        def poll() -> None:
            while not done.is_set():
                stage = current_stage(store, tasks)
                rss, pss, workers, n = tree_memory(proc.pid)
                s = peaks.setdefault(stage, [0, 0, 0])
                s[0], s[1], s[2] = max(s[0], rss), max(s[1], pss), max(s[2], workers)
                peak[0], peak[1], peak[2] = max(peak[0], rss), max(peak[1], pss), max(peak[2], n)
                peak[3] = max(peak[3], _kb(f"/proc/{proc.pid}/status", "VmHWM:") * 1024)
                done.wait(interval)

        th = threading.Thread(target=poll, daemon=True)
        th.start()
        proc.wait()
        done.set()
        th.join()
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {proc.returncode}; see {log}")
    artifact = read_store_artifact(str(store / "store.json"))
    return {"wall": wall, "rss": peak[0], "pss": peak[1], "procs": peak[2], "maxrss": peak[3],
            "stages": peaks, "counters": artifact.counters.model_dump()}


def markdown(results: list[dict], args, cmd: str) -> str:
    base = results[0]
    heads = " | ".join(f"{r['copies']}×" for r in results)
    lines = [
        BEGIN,
        "## Peak memory of the build as the input grows (`bench/memory_bench.py`)",
        "",
        f"Machine: {machine('local disk')}. Load average (1/5/15 min) when each build started: "
        + "; ".join(f"{r['copies']}×: {r['load']}" for r in results) + ".",
        "",
        f"Reproduce: `{cmd}` (writes the corpora and stores under a temporary folder; `--dir D --keep` keeps them).",
        "",
        f"Input n× = n demo corpora at scale {args.scale} written with seeds 0 … n−1, each a distinct copy of the "
        "10 sources in one spec (specs/demo.yaml with source names `<source>.c<j>`, the benchmark of seed 0; "
        f"k = {args.k}, fine_k = {args.fine_k}, {args.tasks} tasks per stage). The seeds draw different samples of "
        "the same Python installation, so part of every added copy is an exact or near duplicate (or reuses an "
        "id) of an earlier one and is dropped by dedup: the input grows n×, the kept output less. "
        f"`partition.clusters.sample_docs` = {args.sample_docs} for every size: the fit sample is bounded by design "
        "(the demo's 50,000 exceeds every input here, which would make the fit stage see the whole input). "
        f"Each build is `mixture build spec.yaml --workers 1` in a fresh process; every {args.interval * 1000:.0f} ms "
        "the benchmark sums VmRSS and PSS (`/proc/<pid>/smaps_rollup`, shared pages split between processes) over "
        "the whole process tree. With one worker the local executor runs every task in the driver process and "
        "forks no other (datatrove's executor forked a multiprocess manager per stage, which shared the driver's "
        "pages: Σ RSS counted them twice, Σ PSS is the tree's real footprint either way). The driver's peak RSS is "
        "its `VmHWM` (`/proc/<pid>/status`), read at every poll (`ru_maxrss` would count the benchmark process itself, "
        "which the build is forked from).",
        "",
        f"| | {heads} |",
        "|---|" + "---:|" * len(results),
        "| records in | " + " | ".join(f"{r['counters']['records_in']:,}" for r in results) + " |",
        "| records kept | " + " | ".join(f"{r['counters']['records_out']:,}" for r in results) + " |",
        "| tokens kept | " + " | ".join(f"{r['counters']['tokens_out']:,}" for r in results) + " |",
        "| build wall time | " + " | ".join(f"{r['wall']:.1f} s" for r in results) + " |",
        "| peak Σ RSS of the process tree | " + " | ".join(f"{r['rss'] / MIB:,.0f} MiB" for r in results) + " |",
        "| peak Σ PSS of the process tree | " + " | ".join(f"{r['pss'] / MIB:,.0f} MiB" for r in results) + " |",
        "| driver's peak RSS (`VmHWM`) | " + " | ".join(f"{r['maxrss'] / MIB:,.0f} MiB" for r in results) + " |",
        "| peak Σ RSS vs 1× | " + " | ".join(f"{r['rss'] / base['rss']:.2f}×" for r in results) + " |",
        "| **peak Σ PSS vs 1×** | " + " | ".join(f"**{r['pss'] / base['pss']:.2f}×**" for r in results) + " |",
        "",
        "Peak Σ PSS of the process tree while each stage ran, and in brackets the part of it outside the driver "
        "(any child process), in MiB; the stage is the last `_build/<stage>` folder created, "
        "`finalize` once every assign task is done (a stage shorter than the poll interval has no row or 0):",
        "",
        f"| stage | {heads} | growth of the tree's peak 1× → {results[-1]['copies']}× |",
        "|---|" + "---:|" * (len(results) + 1),
    ]
    order = [s for s in ["start", *STAGES, "finalize"] if any(s in r["stages"] for r in results)]
    for s in order:
        vals = [r["stages"].get(s, [0, 0, 0]) for r in results]
        growth = f"{vals[-1][1] / vals[0][1]:.2f}× ({(vals[-1][1] - vals[0][1]) / MIB:+,.0f})" if vals[0][1] else "–"
        lines.append(f"| `{s}` | " + " | ".join(f"{v[1] / MIB:,.0f} ({v[2] / MIB:,.0f})" for v in vals)
                     + f" | {growth} |")
    top = results[-1]
    ratio = top["pss"] / base["pss"]
    # stages sampled at both ends only (one shorter than the poll interval has no sample)
    measured = [s for s in order if base["stages"].get(s, [0, 0])[1] and top["stages"].get(s, [0, 0])[1]]
    grow = {s: top["stages"][s][1] - base["stages"][s][1] for s in measured}
    grower = max(measured, key=lambda s: grow[s])
    at_peak = [max(r["stages"], key=lambda s: r["stages"][s][1]) for r in results]
    peak_stage = (f"`{at_peak[0]}` at every size" if len(set(at_peak)) == 1 else
                  ", ".join(f"{r['copies']}×: `{s}`" for r, s in zip(results, at_peak, strict=True)))
    lines += [
        "",
        f"Target: flat within 20 % from 1× to {top['copies']}×: {'met' if ratio <= 1.2 else 'NOT met'} (peak Σ PSS "
        + ", ".join(f"{r['pss'] / MIB:,.0f} MiB at {r['copies']}×" for r in results)
        + f"; {ratio:.2f}×; the driver's own peak RSS {top['maxrss'] / base['maxrss']:.2f}×). "
        f"The overall peak falls in {peak_stage}. The stage whose peak grows most from 1× to {top['copies']}× is `{grower}` "
        f"(+{grow[grower] / MIB:,.0f} MiB).",
        END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", help="where to write the corpora and stores (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the corpora and stores")
    p.add_argument("--scale", type=float, default=0.1, help="scale of each demo corpus")
    p.add_argument("--sizes", default="1,3,10", help="comma-separated numbers of distinct corpus copies")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--k", type=int, default=40)
    p.add_argument("--fine-k", type=int, default=200)
    p.add_argument("--sample-docs", type=int, default=1000, help="fit sample size, the same for every input size")
    p.add_argument("--interval", type=float, default=0.05, help="seconds between memory polls")
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    p.add_argument("--report-only", action="store_true", help="re-render the section from --dir's results.json")
    args = p.parse_args(argv)
    if args.report_only:
        saved = json.loads((Path(args.dir) / "results.json").read_text())
        if isinstance(saved, list):  # written by a run with the default settings
            saved = {"args": {}, "cmd": "python -m bench.memory_bench", "results": saved}
        for k, v in saved["args"].items():
            setattr(args, k, v)
        section = markdown(saved["results"], args, saved["cmd"])
        print(section)
        if not args.no_publish:
            publish(section, BEGIN, END)
        return
    tmp = None if args.dir else tempfile.TemporaryDirectory(prefix="memory-bench-")
    root = Path(args.dir or tmp.name).resolve()
    root.mkdir(parents=True, exist_ok=True)
    try:
        sizes = [int(n) for n in args.sizes.split(",")]
        corpora = [root / "corpora" / f"seed-{i}" for i in range(max(sizes))]
        for i, c in enumerate(corpora):
            demo_corpus(c, i, args.scale)
        results = []
        for n in sizes:
            folder = root / f"copies-{n}"
            shutil.rmtree(folder / "store", ignore_errors=True)
            spec = demo_spec(corpora[:n], "store", k=args.k, fine_k=args.fine_k, tasks=args.tasks, workers=1)
            spec["partition"]["clusters"]["sample_docs"] = args.sample_docs
            spec_path = write_spec(folder, spec)
            res = {"copies": n, "load": load(), **run_build(spec_path, folder / "store", args.tasks, args.interval)}
            results.append(res)
            print(f"  {n}x: records_in {res['counters']['records_in']:,}, kept {res['counters']['records_out']:,}, "
                  f"{res['wall']:.1f} s, peak tree RSS {res['rss'] / MIB:,.0f} MiB, PSS {res['pss'] / MIB:,.0f} MiB, "
                  f"driver VmHWM {res['maxrss'] / MIB:,.0f} MiB; per stage "
                  + ", ".join(f"{s}={v[1] / MIB:.0f}/{v[2] / MIB:.0f}" for s, v in res["stages"].items()), flush=True)
        defaults = {"scale": 0.1, "sizes": "1,3,10", "tasks": 4, "k": 40, "fine_k": 200, "sample_docs": 1000,
                    "interval": 0.05}
        flags = "".join(f" --{k.replace('_', '-')} {getattr(args, k)}" for k, v in defaults.items() if getattr(args, k) != v)
        cmd = "python -m bench.memory_bench" + flags
        kept = {k: getattr(args, k) for k in (*defaults, "sizes")}
        (root / "results.json").write_text(json.dumps({"args": kept, "cmd": cmd, "results": results}, indent=1))
        section = markdown(results, args, cmd)
        print(section)
        if not args.no_publish:
            publish(section, BEGIN, END)
            print("  wrote docs/performance.md")
    finally:
        if tmp is not None and not args.keep:
            tmp.cleanup()


if __name__ == "__main__":
    main()
