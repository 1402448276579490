"""What `mixture explore` serves: main.py as an ASGI app, its page paths led to its root (`page_paths`), behind the
token when one is set, the endpoints no page needs off when sharing without one (`gate`)."""

from __future__ import annotations

import streamlit as st
from starlette.middleware import Middleware

from mixture.explorer import MAIN, config, gate, page_paths

prefix = "/" + (st.get_option("server.baseUrlPath") or "").strip("/")  # routes hold it: '/mixture/store'
secret = config.token()
middleware = [Middleware(page_paths.PagePaths, prefix=prefix)]
if secret:  # outermost: nothing answers before the token is given
    middleware.insert(0, Middleware(gate.TokenGate, secret=secret, prefix=prefix))
elif config.sharing():
    middleware.insert(0, Middleware(gate.Closed, prefix=prefix))
app = st.App(str(MAIN), middleware=middleware)
