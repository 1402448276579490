"""Fit benchmark: the `fit` stage's serial wall time with the term counts the `sample` tasks write (merged, no text
read) against the fit counting the sample's text itself (what it did before), and the counting's cost per sample
task, at three sample sizes. Figures go into docs/performance.md."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from bench.build_bench import demo_corpus, demo_spec, load, write_spec
from bench.common import machine, publish

BEGIN, END = "<!-- fit-bench:begin -->", "<!-- fit-bench:end -->"
TASKS = 4


def _median_time(fn, runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def _sample(ctx, rate: float, folder: Path) -> dict:
    """The sample stage's tasks run one after another in this process (each on one core, as a worker runs it):
    each task's wall time, and the part of it that counts terms (PartCounts.of on the task's texts, again)."""
    from mixture.fit.part_counts import PartCounts
    from mixture.pipelines.partition.sample import sample_for_fit

    step = sample_for_fit(ctx, rate)[0]
    step.output_folder = str(folder)
    task, terms = [], []
    for rank in range(TASKS):
        t = time.perf_counter()
        list(step.run(rank=rank, world_size=TASKS))  # a generator: runs when iterated
        task.append(time.perf_counter() - t)
        texts = pq.read_table(folder / f"{rank:05d}.parquet", columns=["text"])["text"].to_pylist()
        t = time.perf_counter()
        PartCounts.of(texts)
        terms.append(time.perf_counter() - t)
    return {"task": task, "terms": terms}


def _without_counts(folder: Path, out: Path) -> None:
    """The sample files as the sample stage wrote them before it counted terms (the fit then counts the text)."""
    from mixture.fit.sample_files import TERM_COLUMNS

    out.mkdir(parents=True)
    for p in sorted(folder.glob("*.parquet")):
        pq.write_table(pq.read_table(p).drop_columns(list(TERM_COLUMNS)), out / p.name, compression="none")


def measure(ctx, kept: int, size: int, root: Path, params: dict, runs: int) -> dict:
    from mixture.fit.embed import TermCounts, min_df_for
    from mixture.fit.model_store import fit_and_save
    from mixture.fit.one_thread import one_thread
    from mixture.fit.sample_files import read_sample

    folder = root / f"sample-{size}"
    shutil.rmtree(folder, ignore_errors=True)
    load_before = load()
    sampled = _sample(ctx, min(1.0, size / kept), folder)
    old = root / f"sample-{size}-text"
    shutil.rmtree(old, ignore_errors=True)
    _without_counts(folder, old)

    def fit(sample: Path, name: str) -> None:
        fit_and_save(str(sample), str(root / f"model-{name}"), params, str(root / f"assigned-{name}"))

    with one_thread():
        n = len(read_sample(str(folder)))
        merge, merge_runs = _median_time(lambda: read_sample(str(folder)).term_counts(min_df_for(n)), runs)
        texts = read_sample(str(folder), text=True).rows["text"]
        tokenise, _ = _median_time(lambda: TermCounts.of(texts), runs)
    new, new_runs = _median_time(lambda: fit(folder, "counts"), runs)
    before, before_runs = _median_time(lambda: fit(old, "text"), runs)
    same = all((root / "model-counts" / f).read_bytes() == (root / "model-text" / f).read_bytes()
               for f in os.listdir(root / "model-counts"))
    nnz = read_sample(str(folder)).term_counts(1).counts.nnz
    chars = sum(min(len(t), 20_000) for t in texts)
    return {"size": size, "docs": n, "chars": chars, "nnz": nnz, "sample": sampled, "merge": merge,
            "merge_runs": merge_runs, "tokenise": tokenise, "new": new, "new_runs": new_runs, "before": before,
            "before_runs": before_runs, "same": same, "load": load_before}


def markdown(results: list[dict], info: dict, cmd: str) -> str:
    def s(x: float) -> str:
        return f"{x:.2f} s"

    rows = [
        ("sample documents (fit.json `sample_docs`)", lambda r: f"{r['docs']:,}"),
        ("characters the embedder reads (heads of 20k)", lambda r: f"{r['chars'] / 1e6:.1f}M"),
        ("(document, term) pairs", lambda r: f"{r['nnz']:,}"),
        (f"`sample`: wall time per task ({TASKS} tasks; max, sum)",
         lambda r: f"{s(max(r['sample']['task']))}, {s(sum(r['sample']['task']))}"),
        ("… of which term counting per task (max, sum)",
         lambda r: f"{s(max(r['sample']['terms']))}, {s(sum(r['sample']['terms']))}"),
        ("**`fit` before: tokenises the sample's text itself**", lambda r: f"**{s(r['before'])}**"),
        ("**`fit` now: merges the tasks' counts, reads no text**", lambda r: f"**{s(r['new'])}**"),
        ("serial time saved", lambda r: f"{s(r['before'] - r['new'])} ({(1 - r['new'] / r['before']) * 100:.0f} %)"),
        ("… reading the sample and merging the counts (now)", lambda r: s(r["merge"])),
        ("… the rest, as before: SVD, k-means, labels, calibration, writing (now − merging)",
         lambda r: s(r["new"] - r["merge"])),
        ("… tokenising the whole sample in one process (before)", lambda r: s(r["tokenise"])),
        ("model files byte-identical (now vs before)", lambda r: "yes" if r["same"] else "**no**"),
        ("`fit` now, all runs", lambda r: ", ".join(f"{x:.2f}" for x in r["new_runs"])),
        ("`fit` before, all runs", lambda r: ", ".join(f"{x:.2f}" for x in r["before_runs"])),
        ("load average when the size started", lambda r: r["load"]),
    ]
    head = "| | " + " | ".join(f"sample {r['docs']:,}" for r in results) + " |"
    lines = [
        BEGIN,
        "## The fit's serial part (`bench/fit_bench.py`)",
        "",
        f"Machine: {machine()}; `uname -a`: `{info['uname']}`.",
        "",
        f"Reproduce: `{cmd}` (writes the corpora, the build and the samples under a temporary folder).",
        "",
        f"Input: {info['input']}, built once (`keep_work`); then for each size the `sample` stage's {TASKS} tasks "
        "run one after another in one process (each as a worker runs it, on one core) with the rate "
        "`size / kept documents`, and `fit_and_save` (one BLAS thread, as the build runs it) on that sample, "
        f"median of {info['runs']} runs, against the same files without their term counts (the fit then counts "
        "the text itself, as it did before the `sample` tasks counted). k = 40, fine_k = 200, embedding_dim 64.",
        "",
        head,
        "|---|" + "---:|" * len(results),
        *(f"| {name} | " + " | ".join(f(r) for r in results) + " |" for name, f in rows),
        "",
        "The fit's serial time now holds no per-character work: it reads the sample's small columns and each "
        "task's counts, merges the term dictionaries (one Arrow group-by of the tasks' terms), builds the "
        "(documents × terms) matrix, and fits (SVD, k-means, labels, calibration) as before. Term counting moves "
        f"to the `sample` tasks: its cost is shared by the {TASKS} tasks here, by `execution.tasks` on a cluster.",
        END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    from mixture.pipelines.build import build
    from mixture.pipelines.context import BuildContext
    from mixture.pipelines.partition import fit as fit_stage
    from mixture.pipelines.partition.sample import count_kept
    from mixture.spec.load import load_spec

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", help="where to write the corpora, the build and the samples (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep --dir's build and reuse it")
    p.add_argument("--scale", type=float, default=1.0, help="demo corpus scale")
    p.add_argument("--copies", type=int, default=2, help="demo corpora (seeds 0 …) in the spec")
    p.add_argument("--sizes", default="2500,8000,all", help="sample sizes (documents; `all`: every kept document)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    args = p.parse_args(argv)
    tmp = None if args.dir else tempfile.TemporaryDirectory(prefix="fit-bench-")
    root = Path(args.dir or tmp.name).resolve()
    try:
        corpora = [root / f"corpus-{seed}" for seed in range(args.copies)]
        for seed, corpus in enumerate(corpora):
            demo_corpus(corpus, seed, args.scale)
        spec = demo_spec(corpora, "store", k=40, fine_k=200, tasks=TASKS, workers=min(TASKS, os.cpu_count() or 1))
        spec_path = write_spec(root / "build", spec)
        if not (args.keep and (root / "build" / "store" / "store.json").exists()):
            shutil.rmtree(root / "build" / "store", ignore_errors=True)
            t = time.perf_counter()
            build(str(spec_path), progress=False, keep_work=True)
            print(f"  built {root / 'build' / 'store'} in {time.perf_counter() - t:.1f} s", flush=True)
        ctx = BuildContext(load_spec(str(spec_path)), str(root / "build"), str(root / "build" / "store"), TASKS)
        kept = count_kept(ctx)
        params = fit_stage.steps(ctx)[0].params
        sizes = [kept if s == "all" else int(s) for s in args.sizes.split(",")]
        results = []
        for size in sizes:
            r = measure(ctx, kept, size, root / "samples", params, args.runs)
            print(f"  sample {r['docs']:,}: fit before {r['before']:.2f} s, now {r['new']:.2f} s (merge "
                  f"{r['merge']:.2f} s); counting per task {max(r['sample']['terms']):.2f} s max; same model: "
                  f"{r['same']}; load {r['load']}", flush=True)
            results.append(r)
        uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
        info = {"uname": uname, "runs": args.runs,
                "input": f"{args.copies} demo corp{'us' if args.copies == 1 else 'ora'} at scale {args.scale:g} "
                         f"(seeds 0–{args.copies - 1}, each a distinct copy of the 10 sources), {kept:,} documents "
                         "kept"}
        cmd = "python -m bench.fit_bench" + "".join(f" --{k} {v}" for k, v in (
            ("scale", args.scale), ("copies", args.copies), ("sizes", args.sizes)) if v != p.get_default(k))
        section = markdown(results, info, cmd)
        print(section)
        if not args.no_publish:
            publish(section, BEGIN, END)
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
