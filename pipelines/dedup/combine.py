"""The combine round after a stage that writes shuffles: task c regroups writer files [c·g, (c+1)·g) of each shuffle
into one file, partition by partition; then one task merges their indexes, so each of the P readers makes
1 + ⌈W/g⌉ range reads instead of 2·W."""

from __future__ import annotations

import contextlib
import struct

import fsspec
import numpy as np
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.dedup.shuffle import (
    CENTRY,
    CMAGIC,
    ENTRY,
    MAGIC,
    TRAILER,
    combined_folder,
    combined_listing,
    listing,
    write_merged_index,
)
from mixture.store.io import open_atomic

BLOCK = 4 << 20  # each writer file is read front to back through a read-ahead buffer of this size
SIG_SUFFIX, SLICES_SUFFIX = ".minhash.sig", ".minhash.slices"  # a band's signature file and its slice index


def _index(fs, path: str, size: int) -> list[tuple[int, int, int]]:
    """(offset, length, rows) of each partition of one writer file, in partition order: its index, one read."""
    if size < TRAILER.size:
        raise ValueError(f"{fs.unstrip_protocol(path)}: not a shuffle file (shorter than its trailer)")
    parts, magic = TRAILER.unpack(fs.cat_file(path, start=size - TRAILER.size, end=size))
    start = size - TRAILER.size - ENTRY.size * parts
    if magic != MAGIC or start < 0:
        raise ValueError(f"{fs.unstrip_protocol(path)}: not a shuffle file (no {MAGIC.decode()} trailer); remove the "
                         "store's _build/ folder and build again")
    raw = fs.cat_file(path, start=start, end=size - TRAILER.size)
    entries = [ENTRY.unpack_from(raw, ENTRY.size * i) for i in range(parts)][::-1]
    return [(offset, length, rows) for _, _, offset, length, rows in entries]


