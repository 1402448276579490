"""The dedup stages partitioned by hash (issue 15) decide what the single-task stages decided: the same drops, with
the same evidence, as the old code (tests/dedup/dedup_reference.py) run on the same prepared files, for 1 and 4
tasks on the demo corpus (2 and 4 on the multilingual texts: test_near_duplicates.py); the same store for 1, 2
and 4 tasks; and each task holds its partition only: its rows are the partition's, and it gives the same result
when every other partition's files are unreadable."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml

from mixture.pipelines.dedup.drop_lists import dropped_count
from mixture.pipelines.dedup.duplicate_ids import DuplicateIds
from mixture.pipelines.dedup.find_duplicates import FindDuplicates
from mixture.pipelines.dedup.keys import KEYS, DedupKeys
from mixture.pipelines.dedup.minhash_buckets import PAIRS
from mixture.pipelines.dedup.minhash_verify import MinhashVerify
from mixture.pipelines.dedup.shuffle import (
    mix64,
    partition_ranges,
    prefix_partition,
    read_partition,
    read_shuffle_file,
    shuffle_partitions,
    string_hashes,
)
from mixture.store.formats import read_store_artifact
from tests.conftest import small_spec
from tests.dedup import dedup_reference as reference
from tests.dedup.dedup_reference import assert_same_as_reference, drop_rows, exact_drop_rows
from tests.executors.fingerprint import store_fingerprint

TASKS = (1, 4)


@pytest.fixture(scope="module")
def demo_builds(tmp_path_factory, demo_corpus) -> dict[int, Path]:
    """The demo store built with 1 and 4 tasks, work files kept: {tasks: store}."""
    from mixture.pipelines.build import build

    out = {}
    for tasks in TASKS:
        root = tmp_path_factory.mktemp(f"tasks{tasks}")
        spec = small_spec(str(demo_corpus), "store")
        spec["execution"]["tasks"] = tasks
        (root / "spec.yaml").write_text(yaml.safe_dump(spec))
        build(str(root / "spec.yaml"), progress=False, keep_work=True)
        out[tasks] = root / "store"
    return out


@pytest.mark.slow
@pytest.mark.parametrize("tasks", TASKS)
def test_demo_drops_and_evidence_equal_the_single_task_stages(demo_builds, tasks):
    from mixture.spec.load import load_spec

    fz = load_spec(str(demo_builds[tasks].parent / "spec.yaml")).processing.dedup.fuzzy
    work = demo_builds[tasks] / "_build" / "work"
    assert_same_as_reference(work, fz.similarity_threshold, fz.ngram, fz.permutations)
    assert "exact_duplicate" in {r[2] for r in exact_drop_rows(work)}  # (no repeated id there: see below)
    assert len(list(work.glob("near_dups/verified/*.parquet"))) == tasks  # one verification task per partition


def _comparable(store: Path) -> dict:
    """What must not depend on the task count: the store's fingerprint (ids per cell, drops, counters, ledgers'
    totals) and the drops' details, less the files' split by task (shards per cell, stage task counts)."""
    fp = store_fingerprint(store)
    art = fp["artifact"]
    for stage in art["provenance"]["stages"]:
        stage.pop("tasks")
    for cell in art["cells"]:
        cell.pop("shards")
    fp.pop("ledgers")
    columns = {"_dropped": ["id", "reason", "detail"], "_quarantine": ["source", "file", "record", "reason", "detail"]}
    details = {}
    for folder, cols in columns.items():
        files = [str(f) for f in sorted((store / folder).rglob("*.parquet"))]
        details[folder] = sorted((tuple(r.values()) for r in ds.dataset(files).to_table(columns=cols).to_pylist()),
                                 key=repr)
    return {**fp, "details": details}


@pytest.mark.slow
def test_demo_store_is_the_same_for_1_2_and_4_tasks(demo_builds, built_store):
    want = _comparable(built_store.store)  # built with 2 tasks
    assert want["artifact"]["counters"]["exact_duplicate_dropped"] > 0
    assert want["artifact"]["counters"]["fuzzy_duplicate_dropped"] > 0
    for tasks, store in demo_builds.items():
        got = _comparable(store)
        assert got == want, tasks
        report = read_store_artifact(str(store / "store.json")).near_duplicates
        assert report == built_store.artifact.near_duplicates


def _prepared_files(folder: Path, rng: np.random.Generator) -> None:
    """Three prepared files (WORK schema) of two sources' files, whole files per prepared file in record order,
    with ids and texts drawn from small pools: repeated ids (with the same or another text) and repeated texts
    (under the same or another id) across sources, files and prepared files."""
    import pyarrow as pa

    from mixture.pipelines.schemas import WORK

    folder.mkdir(parents=True)
    files = [(src, f"part-{f}.jsonl") for src in (0, 1) for f in range(4)]
    for rank in range(3):
        rows = []
        for src, name in files[rank::3]:
            for record in sorted(rng.choice(60, size=25, replace=False).tolist()):
                rows.append({"id": f"doc{rng.integers(40)}", "source": f"s{src}", "source_order": src,
                             "origin": f"{name}:{record}", "exact_hash": int(rng.integers(30)) * 2**59})
        n = len(rows)
        table = {f.name: [None] * n for f in WORK}
        for k in ("id", "source", "source_order", "origin", "exact_hash"):
            table[k] = [r[k] for r in rows]
        table.update(text=["t"] * n, rank=[rank] * n, idx=list(range(n)))
        pq.write_table(pa.table(table, schema=WORK), folder / f"{rank:05d}.parquet")


@pytest.mark.parametrize("partitions", [1, 2, 3, 5])
def test_ids_and_texts_decided_as_by_one_query_for_any_partition_count(tmp_path, partitions):
    """Repeated ids and texts across sources, files and prepared files: `duplicate_ids` then `find_duplicates`
    over any number of partitions list the drops (and details) of the single query over every document, including a
    text whose first copy lost its id to an earlier document (the exact check then keeps its second copy)."""
    work = tmp_path / "work"
    _prepared_files(work / "prepared", np.random.default_rng(7))
    for rank in range(3):
        list(DedupKeys(str(work / "prepared"), str(work / "dedup")).run(None, rank, partitions) or ())
    for q in range(partitions):
        list(DuplicateIds(str(work / "dedup"), str(work / "drops")).run(None, q, partitions) or ())
    for q in range(partitions):
        list(FindDuplicates(str(work / "dedup"), str(work / "drops"), True).run(None, q, partitions) or ())
    want = reference.exact_drops(str(work / "prepared"))
    assert exact_drop_rows(work) == want
    assert {r[2] for r in want} == {"duplicate_id", "exact_duplicate"}
    # the case that needs the id check's drops in the exact check: a text whose first copy in spec order was
    # dropped as a repeated id, so the kept copy is a later one
    from tests.dedup.dedup_reference import prepared_docs

    with prepared_docs(str(work / "prepared")) as con:
        first_gone = con.execute("""
            WITH d AS (SELECT *, row_number() OVER (PARTITION BY id ORDER BY source_order, file, record) AS id_n,
                              row_number() OVER (PARTITION BY exact_hash ORDER BY source_order, file, record) AS h_n
                       FROM docs)
            SELECT count(*) FROM d WHERE h_n = 1 AND id_n > 1""").fetchall()[0][0]
    assert first_gone > 0
    assert dropped_count(str(work / "dedup")) == len(want)


def test_spec_positions_are_the_spec_order(tmp_path):
    """A document's position from the file tables (what the near-duplicate stages sort by) is its rank in spec
    order (source, file, record) over every prepared document; a prepared file whose source file's documents are
    not consecutive rows in record order is refused, naming the file."""
    import pyarrow as pa

    from mixture.pipelines.dedup.keys import positions, spec_positions

    work = tmp_path / "work"
    _prepared_files(work / "prepared", np.random.default_rng(3))
    for rank in range(3):
        list(DedupKeys(str(work / "prepared"), str(work / "dedup")).run(None, rank, 2) or ())
    with reference.prepared_docs(str(work / "prepared")) as con:
        want = con.execute("""SELECT rank, idx, row_number() OVER (ORDER BY source_order, file, record) - 1 AS pos
                              FROM docs ORDER BY rank, idx""").fetchnumpy()
    got = positions(spec_positions(str(work / "dedup")), np.asarray(want["rank"]), np.asarray(want["idx"]))
    assert (got == np.asarray(want["pos"])).all()

    bad = pq.read_table(work / "prepared" / "00001.parquet")
    origin = bad.column("origin").to_pylist()
    origin[0], origin[1] = origin[1], origin[0]  # two records of one file out of order
    bad = bad.set_column(bad.schema.get_field_index("origin"), "origin", pa.array(origin))
    pq.write_table(bad, work / "prepared" / "00001.parquet")
    with pytest.raises(ValueError, match=r"prepared file 00001: the documents of source #\d file 'part-\d.jsonl'"):
        list(DedupKeys(str(work / "prepared"), str(work / "dedup")).run(None, 1, 2) or ())


# -- each task holds its partition only ------------------------------------------------------------------------
def _garble_other_partitions(folder: Path, keep: int) -> None:
    """Every partition but `keep` of the shuffle files in `folder`: its byte range overwritten (not Parquet)."""
    for f in folder.glob("*.parquet"):
        for q in range(shuffle_partitions(str(f))):
            if q != keep:
                for _, offset, length in partition_ranges(str(f), q)[1]:
                    with f.open("r+b") as out:
                        out.seek(offset)
                        out.write(b"x" * length)


@pytest.mark.slow
def test_dedup_keys_go_to_the_partition_of_their_hash(demo_builds):
    work = demo_builds[4] / "_build" / "work"
    prepared = ds.dataset([str(p) for p in sorted(work.glob("prepared/*.parquet"))]).to_table(columns=["rank", "idx"])
    for kind in ("id", "hash"):
        seen = 0
        folder = work / "dedup" / f"by_{kind}"
        assert sorted(int(p.stem) for p in folder.iterdir()) == list(range(4))  # one file per prepare task
        for q in range(4):
            t = read_partition(f"{folder}/*.parquet", q, KEYS, 4)
            h = string_hashes(t.column("id").to_pylist()) if kind == "id" else t.column("exact_hash").to_numpy()
            assert (prefix_partition(h, 4) == q).all(), (kind, q)
            seen += t.num_rows
        assert seen == prepared.num_rows  # every document once in each shuffle


@pytest.mark.slow
def test_exact_dedup_tasks_read_their_partition_only(demo_builds, tmp_path):
    """Each `duplicate_ids` and `find_duplicates` task, rerun with every other partition unreadable, lists the same
    drops: it reads nothing of the others."""
    work = demo_builds[4] / "_build" / "work"
    for q in range(4):
        copy = tmp_path / f"q{q}"
        shutil.copytree(work / "dedup", copy / "dedup")
        for kind in ("by_id", "by_hash", "id_drops"):
            if (copy / "dedup" / kind).exists():
                _garble_other_partitions(copy / "dedup" / kind, q)
        list(DuplicateIds(str(copy / "dedup"), str(copy / "drops")).run(None, q, 4) or ())
        list(FindDuplicates(str(copy / "dedup"), str(copy / "drops"), True).run(None, q, 4) or ())
        for kind in ("ids", "exact"):
            assert drop_rows([copy / "drops" / kind / f"{q:05d}.parquet"]) == \
                drop_rows([work / "drops" / kind / f"{q:05d}.parquet"]), (q, kind)


@pytest.mark.slow
def test_verification_tasks_hold_their_pairs_documents_only(demo_builds, tmp_path):
    """Every candidate pair goes to the partition of its later document, and from there (minhash_route) every pair
    of a later document to one verification partition; a verification task, with every other partition's pairs and
    gathered texts unreadable and no prepared file given, verifies the same pairs and loads the signatures of its
    pairs' documents only."""
    from mixture.pipelines.dedup.minhash_verify import VERIFIED
    from mixture.spec.load import load_spec

    fz = load_spec(str(demo_builds[4].parent / "spec.yaml")).processing.dedup.fuzzy
    work = demo_builds[4] / "_build" / "work"
    total, later = 0, {}
    for q in range(4):
        candidates = read_partition(f"{work}/near_dups/pairs/*.parquet", q, PAIRS, 4)
        assert (prefix_partition(mix64(candidates.column("b").to_numpy()), 4) == q).all()
        pairs = read_partition(f"{work}/near_dups/to_verify/*.parquet", q, PAIRS, 4)
        for b in set(pairs.column("b").to_pylist()):
            assert later.setdefault(b, q) == q, b  # a later document's pairs in one partition
        total += pairs.num_rows
        copy = tmp_path / f"q{q}"
        shutil.copytree(work / "near_dups", copy)
        _garble_other_partitions(copy / "to_verify", q)
        _garble_other_partitions(copy / "members", q)
        _garble_other_partitions(copy / "texts", q)
        (copy / "verified" / f"{q:05d}.parquet").unlink()
        step = MinhashVerify(str(copy), threshold=fz.similarity_threshold, ngram=fz.ngram,
                             permutations=fz.permutations)
        list(step.run(None, q, 4) or ())
        assert read_shuffle_file(str(copy / "verified" / f"{q:05d}.parquet"), VERIFIED).equals(
            read_shuffle_file(str(work / "near_dups" / "verified" / f"{q:05d}.parquet"), VERIFIED))
        endpoints = np.unique(np.concatenate([pairs.column("a").to_numpy(), pairs.column("b").to_numpy()]))
        assert step.stats["signatures_loaded"].total == len(endpoints)
        assert step.stats["texts_loaded"].total <= len(endpoints)
    assert total > 0 and len(later) == len({b for q in range(4) for b in read_partition(
        f"{work}/near_dups/pairs/*.parquet", q, PAIRS, 4).column("b").to_pylist()})  # every later document routed


