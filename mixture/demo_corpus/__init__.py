"""The embedded default corpus: real text from the stdlib and installed packages, with planted ground truth.

`write_demo_corpus(out, seed=0, scale=1.0)` writes it; `mixture.demo_corpus.read` reads it back.
"""

from __future__ import annotations

from typing import Any

from .names import BENCHMARK, GROUND_TRUTH, MANIFEST
from .textutil import jaccard, normalize

__all__ = ["BENCHMARK", "GROUND_TRUTH", "MANIFEST", "jaccard", "normalize", "write_demo_corpus"]


def __getattr__(name: str) -> Any:  # lazy: keeps pyarrow out of `mixture --help`
    if name == "write_demo_corpus":
        from .corpus import write_demo_corpus

        return write_demo_corpus
    raise AttributeError(name)
