"""Where the explorer's store and plan come from: `-- --store URI --plan FILE` script args, else env vars."""

from __future__ import annotations

import argparse
import os
import sys

STORE_ENV = "MIXTURE_STORE"
PLAN_ENV = "MIXTURE_PLAN"
STORE_B_ENV = "MIXTURE_STORE_B"


def _script_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--store")
    parser.add_argument("--plan")
    # only parse argv when Streamlit runs our script (under pytest/AppTest argv belongs to pytest)
    argv = sys.argv[1:] if sys.argv and sys.argv[0].endswith("main.py") else []
    return parser.parse_known_args(argv)[0]


def store_uri() -> str | None:
    """The store given on the command line, else $MIXTURE_STORE, else None."""
    return _script_args().store or os.environ.get(STORE_ENV) or None


def plan_path() -> str | None:
    """The plan given on the command line, else $MIXTURE_PLAN, else None."""
    return _script_args().plan or os.environ.get(PLAN_ENV) or None


def second_store_uri() -> str | None:
    """Default second store of the Diff page ($MIXTURE_STORE_B)."""
    return os.environ.get(STORE_B_ENV) or None
