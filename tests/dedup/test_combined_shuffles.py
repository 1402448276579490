"""A combined shuffle (pipelines/dedup/combine.py): writer files regrouped g to a file give every reader the rows
the writer files give, in the same order, from fewer files, and so do they through their merged index; a
combination or an index that does not cover the writer files listed now is refused; the build's combine rounds
leave the store as it was."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pytest
import yaml

from mixture.pipelines.dedup.combine import combine
from mixture.pipelines.dedup.shuffle import (
    COMBINED,
    PART,
    combined_listing,
    fetch_partition,
    fetch_partitions,
    merged_index_name,
    read_partition,
    shuffle_ranges,
    write_merged_index,
    write_partitions,
)
from mixture.stages.registry import combine_group

SCHEMA = pa.schema([("x", pa.int64()), ("s", pa.string())])


def _writers(folder, writers: int, parts: int, seed: int = 3) -> None:
    rng = np.random.default_rng(seed)
    for w in range(writers):
        n = 0 if w == 2 else int(rng.integers(1, 80))  # writer 2 has no rows: its file is written all the same
        part = np.sort(rng.integers(0, parts, n))
        table = pa.table({"x": pa.array(np.arange(n) + 1000 * w), "s": pa.array([f"w{w}-{i}" for i in range(n)]),
                          PART: pa.array(part.astype(np.int32))})
        write_partitions(table.to_batches(max_chunksize=7), str(folder / f"{w:05d}.parquet"), parts)


def _shuffle(folder, writers: int, parts: int) -> str:
    """The glob of a made-up shuffle's writer files in `folder`."""
    folder.mkdir()
    _writers(folder, writers, parts)
    return f"{folder}/*.parquet"


