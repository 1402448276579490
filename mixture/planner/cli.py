"""`mixture plan`, `mixture export`, `mixture materialize`, `mixture realised`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mixture.pipelines.materialize.run import MaterializeError, materialize, parse_bytes
from mixture.planner.counts import PlanInputError
from mixture.planner.exports import FORMATS, ExportError, export_plan
from mixture.planner.formats import Plan, read_plan
from mixture.planner.inputs import build_inputs, load_planning_spec
from mixture.planner.plan import compute_plan
from mixture.planner.realised import RealisedError, realised_ledger
from mixture.planner.report import print_ladder, print_plan, print_realised
from mixture.planner.run import repair_plan
from mixture.spec.models import Execution
from mixture.store.formats import FormatError, dump

HARD = ("over_cap", "empty_cell")


def write_atomic(path: str | Path, text: str) -> None:
    """Write a text file at a local path (temporary name, then rename) or an fsspec URI (one upload: an object
    store shows an object only once it is complete)."""
    if "://" in str(path):
        import fsspec

        fs, target = fsspec.core.url_to_fs(str(path))
        with fs.open(target, "wt", encoding="utf-8") as f:
            f.write(text)
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _fail(console: Console, message: str, code: int = 2) -> typer.Exit:
    console.print(f"[red]error:[/] {message}", soft_wrap=True)
    return typer.Exit(code)


def load_plan(path: str) -> Plan:
    """plan.json through its model; PlanInputError names the file and field (or says how to write a plan)."""
    try:
        return read_plan(path)
    except FormatError as exc:
        raise PlanInputError(str(exc)) from None


def plan_cmd(
    spec: str = typer.Argument(..., help="spec YAML (its `mixture:` section and store.uri) or a Marin mix JSON"),
    counts: str | None = typer.Option(None, "--counts", help="per-cell counts: a store, a Marin mix JSON or a CSV"),
    out: str | None = typer.Option(None, "--out", help="write the plan here (and a repaired plan beside it)"),
    fmt: str = typer.Option("table", "--format", help="table (human summary) or json (the plan on stdout)"),
    ladder: bool = typer.Option(False, "--ladder", help="show the plan at every ladder rung"),
    scale: float | None = typer.Option(None, "--scale", help="multiply phase budgets and ladder rungs (e.g. 1e-6)"),
    batch: int | None = typer.Option(None, "--batch-sequences", help="sequences per step (phase boundaries)"),
    steps: int | None = typer.Option(None, "--train-steps", help="total training steps (default budget/batch/seq_len)"),
    max_epochs: float | None = typer.Option(None, "--max-epochs", help="override the exposure cap"),
    repaired_out: str | None = typer.Option(None, "--repaired-out", help="where to write the cap-repaired plan"),
    strict: bool = typer.Option(False, "--strict", help="exit 1 on any warning"),
) -> None:
    """Plan a mixture: per cell and phase weights, tokens, sequences per block, exposure, steps and warnings."""
    console = Console(stderr=fmt == "json")
    if fmt not in ("table", "json"):
        raise _fail(console, f"--format: expected table or json, found {fmt!r}")
    try:
        inputs = build_inputs(load_planning_spec(spec), counts, scale)
        if batch is not None:
            inputs.batch_sequences = batch
        if steps is not None:
            inputs.train_steps = steps
        if max_epochs is not None:
            inputs.max_epochs = max_epochs
        plan = compute_plan(inputs)
    except PlanInputError as exc:
        raise _fail(console, str(exc)) from None
    if fmt == "json":
        typer.echo(dump(plan), nl=False)
    else:
        print_plan(plan, console)
        if ladder:
            print_ladder(plan, console)
    if out:
        write_atomic(out, dump(plan))
        console.print(f"plan written to {out}")
    codes = {w.code for w in plan.warnings}
    failed = bool(codes & set(HARD)) or (strict and bool(codes))
    if "over_cap" in codes:
        result, repaired = repair_plan(inputs, plan)
        if repaired is None:
            console.print(f"[red]cap repair: {result.message}[/]")
        else:
            target = repaired_out or (os.path.splitext(out)[0] + ".repaired.json" if out else None)
            console.print(f"[cyan]cap repair[/]: {result.message}; max exposure now {repaired.exposure.max:.4f}")
            if target:
                write_atomic(target, dump(repaired))
                console.print(f"[cyan]repaired plan written to {target}[/] (a new plan; {out or 'the original'} is unchanged)")
            else:
                console.print("pass --out (or --repaired-out) to write the repaired plan")
    if failed:
        raise typer.Exit(1)


def export_cmd(
    plan_path: str = typer.Argument(..., help="plan.json from `mixture plan`"),
    fmt: str = typer.Option(..., "--format", help=f"one of {', '.join(FORMATS)}"),
    out: str | None = typer.Option(None, "--out", help="output file (default: stdout)"),
) -> None:
    """Export a plan for a trainer: levanter|olmo|megatron|marin|json|csv."""
    console = Console(stderr=True)
    if fmt not in FORMATS:
        raise _fail(console, f"--format: expected one of {', '.join(FORMATS)}, found {fmt!r}")
    try:
        plan = load_plan(plan_path)
    except PlanInputError as exc:
        raise _fail(console, str(exc)) from None
    try:
        text = export_plan(plan, fmt)
    except ExportError as exc:
        raise _fail(console, f"{plan_path}: {exc}") from None
    if out:
        write_atomic(out, text)
        console.print(f"{fmt} export written to {out}")
    else:
        typer.echo(text, nl=False)


MATERIALIZE_HELP = (
    "Draw every cell's planned tokens from the store and write phase-ordered, interleaved Parquet shards, then "
    "DIR/phase=NAME/_manifest.json and DIR/manifest.json (last: its presence means complete).\n\n"
    "First the draw plan is decided from the documents' sizes alone (ids, n_tokens, n_chars; no text): which "
    "documents each cell gives each phase, their training order and their shard. Then two rounds of --tasks "
    "datatrove tasks, run by --executor like the build's stages: scatter tasks read the store's drawn files once "
    "and send every drawn document towards its group of shards (DIR/_materialize/shuffle/), then gather tasks "
    "each write a range of the shards from their groups; a task holds at most --memory of text (or one shard, "
    "when --shard-bytes is bigger). The shards are the same bytes for any task count, worker count or executor."
    "\n\n"
    "Rerunning a killed materialize resumes it: finished tasks are skipped, shards already written are kept "
    "(DIR/_materialize/ holds the draw plan, the intermediate files, datatrove's completions and task logs until the "
    "manifest is published). "
    "A finished DIR of the same plan, store, seed and shard size is left as it is once each shard matches the size "
    "and xxh64 its manifest recorded (a damaged one is named and the mixture written again); one of another plan is "
    "refused (--replace overwrites it). DIR is locked while a run writes it (DIR/_materialize.lock): a second run refuses; "
    "--break-lock takes over the lock of a dead one. Every store shard is checked against its ledger (size and "
    "xxh64) before it is read: a damaged one stops the run, naming it (run `mixture audit STORE --checksums all`)."
)


def materialize_cmd(
    plan_path: str = typer.Argument(..., help="plan.json from `mixture plan`"),
    out: str = typer.Option(..., "--out", help="output folder, local or gs://, s3://…: DIR/phase=NAME/part-NNNNN.parquet + manifest.json"),
    store: str | None = typer.Option(None, "--store", help="store to draw from (default: the plan's store_uri)"),
    shard_bytes: str = typer.Option("128MB", "--shard-bytes",
                                    help="text per shard: 128MB, 1GB, … (counted in characters: the bytes of ASCII text)"),
    seed: int | None = typer.Option(None, "--seed", help="permutation seed (default: the plan's)"),
    executor: str = typer.Option("local", "--executor", help="local | ray | slurm: datatrove's executor, as for `mixture build`"),
    tasks: int | None = typer.Option(None, "--tasks", min=1,
                                     help="tasks sharing the shards (default: --workers; at most one per shard)"),
    workers: int = typer.Option(-1, "--workers", help="tasks at once: -1 = all cores locally, no limit on a cluster"),
    memory: str = typer.Option("1GB", "--memory", help="text one task holds at a time (characters): 512MB, 4GB, …"),
    address: str | None = typer.Option(None, "--address", help="ray: cluster to attach to (default RAY_ADDRESS, else a local one)"),
    partition: str | None = typer.Option(None, "--partition", help="slurm partition"),
    time: str | None = typer.Option(None, "--time", help="slurm time limit per array job, e.g. 04:00:00"),
    cpus_per_task: int | None = typer.Option(None, "--cpus-per-task", min=1, help="ray/slurm: CPUs per task"),
    mem_per_cpu_gb: float | None = typer.Option(None, "--mem-per-cpu-gb", help="ray/slurm: memory per CPU in GB (give a task more than --memory)"),
    tasks_per_job: int | None = typer.Option(None, "--tasks-per-job", min=1, help="ray/slurm: tasks per Ray job / Slurm array element"),
    keep_work: bool = typer.Option(False, "--keep-work", help="keep DIR/_materialize/ (task logs, stats, draw plan, intermediate files) after publishing"),
    break_lock: bool = typer.Option(False, "--break-lock", help="take over the lock of a dead materialize of DIR"),
    replace: bool = typer.Option(False, "--replace", help="DIR holds another plan's finished mixture: delete it and write this one"),
) -> None:
    console = Console()
    try:
        size, budget = parse_bytes(shard_bytes), parse_bytes(memory)
        ex = Execution.model_validate({k: v for k, v in {
            "executor": executor, "workers": workers, "address": address, "partition": partition, "time": time,
            "cpus_per_task": cpus_per_task, "mem_per_cpu_gb": mem_per_cpu_gb, "tasks_per_job": tasks_per_job,
        }.items() if v is not None})
        plan = load_plan(plan_path)
    except (ValueError, PlanInputError) as exc:  # pydantic's ValidationError is a ValueError
        raise _fail(console, str(exc)) from None
    n_workers = ex.workers if ex.workers > 0 else (os.cpu_count() or 1)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        draw = bar.add_task("drawing cells", total=len(plan.used_cells()))
        shards = bar.add_task("writing shards", total=None)

        def tick(kind: str, done: int, total: int) -> None:
            bar.update(draw if kind == "draw" else shards, completed=done, total=total)

        try:
            manifest = materialize(plan, out, store, size, seed, progress=tick, tasks=tasks, workers=n_workers,
                                   executor=ex.executor, execution=ex, memory=budget, keep_work=keep_work,
                                   break_lock=break_lock, replace=replace,
                                   notice=lambda m: console.print(f"[yellow]warning:[/] {m}", soft_wrap=True))
        except MaterializeError as exc:
            raise _fail(console, str(exc), 1) from None
    for ph in manifest.phases:
        console.print(f"phase {ph.name}: {ph.tokens:,} tokens of {ph.planned_tokens:,} planned "
                      f"(±{ph.tolerance:,} allowed), {ph.docs:,} docs in {len(ph.shards)} shards")
    if manifest.count_mismatch:
        console.print(f"[yellow]store counts differ from the plan's for {len(manifest.count_mismatch)} cells "
                      f"({', '.join(manifest.count_mismatch[:8])}); exposures differ from the plan[/]")
    console.print(f"manifest: {out.rstrip('/')}/manifest.json")


def realised_cmd(
    out_dir: str = typer.Argument(..., help="folder written by `mixture materialize`"),
    plan_path: str = typer.Argument(..., help="the plan.json it was materialized from"),
    fmt: str = typer.Option("table", "--format", help="table or json"),
) -> None:
    """Recount the written shards with DuckDB: planned vs realised tokens and epochs per cell; exit 1 on drift."""
    console = Console(stderr=fmt == "json")
    try:
        ledger = realised_ledger(out_dir, load_plan(plan_path))
    except (PlanInputError, RealisedError) as exc:
        raise _fail(console, str(exc)) from None
    if fmt == "json":
        typer.echo(json.dumps(ledger, indent=2))
    else:
        print_realised(ledger, console)
    if not ledger["ok"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_cmd)
    app.command("export")(export_cmd)
    app.command("materialize", help=MATERIALIZE_HELP)(materialize_cmd)
    app.command("realised")(realised_cmd)
