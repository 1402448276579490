"""The drops the exact stages list (`duplicate_ids`, `find_duplicates`): the later occurrences, in spec order, of
each key repeated in the task's partition, the first occurrence as evidence, filed by prepared file (ID_DROPS,
EXACT_DROPS, read by route_drops.load_drops); and the number each task dropped. All documents of one key
are in one partition, so the partitions' drops are those of one query over every document."""

from __future__ import annotations

import pyarrow as pa

from mixture.pipelines.dedup.shuffle import PART, sorted_batches, summed_counts, write_partitions
from mixture.pipelines.schemas import DROPS
from mixture.stages.registry import EXACT_COUNTS, ID_COUNTS

COUNTS = pa.schema([("drops", pa.int64())])  # a task's drops (ID_COUNTS, EXACT_COUNTS)

# every occurrence of a repeated `key` after the first in spec order (source, file, record), with the first
# occurrence's id, source, file and record
LATER = """
    WITH rep AS (SELECT * FROM {table} WHERE {key} IN (SELECT {key} FROM {table} GROUP BY {key} HAVING count(*) > 1))
    SELECT rank, idx, first_id, first_source, first_file, first_record FROM (
        SELECT rank, idx, row_number() OVER w AS n, first_value(id) OVER w AS first_id,
               first_value(source) OVER w AS first_source, first_value(file) OVER w AS first_file,
               first_value(record) OVER w AS first_record
        FROM rep WINDOW w AS (PARTITION BY {key} ORDER BY source_order, file, record, rank, idx))
    WHERE n > 1"""


def _details(batch: pa.RecordBatch, form: str) -> pa.Array:
    cols = [batch.column(c).to_pylist() for c in ("first_id", "first_source", "first_file", "first_record")]
    return pa.array([form.format(id=i, src=s, file=f, rec=r) for i, s, f, r in zip(*cols, strict=True)], pa.string())


def write_drops(con, sql: str, reason: str, form: str, path: str, files: int) -> int:
    """The later occurrences `sql` lists (LATER's columns, ordered by rank and idx) as DROPS rows, partitioned by
    prepared file (`files` of them) in the shuffle file `path`. Returns the number of drops."""
    def rows():
        for batch in sorted_batches(con, sql):
            yield pa.RecordBatch.from_arrays(
                [batch.column("rank"), batch.column("idx"), pa.array([reason] * batch.num_rows, pa.string()),
                 _details(batch, form), batch.column("rank")], names=[*DROPS.names, PART])
    return sum(write_partitions(rows(), path, files).values())


def dropped_count(folder: str) -> int:
    """Documents the two exact stages dropped, from their tasks' counts (in `folder`, the dedup shuffle's)."""
    return sum(summed_counts(counts.every(folder), COUNTS)["drops"] for counts in (ID_COUNTS, EXACT_COUNTS))
