"""How numbers are written for people, one way everywhere: counts with thousands separators (1,234,567), token
amounts with three significant digits (28.0M, 1.74T), percentages with one or two decimals (7.52%), enrichment
as ×1.42, epochs (2.10) and weights (0.01234)."""

from __future__ import annotations

import math

__all__ = ["count", "enrichment", "epochs", "pct", "tokens", "weight"]

DASH = "–"
_SUFFIXES = (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3))


def _missing(x: float | int | None) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def count(n: float | int | None) -> str:
    """1234567 -> '1,234,567' (rounded to a whole number)."""
    return DASH if _missing(n) else f"{round(n):,}"


def tokens(n: float | int | None, significant: int = 3) -> str:
    """A token amount with `significant` digits and a suffix: 28_000_000 -> '28.0M', 1.7412e12 -> '1.74T',
    669.6e9 -> '670B', 999_960 -> '1.00M'; amounts under a thousand are written whole (950)."""
    if _missing(n):
        return DASH
    scales = [(s, v) for s, v in reversed(_SUFFIXES) if abs(n) >= v]  # ascending; the last fits best
    if not scales:
        return f"{round(n):,}"
    i = len(scales) - 1
    suffix, scale = scales[i]
    text = _significant(n / scale, significant)
    if abs(float(text)) >= 1000 and scale < _SUFFIXES[0][1]:  # 999.96K rounds to 1000K: write 1.00M
        suffix, scale = next((s, v) for s, v in reversed(_SUFFIXES) if v == scale * 1000)
        text = _significant(n / scale, significant)
    return text + suffix


def _significant(value: float, significant: int) -> str:
    """99.96 with 3 digits -> '100', 9.996 -> '10.0' (the decimals follow the rounded value's whole digits)."""
    whole = len(str(int(abs(value))))
    text = f"{value:.{max(0, significant - whole)}f}"
    if len(text.lstrip("-").split(".")[0]) > whole:
        text = f"{value:.{max(0, significant - whole - 1)}f}"
    return text


def pct(x: float | None, digits: int = 2) -> str:
    """A fraction as a percentage: 0.07523 -> '7.52%'; a non-zero share that rounds to zero -> '<0.01%'."""
    if _missing(x):
        return DASH
    if x != 0 and abs(100 * x) < 0.5 * 10 ** -digits:
        return f"<{10 ** -digits:.{digits}f}%"
    return f"{100 * x:.{digits}f}%"


def enrichment(x: float | None) -> str:
    """A share against its baseline, as the published page writes it: 1.4236 -> '×1.42'."""
    return f"×{DASH}" if _missing(x) or not math.isfinite(x) else f"×{x:.2f}"


def epochs(x: float | None) -> str:
    """Exposure in epochs: 2.104 -> '2.10'; infinite (weight but no tokens) -> '∞'."""
    if _missing(x):
        return DASH
    return "∞" if math.isinf(x) else f"{x:.2f}"


def weight(w: float | None) -> str:
    """A mixture weight (a fraction of a phase) with four significant digits, never in exponent notation:
    0.012345 -> '0.01235', 5.8594e-05 -> '0.00005859', 0 -> '0'."""
    if _missing(w):
        return DASH
    if w == 0 or abs(w) >= 1e-4:
        return f"{w:.4g}"
    return f"{w:.{3 - math.floor(math.log10(abs(w)))}f}"
