"""Altair charts of the explorer (heatmaps, funnel, exposure bars, map); colours readable in light and dark."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from mixture.composition import numbers

TEXT_COLORS = {"light": "#31333f", "dark": "#fafafa"}  # Streamlit's body text in its light and dark themes
EMPTY_COLOR = "#9e9e9e"  # a cell without documents: grey in either theme, with its own legend entry
ROW = 20  # pixels per domain row of a heatmap: every domain gets its label
_SHORT_ON_NARROW = "width < 360 ? split(datum.label, ' ')[0] : datum.label"  # 'Q0 junk' -> 'Q0' on a phone


def text_color(theme: str | None) -> str:
    """The theme's text colour for text marks (Vega draws them black otherwise: unreadable on a dark page)."""
    return TEXT_COLORS.get(theme or "light", TEXT_COLORS["light"])


def _labels_expr(values: list[float] | None) -> str | None:
    """A Vega expression writing each legend value as `numbers.tokens` does (1.00K, 10.0K, 1.00M): Vega's own SI
    format gives every label the largest value's prefix (0M 0M 0.1M 1M)."""
    if not values:
        return None
    expr = "datum.label"
    for v in reversed(values):
        expr = f"datum.value == {v!r} ? {json.dumps(numbers.tokens(v))} : {expr}"
    return expr


def _legend_values(low: float, top: float) -> list[float] | None:
    """Legend ticks of a symlog token scale, evenly spaced on it: the powers of ten from 1k within the values
    (None: let Vega choose, for values under a thousand)."""
    values, v = [], 1000.0
    while v <= top:
        if v >= low:
            values.append(v)
        v *= 10
    return values or None


def _empty_layer(df: pd.DataFrame, x: alt.X, y: alt.Y, label: str) -> alt.Chart:
    return alt.Chart(df).mark_rect(color=EMPTY_COLOR).encode(
        x=x, y=y, color=alt.Color("what:N", scale=alt.Scale(domain=[label], range=[EMPTY_COLOR]), title=None,
                                  legend=alt.Legend(orient="bottom", symbolType="square")),
        tooltip=[c for c in ("cell:N", "domain:N", "bucket:N", "what:N") if c.split(":")[0] in df])


def cell_heatmap(cells: pd.DataFrame, names: list[str], value: str = "tokens", title: str = "") -> alt.Chart:
    """Cluster × quality heatmap of `value` (tokens), with docs and shares in the tooltip: every domain labelled,
    bucket names written across, cells without documents grey with their own legend entry."""
    df = cells.copy()
    df["domain"] = [f"{c:02d} · {lab}" for c, lab in zip(df.cluster, df.label, strict=True)]
    df["bucket"] = [f"Q{q} {names[q]}" for q in df.quality]
    df["share %"] = (100 * df.share_of_corpus).round(3)
    x = alt.X("bucket:O", title="quality", sort=[f"Q{q} {n}" for q, n in enumerate(names)],
              axis=alt.Axis(labelAngle=0, orient="top", labelLimit=160, labelExpr=_SHORT_ON_NARROW))
    y = alt.Y("domain:O", title=None, sort=sorted(set(df.domain)),
              axis=alt.Axis(labelOverlap=False, labelLimit=200, labelFlush=False))
    full = df[df[value] > 0]
    ticks = _legend_values(float(full[value].min() or 0), float(full[value].max() or 0))
    rect = alt.Chart(full, title=title).mark_rect().encode(
        x=x, y=y,
        color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme="viridis", type="symlog"), title=value,
                        legend=alt.Legend(values=ticks, gradientLength=220, orient="bottom", format="~s",
                                          **({"labelExpr": _labels_expr(ticks)} if ticks else {}))),
        tooltip=["cell:N", "domain:N", "bucket:N", alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("docs:Q", format=","), "share %:Q"],
    )
    empty = df[df[value] <= 0].assign(what="no documents")
    chart = alt.layer(rect, _empty_layer(empty, x, y, "no documents")) if len(empty) else rect
    return chart.resolve_scale(color="independent").properties(height=ROW * df.cluster.nunique())


