"""Token amounts as people write them: 18.75T, 926B, 48e9, 1_000_000, 3.75 T."""

from __future__ import annotations

import re

_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12, "P": 10**15}
_AMOUNT_RE = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([KMBGTP]?)\s*$", re.IGNORECASE)


def parse_amount(value: object) -> int:
    """Parse a token amount into an int; raises ValueError saying what form is expected."""
    if isinstance(value, bool):
        raise ValueError(f"expected a token amount such as 18.75T, 926B or 48e9, found {value!r}")
    if isinstance(value, int):
        amount = value
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"expected a finite token amount, found {value!r}")
        amount = round(value)
    elif isinstance(value, str):
        m = _AMOUNT_RE.match(value)
        if not m:
            raise ValueError(f"expected a token amount such as 18.75T, 926B or 48e9, found {value!r}")
        number, suffix = m.group(1).replace("_", ""), m.group(2).upper()
        amount = round(float(number) * _SUFFIX[suffix]) if ("." in number or "e" in number.lower()) else int(
            number
        ) * _SUFFIX[suffix]
    else:
        raise ValueError(f"expected a token amount such as 18.75T, 926B or 48e9, found {type(value).__name__}")
    if amount < 0:
        raise ValueError(f"a token amount cannot be negative, found {value!r}")
    return amount


def humanize(tokens: float, digits: int = 2) -> str:
    """1.74e12 -> '1.74T', 669.6e9 -> '669.6B' (trailing zeros trimmed)."""
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(tokens) >= scale:
            text = f"{tokens / scale:.{digits}f}".rstrip("0").rstrip(".")
            return f"{text}{suffix}"
    return f"{tokens:.0f}"
