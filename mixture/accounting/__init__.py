"""The accounting layer: the one place that reads a store (DuckDB over Parquet, ledgers, artifacts). The planner,
the explorer and the CLI go through it and never walk the store's files themselves.

Python API::

    from mixture.accounting import StoreReader, connect, audit, report, matrix, diff, cell_table

    reader = StoreReader("gs://bucket/store")     # any local path or fsspec URI; caches small artifacts
    reader.store_info                              # store.json as mixture.store.formats.StoreArtifact (raises
                                                   # StoreNotReady while building, StoreVersionError for another
                                                   # format version, FormatError naming bad fields)
    reader.ledger_models()                         # {cell dir: Ledger} of every ledger matching its format
    reader.ledger_errors()                         # {cell dir: what is wrong} of the others (the audit reports them)
    reader.is_complete                             # store.json present? (the store's JSON comes only as models)
    reader.shard_files()                           # finished shards: ledger-listed AND present (never partials)
    con = connect(reader)                          # DuckDB connection with the views below (views.py)

    cell_table(reader)        # DataFrame cell, cluster, quality, quality_name, label, path, docs, tokens, shards,
                              # share: from ledgers + store.json only (no Parquet opened), cached on the reader
    published_cell_table(reader)  # the same columns from store.json `cells` alone (no ledger, no listing)
    ledger_shard_table(reader)  # one row per ledger entry (file, task, rows, tokens, bytes, xxh64)
    audit(reader, deep=False, sample=1000, seed=0, checksum_mode="auto", inputs=False) -> AuditResult
        # .status "ok" | "failed" | "building", .checks [Check(name, status, checked, failures, note)],
        # .failures [Failure(where, what, expected, found, expected_from, found_from)], .messages(), .exit_code
    report(reader, by="cell" | "cluster,quality" | ["source", "quality"] ...) -> DataFrame
        # keys…, [label], [quality_name], tokens, tokens_h, docs, share, mean_tokens_per_doc
    matrix(reader, value="tokens"|"docs"|"share") -> DataFrame   # cluster x quality, with labels and totals
    source_counts(reader) -> DataFrame   # per-source table (name, tokens, category, docs, share, license, …)
    language_mix(reader, by=None | "cluster" | "quality") -> DataFrame   # [key], language, docs, tokens, share
        # (of the group's tokens), from store.json's `language` block (languages.py)
    calibration_groups(reader) -> DataFrame   # (content type, language) groups: sample_docs, fallback, raw_cutoffs
    load_counts(store | file) -> Counts   # per-cell counts (counts.py): a store, or .csv/.json/.yaml holding
        # cell,tokens[,docs] rows, a {cell: tokens} map, a mix file's available_tokens or a store.json
    diff(a, b, ids=True, samples=3) -> DiffResult
        # a/b: StoreReader, store URI, counts file or Counts; .cells (per-cell deltas, entered/left ids),
        # .summary, .added, .removed, .incompatibilities (tokenizer, k, quality_levels, bucket_edges)
    write_synthetic_store(uri, docs=None, k=4, ...)  # a valid small store for tests and benchmarks

    samples(reader, "uniform" | "exemplars")   # _samples/<kind>.parquet sorted by cell and rank  (sample_files.py)
    dropped(reader), quarantine(reader)        # every _dropped/<reason>/ and _quarantine/ row   (side_files.py)
    centroids(reader) -> Centroids | None, sample_vectors(reader)   # _model/ (model_artifacts.py)
    search_documents(reader, text=, doc_id=, sources=, content_types=, cells=, limit=200, progress=)
        # kept documents matching, read from the finished shards a few files per query (document_search.py)
    scan_documents(reader, ..., budget=ScanBudget(max_rows, max_seconds)) -> DocumentScan
        # the same within a row / time budget: .hits, .rows_read, .files_read, .files, .stopped
    find_document(reader, doc_id, ranges=id_ranges(reader)) -> DataFrame   # a kept document by id, read from
        # the row groups whose footer id range holds it only (shards are sorted by id; document_lookup.py)
    document_index(reader, [(cluster, quality), ...]) -> DocumentIndex   # per document of those cells, by cell
        # and id: n_tokens, n_chars, shard file and row; no text read (document_rows.py, `mixture materialize`)
    read_rows(reader, shard, rows, columns, batch_rows=256)   # those rows of one shard: only the row groups
        # holding them, a batch at a time
    verify_store_shards(reader, shards)   # each shard's size and xxh64 against its ledger before its text is
        # used (CorruptShard names the first that differs; verify.py: also a mixture's against its manifest)
    store_status(reader), lock_info(reader), stages(reader), cell_progress(reader), side_counts(reader)
        # a store still building: state and stamp, _build/LOCK, _build/<stage>/ completions, rows and tokens so
        # far per cell and per drop reason from Parquet footers (build_progress.py)

DuckDB views on `connect(reader)` (`mixture sql STORE`; `.tables` lists them with row counts):
    documents  every finished shard (hive_partitioning=false: cluster SMALLINT, quality TINYINT from the files)
    shards     one row per Parquet file of a cell: cell, cluster, quality, path, task, rows, tokens (from the
               files: row count and Σ n_tokens, computed lazily when queried), bytes (listing), checksum, listed,
               ledger_rows, ledger_tokens, ledger_bytes (unlisted files appear with listed = false)
    cells      cell_table(reader)
    clusters, sources, counters   store.json (only once it exists)
    dropped    every _dropped/<reason>/*.parquet row (id, source, origin, reason, detail, n_chars, text_head, file)
    quarantine every _quarantine/*.parquet row (source, file, record, reason, detail, raw, raw_bytes)
    samples_uniform, samples_exemplars   _samples/ (if present)

Audit checks, cheapest evidence first: artifact, ledgers, cells, counters, provenance (spec hash and stage keys
recomputed from the recorded spec and input manifest, records per source), with --inputs inputs (the sources
listed again: files added, removed or changed), side files, files (listing: missing, unlisted, size), rows
(Parquet), n_tokens (column only, never `text`), partition (cluster/quality columns), sources (per-source
recount), checksums (xxh64), and with --deep tokens (re-tokenize a seeded sample).
"""

