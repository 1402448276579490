"""The store's JSON files, defined once: `store.json` (StoreArtifact) and `_ledger.json` (Ledger), as pydantic
models whose JSON Schemas `mixture schema --store` / `--ledger` print (store.json read by `read_store_artifact`, which
refuses a store of another format version); and the helpers every JSON format of the project uses to read (errors
name the file and field) and write (atomically) a model."""

from __future__ import annotations

import json
import reprlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

import fsspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from mixture.store.drops import REASONS
from mixture.store.io import write_json_atomic

CELL_PATTERN = r"^c\d{2,3}q\d$"
STORE_FORMAT_VERSION = 2  # 2: every block a build writes is required (docs/store.md, Format version)
LEDGER_FORMAT_VERSION = 1

M = TypeVar("M", bound=BaseModel)


class Format(BaseModel):
    """Base of every JSON file format: unknown fields are errors and values are not coerced (a token count
    written as the string "12" or as 12.5 is wrong, not converted)."""

    model_config = ConfigDict(extra="forbid", strict=True)


SHOWN_PROBLEMS = 30  # an error lists this many problems, then how many more (50,000 unknown fields: one line)


# -- reading and writing a format ------------------------------------------------------------------------------
class FormatError(ValueError):
    """A JSON file that does not match its format; `problems` are (field path, what is wrong) pairs."""

    def __init__(self, file: str, problems: Sequence[tuple[str, str]], hint: str = ""):
        self.file, self.problems, self.hint = file, list(problems), hint
        super().__init__(str(self))

    @property
    def fields(self) -> list[str]:
        return [f for f, _ in self.problems]

    def __str__(self) -> str:
        lines = [f"{self.file}: {f}: {m}" if f else f"{self.file}: {m}" for f, m in self.problems[:SHOWN_PROBLEMS]]
        if len(self.problems) > SHOWN_PROBLEMS:
            lines.append(f"{self.file}: … and {len(self.problems) - SHOWN_PROBLEMS:,} more problems")
        return "\n".join(lines + ([self.hint] if self.hint else []))


def field_path(loc: Sequence[Any]) -> str:
    """('cells', 3, 'tokens') -> 'cells[3].tokens'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist, _SHORT.maxstring, _SHORT.maxother = 3, 6, 6, 80, 80


def _found(value: Any) -> str:
    """The value as the error shows it: at most 80 characters, without building the whole repr of a big value."""
    text = _SHORT.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def validation_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """Each pydantic error as (field path, message saying what was expected and what was found)."""
    out = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        kind, msg = err["type"], err["msg"].removeprefix("Value error, ")
        if kind == "missing":
            msg = "required field is missing"
        elif kind == "extra_forbidden":
            msg = f"unknown field (found {_found(err['input'])})"
        elif "input" in err and kind not in ("value_error", "assertion_error"):
            msg = f"{msg}, found {_found(err['input'])}"
        out.append((field_path(loc), msg))
    return out


def parse_model(model: type[M], data: Any, file: str, hint: str = "") -> M:
    """`model.model_validate(data)`, raising FormatError naming `file` and each wrong field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FormatError(file, validation_problems(exc), hint) from None


