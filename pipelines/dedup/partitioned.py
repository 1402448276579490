"""The base of the dedup steps whose task reads its partition of a shuffle with DuckDB: the connection, the
input's partition fetched to one local file and read as a view, the task's stats; each stage adds only its own
queries."""

from __future__ import annotations

from abc import abstractmethod

from datatrove.data import DocumentsPipeline
from datatrove.pipeline.base import PipelineStep

from mixture.pipelines.dedup.shuffle import fetch_partition, fetch_partitions, register
from mixture.pipelines.runtime.duckdb_connection import duckdb_connection
from mixture.pipelines.runtime.scratch import scratch


class PartitionedStep(PipelineStep):
    """Task q of a stage that reads partition q of one or more shuffles with DuckDB (memory limit `memory_limit`,
    spilling to local disk past it); a stage of one task reads a whole shuffle as its partition. A subclass names the
    partitions' files it reads (`inputs`: each becomes a view, an empty table of its schema when no writer had rows
    for it) and does its work over them (`process`, which returns the task's stats; `self.world_size` is the
    stage's task count); the tables it makes and the fetched ranges are dropped when the task ends."""

    type = "🫂 - DEDUP"

    def __init__(self, memory_limit: str | None = None):
        super().__init__()
        self.memory_limit, self.world_size = memory_limit, 1

    def inputs(self, rank: int) -> list[tuple]:
        """(view, glob, schema, partition[, partitions]) of each input of task `rank`: the glob names a shuffle's
        files (one per writer) and the view is that partition of each (shuffle.fetch_partition, fetched to a local
        folder of the task), or, with `partitions`, a range of partitions of a shuffle of that many (not the stage's
        task count; shuffle.fetch_partitions: two requests a file for the whole range)."""
        return []

    @abstractmethod
    def process(self, con, rank: int) -> dict[str, int]:
        """The task's work over its views; returns its stats, in the order they are recorded."""

    def run(self, data: DocumentsPipeline = None, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        if data:
            yield from data
        self.world_size = world_size
        with scratch("shuffle-") as local, \
                duckdb_connection(self.memory_limit) as con:
            for view, files, schema, part, *partitions in self.inputs(rank):
                if partitions:  # a range of another stage's partitions
                    found = fetch_partitions(files, part, local, partitions[0])
                else:
                    found = fetch_partition(files, part, local, world_size)
                register(con, view, found, schema)
            stats = self.process(con, rank)
        for key, value in stats.items():
            self.stat_update(key, value=value)
