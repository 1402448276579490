"""`mixture validate` and `mixture schema`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from mixture.spec.load import SpecError, load_spec
from mixture.spec.source_formats import source_format

err = Console(stderr=True)
out = Console(soft_wrap=True)


def load_or_exit(spec_path: Path, check_resources: bool = True):
    """Load a spec or print every problem and exit 2 (the CLI's code for an invalid spec)."""
    try:
        return load_spec(spec_path, check_resources=check_resources)
    except SpecError as exc:
        err.print(f"[bold red]invalid spec[/] {escape(str(exc))}", markup=True, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def spec_schema() -> dict:
    from mixture.spec.models import Spec

    return Spec.model_json_schema()


def format_schemas() -> dict[str, tuple[str, Callable[[], dict]]]:
    """{option: (file it defines, its JSON Schema)} of every JSON file format besides the spec."""
    from mixture.planner.formats import Manifest, Plan
    from mixture.store.formats import Ledger, StoreArtifact

    return {
        "store": ("store.json", StoreArtifact.model_json_schema),
        "ledger": ("cluster=NN/quality=Q/_ledger.json", Ledger.model_json_schema),
        "plan": ("plan.json (mixture plan --out)", Plan.model_json_schema),
        "manifest": ("manifest.json (mixture materialize)", Manifest.model_json_schema),
    }


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        spec: Path = typer.Argument(..., help="the spec YAML file"),
        offline: bool = typer.Option(False, "--no-resources", help="check the schema only, not that sources exist"),
    ) -> None:
        """Check a spec and load what its build will need: schema and values; every source resolves to files; the
        store is outside every source and writable; the tokenizer loads offline; a fastText or sentence model
        loads. Exit 2 if invalid."""
        s = load_or_exit(spec, check_resources=not offline)
        out.print(f"[green]ok[/] {escape(f'{spec}: spec {s.name!r}, {len(s.sources)} sources, tokenizer {s.tokenizer}')}")
        if not offline:
            for src, uri in zip(s.sources, s.refs.sources, strict=True):
                summary, warnings = source_format(src.format).describe_source(src, uri)
                out.print(escape(f"  {src.name:<24} {src.format:<9} {summary}  {uri}"))
                for message in warnings:
                    err.print(f"[yellow]warning[/] {escape(message)}", highlight=False, soft_wrap=True)
        out.print(escape(f"  store → {s.refs.store}"))

    @app.command()
    def schema(
        store: bool = typer.Option(False, "--store", help="store.json instead of the spec"),
        ledger: bool = typer.Option(False, "--ledger", help="a cell's _ledger.json"),
        plan: bool = typer.Option(False, "--plan", help="plan.json (mixture plan --out)"),
        manifest: bool = typer.Option(False, "--manifest", help="manifest.json (mixture materialize)"),
    ) -> None:
        """Print a JSON Schema: the spec's (point your editor's YAML language server at it), or with --store,
        --ledger, --plan or --manifest the one of that file (the definition of its format)."""
        chosen = [name for name, on in (("store", store), ("ledger", ledger), ("plan", plan),
                                        ("manifest", manifest)) if on]
        if len(chosen) > 1:
            err.print(f"choose one of --{', --'.join(chosen)}")
            raise typer.Exit(2)
        typer.echo(json.dumps(format_schemas()[chosen[0]][1]() if chosen else spec_schema(), indent=2))
