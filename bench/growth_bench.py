"""Growth benchmark: the build of 1 … n variants of the demo corpus (by default 1, 4 and 20: the largest ~570M kept
tokens; the `pool` duplicate profile, mixture/demo_corpus/crawl.py), each size built `--repeats` times with the
sizes interleaved, per stage wall and CPU seconds and peak memory per task, growth exponents with their 95 %
interval, the load and the bare tokenizer's rate before every build, 1 against 2 workers, throughput against the
bare tokenizer, the ground truth; after each build of a size, the same size at the smallest size's T (the one-T
series: with both, each stage's CPU is fitted as fixed + per task + per T·P + per unit of work); goals printed as
PASS/FAIL; figures into docs/performance.md, the 25.6T projection (mixture/stages/costs.py) into docs/scaling.md.

Full run (the docs' figures; ~30–40 min per repeat on a quiet 2-core machine with the one-T series, ~15 min more
the first time for the corpora):
`python -m bench.growth_bench`. Smoke run, nothing published: `python -m bench.growth_bench --quick`."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import yaml

from bench import growth_corpus, growth_report, pool_truth
from bench.build_bench import REPO, bare_tokenizer, demo_spec, input_texts, load
from bench.common import DOC, live_children_cpu, machine, publish

RESULTS = "growth.json"
# sample_docs well under one variant's kept documents (12.8k at scale 1): `sample` tokenizes the sample, `assign` the
# rest, so a sample near the smallest size's documents would move work between them from size to size
DEFAULTS = {"scales": "1,4,20", "base_scale": 1.0, "workers": "1,2", "tasks_per_variant": 4, "sample_docs": 1000,
            "k": 40, "fine_k": 200, "tokenizer_variants": 2, "seed": 0, "duplicates": "pool", "repeats": 3,
            "fixed_tasks": 0, "mem_per_cpu_gb": 0.0, "one_t_series": True}
QUICK = {"scales": "1,2,4", "base_scale": 0.05, "tasks_per_variant": 2, "sample_docs": 100, "k": 8, "fine_k": 32,
         "tokenizer_variants": 1, "repeats": 1}
MIB = 2**20


# ------------------------------------------------------------------------------------------------- the build


def child_build(spec_path: str, workers: int, out_json: str, executor: str = "local",
                overrides: dict | None = None) -> None:
    """Run in a fresh process: build `spec_path`, timing every stage (wall, and CPU of this process and of its worker
    processes: those it reaped and those still running, as the dedup stages' shared workers are until the group
    ends) and this driver's own peak memory while it ran."""
    import mixture.pipelines.build as pb
    import mixture.pipelines.finalize.store_json as pf
    from mixture.pipelines.runtime.task_usage import peak_rss, reset_peak

    stages: list[dict] = []

    def clock() -> tuple[float, float]:
        t = os.times()
        return time.perf_counter(), t.user + t.system + t.children_user + t.children_system + live_children_cpu()

    def timed(fn, name_of):
        def run(*a, **kw):
            reset_peak()
            (w0, c0), started = clock(), time.time()
            try:
                return fn(*a, **kw)
            finally:
                w1, c1 = clock()
                stages.append({"stage": name_of(a), "wall": w1 - w0, "cpu": c1 - c0, "driver_peak": peak_rss(),
                               "start": started})
        return run

    pb.run_stage = timed(pb.run_stage, lambda a: a[1].name)
    pf.finalize = timed(pf.finalize, lambda a: "finalize")
    w0, c0 = clock()
    artifact = pb.build(spec_path, workers=workers, executor=executor, progress=False, overrides=overrides)
    w1, c1 = clock()
    Path(out_json).write_text(json.dumps({"wall": w1 - w0, "cpu": c1 - c0, "stages": stages,
                                          "artifact": artifact.model_dump(mode="json")}))


