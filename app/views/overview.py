"""Overview: a mirror of the published cluster-overview page (headline, cards, cutoffs, index, domain panels)."""

from __future__ import annotations

import streamlit as st

from mixture.explorer import composition, queries, ui
from mixture.explorer.fmt import code, humanize, md
from mixture.explorer.panel import domain_panel
from mixture.store.layout import parse_cell

uri, info = ui.require_complete_store()
plan = ui.current_plan()
names = composition.quality_names(info)
cells = composition.cells_frame(queries.cell_table(uri), info)
domains = composition.domains_frame(cells, info)

st.header(composition.headline(info))
st.caption(f"store `{code(uri)}` · spec {md(info.spec.name)} · tokenizer {md(info.tokenizer)} · "
           f"built {md(info.created)}")

cards = composition.cards(info)
c1, c2, c3, c4 = st.columns(4)
c1.metric("documents", f"{cards.documents:,}")
c2.metric("tokens", humanize(cards.tokens), help=f"{cards.tokens:,} tokens")
c3.metric("sources", f"{cards.sources:,}")
c4.metric("cells", composition.cells_text(cells), help="cells of the domain × quality grid that hold documents")
drop_cols = st.columns(len(cards.drops))
for col, (reason, n) in zip(drop_cols, cards.drops.items(), strict=True):
    col.metric(f"dropped: {reason}", f"{n:,}")

with st.expander("Quality cutoffs: raw score per content type at the calibrated bucket edges", expanded=False):
    cut = composition.cutoffs_frame(info)
    if cut.empty:
        st.caption("store.json has no raw_score_cutoffs")
    else:
        st.table(cut)
    groups = queries.calibration_groups(uri)
    if not groups.empty:
        st.caption("Per (content type, language) group: a group with fewer sample documents than "
                   f"{info.language.group_min_docs} uses its content type's calibration")
        st.dataframe(composition.group_cutoffs_frame(groups, list(info.partition.bucket_edges)))

# --- query parameters: domain, cell, q (search) ------------------------------------------------------------
cell_param = ui.param("cell")
focus_quality = None
domain_param = ui.param("domain")
if cell_param:
    try:
        dc, focus_quality = parse_cell(cell_param)
        domain_param = str(dc)
    except ValueError:
        st.warning(f"Query parameter cell={md(cell_param)} is not a cell name (expected cNNqQ, e.g. c07q3)")
if domain_param and st.session_state.get("_domain_seen") != (domain_param, cell_param):
    st.session_state["_domain_seen"] = (domain_param, cell_param)
    if domain_param.isdigit():
        st.session_state[f"dom_{int(domain_param)}"] = True
if "q" not in st.session_state:
    st.session_state["q"] = ui.param("q")


def _select(domain_id: int) -> None:
    st.session_state[f"dom_{domain_id}"] = True
    ui.set_param("domain", domain_id)
    ui.set_param("cell", None)


def _open_all(ids: list[int], value: bool) -> None:
    for d in ids:
        st.session_state[f"dom_{d}"] = value


st.subheader("Domains")
left, right = st.columns([3, 2])
query = left.text_input("Search labels, top terms and sample text", key="q", placeholder="e.g. meeting, proof")
ui.set_param("q", query)
kind = right.segmented_control("Example documents", ["uniform random", "nearest to centroid"],
                               default="uniform random", key="examples_kind", required=True)
sample_kind = "exemplars" if kind == "nearest to centroid" else "uniform"

shown = composition.filter_domains(domains, query, queries.sample_text_by_cluster(uri) if query else None)
ids = [int(i) for i in shown["id"]]
b1, b2, b3 = st.columns([1, 1, 4])
b1.button("Open all", on_click=_open_all, args=(ids, True), width="stretch")
b2.button("Close all", on_click=_open_all, args=(list(domains["id"]), False), width="stretch")
b3.caption(f"{len(shown)} of {len(domains)} domains" + (f" match “{md(query)}”" if query else ""))

grid = st.columns(3)
for i, row in enumerate(shown.to_dict("records")):
    grid[i % 3].button(md(composition.index_entry(row)), key=f"idx_{row['id']}", on_click=_select,
                       args=(int(row["id"]),), type="tertiary", wrap=True)

st.divider()
sources = queries.source_mix(uri)
languages = queries.language_mix(uri)
examples = queries.examples_by_cell(uri, sample_kind, per_cell=2)
for row in shown.to_dict("records"):
    d = int(row["id"])
    exp = st.expander(md(composition.index_entry(row)), key=f"dom_{d}", on_change="rerun")
    if exp.open:
        with exp:
            domain_panel(row, cells[cells.cluster == d], names, sources, examples, plan,
                         focus_quality if domain_param == str(d) else None, key=f"d{d}",
                         languages=languages[languages.cluster == d])