def load_json(raw: bytes | str, file: str, hint: str = "") -> Any:
    """Parsed JSON text; FormatError (naming `file`, the line and the column) when it is not JSON."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FormatError(file, [("", f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}")],
                          hint) from None
    except UnicodeDecodeError as exc:
        raise FormatError(file, [("", f"not valid JSON: not UTF-8 text ({exc})")], hint) from None
    except RecursionError:
        raise FormatError(file, [("", "not a file of this format: its values are nested too deeply to read")],
                          hint) from None


def parse_json(model: type[M], raw: bytes | str, file: str, hint: str = "") -> M:
    """Parse JSON text into `model`; invalid JSON and a wrong shape both raise FormatError naming `file`."""
    return parse_model(model, load_json(raw, file, hint), file, hint)


def read_bytes(uri: str, hint: str = "", *, fs: fsspec.AbstractFileSystem | None = None,
               file: str | None = None) -> bytes:
    """The bytes of a file at a local path or any fsspec URI (a path on `fs` when given); FormatError naming `file`
    (default `uri`) when there is no such file."""
    if fs is None:
        fs, path = fsspec.core.url_to_fs(str(uri))
    else:
        path = str(uri)
    try:
        with fs.open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise FormatError(file or str(uri), [("", "no such file")], hint) from None


def read_model(model: type[M], uri: str, hint: str = "", *, fs: fsspec.AbstractFileSystem | None = None,
               file: str | None = None) -> M:
    """Read a JSON file at a local path or any fsspec URI (a path on `fs` when given) into `model`; FormatError
    naming `file` (default `uri`) when it is absent or wrong."""
    return parse_json(model, read_bytes(uri, hint, fs=fs, file=file), file or str(uri), hint)


def read_models(model: type[M], fs: fsspec.AbstractFileSystem, paths: Mapping[str, str]) -> dict[str, M | FormatError]:
    """Several JSON files of one format read at once (one request per batch on an object store): {file: model, or
    the FormatError naming that file}, for `paths` {file named in errors: its path on `fs`}."""
    if not paths:
        return {}
    wanted = list(paths.values())
    blobs = fs.cat(wanted, on_error="return") if len(wanted) > 1 else {wanted[0]: _cat_one(fs, wanted[0])}
    out: dict[str, M | FormatError] = {}
    for file, path in paths.items():
        blob = blobs.get(path, FileNotFoundError(path))
        try:
            if isinstance(blob, FileNotFoundError):
                raise FormatError(file, [("", "no such file")])
            if isinstance(blob, Exception):
                raise FormatError(file, [("", f"{type(blob).__name__}: {blob}")])
            out[file] = parse_json(model, blob, file)
        except FormatError as exc:
            out[file] = exc
    return out


def _cat_one(fs: fsspec.AbstractFileSystem, path: str) -> bytes | Exception:
    try:
        return fs.cat_file(path)
    except Exception as exc:  # noqa: BLE001 - returned as the file's error, like fs.cat(on_error="return")
        return exc


def write_model(fs: fsspec.AbstractFileSystem, path: str, model: BaseModel, indent: int | None = 1) -> None:
    """Write `model` as JSON at `path` atomically (a temporary name, then a rename)."""
    write_json_atomic(fs, path, model.model_dump(mode="json"), indent=indent)


def dump(model: BaseModel, indent: int | None = 2) -> str:
    """The model as the JSON text written to disk (with a final newline)."""
    return json.dumps(model.model_dump(mode="json"), indent=indent) + "\n"


# -- _ledger.json ----------------------------------------------------------------------------------------------
class LedgerShard(Format):
    """One finished Parquet file of a cell, as measured when its build task wrote it."""

    path: str = Field(description="file name, relative to the cell folder")
    task: int | None = Field(description="the build task that wrote it (null: not known)")
    rows: int = Field(ge=0, description="documents in the file")
    tokens: int = Field(ge=0, description="Σ n_tokens of its documents")
    bytes: int = Field(ge=0, description="file size in bytes")
    xxh64: str = Field(pattern=r"^[0-9a-f]{16}$", description="hex xxHash64 of the file's bytes")


class Ledger(Format):
    """`cluster=NN/quality=Q/_ledger.json`: the finished files of one cell and their totals (a file is listed only
    once its build task finished; the totals are the sums over `shards`, which `mixture audit` checks)."""

    format: Literal[1] = Field(description="format version of the ledger")
    cell: str = Field(pattern=CELL_PATTERN, description="cell name cNNqQ")
    cluster: int = Field(ge=0, description="topic cluster (the folder's cluster=NN)")
    quality: int = Field(ge=0, description="quality bucket (the folder's quality=Q)")
    shards: list[LedgerShard] = Field(description="every finished file of the cell")
    total_num_rows: int = Field(ge=0, description="Σ shards.rows")
    total_tokens: int = Field(ge=0, description="Σ shards.tokens")
    is_finished: bool = Field(description="true once the build wrote the ledger (always true in a complete store)")

    @classmethod
    def of(cls, cell: str, cluster: int, quality: int, shards: list[LedgerShard]) -> Ledger:
        """The ledger of a finished cell, totals summed from its shards."""
        return cls(format=LEDGER_FORMAT_VERSION, cell=cell, cluster=cluster, quality=quality, shards=shards,
                   total_num_rows=sum(s.rows for s in shards), total_tokens=sum(s.tokens for s in shards),
                   is_finished=True)


# -- store.json ------------------------------------------------------------------------------------------------
def _count(description: str) -> Any:
    return (int, Field(ge=0, description=description))


def _drop_fields(what: str) -> dict[str, Any]:
    """One count per drop reason of mixture.store.drops, under its counter name."""
    return {r.counter: _count(f"{what} {r.label}: {r.description} (rows in {r.folder}/)") for r in REASONS}


class _CountersBase(Format):
    def dropped(self) -> dict[str, int]:
        """{counter: count} of every drop reason (mixture.store.drops.REASONS order)."""
        return {r.counter: getattr(self, r.counter) for r in REASONS}


Counters = create_model(
    "Counters",
    __base__=_CountersBase,
    __doc__="The record funnel: records_in = records_out + every drop counter (checked by `mixture audit`).",
    records_in=_count("records the readers read (from their per-task stats)"),
    **_drop_fields("records dropped as"),
    records_out=_count("documents written to the cells (Σ ledger rows)"),
    tokens_out=_count("tokens written to the cells (Σ ledger tokens)"),
)


class _SourceBase(Format):
    name: str = Field(description="source name from the spec")
    category: str = Field(description="source category (web, code, math, multilingual, specialized, …)")
    license: str | None = Field(description="license from the spec")
    format: str = Field(description="input format from the spec (jsonl, parquet, hf, …)")
    synthetic: bool = Field(description="the spec marks the source as synthetic")
    exempt_from_fuzzy_dedup: bool = Field(description="the spec exempts it from fuzzy dedup")
    docs_in: int = Field(ge=0, description="records read from the source")
    tokens_in: int | None = Field(description="always null: dropped documents are not tokenized")
    docs_kept: int = Field(ge=0, description="documents of the source in the cells")
    tokens_kept: int = Field(ge=0, description="their tokens")

    def dropped(self) -> dict[str, int]:
        return {r.counter: getattr(self, r.counter) for r in REASONS}


SourceEntry = create_model(
    "SourceEntry",
    __base__=_SourceBase,
    __doc__="One source of the spec: what was read, kept and dropped (per drop reason).",
    **_drop_fields("records of the source dropped as"),
)


class TokenizerRef(Format):
    """The spec's tokenizer, resolved against the spec's folder (mixture.spec.resolve): a tiktoken encoding, a local
    tokenizer.json (absolute path and sha256) or a Hugging Face hub name. The tokenizer loader takes it."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["tiktoken", "file", "hub"] = Field(
        description="tiktoken: a tiktoken encoding; file: a local tokenizer.json; hub: a hub tokenizer org/name")
    name: str = Field(description="the encoding, the tokenizer.json's absolute path, or the hub name")
    sha256: str | None = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the tokenizer.json (null: not a "
                                                                       "file, or the file was not found)")

    @property
    def spec_form(self) -> str:
        """The tokenizer as the canonical spec records it: tiktoken:<encoding>, or hf:<absolute path or hub name>."""
        return f"tiktoken:{self.name}" if self.kind == "tiktoken" else f"hf:{self.name}"


