"""The cost model's rates (mixture/stages/rates.json, read by `mixture estimate` and docs/scaling.md's projection):
CPU, exponents and peaks per stage from a growth benchmark run (its growth.json), and the files each stage writes as
a function of the tasks T, fitted on builds of one small `pool` corpus at T = 2, 4 and 8 kept with their work files.

`python -m bench.cost_rates --growth DIR/growth.json [--fixed-tasks-run DIR2/growth.json] [--components FILE]`
(writes mixture/stages/rates.json; `--no-write` prints). `--components`: bench/components_bench.py's `--json` of a
graph that is one component (`--pairs` twice `--giant`), the largest component's path through `minhash_cluster`;
without it the packaged rates' path is kept."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import yaml

from bench import growth_bench, growth_corpus, growth_report
from mixture.stages import costs
from mixture.stages import registry as stage_registry

RATES = growth_report.REPO / "mixture" / "stages" / costs.RATES_FILE
OBJECT_TASKS = (2, 4, 8)


def _files(root: Path, pattern: str) -> set[Path]:
    out = set()
    for p in root.glob(pattern):
        out |= {p} if p.is_file() else {q for q in p.rglob("*") if q.is_file()}
    return out


def stage_objects(store: Path, spec_path: Path) -> dict[str, dict[str, int]]:
    """Files under a store built with its work kept, by the stage that wrote them: {stage: {"pairs": files of its
    partitioned templates, "cells": of its per-cell templates (the shards), "tasks": of its other templates,
    "other": its outputs and `_build/<stage>/` records}}; every other file is `finalize`'s."""
    from mixture.spec.load import load_spec

    spec = load_spec(str(spec_path))
    seen: set[Path] = set()
    out = {}
    for s in stage_registry.planned(spec):
        kinds = {"pairs": set(), "cells": set(), "tasks": set()}
        for tf in () if s.rounds else s.files.tasks:  # a stage in rounds: its files are counted as its other ones
            kind = "pairs" if "{part" in tf.name else "cells" if "cluster=" in tf.name else "tasks"
            kinds[kind] |= _files(store, tf.glob.replace("{rank}", "*")) - seen
        every = set().union(*kinds.values())
        other = (_files(store, f"_build/{s.name}") | set().union(*(_files(store, f) for f in s.files.outputs))) - seen - every
        out[s.name] = {k: len(v) for k, v in kinds.items()} | {"other": len(other)}
        seen |= every | other
    out["finalize"] = {"pairs": 0, "cells": 0, "tasks": 0,
                       "other": len({p for p in store.rglob("*") if p.is_file()} - seen)}
    return out


def object_rates(counts: dict[int, dict[str, dict[str, int]]]) -> dict[str, costs.ObjectRate]:
    """Per stage: its templates as at scale (a partitioned template: T files per writer; a per-cell one: C per
    writer; another: one per writer), and a line through its other files at every T measured (its records per
    task, what it writes once; `minhash_buckets`' tasks stay at the bands below T = bands, so its per-task records
    are under-counted there: a few files per task against the T² of its partitions)."""
    ts = np.array(sorted(counts), dtype=float)
    out = {}
    for name in counts[int(ts[0])]:
        stage = stage_registry.get(name) if name != "finalize" else None
        templates = stage.files.tasks if stage and not stage.rounds else ()
        # a stage in rounds names its files per round: its shuffle files (one per task and round, the greedy's drops
        # by prepared file included) are among its other files
        pairs = sum("{part" in tf.name for tf in templates)
        cells = sum("cluster=" in tf.name for tf in templates)
        shuffles = sum(tf in stage_registry.SHUFFLES and tf not in stage_registry.RANGE_READ for tf in templates)
        slope, fixed = np.polyfit(ts, [counts[int(t)][name]["other"] for t in ts], 1)
        out[name] = costs.ObjectRate(pairs=pairs, per_task=round(len(templates) - pairs - cells + max(0.0, slope), 3),
                                     per_cell=cells, fixed=round(max(0.0, fixed), 3), shuffles=shuffles)
    return out


def fit_objects(tmp: Path, log=print) -> dict[str, costs.ObjectRate]:
    """Builds of one small pool corpus at OBJECT_TASKS with their work kept; the files of each stage, modelled."""
    from mixture.pipelines.build import build

    variants = growth_corpus.ensure_variants(tmp / "cache", 0, 0.02, [1, 2], log=log, duplicates="pool")
    corpus = growth_corpus.assemble(tmp / "corpus", [variants[1], variants[2]])
    counts: dict[int, dict[str, dict[str, int]]] = {}
    for t in OBJECT_TASKS:
        args = argparse.Namespace(k=8, fine_k=32, tasks_per_variant=t // 2, sample_docs=100)
        spec = growth_bench.growth_spec(corpus, 2, 2, args)
        spec["store"]["uri"] = str(tmp / f"store-t{t}")
        path = tmp / f"spec-t{t}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        build(str(path), workers=2, progress=False, keep_work=True)
        counts[t] = stage_objects(tmp / f"store-t{t}", path)
        log(f"  T = {t}: {sum(sum(c.values()) for c in counts[t].values()):,} files")
    return object_rates(counts)


def component_path(results: dict) -> costs.ComponentPath:
    """The largest component's path from a components benchmark's results (its `--json`): the rounds' run with the
    most tasks (its longest task of each kind, and its tasks: the component's share of each)."""
    runs = [r for name, r in results["runs"].items() if name != "old"]
    run = max(runs, key=lambda r: r["tasks"])
    longest = run["longest"]
    return costs.ComponentPath(members=results["giant"], pairs=results["pairs"], rounds=run["rounds"],
                               tasks=run["tasks"], star_seconds=longest["star"], greedy_rounds=run["greedy_rounds"],
                               greedy_seconds=longest.get("greedy", 0.0) + longest["finish"],
                               measured=f"{results['command']} ({results['machine']}; {results['load']})")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--growth", help="a growth benchmark's growth.json (bench/growth_bench.py --out); without it, "
                   "--components replaces the packaged rates' largest component only")
    p.add_argument("--fixed-tasks-run", help="growth.json of a run at one T for every size (growth_bench "
                   "--fixed-tasks): each stage's CPU fitted as fixed + per task + per T·P + per unit over both runs")
    p.add_argument("--components", help="bench/components_bench.py --json of one component: the largest component's "
                   "path (default: the packaged rates')")
    p.add_argument("--no-write", action="store_true", help=f"print the rates, do not write {RATES}")
    args = p.parse_args(argv)
    if not args.growth and not args.components:
        p.error("give --growth (all the rates) or --components (the largest component's path)")
    path = (component_path(json.loads(Path(args.components).read_text())) if args.components
            else costs.load_rates().largest_component)
    if args.growth:
        fixed = json.loads(Path(args.fixed_tasks_run).read_text()) if args.fixed_tasks_run else None
        report = growth_report.Report(json.loads(Path(args.growth).read_text()), fixed)
        with tempfile.TemporaryDirectory(prefix="cost-rates-") as tmp:
            rates = report.rates(fit_objects(Path(tmp)))
    else:
        packaged = json.loads(RATES.read_text())
        packaged.pop("largest_component", None)  # replaced: a path measured by older code may lack today's fields
        rates = costs.Rates.model_validate(packaged)
    rates = rates.model_copy(update={"largest_component": path})
    text = rates.model_dump_json(indent=1) + "\n"
    if args.no_write:
        print(text)
    else:
        RATES.write_text(text)
        print(f"  wrote {RATES}")


if __name__ == "__main__":
    main()
