"""Where a one-worker build spends its CPU: the demo corpus (or a given spec) built in this process, each stage
(the rounds of a stage run in rounds together) and finalize under a profiler of its own (cProfile), the top
functions by their own time per stage; a table into docs/performance.md.

`python -m bench.profile_build` (the demo corpus at scale 1, 4 tasks; ~1 min), `--spec SPEC` for another spec (its
execution is set to the local executor, 1 worker), `--no-publish` to print only. A profiler costs time in every
Python call (~1.3x here), so the shares matter, not the seconds."""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.build_bench import demo_corpus, demo_spec, load, local_spec, write_spec
from bench.common import machine, show

BEGIN, END = "<!-- profile-bench:begin -->", "<!-- profile-bench:end -->"


def _cpu() -> float:
    """CPU seconds of this process and its finished children."""
    return sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))


def profiled_build(spec_path: Path) -> tuple[dict[str, list[cProfile.Profile]], dict[str, float], dict]:
    """Build `spec_path` here with one worker; ({stage: its profiles}, {stage: CPU seconds}, store counters)."""
    from mixture.pipelines import build as build_module
    from mixture.pipelines.finalize import store_json

    profiles: dict[str, list[cProfile.Profile]] = defaultdict(list)
    cpu: dict[str, float] = defaultdict(float)
    run_stage, finalize = build_module.run_stage, store_json.finalize  # build imports finalize when it runs

    def timed(name: str, call, *args, **kwargs):
        prof, start = cProfile.Profile(time.process_time), _cpu()  # CPU time: a loaded machine's waits left out
        prof.enable()
        try:
            return call(*args, **kwargs)
        finally:
            prof.disable()
            profiles[name].append(prof)
            cpu[name] += _cpu() - start

    build_module.run_stage = lambda ctx, stage, *a, **k: timed(stage.name.split("/")[0], run_stage, ctx, stage, *a, **k)
    store_json.finalize = lambda *a, **k: timed("finalize", finalize, *a, **k)
    try:
        artifact = build_module.build(str(spec_path), workers=1, progress=False)
    finally:
        build_module.run_stage, store_json.finalize = run_stage, finalize
    return profiles, cpu, artifact.counters.model_dump()


def _name(key: tuple[str, int, str]) -> str:
    file, _, func = key
    if file == "~":  # a built-in: "{method 'count' of '…PyTokenizer' objects}"
        return func.strip("{}").replace("built-in method ", "")
    parts = Path(file).parts
    where = "/".join(parts[parts.index("site-packages") + 1:] if "site-packages" in parts else parts[-2:])
    return f"{func} ({where})"


def top_functions(profiles: list[cProfile.Profile], n: int) -> list[tuple[str, float]]:
    stats = pstats.Stats(profiles[0])
    for p in profiles[1:]:
        stats.add(p)
    own = sorted(((tt, key) for key, (_, _, tt, _, _) in stats.stats.items()), reverse=True)[:n]
    return [(_name(key), tt) for tt, key in own]


def markdown(profiles: dict, cpu: dict[str, float], counters: dict, top: int, cmd: str, before: str) -> str:
    total = sum(cpu.values())
    lines = [BEGIN, "## Where a one-worker build spends its CPU (`bench/profile_build.py`)", "",
             f"`{cmd}`, one worker, every task in the build's own process, each stage under cProfile (CPU time; it "
             f"slows Python calls: read the shares); {machine()}; load average {before} at its start. Input "
             f"{counters['records_in']:,} records, kept {counters['records_out']:,} with "
             f"{counters['tokens_out'] / 1e6:.1f}M tokens; {total:.1f} s of CPU in the stages and finalize.", "",
             "| stage | CPU s | share | top functions by own time (s) |", "|---|---:|---:|---|"]
    for stage, seconds in sorted(cpu.items(), key=lambda kv: -kv[1]):
        funcs = "; ".join(f"`{name}` {tt:.2f}" for name, tt in top_functions(profiles[stage], top))
        lines.append(f"| `{stage}` | {seconds:.2f} | {seconds / total:.0%} | {funcs} |")
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spec", help="a spec to build (default: the demo corpus at --scale, --tasks tasks)")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--top", type=int, default=5, help="functions listed per stage")
    p.add_argument("--no-publish", action="store_true", help="print, do not write docs/performance.md")
    p.add_argument("--dump", help="a folder for each stage's profile (pstats files, `python -m pstats FILE`)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="profile-bench-") as tmp:
        root = Path(tmp)
        if args.spec:
            spec = local_spec(args.spec, "store")
        else:
            demo_corpus(root / "corpus", seed=0, scale=args.scale)
            spec = demo_spec([root / "corpus"], "store", k=40, fine_k=200, tasks=args.tasks, workers=1)
        spec_path = write_spec(root / "build", spec)
        before, t = load(), time.perf_counter()
        profiles, cpu, counters = profiled_build(spec_path)
        print(f"built in {time.perf_counter() - t:.1f} s")
    if args.dump:
        Path(args.dump).mkdir(parents=True, exist_ok=True)
        for stage, profs in profiles.items():
            stats = pstats.Stats(profs[0])
            for prof in profs[1:]:
                stats.add(prof)
            stats.dump_stats(str(Path(args.dump) / f"{stage}.pstats"))
    cmd = "python -m bench.profile_build" + (f" {' '.join(argv)}" if argv else "")
    text = markdown(profiles, cpu, counters, args.top, cmd, before)
    show(text, BEGIN, END, not args.no_publish)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
