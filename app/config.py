"""Where the explorer's settings come from: `-- --store URI --plan FILE …` script args, else env vars.

Stores, plans, sharing mode and scan limits are given by whoever starts the server (`mixture explore`), never by
a visitor; the shared secret comes from the environment only (a command line is visible to every local user).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys

from mixture.accounting import ScanBudget

PAGE_ICON = "🧪"  # an emoji: the browser draws the favicon itself (a :material/…: icon is fetched from Google)
STORE_ENV = "MIXTURE_STORE"
PLAN_ENV = "MIXTURE_PLAN"
STORE_B_ENV = "MIXTURE_STORE_B"
ALLOW_STORES_ENV = "MIXTURE_ALLOW_STORES"  # more stores a sharing explorer offers, one per line
ALLOW_PLANS_ENV = "MIXTURE_ALLOW_PLANS"  # more plans, one per line
SHARE_ENV = "MIXTURE_SHARE"  # 1: sharing mode, 0: free inputs; unset: sharing unless the server is on loopback
TOKEN_ENV = "MIXTURE_EXPLORER_TOKEN"
SCAN_ROWS_ENV = "MIXTURE_SCAN_ROWS"
SCAN_SECONDS_ENV = "MIXTURE_SCAN_SECONDS"
DEFAULT_SCAN_ROWS = 1_000_000
DEFAULT_SCAN_SECONDS = 30.0


def _script_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--store", action="append", default=[])
    parser.add_argument("--plan", action="append", default=[])
    parser.add_argument("--share", action="store_true", default=None)
    parser.add_argument("--no-share", dest="share", action="store_false")
    parser.add_argument("--scan-rows", type=int)
    parser.add_argument("--scan-seconds", type=float)
    # only parse argv when Streamlit runs our script (under pytest/AppTest argv belongs to pytest)
    argv = sys.argv[1:] if sys.argv and sys.argv[0].endswith(("main.py", "serve.py")) else []
    return parser.parse_known_args(argv)[0]


def _lines(env: str) -> list[str]:
    return [line.strip() for line in os.environ.get(env, "").splitlines() if line.strip()]


def _unique(items: list[str | None]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def store_uri() -> str | None:
    """The store given on the command line, else $MIXTURE_STORE, else None."""
    return next(iter(_script_args().store), None) or os.environ.get(STORE_ENV) or None


def plan_path() -> str | None:
    """The plan given on the command line, else $MIXTURE_PLAN, else None."""
    return next(iter(_script_args().plan), None) or os.environ.get(PLAN_ENV) or None


def second_store_uri() -> str | None:
    """Default second store of the Diff page ($MIXTURE_STORE_B)."""
    return os.environ.get(STORE_B_ENV) or None


def shared_stores() -> list[str]:
    """Every store the server was started with (the first is the default): the only ones sharing mode opens."""
    return _unique([*_script_args().store, os.environ.get(STORE_ENV), *_lines(ALLOW_STORES_ENV),
                    second_store_uri()])


def shared_plans() -> list[str]:
    """Every plan the server was started with (the first is the default)."""
    return _unique([*_script_args().plan, os.environ.get(PLAN_ENV), *_lines(ALLOW_PLANS_ENV)])


def is_loopback(host: str | None) -> bool:
    """True for an address only this machine reaches (127.0.0.0/8, ::1, localhost); an unset address means every
    interface."""
    if not host:
        return False
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def sharing() -> bool:
    """Sharing mode: always with a shared secret (a token guards a shared explorer), else given explicitly
    (`--share`/`--no-share`, $MIXTURE_SHARE), else on unless the Streamlit server listens on loopback only."""
    if token():
        return True
    explicit = _script_args().share
    if explicit is not None:
        return explicit
    env = os.environ.get(SHARE_ENV, "").strip().lower()
    if env in ("1", "true", "yes", "on"):
        return True
    if env in ("0", "false", "no", "off"):
        return False
    import streamlit as st

    return not is_loopback(st.get_option("server.address"))


def token() -> str | None:
    """The shared secret a visitor must give first ($MIXTURE_EXPLORER_TOKEN), or None."""
    return os.environ.get(TOKEN_ENV) or None


def scan_budget() -> ScanBudget:
    """Limits of one store scan (rows read, seconds); 0 lifts a limit."""
    args = _script_args()
    rows = args.scan_rows if args.scan_rows is not None else int(os.environ.get(SCAN_ROWS_ENV) or DEFAULT_SCAN_ROWS)
    seconds = (args.scan_seconds if args.scan_seconds is not None
               else float(os.environ.get(SCAN_SECONDS_ENV) or DEFAULT_SCAN_SECONDS))
    return ScanBudget(max_rows=rows or None, max_seconds=seconds or None)
