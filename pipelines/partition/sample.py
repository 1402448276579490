"""Stage `sample`: a seeded sample of the documents dedup kept, its tokens and terms counted for the fit."""

from __future__ import annotations

import fsspec
import numpy as np
import pyarrow.parquet as pq
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.context import BuildContext, BuildError
from mixture.pipelines.dedup.drop_lists import dropped_count
from mixture.pipelines.dedup.route_drops import DropList
from mixture.stages.registry import DEDUP, DROP_LISTS, PREPARED, SAMPLE_DIR
from mixture.store.formats import NearDuplicateReport, TokenizerRef, read_model
from mixture.store.row_groups import row_group_batches
from mixture.text.normalize import stable_unit


class SampleForFit(PipelineStep):
    """Seeded uniform sample (rate r) of the documents dedup keeps, plus fill candidates: the lowest-draw kept
    document of every source this task drew nothing of (the fit keeps one per source no task drew, so every source
    is in the sample, the same one for any task count); read column-wise from the prepared file, the text of the
    picked rows only. Each picked document's tokens are counted here (`n_tokens`, with the build's tokenizer): the
    fit weighs the sample by them and `assign` takes them for the sample documents instead of counting again. Its
    terms are counted here too (mixture.fit.sample_files): the fit merges the tasks' counts instead of tokenising
    the whole sample itself."""

    type = "🎲 - SAMPLE"
    name = "sample for the fit"

    COLUMNS = ["id", "text", "source", "content_type", "language", "raw_score"]

    def __init__(self, rate: float, seed: int, prepared: str, drop_lists: str, fuzzy_drops: str | None,
                 output_folder: str, tokenizer: TokenizerRef | None = None):
        super().__init__()
        self.rate, self.seed, self.prepared, self.output_folder = rate, seed, prepared, output_folder
        self.drop_lists, self.fuzzy_drops, self.tokenizer = drop_lists, fuzzy_drops, tokenizer

    def preload(self) -> None:
        """The token counter, loaded once per process (pipelines/runtime/preload.py)."""
        if self.tokenizer:
            from mixture.tokenizer import load_tokenizer

            load_tokenizer(self.tokenizer)

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from mixture.fit.sample_files import FILL, write_part
        from mixture.pipelines.dedup.route_drops import load_drops
        from mixture.pipelines.sources.files import read_rows

        drops = load_drops(self.drop_lists, rank, self.fuzzy_drops)
        fs, root = fsspec.core.url_to_fs(PREPARED.path(self.prepared, rank))
        schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("source", pa.string()),
                            ("content_type", pa.string()), ("language", pa.string()), ("raw_score", pa.float64()),
                            ("u", pa.float64()), *([("n_tokens", pa.int64())] if self.tokenizer else []),
                            (FILL, pa.bool_())])
        picked: dict[int, float] = {}
        fill: set[int] = set()
        out = schema.empty_table()
        if fs.exists(root):
            with fs.open(root, "rb") as f:
                pf = pq.ParquetFile(f)
                picked, fill = self._pick(pf, drops)
                rows = np.array(sorted(picked), dtype=np.int64)
                # second pass: only the row groups that hold a picked row (a few at full scale), never the rest's text
                table = read_rows(pf, rows, self.COLUMNS)
                table = table.append_column("u", pa.array([picked[r] for r in rows.tolist()], pa.float64()))
                if self.tokenizer:
                    from mixture.tokenizer import load_tokenizer

                    with self.track_time("tokens"):
                        counts = load_tokenizer(self.tokenizer).count_batch(table.column("text").to_pylist())
                    table = table.append_column("n_tokens", pa.array(counts, pa.int64()))
                table = table.append_column(FILL, pa.array([r in fill for r in rows.tolist()], pa.bool_()))
                out = table.cast(schema)
        with self.track_time("terms"):
            counted = write_part(self.output_folder, rank, out)
        self.stat_update("sampled", value=len(picked) - len(fill))
        self.stat_update("fill_candidates", value=len(fill))
        self.stat_update("terms", value=len(counted.terms))
        return
        yield

    def _pick(self, pf, drops: DropList) -> tuple[dict[int, float], set[int]]:
        """({row of the file: draw} of the picked rows, the fill candidates among them): draws below the rate, plus
        each source's lowest draw when it has none below the rate here."""
        picked, first_by_source, sampled_sources = {}, {}, set()
        row = -1
        for batch in row_group_batches(pf, 8192, ["idx", "id", "source"]):
            dropped = drops.dropped(batch.column(0).to_numpy()).tolist()
            for drop, doc_id, src in zip(dropped, *(c.to_pylist() for c in batch.columns[1:]), strict=True):
                row += 1
                if drop:
                    continue
                u = stable_unit(doc_id, self.seed)
                if u < self.rate:
                    picked[row] = u
                    sampled_sources.add(src)
                elif src not in first_by_source or u < first_by_source[src][1]:
                    first_by_source[src] = (row, u)
        fill = {i: u for s, (i, u) in first_by_source.items() if s not in sampled_sources}
        picked.update(fill)
        return picked, set(fill)


def count_kept(ctx: BuildContext) -> int:
    """Documents dedup keeps: prepared rows (Parquet footers) minus the drops the dedup tasks counted (one small
    file per task, not a footer per drop file)."""
    fs, root = fsspec.core.url_to_fs(ctx.at(PREPARED.folder))
    fs.invalidate_cache(root)  # written by the stage's workers (other processes)
    total = 0
    for p in fs.glob(PREPARED.every(root)):
        with fs.open(p, "rb") as f:
            total += pq.ParquetFile(f).metadata.num_rows
    total -= dropped_count(ctx.at(DEDUP))
    if ctx.near_duplicates_report:
        total -= read_model(NearDuplicateReport, ctx.near_duplicates_report).drops
    return total


def steps(ctx: BuildContext) -> list:
    """The fit's sample; its rate (sample_docs of the documents dedup kept) is read from the dedup stages' results."""
    total = count_kept(ctx)
    if total == 0:
        raise BuildError("no document survived cleaning, filtering and dedup; check the sources and filters")
    return sample_for_fit(ctx, min(1.0, ctx.spec.partition.clusters.sample_docs / total))


def sample_for_fit(ctx: BuildContext, rate: float) -> list:
    return [SampleForFit(rate, ctx.spec.seed, ctx.at(PREPARED.folder), ctx.at(DROP_LISTS), ctx.fuzzy_drops,
                         ctx.at(SAMPLE_DIR), ctx.refs.tokenizer)]
