"""Dedup benchmark: every task of the dedup stages (the build's dedup worker group, `minhash_cluster` round by
round) run alone in a fresh process, with its wall time, CPU time and peak RSS, at 2–3 input sizes; the
single-task stages they replaced (tests/dedup/dedup_reference.py) measured the same way on the same work. Figures go
into docs/performance.md. `minhash_cluster` on 100M synthetic pairs: bench/components_bench.py."""

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

from bench.build_bench import REPO, demo_corpus, demo_spec, load, write_spec
from bench.common import machine, show
from mixture.stages import registry

BEGIN, END = "<!-- dedup-bench:begin -->", "<!-- dedup-bench:end -->"
STAGES = tuple(s.name for s in registry.STAGES if s.worker_group == registry.DEDUP_GROUP)
UPTO = STAGES[-1]  # the build runs to here; the stages after dedup are not measured
MIB = 2**20


# -- in the measured process ------------------------------------------------------------------------------------
def build_context(spec_path: str):
    from mixture.pipelines.context import BuildContext
    from mixture.spec.load import load_spec

    spec = load_spec(spec_path)
    return BuildContext(spec, spec.refs.folder, spec.refs.store, spec.execution.tasks)


def status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0


def import_stages() -> None:
    """What a build task has loaded before its work starts: DuckDB, the reference and every stage's steps module
    (so no clock counts an import), and its memory settings."""
    import importlib

    from mixture.pipelines.runtime.memory import configure_memory

    for module in ("duckdb", "tests.dedup.dedup_reference", *(s.steps.partition(":")[0] for s in registry.STAGES)):
        importlib.import_module(module)
    configure_memory()  # as every build task does


