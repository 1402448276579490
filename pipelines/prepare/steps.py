"""The build's own datatrove steps: normalise, quarantine, gates, decontaminate, annotate, sample, fit, assign."""

from __future__ import annotations

import contextlib
import heapq

import fsspec
import numpy as np
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.writers.disk_base import DiskWriter

from mixture.fit.one_thread import one_thread
from mixture.pipelines.runtime.datatrove_compat import CountedFilter
from mixture.store.formats import TokenizerRef
from mixture.store.io import write_atomic, write_parquet_atomic
from mixture.text.content_type import detect_content_type
from mixture.text.gates import gate_counts
from mixture.text.language import LanguageIdentifier
from mixture.text.normalize import normalize_text, stable_unit
from mixture.text.quality import raw_quality_score


class Normalize(PipelineStep):
    """Unicode NFC and whitespace normalisation; a text that normalises to nothing becomes bad input."""

    type = "✂️ - FORMAT"
    name = "normalise text"

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for doc in data:
            if "_bad" not in doc.metadata:
                doc.text = normalize_text(doc.text)
                if not doc.text:
                    m = doc.metadata
                    rel, _, idx = m["origin"].rpartition(":")
                    m.update(_bad="empty_text", _detail="only whitespace", _raw="", _raw_bytes=0, _file=rel, _record=int(idx))
            yield doc


class Quarantine(PipelineStep):
    """Writes bad input records to `_quarantine/` with their reason and passes the rest on."""

    type = "🔻 - FILTER"
    name = "quarantine bad input"

    def __init__(self, writer: DiskWriter):
        super().__init__()
        self.writer = writer

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        with self.writer as w:
            for doc in data:
                if "_bad" in doc.metadata:
                    self.stat_update("bad_input", f"bad_{doc.metadata['_bad']}")
                    w.write(doc, rank)
                    continue
                yield doc


class Gates(CountedFilter):
    """Length and heuristic filters; each drop is recorded with the filter's name as its reason."""

    name = "length and heuristic gates"

    def __init__(self, min_chars: int, max_chars: int, min_words: int, max_symbol_ratio: float,
                 max_duplicate_line_ratio: float, exclusion_writer: DiskWriter | None = None):
        super().__init__(exclusion_writer)
        self.min_chars, self.max_chars, self.min_words = min_chars, max_chars, min_words
        self.max_symbol_ratio, self.max_dup_lines = max_symbol_ratio, max_duplicate_line_ratio

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        text = doc.text
        n = len(text)
        if n < self.min_chars:
            return False, "min_chars"
        if n > self.max_chars:
            return False, "max_chars"
        few_words, symbols, head, lines, repeated = gate_counts(text, self.min_words)
        if few_words:
            return False, "min_words"
        if symbols / max(1, head) > self.max_symbol_ratio:
            return False, "symbol_ratio"
        if lines >= 10 and repeated / lines > self.max_dup_lines:
            return False, "duplicate_lines"
        return True


class Annotate(PipelineStep):
    """Content type, language and raw quality score (heuristic signals, or a local fastText model)."""

    type = "🏷 - ANNOTATE"
    name = "content type + language + raw quality"

    def __init__(self, scorer: str = "heuristic", fasttext_model: str | None = None, fasttext_label: str = "__label__hq",
                 language_model: str = "cld2", language_min_score: float = 0.5):
        super().__init__()
        self.scorer, self.fasttext_model, self.fasttext_label = scorer, fasttext_model, fasttext_label
        self.language = LanguageIdentifier(language_model, language_min_score)
        self._ft = None

    def score(self, text: str) -> float:
        if self.scorer != "fasttext":
            return raw_quality_score(text)
        if self._ft is None:
            import fasttext

            self._ft = fasttext.load_model(self.fasttext_model)
        labels, probs = self._ft.predict(text[:20_000].replace("\n", " "), k=-1)
        return float(dict(zip(labels, probs, strict=True)).get(self.fasttext_label, 0.0))

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for doc in data:
            m = doc.metadata
            m["content_type"] = detect_content_type(doc.text)
            m["language"], m["language_score"] = self.language.identify(doc.text)
            m["raw_score"] = self.score(doc.text)
            yield doc


SAMPLE_GROUP = 64  # rows per row group of a task's sample candidates: finalize reads only the groups it picks from


