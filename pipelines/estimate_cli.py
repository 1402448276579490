"""`mixture estimate SPEC`: what a build of the spec will cost, per stage, before any work — printed as tables, the
Slurm requests that follow, and optionally JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer
import yaml
from rich.console import Console
from rich.table import Table

from mixture.stages import costs

HELP = """Project a build's cost before running it: list the spec's sources, read a sample of their files with the
build's own readers and tokenizer, project their records and tokens, and apply the cost model (per-stage rates
measured by the growth benchmark, docs/scaling.md) for --tasks tasks on --cores cores. Prints, per stage:
core-hours, wall hours, the longest task, peak memory per task, objects written, and the Slurm time limit and
memory to ask for (as an `execution.stages` block to paste into the spec). Prices are yours (--prices FILE, a
YAML of core_hour and per_1000_writes); nothing is fetched."""


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f}"


def _count(n: float) -> str:
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= size:
            return f"{n / size:,.2f}{unit}"
    return f"{n:,.0f}"


def slurm_block(est) -> dict:
    """`execution.stages` entries for Slurm: each stage's time limit and memory per CPU from the projection."""
    return {"execution": {"stages": {
        c.stage: {"time": costs.slurm_time(c.time_limit_hours(est.tasks_per_job.get(c.stage, 1))),
                  "mem_per_cpu_gb": c.memory_request_gib}
        for c in est.costs if c.stage != "finalize"}}}


FEW_RECORDS = 100  # records a verification partition below which a family of near duplicates is split over many


def _pairs_note(est) -> str:
    """How `minhash_verify`'s work was projected: the candidate pairs given, or grown from the rates'; and, with
    partitions of few records, that its rate a pair is low there."""
    r = est.rates
    if not r.candidate_pairs or est.candidate_pairs is None:
        return ""
    if est.pairs_per_doc is not None:
        note = f"; minhash_verify's by the candidate pairs: {est.pairs_per_doc:g} per record (yours)"
    else:
        note = (f"; minhash_verify's by the candidate pairs: {_count(est.candidate_pairs)}, grown from the rates' "
                f"{_count(r.candidate_pairs)} as measured (exponent {max(1.0, r.pairs_exponent or 1.0):.2f}), a "
                "property of the benchmark's duplicates: give your corpus's with --pairs-per-doc")
    low = verify_rate_warning(est)
    return note + (f". {low}" if low else "")


def component_note(est) -> str:
    """How `minhash_cluster`'s wall time was projected: with the largest component given, or a pointer to give it
    (and what Marin's pool's largest would take)."""
    path, cluster = est.rates.largest_component, next((c for c in est.costs if c.stage == "minhash_cluster"), None)
    if path is None or cluster is None or est.work is None:
        return ""
    if est.largest_component:
        return (f"; minhash_cluster's includes its largest component's star rounds ({est.largest_component:,.0f} "
                "documents, yours), spread over its tasks")
    marin_work = dataclasses.replace(est.work, largest_component=costs.MARIN_LARGEST)
    marin = next(c for c in costs.project(est.rates, marin_work, est.cores) if c.stage == "minhash_cluster")
    return (f"; minhash_cluster's assumes components like the benchmark's: give your largest near-duplicate "
            f"component's documents with --largest-component to add its star rounds (the pool Marin deduplicated "
            f"had a candidate cluster of {costs.MARIN_LARGEST / 1e6:,.0f}M: "
            f"{marin.wall_hours - cluster.wall_hours:,.2f} h more, its edges over {marin.tasks:,} tasks)")


def verify_rate_warning(est) -> str | None:
    """Why `minhash_verify`'s projection is low when its partitions hold few records each, or None."""
    verify = next((c for c in est.costs if c.stage == "minhash_verify"), None)
    records = sum(s.est_records for s in est.sources)
    if verify is None or records >= FEW_RECORDS * verify.tasks:
        return None
    return (f"minhash_verify is low for {verify.tasks:,} partitions of ~{records / verify.tasks:,.0f} records each: "
            "minhash_route splits a family of near duplicates larger than a partition's documents over several, "
            "whose tasks each read the family's earlier documents again, and the rate a pair comes from builds "
            "whose partitions hold thousands; fewer partitions (execution.partitions) keep families whole "
            "(docs/scaling.md)")


