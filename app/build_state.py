"""Progress of a store that is still building, from the accounting layer, with each file's footer cached by
path and size (the Live build page refreshes every few seconds; a file is read again only once it changed)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from mixture import accounting
from mixture.accounting import Footer, StoreReader


@st.cache_data(show_spinner=False, max_entries=20000)
def _footer(uri: str, rel: str, size: int, listed_tokens: int | None) -> Footer:
    # a file still being written grows, so its next size is a new key: a missing footer is not kept
    return accounting.read_footer(StoreReader(uri), rel, size, listed_tokens)


def _cached_footer(reader: StoreReader, rel: str, size: int, listed_tokens: int | None) -> Footer:
    return _footer(reader.uri, rel, size, listed_tokens)


def fresh_reader(uri: str) -> StoreReader:
    """A reader that sees the store as it is now (listings of remote filesystems are cached: a build changes them)."""
    reader = StoreReader(uri)
    reader.refresh()
    return reader


def lock_info(reader: StoreReader) -> dict | None:
    return accounting.lock_info(reader)


def stages(reader: StoreReader) -> pd.DataFrame:
    """One row per `_build/<stage>/`: tasks, completed, status."""
    return accounting.stages(reader)


def cells(reader: StoreReader) -> pd.DataFrame:
    """Per cell: files, listed, rows (footers), tokens (ledger, else the n_tokens column), unreadable."""
    return accounting.cell_progress(reader, footer=_cached_footer)


def side_counts(reader: StoreReader) -> dict[str, int]:
    """Rows so far in `_dropped/<reason>/` and `_quarantine/` (as bad_input), from footers."""
    return accounting.side_counts(reader, footer=_cached_footer)
