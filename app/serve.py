"""What `mixture explore` serves: the Streamlit app of main.py as an ASGI app whose page paths lead to its root
(`page_paths.PagePaths`) and, with a token set, whose every endpoint but the health check sits behind
`gate.TokenGate`."""

from __future__ import annotations

import streamlit as st
from starlette.middleware import Middleware

from mixture.explorer import MAIN, config, gate, page_paths

prefix = "/" + (st.get_option("server.baseUrlPath") or "").strip("/")  # routes hold it: '/mixture/store'
secret = config.token()
middleware = [Middleware(page_paths.PagePaths, prefix=prefix)]
if secret:  # outermost: nothing answers before the token is given
    middleware.insert(0, Middleware(gate.TokenGate, secret=secret, prefix=prefix))
app = st.App(str(MAIN), middleware=middleware)
