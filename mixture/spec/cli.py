"""`mixture validate` and `mixture schema`."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from mixture.spec.load import SpecError, list_source_files, load_spec, resolve_uri, spec_dir

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

    schema = Spec.model_json_schema()
    try:
        from mixture.spec.mixture_section import MixtureSection
    except ModuleNotFoundError:
        return schema
    mix = MixtureSection.model_json_schema()
    schema.setdefault("$defs", {}).update(mix.pop("$defs", {}))
    schema["$defs"]["MixtureSection"] = mix
    schema["properties"]["mixture"] = {"anyOf": [{"$ref": "#/$defs/MixtureSection"}, {"type": "null"}], "default": None}
    return schema


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        spec: Path = typer.Argument(..., help="the spec YAML file"),
        offline: bool = typer.Option(False, "--no-resources", help="check the schema only, not that sources exist"),
    ) -> None:
        """Check a spec: schema, values, and that every source resolves to at least one file. Exit 2 if invalid."""
        s = load_or_exit(spec, check_resources=not offline)
        base = spec_dir(spec)
        out.print(f"[green]ok[/] {escape(f'{spec}: spec {s.name!r}, {len(s.sources)} sources, tokenizer {s.tokenizer}')}")
        if not offline:
            for src in s.sources:
                uri = resolve_uri(src.uri, base)
                if src.format == "datasets":
                    from mixture.spec.datasets_source import describe_dataset_source

                    out.print(escape(f"  {src.name:<24} {src.format:<9} {describe_dataset_source(src, uri)}  {uri}"))
                    continue
                n = "hub" if uri.startswith("hf://") else len(list_source_files(uri, src.format)[1])
                out.print(escape(f"  {src.name:<24} {src.format:<9} {n} file(s)  {uri}"))
        out.print(escape(f"  store → {resolve_uri(s.store.uri, base)}"))

    @app.command()
    def schema() -> None:
        """Print the JSON Schema of the spec (point your editor's YAML language server at it)."""
        typer.echo(json.dumps(spec_schema(), indent=2))
