"""Helpers to run the explorer in `streamlit.testing.v1.AppTest` and read what a page shows."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from mixture.explorer import MAIN

APP = str(MAIN)


def run(page: str | None = None, timeout: float = 30, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=timeout)
    if page:
        at.query_params["page"] = page
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def unescape(text: str) -> str:
    """Undo app.fmt.md's backslash escapes (what the browser shows)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def plain(label: str) -> str:
    """A Markdown label as it reads: escapes undone, code spans and Unicode isolates dropped."""
    return unescape(label).replace("`", "").replace("\u2068", "").replace("\u2069", "")


def open_domains(at: AppTest) -> list[str]:
    """Labels (plain text) of the domain expanders whose content was rendered (the open ones)."""
    return [plain(e.label) for e in at.expander if e.label[:1].isdigit() and len(e.markdown) > 0]


def panel(at: AppTest, domain: int):
    """The rendered panel (expander) of a domain."""
    return next(e for e in at.expander if plain(e.label).startswith(f"{domain} · ") and len(e.markdown))


def grid(panel_block) -> dict[str, list[str]]:
    """The quality grid of a panel (its Markdown table) as {row name: cells}, with a 'buckets' row of headers."""
    text = next(m.value for m in panel_block.markdown if "| share of domain |" in m.value)
    rows = [line.strip("|").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    out = {"buckets": [c.strip() for c in rows[0][1:]]}
    out |= {unescape(r[0].strip()): [c.strip() for c in r[1:]] for r in rows[1:]}
    return out


def chart_frames(at: AppTest) -> list[list]:
    """For each Altair chart on the page, the DataFrames of its datasets."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    out = []
    for el in at.get("vega_lite_chart"):
        out.append([convert_arrow_bytes_to_pandas_df(d.data.data) for d in el.proto.datasets])
    return out


def shown(table) -> pd.DataFrame:
    """What a table element (st.dataframe / st.table) shows: the display text of a styled frame (its numbers stay
    numbers in `.value`, so it sorts by value), else its values."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    data = table.proto.arrow_data if hasattr(table.proto, "arrow_data") else table.proto
    if data.styler.display_values:
        text = convert_arrow_bytes_to_pandas_df(data.styler.display_values)
        text.columns = table.value.columns
        return text.reset_index(drop=True)
    return table.value
