"""Mixture: per-phase weights and allocations, exposure against the cap, warnings, ladder, repaired plan."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from mixture.composition import numbers
from mixture.explorer import charts, queries, ui
from mixture.explorer.fmt import code, display, humanize, md
from mixture.explorer.plan_view import PlanView
from mixture.store.formats import FormatError

st.header("Mixture")
plan = ui.current_plan()
if plan is None:
    st.info("No plan loaded: start with `mixture explore STORE --plan plan.json` or enter a plan path in the sidebar.")
    st.stop()


def summary(p: PlanView) -> None:
    with st.grid("auto", min_column_width=150, gap="xsmall"):  # side by side, two to a row on a phone
        st.metric("phases", len(p.phases), help=" · ".join(f"{md(ph.name)}: {humanize(ph.tokens)}" for ph in p.phases))
        st.metric("total budget", humanize(p.total_tokens))
        peak = max(p.exposure.values(), default=0.0)
        st.metric("peak exposure (epochs)", numbers.epochs(peak))
        st.metric("cells over the cap", len(p.over_cap()), help=f"cap: {p.max_epochs:g} epochs")


def over_cap_list(p: PlanView, key: str) -> None:
    over = p.over_cap()
    if not over:
        st.success(f"No cell is over the cap of {p.max_epochs:g} epochs.")  # and no empty table under it
        return
    st.error(f"{len(over)} cells over the cap of {p.max_epochs:g} epochs: "
             + ", ".join(f"{c} ({p.exposure[c]:.2f})" for c in over))
    st.dataframe(display(pd.DataFrame({"cell": over, "exposure": [p.exposure[c] for c in over]}),
                         exposure=numbers.epochs), hide_index=True, key=f"overcap_{key}")


summary(plan)
over_cap_list(plan, "plan")

uri = ui.store_uri()
try:
    store = queries.store_info(uri) if uri and queries.store_state(uri)[0] == "complete" else None
except FormatError as exc:
    where, what = exc.problems[0]
    st.warning(f"The plan is not compared with the store `{code(uri)}`: its store.json does not match its format "
               f"({md(f'{where}: {what}' if where else what)}; `mixture audit` lists every wrong field).")
    store = None
if store is not None:
    store_cells = {c.cell: c.tokens for c in store.cells}
    missing = sorted(set(plan.cells) - set(store_cells))
    changed = sorted(c for c, n in plan.cell_tokens.items() if c in store_cells and int(n) != store_cells[c])
    if missing or changed:
        st.warning(f"The plan does not match the store `{code(uri)}`: {len(missing)} plan cells are not in the store"
                   + (f" ({', '.join(missing[:10])})" if missing else "")
                   + f"; {len(changed)} cells changed size" + (f" ({', '.join(changed[:10])})" if changed else "")
                   + ". Re-plan against this store before training.")

st.subheader("Exposure per cell")
frame = plan.frame()
st.altair_chart(charts.exposure_bars(frame, plan.max_epochs), width="stretch")

st.subheader("Warnings")
if plan.plan.warnings:
    for w in plan.plan.warnings:
        st.warning(md(f"[{w.code}] {w.message}"))
        if len(w.cells) > sum(c in w.message for c in w.cells):  # the message lists some and says "… (+69)"
            with st.expander(f"All {len(w.cells)} cells of this warning"):
                st.markdown(", ".join(f"`{code(c)}`" for c in w.cells))
else:
    st.caption("the plan carries no warnings")

st.subheader("Weights and allocated tokens per phase")
per_phase = {f"{kind} {p.name}": fmt for p in plan.phases
             for kind, fmt in (("w", numbers.weight), ("tokens", numbers.tokens))}
st.dataframe(display(frame.sort_values("exposure", ascending=False), available=numbers.tokens,
                     exposure=numbers.epochs, **per_phase), hide_index=True, width="stretch")

st.subheader("Scaling ladder")
ladder = plan.ladder_frame()
if ladder.empty:
    st.caption("the plan has no ladder")
else:
    st.dataframe(display(ladder, tokens=numbers.tokens, scale=numbers.weight), hide_index=True, width="stretch",
                 column_config={"max exposure change": st.column_config.NumberColumn(format="%.3f")})
    if "cells cut to zero" in ladder and int(ladder["cells cut to zero"].sum()):
        st.warning("Simulated epoching cuts some cells to zero documents in a ladder run (⌊N·X/T⌋ = 0): "
                   "those runs would crash on an empty dataset.")

if plan.repaired is not None:
    st.subheader("Repaired plan beside the original")
    left, right = st.columns(2)
    with left:
        st.markdown("**original**")
        summary(plan)
        st.altair_chart(charts.exposure_bars(frame, plan.max_epochs), width="stretch")
    with right:
        st.markdown("**repaired**")
        summary(plan.repaired)
        rep = plan.repaired.frame()
        st.altair_chart(charts.exposure_bars(rep, plan.repaired.max_epochs), width="stretch")
        over_cap_list(plan.repaired, "repaired")
    both = frame[["cell", "exposure"]].merge(rep[["cell", "exposure"]], on="cell", how="outer",
                                             suffixes=(" original", " repaired"))
    both["change"] = both["exposure repaired"] - both["exposure original"]
    st.dataframe(display(both.sort_values("change"), **{"exposure original": numbers.epochs,
                                                         "exposure repaired": numbers.epochs,
                                                         "change": lambda v: numbers.DASH if pd.isna(v) else f"{v:+.2f}"}),
                 hide_index=True, width="stretch")
