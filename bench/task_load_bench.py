"""The dedup key stages at a pool task's load: `prepare`'s DedupKeys step, `duplicate_ids`, `find_duplicates`,
`minhash_sigs`, `minhash_buckets` and `minhash_route` at one T with up to ~1.7M documents a task (a task of the
25.6T pool at T = 8,000 holds ~1.6M), on the prepared work of a real build of the growth corpus replicated m times.
CPU exponents with their 95 % interval over interleaved repeats, peak memory per task; figures into
docs/performance.md.

Full run (~25 min on a 2-core machine, ~13 GB of work under --dir): `python -m bench.task_load_bench`."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench import growth_corpus
from bench.build_bench import REPO, load, write_spec
from bench.common import machine, show
from bench.growth_report import exponent_interval, per_token_fit
from mixture.stages import registry

BEGIN, END = "<!-- task-load-bench:begin -->", "<!-- task-load-bench:end -->"
# the stages measured at every size and repeat, in build order (`keys`: prepare's last step alone, bench/dedup_bench.py)
STAGES = ("keys", "duplicate_ids", "find_duplicates", "minhash_sigs", "minhash_buckets", "minhash_route")
POOL_DOCS_A_TASK = 12.9e9 / 8_000  # the pool's documents (docs/scaling.md) over its T
STEADY, FLAT = 0.05, 1.2  # issue 25's goals: CPU exponent 1.00 ± 0.05 (interval inside ± 0.1), peak ≤ 1.2×
MIB = 2**20


# -- the replicated work ----------------------------------------------------------------------------------------
def salt(copy: int) -> int:
    """The 64-bit mask of copy `copy` (0: none, the base's own hashes)."""
    if not copy:
        return 0
    return int.from_bytes(hashlib.blake2b(f"replica {copy}".encode(), digest_size=8).digest(), "little")


def _xor_values(column: pa.ChunkedArray, mask: int) -> pa.Array:
    """Each binary value (k little-endian uint64: a MinHash signature) xor `mask` word by word; nulls stay null.
    Equal signature rows stay equal within a copy and differ across copies, so each copy keeps the base's LSH
    collisions and collides with no other copy."""
    arr = column.combine_chunks()
    if arr.offset:
        arr = arr.take(pa.array(np.arange(len(arr))))
    validity, offsets, data = arr.buffers()
    ends = np.frombuffer(offsets, np.int32)[: len(arr) + 1]
    if data is None or ends[-1] == ends[0]:  # every value null or empty (exempt documents have none)
        return arr
    words = np.frombuffer(data, np.uint8)[ends[0]: ends[-1]].view("<u8") ^ np.uint64(mask)
    return pa.Array.from_buffers(pa.binary(), len(arr), [validity, pa.py_buffer(ends - ends[0]),
                                                         pa.py_buffer(words.tobytes())], arr.null_count)


def replica(t: pa.Table, copy: int, rows: int) -> pa.Table:
    """Rows `t` of a prepared file as copy `copy` of it: ids and origin files suffixed `~rNNN`, rows after the copies
    before it (`rows` a copy), exact hashes and signatures masked by `salt(copy)`, texts empty (no measured stage
    reads them)."""
    tag, mask = f"~r{copy:03d}", salt(copy)
    columns = {
        "id": pc.binary_join_element_wise(t["id"], pa.scalar(tag), ""),
        "text": pa.repeat("", len(t)),
        "origin": pc.replace_substring_regex(t["origin"], r"^(.*)(:[0-9]+)$", rf"\1{tag}\2"),
        "idx": pc.add(t["idx"], pa.scalar(copy * rows, pa.int64())),
        "exact_hash": pc.bit_wise_xor(t["exact_hash"], pa.scalar(mask, pa.uint64())),
        "minhash": _xor_values(t["minhash"], mask),
    }
    return pa.table([columns.get(f.name, t[f.name]) for f in t.schema], schema=t.schema)


def replicate(base: Path, out: Path, copies: int) -> int:
    """Prepared file `base` as `copies` copies of its rows, one after the other, row group by row group, into `out`;
    its rows."""
    source = pq.ParquetFile(base)
    rows = source.metadata.num_rows
    out.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(out, source.schema_arrow, compression="zstd") as w:
        for copy in range(copies):
            for g in range(source.num_row_groups):
                t = source.read_row_group(g)
                w.write_table(replica(t, copy, rows), row_group_size=len(t))
    return rows * copies


def size_store(base: Path, folder: Path, copies: int) -> int:
    """`folder`/store: the base store after `prepare`, its prepared files replicated `copies` times (no dedup work:
    the measured `keys` task writes it); its documents."""
    store, prepared = folder / "store", registry.PREPARED.folder
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(base, store, ignore=lambda d, names: [n for n in names if (Path(d) / n) in
                                                           {base / prepared, base / registry.DEDUP}])
    return sum(replicate(f, store / prepared / f.name, copies) for f in sorted((base / prepared).glob("*.parquet")))


# -- in the measured process ------------------------------------------------------------------------------------
def stage_tasks(spec_path: str, what: str) -> list[dict]:
    """Every task of `what` on the spec's store, one after another, each timed alone after the imports (as a pool
    worker runs a stage's tasks)."""
    from bench.dedup_bench import build_context, import_stages, task_pipeline, timed_task

    import_stages()
    ctx = build_context(spec_path)
    return [timed_task(ctx, what, r) for r in range(task_pipeline(ctx, what)[1])]


def measure(spec_path: Path) -> dict[str, list[dict]]:
    """Each of STAGES in build order, `stage_tasks` in a fresh process."""
    runs = {}
    for what in STAGES:
        out = subprocess.run([sys.executable, "-m", "bench.task_load_bench", "--run", str(spec_path), what],
                             cwd=REPO, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"{spec_path} {what}: {out.stderr[-3000:]}")
        runs[what] = json.loads(out.stdout.strip().splitlines()[-1])
    return runs


def counts(store: Path) -> dict[str, int]:
    """The repeated ids and exact duplicates dropped, and the candidate pairs of the bands, summed over the tasks."""
    from mixture.pipelines.dedup.drop_lists import COUNTS
    from mixture.pipelines.dedup.minhash_buckets import BAND_COUNTS
    from mixture.pipelines.dedup.shuffle import summed_counts

    def total(file, schema, field: str) -> int:
        return summed_counts(file.every(f"{store}/{file.folder}"), schema)[field]

    return {"id_drops": total(registry.ID_COUNTS, COUNTS, "drops"),
            "exact_drops": total(registry.EXACT_COUNTS, COUNTS, "drops"),
            "band_pairs": total(registry.BAND_TASK_COUNTS, BAND_COUNTS, "band_pairs")}


# -- the driver -------------------------------------------------------------------------------------------------
def base_build(root: Path, args, log=print) -> tuple[dict, Path, Path]:
    """A real build of growth variants 1 … `args.variants` (the pool duplicate profile) run to the end of `prepare`
    at T = `args.tasks`: its spec and store, and variant 1's folder (the machine's speed probe)."""
    from bench.dedup_bench import build_context
    from bench.growth_bench import growth_spec
    from mixture.pipelines.build import run_stage, stage_runs

    variants = growth_corpus.ensure_variants(Path(args.cache), args.seed, args.base_scale,
                                             list(range(1, args.variants + 1)), log, "pool")
    corpus = growth_corpus.assemble(root / "corpus", [variants[v] for v in sorted(variants)])
    spec = growth_spec(corpus, args.variants, args.workers,
                       SimpleNamespace(k=40, fine_k=200, sample_docs=500), tasks=args.tasks)
    folder = root / "base"
    shutil.rmtree(folder / "store", ignore_errors=True)
    ctx = build_context(str(write_spec(folder, spec)))
    for stage in stage_runs(ctx, registry.get("prepare")):
        run_stage(ctx, stage, "local", args.workers)
    return spec, folder / "store", variants[1]


def run(root: Path, args, log=print) -> dict:
    """The base build, every size's replicated store, then every size measured `args.repeats` times, interleaved."""
    from bench.growth_bench import probe_rate, probe_texts
    from mixture.spec.load import load_spec

    sizes = [int(c) for c in args.copies.split(",")]
    spec, base, first = base_build(root, args, log)
    probe = probe_texts(first)
    ex = load_spec(str(base.parent / "spec.yaml")).execution
    results = {"sizes": {}, "runs": [], "load_before": load(), "copies": sizes, "tasks": args.tasks,
               "task_memory": ex.mem_per_cpu_gb * ex.cpus_per_task * 2**30}
    for m in sizes:
        folder = root / f"x{m:03d}"
        docs = size_store(base, folder, m)
        write_spec(folder, spec)
        results["sizes"][str(m)] = {"copies": m, "docs": docs}
        log(f"  {m} copies: {docs:,} documents, {docs / args.tasks:,.0f} a task")
    for r in range(args.repeats):
        for m in sizes if r % 2 == 0 else sizes[::-1]:  # interleaved: up, then down
            folder = root / f"x{m:03d}"
            started, rate = load(), probe_rate(probe)
            runs = measure(folder / "spec.yaml")
            cpu = sum(x["cpu"] for rs in runs.values() for x in rs)
            results["runs"].append({"copies": m, "repeat": r, "load": started, "probe_rate": rate, "runs": runs,
                                    "counts": counts(folder / "store")})
            log(f"  [{r + 1}/{args.repeats}] {m} copies: {cpu:.1f} s of CPU (load {started}, bare tokenizer "
                f"{rate / 1e6:.2f}M tok/s)")
    results["load_after"] = load()
    return results


# -- the report -------------------------------------------------------------------------------------------------
def stage_cpu(run_: dict, what: str) -> float:
    return sum(x["cpu"] for x in run_["runs"][what])


def stage_peak(run_: dict, what: str) -> float:
    return max(x["rss"] for x in run_["runs"][what])


def checks(results: dict) -> list[str]:
    """The replication's own check: every size's drops and candidate pairs are its copies times the first size's
    over its copies (each copy keeps the base's duplicates; no copy duplicates another)."""
    first = next(r for r in results["runs"] if r["copies"] == results["copies"][0])
    unit = {k: v / first["copies"] for k, v in first["counts"].items()}
    return [f"{r['copies']} copies: {k} {v:,} against {unit[k] * r['copies']:,.0f}"
            for r in results["runs"] for k, v in r["counts"].items() if v != round(unit[k] * r["copies"])]


def markdown(results: dict, cmd: str) -> str:
    sizes = results["copies"]
    docs = {m: results["sizes"][str(m)]["docs"] for m in sizes}
    t = results["tasks"]
    runs = results["runs"]

    def median(what: str, m: int, f) -> float:
        return statistics.median(f(r, what) for r in runs if r["copies"] == m)

    base = next(r for r in runs if r["copies"] == sizes[0])["counts"]
    bad = checks(results)
    lines = [
        BEGIN,
        "## The dedup key stages at a pool task's load (`python -m bench.task_load_bench`)",
        "",
        f"Machine: {machine()}. Load average (1/5/15 min) before the run: {results['load_before']}, after: "
        f"{results['load_after']}; before each measured process, with the bare tokenizer's rate on one core over a "
        "fixed probe text (bench/growth_bench.py's), in the last table.",
        "",
        f"Reproduce: `{cmd}`. A real build of the growth corpus (variants 1 … n of the demo corpus with the pool's "
        f"duplicates, as bench/growth_bench.py builds them) runs to the end of `prepare` at T = P = {t}; its prepared "
        "files are then replicated m times for each size (ids and origin files suffixed by copy, exact hashes and "
        "MinHash signatures masked by a 64-bit value of the copy: each copy keeps the base's exact and near "
        "duplicates and duplicates no other copy; texts left empty, since none of these stages reads them). At each "
        "size each stage runs in build order in a fresh process that imports the build, then runs the stage's "
        "tasks one after another, each timed alone (CPU time of the task; its peak RSS, reset as it starts: a "
        "task after the first starts from what the ones before it left); the sizes interleaved, up then down, "
        f"{max(r['repeat'] for r in runs) + 1} times. `keys` is `prepare`'s last step (DedupKeys: the key "
        f"shuffles); `minhash_buckets` runs a task per band (14). A task of the 25.6T pool at T = 8,000 holds "
        f"~{POOL_DOCS_A_TASK / 1e6:.1f}M documents (12.9B documents over T); here the largest holds "
        f"{docs[sizes[-1]] / t / 1e6:.2f}M.",
        "",
        "The replication checked: " + ("every size's repeated ids, exact duplicates and candidate pairs are its "
                                       f"copies times the base's ({base['id_drops'] / sizes[0]:,.0f}, "
                                       f"{base['exact_drops'] / sizes[0]:,.0f} and "
                                       f"{base['band_pairs'] / sizes[0]:,.0f} a copy): PASS."
                                       if not bad else "FAIL: " + "; ".join(bad[:5]) + "."),
        "",
        "CPU seconds of all the stage's tasks (median of the repeats) and per document, the exponent of CPU against "
        "the documents over every repeat with its 95 % interval, k of CPU = a + b·documents^k (a: what does not grow),"
        " and the largest task's peak RSS:",
        "",
        "| stage | " + " | ".join(f"{m}× ({docs[m] / t / 1e3:,.0f}k a task)" for m in sizes)
        + " | µs a document, smallest → largest | exponent | k of a + b·x^k | peak per task, MiB |",
        "|---|" + "---:|" * len(sizes) + "---:|---:|---:|---:|",
    ]
    goals = []
    for what in STAGES:
        cpu = {m: median(what, m, stage_cpu) for m in sizes}
        xs = [docs[r["copies"]] for r in runs]
        ys = [stage_cpu(r, what) for r in runs]
        e, k = exponent_interval(xs, ys), per_token_fit(xs, ys)
        peaks = {m: median(what, m, stage_peak) / MIB for m in sizes}
        ratio = peaks[sizes[-1]] / peaks[sizes[0]]
        us = [cpu[m] / docs[m] * 1e6 for m in (sizes[0], sizes[-1])]
        lines.append(
            f"| `{what}` | " + " | ".join(f"{cpu[m]:.2f}" for m in sizes)
            + f" | {us[0]:.2f} → {us[1]:.2f} | " + (f"{e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}]" if e else "–")
            + " | " + (f"{k[0]:.2f} [{k[1]:.2f}, {k[2]:.2f}], a {k[3]:.2f} s" if k else "–")
            + f" | {peaks[sizes[0]]:,.0f} → {peaks[sizes[-1]]:,.0f} ({ratio:.2f}×) |")
        if e:
            ok = abs(e[0] - 1) <= STEADY and e[1] >= 1 - 2 * STEADY and e[2] <= 1 + 2 * STEADY
            goals.append(f"- {'PASS' if ok else 'FAIL'} `{what}` CPU exponent 1.00 ± {STEADY}, its 95 % interval "
                         f"inside 1.00 ± {2 * STEADY}: {e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}] over {len(runs)} runs")
        largest = max(stage_peak(r, what) for r in runs)
        goals.append(f"- {'PASS' if largest <= results['task_memory'] else 'FAIL'} `{what}` every task within the "
                     f"memory a task is given ({results['task_memory'] / 2**30:g} GiB: `execution.mem_per_cpu_gb` × "
                     f"`cpus_per_task`, half of it DuckDB's limit): the largest {largest / MIB:,.0f} MiB")
        goals.append(f"- {'PASS' if ratio <= FLAT else 'FAIL'} `{what}` peak memory per task within {FLAT}× "
                     f"from {docs[sizes[0]] / t / 1e3:,.0f}k to {docs[sizes[-1]] / t / 1e3:,.0f}k documents a task: "
                     f"{ratio:.2f}×")
    lines += ["", "Seconds; exponents over every measured run.", "", *goals, "",
              "Every measured process in the order it ran:", "",
              "| order | copies | load (1/5/15 min) | bare tokenizer, tok/s | CPU s, every stage |",
              "|---:|---:|---|---:|---:|"]
    lines += [f"| {i} | {r['copies']} | {r['load']} | {r['probe_rate']:,.0f} | "
              f"{sum(stage_cpu(r, w) for w in STAGES):.1f} |"
              for i, r in enumerate(runs)]
    lines.append(END)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--run"]:
        print(json.dumps(stage_tasks(argv[1], argv[2])), flush=True)
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", help="where the corpus, stores and results go (default: a temporary folder, removed)")
    p.add_argument("--variants", type=int, default=4, help="growth corpus variants of the base build (default 4)")
    p.add_argument("--base-scale", type=float, default=0.5, help="demo corpus scale of each variant (default 0.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tasks", type=int, default=2, help="T = P of the base build and of every size (default 2)")
    p.add_argument("--workers", type=int, default=2, help="workers of the base build's prepare (default 2)")
    p.add_argument("--copies", default="6,12,24,48,96", help="copies of the base's prepared work per size "
                   "(default 6,12,24,48,96: 16×, up to ~1.7M documents a task at the defaults)")
    p.add_argument("--repeats", type=int, default=3, help="measured runs of every size, interleaved (default 3)")
    p.add_argument("--cache", default=str(growth_corpus.default_cache()), help="cached growth corpus variants")
    p.add_argument("--keep", action="store_true", help="keep the stores under --dir (default: only results.json)")
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    p.add_argument("--report-only", action="store_true", help="re-render the section from --dir's results.json")
    args = p.parse_args(argv)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="mixture-task-load-"))
    root.mkdir(parents=True, exist_ok=True)
    shown = ("variants", "base_scale", "seed", "tasks", "copies", "repeats")
    cmd = " ".join(["python -m bench.task_load_bench", *(f"--{k.replace('_', '-')} {getattr(args, k)}" for k in shown
                                                         if getattr(args, k) != p.get_default(k))])
    try:
        if args.report_only:
            results = json.loads((root / "results.json").read_text())
        else:
            results = run(root, args)
            (root / "results.json").write_text(json.dumps(results, indent=1))
        show(markdown(results, cmd), BEGIN, END, not args.no_publish)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
        elif not (args.keep or args.report_only):  # the results stay; the stores are GBs
            for store in (root / "base" / "store", *(f / "store" for f in root.glob("x*"))):
                shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    main()
