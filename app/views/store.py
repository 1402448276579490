"""Store: cluster × quality heatmap, sources, the drop funnel and the content-type mix."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from mixture.composition import figures as composition
from mixture.composition import numbers
from mixture.explorer import charts, queries, sharing, ui
from mixture.explorer.fmt import code, display, humanize
from mixture.store.drops import COUNTERS, REASONS

uri, info = ui.require_complete_store()
names = composition.quality_names(info)
cells = composition.cells_frame(queries.cell_table(uri), info, queries.domain_labels(uri))
st.header("Store")
st.caption(f"`{code(uri)}` · {composition.cells_text(cells)} cells · {humanize(composition.total_tokens(info))} tokens")

st.subheader("Tokens per cell")
st.altair_chart(charts.cell_heatmap(cells, names), width="stretch")

st.subheader("Sources")
src = pd.DataFrame([s.model_dump() for s in info.sources])
if src.empty:
    st.caption("store.json lists no sources")
else:
    src = src.sort_values("tokens_kept", ascending=False)
    cols = ["name", "category", "docs_in", "docs_kept", "tokens_in", "tokens_kept", "license", "format"]
    st.dataframe(display(src[cols], docs_in=numbers.count, docs_kept=numbers.count, tokens_in=numbers.tokens,
                         tokens_kept=numbers.tokens), hide_index=True, width="stretch")
    st.caption("Dropped per source, by reason")  # a second table: one with every column did not fit the page
    st.dataframe(display(src[["name", *COUNTERS]], **dict.fromkeys(COUNTERS, numbers.count)), hide_index=True,
                 width="stretch", column_config={r.counter: st.column_config.Column(r.label, help=r.description)
                                                 for r in REASONS})

st.subheader("Where records went")
c = info.counters
stages, left = [("records in", c.records_in)], c.records_in
for key, label in composition.DROP_KEYS.items():
    left -= c.dropped()[key]
    stages.append((f"after {label}", left))
stages.append(("records out", c.records_out))
f1, f2 = st.columns([3, 2])
f1.altair_chart(charts.funnel(stages, ui.text_color()), width="stretch")
if left != c.records_out:
    f1.error(f"records_in minus every drop counter is {left:,}, but records_out is {c.records_out:,}: "
             "the store's counters do not reconcile (run `mixture audit`).")
reasons = [{"counter": r.counter, "reason": k, "records": v}  # the by-reason breakdowns of store.json
           for r in REASONS if r.breakdown for k, v in info.breakdown(r.breakdown[1]).items()]
if reasons:
    f2.dataframe(display(pd.DataFrame(reasons), records=numbers.count), hide_index=True, width="stretch")

st.subheader("Content types")
mix = queries.content_type_mix(uri)
exact = st.toggle("exact counts (scans the n_tokens and content_type columns of every shard)", key="ct_exact")
if exact:
    with sharing.one_scan(), st.spinner("scanning the store"):
        mix = queries.content_type_exact(uri)
        mix["share"] = mix.tokens / mix.tokens.sum()
else:
    st.caption("estimated: each cell's tokens split by the content types of its uniformly sampled documents")
if not mix.empty:
    t1, t2 = st.columns([3, 2])
    t1.altair_chart(charts.bar(mix, "tokens", "content_type"), width="stretch")
    t2.dataframe(display(mix, tokens=numbers.count if exact else numbers.tokens, share=numbers.pct), hide_index=True,
                 width="stretch")