def task_usage(store: Path) -> dict[str, dict]:
    """Per stage, from its tasks' `_build/<stage>/usage/*.json` (a stage run in rounds: every round's,
    `_build/<stage>/<round>/usage/`): tasks, Σ CPU, longest task, largest peak RSS."""
    out = {}
    for d in sorted(p for p in (store / "_build").iterdir() if p.is_dir()):
        recs = [json.loads(p.read_text()) for p in sorted([*d.glob("usage/*.json"), *d.glob("*/usage/*.json")])]
        if not recs:
            continue
        out[d.name] = {"tasks": len(recs), "task_cpu": sum(r["cpu_seconds"] for r in recs),
                       "longest_task": max(r["wall_seconds"] for r in recs),
                       "peak_rss": max(r["peak_rss_bytes"] for r in recs),
                       "scope": sorted({r["peak_rss_scope"] for r in recs})}
    return out


def run_build(folder: Path, spec: dict, workers: int, executor: str = "local") -> dict:
    """Build `spec` from an empty store in a fresh process; its timings, per-task usage and store counts."""
    store = folder / "store"
    shutil.rmtree(store, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    spec_path = folder / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out, log = folder / "build.json", folder / "build.log"
    overrides = None
    if executor == "ray":  # every Ray job (one actor process each) runs its share of a stage's tasks in turn
        bands = spec["processing"]["dedup"]["fuzzy"]["bands"]
        overrides = {"tasks_per_job": -(-spec["execution"]["tasks"] // workers),
                     "stages": {"minhash_buckets": {"tasks_per_job": -(-bands // workers)}}}
    code = (f"from bench.growth_bench import child_build; child_build({str(spec_path)!r}, {workers}, {str(out)!r}, "
            f"{executor!r}, {overrides!r})")
    before = load()
    with log.open("w") as f:
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, stdout=f, stderr=subprocess.STDOUT,
                              env={**os.environ, "COLUMNS": "120"})
    if proc.returncode != 0:
        raise RuntimeError(f"the build of {spec_path} ({workers} workers, {executor}) failed with exit code "
                           f"{proc.returncode}; see {log}")
    res = json.loads(out.read_text())
    artifact = res.pop("artifact")
    usage = task_usage(store)
    for s in res["stages"]:
        u = usage.get(s["stage"])
        s.update(u if u else {"tasks": 1, "task_cpu": s["cpu"], "longest_task": s["wall"],
                              "peak_rss": s["driver_peak"], "scope": ["driver"]})
    return {**res, "workers": workers, "executor": executor, "load_before": before, "load_after": load(),
            "counters": artifact["counters"], "mix": growth_report.mix(artifact),
            "pairs_verified": (artifact.get("near_duplicates") or {}).get("pairs_verified", 0)}


# --------------------------------------------------------------------------------------------- the baseline


def kept_sample(store: Path, share: float) -> tuple[list[str], int]:
    """The text of a strided `share` of the store's shard files and the Σ n_tokens of their documents."""
    files = sorted(str(p) for p in store.glob("cluster=*/quality=*/*.parquet"))
    step = max(1, round(1 / share))
    table = ds.dataset(files[::step], format="parquet").to_table(columns=["text", "n_tokens"])
    return table.column("text").to_pylist(), int(table.column("n_tokens").to_numpy().sum())


def tokenizer_baseline(variants: list[Path], store: Path, n_variants: int, workers: int) -> dict:
    """The bare tokenizer (bench/build_bench.py's fastest call on `workers` cores) on the input of the first
    variants (every well-formed record: what the build is given) and on a like share of the store's kept text."""
    texts = [t for v in variants for t in input_texts(v)]
    expected = sum(growth_corpus.input_counts(v)["tokens"] for v in variants)
    t_in, n_in, call_in = bare_tokenizer(texts, workers)
    assert n_in == expected, f"bare tokenizer counted {n_in:,} input tokens, the corpus cache {expected:,}"
    del texts
    kept, kept_tokens = kept_sample(store, len(variants) / n_variants)
    t_kept, n_kept, call_kept = bare_tokenizer(kept, workers)
    assert n_kept == kept_tokens, f"bare tokenizer counted {n_kept:,} kept tokens, the store {kept_tokens:,}"
    return {"workers": workers, "input_tokens": n_in, "input_seconds": t_in, "input_call": call_in,
            "kept_tokens": n_kept, "kept_seconds": t_kept, "kept_call": call_kept}


# ------------------------------------------------------------------------------------------------------ main


def growth_spec(corpus: Path, n: int, workers: int, args, tasks: int | None = None) -> dict:
    tasks = tasks or getattr(args, "fixed_tasks", None) or args.tasks_per_variant * n
    spec = demo_spec([corpus], "store", k=args.k, fine_k=args.fine_k, tasks=tasks, workers=workers)
    spec["partition"]["clusters"]["sample_docs"] = args.sample_docs
    spec["sources"] += growth_corpus.crawl_source(corpus)
    if getattr(args, "mem_per_cpu_gb", None):
        spec["execution"]["mem_per_cpu_gb"] = args.mem_per_cpu_gb
    return spec


def measure(args, out: Path, log=print) -> dict:
    scales = sorted({int(x) for x in args.scales.split(",")})
    workers = sorted({int(x) for x in args.workers.split(",")})
    series_w, largest = max(workers), max(scales)
    cache = Path(args.cache)
    corpora, builds = growth_corpus.disk_needed(largest, args.base_scale, len(workers) + 1)
    free_cache, free_out = growth_corpus.disk_free(cache), growth_corpus.disk_free(out)
    log(f"  disk free: {free_cache / 2**30:.1f} GiB under {cache} (the corpora need ~{corpora / 2**30:.1f} GiB), "
        f"{free_out / 2**30:.1f} GiB under {out} (the builds ~{builds / 2**30:.1f} GiB)")
    same = os.stat(cache).st_dev == os.stat(out).st_dev
    if (free_cache < corpora + (builds if same else 0)) or free_out < builds:
        raise SystemExit(f"not enough free disk for {largest} variants at scale {args.base_scale:g}: choose --cache "
                         "and --out on a larger filesystem, or smaller --scales")
    variants = growth_corpus.ensure_variants(cache, args.seed, args.base_scale, list(range(1, largest + 1)), log,
                                             args.duplicates)
    results = {"args": {k: getattr(args, k) for k in DEFAULTS}, "machine": machine_info(), "load_start": load(),
               "single_task": [], "scales": []}
    probe = probe_texts(variants[1])
    entries = {}
    for n in scales:
        counts = [growth_corpus.input_counts(variants[v]) for v in range(1, n + 1)]
        entries[n] = {"variants": n, "input_records": sum(c["records"] for c in counts),
                      "input_tokens": sum(c["tokens"] for c in counts),
                      "tasks": args.fixed_tasks or args.tasks_per_variant * n,
                      "builds": {}, "repeats": [],
                      "corpus": growth_corpus.assemble(out / "corpora" / f"n{n:03d}", [variants[v] for v in range(1, n + 1)])}
    # the same sizes at one T (the smallest size's), built after each build of the series: with T growing with the
    # input in the series, the cost model tells what a task and a shuffle range cost from what the work costs
    one_t = scales[0] * args.tasks_per_variant if args.one_t_series and not args.fixed_tasks else 0
    one_t_entries = {n: {**{k: v for k, v in entries[n].items() if k != "corpus"}, "tasks": one_t, "builds": {},
                         "repeats": []} for n in scales} if one_t else {}
    order = 0
    for r in range(args.repeats):
        for n in (scales if r % 2 == 0 else scales[::-1]):  # the sizes interleaved: a slow spell hits every size
            entry, corpus = entries[n], entries[n]["corpus"]
            if one_t and n != scales[0]:  # at the smallest size the series' build is the one at T = `one_t`
                rate = probe_rate(probe)
                b = run_build(out / "builds" / f"n{n:03d}-t{one_t}", growth_spec(corpus, n, series_w, args, one_t),
                              series_w)
                b.update(order=order, variants=n, probe_rate=rate, repeat=r)
                order += 1
                log(f"  [{r + 1}/{args.repeats}] {n} variant(s) at T = {one_t}: {b['wall']:.1f} s wall, "
                    f"{b['cpu']:.1f} s CPU (load {b['load_before']} → {b['load_after']}; bare tokenizer "
                    f"{rate / 1e6:.2f}M tok/s before)")
                one_t_entries[n]["repeats"].append({k: b[k] for k in ("order", "variants", "repeat", "probe_rate",
                                                                      "cpu", "wall", "load_before", "load_after",
                                                                      "stages")})
                if r == 0:
                    one_t_entries[n]["builds"][str(series_w)] = b
                shutil.rmtree(out / "builds" / f"n{n:03d}-t{one_t}" / "store", ignore_errors=True)
            runs = [series_w] + ([w for w in workers if w != series_w] if n == largest and r == 0 else [])
            for w in runs:
                folder = out / "builds" / f"n{n:03d}-w{w}"
                rate = probe_rate(probe)
                b = run_build(folder, growth_spec(corpus, n, w, args), w)
                b.update(order=order, variants=n, probe_rate=rate, repeat=r)
                order += 1
                log(f"  [{r + 1}/{args.repeats}] {n} variant(s), {w} worker(s): {b['counters']['records_in']:,} records → "
                    f"{b['counters']['records_out']:,} kept, {b['counters']['tokens_out'] / 1e6:,.1f}M kept tokens; "
                    f"{b['wall']:.1f} s wall, {b['cpu']:.1f} s CPU (load {b['load_before']} → {b['load_after']}; bare "
                    f"tokenizer {rate / 1e6:.2f}M tok/s before)")
                if w == series_w:
                    entry["repeats"].append({k: b[k] for k in ("order", "variants", "repeat", "probe_rate", "cpu", "wall",
                                                              "load_before", "load_after", "stages")})
                if r == 0:
                    entry["builds"][str(w)] = b
                    first_build(results, entry, folder, n, w, series_w, largest, variants, args, log)
                if not args.keep_stores:
                    shutil.rmtree(folder / "store", ignore_errors=True)
            if args.ray and r == 0 and n == scales[len(scales) // 2]:
                results["ray"] = ray_check(out, n, corpus, series_w, args, log)
    for n in scales:
        entries[n].pop("corpus")
        results["scales"].append(entries[n])
    results["load_end"] = load()
    if one_t:  # the smallest size's series builds are its builds at T = one_t
        first = entries[scales[0]]
        one_t_entries[scales[0]].update(builds={str(series_w): first["builds"][str(series_w)]},
                                        repeats=first["repeats"])
        results["one_t"] = {"args": {**results["args"], "fixed_tasks": one_t}, "machine": results["machine"],
                            "load_start": results["load_start"], "load_end": results["load_end"],
                            "single_task": [], "scales": [one_t_entries[n] for n in scales],
                            "cmd": f"the same command's builds at T = {one_t} for every size"}
    return results


def first_build(results: dict, entry: dict, folder: Path, n: int, w: int, series_w: int, largest: int,
                variants: dict[int, Path], args, log=print) -> None:
    """What the first repeat measures beside the build: the ground truth, the bare tokenizer at the largest size,
    the stages that run as one task."""
    if args.duplicates == "pool" and w == series_w:
        entry["truth"] = t = pool_truth.check(folder / "store", [variants[v] for v in range(1, n + 1)])
        log(f"    ground truth: {t['named_kept_lost']} of {t['named_kept']:,} named kept documents lost, "
            f"{t['fuzzy_drops_unverified']} of {t['fuzzy_drops']:,} near-duplicate drops unverified; "
            f"duplicates {t['duplicate_share']:.1%} of the input characters")
    if n == largest:
        entry.setdefault("tokenizer", {})[str(w)] = t = tokenizer_baseline(
            [variants[v] for v in range(1, min(n, args.tokenizer_variants) + 1)], folder / "store", n, w)
        log(f"    bare tokenizer on {w} core(s): input {t['input_tokens'] / t['input_seconds'] / 1e6:.2f}M "
            f"tok/s, kept text {t['kept_tokens'] / t['kept_seconds'] / 1e6:.2f}M tok/s")
        if not results["single_task"]:
            results["single_task"] = growth_report.single_task_stages(folder / "spec.yaml", entry["tasks"])
            results["pool_tasks"] = growth_report.pool_tasks(folder / "spec.yaml")


PROBE_CHARS = 2_000_000


def probe_texts(variant: Path) -> list[str]:
    """A fixed probe for the machine's speed: the first PROBE_CHARS characters of variant 1's input."""
    out, size = [], 0
    for t in input_texts(variant):
        out.append(t)
        size += len(t)
        if size >= PROBE_CHARS:
            break
    return out


def probe_rate(texts: list[str]) -> float:
    """The bare tokenizer's tokens per second on one core over `texts` (the build's tokenizer call)."""
    import tiktoken

    from bench.build_bench import ENCODING

    enc = tiktoken.get_encoding(ENCODING)
    t = time.perf_counter()
    n = sum(len(enc.encode_ordinary(x)) for x in texts)
    return n / (time.perf_counter() - t)


def ray_check(out: Path, n: int, corpus: Path, workers: int, args, log=print) -> dict:
    """The same spec built on a local Ray cluster gives the local executor's store (tests/executors/fingerprint.py,
    as tests/executors/test_ray.py compares them)."""
    from tests.executors.fingerprint import assert_same_store

    folder = out / "builds" / f"n{n:03d}-ray"
    local = out / "builds" / f"n{n:03d}-w{workers}" / "store"
    b = run_build(folder, growth_spec(corpus, n, workers, args), workers, executor="ray")
    try:
        fp = assert_same_store(folder / "store", local)
        same, detail = True, f"{sum(len(ids) for ids in fp['cells'].values()):,} documents in the same cells"
    except AssertionError as exc:
        same, detail = False, str(exc).splitlines()[0][:300]
    log(f"  Ray, {n} variants: {b['wall']:.1f} s; store {'equal to' if same else 'DIFFERENT from'} the local one: {detail}")
    shutil.rmtree(folder / "store", ignore_errors=True)
    return {"variants": n, "wall": b["wall"], "same": same, "detail": detail}


def machine_info() -> dict:
    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip() or " ".join(platform.uname())
    return {"uname": uname, "machine": machine(), "nproc": os.cpu_count()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scales", help=f"variants per size, comma-separated (default {DEFAULTS['scales']})")
    p.add_argument("--base-scale", type=float, help=f"demo corpus scale of every variant (default {DEFAULTS['base_scale']})")
    p.add_argument("--workers", help="worker counts: every size is built with the largest, the largest size with "
                                     f"each (default {DEFAULTS['workers']})")
    p.add_argument("--tasks-per-variant", type=int, help="tasks of a per-file stage per variant: every task gets "
                                                         f"the same input at every size (default {DEFAULTS['tasks_per_variant']})")
    p.add_argument("--fixed-tasks", type=int, help="the same T at every size (per-task input grows with the size: "
                                                   "per-task peak memory against a task's input; default: "
                                                   "--tasks-per-variant × variants)")
    p.add_argument("--mem-per-cpu-gb", type=float, help="execution.mem_per_cpu_gb of every build: a task's DuckDB "
                   "limit is half of it, so a small one shows the dedup stages' peak bounded by what they spill "
                   "(default: the spec's, 2)")
    p.add_argument("--sample-docs", type=int, help="fit sample (partition.clusters.sample_docs), the same at every "
                                                   f"size (default {DEFAULTS['sample_docs']:,})")
    p.add_argument("--k", type=int)
    p.add_argument("--fine-k", type=int)
    p.add_argument("--tokenizer-variants", type=int, help="variants whose input the bare tokenizer reads (default 2)")
    p.add_argument("--seed", type=int)
    p.add_argument("--repeats", type=int, help="builds of every size at the series' worker count, the sizes "
                                               "interleaved (default 3): exponents with a 95 %% interval")
    p.add_argument("--duplicates", choices=["planted", "pool"], help="the corpus's duplicate profile: pool (default) "
                   "adds web-crawl pages with a real pool's duplicates (copies across variants, template families, "
                   "chains); planted: the demo's own planted duplicates only")
    p.add_argument("--quick", action="store_true", help="tiny sizes, a smoke run of the harness (publishes nothing)")
    p.add_argument("--ray", action="store_true", help="also build the middle size on a local Ray cluster and compare")
    p.add_argument("--out", help="where the corpora of each size (hard links), the stores and growth.json go "
                                 "(default: run/ or run-quick/ beside the cache)")
    p.add_argument("--cache", default=str(growth_corpus.default_cache()), help="cached corpus variants (default "
                                                                              "%(default)s)")
    p.add_argument("--keep-stores", action="store_true", help="keep every store (default: removed once measured)")
    p.add_argument("--skip-build", action="store_true", help="re-render the docs from --out's growth.json")
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md, docs/scaling.md")
    p.add_argument("--no-one-t-series", dest="one_t_series", action="store_false", default=None,
                   help="skip the builds of every size at the smallest size's T (after each build of the series, "
                        "the same repeats): without them the projection scales each stage by its growth exponent "
                        "instead of its fitted fixed, per-task, per-T·P and per-unit seconds (docs/scaling.md)")
    p.add_argument("--fixed-tasks-run", help="growth.json of a run of this corpus at one T for every size "
                   "(--fixed-tasks), for a run without its own one-T series (--skip-build)")
    args = p.parse_args(argv)
    for k, v in {**DEFAULTS, **(QUICK if args.quick else {})}.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    publish_docs = not args.no_publish and not args.quick
    out = Path(args.out or Path(args.cache) / ("run-quick" if args.quick else "run")).resolve()
    if args.skip_build:
        results = json.loads((out / RESULTS).read_text())
        spec = out / "builds" / f"n{results['scales'][-1]['variants']:03d}-w{max(results['scales'][-1]['builds'], key=int)}" \
            / "spec.yaml"
        if spec.exists():  # the task counts the registry gives now (the projection's tasks column)
            results["pool_tasks"] = growth_report.pool_tasks(spec)
    else:
        out.mkdir(parents=True, exist_ok=True)
        results = measure(args, out)
        results["cmd"] = command(args)
        (out / RESULTS).write_text(json.dumps(results, indent=1))
        print(f"  results: {out / RESULTS}")
    fixed = json.loads(Path(args.fixed_tasks_run).read_text()) if args.fixed_tasks_run else None
    report = growth_report.Report(results, fixed)
    for line in report.goal_lines():
        print(line)
    section, projection = report.performance_section(), report.projection_section()
    print(section)
    print(projection)
    if publish_docs:
        publish(section, growth_report.BEGIN, growth_report.END)
        publish(projection, growth_report.PROJECTION_BEGIN, growth_report.PROJECTION_END, growth_report.SCALING_DOC)
        print(f"  wrote {DOC} and {growth_report.SCALING_DOC}")


def command(args) -> str:
    flags = "".join((f" --no-{k.replace('_', '-')}" if v is True else f" --{k.replace('_', '-')} {getattr(args, k)}")
                    for k, v in DEFAULTS.items() if getattr(args, k) != v)
    return "python -m bench.growth_bench" + flags + (" --ray" if args.ray else "")


if __name__ == "__main__":
    main()
