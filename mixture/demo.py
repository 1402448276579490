"""`mixture demo [DIR]`: the whole demo from the installed package (corpus, build + summary, audit, plan,
materialize, realised recount)."""

from __future__ import annotations

import contextlib
import io
import time
from importlib import resources
from pathlib import Path
from typing import Any

import typer
import yaml

SPEC_NAME = "demo.yaml"
TEMPLATE_ROOT = "../demo/"  # the template's paths, relative to specs/ in a checkout: the corpus in ../demo/corpus
# below this scale the template's 40 clusters of >= 1 % each and 400 fine centroids are too many for the corpus
SMALL_SCALE = 0.2
SMALL_PARTITION = {"k": 8, "fine_k": 64, "min_share": 0.02, "embedding_dim": 32}


def template_text() -> str:
    """The demo spec as shipped (`specs/demo.yaml` in the repository, `mixture/specs/demo.yaml` installed)."""
    return resources.files("mixture.specs").joinpath(SPEC_NAME).read_text(encoding="utf-8")


def demo_spec(corpus: str = "corpus", store: str = "store") -> dict[str, Any]:
    """The demo spec as a dict, its sources and benchmark in `corpus` and its store at `store` (paths relative to
    where the spec will be written, or absolute)."""
    spec = yaml.safe_load(template_text())
    corpus = corpus.rstrip("/")
    for item in [*spec["sources"], *spec["processing"]["decontamination"]["benchmarks"]]:
        item["uri"] = item["uri"].replace(f"{TEMPLATE_ROOT}corpus", corpus, 1)
    spec["store"]["uri"] = store
    return spec


def write_demo_spec(folder: Path, scale: float = 1.0) -> Path:
    """`folder/demo.yaml`: the template with its paths relative to `folder` (corpus/, store), comments kept. Below
    SMALL_SCALE the partition is sized for the smaller corpus."""
    text = template_text().replace(TEMPLATE_ROOT, "")
    head, sep, body = text.partition("\nname:")
    text = ("# The demo mixture, written by `mixture demo` from the packaged specs/demo.yaml. Relative paths are\n"
            "# relative to this file." + sep + body) if sep else text
    if scale < SMALL_SCALE:
        spec = yaml.safe_load(text)
        spec["partition"]["clusters"].update(SMALL_PARTITION)
        text = (f"# Written by `mixture demo --scale {scale:g}`: the demo spec with a partition sized for a small "
                "corpus.\n" + yaml.safe_dump(spec, sort_keys=False))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SPEC_NAME
    path.write_text(text, encoding="utf-8")
    return path


def demo_steps(folder: Path, spec: Path, scale: float, seed: int) -> list[tuple[str, list[str]]]:
    """(what, `mixture` arguments) of every step of the demo, in order."""
    corpus, store, plan, mix = (str(folder / name) for name in ("corpus", "store", "plan.json", "mixture"))
    return [
        ("demo corpus", ["demo-corpus", corpus, "--quiet", "--seed", str(seed), "--scale", f"{scale:g}"]),
        # an earlier demo's store is rebuilt: the corpus was just written again (its files changed)
        ("build", ["build", str(spec), "--redo-changed"]),
        ("audit", ["audit", store]),
        ("plan", ["plan", str(spec), "--out", plan, "--ladder", *(["--scale", f"{scale:g}"] if scale != 1 else [])]),
        ("overview", ["overview", store, "--out", str(folder / "overview"), "--plan", plan]),
        ("materialize", ["materialize", plan, "--out", mix]),
        ("realised", ["realised", mix, plan]),
    ]


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        folder: Path = typer.Argument(Path("demo"), help="Folder to write: corpus/, demo.yaml, store/, plan.json, "
                                                         "mixture/ (an earlier demo there is replaced step by step)."),
        scale: float = typer.Option(1.0, "--scale", help="Fraction of the full demo corpus (0.05 ≈ 1.5M tokens, "
                                                         "a minute on 2 cores); plan budgets scale with it."),
        seed: int = typer.Option(0, "--seed", help="Seed of the demo corpus."),
    ) -> None:
        """Run the whole demo from the installed package: write the demo corpus (real text from this machine's
        Python installation), build and audit its store, plan a two-phase mixture, write the static overview page
        (overview/index.html) and materialize the mixture."""
        import typer.main

        if not 0 < scale <= 10:
            typer.echo(f"error: --scale must be in (0, 10], got {scale:g}", err=True)
            raise typer.Exit(2)
        command = typer.main.get_command(app)
        spec = write_demo_spec(folder, scale)
        started = time.perf_counter()
        for what, args in demo_steps(folder, spec, scale, seed):
            typer.secho(f"\n== {what}: mixture {' '.join(args)}", bold=True)
            quiet = what == "realised"  # its per-cell table is long; the check is what matters here
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext():
                code = _invoke(command, args)
            if code:
                if quiet:
                    typer.echo(sink.getvalue())
                typer.echo(f"error: the demo stopped at `{what}` (exit {code}); see above", err=True)
                raise typer.Exit(code)
            if quiet:
                typer.echo("every cell's realised tokens match the plan")
        typer.echo(f"\ndemo done in {time.perf_counter() - started:.0f} s\n")
        for name, what in (("corpus", "sources, MANIFEST.json, ground_truth.json"), (SPEC_NAME, "the spec"),
                           ("store", "store.json, cluster=NN/quality=Q/, _samples/, _model/, _quarantine/, _dropped/"),
                           ("plan.json", "the two-phase plan"),
                           ("overview", "index.html: the static overview page"),
                           ("mixture", "phase=NAME/ Parquet shards + manifest.json")):
            typer.echo(f"{name:<11} {folder / name}   ({what})")
        typer.echo(f"open        {(folder / 'overview' / 'index.html').resolve().as_uri()}   (in a browser: no server)")
        typer.echo(f"next        mixture explore {folder / 'store'} --plan {folder / 'plan.json'}")


def _invoke(command, args: list[str]) -> int:
    """Run one `mixture` command in this process; its exit code."""
    try:
        result = command.main(args, prog_name="mixture", standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return result if isinstance(result, int) else 0
