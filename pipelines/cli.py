"""`mixture build` and `mixture summary`."""

from __future__ import annotations

from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from mixture.spec.amounts import humanize
from mixture.store import drops
from mixture.store.formats import FormatError, LossInfo, SourceLoss, StoreArtifact
from mixture.store.loss import store_loss

out = Console(width=max(100, Console().width))
err = Console(stderr=True)


def print_summary(artifact: StoreArtifact, store: str, max_loss: float | None = None) -> None:
    """Headline, record funnel, records per source with their loss (verdicts against `max_loss`, default: the
    store's own) and largest domains."""
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
    print_decontamination(artifact)
    print_loss(artifact, store, store_loss(artifact, max_loss))
    top = sorted(artifact.clusters, key=lambda cl: -cl.tokens)[:8]
    d = Table(title="largest domains", show_edge=False)
    for col in ("id", "label", "share", "tokens", "confidence"):
        d.add_column(col)
    for cl in top:
        d.add_row(str(cl.id), cl.label, f"{cl.tokens / max(1, c.tokens_out):.2%}", humanize(cl.tokens),
                  cl.confidence_tag)
    out.print(d)
    for warning in artifact.cluster_balance.warnings:
        out.print(f"[bold yellow]warning[/] {warning}", highlight=False)
    out.print(f"store: {store}  (store.json, cluster=NN/quality=Q/, _samples/, _model/, _quarantine/, _dropped/, _build/)")


def _lost(row: SourceLoss) -> str:
    """Records lost to broken files: exact, `~` an estimate, `?` a file nothing tells about."""
    exact = all(b.how.startswith("exact") for b in row.broken_files if b.lost is not None)
    known = f"{'' if exact else '~'}{row.lost:,}" if row.lost or not row.lost_unknown_files else ""
    unknown = "?" if row.lost_unknown_files else ""
    return " + ".join(p for p in (known, unknown) if p)


def _share(share: float) -> str:
    return "0" if share == 0 else "<0.1%" if share < 0.001 else f"{share:.1%}"


def _header(label: str) -> str:
    """A column header on two lines (`exact duplicate` over two), so the table fits 100 columns."""
    return label.replace(" ", "\n", 1)


def print_loss(artifact: StoreArtifact, store: str, loss: LossInfo) -> None:
    """Two tables: every source's records (read, kept, dropped by reason, quarantined, lost to broken files); then
    the sources with data loss, their loss share and verdict against max_loss, and every broken file."""
    s = Table(title="records per source (dropped by reason, bad input quarantined, lost to broken files)",
              box=box.SIMPLE_HEAVY, show_edge=False, pad_edge=False, collapse_padding=True)
    s.add_column("source", no_wrap=True)
    for col in ("read", "kept", "tokens", *(_header(r.label) for r in drops.REASONS), "lost"):
        s.add_column(col, justify="right")
    entries = {e.name: e for e in artifact.sources}
    for row in loss.sources:
        src = entries[row.name]
        s.add_row(row.name, f"{row.records_read:,}", f"{row.kept:,}", humanize(src.tokens_kept),
                  *(f"{n:,}" for n in src.dropped().values()), _lost(row))
    out.print(s)
    limit = _share(loss.max_loss)
    lossy = [r for r in loss.sources if r.quarantined or r.broken_files or r.verdict != "ok"]
    if not lossy:
        out.print("data loss: none (no record quarantined or lost in any source)")
        return
    t = Table(title=f"data loss per source (max_loss {limit})", caption="loss = (bad input + lost) / (read + lost)",
              box=box.SIMPLE_HEAVY, show_edge=False, pad_edge=False, collapse_padding=True)
    t.add_column("source", no_wrap=True)
    for col in ("read", "bad input", "lost", "loss"):
        t.add_column(col, justify="right")
    t.add_column("verdict", no_wrap=True)
    for row in lossy:
        verdict = "ok" if row.verdict == "ok" else f"[bold red]{row.verdict.replace('max_loss', limit)}[/]"
        t.add_row(row.name, f"{row.records_read:,}", f"{row.quarantined:,}", _lost(row), _share(row.share), verdict)
    out.print(t)
    for row in lossy:
        for b in row.broken_files:
            lost = "an unknown number" if b.lost is None else f"{'' if b.how.startswith('exact') else '~'}{b.lost:,}"
            out.print(f"  {row.name}: {b.file}: {b.reason} after {b.records_read:,} records, {lost} lost "
                      f"({b.how})", highlight=False)
    if loss.over:
        why = ", ".join(f"{r.name} ({r.verdict.replace('max_loss', limit)})" for r in lossy if r.verdict != "ok")
        out.print(f"[bold red]data loss[/] in {len(loss.over)} source(s): {why}; their bad records are in {store}/"
                  f"{drops.QUARANTINE_DIR}/", highlight=False)