class SpecRef(Format):
    """The spec the store was built from."""

    name: str = Field(description="the spec's name")
    hash: str = Field(description="sha256 of the canonical spec JSON without execution, mixture, store.uri and "
                                  "processing.max_loss, relative paths resolved")
    path: str | None = Field(description="the spec file the build ran")


class PartitionInfo(Format):
    """How documents were partitioned into cells."""

    k: int = Field(ge=1, description="topic clusters")
    fine_k: int = Field(ge=1, description="fine k-means centroids, coarsened to k clusters")
    quality_levels: int = Field(ge=1, description="quality buckets")
    bucket_edges: list[float] = Field(description="calibrated-score edges between the buckets")
    quality_names: list[str] = Field(description="name of each quality bucket (junk, poor, usable, good, excellent)")
    min_share: float = Field(description="smallest share of the tokens a coarse cluster may hold")
    max_share: float = Field(description="largest share of the tokens a cluster should hold "
                                         "(partition.clusters.max_share, or its default 3/k)")
    embedder: str = Field(description="document embedder: lexical or sentence")


class ClusterLabel(Format):
    """One topic cluster's label as the fit made it (`_model/clusters.json`): its most distinctive terms
    (docs/build.md, Cluster labels)."""

    id: int = Field(ge=0, description="cluster id 0..k-1")
    label: str = Field(description="human-readable label: its first top terms, unique across clusters")
    top_terms: list[str] = Field(description="its most distinctive words and phrases against the whole sample, no "
                                             "stop word of any language, no programming keyword")
    summary: str = Field(description="the top terms joined")
    confidence: float = Field(description="coherence of its 5 top terms: the mean NPMI of their pairs over the fit "
                                          "sample's documents, at least 0 (stores of older code: the share of its "
                                          "sample documents holding one of its top 3 terms)")
    confidence_tag: Literal["high", "medium", "low"] = Field(description="confidence ≥ 0.5, ≥ 0.25, below (older "
                                                                         "code: ≥ 0.7, ≥ 0.4)")
    name: str | None = Field(None, description="a title or heading of its exemplar documents that holds its top "
                                               "words; absent when none has one")
    coverage: float | None = Field(None, description="share of its sample documents holding one of its label terms")
    languages: list[str] | None = Field(None, description="languages holding at least 10 % of its sample tokens, "
                                                          "most first")
    language_share: float | None = Field(None, description="the share of its sample tokens in its first language")
    sample_share: float = Field(description="share of the fit sample's documents in the cluster")
    sample_token_share: float = Field(description="share of the fit sample's tokens in the cluster")


