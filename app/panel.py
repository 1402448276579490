"""One domain panel of the overview: language mix, quality grid, enrichment, source mix, example documents, plan
weights."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from mixture.explorer import ui
from mixture.explorer.composition import language_line
from mixture.explorer.fmt import enrichment_text, humanize, md, pct
from mixture.explorer.plan_view import PlanView

TAG_COLORS = {"high": "green", "medium": "orange", "low": "red"}


def quality_grid(cells: pd.DataFrame, names: list[str], plan: PlanView | None) -> None:
    """Five columns: share of the domain's tokens, a bar, enrichment ×, tokens and documents (+ plan)."""
    cols = st.columns(len(names))
    for col, row in zip(cols, cells.sort_values("quality").itertuples(), strict=False):
        with col:
            st.markdown(f"**Q{row.quality} {md(names[row.quality])}**")
            st.metric("share of domain", pct(row.share_in_domain), label_visibility="collapsed")
            st.progress(min(1.0, max(0.0, float(row.share_in_domain))))
            st.markdown(f"enrichment **{enrichment_text(row.enrichment)}**",
                        help="share of this bucket inside the domain ÷ the bucket's share of the corpus")
            st.caption(f"{humanize(row.tokens)} tokens · {row.docs:,} docs")
            if plan is not None:
                ws = " · ".join(f"{md(p.name)} {p.weights.get(row.cell, 0.0):.4g}" for p in plan.phases)
                epochs = plan.exposure.get(row.cell)
                flag = " ⚠️ over cap" if epochs is not None and epochs > plan.max_epochs else ""
                st.caption(f"weight {ws} · {'–' if epochs is None else f'{epochs:.2f}'} epochs{flag}")


def cell_details(cluster: int, quality: int, sources: pd.DataFrame, examples: list[dict], key: str) -> None:
    """Source composition of one cell and its example documents."""
    mix = sources[(sources.cluster == cluster) & (sources.quality == quality)]
    if mix.empty:
        st.caption("no documents")
    else:
        note = " (estimated from the uniform sample)" if bool(mix.estimated.iloc[0]) else ""
        st.caption(f"Source composition{note}")
        st.dataframe(pd.DataFrame({"source": mix.source, "share": (100 * mix.share).round(1),
                                   "tokens": mix.tokens.round().astype("int64")}),
                     hide_index=True, column_config={"share": st.column_config.ProgressColumn(
                         "share %", min_value=0, max_value=100, format="%.1f%%")})
    for i, doc in enumerate(examples):
        ui.document(doc, key=f"{key}_{i}")


def domain_panel(domain: pd.Series, cells: pd.DataFrame, names: list[str], sources: pd.DataFrame,
                 examples: dict[tuple[int, int], list[dict]], plan: PlanView | None,
                 default_quality: int | None, key: str, languages: pd.DataFrame | None = None) -> None:
    d = int(domain["id"])
    st.markdown(f"**{d} · {md(domain['label'])}** — {humanize(domain['tokens'])} tokens, "
                f"{int(domain['docs']):,} docs, {pct(domain['share'])} of the corpus")
    if domain["summary"]:
        st.caption(md(domain["summary"]))
    tag = domain.get("confidence_tag")
    if tag or domain.get("confidence") is not None:
        conf = domain.get("confidence")
        text = f"label confidence: {tag or ''}" + (f" ({float(conf):.2f})" if conf is not None else "")
        st.badge(text, color=TAG_COLORS.get(str(tag).lower(), "gray"))
    if languages is not None and not languages.empty:
        st.caption(f"languages: {language_line(languages)}",
                   help="share of the domain's tokens per language (store.json `language.by_cluster`)")
    quality_grid(cells, names, plan)
    labels = [f"Q{q} {names[q]}" for q in range(len(names))]
    default = labels[default_quality] if default_quality is not None and 0 <= default_quality < len(labels) else None
    tabs = st.tabs(labels, default=default)
    for q, tab in enumerate(tabs):
        with tab:
            cell_details(d, q, sources, examples.get((d, q), []), key=f"{key}_q{q}")