BUILD_HELP = (
    "Build the store of a spec: read, clean, dedup, decontaminate, score, cluster, tokenize, write cells.\n\n"
    "Rerunning an interrupted build skips finished tasks and gives the same store. Work is reused only while the "
    "spec fields and input files it was made from are unchanged: otherwise the build stops before any work, naming "
    "what changed; put it back, or rerun with --redo-changed. A finished store of the same spec and inputs is left "
    "as is (\"already built\"). At the end a table shows per source the records read, kept, dropped by reason, "
    "quarantined and lost to broken files.\n\n"
    "Exit status: 0 built (or already built); 1 the build failed; 2 bad usage, an invalid spec, or refused before "
    "any work because the spec or the inputs differ from what the store's work was made from (nothing was built); "
    "3 built (or already built), with data loss: a source kept nothing, lost records nothing can count, or lost or quarantined more "
    "than processing.max_loss of its records (the store is complete; with --accept-loss: 0); 130 interrupted "
    "(Ctrl-C: the same command resumes).")


def print_decontamination(artifact: StoreArtifact) -> None:
    """Per benchmark: items, n-grams indexed and skipped (by reason), documents dropped as contaminated."""
    dc = artifact.decontamination
    if dc is None:
        return
    t = Table(title=f"decontamination ({dc.ngram}-grams with at least {dc.min_content_words} content words and "
                    f"under {dc.max_number_share:.0%} numbers)", show_edge=False)
    for col in ("benchmark", "items", "indexed items", "n-grams indexed", "n-grams skipped", "documents matched"):
        t.add_column(col, justify="left" if col in ("benchmark", "n-grams skipped") else "right")
    for b in dc.benchmarks:
        skipped = ", ".join(f"{reason} {n:,}" for reason, n in b.ngrams_skipped.items() if n) or "0"
        t.add_row(b.name, f"{b.items:,}", f"{b.items_indexed:,}", f"{b.ngrams_indexed:,}", skipped,
                  f"{b.documents_matched:,}")
    out.print(t)


def register(app: typer.Typer) -> None:
    @app.command(help=BUILD_HELP)
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
        accept_loss: bool = typer.Option(False, "--accept-loss", help="exit 0 even when a source lost more than "
                                         "processing.max_loss of its records or kept nothing"),
        redo_changed: bool = typer.Option(
            False, "--redo-changed", "--restart",
            help="when the spec or the inputs changed since the store's work was done: redo the stages whose key "
                 "changed and every stage after them (without it the build stops and names what changed)"),
    ) -> None:
        from mixture.pipelines.build import BuildError, BuildInterrupted, build_store
        from mixture.pipelines.executors import EXECUTORS
        from mixture.pipelines.reuse import StoreChanged
        from mixture.spec.cli import load_or_exit
        from mixture.spec.source_formats import SourceError

        parsed = load_or_exit(spec)
        if executor is not None and executor not in EXECUTORS:
            err.print(f"--executor {executor!r}: expected one of {', '.join(EXECUTORS)}", highlight=False)
            raise typer.Exit(2)
        overrides = {"address": address, "partition": partition, "time": time_limit, "cpus_per_task": cpus_per_task,
                     "mem_per_cpu_gb": mem_per_cpu_gb, "tasks_per_job": tasks_per_job}
        store = parsed.refs.store
        try:
            built = build_store(str(spec), executor=executor, tasks=tasks, workers=workers, break_lock=break_lock,
                                keep_work=keep_work, overrides=overrides, redo_changed=redo_changed)
        except StoreChanged as exc:
            err.print(f"[bold red]build refused[/] {exc}", highlight=False, soft_wrap=True)
            raise typer.Exit(StoreChanged.exit_code) from None
        except (BuildError, SourceError) as exc:  # a source (a hub dataset) is resolved when the build starts
            err.print(f"[bold red]build failed[/] {exc}", highlight=False)
            raise typer.Exit(1) from None
        except KeyboardInterrupt as exc:
            what = f"stage {exc.stage!r}" if isinstance(exc, BuildInterrupted) else "the build"
            err.print(f"interrupted during {what}; run the same command again to resume (finished tasks are "
                      "skipped)", highlight=False)
            raise typer.Exit(130) from None
        max_loss = parsed.processing.max_loss
        if built.already_built:
            out.print(f"already built: {store} (finished {built.artifact.created}; same spec and inputs), nothing "
                      "to do; `mixture summary` shows it", highlight=False, soft_wrap=True)
        else:
            print_summary(built.artifact, store, max_loss)
        over = store_loss(built.artifact, max_loss).over  # a rerun of a store built with loss says so again
        if over and accept_loss:
            err.print(f"data loss accepted (--accept-loss): {', '.join(over)}", highlight=False)
        elif over:
            err.print(f"[bold]built, with data loss[/] (exit 3) in {', '.join(over)}: the store is complete, "
                      f"see the table above and {store}/{drops.QUARANTINE_DIR}/. Fix the sources, or raise "
                      "processing.max_loss, or rerun with --accept-loss to accept it.", highlight=False)
            raise typer.Exit(3)

    @app.command()
    def summary(store: str = typer.Argument(..., help="store path or URI")) -> None:
        """Print a store's headline, record funnel, records per source with their data loss, and largest domains."""
        from mixture.accounting import StoreNotReady, StoreReader

        try:
            artifact = StoreReader(store).store_info
        except (StoreNotReady, FormatError) as exc:
            err.print(str(exc), highlight=False)
            raise typer.Exit(1) from None
        print_summary(artifact, store)
