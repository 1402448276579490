"""Altair charts of the explorer (heatmaps, funnel, exposure bars, map); colours readable in light and dark."""

from __future__ import annotations

import altair as alt
import pandas as pd


def cell_heatmap(cells: pd.DataFrame, names: list[str], value: str = "tokens", title: str = "") -> alt.Chart:
    """Cluster × quality heatmap of `value` (tokens), with docs and shares in the tooltip."""
    df = cells.copy()
    df["domain"] = [f"{c:02d} · {lab}" for c, lab in zip(df.cluster, df.label, strict=True)]
    df["bucket"] = [f"Q{q} {names[q]}" for q in df.quality]
    df["share %"] = (100 * df.share_of_corpus).round(3)
    base = alt.Chart(df, title=title).encode(
        x=alt.X("bucket:O", title="quality", sort=[f"Q{q} {n}" for q, n in enumerate(names)]),
        y=alt.Y("domain:O", title=None, sort=sorted(set(df.domain))),
    )
    rect = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme="viridis", type="symlog"), title=value),
        tooltip=["cell:N", "domain:N", "bucket:N", alt.Tooltip("tokens:Q", format=","),
                 alt.Tooltip("docs:Q", format=","), "share %:Q"],
    )
    return rect.properties(height=max(160, 18 * df.cluster.nunique()))


def diverging_heatmap(df: pd.DataFrame, value: str, title: str = "") -> alt.Chart:
    """Per-cell deltas (columns cluster, quality, cell, `value`) on a red-blue scale centred on zero."""
    lim = float(df[value].abs().max() or 1.0)
    return alt.Chart(df, title=title).mark_rect().encode(
        x=alt.X("quality:O", title="quality"),
        y=alt.Y("cluster:O", title="cluster"),
        color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme="redblue", domain=[-lim, lim], domainMid=0),
                        title=value),
        tooltip=[c for c in df.columns if c not in ("cluster", "quality")],
    ).properties(height=max(160, 18 * df.cluster.nunique()))


def funnel(stages: list[tuple[str, int]]) -> alt.Chart:
    """Records remaining after each drop stage, as horizontal bars."""
    df = pd.DataFrame(stages, columns=["stage", "records"])
    df["order"] = range(len(df))
    base = alt.Chart(df).encode(y=alt.Y("stage:N", sort=alt.SortField("order"), title=None))
    bars = base.mark_bar(color="#4c78a8").encode(x=alt.X("records:Q", title="records"),
                                                 tooltip=["stage:N", alt.Tooltip("records:Q", format=",")])
    text = base.mark_text(align="left", dx=4).encode(x="records:Q", text=alt.Text("records:Q", format=","))
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


def domain_map(points: pd.DataFrame) -> alt.Chart:
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
    labels = base.mark_text(dy=-14, fontSize=11).encode(text="id:Q")
    return (dots + labels).properties(height=520)
