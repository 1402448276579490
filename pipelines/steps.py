"""The build's own datatrove steps: normalise, quarantine, gates, decontaminate, annotate, sample, fit, assign."""

from __future__ import annotations

import contextlib
import heapq
import json
from collections import Counter

import fsspec
import numpy as np
import xxhash
from datatrove.data import Document, DocumentsPipeline
from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.writers.disk_base import DiskWriter

from mixture.store.io import write_parquet_atomic
from mixture.text.content_type import detect_content_type
from mixture.text.normalize import normalize_text, stable_unit
from mixture.text.quality import raw_quality_score
from pipelines.words import words as text_words

SYMBOLS_TO_IGNORE = set(" \t\n")


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


class Gates(BaseFilter):
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
        if len(text.split()) < self.min_words:
            return False, "min_words"
        head = text[:100_000]
        symbols = sum(1 for ch in head if not ch.isalnum() and ch not in SYMBOLS_TO_IGNORE)
        if symbols / max(1, len(head)) > self.max_symbol_ratio:
            return False, "symbol_ratio"
        lines = [ln for ln in head.split("\n") if ln.strip()]
        if len(lines) >= 10:
            counts = Counter(lines)
            dup = sum(c for c in counts.values() if c > 1) / len(lines)
            if dup > self.max_dup_lines:
                return False, "duplicate_lines"
        return True


def ngram_hashes(text: str, n: int) -> set[int]:
    """Hashes of the word n-grams of `text` (lower-cased words, punctuation ignored)."""
    words = text_words(text)
    return {xxhash.xxh3_64_intdigest(" ".join(words[i : i + n])) for i in range(len(words) - n + 1)}


def load_benchmark_index(benchmarks: list[dict], n: int) -> dict[int, str]:
    """{n-gram hash: 'benchmark:record id'} over the named fields of every benchmark record."""
    import pyarrow.parquet as pq

    index: dict[int, str] = {}
    for bench in benchmarks:
        fs, path = fsspec.core.url_to_fs(bench["uri"])
        files = sorted(fs.glob(path)) if any(c in path for c in "*?[") else [path]
        for file in files:
            if file.endswith(".parquet"):
                with fs.open(file, "rb") as f:
                    records = pq.read_table(f).to_pylist()
            else:
                with fs.open(file, "rb", compression="infer") as f:
                    records = [json.loads(line) for line in f if line.strip()]
            for i, rec in enumerate(records):
                tag = f"{bench['name']}:{rec.get('id', i)}"
                texts = [str(rec[k]) for k in bench["fields"] if rec.get(k)]
                for t in [*texts, " ".join(texts)]:
                    for h in ngram_hashes(t, n):
                        index.setdefault(h, tag)
    return index


class Decontaminate(BaseFilter):
    """Drops documents sharing at least `min_matches` distinct word n-grams with a benchmark record."""

    name = "n-gram decontamination"

    def __init__(self, benchmarks: list[dict], ngram: int, min_matches: int, exclusion_writer: DiskWriter | None = None):
        super().__init__(exclusion_writer)
        self.benchmarks, self.ngram, self.min_matches = benchmarks, ngram, min_matches
        self._index: dict[int, str] | None = None

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        if self._index is None:
            self._index = load_benchmark_index(self.benchmarks, self.ngram)
        if not self._index:
            return True
        hits = [self._index[h] for h in ngram_hashes(doc.text, self.ngram) if h in self._index]
        if len(hits) >= self.min_matches:
            tag, count = Counter(hits).most_common(1)[0]
            doc.metadata["drop_detail"] = f"{tag} ({len(hits)} matching {self.ngram}-grams)"
            return False, "contaminated"
        return True


class Annotate(PipelineStep):
    """Content type and raw quality score (heuristic signals, or a local fastText model)."""

    type = "🏷 - ANNOTATE"
    name = "content type + raw quality"

    def __init__(self, scorer: str = "heuristic", fasttext_model: str | None = None, fasttext_label: str = "__label__hq"):
        super().__init__()
        self.scorer, self.fasttext_model, self.fasttext_label = scorer, fasttext_model, fasttext_label
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
            with self.track_time():
                doc.metadata["content_type"] = detect_content_type(doc.text)
                doc.metadata["raw_score"] = self.score(doc.text)
                doc.metadata["group"] = "exempt" if doc.metadata.get("exempt") else "fuzzy"
            yield doc


class OnlyFuzzyGroup(PipelineStep):
    """Passes on only documents subject to fuzzy dedup (their order defines MinHash document indexes)."""

    type = "🔻 - FILTER"
    name = "fuzzy-dedup group"

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for doc in data:
            if not doc.metadata.get("exempt"):
                yield doc


def write_parquet_rows(uri: str, rows: list[dict], schema) -> None:
    """Write rows to `uri` through a temporary name, then rename (readers never see a partial file)."""
    import pyarrow as pa

    write_parquet_atomic(uri, pa.Table.from_pylist(rows, schema=schema))