class ClusterEntry(ClusterLabel):
    """One topic cluster: its label (c-TF-IDF top terms) and its totals over the cells."""

    docs: int = Field(ge=0, description="documents in its cells")
    tokens: int = Field(ge=0, description="tokens in its cells")


class CellEntry(Format):
    """One non-empty cell; docs, tokens and shards equal its ledger's."""

    cell: str = Field(pattern=CELL_PATTERN, description="cell name cNNqQ")
    cluster: int = Field(ge=0, description="topic cluster")
    quality: int = Field(ge=0, description="quality bucket")
    path: str = Field(description="cell folder cluster=NN/quality=Q, relative to the store")
    docs: int = Field(ge=0, description="documents (ledger total_num_rows)")
    tokens: int = Field(ge=0, description="tokens (ledger total_tokens)")
    shards: int = Field(ge=0, description="Parquet files")
    sources: dict[str, int] = Field(description="tokens per source")


class DedupInfo(Format):
    """The dedup settings the build ran with."""

    exact: bool = Field(description="exact dedup on")
    fuzzy: dict[str, Any] = Field(description="the spec's processing.dedup.fuzzy settings")
    fuzzy_threshold: float = Field(description="Jaccard similarity at which LSH flags half the pairs")


class NearDuplicateReport(Format):
    """How `minhash_cluster` decided the near duplicates (`_build/work/near_duplicates.json`, then store.json
    `near_duplicates`): the LSH candidate pairs, each checked on the two documents' shingles, and the drops."""

    measure: str = Field(description="the similarity checked on every candidate pair (word n-gram Jaccard)")
    threshold: float = Field(description="similarity at or above which a pair is near duplicates "
                                         "(processing.dedup.fuzzy.threshold, default the LSH threshold)")
    anchors: int = Field(ge=1, description="a bucket member is paired with at most this many members before it")
    signature_margin: float = Field(ge=0, description="a pair whose MinHash signatures agree on less than "
                                                      "threshold − margin of positions is ruled out uncompared")
    band_pairs: int = Field(ge=0, description="pairs the bucket stage wrote (the edges a components approach unites)")
    buckets: int = Field(ge=0, description="LSH buckets (one band's equal signatures) of two or more documents")
    documents: int = Field(ge=0, description="documents in at least one bucket")
    pairs_considered: int = Field(ge=0, description="distinct candidate pairs")
    pairs_ruled_out: int = Field(ge=0, description="candidate pairs ruled out by their signature agreement")
    pairs_compared: int = Field(ge=0, description="candidate pairs whose shingle sets were compared")
    pairs_verified: int = Field(ge=0, description="candidate pairs at or above the threshold")
    pairs_rejected: int = Field(ge=0, description="candidate pairs below the threshold (ruled out or compared)")
    drops: int = Field(ge=0, description="documents dropped: verified against an earlier document that is kept")
    kept_similar: int = Field(ge=0, description="documents kept although verified against an earlier one, every "
                                                "such one being dropped (a chain a components approach would drop)")
    largest_component: int | None = Field(None, ge=0, description="documents of the largest component of the "
                                          "verified pairs: one minhash_cluster task holds it (the projection of a "
                                          "larger corpus: `mixture estimate --largest-component`); None in stores "
                                          "built before it was counted")


