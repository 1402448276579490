"""The build's reader steps: `SourceReader` shares every source's units out to the tasks and reads each with its
format's reader (mixture/spec/source_formats.py); `RankFilesReader` reads an earlier stage's per-task files."""

from __future__ import annotations

import heapq

import fsspec
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.sources.records import BROKEN_FILE, SourceFiles
from mixture.spec.source_formats import load_function, source_format
from mixture.stages.files import TaskFile
from mixture.stages.registry import TALLY
from mixture.store.io import write_json_atomic
from mixture.store.row_groups import row_group_batches


class SourceReader(PipelineStep):
    """Reads every source's units (files, dataset shards), each with its format's reader; task `rank` reads its
    share (`shard`)."""

    type = "📖 - READER"
    name = "mixture sources"

    def __init__(self, sources: list[SourceFiles], tally_folder: str):
        super().__init__()
        self.sources = sources
        self.tally_folder = tally_folder
        # each format's reader as "module:function", taken from the registry here: a task imports it by that name
        self.readers = {s.format: source_format(s.format).reader for s in sources}

    def shard(self, rank: int, world_size: int) -> list[tuple[int, SourceFiles, str]]:
        """Task `rank`'s files: the largest file goes to the least-loaded task (lowest rank on ties), so tasks get
        about the same bytes; with a size missing every file counts the same (round robin). Each task reads its
        files in (source, path) order."""
        files = [(i, s, f) for i, s in enumerate(self.sources) for f in s.files]
        sizes = [size for s in self.sources for size in (s.sizes or (None,) * len(s.files))]
        if any(size is None for size in sizes):
            sizes = [1] * len(files)
        load = [(0, r) for r in range(world_size)]  # a heap of (bytes so far, task)
        mine = []
        for j in sorted(range(len(files)), key=lambda j: (-sizes[j], j)):
            total, r = heapq.heappop(load)
            heapq.heappush(load, (total + sizes[j], r))
            if r == rank:
                mine.append(j)
        return [files[j] for j in sorted(mine)]

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        tally: dict[str, int] = {}
        broken: list[dict] = []
        for order, src, rel in self.shard(rank, world_size):
            self.stat_update("input_files")
            n = 0
            for n, doc in enumerate(self.read_file(src, rel), 1):  # noqa: B007 - n counts the file's records
                m = doc.metadata
                if "_bad" not in m:
                    m["source_order"] = order
                elif m["_bad"] in BROKEN_FILE:
                    broken.append({"source": src.name, "file": rel, "reason": m["_bad"], "records_read": m.get("_read", 0),
                                   "lost": m.get("_lost"), "how": m.get("_lost_how", "unknown: not told by its reader")})
                yield doc
            tally[src.name] = tally.get(src.name, 0) + n
            self.stat_update("records", value=n)
        # records read per source by this task (the build's `records_in`) and its files not read to their end (the
        # loss table), saved with the task's outputs
        fs, root = fsspec.core.url_to_fs(self.tally_folder)
        write_json_atomic(fs, TALLY.path(root, rank), {"rank": rank, "records": tally, "broken_files": broken},
                          indent=None)

    def read_file(self, src: SourceFiles, rel: str) -> DocumentsPipeline:
        """The Documents and quarantine records of unit `rel` of `src`, as its format's reader reads them."""
        yield from load_function(self.readers[src.format])(src, rel)


def read_rows(pf, rows, columns: list[str] | None = None, use_threads: bool = True):
    """Rows `rows` (ascending positions in the file) of a `pyarrow.parquet.ParquetFile`, in that order, reading only
    the row groups that hold them (`use_threads`: decode a row group's columns in parallel)."""
    import numpy as np
    import pyarrow as pa

    ends = np.cumsum([pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)])
    group = np.searchsorted(ends, rows, side="right")
    parts = [pf.read_row_group(int(g), columns=columns, use_threads=use_threads)
             .take(pa.array(rows[group == g] - (ends[g - 1] if g else 0))) for g in np.unique(group)]
    if parts:
        return pa.concat_tables(parts)
    schema = pf.schema_arrow
    return (pa.schema([schema.field(c) for c in columns]) if columns else schema).empty_table()


class RankFilesReader(PipelineStep):
    """Reads the Parquet file `file` that task `rank` of an earlier stage wrote in `folder`."""

    type = "📖 - READER"
    name = "mixture stage files"

    def __init__(self, folder: str, file: TaskFile, columns: list[str] | None = None):
        super().__init__()
        self.folder, self.file, self.columns = folder, file, columns

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import pyarrow.parquet as pq

        if data:
            yield from data
        fs, root = fsspec.core.url_to_fs(self.folder)
        path = self.file.path(root, rank)
        if not fs.exists(path):
            return
        with fs.open(path, "rb") as f:
            for batch in row_group_batches(pq.ParquetFile(f), 128, self.columns):
                self.stat_update("documents", value=batch.num_rows)
                for rec in batch.to_pylist():
                    text, doc_id = rec.pop("text"), rec.pop("id")
                    yield Document(text=text, id=doc_id, metadata=rec)
