"""Near-duplicate resolution benchmark: `minhash_cluster` in rounds (connected components, the greedy keep in
rounds and its finish, the drops per partition) at several T against the single task it replaced, side by side on the same
synthetic verified pairs (one giant component, many small ones). Per task: wall, CPU and peak RSS, each task in a
forked child (its rusage); figures into docs/performance.md."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import machine, show

BEGIN, END = "<!-- components-bench:begin -->", "<!-- components-bench:end -->"
SETTINGS = {"threshold": 0.7, "ngram": 5, "permutations": 112}
KINDS = ("star", "start", "greedy", "finish", "drops", "report")  # the stage's rounds, by kind


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def forked(steps: list, rank: int, tasks: int) -> dict:
    """One task in a forked child: its wall time, CPU time (user + system) and peak RSS above this process's."""
    base, t0 = _rss_kib(), time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the task, alone
        code = 0
        try:
            data = None
            for step in steps:
                data = step.run(data, rank, tasks)
            list(data or ())
        except BaseException:  # noqa: BLE001 - reported through the exit code
            import traceback

            traceback.print_exc()
            code = 1
        os._exit(code)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"task {rank} of {type(steps[-1]).__name__} failed")
    return {"wall": time.perf_counter() - t0, "cpu": usage.ru_utime + usage.ru_stime,
            "peak": max(0, usage.ru_maxrss - base) / 1024}


def run_old(near: Path, out: Path, memory: str) -> dict:
    from tests.dedup.cluster_reference import MinhashCluster

    step = MinhashCluster(str(near), str(out / "drops"), str(out / "report.json"), memory_limit=memory, **SETTINGS)
    t = forked([step], 0, 1)
    return {"wall": t["wall"], "cpu": t["cpu"], "peak": t["peak"], "critical": t["wall"], "rounds": 1}


def run_new(near: Path, out: Path, tasks: int, memory: str, pairs_per_task: int) -> dict:
    """Every round, each task forked in turn; the critical path: the slowest task of each round, summed (P_c cores).
    `tasks`: the verification tasks (P); the rounds run ⌈pairs / pairs_per_task⌉ tasks, at most P."""
    from mixture.pipelines.dedup.minhash_cluster import rounds
    from tests.dedup.synthetic_graphs import FILES

    wall = cpu = peak = critical = 0.0
    per_round, longest, star_tasks, counted = {}, {}, 0, {"star": 0, "greedy": 0}
    t0 = time.perf_counter()
    for r in rounds(str(near), str(out / "drops"), str(out / "report.json"), tasks, prepared=FILES,
                    pairs_per_task=pairs_per_task, memory_limit=memory, **SETTINGS):
        times = [forked(r.steps, rank, r.tasks) for rank in range(r.tasks)]
        cpu += sum(t["cpu"] for t in times)
        peak = max(peak, *(t["peak"] for t in times))
        critical += max(t["wall"] for t in times)
        kind = "star" if re.fullmatch(r"r\d+", r.name) else "greedy" if re.fullmatch(r"g\d+", r.name) else r.name
        star_tasks = r.tasks if kind == "star" else star_tasks
        counted[kind] = counted.get(kind, 0) + 1
        per_round[kind] = per_round.get(kind, 0.0) + sum(t["cpu"] for t in times)
        longest[kind] = longest.get(kind, 0.0) + max(t["cpu"] for t in times)
    wall = time.perf_counter() - t0
    return {"wall": wall, "cpu": cpu, "peak": peak, "critical": critical, "rounds": counted["star"],
            "greedy_rounds": counted["greedy"], "split": per_round, "longest": longest, "tasks": star_tasks}


def _drops(folder: Path) -> dict[int, tuple[int, int]]:
    """{prepared file: (drops, an order-free digest of its rows)} of a drop folder: the old single task's files (one
    per prepared file) or the rounds' shuffle files (a range per prepared file). Digests, not rows: at 100M pairs
    the ~60M drops as Python objects would not fit in memory."""
    import duckdb

    from mixture.pipelines.dedup.shuffle import fetch_partition, register, shuffle_partitions
    from mixture.pipelines.schemas import DROPS
    from tests.dedup.synthetic_graphs import FILES

    files = [str(f) for f in sorted(folder.glob("*.parquet"))]
    digest = f"SELECT rank, count(*), bit_xor(hash({', '.join(DROPS.names)})) FROM {{}} GROUP BY rank"
    out = {}
    with duckdb.connect() as con, tempfile.TemporaryDirectory() as scratch:
        if files and shuffle_partitions(files[0]) is not None:  # a range per prepared file: fetched one by one
            for r in range(FILES):
                os.makedirs(f"{scratch}/{r}")
                register(con, "fetched", fetch_partition(f"{folder}/*.parquet", r, f"{scratch}/{r}"), DROPS)
                out.update({k: (n, h) for k, n, h in con.execute(digest.format("fetched")).fetchall()})
        elif files:
            out = {k: (n, h) for k, n, h in con.execute(digest.format("read_parquet($files)"),
                                                        {"files": files}).fetchall()}
    return out


