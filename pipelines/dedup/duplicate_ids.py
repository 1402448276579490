"""Stage `duplicate_ids`: repeated ids, one id partition of the keys shuffle per task (DuckDB); a later occurrence
of an id is dropped (quarantined by `assign` as bad input) and left out of the exact check."""

from __future__ import annotations

import pyarrow as pa

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.drop_lists import COUNTS, LATER, write_drops
from mixture.pipelines.dedup.keys import DOCS, KEYS, prepared_files
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import PART, sorted_batches, write_counts, write_partitions
from mixture.stages.registry import DEDUP, DROP_LISTS, ID_COUNTS, ID_DROPS, ID_GONE, KEYS_BY_ID

GONE = pa.schema([("rank", pa.int32()), ("idx", pa.int64())])  # documents of a hash partition the id check dropped
ID_DETAIL = "id {id!r} is already used by source {src!r} ({file}:{rec})"


class DuplicateIds(PartitionedStep):
    """Stage `duplicate_ids`, task q: the later occurrences (spec order) of the ids of id partition q are listed as
    `duplicate_id` by prepared file (ID_DROPS in `drop_lists`, the detail naming the source, file and record that
    own the id), and sent to the partition of their exact hash (ID_GONE in `folder`, the dedup shuffle's) for the
    exact check, which leaves them out."""

    name = "find repeated ids"

    def __init__(self, folder: str, drop_lists: str, memory_limit: str | None = None, files: int | None = None):
        super().__init__(memory_limit)
        self.folder, self.drop_lists, self.files = folder, drop_lists, files

    def inputs(self, rank: int) -> list[tuple]:
        return [("part", KEYS_BY_ID.every(self.folder), KEYS, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        con.execute(f"CREATE TEMP TABLE docs AS {DOCS.format(table='part')}")
        con.execute(f"CREATE TEMP TABLE later AS {LATER.format(key='id', table='docs')}")
        n = write_drops(con, "SELECT * FROM later ORDER BY rank, idx", "duplicate_id", ID_DETAIL,
                        ID_DROPS.path(self.drop_lists, rank), self.files or prepared_files(self.folder))
        write_partitions(sorted_batches(con, f"""SELECT rank, idx, hash_part AS {PART} FROM later
                                                 JOIN docs USING (rank, idx) ORDER BY {PART}, rank, idx"""),
                         ID_GONE.path(self.folder, rank), self.world_size)
        write_counts(ID_COUNTS.path(self.folder, rank), COUNTS, {"drops": n})
        return {"duplicate_id": n}


def steps(ctx: BuildContext) -> list:
    """Repeated ids, one id partition per task (DuckDB)."""
    return [DuplicateIds(ctx.at(DEDUP), ctx.at(DROP_LISTS), ctx.memory_limit("duplicate_ids"), ctx.tasks)]