from mixture.accounting.build_progress import (
    Footer,
    cell_progress,
    lock_info,
    read_footer,
    side_counts,
    stages,
    store_status,
)
from mixture.accounting.checks import AuditResult, Check, Failure, audit
from mixture.accounting.counts import CellCount, Counts, CountsError, load_counts, store_counts
from mixture.accounting.diffs import DiffResult, diff
from mixture.accounting.document_lookup import IdRanges, find_document, id_ranges
from mixture.accounting.document_rows import DocumentIndex, document_index, read_rows
from mixture.accounting.document_search import DocumentScan, ScanBudget, scan_documents, search_documents
from mixture.accounting.languages import calibration_groups, language_mix
from mixture.accounting.model_artifacts import centroids, sample_vectors
from mixture.accounting.reader import StoreNotReady, StoreReader, open_fs
from mixture.accounting.reports import matrix, report, source_counts
from mixture.accounting.sample_files import samples
from mixture.accounting.side_files import dropped, quarantine
from mixture.accounting.synthetic import synthetic_documents, write_synthetic_store
from mixture.accounting.tables import (
    cell_table,
    cluster_table,
    counters_table,
    ledger_shard_table,
    published_cell_table,
    source_table,
)
from mixture.accounting.verify import CorruptShard, verify_store_shards
from mixture.accounting.views import VIEWS, connect, table_list

__all__ = [
    "VIEWS",
    "AuditResult",
    "CellCount",
    "Check",
    "CorruptShard",
    "Counts",
    "CountsError",
    "DiffResult",
    "DocumentIndex",
    "DocumentScan",
    "Failure",
    "IdRanges",
    "Footer",
    "ScanBudget",
    "StoreNotReady",
    "StoreReader",
    "audit",
    "calibration_groups",
    "cell_progress",
    "cell_table",
    "centroids",
    "cluster_table",
    "connect",
    "counters_table",
    "diff",
    "document_index",
    "dropped",
    "find_document",
    "id_ranges",
    "language_mix",
    "ledger_shard_table",
    "load_counts",
    "lock_info",
    "matrix",
    "open_fs",
    "published_cell_table",
    "quarantine",
    "read_footer",
    "read_rows",
    "report",
    "sample_vectors",
    "samples",
    "scan_documents",
    "search_documents",
    "side_counts",
    "source_counts",
    "source_table",
    "stages",
    "store_status",
    "store_counts",
    "synthetic_documents",
    "table_list",
    "verify_store_shards",
    "write_synthetic_store",
]
