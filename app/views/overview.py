"""Overview: a mirror of the published cluster-overview page (headline, cards, cutoffs, index, domain panels)."""

from __future__ import annotations

import streamlit as st

from mixture.composition import figures as composition
from mixture.composition import numbers
from mixture.explorer import queries, ui
from mixture.explorer.fmt import code, display, md, terms_md
from mixture.explorer.panel import bucket_key, domain_panel, panels_md

uri, info = ui.require_complete_store()
plan = ui.current_plan()
names = composition.quality_names(info)
labels = queries.domain_labels(uri)
cells = composition.cells_frame(queries.cell_table(uri), info, labels)
domains = composition.domains_frame(cells, info, labels)
ids = [int(i) for i in domains["id"]]

st.header(composition.headline(info))
if note := composition.language_note(info):
    st.warning(note)
st.caption(f"store `{code(uri)}` · spec {md(info.spec.name)} · tokenizer {md(info.tokenizer)} · "
           f"built {md(info.created)}")

# --- query parameters: domain, cell (open, pick the bucket and scroll to it), q (search) ----------------------
link = composition.resolve_link(ui.param("domain"), ui.param("cell"), ids, len(names), info.partition.k)
if link.problem:
    st.warning(link.problem)
if link.domain is not None and st.session_state.get("_link_seen") != link.params:
    st.session_state["_link_seen"] = link.params  # a shared link opens its panel once, then the user is free
    st.session_state[f"dom_{link.domain}"] = True
    if link.quality is not None:
        st.session_state[bucket_key(link.domain)] = link.quality
    st.session_state["_scroll_to"] = bucket_key(link.domain) if link.quality is not None else f"dom_{link.domain}"
if "q" not in st.session_state:
    st.session_state["q"] = ui.param("q")

cards = composition.cards(info)
cards_grid = st.grid("auto", min_column_width=112, gap="xsmall", dense=True)
with cards_grid:
    for card in composition.card_texts(info, cells):  # the static page's cards, written by the same function
        if card.label == "cells":
            with cards_grid.cell(column_span=3):  # '196 non-empty of 200' needs the room
                st.metric(card.label, card.value, help=md(card.detail) or None)
        else:
            st.metric(card.label, card.value, help=md(card.detail) or None)
st.caption("dropped: " + " · ".join(f"{md(reason)} **{n:,}**" for reason, n in cards.drops.items()))

with st.expander("Quality cutoffs: raw score per content type at the calibrated bucket edges", expanded=False):
    cut = composition.cutoffs_frame(info)
    if cut.empty:
        st.caption("store.json has no raw_score_cutoffs")
    else:
        st.table(display(cut))  # 0.983, as the static page writes it
    groups = queries.calibration_groups(uri)
    if not groups.empty:
        st.caption("Per (content type, language) group: a group with fewer sample documents than "
                   f"{info.language.group_min_docs} uses its content type's calibration")
        st.dataframe(display(composition.group_cutoffs_frame(groups, list(info.partition.bucket_edges))))


def _select(domain_id: int) -> None:
    st.session_state[f"dom_{domain_id}"] = True
    ui.set_param("domain", domain_id)
    ui.set_param("cell", None)
    st.session_state["_link_seen"] = (str(domain_id), "")
    st.session_state["_scroll_to"] = f"dom_{domain_id}"


def _open_all(ids: list[int], value: bool) -> None:
    for d in ids:
        st.session_state[f"dom_{d}"] = value


def _entry(row: dict) -> str:
    """'26 · `self`, `assertEqual`, `def` · 7.52% · 1.74T' (Markdown), and where a search matched it."""
    entry = f"{row['id']} · {terms_md(row['name'].terms)} · {numbers.pct(row['share'])} · {numbers.tokens(row['tokens'])}"
    return entry + (f" · *matched in {md(row['why'])}*" if row.get("why") else "")


st.subheader("Domains")
left, right = st.columns([3, 2])
query = left.text_input("Search labels, top terms and sample text", key="q", placeholder="e.g. meeting, proof")
ui.set_param("q", query)
kind = right.segmented_control("Example documents", ["uniform random", "nearest to centroid"],
                               default="uniform random", key="examples_kind", required=True)
sample_kind = "exemplars" if kind == "nearest to centroid" else "uniform"

shown = composition.filter_domains(domains, query, queries.search_index(uri) if query else None)
shown_ids = [int(i) for i in shown["id"]]
with st.container(horizontal=True, vertical_alignment="center"):
    st.button("Open all", on_click=_open_all, args=(shown_ids, True))
    st.button("Close all", on_click=_open_all, args=(ids, False))
    st.caption(f"{len(shown)} of {len(domains)} domains" + (f" match “{md(query)}”" if query else ""))

ui.overview_style("domain_index")
with st.grid("auto", min_column_width=250, gap=None, key="domain_index"):  # row by row: 0, 1, 2 … at any width
    for row in shown.to_dict("records"):
        st.button(_entry(row), key=f"idx_{row['id']}", on_click=_select, args=(int(row["id"]),), type="tertiary",
                  wrap=True)



@st.cache_data(show_spinner=False, max_entries=8)
def _panel_texts(uri: str, stamp: str, plan_key: str, _plan) -> dict[int, str]:
    """Every panel's Markdown block, once per store version and plan."""
    return panels_md(domains, cells, names, _plan, queries.language_mix(uri))


st.divider()
loaded: dict[str, object] = {}  # what an open panel needs, read once the first panel opens (not on first load)
for row in shown.to_dict("records"):
    d = int(row["id"])
    exp = st.expander(_entry({**row, "why": ""}), key=f"dom_{d}", on_change="rerun")
    if exp.open:  # a closed panel renders nothing
        if not loaded:
            loaded.update(sources=queries.source_mix(uri),
                          examples=queries.examples_by_cell(uri, sample_kind, per_cell=2),
                          texts=_panel_texts(uri, queries.store_state(uri)[1],
                                             f"{ui.plan_path()}:{plan.plan.plan_id if plan else ''}", plan))
        with exp:
            domain_panel(loaded["texts"][d], d, names, loaded["sources"], loaded["examples"], key=f"d{d}")
target = st.session_state.pop("_scroll_to", None)
if target:
    ui.scroll_into_view(target)
