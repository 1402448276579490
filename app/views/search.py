"""Search: full text over the sampled documents (or, on request, a scan of the store) with facets and lineage."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from mixture.composition import figures as composition
from mixture.composition import numbers
from mixture.explorer import config, lineage, queries, sharing, ui
from mixture.explorer.fmt import code, display, md, score
from mixture.store import drops
from mixture.store.layout import cell_name

uri, info = ui.require_complete_store()
plan = ui.current_plan()
k = info.partition.k
names = composition.quality_names(info)
labels = {c: lab.text for c, lab in queries.domain_labels(uri).items()}
st.header("Search")

sampled = pd.concat([queries.samples(uri, "uniform").assign(sample="uniform"),
                     queries.samples(uri, "exemplars").assign(sample="exemplar")], ignore_index=True)
sampled = sampled.drop_duplicates("id", keep="first")

if "search_q" not in st.session_state:
    st.session_state["search_q"] = ui.param("q")
text = st.text_input("Text (case-insensitive substring of the text, id or source)", key="search_q")
ui.set_param("q", text)
f1, f2, f3, f4 = st.columns(4)
sources = f1.multiselect("source", sorted(s.name for s in info.sources) or sorted(sampled.source.unique()))
clusters = f2.multiselect("cluster", sorted(labels), format_func=lambda c: f"{c} · {labels[c]}")
qualities = f3.multiselect("quality", list(range(len(names))), format_func=lambda q: f"Q{q} {names[q]}")
ctypes = f4.multiselect("content type", sorted(set(info.raw_score_cutoffs) | set(sampled.content_type)))


def facet(df: pd.DataFrame) -> pd.DataFrame:
    if sources:
        df = df[df.source.isin(sources)]
    if clusters:
        df = df[df.cluster.isin(clusters)]
    if qualities:
        df = df[df.quality.isin(qualities)]
    if ctypes:
        df = df[df.content_type.isin(ctypes)]
    return df


hits = facet(sampled)
if text:
    needle = text.lower()
    hits = hits[hits.text.str.lower().str.contains(needle, regex=False)
                | hits.id.str.lower().str.contains(needle, regex=False)
                | hits.source.str.lower().str.contains(needle, regex=False)]
scope = "sampled documents"
budget = config.scan_budget()
if st.button("Scan the whole store", help="reads every shard of the selected cells: slow on a big store; "
             f"stops after {ui.budget_text(budget)}"):
    with sharing.one_scan():
        bar = st.progress(0.0, text="scanning shards")
        cells = [(c, q) for c in (clusters or sorted(labels)) for q in (qualities or range(len(names)))]
        scan = queries.scan_documents(uri, text=text, sources=sources, content_types=ctypes, cells=cells,
                                      budget=budget, progress=lambda i, n: bar.progress(i / max(n, 1),
                                                                                       text=f"shard {i} of {n}"))
    st.session_state["scan_hits"] = scan.hits.assign(sample="scan")
    st.session_state["scan_note"] = ui.scan_note(scan, budget)
    hits, scope = st.session_state["scan_hits"], "documents in the store (scan)"
elif st.session_state.get("scan_hits") is not None and st.session_state.get("scan_key") == (text, tuple(sources)):
    hits, scope = st.session_state["scan_hits"], "documents in the store (scan)"
else:
    st.session_state["scan_note"] = None
st.session_state["scan_key"] = (text, tuple(sources))
if st.session_state.get("scan_note"):
    st.warning(st.session_state["scan_note"])

hits = hits.assign(cell=[cell_name(int(c), int(q), k) for c, q in zip(hits.cluster, hits.quality, strict=True)])
st.caption(f"{len(hits):,} {scope} match")
view = hits[["id", "source", "cell", "content_type", "quality_score", "n_tokens", "sample"]].reset_index(drop=True)
event = st.dataframe(display(view, n_tokens=numbers.count, quality_score=score), hide_index=True, width="stretch", on_select="rerun",
                     selection_mode="single-row", key="search_hits",
                     column_config={"quality_score": st.column_config.NumberColumn(format="%.3f")})
rows = event.selection.rows if event is not None and hasattr(event, "selection") else []
if rows:
    ui.set_param("doc", view.id.iloc[rows[0]])

st.subheader("Lineage")
doc_id = st.text_input("Document id", value=ui.param("doc"), key=f"lineage_id_{ui.param('doc')}")
if not doc_id:
    st.caption("select a hit above or enter a document id")
    st.stop()
ui.set_param("doc", doc_id)
match = hits[hits.id == doc_id]
if match.empty:
    match = sampled[sampled.id == doc_id]
if match.empty:  # a kept document opens directly: the shards' footers say which row groups may hold its id
    match = queries.find_document(uri, doc_id)
doc = match.iloc[0].to_dict() if not match.empty else None
dropped = queries.dropped(uri)
dec = lineage.decisions(doc, doc_id, dropped, queries.quarantine(uri), info)
if doc is None and not dec:
    st.warning(f"`{code(doc_id)}` is in no finished shard of the store, nor in `_dropped/` or `_quarantine/`: "
               "check the id (ids are case-sensitive).")
    st.stop()


def lineage_link(other: str, why: str) -> None:
    """A link to another document's lineage (this page with `?doc=`)."""
    st.page_link("views/search.py", label=f"{why} `{code(other)}`", icon=":material/link:",
                 query_params={"page": "search", "doc": other})


for d in dec:
    if d["decision"] == "kept":
        st.success(f"**Kept** in cell `{code(d['where'])}`")
    else:
        reason = drops.BY_NAME[d["reason"]].label if d["reason"] in drops.BY_NAME else d["reason"]
        st.error(f"**{md(d['decision'].capitalize())}** · {md(reason)} · from `{code(d['where'])}`")
        if d["detail"]:
            st.markdown(md(d["detail"]))  # in full: nothing is cut
        other = lineage.twin(str(d["reason"]), str(d["detail"]))
        if other:
            lineage_link(other, "The kept document it duplicates:")
gone = lineage.dropped_fields(doc_id, dropped) if doc is None else None
if gone is not None:  # what the store keeps of a dropped document: its own fields and the head of its text
    st.dataframe(gone, hide_index=True, width="stretch")
    head = lineage.dropped_head(doc_id, dropped)
    if head:
        st.code(head, language=None, wrap_lines=True)
if doc is not None:
    st.markdown("**Checks it passed**")
    st.table(pd.DataFrame([{k: md(v) for k, v in c.items()} for c in lineage.checks(doc, info, dropped)])
             .set_index("check"))
    for reason, ids in lineage.duplicates_of(doc_id, dropped).items():
        with st.expander(f"{len(ids)} {'exact' if reason == 'exact_duplicate' else 'near'} duplicates of it "
                         "dropped"):
            for other in ids:
                lineage_link(other, "Dropped duplicate:")
    left, right = st.columns([2, 3])
    with left:
        table = lineage.fields(doc, info, labels=queries.domain_labels(uri))
        st.dataframe(table, hide_index=True, width="stretch", height=35 * (len(table) + 1) + 3)  # every row shows
    with right:
        cell = cell_name(int(doc["cluster"]), int(doc["quality"]), k)
        st.markdown(f"**Phases drawing from {cell}**")
        ph = lineage.phases_drawing(plan, cell)
        if plan is None:
            st.caption("load a plan to see which phases draw this cell")
        elif ph.empty:
            st.caption("no phase of the plan draws this cell")
        else:
            st.dataframe(ph, hide_index=True, width="stretch")
    ui.document(doc, key="lineage_doc")
