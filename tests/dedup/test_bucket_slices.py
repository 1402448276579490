"""`minhash_buckets` split into bands × S tasks (S first-hash slices per band, S = ⌈T / bands⌉): the same store,
near-duplicate report and drops' evidence as one task per band, on the demo corpus and on the Debian
multilingual texts; and the bucket stage rerun on a build's work with other slice counts gives the same candidate
pairs, members, counts and drops (the slices' unit tests: test_band_collisions.py)."""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml

from mixture.pipelines.dedup.minhash_buckets import (
    BAND_COUNTS,
    MEMBERS,
    PAIRS,
    BandCollisions,
    MinhashBuckets,
)
from mixture.pipelines.dedup.minhash_gather import MinhashGather
from mixture.pipelines.dedup.minhash_route import MinhashRoute
from mixture.pipelines.dedup.minhash_verify import VERIFIED, MinhashVerify
from mixture.pipelines.dedup.shuffle import read_partition, read_shuffle_file
from mixture.spec.load import load_spec
from mixture.stages.registry import bucket_slices, get
from mixture.store.formats import NearDuplicateReport, read_model, read_store_artifact
from tests.conftest import small_spec
from tests.dedup.cluster_reference import drops_by_file, resolve
from tests.dedup.dedup_reference import assert_same_as_reference
from tests.executors.fingerprint import store_fingerprint

pytestmark = pytest.mark.slow


def test_the_slices_follow_the_task_count():
    from mixture.spec.models import Spec

    assert [bucket_slices(14, t) for t in (1, 2, 14, 15, 28, 29, 8000)] == [1, 1, 1, 2, 2, 3, 572]
    spec = Spec.model_validate(small_spec("corpus", "store"))
    assert [get("minhash_buckets").task_count(spec, t) for t in (2, 16, 8000)] == [14, 28, 8008]


def _build(root: Path, spec: dict, tasks: int) -> Path:
    from mixture.pipelines.build import build

    root.mkdir(parents=True, exist_ok=True)
    spec["execution"]["tasks"] = tasks
    (root / "spec.yaml").write_text(yaml.safe_dump(spec))
    build(str(root / "spec.yaml"), progress=False, keep_work=True)
    return root / "store"


def _bucket_tasks(store: Path) -> int:
    return len(list((store / "_build" / "work" / "mh_buckets").glob("*_00.dups")))


def _rows(folder: Path) -> list[tuple]:
    files = sorted(str(f) for f in folder.rglob("*.parquet"))
    return sorted(tuple(r.values()) for r in ds.dataset(files).to_table().to_pylist()) if files else []


def _partition(folder: Path, q: int, schema) -> list[tuple]:
    """Partition q of the shuffle files in `folder`, its rows sorted."""
    return sorted(tuple(r.values()) for r in read_partition(f"{folder}/*.parquet", q, schema).to_pylist())


def rerun_near_duplicates(work: Path, out: Path, slices: int, partitions: int) -> dict:
    """The bucket stage over a build's signature files split `slices` ways (its slice index written for another
    count is ignored: the slices found by binary search), then routing, verification and the greedy keep, into `out`:
    the candidate pairs, members, summed band counts, verified pairs, drops and report."""
    fz = load_spec(str(work.parent.parent.parent / "spec.yaml")).processing.dedup.fuzzy
    rows, n = fz.permutations // fz.bands, fz.bands * slices
    for r in range(n):
        list(BandCollisions(str(work / "mh_sigs"), str(out / "mh_buckets"), rows, slices=slices).run(None, r, n) or ())
        list(MinhashBuckets(str(out / "mh_buckets"), str(work / "dedup"), str(out / "near_dups"), partitions)
             .run(None, r, n) or ())
    settings = {"threshold": fz.similarity_threshold, "ngram": fz.ngram, "permutations": fz.permutations}
    files = len(list((work / "prepared").glob("*.parquet")))
    for q in range(partitions):
        list(MinhashRoute(str(out / "near_dups"), partitions, files).run(None, q, partitions) or ())
    for f in range(files):
        list(MinhashGather(str(out / "near_dups"), str(work / "prepared"), partitions=partitions)
             .run(None, f, files) or ())
    for q in range(partitions):
        list(MinhashVerify(str(out / "near_dups"), **settings).run(None, q, partitions) or ())
    resolve(str(out / "near_dups"), str(out / "fuzzy_drops"), str(out / "report.json"), partitions, prepared=files,
            **settings)
    bands = [pq.read_table(f).to_pylist()[0] for f in sorted((out / "near_dups" / "bands").glob("*.parquet"))]
    assert len(bands) == n and len(list((out / "mh_buckets").glob("*_00.dups"))) == n
    pairs = {q: _partition(out / "near_dups" / "pairs", q, PAIRS) for q in range(partitions)}
    members = {q: _partition(out / "near_dups" / "members", q, MEMBERS) for q in range(partitions)}
    return {"pairs": pairs, "members": members,
            "counts": {k: sum(b[k] for b in bands) for k in BAND_COUNTS.names},
            "verified": sorted(tuple(r.values()) for f in sorted((out / "near_dups" / "verified").glob("*.parquet"))
                               for r in read_shuffle_file(str(f), VERIFIED).to_pylist()), "drops": drops_by_file(out / "fuzzy_drops"),
            "report": read_model(NearDuplicateReport, str(out / "report.json"))}


