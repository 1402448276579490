"""Benchmarks: each `bench/*_bench.py` module has a `main()`; `python -m bench.run` runs them all."""

import mixture  # noqa: F401 - first: it picks Arrow's and numpy's allocators, which they fix when first imported
