"""Importing mixture picks the allocators a build runs on, before numpy and pyarrow are first imported."""

from __future__ import annotations

import os
import subprocess
import sys

from mixture import ALLOCATOR_ENV

PROBE = """
import mixture
import numpy, pyarrow
from numpy._core.multiarray import _set_madvise_hugepage
print(pyarrow.default_memory_pool().backend_name, _set_madvise_hugepage(False))
"""


def _probe(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ALLOCATOR_ENV}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def test_arrow_on_the_system_allocator_and_no_huge_pages_for_numpy():
    assert _probe() == ["system", "False"]


def test_a_users_own_choice_wins():
    assert _probe(ARROW_DEFAULT_MEMORY_POOL="jemalloc", NUMPY_MADVISE_HUGEPAGE="1") == ["jemalloc", "True"]
