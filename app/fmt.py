"""Small formatting helpers: token amounts, percentages, Markdown escaping, document cuts."""

from __future__ import annotations

import math
import re

from mixture.spec.amounts import humanize

__all__ = ["code", "cut_text", "enrichment_text", "humanize", "md", "pct"]

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
