"""Stage `find_duplicates`: exact duplicates, one exact-hash partition of the keys shuffle per task (DuckDB), among
the documents whose id was not dropped."""

from __future__ import annotations

from mixture.pipelines.context import BuildContext
from mixture.pipelines.dedup.drop_lists import COUNTS, LATER, write_drops
from mixture.pipelines.dedup.duplicate_ids import GONE
from mixture.pipelines.dedup.keys import DOCS, KEYS, prepared_files
from mixture.pipelines.dedup.partitioned import PartitionedStep
from mixture.pipelines.dedup.shuffle import write_counts
from mixture.stages.registry import DEDUP, DROP_LISTS, EXACT_COUNTS, EXACT_DROPS, ID_GONE, KEYS_BY_HASH

EXACT_DETAIL = "same text as {id!r} ({src}, {file}:{rec})"


class FindDuplicates(PartitionedStep):
    """Stage `find_duplicates`, task q: among the documents of exact-hash partition q whose id was not dropped,
    the later occurrences (spec order) of a text are listed as `exact_duplicate` by prepared file (EXACT_DROPS in
    `drop_lists`, the detail naming the kept copy). With exact dedup off, none."""

    name = "find exact duplicates"

    def __init__(self, folder: str, drop_lists: str, exact: bool, memory_limit: str | None = None,
                 files: int | None = None):
        super().__init__(memory_limit)
        self.folder, self.drop_lists, self.exact, self.files = folder, drop_lists, exact, files

    def inputs(self, rank: int) -> list[tuple]:
        if not self.exact:
            return []
        return [("part", KEYS_BY_HASH.every(self.folder), KEYS, rank), ("gone", ID_GONE.every(self.folder), GONE, rank)]

    def process(self, con, rank: int) -> dict[str, int]:
        n = 0
        if self.exact:
            con.execute(f"CREATE TEMP TABLE kept AS SELECT * FROM ({DOCS.format(table='part')}) "
                        "ANTI JOIN gone USING (rank, idx)")
            later = LATER.format(key="exact_hash", table="kept")
            n = write_drops(con, f"SELECT * FROM ({later}) ORDER BY rank, idx", "exact_duplicate", EXACT_DETAIL,
                            EXACT_DROPS.path(self.drop_lists, rank), self.files or prepared_files(self.folder))
        write_counts(EXACT_COUNTS.path(self.folder, rank), COUNTS, {"drops": n})
        return {"exact_duplicate": n}


def steps(ctx: BuildContext) -> list:
    """Exact duplicates, one exact-hash partition per task (DuckDB)."""
    return [FindDuplicates(ctx.at(DEDUP), ctx.at(DROP_LISTS), ctx.spec.processing.dedup.exact.enabled,
                           ctx.memory_limit("find_duplicates"), ctx.tasks)]