def _group(pattern: str, rank: int, group: int, writers: int) -> tuple[fsspec.AbstractFileSystem,
                                                                      list[tuple[str, int]]]:
    """(filesystem, [(path, size)]) of writer files [rank·group, (rank+1)·group) of the `writers` files `pattern`
    matches, all of which must be there. Task 0 also removes combined files past the last (another group size's)."""
    fs, files = listing(pattern)
    if len(files) != writers:
        raise ValueError(f"{pattern}: {len(files)} writer files where {writers} tasks wrote: the stage before did not "
                         "finish (rerun the build) or its folder holds files of another run (remove the store's "
                         "_build/ folder and build again)")
    if rank == 0:  # also their merged index: the round after makes it again
        combined, index = combined_listing(pattern)
        stale = [p for p, _ in combined if int(p.rsplit("/", 1)[1].split(".")[0]) >= -(-writers // group)]
        for path in [*stale, *([index[0]] if index else [])]:
            fs.rm(path)
    return fs, files[rank * group:(rank + 1) * group]


def _publish(fs, pattern: str, rank: int, group: int, mine: list[tuple[str, int]],
             sources: list[tuple[str, list[tuple[int, int, int]]]]) -> dict[str, int]:
    out = fsspec.core.url_to_fs(combined_folder(pattern).replace("*", f"{rank:05d}", 1))[1]
    copied = write_combined(fs, out, sources, rank * group, sum(size for _, size in mine))
    return {"writer_files": len(mine), "bytes_copied": copied}


def write_combined(fs, out_path: str, sources: list[tuple[str, list[tuple[int, int, int]]]], first: int,
                   covered: int) -> int:
    """One combined file at `out_path` from `sources`: (writer file, its (offset, length, rows) per partition) of
    the writers `first`, `first` + 1, …; partition q's ranges packed one after the other in that order (PACKED:
    their count, lengths and writer positions), each source read once, front to back. Returns the bytes copied."""
    parts = len(sources[0][1])
    copied, at, entries = 0, 0, []
    with open_atomic(fs, out_path) as sink, contextlib.ExitStack() as stack:
        handles = [stack.enter_context(fs.open(path, "rb", block_size=BLOCK, cache_type="readahead"))
                   for path, _ in sources]
        for q in range(parts):
            held = [(i, ranges[q]) for i, (_, ranges) in enumerate(sources) if ranges[q][1]]
            length = rows = 0
            if held:
                header = struct.pack(f"<{2 * len(held) + 1}Q", len(held), *(n for _, (_, n, _) in held),
                                     *(first + i for i, _ in held))
                sink.write(header)
                length = len(header)
                for i, (offset, n, r) in held:
                    _copy(handles[i], offset, n, sink, f"{fs.unstrip_protocol(sources[i][0])}", q)
                    length, rows, copied = length + n, rows + r, copied + n
            entries.append(CENTRY.pack(parts, q, at, length, rows, first, len(sources), covered))
            at += length
        sink.write(b"".join(reversed(entries)) + TRAILER.pack(parts, CMAGIC))
    return copied


def _copy(source, offset: int, n: int, sink, name: str, q: int) -> None:
    source.seek(offset)
    while n:
        chunk = source.read(min(n, BLOCK))
        if not chunk:
            raise ValueError(f"{name}: ends inside partition {q}'s range (a damaged work file); remove the store's "
                             "_build/ folder and build again")
        sink.write(chunk)
        n -= len(chunk)


def combine(pattern: str, rank: int, group: int, writers: int) -> dict[str, int]:
    """Combined file `rank` of the shuffle whose writer files `pattern` matches (`writers` of them, all finished):
    writer files [rank·group, (rank+1)·group) in listing order, so a reader gets the rows the writers' files would
    give it, in the same order."""
    fs, mine = _group(pattern, rank, group, writers)
    sources = [(path, _index(fs, path, size)) for path, size in mine]
    if len({len(ranges) for _, ranges in sources}) != 1:
        raise ValueError(f"{pattern}: writer files of different partition counts; remove the store's _build/ folder "
                         "and build again")
    return _publish(fs, pattern, rank, group, mine, sources)


def combine_signatures(pattern: str, rank: int, group: int, writers: int, slices: int, itemsize: int) -> dict[str, int]:
    """Combined file `rank` of one band's signature files (`pattern`: their glob; `writers` of them, one per
    `minhash_sigs` task, sorted records of `itemsize` bytes), a partition per first-hash slice (of `slices`,
    from each file's slice index): what `minhash_buckets` task (band, slice) reads instead of a run of every
    file."""
    fs, mine = _group(pattern, rank, group, writers)
    sources = []
    for position, (path, size) in enumerate(mine, start=rank * group):
        if not path.rsplit("/", 1)[1].startswith(f"{position:05d}."):  # the bucket stage takes a run's task from it
            raise ValueError(f"{fs.unstrip_protocol(path)}: not the signature file of task {position}; remove the "
                             "store's _build/ folder and build again")
        if slices == 1:
            bounds = np.array([0, size // itemsize], dtype=np.int64)
        else:
            index = path[: -len(SIG_SUFFIX)] + SLICES_SUFFIX
            bounds = np.frombuffer(fs.cat_file(index), dtype="<u8").astype(np.int64)
            if len(bounds) != slices + 1 or bounds[-1] * itemsize != size:
                raise ValueError(f"{fs.unstrip_protocol(index)}: not the slice index of {fs.unstrip_protocol(path)} "
                                 f"for {slices} slices; remove the store's _build/ folder and build again")
        sources.append((path, [(int(lo) * itemsize, int(hi - lo) * itemsize, int(hi - lo))
                               for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]))
    return _publish(fs, pattern, rank, group, mine, sources)


class CombineShuffles(PipelineStep):
    """Task c of a stage's combine round: combined file c of each shuffle the stage wrote (`patterns`: their writer
    files' globs), `group` writer files each, of `writers`; with `signatures` (slices, record size), the patterns
    are bands' signature files (`combine_signatures`)."""

    type = "🫂 - DEDUP"
    name = "combine shuffle files"

    def __init__(self, patterns: list[str], group: int, writers: int, signatures: tuple[int, int] | None = None):
        super().__init__()
        self.patterns, self.group, self.writers, self.signatures = patterns, group, writers, signatures

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        for pattern in self.patterns:
            stats = combine(pattern, rank, self.group, self.writers) if self.signatures is None else \
                combine_signatures(pattern, rank, self.group, self.writers, *self.signatures)
            for key, value in stats.items():
                self.stat_update(key, value=value)


class IndexCombined(PipelineStep):
    """The one task after a combine round: the merged index of each shuffle's combined files (`patterns`: their
    writer files' globs; shuffle.write_merged_index), so that a reader finds its ranges in one request."""

    type = "🫂 - DEDUP"
    name = "index combined files"

    def __init__(self, patterns: list[str]):
        super().__init__()
        self.patterns = patterns

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        for pattern in self.patterns:
            for key, value in write_merged_index(pattern).items():
                self.stat_update(key, value=value)
