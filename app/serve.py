"""The explorer behind its token (`mixture explore … --token`): the Streamlit app of main.py as an ASGI app whose
every endpoint but the health check sits behind `gate.TokenGate`."""

from __future__ import annotations

import os

import streamlit as st
from starlette.middleware import Middleware

from mixture.explorer import MAIN, config, gate

secret = os.environ.get(config.TOKEN_ENV) or ""
if not secret:
    raise SystemExit(f"error: serve.py runs the explorer behind its token: set ${config.TOKEN_ENV}.")
app = st.App(str(MAIN), middleware=[Middleware(gate.TokenGate, secret=secret)])
