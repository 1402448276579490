"""Diff: two stores (or two plans) side by side, per-cell deltas as a diverging heatmap and a sortable table."""

from __future__ import annotations

import streamlit as st

from mixture.composition import numbers
from mixture.explorer import charts, config, diffing, queries, ui
from mixture.explorer.fmt import code, display
from mixture.explorer.plan_view import PlanError, load_plan

st.header("Diff")
mode = st.segmented_control("Compare", ["two stores", "two plans"], default="two stores", key="diff_mode",
                            required=True)


WRITE = {"tokens": numbers.tokens, "docs": numbers.count, "exposure": numbers.epochs}  # any other: a phase's weight


def show(df, value: str) -> None:
    counts = df.status.value_counts().to_dict()
    with st.grid("auto", min_column_width=120, gap="xsmall"):  # side by side, two to a row on a phone
        for s in ("added", "removed", "changed", "same"):
            st.metric(f"cells {s}", int(counts.get(s, 0)))
    plotted = df[df.cluster >= 0]
    if not plotted.empty:
        st.altair_chart(charts.diverging_heatmap(plotted, "delta", title=f"{value}: B − A"),
                        width="stretch")
    write = WRITE.get(value, numbers.weight)
    st.dataframe(display(df.drop(columns=["cluster", "quality"]), **{f"{value} A": write, f"{value} B": write},
                         delta=write, **{"delta %": lambda v: numbers.pct(v / 100)}), hide_index=True, width="stretch")


def pick(col, label: str, options: list[str], default: str, param: str, key: str) -> str:
    """Sharing mode: one of the shared stores or plans (never a path box); `?store_a=` etc. choose it."""
    wanted = ui.param(param) or default
    choice = col.selectbox(label, options, index=options.index(wanted) if wanted in options else None, key=key)
    ui.set_param(param, choice)
    return choice if choice in options else ""


shared = config.sharing()
if mode == "two stores":
    a_col, b_col = st.columns(2)
    if shared:
        stores = config.shared_stores()
        a_uri = pick(a_col, "Store A", stores, ui.store_uri(), "store_a", "diff_a")
        b_uri = pick(b_col, "Store B", stores, config.second_store_uri() or stores[-1], "store_b", "diff_b")
    else:
        a_uri = a_col.text_input("Store A", value=ui.store_uri(), key="diff_a")
        b_uri = b_col.text_input("Store B", value=config.second_store_uri() or "", key="diff_b")
    value = st.radio("Measure", ["tokens", "docs"], horizontal=True, key="diff_value")
    if not (a_uri and b_uri):
        st.info("Choose two of the shared stores to compare." if shared else
                "Enter two stores to compare (e.g. the same spec built twice, or before/after a change).")
        st.stop()
    tables = []
    for label, uri in (("A", a_uri), ("B", b_uri)):
        state, _ = queries.store_state(uri)
        if state != "complete":
            st.error(f"Store {label} `{code(uri)}` is {state}: it needs a store.json to be compared.")
            st.stop()
        tables.append(queries.cell_table(uri))
    show(diffing.store_diff(tables[0], tables[1], value), value)
else:
    a_col, b_col = st.columns(2)
    if shared:
        plans = config.shared_plans()
        a_path = pick(a_col, "Plan A", plans, ui.plan_path(), "plan_a", "diff_plan_a")
        b_path = pick(b_col, "Plan B", plans, plans[-1] if len(plans) > 1 else "", "plan_b", "diff_plan_b")
    else:
        a_path = a_col.text_input("Plan A", value=ui.plan_path(), key="diff_plan_a")
        b_path = b_col.text_input("Plan B", value="", key="diff_plan_b")
    if not (a_path and b_path):
        st.info("Choose two of the shared plans to compare." if shared else "Enter two plan.json files to compare.")
        st.stop()
    try:
        pa_, pb_ = load_plan(a_path), load_plan(b_path)
    except PlanError as exc:
        st.error(str(exc))
        st.stop()
    options = ["exposure"] + [f"w {p.name}" for p in pa_.phases]
    value = st.radio("Measure", options, horizontal=True, key="diff_plan_value")
    show(diffing.plan_diff(pa_, pb_, value), value)
