"""The compiled text-signal counter (`mixture/text/_signals.c`), or None where it was not built: the same counts
are then taken in Python. `MIXTURE_PURE_PYTHON=1` turns it off (the tests compare both)."""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("MIXTURE_PURE_PYTHON"):
        return None
    try:
        from mixture.text import _signals
    except ImportError:
        return None
    return _signals


kernel = _load()
MISSING = ("the compiled text kernel (mixture/text/_signals.c) is not built, so text signals are counted in Python "
           "(about 3x slower); reinstall with a C compiler present: pip install -e .")
