"""A shuffle file (pipelines/dedup/shuffle.py): one per writer, a byte range per partition, read back by partition;
a file of another partition count is refused, naming the file."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from mixture.pipelines.dedup import shuffle
from mixture.pipelines.dedup.shuffle import (
    ENTRY,
    MAGIC,
    PART,
    TRAILER,
    fetch_partition,
    partition_ranges,
    read_partition,
    read_shuffle_file,
    register,
    shuffle_partitions,
    write_partitions,
)
from mixture.pipelines.runtime.duckdb_connection import duckdb_connection

SCHEMA = pa.schema([("x", pa.int64()), ("s", pa.string())])


def _rows(writer: int, parts: np.ndarray) -> pa.Table:
    n = len(parts)
    return pa.table({"x": pa.array(np.arange(n) + 1000 * writer), "s": pa.array([f"w{writer}-{i}" for i in range(n)], pa.string()),
                     PART: pa.array(parts.astype(np.int32))})


def test_each_partition_reads_back_from_every_writer(tmp_path):
    rng = np.random.default_rng(1)
    parts, writers = 7, 3
    tables = [_rows(w, np.sort(rng.integers(0, parts, 200)) if w else np.zeros(0, np.int64)) for w in range(writers)]
    for w, t in enumerate(tables):  # writer 0 has no rows: its file is written all the same
        written = write_partitions(t.to_batches(max_chunksize=16), str(tmp_path / f"{w:05d}.parquet"), parts)
        assert written == {int(q): int((t.column(PART).to_numpy() == q).sum()) for q in np.unique(t.column(PART))}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000.parquet", "00001.parquet", "00002.parquet"]
    assert shuffle_partitions(str(tmp_path / "00000.parquet")) == parts
    every = pa.concat_tables([t.drop_columns([PART]) for t in tables])
    for q in range(parts):
        want = sorted(r["x"] for r, p in zip(every.to_pylist(), pa.concat_tables(tables).column(PART).to_pylist(),
                                              strict=True) if p == q)
        got = read_partition(f"{tmp_path}/*.parquet", q, SCHEMA, parts)
        assert sorted(got.column("x").to_pylist()) == want, q
        scratch = tmp_path.parent / f"scratch{q}"
        scratch.mkdir()
        with duckdb_connection() as con:
            register(con, "part", fetch_partition(f"{tmp_path}/*.parquet", q, str(scratch), parts), SCHEMA)
            assert sorted(x for (x,) in con.execute("SELECT x FROM part").fetchall()) == want
        assert len(partition_ranges(f"{tmp_path}/*.parquet", q)[1]) == (2 if want else 0)
    assert read_shuffle_file(str(tmp_path / "00001.parquet"), SCHEMA).num_rows == 200


def test_another_partition_count_or_unsorted_rows_are_refused(tmp_path):
    write_partitions(_rows(0, np.array([0, 1, 1, 3])).to_batches(), str(tmp_path / "00000.parquet"), 4)
    with pytest.raises(ValueError, match=r"00000.parquet: no index entry of partition 2 of 5 \(written for 4"):
        read_partition(f"{tmp_path}/*.parquet", 2, SCHEMA, 5)
    with pytest.raises(ValueError, match=r"no index entry of partition 9"):
        read_partition(f"{tmp_path}/*.parquet", 9, SCHEMA)
    with pytest.raises(ValueError, match=r"rows not sorted by partition \(0 after 1\)"):
        write_partitions(_rows(1, np.array([1, 0])).to_batches(), str(tmp_path / "00001.parquet"), 4)
    with pytest.raises(ValueError, match=r"partition 4 of a shuffle of 4"):
        write_partitions(_rows(1, np.array([4])).to_batches(), str(tmp_path / "00001.parquet"), 4)
    assert sorted(p.name for p in tmp_path.glob("*.parquet")) == ["00000.parquet"]  # a failed writer publishes none


def test_long_text_is_written_without_dictionary_or_statistics(tmp_path):
    import pyarrow.parquet as pq

    text = [f"a gathered text {i} " * 50 for i in range(40)]
    rows = pa.table({"g": pa.array(np.arange(40)), "text": pa.array(text), "source": pa.array(["web"] * 40),
                     PART: pa.array(np.repeat(np.arange(2, dtype=np.int32), 20))})
    write_partitions(rows.to_batches(), lambda q: str(tmp_path / "files" / f"{q}.parquet"))  # a file per partition
    for path in sorted((tmp_path / "files").iterdir()):
        chunks = pq.ParquetFile(path).metadata.row_group(0)
        by_name = {chunks.column(i).path_in_schema: chunks.column(i) for i in range(chunks.num_columns)}
        assert not by_name["text"].is_stats_set and not by_name["text"].has_dictionary_page, path
        assert by_name["source"].is_stats_set and by_name["source"].has_dictionary_page  # short columns keep both
    write_partitions(rows.to_batches(), str(tmp_path / "00000.parquet"), 2)  # a shuffle file: a range per partition
    assert read_shuffle_file(str(tmp_path / "00000.parquet"), rows.schema.remove(3)).column("text").to_pylist() == text


def test_a_fetched_partition_is_one_local_file_of_few_batches(tmp_path, monkeypatch):
    """The T writers' ranges of a partition land in one local Arrow file, their small batches gathered, so that
    DuckDB pays for one file and few batches whatever T."""
    writers, parts = 40, 4
    for w in range(writers):  # 5 rows in each of partitions 0-2, in batches of 2
        write_partitions(_rows(w, np.repeat(np.arange(parts - 1), 5)).to_batches(max_chunksize=2),
                         str(tmp_path / f"{w:05d}.parquet"), parts)
    (tmp_path / "scratch").mkdir()
    fetched = fetch_partition(f"{tmp_path}/*.parquet", 1, str(tmp_path / "scratch"), parts)
    assert [p.rsplit("/", 1)[1] for p in fetched] == ["000000.arrow"]
    with pa.ipc.open_file(fetched[0]) as f:
        assert f.num_record_batches == 1 and f.read_all().num_rows == writers * 5
    assert fetch_partition(f"{tmp_path}/*.parquet", 3, str(tmp_path / "scratch"), parts) == []  # no rows, no file
    narrow = _rows(writers, np.array([1, 1]))  # a writer whose column came out narrower is cast to the first's type
    write_partitions(narrow.set_column(0, "x", narrow.column("x").cast(pa.int32())).to_batches(),
                     str(tmp_path / f"{writers:05d}.parquet"), parts)
    plain = fetch_partition(f"{tmp_path}/*.parquet", 1, str(tmp_path / "scratch"), parts)[0]
    with pa.ipc.open_file(plain) as f:
        got = f.read_all()
    assert got.schema.field("x").type == pa.int64() and got.num_rows == writers * 5 + 2
    monkeypatch.setattr(shuffle, "LOCAL_PLAIN_BELOW", 0)  # a large partition: its local buffers in LZ4
    (tmp_path / "lz4").mkdir()
    packed = fetch_partition(f"{tmp_path}/*.parquet", 1, str(tmp_path / "lz4"), parts)[0]
    with pa.ipc.open_file(packed) as f:
        assert f.read_all().equals(got)
    assert os.path.getsize(packed) < os.path.getsize(plain)


def test_a_range_of_another_format_is_refused_by_name(tmp_path):
    blob = b"PAR1 not an arrow stream PAR1"  # what a shuffle file of an older version held in its ranges
    (tmp_path / "00000.parquet").write_bytes(blob + ENTRY.pack(1, 0, 0, len(blob), 3) + TRAILER.pack(1, MAGIC))
    with pytest.raises(ValueError, match=r"\*.parquet: a range that is not an Arrow stream in a zstd frame .*_build/"):
        read_partition(f"{tmp_path}/*.parquet", 0, SCHEMA, 1)
