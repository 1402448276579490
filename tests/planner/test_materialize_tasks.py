"""`mixture materialize` as datatrove tasks on the session's built store: the same bytes for any task and worker
count, a task's memory bounded by the setting (datatrove's stats of the real run), resuming a killed run."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fsspec.implementations.local import LocalFileSystem
from typer.testing import CliRunner

from mixture.accounting.document_rows import READ_BATCH_ROWS
from mixture.cli import app
from mixture.pipelines.materialize.draws import task_shards
from mixture.pipelines.materialize.run import materialize
from mixture.planner.formats import read_manifest
from mixture.planner.realised import realised_ledger
from mixture.planner.run import plan_from_spec
from mixture.store.formats import write_model

pytestmark = pytest.mark.slow
SHARD = 256 * 1024  # characters per shard: the demo store at --scale 0.1 gives about 26 shards


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def stamps(folder: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime) of every shard: a rewritten shard gets a new inode (written under a temporary name, renamed)."""
    return {str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(folder.glob("phase=*/part-*.parquet"))}


@pytest.fixture(scope="module")
def plan(built_store):
    return plan_from_spec(str(built_store.spec_path), scale=0.1)[1]


@pytest.fixture(scope="module")
def reference(plan, tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """One task, one worker (run in this process)."""
    out = tmp_path_factory.mktemp("reference") / "mix"
    materialize(plan, out, shard_bytes=SHARD)
    return out, tree(out)


def test_same_bytes_for_any_task_and_worker_count(plan, reference, tmp_path: Path):
    ref_dir, ref = reference
    shards = [k for k in ref if k.endswith(".parquet")]
    assert len(shards) >= 12 and "manifest.json" in ref
    assert not (ref_dir / "_materialize").exists()  # the work folder goes once the manifest is published
    assert realised_ledger(ref_dir, plan)["ok"]
    materialize(plan, tmp_path / "three", shard_bytes=SHARD, tasks=3, workers=2)  # a pool of 2 processes
    assert tree(tmp_path / "three") == ref
    plan_path = tmp_path / "plan.json"
    write_model(LocalFileSystem(), str(plan_path), plan)
    res = CliRunner().invoke(app, ["materialize", str(plan_path), "--out", str(tmp_path / "cli"), "--shard-bytes",
                                   "256KB", "--tasks", "2", "--workers", "2", "--memory", "512KB"])
    assert res.exit_code == 0, res.output
    assert tree(tmp_path / "cli") == ref
    # a finished folder of the same plan, store, seed and shard size is left as it is
    before = stamps(tmp_path / "cli")
    res = CliRunner().invoke(app, ["materialize", str(plan_path), "--out", str(tmp_path / "cli"), "--shard-bytes",
                                   "256KB"])
    assert res.exit_code == 0, res.output
    assert stamps(tmp_path / "cli") == before and tree(tmp_path / "cli") == ref


def task_stats(out: Path, stage: str = "") -> list[dict]:
    """The step's stats of every task (datatrove's stats/NNNNN.json) of the gather (or `stage` "scatter"), each as
    {name: {total, n, max}} (datatrove writes only the total and mean of a stat updated once)."""
    tasks = [json.loads(p.read_text())[0]["stats"]
             for p in sorted((out / "_materialize" / stage / "stats").glob("*.json"))]
    return [{k: {"total": v, "n": 1, "max": v} if not isinstance(v, dict) else
             {"total": v["total"], "n": v.get("n", 1), "max": v.get("max", v["total"])} for k, v in s.items()}
            for s in tasks]


def test_a_task_holds_at_most_the_memory_setting_whatever_the_mixture_size(built_store, tmp_path: Path):
    """The counters are the tasks' own (datatrove stats of the real run): characters of text held at once (counted
    on the text read), rows decoded at a time and in all. A mixture 4× bigger holds no more, in more groups. The bound is
    the setting, or one shard where a shard is bigger (a shard ends with the document that crosses its size)."""
    memory = 96 * 1024
    held = {}
    for scale in (0.05, 0.2):
        _, plan = plan_from_spec(str(built_store.spec_path), scale=scale)
        out = tmp_path / f"x{scale}"
        manifest = materialize(plan, out, shard_bytes=32 * 1024, tasks=2, memory=memory, keep_work=True)
        stats = task_stats(out)
        assert len(stats) == 2 and len(list((out / "_materialize" / "completions").iterdir())) == 2
        chars = sorted(pq.read_table(out / "_materialize" / "work" / "shards.parquet").column("chars").to_pylist())
        bound = max(memory, chars[-1])
        assert chars[len(chars) // 2] <= memory  # the setting binds: one long document makes one shard bigger
        for s in stats:
            assert s["held_chars"]["max"] <= bound
            assert s["shards_written"]["total"] > 0
        scatter = task_stats(out, "scatter")
        assert len(scatter) == 2
        for s in scatter:
            assert s["rows_decoded"]["max"] <= READ_BATCH_ROWS
            assert s["scatter_held_chars"]["max"] <= max(memory, s["batch_chars"]["max"])
        # scatter/gather: the store is read once, so rows decoded per row written stays a small constant as the
        # mixture grows (before, every group of shards read nearly every row group of its cells)
        written, decoded = sum(p.docs for p in manifest.phases), sum(s["rows_decoded"]["total"] for s in scatter)
        assert sum(s["rows_scattered"]["total"] for s in scatter) == written
        assert decoded <= sum(c.docs_in_store for c in manifest.cells.values())  # each stored row at most once
        assert decoded <= 3 * written, (scale, decoded, written)
        assert sum(s["held_rows"]["total"] for s in stats) >= sum(p.docs for p in manifest.phases) // 8  # distinct docs
        held[scale] = (max(s["held_chars"]["max"] for s in stats), sum(s["held_chars"]["n"] for s in stats))
        assert realised_ledger(out, plan)["ok"]
    assert held[0.2][1] >= 3 * held[0.05][1]  # more groups, each within the bound


def test_a_killed_run_resumes_keeping_what_was_written(plan, reference, tmp_path: Path):
    """What SIGKILL leaves (tests/robustness kills the real command): no manifest, one task without its completion
    and only some of its shards. The rerun writes the rest, rewrites nothing already written, and gives the same
    bytes; it keeps the task count the run started with."""
    _, ref = reference
    out = tmp_path / "mix"
    manifest = materialize(plan, out, shard_bytes=SHARD, tasks=3, keep_work=True)
    shards = [f"phase={p.name}/{s.path}" for p in manifest.phases for s in p.shards]
    unfinished = [shards[i] for i in task_shards(len(shards), 3, 2)]
    assert len(unfinished) >= 4
    (out / "manifest.json").unlink()
    for p in manifest.phases:
        (out / f"phase={p.name}" / "_manifest.json").unlink()
    (out / "_materialize" / "completions" / "00002").unlink()
    for rel in unfinished[1:]:
        (out / rel).unlink()
    (out / f"{unfinished[1]}.tmp").write_bytes(b"PAR1 half a shard")
    kept = stamps(out)
    assert len(kept) == len(shards) - len(unfinished) + 1
    materialize(plan, out, shard_bytes=SHARD, tasks=1)
    after = stamps(out)
    assert {k: after[k] for k in kept} == kept  # nothing already written was written again
    assert tree(out) == ref  # the temporary file is gone, the work folder too
    # another shard size is another mixture: everything is redone, nothing of the old one is left
    bigger = materialize(plan, out, shard_bytes=2 * SHARD)
    assert tree(out) != ref and sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet")) == sorted(
        f"phase={p.name}/{s.path}" for p in bigger.phases for s in p.shards)
    assert bigger == read_manifest(str(out)) and realised_ledger(out, plan)["ok"]


def test_help_explains_the_task_options():
    res = CliRunner().invoke(app, ["materialize", "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    for option in ("--tasks", "--workers", "--executor", "--memory", "--keep-work", "--shard-bytes"):
        assert option in text, option
    assert "same bytes for any task count" in text and "resumes" in text

