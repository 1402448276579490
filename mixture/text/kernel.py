"""The compiled text-signal counter (`mixture/text/_signals.c`), or None where it was not built: the same counts
are then taken in Python. `MIXTURE_PURE_PYTHON=1` turns it off (the tests compare both)."""

from __future__ import annotations

import os
from types import ModuleType

VERSION = 7  # the `VERSION` of _signals.c these modules call; an extension built from other sources is not used


def _load() -> ModuleType | None:
    if os.environ.get("MIXTURE_PURE_PYTHON"):
        return None
    try:
        from mixture.text import _signals
    except ImportError:
        return None
    return _signals if getattr(_signals, "VERSION", None) == VERSION else None


kernel = _load()
MISSING = ("the compiled text kernel (mixture/text/_signals.c) is not built or is out of date, so text signals are "
           "counted in Python (about 3x slower); reinstall with a C compiler present: pip install -e .")
