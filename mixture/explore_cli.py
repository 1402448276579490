"""`mixture explore STORE [--plan plan.json] [--port 8501]`: run the Streamlit explorer (app/main.py) on a store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer

APP_MAIN = Path(__file__).resolve().parent.parent / "app" / "main.py"


def _check_store(store: str) -> None:
    from mixture.accounting import StoreReader

    try:
        reader = StoreReader(store)
        exists = reader.fs.exists(reader.root)
    except (ValueError, ImportError, OSError) as exc:
        typer.echo(f"error: cannot open store {store!r}: {exc}. Give a local path or an fsspec URI (gs://…).",
                   err=True)
        raise typer.Exit(2) from exc
    if not exists:
        typer.echo(f"error: store {store!r} does not exist. Build it with `mixture build SPEC` or fix the path.",
                   err=True)
        raise typer.Exit(2)
    if not reader.is_complete:
        typer.echo(f"note: {store} has no store.json yet (still building): the explorer opens on Live build.",
                   err=True)


def _check_plan(plan: Path) -> None:
    root = str(APP_MAIN.parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from app.plan_view import PlanError, load_plan

    try:
        load_plan(plan)
    except PlanError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc


def streamlit_command(store: str, plan: Path | None, port: int, host: str) -> list[str]:
    """The `streamlit run` command line the explore command executes."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP_MAIN), "--server.port", str(port),
           "--server.address", host, "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--", "--store", store]
    if plan is not None:
        cmd += ["--plan", str(plan.resolve())]
    return cmd


def register(app: typer.Typer) -> None:
    @app.command("explore")
    def explore(
        store: str = typer.Argument(..., help="Store folder or fsspec URI (gs://bucket/store, s3://…)."),
        plan: Path | None = typer.Option(None, "--plan", help="plan.json to show weights, exposure and warnings."),
        port: int = typer.Option(8501, "--port", help="Port of the Streamlit server."),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0 to share)."),
    ) -> None:
        """Browse a store in the Streamlit explorer: overview, store, mixture, diff, search, map, live build."""
        if not APP_MAIN.exists():
            typer.echo(f"error: the explorer app is missing ({APP_MAIN}); run from a source checkout.", err=True)
            raise typer.Exit(2)
        if not 0 < port < 65536:
            typer.echo(f"error: --port {port} is not a TCP port (1-65535).", err=True)
            raise typer.Exit(2)
        _check_store(store)
        if plan is not None:
            _check_plan(plan)
        env = dict(os.environ, MIXTURE_STORE=store)
        if plan is not None:
            env["MIXTURE_PLAN"] = str(plan.resolve())
        typer.echo(f"explorer on http://{host}:{port}/  (Ctrl-C to stop)")
        try:
            code = subprocess.call(streamlit_command(store, plan, port, host), env=env)
        except KeyboardInterrupt:
            code = 0
        raise typer.Exit(0 if code in (0, -2, 130) else 1)
