"""One domain panel of the overview, light enough that all 40 open at once render quickly: one Markdown block (label,
the other top terms, tokens and documents, label confidence, languages, the Q0–Q4 shares as one stacked bar (an SVG
image) and the quality grid as a table) and a bucket picker; a bucket's sources and example documents (the heavy
part: a table and code blocks) render only once it is picked."""

from __future__ import annotations

import base64
from html import escape

import pandas as pd
import streamlit as st

from mixture.composition import numbers
from mixture.composition.figures import language_line
from mixture.explorer import ui
from mixture.explorer.fmt import display, md, terms_md
from mixture.explorer.plan_view import PlanView

QUALITY_COLORS = ["#d73027", "#fc8d59", "#e8c547", "#91cf60", "#1a9850"]  # the static page's Q0..Q4 colours
_INK = ["#ffffff", "#000000", "#000000", "#000000", "#ffffff"]  # text readable on each colour, in either theme
BAR_WIDTH, BAR_HEIGHT = 560, 24  # pixels; narrower screens scale the image down
_LABEL_MIN_WIDTH = 44  # pixels a segment needs for its 'Q3 41%'


def stacked_bar_svg(shares: list[float], names: list[str]) -> str:
    """The domain's Q0–Q4 token shares as one stacked bar (SVG), each segment labelled 'Q3 41%' where it is wide
    enough and named in its <title>. Holds no store text but the bucket names, escaped."""
    parts, x = [], 0.0
    for q, share in enumerate(shares):
        width = BAR_WIDTH * max(0.0, float(share))
        if width <= 0:
            continue
        fill, ink = QUALITY_COLORS[q % len(QUALITY_COLORS)], _INK[q % len(_INK)]
        label = (f'<text x="{x + width / 2:.1f}" y="{BAR_HEIGHT * 0.68:.0f}" text-anchor="middle" font-size="12" '
                 f'font-family="sans-serif" fill="{ink}">Q{q} {numbers.pct(share, 0)}</text>'
                 if width >= _LABEL_MIN_WIDTH else "")
        name = escape(f"Q{q} {names[q] if q < len(names) else ''}: {numbers.pct(share)}")
        parts.append(f'<rect x="{x:.1f}" width="{width:.1f}" height="{BAR_HEIGHT}" fill="{fill}"><title>{name}</title>'
                     f"</rect>{label}")
        x += width
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" '
            f'viewBox="0 0 {BAR_WIDTH} {BAR_HEIGHT}">' + "".join(parts) + "</svg>")


def bar_md(shares: list[float], names: list[str]) -> str:
    """The stacked bar as a Markdown image (a data: URL: nothing is fetched)."""
    data = base64.b64encode(stacked_bar_svg(shares, names).encode()).decode()
    return f"![share of the domain's tokens per quality bucket, Q0 to Q{len(shares) - 1}](data:image/svg+xml;base64,{data})"


def grid_md(cells: pd.DataFrame, names: list[str], plan: PlanView | None) -> str:
    """The quality grid as a Markdown table, one column per bucket: share of the domain, enrichment, tokens,
    documents; with a plan each phase's weight and the cell's epochs (over the cap in red), '–' for a cell the plan
    does not list (as on the static page)."""
    cells = cells.sort_values("quality")
    head = [f"Q{q} {md(names[q]) if q < len(names) else ''}".strip() for q in cells.quality]
    rows = [("share of domain", [f"**{numbers.pct(v)}**" for v in cells.share_in_domain]),
            ("enrichment", [numbers.enrichment(v) for v in cells.enrichment]),
            ("tokens", [numbers.tokens(v) for v in cells.tokens]),
            ("documents", [numbers.count(v) for v in cells.docs])]
    if plan is not None:
        rows += [(f"weight {md(p.name)}", [numbers.weight(p.weights.get(c)) for c in cells.cell])
                 for p in plan.phases]
        epochs = []
        for c in cells.cell:
            e = plan.exposure.get(c)
            over = e is not None and e > plan.max_epochs * (1 + 1e-12)
            epochs.append(f":red[**{numbers.epochs(e)} over cap**]" if over else numbers.epochs(e))
        rows.append(("epochs", epochs))
    lines = ["| | " + " | ".join(head) + " |", "|---|" + "--:|" * len(head)]
    lines += [f"| {name} | " + " | ".join(values) + " |" for name, values in rows]
    return "\n".join(lines)


