"""Small formatting helpers: token amounts, percentages, Markdown escaping, document cuts."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

from mixture.composition import numbers
from mixture.composition.labels import Term
from mixture.spec.amounts import humanize

__all__ = ["code", "cut_text", "display", "enrichment_text", "humanize", "md", "pct", "score", "terms_md"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=])")
CUT_CHARS = 900


def md(text: object) -> str:
    """Escape text for Streamlit Markdown (labels, captions): no formatting, links, HTML or LaTeX."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def pct(x: float, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.{digits}f}%"


def enrichment_text(x: float) -> str:
    """Enrichment as the published page shows it: ×1.42."""
    return "×–" if x is None or not math.isfinite(x) else f"×{x:.2f}"


def score(x: float | None) -> str:
    """A raw or calibrated quality score, three decimals: 0.4218359123 -> '0.422'."""
    return numbers.DASH if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _default(value: object) -> str:
    """A number no formatter was named for: a count (1,234,567) or three decimals (0.422)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return numbers.DASH
    if isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1000):
        return numbers.count(value)
    return f"{value:.3f}" if isinstance(value, (float, np.floating)) else str(value)


def display(df: pd.DataFrame, **formats: Callable[[object], str]) -> Styler:
    """`df` for a table: its numbers stay numbers (a column sorts by value, not by its text), each shown by its
    formatter (e.g. tokens=numbers.tokens: 28.6M), any other number column as a count or with three decimals.
    Columns that hold nothing (all missing) are left out."""
    out = df[[c for c in df.columns if not df[c].isna().all() or df.empty]]
    numeric = {c: _default for c in out.columns if pd.api.types.is_numeric_dtype(out[c])
               and not pd.api.types.is_bool_dtype(out[c])}
    return out.style.format({**numeric, **{c: f for c, f in formats.items() if c in out.columns}})


def cut_text(text: str, limit: int = CUT_CHARS) -> tuple[str, bool]:
    """Cut a document at ~`limit` characters on a word boundary; returns (shown text, was_cut)."""
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    space = head.rfind(" ", int(limit * 0.8))
    return (head[:space] if space > 0 else head) + " …", True


def code(text: object) -> str:
    """Text for inside a Markdown code span (`…`): no escapes needed, only backticks removed."""
    return str(text).replace("`", "'").replace("\n", " ")


def isolate(text: str) -> str:
    """Right-to-left text (Arabic, Hebrew) wrapped in a Unicode isolate, so the numbers around it keep their order."""
    if any(unicodedata.bidirectional(c) in ("R", "AL") for c in text):
        return f"\u2068{text}\u2069"
    return text


def terms_md(terms: Iterable[Term], sep: str = ", ") -> str:
    """Label terms as Markdown: code tokens as code spans (`assertEqual`), words escaped."""
    return sep.join(f"`{code(t.text)}`" if t.code else isolate(md(t.text)) for t in terms)
