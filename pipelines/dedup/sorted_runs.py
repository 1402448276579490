"""A local file of fixed-size records sorted in bounded memory: sorted runs written beside it, then merged block by
block (an external merge sort), for a task whose input outgrows one sort in memory."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

# records sorted in memory at once (a sort holds them twice, and the byte keys of those that share a first hash): a
# band of a pool task's ~1.6M documents (109 MB) in one sort; at 32 MiB its 4 runs and their merge took 1.3x the CPU
# of the stage (docs/performance.md)
RUN_BYTES = 128 << 20
MERGE_BYTES = 32 << 20  # the merge's blocks, over all its runs


def sorted_blocks(path: str, dtype: np.dtype, run_bytes: int | None = None,
                  merge_bytes: int | None = None) -> Iterator[np.ndarray]:
    """The records of `path` (a file of `dtype` records) in the order of `dtype.names`, as consecutive sorted
    blocks. A file of at most `run_bytes` is sorted in memory as one block; a larger one is cut into sorted runs of
    `run_bytes` (files beside `path`, removed when the merge ends) that are merged in blocks of `merge_bytes` in all.
    Memory: about 2–3 × max(run_bytes, merge_bytes), whatever the file's size (378 MiB at 128 MiB runs and 4M
    random records, bench/sorted_runs_bench.py)."""
    run_bytes, merge_bytes = run_bytes or RUN_BYTES, merge_bytes or MERGE_BYTES
    per_run = max(1, run_bytes // dtype.itemsize)
    n = os.path.getsize(path) // dtype.itemsize
    if n <= per_run:
        yield sort_records(np.fromfile(path, dtype=dtype))
        return
    runs = []
    with open(path, "rb") as f:
        for start in range(0, n, per_run):
            runs.append(f"{path}.run{len(runs)}")
            sort_records(np.fromfile(f, dtype=dtype, count=min(per_run, n - start))).tofile(runs[-1])
    yield from _merged(runs, dtype, max(1, merge_bytes // (len(runs) * dtype.itemsize)))


def sort_records(records: np.ndarray) -> np.ndarray:
    """`records` sorted by every field in order (`field_order`)."""
    # taken as opaque records: numpy's take of a structured dtype goes field by field (~3x slower)
    return records.view(f"V{records.dtype.itemsize}")[field_order(records)].view(records.dtype)


def field_order(records: np.ndarray, *after: np.ndarray) -> np.ndarray:
    """The stable order of `records` (a structured array) by every field in order, then by the columns `after` (one
    value per record). Of unsigned integers: a stable numeric sort of the first field (~2.5x faster than a sort of
    whole records; sorted runs are found as runs), then the records that share it by one string of all their
    fields' and columns' big-endian bytes, which sorts as they do (~2.3x faster than a lexsort of 9 fields where
    half the records share the first, as a pool's near-duplicate families' signatures do). Of other fields (a sign
    bit would sort last as a byte): a lexsort, ~3x faster than a structured sort."""
    names = records.dtype.names
    if not all(c.dtype.kind == "u" for c in (*(records[n] for n in names), *after)):
        return np.lexsort([*after[::-1], *(records[n] for n in reversed(names))])
    order = np.argsort(records[names[0]], kind="stable")
    first = records[names[0]][order]
    same = first[1:] == first[:-1]
    if same.any():  # the tied records sorted together keep their groups' places: the first field leads the order
        tied = np.zeros(len(order), dtype=bool)
        tied[1:] |= same
        tied[:-1] |= same
        rows = order[tied]
        sub = records.view(f"V{records.dtype.itemsize}")[rows].view(records.dtype)
        fields = [(n, sub[n]) for n in names] + [(f"after{i}", c[rows]) for i, c in enumerate(after)]
        keys = np.empty(len(rows), np.dtype([(n, c.dtype.newbyteorder(">")) for n, c in fields]))
        for n, c in fields:
            keys[n] = c
        order[tied] = rows[np.argsort(keys.view(f"S{keys.dtype.itemsize}"), kind="stable")]
    return order


def _merged(paths: list[str], dtype: np.dtype, block: int) -> Iterator[np.ndarray]:
    """Sorted runs merged: each step takes, from every run's current block, the records up to the least last
    record among the runs that have more to read (nothing unread can come before it), and sorts them together;
    the run that bounded the step is then used up and reads its next block."""
    files = [open(p, "rb") for p in paths]  # noqa: SIM115 - closed below
    left = [os.path.getsize(p) // dtype.itemsize for p in paths]
    blocks = [np.empty(0, dtype) for _ in paths]
    try:
        while True:
            for i, f in enumerate(files):
                if not len(blocks[i]) and left[i]:
                    blocks[i] = np.fromfile(f, dtype=dtype, count=min(block, left[i]))
                    left[i] -= len(blocks[i])
            if not any(len(b) for b in blocks):
                return
            pending = [blocks[i][-1:] for i in range(len(files)) if left[i] and len(blocks[i])]
            if pending:
                lasts = np.concatenate(pending)
                lasts.sort(order=dtype.names)
                cuts = [int(np.searchsorted(b, lasts[:1], side="right")[0]) for b in blocks]
            else:  # every run read to its end: what is left of the blocks is the rest
                cuts = [len(b) for b in blocks]
            out = sort_records(np.concatenate([b[:c] for b, c in zip(blocks, cuts, strict=True)]))
            blocks = [b[c:] for b, c in zip(blocks, cuts, strict=True)]
            yield out
    finally:
        for f, p in zip(files, paths, strict=True):
            f.close()
            os.remove(p)
