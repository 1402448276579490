"""The `mixture` command line: each area registers its commands from its own module."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="mixture",
    help="Build a pretraining mixture from a declarative spec, audit its token counts, plan and browse it.\n\n"
         "Exit status: 0 ok; 1 a failed check or build; 2 bad usage or an invalid spec; 3 built, with data loss "
         "(`mixture build`: a source kept nothing or lost more than processing.max_loss of its records; "
         "--accept-loss: 0); 130 interrupted (Ctrl-C).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module has `register(app: typer.Typer) -> None`; a missing module is skipped so areas can land separately.
COMMAND_MODULES = (
    "mixture.spec.cli",
    "mixture.demo_corpus.cli",
    "mixture.pipelines.cli",
    "mixture.pipelines.estimate_cli",
    "mixture.accounting.cli",
    "mixture.planner.cli",
    "mixture.explore_cli",
    "mixture.overview.cli",
    "mixture.demo",
)


def _register_all() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue
            raise
        module.register(app)


_register_all()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