def timed_task(ctx, what: str, rank: int) -> dict:
    """Task `rank` of `what` (`task_pipeline`), as the build runs it: its wall and CPU time, the RSS before it and its
    peak RSS (VmHWM, reset as it starts through /proc/self/clear_refs)."""
    pipeline, world = task_pipeline(ctx, what)
    before = status_kb("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak RSS to the current RSS
    t, cpu = time.perf_counter(), time.process_time()
    run_steps(pipeline, rank, world)
    return {"wall": time.perf_counter() - t, "cpu": time.process_time() - cpu, "before": before * 1024,
            "rss": status_kb("VmHWM:") * 1024}


def run_task(spec_path: str, what: str, rank: int) -> dict:
    """One task alone, after the imports (`timed_task`)."""
    import_stages()
    return timed_task(build_context(spec_path), what, rank)


def task_pipeline(ctx, what: str) -> tuple[list, int]:
    """The steps and task count of `what`: a stage, a round of one (`minhash_cluster/r000`, as the build names it),
    `keys` (prepare's last step alone), `old-exact` / `old-near` (the single-task stages this replaced,
    tests/dedup/dedup_reference.py, as one step), or `noop`."""
    from mixture.pipelines.build import stage_runs
    from mixture.pipelines.dedup.keys import DedupKeys

    prepared = ctx.at(registry.PREPARED.folder)
    if what == "noop":
        return [], 1
    if what.startswith("old-"):
        from tests.dedup import dedup_reference

        fz = ctx.spec.processing.dedup.fuzzy
        if what == "old-exact":
            return [lambda *_: dedup_reference.exact_drops(prepared)], 1
        return [lambda *_: dedup_reference.near_drops(ctx.at(registry.COLLISIONS_DIR), prepared,
                                                      threshold=fz.similarity_threshold, ngram=fz.ngram,
                                                      permutations=fz.permutations)], 1
    if what == "keys":
        return [DedupKeys(prepared, ctx.at(registry.DEDUP), ctx.memory_limit("prepare"))], ctx.tasks
    for stage in stage_runs(ctx, registry.get(what.partition("/")[0])):  # a round is made once the one before ran
        if stage.name == what:
            return stage.pipeline, stage.tasks
    raise ValueError(f"{what}: no such stage or round in this build")


def run_steps(pipeline: list, rank: int, world: int) -> None:
    from mixture.pipelines.runtime.threads import task_threads

    with task_threads(1):
        data = None
        for step in pipeline:
            data = step(data, rank, world)
        for _ in data or ():  # a stage's documents, or a reference's result
            pass


def measure(spec_path: Path, what: str, rank: int) -> dict:
    """`run_task` in a fresh process: {wall, cpu, before, rss} of the task alone (not the imports)."""
    out = subprocess.run([sys.executable, "-m", "bench.dedup_bench", "--task", str(spec_path), what, str(rank)],
                         cwd=REPO, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"{what} task {rank} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the driver -------------------------------------------------------------------------------------------------
def run_to_dedup(spec_path: Path, workers: int) -> tuple[float, dict[str, int]]:
    """Every stage up to the last dedup stage (local executor): the wall time, and the tasks of every stage and
    round it ran, by the names the build gives them."""
    from mixture.pipelines.build import run_stage, stage_runs

    ctx = build_context(str(spec_path))
    t, tasks = time.perf_counter(), {}
    for info in registry.planned(ctx.spec):
        for stage in stage_runs(ctx, info):
            run_stage(ctx, stage, "local", workers)
            tasks[stage.name] = stage.tasks
        if info.name == UPTO:
            break
    return time.perf_counter() - t, tasks


def bench_size(folder: Path, copies: int, args) -> dict:
    corpora = [folder.parent / f"corpus{j}" for j in range(copies)]
    for j, c in enumerate(corpora):
        demo_corpus(c, seed=j, scale=args.scale)
    spec = demo_spec(corpora, "store", k=8, fine_k=40, tasks=args.tasks, workers=args.workers)
    spec_path = write_spec(folder, spec)
    shutil.rmtree(folder / "store", ignore_errors=True)
    started = load()
    to_dedup, ran = run_to_dedup(spec_path, args.workers)
    work = folder / "store" / "_build" / "work"
    runs: dict[str, list[dict]] = {"noop": [measure(spec_path, "noop", 0)],
                                   "keys": [measure(spec_path, "keys", r) for r in range(args.tasks)]}
    for name, n in ran.items():
        if name.partition("/")[0] in STAGES:
            runs[name] = [measure(spec_path, name, r) for r in range(n)]
    for what in ("old-exact", "old-near"):
        runs[what] = [measure(spec_path, what, 0)]
    prepared = ds.dataset([str(p) for p in sorted(work.glob("prepared/*.parquet"))]).count_rows()
    report = json.loads((work / "near_duplicates.json").read_text())
    return {"copies": copies, "prepared": prepared, "load": started, "to_dedup": to_dedup, "runs": runs,
            "pairs": report["pairs_considered"], "verified": report["pairs_verified"], "drops": report["drops"]}


def _exponent(xs: list[float], ys: list[float]) -> str:
    from bench.growth_report import exponent

    e = exponent(xs, ys)
    return "–" if e is None else f"{e:.2f}"


def above(runs: list[dict]) -> int:
    """The largest peak RSS of the runs above their RSS before the task (after the imports)."""
    return max(x["rss"] - x["before"] for x in runs)


def stage_runs_of(result: dict, stage: str) -> list[dict]:
    """Every task's run of `stage`, of all its rounds."""
    return [x for name, runs in result["runs"].items() if name.partition("/")[0] == stage for x in runs]


def cell(runs: list[dict], rounds: int = 0) -> str:
    """The slowest task's wall / the largest task's CPU (and its share over the mean: how even the partitions are) /
    the largest peak RSS (above the imports)."""
    cpus = [x["cpu"] for x in runs]
    even = f" ({max(cpus) / (sum(cpus) / len(cpus)):.1f}× the mean)" if len(runs) > 1 else ""
    tasks = f"{len(runs)} task{'s' * (len(runs) > 1)}" + (f" in {rounds} rounds" if rounds else "")
    return (f"{max(x['wall'] for x in runs):.2f} s / {max(cpus):.2f} s{even} / "
            f"{max(x['rss'] for x in runs) / MIB:,.0f} (+{above(runs) / MIB:,.0f}) MiB; {tasks}")


def markdown(results: list[dict], args, cmd: str) -> str:
    heads = " | ".join(f"{r['copies']}× ({r['prepared']:,} docs)" for r in results)

    def rounds(r: dict, stage: str) -> int:
        return sum(1 for name in r["runs"] if name.startswith(f"{stage}/"))

    lines = [
        BEGIN,
        "## Dedup stages partitioned by hash (`bench/dedup_bench.py`)",
        "",
        f"Machine: {machine('local disk')}; `uname -a`: {os.uname().sysname} {os.uname().release} "
        f"{os.uname().machine}. Load average (1/5/15 min) at the start of each size: "
        + "; ".join(f"{r['copies']}×: {r['load']}" for r in results) + ".",
        "",
        f"Reproduce: `{cmd}`. Input n× = n demo corpora at scale {args.scale} (seeds 0 … n−1, one spec, "
        f"T = P = {args.tasks}). The build runs to `{UPTO}`; then every task of each dedup stage (of "
        f"`{UPTO}`, each round's) runs again alone in a fresh Python process (`python -m bench.dedup_bench --task "
        "…`), which imports the build first and then times the task alone: its wall time, CPU time (user + system) "
        "and peak RSS (`VmHWM`, reset after the imports through `/proc/self/clear_refs`). The imports hold "
        + ", ".join(f"{r['runs']['noop'][0]['before'] / MIB:,.0f} MiB" for r in results)
        + " (in brackets: the task's peak above that). `old …`: the single-task stages the partitioned ones replaced "
        "(tests/dedup/dedup_reference.py, the code before issue 15, kept as the tests' reference) on the same work "
        "folder.",
        "",
        "Per stage, the slowest task's wall time / the largest task's CPU time (beside it, over the mean task's: how "
        "even its partitions are) / the largest peak RSS:",
        "",
        f"| stage | {heads} | CPU of its tasks: exponent |",
        "|---|" + "---|" * len(results) + "---:|",
    ]
    docs = [r["prepared"] for r in results]

    def row(label: str, runs_of, rounds_of=lambda r: 0) -> str:
        total = [sum(x["cpu"] for x in runs_of(r)) for r in results]
        return (f"| {label} | " + " | ".join(cell(runs_of(r), rounds_of(r)) for r in results)
                + f" | {_exponent(docs, total)} |")

    lines.append(row("`prepare`'s `DedupKeys` step", lambda r: r["runs"]["keys"]))
    for stage in STAGES:
        if all(stage_runs_of(r, stage) for r in results):
            lines.append(row(f"`{stage}`", lambda r, n=stage: stage_runs_of(r, n), lambda r, n=stage: rounds(r, n)))
    lines += [
        row("old `find_duplicates` (1 task: every document)", lambda r: r["runs"]["old-exact"]),
        row("old `minhash_cluster` (1 task: every candidate pair)", lambda r: r["runs"]["old-near"]),
        "| candidate pairs / verified / near-duplicate drops | "
        + " | ".join(f"{r['pairs']:,} / {r['verified']:,} / {r['drops']:,}" for r in results) + " | |",
        "",
        "The exponent: the slope of log(CPU of all the stage's tasks) on log(documents) over the sizes, at the same T "
        "(its tasks' fixed costs, a DuckDB connection and the listings, read as sublinear growth where the work is "
        "small).",
        "",
    ]
    first, last = results[0], results[-1]

    def growth(runs_of) -> str:
        return f"{above(runs_of(first)) / MIB:,.0f} → {above(runs_of(last)) / MIB:,.0f} MiB"

    largest = max(STAGES, key=lambda n: above(stage_runs_of(last, n)) if stage_runs_of(last, n) else 0)
    lines += [
        f"From {first['copies']}× to {last['copies']}× ({last['prepared'] / first['prepared']:.1f}× the documents, "
        f"{last['verified'] / max(1, first['verified']):.1f}× the verified pairs) at the same T, the peak RSS above a "
        f"bare process: `find_duplicates` tasks {growth(lambda r: stage_runs_of(r, 'find_duplicates'))} (the old "
        f"single task {growth(lambda r: r['runs']['old-exact'])}), `minhash_verify` tasks "
        f"{growth(lambda r: stage_runs_of(r, 'minhash_verify'))}, `minhash_cluster`'s "
        f"{growth(lambda r: stage_runs_of(r, 'minhash_cluster'))} (the old single task "
        f"{growth(lambda r: r['runs']['old-near'])}); the largest at {last['copies']}×: `{largest}`. Each task holds "
        "its partition of the keys or pairs (a hash prefix of the document, or of its family for the verified "
        "pairs), and what it holds past its bounded buffers DuckDB spills past its memory limit; more tasks keep "
        "each one's share flat as the input grows (the growth benchmark measures that with T growing with the input, "
        "and at one T with 100× the input a task). `minhash_cluster` at 100M verified pairs and a component of 10M "
        "documents: [its section](#near-duplicates-resolved-per-connected-component-minhash_cluster-in-rounds).",
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
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    p.add_argument("--report-only", action="store_true", help="re-render the section from --dir's results.json")
    args = p.parse_args(argv)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="mixture-dedup-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    cmd = "python -m bench.dedup_bench" + (f" --scale {args.scale}" if args.scale != 0.5 else "") + \
        (f" --sizes {args.sizes}" if args.sizes != "1,3,6" else "") + (f" --tasks {args.tasks}" if args.tasks != 4 else "")
    try:
        if args.report_only:
            results = json.loads((root / "results.json").read_text())["sizes"]
        else:
            results = []
            for copies in (int(s) for s in args.sizes.split(",")):
                print(f"  {copies}× …", flush=True)
                results.append(bench_size(root / f"x{copies}", copies, args))
            (root / "results.json").write_text(json.dumps({"sizes": results}, indent=1))
        show(markdown(results, args, cmd), BEGIN, END, not args.no_publish)
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
