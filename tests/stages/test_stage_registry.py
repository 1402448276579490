"""The stage registry is the one place a stage is added: the spec's `execution.stages` names, the build's stages and
their order, the Slurm barriers, the explorer's stage order and the docs' stage table all follow it."""

from __future__ import annotations

import dataclasses
import re

import pytest
import yaml
from datatrove.pipeline.base import PipelineStep
from pydantic import ValidationError

from mixture.stages import registry as stage_registry
from mixture.stages.files import StageFiles, TaskFile
from mixture.stages.registry import PARTITIONS, TASKS, StageDef
from tests.conftest import REPO, small_spec


def _spec(corpus: str = "corpus", **execution):
    from mixture.spec.models import Spec

    raw = small_spec(corpus)
    raw["execution"].update(execution)
    return Spec.model_validate(raw)


MARKS = TaskFile(f"{stage_registry.WORK}/marks", "{rank}.txt")


class MarkTask(PipelineStep):
    """A stage of the test's own: each task leaves a file saying it ran."""

    name = "mark the task"

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        import fsspec

        if data:
            yield from data  # first: the steps before it (ClearTaskFiles) run when pulled from
        with fsspec.open(MARKS.path(self.folder, rank), "w", auto_mkdir=True) as f:
            f.write(f"task {rank} of {world_size}\n")


def mark_steps(ctx) -> list:
    return [MarkTask(ctx.at(MARKS.folder))]


MARK = StageDef("mark", "every task leaves a mark", f"{__name__}:mark_steps", TASKS, chained=True,
                files=StageFiles(tasks=(MARKS,)))


REGISTRY = stage_registry.STAGES


def _with(stage: StageDef, before: str) -> tuple[StageDef, ...]:
    """The registry with `stage` added before the stage `before`."""
    i = next(i for i, s in enumerate(REGISTRY) if s.name == before)
    return (*REGISTRY[:i], stage, *REGISTRY[i:])


def test_the_registry_is_well_formed():
    from mixture.spec.models import Spec

    spec = Spec.model_validate(small_spec())
    names = stage_registry.names()
    assert names == ("prepare", "duplicate_ids", "find_duplicates", "minhash_sigs", "minhash_buckets", "minhash_route",
                     "minhash_gather", "minhash_verify", "minhash_cluster", "sample", "fit", "assign")
    assert len(set(names)) == len(names)
    for s in stage_registry.STAGES:
        assert re.fullmatch(r"[a-z][a-z_]*", s.name) and s.name not in ("work", "LOCK"), s.name  # _build/<name>/
        assert "\n" not in s.about and 0 < len(s.about) <= 70, s.about
        assert callable(s.steps_function()), s.steps
        assert s.task_count(spec, 3) >= 1 and isinstance(s.runs(spec), bool)
        assert all("{rank}" in glob for glob in s.files.task_globs), s.files
    assert stage_registry.get("minhash_buckets").task_count(spec, 3) == spec.processing.dedup.fuzzy.bands
    with pytest.raises(KeyError, match="no stage 'nope'; stages are prepare, "):
        stage_registry.get("nope")


def test_each_dedup_stage_is_a_module_named_as_the_stage():
    """A dedup stage's steps are `steps` of the module of pipelines/dedup/ named as the stage."""
    dedup = [s for s in stage_registry.STAGES if s.name in ("duplicate_ids", "find_duplicates")
             or s.name.startswith("minhash_")]
    assert [s.steps for s in dedup] == [f"mixture.pipelines.dedup.{s.name}:steps" for s in dedup]


