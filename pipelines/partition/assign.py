"""Stage `assign`: the listed duplicates routed out; each document's cluster, quality and tokens; the cells written
with their sample candidates."""

from __future__ import annotations

import heapq

import numpy as np
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.fit.one_thread import one_thread
from mixture.fit.sample_files import part_file
from mixture.pipelines import writers
from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.route_drops import RouteDrops
from mixture.pipelines.finalize.shard_facts import ShardFacts
from mixture.pipelines.sources.files import RankFilesReader
from mixture.stages.registry import (
    CELL_SAMPLES,
    DROP_LISTS,
    FIT_ASSIGNMENTS_DIR,
    ID_QUARANTINED,
    PREPARED,
    SHARD_FACTS,
)
from mixture.store import drops, layout
from mixture.store.formats import TokenizerRef
from mixture.store.io import open_atomic
from mixture.store.schema import short_column_options
from mixture.text.normalize import stable_unit

SAMPLE_FIELDS = ("source", "category", "origin", "n_tokens", "content_type", "code_language", "language",
                 "language_score", "raw_score", "quality_score", "cluster", "quality", "fine_cluster", "cluster_distance")
SAMPLE_GROUP = 64  # rows per row group of a task's sample candidates: finalize reads only the groups it picks from


def write_parquet_rows(uri: str, rows: list[dict], schema) -> None:
    """Write rows to `uri`, published atomically, SAMPLE_GROUP rows to a row group, each group converted on its own:
    a task's samples hold a few documents of every cell, and converted at once they doubled their texts at the
    task's end, its peak. The texts get neither a dictionary nor statistics (short_column_options)."""
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    fs, path = fsspec.core.url_to_fs(uri)
    options = short_column_options(schema)
    with open_atomic(fs, path) as f, pq.ParquetWriter(f, schema, compression="zstd", **options) as out:
        for at in range(0, len(rows), SAMPLE_GROUP):
            out.write_table(pa.Table.from_pylist(rows[at:at + SAMPLE_GROUP], schema=schema))