def _comparable(store: Path) -> dict:
    """What must not depend on the task count (as in test_parallel_dedup.py): the store's fingerprint and every
    drop's and quarantined record's details, less the files' split by task (shards, stage task counts)."""
    fp = store_fingerprint(store)
    for stage in fp["artifact"]["provenance"]["stages"]:
        stage.pop("tasks")
    for cell in fp["artifact"]["cells"]:
        cell.pop("shards")
    fp.pop("ledgers")
    columns = {"_dropped": ["id", "reason", "detail"], "_quarantine": ["source", "file", "record", "reason", "detail"]}
    for folder, cols in columns.items():
        files = [str(f) for f in sorted((store / folder).rglob("*.parquet"))]
        fp[folder] = sorted((tuple(r.values()) for r in ds.dataset(files).to_table(columns=cols).to_pylist()),
                            key=repr) if files else []
    return fp


def _assert_same_near_duplicates(a: Path, b: Path) -> NearDuplicateReport:
    """The two stores' near-duplicate report, drops with their evidence, and whole store (less its split by task)."""
    report_a = read_store_artifact(str(a / "store.json")).near_duplicates
    assert report_a == read_store_artifact(str(b / "store.json")).near_duplicates
    assert _comparable(a) == _comparable(b)  # ids per cell, drops with their details, counters, ledgers' totals
    return report_a


# -- the demo corpus ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_sliced(tmp_path_factory, demo_corpus) -> Path:
    """The demo store built with 16 tasks: 2 slices per band, 28 bucket tasks (work files kept)."""
    return _build(tmp_path_factory.mktemp("sliced"), small_spec(str(demo_corpus), "store"), 16)


def test_demo_store_is_the_same_with_sliced_bands(demo_sliced, built_store):
    """16 tasks (S = 2) against the session's 2-task store (S = 1): the same store, report and drops' evidence,
    and the drops the single-task reference stages find on the same work files."""
    assert _bucket_tasks(demo_sliced) == 28
    assert len(list((demo_sliced / "_build" / "work" / "mh_sigs" / "bucket_000").glob("*.minhash.slices"))) == 16
    report = _assert_same_near_duplicates(demo_sliced, built_store.store)
    assert report.drops > 0 and report.band_pairs > 0
    fz = load_spec(str(demo_sliced.parent / "spec.yaml")).processing.dedup.fuzzy
    assert_same_as_reference(demo_sliced / "_build" / "work", fz.similarity_threshold, fz.ngram, fz.permutations)


@pytest.mark.heavy  # three reruns of the 16-task bucket stage (~33 s): make test-heavy, which CI runs after make test
def test_demo_bucket_stage_gives_the_same_pairs_for_any_slice_count(demo_sliced, tmp_path):
    """The bucket stage rerun on the 16-task build's work with 1, 2 and 5 slices: the same candidate pairs and
    members in every verification partition, the same summed counts, verified pairs, drops and report."""
    work = demo_sliced / "_build" / "work"
    runs = {s: rerun_near_duplicates(work, tmp_path / f"s{s}", s, 16) for s in (1, 2, 5)}
    assert runs[1]["counts"]["buckets"] > 0 and runs[1]["drops"]
    assert runs[2] == runs[1]
    assert runs[5] == runs[1]
    built = read_store_artifact(str(demo_sliced / "store.json")).near_duplicates
    assert runs[1]["report"] == built


