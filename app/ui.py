"""Shared page plumbing: the current store and plan (sidebar), query-parameter helpers, document display."""

from __future__ import annotations

import json

import streamlit as st

from mixture.accounting import DocumentScan, ScanBudget
from mixture.explorer import charts, config, queries
from mixture.explorer.fmt import code, cut_text, md
from mixture.explorer.plan_view import PlanError, PlanView, load_plan
from mixture.explorer.sharing import NO_PLAN
from mixture.store.formats import FormatError, StoreArtifact, StoreVersionError

STORE_KEY = "store_uri"
PLAN_KEY = "plan_path"


def sidebar() -> None:
    """Store and plan in the sidebar: free inputs (initialised from the command line / environment), or in
    sharing mode a choice among the stores and plans the server was started with."""
    if config.sharing():
        _shared_sidebar()
        return
    if STORE_KEY not in st.session_state:
        st.session_state[STORE_KEY] = config.store_uri() or ""
    if PLAN_KEY not in st.session_state:
        st.session_state[PLAN_KEY] = config.plan_path() or ""
    with st.sidebar:
        st.text_input("Store", key=STORE_KEY, help="Local path or fsspec URI (gs://…, s3://…) of a store")
        st.text_input("Plan", key=PLAN_KEY, help="Path of a plan.json (optional): weights, exposure, warnings")


SHARED_STORE_KEY = "shared_store"
SHARED_PLAN_KEY = "shared_plan"


def _shared_sidebar() -> None:
    """Sharing mode: select boxes over the shared stores and plans (`?store=` / `?plan=` pick one); no path box."""
    stores, plans = config.shared_stores(), config.shared_plans()
    for key, options, name, first in ((SHARED_STORE_KEY, stores, "store", stores[:1]),
                                      (SHARED_PLAN_KEY, [*plans, NO_PLAN], "plan", plans[:1] or [NO_PLAN])):
        if st.session_state.get(key) not in options:
            st.session_state[key] = param(name) if param(name) in options else next(iter(first), None)
    with st.sidebar:
        if len(stores) > 1:
            st.selectbox("Store", stores, key=SHARED_STORE_KEY, help="the stores this explorer shares")
        elif stores:
            st.caption(f"Store: `{code(stores[0])}`")
        if plans:
            st.selectbox("Plan", [*plans, NO_PLAN], key=SHARED_PLAN_KEY, help="the plans this explorer shares")
    chosen = st.session_state.get(SHARED_STORE_KEY)
    set_param("store", chosen if stores and chosen != stores[0] else None)
    chosen = st.session_state.get(SHARED_PLAN_KEY)
    set_param("plan", chosen if plans and chosen != plans[0] else None)


def store_uri() -> str:
    """The current store; in sharing mode always one of the shared stores."""
    if config.sharing():
        stores = config.shared_stores()
        chosen = st.session_state.get(SHARED_STORE_KEY, param("store"))
        return chosen if chosen in stores else next(iter(stores), "")
    return (st.session_state.get(STORE_KEY) or config.store_uri() or "").strip()


def plan_path() -> str:
    """The current plan path ('' for none); in sharing mode always one of the shared plans or none."""
    if config.sharing():
        plans = config.shared_plans()
        chosen = st.session_state.get(SHARED_PLAN_KEY, param("plan") or next(iter(plans), ""))
        return chosen if chosen in plans else ""
    return (st.session_state.get(PLAN_KEY) or config.plan_path() or "").strip()


def require_store() -> str:
    """The current store URI; stops the page with a message when none is set or it does not exist."""
    uri = store_uri()
    if not uri:
        st.info("No store selected: start with `mixture explore STORE`"
                + ("." if config.sharing() else " or enter a store in the sidebar."))
        st.stop()
    state, _ = queries.store_state(uri)
    if state == "missing":
        st.error(f"Store `{uri}` does not exist. Check the path or URI in the sidebar.")
        st.stop()
    return uri


def require_complete_store() -> tuple[str, StoreArtifact]:
    """(uri, store.json) of a complete store; a building store points to the Live build page, a store of another
    format version stops the page saying how to rebuild it, a store.json that does not match its format stops it
    naming the file and each wrong field."""
    uri = require_store()
    state, _ = queries.store_state(uri)
    if state == "building":
        st.warning(f"Store `{uri}` has no store.json yet: it is still building (or the build failed).")
        st.page_link("views/live.py", label="Watch it on the Live build page")
        st.stop()
    try:
        return uri, queries.store_info(uri)
    except StoreVersionError as exc:
        st.error(f"Store `{code(uri)}` cannot be shown: {exc.refusal}.")
        st.stop()
    except FormatError as exc:
        st.error(f"Store `{code(uri)}` cannot be shown: its store.json does not match its format "
                 f"(`mixture schema --store`).")
        st.code(str(exc), language=None, wrap_lines=True)
        st.stop()