class SampleForFit(PipelineStep):
    """Seeded uniform sample of documents (rate r), plus the first document of every source seen by this task."""

    type = "🎲 - SAMPLE"
    name = "sample for the fit"

    def __init__(self, rate: float, seed: int, output_folder: str):
        super().__init__()
        self.rate, self.seed, self.output_folder = rate, seed, output_folder

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import pyarrow as pa

        rows, first_by_source = [], {}
        for doc in data:
            u = stable_unit(doc.id, self.seed)
            row = {"id": doc.id, "text": doc.text, "source": doc.metadata["source"],
                   "content_type": doc.metadata["content_type"], "raw_score": doc.metadata["raw_score"], "u": u}
            if u < self.rate:
                rows.append(row)
            else:
                src = row["source"]
                if src not in first_by_source or u < first_by_source[src]["u"]:
                    first_by_source[src] = row
        kept_sources = {r["source"] for r in rows}
        rows += [r for s, r in first_by_source.items() if s not in kept_sources]
        schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("source", pa.string()),
                            ("content_type", pa.string()), ("raw_score", pa.float64()), ("u", pa.float64())])
        write_parquet_rows(f"{self.output_folder}/{rank:05d}.parquet", rows, schema)
        return
        yield


class Assign(PipelineStep):
    """Embeds, assigns cluster and quality through the frozen model, counts tokens, collects cell samples."""

    type = "🏷 - ASSIGN"
    name = "cluster + quality + tokens"

    def __init__(self, model_dir: str, tokenizer: str, edges: list[float], k: int, keep_token_ids: bool,
                 samples_per_cell: int, exemplars_per_cell: int, seed: int, samples_folder: str, batch_size: int = 256):
        super().__init__()
        self.model_dir, self.tokenizer, self.edges, self.k = model_dir, tokenizer, edges, k
        self.keep_token_ids, self.seed, self.samples_folder = keep_token_ids, seed, samples_folder
        self.n_uniform, self.n_exemplars, self.batch_size = samples_per_cell, exemplars_per_cell, batch_size

    def _load(self):
        from mixture.fit.model_store import load_model
        from mixture.tokenizer import load_tokenizer

        self.model = load_model(self.model_dir)
        self.tok = load_tokenizer(self.tokenizer)

    def _annotate(self, batch: list[Document]) -> None:
        from mixture.fit.calibration import bucket, calibrate
        from mixture.store.layout import cluster_width

        texts = [d.text for d in batch]
        x = self.model.embedder.transform(texts)
        cluster, fine, dist = self.model.clusters.assign(x)
        raw = np.array([d.metadata["raw_score"] for d in batch])
        cal = np.empty(len(batch))
        types = [d.metadata["content_type"] for d in batch]
        for ct in set(types):
            idx = [i for i, t in enumerate(types) if t == ct]
            cal[idx] = calibrate(raw[idx], self.model.calibration[ct]["knots"])
        quality = bucket(cal, self.edges)
        ids = self.tok.encode_batch(texts)
        width = cluster_width(self.k)
        for i, d in enumerate(batch):
            m = d.metadata
            m.update(
                cluster=int(cluster[i]), cluster_dir=f"{int(cluster[i]):0{width}d}", quality=int(quality[i]),
                fine_cluster=int(fine[i]), cluster_distance=float(dist[i]), quality_score=float(cal[i]),
                n_tokens=len(ids[i]),
            )
            if self.keep_token_ids:
                m["input_ids"] = ids[i]

    def _collect(self, doc: Document, uniform: dict, exemplars: dict) -> None:
        m = doc.metadata
        cell = (m["cluster"], m["quality"])
        row = {k: m.get(k) for k in ("source", "category", "origin", "n_tokens", "content_type", "raw_score",
                                      "quality_score", "cluster", "quality", "fine_cluster", "cluster_distance")}
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

        from pipelines.schemas import SAMPLE

        rows = []
        for kind, heaps in (("uniform", uniform), ("exemplar", exemplars)):
            for heap in heaps.values():
                for neg_key, _, _, row in heap:
                    rows.append({**row, "kind": kind, "rank": 0, "key": -neg_key})
        write_parquet_rows(f"{self.samples_folder}/{rank:05d}.parquet", rows, SAMPLE.append(pa.field("key", pa.float64())))

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from datatrove.utils.batching import batched

        self._load()
        self._seq = 0
        uniform: dict = {}
        exemplars: dict = {}
        for batch in batched(data, self.batch_size):
            with self.track_time("batch"):
                self._annotate(batch)
            for doc in batch:
                self._collect(doc, uniform, exemplars)
                self.stat_update("documents")
                self.stat_update("tokens", value=doc.metadata["n_tokens"])
                yield doc
        self._write_samples(rank, uniform, exemplars)