def test_demo_bands_combined_give_the_same_collisions(demo_sliced, tmp_path):
    """The 16-task build's signature files combined 5 to a file (4 combined files a band, a partition per slice,
    pipelines/dedup/combine.py): every bucket task (band, slice) writes the bytes it wrote from the 16 files."""
    from mixture.pipelines.dedup.combine import combine_signatures
    from mixture.pipelines.dedup.shuffle import COMBINED

    work = demo_sliced / "_build" / "work"
    fz = load_spec(str(demo_sliced.parent / "spec.yaml")).processing.dedup.fuzzy
    rows, slices = fz.permutations // fz.bands, bucket_slices(fz.bands, 16)
    sigs = tmp_path / "mh_sigs"
    shutil.copytree(work / "mh_sigs", sigs)
    for b in range(fz.bands):
        for c in range(4):
            combine_signatures(f"{sigs}/bucket_{b:03d}/*.minhash.sig", c, 5, 16, slices, 8 * rows + 4)
    assert len(list((sigs / "bucket_000" / COMBINED).iterdir())) == 4
    n = fz.bands * slices
    for r in range(n):
        list(BandCollisions(str(sigs), str(tmp_path / "out"), rows, slices=slices).run(None, r, n) or ())
    built = sorted((work / "mh_buckets").glob("*_00.dups"))
    assert len(built) == n == 28 and sum(f.stat().st_size for f in built) > 0
    for f in built:
        assert (tmp_path / "out" / f.name).read_bytes() == f.read_bytes(), f.name


@pytest.mark.heavy  # a kill and resume of a 16-task build (~25 s): make test-heavy, which CI runs after make test
def test_demo_sliced_build_killed_in_the_bucket_stages_resumes_to_the_same_store(demo_sliced, tmp_path, monkeypatch):
    """SIGKILL the 16-task build once the first slice index is written (minhash_sigs) and once the first
    candidate pairs are (minhash_buckets), rerun: the store of the uninterrupted build."""
    from tests.robustness import helpers
    from tests.robustness.helpers import kill_group, run, start, wait_for

    # the CLI of this interpreter's install (a venv copied from another checkout keeps that one's script shebang)
    cli = tmp_path / "mixture-cli"
    cli.write_text(f"#!{sys.executable}\nfrom mixture.cli import main\nmain()\n")
    cli.chmod(0o755)
    monkeypatch.setattr(helpers, "MIXTURE", str(cli))

    shutil.copy(demo_sliced.parent / "spec.yaml", tmp_path / "spec.yaml")  # the corpus by its absolute path
    store, kills = tmp_path / "store", []
    for glob in ("_build/work/mh_sigs/bucket_*/*.minhash.slices", "_build/work/near_dups/pairs/*.parquet"):
        p = start(["build", "spec.yaml"], tmp_path)
        wait_for(lambda glob=glob: any(store.glob(glob)), p, timeout=900)
        if p.poll() is not None:  # finished before the kill point
            assert p.returncode == 0, p.communicate()
            break
        kill_group(p)
        kills.append(glob)
    assert kills
    final = run(["build", "spec.yaml"], tmp_path, timeout=900)
    assert final.returncode == 0, final.stderr[-3000:]
    assert _comparable(store) == _comparable(demo_sliced)


# -- the Debian multilingual texts --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def multilingual_spec_2_bands(tmp_path_factory) -> dict:
    """The multilingual corpus (5 files: at most 5 tasks) with 2 bands of 4 rows, so 4 tasks slice each band in two;
    verified at the demo's threshold."""
    from mixture.demo_corpus import debian_text

    if reason := debian_text.missing_reason():
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("ml_slices")
    debian_text.write_multilingual_corpus(root / "corpus", seed=0, scale=1.0)
    spec = debian_text.multilingual_spec(str(root / "corpus"), "store")
    spec.setdefault("processing", {}).setdefault("dedup", {}).setdefault("fuzzy", {}).update(
        permutations=8, bands=2, threshold=0.72)
    return {"root": root, "spec": spec}


def test_multilingual_store_is_the_same_with_sliced_bands(multilingual_spec_2_bands):
    root, spec = multilingual_spec_2_bands["root"], multilingual_spec_2_bands["spec"]
    one = _build(root / "t2", copy.deepcopy(spec), 2)  # S = 1
    two = _build(root / "t4", copy.deepcopy(spec), 4)  # S = 2
    assert (_bucket_tasks(one), _bucket_tasks(two)) == (2, 4)
    report = _assert_same_near_duplicates(one, two)
    assert report.drops > 0 and report.pairs_rejected > 0
    fz = load_spec(str(two.parent / "spec.yaml")).processing.dedup.fuzzy
    assert_same_as_reference(two / "_build" / "work", fz.similarity_threshold, fz.ngram, fz.permutations)
    runs = {s: rerun_near_duplicates(two / "_build" / "work", root / f"rerun{s}", s, 4) for s in (1, 3)}
    assert runs[3] == runs[1] and runs[1]["report"] == report
