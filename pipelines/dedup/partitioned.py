"""The base of the dedup steps whose task reads its partition of a shuffle with DuckDB: the connection, the
partition's files as views, the task's stats; each stage adds only its own queries."""

from __future__ import annotations

from abc import abstractmethod

import pyarrow as pa
from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.dedup.shuffle import matching_files, register
from mixture.pipelines.runtime.duckdb_connection import duckdb_connection


class PartitionedStep(PipelineStep):
    """Task q of a stage that reads partition q of one or more shuffles with DuckDB (memory limit `memory_limit`,
    spilling to local disk past it); a stage of one task reads a whole shuffle as its partition. A subclass names the
    partitions' files it reads (`inputs`, globs: each becomes a view, an empty table of its schema when no writer had
    rows for it) and does its work over them (`process`, which returns the task's stats); the tables it makes are
    dropped when the task ends."""

    type = "🫂 - DEDUP"

    def __init__(self, memory_limit: str | None = None):
        super().__init__()
        self.memory_limit = memory_limit

    def inputs(self, rank: int) -> list[tuple[str, str, pa.Schema]]:
        """(view, glob of the partition's files, schema) of each partition task `rank` reads."""
        return []

    @abstractmethod
    def process(self, con, rank: int) -> dict[str, int]:
        """The task's work over its views; returns its stats, in the order they are recorded."""

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        with duckdb_connection(self.memory_limit) as con:
            for view, files, schema in self.inputs(rank):
                register(con, view, matching_files(files), schema)
            stats = self.process(con, rank)
        for key, value in stats.items():
            self.stat_update(key, value=value)
