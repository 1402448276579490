"""Entry point of the explorer: `streamlit run <mixture.explorer>/main.py -- --store URI [--plan plan.json]`."""

from __future__ import annotations

import streamlit as st

from mixture.explorer import config, queries, sharing, ui

st.set_page_config(page_title="mixture explorer", page_icon=config.PAGE_ICON, layout="wide")
PAGES = {
    "overview": st.Page("views/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    "store": st.Page("views/store.py", title="Store", icon=":material/database:", url_path="store"),
    "mixture": st.Page("views/mixture.py", title="Mixture", icon=":material/balance:", url_path="mixture"),
    "diff": st.Page("views/diff.py", title="Diff", icon=":material/compare_arrows:", url_path="diff"),
    "search": st.Page("views/search.py", title="Search", icon=":material/search:", url_path="search"),
    "map": st.Page("views/map.py", title="Map", icon=":material/scatter_plot:", url_path="map"),
    "live": st.Page("views/live.py", title="Live build", icon=":material/monitoring:", url_path="live"),
}

# the page the URL names is chosen first, so that a shared deep link (/store?doc=…) is still the page once the
# token prompt (a bare `streamlit run` with a secret; `mixture explore` asks at the door) is answered
current = st.navigation(list(PAGES.values()), position="sidebar" if sharing.token_given() else "hidden")
sharing.require_token()  # with a shared secret, nothing but its prompt until the session gave it
sharing.refuse_foreign_locations()
name = next((n for n, p in PAGES.items() if p.url_path == current.url_path), "overview")
wanted = st.query_params.get("page", "").lower()
if not st.session_state.get("_page_param_applied"):
    # a shared URL's ?page= wins once, on the session's first run
    st.session_state["_page_param_applied"] = True
    if wanted in PAGES and wanted != name:
        st.switch_page(PAGES[wanted], query_params={k: v for k, v in st.query_params.items() if k != "page"})
    uri = ui.store_uri()
    if not wanted and name == "overview" and uri and queries.store_state(uri)[0] == "building":
        st.switch_page(PAGES["live"])
st.query_params["page"] = name
ui.sidebar()
current.run()