def write_parquet_rows(uri: str, rows: list[dict], schema) -> None:
    """Write rows to `uri` through a temporary name, then rename (readers never see a partial file)."""
    import pyarrow as pa

    write_parquet_atomic(uri, pa.Table.from_pylist(rows, schema=schema), row_group_size=SAMPLE_GROUP)


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

    def __init__(self, rate: float, seed: int, work: str, fuzzy_drops: str | None, output_folder: str,
                 tokenizer: TokenizerRef | None = None):
        super().__init__()
        self.rate, self.seed, self.work, self.fuzzy_drops = rate, seed, work, fuzzy_drops
        self.output_folder, self.tokenizer = output_folder, tokenizer

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from mixture.fit.sample_files import FILL, write_part
        from mixture.pipelines.dedup.fingerprints import load_drops
        from mixture.pipelines.sources.files import read_rows

        drops = load_drops(self.work, rank, self.fuzzy_drops)
        fs, root = fsspec.core.url_to_fs(f"{self.work}/prepared/{rank:05d}.parquet")
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

    def _pick(self, pf, drops: dict) -> tuple[dict[int, float], set[int]]:
        """({row of the file: draw} of the picked rows, the fill candidates among them): draws below the rate, plus
        each source's lowest draw when it has none below the rate here."""
        picked, first_by_source, sampled_sources = {}, {}, set()
        row = -1
        for batch in pf.iter_batches(columns=["idx", "id", "source"], batch_size=8192):
            for idx, doc_id, src in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                row += 1
                if idx in drops:
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

    def _load(self, rank: int):
        from mixture.fit.model_store import load_model, read_sample_assignments
        from mixture.tokenizer import load_tokenizer

        self.model = load_model(self.model_dir)
        self.tok = load_tokenizer(self.tokenizer)
        # the fit's (cluster, fine cluster, distance) of this task's sample documents, by id
        self._known_rows, *self._known, self._known_tokens = read_sample_assignments(
            self.assignments_folder and f"{self.assignments_folder}/{rank:05d}.parquet")

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
        m = doc.metadata
        cell = (m["cluster"], m["quality"])
        row = {k: m.get(k) for k in ("source", "category", "origin", "n_tokens", "content_type", "language",
                                      "language_score", "raw_score", "quality_score", "cluster", "quality",
                                      "fine_cluster", "cluster_distance")}
        row.update(id=doc.id, text=doc.text, n_chars=len(doc.text))
        for heap, n, key in ((uniform.setdefault(cell, []), self.n_uniform, stable_unit(doc.id, self.seed)),
                             (exemplars.setdefault(cell, []), self.n_exemplars, m["cluster_distance"])):
            self._seq += 1
            item = (-key, doc.id, self._seq, row)
            if len(heap) < n:
                heapq.heappush(heap, item)
            elif n and item > heap[0]:
                heapq.heapreplace(heap, item)

    def _write_samples(self, rank: int, uniform: dict, exemplars: dict) -> None:
        import pyarrow as pa

        from mixture.pipelines.schemas import SAMPLE

        rows = []
        for kind, heaps in (("uniform", uniform), ("exemplar", exemplars)):
            for heap in heaps.values():
                for neg_key, _, _, row in heap:
                    rows.append({**row, "kind": kind, "rank": 0, "key": -neg_key})
        write_parquet_rows(f"{self.samples_folder}/{rank:05d}.parquet", rows, SAMPLE.append(pa.field("key", pa.float64())))

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from mixture.pipelines.dedup.fingerprints import text_batches

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


class FitModel(PipelineStep):
    """Fits embedder, clusters, labels and calibration on the sample; writes the frozen model to `_model/`."""

    type = "🧮 - FIT"
    name = "fit model"

    def __init__(self, sample_folder: str, model_dir: str, params: dict, assignments_folder: str | None = None):
        super().__init__()
        self.sample_folder, self.model_dir, self.params = sample_folder, model_dir, params
        self.assignments_folder = assignments_folder

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from mixture.fit.model_store import fit_and_save

        with contextlib.suppress(StopIteration):
            fit_and_save(self.sample_folder, self.model_dir, self.params, self.assignments_folder)
        return
        yield


class ClearTaskFiles(PipelineStep):
    """First step of a stage: removes what an earlier, killed attempt of the same task left behind.

    A task killed mid-write leaves partial files under their final names; its rerun rewrites most of them, but a
    file it would not rewrite (e.g. a rotated `001_part-…` shard) must not survive into the store. Each attempt
    leaves a marker (`<attempts>/<rank>`) before it writes; only a task that finds one searches for such files. The
    search lists every partition or cell folder, so one per task would cost T × T listings over a stage of T tasks;
    a stage redone under a new key loses its files and markers together (reuse.clear_stage)."""

    type = "🧹 - CLEAN"
    name = "clear files of an earlier attempt"

    def __init__(self, patterns: list[str], attempts: str):
        super().__init__()
        self.patterns = patterns  # fsspec globs with {rank} (5 digits), e.g. <store>/cluster=*/quality=*/*part-{rank}.parquet
        self.attempts = attempts  # folder of the attempt markers

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        fs, marker = fsspec.core.url_to_fs(f"{self.attempts}/{rank:05d}")
        if fs.exists(marker):
            for pattern in self.patterns:
                fs, path = fsspec.core.url_to_fs(pattern.replace("{rank}", f"{rank:05d}"))
                for stale in fs.glob(path):
                    fs.rm(stale)
                    self.stat_update("removed_files")
        else:
            fs.makedirs(marker.rsplit("/", 1)[0], exist_ok=True)
            write_atomic(fs, marker, b"")
        if data:
            yield from data
