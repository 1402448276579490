"""SIGKILL the build (and materialize) at seeded random points, rerun: the result equals an uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest

from mixture.accounting import StoreNotReady, StoreReader, audit
from tests.robustness.helpers import fingerprint, kill_group, partial_parquet, run, start, wait_for

pytestmark = pytest.mark.slow

# kill points in pipeline order: (name, glob under the store whose appearance arms the kill)
TRIGGERS = [
    ("prepare", "_build/prepare"),
    ("prepare-write", "_quarantine/*.parquet"),
    ("prepare-write-work", "_build/work/prepared/*.parquet"),
    ("duplicate_ids", "_build/duplicate_ids"),
    ("find_duplicates", "_build/find_duplicates"),
    ("find_duplicates-write", "_build/work/drops/exact/*.parquet"),
    ("minhash_sigs", "_build/minhash_sigs"),
    ("minhash_sigs-write", "_build/work/mh_sigs/bucket_*/*.sig"),
    ("minhash_buckets", "_build/minhash_buckets"),
    ("minhash_buckets-write", "_build/work/near_dups/pairs/*.parquet"),
    ("minhash_route", "_build/minhash_route"),
    ("minhash_route-write", "_build/work/near_dups/to_verify/*.parquet"),
    ("minhash_gather", "_build/minhash_gather"),
    ("minhash_gather-write", "_build/work/near_dups/texts/*.parquet"),
    ("minhash_verify", "_build/minhash_verify"),
    ("minhash_cluster", "_build/minhash_cluster"),
    ("minhash_cluster-round", "_build/work/near_dups/components/r001/*.parquet"),
    ("minhash_cluster-greedy", "_build/work/near_dups/greedy/r000/pairs/*.parquet"),
    ("minhash_cluster-drops", "_build/work/fuzzy_drops/*.parquet"),
    ("sample", "_build/sample"),
    ("fit", "_build/fit"),
    ("assign", "_build/assign"),
    ("assign-write", "cluster=*/quality=*/*.parquet"),
    ("finalize", "cluster=*/quality=*/_ledger.json"),
]
FORCED = ("minhash_cluster-round", "assign-write", "finalize")


def kill_plan(seed: int, n: int = 10) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    others = [t for t in TRIGGERS if t[0] not in FORCED]
    chosen = set(rng.sample(range(len(others)), n - len(FORCED)))
    picked = [t for i, t in enumerate(others) if i in chosen] + [t for t in TRIGGERS if t[0] in FORCED]
    picked.sort(key=TRIGGERS.index)
    # the forced points are killed as soon as they show: on a quiet machine assign and finalize can finish within
    # the random delay, and the kill would land on a finished build
    delays = [rng.uniform(0.0, 0.5) for _ in picked]
    return [(name, glob, 0.0 if name in FORCED else d) for (name, glob), d in zip(picked, delays, strict=True)]


def assert_building_and_no_partial_shard(store: Path) -> None:
    """What a reader sees after a kill: no store.json → "building"; any ledger lists only complete files."""
    reader = StoreReader(str(store))
    with pytest.raises(StoreNotReady):
        reader.store_info  # noqa: B018
    assert audit(reader).status == "building"
    for ledger_path in store.glob("cluster=*/quality=*/_ledger.json"):
        for s in json.loads(ledger_path.read_text())["shards"]:
            assert not partial_parquet(ledger_path.parent / s["path"]), (ledger_path, s)


def plant_stale_task_files(store: Path) -> list[Path]:
    """A killed assign task whose rerun writes fewer files must not leave its extra files behind: plant a rotated
    `007_part-<task>` file (and a truncated one under a name the rerun may write) for each unfinished task."""
    done = store / "_build" / "assign" / "completions"
    started = store / "_build" / "assign" / "attempts"  # a task's files can only come from an attempt of it
    unfinished = [r for r in (0, 1) if not (done / f"{r:05d}").exists() and (started / f"{r:05d}").exists()]
    if not unfinished:  # no unfinished task had started: make task 0 unfinished again, as if killed earlier
        (done / "00000").unlink(missing_ok=True)
        unfinished = [0]
    planted = []
    for r in unfinished:
        cell = store / "cluster=00" / "quality=0"
        cell.mkdir(parents=True, exist_ok=True)
        for name in (f"007_part-{r:05d}.parquet", f"part-{r:05d}.parquet"):
            if not (cell / name).exists():
                (cell / name).write_bytes(b"PAR1\x00partial shard of a killed task")
                planted.append(cell / name)
    return planted


@pytest.mark.heavy  # ten builds started and killed: make test-heavy
def test_build_killed_ten_times_resumes_to_the_same_store(built_store, tmp_path: Path):
    work = tmp_path / "killed"
    work.mkdir()
    shutil.copy(built_store.spec_path, work / "spec.yaml")  # same spec text: same corpus, store "store" beside it
    store = work / "store"
    kills, planted, t0 = [], [], time.monotonic()
    for name, glob, delay in kill_plan(seed=14):  # a seed whose kills reach every dedup stage
        p = start(["build", "spec.yaml"], work)
        fired = wait_for(lambda glob=glob: any(store.glob(glob)), p, timeout=180)
        if p.poll() is None:
            time.sleep(delay)
        if p.poll() is not None:  # finished before the kill point: nothing left to interrupt
            assert p.returncode == 0, p.communicate()
            break
        kill_group(p)
        kills.append((name, fired, round(delay, 2)))
        assert not (store / "store.json").exists() or name == "finalize"
        if not (store / "store.json").exists():
            assert_building_and_no_partial_shard(store)
        if name == "assign-write":
            planted = plant_stale_task_files(store)
    assert len(kills) >= 8, kills
    assert {k[0] for k in kills} >= {"assign-write"}
    # the CLI says "building" for a store without store.json
    if not (store / "store.json").exists():
        building = run(["audit", str(store)], work, timeout=60)
        assert building.returncode == 1 and "building" in building.stdout + building.stderr
    final = run(["build", "spec.yaml"], work)
    assert final.returncode == 0, final.stderr[-3000:]
    assert planted and not any(p.exists() for p in planted if p.name.startswith("007_"))
    got, want = fingerprint(store), fingerprint(built_store.store)
    assert got["ids"] == want["ids"]
    assert got["cell_files"] == want["cell_files"]
    assert got["side"] == want["side"]
    assert got["artifact"] == want["artifact"]
    assert got["ledgers"] == want["ledgers"]  # same files, rows, tokens, bytes and xxh64
    checked = audit(StoreReader(str(store)))
    assert checked.ok, checked.messages()
    assert not (store / "_build" / "LOCK").exists()
    print(f"kills: {kills} in {time.monotonic() - t0:.0f}s")


def test_a_second_build_into_the_same_store_refuses_while_the_first_runs(built_store, tmp_path: Path):
    """The first build is paused (SIGSTOP) while the second one starts: on this small corpus it could otherwise
    finish before the second reaches the lock."""
    shutil.copy(built_store.spec_path, tmp_path / "spec.yaml")
    store = tmp_path / "store"
    p = start(["build", "spec.yaml"], tmp_path)
    assert wait_for(lambda: (store / "_build" / "LOCK").exists(), p, timeout=60)
    holder = json.loads((store / "_build" / "LOCK").read_text())
    os.killpg(p.pid, signal.SIGSTOP)
    try:
        second = run(["build", "spec.yaml"], tmp_path, timeout=60)
    finally:
        os.killpg(p.pid, signal.SIGCONT)
    assert second.returncode == 1, second.stderr
    msg = " ".join(second.stderr.split())
    assert "is locked by another build" in msg and f"pid {p.pid}" in msg, msg
    assert holder["owner"] in msg and holder["started"] in msg and "--break-lock" in msg
    out, err = p.communicate(timeout=240)  # the first build is not disturbed: it finishes
    assert p.returncode == 0, err[-3000:]
    assert (store / "store.json").exists() and not (store / "_build" / "LOCK").exists()


@pytest.fixture(scope="module")
def plan_file(built_store, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    r = run(["plan", str(built_store.spec_path), "--out", str(out), "--scale", "0.1"], built_store.root, timeout=120)
    assert r.returncode == 0 and out.exists(), r.stdout + r.stderr
    return out


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_materialize_killed_resumes_to_identical_output(plan_file: Path, tmp_path: Path):
    """4 tasks on 2 workers, killed three times: the rerun finishes with the bytes of one uninterrupted task and
    writes no shard again that a killed run had written (each appears by a rename: present = complete)."""
    from mixture.pipelines.materialize.run import materialize
    from mixture.planner.formats import read_plan

    plan = read_plan(str(plan_file))
    args = ["materialize", str(plan_file), "--out", "mix", "--shard-bytes", "16KB", "--tasks", "4", "--workers", "2"]
    materialize(plan, tmp_path / "ref", shard_bytes=16 * 1024)
    reference = tree(tmp_path / "ref")
    n_shards = sum(1 for k in reference if k.endswith(".parquet"))
    assert n_shards > 100
    out = tmp_path / "mix"
    rng = random.Random(6)
    kills = []
    for _ in range(3):
        at = rng.randrange(1, int(n_shards * 0.9))  # kill once this many shards exist (mid-write of the next)
        p = start(args, tmp_path)
        wait_for(lambda at=at: len(list(out.glob("phase=*/part-*"))) >= at, p, timeout=60, step=0.005)
        if p.poll() is not None:
            break
        kill_group(p)
        kills.append(at)
        # a killed run leaves no manifest (readers trust it only) and no partial shard under a final name
        assert not (out / "manifest.json").exists()
        for shard in out.glob("phase=*/part-*.parquet"):
            assert not partial_parquet(shard), shard
    assert len(kills) >= 2, kills
    written = {s: (s.stat().st_ino, s.stat().st_mtime_ns) for s in out.glob("phase=*/part-*.parquet")}
    assert written
    r = run(args, tmp_path, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert tree(out) == reference
    assert {s: (s.stat().st_ino, s.stat().st_mtime_ns) for s in written} == written