class FitInfo(Format):
    """The frozen fit (`_model/fit.json`): its sample and settings."""

    sample_docs: int = Field(ge=0, description="documents in the fit sample")
    sample_by_source: dict[str, int] = Field(description="sample documents per source")
    fine_k: int = Field(ge=1, description="fine centroids actually fitted")
    k: int = Field(ge=1, description="clusters")
    embedder: str = Field(description="lexical or sentence")
    embedding_dim: int = Field(ge=1, description="embedding dimensions")
    vocabulary: int = Field(ge=0, description="terms of the lexical embedder (0 for sentence embeddings)")
    seed: int = Field(description="seed of the fit")
    token_estimate: Literal["tokenizer", "utf8_bytes"] = Field(
        description="how the fit knew the tokens of its sample documents to balance the clusters: counted by the "
                    "build's tokenizer in the sample stage, or estimated by their UTF-8 bytes")
    max_share: float = Field(description="the largest token share of a cluster the fit aimed at")


class ClusterBalance(Format):
    """How the clusters share the store's tokens (exact counts of the cells), against the spec's shares."""

    min_share: float = Field(ge=0, le=1, description="partition.clusters.min_share: the smallest token share asked")
    max_share: float = Field(ge=0, le=1, description="partition.clusters.max_share (default 3/k): the largest "
                                                    "token share a cluster should hold")
    largest_cluster: int = Field(ge=0, description="the cluster with the most tokens")
    largest_token_share: float = Field(ge=0, le=1, description="its share of the store's tokens")
    largest_doc_share: float = Field(ge=0, le=1, description="its share of the store's documents")
    smallest_cluster: int = Field(ge=0, description="the cluster with the fewest tokens")
    smallest_token_share: float = Field(ge=0, le=1, description="its share of the store's tokens")
    warnings: list[str] = Field(description="a cluster above max_share or below min_share of the tokens, said in a "
                                            "sentence")


class SamplesInfo(Format):
    """The sample files under `_samples/`."""

    uniform: str = Field(description="seeded uniform sample per cell, relative to the store")
    exemplars: str = Field(description="nearest-to-centroid documents per cell, relative to the store")
    per_cell: int = Field(ge=0, description="uniform samples per cell")
    exemplars_per_cell: int = Field(ge=0, description="exemplars per cell")


class LanguageCount(Format):
    """Kept documents and tokens of one language."""

    language: str = Field(description="ISO 639-1 code (ISO 639-3 where there is none), und: not determined")
    docs: int = Field(ge=0, description="documents in the cells")
    tokens: int = Field(ge=0, description="their tokens")


class ClusterLanguageCount(LanguageCount):
    """Kept documents and tokens of one language in one cluster."""

    cluster: int = Field(ge=0, description="the cluster")


class QualityLanguageCount(LanguageCount):
    """Kept documents and tokens of one language in one quality bucket."""

    quality: int = Field(ge=0, description="the quality bucket")


class CalibrationGroup(Format):
    """One (content type, language) group of the fit sample and the quality calibration its documents get."""

    group: str = Field(description="content_type/language, e.g. prose/fr")
    content_type: str = Field(description="content type")
    language: str = Field(description="language code")
    sample_docs: int = Field(ge=0, description="documents of the group in the fit sample")
    fallback: bool = Field(description="true: fewer than group_min_docs, no empirical map of its own (see map)")
    map: Literal["own", "shape", "content_type"] | None = Field(
        None, description="the map its documents are calibrated with: own (its empirical quantiles), shape (its own "
        "median and interquartile range, the shape pooled over shape_groups), content_type (its content type's map, "
        "fewer than 8 documents). Absent in stores of older code: own unless fallback, then content_type")
    shape_groups: list[str] | None = Field(None, description="map shape: the groups its shape was pooled over")
    raw_cutoffs: list[float] = Field(description="raw scores at the calibrated bucket edges for this group")


