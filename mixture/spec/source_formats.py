"""The source formats (`sources[].format`): the one place a format is added. Each entry names its files, the spec
fields only it takes, and by "module:function" what lists, checks, describes and resolves its sources and what
reads one of its units (a file or a dataset shard) into Documents or quarantine records.

Light on purpose (no import of the spec models, the build or datatrove): the spec validates format names from it;
the functions are imported when they are used."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticCustomError

if TYPE_CHECKING:
    from mixture.spec.inputs import ListedSource
    from mixture.spec.models import Source

FILES = "mixture.spec.source_files"
READERS = "mixture.pipelines.sources"


class SourceError(ValueError):
    """A source its format cannot read (raised when the build starts, or caught by its check); `field` is the spec
    field to fix (uri, split, ...)."""

    def __init__(self, source: str, message: str, field: str = "uri"):
        super().__init__(f"source {source!r}: {message}")
        self.field = field


@dataclass(frozen=True)
class SourceUnits:
    """What the build's reader tasks share out: `units` (with their bytes, None if unknown) under `base`, and what
    the format's reader needs besides (`detail`, carried to the reader in `SourceFiles.detail`)."""

    base: str
    units: tuple[str, ...]
    sizes: tuple[int | None, ...]
    detail: Any = None


@dataclass(frozen=True)
class SourceFormat:
    """One source format. The defaults are those of a format of plain files, found by their `extensions`."""

    name: str
    extensions: tuple[str, ...]  # the files its sources list (and name when one matches nothing)
    # (src: SourceFiles, rel: str) -> Documents: reads unit `rel` of a source (mixture.pipelines.sources.records)
    reader: str
    about: str | None = None  # what it is, in the spec schema's description of `format`
    fields: tuple[str, ...] = ()  # the Source fields only this format takes (the others refuse them)
    # (src: Source, uri: str) -> ListedSource: its input manifest entry, and the files its readers share out
    listing: str = f"{FILES}:list_file_source"
    # (src: Source, uri: str) -> [(Source field, message)]: what `mixture validate` finds wrong, before any work
    check: str = f"{FILES}:check_files"
    # (src: Source, uri: str) -> (summary, warnings): its line in `mixture validate`
    describe: str = f"{FILES}:describe_files"
    # (src: Source, uri: str, listed: ListedSource) -> SourceUnits: resolved when the build starts (SourceError)
    units: str = f"{FILES}:file_units"

    def list_source(self, src: Source, uri: str) -> ListedSource:
        return load_function(self.listing)(src, uri)

    def check_source(self, src: Source, uri: str) -> list[tuple[str, str]]:
        return load_function(self.check)(src, uri)

    def describe_source(self, src: Source, uri: str) -> tuple[str, list[str]]:
        return load_function(self.describe)(src, uri)

    def resolve_units(self, src: Source, uri: str, listed: ListedSource) -> SourceUnits:
        return load_function(self.units)(src, uri, listed)


FORMATS: dict[str, SourceFormat] = {f.name: f for f in (
    SourceFormat("jsonl", (".jsonl", ".json"), f"{READERS}.jsonl:read_jsonl"),
    SourceFormat("jsonl.gz", (".jsonl.gz", ".json.gz"), f"{READERS}.jsonl:read_jsonl"),
    SourceFormat("jsonl.zst", (".jsonl.zst", ".json.zst"), f"{READERS}.jsonl:read_jsonl"),
    SourceFormat("parquet", (".parquet",), f"{READERS}.parquet:read_parquet"),
    SourceFormat("hf", (".parquet", ".jsonl", ".json", ".jsonl.gz", ".jsonl.zst"),
                 f"{READERS}.parquet:read_parquet_or_jsonl", check=f"{FILES}:check_hf_files",
                 about="the Parquet/JSONL files of a Hugging Face dataset (a local copy or hf://datasets/...)"),
    SourceFormat("datasets", (), f"{READERS}.datasets:read_dataset_unit",
                 about="a dataset read with the `datasets` library (save_to_disk folder, load_dataset of a hub "
                       "dataset or a local folder of data files)",
                 fields=("split", "subset", "revision", "streaming"),
                 listing="mixture.spec.datasets_source:dataset_inputs",
                 check="mixture.spec.datasets_source:check_dataset_source",
                 describe="mixture.spec.datasets_source:describe_dataset_source",
                 units="mixture.spec.datasets_source:dataset_source_units"),
)}


def source_format(name: str) -> SourceFormat:
    return FORMATS[name]


def format_fields() -> tuple[str, ...]:
    """Every Source field that only some formats take, in registry order."""
    return tuple(dict.fromkeys(f for fmt in FORMATS.values() for f in fmt.fields))


def known_format(name: str) -> str:
    """The spec's validator of `format`: a registered name, else the error a Literal of the names gives."""
    if name not in FORMATS:
        names = [repr(n) for n in FORMATS]
        expected = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return name


def format_schema(schema: dict[str, Any]) -> None:
    """The JSON Schema of `format`: the registered names as its choices, each format's `about` in its description."""
    schema["enum"] = list(FORMATS)
    schema["description"] = "file format" + "".join(f"; `{f.name}`: {f.about}" for f in FORMATS.values() if f.about)


@functools.cache
def load_function(ref: str) -> Callable:
    """The function a "module:function" reference names (imported on first use)."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)