def _combined(folder, writers: int, parts: int, group: int) -> str:
    """`_shuffle`, combined `group` writer files to a file."""
    pattern = _shuffle(folder, writers, parts)
    for c in range(-(-writers // group)):
        combine(pattern, c, group, writers)
    return pattern


def test_each_reader_gets_the_same_rows_in_the_same_order_from_fewer_files(tmp_path):
    writers, parts, group = 7, 5, 3
    shuffle = tmp_path / "by_id"
    pattern = _shuffle(shuffle, writers, parts)
    before = [read_partition(pattern, q, SCHEMA, parts) for q in range(parts)]
    stats = [combine(pattern, c, group, writers) for c in range(-(-writers // group))]
    assert [s["writer_files"] for s in stats] == [3, 3, 1]
    assert sorted(p.name for p in (shuffle / COMBINED).iterdir()) == ["00000.parquet", "00001.parquet",
                                                                        "00002.parquet"]
    for q in range(parts):
        _, ranges, packed = shuffle_ranges(pattern, q, parts)
        assert packed and len(ranges) <= 3  # ranges of 3 combined files, not of 7 writer files
        assert read_partition(pattern, q, SCHEMA, parts).equals(before[q])
        scratch = tmp_path / f"scratch{q}"
        scratch.mkdir()
        fetched = fetch_partition(pattern, q, str(scratch), parts)
        assert len(fetched) <= 1  # one local file
        table = pa.ipc.open_file(fetched[0]).read_all() if fetched else SCHEMA.empty_table()
        assert table.select(["x", "s"]).equals(before[q])


def test_a_combination_that_does_not_cover_the_writer_files_is_refused(tmp_path):
    shuffle = tmp_path / "pairs"
    pattern = _combined(shuffle, 4, 3, 2)
    read_partition(pattern, 1, SCHEMA, 3)
    (shuffle / COMBINED / "00001.parquet").unlink()  # a combination left half done
    with pytest.raises(ValueError, match=r"_combined: the combined files do not cover the 4 writer files"):
        read_partition(pattern, 1, SCHEMA, 3)
    combine(pattern, 1, 2, 4)
    _writers(shuffle, 4, 3, seed=9)  # the writers rewrote their files since
    with pytest.raises(ValueError, match="do not cover"):
        read_partition(pattern, 0, SCHEMA, 3)
    shutil.rmtree(shuffle / COMBINED)
    for c in range(4):  # a combination of another group: task 0 removes the files past its own last one
        combine(pattern, c, 1, 4)
    combine(pattern, 0, 3, 4)
    combine(pattern, 1, 3, 4)
    assert sorted(p.name for p in (shuffle / COMBINED).iterdir()) == ["00000.parquet", "00001.parquet"]
    read_partition(pattern, 2, SCHEMA, 3)
    (shuffle / "00003.parquet").unlink()
    with pytest.raises(ValueError, match="3 writer files where 4 tasks wrote"):
        combine(pattern, 0, 3, 4)


def _fetched(pattern: str, wanted: range, scratch, parts: int) -> pa.Table:
    scratch.mkdir()
    files = fetch_partitions(pattern, wanted, str(scratch), parts)
    return pa.concat_tables([pa.ipc.open_file(p).read_all() for p in files]) if files else SCHEMA.empty_table()


def test_the_merged_index_gives_each_reader_the_same_ranges(tmp_path):
    parts = 5
    pattern = _combined(tmp_path / "by_id", 7, parts, 3)
    entries = [shuffle_ranges(pattern, q, parts)[1] for q in range(parts)]
    spans = [_fetched(pattern, range(lo, hi), tmp_path / f"entries{lo}{hi}", parts) for lo, hi in ((0, 5), (1, 3))]
    stats = write_merged_index(pattern)
    assert stats == {"combined_files": 3, "index_bytes": parts * (48 + 16 * 3)}
    assert combined_listing(pattern)[1][0].endswith(f"/{COMBINED}/{merged_index_name(pattern)}")
    assert len(combined_listing(pattern)[0]) == 3  # the combined files' glob does not take the index for one
    for q in range(parts):
        assert shuffle_ranges(pattern, q, parts)[1] == entries[q]
    for (lo, hi), before in zip(((0, 5), (1, 3)), spans, strict=True):
        assert _fetched(pattern, range(lo, hi), tmp_path / f"index{lo}{hi}", parts).equals(before)
    with pytest.raises(ValueError, match="written for 5 partitions, read as 6"):
        read_partition(pattern, 2, SCHEMA, 6)  # a reader of another partition count
    with pytest.raises(ValueError, match="no partition 5 in the merged index of 5 partitions"):
        read_partition(pattern, 5, SCHEMA)


def test_a_merged_index_that_does_not_cover_the_files_listed_now_is_refused(tmp_path):
    shuffle = tmp_path / "pairs"
    pattern = _combined(shuffle, 4, 3, 2)
    write_merged_index(pattern)
    before = read_partition(pattern, 1, SCHEMA, 3)
    _writers(shuffle, 4, 3, seed=9)  # the writers rewrote their files since
    with pytest.raises(ValueError, match="combined files and their merged index do not cover the 4 writer files"):
        read_partition(pattern, 1, SCHEMA, 3)
    _writers(shuffle, 4, 3)
    assert read_partition(pattern, 1, SCHEMA, 3).equals(before)
    combine(pattern, 1, 2, 4)  # a combine task's rerun: the same bytes, the index still holds
    assert read_partition(pattern, 1, SCHEMA, 3).equals(before)
    combine(pattern, 0, 2, 4)  # task 0 of a combine round removes the index: the round after makes it again
    assert combined_listing(pattern)[1] is None
    write_merged_index(pattern)
    (shuffle / COMBINED / "00001.parquet").unlink()
    with pytest.raises(ValueError, match="do not cover the 4 writer files"):
        read_partition(pattern, 1, SCHEMA, 3)
    with pytest.raises(ValueError, match="do not cover the 4 writer files"):
        write_merged_index(pattern)


def test_the_group_follows_the_setting_else_the_reads():
    assert combine_group(16, 16, None) == 1  # 512 reads: not combined
    assert combine_group(8_000, 8_000, None) == 125  # 64 combined files
    assert combine_group(8_000, 8_000, 1) == 1
    assert combine_group(16, 16, 4) == 4


def _spec(root, corpus, combine: int | None) -> None:
    from tests.conftest import small_spec

    spec = small_spec(str(corpus), "store")
    spec["execution"]["tasks"] = 4
    if combine:
        spec["execution"]["combine_files"] = combine
    root.mkdir()
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))


def _comparable(store) -> dict:
    from tests.executors.fingerprint import store_fingerprint

    fp = store_fingerprint(store)
    for key in ("created", "spec", "spec_hash"):
        fp["artifact"].pop(key, None)
    return fp


@pytest.fixture(scope="module")
def plain_store(tmp_path_factory, demo_corpus):
    from mixture.pipelines.build import build

    root = tmp_path_factory.mktemp("combine") / "plain"
    _spec(root, demo_corpus, None)
    build(str(root / "spec.yaml"), progress=False, keep_work=True)
    return root / "store"


@pytest.mark.slow
def test_a_build_with_combined_shuffles_gives_the_same_store(tmp_path, demo_corpus, plain_store):
    from mixture.pipelines.build import build

    stores = {"plain": plain_store}
    _spec(tmp_path / "combined", demo_corpus, 3)
    build(str(tmp_path / "combined" / "spec.yaml"), progress=False, keep_work=True)
    stores["combined"] = tmp_path / "combined" / "store"
    work = stores["combined"] / "_build" / "work"
    from mixture.spec.load import load_spec

    bands = load_spec(str(stores["combined"].parent / "spec.yaml")).processing.dedup.fuzzy.bands
    folders = sorted(p.parent for p in work.rglob(COMBINED))
    assert [str(f.relative_to(work)) for f in folders] == [
        "dedup/by_hash", "dedup/by_id", "dedup/id_drops", "drops/exact", "drops/ids",
        *(f"mh_sigs/bucket_{b:03d}" for b in range(bands)),  # a band's signature files, a partition per slice
        "near_dups/members", "near_dups/pairs", "near_dups/requests", "near_dups/texts", "near_dups/to_verify",
        "near_dups/verified"]
    for folder in folders:  # ⌈writers / 3⌉ combined files of each
        suffix = ".minhash.sig" if "mh_sigs" in str(folder) else ".parquet"
        assert len(list((folder / COMBINED).glob(f"*{suffix}"))) == -(-len(list(folder.glob(f"*{suffix}"))) // 3)
        assert [p.name for p in (folder / COMBINED).glob("*.index")] == [merged_index_name(f"{folder}/*{suffix}")]
    assert (stores["combined"] / "_build" / "prepare" / "combine-by-3" / "completions").is_dir()
    assert (stores["combined"] / "_build" / "prepare" / "combine-by-3-index" / "completions").is_dir()
    assert not list((stores["plain"] / "_build" / "work").rglob(COMBINED))
    assert _comparable(stores["plain"]) == _comparable(stores["combined"])


@pytest.mark.slow
def test_a_build_killed_in_a_combine_round_resumes_to_the_same_store(tmp_path, demo_corpus, plain_store):
    """SIGKILL the build once the first combined file is written, rerun the same command: the store of the
    uncombined build."""
    from tests.robustness.helpers import kill_group, run, start, wait_for

    _spec(tmp_path / "b", demo_corpus, 2)
    store = tmp_path / "b" / "store"
    p = start(["build", "spec.yaml"], tmp_path / "b")
    wait_for(lambda: any(store.glob(f"_build/work/**/{COMBINED}/*")), p, timeout=600)
    assert p.poll() is None, p.communicate()
    kill_group(p)
    final = run(["build", "spec.yaml"], tmp_path / "b", timeout=600)
    assert final.returncode == 0, final.stderr[-3000:]
    assert _comparable(store) == _comparable(plain_store)
