"""`mixture demo-corpus`: write the embedded default corpus and print what it holds."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from .names import BENCHMARK, GROUND_TRUTH, MANIFEST


def demo_corpus(
    out: Path = typer.Argument(..., help="Folder to write (created; an earlier demo corpus there is replaced)."),
    seed: int = typer.Option(0, "--seed", help="Seed of every random choice: same seed, same bytes."),
    scale: float = typer.Option(
        1.0, "--scale", help="Fraction of the full corpus (1.0 is about 26 M cl100k tokens; 0.05 about 1.5 M)."
    ),
    variant: int = typer.Option(
        0, "--variant", min=0, help="0: the corpus as drawn; n > 0: the same documents with their words swapped "
                                    "(variant n), distinct from every other variant: n variants hold n times the text."
    ),
    duplicates: str = typer.Option(
        "planted", "--duplicates", help="planted: the demo's own planted duplicates; pool: also a web-crawl source "
                                        "whose duplicates look like a real pool's (copies across variants and "
                                        "sources, template families with a heavy tail, chains of near copies)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Write a corpus of real text found on this machine (Python stdlib, installed packages) with planted
    duplicates, benchmark contamination and malformed records, plus its ground truth and a benchmark file."""
    console = Console()
    if not 0 < scale <= 10:
        console.print(f"[red]--scale must be in (0, 10], got {scale}[/red]; use e.g. --scale 0.05 for a small corpus")
        raise typer.Exit(2)
    from .corpus import write_demo_corpus
    from .crawl import PROFILES

    if duplicates not in PROFILES:
        console.print(f"[red]--duplicates must be one of {', '.join(PROFILES)}, got {duplicates!r}[/red]")
        raise typer.Exit(2)

    started = time.perf_counter()
    try:
        manifest = write_demo_corpus(out, seed=seed, scale=scale, progress=not quiet, variant=variant,
                                     duplicates=duplicates)
    except FileExistsError as exc:
        console.print(f"[red]{exc}[/red]", soft_wrap=True)
        raise typer.Exit(2) from exc
    except OSError as exc:
        console.print(f"[red]could not write {out}: {exc}[/red]")
        raise typer.Exit(1) from exc
    table = Table(title=f"demo corpus in {out} (seed {seed}, scale {scale:g}{f', variant {variant}' if variant else ''})")
    table.add_column("source", no_wrap=True)
    for col in ("format", "files", "docs", "approx tokens"):
        table.add_column(col, justify="left" if col == "format" else "right")
    for s in manifest["sources"]:
        name = s["name"] + (" *" if s["exempt_from_fuzzy_dedup"] else "")
        table.add_row(name, s["format"], str(s["files"]), f"{s['docs']:,}", f"{s['approx_tokens']:,}")
    t = manifest["totals"]
    table.add_row("total", "", str(t["files"]), f"{t['docs']:,}", f"{t['approx_tokens']:,}", style="bold")
    console.print(table)
    console.print("* exempt from fuzzy dedup (exact dedup still applies)")
    console.print(f"manifest:     {out / MANIFEST}", soft_wrap=True)
    console.print(f"ground truth: {out / GROUND_TRUTH}", soft_wrap=True)
    console.print(f"benchmark:    {out / BENCHMARK} ({manifest['benchmarks'][0]['records']} records)", soft_wrap=True)
    console.print(f"written in {time.perf_counter() - started:.1f} s")


def register(app: typer.Typer) -> None:
    app.command("demo-corpus")(demo_corpus)
