"""Sharing mode: the shared secret asked first, locations in the URL checked against what the server shares,
one store scan at a time per session."""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from mixture.explorer import config, gate
from mixture.explorer.fmt import code

TOKEN_OK = "_token_ok"
NO_PLAN = "(no plan)"  # the plan choice that shows none (a valid `?plan=` value)
# query parameters that name a store or a plan, and which list they must come from in sharing mode
LOCATION_PARAMS = {"store": "store", "store_a": "store", "store_b": "store",
                   "plan": "plan", "plan_a": "plan", "plan_b": "plan"}


def token_given() -> bool:
    """No shared secret is configured, or this session gave it (here, or at the door: `gate.TokenGate`'s cookie)."""
    secret = config.token()
    if not secret or st.session_state.get(TOKEN_OK):
        return True
    if gate.valid_cookie("; ".join(f"{k}={v}" for k, v in st.context.cookies.to_dict().items()), secret):
        st.session_state[TOKEN_OK] = True  # given at the door in this browser session
        return True
    return False


def require_token() -> None:
    """With a shared secret configured, show only its prompt until this session gave it."""
    secret = config.token()
    if token_given() or not secret:
        return
    st.header("mixture explorer")
    given = st.text_input("Access token", type="password", key="_token_given",
                          help="Ask whoever shared this explorer for its token.")
    if given:
        if hmac.compare_digest(given.encode(), secret.encode()):
            st.session_state[TOKEN_OK] = True
            del st.session_state["_token_given"]
            st.rerun()
        time.sleep(1)  # slows guessing down
        st.error("Wrong token.")
    st.stop()


def allowed(kind: str) -> list[str]:
    """The stores ('store') or plans ('plan') this server shares."""
    return config.shared_stores() if kind == "store" else config.shared_plans()


def refuse_foreign_locations() -> None:
    """In sharing mode, stop the page when a query parameter names a store or plan the server does not share."""
    if not config.sharing():
        return
    for name, kind in LOCATION_PARAMS.items():
        value = st.query_params.get(name)
        if value is not None and value not in allowed(kind) and not (name == "plan" and value == NO_PLAN):
            st.error(f"Refused: `{name}={code(value)}` is not a {kind} this explorer shares. It shows only the "
                     f"{kind}s it was started with; pick one in the sidebar.")
            st.stop()


@contextmanager
def one_scan() -> Iterator[None]:
    """Hold this session's scan slot for the block; while another scan of the session runs, say so and stop."""
    lock = st.session_state.setdefault("_scan_lock", threading.Lock())
    if not lock.acquire(blocking=False):
        st.warning("A scan of this session is still running: wait for it to finish.")
        st.stop()
    try:
        yield
    finally:
        lock.release()