def header_md(domain: dict, languages: pd.DataFrame | None) -> str:
    """The panel's first lines: label and numbers; the other top terms, the summary, confidence and languages."""
    name = domain["name"]
    lines = [f"**{domain['id']} · {terms_md(name.terms)}** — {numbers.tokens(domain['tokens'])} tokens · "
             f"{numbers.count(domain['docs'])} documents · {numbers.pct(domain['share'])} of the corpus"]
    more = [f"{'more terms' if name.generated else 'top terms'}: {terms_md(name.more, ' · ')}"] if name.more else []
    if domain.get("title"):
        more.append(f"“{md(domain['title'])}”")
    if domain.get("summary"):
        more.append(md(domain["summary"]))
    tag, conf = domain.get("confidence_tag"), domain.get("confidence")
    if tag or conf is not None:
        more.append(f"label confidence {md(tag or '')}" + (f" ({float(conf):.2f})" if conf is not None else ""))
    if languages is not None and not languages.empty:
        more.append(f"languages {md(language_line(languages))}")
    if more:
        lines.append(":gray[" + " · ".join(more) + "]")
    return "  \n".join(lines)


def panel_md(domain: dict, cells: pd.DataFrame, names: list[str], plan: PlanView | None,
             languages: pd.DataFrame | None = None) -> str:
    """Everything of a panel but the bucket picker, as one Markdown block (one element to render)."""
    shares = [float(s) for s in cells.sort_values("quality").share_in_domain]
    return "\n\n".join([header_md(domain, languages), bar_md(shares, names), grid_md(cells, names, plan)])


def cell_details(cluster: int, quality: int, sources: pd.DataFrame, examples: list[dict], key: str) -> None:
    """Source composition of one cell and its example documents."""
    mix = sources[(sources.cluster == cluster) & (sources.quality == quality)]
    if mix.empty:
        st.caption("no documents")
    else:
        note = " (estimated from the uniform sample)" if bool(mix.estimated.iloc[0]) else ""
        st.caption(f"Source composition{note}")
        st.dataframe(display(pd.DataFrame({"source": mix.source, "share": (100 * mix.share).round(1),
                                           "tokens": mix.tokens}), tokens=numbers.tokens, share=lambda v: f"{v:.1f}"),
                     hide_index=True, column_config={"share": st.column_config.ProgressColumn(
                         "share %", min_value=0, max_value=100, format="%.1f%%")})
    for i, doc in enumerate(examples):
        ui.document(doc, key=f"{key}_{i}")


def bucket_key(domain_id: int) -> str:
    """Session key of a panel's bucket picker (`?cell=` sets it and scrolls to it)."""
    return f"bucket_{domain_id}"


def panels_md(domains: pd.DataFrame, cells: pd.DataFrame, names: list[str], plan: PlanView | None,
              languages: pd.DataFrame) -> dict[int, str]:
    """`panel_md` of every domain (the overview caches them: opening all panels then costs no computing)."""
    by_cells = dict(tuple(cells.groupby("cluster")))
    by_language = dict(tuple(languages.groupby("cluster"))) if not languages.empty else {}
    return {int(d["id"]): panel_md(d, by_cells[int(d["id"])], names, plan, by_language.get(int(d["id"])))
            for d in domains.to_dict("records")}


def domain_panel(text: str, domain_id: int, names: list[str], sources: pd.DataFrame,
                 examples: dict[tuple[int, int], list[dict]], key: str) -> None:
    """A panel: its Markdown block (`panel_md`), the bucket picker and the picked bucket's sources and examples."""
    d = domain_id
    st.markdown(text)
    picked = st.pills("Sources and example documents of a bucket", list(range(len(names))), key=bucket_key(d),
                      format_func=lambda q: f"Q{q} {md(names[q])}")
    if picked is not None:
        cell_details(d, int(picked), sources, examples.get((d, int(picked)), []), key=f"{key}_q{picked}")
