"""`mixture explore STORE [--plan plan.json] [--port 8501]`: run the Streamlit explorer on a store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import typer

from mixture.explorer import MAIN as APP_MAIN


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
    from mixture.explorer.plan_view import PlanError, load_plan

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
        raise typer.Exit(run_server(streamlit_command(store, plan, port, host), env))


def _die_with_parent() -> None:
    """In the child, before exec: Linux sends it SIGTERM when the `mixture explore` process dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def run_server(cmd: list[str], env: dict[str, str]) -> int:
    """Run the Streamlit server until it exits; stopping this process (Ctrl-C, SIGTERM, SIGHUP, or SIGKILL on
    Linux) stops the server too. Returns the exit code for `mixture explore`: 0 when stopped, 1 when it failed."""
    child = subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent)
    stopped = False

    def stop(signum, frame) -> None:
        nonlocal stopped
        stopped = True
        if child.poll() is None:
            child.terminate()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        while True:
            try:
                code = child.wait(timeout=10 if stopped else None)
                break
            except subprocess.TimeoutExpired:  # did not stop within 10 s of SIGTERM
                child.kill()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if stopped or code in (0, -signal.SIGINT, -signal.SIGTERM, 130) else 1