def diverging_heatmap(df: pd.DataFrame, value: str, title: str = "", levels: int | None = None) -> alt.Chart:
    """Per-cell deltas (columns cluster, quality, cell, `value`) on a red-blue scale centred on zero, on the full
    cluster × quality grid: a cell empty in both sides grey, with a legend entry saying so."""
    lim = float(df[value].abs().max() or 1.0)
    clusters = sorted(set(df.cluster))
    levels = levels or int(df.quality.max()) + 1
    grid = pd.MultiIndex.from_product([range(min(clusters), max(clusters) + 1), range(levels)],
                                      names=["cluster", "quality"]).to_frame(index=False)
    empty = grid.merge(df[["cluster", "quality"]], how="left", indicator=True)
    empty = empty[empty["_merge"] == "left_only"].drop(columns="_merge")
    empty["cell"] = [f"c{c:02d}q{q}" for c, q in zip(empty.cluster, empty.quality, strict=True)]
    empty["what"] = "empty in both"
    x = alt.X("quality:O", title="quality", axis=alt.Axis(labelAngle=0, orient="top"))
    y = alt.Y("cluster:O", title="cluster", axis=alt.Axis(labelOverlap=False, labelFlush=False))
    rect = alt.Chart(df, title=title).mark_rect().encode(
        x=x, y=y,
        color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme="redblue", domain=[-lim, lim], domainMid=0),
                        title=value, legend=alt.Legend(format="~s", tickCount=5, gradientLength=220, orient="bottom")),
        tooltip=[c for c in df.columns if c not in ("cluster", "quality")],
    )
    chart = alt.layer(rect, _empty_layer(empty, x, y, "empty in both")) if len(empty) else rect
    return chart.resolve_scale(color="independent").properties(height=ROW * len(grid.cluster.unique()))


def funnel(stages: list[tuple[str, int]], ink: str = TEXT_COLORS["light"]) -> alt.Chart:
    """Records remaining after each drop stage, as horizontal bars with their counts in the theme's text colour."""
    df = pd.DataFrame(stages, columns=["stage", "records"])
    df["order"] = range(len(df))
    base = alt.Chart(df).encode(y=alt.Y("stage:N", sort=alt.SortField("order"), title=None,
                                        axis=alt.Axis(labelLimit=0)))
    bars = base.mark_bar(color="#4c78a8").encode(
        x=alt.X("records:Q", title="records", scale=alt.Scale(domainMax=float(df.records.max() or 1) * 1.18)),
        tooltip=["stage:N", alt.Tooltip("records:Q", format=",")])
    text = base.mark_text(align="left", dx=4, color=ink).encode(x="records:Q", text=alt.Text("records:Q", format=","))
    return (bars + text).properties(height=40 * len(df))


def exposure_bars(frame: pd.DataFrame, cap: float, title: str = "") -> alt.Chart:
    """Exposure per cell, highest first, over-cap cells in red, a rule at the cap."""
    df = frame[["cell", "exposure", "over_cap"]].dropna(subset=["exposure"]).sort_values("exposure", ascending=False)
    df["status"] = df.over_cap.map({True: "over cap", False: "within cap"})
    bars = alt.Chart(df, title=title).mark_bar().encode(
        x=alt.X("cell:N", sort=list(df.cell), title=None, axis=alt.Axis(labelAngle=-60)),
        y=alt.Y("exposure:Q", title="epochs"),
        color=alt.Color("status:N", scale=alt.Scale(domain=["within cap", "over cap"],
                                                    range=["#4c78a8", "#e45756"]), title=None),
        tooltip=["cell:N", alt.Tooltip("exposure:Q", format=".3f")],
    )
    rule = alt.Chart(pd.DataFrame({"cap": [cap]})).mark_rule(color="#e45756", strokeDash=[6, 3]).encode(
        y="cap:Q", tooltip=[alt.Tooltip("cap:Q", title="cap (epochs)")])
    return (bars + rule).properties(height=280)


def bar(df: pd.DataFrame, x: str, y: str, title: str = "") -> alt.Chart:
    return alt.Chart(df, title=title).mark_bar(color="#72b7b2").encode(
        x=alt.X(f"{x}:Q"), y=alt.Y(f"{y}:N", sort="-x", title=None),
        tooltip=[f"{y}:N", alt.Tooltip(f"{x}:Q", format=",.0f")])


def domain_map(points: pd.DataFrame, ink: str = TEXT_COLORS["light"]) -> alt.Chart:
    """Clusters in 2-D: size by tokens, colour by token-weighted mean quality, hover label and totals."""
    sel = alt.selection_point(name="domain", fields=["id"], on="click")
    base = alt.Chart(points).encode(x=alt.X("x:Q", axis=None), y=alt.Y("y:Q", axis=None))
    dots = base.mark_circle(opacity=0.85, stroke="#888", strokeWidth=0.5).encode(
        size=alt.Size("tokens:Q", scale=alt.Scale(range=[80, 2400]), legend=None),
        color=alt.Color("mean_quality:Q", scale=alt.Scale(scheme="redyellowgreen", domain=[0, 4]),
                        title="mean quality (Q0–Q4)"),
        tooltip=[alt.Tooltip("id:Q", title="domain"), "label:N", alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("docs:Q", format=","), alt.Tooltip("share %:Q", format=".2f"),
                 alt.Tooltip("mean_quality:Q", format=".2f"), "quality mix:N"],
    ).add_params(sel)
    labels = base.mark_text(dy=-14, fontSize=11, color=ink).encode(text="id:Q")
    return (dots + labels).properties(height=520)
