"""Store: cluster × quality heatmap, sources, the drop funnel and the content-type mix."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from mixture.explorer import charts, composition, queries, ui
from mixture.explorer.fmt import code, humanize

uri, art = ui.require_complete_store()
names = composition.quality_names(art)
cells = composition.cells_frame(queries.cell_table(uri), art)
st.header("Store")
st.caption(f"`{code(uri)}` · {len(cells)} cells · {humanize(composition.total_tokens(art))} tokens")

st.subheader("Tokens per cell")
st.altair_chart(charts.cell_heatmap(cells, names), width="stretch")

st.subheader("Sources")
src = pd.DataFrame(art.get("sources") or [])
if src.empty:
    st.caption("store.json lists no sources")
else:
    cols = [c for c in ("name", "category", "docs_in", "docs_kept", "tokens_in", "tokens_kept", "bad_input",
                        "filtered", "exact_duplicate_dropped", "fuzzy_duplicate_dropped", "contaminated_dropped",
                        "license", "format") if c in src]
    st.dataframe(src[cols].sort_values("tokens_kept", ascending=False) if "tokens_kept" in src else src[cols],
                 hide_index=True, width="stretch")

st.subheader("Where records went")
c = art.get("counters") or {}
stages, left = [("records in", int(c.get("records_in") or 0))], int(c.get("records_in") or 0)
for key, label in composition.DROP_KEYS.items():
    left -= int(c.get(key) or 0)
    stages.append((f"after {label}", left))
stages.append(("records out", int(c.get("records_out") or 0)))
f1, f2 = st.columns([3, 2])
f1.altair_chart(charts.funnel(stages), width="stretch")
if left != int(c.get("records_out") or 0):
    f1.error(f"records_in minus every drop counter is {left:,}, but records_out is {int(c.get('records_out') or 0):,}: "
             "the store's counters do not reconcile (run `mixture audit`).")
reasons = [{"counter": "filtered", "reason": k, "records": v} for k, v in (art.get("filtered_by_reason") or {}).items()]
reasons += [{"counter": "bad_input", "reason": k, "records": v}
            for k, v in (art.get("bad_input_by_reason") or {}).items()]
if reasons:
    f2.dataframe(pd.DataFrame(reasons), hide_index=True, width="stretch")

st.subheader("Content types")
mix = queries.content_type_mix(uri)
exact = st.toggle("exact counts (scans the n_tokens and content_type columns of every shard)", key="ct_exact")
if exact:
    with st.spinner("scanning the store"):
        mix = queries.content_type_exact(uri)
        mix["share"] = mix.tokens / mix.tokens.sum()
else:
    st.caption("estimated: each cell's tokens split by the content types of its uniformly sampled documents")
if not mix.empty:
    t1, t2 = st.columns([3, 2])
    t1.altair_chart(charts.bar(mix, "tokens", "content_type"), width="stretch")
    t2.dataframe(mix.assign(share=(100 * mix.share).round(2)), hide_index=True, width="stretch")