class LanguageInfo(Format):
    """Languages of the kept documents and the per-language quality calibration (docs/build.md, Language)."""

    model: str = Field(description="language identifier: cld2 or fasttext:<model path>")
    min_score: float = Field(description="below this confidence a document's language is und")
    languages: list[LanguageCount] = Field(description="per language, most tokens first")
    by_cluster: list[ClusterLanguageCount] = Field(description="per cluster and language")
    by_quality: list[QualityLanguageCount] = Field(description="per quality bucket and language")
    per_language: bool = Field(description="quality calibrated per (content type, language) group")
    group_min_docs: int = Field(ge=1, description="sample documents a group needs for a calibration of its own")
    calibration_groups: list[CalibrationGroup] = Field(
        description="every (content type, language) group of the fit sample")


class BrokenFile(Format):
    """A source file the reader could not read to its end (a truncated or corrupt compressed stream, an unreadable
    file): the records after the break never entered the build. Its quarantine row (reason `truncated_file` or
    `unreadable_file`) says the same in its `detail`."""

    file: str = Field(description="the file, relative to its source's folder")
    reason: str = Field(description="its quarantine reason: truncated_file, corrupt_file (a gzip member failed its "
                                    "check), trailing_data (bytes after the last gzip member) or unreadable_file")
    records_read: int = Field(ge=0, description="records read from it before the break")
    lost: int | None = Field(ge=0, description="records lost after the break (null: nothing tells how many)")
    how: str = Field(description="how `lost` was told: `exact` (a Parquet footer's row count), `estimate: …` (from "
                                 "the bytes not read) or `unknown: …`")


class SourceLoss(Format):
    """The data loss of one source: its records quarantined as bad input and lost to broken files, against the
    records it held (read + lost)."""

    name: str = Field(description="source name from the spec")
    records_read: int = Field(ge=0, description="records read (sources[].docs_in)")
    kept: int = Field(ge=0, description="documents kept in the cells (sources[].docs_kept)")
    quarantined: int = Field(ge=0, description="records quarantined as bad input (sources[].bad_input)")
    lost: int = Field(ge=0, description="records lost to broken files, Σ broken_files[].lost where it is known (an "
                                        "estimate unless every `how` is exact)")
    lost_unknown_files: int = Field(ge=0, description="broken files whose lost records nothing tells")
    share: float = Field(ge=0, le=1, description="(quarantined + lost) / (records_read + lost)")
    verdict: Literal["ok", "kept nothing", "unknown loss", "over max_loss"] = Field(
        description="ok; or why `mixture build` exits 3: the source kept no document, lost an unknown number of "
                    "records, or its share is above max_loss")
    broken_files: list[BrokenFile] = Field(description="its files not read to their end")


class LossInfo(Format):
    """Data loss per source and the verdict against the spec's `processing.max_loss`: `mixture build` exits 3
    ("built, with data loss") when `over` is not empty, unless run with --accept-loss."""

    max_loss: float = Field(ge=0, le=1, description="processing.max_loss the verdicts were made with")
    sources: list[SourceLoss] = Field(description="every source of the spec, in spec order")
    over: list[str] = Field(description="names of the sources whose verdict is not ok")


class BenchmarkReport(Format):
    """One decontamination benchmark: what its records gave the index and how many documents it caught."""

    name: str = Field(description="benchmark name from the spec")
    fields: list[str] = Field(description="the record fields whose n-grams are indexed")
    items: int = Field(ge=0, description="records read")
    items_indexed: int = Field(ge=0, description="records with at least one indexed n-gram")
    missing_fields: dict[str, int] = Field(description="per field of `fields`, records without a value for it")
    ngrams_indexed: int = Field(ge=0, description="distinct n-grams indexed (they carry content)")
    ngrams_skipped: dict[str, int] = Field(
        description="distinct n-grams left out, by reason: no_content (numbers, symbols and single letters only), "
                    "few_content_words (fewer distinct content words than min_content_words), many_numbers (at "
                    "least max_number_share of its words are numbers)")
    documents_matched: int = Field(ge=0, description="documents dropped as contaminated whose detail names this "
                                                     "benchmark (one matching several counts under the one it "
                                                     "shares the most n-grams with)")