def test_each_stage_is_built_from_its_entry(demo_corpus, tmp_path):
    """Every stage's steps for a real spec: the name, the task count, and its tasks' files cleared first."""
    from mixture.pipelines.build import build_stage
    from mixture.pipelines.context import BuildContext
    from mixture.pipelines.partition.sample import sample_for_fit
    from mixture.pipelines.runtime.attempts import ClearTaskFiles

    ctx = BuildContext(_spec(str(demo_corpus)), str(tmp_path), str(tmp_path / "store"), 2)
    built = {info.name: build_stage(ctx, info)
             for info in stage_registry.planned(ctx.spec) if info.name != "sample"}  # sample reads dedup's results
    assert {n: s.tasks for n, s in built.items()} == {
        "prepare": 2, "duplicate_ids": 2, "find_duplicates": 2, "minhash_sigs": 2, "minhash_buckets": 14,
        "minhash_route": 2, "minhash_gather": 2, "minhash_verify": 2, "minhash_cluster": 1, "fit": 1, "assign": 2}
    # minhash_cluster: P_c tasks, one per component_pairs_per_task verified pairs (none verified yet here)
    # a stage run in rounds: its first round
    assert all(s.name == (f"{n}/r000" if n == "minhash_cluster" else n) for n, s in built.items())
    store = ctx.store
    cleared = {n: s.pipeline[0].patterns for n, s in built.items() if isinstance(s.pipeline[0], ClearTaskFiles)}
    work = f"{store}/_build/work"
    assert cleared == {  # the files each rerun task removes first (as before the registry)
        "prepare": [f"{store}/_quarantine/part-{{rank}}.parquet", f"{work}/prepared/{{rank}}.parquet",
                    f"{work}/tally/{{rank}}.json", f"{store}/_dropped/filtered/part-{{rank}}.parquet",
                    f"{store}/_dropped/contaminated/part-{{rank}}.parquet", f"{work}/dedup/files/{{rank}}.parquet",
                    f"{work}/dedup/by_id/{{rank}}.parquet", f"{work}/dedup/by_hash/{{rank}}.parquet"],
        "duplicate_ids": [f"{work}/drops/ids/{{rank}}.parquet", f"{work}/dedup/id_drops/{{rank}}.parquet",
                          f"{work}/dedup/counts/ids-{{rank}}.parquet"],
        "find_duplicates": [f"{work}/drops/exact/{{rank}}.parquet", f"{work}/dedup/counts/exact-{{rank}}.parquet"],
        "minhash_buckets": [f"{work}/near_dups/pairs/{{rank}}.parquet", f"{work}/near_dups/members/{{rank}}.parquet",
                            f"{work}/near_dups/bands/{{rank}}.parquet"],
        "minhash_route": [f"{work}/near_dups/to_verify/{{rank}}.parquet", f"{work}/near_dups/requests/{{rank}}.parquet"],
        "minhash_gather": [f"{work}/near_dups/texts/{{rank}}.parquet"],
        "minhash_verify": [f"{work}/near_dups/verified/{{rank}}.parquet",
                           f"{work}/near_dups/verify_counts/{{rank}}.parquet"],
        "minhash_cluster": [f"{work}/near_dups/components/r000/{{rank}}.parquet",
                            f"{work}/near_dups/components/changes/r000/{{rank}}.parquet"],
        "assign": [f"{store}/cluster=*/quality=*/*part-{{rank}}.parquet", f"{store}/_build/work/samples/{{rank}}.parquet",
                   f"{store}/_build/work/shard_facts/{{rank}}.json", f"{store}/_quarantine/part-ids-{{rank}}.parquet",
                   f"{store}/_dropped/exact_duplicate/part-{{rank}}.parquet",
                   f"{store}/_dropped/fuzzy_duplicate/part-{{rank}}.parquet"]}
    assert [type(s).__name__ for s in sample_for_fit(ctx, 0.5)] == ["SampleForFit"]


