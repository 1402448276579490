"""A build's context: its spec, store and task count, the execution settings of each stage, and the sources as
listed once when the build starts. Where a stage's files are in the store: the stage registry (`ctx.at(folder)`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from datatrove.utils.logging import logger

from mixture.pipelines.sources.records import SourceFiles
from mixture.spec.inputs import ListedSource, list_source, spec_files
from mixture.spec.models import Execution, Spec
from mixture.spec.resolve import References
from mixture.spec.source_formats import source_format
from mixture.stages import registry as stage_registry
from mixture.stages.files import TaskFile
from mixture.store.formats import InputManifest

DUCKDB_MEMORY_SHARE = 0.5  # of a task's memory, for DuckDB (the rest: Arrow batches, numpy, Python)


class BuildError(RuntimeError):
    """A build that cannot go on; the message says why and what to do."""


@dataclass
class Stage:
    name: str  # the registry's; `<stage>/<round>` for a round of a stage run in rounds
    pipeline: list
    tasks: int


@dataclass
class Round:
    """One round of a stage run in rounds (StageDef.rounds): its logs and completions in `_build/<stage>/<name>/`,
    its steps run as `tasks` tasks, each first removing what an earlier attempt of it left of `files`."""

    name: str
    steps: list
    tasks: int
    files: tuple[TaskFile, ...] = ()


@dataclass
class BuildContext:
    spec: Spec
    spec_dir: str
    store: str
    tasks: int
    overrides: dict = field(default_factory=dict)  # execution settings given on the command line (None: not given)
    _listed: list[ListedSource] | None = field(default=None, repr=False)
    _inputs: InputManifest | None = field(default=None, repr=False)

    def execution(self, stage: str | None = None) -> Execution:
        """The spec's execution settings with the command-line overrides, then the stage's own `execution.stages`
        entry, applied (the spec and its hash stay as they are)."""
        given = {k: v for k, v in self.overrides.items() if v is not None}
        ex = Execution.model_validate({**self.spec.execution.model_dump(), **given}) if given else self.spec.execution
        return ex.for_stage(stage) if stage else ex

    @cached_property
    def refs(self) -> References:
        """The spec's tokenizer, models and locations, resolved against its folder (each on first use)."""
        return References(self.spec, self.spec_dir)

    def at(self, rel: str) -> str:
        return f"{self.store}/{rel}"

    def listed(self) -> list[ListedSource]:
        """Every source as listed once, when the build starts (hub datasets resolve here): the files the readers
        share out are the files the input manifest records."""
        if self._listed is None:
            self._listed = [list_source(s, uri) for s, uri in zip(self.spec.sources, self.refs.sources, strict=True)]
        return self._listed

    def inputs(self) -> InputManifest:
        """The input manifest: the sources' files and the other files the spec names, as listed once."""
        if self._inputs is None:
            self._inputs = InputManifest(sources=[src.inputs for src in self.listed()],
                                         files=spec_files(self.refs))
        return self._inputs

    def sources(self) -> list[SourceFiles]:
        """Every source with the units its readers share out, as its format resolves them (the files listed once;
        datasets: Arrow files or IterableDataset shards, hub datasets resolve here)."""
        out = []
        for s, uri, got in zip(self.spec.sources, self.refs.sources, self.listed(), strict=True):
            for message in got.skipped:
                logger.warning(message)
            units = source_format(s.format).resolve_units(s, uri, got)
            out.append(SourceFiles(s.name, s.category, s.format, units.base, units.units, s.text_field, s.id_field,
                                   s.exempt_from_fuzzy_dedup, units.sizes, units.detail))
        return out

    def benchmarks(self) -> list[dict]:
        return [{"name": b.name, "uri": uri, "fields": list(b.fields), "id_field": b.id_field}
                for b, uri in zip(self.spec.processing.decontamination.benchmarks, self.refs.benchmarks, strict=True)]

    @property
    def fuzzy_drops(self) -> str | None:
        """The folder of the near duplicates `minhash_cluster` lists (FUZZY_DROPS), None without fuzzy dedup."""
        return self.at(stage_registry.FUZZY_DROPS.folder) if self.spec.processing.dedup.fuzzy.enabled else None

    @property
    def partitions(self) -> int:
        """P, dedup's hash partitions (stages.registry.dedup_partitions)."""
        return stage_registry.dedup_partitions(self.spec, self.tasks)

    def memory_limit(self, stage: str) -> str:
        """DuckDB's memory limit in a task of `stage`: DUCKDB_MEMORY_SHARE of the memory the task is given
        (`execution.mem_per_cpu_gb` × `cpus_per_task`, per-stage entries applied); past it DuckDB spills to disk."""
        ex = self.execution(stage)
        return f"{max(64, int(ex.mem_per_cpu_gb * ex.cpus_per_task * 1024 * DUCKDB_MEMORY_SHARE))}MB"

    @property
    def near_duplicates_report(self) -> str | None:
        """`minhash_cluster`'s report (NearDuplicateReport), None without fuzzy dedup."""
        return self.at(stage_registry.NEAR_DUPLICATES_REPORT) if self.spec.processing.dedup.fuzzy.enabled else None