def _command(args) -> str:
    return (f"python -m bench.components_bench --pairs {args.pairs} --giant {args.giant} --tasks {args.tasks} "
            f"--pairs-per-task {args.pairs_per_task} --memory {args.memory}"
            + (f" --old-memory {args.old_memory}" if args.old_memory else ""))


def main() -> None:
    from tests.dedup.synthetic_graphs import forest_graph, write_verified

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pairs", type=int, default=2_000_000)
    p.add_argument("--giant", type=int, default=200_000, help="members of the one giant component")
    p.add_argument("--tasks", default="1,4,8", help="verification task counts (P) the pairs are written for")
    p.add_argument("--pairs-per-task", type=int, default=1,
                   help="execution.component_pairs_per_task: the rounds' tasks P_c = ⌈pairs / this⌉, at most P "
                        "(default 1: P_c = P)")
    p.add_argument("--memory", default="1024MB", help="DuckDB's memory limit per task")
    p.add_argument("--old-memory", help="DuckDB's memory limit of the old single task (default: --memory; it holds "
                                        "every pair: at 100M pairs 2 GB is not enough)")
    p.add_argument("--no-publish", action="store_true")
    p.add_argument("--json", help="also write the results here (bench/cost_rates.py --components takes them)")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="components-bench-"))
    results: dict[str, dict] = {}
    try:
        edges = forest_graph(0, args.pairs, args.giant)
        tasks = [int(t) for t in args.tasks.split(",")]
        n_pairs = 0
        for t in tasks:
            n_pairs = write_verified(root / f"T{t}" / "near_dups", edges, t)
        del edges
        results["old"] = run_old(root / f"T{tasks[0]}" / "near_dups", root / "old", args.old_memory or args.memory)
        print(f"old single task: {results['old']}", file=sys.stderr, flush=True)
        want = _drops(root / "old" / "drops")
        for t in tasks:
            results[f"P={t}"] = run_new(root / f"T{t}" / "near_dups", root / f"new{t}", t, args.memory,
                                        args.pairs_per_task)
            print(f"rounds, P={t}: {results[f'P={t}']}", file=sys.stderr, flush=True)
            assert _drops(root / f"new{t}" / "drops") == want, f"P={t}: drops differ from the single task"
            assert (root / f"new{t}" / "report.json").read_bytes() == (root / "old" / "report.json").read_bytes()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    if args.json:
        Path(args.json).write_text(json.dumps({"pairs": n_pairs, "giant": args.giant, "machine": machine(),
                                               "load": uptime, "command": _command(args), "runs": results}, indent=1))
    lines = [BEGIN, "## Near duplicates resolved per connected component (`minhash_cluster` in rounds)", "",
             f"Machine: {machine()}. Load during the run (`uptime` after it): {uptime}.", "",
             f"Synthetic verified pairs (`minhash_verify`'s format, tests/dedup/synthetic_graphs.py `forest_graph`): "
             f"{n_pairs:,} pairs; one component of {args.giant:,} documents (a random tree and as many random edges "
             f"more), the rest components of 2–4 documents; {sum(n for n, _ in want.values()):,} drops. DuckDB memory "
             f"limit {args.memory} per task" + (f" ({args.old_memory} for the old single task)" if args.old_memory
                                                 else "") + ". Each task runs alone in a forked child (wall, CPU = user + system, peak RSS above the parent "
             "from its rusage). The drops and the report of every run are checked equal to the single task's. "
             "Critical path: the slowest task of each round, summed (the stage's time with T cores and no queueing).",
             "", "| run | rounds (star + greedy) | CPU, all tasks | CPU per pair | critical path | largest task peak "
             "RSS | CPU split (star / start / greedy rounds / finish / drops / report) |", "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        split = " / ".join(f"{r['split'].get(k, 0):.1f} s" for k in KINDS) if "split" in r else "—"
        label = "old single task" if name == "old" else f"rounds, {name}, P_c = {r['tasks']}"
        counted = f"{r['rounds']} + {r['greedy_rounds']}" if name != "old" else "—"
        lines.append(f"| {label} | {counted} | {r['cpu']:.1f} s | "
                     f"{r['cpu'] / n_pairs * 1e6:.2f} µs | {r['critical']:.1f} s | {r['peak']:.0f} MiB | {split} |")
    lines += ["", f"Reproduce: `{_command(args)}`.", END]
    text = "\n".join(lines)
    show(text, BEGIN, END, not args.no_publish)


if __name__ == "__main__":
    main()