class DecontaminationInfo(Format):
    """The decontamination settings the build ran with and one report per benchmark."""

    ngram: int = Field(ge=1, description="words per n-gram")
    min_matches: int = Field(ge=1, description="distinct matching n-grams that make a document contaminated")
    min_content_words: int = Field(ge=1, description="distinct content words an n-gram needs to be indexed")
    max_number_share: float = Field(description="an n-gram with at least this share of numbers is not indexed")
    benchmarks: list[BenchmarkReport] = Field(description="every benchmark of the spec, in spec order")


# -- what a build was made from: the input manifest and the stage keys (store.json `provenance`, _build/<stage>/key.json)
class InputFile(Format):
    """One input file as its filesystem listed it: its size and whatever says it changed (a local file's
    modification time; an object's generation, ETag, CRC32C or version id; a hub file's blob id)."""

    path: str = Field(description="path relative to the source's base (or the file's URI for a single file)")
    size: int | None = Field(description="bytes (null: not reported)")
    identity: dict[str, str | int | float] = Field(
        default_factory=dict, description="mtime (local, seconds), generation, etag, crc32c, version_id or blob_id: "
                                          "the fields the filesystem reported")


class SourceInputs(Format):
    """One source of the spec as the build listed it."""

    name: str = Field(description="source name from the spec")
    base: str = Field(description="the URI the file paths are relative to")
    files: list[InputFile] = Field(description="every file (or Arrow file, or data file) the build reads, by path")
    revision: str | None = Field(None, description="format: datasets from the hub: the commit read")
    units: list[str] | None = Field(None, description="format: datasets read by load_dataset: the shards the tasks "
                                                      "share out")
    records: int | None = Field(None, description="records read from the source (store.json only: = sources[].docs_in)")


class InputManifest(Format):
    """Every input of a build: the sources' files and the other files the spec names (benchmarks, models,
    a local tokenizer file), keyed by the spec field that names them."""

    sources: list[SourceInputs] = Field(description="every source of the spec, in spec order")
    files: dict[str, list[InputFile]] = Field(
        default_factory=dict, description="{spec field path: its files}, e.g. processing.decontamination."
                                          "benchmarks[0].uri, partition.quality.fasttext_model, tokenizer")


class StageKey(Format):
    """One stage's key: the hash of what its output depends on."""

    name: str = Field(description="stage name (mixture/stages/registry.py)")
    key: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the stage's spec fields, input files, code "
                                                             "version and the previous stage's key")
    tasks: int = Field(ge=1, description="the build's task count the stage ran with (execution, not in the key)")


class StageRecord(Format):
    """`_build/<stage>/key.json`: written before a stage runs; its finished tasks are reused only while the key a
    rerun computes is the same. Holds what the key was computed from, so a rerun names what changed."""

    name: str = Field(description="stage name")
    key: str = Field(pattern=r"^[0-9a-f]{64}$", description="the stage's key")
    tasks: int = Field(ge=1, description="the build's task count when the stage started")
    keys_version: int = Field(description="version of the key computation")
    code_version: str = Field(description="version of mixture")
    after: str | None = Field(description="the key of the stage before it (null: the first stage)")
    fields: dict[str, Any] = Field(description="{spec field path: value} of every spec field the stage reads")
    sources: list[SourceInputs] | None = Field(description="the sources' files, when the stage reads the sources")
    files: dict[str, list[InputFile]] = Field(description="the other files the stage reads, by spec field path")


class Provenance(Format):
    """What the store was made from: the spec's content, every input file, and each stage's key (the audit
    recomputes the keys from the first two; `mixture audit --inputs` relists the inputs and names any drift)."""

    keys_version: int = Field(description="version of the key computation")
    code_version: str = Field(description="version of mixture that computed the keys")
    spec: dict[str, Any] = Field(description="the canonical spec the store was built from (spec.hash is its "
                                             "sha256): no execution, mixture or store.uri; paths resolved")
    inputs: InputManifest = Field(description="the input files, with the records read from each source")
    stages: list[StageKey] = Field(description="the key of every stage the build ran, in pipeline order")


