"""Live build: a store still building: stages done/running, per-cell rows and tokens so far, auto-refresh."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from mixture.composition import numbers
from mixture.explorer import build_state, ui
from mixture.explorer.fmt import code, display, md

uri = ui.require_store()
st.header("Live build")
finished = build_state.fresh_reader(uri).is_complete  # a finished store does not change: nothing to refresh
c1, c2 = st.columns([1, 3])
auto = c1.toggle("auto-refresh", value=not finished, key="live_auto", disabled=finished,
                 help="off: the store is complete" if finished else None) and not finished
every = c2.slider("every (seconds)", 2, 30, 3, key="live_every", disabled=not auto)


@st.fragment(run_every=every if auto else None)
def live() -> None:
    reader = build_state.fresh_reader(uri)
    complete = reader.is_complete
    if complete and not finished:
        st.rerun(scope="app")  # the build finished while the page refreshed: rerun the page to stop refreshing
    if complete:
        st.success(f"`{code(uri)}` is complete (store.json written). The other pages show it.")
    else:
        lock = build_state.lock_info(reader)
        if lock:
            st.info("Building: " + " · ".join(f"{md(k)} {md(v)}" for k, v in lock.items()))
        else:
            st.warning("No store.json and no build lock: the build is not running (finished with an error, "
                       "or stopped). Rerun `mixture build` to resume; finished tasks are skipped.")
    st.subheader("Stages")
    stages = build_state.stages(reader)
    if stages.empty:
        st.caption("no `_build/<stage>/` folders yet")
    else:
        for row in stages.itertuples():
            frac = (row.completed / row.tasks) if row.tasks else 0.0
            st.progress(min(1.0, frac), text=f"{row.stage}: {row.completed}/{row.tasks or '?'} tasks · {row.status}")
    cells = build_state.cells(reader)
    counts = build_state.side_counts(reader)
    with st.grid("auto", min_column_width=150, gap="xsmall"):  # each figure gets room: none is cut
        st.metric("cells with data", len(cells))
        st.metric("rows so far", f"{int(cells.rows.sum()) if len(cells) else 0:,}")
        st.metric("tokens so far", numbers.tokens(int(cells.tokens.sum()) if len(cells) else 0),
                  help=f"{int(cells.tokens.sum()) if len(cells) else 0:,} tokens")
        for label, n in counts.items():
            st.metric(label.replace("_", " "), f"{n:,}")
    st.subheader("Per cell so far")
    if cells.empty:
        st.caption("no document files yet")
    else:
        st.dataframe(display(cells.assign(cell=[f"c{c:02d}q{q}" for c, q in zip(cells.cluster, cells.quality,
                                                                                  strict=True)])
                             [["cell", "files", "listed", "rows", "tokens", "unreadable"]], tokens=numbers.tokens),
                     hide_index=True,
                     width="stretch",
                     column_config={"listed": st.column_config.NumberColumn(help="files its ledger lists")})
    st.caption(f"refreshed {time.strftime('%H:%M:%S')}" + (f", every {every} s" if auto else ""))
    st.session_state["live_snapshot"] = pd.DataFrame(cells).to_dict("list")


live()