@pytest.mark.slow
def test_gathered_texts_hold_each_candidate_once_and_a_missing_one_stops_verification(demo_builds, tmp_path):
    """`minhash_gather` sends every document of a partition's candidate pairs to that partition, once; a
    verification task whose gathered texts lack one of them fails and names the gather stage (never a verdict
    without the document); so does one whose signatures are not of the spec's size."""
    from mixture.pipelines.dedup.minhash_gather import GATHERED
    from mixture.spec.load import load_spec

    fz = load_spec(str(demo_builds[4].parent / "spec.yaml")).processing.dedup.fuzzy
    work = demo_builds[4] / "_build" / "work"
    for q in range(4):
        pairs = read_partition(f"{work}/near_dups/to_verify/*.parquet", q, PAIRS, 4)
        gathered = read_partition(f"{work}/near_dups/texts/*.parquet", q, GATHERED, 4)
        endpoints = np.unique(np.concatenate([pairs.column("a").to_numpy(), pairs.column("b").to_numpy()]))
        assert sorted(gathered.column("g").to_pylist()) == endpoints.tolist()
    copy = tmp_path / "near_dups"
    shutil.copytree(work / "near_dups", copy)
    lost = next(f for f in sorted((copy / "texts").glob("*.parquet")) if partition_ranges(str(f), 0)[1])
    lost.unlink()  # a gather task's file with texts for partition 0
    step = MinhashVerify(str(copy), threshold=fz.similarity_threshold, ngram=fz.ngram, permutations=fz.permutations)
    with pytest.raises(RuntimeError, match=r"candidate documents of verification partition 0 were not gathered.*"
                                           r"_build/minhash_gather/"):
        list(step.run(None, 0, 4) or ())
    # signatures of another size than the spec's (a gather of another spec's files): refused, never compared
    shutil.rmtree(copy)
    shutil.copytree(work / "near_dups", copy)
    step = MinhashVerify(str(copy), threshold=fz.similarity_threshold, ngram=fz.ngram,
                         permutations=fz.permutations // 2)
    with pytest.raises(RuntimeError, match=rf"does not have the spec's {fz.permutations // 2} values.*"
                                           r"_build/minhash_gather/"):
        list(step.run(None, 0, 4) or ())