class StoreArtifact(Format):
    """`store.json`: what a complete store holds; written last, atomically (its presence means complete)."""

    format_version: Literal[2] = Field(description="format version of store.json (STORE_FORMAT_VERSION); a store of "
                                                   "another version is refused (`read_store_artifact`)")
    spec: SpecRef = Field(description="the spec the store was built from")
    code_version: str = Field(description="version of mixture that built the store")
    created: str = Field(description="UTC time the build finished, ISO 8601 (2026-11-30T10:00:00Z)")
    tokenizer: str = Field(description="the spec's tokenizer (tiktoken:<encoding> or hf:<tokenizer.json>)")
    tokenizer_ref: TokenizerRef = Field(description="the tokenizer the build counted tokens with, resolved (a local "
                                                    "file's absolute path and sha256): what `audit --deep` loads")
    seed: int = Field(description="the spec's seed")
    partition: PartitionInfo = Field(description="how documents were partitioned into cells")
    raw_score_cutoffs: dict[str, list[float]] = Field(
        description="per content type, the raw scores at the calibrated bucket edges")
    calibration_docs: dict[str, int] = Field(description="per content type, sample documents of its calibration")
    dedup: DedupInfo = Field(description="the dedup settings")
    clusters: list[ClusterEntry] = Field(description="every cluster 0..k-1")
    cells: list[CellEntry] = Field(description="every non-empty cell, by path")
    empty_cells: list[str] = Field(description="cells of the partition with no document")
    sources: list[SourceEntry] = Field(description="every source of the spec")  # type: ignore[valid-type]
    counters: Counters = Field(description="the record funnel")  # type: ignore[valid-type]
    filtered_by_reason: dict[str, int] = Field(description="filtered documents per gate")
    bad_input_by_reason: dict[str, int] = Field(description="bad input records per reason")
    fit: FitInfo = Field(description="the frozen fit's sample and settings")
    near_duplicates: NearDuplicateReport | None = Field(
        description="the near-duplicate decisions: candidate pairs, verified pairs and drops (null: fuzzy dedup off)")
    cluster_balance: ClusterBalance = Field(description="the clusters' token shares against min_share and "
                                                        "max_share, with warnings")
    samples: SamplesInfo = Field(description="the sample files")
    language: LanguageInfo = Field(description="languages of the kept documents, per-language calibration")
    loss: LossInfo = Field(description="data loss per source: quarantined and lost records against "
                                       "processing.max_loss")
    decontamination: DecontaminationInfo | None = Field(
        description="benchmark decontamination: settings and a report per benchmark (null: it did not run)")
    provenance: Provenance = Field(description="the canonical spec, input manifest and stage keys")

    def cell_entries(self) -> dict[str, CellEntry]:
        return {c.cell: c for c in self.cells}

    def breakdown(self, key: str) -> dict[str, int]:
        """A by-reason breakdown of a drop reason (its `breakdown` key in mixture.store.drops)."""
        return dict(getattr(self, key))


# -- reading store.json: the one place its format version is checked ---------------------------------------------
class StoreVersionError(FormatError):
    """A store.json of another format version than this code reads: the store is refused, not read (one message
    wherever it is read: the build, the audit, the summary, the planner, the explorer)."""

    def __init__(self, file: str, version: Any):
        self.version = version
        self.refusal = (f"a store of format version {version}; this mixture reads store format version "
                        f"{STORE_FORMAT_VERSION}. Rebuild it with this mixture: `mixture build SPEC --redo-changed` "
                        "(in place), or build it into a new folder (another store.uri)")
        super().__init__(file, [("", self.refusal)])


def parse_store_artifact(data: Any, file: str, hint: str = "") -> StoreArtifact:
    """store.json's parsed JSON as a StoreArtifact: StoreVersionError when its `format_version` is not
    STORE_FORMAT_VERSION (before any other field is looked at), FormatError naming `file` and each wrong field."""
    if isinstance(data, dict) and isinstance(data.get("format_version"), int) \
            and data["format_version"] != STORE_FORMAT_VERSION:
        raise StoreVersionError(file, data["format_version"])
    return parse_model(StoreArtifact, data, file, hint)


def read_store_artifact(uri: str, hint: str = "", *, fs: fsspec.AbstractFileSystem | None = None,
                        file: str | None = None) -> StoreArtifact:
    """The one reader of store.json (a local path or any fsspec URI; a path on `fs` when given): see
    `parse_store_artifact`; FormatError naming `file` (default `uri`) when it is absent or not JSON."""
    file = file or str(uri)
    return parse_store_artifact(load_json(read_bytes(uri, hint, fs=fs, file=file), file, hint), file, hint)
