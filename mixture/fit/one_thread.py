"""The fit's numeric results must not depend on the cores a task was given: its BLAS and OpenMP work runs on one
thread (with two, the embedder's SVD and the k-means centroids came out with other bits, measured)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_controller: tuple = (None, 0)  # (threadpoolctl's view of the loaded BLAS/OpenMP libraries, len(sys.modules) then)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """BLAS and OpenMP (threadpoolctl) limited to one thread inside: the same bits whatever `cpus_per_task`. The
    libraries are looked up once per process, again only when one loaded since (scikit-learn's OpenMP, say)."""
    global _controller
    import sys

    from threadpoolctl import ThreadpoolController

    if _controller[0] is None or _controller[1] != len(sys.modules):  # finding the libraries takes ~2.5 ms
        _controller = (ThreadpoolController(), len(sys.modules))
    with _controller[0].limit(limits=1):
        yield