def print_estimate(est, console: Console, prices: costs.Prices | None = None) -> None:
    t = Table(title=f"inputs of {est.spec} (whole files read per source, the rest projected by bytes)")
    for col in ("source", "files", "GiB listed", "files read", "records (est.)", "bad records", "tokens (est.)",
                "tokens / byte"):
        t.add_column(col, justify="left" if col == "source" else "right")
    for s in est.sources:
        t.add_row(s.name, f"{s.files:,}", _gib(s.bytes), f"{s.read_files:,}", _count(s.est_records), f"{s.bad:,}",
                  _count(s.est_tokens), f"{s.tokens / s.read_bytes:.3f}" if s.read_bytes else "-")
    t.add_row("total", f"{sum(s.files for s in est.sources):,}", _gib(sum(s.bytes for s in est.sources)), "",
              _count(sum(s.est_records for s in est.sources)), "", _count(est.input_tokens), "", style="bold")
    console.print(t)

    t = Table(title=f"the build with {est.tasks:,} tasks on {est.cores:,} cores")
    for col in ("stage", "tasks", "core-hours", "wall hours", "longest task (h)", "peak per task (GiB)", "objects",
                "range reads", "listings", "slurm --time", "slurm mem (GiB)"):
        t.add_column(col, justify="left" if col == "stage" else "right")
    for c in est.costs:
        t.add_row(c.stage, f"{c.tasks:,}", f"{c.core_hours:,.1f}", f"{c.wall_hours:,.2f}", f"{c.task_hours:,.2f}",
                  _gib(c.peak_rss), _count(c.objects), _count(c.reads), _count(c.listings), costs.slurm_time(c.time_limit_hours(est.tasks_per_job.get(c.stage, 1))),
                  str(c.memory_request_gib))
    single = sum(c.wall_hours for c in est.costs if c.tasks == 1)
    t.add_row("total", "", f"{sum(c.core_hours for c in est.costs):,.1f}", f"{est.critical_path_hours:,.2f}", "", "",
              _count(sum(c.objects for c in est.costs)), _count(sum(c.reads for c in est.costs)),
              _count(sum(c.listings for c in est.costs)), "", "", style="bold")
    console.print(t)
    console.print(f"critical path {est.critical_path_hours:,.2f} h on {est.cores:,} cores, of which single-task "
                  f"stages {single:,.2f} h; {_count(sum(c.objects for c in est.costs))} objects written (a new cloud "
                  f"bucket takes ~1,000 writes/s: {sum(c.objects for c in est.costs) / 1000 / 3600:,.1f} h of writes "
                  "at that rate)", soft_wrap=True)
    grouped = sorted({c.combine_group for c in est.costs if c.combine_group > 1})
    console.print(f"{_count(sum(c.reads for c in est.costs))} range reads of the work files between stages; "
                  + (f"the dedup shuffles are combined, {', '.join(map(str, grouped))} writer files to a file, and "
                     "their indexes merged, before they are read (execution.combine_files)" if grouped else
                     "the dedup shuffles are read from their writers' files (each reader: 2 range reads per writer "
                     "file; execution.combine_files groups them)")
                  + f"; {_count(sum(c.listings for c in est.costs))} listings of their folders", soft_wrap=True)
    if prices:
        p = costs.price(est.costs, prices)
        console.print(f"price: compute {p['compute']:,.2f} + writes {p['writes']:,.2f} = {p['total']:,.2f} "
                      f"{prices.currency}")
    r = est.rates
    console.print(f"[dim]rates measured on {r.machine} by `{r.measured}` at {_count(r.input_tokens)} input tokens; "
                  + ("a stage's CPU is its fitted fixed, per-task, per-T·P and per-unit seconds where the rates have "
                     "them, else " if any(s.linear for s in r.stages) else "a stage's CPU is ")
                  + "scaled by (tokens / those)^e, e its measured growth exponent (never under 1)"
                  f"{_pairs_note(est)}{component_note(est)}. Your machine's speed differs: time the bare tokenizer on both to compare.[/dim]",
                  soft_wrap=True)
    console.print("Slurm requests (paste into the spec; each stage's time limit is twice the projected time of an "
                  "array element, its tasks_per_job tasks one after another; its memory 1.5× the measured peak):")
    console.print(yaml.safe_dump(slurm_block(est), sort_keys=False), markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    @app.command(help=HELP)
    def estimate(
        spec: str = typer.Argument(..., help="the spec (YAML)"),
        tasks: int = typer.Option(None, min=1, help="tasks per stage (default: the spec's execution.tasks)"),
        cores: int = typer.Option(1000, min=1, help="cores the build runs on at once"),
        sample_mb: float = typer.Option(16, "--sample-mb", min=0.001, help="MiB of whole files read per source"),
        rates: Path = typer.Option(None, help="rates JSON (bench/cost_rates.py; default: the packaged ones)"),
        pairs_per_doc: float = typer.Option(
            None, "--pairs-per-doc", min=0,
            help="near-duplicate candidate pairs per input record, what minhash_verify's work grows with: a property "
                 "of your corpus's duplicates (a previous build's store.json near_duplicates.pairs_considered / "
                 "records in; at most 8 × bands). Default: the rates' reference, grown with the tokens as the growth "
                 "benchmark measured (docs/scaling.md)"),
        largest_component: float = typer.Option(
            None, "--largest-component", min=1,
            help="documents in the largest near-duplicate component (documents joined by verified pairs; a "
                 "previous build's store.json near_duplicates.largest_component): its star rounds add its share to each "
                 "minhash_cluster task (its edges spread over them). Default: not projected (components like the "
                 "growth benchmark's)"),
        prices: Path = typer.Option(None, help="YAML with core_hour and per_1000_writes (your prices)"),
        as_json: bool = typer.Option(False, "--json", help="print the estimate as JSON"),
    ) -> None:
        from mixture.pipelines.estimate import estimate as run
        from mixture.spec.load import SpecError
        from mixture.spec.yaml_bounded import load_yaml

        console = Console()
        try:
            price = costs.Prices.model_validate(load_yaml(prices.read_text())) if prices else None
            rate = costs.load_rates(rates) if rates else None
            est = run(spec, tasks=tasks, cores=cores, budget=int(sample_mb * 2**20), rates=rate,
                      pairs_per_doc=pairs_per_doc, largest_component=largest_component)
        except SpecError as exc:
            console.print(f"[red]{exc}[/red]", soft_wrap=True)
            raise typer.Exit(2) from None
        except (OSError, ValueError, yaml.YAMLError) as exc:  # a prices file that is not YAML, or too nested
            console.print(f"[red]estimate: {exc}[/red]", soft_wrap=True)
            raise typer.Exit(1) from None
        if as_json:
            print(json.dumps({
                "spec": est.spec, "tasks": est.tasks, "cores": est.cores, "input_tokens": est.input_tokens,
                "sources": [{**vars(s), "est_records": s.est_records, "est_tokens": s.est_tokens} for s in est.sources],
                "stages": [{**vars(c), "time_limit": costs.slurm_time(c.time_limit_hours(est.tasks_per_job.get(c.stage, 1))),
                            "memory_request_gib": c.memory_request_gib} for c in est.costs],
                "critical_path_hours": est.critical_path_hours,
                "candidate_pairs": est.candidate_pairs, "pairs_per_doc": est.pairs_per_doc,
                "largest_component": est.largest_component,
                "warnings": [w for w in (verify_rate_warning(est),) if w],
                **({"price": costs.price(est.costs, price)} if price else {}),
                "rates": {"machine": est.rates.machine, "measured": est.rates.measured}}, indent=1))
            return
        print_estimate(est, console, price)