def current_plan() -> PlanView | None:
    """The plan from the sidebar path, or None; a broken plan shows an error and returns None."""
    path = plan_path()
    if not path:
        return None
    try:
        return _load_plan_cached(path)
    except PlanError as exc:
        st.error(f"Plan not loaded: {exc}")
        return None


@st.cache_data(ttl=10, show_spinner=False)
def _load_plan_cached(path: str) -> PlanView:
    return load_plan(path)


def param(name: str, default: str = "") -> str:
    return st.query_params.get(name, default)


def set_param(name: str, value: object | None) -> None:
    if value in (None, ""):
        st.query_params.pop(name, None)
    else:
        st.query_params[name] = str(value)


def document(doc: dict, key: str) -> None:
    """One document: a metadata line and its text as plain text (never HTML), cut at ~900 chars."""
    meta = [doc.get("id"), doc.get("source"), doc.get("content_type"),
            f"{int(doc.get('n_tokens') or 0):,} tokens"]
    if doc.get("quality_score") is not None:
        meta.append(f"quality {float(doc['quality_score']):.3f}")
    st.caption(" · ".join(md(m) for m in meta if m is not None))
    text = str(doc.get("text") or "")
    shown, was_cut = cut_text(text)
    if was_cut and st.toggle(f"show all ({len(text):,} characters)", key=f"all_{key}"):
        shown = text
    st.code(shown, language=None, wrap_lines=True)


def budget_text(budget: ScanBudget) -> str:
    parts = ([f"{budget.max_rows:,} rows"] if budget.max_rows else []) + \
        ([f"{budget.max_seconds:g} s"] if budget.max_seconds else [])
    return " or ".join(parts) or "the last shard"


def scan_note(scan: DocumentScan, budget: ScanBudget) -> str | None:
    """What to tell the user when a scan stopped at its budget (None when it did not)."""
    if scan.stopped == "rows":
        return (f"The scan stopped after {scan.rows_read:,} rows (the limit of {budget.max_rows:,} rows per scan, "
                f"`--scan-rows`): {scan.files_read} of {scan.files} shards read, so the matches come from part of "
                "the store only. Narrow the search with the cluster and quality facets.")
    if scan.stopped == "seconds":
        return (f"The scan stopped after {budget.max_seconds:g} s (the limit per scan, `--scan-seconds`): "
                f"{scan.files_read} of {scan.files} shards read, so the matches come from part of the store only. "
                "Narrow the search with the cluster and quality facets.")
    return None


_SCROLL = """<script>
(() => {{
  const cls = {cls};  // request {nonce}
  let stop = false;
  for (const e of ["wheel", "touchstart", "keydown"]) window.addEventListener(e, () => {{ stop = true; }}, {{once: true}});
  const go = (left) => {{
    if (stop) return;
    const el = document.getElementsByClassName(cls)[0];
    if (el) {{ el.style.scrollMarginTop = "4rem"; el.scrollIntoView({{block: "start"}}); }}  // below the app's header
    if (left > 0) setTimeout(() => go(left - 1), 150);
  }};
  go(12);
}})();
</script>"""


def scroll_into_view(key: str) -> None:
    """Scroll the element made with `key=key` (Streamlit gives it the class st-key-<key>) to the top of the view.
    The script scrolls again for ~2 s while the page lays itself out, and stops at the user's first scroll or key;
    a new request (a counter in the session) makes a new element, so the same target scrolls again."""
    n = st.session_state.get("_scroll_n", 0) + 1
    st.session_state["_scroll_n"] = n
    st.html(_SCROLL.format(cls=json.dumps(f"st-key-{key}"), nonce=n), unsafe_allow_javascript=True)


def overview_style(index_key: str) -> None:
    """Two rules of layout Streamlit has no option for: the index's buttons read as a list (text aligned left, not
    centred), and a Markdown table wider than its panel (the quality grid on a phone) scrolls inside it."""
    st.html(f"<style>.st-key-{index_key} button {{ justify-content: flex-start; text-align: left; }}"
            f" .st-key-{index_key} button p {{ text-align: left; }}"
            " [data-testid='stExpanderDetails'] [data-testid='stMarkdownContainer'] table"
            " { display: block; max-width: 100%; overflow-x: auto; }</style>")


def text_color() -> str:
    """The text colour of the browser's current theme, for the text marks of charts."""
    return charts.text_color(st.context.theme.type)