class Assign(PipelineStep):
    """Embeds, assigns cluster and quality through the frozen model, counts tokens, collects cell samples.

    A document of the fit's sample takes the cluster the fit computed for it (`assignments_folder`, the file of
    this task's rank) instead of being embedded again, and the tokens the sample stage counted (unless token ids
    are kept): the same bits, and when the sample is the whole input (a corpus under `sample_docs` documents) no
    document is embedded or tokenized twice."""

    type = "🏷 - ASSIGN"
    name = "cluster + quality + tokens"

    def __init__(self, model_dir: str, tokenizer: TokenizerRef, edges: list[float], k: int, keep_token_ids: bool,
                 samples_per_cell: int, exemplars_per_cell: int, seed: int, samples_folder: str, batch_size: int = 256,
                 assignments_folder: str | None = None):
        super().__init__()
        self.assignments_folder = assignments_folder
        self.model_dir, self.tokenizer, self.edges, self.k = model_dir, tokenizer, edges, k
        self.keep_token_ids, self.seed, self.samples_folder = keep_token_ids, seed, samples_folder
        self.n_uniform, self.n_exemplars, self.batch_size = samples_per_cell, exemplars_per_cell, batch_size

    def preload(self) -> None:
        """The token counter, loaded once per process (pipelines/runtime/preload.py)."""
        from mixture.tokenizer import load_tokenizer

        load_tokenizer(self.tokenizer)

    def _load(self, rank: int):
        from mixture.fit.model_store import load_model, read_sample_assignments
        from mixture.tokenizer import load_tokenizer

        self.model = load_model(self.model_dir)
        self.tok = load_tokenizer(self.tokenizer)
        # the fit's (cluster, fine cluster, distance) of this task's sample documents, by id
        self._known_rows, *self._known, self._known_tokens = read_sample_assignments(
            self.assignments_folder and f"{self.assignments_folder}/{part_file(rank)}")

    def _clusters(self, batch: list[Document], texts: list[str]) -> tuple[np.ndarray, ...]:
        """(cluster, fine cluster, distance) of the batch: the fit's for its sample documents, embedded otherwise."""
        rows = self._known_rows
        found = [rows.get(d.id, -1) for d in batch] if rows else []
        done = [i for i, r in enumerate(found) if r >= 0]
        if not done:
            return self.model.clusters.assign(self.model.embedder.transform(texts))
        out = tuple(np.empty(len(batch), a.dtype) for a in self._known)  # the dtypes ClusterModel.assign gives
        at = [found[i] for i in done]
        for o, a in zip(out, self._known, strict=True):
            o[done] = a[at]
        if todo := [i for i, r in enumerate(found) if r < 0]:
            for o, a in zip(out, self.model.clusters.assign(self.model.embedder.transform([texts[i] for i in todo])),
                            strict=True):
                o[todo] = a
        return out

    def _token_counts(self, batch: list[Document], texts: list[str]) -> list[int]:
        """Tokens of the batch's texts: the sample stage's count for a sample document, counted otherwise."""
        rows, known = self._known_rows, self._known_tokens
        counts = [int(known[r]) if (r := rows.get(d.id, -1)) >= 0 else -1 for d in batch] if rows else [-1] * len(batch)
        if todo := [i for i, n in enumerate(counts) if n < 0]:
            for i, n in zip(todo, self.tok.count_batch([texts[i] for i in todo]), strict=True):
                counts[i] = n
        return counts

    def _annotate(self, batch: list[Document]) -> None:
        from mixture.fit.calibration import bucket, calibrate, group_knots
        from mixture.store.layout import cluster_width

        texts = [d.text for d in batch]
        cluster, fine, dist = self._clusters(batch, texts)
        raw = np.array([d.metadata["raw_score"] for d in batch])
        cal = np.empty(len(batch))
        groups: dict[tuple[str, str], list[int]] = {}
        for i, d in enumerate(batch):
            groups.setdefault((d.metadata["content_type"], d.metadata["language"]), []).append(i)
        for (ct, lang), idx in groups.items():
            cal[idx] = calibrate(raw[idx], group_knots(self.model.calibration, self.model.group_calibration, ct, lang))
        quality = bucket(cal, self.edges)
        ids = self.tok.encode_batch(texts) if self.keep_token_ids else None
        n_tokens = [len(t) for t in ids] if ids is not None else self._token_counts(batch, texts)
        width = cluster_width(self.k)
        for i, d in enumerate(batch):
            m = d.metadata
            m.update(
                cluster=int(cluster[i]), cluster_dir=f"{int(cluster[i]):0{width}d}", quality=int(quality[i]),
                fine_cluster=int(fine[i]), cluster_distance=float(dist[i]), quality_score=float(cal[i]),
                n_tokens=n_tokens[i],
            )
            if self.keep_token_ids:
                m["input_ids"] = ids[i]

    def _collect(self, doc: Document, uniform: dict, exemplars: dict) -> None:
        """Offers the document to its cell's two heaps (a uniform draw, the nearest to the centroid); its sample row
        is built only when a heap takes it (a few documents of a cell, not every one)."""
        m = doc.metadata
        cell = (m["cluster"], m["quality"])
        row = None
        for heap, n, key in ((uniform.setdefault(cell, []), self.n_uniform, stable_unit(doc.id, self.seed)),
                             (exemplars.setdefault(cell, []), self.n_exemplars, m["cluster_distance"])):
            self._seq += 1
            head = (-key, doc.id, self._seq)  # unique (seq): an item compares as its head
            if len(heap) < n or (n and head > heap[0][:3]):
                if row is None:
                    row = {k: m.get(k) for k in SAMPLE_FIELDS}
                    row.update(id=doc.id, text=doc.text, n_chars=len(doc.text))
                (heapq.heappush if len(heap) < n else heapq.heapreplace)(heap, (*head, row))

    def _write_samples(self, rank: int, uniform: dict, exemplars: dict) -> None:
        import pyarrow as pa

        from mixture.pipelines.schemas import SAMPLE

        rows = []
        for kind, heaps in (("uniform", uniform), ("exemplar", exemplars)):
            for heap in heaps.values():
                for neg_key, _, _, row in heap:
                    rows.append({**row, "kind": kind, "rank": 0, "key": -neg_key})
        write_parquet_rows(CELL_SAMPLES.path(self.samples_folder, rank), rows,
                           SAMPLE.append(pa.field("key", pa.float64())))

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from mixture.pipelines.prepare.fingerprint import text_batches

        self._load(rank)
        self._seq = 0
        uniform: dict = {}
        exemplars: dict = {}
        for batch in text_batches(data, self.batch_size):
            # one BLAS thread, as the fit: a product's last bits, hence a near tie, must not depend on cpus_per_task
            with self.track_time("batch"), one_thread():
                self._annotate(batch)
            self.stat_update("documents", value=len(batch))
            self.stat_update("tokens", value=sum(d.metadata["n_tokens"] for d in batch))
            for doc in batch:
                self._collect(doc, uniform, exemplars)
                yield doc
        self._write_samples(rank, uniform, exemplars)


ASSIGN_COLUMNS = ["id", "text", "source", "category", "origin", "content_type", "code_language", "language", "language_score",
                  "raw_score", "idx"]


def steps(ctx: BuildContext) -> list:
    s, c = ctx.spec.store, ctx.spec.partition
    assign = Assign(ctx.at(layout.MODEL_DIR), ctx.refs.tokenizer, list(c.quality.edges), c.clusters.k,
                    s.keep_token_ids, s.samples_per_cell, s.exemplars_per_cell, ctx.spec.seed,
                    ctx.at(CELL_SAMPLES.folder), assignments_folder=ctx.at(FIT_ASSIGNMENTS_DIR))
    route = RouteDrops(ctx.at(DROP_LISTS), ctx.fuzzy_drops, {
        "duplicate_id": writers.quarantine_writer(ctx.store, ID_QUARANTINED),
        **{r.name: writers.drop_writer(ctx.store, r.name) for r in drops.dropped_by("assign")}})
    store = writers.store_writer(ctx.store, s.keep_token_ids, s.shard_bytes, s.compression)
    return [RankFilesReader(ctx.at(PREPARED.folder), PREPARED, columns=ASSIGN_COLUMNS), route, assign, store,
            ShardFacts(ctx.store, ctx.at(SHARD_FACTS.folder), store)]
