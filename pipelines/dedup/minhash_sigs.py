"""Stage `minhash_sigs`: the MinHash signatures `prepare` computed, of the fuzzy-group documents the exact stages
kept, as datatrove's signature files, one per band, sorted (the input of `minhash_buckets`)."""

from __future__ import annotations

import os

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.minhash_buckets import signature_record, slice_offsets
from mixture.pipelines.dedup.route_drops import DropList, load_drops
from mixture.pipelines.dedup.sorted_runs import sorted_blocks
from mixture.pipelines.runtime.scratch import scratch
from mixture.stages.registry import (
    DROP_LISTS,
    PREPARED,
    SIGNATURES,
    SIGNATURES_DIR,
    SLICE_INDEX,
    bucket_slices,
)
from mixture.store.io import open_atomic, write_atomic
from mixture.store.row_groups import row_group_batches


class MinhashSigs(PipelineStep):
    """Writes the MinHash signatures of task `rank`'s surviving fuzzy-group documents as datatrove signature files
    (SIGNATURES, one per band: rows of `rows` uint64 and the document index, sorted), read from the prepared file's
    `minhash` column alone; with `slices` > 1, beside each the first record of each first-hash slice the bucket stage
    reads (SLICE_INDEX, slice_offsets)."""

    type = "🫂 - DEDUP"
    name = "🎯 MinHash signatures"

    def __init__(self, prepared: str, drop_lists: str, output_folder: str, bands: int, rows: int, slices: int = 1):
        super().__init__()
        self.prepared, self.drop_lists, self.output_folder = prepared, drop_lists, output_folder
        self.bands, self.rows, self.slices = bands, rows, slices

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        drops = load_drops(self.drop_lists, rank, None)
        dtype = signature_record(self.rows)
        fs, root = fsspec.core.url_to_fs(PREPARED.path(self.prepared, rank))
        out_fs, out_root = fsspec.core.url_to_fs(self.output_folder)
        n = 0
        with scratch("sigs-") as tmp:
            # one unsorted local file per band, written batch by batch; then each band alone is sorted and published
            bands = [open(f"{tmp}/{b}", "wb") for b in range(self.bands)]  # noqa: SIM115 - closed below
            try:
                if fs.exists(root):
                    with fs.open(root, "rb") as f:
                        for batch in row_group_batches(pq.ParquetFile(f), 4096, ["idx", "minhash"]):
                            n += self._spill(batch, drops, bands, dtype)
            finally:
                for band in bands:
                    band.close()
            for b in range(self.bands):
                self._publish(f"{tmp}/{b}", dtype, out_fs, out_root, rank, b)
        self.stat_update("signatures", value=n)
        if data:
            yield from data

    def _publish(self, unsorted: str, dtype: np.dtype, fs, root: str, rank: int, band: int) -> None:
        """One band's records sorted (the bucket stage merges files sorted by signature) in bounded memory, written
        as they come; with slices > 1 the slice index first: a published signature file always has its index."""
        index = np.zeros(self.slices + 1, dtype="<u8")  # a count of records per entry: the blocks' indexes add up
        with open_atomic(fs, SIGNATURES.path(root, rank, band)) as f:
            for block in sorted_blocks(unsorted, dtype):
                index += slice_offsets(block["h0"], self.slices)
                f.write(block.tobytes())
            if self.slices > 1:
                write_atomic(fs, SLICE_INDEX.path(root, rank, band), index.tobytes())
        os.remove(unsorted)

    def _spill(self, batch: pa.RecordBatch, drops: DropList, bands: list, dtype: np.dtype) -> int:
        dropped = drops.dropped(batch.column(0).to_numpy()).tolist()
        keep = [(i, sig) for i, sig, drop in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), dropped,
                                                 strict=True) if sig is not None and not drop]
        if not keep:
            return 0
        matrix = np.frombuffer(b"".join(sig for _, sig in keep), dtype="<u8").reshape(len(keep), -1)
        for b, band in enumerate(bands):
            records = np.empty(len(keep), dtype=dtype)
            for j in range(self.rows):
                records[f"h{j}"] = matrix[:, b * self.rows + j]
            records["doc"] = [i for i, _ in keep]
            band.write(records.tobytes())
        return len(keep)


def band_files(ctx: BuildContext) -> tuple[list[str], tuple[int, int]]:
    """The globs of each band's signature files and (slices, record bytes): what the stage's combine round
    combines, a partition per slice (pipelines/dedup/combine.py combine_signatures)."""
    fz = ctx.spec.processing.dedup.fuzzy
    root = ctx.at(SIGNATURES_DIR)
    return ([SIGNATURES.every(root, b) for b in range(fz.bands)],
            (bucket_slices(fz.bands, ctx.tasks), signature_record(fz.permutations // fz.bands).itemsize))


def steps(ctx: BuildContext) -> list:
    fz = ctx.spec.processing.dedup.fuzzy
    # fields, not the rows_per_band property: the stage-key test counts a property as reading the whole section
    return [MinhashSigs(ctx.at(PREPARED.folder), ctx.at(DROP_LISTS), ctx.at(SIGNATURES_DIR), fz.bands,
                        fz.permutations // fz.bands, slices=bucket_slices(fz.bands, ctx.tasks))]
