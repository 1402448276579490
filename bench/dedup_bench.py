"""Dedup benchmark: every task of the partitioned dedup stages (issue 15) run alone in a fresh process, with its
wall time, CPU time and peak RSS, at 2–3 input sizes; the single-task stages they replace measured the same way
on the same work. Figures go into docs/performance.md."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq

from bench.build_bench import REPO, demo_corpus, demo_spec, load, write_spec
from bench.common import machine, show
from mixture.stages.registry import bucket_slices

BEGIN, END = "<!-- dedup-bench:begin -->", "<!-- dedup-bench:end -->"
STAGES = ("duplicate_ids", "find_duplicates", "minhash_buckets", "minhash_verify", "minhash_cluster")
UPTO = "minhash_cluster"  # the build runs to here; the stages after dedup are not measured
MIB = 2**20
GREEDY_MEMORY = "1024MB"  # DuckDB's limit in `minhash_cluster` with the defaults (half of 2 GB per CPU, one CPU)
GREEDY_SIZES = "100000,1000000,4000000,4000000@256MB"  # synthetic verified pairs [@ DuckDB's memory limit]


# -- in the measured process ------------------------------------------------------------------------------------
def _context(spec_path: str):
    from mixture.pipelines.context import BuildContext
    from mixture.spec.load import load_spec

    spec = load_spec(spec_path)
    return BuildContext(spec, spec.refs.folder, spec.refs.store, spec.execution.tasks)


def _status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0


def run_task(spec_path: str, what: str, rank: int) -> dict:
    """One task, as the build runs it, after the imports: its wall and CPU time, the RSS before it and its peak
    RSS (VmHWM, reset after the imports through /proc/self/clear_refs)."""
    import importlib

    from mixture.pipelines.runtime.memory import configure_memory
    from mixture.stages.registry import STAGES

    for module in ("duckdb", "tests.dedup.dedup_reference", *(s.steps.partition(":")[0] for s in STAGES)):
        importlib.import_module(module)  # before the clock starts (every stage's steps module)
    configure_memory()  # as every build task does
    ctx = spec_path if what == "greedy" else _context(spec_path)
    before = _status_kb("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS to the current RSS
    t, cpu = time.perf_counter(), time.process_time()
    _task(ctx, what, rank)
    return {"wall": time.perf_counter() - t, "cpu": time.process_time() - cpu, "before": before * 1024,
            "rss": _status_kb("VmHWM:") * 1024}


def _task(ctx, what: str, rank: int) -> None:
    """A stage's pipeline for task `rank`, `keys` (prepare's last step alone), `old-exact` / `old-near` (the
    single-task stages this replaced, tests/dedup/dedup_reference.py), or `noop`."""
    from mixture.pipelines.build import build_stage
    from mixture.pipelines.dedup.keys import DedupKeys
    from mixture.pipelines.runtime.threads import task_threads
    from mixture.stages import registry as stage_registry

    if what == "noop":
        return
    if what == "greedy":  # ctx: the folder of synthetic verified pairs; the single-task greedy (bench/components_bench.py
        # measures the stage in rounds against it)
        from tests.dedup.cluster_reference import MinhashCluster

        step = MinhashCluster(ctx, f"{ctx}/fuzzy_drops", f"{ctx}/report.json", threshold=0.72, ngram=5,
                              permutations=112, memory_limit=os.environ.get("BENCH_MEMORY", GREEDY_MEMORY))
        for _ in step.run(None, 0, 1):
            pass
        return
    if what.startswith("old-"):
        from tests.dedup import dedup_reference

        fz = ctx.spec.processing.dedup.fuzzy
        if what == "old-exact":
            dedup_reference.exact_drops(ctx.at(stage_registry.PREPARED.folder))
        else:
            dedup_reference.near_drops(ctx.at(stage_registry.COLLISIONS_DIR), ctx.at(stage_registry.PREPARED.folder),
                                       threshold=fz.similarity_threshold, ngram=fz.ngram, permutations=fz.permutations)
        return
    if what == "keys":
        pipeline, world = [DedupKeys(ctx.at(stage_registry.PREPARED.folder), ctx.at(stage_registry.DEDUP),
                                     ctx.memory_limit("prepare"))], ctx.tasks
    else:
        stage = build_stage(ctx, stage_registry.get(what))
        pipeline, world = stage.pipeline, stage.tasks
    with task_threads(1):
        data = None
        for step in pipeline:
            data = step(data, rank, world)
        for _ in data or ():
            pass


def measure(spec_path: Path, what: str, rank: int, memory: str | None = None) -> dict:
    """`run_task` in a fresh process: {wall, cpu, before, rss} of the task alone (not the imports)."""
    env = {**os.environ, **({"BENCH_MEMORY": memory} if memory else {})}
    out = subprocess.run([sys.executable, "-m", "bench.dedup_bench", "--task", str(spec_path), what, str(rank)],
                         cwd=REPO, capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"{what} task {rank} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the driver -------------------------------------------------------------------------------------------------
def run_to_dedup(spec_path: Path, workers: int) -> float:
    """Every stage up to `minhash_cluster` (local executor); returns the wall time."""
    from mixture.pipelines.build import build_stage, run_stage
    from mixture.stages import registry as stage_registry

    ctx = _context(str(spec_path))
    t = time.perf_counter()
    for info in stage_registry.planned(ctx.spec):
        run_stage(ctx, build_stage(ctx, info), "local", workers)
        if info.name == UPTO:
            break
    return time.perf_counter() - t


def _rows(files: list[Path]) -> int:
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def shares(work: Path, tasks: int, bucket_tasks: int) -> dict[str, list[int]]:
    """The rows each task of a stage holds: its partition's keys, pairs, or (buckets) its band slice's members."""
    from mixture.pipelines.dedup.minhash_verify import VERIFIED
    from mixture.pipelines.dedup.shuffle import read_shuffle_file

    def per(pattern: str, n: int) -> list[int]:
        return [_rows(sorted(work.glob(pattern.format(q=q)))) for q in range(n)]

    return {"keys": [pq.ParquetFile(p).metadata.num_rows for p in sorted(work.glob("prepared/*.parquet"))],
            "duplicate_ids": per("dedup/by_id/{q:05d}/*.parquet", tasks),
            "find_duplicates": per("dedup/by_hash/{q:05d}/*.parquet", tasks),
            "minhash_buckets": per("near_dups/members/*/{q:05d}.parquet", bucket_tasks),
            "minhash_verify": per("near_dups/pairs/{q:05d}/*.parquet", tasks),
            "minhash_cluster": [sum(read_shuffle_file(str(f), VERIFIED).num_rows
                                    for f in sorted(work.glob("near_dups/verified/*.parquet")))]}


def bench_size(folder: Path, copies: int, args) -> dict:
    corpora = [folder.parent / f"corpus{j}" for j in range(copies)]
    for j, c in enumerate(corpora):
        demo_corpus(c, seed=j, scale=args.scale)
    spec = demo_spec(corpora, "store", k=8, fine_k=40, tasks=args.tasks, workers=args.workers)
    spec_path = write_spec(folder, spec)
    shutil.rmtree(folder / "store", ignore_errors=True)
    started = load()
    to_dedup = run_to_dedup(spec_path, args.workers)
    work = folder / "store" / "_build" / "work"
    bands = spec["processing"]["dedup"]["fuzzy"].get("bands", 14)
    bucket_tasks = bands * bucket_slices(bands, args.tasks)  # a task per band and first-hash slice
    tasks_of = {"keys": args.tasks, "duplicate_ids": args.tasks, "find_duplicates": args.tasks,
                "minhash_buckets": bucket_tasks, "minhash_verify": args.tasks, "minhash_cluster": 1}
    runs: dict[str, list[dict]] = {"noop": [measure(spec_path, "noop", 0)]}
    for what in ("keys", *STAGES):
        runs[what] = [measure(spec_path, what, r) for r in range(tasks_of[what])]
    for what in ("old-exact", "old-near"):
        runs[what] = [measure(spec_path, what, 0)]
    prepared = ds.dataset([str(p) for p in sorted(work.glob("prepared/*.parquet"))]).count_rows()
    report = json.loads((work / "near_duplicates.json").read_text())
    return {"copies": copies, "prepared": prepared, "load": started, "to_dedup": to_dedup,
            "runs": runs, "shares": shares(work, args.tasks, bucket_tasks), "pairs": report["pairs_considered"],
            "verified": report["pairs_verified"], "drops": report["drops"], "bands": bands}


def above(runs: list[dict]) -> int:
    """The largest peak RSS of the runs above their RSS before the task (after the imports)."""
    return max(x["rss"] - x["before"] for x in runs)


def synthetic_verified(folder: Path, n_edges: int, partitions: int, seed: int = 0) -> dict:
    """Verified pairs as `minhash_verify` writes them (`<folder>/verified/<q>.parquet`, shuffle files: task q's pairs
    in partition q), `n_edges` of them: groups
    of 2–12 near-duplicate documents at random spec positions, each member paired with up to 8 members before it."""
    import numpy as np
    import pyarrow as pa

    from mixture.pipelines.dedup.minhash_verify import VERIFIED
    from mixture.pipelines.dedup.shuffle import mix64, prefix_partition, write_partition

    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 13, max(1, n_edges // 20))
    while True:  # enough groups for n_edges pairs
        pos = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)  # j: position in its group
        if np.minimum(pos, 8).sum() >= n_edges:
            break
        sizes = np.concatenate([sizes, rng.integers(2, 13, len(sizes))])
    group = np.repeat(np.arange(len(sizes)), sizes)
    first = np.repeat(np.cumsum(sizes) - sizes, sizes)  # each document's group's first document
    reps = np.minimum(pos, 8)  # member j with the first min(j, 8) members of its group
    b = np.repeat(np.arange(len(pos)), reps)[:n_edges]
    a = (np.repeat(first, reps) + np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps))[:n_edges]
    # spec positions: groups interleaved at random, each group's members in their order
    spread = rng.permutation(len(pos))
    g = spread[np.lexsort((spread, group))]
    ga, gb = g[a], g[b]
    sim = np.round(0.72 + 0.28 * rng.random(len(ga)), 6)
    part = prefix_partition(mix64(gb), partitions)
    (folder / "verified").mkdir(parents=True, exist_ok=True)
    for q in range(partitions):
        sel = part == q
        n = int(sel.sum())
        write_partition(str(folder / "verified" / f"{q:05d}.parquet"), pa.table({
            "a": ga[sel], "b": gb[sel], "sim": sim[sel], "rank_b": (gb[sel] % partitions).astype(np.int32),
            "idx_b": gb[sel], "kept_id": [f"doc{x}" for x in ga[sel]], "kept_source": ["web"] * n,
            "kept_file": ["part-00000.jsonl"] * n, "kept_record": ga[sel]}, schema=VERIFIED), q, partitions)
    return {"edges": int(len(ga)), "docs": int(len(np.unique(np.concatenate([ga, gb]))))}


def bench_greedy(root: Path, sizes: list[str], partitions: int) -> list[dict]:
    """`minhash_cluster` on `n` synthetic verified pairs for each `n[@memory limit]` of `sizes`."""
    out = []
    for size in sizes:
        n, _, memory = size.partition("@")
        folder = root / f"greedy{n}"
        made = synthetic_verified(folder, int(n), partitions)
        started = load()
        run = measure(folder, "greedy", 0, memory or GREEDY_MEMORY)
        drops = sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("fuzzy_drops/*.parquet"))
        out.append({**made, **run, "drops": drops, "load": started, "memory": memory or GREEDY_MEMORY})
        print(f"  greedy {size}: {run['wall']:.1f} s", flush=True)
    return out


def greedy_markdown(greedy: list[dict]) -> list[str]:
    lines = [
        "",
        "`minhash_cluster`, the one task left, alone on synthetic verified pairs (`minhash_verify`'s output format, "
        "T = 4 files): groups of 2–12 near-duplicate documents at random spec positions, each member paired with up to "
        f"8 members before it; DuckDB's memory limit {GREEDY_MEMORY} (the default configuration's: half of 2 GB for "
        "one CPU) unless the table says otherwise. Wall time / CPU time / peak RSS (above the imports):",
        "",
        "| verified pairs | documents in them | drops | DuckDB limit | wall | CPU | peak RSS | CPU per pair |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for g in greedy:
        lines.append(f"| {g['edges']:,} | {g['docs']:,} | {g['drops']:,} | {g['memory']} | {g['wall']:.1f} s | "
                     f"{g['cpu']:.1f} s | "
                     f"{g['rss'] / MIB:,.0f} (+{(g['rss'] - g['before']) / MIB:,.0f}) MiB | "
                     f"{g['cpu'] / g['edges'] * 1e6:.2f} µs |")
    same = [g for g in greedy if g["memory"] == GREEDY_MEMORY]
    first, last = same[0], same[-1]
    low = [g for g in greedy if g["edges"] == last["edges"] and g["memory"] != GREEDY_MEMORY]
    per_pair = sum(g["cpu"] for g in same) / sum(g["edges"] for g in same) * 1e6

    def above(g: dict) -> str:
        return f"{(g['rss'] - g['before']) / MIB:,.0f} MiB"

    lines += [
        "",
        f"From {first['edges']:,} to {last['edges']:,} verified pairs ({last['edges'] / first['edges']:.0f}×) the "
        f"CPU time grows {last['cpu'] / first['cpu']:.1f}×: linear in the verified pairs, {per_pair:.1f} µs each at "
        f"this load (the greedy pass is one Python loop over them; ≈ {per_pair * 1e9 / 1e6 / 60:,.0f} min per "
        "billion), whatever the corpus. The peak RSS above the imports "
        f"({above(first)} → {above(last)}) follows DuckDB's memory limit, which it fills before it spills"
        + ("".join(f"; the same {g['edges']:,} pairs under a {g['memory']} limit: {above(g)}, "
                   f"{(g['rss'] - g['before']) / MIB - int(g['memory'].removesuffix('MB')):,.0f} MiB of it outside "
                   f"DuckDB (Arrow's reads of the verified files, the batches, one byte per document), CPU "
                   f"{g['cpu'] / last['cpu']:.2f}× (the sort spills)" for g in low))
        + ". Load average at each run: " + "; ".join(g["load"] for g in greedy) + ".",
    ]
    return lines


def markdown(results: list[dict], args, cmd: str, greedy: list[dict] | None = None) -> str:
    heads = " | ".join(f"{r['copies']}× ({r['prepared']:,} docs)" for r in results)
    rows = [("`prepare`'s `DedupKeys` step", "keys", "keys"),
            ("`duplicate_ids`", "duplicate_ids", "duplicate_ids"),
            ("`find_duplicates`", "find_duplicates", "find_duplicates"),
            ("`minhash_buckets` (band collisions + pairs)", "minhash_buckets", "minhash_buckets"),
            ("`minhash_verify`", "minhash_verify", "minhash_verify"),
            ("`minhash_cluster` (greedy, 1 task)", "minhash_cluster", "minhash_cluster")]

    def cell(r: dict, what: str, share: str | None) -> str:
        runs = r["runs"][what]
        held = ""
        if share:
            s = r["shares"][share]
            held = f"; rows/task ≤ {max(s):,} of {sum(s):,}"
        return (f"{max(x['wall'] for x in runs):.2f} s / {max(x['cpu'] for x in runs):.2f} s / "
                f"{max(x['rss'] for x in runs) / MIB:,.0f} (+{above(runs) / MIB:,.0f}) MiB{held}")

    lines = [
        BEGIN,
        "## Dedup stages partitioned by hash (`bench/dedup_bench.py`)",
        "",
        f"Machine: {machine('local disk')}; `uname -a`: {os.uname().sysname} {os.uname().release} "
        f"{os.uname().machine}. Load average (1/5/15 min) at the start of each size: "
        + "; ".join(f"{r['copies']}×: {r['load']}" for r in results) + " (the machine is shared: times are upper "
        "bounds, CPU and RSS are what to compare).",
        "",
        f"Reproduce: `{cmd}`. Input n× = n demo corpora at scale {args.scale} (seeds 0 … n−1, one spec, "
        f"{args.tasks} tasks per stage). The build runs up to `minhash_cluster`; then every task of each dedup stage "
        "runs again alone in a fresh Python process (`python -m bench.dedup_bench --task …`), which imports the "
        "build first and then times the task alone: its wall time, CPU time (user + system) and peak RSS (`VmHWM`, "
        "reset after the imports through `/proc/self/clear_refs`). The imports hold "
        + ", ".join(f"{r['runs']['noop'][0]['before'] / MIB:,.0f} MiB" for r in results)
        + " (in brackets: the task's peak above that). `old …`: the single-task stages this replaced "
        "(tests/dedup/dedup_reference.py, the code before issue 15) on the same work folder.",
        "",
        "Per stage, the slowest task's wall time / the largest task's CPU time / the largest peak RSS, and the rows "
        "each task holds (keys of its partition; `minhash_buckets`: its band slice's bucket members; `minhash_verify`: "
        "the candidate pairs of its partition from every band, a pair found by several bands counted each time; "
        "`minhash_cluster`: every verified pair):",
        "",
        f"| stage | {heads} |",
        "|---|" + "---|" * len(results),
    ]
    for label, what, share in rows:
        lines.append(f"| {label} | " + " | ".join(cell(r, what, share) for r in results) + " |")
    lines.append("| old `find_duplicates` (1 task: every document) | "
                 + " | ".join(cell(r, "old-exact", None) for r in results) + " |")
    lines.append("| old `minhash_cluster` (1 task: every candidate pair) | "
                 + " | ".join(cell(r, "old-near", None) for r in results) + " |")
    lines += [
        "| candidate pairs / verified / near-duplicate drops | "
        + " | ".join(f"{r['pairs']:,} / {r['verified']:,} / {r['drops']:,}" for r in results) + " |",
        "",
    ]
    first, last = results[0], results[-1]

    def growth(what: str) -> str:
        return f"{above(first['runs'][what]) / MIB:,.0f} → {above(last['runs'][what]) / MIB:,.0f} MiB"

    docs_growth = last["prepared"] / first["prepared"]
    lines += [
        f"From {first['copies']}× to {last['copies']}× ({docs_growth:.1f}× the documents, "
        f"{last['verified'] / max(1, first['verified']):.1f}× the verified pairs), the peak RSS above a bare "
        f"process: `find_duplicates` tasks {growth('find_duplicates')} (the old single task {growth('old-exact')}), "
        f"`minhash_verify` tasks {growth('minhash_verify')} (the old single task {growth('old-near')}), "
        f"`minhash_cluster` {growth('minhash_cluster')}. With T tasks a partitioned task holds about 1/T of the "
        "keys or pairs (the hash prefix spreads them evenly: the largest share is in the table), so more tasks keep "
        "each one's memory flat as the input grows; the one task left, `minhash_cluster`, holds one byte per "
        "document of a verified pair and streams the verified pairs sorted from DuckDB (spilled past its memory "
        "limit): it grows with the verified pairs, not with the corpus.",
        *(greedy_markdown(greedy) if greedy else []),
        END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--task"]:
        result = run_task(argv[1], argv[2], int(argv[3]))
        print(json.dumps(result), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", help="where to write the corpora and stores (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the corpora and stores")
    p.add_argument("--scale", type=float, default=0.5, help="scale of each demo corpus")
    p.add_argument("--sizes", default="1,3,6", help="comma-separated numbers of distinct corpus copies")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--workers", type=int, default=2, help="workers of the build that prepares the work")
    p.add_argument("--greedy-sizes", default=GREEDY_SIZES, help="synthetic verified pairs for minhash_cluster alone")
    p.add_argument("--only", choices=("sizes", "greedy"), help="run one part, the other from --dir's results.json")
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    p.add_argument("--report-only", action="store_true", help="re-render the section from --dir's results.json")
    args = p.parse_args(argv)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="mixture-dedup-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    cmd = "python -m bench.dedup_bench" + (f" --scale {args.scale}" if args.scale != 0.5 else "") + \
        (f" --sizes {args.sizes}" if args.sizes != "1,3,6" else "")
    try:
        saved = json.loads((root / "results.json").read_text()) if args.only or args.report_only else {}
        results, greedy = saved.get("sizes", []), saved.get("greedy", [])
        if args.only != "greedy" and not args.report_only:
            results = []
            for copies in (int(s) for s in args.sizes.split(",")):
                print(f"  {copies}× …", flush=True)
                results.append(bench_size(root / f"x{copies}", copies, args))
        if args.only != "sizes" and not args.report_only:
            greedy = bench_greedy(root, args.greedy_sizes.split(","), args.tasks)
        (root / "results.json").write_text(json.dumps({"sizes": results, "greedy": greedy}, indent=1))
        text = markdown(results, args, cmd, greedy)
        show(text, BEGIN, END, not args.no_publish)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