def test_adding_or_removing_a_registry_entry_is_the_only_edit(monkeypatch):
    """The spec's accepted `execution.stages` keys, the planned order, the Slurm barriers and the explorer's order
    follow the registry alone."""
    from mixture.spec.models import Spec

    over = {"execution": {"stages": {"mark": {"cpus_per_task": 2}}}}
    with pytest.raises(ValidationError, match="unknown stage.s. mark; stages are prepare, duplicate_ids"):
        Spec.model_validate({**small_spec(), **over})

    monkeypatch.setattr(stage_registry, "STAGES", _with(MARK, before="assign"))
    spec = Spec.model_validate({**small_spec(), **over})
    assert spec.execution.for_stage("mark").cpus_per_task == 2
    plan = [s.name for s in stage_registry.planned(spec)]
    assert plan[-3:] == ["fit", "mark", "assign"]
    waits = [n for n in plan if stage_registry.driver_waits_after(spec, n)]
    assert waits == ["minhash_cluster", "assign"]  # chained: submitted behind fit, assign chained behind it
    assert sorted(["_build/assign", "_build/mark", "_build/fit/", "_build/zzz", "_build/prepare"],
                  key=stage_registry.order_key) == ["_build/prepare", "_build/fit/", "_build/mark", "_build/assign",
                                                    "_build/zzz"]

    monkeypatch.setattr(stage_registry, "STAGES", _with(dataclasses.replace(MARK, chained=False), before="assign"))
    assert [n for n in plan if stage_registry.driver_waits_after(spec, n)] == ["minhash_cluster", "fit", "assign"]

    monkeypatch.setattr(stage_registry, "STAGES", tuple(s for s in REGISTRY if s.name != "find_duplicates"))
    with pytest.raises(ValidationError, match="unknown stage.s. find_duplicates"):
        Spec.model_validate({**small_spec(), "execution": {"stages": {"find_duplicates": {"cpus_per_task": 2}}}})
    assert "find_duplicates" not in [s.name for s in stage_registry.planned(spec)]


@pytest.mark.slow
def test_a_build_runs_a_stage_added_to_the_registry(tmp_path, demo_corpus, built_store, monkeypatch):
    """A stage added to the registry alone runs in its place (its tasks' files cleared first) and leaves the store as
    it was."""
    from mixture.pipelines.build import build
    from tests.executors.fingerprint import assert_same_shards, store_fingerprint

    monkeypatch.setattr(stage_registry, "STAGES", _with(MARK, before="assign"))
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(small_spec(str(demo_corpus), "store")))  # the very spec of built_store
    build(str(spec_path), progress=False, keep_work=True)
    store = tmp_path / "store"
    assert sorted(p.name for p in (store / "_build" / "mark" / "completions").iterdir()) == ["00000", "00001"]
    assert (store / "_build/work/marks/00001.txt").read_text() == "task 1 of 2\n"
    # stage folders are created in build order: mark after fit, before assign
    made = sorted((store / "_build").iterdir(), key=lambda p: (p / "executor.json").stat().st_mtime_ns
                  if (p / "executor.json").exists() else 0)
    assert [p.name for p in made if p.name in ("fit", "mark", "assign")] == ["fit", "mark", "assign"]
    # the same store, but for the stage keys (the chain holds one more stage)
    got, want = store_fingerprint(store), store_fingerprint(built_store.store)
    keys = got["artifact"]["provenance"].pop("stages")
    assert [k["name"] for k in keys] == list(stage_registry.names()) and stage_registry.names()[-2:] == ("mark", "assign")
    want["artifact"]["provenance"].pop("stages")
    assert got == want
    assert assert_same_shards(store, built_store.store) == got["artifact"]["counters"]["records_out"]


def test_the_docs_list_the_registry():
    """docs/build.md's stage table: the registry's stages in order, with their task counts (T: execution.tasks, P:
    dedup's partitions, P_c: a stage in rounds' component partitions)."""
    lines = (REPO / "docs" / "build.md").read_text().splitlines()
    start = lines.index("| stage | tasks | steps |") + 2
    table = lines[start:lines.index("", start)]
    documented = [(name.strip().strip("`"), tasks.strip()) for name, tasks in (row.split("|")[1:3] for row in table)]
    assert documented.pop() == ("finalize", "driver")

    def shown(s: StageDef) -> str:  # a stage in rounds: P_c tasks, from its pairs (at most its registry count, P)
        return "P_c" if s.rounds else {TASKS: "T", PARTITIONS: "P"}.get(s.tasks, str(s.tasks).rsplit(".", 1)[-1])

    assert documented == [(s.name, shown(s)) for s in stage_registry.STAGES]