class FitModel(PipelineStep):
    """Fits embedder, clusters, labels and calibration on the sample; writes the frozen model to `_model/`."""

    type = "🧮 - FIT"
    name = "fit model"

    def __init__(self, sample_folder: str, model_dir: str, params: dict):
        super().__init__()
        self.sample_folder, self.model_dir, self.params = sample_folder, model_dir, params

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from mixture.fit.model_store import fit_and_save

        with contextlib.suppress(StopIteration):
            fit_and_save(self.sample_folder, self.model_dir, self.params)
        return
        yield


class ClearTaskFiles(PipelineStep):
    """First step of a stage: removes what an earlier, killed attempt of the same task left behind.

    A task killed mid-write leaves partial files under their final names; its rerun rewrites most of them, but a
    file it would not rewrite (e.g. a rotated `001_part-…` shard) must not survive into the store."""

    type = "🧹 - CLEAN"
    name = "clear files of an earlier attempt"

    def __init__(self, patterns: list[str]):
        super().__init__()
        self.patterns = patterns  # fsspec globs with {rank} (5 digits), e.g. <store>/cluster=*/quality=*/*part-{rank}.parquet

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        for pattern in self.patterns:
            fs, path = fsspec.core.url_to_fs(pattern.replace("{rank}", f"{rank:05d}"))
            for stale in fs.glob(path):
                fs.rm(stale)
                self.stat_update("removed_files")
        if data:
            yield from data


class FindDuplicateIds(PipelineStep):
    """One task: ids used by more than one document. The first occurrence (sources in spec order, then file, then
    record) keeps the id; every later one is listed in `output` (Parquet) with the occurrence that owns the id."""

    type = "🫂 - DEDUP"
    name = "find duplicate ids"

    def __init__(self, ids_folder: str, output: str):
        super().__init__()
        self.ids_folder, self.output = ids_folder, output

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        import duckdb
        import pyarrow as pa
        import pyarrow.dataset as pads

        from pipelines.writers import IDS

        fs, root = fsspec.core.url_to_fs(self.ids_folder)
        files = sorted(fs.glob(f"{root}/*.parquet"))
        schema = IDS.append(pa.field("first_source", pa.string())).append(pa.field("first_file", pa.string())) \
            .append(pa.field("first_record", pa.int64()))
        con = duckdb.connect()
        ids = pads.dataset(files, filesystem=fs, format="parquet", schema=IDS)  # streamed, DuckDB spills if needed
        con.register("ids", ids)
        table = con.sql("""
            WITH dup AS (SELECT * FROM ids WHERE id IN (SELECT id FROM ids GROUP BY id HAVING count(*) > 1)),
            ranked AS (SELECT *, row_number() OVER w AS n, first_value(source) OVER w AS first_source,
                              first_value(file) OVER w AS first_file, first_value(record) OVER w AS first_record
                       FROM dup WINDOW w AS (PARTITION BY id ORDER BY source_order, file, record))
            SELECT id, source, source_order, file, record, rank, first_source, first_file, first_record
            FROM ranked WHERE n > 1 ORDER BY rank, source_order, file, record""").to_arrow_table()
        con.close()
        self.stat_update("duplicate_ids", value=table.num_rows)
        write_parquet_atomic(self.output, table.cast(schema), compression="snappy")
        if data:
            yield from data


class DuplicateIds(PipelineStep):
    """Drops the documents whose id belongs to an earlier occurrence (see FindDuplicateIds); with a writer they are
    quarantined with reason `duplicate_id`, without one (a later stage repeating the same cut) they vanish quietly."""

    type = "🔻 - FILTER"
    name = "duplicate ids"

    def __init__(self, dups_file: str, writer: DiskWriter | None = None):
        super().__init__()
        self.dups_file, self.writer = dups_file, writer

    def _losers(self, rank: int) -> dict[tuple[str, str], str]:
        import pyarrow.parquet as pq

        fs, path = fsspec.core.url_to_fs(self.dups_file)
        with fs.open(path, "rb") as f:
            rows = pq.read_table(f, filters=[("rank", "=", rank)]).to_pylist()
        return {(r["source"], f"{r['file']}:{r['record']}"):
                f"id {r['id']!r} is already used by source {r['first_source']!r} ({r['first_file']}:{r['first_record']})"
                for r in rows}

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        from pipelines.readers import RAW_KEEP

        losers = self._losers(rank)
        with self.writer if self.writer else contextlib.nullcontext() as w:
            for doc in data:
                m = doc.metadata
                detail = losers.get((m["source"], m["origin"])) if losers else None
                if detail is None:
                    yield doc
                    continue
                self.stat_update("duplicate_id")
                if w is not None:
                    file, _, record = m["origin"].rpartition(":")
                    raw = json.dumps({"id": doc.id, "text": doc.text[:RAW_KEEP]}, ensure_ascii=False)
                    m.update(_bad="duplicate_id", _detail=detail, _raw=raw, _raw_bytes=len(doc.text.encode()),
                             _file=file, _record=int(record))
                    w.write(doc, rank)
