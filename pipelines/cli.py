"""`mixture build` and `mixture summary`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from mixture.spec.amounts import humanize
from mixture.store import drops
from mixture.store.formats import FormatError, StoreArtifact

out = Console(width=max(100, Console().width))
err = Console(stderr=True)


def print_summary(artifact: StoreArtifact, store: str) -> None:
    c, p = artifact.counters, artifact.partition
    out.print(
        f"[bold]{humanize(c.tokens_out)} tokens across {p.k} semantic domains and {p.quality_levels} "
        f"calibrated quality buckets[/]  ({c.records_out:,} documents, {len(artifact.cells)} cells, "
        f"tokenizer {artifact.tokenizer})"
    )
    t = Table(title="records", show_edge=False)
    for col in ("records_in", *(r.label for r in drops.REASONS), "records_out"):
        t.add_column(col, justify="right")
    t.add_row(f"{c.records_in:,}", *(f"{n:,}" for n in c.dropped().values()), f"{c.records_out:,}")
    out.print(t)
    for r in drops.REASONS:  # where the rows of each reason with a by-reason breakdown went
        n = getattr(c, r.counter)
        if n and r.breakdown:
            reasons = ", ".join(f"{k} {v:,}" for k, v in artifact.breakdown(r.breakdown[1]).items())
            out.print(f"{n:,} {r.label} records ({reasons}) → {store}/{r.folder}/")
    s = Table(title="sources", show_edge=False)
    for col in ("source", "category", "docs in", "kept", "tokens kept"):
        s.add_column(col, justify="left" if col in ("source", "category") else "right")
    for src in artifact.sources:
        s.add_row(src.name, src.category, f"{src.docs_in:,}", f"{src.docs_kept:,}", humanize(src.tokens_kept))
    out.print(s)
    top = sorted(artifact.clusters, key=lambda cl: -cl.tokens)[:8]
    d = Table(title="largest domains", show_edge=False)
    for col in ("id", "label", "share", "tokens", "confidence"):
        d.add_column(col)
    for cl in top:
        d.add_row(str(cl.id), cl.label, f"{cl.tokens / max(1, c.tokens_out):.2%}", humanize(cl.tokens),
                  cl.confidence_tag)
    out.print(d)
    out.print(f"store: {store}  (store.json, cluster=NN/quality=Q/, _samples/, _model/, _quarantine/, _dropped/, _build/)")


def register(app: typer.Typer) -> None:
    @app.command()
    def build(
        spec: Path = typer.Argument(..., help="the spec YAML file"),
        executor: str = typer.Option(None, help="local, ray or slurm (default: the spec's execution.executor)"),
        tasks: int = typer.Option(None, min=1, help="tasks per stage (default: execution.tasks)"),
        workers: int = typer.Option(None, min=1, help="tasks run at once (default: execution.workers)"),
        break_lock: bool = typer.Option(False, "--break-lock", help="take over the lock of a dead build"),
        keep_work: bool = typer.Option(False, "--keep-work", help="keep _build/work intermediates"),
        address: str = typer.Option(None, help="ray: cluster address to attach to (default: execution.address, "
                                    "RAY_ADDRESS, else a local cluster)"),
        partition: str = typer.Option(None, help="slurm partition (default: execution.partition)"),
        time_limit: str = typer.Option(None, "--time", help="slurm time limit per array job, e.g. 04:00:00"),
        cpus_per_task: int = typer.Option(None, min=1, help="ray/slurm: CPUs per task (default: execution.cpus_per_task)"),
        mem_per_cpu_gb: float = typer.Option(None, min=0.1, help="ray/slurm: GB of memory per CPU"),
        tasks_per_job: int = typer.Option(None, min=1, help="ray/slurm: tasks per Ray job / Slurm array element"),
        redo_changed: bool = typer.Option(
            False, "--redo-changed", "--restart",
            help="when the spec or the inputs changed since the store's work was done: redo the stages whose key "
                 "changed and every stage after them (without it the build stops and names what changed)"),
    ) -> None:
        """Build the store of a spec: read, clean, dedup, decontaminate, score, cluster, tokenize, write cells.

        Rerunning an interrupted build skips finished tasks and gives the same store. Work is reused only while
        the spec fields and input files it was made from are unchanged: otherwise the build stops before any work,
        naming what changed (exit 2); put it back, or rerun with --redo-changed. A finished store of the same spec
        and inputs is left as is ("already built").

        Exit codes: 0 built (or already built); 1 the build failed; 2 refused before any work (the spec is invalid,
        or it or the inputs differ from what the store's work was made from)."""
        from mixture.pipelines.build import BuildError, build_store
        from mixture.pipelines.executors import EXECUTORS
        from mixture.pipelines.reuse import StoreChanged
        from mixture.spec.cli import load_or_exit
        from mixture.spec.datasets_source import DatasetSourceError

        load_or_exit(spec)
        if executor is not None and executor not in EXECUTORS:
            err.print(f"--executor {executor!r}: expected one of {', '.join(EXECUTORS)}", highlight=False)
            raise typer.Exit(2)
        overrides = {"address": address, "partition": partition, "time": time_limit, "cpus_per_task": cpus_per_task,
                     "mem_per_cpu_gb": mem_per_cpu_gb, "tasks_per_job": tasks_per_job}
        from mixture.spec.load import resolve_uri, spec_dir

        store = resolve_uri(artifact_store(spec), spec_dir(spec))
        try:
            built = build_store(str(spec), executor=executor, tasks=tasks, workers=workers, break_lock=break_lock,
                                keep_work=keep_work, overrides=overrides, redo_changed=redo_changed)
        except StoreChanged as exc:
            err.print(f"[bold red]build refused[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(StoreChanged.exit_code) from None
        except (BuildError, DatasetSourceError) as exc:  # a hub dataset is resolved when the build starts
            err.print(f"[bold red]build failed[/] {exc}", highlight=False)
            raise typer.Exit(1) from None
        if built.already_built:
            out.print(f"already built: {store} (finished {built.artifact.created}; same spec and inputs), nothing "
                      "to do; `mixture summary` shows it", highlight=False, soft_wrap=True)
            return
        print_summary(built.artifact, store)

    @app.command()
    def summary(store: str = typer.Argument(..., help="store path or URI")) -> None:
        """Print a store's headline, record funnel, sources and largest domains."""
        from mixture.accounting import StoreNotReady, StoreReader

        try:
            artifact = StoreReader(store).store_info
        except (StoreNotReady, FormatError) as exc:
            err.print(str(exc), highlight=False)
            raise typer.Exit(1) from None
        print_summary(artifact, store)


def artifact_store(spec: Path) -> str:
    from mixture.spec.load import load_spec

    return load_spec(spec, check_resources=False).store.uri
