"""Map: clusters in 2-D (size by tokens, colour by quality mix); clicking a domain opens it in the overview."""

from __future__ import annotations

import altair as alt
import streamlit as st

from mixture.composition import figures as composition
from mixture.composition import numbers
from mixture.explorer import charts, projection, queries, ui
from mixture.explorer.fmt import display

uri, info = ui.require_complete_store()
names = composition.quality_names(info)
labels = queries.domain_labels(uri)
cells = composition.cells_frame(queries.cell_table(uri), info, labels)
domains = composition.domains_frame(cells, info, labels)
st.header("Map")


@st.cache_data(show_spinner="projecting clusters", max_entries=8)
def _project(uri: str, stamp: str):
    return projection.project([int(i) for i in domains["id"]], queries.centroids(uri), queries.samples(uri),
                              doc_vectors=queries.sample_vectors(uri))


points, docs, method = _project(uri, queries.store_state(uri)[1])
st.caption(method)
mix = cells.pivot_table(index="cluster", columns="quality", values="share_in_domain", fill_value=0.0)
points = points.merge(domains[["id", "label", "tokens", "docs", "share"]], on="id")
points["mean_quality"] = [float(sum(q * mix.loc[i, q] for q in mix.columns)) for i in points.id]
points["share %"] = 100 * points.share
points["quality mix"] = [" · ".join(f"Q{q} {100 * mix.loc[i, q]:.0f}%" for q in mix.columns) for i in points.id]
chart = charts.domain_map(points, ui.text_color())
show_docs = not docs.empty and st.toggle("show sampled documents", key="map_docs")
if show_docs:
    chart = alt.layer(alt.Chart(docs).mark_point(size=12, opacity=0.35, color="#888").encode(
        x="x:Q", y="y:Q", tooltip=["id:N", "cluster:Q"]), chart)
event = st.altair_chart(chart, width="stretch", on_select="rerun", key="map_chart")
selected = []
if event is not None and hasattr(event, "selection"):
    selected = [p.get("id") for p in (event.selection.get("domain") or []) if p.get("id") is not None]
if selected:
    st.switch_page("views/overview.py", query_params={"domain": str(int(selected[0]))})
st.dataframe(display(points[["id", "label", "tokens", "docs", "share %", "mean_quality", "quality mix"]],
                     tokens=numbers.tokens, docs=numbers.count, mean_quality=lambda v: f"{v:.2f}",
                     **{"share %": lambda v: numbers.pct(v / 100)}), hide_index=True, width="stretch")
