"""`mixture explore STORE [--plan plan.json] [--port 8501]`: run the Streamlit explorer on a store, shared or
local (sharing mode offers only the stores and plans given here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import typer
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mixture.explorer import SERVE as APP_SERVE
from mixture.explorer import config
from mixture.spec.yaml_bounded import load_yaml


class ShareList(BaseModel):
    """`--allowlist FILE`: more stores and plans a sharing explorer offers (relative paths: from the file's
    folder)."""

    model_config = ConfigDict(extra="forbid")
    stores: list[str] = Field(default_factory=list, description="store folders or fsspec URIs")
    plans: list[str] = Field(default_factory=list, description="plan.json files")


def read_share_list(path: Path) -> ShareList:
    """The allowlist file, with local paths made absolute; exit 2 naming the file and field when it is wrong."""
    try:
        raw = load_yaml(path.read_text()) or {}
        listed = ShareList.model_validate(raw)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        typer.echo(f"error: --allowlist {path}: {exc}\nWrite a YAML file with `stores:` and `plans:` lists.",
                   err=True)
        raise typer.Exit(2) from exc
    here = path.resolve().parent

    def local(p: str) -> str:
        return p if "://" in p else str(here / p)

    return ShareList(stores=[local(s) for s in listed.stores], plans=[local(p) for p in listed.plans])


def _check_store(store: str) -> None:
    from mixture.accounting.cli import open_store

    reader = open_store(store)
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


def streamlit_command(store: str, plan: Path | None, port: int, host: str, share: bool = False,
                      stores: list[str] | None = None, plans: list[Path] | None = None,
                      scan_rows: int = config.DEFAULT_SCAN_ROWS,
                      scan_seconds: float = config.DEFAULT_SCAN_SECONDS) -> list[str]:
    """The `streamlit run` command line the explore command executes: `plan` and `store` first, then the other
    `stores` / `plans` a sharing explorer offers. It runs `serve.py` (main.py whose page paths lead to its root,
    behind its token when the environment holds one)."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP_SERVE), "--server.port", str(port),
           "--server.address", host, "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    if share:  # visitors get no developer menu and no tracebacks (they name the server's files)
        cmd += ["--client.toolbarMode", "viewer", "--client.showErrorDetails", "none"]
    else:  # no "Deploy" button (it offers Streamlit Community Cloud); the menu keeps rerun and settings
        cmd += ["--client.toolbarMode", "minimal"]
    cmd += ["--", "--store", store]
    for other in stores or []:
        if other != store:
            cmd += ["--store", other]
    for p in ([plan] if plan is not None else []) + [p for p in plans or [] if p != plan]:
        cmd += ["--plan", str(p.resolve())]
    cmd += ["--share" if share else "--no-share", "--scan-rows", str(scan_rows), "--scan-seconds", f"{scan_seconds:g}"]
    return cmd


def mode_line(sharing: bool, token: bool, share: bool | None, host: str, n_stores: int, n_plans: int,
              scan_rows: int, scan_seconds: float) -> str:
    """The start-up line saying which mode runs and why."""
    if not sharing:
        why = "--no-share" if share is False else f"{host} is a loopback address"
        return (f"local mode ({why}): free store and plan path boxes, any store this machine reads; no token. "
                "Use --share (or a token) before exposing the port.")
    why = "a token is set" if token and share is None else "--share" if share else f"{host} is not loopback"
    return (f"sharing mode ({why}): {n_stores} store(s) and {n_plans} plan(s) offered, no path inputs; scans stop "
            f"at {scan_rows or 'unlimited'} rows / {scan_seconds or 'unlimited'} s; "
            + ("every page and endpoint but the health check asks for the token first, once per browser session."
               if token else "no token: anyone who reaches the port sees them."))


def register(app: typer.Typer) -> None:
    @app.command("explore")
    def explore(
        store: str = typer.Argument(..., help="Store folder or fsspec URI (gs://bucket/store, s3://…)."),
        plans: list[Path] = typer.Option([], "--plan", help="plan.json to show weights, exposure and warnings; "
                                         "repeat to offer several (the first is shown first)."),
        stores: list[str] = typer.Option([], "--store", help="Another store to offer (repeatable), e.g. for the "
                                         "Diff page."),
        allowlist: Path | None = typer.Option(None, "--allowlist", help="YAML file with `stores:` and `plans:` "
                                              "lists: more stores and plans to offer."),
        port: int = typer.Option(8501, "--port", help="Port of the Streamlit server."),
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0 to share)."),
        share: bool | None = typer.Option(None, "--share/--no-share", help="Sharing mode: visitors see only the "
                                          "stores and plans given here, no path box. Default: on unless --host "
                                          "is a loopback address."),
        token: str | None = typer.Option(None, "--token", envvar=config.TOKEN_ENV, show_envvar=True,
                                         help="Shared secret the page asks for before showing anything "
                                              "(prefer the environment variable: a command line is visible "
                                              "to every local user)."),
        scan_rows: int = typer.Option(config.DEFAULT_SCAN_ROWS, "--scan-rows", min=0,
                                      help="A store scan (Search page) stops after this many rows (0: no limit)."),
        scan_seconds: float = typer.Option(config.DEFAULT_SCAN_SECONDS, "--scan-seconds", min=0,
                                           help="A store scan stops after this many seconds (0: no limit)."),
    ) -> None:
        """Browse a store in the Streamlit explorer: overview, store, mixture, diff, search, map, live build."""
        if not 0 < port < 65536:
            typer.echo(f"error: --port {port} is not a TCP port (1-65535).", err=True)
            raise typer.Exit(2)
        listed = read_share_list(allowlist) if allowlist is not None else ShareList()
        second = os.environ.get(config.STORE_B_ENV)  # the Diff page's default store B is offered too
        every_store = list(dict.fromkeys([store, *stores, *listed.stores, *([second] if second else [])]))
        every_plan = list(dict.fromkeys([p.resolve() for p in plans] + [Path(p) for p in listed.plans]))
        for s in every_store:
            _check_store(s)
        for p in every_plan:
            _check_plan(p)
        if token and share is False:
            typer.echo("error: a token guards a shared explorer, but --no-share asks for local use (free path "
                       f"boxes). Drop --no-share to share it behind the token, or unset ${config.TOKEN_ENV} "
                       "(and --token) for local use.", err=True)
            raise typer.Exit(2)
        sharing = bool(token) or (share if share is not None else not config.is_loopback(host))
        env = dict(os.environ, MIXTURE_STORE=store)
        env.pop(config.TOKEN_ENV, None)
        env.pop(config.ALLOW_STORES_ENV, None)
        env.pop(config.ALLOW_PLANS_ENV, None)
        if token:
            env[config.TOKEN_ENV] = token  # the environment, never the command line
        if every_plan:
            env["MIXTURE_PLAN"] = str(every_plan[0])
        else:
            env.pop("MIXTURE_PLAN", None)
        cmd = streamlit_command(store, every_plan[0] if every_plan else None, port, host, sharing, every_store,
                                every_plan, scan_rows, scan_seconds)
        typer.echo(f"explorer on http://{host}:{port}/  (Ctrl-C to stop)")
        typer.echo(mode_line(sharing, bool(token), share, host, len(every_store), len(every_plan), scan_rows,
                             scan_seconds))
        raise typer.Exit(run_server(cmd, env))


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
